"""Peak live memory per stage of a solve: what ``python -m solvers.bench --memory`` reports.

On a GPU, the bytes cupy's memory pool has handed out and not taken back (``used_bytes``),
sampled after every allocation by a cupy MemoryHook; on the host, the data buffers numpy
allocates, which it reports to tracemalloc. Each stage (Collectives.stage) gets the largest
value seen since the previous stage ended, and the value it left: so a stage's own temporaries
show as its peak above what it started with. Only the run's backend is measured (a GPU solve's
host arrays are not). Tracking costs a Python call per allocation: measure an untimed solve.
"""
import tracemalloc
from contextlib import contextmanager

from ..backend.arrays import is_numpy



class StagePeaks:
    """{stage: (peak bytes, bytes at its end)} above the live bytes when tracking began."""

    def __init__(self, xp):
        self.xp = xp
        self.stages = {}

    @contextmanager
    def track(self, coll):
        """Record every stage that ends inside the block (coll.on_stage_end, restored after)."""
        meter = _HostMeter() if is_numpy(self.xp) else _DeviceMeter(self.xp)
        previous = coll.on_stage_end
        self.stages = {}

        def record(name, seconds):
            peak, now = meter.since_last()
            self.stages[name] = (peak, now)
            if previous is not None:
                previous(name, seconds)

        coll.on_stage_end = record
        try:
            with meter:
                yield self
        finally:
            coll.on_stage_end = previous

    def line(self, unit_bytes, unit_name):
        """'stage peak/end, ...' in units of ``unit_bytes`` (e.g. one n × n matrix)."""
        return ", ".join(f"{name} {peak / unit_bytes:.2f}/{end / unit_bytes:.2f}"
                         for name, (peak, end) in self.stages.items()) + f" ({unit_name})"


class _HostMeter:
    def __enter__(self):
        self.started = not tracemalloc.is_tracing()
        if self.started:
            tracemalloc.start()
        self.base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        return self

    def since_last(self):
        now, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        return peak - self.base, now - self.base

    def __exit__(self, *exc):
        if self.started:
            tracemalloc.stop()


class _DeviceMeter:
    def __init__(self, xp):
        pool = xp.get_default_memory_pool()
        meter = self

        class Hook(xp.cuda.MemoryHook):
            name = "solvers.bench.memory_peaks"

            def malloc_postprocess(self, **kwargs):
                meter.peak = max(meter.peak, pool.used_bytes())

        self.pool, self.hook = pool, Hook()

    def __enter__(self):
        self.base = self.peak = self.pool.used_bytes()
        self.hook.__enter__()
        return self

    def since_last(self):
        now = self.pool.used_bytes()
        peak, self.peak = max(self.peak, now), now
        return peak - self.base, now - self.base

    def __exit__(self, *exc):
        self.hook.__exit__(*exc)
