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
import re
import shlex
import sys
import time

from . import ALGORITHMS_VERSION, costs, paths, registry
from .tables import CacheError
from .atomic import NotAFileError
from .data import DataError

DEFAULT_CONFIG = "config/config.yaml"
# a simulate job's last log line: its wall seconds and (newer logs) its process CPU seconds and peak
# resident memory
DONE_IN = re.compile(r"done in ([0-9.]+) s(?: \(CPU ([0-9.]+) s(?:, peak ([0-9.]+) MB)?\))?")
RUN_FILE = re.compile(r"runs/(\w+)/seeds-(\d+)-(\d+)")  # a run file's cell key and seed block
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


def peak_rss_mb() -> float | None:
    """This process's peak resident memory in MB (None where the platform does not say)."""
    try:
        import resource
    except ImportError:                                     # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10     # bytes on macOS, KiB on Linux


def done_line(t0: float, c0: float) -> str:
    """A simulate job's last log line: wall seconds since ``t0``, this process's CPU seconds since
    ``c0`` (every thread: a torch job on two threads uses up to twice its wall time) and its peak
    resident memory."""
    peak = peak_rss_mb()
    mem = f", peak {peak:.0f} MB" if peak is not None else ""
    return f"done in {time.perf_counter() - t0:.1f} s (CPU {time.process_time() - c0:.1f} s{mem})"


def run_identity(cell: dict, seeds: list) -> dict:
    """The identity a run file carries (tables.check_identity reads it back)."""
    from .cells import identity_of

    return {"_identity": identity_of(cell, seeds)}


def cmd_simulate(args):
    """One job: the cell for a block of seeds, written as an .npz run file (imports numpy only)."""
    from .atomic import write_columns_atomic, write_text_atomic
    from .malloc import keep_freed_memory
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


def _check_published(staged: str, out: str) -> str:
    """What a staged file is, checked by its kind (a record, a report, an archive, a PNG or a PDF);
    SystemExit naming the file when it is not what its name says."""
    from . import archive as arch
    from .report import read_record

    name = os.path.basename(out)
    try:
        if out.endswith(".parquet"):
            meta = arch.read_meta(staged, name.removesuffix(".parquet"))
            return f"archive of {len(meta['cells'])} cells ({meta['mode']})"
        if out.endswith(".json"):
            return f"record of {read_record(staged)['id']}"
        with open(staged, "rb") as fh:
            data = fh.read()
        if out.endswith(".md") and data.strip():
            data.decode("utf-8")
            return "markdown"
        if out.endswith(".tex") and b"\\begin{tabular}" in data:
            data.decode("utf-8")
            return "LaTeX"
    except (OSError, ValueError) as err:
        raise SystemExit(f"publish: {staged} cannot be published as {out}: {err}") from None
    magic = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF"}
    ext = os.path.splitext(out)[1]
    if ext not in magic or not data.startswith(magic[ext]):
        raise SystemExit(f"publish: {staged} is not a {ext or 'known'} file the workflow writes; nothing was copied to {out}")
    return ext[1:].upper()


def cmd_publish(args):
    """Copy files a job staged under results/<scale>/published/ into place under figures/<scale>/,
    each checked to be what its name says; a table's markdown and LaTeX copies beside its PDF go along."""
    import shutil

    from .atomic import atomic_write

    if len(args.staged) != len(args.out):
        raise SystemExit(f"publish: {len(args.staged)} staged files but {len(args.out)} outputs")
    pairs = list(zip(args.staged, args.out))
    for staged, out in list(pairs):
        for ext in (".md", ".tex"):          # a table's copies beside its PDF
            copy = os.path.splitext(staged)[0] + ext
            if staged.endswith(".pdf") and os.path.exists(copy):
                pairs.append((copy, os.path.splitext(out)[0] + ext))
    for staged, out in pairs:
        what = _check_published(staged, out)
        atomic_write(out, lambda tmp, src=staged: shutil.copyfile(src, tmp))
        print(f"published {out} ({what})", file=sys.stderr)


def cmd_claims(args):
    from .tables import read_table
    from .claims import evaluate
    from .report import dump_claims, make_record, stamped, write_record

    fig = _read_figure(args.figure)   # its claims' names were checked when the workflow resolved it
    entry = fig["entry"]
    from .plans import decided_in_looks

    table = read_table(args.table)
    results = evaluate(entry, table, fig["scale"], absent=fig.get("absent_data", []), pending=fig.get("pending_curves"))
    results = decided_in_looks(entry, table, results, fig["seeds"])   # a figure planned in looks (registry)
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
    from .atomic import write_text_atomic
    from .report import read_record, report_markdown, with_registry_notes

    entries = registry.load_registry(args.config_dir, args.schema)
    unknown = [fid for fid in [*args.ids, *(args.skipped or [])] if fid not in entries]
    if unknown:      # a typo, not a damaged record: say so, and what the ids are
        raise SystemExit(f"report: unknown figure id(s) {unknown}; known ids: {', '.join(sorted(entries))}")
    for fid in args.ids:
        path = paths.record_file(args.scale, fid)
        if not os.path.exists(path):
            committed = f", or restore the committed one: git checkout -- {path}" if args.scale == "paper" else ""
            raise SystemExit(f"report: {fid} has no record at scale {args.scale} ({path}): build its figure first "
                             f"(snakemake --cores 2 figures/{args.scale}/{fid}.pdf --config scale={args.scale})"
                             f"{committed}")
    try:
        figures = [read_record(paths.record_file(args.scale, fid)) for fid in args.ids]
        for fid in args.ids:           # a record must state the numbers of the archive committed beside it
            if os.path.exists(paths.archive_file(args.scale, fid)):
                from .archive import matches_record, read_meta

                matches_record(paths.archive_file(args.scale, fid), read_meta(paths.archive_file(args.scale, fid), fid))
    except ValueError as err:
        raise SystemExit(f"report: {err}")
    figures = with_registry_notes(figures, entries)
    if args.scale == "paper":       # revised rules: the first rule's verdicts, decided again on the archives
        figures = _with_revisions(args, entries, figures)
        figures = _with_planned_looks(args, entries, figures)
    archived = None
    if args.scale == "paper":       # the scale whose archives are committed (workflow: ARCHIVE_SCALES)
        archived = {fid for fid in args.ids if os.path.exists(paths.archive_file(args.scale, fid))}
    tables = {}      # a table figure's markdown (written beside its PDF), shown in its section as a table
    for fid in args.ids:
        md = paths.table_markdown(args.scale, fid)
        if os.path.exists(md):
            tables[fid] = open(md, encoding="utf-8").read()
    from .redraw import unchanged_report

    text = report_markdown(args.scale, figures, skipped=args.skipped or [], archived=archived, tables=tables)
    # the report in place (figures/<scale>/, where rule publish_report copies it) stays as it is when
    # nothing but its provenance line would change
    write_text_atomic(unchanged_report(text, os.path.join("figures", args.scale, os.path.basename(args.out))), args.out)


def _with_planned_looks(args, entries, figures):
    """The records with the next look of each claim a fresh sequential study plans (registry ``looks:``,
    :mod:`plans`): its seeds and estimated CPU time; the verdicts are the records' own."""
    from . import plans
    from .report import with_planned_looks

    planned = [f["id"] for f in figures if any(s.fresh for s in plans.studies(entries.get(f["id"], {})))]
    if not planned:
        return figures
    config = registry.with_defaults(registry.load_yaml(os.path.join(args.config_dir, "config.yaml")))
    figs = {fid: registry.resolve(entries[fid], plans.SCALE, config["scales"]) for fid in planned}
    return with_planned_looks(figures, plans.planned_notes(figures, entries, figs, config["seeds_per_job"]))


def _with_revisions(args, entries, figures):
    """The records with the notes of their revised claims (config/rule_history.yaml; :mod:`revisions`)."""
    from . import rules
    from .aggregate import build_table
    from .data import config_data_dir
    from .report import with_revisions
    from .revisions import revision_notes

    history = rules.load_history(os.path.join(args.config_dir, os.path.basename(rules.HISTORY)))
    if not history:
        return figures
    configfile = os.path.join(args.config_dir, "config.yaml")
    config = registry.with_defaults(registry.load_yaml(configfile))
    notes = revision_notes(entries, history, args.ids, config, str(config_data_dir(configfile)), build_table)
    return with_revisions(figures, notes, rules.added_later(history))


def cmd_timings(args):
    """Wall and CPU seconds and peak memory of the simulate jobs of each figure, read from their logs
    ("done in ... s (CPU ... s, peak ... MB)"); ``--cells``: per cell, beside the cost model's
    estimate of the same jobs; ``--page FILE``: also written as a markdown page (pages.py)."""
    if args.page:
        from . import pages

        page, args.page = args.page, None
        command = shlex.join(["ensemble-bandits", *args.argv])
        body = pages.captured(cmd_timings, args)
        pages.write_page(page, f"Simulation timings at scale {args.scale}", command,
                         f"Read from the simulate jobs' logs under results/{args.scale}/logs/simulate on the "
                         f"machine that ran them: wall and CPU seconds (CPU: every thread of the job's process) "
                         f"and the largest job's peak resident memory.", body, measured_here=False)
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
    logged = _JobLogs(args.scale, figs, config.get("shared_pass_group", 64))
    if args.cells:
        return _timings_per_cell([figs[fid] for fid in ids], per_job, logged)
    print(f"{'figure':16s} {'cells':>6s} {'jobs':>6s} {'logged':>7s} {'wall s':>9s} {'CPU s':>9s} {'peak MB':>8s}")
    grand, any_logged = [0.0, 0.0], False
    for fid in ids:
        fig = figs[fid]
        runs = registry.figure_runs(fig, per_job)
        found = [t for t in (logged.seconds(*RUN_FILE.search(f).groups()) for f in runs) if t is not None]
        wall, cpu = sum(w for w, _c, _m in found), _cpu_sum(found)
        grand[0] += wall
        grand[1] += cpu if cpu is not None else 0.0
        any_logged = any_logged or bool(found)
        print(f"{fid:16s} {len({s['key'] for s in fig['series']}):6d} {len(runs):6d} {len(found):7d} {wall:9.1f} "
              f"{_cpu_text(cpu):>9s} {_peak_text(found):>8s}")
    print(f"{'total':16s} {'':6s} {'':6s} {'':7s} {grand[0]:9.1f} {grand[1]:9.1f}  (cells shared by figures count "
          f"in each; CPU: every thread of the job's process; peak: the largest job's resident memory; '-' where "
          f"the logs predate them)")
    if not any_logged:
        print(f"(none of these figures' simulations has run at scale {args.scale!r} here yet)")


def _cpu_sum(found):
    """The CPU seconds of logged jobs, or None when any log lacks them (written before CPU timing)."""
    return None if any(c is None for _w, c, _m in found) else sum(c for _w, c, _m in found)


def _peak_text(found) -> str:
    """The largest peak memory of logged jobs, "-" where no log states one."""
    peaks = [m for _w, _c, m in found if m is not None]
    return f"{max(peaks):.0f}" if peaks else "-"


def _cpu_text(cpu) -> str:
    return "-" if cpu is None else f"{cpu:.1f}"


class _JobLogs:
    """Wall and CPU seconds of a run file's simulate job from its log.  A shared-pass job logs once
    for its group: each of its cells counts an equal share.  Its log names its cells (`cells:` line);
    older logs are matched to the groups of all figures together."""

    def __init__(self, scale: str, figs: dict, group_size: int):
        self.scale = scale
        self.group_of = {key: g for g in registry.shared_groups(list(figs.values()), group_size) for key in g["keys"]}
        self.shares = _group_log_shares(paths.simulate_log(scale))

    def seconds(self, key: str, start, end):
        """(wall, CPU or None) seconds of the job of ``key``'s seeds [start, end) (a share of a
        shared-pass job), or None where it has no log."""
        start, end = str(start), str(end)
        if (key, start, end) in self.shares:
            return self.shares[key, start, end]
        share, log = 1, paths.simulate_log(self.scale, key, start, end)
        if not os.path.exists(log) and key in self.group_of:
            share = len(self.group_of[key]["keys"])
            log = paths.simulate_log(self.scale, f"group-{self.group_of[key]['id']}", start, end)
        hit = DONE_IN.search(open(log).read()) if os.path.exists(log) else None
        return _shared(hit, share) if hit else None


def _shared(hit, share: int):
    """(wall, CPU or None, peak MB or None) of a DONE_IN match, the seconds divided among ``share``
    cells (the peak is the job's)."""
    return (float(hit.group(1)) / share, float(hit.group(2)) / share if hit.group(2) else None,
            float(hit.group(3)) if hit.group(3) else None)


def _timings_per_cell(figs: list, per_job: int, logged: _JobLogs) -> None:
    """One line per cell with logged jobs: measured wall and CPU seconds beside the cost model's
    (costs.cell_cost_seconds, as part of a shared pass where it is one; a model of wall seconds on a
    2-core machine) for the same jobs, and the ratio of wall to model."""
    print(f"{'figure':16s} {'cell':12s} {'agent':22s} {'env':22s} {'jobs':>5s} {'wall s':>9s} {'CPU s':>9s} "
          f"{'model s':>9s} {'ratio':>6s}")
    tot_m, tot_e = 0.0, 0.0
    for fig, s in registry.unique_series(figs):
        cell, shared = s["cell"], s["key"] in logged.group_of
        secs, model = [], 0.0
        for a, b in registry.series_blocks(s, per_job):
            t = logged.seconds(s["key"], a, b)
            if t is not None:
                secs.append(t)
                model += costs.cell_cost_seconds(cell, b - a, shared=shared)
        if not secs:
            continue
        agent = cell.get("agent", {}).get("name", cell.get("experiment", "?"))
        agent += f" M={cell['agent']['M']}" if "M" in cell.get("agent", {}) else ""
        wall = sum(w for w, _c, _m in secs)
        tot_m, tot_e = tot_m + wall, tot_e + model
        print(f"{fig['id']:16s} {s['key']:12s} {agent:22s} {cell.get('env', {}).get('name', '-'):22s} {len(secs):5d} "
              f"{wall:9.1f} {_cpu_text(_cpu_sum(secs)):>9s} {model:9.1f} {wall / model:6.2f}")
    if tot_e:
        print(f"{'total':16s} {'':12s} {'':22s} {'':22s} {'':5s} {tot_m:9.1f} {'':>9s} {tot_e:9.1f} "
              f"{tot_m / tot_e:6.2f}  (each cell once)")


def _group_log_shares(log_dir) -> dict:
    """(key, start, end) -> (wall, CPU or None) seconds, an equal share of its shared-pass job, from
    the group logs that name their cells (a `cells:` line before `done in ... s`)."""
    shares = {}
    for name in sorted(os.listdir(log_dir)):
        block = re.fullmatch(r"group-\w+-(\d+)-(\d+)\.log", name)
        if not block:
            continue
        text = open(os.path.join(log_dir, name)).read()
        keys, done = re.search(r"^cells: (.+)$", text, re.M), DONE_IN.search(text)
        if keys and done:
            keys = keys.group(1).split()
            for key in keys:
                shares[key, block.group(1), block.group(2)] = _shared(done, len(keys))
    return shares


def cmd_progress(args):
    """How far a run at a scale has got: per figure, the run files it needs, how many exist (or are
    covered by its committed archive) and the cost model's CPU time of the rest (costs.work_left, as
    ``estimate`` and the workflow's notice); the whole run's time left on ``--cores`` cores; and the
    simulate jobs running now with their last progress line (a log without its "done in" line,
    written to in the last ``--recent`` seconds: round, rate, time left)."""
    plan = _plan(args)
    figs, per_job = plan["figs"], plan["per_job"]
    need_all, have_all = 0, 0
    print(f"{'figure':16s} {'run files':>10s} {'done':>6s} {'left (model)':>13s}")
    for fig in figs:
        runs = registry.figure_runs(fig, per_job)
        mine = costs.work_left([fig], per_job, plan["covered"], os.path.exists)
        have = len(runs) - len(mine["runs"])
        need_all, have_all = need_all + len(runs), have_all + have
        if runs and (have < len(runs) or args.all):
            print(f"{fig['id']:16s} {len(runs):10,d} {100 * have / len(runs):5.0f}% "
                  f"{costs.format_cpu_time(mine['seconds']):>13s}")
    left = costs.work_left(figs, per_job, plan["covered"], os.path.exists, plan["groups"])
    rest = left["seconds"]
    print(f"{'total':16s} {need_all:10,d} {100 * have_all / max(need_all, 1):5.0f}% {costs.format_cpu_time(rest):>13s}"
          f"  (run files, or cells in a committed archive){'' if args.all else '; complete figures are not listed (--all lists them)'}")
    print(f"left: {left['jobs']:,} simulation jobs, about {costs.format_cpu_time(rest)} of CPU time by the cost model "
          f"(runs shared by figures once; as `estimate` and Snakemake's notice count them), about "
          f"{costs.format_cpu_time(rest / max(args.cores, 1))} of wall time on {args.cores} cores; an estimate, "
          f"within about a factor of 2 on the machine it was fitted on (a running job's own line below is measured)")
    logs = paths.simulate_log(args.scale)
    now, running = time.time(), []
    if os.path.isdir(logs):
        for name in sorted(os.listdir(logs)):
            path = os.path.join(logs, name)
            if now - os.path.getmtime(path) > args.recent:
                continue
            text = open(path, errors="replace").read()
            if not DONE_IN.search(text):
                lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
                running.append((name[:-len(".log")], lines[-1] if lines else "(started)"))
    print(f"\nrunning now ({len(running)} simulate job(s) written to in the last {args.recent:.0f} s):")
    for name, last in running:
        print(f"  {name}: {last}")


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
    if args.pending:
        config, entries = _load(args)
        ids = registry.match_ids(args.ids, sorted(entries), "id or pattern") if args.ids else sorted(entries)
        figs = [registry.resolve(entries[fid], args.scale, config["scales"]) for fid in ids]
        return _estimate_pending(figs, args.seeds_per_job or config["seeds_per_job"], args.scale)
    plan = _plan(args)
    figs, per_job = plan["figs"], plan["per_job"]
    print(f"Estimated CPU time of the simulations at scale {args.scale}, seeds_per_job={per_job}: an estimate from "
          f"a cost model (ensemble_bandits.costs.cell_cost_seconds, fitted on a 2-core machine, within about a "
          f"factor of 2 there), not a measurement; nothing is run.  'to run' leaves out the cells that committed "
          f"archives supply and the run files present, as the workflow does.")
    print(f"{'figure':16s} {'cells':>7s} {'run files':>9s} {'est. CPU':>10s} {'to run':>10s}")
    for fig in figs:
        row = costs.cost_summary(costs.run_costs([fig], per_job))
        left = costs.work_left([fig], per_job, plan["covered"], os.path.exists)
        cpu = costs.format_cpu_time(row["seconds"]) if row["jobs"] else "-"
        todo = costs.format_cpu_time(left["seconds"]) if left["runs"] else "-"
        print(f"{fig['id']:16s} {row['cells']:7,d} {row['jobs']:9,d} {cpu:>10s} {todo:>10s}")
    total = costs.cost_summary(costs.run_costs(figs, per_job))
    left = costs.work_left(figs, per_job, plan["covered"], os.path.exists, plan["groups"])
    print(f"{'total':16s} {total['cells']:7,d} {total['jobs']:9,d} {costs.format_cpu_time(total['seconds']):>10s} "
          f"{costs.format_cpu_time(left['seconds']):>10s}  (cells shared by figures counted once)")
    print(f"to run here: {left['jobs']:,} simulation jobs ({left['cells']:,} cells), about "
          f"{costs.format_cpu_time(left['seconds'])} of CPU time: what Snakemake's notice says before this run")
    _estimate_looks(figs, per_job, args.scale)


def _estimate_looks(figs, per_job, scale):
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


def _estimate_pending(figs, per_job, scale):
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
