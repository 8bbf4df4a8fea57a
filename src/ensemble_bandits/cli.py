"""The project's command line, ``ensemble-bandits`` (or ``python -m ensemble_bandits.cli``).

For users:

    ensemble-bandits estimate --scale paper 'epp-fig8*'   what a run would cost (cells, jobs, CPU time); runs nothing
    ensemble-bandits progress --scale paper              a run in progress: done per figure, time left, running jobs
    ensemble-bandits timings --scale paper               measured wall and CPU time of the simulations that ran
    ensemble-bandits data check                          SHA-256 of every dataset file (data fetch: download)
    ensemble-bandits adopt --checkpoint CKPT RUN...      a stopped job takes the seeds another job of its cell played

Run by the workflow's rules (Snakemake writes these command lines; rarely typed by hand):

    simulate, simulate-group   one job: a cell (or cells sharing an environment) for a block of seeds -> run files
    aggregate                  a figure's run files (or committed archive) -> its table and plot spec
    claims                     a figure's claims decided on its table -> JSON, reStructuredText, its record
    publish                    staged results copied into place under figures/<scale>/
    report                     REPORT.md from the figures' records (figures/<scale>/records/<id>.json)

Each subcommand has --help.  The --figure of the workflow's commands is a resolved figure
written by the workflow (results/<scale>/figures/<id>.json); the user commands read the
configuration themselves and work from any directory inside the project.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from . import ALGORITHMS_VERSION, checkpoint, paths, registry
from .atomic import NotAFileError
from .data import DataError
from .tables import CacheError, rebuild_hint

DEFAULT_CONFIG = "config/config.yaml"
DATA_DIR_HELP = ("datasets directory, for environments that read datasets (the workflow passes data_dir); "
                 "not part of the cell")


def _project(args) -> tuple:
    """The options naming what the user commands read (registry.load_project)."""
    return args.configfile, args.config_dir, args.schema, getattr(args, "scales_json", None)


def _json_arg(text: str, option: str, kind):
    """``text`` parsed as JSON of type ``kind``, or one line naming the option."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise SystemExit(f"{option} is not valid JSON ({err})") from None
    if not isinstance(value, kind):
        raise SystemExit(f"{option} must be a JSON {'object' if kind is dict else 'list'}, got {type(value).__name__}")
    return value


def _cell_arg(value) -> dict:
    """A cell of the command line, checked (cells.command_line_cell), or one line saying what is wrong."""
    from .cells import command_line_cell

    try:
        return command_line_cell(value)
    except ValueError as err:
        raise SystemExit(str(err)) from None


def _seed_range(pair) -> list:
    """Seeds ``first .. end - 1`` of ``--seeds FIRST END``, or one line when the range is empty."""
    first, end = pair
    if not 0 <= first < end:
        raise SystemExit(f"--seeds {first} {end}: need 0 <= FIRST < END (seeds FIRST .. END-1)")
    return list(range(first, end))


def cmd_simulate(args):
    """One job: the cell for a block of seeds, written as an .npz run file (runner.simulate_job)."""
    from .checkpoint import CheckpointError
    from .runner import simulate_job

    cell, seeds = _cell_arg(_json_arg(args.cell, "--cell", dict)), _seed_range(args.seeds)
    try:
        simulate_job(cell, seeds, args.out, args.data_dir, args.device, args.checkpoint, args.checkpoint_every)
    except CheckpointError as err:
        raise SystemExit(f"simulate: {err}") from None


def cmd_adopt(args):
    """Seeds other jobs of the cell played, taken into a stopped job's checkpoint (checkpoint.adopt_runs)."""
    from .checkpoint import CheckpointError, adopt_runs

    try:
        taken = adopt_runs(args.checkpoint, args.runs)
    except CheckpointError as err:
        raise SystemExit(f"adopt: {err}") from None
    seeds = ", ".join(f"{b[0]}-{b[-1]}" for b in taken)
    print(f"adopt: {args.checkpoint} now holds seeds {seeds} as finished batches; run the job again (the same "
          "Snakemake command) to play what is left and write its run file")


def cmd_simulate_group(args):
    """One job of a shared pass: the cells (one environment spec and horizon) for a block of seeds,
    one pass, one .npz run file per cell (``--out`` in the order of ``--cells``; runner.simulate_group_job)."""
    from .runner import simulate_group_job

    cells = [_cell_arg(c) for c in _json_arg(args.cells, "--cells", list)]
    if len(cells) != len(args.out):
        raise SystemExit(f"simulate-group: {len(cells)} cells but {len(args.out)} output files")
    simulate_group_job(cells, _seed_range(args.seeds), args.out, args.data_dir)


def cmd_aggregate(args):
    """A figure's table, plot spec and staged archive (:func:`aggregate.aggregate_figure`), from the
    resolved figure and the files the rule names."""
    from .aggregate import TableError, aggregate_figure
    from .archive import ArchiveError

    try:
        aggregate_figure(args.figure, args.table, args.spec, args.data_dir, args.archive or [],
                         args.archive_sha256, args.staged)
    except (TableError, ArchiveError) as err:
        raise SystemExit(str(err)) from None


def cmd_publish(args):
    """Copy files a job staged under results/<scale>/ into place under figures/<scale>/, each checked
    to be what its name says (:func:`publish.publish_results`)."""
    from .publish import PublishError, publish_results

    try:
        publish_results(args.staged, args.out)
    except PublishError as err:
        raise SystemExit(str(err)) from None


def cmd_claims(args):
    """A figure's claims decided on its table, and its record (:func:`report.decide_figure`)."""
    from .archive import ArchiveError
    from .report import decide_figure

    try:
        decide_figure(args.figure, args.table, args.json, args.rst, args.record, args.archive, args.redrawn)
    except ArchiveError as err:
        raise SystemExit(f"claims: {err}") from None


def cmd_report(args):
    """REPORT.md of the ids' records at a scale (:func:`report.write_report`)."""
    from .report import write_report

    try:
        write_report(args.out, args.scale, args.ids, args.skipped or [], args.config_dir, args.schema,
                     seeds_per_job=args.seeds_per_job)
    except ValueError as err:
        raise SystemExit(f"report: {err}") from None


def cmd_timings(args):
    """Wall and CPU seconds and peak memory of the simulate jobs of each figure, read from their logs
    ("done in ... s (CPU ... s, peak ... MB)"); ``--cells``: per cell, beside the cost model's
    estimate of the same jobs; ``--page FILE``: also written as a markdown page (readme.timings_page)."""
    from .joblogs import NoTimingsError, timings_report
    from .readme import timings_page

    def report():
        return timings_report(args.scale, _project(args), args.ids, args.seeds_per_job, args.cells)

    try:
        if args.page:
            return timings_page(args.page, args.scale, shlex.join(["ensemble-bandits", *args.argv]), report)
        report()
    except NoTimingsError as err:
        raise SystemExit(str(err)) from None


def cmd_progress(args):
    """How far a run at a scale has got (:func:`progress.progress_report` of :func:`progress.run_plan`):
    per figure, the run files done and the cost model's CPU time of the rest, the whole run's time left
    on ``--cores`` cores, and the simulate jobs written to in the last ``--recent`` seconds."""
    from .progress import progress_report, run_plan

    plan = run_plan(_project(args), args.scale, args.ids, args.skip, args.reuse_records, args.seeds_per_job)
    progress_report(plan, args.scale, args.cores, args.all, args.recent)


def cmd_estimate(args):
    """Cells, simulation jobs and estimated CPU time of each figure at a scale, from the cost model
    (:func:`progress.estimate_report`; ``--pending``: :func:`progress.pending_report`); runs nothing."""
    from .progress import estimate_report, pending_report, run_plan

    if args.pending:
        return pending_report(_project(args), args.scale, args.ids, args.seeds_per_job)
    plan = run_plan(_project(args), args.scale, args.ids, args.skip, args.reuse_records, args.seeds_per_job)
    estimate_report(plan, args.scale)


def cmd_data(args):
    """Check the datasets in a data directory, or download them there (:func:`data.check_datasets`)."""
    from .data import DatasetsUnusable, check_datasets

    try:
        check_datasets(args.action, args.names, args.data_dir, args.configfile)
    except DatasetsUnusable as err:
        raise SystemExit(str(err)) from None


def build_parser() -> argparse.ArgumentParser:
    """The command line: every subcommand and option, each with its help text."""
    from . import __version__

    p = argparse.ArgumentParser(prog="ensemble-bandits", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ensemble-bandits {__version__} (algorithms "
                                                         f"v{ALGORITHMS_VERSION})")
    sub = p.add_subparsers(dest="cmd", required=True)

    def figure_options(sp, plan=False):
        """The options of the user commands that read figures: config, scale, ids, seeds per job; with
        ``plan``, what the workflow's run would leave out (skip, reuse_records)."""
        sp.add_argument("--configfile", default=DEFAULT_CONFIG, help="the workflow's config (default: %(default)s)")
        sp.add_argument("--config-dir", default="config", help="holds figures/*.yaml, the registry (default: %(default)s)")
        sp.add_argument("--schema", default="workflow/schemas/registry.schema.yaml", help="the registry's schema")
        sp.add_argument("--scales-json", default=None, help="per-scale caps (overrides config)")
        sp.add_argument("--scale", default=None, choices=registry.SCALES,
                        help="smoke, default or paper (default: the config's scale)")
        sp.add_argument("ids", nargs="*", help="figure ids or glob patterns, e.g. 'epp-fig8*' (default: all)")
        sp.add_argument("--seeds-per-job", type=int, default=None, help="default: seeds_per_job of the config")
        if not plan:
            return
        sp.add_argument("--skip", default=None, type=lambda t: [x.strip() for x in t.strip("[]").split(",") if x.strip()],
                        help="ids or glob patterns left out, as the config's skip (default: the config's), "
                             "e.g. 'epp-fig2b,epp-fig8*'")
        sp.add_argument("--reuse-records", action="store_true",
                        help="leave out the ids that have a record, as `--config reuse_records=true` does")

    # for users first (--help lists subcommands in this order), then those the workflow's rules run
    es = sub.add_parser("estimate", help="cells, jobs and estimated CPU time of each figure (cost model; runs nothing)")
    figure_options(es, plan=True)
    es.add_argument("--pending", action="store_true",
                    help="list the cells of pending readings instead: key, estimated CPU time, run files")
    es.set_defaults(fn=cmd_estimate)

    pr = sub.add_parser("progress", help="how far a run has got: run files done per figure, jobs running now")
    figure_options(pr, plan=True)
    pr.add_argument("--all", action="store_true", help="list complete figures too")
    pr.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                    help="cores the run uses, for the wall-time estimate of what is left (default: this machine's)")
    pr.add_argument("--recent", type=float, default=600.0,
                    help="a job counts as running if its log changed in the last this many seconds (default 600)")
    pr.set_defaults(fn=cmd_progress)

    tm = sub.add_parser("timings", help="wall and CPU time and peak memory of each figure's simulate jobs, from their logs")
    figure_options(tm)
    tm.add_argument("--cells", action="store_true",
                    help="per cell: measured wall and CPU seconds beside the cost model's estimate of the same jobs")
    tm.add_argument("--page", default=None, metavar="FILE",
                    help="also write the table as a generated markdown page, e.g. docs/timings-paper.md")
    tm.set_defaults(fn=cmd_timings)

    dt = sub.add_parser("data", help="check the datasets in a data directory (SHA-256), or download them")
    dt.add_argument("action", choices=["check", "fetch"], help="check: verify SHA-256; fetch: download, then verify")
    dt.add_argument("names", nargs="*", help="datasets (default: all)")
    dt.add_argument("--data-dir", default=None, help="default: data_dir of the config")
    dt.add_argument("--configfile", default=DEFAULT_CONFIG, help="the workflow's config (default: %(default)s)")
    dt.set_defaults(fn=cmd_data)

    ad = sub.add_parser("adopt", help="take seeds that other jobs of a cell played (their run files) into a stopped "
                                      "job's checkpoint, so a long cell's seeds can run side by side")
    ad.add_argument("--checkpoint", required=True, metavar="FILE",
                    help="the stopped job's checkpoint (results/<scale>/checkpoints/<key>/seeds-<a>-<b>.ckpt)")
    ad.add_argument("runs", nargs="+", metavar="RUN",
                    help="run files of the same cell (runs/<key>/seeds-<c>-<d>.npz, cell.json beside them)")
    ad.set_defaults(fn=cmd_adopt)

    s = sub.add_parser("simulate", help="(workflow) run one job: a cell for a block of seeds -> an .npz run file")
    s.add_argument("--cell", required=True, help="cell spec as JSON")
    s.add_argument("--seeds", type=int, nargs=2, required=True, metavar=("START", "END"), help="seeds START .. END-1")
    s.add_argument("--out", required=True, help="the run file to write (.npz)")
    s.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    s.add_argument("--device", default=None, choices=("cpu", "cuda"),
                   help="torch device of the agent (not part of the cell: the workflow sets it from the config's "
                        "device and gpu for agents that can use an accelerator)")
    s.add_argument("--checkpoint", default=None, metavar="FILE",
                   help="save the running job's state here every few minutes and resume from it if it exists "
                        "(removed when the run file is written); the workflow passes "
                        "results/<scale>/checkpoints/<key>/seeds-<a>-<b>.ckpt")
    s.add_argument("--checkpoint-every", type=float, default=None, metavar="SECONDS",
                   help=f"seconds between checkpoints (default: {checkpoint.CHECKPOINT_MINUTES:g} minutes, or the environment's "
                        "EB_CHECKPOINT_MINUTES)")
    s.set_defaults(fn=cmd_simulate)

    g = sub.add_parser("simulate-group", help="(workflow) run one shared-pass job: cells sharing an environment for a "
                                              "block of seeds -> one .npz run file per cell")
    g.add_argument("--cells", required=True, help="JSON list of cell specs (one environment spec and horizon)")
    g.add_argument("--seeds", type=int, nargs=2, required=True, metavar=("START", "END"), help="seeds START .. END-1")
    g.add_argument("--out", required=True, nargs="+", help="run files, one per cell, in order")
    g.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    g.set_defaults(fn=cmd_simulate_group)

    figure_help = "the resolved figure (JSON) the workflow wrote: results/<scale>/figures/<id>.json"
    a = sub.add_parser("aggregate", help="(workflow) run files of a figure -> its table (parquet) and plot spec (JSON)")
    a.add_argument("--figure", required=True, help=figure_help)
    a.add_argument("--data-dir", default=None, help="datasets directory, for a figure that reads datasets (the "
                                                     "workflow passes data_dir)")
    a.add_argument("--table", required=True, help="the figure table to write (parquet)")
    a.add_argument("--spec", required=True, help="the plot spec to write (JSON)")
    a.add_argument("--archive", action="append",
                   help="a committed archive (repeatable; the figure's own first): the cells it holds are read "
                        "from it, not from run files")
    a.add_argument("--staged", help="also write the figure's archive (its cells' compact per-seed rows) here")
    a.add_argument("--archive-sha256", action="append",
                   help="the SHA-256 each --archive must have, in the same order (checked before it is read)")
    a.set_defaults(fn=cmd_aggregate)

    pb = sub.add_parser("publish", help="(workflow) copy staged results (results/<scale>/...) into place under figures/<scale>/, "
                        "each checked to be what its name says")
    pb.add_argument("--staged", required=True, nargs="+", help="files a job wrote under results/<scale>/")
    pb.add_argument("--out", required=True, nargs="+", help="their places under figures/<scale>/, in the same order")
    pb.set_defaults(fn=cmd_publish)

    c = sub.add_parser("claims", help="(workflow) evaluate a figure's claims on its table -> JSON and reStructuredText")
    c.add_argument("--figure", required=True, help=figure_help)
    c.add_argument("--table", required=True, help="the figure table to read (parquet)")
    c.add_argument("--json", required=True, help="the claims to write (JSON)")
    c.add_argument("--rst", required=True, help="the claims to write (reStructuredText, for the HTML report)")
    c.add_argument("--record", help="also write the figure's record (REPORT.md's section and its run) here")
    c.add_argument("--archive", help="the archive the table was built from: its content hash goes into the record")
    c.add_argument("--redrawn", action="store_true",
                   help="nothing was simulated for the table (committed archives only, or a static table): a record "
                        "that changes nothing but its provenance stays byte-identical to the one in place "
                        "(figures/<scale>/records/<id>.json); one from archives that changes keeps that record's "
                        "run and names this one as 'redecided'")
    c.set_defaults(fn=cmd_claims)

    r = sub.add_parser("report", help="(workflow) REPORT.md: every claim of the given figures at one scale")
    r.add_argument("--scale", required=True, choices=registry.SCALES, help="the scale whose records to report")
    r.add_argument("--ids", nargs="+", required=True, help="figures whose records (figures/<scale>/records) exist")
    r.add_argument("--skipped", nargs="*", default=None, help="ids left out of this run (listed as such)")
    r.add_argument("--out", required=True, help="the report to write (markdown)")
    r.add_argument("--config-dir", default="config", help="the registry's causes of the verdicts are read here")
    r.add_argument("--schema", default=None, help="the registry's schema (default: the workflow's)")
    r.add_argument("--seeds-per-job", type=int, default=None,
                   help="seeds per simulate job of a planned look's cost (default: config/config.yaml's)")
    r.set_defaults(fn=cmd_report)

    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)      # as typed: a generated page names it
    if getattr(args, "configfile", None) == DEFAULT_CONFIG and not os.path.isfile(DEFAULT_CONFIG):
        _enter_project(args)
    if hasattr(args, "scale") and args.scale is None:       # the configured scale, as the workflow's
        try:
            args.scale = registry.load_yaml(args.configfile).get("scale", "default")
        except registry.RegistryError as err:
            raise SystemExit(f"{args.cmd}: {err}") from None
    try:
        args.fn(args)
    except registry.FigureFileError as err:
        raise SystemExit(str(err)) from None
    except CacheError as err:
        raise SystemExit(f"{args.cmd}: {err}{rebuild_hint(getattr(args, 'figure', None))}") from None
    except (registry.RegistryError, DataError, NotAFileError) as err:
        raise SystemExit(f"{args.cmd}: {err}") from None


PATH_OPTIONS = ("data_dir", "figure", "table", "spec", "json", "rst", "out", "page")


def _enter_project(args) -> None:
    """Run from the project root when started elsewhere (paths given by the user stay valid)."""
    given = {name: getattr(args, name) for name in PATH_OPTIONS if getattr(args, name, None)}
    try:
        for name, path in paths.enter_project(args.cmd, given).items():
            setattr(args, name, path)
    except FileNotFoundError as err:
        raise SystemExit(str(err)) from None


if __name__ == "__main__":
    main()
