# Registry -> figures, cells and jobs.  All expansion logic lives in ensemble_bandits.registry.
import functools
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from ensemble_bandits import ALGORITHMS_VERSION, archive, cells, costs, data, paths, registry, validation
from ensemble_bandits.report import rst_escape

SCALE = config["scale"]
try:
    REGISTRY = registry.load_registry("config", "workflow/schemas/registry.schema.yaml")
except registry.RegistryError as err:
    raise WorkflowError(f"invalid figure registry: {err}")
ALL_IDS = sorted(REGISTRY)
REGISTRY_FILES = sorted(str(p) for p in Path("config", "figures").glob("*.yaml"))
# `skip` (config): ids or glob patterns left out of `all`, the paper targets and REPORT.md, which
# lists them as not run (e.g. --config scale=paper skip='[epp-fig2b,epp-fig8*]').
# A pattern that matches no id is an error naming it and the known ids (a typo would skip nothing).
try:
    SKIPPED = registry.match_ids(config.get("skip", []), ALL_IDS, "skip pattern")
except registry.RegistryError as err:
    raise WorkflowError(str(err))
IDS = [i for i in ALL_IDS if i not in SKIPPED]


def config_flag(key):
    """A boolean config key: true, or the string "true" that `--config key=true` gives."""
    return str(config.get(key, False)).lower() == "true"


def reused_ids(scale):
    """`reuse_records` (config): the ids (not skipped) that already have a record at ``scale``
    (figures/<scale>/records/<id>.json, committed at paper scale) are not rebuilt by `all`, the
    paper targets and REPORT.md, whose sections for them come from their records."""
    if not config_flag("reuse_records"):
        return []
    return [i for i in IDS if os.path.exists(paths.record_file(scale, i))]


def built_ids(scale):
    """The ids `all` and REPORT.md build at ``scale``: not skipped, not reused."""
    reused = reused_ids(scale)
    return [i for i in IDS if i not in reused]


PAPERS = list(registry.PAPERS)
_RESOLVED = {}


# Run a rule's command with its stderr in its log; on failure the log's last line (the cause)
# reaches the terminal too (workflow/scripts/logged.sh; the working directory is the project root).
LOGGED = "bash workflow/scripts/logged.sh"
# The checked copy of staged files into place under figures/<scale>/ (rules publish and
# publish_figure; their input `staged` is in the order of their outputs), and the files that the
# publish rule copies (a figure's record, its archive, a report).
PUBLISH = "{params.logged} {log} python -m ensemble_bandits.cli publish --staged {input.staged} --out {output}"
PUBLISHED = r"records/[^/]+\.json|archives/[^/]+\.parquet|REPORT(-[a-z]+)?\.md"


wildcard_constraints:
    scale="smoke|default|paper",
    paper="|".join(PAPERS),
    fig=r"[A-Za-z0-9_.-]+",
    key=r"[0-9a-f]{12}",
    dataset="|".join(data.DATASETS),
    start=r"\d+",
    end=r"\d+",


def figure(scale, fid):
    """Resolved registry entry of ``fid`` at ``scale`` (cached)."""
    if fid not in REGISTRY:
        raise WorkflowError(f"unknown figure id {fid!r}; known ids: {', '.join(ALL_IDS)}")
    if (scale, fid) not in _RESOLVED:
        try:
            fig = registry.resolve(REGISTRY[fid], scale, config["scales"])
            validation.check_figure(REGISTRY[fid], fig, config["scales"])
        except (registry.RegistryError, ValueError) as err:
            raise WorkflowError(f"invalid figure registry: {err}")
        # optional datasets absent from data_dir: the cells that read them are left out ("data absent")
        _RESOLVED[scale, fid] = at_look(scale, validation.without_absent(REGISTRY[fid], fig, data_root()))
    return _RESOLVED[scale, fid]


def look_record(scale, fid):
    """[the record of ``fid``, and its archive where archives are committed] when the figure is built in
    looks at ``scale`` (the next look, or a rebuild of a fresh study's look, reads the record), else []."""
    fig = figure(scale, fid)
    if "look" not in fig and "fresh" not in fig:
        return []
    return [paths.record_file(scale, fid)] + archive_targets(scale, [fid])


def at_look(scale, fig):
    """A figure planned in looks at look ``look`` (config): on its own seeds (registry ``looks: [...]``,
    where it runs the plan's seeds; none: the look its published record states, else every seed), each
    curve's seeds from its published record of the previous look (ensemble_bandits.plans.at_look),
    blocks cut at the looks; its fresh studies (``looks: [{claims, start, n}]``; none: the looks its
    record states) with their curves' fresh seed ranges (ensemble_bandits.fresh.at_looks).  Others
    unchanged."""
    from ensemble_bandits import fresh, plans
    from ensemble_bandits.records import record_or_none

    own = plans.own_study(fig["entry"], fig["seeds"]) is not None
    if not own and not fresh.fresh_studies(fig):
        return fig
    look = config.get("look") if fig["id"] in looked_at() else None
    try:
        if own:  # without `look`: the look its published record states (absent or damaged: every seed)
            if look is None:
                return plans.at_look(fig, None, record_or_none(paths.record_file(scale, fig["id"])))
            return plans.at_look(fig, int(look), published_record(scale, fig["id"]) if int(look) > 1 else None)
        record = published_record(scale, fig["id"], checked=look is not None)
        return fresh.at_looks(fig, look, record, archive.fresh_state(paths.archive_file(scale, fig["id"])))
    except registry.RegistryError as err:
        raise WorkflowError(str(err))


@functools.lru_cache(maxsize=None)
def looked_at():
    """The ids config ``look`` applies to: those the command line names (a bare id, or a file named
    after one; read from the arguments, as the workflow is parsed before Snakemake hands over its
    targets), else every id (a look is a target of its own figure, and resolves no other)."""
    words = [Path(a).name.split(".")[0] for a in sys.argv[1:] if not a.startswith("-")]
    named = {i for i in ALL_IDS if i in words}
    return frozenset(named or ALL_IDS)


def published_record(scale, fid, checked=True):
    """The published record of ``fid`` at ``scale`` (None when absent).  ``checked``: a damaged or
    edited one is an error naming it; else its looks are read as they stand (a rebuild mends it)."""
    from ensemble_bandits.records import read_record

    path = paths.record_file(scale, fid)
    if not os.path.exists(path):
        return None
    try:
        return read_record(path) if checked else json.loads(open(path, encoding="utf-8").read())
    except ValueError as err:  # a damaged or edited record: one line naming it
        if not checked:
            return None
        raise WorkflowError(f"{fid}: {err}")


_CELLS = {}


def cell(scale, key):
    """The cell spec of run key ``key`` at ``scale`` (every figure's cells, indexed once per scale)."""
    if scale not in _CELLS:
        _CELLS[scale] = {}
        for fid in ALL_IDS:
            fig = figure(scale, fid)
            for s in fig["series"] + fig.get("pending_series", []):  # a pending reading's cells: by key
                _CELLS[scale].setdefault(s["key"], s["cell"])
    if key not in _CELLS[scale]:
        raise WorkflowError(f"no registered cell has key {key} at scale {scale}")
    return _CELLS[scale][key]


def figure_document(scale, fid):
    """The resolved figure its jobs read (rule resolve_figure), with each cell's algorithms stamp."""
    fig = figure(scale, fid)
    return registry.figure_document(fig, config["seeds_per_job"], cells.figure_stamps(fig))


def fid_of(w):
    return f"{w.paper}-{w.fig}"


def entry(w):
    """Registry entry of the figure a job's wildcards name (clear error for unknown ids)."""
    fid = fid_of(w)
    if fid not in REGISTRY:
        raise WorkflowError(f"unknown figure id {fid!r}; known ids: {', '.join(ALL_IDS)}")
    return REGISTRY[fid]


def data_inputs(w):
    """Files of the datasets a figure reads.  Required datasets (registry ``data:``) are checked
    (present, SHA-256) while the DAG is built, so a missing or wrong file stops the run before any
    job starts.  Optional datasets (``optional_data:``) never stop a run when absent: the figure is
    built without them and says "data absent"; their files are inputs only when all are present
    (then checked like the others), so adding them later rebuilds the figure."""
    e = entry(w)
    names, optional = e.get("data", []), e.get("optional_data", [])
    if not names and not optional:
        return []
    root = data_root()
    present = [n for n in optional if data.present(n, root)]
    try:
        extra = data.verify(present, root) if present else []
    except data.DataError as err:  # there, but not the expected file: never used silently
        raise WorkflowError(
            f"{fid_of(w)} cannot be built: {err}. Nothing was run or deleted; the dataset is "
            f"optional: move its files out of data_dir to build {fid_of(w)} without it"
        )
    try:
        return required_data(names) + extra
    except data.DataError as err:
        raise WorkflowError(
            f"{fid_of(w)} cannot be built: {err}. Nothing was run or deleted; to build the "
            f"rest without it: --config skip='[{fid_of(w)}]'"
        )


def required_data(names):
    """Input files of the datasets ``names``, checked (present, SHA-256; else data.DataError); with
    data_fetch=true the records of rule fetch_data, which downloads what is missing and checks it."""
    if config_flag("data_fetch"):
        return [f"results/data/{name}.sha256" for name in names]
    # config["data_dir"] as given, so that a message names it as the user wrote it
    return data.verify(names, config["data_dir"], base=workflow.basedir) if names else []


def cell_data_inputs(cell_spec, what):
    """Input files of a simulation job of ``cell_spec`` (``what`` names the job in messages): the files
    of the datasets its environment reads (``Environment.datasets``), checked (present, SHA-256) while
    the DAG is built, and the rule-made files it reads (``Environment.derived_inputs``).  A required
    dataset that is missing or wrong stops the run before any job starts."""
    names = cells.cell_datasets(cell_spec)
    derived = cells.cell_derived_inputs(cell_spec)
    if not names:
        return derived
    try:
        return required_data(names) + derived
    except data.DataError as err:
        users = [
            i for i in ALL_IDS if set(names) & set(REGISTRY[i].get("data", []) + REGISTRY[i].get("optional_data", []))
        ]
        raise WorkflowError(
            f"{what} cannot run: {err}. Nothing was run or deleted; to build the rest without it: "
            f"--config skip='[{','.join(users)}]'"
        )


def cell_data_option(cell_spec):
    """``--data-dir DIR`` for a simulation job whose environment reads datasets (else empty)."""
    return f"--data-dir {shlex.quote(data_root())}" if cells.cell_datasets(cell_spec) else ""


def data_root():
    """data_dir as an absolute path; a relative one is relative to the project root (the directory
    of the Snakefile), wherever snakemake is started from."""
    return str(data.absolute(config["data_dir"], base=workflow.basedir))


def data_option(w):
    """``--data-dir DIR`` for figures that read datasets (empty otherwise, so that moving data_dir
    reruns only those)."""
    if not (entry(w).get("data") or entry(w).get("optional_data")):
        return ""
    return f"--data-dir {shlex.quote(data_root())}"


def figure_targets(scale, ids):
    return [f"figures/{scale}/{i}.{ext}" for i in ids for ext in ("pdf", "png")]


# `snakemake --report report.html [targets]` never builds anything: it covers what was built.
REPORTING = any(a.split("=")[0] in ("--report", "--reporter") for a in sys.argv[1:])


def report_texts(scale):
    """The HTML report's first page (ensemble_bandits.landing; workflow/report/workflow.rst shows
    it), the verdicts of the records of the figures built at ``scale``, and each figure's claims for
    its caption (workflow/report/figure.rst): {"landing": reST, "claims": {id: reST}}."""
    from ensemble_bandits.landing import landing_rst
    from ensemble_bandits.records import read_record
    from ensemble_bandits.report import claims_rst, with_registry_notes

    def record(fid):  # published by `all`; a figure built alone leaves it staged
        published = paths.record_file(scale, fid)
        found = [p for p in (published, paths.staged(published)) if os.path.exists(p)]
        return found[0] if found else None

    ids = built_ids(scale)
    shown = [i for i in built_figures(scale, ids) if record(i)]
    try:
        records = with_registry_notes([read_record(record(i)) for i in shown], REGISTRY)
    except ValueError as err:  # a damaged or edited record: one line naming it, not a traceback
        raise WorkflowError(str(err))
    return {
        "landing": landing_rst(scale, records, not_built=[i for i in ids if i not in shown]),
        "claims": {r["id"]: claims_rst(r["id"], r["claims"]) for r in records},
    }


def built_figures(scale, ids):
    """Ids whose figure files exist at ``scale``."""
    return [i for i in ids if all(os.path.exists(f) for f in figure_targets(scale, [i]))]


def nothing_built(scale) -> WorkflowError:
    return WorkflowError(
        f"--report: no figure has been built at scale {scale!r} yet; build them first, "
        f"e.g. `snakemake --cores 2 all --config scale={scale}`, then run the report again"
    )


def built_only(scale, ids):
    """Ids whose figure files exist at ``scale`` (for --report), with a note of what is left out."""
    built = built_figures(scale, ids)
    if not built:
        raise nothing_built(scale)
    if len(built) < len(ids):
        left = [i for i in ids if i not in built]
        print(
            f"report: {len(built)} of {len(ids)} figures are built at scale {scale!r}; not built, so left "
            f"out: {', '.join(left)}",
            file=sys.stderr,
        )
    return built


def targets(scale, paper=None):
    ids = [i for i in built_ids(scale) if paper is None or REGISTRY[i]["paper"] == paper]
    summary = f"figures/{scale}/REPORT.md" if paper is None else f"figures/{scale}/REPORT-{paper}.md"
    if REPORTING:  # the figures built (REPORT.md would pull in every figure: it is not in the report)
        return figure_targets(scale, built_only(scale, ids))
    return figure_targets(scale, ids) + archive_targets(scale, ids) + [summary]


# checked while parsing: an error raised in rule all's input function would come with a traceback
if REPORTING and not built_figures(SCALE, built_ids(SCALE)):
    raise nothing_built(SCALE)


# SLURM runtime request: RUNTIME_SAFETY x the cost model's estimate, plus 10 minutes (job start-up,
# a slow node or a busy file system); the estimate is fitted on one machine, a node may be slower.
RUNTIME_SAFETY = 10


def cost_minutes(w):
    """SLURM runtime request (minutes) of a simulate job, from the cost model of its cell
    (costs.cell_cost_seconds), with a safety factor and a 10-minute floor."""
    seconds = costs.cell_cost_seconds(cell(w.scale, w.key), int(w.end) - int(w.start))
    return int(RUNTIME_SAFETY * seconds / 60) + 10


_COST_NOTICE = []


def requested_figures():
    """(scale, id) of each figure the command line's targets need: ``all`` (also the default
    target), a paper, a bare id, or a file under figures/<scale>/ or results/<scale>/ named after
    an id or a report.  Other targets (run files, rules) name no figure."""
    settings = getattr(workflow, "dag_settings", None)
    if settings is None or settings.target_jobs:  # a cluster job's own Snakemake: no notice
        return []
    wanted = []
    for target in settings.targets or ["all"]:
        target = os.path.relpath(target) if os.path.isabs(target) else os.path.normpath(target)
        parts = target.split(os.sep)
        if target == "all":
            wanted += [(SCALE, i) for i in built_ids(SCALE)]
        elif target in PAPERS:
            wanted += [(SCALE, i) for i in built_ids(SCALE) if REGISTRY[i]["paper"] == target]
        elif target in REGISTRY:
            wanted.append((SCALE, target))
        elif len(parts) >= 3 and parts[0] in ("figures", "results") and parts[1] in registry.SCALES:
            name = parts[-1].split(".")[0]
            if name == "REPORT":
                wanted += [(parts[1], i) for i in built_ids(parts[1])]
            elif name.startswith("REPORT-"):
                paper = name[len("REPORT-") :]
                wanted += [(parts[1], i) for i in built_ids(parts[1]) if REGISTRY[i]["paper"] == paper]
            elif name in REGISTRY:
                wanted.append((parts[1], name))
    return list(dict.fromkeys(wanted))


def announce_cost():
    """Once, while the DAG is built: when the simulations the requested targets still need (neither
    run files present nor cells a committed archive supplies) are estimated above costs.COST_NOTICE_S
    (1 CPU-hour), print their CPU time and job count (not for
    --report, which runs nothing)."""
    if _COST_NOTICE or REPORTING:
        return
    _COST_NOTICE.append(True)
    wanted = requested_figures()
    figs = [figure(scale, fid) for scale, fid in wanted]
    covered = {fid: archived_seeds(scale, fid) for scale, fid in wanted}
    current = {fid for scale, fid in wanted if own_archived(scale, fid)}
    notice = costs.cost_notice(
        figs,
        config["seeds_per_job"],
        exists=os.path.exists,
        covered=covered,
        groups=SHARED_GROUPS,
        current=current,
    )
    if notice:
        print(notice, file=sys.stderr, flush=True)


# Archives (ensemble_bandits.archive): at these scales the committed archives stand in for the run
# files of the cells they hold: a figure's own first, then other figures' (figures share cells).
ARCHIVE_SCALES = archive.ARCHIVE_SCALES


@functools.lru_cache(maxsize=None)
def archive_sources(scale, fid):
    """[(path, keys)]: the committed archives that supply cells of ``fid`` and which (none unless
    scale is in ARCHIVE_SCALES and config archives: use).  A damaged own archive stops the workflow;
    another figure's is passed over."""
    try:
        return tuple(archive.scale_sources(figure(scale, fid), scale, config.get("archives", "use") == "use"))
    except archive.ArchiveError as err:
        raise WorkflowError(f"{fid}: {err}")


def archived_seeds(scale, fid):
    """{key: seeds} of the cells of ``fid`` that committed archives supply, in full or their first
    seeds (none where its own archive is damaged: its aggregate job's input says so)."""
    try:
        return archive.held_seeds(archive_sources(scale, fid))
    except WorkflowError:
        return {}


def own_archived(scale, fid):
    """Whether the committed archive of ``fid`` itself supplies cells (its committed outputs stand)."""
    return fid in archive.current_ids([figure(scale, fid)], scale, config.get("archives", "use") == "use")


def archived_cells(scale, fid):
    """{(scale, key)} of the cells of ``fid`` that committed archives supply (:func:`archived_seeds`)."""
    return {(scale, k) for k in archived_seeds(scale, fid)}


def uncovered_runs(scale, fid):
    """Run files of ``fid`` at ``scale`` that no committed archive holds: those it simulates (of a cell
    whose archive holds its first seeds, the blocks after them: a fresh study's seeds)."""
    held = archive.held_seeds(archive_sources(scale, fid))
    runs = registry.figure_runs(figure(scale, fid), config["seeds_per_job"])
    return [f for f in runs if paths.run_seeds(f)[0] >= held.get(paths.run_key(f), 0)]


def simulation_runs(w):
    """Run files of the figure an aggregate job builds (after the cost notice, see above): those of
    the cells no committed archive holds."""
    announce_cost()
    return uncovered_runs(w.scale, fid_of(w))


def redrawn_option(w):
    """``--redrawn`` for a claims job whose figure simulates nothing (every cell from a committed
    archive, or no cells): its record keeps the run that made the numbers (ensemble_bandits.redraw)."""
    return "" if uncovered_runs(w.scale, fid_of(w)) else "--redrawn"


def archive_option(w):
    """``--archive PATH --archive-sha256 HASH`` per committed archive that supplies cells of the
    figure an aggregate job builds (a changed archive reruns the job), else empty."""
    return " ".join(
        f"--archive {shlex.quote(path)} --archive-sha256 {data.sha256(path)}"
        for path, _ in archive_sources(w.scale, fid_of(w))
    )


def archive_targets(scale, ids):
    """The archives `all` writes at ``scale`` (ARCHIVE_SCALES): one per simulated figure."""
    if scale not in ARCHIVE_SCALES:
        return []
    return [paths.archive_file(scale, i) for i in ids if figure(scale, i)["series"]]


def unknown_target_error(w):
    """Input function of the catch-all target (targets.smk): a bare word that is no id, paper or rule."""
    raise WorkflowError(
        f"unknown target {w.target!r}: a target is a figure id (e.g. snakemake phe-fig1, built at the configured "
        f"scale), a paper ({', '.join(PAPERS)}), all, or a file such as figures/<scale>/<id>.pdf; "
        f"known ids: {', '.join(ALL_IDS)}"
    )


# Timing jobs (simulate.smk): run alone, repeat.
def timing_job(w):
    """Whether a simulate job times its runs (its cell has ``timing: unbatched``)."""
    return cell(w.scale, w.key).get("timing") == "unbatched"


def local_cores():
    """A local run's --cores, or None (a cluster executor given no --cores: each job is its own
    allocation)."""
    try:
        return int(workflow.cores)
    except (WorkflowError, TypeError, ValueError):
        return None


def job_threads(w):
    """Threads of the job's simulation (cells.job_threads): config ``torch_threads`` for a
    torch agent's cell (same numbers at any count), 1 for the others and for timing jobs (their
    wall time is the result), capped at a local run's --cores."""
    n = 1 if timing_job(w) else cells.job_threads(cell(w.scale, w.key), config.get("torch_threads", 1))
    return min(n, local_cores() or n)


def simulate_threads(w):
    """The job's threads for scheduling: its simulation's (job_threads); for a timing job every
    core of a local run (--cores), so that it runs alone, or 1 without a local core count."""
    if not timing_job(w):
        return job_threads(w)
    return local_cores() or 1


def device_option(w):
    """`` --device cuda`` for jobs whose agent can use an accelerator when the config asks for the
    GPU (``device: cuda``) or the job requests one (``gpu``), else empty (cells.job_device).
    A parameter, so switching devices reruns those jobs only; the cell (and its key) stays the same."""
    dev = cells.job_device(cell(w.scale, w.key), str(config.get("device", "cpu")), config.get("gpu", 0))
    return f" --device {dev}" if dev else ""


def algorithms_stamp(w):
    """The version of the job's numbers (cells.run_stamp: the library's, its agent class's revision if
    any and, for a timing job, its timed runs per seed)."""
    return cells.run_stamp(cell(w.scale, w.key))


# The whole registry is resolved and checked here, while the workflow is parsed, at the configured
# scale and at each scale a target names: an error in any entry stops the run before any job, with
# one line.  In an input function it would stop only runs that need an unbuilt file: Snakemake takes
# an existing output whose producer's input function raises for a source, and says "Nothing to be
# done", so an edit to an already-built figure's entry would be ignored.
for _scale in dict.fromkeys([SCALE, *(s for s, _ in requested_figures())]):
    for _fid in ALL_IDS:
        figure(_scale, _fid)


# `--delete-all-output` deletes every output of the jobs of its targets, whatever their flags (write
# protection does not stop root): refused when those reach the committed paper results.
def reaches_paper(words):
    """Whether a command line's targets (or its configured scale) reach paper-scale files."""
    paths_named = [os.path.normpath(w).split(os.sep)[:2] for w in words if not w.startswith("-")]
    return "paper" in {SCALE, *(s for s, _ in requested_figures())} or any(
        p[0] in ("figures", "results") and p[1:] == ["paper"] for p in paths_named
    )


if "--delete-all-output" in sys.argv[1:] and reaches_paper(sys.argv[1:]):
    raise WorkflowError(
        "--delete-all-output would delete the committed paper results under figures/paper/ (records, archives, "
        "figures, REPORT.md); nothing was deleted. To clear the paper-scale caches delete results/paper/; to "
        "delete another scale's outputs name it (--config scale=smoke)"
    )


# Shared passes (ensemble_bandits.shared): the cells of the figures whose entry says
# `shared_pass: true` are played in groups that share an environment spec and horizon, one job per
# (group, seed block) writing every cell's run file (simulate.smk).  A cell's run file has the same
# numbers either way; the groups are fixed per scale by registry.shared_groups.  Only the configured
# scale gets group rules (resolving every scale's grids would slow every Snakemake start by about
# 3 s); run files of another scale, asked for by path, come from the per-cell rule, same numbers.
# Skipped figures take no part: their cells would otherwise ride along in every group that shares
# an environment with a built figure (epp-fig2b's groups are mostly epp-fig8 cells).
SHARED_IDS = [i for i in IDS if REGISTRY[i].get("shared_pass")]
SHARED_GROUPS = registry.shared_groups([figure(SCALE, i) for i in SHARED_IDS], config.get("shared_pass_group", 64))


def group_cost_minutes(group, w):
    """SLURM runtime request (minutes) of a shared-pass job, as cost_minutes for one cell."""
    seconds = costs.group_cost_seconds(group["cells"], int(w.end) - int(w.start))
    return int(RUNTIME_SAFETY * seconds / 60) + 10
