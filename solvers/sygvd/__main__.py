"""``python -m solvers.sygvd`` (or under srun / mpiexec): see ``--help``."""
import sys

from .cli import main

sys.exit(main())
