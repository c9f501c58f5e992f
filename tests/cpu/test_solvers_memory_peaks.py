"""solvers.bench.memory_peaks on the host: each stage gets its own temporaries' peak and what it left."""
import numpy as np
from mpi4py import MPI

from solvers.backend.collectives import create_collectives
from solvers.distributed.grid import ProcessGrid
from solvers.bench.memory_peaks import StagePeaks

MIB = 1 << 20


def test_stages_get_their_own_peaks_and_what_they_left():
    grid = ProcessGrid(MPI.COMM_SELF, None)
    coll = create_collectives(grid, "mpi", np)
    seen = []
    coll.on_stage_end = lambda name, seconds: seen.append(name)
    peaks = StagePeaks(np)
    with peaks.track(coll):
        with coll.stage("temporary"):
            np.ones(8 * MIB, dtype=np.uint8).sum()      # 8 MiB, gone at the end
        with coll.stage("kept"):
            kept = np.ones(2 * MIB, dtype=np.uint8)
            np.ones(MIB, dtype=np.uint8).sum()
        with coll.stage("nothing"):
            pass
    assert seen == ["temporary", "kept", "nothing"]            # the caller's hook still runs
    (t_peak, t_end), (k_peak, k_end), (n_peak, n_end) = (peaks.stages[s] for s in seen)
    assert 8 * MIB <= t_peak < 9 * MIB and t_end < MIB / 4
    assert 3 * MIB <= k_peak < 4 * MIB and 2 * MIB <= k_end < 3 * MIB
    assert 2 * MIB <= n_peak < 3 * MIB and abs(n_end - k_end) < MIB / 16   # the kept array's level
    assert coll.on_stage_end is not None and coll.on_stage_end.__name__ == "<lambda>"
    assert peaks.line(MIB, "MiB").startswith("temporary 8.0") and kept.size
    grid.free()
