"""Counted Allreduce / Bcast per scope: made when the scope has several ranks, skipped (the
identity, nothing counted) when it has one, e.g. the column scope of a 1 x P grid."""
import numpy as np

from solvers.backend import Collectives


def test_one_rank_scopes_make_no_call(grid):
    coll = Collectives(grid)
    scopes = {"all": (grid.size, grid.rank), "row": (grid.npcol, grid.mycol),
              "col": (grid.nprow, grid.myrow)}
    for scope, (size, me) in scopes.items():
        with coll.stage(scope):
            buf = np.full(3, me + 1.0)
            assert coll.allreduce(buf, scope=scope) is buf
            np.testing.assert_array_equal(buf, size * (size + 1) / 2)
            buf = np.full(2, float(me))
            assert coll.bcast(buf, root=size - 1, scope=scope) is buf
            np.testing.assert_array_equal(buf, size - 1)
        calls = {op: entry[0] for op, entry in coll.stats[scope].by_op.items()}
        assert calls == ({"allreduce": 1, "bcast": 1} if size > 1 else {}), f"{scope} of {grid}"
