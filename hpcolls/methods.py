"""The buffer methods of mpi4py's communicator classes (and of MPI.Message), in one table: which
parameters are buffers and what the call does with each, whether it is a collective, and how its
request completes. hpcolls.Communicator's buffer methods are made from this table, and the routes
read it; docs/DROP_IN.md's table of routes is this table too.

Buffer roles: "r" read, "w" written (MPI may write only part of it, so a staged copy starts as the
buffer's contents); "x/y" is x at the root and y at the other ranks, "-" meaning that MPI ignores
the buffer there. With MPI.IN_PLACE as the send buffer, the receive buffer is read too: a written
buffer's staged copy starts as its contents, so that needs nothing more.
"""
import inspect
from dataclasses import dataclass

from mpi4py import MPI

BLOCKING, NONBLOCKING, PERSISTENT = "blocking", "nonblocking", "persistent"


@dataclass(frozen=True)
class Method:
    name: str
    owner: type                 # the mpi4py class that defines it
    buffers: tuple              # ((parameter name, role), ...)
    collective: bool
    completion: str             # BLOCKING, NONBLOCKING (returns a Request) or PERSISTENT (a Prequest)
    # The buffer whose (count, datatype) every rank shares: (parameter, the one to read instead
    # where it is MPI.IN_PLACE or ignored, whether that one holds a block per rank); () if none.
    agree: tuple = ()
    parameters: tuple = ()      # the mpi4py method's parameter names after self, in order
    defaults: tuple = ()        # their defaults (None where there is none)
    required: int = 0           # how many leading parameters have no default

    def argument(self, args, kwargs, name):
        """The value the call passes for parameter `name` (its default when left out)."""
        pos = self.parameters.index(name)
        if pos < len(args):
            return args[pos]
        return kwargs.get(name, self.defaults[pos])

    def check_arguments(self, args, kwargs):
        """Raises TypeError where mpi4py's method would refuse these arguments: too many positional
        ones, an unknown keyword, a parameter given twice, a required one missing. For a route
        that reads the arguments itself instead of handing them to mpi4py (routes/native.py)."""
        if len(args) > len(self.parameters):
            raise TypeError(f"{self.name}() takes at most {len(self.parameters)} positional arguments "
                            f"({len(args)} given)")
        for name in kwargs:
            if name not in self.parameters:
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{name}'")
            if self.parameters.index(name) < len(args):
                raise TypeError(f"{self.name}() got multiple values for argument '{name}'")
        for name in self.parameters[len(args):self.required]:
            if name not in kwargs:
                raise TypeError(f"{self.name}() missing required argument '{name}'")

    def replace(self, args, kwargs, name, value):
        """args (a list) and kwargs (a dict) with parameter `name` set to `value`."""
        pos = self.parameters.index(name)
        if pos < len(args):
            args[pos] = value
        else:
            kwargs[name] = value

    def roles(self, args, kwargs, rank):
        """{parameter: "r" or "w"} for the buffer arguments that MPI uses on this rank (None,
        MPI.IN_PLACE are not buffers), and the set of parameters MPI ignores here."""
        root = self.argument(args, kwargs, "root") if "root" in self.parameters else None
        used, ignored = {}, set()
        for name, role in self.buffers:
            value = self.argument(args, kwargs, name)
            if value is None or value is MPI.IN_PLACE:
                continue
            if "/" in role:
                role = role.split("/")[rank != root]
            if role == "-":
                ignored.add(name)
            else:
                used[name] = role
        return used, ignored


def _parameters(owner, name):
    """(names, defaults, how many lead without a default) of the parameters of mpi4py's
    owner.name after self."""
    params = list(inspect.signature(getattr(owner, name)).parameters.values())[1:]
    empty = inspect.Parameter.empty
    required = next((i for i, p in enumerate(params) if p.default is not empty), len(params))
    return (tuple(p.name for p in params), tuple(None if p.default is empty else p.default for p in params),
            required)


_PER_RANK_SEND = ("sendbuf", "recvbuf", True)
_WHOLE_SEND = ("sendbuf", "recvbuf", False)
_RECV = ("recvbuf", "recvbuf", False)


def _methods():
    table = {}

    def add(names, owner, buffers, collective, agree=()):
        for name in names.split():
            if not hasattr(owner, name):
                continue  # an mpi4py without this MPI-4 call
            completion = PERSISTENT if name.endswith("_init") else (
                NONBLOCKING if name.startswith("I") else BLOCKING)  # every buffer method named I... is
            table[name] = Method(name, owner, buffers, collective, completion, agree, *_parameters(owner, name))

    send, recv = (("buf", "r"),), (("buf", "w"),)
    pair = (("sendbuf", "r"), ("recvbuf", "w"))
    add("Send Bsend Ssend Rsend Isend Ibsend Issend Irsend Send_init Bsend_init Ssend_init Rsend_init Psend_init",
        MPI.Comm, send, False)
    add("Recv Irecv Recv_init Precv_init", MPI.Comm, recv, False)
    add("Sendrecv Isendrecv", MPI.Comm, pair, False)
    add("Sendrecv_replace Isendrecv_replace", MPI.Comm, recv, False)
    add("Bcast Ibcast Bcast_init", MPI.Comm, (("buf", "r/w"),), True, ("buf", "buf", False))
    add("Gather Igather Gather_init", MPI.Comm, (("sendbuf", "r"), ("recvbuf", "w/-")), True, _PER_RANK_SEND)
    add("Gatherv Igatherv Gatherv_init", MPI.Comm, (("sendbuf", "r"), ("recvbuf", "w/-")), True)
    add("Scatter Iscatter Scatter_init", MPI.Comm, (("sendbuf", "r/-"), ("recvbuf", "w")), True, ("recvbuf", "sendbuf", True))
    add("Scatterv Iscatterv Scatterv_init", MPI.Comm, (("sendbuf", "r/-"), ("recvbuf", "w")), True)
    add("Allgather Iallgather Allgather_init", MPI.Comm, pair, True, _PER_RANK_SEND)
    add("Alltoall Ialltoall Alltoall_init", MPI.Comm, pair, True, _WHOLE_SEND)
    add("Allreduce Iallreduce Allreduce_init Reduce_scatter_block Ireduce_scatter_block Reduce_scatter_block_init",
        MPI.Comm, pair, True, _RECV)
    add("Allgatherv Iallgatherv Allgatherv_init Alltoallv Ialltoallv Alltoallv_init Alltoallw Ialltoallw "
        "Alltoallw_init Reduce_scatter Ireduce_scatter Reduce_scatter_init", MPI.Comm, pair, True)
    add("Reduce Ireduce Reduce_init", MPI.Comm, (("sendbuf", "r"), ("recvbuf", "w/-")), True, _WHOLE_SEND)
    add("Scan Iscan Scan_init Exscan Iexscan Exscan_init", MPI.Intracomm, pair, True, _RECV)
    add("Neighbor_allgather Ineighbor_allgather Neighbor_allgather_init Neighbor_alltoall Ineighbor_alltoall "
        "Neighbor_alltoall_init", MPI.Topocomm, pair, True)
    add("Neighbor_allgatherv Ineighbor_allgatherv Neighbor_allgatherv_init Neighbor_alltoallv Ineighbor_alltoallv "
        "Neighbor_alltoallv_init Neighbor_alltoallw Ineighbor_alltoallw Neighbor_alltoallw_init",
        MPI.Topocomm, pair, True)
    return table


METHODS = _methods()
# Matched receives, on the Message that Mprobe/Improbe return.
MESSAGE_METHODS = {name: Method(name, MPI.Message, (("buf", "w"),), False, completion, (),
                                *_parameters(MPI.Message, name))
                   for name, completion in (("Recv", BLOCKING), ("Irecv", NONBLOCKING))}


def of_class(owner):
    """The methods defined by `owner` (MPI.Comm, MPI.Intracomm or MPI.Topocomm)."""
    return {name: m for name, m in METHODS.items() if m.owner is owner}
