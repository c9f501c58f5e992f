"""The command line of the distributed sygvd, ``[srun | mpiexec -n P] python -m solvers.sygvd``
(solvers/sygvd.py runs it): main.py parses the arguments, makes the run's one plan and solves;
report.py prints the header and the stage table, check.py the dsgt01 ratios."""
