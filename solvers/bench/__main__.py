"""``python -m solvers.bench``: the sygvd benchmark (sygvd.py)."""
import sys

from .sygvd import main

sys.exit(main())
