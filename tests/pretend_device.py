"""Host memory that hpcolls takes for device memory, for the MPI tests of the routes on machines
without a GPU: an object exposing `__cuda_array_interface__` over a numpy array, read as device
memory once `hpcolls.buffers._pointer_is_device` is made to say so (the tests' fixtures do)."""


class PretendDevice:
    """Host memory that hpcolls takes for device memory (see the fixtures that use it)."""

    def __init__(self, a):
        self.memory = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                                         "version": 3}
