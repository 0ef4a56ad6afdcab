#!/usr/bin/env python3
"""Functions longer than a limit, in C files of the project's style.

Usage: long-functions.py [--max N] FILE...

Prints "FILE:FUNCTION LINES LINE" for each function whose body, from its
opening brace to its closing one, spans more than N lines (default 100),
LINE being where the body starts. Exits 0, or 2 if a file is not in the
style this relies on.

The style (K&R, as in the kernel): a function's body opens with "{"
alone in column 0 on the line after its signature and closes with the
next "}" in column 0; nothing inside a body starts in column 0 with a
brace. The function's name is the identifier before the first "(" of
the signature, read upwards from the "{" to the blank line, comment end,
"#" line, ";" or "}" that ends what comes before. Not counted: braces of
structs and initialisers (they open at the end of a line), one-line
functions, and the lines of a multi-line #define (a function a macro
makes is not looked at). A lone "}" in column 0 outside a body, as a
body opened at the end of its signature line would leave, is an error
(the one closing extern "C" { is not).
"""

import re
import sys


def signature_name(lines, i):
	"""the function name for the "{" at lines[i]"""
	sig = []
	j = i - 1
	while j >= 0:
		s = lines[j].rstrip()
		if (not s or s.startswith('#') or s.endswith(';') or
		    s.endswith('*/') or s.startswith('}')):
			break
		sig.insert(0, s)
		j -= 1
	m = re.search(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(', ' '.join(sig))
	return m.group(1) if m else None


def functions(path):
	"""(name, first line, number of lines) of each function; raises
	ValueError where the file leaves the style"""
	with open(path, encoding='utf-8', errors='replace') as f:
		lines = f.read().split('\n')
	out = []
	start = None
	macro = False
	extern_c = 0
	for i, s in enumerate(lines):
		# a #define's continuation lines are not code of this file
		cont = s.rstrip().endswith('\\')
		if macro or (s.lstrip().startswith('#') and cont):
			macro = cont
			continue
		if s.startswith('{'):
			if start is not None:
				raise ValueError('%s:%d: "{" in column 0 inside the body '
						 'opened at line %d' % (path, i + 1, start + 1))
			if s.rstrip() != '{':
				raise ValueError('%s:%d: "{" in column 0 not alone' % (path, i + 1))
			name = signature_name(lines, i)
			if name is None:
				raise ValueError('%s:%d: no signature before "{"' % (path, i + 1))
			start = i
		elif s.startswith('}') and start is not None:
			out.append((name, start + 1, i - start + 1))
			start = None
		elif s.rstrip() == '}':
			# a lone "}" outside a body closes extern "C" or a body
			# this parser did not see open (a "{" at a line's end)
			if extern_c == 0:
				raise ValueError('%s:%d: "}" closes no body opened by a '
						 '"{" in column 0' % (path, i + 1))
			extern_c -= 1
		elif re.match(r'extern\s+"C"\s*\{\s*$', s):
			extern_c += 1
	if start is not None:
		raise ValueError('%s:%d: body never closed in column 0' % (path, start + 1))
	return out


def main(argv):
	limit = 100
	if len(argv) >= 2 and argv[0] == '--max':
		limit = int(argv[1])
		argv = argv[2:]
	rc = 0
	count = 0
	for path in argv:
		try:
			fns = functions(path)
		except ValueError as e:
			print(e)
			rc = 2
			continue
		count += len(fns)
		for name, line, n in fns:
			if n > limit:
				print('%s:%s %d %d' % (path, name, n, line))
	sys.stderr.write('%d functions in %d files\n' % (count, len(argv)))
	return rc


if __name__ == '__main__':
	sys.exit(main(sys.argv[1:]))
