# SPDX-License-Identifier: BSD-3-Clause
# mpi4py: a ping-pong and an allreduce over numpy buffers, every byte checked
import sys
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
bad = 0
t0 = MPI.Wtime()
for size in ((1, 1000, 65536, 262144, 1 << 20, 1 << 23) if r < 2 else ()):
    for it in range(3):
        buf = np.empty(size, dtype=np.uint8)
        if r == 0:
            buf[:] = (np.arange(size) * 7 + it) % 251
            comm.Send(buf, dest=1, tag=it)
            comm.Recv(buf, source=1, tag=it)
            exp = (np.arange(size) * 13 + it) % 253
        else:
            comm.Recv(buf, source=0, tag=it)
            exp = (np.arange(size) * 7 + it) % 251
            bad += int((buf != exp.astype(np.uint8)).sum())
            buf[:] = (np.arange(size) * 13 + it) % 253
            comm.Send(buf, dest=0, tag=it)
            continue
        bad += int((buf != exp.astype(np.uint8)).sum())
t1 = MPI.Wtime()
x = np.full(1 << 20, r + 1, dtype=np.float64)
y = np.empty_like(x)
comm.Allreduce(x, y, op=MPI.SUM)
bad += int((y != n * (n + 1) / 2).sum())
t_end = MPI.Wtime()
tot = comm.allreduce(bad)
print('rank %d pingpong %.3f allreduce %.3f' % (r, t1 - t0, t_end - t1), flush=True)
if r == 0:
    print("mpi4py: %s, %d bad values over all ranks" % ("OK" if tot == 0 else "FAIL", tot))
sys.exit(1 if tot else 0)
