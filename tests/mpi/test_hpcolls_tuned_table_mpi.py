"""A tuned selection table is agreed over the communicator (hpcolls/tuned_table.py): rank 0 reads
the file and decides, every rank gets the same rows even where its own environment points
elsewhere or turns tuned tables off (ranks planning with different tables would run different
kernels for one call and hang until the time-out). Run at 1, 2 and 4 ranks; no GPU (a stand-in for
the native module's device facts, the native module's own check of the rows)."""
import random
from types import SimpleNamespace

import pytest

from hpcolls import tuned_table

_native = pytest.importorskip("hpcolls._native", reason="the native module is not built")


def stand_in(rank):
    return SimpleNamespace(device_info=lambda d: {"name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{rank}"},
                           KERNEL_VARIANTS=_native.KERNEL_VARIANTS, PROTOCOLS=_native.PROTOCOLS,
                           check_selection_rows=_native.check_selection_rows)


def test_every_rank_runs_rank_0s_choice(comm, tmp_path_factory):
    rank, size = comm.Get_rank(), comm.Get_size()
    path = comm.bcast(str(tmp_path_factory.mktemp("tuned") / "selection.json") if rank == 0 else None)
    native = stand_in(rank)
    key = tuned_table.machine_key(comm, native, 0, 1)
    assert key["ranks"] == size and key["gpu_count"] == size and key["ranks_per_gpu"] == 1
    row = next(dict(r) for r in _native.selection_table() if r["collective"] == "allreduce")
    row.update(max_ranks=size, ll_max=comm.bcast(random.choice([4, 8, 16]) << 10))
    if rank == 0:
        tuned_table.store(path, key, [row])
    comm.Barrier()
    # Every rank but 0 looks elsewhere (or nowhere): rank 0's file decides for all.
    setting = path if rank == 0 else ("none" if rank % 2 else f"{path}.elsewhere")
    chosen = tuned_table.agreed(comm, native, 0, 1, setting)
    assert chosen.tuned and list(chosen.rows) == [row] and chosen.path == path
    assert comm.allgather(chosen) == [chosen] * size
    setting = "none" if rank == 0 else path
    assert comm.allgather(tuned_table.agreed(comm, native, 0, 1, setting).tuned) == [False] * size
