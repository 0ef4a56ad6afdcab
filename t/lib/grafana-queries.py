#!/usr/bin/env python3
"""Run every query of a Grafana dashboard against a live Prometheus.

  grafana-queries.py URL DASHBOARD.json [NAME=VALUE...]

The dashboard's query variables are resolved in order, as Grafana does:
label_values(SELECTOR, LABEL) runs SELECTOR (its own $variables already
substituted) and takes LABEL's values; a NAME=VALUE argument says which
value to pick and must be among them (else the first is picked). Then
every panel target's expr, with $NAME and ${NAME} substituted, must
return data. A query is retried for up to --wait seconds (a rate needs two
scrapes). Prints one line per query; exit 1 when one fails.
"""
import json
import re
import sys
import time
import urllib.parse
import urllib.request

# loopback: no proxy from the environment
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def query(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    with OPENER.open(f"{url}/api/v1/query?{q}", timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]["result"]


def query_until(url, expr, wait, good):
    deadline = time.monotonic() + wait
    while True:
        res = query(url, expr)
        if good(res) or time.monotonic() > deadline:
            return res
        time.sleep(0.5)


def substitute(expr, values):
    for name, value in values.items():
        expr = expr.replace("${" + name + "}", value).replace("$" + name, value)
    return expr


def main(argv):
    wait = 30.0
    args = argv[1:]
    if args and args[0].startswith("--wait="):
        wait = float(args.pop(0).split("=", 1)[1])
    url, path = args[0].rstrip("/"), args[1]
    want = dict(a.split("=", 1) for a in args[2:])
    with open(path) as f:
        dash = json.load(f)
    values, failed = {}, 0

    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var["query"]
        q = q["query"] if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", q)
        if not m:
            print(f"not ok variable {var['name']}: not label_values(...): {q}")
            failed += 1
            continue
        sel, label = substitute(m.group(1), values), m.group(2)
        res = query_until(url, sel, wait,
                          lambda r: any(s["metric"].get(label) == want.get(var["name"])
                                        for s in r) if var["name"] in want else r)
        got = sorted({s["metric"][label] for s in res if label in s["metric"]})
        pick = want.get(var["name"], got[0] if got else None)
        if pick is None or pick not in got:
            print(f"not ok variable {var['name']}: {sel} gives {label} in {got}, "
                  f"not {pick}")
            failed += 1
            continue
        values[var["name"]] = pick
        print(f"ok variable {var['name']} = {pick} (of {got}): {sel}")

    for panel in dash.get("panels", []):
        for t in panel.get("targets", []):
            expr = substitute(t["expr"], values)
            if "$" in expr:
                print(f"not ok panel {panel.get('title')}: unresolved variable in {expr}")
                failed += 1
                continue
            res = query_until(url, expr, wait, lambda r: len(r) > 0)
            if res:
                print(f"ok panel {panel.get('title')}: {len(res)} series: {expr}")
            else:
                print(f"not ok panel {panel.get('title')}: no data: {expr}")
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
