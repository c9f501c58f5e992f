"""Compares two runs of mpi4py's test modules recorded by runner.py (the reference, with
mpi4py's COMM_WORLD, and the candidate, with the wrapper in its place): one table row per module,
every test whose outcome differs, and a closing line

    mpi4py-suite: N passed, N failed, N skipped

where a test passes when the candidate's outcome equals the reference's (and is not a skip),
is skipped when both skipped it, and fails when the outcomes differ. A difference that a line of
the --known file names (a test id or an fnmatch pattern of them, then optionally `# why`) is
printed apart and counted as known, not failed; a line that matches no difference is printed as
one to delete. Exit status 1 when any other test differs or the reference run itself did not
complete, else 0.

    python compare.py REFERENCE_DIR CANDIDATE_DIR --ranks 3 --modules test_a test_b ...
                      [--outcome-only] [--known FILE] [--write-known FILE]
"""
import argparse
import fnmatch
import json
import os
import sys

PASSED = ("passed", "xfail")
SKIPPED = ("skipped",)
SEVERE = ("crashed", "timed out", "error", "failed", "xpass")
MAX_DIFF_LINES = 80


def read_rank_file(path, unfinished="crashed"):
    """{test id: record} of one rank's file; a test that started and never ended gets the
    outcome `unfinished`."""
    tests = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a crash
                continue
            if event.get("event") == "start":
                tests[event["test"]] = {"outcome": unfinished, "detail": f"the job ended in this test ({unfinished})"}
            elif event.get("event") == "end":
                tests[event["test"]] = event
    return tests


def load_run(directory, modules, ranks):
    """{module: {"status": text, "tests": {test id: {rank: record}}}} from runner.py's files and
    run.sh's <module>.status (the mpiexec exit status)."""
    run = {}
    for module in modules:
        status_path = os.path.join(directory, f"{module}.status")
        status = open(status_path).read().strip() if os.path.exists(status_path) else "not run"
        unfinished = "timed out" if status in ("124", "137") else "crashed"  # timeout(1)'s exits
        tests = {}
        for rank in range(ranks):
            path = os.path.join(directory, f"{module}.rank{rank}.jsonl")
            if os.path.exists(path):
                for test, record in read_rank_file(path, unfinished).items():
                    tests.setdefault(test, {})[rank] = record
        run[module] = {"status": status, "tests": tests}
    return run


def merged_outcome(per_rank, ranks, skipped_subtests=True):
    """(outcome, text, detail) of a test from its ranks' records: the outcome is the same on
    every rank, else the most severe one any rank had, else 'mixed' (e.g. skipped on some ranks,
    passed on others); the text adds the subtest counts summed over ranks (the skipped ones only
    when `skipped_subtests`), and is what two runs are compared by."""
    outcomes = [per_rank[r]["outcome"] if r in per_rank else "missing" for r in range(ranks)]
    if len(set(outcomes)) == 1:
        outcome = outcomes[0]
    else:
        severe = [o for o in SEVERE + ("missing",) if o in outcomes]
        outcome = severe[0] if severe else "mixed"
    subs = {k: sum(rec.get(k, 0) for rec in per_rank.values()) for k in ("sub_failed", "sub_error", "sub_skipped")}
    text = outcome
    parts = [f"{subs['sub_failed']} subtests failed"] * bool(subs["sub_failed"])
    parts += [f"{subs['sub_error']} subtests erred"] * bool(subs["sub_error"])
    parts += [f"{subs['sub_skipped']} subtests skipped"] * bool(skipped_subtests and subs["sub_skipped"])
    if parts:
        text += f" ({', '.join(parts)})"
    details = [per_rank[r].get("detail", "") for r in sorted(per_rank) if per_rank[r]["outcome"] == outcome]
    return outcome, text, next((d for d in details if d), "")


def category(outcome):
    if outcome in PASSED:
        return "passed"
    if outcome in SKIPPED:
        return "skipped"
    return "failed"


def counts(module_run, ranks):
    tally = {"passed": 0, "failed": 0, "skipped": 0}
    for per_rank in module_run["tests"].values():
        tally[category(merged_outcome(per_rank, ranks)[0])] += 1
    return tally


def compare(reference, candidate, ranks, skipped_subtests=True):
    """(rows, differences, totals): per module the two runs' counts and how many tests differ;
    for every differing test (module, test, reference outcome, candidate outcome, detail); the
    closing line's counts. `skipped_subtests`: whether a different count of skipped subtests
    makes a difference (not when the two runs used different array backends)."""
    rows, differences = [], []
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for module in reference:
        ref, cand = reference[module], candidate.get(module, {"status": "not run", "tests": {}})
        differ = 0
        for test in sorted(set(ref["tests"]) | set(cand["tests"])):
            r, c = (merged_outcome(run["tests"][test], ranks, skipped_subtests) if test in run["tests"]
                    else ("not run", "not run", "") for run in (ref, cand))
            if r[1] == c[1]:
                totals["skipped" if r[0] in SKIPPED else "passed"] += 1
            else:
                differ += 1
                totals["failed"] += 1
                differences.append((module, test, r[1], c[1], c[2] or r[2]))
        if ref["status"] != cand["status"] and not differ:
            # the same tests, but the job ended differently (e.g. a rank crashed in teardown)
            differ += 1
            totals["failed"] += 1
            differences.append((module, f"{module}.(exit status)", f"exit {ref['status']}", f"exit {cand['status']}", ""))
        rows.append((module, ref["status"], counts(ref, ranks), cand["status"], counts(cand, ranks), differ))
    return rows, differences, totals


def reference_problems(reference):
    """Modules whose reference run did not complete or ran nothing: the harness is broken there."""
    return [f"{m}: exit {r['status']}, {len(r['tests'])} tests" for m, r in reference.items()
            if r["status"] != "0" or not r["tests"]]


def fmt(tally):
    return f"{tally['passed']}/{tally['failed']}/{tally['skipped']}"


def read_known(path):
    """The patterns of a known-differences file: one per line, `# ...` comments ignored."""
    if not path:
        return []
    with open(path) as f:
        return [line.split("#", 1)[0].strip() for line in f if line.split("#", 1)[0].strip()]


def split_known(differences, known):
    """(unexpected, expected, stale): the differences no pattern names, those one does, and the
    patterns that name none."""
    unexpected, expected, used = [], [], set()
    for diff in differences:
        hits = [p for p in known if fnmatch.fnmatchcase(diff[1], p)]
        used.update(hits)
        (expected if hits else unexpected).append(diff)
    return unexpected, expected, [p for p in known if p not in used]


def known_file_text(differences, candidate):
    """A known-differences file listing `differences`: each test by its id, except in modules
    whose candidate job ended early (which tests differ there depends on where it ended), which
    are listed whole."""
    ended = {m for m, run in candidate.items() if run["status"] != "0"}
    lines = ["# Tests of mpi4py's suite known to differ through the wrapper (written by",
             "# tests/mpi4py_suite/compare.py --write-known). Delete lines as they pass; delete",
             "# the file when it is empty. A pattern names every test it matches (fnmatch)."]
    lines += [f"{m}.*  # the job ended early: exit {candidate[m]['status']}" for m in sorted(ended)]
    for module, test, r, c, detail in differences:
        if module not in ended:
            lines.append(f"{test}  # {r} -> {c}" + (f" [{detail[:120]}]" if detail else ""))
    return "\n".join(lines) + "\n"


def _diff_lines(title, differences):
    lines = [title]
    for module, test, r, c, detail in differences[:MAX_DIFF_LINES]:
        lines.append(f"  {test}: {r} -> {c}" + (f"  [{detail}]" if detail else ""))
    if len(differences) > MAX_DIFF_LINES:
        lines.append(f"  ... and {len(differences) - MAX_DIFF_LINES} more (the per-rank files have them all)")
    return lines


def report(reference, candidate, ranks, names=("plain", "wrapped"), skipped_subtests=True, known=()):
    """The printed report and the exit status."""
    rows, differences, totals = compare(reference, candidate, ranks, skipped_subtests)
    differences, expected, stale = split_known(differences, list(known))
    totals["failed"] -= len(expected)
    ref_name, cand_name = names
    lines = [f"| module | {ref_name}: exit, passed/failed/skipped | {cand_name}: exit, passed/failed/skipped | tests that differ |",
             "| --- | --- | --- | --- |"]
    sums = {ref_name: {"passed": 0, "failed": 0, "skipped": 0}, cand_name: {"passed": 0, "failed": 0, "skipped": 0}}
    for module, rstat, rc, cstat, cc, differ in rows:
        lines.append(f"| {module} | {rstat}, {fmt(rc)} | {cstat}, {fmt(cc)} | {differ} |")
        for key in rc:
            sums[ref_name][key] += rc[key]
            sums[cand_name][key] += cc[key]
    lines.append(f"| all | {fmt(sums[ref_name])} | {fmt(sums[cand_name])} | {len(differences) + len(expected)} |")
    if expected:
        lines += _diff_lines(f"\n{len(expected)} known differences (listed as expected; {ref_name} -> {cand_name}):", expected)
    if stale:
        lines.append(f"\nlisted as known differences but equal now (delete these lines): {', '.join(stale)}")
    if differences:
        lines += _diff_lines(f"\n{len(differences)} tests differ ({ref_name} -> {cand_name}):", differences)
    problems = reference_problems(reference)
    if problems:
        lines.append(f"\nthe {ref_name} run did not complete, so nothing is compared there: " + "; ".join(problems))
    closing = f"mpi4py-suite: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped"
    lines.append(closing + (f", {len(expected)} known differences" if expected else ""))
    return "\n".join(lines), int(bool(differences or problems))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("candidate")
    parser.add_argument("--modules", nargs="+", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--names", nargs=2, default=("plain", "wrapped"), metavar=("REFERENCE", "CANDIDATE"))
    parser.add_argument("--outcome-only", action="store_true",
                        help="ignore how many subtests each run skipped (runs with different array backends)")
    parser.add_argument("--known", help="file of test ids (or fnmatch patterns) known to differ")
    parser.add_argument("--write-known", metavar="FILE", help="write every difference to FILE in --known's format")
    args = parser.parse_args(argv)
    reference = load_run(args.reference, args.modules, args.ranks)
    candidate = load_run(args.candidate, args.modules, args.ranks)
    text, status = report(reference, candidate, args.ranks, tuple(args.names),
                          skipped_subtests=not args.outcome_only, known=read_known(args.known))
    print(text)
    if args.write_known:
        differences = compare(reference, candidate, args.ranks, not args.outcome_only)[1]
        with open(args.write_known, "w") as f:
            f.write(known_file_text(differences, candidate))
        print(f"{len(differences)} differences written to {args.write_known}")
    return status


if __name__ == "__main__":
    sys.exit(main())
