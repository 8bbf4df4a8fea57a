# Registry -> figures, cells and jobs.  All expansion logic lives in ensemble_bandits.pipeline.
import fnmatch
import json
import shlex

from snakemake.exceptions import WorkflowError

from ensemble_bandits import ALGORITHMS_VERSION, data, pipeline
from ensemble_bandits.report import rst_escape

SCALE = config["scale"]
try:
    REGISTRY = pipeline.load_registry("config", "workflow/schemas/registry.schema.yaml")
except pipeline.RegistryError as err:
    raise WorkflowError(f"invalid figure registry: {err}")
ALL_IDS = sorted(REGISTRY)
# `skip` (config): ids or glob patterns left out of `all`, the paper targets and REPORT.md, which
# lists them as not run (e.g. --config scale=paper skip='[epp-fig2b,epp-fig8*]').
SKIPPED = [i for i in ALL_IDS if any(fnmatch.fnmatch(i, pat) for pat in config.get("skip", []))]
IDS = [i for i in ALL_IDS if i not in SKIPPED]
PAPERS = ["phe", "lines", "glmes", "epp"]
_RESOLVED = {}


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
            _RESOLVED[scale, fid] = fig = pipeline.resolve(REGISTRY[fid], scale, config["scales"])
            pipeline.check_figure(REGISTRY[fid], fig, config["scales"])
        except (pipeline.RegistryError, ValueError) as err:
            _RESOLVED.pop((scale, fid), None)
            raise WorkflowError(f"invalid figure registry: {err}")
    return _RESOLVED[scale, fid]


def cell(scale, key):
    for fid in ALL_IDS:
        for s in figure(scale, fid)["series"]:
            if s["key"] == key:
                return s["cell"]
    raise WorkflowError(f"no registered cell has key {key} at scale {scale}")


def fid_of(w):
    return f"{w.paper}-{w.fig}"


def entry(w):
    """Registry entry of the figure a job's wildcards name (clear error for unknown ids)."""
    fid = fid_of(w)
    if fid not in REGISTRY:
        raise WorkflowError(f"unknown figure id {fid!r}; known ids: {', '.join(ALL_IDS)}")
    return REGISTRY[fid]


def data_inputs(w):
    """Files of the datasets a figure reads, checked (present, SHA-256) while the DAG is built, so
    a missing or wrong file stops the run before any job starts."""
    names = entry(w).get("data", [])
    if not names:
        return []
    if str(config.get("data_fetch", False)).lower() == "true":  # rule fetch_data downloads what is missing, then checks everything
        return [f"results/data/{name}.sha256" for name in names]
    try:
        return data.verify(names, config["data_dir"])
    except data.DataError as err:
        raise WorkflowError(f"{fid_of(w)} cannot be built: {err}. Nothing was run or deleted; to build the "
                            f"rest without it: --config skip='[{fid_of(w)}]'")


def data_root():
    return str(data.absolute(config["data_dir"]))


def data_option(w):
    """``--data-dir DIR`` for figures that read datasets (empty otherwise, so that moving data_dir
    reruns only those)."""
    if not entry(w).get("data"):
        return ""
    return f"--data-dir {shlex.quote(data_root())}"


def figure_targets(scale, ids):
    return [f"figures/{scale}/{i}.{ext}" for i in ids for ext in ("pdf", "png")]


def targets(scale, paper=None):
    ids = [i for i in IDS if paper is None or REGISTRY[i]["paper"] == paper]
    summary = f"figures/{scale}/REPORT.md" if paper is None else f"figures/{scale}/REPORT-{paper}.md"
    return figure_targets(scale, ids) + [summary]


def scales_json():
    return shlex.quote(json.dumps(config["scales"], sort_keys=True))


def cost_minutes(w):
    """SLURM runtime request of a simulate job: a rough cost model of the cell, with a floor."""
    c = cell(w.scale, w.key)
    if "experiment" in c:
        T, work = c["experiment"].get("horizon", 1000), 1.0
    else:
        T = c["horizon"]
        env = c["env"]
        work = env.get("d", 10) ** 2 + env.get("d", 10) * env.get("n_arms", 100)
        members = c["agent"].get("m", c["agent"].get("M", 1))
        members = T if members in ("T", "horizon") else members
        work += members * env.get("d", 10)
    seeds = int(w.end) - int(w.start)
    return max(10, int(3 * seeds * T * (20 + work / 50) * 1e-6 / 60) + 10)
