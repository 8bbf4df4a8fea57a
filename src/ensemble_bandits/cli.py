"""The project's command line, ``ensemble-bandits`` (or ``python -m ensemble_bandits.cli``).

For users:

    ensemble-bandits estimate --scale paper 'epp-fig8*'   what a run would cost (cells, jobs, CPU time); runs nothing
    ensemble-bandits progress --scale paper              a run in progress: done per figure, time left, running jobs
    ensemble-bandits timings --scale paper               measured wall and CPU time of the simulations that ran
    ensemble-bandits data check                          SHA-256 of every dataset file (data fetch: download)

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
import time

from . import ALGORITHMS_VERSION, paths, registry
from .atomic import NotAFileError
from .data import DataError
from .tables import CacheError

DEFAULT_CONFIG = "config/config.yaml"
DATA_DIR_HELP = ("datasets directory, for environments that read datasets (the workflow passes data_dir); "
                 "not part of the cell")


def _load(args):
    config = registry.with_defaults(registry.load_yaml(args.configfile))
    if getattr(args, "scales_json", None):
        config["scales"] = json.loads(args.scales_json)
    entries = registry.load_registry(args.config_dir, args.schema)
    return config, entries


def _read_figure(path) -> dict:
    """A resolved figure as the workflow wrote it (rule resolve_figure: :func:`registry.figure_document`)."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as err:
        raise SystemExit(f"cannot read the resolved figure {path}: {err}") from None


def _json_arg(text: str, option: str, kind):
    """``text`` parsed as JSON of type ``kind``, or one line naming the option."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise SystemExit(f"{option} is not valid JSON ({err})") from None
    if not isinstance(value, kind):
        raise SystemExit(f"{option} must be a JSON {'object' if kind is dict else 'list'}, got {type(value).__name__}")
    return value


def _checked_cell(cell):
    """A cell given on the command line, its names and values checked (cells.check_cell): one line
    naming what is wrong instead of a traceback from inside the simulation."""
    from .cells import check_cell

    if not isinstance(cell, dict) or not ("experiment" in cell or {"env", "agent"} <= set(cell)):
        raise SystemExit("a cell is a JSON object with env, agent and horizon (or an experiment)")
    try:
        check_cell(cell)
    except (ValueError, KeyError, TypeError) as err:
        raise SystemExit(f"invalid cell: {err}") from None
    return cell


def _seed_range(pair) -> list:
    """Seeds ``first .. end - 1`` of ``--seeds FIRST END``, or one line when the range is empty."""
    first, end = pair
    if not 0 <= first < end:
        raise SystemExit(f"--seeds {first} {end}: need 0 <= FIRST < END (seeds FIRST .. END-1)")
    return list(range(first, end))


def run_identity(cell: dict, seeds: list) -> dict:
    """The identity a run file carries (tables.check_identity reads it back)."""
    from .cells import identity_of

    return {"_identity": identity_of(cell, seeds)}


def cmd_simulate(args):
    """One job: the cell for a block of seeds, written as an .npz run file (imports numpy only)."""
    from .atomic import write_columns_atomic, write_text_atomic
    from .malloc import keep_freed_memory
    from .joblogs import done_line
    from .runner import simulate_columns

    keep_freed_memory()
    cell = _checked_cell(_json_arg(args.cell, "--cell", dict))
    seeds = _seed_range(args.seeds)
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"simulate {os.path.basename(os.path.dirname(args.out))}: seeds {seeds[0]}..{seeds[-1]}, "
          f"T={cell.get('horizon', cell.get('experiment', {}).get('horizon'))}"
          + (f", device {args.device}" if args.device else ""), file=sys.stderr, flush=True)
    run = cell if not args.device else {**cell, "agent": {**cell["agent"], "device": args.device}}
    ckpt = _checkpoint(args, cell, seeds)
    cols = simulate_columns(run, seeds, verbose=True, data_dir=args.data_dir, checkpoint=ckpt)
    write_columns_atomic({**cols, **run_identity(cell, seeds)}, args.out)
    write_text_atomic(json.dumps(cell, indent=1, sort_keys=True), os.path.join(os.path.dirname(args.out), "cell.json"))
    if ckpt is not None:
        ckpt.remove()
    print(done_line(t0, c0), file=sys.stderr)


def _checkpoint(args, cell: dict, seeds: list):
    """The job's :class:`checkpoint.Checkpoint` (``--checkpoint``; None without it or for a timing
    cell, which must run uninterrupted), loaded if the file exists: SystemExit with one line when the
    file is not this job's."""
    if not args.checkpoint or cell.get("timing") == "unbatched" or "experiment" in cell:
        return None
    from .checkpoint import Checkpoint, CheckpointError

    every = args.checkpoint_every if args.checkpoint_every is not None else \
        60.0 * float(os.environ.get("EB_CHECKPOINT_MINUTES", CHECKPOINT_MINUTES))
    ckpt = Checkpoint(args.checkpoint, str(run_identity(cell, seeds)["_identity"]), every)
    try:
        if ckpt.load():
            print(f"  resuming from {args.checkpoint}: {len(ckpt.done)} batch(es) done"
                  + (f", seeds {ckpt.batch[0][0]}-{ckpt.batch[0][-1]} at round {ckpt.batch[4]}" if ckpt.batch else ""),
                  file=sys.stderr, flush=True)
    except CheckpointError as err:
        raise SystemExit(f"simulate: {err}") from None
    return ckpt


CHECKPOINT_MINUTES = 5.0    # a running job's state is saved this often (env EB_CHECKPOINT_MINUTES overrides)


def cmd_simulate_group(args):
    """One job of a shared pass: the cells (one environment spec and horizon) for a block of seeds,
    one pass, one .npz run file per cell (``--out`` in the order of ``--cells``)."""
    from .atomic import write_columns_atomic, write_text_atomic
    from .malloc import keep_freed_memory
    from .joblogs import done_line
    from .runner import simulate_group_columns

    keep_freed_memory()
    cells = [_checked_cell(c) for c in _json_arg(args.cells, "--cells", list)]
    if len(cells) != len(args.out):
        raise SystemExit(f"simulate-group: {len(cells)} cells but {len(args.out)} output files")
    seeds = _seed_range(args.seeds)
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"simulate-group: {len(cells)} cells on {json.dumps(cells[0]['env'], sort_keys=True)}, seeds "
          f"{seeds[0]}..{seeds[-1]}, T={cells[0]['horizon']}", file=sys.stderr, flush=True)
    # the cells' keys, so that `timings` can share this job's time among them whatever the grouping
    print(f"cells: {' '.join(os.path.basename(os.path.dirname(out)) for out in args.out)}", file=sys.stderr,
          flush=True)
    for cell, cols, out in zip(cells, simulate_group_columns(cells, seeds, verbose=True, data_dir=args.data_dir),
                               args.out):
        write_columns_atomic({**cols, **run_identity(cell, seeds)}, out)
        write_text_atomic(json.dumps(cell, indent=1, sort_keys=True), os.path.join(os.path.dirname(out), "cell.json"))
    print(done_line(t0, c0), file=sys.stderr)


def cmd_aggregate(args):
    """A figure's table, plot spec and staged archive (:func:`aggregate.build_table`,
    :func:`aggregate.figure_spec`), from the resolved figure and the files the rule names."""
    from .aggregate import TableError, build_table, figure_spec
    from .archive import ArchiveError
    from .atomic import write_table_atomic, write_text_atomic

    fig = _read_figure(args.figure)
    archives = args.archive or []
    if args.archive_sha256:
        from .data import sha256

        if len(args.archive_sha256) != len(archives):
            raise SystemExit(f"{len(archives)} --archive but {len(args.archive_sha256)} --archive-sha256: give one per archive")
        for path, digest in zip(archives, args.archive_sha256):
            if sha256(path) != digest:
                raise SystemExit(f"archive {path} changed while the workflow ran (SHA-256 differs); rerun")
    try:
        table = build_table(fig, fig["seeds_per_job"], args.data_dir, archives=archives, staged=args.staged)
    except (TableError, ArchiveError) as err:
        raise SystemExit(str(err)) from None
    write_table_atomic(table, args.table)
    write_text_atomic(json.dumps(figure_spec(fig), indent=1, default=str), args.spec)


def cmd_publish(args):
    """Copy files a job staged under results/<scale>/ into place under figures/<scale>/, each checked
    to be what its name says (:func:`publish.publish`)."""
    from .publish import PublishError, publish

    try:
        publish(args.staged, args.out)
    except PublishError as err:
        raise SystemExit(str(err)) from None
    from . import readme

    if any(os.path.normpath(out) == os.path.normpath(readme.REPORT) for out in args.out):   # the README's headline
        print(f"README.md: {', '.join(readme.refresh(('headline',))) or 'headline up to date'}", file=sys.stderr)


def cmd_claims(args):
    from .tables import read_table
    from .claims import evaluate
    from .records import make_record, stamped, write_record
    from .report import dump_claims

    fig = _read_figure(args.figure)   # its claims' names were checked when the workflow resolved it
    entry = fig["entry"]
    from .plans import decided_in_looks

    table = read_table(args.table)
    results = evaluate(entry, table, fig["scale"], absent=fig.get("absent_data", []), pending=fig.get("pending_curves"))
    fresh = ()
    if fig.get("fresh"):     # fresh studies at their looks: their seeds from the figure's archive
        from .fresh import fresh_rows

        rows = fresh_rows(fig, args.archive)
        fresh = [(state, rows) for state in fig["fresh"]]
    results = decided_in_looks(entry, table, results, fig["seeds"], fresh)   # a figure planned in looks
    dump_claims(entry["id"], results, args.json, args.rst)
    if args.record:
        digest = None
        if args.archive:
            from .archive import ArchiveError, content_sha256, read_meta

            try:
                read_meta(args.archive, fig["id"])
                digest = content_sha256(args.archive)
            except ArchiveError as err:
                raise SystemExit(f"claims: {err}") from None
        record = make_record(fig, results, archive_sha256=digest)
        if args.redrawn:     # nothing simulated: keep the run that made the numbers (ensemble_bandits.redraw)
            from .redraw import previous_record, redrawn_record

            record = stamped(redrawn_record(record, previous_record(paths.record_file(fig["scale"], entry["id"])),
                                            archived=bool(fig["series"])))
        write_record(record, args.record)
    for r in results:
        print(f"{r['id']}: {r['status']}", file=sys.stderr)


def cmd_report(args):
    """REPORT.md of the ids' records at a scale (:func:`report.assemble`); the report in place
    (figures/<scale>/, where rule publish copies it) stays as it is when only its provenance line
    would change."""
    from .atomic import write_text_atomic
    from .redraw import unchanged_report
    from .report import assemble

    try:
        text = assemble(args.scale, args.ids, args.skipped or [], args.config_dir, args.schema,
                        seeds_per_job=args.seeds_per_job)
    except ValueError as err:
        raise SystemExit(f"report: {err}") from None
    write_text_atomic(unchanged_report(text, os.path.join("figures", args.scale, os.path.basename(args.out))), args.out)


def cmd_timings(args):
    """Wall and CPU seconds and peak memory of the simulate jobs of each figure, read from their logs
    ("done in ... s (CPU ... s, peak ... MB)"); ``--cells``: per cell, beside the cost model's
    estimate of the same jobs; ``--page FILE``: also written as a markdown page (pages.py)."""
    from .joblogs import JobLogs, timings_per_cell, timings_table

    if args.page:
        from . import pages

        page, args.page = args.page, None
        command = shlex.join(["ensemble-bandits", *args.argv])
        body = pages.captured(cmd_timings, args)
        pages.write_page(page, f"Simulation timings at scale {args.scale}", command,
                         f"Read from the simulate jobs' logs under results/{args.scale}/logs/simulate on the "
                         f"machine that ran them: wall and CPU seconds (CPU: every thread of the job's process) "
                         f"and the largest job's peak resident memory.", body, measured_here=False)
        from . import readme

        if os.path.normpath(page) == os.path.normpath(readme.TIMINGS):   # the README's measured durations
            readme.refresh(("durations",))
        return
    logs = paths.simulate_log(args.scale)
    if not (os.path.isdir(logs) and os.listdir(logs)):
        page = os.path.join("docs", f"timings-{args.scale}.md")
        committed = (f" The timings measured by the run that made the committed figures/{args.scale}/ results are in "
                     f"{page}." if os.path.isfile(page) else "")
        raise SystemExit(f"no timings: no simulation has run at scale {args.scale!r} in {os.getcwd()} (no logs in "
                         f"{logs}/).{committed} For what a run would cost here: `ensemble-bandits estimate --scale "
                         f"{args.scale}` (a cost model; runs nothing); after a run, this command reads its logs.")
    config, entries = _load(args)
    per_job = args.seeds_per_job or config["seeds_per_job"]
    ids = registry.match_ids(args.ids, sorted(entries), "id or pattern") if args.ids else sorted(entries)
    figs = {fid: registry.resolve(entries[fid], args.scale, config["scales"]) for fid in sorted(entries)}
    logged = JobLogs(args.scale, figs, config.get("shared_pass_group", 64))
    if args.cells:
        return timings_per_cell([figs[fid] for fid in ids], per_job, logged)
    timings_table(figs, ids, per_job, logged, args.scale)


def cmd_progress(args):
    """How far a run at a scale has got: per figure, the run files it needs, how many exist (or are
    covered by its committed archive) and the cost model's CPU time of the rest (costs.work_left, as
    ``estimate`` and the workflow's notice); the whole run's time left on ``--cores`` cores; and the
    simulate jobs running now with their last progress line (a log without its "done in" line,
    written to in the last ``--recent`` seconds: round, rate, time left)."""
    from .progress import progress_report

    progress_report(_plan(args), args.scale, args.cores, args.all, args.recent)


def _plan(args) -> dict:
    """What a run of the ids on the command line (default: `all`) at ``args.scale`` involves, as the
    workflow sees it: the resolved figures (not skipped: ``--skip``, default the config's ``skip``;
    not reused: ``--reuse-records``), the cell keys their committed archives supply, and the
    shared-pass groups of the scale.  The input of costs.work_left for estimate and progress."""
    from . import archive, data, validation
    from .plans import at_look

    config, entries = _load(args)
    per_job = args.seeds_per_job or config["seeds_per_job"]
    skip = config.get("skip", []) if args.skip is None else args.skip
    skipped = set(registry.match_ids(skip, sorted(entries), "skip pattern")) if skip else set()
    ids = registry.match_ids(args.ids, sorted(entries), "id or pattern") if args.ids else [
        i for i in sorted(entries) if i not in skipped]
    if args.reuse_records:
        ids = [i for i in ids if not os.path.exists(paths.record_file(args.scale, i))]
    data_dir = data.config_data_dir(args.configfile, config.get("data_dir"))

    def resolved(fid):     # as the workflow builds it without `look`: cells of absent optional datasets left
        # out, and a figure planned in looks cut into its looks' seed blocks (plans.at_look)
        fig = registry.resolve(entries[fid], args.scale, config["scales"])
        return at_look(validation.without_absent(entries[fid], fig, data_dir), None)

    figs = [resolved(fid) for fid in ids]
    shared = [resolved(i) for i in sorted(entries) if entries[i].get("shared_pass") and i not in skipped]
    return {"figs": figs, "per_job": per_job, "groups": registry.shared_groups(shared, config.get("shared_pass_group", 64)),
            "covered": archive.covered_keys(figs, args.scale, config.get("archives", "use") == "use")}


def cmd_estimate(args):
    """Cells, simulation jobs and estimated CPU time of each figure at a scale, from the cost model
    (costs.cell_cost_seconds): all of its simulations, and what a run here would still simulate
    (costs.work_left: cells of committed archives and run files present cost nothing, as in
    ``progress`` and the workflow's notice); runs nothing."""
    from .progress import estimate_pending, estimate_report

    if args.pending:
        config, entries = _load(args)
        ids = registry.match_ids(args.ids, sorted(entries), "id or pattern") if args.ids else sorted(entries)
        figs = [registry.resolve(entries[fid], args.scale, config["scales"]) for fid in ids]
        return estimate_pending(figs, args.seeds_per_job or config["seeds_per_job"], args.scale)
    estimate_report(_plan(args), args.scale)


def cmd_data(args):
    """Check the datasets in a data directory, or download them there."""
    from pathlib import Path

    from .data import DATASETS, DataError, config_data_dir, fetch, files, verify

    names = args.names or sorted(DATASETS)
    data_dir = args.data_dir or config_data_dir(  # config's data_dir: relative to the project root
        args.configfile, registry.with_defaults(registry.load_yaml(args.configfile)).get("data_dir"))
    failed = []
    for name in names:
        if (args.action == "check" and not args.names and not DATASETS[name].shipped
                and not any(Path(p).exists() for p in files([name], data_dir))):
            print(f"ABSENT {name}: not shipped with the repository and not in {data_dir} (optional; get it with "
                  f"`python -m ensemble_bandits.cli data fetch {name} --data-dir {data_dir}`, needs network)")
            continue
        try:
            if args.action == "fetch":
                fetch([name], data_dir, log=lambda msg: print(msg, file=sys.stderr))
            for path in verify([name], data_dir):
                print(f"OK    {name}: {path}")
        except DataError as err:
            failed.append(name)
            print(f"FAIL  {name}: {err}")
    if failed:
        raise SystemExit(f"{len(failed)} of {len(names)} dataset(s) not usable: {', '.join(failed)}")


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
                   help=f"seconds between checkpoints (default: {CHECKPOINT_MINUTES:g} minutes, or the environment's "
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
    except CacheError as err:
        raise SystemExit(f"{args.cmd}: {err}{_rebuild_hint(args)}") from None
    except (registry.RegistryError, DataError, NotAFileError) as err:
        raise SystemExit(f"{args.cmd}: {err}") from None


def _rebuild_hint(args) -> str:
    """After a damaged cache file (a run file or table of a figure): the targets that rebuild what it
    held (the figure's own PDF would find nothing to do while the old one exists)."""
    fig = getattr(args, "figure", None)
    if not fig:
        return ""
    try:
        doc = _read_figure(fig)
    except SystemExit:
        return ""
    scale, fid = doc["scale"], doc["id"]
    return (f", then rebuild it and what follows from it: snakemake --cores 2 figures/{scale}/{fid}.pdf "
            f"--forcerun aggregate --config scale={scale}")


def _enter_project(args) -> None:
    """Run from the project root when started elsewhere (paths given by the user stay valid)."""
    from .paths import project_root

    root = project_root()
    if root is None:
        raise SystemExit(f"{args.cmd}: no project here: run this in the directory holding the Snakefile and "
                         f"{DEFAULT_CONFIG} (the clone of the repository), or pass --configfile")
    for name in ("data_dir", "figure", "table", "spec", "json", "rst", "out", "page"):
        if getattr(args, name, None):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    print(f"(working in the project at {root})", file=sys.stderr)
    os.chdir(root)


if __name__ == "__main__":
    main()
