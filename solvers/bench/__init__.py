"""The solver's benchmarks, apart from the library (as DLA-Future's miniapps): each module runs as
``python -m solvers.bench.<name>`` (see its --help); ``python -m solvers.bench`` is ``sygvd``.

    sygvd        solvers.sygvd per stage beside cuSOLVER's sygvd (cusolver.py) and cuSOLVERMp's
                 (cusolvermp.py); --cpu-vs-scipy: solvers.eigh beside scipy.linalg.eigh (scipy.py);
                 --memory: each stage's peak memory (memory_peaks.py)
    tridiagonal  the tridiagonal stage alone: all eigenpairs against subsets, eigenvalues alone
    sy2sb        the dense-to-band reduction on one GPU, whole and by phase
    panel_qr     one panel's QR both ways (CholeskyQR2 and geqrf) with CholeskyQR2's parts
    sb2st        the bulge chase on one GPU at several block sizes
    ormtr_sb2st  Q2's back-transformation on one GPU, kernel against GEMMs
    sygst        one rank's sygst ways on one GPU
    symv         sytrd's one-rank product (hemv_lower) beside cuBLAS's gemv
    one_gpu      what the one-GPU benchmarks share
"""
