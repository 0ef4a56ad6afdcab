"""The TAP runner the Python unit tests share: each test is a function
whose docstring names it; it passes by returning, fails by raising (the
traceback goes out as # lines), and is skipped by returning "skip WHY",
or all are skipped with why_not."""
import traceback


def run(tests, why_not=None):
    """Run tests in order, printing TAP; 1 when any failed, else 0."""
    print("1..%d" % len(tests))
    failed = 0
    for n, fn in enumerate(tests, 1):
        if why_not:
            print("ok %d - %s # SKIP %s" % (n, fn.__doc__, why_not))
            continue
        try:
            r = fn()
        except Exception:
            failed += 1
            print("not ok %d - %s" % (n, fn.__doc__))
            for line in traceback.format_exc().splitlines():
                print("# " + line)
            continue
        if isinstance(r, str) and r.startswith("skip "):
            print("ok %d - %s # SKIP %s" % (n, fn.__doc__, r[5:]))
        else:
            print("ok %d - %s" % (n, fn.__doc__))
    return 1 if failed else 0
