"""The collectives benchmark, nccl-tests style: python -m hpcolls.bench (cli.py says what it
measures). One concern per module: cases.py (each collective's message, buffers, expected result,
bus-bandwidth factor), runners.py (what each algorithm calls), timing.py (host and graph timing),
floors.py (the launch and empty-kernel floors), kernel_trace.py (the kernels' own device time, as
CUPTI records it), hierarchy_rows.py (--hierarchy's rows), plot.py (--plot)."""
from .cli import main

__all__ = ["main"]
