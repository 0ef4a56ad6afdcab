#!/usr/bin/env python3
"""t/security/relay.py: the man in the middle of t/t7004, run as another
user (nobody), without the job's secret.

  relay.py env DIR     DIR/env holds "MASTER_IP MASTER_PORT" (written by a
                       rank); bind that first, write DIR/ready, take the
                       first rank that dials, close the listener (so that
                       rank 0's SO_REUSEADDR bind still succeeds), dial the
                       real rank 0 from 127.0.0.2 and pass rank 0's
                       challenge and the rank's hello (and all that
                       follows) both ways. If rank 0 answers, listen on
                       127.0.0.2 at the rank's mesh port from its hello
                       (where rank 0 would then record it) and pass on
                       whatever rank 0 dials there: the relay on the mesh.
  relay.py mesh IP:PORT
                       under PMIx there is no MASTER_PORT: two connections
                       from 127.0.0.2 to a rank's mesh listener, each one's
                       challenge passed to the other as its hello (no
                       rank dials the relay: there is no hello to pass).

It prints what it saw, one line each: "relay: took rank ...", "relay:
rank 0 answered N bytes" (the attack went through), "relay: refused"
(rank 0 closed the relayed connection without an answer), "relay: on the
mesh, N bytes passed"."""
import os
import select
import socket
import sys
import time

HELLO_PAYLOAD = 108  # struct rv_hello, runtime/boot/rendezvous.h
MAC = 32


def say(*a):
    print("relay:", *a, flush=True)


def pump(a, b, secs):
    """bytes both ways until one side closes; returns (a->b, b->a) bytes"""
    got = {a: b"", b: b""}
    until = time.time() + secs
    while time.time() < until:
        r, _, _ = select.select([a, b], [], [], 0.2)
        for s in r:
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            if not d:
                return got[a], got[b], s
            got[s] += d
            other = b if s is a else a
            try:
                other.sendall(d)
            except OSError:
                return got[a], got[b], other
    return got[a], got[b], None


def env(d):
    path = os.path.join(d, "env")
    until = time.time() + 60
    while not os.path.exists(path) and time.time() < until:
        time.sleep(0.05)
    ip, port = open(path).read().split()
    port = int(port)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ip, port))
    ls.listen(8)
    open(os.path.join(d, "ready"), "w").close()
    say("listening on %s:%d before rank 0" % (ip, port))
    ls.settimeout(60)
    c1, peer = ls.accept()
    ls.close()
    say("took a rank from %s:%d, listener closed" % peer)
    c0 = None
    until = time.time() + 60
    while time.time() < until:
        c0 = socket.socket()
        c0.bind(("127.0.0.2", 0))
        try:
            c0.connect((ip, port))
            break
        except OSError:
            c0.close()
            c0 = None
            time.sleep(0.1)
    if c0 is None:
        say("rank 0 never listened")
        return 1
    say("dialed rank 0 from %s:%d" % c0.getsockname())
    # rank 0's challenge to the rank, its hello (and a group's entries) to
    # rank 0, and whatever rank 0 answers back
    up, down, _ = pump(c1, c0, 30)
    after = len(down) - 24
    if after > 0:
        say("rank 0 answered %d bytes after the hello" % after)
    else:
        say("refused: rank 0 closed the relayed connection without an answer (%d bytes of hello passed)"
            % len(up))
    c0.close()
    c1.close()
    if after <= 0 or len(up) not in (32 + HELLO_PAYLOAD + MAC, 48 + HELLO_PAYLOAD + MAC):
        return 0
    # rank 0 took us for the rank: it dials its mesh port on 127.0.0.2
    # a flat rank's hello: header, rv_hello (pid, port, ...), MAC
    hdr = len(up) - HELLO_PAYLOAD - MAC
    mport = int.from_bytes(up[hdr + 4: hdr + 6], "little")
    rank_ip = "127.0.0.1"
    ms = socket.socket()
    ms.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        ms.bind(("127.0.0.2", mport))
    except OSError as e:
        say("cannot listen on 127.0.0.2:%d: %s" % (mport, e))
        return 0
    ms.listen(8)
    ms.settimeout(30)
    try:
        m0, _ = ms.accept()
    except OSError:
        say("nobody dialed the mesh port")
        return 0
    m1 = socket.create_connection((rank_ip, mport), timeout=10)
    a, b, _ = pump(m0, m1, 30)
    say("on the mesh, %d bytes passed" % (len(a) + len(b)))
    return 0


def mesh(target):
    ip, port = target.rsplit(":", 1)
    s = []
    for _ in range(2):
        c = socket.socket()
        c.bind(("127.0.0.2", 0))
        c.connect((ip, int(port)))
        c.settimeout(10)
        s.append(c)
    ch = [c.recv(24) for c in s]
    # each challenge as the other's hello, filled out to a mesh hello's
    # length (header 48, nonce 8, MAC 32): it cannot hold a MAC of the key
    s[0].sendall(ch[1] + bytes(64))
    s[1].sendall(ch[0] + bytes(64))
    # refused: the rank closes, after at most its 32-byte refusal frame
    closed = 0
    for c in s:
        got = b""
        try:
            while len(got) <= 32:
                d = c.recv(64)
                if not d:
                    closed += 1
                    break
                got += d
        except OSError:
            closed += 1
    say("refused: %d of 2 crossed connections closed by the rank" % closed if closed == 2
        else "crossed connections still open: %d closed" % closed)
    return 0


if __name__ == "__main__":
    sys.exit(env(sys.argv[2]) if sys.argv[1] == "env" else mesh(sys.argv[2]))
