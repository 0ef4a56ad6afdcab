#!/usr/bin/env python3
"""bench/inplace.py: libloom's allreduce out of place and in place, and
loom_iallreduce + loom_wait in place and out of place, on the same
buffers, through ctypes (no torch): what a torch collective, which is
always in place, can expect of libloom beneath the process group "loom".

    srun -N1 -n2 --loom-affinity=closest /usr/bin/python3 bench/inplace.py 8 1M 4M

LOOM_LIBRARY names libloom (default libloom.so.0). float32 sum; per size
200 calls (10 from 256 KiB) after 3 warm-up, the four forms interleaved,
best of 5 rounds of rank 0's mean; rank 0 prints one line a size:
  bytes out_us in_us nb_in_us nb_out_us"""
import ctypes
import os
import sys
import time

import numpy as np

FLOAT32, SUM = 5, 0


def size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1].upper()] if s[-1].upper() in m else int(s)


def main():
    lib = ctypes.CDLL(os.environ.get("LOOM_LIBRARY", "libloom.so.0"))
    P, I, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    comm = P()
    if lib.loom_init(ctypes.byref(comm)):
        sys.exit("inplace: loom_init failed")

    def blocking(s, r, n):
        return lib.loom_allreduce(P(s), P(r), Z(n), I(FLOAT32), I(SUM), comm)

    def nonblocking(s, r, n):
        q = P()
        rc = lib.loom_iallreduce(P(s), P(r), Z(n), I(FLOAT32), I(SUM), comm, ctypes.byref(q))
        return rc or lib.loom_wait(q)

    if lib.loom_comm_rank(comm) == 0:
        print("# bytes out_us in_us nb_in_us nb_out_us (%d ranks)" % lib.loom_comm_size(comm))
    for nbytes in map(size, sys.argv[1:] or ["8", "1M", "4M"]):
        n = max(1, nbytes // 4)
        a, b = np.ones(n, np.float32), np.zeros(n, np.float32)
        pa, pb = a.ctypes.data, b.ctypes.data
        forms = ((blocking, pa, pb), (blocking, pa, pa), (nonblocking, pa, pa), (nonblocking, pa, pb))
        iters = 200 if nbytes < 262144 else 10
        best = [1e99] * len(forms)
        for _ in range(5):
            for i, (f, s, r) in enumerate(forms):
                for _ in range(3):
                    f(s, r, n)
                lib.loom_barrier(comm)
                t = time.perf_counter()
                for _ in range(iters):
                    if f(s, r, n):
                        sys.exit("inplace: the allreduce failed")
                best[i] = min(best[i], (time.perf_counter() - t) / iters * 1e6)
        if lib.loom_comm_rank(comm) == 0:
            print(nbytes, " ".join("%.1f" % t for t in best), flush=True)
    lib.loom_finalize(comm)


if __name__ == "__main__":
    main()
