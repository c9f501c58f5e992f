"""The benchmark's picture: µs per call against bytes, log-log, one panel per collective and one
line per algorithm (device time where the calls were timed from CUDA graphs, host time where they
could not be, as each legend says). matplotlib is an optional extra: pip install hpcolls[plot].

  python -m hpcolls.tools.bench.plot bench-n2.json [bench-n4.json ...] -o collectives.png
"""
import argparse
import json
import sys

from . import cases


def require_matplotlib(error):
    """error(message) unless matplotlib imports (checked before a run, not after it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        error(f"--plot needs matplotlib ({exc}): pip install 'hpcolls[plot]' (or pip install matplotlib)")


def draw(rows, path, title=""):
    """Writes the picture of `rows` (the benchmark's JSON rows; out-of-place ones where there are
    any) to `path`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = [r for r in rows if not r["inplace"]] or rows
    colls = [c for c in cases.COLLECTIVES if any(r["coll"] == c for r in out)]
    fig, axes = plt.subplots(1, len(colls), figsize=(4.2 * len(colls), 3.8), squeeze=False, sharey=True)
    for ax, coll in zip(axes[0], colls):
        for algo in dict.fromkeys(r["algo"] for r in out if r["coll"] == coll):
            mine = sorted((r for r in out if r["coll"] == coll and r["algo"] == algo), key=lambda r: r["bytes"])
            timing = "device" if all(r["timing"] == "graph" for r in mine) else "host"
            ax.loglog([r["bytes"] for r in mine], [r["median_us"] for r in mine], marker="o", markersize=3,
                      linestyle="-" if timing == "device" else "--", label=f"{algo} ({timing})")
        ax.set_title(coll)
        ax.set_xlabel("bytes")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("µs per call")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m hpcolls.tools.bench.plot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", nargs="+", help="the benchmark's --json files (one picture each: -o gets the rank count)")
    p.add_argument("-o", "--output", required=True, help="the PNG; with several JSON files, {ranks} in it is replaced")
    args = p.parse_args(argv)
    require_matplotlib(p.error)
    for path in args.json:
        with open(path) as f:
            found = json.load(f)
        out = args.output.replace("{ranks}", str(found["ranks"]))
        draw(found["rows"], out, f"{found['ranks']} ranks")
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
