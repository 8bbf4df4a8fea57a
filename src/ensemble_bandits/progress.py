"""The user commands' account of a run at a scale (``cli estimate``, ``cli progress``): per figure,
its cells, run files and the cost model's CPU time (:mod:`costs`), what is done and left, and the
simulate jobs running now (:mod:`joblogs`).  The plan they read (the figures of the run, the cells of
committed archives, the shared-pass groups) is :func:`run_plan` of the command line's options."""
from __future__ import annotations

import os

from . import costs, paths, registry
from .joblogs import running_jobs


def progress_report(plan: dict, scale: str, cores: int, show_all: bool, recent: float) -> None:
    """How far a run at a scale has got: per figure, the run files it needs, how many exist (or are
    covered by its committed archive) and the cost model's CPU time of the rest (costs.work_left, as
    ``estimate`` and the workflow's notice); the whole run's time left on ``cores`` cores; and the
    simulate jobs running now with their last progress line (a log without its "done in" line,
    written to in the last ``recent`` seconds: round, rate, time left)."""
    figs, per_job = plan["figs"], plan["per_job"]
    need_all, have_all = 0, 0
    print(f"{'figure':16s} {'run files':>10s} {'done':>6s} {'left (model)':>13s}")
    for fig in figs:
        runs = registry.figure_runs(fig, per_job)
        mine = costs.work_left([fig], per_job, plan["covered"], os.path.exists, current=plan["current"])
        have = len(runs) - len(mine["runs"])
        need_all, have_all = need_all + len(runs), have_all + have
        if runs and (have < len(runs) or show_all):
            print(f"{fig['id']:16s} {len(runs):10,d} {100 * have / len(runs):5.0f}% "
                  f"{costs.format_cpu_time(mine['seconds']):>13s}")
    left = costs.work_left(figs, per_job, plan["covered"], os.path.exists, plan["groups"], plan["current"])
    rest = left["seconds"]
    print(f"{'total':16s} {need_all:10,d} {100 * have_all / max(need_all, 1):5.0f}% {costs.format_cpu_time(rest):>13s}"
          f"  (run files, or cells in a committed archive){'' if show_all else '; complete figures are not listed (--all lists them)'}")
    print(f"left: {left['jobs']:,} simulation jobs, about {costs.format_cpu_time(rest)} of CPU time by the cost model "
          f"(runs shared by figures once; as `estimate` and Snakemake's notice count them), about "
          f"{costs.format_cpu_time(rest / max(cores, 1))} of wall time on {cores} cores; an estimate, "
          f"within about a factor of 2 on the machine it was fitted on (a running job's own line below is measured)")
    running = running_jobs(scale, recent)
    print(f"\nrunning now ({len(running)} simulate job(s) written to in the last {recent:.0f} s):")
    for name, last in running:
        print(f"  {name}: {last}")


def estimate_report(plan: dict, scale: str) -> None:
    """Cells, simulation jobs and estimated CPU time of each figure at a scale, from the cost model
    (costs.cell_cost_seconds): all of its simulations, and what a run here would still simulate
    (costs.work_left: cells of committed archives and run files present cost nothing, as in
    ``progress`` and the workflow's notice); runs nothing."""
    figs, per_job = plan["figs"], plan["per_job"]
    print(f"Estimated CPU time of the simulations at scale {scale}, seeds_per_job={per_job}: an estimate from "
          f"a cost model (ensemble_bandits.costs.cell_cost_seconds, fitted on a 2-core machine, within about a "
          f"factor of 2 there), not a measurement; nothing is run.  'to run' leaves out the cells that committed "
          f"archives supply and the run files present, as the workflow does.")
    print(f"{'figure':16s} {'cells':>7s} {'run files':>9s} {'est. CPU':>10s} {'to run':>10s}")
    for fig in figs:
        row = costs.cost_summary(costs.run_costs([fig], per_job))
        left = costs.work_left([fig], per_job, plan["covered"], os.path.exists, current=plan["current"])
        cpu = costs.format_cpu_time(row["seconds"]) if row["jobs"] else "-"
        todo = costs.format_cpu_time(left["seconds"]) if left["runs"] else "-"
        print(f"{fig['id']:16s} {row['cells']:7,d} {row['jobs']:9,d} {cpu:>10s} {todo:>10s}")
    total = costs.cost_summary(costs.run_costs(figs, per_job))
    left = costs.work_left(figs, per_job, plan["covered"], os.path.exists, plan["groups"], plan["current"])
    print(f"{'total':16s} {total['cells']:7,d} {total['jobs']:9,d} {costs.format_cpu_time(total['seconds']):>10s} "
          f"{costs.format_cpu_time(left['seconds']):>10s}  (cells shared by figures counted once)")
    print(f"to run here: {left['jobs']:,} simulation jobs ({left['cells']:,} cells), about "
          f"{costs.format_cpu_time(left['seconds'])} of CPU time: what Snakemake's notice says before this run")
    estimate_looks(figs, per_job, scale)


def estimate_looks(figs, per_job, scale):
    """Per figure planned in looks (registry ``looks:``, paper scale): each look's new seeds and CPU time."""
    from . import plans

    rows = [(fig, s) for fig in figs for s in plans.studies(fig["entry"])] if scale == plans.SCALE else []
    if not rows:
        return
    print("Planned looks (docs/sequential.md; every curve of the planned claims going on, a curve that stops saves "
          "its share):")
    for fig, s in rows:
        each = plans.look_costs(fig, s, per_job)
        looks = ", ".join(f"look {k} seeds {a}-{b - 1} {costs.format_cpu_time(c)}"
                          for k, ((a, b), c) in enumerate(zip((s.seeds(k) for k in range(1, s.K + 1)), each), 1))
        print(f"  {fig['id']} {', '.join(s.claims)}: {looks}; all looks {costs.format_cpu_time(sum(each))}")


def estimate_pending(figs, per_job, scale):
    """The cells of the figures' pending readings (their ``pending_series``): each with its key, its
    estimated CPU time and the run files that run it by key while the reading is pending."""
    rows = [(fig["id"], s) for fig in figs for s in fig.get("pending_series", [])]
    if not rows:
        print(f"no pending reading among these figures at scale {scale}")
        return
    print(f"Cells of pending readings at scale {scale} (cost model estimate, seeds_per_job={per_job}); run one "
          f"by its run files, e.g. `snakemake --cores 1 <run file> --config scale={scale}`, and keep them in "
          f"figures/{scale}/pending until the reading is run (docs/scales.md):")
    print(f"{'figure':12s} {'reading':12s} {'key':12s} {'est. CPU':>9s}  curve / run files")
    for fid, s in rows:
        blocks = registry.seed_blocks(s["seeds"], per_job)
        cpu = sum(costs.cell_cost_seconds(s["cell"], b - a) for a, b in blocks)
        print(f"{fid:12s} {s['reading']:12s} {s['key']:12s} {costs.format_cpu_time(cpu):>9s}  {s['panel']} / {s['curve']}")
        for a, b in blocks:
            print(f"{'':48s}{paths.run_file(scale, s['key'], a, b)}")


def run_plan(project: tuple, scale: str, ids=(), skip=None, reuse_records: bool = False,
             seeds_per_job: int | None = None) -> dict:
    """What a run of ``ids`` (default: all) at ``scale`` involves, as the workflow sees it: the resolved
    figures (not skipped: ``skip``, default the config's ``skip``; not reused: ``reuse_records``), the
    cell keys their committed archives supply, and the shared-pass groups of the scale.  ``project``:
    (configfile, config_dir, schema, scales_json) of :func:`registry.load_project`.  The input of
    costs.work_left for estimate and progress."""
    from . import archive, data, validation
    from .plans import at_look
    from .records import record_or_none

    config, entries = registry.load_project(*project)
    per_job = seeds_per_job or config["seeds_per_job"]
    skip = config.get("skip", []) if skip is None else skip
    skipped = set(registry.match_ids(skip, sorted(entries), "skip pattern")) if skip else set()
    ids = registry.select_ids(ids, entries) if ids else [i for i in sorted(entries) if i not in skipped]
    if reuse_records:
        ids = [i for i in ids if not os.path.exists(paths.record_file(scale, i))]
    data_dir = data.config_data_dir(project[0], config.get("data_dir"))

    def resolved(fid):     # as the workflow builds it without `look`: cells of absent optional datasets left
        # out, and a figure planned in looks cut into its looks' seed blocks at its record's look (plans.at_look)
        fig = registry.resolve(entries[fid], scale, config["scales"])
        record = record_or_none(paths.record_file(scale, fid))
        return at_look(validation.without_absent(entries[fid], fig, data_dir), None, record)

    figs = [resolved(fid) for fid in ids]
    shared = [resolved(i) for i in sorted(entries) if entries[i].get("shared_pass") and i not in skipped]
    return {"figs": figs, "per_job": per_job, "groups": registry.shared_groups(shared, config.get("shared_pass_group", 64)),
            "covered": archive.covered_keys(figs, scale, config.get("archives", "use") == "use"),
            "current": archive.current_ids(figs, scale, config.get("archives", "use") == "use")}


def pending_report(project: tuple, scale: str, ids=(), seeds_per_job: int | None = None) -> None:
    """``cli estimate --pending``: :func:`estimate_pending` of the figures ``ids`` (default all) at
    ``scale``; ``project`` as for :func:`run_plan`."""
    config, entries = registry.load_project(*project)
    figs = [registry.resolve(entries[fid], scale, config["scales"]) for fid in registry.select_ids(ids, entries)]
    estimate_pending(figs, seeds_per_job or config["seeds_per_job"], scale)
