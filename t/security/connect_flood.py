#!/usr/bin/env python3
"""t/security/connect_flood.py HOST:PORT SECONDS MAXFDS: what another user
throws at a forming job's MASTER_PORT in t/t7004: bare connects in a
loop, each kept open and sending nothing, at most MAXFDS at once (the
oldest closed for each new one), for SECONDS. It prints "ready" after its
first MAXFDS connects, then "connects N" at the end."""
import collections
import errno
import socket
import sys
import time


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    secs, maxfds = float(sys.argv[2]), int(sys.argv[3])
    until = time.monotonic() + secs
    held = collections.deque()
    n = 0
    ready = False
    while time.monotonic() < until:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if s.connect_ex((host, int(port))) not in (0, errno.EINPROGRESS):
            s.close()
            continue
        n += 1
        held.append(s)
        if len(held) > maxfds:
            held.popleft().close()
        if not ready and n >= maxfds:
            print("ready", flush=True)
            ready = True
    for s in held:
        s.close()
    print("connects %d" % n, flush=True)


if __name__ == "__main__":
    main()
