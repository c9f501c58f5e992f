"""HPCOLLS_VALIDATE=1: before a collective, every rank checks that all ranks make the same call.

Compared: the method, the count and datatype of the buffer every rank shares (hpcolls.methods'
`agree`: a Bcast's buffer, an Allreduce's receive buffer, a Gather's send buffer, ...; read
from the other buffer where it is MPI.IN_PLACE), the op, the root and Reduce_scatter's
recvcounts. Vector variants and neighborhood collectives are checked on method, datatype, op and
root only: their counts may differ per rank. The check is an allgather on the communicator, so a
mismatch raises ValidationError on every rank, naming what each rank passed, instead of a hang or
results that differ per rank.
"""
from mpi4py import MPI

from . import buffers
from .errors import ValidationError

_OPS = tuple((op, name) for name in ("SUM", "PROD", "MIN", "MAX", "LAND", "BAND", "LOR", "BOR", "LXOR", "BXOR",
                                     "MINLOC", "MAXLOC", "REPLACE", "NO_OP") if (op := getattr(MPI, name, None)) is not None)


def _op_name(op):
    for known, name in _OPS:
        if op == known:
            return name
    return "user-defined op"


def _shared_message(comm, method, args, kwargs, rank):
    if not method.agree:
        return None
    name, instead, per_rank = method.agree
    used, _ = method.roles(args, kwargs, rank)
    if name in used:
        return buffers.signature(method.argument(args, kwargs, name))
    count, datatype = buffers.signature(method.argument(args, kwargs, instead)) or (None, None)
    if per_rank and isinstance(count, int):
        count //= MPI.Comm.Get_size(comm)
    return count, datatype


def call_signature(comm, method, args, kwargs):
    rank = MPI.Comm.Get_rank(comm)
    sig = {"method": method.name}
    message = _shared_message(comm, method, args, kwargs, rank)
    if message is not None:
        sig["count"], sig["datatype"] = message
    elif method.buffers:
        for name, _ in method.buffers:  # the datatype at least
            found = buffers.signature(method.argument(args, kwargs, name))
            if found is not None:
                sig["datatype"] = found[1]
                break
    if "op" in method.parameters:
        sig["op"] = _op_name(method.argument(args, kwargs, "op"))
    if "root" in method.parameters:
        sig["root"] = method.argument(args, kwargs, "root")
    if "recvcounts" in method.parameters:
        counts = method.argument(args, kwargs, "recvcounts")
        sig["recvcounts"] = None if counts is None else [int(c) for c in counts]
    return sig


def check(comm, method, args, kwargs):
    mine = call_signature(comm, method, args, kwargs)
    every = MPI.Comm.allgather(comm, mine)
    if any(sig != every[0] for sig in every):
        table = "; ".join(f"rank {r}: " + ", ".join(f"{k}={v}" for k, v in sig.items()) for r, sig in enumerate(every))
        raise ValidationError(f"hpcolls: ranks disagree on {method.name} ({table})")
