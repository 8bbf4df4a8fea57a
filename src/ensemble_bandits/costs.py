"""Cost model of the simulations: estimated CPU time of a job, of a figure, of a run, and the
workflow's notice before an expensive run.  An estimate from the cells' dimensions, not a
measurement."""
from __future__ import annotations

from pathlib import Path

from .calibration import constants
from .paths import run_file, run_key, run_seeds
from .registry import figure_runs, series_blocks, shared_cells


# Cost model of one simulation job, in CPU seconds: a batch of B seeds runs T rounds in lockstep,
# each round costing a Python overhead per batch (per seed when the seeds run one at a time) plus a
# cost per seed.  Each agent class may declare its own two costs (``round_costs(spec, dims,
# action_space)``: the GLM agents, which fit a model every round, do); otherwise the default below
# applies: per round of a batch COST_ROUND_S, and per seed COST_SEED_ROUND_S, the arm scores
# (COST_ARM_S per d x K) and the ensemble members (COST_MEMBER_S per M x d).  A shared pass
# (ensemble_bandits.shared: the cells of a figure with `shared_pass: true` that share an environment,
# played in one pass) scores the thetas of all its proposing agents with one matrix-matrix product
# per instance: the arm term of such an agent costs COST_SHARED_ARM_S instead of COST_ARM_S.  The
# constants, their fits (on the linear agents' paper-scale CPU times) and the command that refits
# them are in the calibration table (ensemble_bandits.calibration, model ``linear``).  An estimate,
# not a measurement: another machine may be several times faster or slower.
COST_ROUND_S, COST_SEED_ROUND_S, COST_ARM_S, COST_MEMBER_S, COST_SHARED_ARM_S = constants(
    "linear", "COST_ROUND_S", "COST_SEED_ROUND_S", "COST_ARM_S", "COST_MEMBER_S", "COST_SHARED_ARM_S")
COST_NOTICE_S = 3600          # the workflow prints its estimate before runs above this


def default_round_costs(dims: dict, shared: bool = False, member_weight: float = 1.0) -> tuple[float, float]:
    """(seconds per round and batch, seconds per round and seed) of the default model above;
    ``shared``: the agent's arms are scored in a shared pass; ``member_weight``: the agent's member
    work relative to COST_MEMBER_S (an agent class's ``member_weight(spec)``, e.g. linear Ensemble++,
    whose Coordinate and Sparse vectors touch few of the M columns)."""
    d, arms, members = dims["d"], max(dims["K"], 1), dims["members"]
    arm = COST_SHARED_ARM_S if shared else COST_ARM_S
    return COST_ROUND_S, COST_SEED_ROUND_S + arm * d * arms + member_weight * COST_MEMBER_S * members * d


def round_costs(cell: dict, dims: dict, shared: bool = False) -> tuple[float, float]:
    """The two costs of ``cell``'s rounds: its agent class's ``round_costs``, or the default model
    (``shared``: played in a shared pass, where an agent that ``proposes`` a theta has its arms
    scored together with the other agents')."""
    if "experiment" not in cell:
        from .agents import AGENTS
        from .envs import ENVIRONMENTS

        cls, space = AGENTS[cell["agent"]["name"]], ENVIRONMENTS[cell["env"]["name"]].action_space
        got = cls.round_costs(cell["agent"], dims, space)
        if got is not None:
            return float(got[0]), float(got[1])
        weight = cls.member_weight(cell["agent"]) if hasattr(cls, "member_weight") else 1.0
        return default_round_costs(dims, shared and getattr(cls, "proposes", False) and space != "sphere", weight)
    return default_round_costs(dims)


def cell_cost_seconds(cell: dict, n_seeds: int, shared: bool = False) -> float:
    """Estimated CPU seconds of one simulate job: ``cell`` for a block of ``n_seeds`` seeds (see
    the cost model above; the cell's dimensions and costs are those its classes declare); with
    ``shared``, the cell's part of a shared-pass job.  Used for the SLURM runtime request of a job
    (with a safety factor) and for ``cli estimate`` and the workflow's notice before an expensive run."""
    from .cells import batch_size, cell_dimensions, seed_block

    dims = cell_dimensions(cell)
    per_round, per_seed = round_costs(cell, dims, shared)
    # unbatched (a timing cell, or an agent that is not batch-invariant): one seed at a time; an agent
    # with a fixed seed block plays whole blocks, one batch each (runner.simulate_columns)
    one_by_one = cell.get("timing") == "unbatched" or batch_size(cell, 2) == 1
    block = None if one_by_one else seed_block(cell)
    if block:
        batches = -(-int(n_seeds) // block)
        n_seeds = batches * block
    else:
        batches = n_seeds if one_by_one else 1
    return dims["runs"] * dims["horizon"] * (batches * per_round + n_seeds * per_seed)


def group_cost_seconds(cells: list, n_seeds: int) -> float:
    """Estimated CPU seconds of one shared-pass job: ``cells`` for a block of ``n_seeds`` seeds."""
    return sum(cell_cost_seconds(cell, n_seeds, shared=True) for cell in cells)


def run_costs(figs: list, per_job: int) -> dict:
    """Run file -> estimated CPU seconds of its job (of its part of a shared-pass job), over
    resolved figures (a run file that several figures share is one job, counted once)."""
    costs, shared = {}, shared_cells(figs)
    for fig in figs:
        for s in fig["series"]:
            for a, b in series_blocks(s, per_job):
                path = run_file(fig["scale"], s["key"], a, b)
                if path not in costs:
                    costs[path] = cell_cost_seconds(s["cell"], b - a, shared=(fig["scale"], s["key"]) in shared)
    return costs


def cost_summary(costs: dict) -> dict:
    """Cells, jobs and CPU seconds of ``run_costs`` output (or a subset of it)."""
    return {"cells": len({path.split("/")[3] for path in costs}), "jobs": len(costs),
            "seconds": float(sum(costs.values()))}


def format_cpu_time(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def work_left(figs: list, per_job: int, covered=None, exists=None, groups=(), current=()) -> dict:
    """The simulations a run of the resolved ``figs`` still has to do, as the workflow's DAG holds
    them: the one cost function behind ``cli estimate``, ``cli progress`` and the workflow's notice.
    ``covered``: figure id -> {cell key: seeds} its committed archives supply (a set of keys: every
    seed; the blocks before those seeds cost nothing, the later ones are run, as the DAG runs them);
    ``exists``: whether a run file is present (present ones cost nothing); ``groups``: the shared-pass
    groups (registry.shared_groups), whose cells' run files of one seed block are one job;
    ``current``: ids whose committed outputs stand (their own archive is committed): Snakemake rebuilds
    one from its archive when an input such as its notebook is newer (a fresh checkout), simulating
    nothing (a figure decided at a look at that look), and simulates its runs only when a run file it
    reads is made for another figure (then all its runs), so until then its runs cost nothing.  Returns {"runs": {run file: CPU seconds}, "cells", "jobs" (simulation jobs:
    simulate and simulate_group), "seconds"}."""
    every = run_costs(figs, per_job)

    def uncovered(fig):
        held = (covered or {}).get(fig["id"], {})
        held = held if isinstance(held, dict) else dict.fromkeys(held, float("inf"))
        return [p for p in figure_runs(fig, per_job)
                if run_seeds(p)[0] >= held.get(run_key(p), 0) and not (exists and exists(p))]

    need = {fig["id"]: uncovered(fig) for fig in figs}
    built = {fid for fid in need if fid not in set(current)}
    while True:
        made = {p for fid in built for p in need[fid]}
        more = {fid for fid in need if fid not in built and made & set(need[fid])}
        if not more:
            break
        built |= more
    runs = {p: every[p] for fid in need if fid in built for p in need[fid]}
    group_of = {(g["scale"], key): g["id"] for g in groups for key in g["keys"]}
    jobs = {(group_of.get((Path(p).parts[1], run_key(p)), run_key(p)), Path(p).name) for p in runs}
    return {"runs": runs, "cells": len({run_key(p) for p in runs}), "jobs": len(jobs),
            "seconds": float(sum(runs.values()))}


def largest(figs: list, left: dict, per_job: int) -> list:
    """[(figure id, CPU s)] of the figures with simulation left in ``left`` (:func:`work_left`), costliest first."""
    own = ((fig["id"], sum(left["runs"].get(p, 0.0) for p in figure_runs(fig, per_job))) for fig in figs)
    return sorted(((fid, sec) for fid, sec in own if sec > 0), key=lambda kv: -kv[1])


def cost_notice(figs: list, per_job: int, exists=None, threshold: float = COST_NOTICE_S, covered=None, groups=(),
                current=()):
    """The workflow's one-line warning before an expensive run: the estimated CPU time and job
    count of the simulations ``figs`` still need (:func:`work_left`: run files present, or cells
    committed archives supply, are not counted), or None when that is below ``threshold`` seconds."""
    left = work_left(figs, per_job, covered, exists, groups, current)
    if left["seconds"] < threshold:
        return None
    scales = sorted({fig["scale"] for fig in figs})
    return (f"Estimated cost of this run: about {format_cpu_time(left['seconds'])} of CPU time in "
            f"{left['jobs']:,} simulation jobs ({left['cells']:,} cells; scale {', '.join(scales)}, "
            f"seeds_per_job={per_job}; run files already present and cells of committed archives not counted).  "
            f"This is an estimate from a cost model (ensemble_bandits.costs.cell_cost_seconds), not a measurement.  "
            f"Largest: " + ", ".join(f"{fid} {format_cpu_time(c)}" for fid, c in largest(figs, left, per_job)[:3])
            + f".  Per figure: ensemble-bandits estimate --scale {scales[0]}; to leave figures out: "
              f"--config skip='[ID,PATTERN*]'.")
