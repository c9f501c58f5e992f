"""Wall time per named phase of a stage, for its notes (stedc's, stein's): ``with phases("name"):``
adds the block's seconds to timings["name"], the backend synchronized on both sides so that a
GPU phase is timed whole; a no-op where timings is None (no synchronization then either)."""
import time
from contextlib import contextmanager

from .backend.arrays import synchronize


class Phases:
    def __init__(self, xp, timings):
        self.xp, self.timings = xp, timings

    @contextmanager
    def __call__(self, name):
        if self.timings is None:
            yield
            return
        synchronize(self.xp)
        start = time.perf_counter()
        yield
        synchronize(self.xp)
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start
