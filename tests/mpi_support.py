"""What the MPI library under the tests lacks, asked of plain mpi4py, and the skip reasons that say so.

mpi4py has every MPI-4 call, and raises NotImplementedError for one whose function its MPI
library lacks: Open MPI 4.1 (Debian's, the GPU machine's) has none of MPI-4's persistent
collectives (`Allreduce_init`, ...), partitioned calls (`Psend_init`, `Precv_init`) or
`Isendrecv`/`Isendrecv_replace`. The version number cannot tell: Open MPI 5.0 reports MPI 3.1 too
and has them. So a test compares with plain mpi4py: where plain mpi4py raises
NotImplementedError, the wrapper must raise it as well (checked), and the test, after every other
check has passed, skips naming those calls (`skip_lacking`), rather than pass as if it had
compared them.
"""
import pytest
from mpi4py import MPI


def library():
    """'MPI 3.1, Open MPI v4.1.4': the standard's version the library reports, and its name."""
    # Open MPI's version string ends in the C string's NUL (hpcolls/tools/info.py says more).
    name = MPI.Get_library_version().split("\0", 1)[0].splitlines()[0].split(",")[0].strip()
    return f"MPI {'.'.join(map(str, MPI.Get_version()))}, {name}"


def lacks(call):
    """True when call() (a plain mpi4py call, on MPI.COMM_SELF say) raises NotImplementedError:
    the MPI library lacks its function. A request it returns is freed (persistent) or waited for."""
    try:
        result = call()
    except NotImplementedError:
        return True
    if isinstance(result, MPI.Prequest):
        result.Free()
    elif isinstance(result, MPI.Request):
        result.Wait()
    return False


def skip_lacking(names, what="compared", checked=True):
    """Ends a test whose other checks passed by skipping, naming the calls this MPI library lacks
    (plain mpi4py raised NotImplementedError for each; `checked`: so did the wrapper, as the test
    asserted); nothing when there are none."""
    __tracebackhide__ = True  # pytest reports the skip at the test's line, not here
    if names:
        also = ", and so does hpcolls (checked)" if checked else ""
        pytest.skip(f"{library()} lacks {', '.join(sorted(names))}: mpi4py raises NotImplementedError{also}; "
                    f"those not {what}, every other call was")
