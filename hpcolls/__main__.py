"""python -m hpcolls [--version | info | bench ...]"""
import argparse
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from .bench import main as bench_main
        return bench_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m hpcolls",
        description="hpcolls: latency-first GPU collectives behind an mpi4py-style communicator.",
        epilog="Subcommands: info (versions, GPUs, MPI, rank->GPU mapping; run under mpiexec to see "
               "every rank), bench (AllReduce benchmark; same as python -m hpcolls.bench).")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("command", nargs="?", choices=["info"], help="what to print")
    args = parser.parse_args(argv)
    from . import __version__
    if args.version:
        print(f"hpcolls {__version__}")
        return 0
    if args.command == "info":
        from .info import report
        text = report()
        if text:
            print(text)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
