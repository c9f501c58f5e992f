"""python -m hpcolls.bench: the collectives benchmark, the same as `python -m hpcolls bench` (a tool
apart from the library: hpcolls/tools/bench/, whose cli.py says what it measures)."""
import sys

from .tools.bench import main

if __name__ == "__main__":
    sys.exit(main())
