"""The cell: one environment spec, one agent spec (or a coupled experiment) and a horizon, the unit
of simulation and of caching.  Everything the project knows about a cell without running it lives
here: its names and hyper-parameters checked (:func:`check_cell`), its dimensions and memory
(:func:`cell_dimensions`, :func:`batch_size`), its seed block and timing repeats, the version of its
numbers (:func:`algorithms_stamp`, :func:`run_stamp`) and a run file's identity (:func:`identity_of`),
the datasets it reads and the job resources it asks for (threads, GPU, device).

Its key is :func:`registry.cell_key` (a short hash of its canonical JSON: the registry, which is pure,
computes it while it resolves a figure).  The runner (:mod:`runner`) only runs cells; the cost model,
the checks made while the workflow builds its job graph, archives and run files read their facts here.
The classes are named through the lazy catalogs (``agents.AGENTS``, ``envs.ENVIRONMENTS``): nothing
here imports torch."""
from __future__ import annotations

import inspect

import numpy as np

from . import distributions as dist
from .agents import AGENTS
from .coupling import EXPERIMENTS
from .envs import ENVIRONMENTS
from .registry import cell_key, non_finite, shareable


# Constructor arguments given at run time, never by a spec (they must not enter a cell's key): the
# data directory of an environment that reads datasets (envs/base.py, "the data hook").
RUNTIME_ARGS = ("data_dir",)


def checked_spec(kind: str, registry: dict, spec: dict, n_args: int):
    """The class named by ``spec`` and its hyper-parameters, or a ValueError naming the cause."""
    spec = dict(spec)
    name = spec.pop("name", None)
    if name not in registry:
        raise ValueError(f"unknown {kind} {name!r}; known {kind}s: {', '.join(sorted(registry))}")
    cls = registry[name]
    params = inspect.signature(cls.__init__ if inspect.isclass(cls) else cls).parameters
    # the leading parameters are filled positionally by ``args`` (seeds; or setting, seeds, horizon);
    # the rest are hyper-parameters (an experiment's own ``env`` and ``horizon`` among them)
    allowed = [p for p in params if p not in ("self", *RUNTIME_ARGS)][n_args:]
    bad = [k for k in spec if k not in allowed]
    if bad:
        raise ValueError(f"{kind} {name!r}: unknown hyper-parameter(s) {bad}; allowed: {allowed}")
    ranges = {**PARAM_RANGES, **getattr(cls, "param_ranges", {})}
    symbolic = getattr(cls, "symbolic_params", {})   # {key: names it also takes}, e.g. m: T (the horizon)
    for key, value in spec.items():
        if key in symbolic:
            if isinstance(value, str) and value not in symbolic[key]:
                raise ValueError(f"{kind} {name!r}: hyper-parameter {key} = {value!r} is not allowed: a number or "
                                 f"one of {', '.join(symbolic[key])}")
            if isinstance(value, str):
                continue
            check_value(f"{kind} {name!r}", key, value, 0.0, ranges.get(key))
        else:
            check_value(f"{kind} {name!r}", key, value, params[key].default, ranges.get(key))
    choices = getattr(cls, "choice_params", {})     # {key: the names it takes}, e.g. rank_by: prob, logit
    for key, value in spec.items():
        if key in choices and value not in choices[key]:
            raise ValueError(f"{kind} {name!r}: hyper-parameter {key} = {value!r} is not allowed: one of "
                             f"{', '.join(map(str, choices[key]))}")
    dist.check_spec(cls, spec)          # e.g. binomial_n given with a family other than binomial
    return cls, spec


# Ranges of the hyper-parameters that share a meaning across classes: (low, high, low included); a
# class may declare more, or narrower ones, as ``param_ranges``.  Types follow the defaults.
PARAM_RANGES = {
    "M": (1, None, True), "m": (1, None, True), "d": (1, None, True), "n_arms": (1, None, True),
    "noise_sd": (0, None, True), "prior_var": (0, None, False), "lam": (0, None, True),
    "scale": (0, None, True), "T0": (1, None, True), "b": (1, None, False),
}


def check_value(what: str, key: str, value, default, bounds=None) -> None:
    """A hyper-parameter's value checked against its default's type (an integer where the default is
    one, a number where it is a float, a string, a boolean) and ``bounds`` (low, high, low included):
    a ValueError naming the parameter, the value and what is allowed."""
    import numbers

    def fail(allowed):
        raise ValueError(f"{what}: hyper-parameter {key} = {value!r} is not allowed: {allowed}")

    if non_finite(value) is not None:
        fail("a finite number")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            fail("true or false")
    elif isinstance(default, int) and default is not inspect.Parameter.empty:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            fail("an integer")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            fail("a number")
    elif isinstance(default, str) and not isinstance(value, str):
        fail("a name (text)")
    if bounds and isinstance(value, numbers.Real) and not isinstance(value, bool):
        low, high, closed = bounds
        if low is not None and (value < low or (value == low and not closed)):
            fail(f"{'at least' if closed else 'more than'} {low}")
        if high is not None and value > high:
            fail(f"at most {high}")


def check_cell(cell: dict) -> None:
    """Names and hyper-parameter keys of a cell, checked without simulating (the workflow calls this
    while building its job graph, so a registry typo fails before any job runs); the
    hyper-parameters that name a distribution family, and the action spaces an agent can play, are
    those the classes declare."""
    if "experiment" in cell:
        agent = dict(cell["experiment"])
        cls, _ = checked_spec("experiment", EXPERIMENTS, agent, 1)
        checked_spec("environment", ENVIRONMENTS, agent.get("env", {}), 1)
    else:
        check_value("cell", "horizon", cell.get("horizon"), 1, (1, None, True))     # rounds: an integer, at least 1
        env_cls, _ = checked_spec("environment", ENVIRONMENTS, cell["env"], 1)
        cls, _ = checked_spec("agent", AGENTS, cell["agent"], 3)
        agent = cell["agent"]
        if env_cls.action_space not in cls.action_spaces:       # as the classes declare it
            raise ValueError(f"agent {agent['name']!r} cannot play environment {cell['env']['name']!r}: its action "
                             f"space {env_cls.action_space!r} is not one of the agent's {list(cls.action_spaces)}")
    for key, family in getattr(cls, "distribution_params", {}).items():
        if isinstance(agent.get(key), str):
            dist.check_name(agent[key], dist.FAMILIES[family])


def cell_dimensions(cell: dict) -> dict:
    """What the memory and cost models need of a cell, as its classes declare it: d, K, the
    ensemble size, the horizon and the number of runs per seed (2 for a coupled experiment, the
    timing repeats for a timing cell)."""
    if "experiment" in cell:
        exp = cell["experiment"]
        cls, env, spec, runs = EXPERIMENTS[exp["name"]], exp.get("env", {}), exp, 2
        horizon = int(exp.get("horizon", 1000))
    else:
        cls, env, spec, runs = AGENTS[cell["agent"]["name"]], cell["env"], cell["agent"], 1
        horizon = int(cell["horizon"])
    d, K = ENVIRONMENTS[env["name"]].dimensions(env)
    runs *= timing_repeats(cell)                    # a timing cell runs each seed several times
    return {"d": d, "K": K, "members": cls.ensemble_size(spec, horizon), "horizon": horizon, "runs": runs}


# Timed runs per seed of a `timing: unbatched` cell (fixed in advance; a cell may set its own
# `timing_repeats`).  Its `seconds` is their median; the workflow runs such a job alone.
TIMING_REPEATS = 5


def timing_repeats(cell: dict) -> int:
    """Timed full runs per seed of ``cell``: its ``timing_repeats``, else :data:`TIMING_REPEATS` for a
    ``timing: unbatched`` cell, else 1 (the cost model and the workflow's runtime request use it)."""
    if "timing_repeats" in cell:
        reps = cell["timing_repeats"]
        if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
            raise ValueError(f"timing_repeats must be an integer >= 1, got {reps!r}")
        return reps
    return TIMING_REPEATS if cell.get("timing") == "unbatched" else 1


def seed_block(cell: dict) -> int | None:
    """The fixed seed block of ``cell``'s agent (:meth:`protocol.AgentClass.seed_block`), or None."""
    if "agent" not in cell:
        return None
    spec = dict(cell["agent"])
    cls = AGENTS[spec.pop("name")]
    return cls.seed_block(spec)


def batch_size(cell: dict, n_seeds: int, budget_bytes: float = 1.5e9) -> int:
    """Seeds per numpy batch, bounded by a rough memory estimate of the cell; 1 for an agent class
    whose batched arithmetic is not bit-invariant to the batch (``batch_invariant = False``), so that
    a seed's numbers never depend on the seeds run with it."""
    if "agent" in cell and not getattr(AGENTS[cell["agent"]["name"]], "batch_invariant", True):
        return 1
    dims = cell_dimensions(cell)
    d, K, members = dims["d"], dims["K"], dims["members"]
    per_seed = 8.0 * (3 * K * d + 2 * members * d + 4 * d * d + K * members)
    return int(max(1, min(n_seeds, budget_bytes // per_seed, 256)))


def job_batches(cell: dict, seeds: list, max_batch: int | None = None) -> list:
    """The batches a (batched) job of ``cell`` over ``seeds`` plays, in order: (the seeds played
    together, indices of the asked seeds among them, or None for all); a batch's first seed is its key
    in the job's checkpoint."""
    fixed = seed_block(cell)
    if fixed:
        return list(_fixed_blocks(seeds, fixed))
    return [(b, None) for b in seed_chunks(seeds, max_batch or batch_size(cell, len(seeds)))]


def _fixed_blocks(seeds: list, k: int):
    """(the whole aligned block of ``k`` seeds, indices of the asked ``seeds`` in it) for every block
    that holds an asked seed: the block is played whole, so a seed's numbers never depend on which
    seeds were asked for with it (:meth:`protocol.AgentClass.seed_block`)."""
    asked = set(seeds)
    for first in sorted({s - s % k for s in seeds}):
        block = list(range(first, first + k))
        yield block, [i for i, s in enumerate(block) if s in asked]


def seed_chunks(seeds: list, size: int) -> list:
    """``seeds`` cut in order into batches of at most ``size``."""
    return [seeds[start:start + size] for start in range(0, len(seeds), size)]


def check_group(cells: list) -> None:
    """A ValueError unless ``cells`` can share one pass: agent cells (no coupled experiment, no
    timing cell) with one environment spec and one horizon."""
    if not cells:
        raise ValueError("a shared pass needs at least one cell")
    for c in cells:
        if not shareable(c):
            raise ValueError("a shared pass plays agent cells only (no experiment, no timing cell)")
        if seed_block(c):
            raise ValueError(f"agent {c['agent']['name']!r} computes in fixed seed blocks: it cannot join a shared pass")
        if c["env"] != cells[0]["env"] or int(c["horizon"]) != int(cells[0]["horizon"]):
            raise ValueError(f"cells of a shared pass need one environment and horizon; got {cells[0]['env']}, "
                             f"T={cells[0]['horizon']} and {c['env']}, T={c['horizon']}")


def group_batch_size(cells: list, n_seeds: int, budget_bytes: float = 1.5e9) -> int:
    """Seeds per numpy batch of a shared pass, bounded by a rough memory estimate: the environment
    once (arm features and their transpose), per agent its members, Gram matrices, tie-break
    jitter and stream buffers."""
    return int(max(1, min(n_seeds, budget_bytes // group_seed_bytes(cells), 256)))


def group_seed_bytes(cells: list) -> float:
    """Rough memory of one seed of a shared pass of ``cells`` (see :func:`group_batch_size`)."""
    dims = [cell_dimensions(c) for c in cells]
    d, K = dims[0]["d"], dims[0]["K"]
    return 8.0 * (2 * K * d + 2 * K + sum(3 * x["members"] * d + 4 * d * d + K + 4 * 4096 for x in dims))


def algorithms_stamp(cell: dict) -> str:
    """The version of the numbers a cell's run gives: the library's ALGORITHMS_VERSION and, when its
    agent class has been revised since, that class's revision on the cell's action space (``revision_of``)."""
    from . import ALGORITHMS_VERSION

    cls = AGENTS.get(cell.get("agent", {}).get("name"))
    env = ENVIRONMENTS.get(cell.get("env", {}).get("name"))
    revision = cls.revision_of(env.action_space) if cls is not None and env is not None else getattr(cls, "revision", 0)
    return f"{ALGORITHMS_VERSION}; {cls.name} revision {revision}" if revision else ALGORITHMS_VERSION


IDENTITY_FORMAT = 1


def run_stamp(cell: dict) -> str:
    """The version a simulate job of ``cell`` states (a rule parameter: a change reruns the job): its
    :func:`algorithms_stamp` and, for a timing cell, its timed runs per seed."""
    if cell.get("timing") != "unbatched":
        return algorithms_stamp(cell)
    reps = timing_repeats(cell)
    runs = "one timed run" if reps == 1 else f"median of {reps} runs"    # the wording of 5 is in committed stamps
    return f"{algorithms_stamp(cell)}; timing: {runs} per seed, run alone"


def figure_stamps(fig: dict) -> dict:
    """{key: :func:`algorithms_stamp`} of a resolved figure's cells, carried in the document its jobs
    read (``registry.figure_document``), so that they need no agent class to know a cell's version."""
    return {s["key"]: algorithms_stamp(s["cell"]) for s in fig.get("series", [])}


def stamp_of(fig: dict, key: str, cell: dict) -> str:
    """The algorithms stamp of the cell ``key`` of a resolved figure: the one its document carries
    (:func:`figure_stamps`), else computed (a figure resolved in this process)."""
    return fig.get("algorithms", {}).get(key) or algorithms_stamp(cell)


def run_identity(cell: dict, seeds: list) -> dict:
    """The identity a run file carries (tables.check_identity reads it back)."""
    return {"_identity": identity_of(cell, seeds)}


def command_line_cell(cell):
    """A cell given on the command line, its names and values checked (:func:`check_cell`): a
    ValueError of one line naming what is wrong instead of a traceback from inside the simulation."""
    if not isinstance(cell, dict) or not ("experiment" in cell or {"env", "agent"} <= set(cell)):
        raise ValueError("a cell is a JSON object with env, agent and horizon (or an experiment)")
    try:
        check_cell(cell)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"invalid cell: {err}") from None
    return cell


def identity_of(cell: dict, seeds, stamp: str | None = None) -> np.ndarray:
    """What a run file of ``cell`` over ``seeds`` is: its cell key, the algorithms version of its
    numbers (``stamp``, default :func:`algorithms_stamp`), its seed range and horizon, as a JSON
    string array (an npz entry ``_identity``)."""
    import json

    seeds = [int(s) for s in seeds]
    horizon = cell.get("horizon", cell.get("experiment", {}).get("horizon"))
    return np.array(json.dumps({"format": IDENTITY_FORMAT, "key": cell_key(cell),
                                "algorithms": stamp or algorithms_stamp(cell),
                                "seeds": [seeds[0], seeds[-1] + 1], "horizon": horizon}, sort_keys=True))


def param_count(cell: dict):
    """The number of network parameters of a cell's agent, as its class counts them
    (``param_count(spec, d)``: the neural Ensemble++ family, the paper's formulas), or None for an
    agent class without a count (and for an experiment cell)."""
    if "agent" not in cell:
        return None
    count = getattr(AGENTS[cell["agent"]["name"]], "param_count", None)
    if count is None:
        return None
    d, _ = ENVIRONMENTS[cell["env"]["name"]].dimensions(cell["env"])
    return int(count(cell["agent"], d))


def _cell_env(cell: dict):
    """(class, spec) of the environment of ``cell`` (a coupled experiment's included), or None for
    an unknown name (reported by the name checks)."""
    env = cell["experiment"].get("env", {}) if "experiment" in cell else cell["env"]
    return (ENVIRONMENTS[env["name"]], env) if env.get("name") in ENVIRONMENTS else None


def cell_datasets(cell: dict) -> list[str]:
    """Datasets the environment of ``cell`` reads at run time (``Environment.datasets``)."""
    found = _cell_env(cell)
    return list(found[0].datasets(found[1])) if found else []


def cell_derived_inputs(cell: dict) -> list[str]:
    """Rule-made files the environment of ``cell`` reads at run time (``Environment.derived_inputs``)."""
    found = _cell_env(cell)
    return list(found[0].derived_inputs(found[1])) if found else []


def uses_torch(cell: dict) -> bool:
    """Whether the cell's agent runs in torch and can use an accelerator (``uses_accelerator``: the
    neural agents)."""
    return getattr(AGENTS.get(cell.get("agent", {}).get("name")), "uses_accelerator", False)


def gpu_request(cell: dict, gpus) -> int:
    """GPUs a simulate job of ``cell`` requests: ``gpus`` (config ``gpu``, 0 = none) when its
    agent can use an accelerator, else 0."""
    return int(gpus) if gpus and uses_torch(cell) else 0


def job_threads(cell: dict, torch_threads=1) -> int:
    """CPU threads of a simulate job of ``cell``: ``torch_threads`` (config) when its agent runs in
    torch, whose numbers do not depend on it (tests/test_threads.py); else 1 (numpy agents, BLAS
    pinned to one thread: many such jobs run side by side)."""
    return max(1, int(torch_threads)) if uses_torch(cell) else 1


DEVICES = ("cpu", "cuda")


def job_device(cell: dict, device: str = "cpu", gpus=0) -> str | None:
    """The torch device a simulate job of ``cell`` runs its agent on: "cuda" when the config asks
    for it (``device: cuda``) or the job requests a GPU (:func:`gpu_request`), for agents that can
    use an accelerator and whose spec does not name a device itself; else None (the spec's device,
    the agent's default "cpu").  It is not part of the cell: the same cell on another device is the
    same experiment, whose float32 numbers may differ in the last bits."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if "device" in cell.get("agent", {}) or not uses_torch(cell):
        return None
    return "cuda" if device == "cuda" or gpu_request(cell, gpus) else None


def uniform_regret(spec: dict, seeds):
    """Per seed, the expected per-round regret of a uniformly random policy on the environment of
    ``spec`` (its ``uniform_regret``, exact, no simulation), or None for an environment without one."""
    if spec.get("name") not in ENVIRONMENTS or not hasattr(ENVIRONMENTS[spec["name"]], "uniform_regret"):
        return None
    cls, hyper_params = checked_spec("environment", ENVIRONMENTS, spec, 1)
    return cls(seeds, **hyper_params).uniform_regret()
