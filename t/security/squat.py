#!/usr/bin/env python3
# t/security/squat.py NAME: hold the abstract Unix socket NAME (without
# its leading NUL), as another user's process might, accept whatever
# connects and count the bytes it sends; print "ready PID" once bound and
# "squatter: N connections, B bytes" when stdin closes, then exit (t2007).
import os
import select
import socket
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1])
s.listen(256)
print("ready", os.getpid(), flush=True)
conns, nconn, nbytes = [], 0, 0
while True:
    r, _, _ = select.select([s, sys.stdin] + conns, [], [])
    if sys.stdin in r and not sys.stdin.read(1):
        break
    if s in r:
        conns.append(s.accept()[0])
        nconn += 1
    for c in [c for c in conns if c in r]:
        d = c.recv(4096)
        nbytes += len(d)
        if not d:
            conns.remove(c)
            c.close()
print("squatter: %d connections, %d bytes" % (nconn, nbytes), flush=True)
