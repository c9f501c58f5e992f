"""Global ↔ local index maps of a 1D block-cyclic distribution (0-based).

Everything 2D is the product of two of these (rows over process rows, columns over process
columns), so only the 1D maps exist here. All functions accept numpy integer arrays as well
as ints, so a rank can map all its local indices in one call.
"""
import numpy as np

from .descriptor import numroc


def owner(g, nb, src, nprocs):
    """Process coordinate that holds global index g."""
    return (g // nb + src) % nprocs


def global_to_local(g, nb, nprocs):
    """Local index of global index g on its owner."""
    return (g // (nb * nprocs)) * nb + g % nb


def local_to_global(loc, nb, iproc, src, nprocs):
    """Global index of local index loc on process iproc."""
    return ((loc // nb) * nprocs + (iproc - src) % nprocs) * nb + loc % nb


def local_indices(n, nb, iproc, src, nprocs):
    """Sorted global indices of every local entry of process iproc (an int64 array)."""
    count = numroc(n, nb, iproc, src, nprocs)
    return local_to_global(np.arange(count, dtype=np.int64), nb, iproc, src, nprocs)
