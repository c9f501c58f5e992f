"""The tools apart from the library: nothing in hpcolls imports them. `python -m hpcolls
SUBCOMMAND` runs them (hpcolls/__main__.py).

- info.py: `python -m hpcolls info`, what this process (and, under mpiexec, every rank) can use;
- bench/: `python -m hpcolls bench` or `python -m hpcolls.bench`, the collectives benchmark
  against NCCL and MPI, nccl-tests style (with its kernel trace and its hierarchy rows);
- staging_bench.py: `python -m hpcolls.tools.staging_bench`, the staged route's pinned host
  blocks against fresh pageable memory;
- host_overhead.py: `python -m hpcolls.tools.host_overhead`, every buffer method on host buffers
  through hpcolls.wrap against plain mpi4py.
"""
