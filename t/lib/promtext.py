#!/usr/bin/env python3
"""A strict reader of the Prometheus text exposition format (0.0.4).

Rejects what Prometheus would reject or what the format forbids: bad
metric or label names, bad escapes, non-numeric values, a family's
samples not contiguous, HELP/TYPE after samples or twice, unknown TYPE,
duplicate series, counters whose name does not end in _total, negative
counters, missing final newline.

  promtext.py FILE                 check; print "ok N samples"
  promtext.py FILE NAME LABELS...  also print the value of NAME{LABELS}
                                   (LABELS as key=value; all must match)
"""
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class FormatError(Exception):
    pass


def parse_labels(text, lineno):
    labels = {}
    i = 0
    while i < len(text):
        m = re.match(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"", text[i:])
        if not m:
            raise FormatError(f"line {lineno}: bad label at '{text[i:]}'")
        key = m.group(1)
        i += m.end()
        val = []
        while True:
            if i >= len(text):
                raise FormatError(f"line {lineno}: unterminated label value for {key}")
            c = text[i]
            if c == "\\":
                if i + 1 >= len(text) or text[i + 1] not in 'n"\\':
                    raise FormatError(f"line {lineno}: bad escape in label {key}")
                val.append({"n": "\n", '"': '"', "\\": "\\"}[text[i + 1]])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise FormatError(f"line {lineno}: newline in label {key}")
            else:
                val.append(c)
                i += 1
        if key in labels:
            raise FormatError(f"line {lineno}: label {key} twice")
        labels[key] = "".join(val)
        if i < len(text):
            if text[i] != ",":
                raise FormatError(f"line {lineno}: expected ',' after label {key}")
            i += 1
    return labels


def parse_value(s, lineno):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.match(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)\Z", s):
        raise FormatError(f"line {lineno}: bad value '{s}'")
    return float(s)


def parse(text):
    if text and not text.endswith("\n"):
        raise FormatError("file does not end with a newline")
    families = {}      # name -> {"type":..., "help":..., "closed": bool}
    current = None
    samples = {}
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.match(name):
                    raise FormatError(f"line {lineno}: bad metric name '{name}'")
                fam = families.setdefault(name, {"type": None, "help": None, "samples": 0})
                if current != name and fam["samples"]:
                    raise FormatError(f"line {lineno}: {parts[1]} for {name} after its samples")
                key = parts[1].lower()
                if fam[key] is not None:
                    raise FormatError(f"line {lineno}: second {parts[1]} for {name}")
                if key == "type":
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise FormatError(f"line {lineno}: bad TYPE for {name}")
                    if fam["samples"]:
                        raise FormatError(f"line {lineno}: TYPE for {name} after samples")
                fam[key] = parts[3] if len(parts) == 4 else ""
                if current is not None and current != name:
                    families[current]["closed"] = True
                if fam.get("closed"):
                    raise FormatError(f"line {lineno}: family {name} is not contiguous")
                current = name
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?\Z", line)
        if not m:
            raise FormatError(f"line {lineno}: not a sample: '{line}'")
        name, _, ltext, vtext = m.group(1), m.group(2), m.group(3), m.group(4)
        labels = parse_labels(ltext, lineno) if ltext else {}
        value = parse_value(vtext, lineno)
        fam = families.setdefault(name, {"type": None, "help": None, "samples": 0})
        if current != name:
            if current is not None:
                families[current]["closed"] = True
            if fam.get("closed"):
                raise FormatError(f"line {lineno}: family {name} is not contiguous")
            current = name
        fam["samples"] += 1
        if fam["type"] == "counter":
            if not name.endswith("_total"):
                raise FormatError(f"line {lineno}: counter {name} does not end in _total")
            if value < 0 or math.isnan(value):
                raise FormatError(f"line {lineno}: counter {name} is {value}")
        series = (name, tuple(sorted(labels.items())))
        if series in samples:
            raise FormatError(f"line {lineno}: duplicate series {name}{labels}")
        samples[series] = value
    return samples


def main(argv):
    with open(argv[1]) as f:
        text = f.read()
    try:
        samples = parse(text)
    except FormatError as e:
        print(f"{argv[1]}: {e}")
        return 1
    if len(argv) == 2:
        print(f"ok {len(samples)} samples")
        return 0
    want = dict(a.split("=", 1) for a in argv[3:])
    hits = [v for (n, labels), v in samples.items()
            if n == argv[2] and all(dict(labels).get(k) == w for k, w in want.items())]
    if len(hits) != 1:
        print(f"{argv[2]}{want}: {len(hits)} matching series")
        return 1
    v = hits[0]
    print(int(v) if v == int(v) else v)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
