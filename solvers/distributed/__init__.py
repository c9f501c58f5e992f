"""Block-cyclic distribution: process grid, descriptors, index maps, DistMatrix, panels, I/O."""
from .descriptor import Descriptor, numroc
from .distmatrix import DistMatrix
from .grid import ProcessGrid, default_shape, parse_shape
from .indexing import global_to_local, local_indices, local_to_global, owner

__all__ = ["Descriptor", "DistMatrix", "ProcessGrid", "default_shape", "global_to_local",
           "local_indices", "local_to_global", "numroc", "owner", "parse_shape"]
