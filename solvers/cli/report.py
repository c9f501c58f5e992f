"""What rank 0 prints: the run header and the per-stage time / collectives table."""
import platform
import sys

import mpi4py
import numpy
import scipy


def versions(xp):
    """One line of library versions (the MPI library's first line included)."""
    from mpi4py import MPI   # here, not at the top: its import initializes MPI (solvers/__init__.py)
    parts = [f"python {platform.python_version()}", f"numpy {numpy.__version__}",
             f"scipy {scipy.__version__}", f"mpi4py {mpi4py.__version__}",
             f"MPI: {MPI.Get_library_version().splitlines()[0].split(',')[0].strip()}"]
    if xp is not numpy:
        parts.append(f"cupy {xp.__version__} (CUDA runtime {xp.cuda.runtime.runtimeGetVersion()})")
    return ", ".join(parts)


def print_header(lines, out=sys.stdout):
    width = max(len(key) for key, _ in lines)
    for key, value in lines:
        print(f"{key:<{width}} : {value}", file=out)
    out.flush()


def _megabytes(nbytes):
    return nbytes / 1e6


def stage_table(stats, total_wall):
    """Rows: stage, wall time, share, collective calls by op, MB moved, time inside collectives,
    notes. Figures are this rank's (rank 0); collective times are host wall-clock per call."""
    head = (f"{'stage':<12} {'wall s':>9} {'%':>5} {'calls':>7} {'MB':>9} {'coll s':>9}  "
            f"calls by op / notes")
    rows = [head, "-" * len(head)]
    tot_calls = tot_bytes = 0
    tot_coll = 0.0
    for name, st in stats.items():
        ops = ", ".join(f"{op} {c}" for op, (c, _b, _s) in st.by_op.items())
        notes = ", ".join(f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
                          for key, value in st.notes.items())
        share = 100.0 * st.wall_s / total_wall if total_wall > 0 else 0.0
        rows.append(f"{name:<12} {st.wall_s:9.4f} {share:5.1f} {st.calls:7d} "
                    f"{_megabytes(st.bytes):9.3f} {st.coll_s:9.4f}  "
                    + "; ".join(part for part in (ops, notes) if part))
        tot_calls += st.calls
        tot_bytes += st.bytes
        tot_coll += st.coll_s
    rows.append("-" * len(head))
    rows.append(f"{'total':<12} {total_wall:9.4f} {100.0:5.1f} {tot_calls:7d} "
                f"{_megabytes(tot_bytes):9.3f} {tot_coll:9.4f}")
    return "\n".join(rows)
