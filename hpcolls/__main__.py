"""python -m hpcolls [--version] [--help] SUBCOMMAND [ARGS]"""
import sys

PROG = "python -m hpcolls"

# Each subcommand imports its tool (hpcolls/tools/) when it runs, not before: --help, --version and
# preload start no MPI (importing mpi4py.MPI initializes it), info, bench and tune do.


def _info(argv):
    if argv:
        return _usage_error(f"info takes no arguments (got {' '.join(argv)})")
    from .tools.info import report
    text = report()
    if text:  # rank 0 prints the report for every rank
        print(text)
    return 0


def _preload(argv):
    if argv:
        return _usage_error(f"preload takes no arguments (got {' '.join(argv)})")
    from .staging import pmpi_library
    found = pmpi_library.path()
    if found is None:
        sys.stderr.write(f"{PROG} preload: {pmpi_library.LIBRARY} is not built; rebuild hpcolls "
                         "(pip install -e . or bash jobs/local/setup.sh)\n")
        return 1
    print(found)
    return 0


def _bench(argv):
    from .tools.bench import main
    return main(argv)


def _tune(argv):
    from .tools.tune import main
    return main(argv)


# name: (what it does, in one line; what runs it)
SUBCOMMANDS = {
    "info": ("versions, GPUs, the MPI library (CUDA-aware or not) and the rank->GPU mapping; "
             "under mpiexec, of every rank", _info),
    "preload": ("print the path of the PMPI staging library, for LD_PRELOAD=$(python -m hpcolls preload): "
                "mpi4py's own Message.Recv/Irecv, Datatype.Pack* and Op.Reduce_local then stage device buffers "
                "on an MPI that is not CUDA-aware", _preload),
    "bench": ("collectives benchmark against NCCL and MPI, nccl-tests style (the same as python -m hpcolls.bench; "
              "bench --help lists its options)", _bench),
    "tune": ("measure the selection table's crossovers on this machine (run under mpiexec with the ranks the "
             "program uses) and store them where later communicators of that shape find them; tune --help", _tune),
}


def help_text():
    width = max(map(len, [*SUBCOMMANDS, "--version"]))
    lines = [f"usage: {PROG} [--version] [--help] SUBCOMMAND [ARGS]", "",
             "hpcolls: latency-first GPU collectives behind an mpi4py communicator.", "",
             "subcommands:"]
    lines += [f"  {name:<{width}}  {doc}" for name, (doc, _) in SUBCOMMANDS.items()]
    lines += ["", "options:", f"  {'--version':<{width}}  print the version and exit",
              f"  {'--help':<{width}}  print this help and exit"]
    return "\n".join(lines)


def _usage_error(message):
    sys.stderr.write(f"{PROG}: error: {message}\nsubcommands: {', '.join(SUBCOMMANDS)} "
                     f"(`{PROG} --help` says what each does)\n")
    return 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(help_text())
        return 0
    if argv[0] == "--version":
        from . import __version__
        print(f"hpcolls {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        kind = "option" if name.startswith("-") else "subcommand"
        return _usage_error(f"unknown {kind} {name!r}")
    return SUBCOMMANDS[name][1](rest)


if __name__ == "__main__":
    sys.exit(main())
