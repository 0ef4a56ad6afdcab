#!/usr/bin/env python3
"""Call circles between source files, from their built objects.

Usage: call-circles.py [--min-calls N] OBJECT...

Each object's defined and undefined global symbols (nm -P) give the
file-to-file calls: a.o needs a symbol b.o defines, so a calls b. A circle
is a strongly connected component of more than one file of that graph
(a calls b, b calls a, directly or around several files): none of its
files can be read, tested or changed without the others. Prints each
circle by its source files, then the calls inside it, and exits 1 if
there is any; exits 2 if fewer than N calls between the objects were
found (nm read nothing useful: wrong objects, an LTO object nm cannot
read).

An object is named by its source: runtime/coll/.libs/libloom_core_la-x.o
is runtime/coll/x.c (libtool's folder and per-target prefix dropped).
nm reads an object built with -flto -ffat-lto-objects through the LTO
plugin when binutils has it (the IR's symbols) and its ELF symbol table
otherwise; the two agree on every function and variable of the project
and differ only in compiler builtins and GCC's "file.c.hash" markers,
which no object defines as a C name and so make no call here.
"""

import collections
import os
import re
import subprocess
import sys

DEFINED = set('TDBRVWiuC')


def source_name(obj):
	d, base = os.path.split(obj)
	if os.path.basename(d) == '.libs':
		d = os.path.dirname(d)
	base = re.sub(r'^[A-Za-z0-9_]+_la-', '', base)
	return os.path.join(d, re.sub(r'\.o$', '.c', base))


def read_symbols(objs):
	"""defs: symbol -> file defining it; uses: file -> symbols it needs"""
	defs = {}
	uses = collections.defaultdict(set)
	for obj in objs:
		name = source_name(obj)
		uses[name]
		out = subprocess.run(['nm', '-P', obj], capture_output=True,
				     text=True, check=True).stdout
		for line in out.splitlines():
			p = line.split()
			if len(p) < 2:
				continue
			if p[1] in DEFINED:
				defs[p[0]] = name
			elif p[1] == 'U':
				uses[name].add(p[0])
	return defs, uses


def call_edges(defs, uses):
	"""file -> {file it calls: symbols}"""
	edges = collections.defaultdict(lambda: collections.defaultdict(set))
	for f, syms in uses.items():
		for s in syms:
			d = defs.get(s)
			if d is not None and d != f:
				edges[f][d].add(s)
	return edges


def circles(nodes, edges):
	"""Tarjan's strongly connected components of more than one node,
	iteratively (no recursion limit), each sorted, in a stable order"""
	index, low, stack, on = {}, {}, [], set()
	out = []
	n = 0
	for root in sorted(nodes):
		if root in index:
			continue
		work = [(root, iter(sorted(edges[root])))]
		index[root] = low[root] = n
		n += 1
		stack.append(root)
		on.add(root)
		while work:
			v, it = work[-1]
			w = next(it, None)
			if w is not None:
				if w not in index:
					index[w] = low[w] = n
					n += 1
					stack.append(w)
					on.add(w)
					work.append((w, iter(sorted(edges[w]))))
				elif w in on:
					low[v] = min(low[v], index[w])
				continue
			work.pop()
			if work:
				u = work[-1][0]
				low[u] = min(low[u], low[v])
			if low[v] == index[v]:
				comp = []
				while True:
					w = stack.pop()
					on.discard(w)
					comp.append(w)
					if w == v:
						break
				if len(comp) > 1:
					out.append(sorted(comp))
	return sorted(out)


def main(argv):
	min_calls = 1
	if len(argv) >= 2 and argv[0] == '--min-calls':
		min_calls = int(argv[1])
		argv = argv[2:]
	if not argv:
		sys.stderr.write(__doc__)
		return 2
	defs, uses = read_symbols(argv)
	edges = call_edges(defs, uses)
	calls = sum(len(s) for f in edges.values() for s in f.values())
	found = circles(uses.keys(), edges)
	for comp in found:
		print('circle of %d files: %s' % (len(comp), ' '.join(comp)))
		for a in comp:
			for b in sorted(edges[a]):
				if b in comp:
					print('    %s -> %s: %s' % (a, b, ' '.join(sorted(edges[a][b]))))
	print('%d calls between %d files, %d circles' % (calls, len(uses), len(found)))
	if calls < min_calls:
		print('fewer than %d calls: nm read no symbols from these objects?' % min_calls)
		return 2
	return 1 if found else 0


if __name__ == '__main__':
	sys.exit(main(sys.argv[1:]))
