#!/usr/bin/env python3
"""t/lib/settings-agree.py: does a document say what loom's table of
settings (spank/settings.c) says? The table comes on stdin; each
disagreement is printed, with what the table wants, and the exit status
is 1 when there is one.

  settings-agree.py sample FILE   plugstack.conf.sample  (table: settings --dump)
  settings-agree.py readme FILE   README.md's settings table (idem)
  settings-agree.py man FILE      loom(8) rendered as text (idem)
  settings-agree.py help FILE     srun --help's output (table: settings --usage ARGS)
"""
import re
import sys


def flat(s):
    return " ".join(s.split())


def dump_rows():
    rows = []
    for line in sys.stdin:
        key, option, syntax, default, what = line.rstrip("\n").split("\t")
        rows.append({"key": key, "option": None if option == "-" else option,
                     "syntax": syntax, "default": None if default == "-" else default,
                     "what": what})
    return rows


def check_sample(path, rows, bad):
    # "#   key=SYNTAX" then "#       text" lines, until the next key
    entries, cur = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"#   ([a-z_]+)=(\S+)$", line)
        if m:
            cur = m.group(1)
            entries[cur] = [m.group(2), ""]
            continue
        m = re.match(r"#    +(\S.*)$", line)
        if m and cur:
            entries[cur][1] += " " + m.group(1)
            continue
        cur = None
        if line.startswith("required "):
            for arg in line.split()[2:]:
                if arg.split("=")[0] not in [r["key"] for r in rows]:
                    bad.append("the example line has an unknown argument %s" % arg)
    for r in rows:
        e = entries.pop(r["key"], None)
        if e is None:
            bad.append("%s: missing (want '#   %s=%s')" % (r["key"], r["key"], r["syntax"]))
            continue
        if e[0] != r["syntax"]:
            bad.append("%s: syntax %s, the table says %s" % (r["key"], e[0], r["syntax"]))
        text = flat(e[1])
        if r["default"] and "(default: %s)" % r["default"] not in text:
            bad.append("%s: lacks '(default: %s)'" % (r["key"], r["default"]))
        if r["option"] and "--" + r["option"] not in text:
            bad.append("%s: does not name --%s" % (r["key"], r["option"]))
    for k in entries:
        bad.append("%s: not in the table" % k)


def readme_row(r):
    cells = ["`%s=%s`" % (r["key"], r["syntax"]), "`--%s`" % r["option"] if r["option"] else "",
             r["default"] or "", r["what"]]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def check_readme(path, rows, bad):
    # rows "| `key=SYNTAX` | `--option` | default | what |", | escaped as \|
    found = {}
    for line in open(path):
        m = re.match(r"\| `([a-z_]+)=", line)
        if m:
            found[m.group(1)] = line.rstrip("\n")
    for r in rows:
        want = readme_row(r)
        got = found.pop(r["key"], None)
        if got is None:
            bad.append("%s: no row (want: %s)" % (r["key"], want))
        elif got != want:
            bad.append("%s: the row differs\n  got:  %s\n  want: %s" % (r["key"], got, want))
    for k in found:
        bad.append("%s: a row for a key not in the table" % k)


def check_man(path, rows, bad):
    # groff -Tascii: section names at column 0, .TP tags at 7 spaces,
    # their text deeper
    sections, sec, tag = {}, None, None
    for line in open(path):
        line = line.rstrip("\n")
        if re.match(r"[A-Z]", line):
            sec, tag = line.strip(), None
            sections[sec] = {}
        elif re.match(r" {7}\S", line) and sec:
            tag = line.strip()
            sections[sec][tag] = ""
        elif re.match(r" {8,}\S", line) and tag:
            sections[sec][tag] += " " + line.strip()
    opts = sections.get("OPTIONS", {})
    args = sections.get("PLUGSTACK ARGUMENTS", {})
    arg_tags = " ".join(args)
    for r in rows:
        if r["option"]:
            tag, where = "--%s=%s" % (r["option"], r["syntax"]), opts
            if "%s=" % r["key"] not in arg_tags:
                bad.append("%s: PLUGSTACK ARGUMENTS does not name %s=" % (r["key"], r["key"]))
        else:
            tag, where = "%s=%s" % (r["key"], r["syntax"]), args
        if tag not in where:
            bad.append("%s: no entry '%s' in %s" % (r["key"], tag,
                       "OPTIONS" if r["option"] else "PLUGSTACK ARGUMENTS"))
            continue
        if r["default"] and "default: %s" % r["default"] not in flat(where[tag]):
            bad.append("%s: its entry lacks 'default: %s'" % (r["key"], r["default"]))
    keys = [r["key"] for r in rows]
    for t in args:
        for k in re.findall(r"(?:^|, )([a-z_]+)=", t):
            if k not in keys:
                bad.append("%s: in PLUGSTACK ARGUMENTS, not in the table" % k)


def check_help(path, bad):
    text = flat(open(path).read())
    for line in sys.stdin:
        option, syntax, usage = line.rstrip("\n").split("\t")
        want = flat("--%s=%s %s" % (option, syntax, usage))
        if want not in text:
            bad.append("--%s: srun --help lacks '%s'" % (option, want))


def main():
    what, path = sys.argv[1], sys.argv[2]
    bad = []
    if what == "help":
        check_help(path, bad)
    else:
        {"sample": check_sample, "readme": check_readme, "man": check_man}[what](
            path, dump_rows(), bad)
    for b in bad:
        print("%s: %s" % (path, b))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
