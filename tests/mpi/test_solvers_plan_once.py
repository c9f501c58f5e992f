"""The command line decides every choice of a run once (solvers/plan.py): following its
arguments enters each rule of the plan once per rank, and the header it prints and the solve it
runs read the same SolverPlan object. Runs the command line in this process, on every rank."""
import dataclasses

import pytest
from mpi4py import MPI

import solvers.cli.main as cli
import solvers.plan as plan_module
from solver_testing import share_node_cores

share_node_cores(MPI.COMM_WORLD)

# The rules a plan is made of: each must run once per run and rank, however the run is asked for.
RULES = ("block_size", "choose_method", "choose_reduction", "band_for", "vectors_by", "eigenvalues_by",
         "panel_method", "sygst_method", "sytrd_product", "choose_sytrd_loop", "stedc_leaf")


@pytest.mark.parametrize("argv", [
    ["--n", "40", "--nb", "8", "--seed", "5"],
    ["--n", "40", "--nb", "8", "--method", "distributed", "--reduction", "2stage", "--dtype", "complex128",
     "--seed", "6"],
    ["--n", "40", "--method", "distributed", "--range", "I:3:9", "--itype", "2", "--seed", "7"],
], ids=["auto", "distributed 2stage complex", "distributed subset itype 2"])
def test_one_plan_for_the_header_and_the_solve(argv, monkeypatch):
    calls = {name: 0 for name in RULES}
    for name in RULES:
        rule = getattr(plan_module, name)

        def counted(*args, _rule=rule, _name=name, **kwargs):
            calls[_name] += 1
            return _rule(*args, **kwargs)
        monkeypatch.setattr(plan_module, name, counted)

    resolved, solved_with = [], []

    def resolve(*args, **kwargs):
        resolved.append(plan_module.resolve(*args, **kwargs))
        return resolved[-1]

    def sygvd(*args, plan=None, **kwargs):
        solved_with.append(plan)
        return original_sygvd(*args, plan=plan, **kwargs)

    headers = []

    def print_header(lines):
        headers.append(lines)
        original_header(lines)

    original_sygvd, original_header = cli.sygvd, cli.print_header
    monkeypatch.setattr(cli, "resolve", resolve)
    monkeypatch.setattr(cli, "sygvd", sygvd)
    monkeypatch.setattr(cli, "print_header", print_header)

    assert cli.main(argv) == 0
    assert len(resolved) == 1 and calls == dict.fromkeys(RULES, 1), calls
    assert len(solved_with) == 1 and solved_with[0] is resolved[0]
    plan = resolved[0]
    assert plan.ranks == MPI.COMM_WORLD.Get_size() and plan.n == 40
    if MPI.COMM_WORLD.Get_rank() == 0:     # the header, printed by rank 0 alone, shows that plan
        assert len(headers) == 1
        assert all(line in headers[0] for line in plan.header()), (plan.header(), headers[0])
        assert f"nb={plan.nb}," in dict(headers[0])["size"]
    else:
        assert headers == []
    # The same choices on every rank, each rank having decided alone (its threads are its own).
    choices = dataclasses.replace(plan, threads=None)
    assert MPI.COMM_WORLD.allgather(choices) == [choices] * MPI.COMM_WORLD.Get_size()
