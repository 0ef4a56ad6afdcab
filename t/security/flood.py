#!/usr/bin/env python3
"""t/security/flood.py HOST:PORT... : what another user throws at a loom
job's ports in t/t7000. On every port: 20 connections that send nothing,
5 that send random bytes at once, and, each from its own thread as soon as
the job sends its challenge, 3 truncated hellos and 4 well-formed hellos
with a forged MAC (claiming ranks -1 and 1). It prints "ready N" once the
first two kinds are open (N connections; the job may not be accepting
yet) and keeps everything open until stdin closes; then "refused M" (M:
connections the job closed by itself)."""
import os
import socket
import struct
import sys
import threading

MAGIC = 0x4C4D4832  # "LMH2", runtime/boot/handshake.c
socks = []
lock = threading.Lock()


def conn(host, port):
    s = socket.create_connection((host, port), timeout=10)
    s.settimeout(None)
    with lock:
        socks.append(s)
    return s


def challenge(s):
    got = b""
    while len(got) < 24:
        b = s.recv(24 - len(got))
        if not b:
            return None
        got += b
    return struct.unpack("<II", got[:8])


def forged(host, port, rank, truncated):
    s = conn(host, port)
    ch = challenge(s)
    kind = ch[1] if ch else 1
    if truncated:
        s.sendall(struct.pack("<II", MAGIC, kind) + b"\x01\x00")
        return
    hdr = struct.pack("<IIii", MAGIC, kind, rank, 2) + os.urandom(16)
    s.sendall(hdr + os.urandom(8 if kind == 2 else 72) + os.urandom(32))


def main():
    threads = []
    for arg in sys.argv[1:]:
        host, port = arg.rsplit(":", 1)
        port = int(port)
        for _ in range(20):
            conn(host, port)
        for _ in range(5):
            conn(host, port).sendall(os.urandom(200))
        for rank, trunc in ((-1, 0), (1, 0), (-1, 0), (1, 0), (0, 1), (0, 1), (0, 1)):
            t = threading.Thread(target=forged, args=(host, port, rank, trunc), daemon=True)
            t.start()
            threads.append(t)
    with lock:
        print("ready %d" % len(socks), flush=True)
    sys.stdin.read()
    refused = 0
    with lock:
        for s in socks:
            s.setblocking(False)
            try:
                if s.recv(1 << 16) == b"":
                    refused += 1
            except BlockingIOError:
                pass
            except OSError:
                refused += 1
            s.close()
    print("refused %d" % refused, flush=True)


if __name__ == "__main__":
    main()
