"""python -m hpcolls tune: the selection table's crossovers measured on this machine (cli.py says
how). One concern per module: measure.py (each candidate's device time, by the benchmark's
machinery), crossovers.py (the rows from the times: pure, tested without a GPU), cli.py (the
run, the printed tables, storing through hpcolls/tuned_table.py)."""
from .cli import main

__all__ = ["main"]
