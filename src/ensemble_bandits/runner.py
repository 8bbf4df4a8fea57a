"""Lockstep simulation of one cell (environment spec, agent spec, horizon) over a block of seeds.

One loop over rounds, :func:`play`, drives all B seeds at once (the protocol of
:mod:`ensemble_bandits.protocol`)::

    obs = env.observe(t); arms = agent.select(t, obs); rewards, regret = env.step(arms)
    agent.update(t, obs, arms, rewards)

The result is a long table (seed, t, regret[, accuracy][, probe columns]) of cumulative pseudo-regret at
checkpoint rounds, plus per-seed wall time.  Seeds are split into memory-bounded
sub-batches; results do not depend on the split.
"""
from __future__ import annotations

import inspect
import sys
import time
from time import perf_counter as _split_clock   # the select/update clock (bound once: see _time_calls)
from time import perf_counter as _batch_clock   # a batch's own time, for its checkpoint (bound once, as above)

import numpy as np

from . import distributions as dist
from . import probes, shared
from .agents import AGENTS
from .coupling import EXPERIMENTS
from .envs import ENVIRONMENTS
from .protocol import TIMED_PARTS, Setting, play
from .registry import non_finite, shareable


# Constructor arguments given at run time, never by a spec (they must not enter a cell's key): the
# data directory of an environment that reads datasets (envs/base.py, "the data hook").
RUNTIME_ARGS = ("data_dir",)


def _checked(kind: str, registry: dict, spec: dict, n_args: int):
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


def _construct(kind: str, registry: dict, spec: dict, *args):
    cls, spec = _checked(kind, registry, spec, len(args))
    return cls(*args, **spec)


def check_cell(cell: dict) -> None:
    """Names and hyper-parameter keys of a cell, checked without simulating (the workflow calls this
    while building its job graph, so a registry typo fails before any job runs); the
    hyper-parameters that name a distribution family, and the action spaces an agent can play, are
    those the classes declare."""
    if "experiment" in cell:
        agent = dict(cell["experiment"])
        cls, _ = _checked("experiment", EXPERIMENTS, agent, 1)
        _checked("environment", ENVIRONMENTS, agent.get("env", {}), 1)
    else:
        check_value("cell", "horizon", cell.get("horizon"), 1, (1, None, True))     # rounds: an integer, at least 1
        env_cls, _ = _checked("environment", ENVIRONMENTS, cell["env"], 1)
        cls, _ = _checked("agent", AGENTS, cell["agent"], 3)
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


def make_env(spec: dict, seeds, data_dir=None):
    """The environment of ``spec`` for ``seeds``; one that reads datasets (``datasets(spec)``) gets
    ``data_dir`` (run time only: not part of the spec)."""
    cls, hyper_params = _checked("environment", ENVIRONMENTS, spec, 1)
    if cls.datasets(hyper_params):
        if data_dir is None:
            raise ValueError(f"environment {spec['name']!r} reads dataset(s) {', '.join(cls.datasets(hyper_params))}: "
                             f"give the data directory (cli simulate --data-dir DIR; the workflow passes data_dir)")
        return cls(seeds, data_dir=data_dir, **hyper_params)
    return cls(seeds, **hyper_params)


def make_agent(spec: dict, setting, seeds, horizon: int):
    """The agent of ``spec``, built from static facts: ``setting`` is a :class:`Setting`, or an
    environment of which only ``env.setting`` is passed on."""
    if not isinstance(setting, Setting):
        setting = setting.setting
    return _construct("agent", AGENTS, spec, setting, seeds, horizon)


def checkpoints(horizon: int, n_linear: int = 100, n_log: int = 40) -> np.ndarray:
    """Rounds at which cumulative regret is recorded: a linear and a geometric grid, and T."""
    lin = np.linspace(horizon / n_linear, horizon, n_linear)
    log = np.geomspace(1, horizon, n_log)
    pts = np.unique(np.concatenate([np.round(lin), np.round(log), [1, horizon]]).astype(np.int64))
    return pts[(pts >= 1) & (pts <= horizon)]


def algorithms_stamp(cell: dict) -> str:
    """The version of the numbers a cell's run gives: the library's ALGORITHMS_VERSION and, when its
    agent class has been revised since (``revision`` > 0), that class's revision."""
    from . import ALGORITHMS_VERSION

    cls = AGENTS.get(cell.get("agent", {}).get("name"))
    revision = getattr(cls, "revision", 0)
    return f"{ALGORITHMS_VERSION}; {cls.name} revision {revision}" if revision else ALGORITHMS_VERSION


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


def _time_calls(agent, spent: dict) -> None:
    """Wrap ``agent.select`` and ``agent.update`` (on the instance) so that their wall time accumulates
    in ``spent["select"]`` and ``spent["update"]``; nothing else about the agent changes.  The clock is
    bound when the module is imported, so a test that replaces ``time.perf_counter`` to fake a run's
    duration sees exactly the calls it expects."""
    select, update = agent.select, agent.update

    def timed_select(t, obs):
        t0 = _split_clock()
        arms = select(t, obs)
        spent["select"] += _split_clock() - t0
        return arms

    def timed_update(t, obs, arms, rewards):
        t0 = _split_clock()
        update(t, obs, arms, rewards)
        spent["update"] += _split_clock() - t0

    agent.select, agent.update = timed_select, timed_update


class _Record:
    """Cumulative pseudo-regret of one agent's batch, and its columns (regret[, regret_warmup][,
    accuracy][, probes]) at the checkpoint rounds ``cps``.  ``regret_warmup`` (an agent whose
    ``records_warmup`` is set, the doubling trick): the part of the regret from warm-up rounds.
    ``accuracy`` (an environment whose ``records_accuracy`` is set): the fraction of rounds 1..t whose
    action was optimal (zero pseudo-regret)."""

    def __init__(self, agent, n_seeds: int, cps, env=None):
        self.probe = probes.for_agent(agent)
        self.cum, self.cps, self.k = np.zeros(n_seeds), cps, 0
        self.cols = {"regret": []}
        self.warm = np.zeros(n_seeds) if getattr(agent, "records_warmup", False) else None
        if self.warm is not None:
            self.cols["regret_warmup"] = []
        self.hits = np.zeros(n_seeds) if getattr(env, "records_accuracy", False) else None
        if self.hits is not None:
            self.cols["accuracy"] = []

    def add(self, t: int, regret, agent, env) -> bool:
        """Add round ``t``'s regret; at a checkpoint, record the columns and return True."""
        self.cum += regret
        if self.warm is not None:
            self.warm += np.where(agent.in_warmup(t), regret, 0.0)
        if self.hits is not None:
            self.hits += regret <= 0
        if t != self.cps[self.k]:
            return False
        self.cols["regret"].append(self.cum.copy())
        if self.warm is not None:
            self.cols["regret_warmup"].append(self.warm.copy())
        if self.hits is not None:
            self.cols["accuracy"].append(self.hits / t)
        if self.probe is not None:
            for key, val in self.probe(agent, env).items():
                self.cols.setdefault(key, []).append(val)
        self.k += 1
        return True

    def columns(self) -> dict:
        return {key: np.array(v) for key, v in self.cols.items()}


def _run_batch(cell: dict, seeds, cps, progress=None, spent: dict | None = None, data_dir=None, ckpt=None):
    """Play ``cell`` for ``seeds`` in lockstep: columns (regret[, probes]) at the checkpoints ``cps``,
    and the seconds played.  ``spent``: a dict whose ``select`` and ``update`` entries accumulate the
    wall time of the agent's select and update calls (timing cells only: the clock reads add a little
    to the run); ``variates`` is set to the random numbers the agent's block streams handed out per
    seed (rng.Streams.taken).  ``data_dir``: for an environment that reads datasets
    (:func:`make_env`).  ``ckpt`` (:class:`checkpoint.Checkpoint`): resume the batch from its saved
    state if it has one, and save the state whenever it is due."""
    T = int(cell["horizon"])
    state = ckpt.resume(seeds) if ckpt is not None else None
    if state is None:
        env = make_env(cell["env"], seeds, data_dir)
        agent = make_agent(cell["agent"], env.setting, seeds, T)
        rec, last, before = _Record(agent, len(seeds), cps, env), 0, 0.0
    else:
        env, agent, rec, last, before = state
        print(f"  seeds {seeds[0]}-{seeds[-1]}: resumed after round {last} from {ckpt.path}", file=sys.stderr, flush=True)
    if spent is not None:
        _time_calls(agent, spent)
    t0 = _batch_clock()                 # bound at import: a test's fake perf_counter sees only its own calls
    with _arithmetic(agent):
        for rnd in play(env, agent, T, last + 1):
            if rec.add(rnd.t, rnd.regret, agent, env) and progress:
                progress(rnd.t, T)
            if ckpt is not None and ckpt.due() and rnd.t < T:
                ckpt.save((list(seeds), env, agent, rec, rnd.t, before + _batch_clock() - t0))
    if spent is not None and hasattr(agent, "streams"):
        spent["variates"] = agent.streams.taken()
    return rec.columns(), before + _batch_clock() - t0


def _arithmetic(agent):
    """The floating-point mode ``agent`` declares for its rounds (``agent.arithmetic()``; none by default)."""
    import contextlib

    mode = getattr(agent, "arithmetic", None)
    return mode() if mode else contextlib.nullcontext()


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


def _run_group_batch(cells: list, seeds, cps, progress=None, score_bytes: int = shared.SCORE_BYTES,
                     data_dir=None) -> list:
    """The shared pass (:mod:`ensemble_bandits.shared`) of ``cells`` for ``seeds``: one environment,
    every cell's agent in lockstep; per cell the columns :func:`_run_batch` returns."""
    T = int(cells[0]["horizon"])
    env = make_env(cells[0]["env"], seeds, data_dir)
    agents = [make_agent(c["agent"], env.setting, seeds, T) for c in cells]
    recs = [_Record(agent, len(seeds), cps, env) for agent in agents]
    for rnd in shared.play_group(env, agents, T, score_bytes):
        hit = [rec.add(rnd.t, regret, agent, env) for rec, regret, agent in zip(recs, rnd.regret, agents)]
        if hit[0] and progress:
            progress(rnd.t, T)
    return [rec.columns() for rec in recs]


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


def _same_numbers(a: dict, b: dict) -> bool:
    """Two runs' columns identical (bit for bit; NaN equal to NaN)."""
    return a.keys() == b.keys() and all(
        a[k].shape == b[k].shape and (np.array_equal(a[k], b[k]) or (a[k].dtype.kind == "f" and np.array_equal(
            a[k], b[k], equal_nan=True))) for k in a)


def _timed_columns(cell: dict, seeds: list, cps, repeats: int, verbose: bool, data_dir=None) -> dict:
    """One seed at a time, ``repeats`` passes over all seeds (a passing disturbance hits one run of
    several seeds, not every run of one seed); each run is timed alone, outside progress output.
    Every pass must give the same numbers (else a RuntimeError: timing would not be of the same run)."""
    import gc

    T = int(cell["horizon"])
    # warm caches and lazy imports so that the first timed run is not penalised
    _run_batch(dict(cell, horizon=min(T, 200)), seeds[:1], checkpoints(min(T, 200)), data_dir=data_dir)
    first, secs = {}, np.zeros((repeats, len(seeds)))
    parts = {part: np.zeros((repeats, len(seeds))) for part in TIMED_PARTS}
    variates = np.full(len(seeds), np.nan)
    for r in range(repeats):
        for i, seed in enumerate(seeds):
            gc.collect()
            spent = dict.fromkeys(TIMED_PARTS, 0.0)
            t0 = time.perf_counter()
            res, _ = _run_batch(cell, [seed], cps, spent=spent, data_dir=data_dir)
            secs[r, i] = time.perf_counter() - t0
            for part in TIMED_PARTS:
                parts[part][r, i] = spent[part]
            if r == 0:
                first[seed] = res
                variates[i] = spent.get("variates", np.nan)
            elif not _same_numbers(res, first[seed]):
                raise RuntimeError(f"timing repeat {r + 1} of seed {seed} gave other numbers than the first "
                                   f"run: a timed run must be the same run every time")
            if verbose:
                print(f"  timing pass {r + 1}/{repeats}: seed {seed} in {secs[r, i]:.3f} s", file=sys.stderr,
                      flush=True)
    n = len(cps)
    cols = {"seed": np.repeat(np.asarray(seeds, dtype=np.int64), n), "t": np.tile(cps, len(seeds))}
    for key in first[seeds[0]]:
        cols[key] = np.concatenate([first[s][key].T.reshape(-1) for s in seeds])
    cols["seconds"] = np.repeat(np.median(secs, axis=0), n)
    cols["seconds_min"] = np.repeat(secs.min(axis=0), n)
    cols["seconds_max"] = np.repeat(secs.max(axis=0), n)
    cols["seconds_repeats"] = np.full(n * len(seeds), repeats, dtype=np.int64)
    for part in TIMED_PARTS:                   # the agent's select / update time, median of the repeats
        cols[f"seconds_{part}"] = np.repeat(np.median(parts[part], axis=0), n)
    cols["variates"] = np.repeat(variates, n)  # random numbers of the whole run (hardware-free)
    return cols


def simulate_columns(cell: dict, seeds, max_batch: int | None = None, unbatched: bool | None = None,
                     verbose: bool = False, repeats: int | None = None, data_dir=None, checkpoint=None) -> dict:
    """Simulate ``cell`` for ``seeds``: the long table (seed, t, regret, ..., seconds) as numpy columns.

    Batched (the default): ``seconds`` is the wall time of the seed's batch divided by its size.
    Unbatched (a cell with ``timing: unbatched``, or ``unbatched=True``): every seed runs alone,
    ``repeats`` times (default :func:`timing_repeats`: 5 for a timing cell, 1 otherwise), each a full
    run of the seed, with identical numbers in every repeat (checked); ``seconds`` is the median of
    the seed's timed runs, ``seconds_min`` / ``seconds_max`` their spread, ``seconds_repeats`` their
    number, ``seconds_select`` / ``seconds_update`` the medians of the time spent in the agent's
    ``select`` and ``update`` calls (:data:`TIMED_PARTS`; only timed runs read that clock, so batched
    runs are untouched), and ``variates`` the random numbers the agent drew in the run (a measure of
    its sampling work that no hardware changes).  Wall-time columns all start with ``seconds``; apart
    from ``variates`` no other column depends on the mode.  ``data_dir``: the datasets directory, for
    an environment that reads datasets.  ``checkpoint`` (:class:`checkpoint.Checkpoint`, batched runs
    only): finished batches are taken from it, a saved batch resumes at its round, and the running
    batch's state is saved every few minutes (:mod:`ensemble_bandits.checkpoint`).
    """
    seeds = [int(s) for s in seeds]
    if "experiment" in cell:
        return _construct("experiment", EXPERIMENTS, dict(cell["experiment"]), seeds)
    T = int(cell["horizon"])
    cps = checkpoints(T)
    unbatched = cell.get("timing") == "unbatched" if unbatched is None else unbatched
    if unbatched:
        reps = timing_repeats(cell) if repeats is None else timing_repeats({"timing_repeats": repeats})
        return _timed_columns(cell, seeds, cps, reps, verbose, data_dir)
    fixed = seed_block(cell)
    parts = []
    for block, keep in (_fixed_blocks(seeds, fixed) if fixed else
                        ((b, None) for b in _blocks(seeds, max_batch or batch_size(cell, len(seeds))))):
        first = block[0]                              # the batch played: its key in the checkpoint
        if checkpoint is not None and first in checkpoint.done:
            parts.append(checkpoint.done[first])
            continue
        res, secs = _run_batch(cell, block, cps, _progress(block) if verbose else None, data_dir=data_dir,
                               ckpt=checkpoint)
        secs /= len(block)
        if keep is not None:
            block, res = [block[i] for i in keep], {k: v[:, keep] for k, v in res.items()}
        parts.append(_long_table(block, cps, res, secs))
        if checkpoint is not None:                    # kept on disk at once: a kill now loses no finished batch
            checkpoint.finish(first, parts[-1])
            checkpoint.save()
    return _concat(parts)


def seed_block(cell: dict) -> int | None:
    """The fixed seed block of ``cell``'s agent (:meth:`protocol.AgentClass.seed_block`), or None."""
    if "agent" not in cell:
        return None
    spec = dict(cell["agent"])
    cls = AGENTS[spec.pop("name")]
    return cls.seed_block(spec)


def _fixed_blocks(seeds: list, k: int):
    """(the whole aligned block of ``k`` seeds, indices of the asked ``seeds`` in it) for every block
    that holds an asked seed: the block is played whole, so a seed's numbers never depend on which
    seeds were asked for with it (:meth:`protocol.AgentClass.seed_block`)."""
    asked = set(seeds)
    for first in sorted({s - s % k for s in seeds}):
        block = list(range(first, first + k))
        yield block, [i for i, s in enumerate(block) if s in asked]


def simulate_group_columns(cells: list, seeds, max_batch: int | None = None, verbose: bool = False,
                           score_bytes: int = shared.SCORE_BYTES, data_dir=None) -> list:
    """The run tables of ``cells`` (one environment spec and horizon, :func:`check_group`) for
    ``seeds`` from one shared pass (:mod:`ensemble_bandits.shared`): per cell, the columns of
    :func:`simulate_columns` with the same numbers, except ``seconds``: the wall time of the
    pass's batch divided by its seeds and by the number of cells."""
    check_group(cells)
    seeds = [int(s) for s in seeds]
    cps = checkpoints(int(cells[0]["horizon"]))
    size = max_batch or group_batch_size(cells, len(seeds))
    parts = [[] for _ in cells]
    for block in _blocks(seeds, size):
        t0 = time.perf_counter()
        res = _run_group_batch(cells, block, cps, _progress(block) if verbose else None, score_bytes, data_dir)
        secs = (time.perf_counter() - t0) / (len(block) * len(cells))
        for part, cols in zip(parts, res):
            part.append(_long_table(block, cps, cols, secs))
    return [_concat(p) for p in parts]


def _blocks(seeds: list, size: int):
    return [seeds[start:start + size] for start in range(0, len(seeds), size)]


def _progress(block, every: float = 60.0):
    """A progress callback for a batch of seeds: every tenth of the run and at least every ``every``
    seconds, a line with the round, the elapsed time, the rate and the time left (a job's log shows
    how far it is and when it will end; `cli progress` counts a log written to lately as running)."""
    import time

    start = time.perf_counter()
    last = [start]

    def progress(t, T):
        now = time.perf_counter()
        if t == T or t % max(1, T // 10) == 0 or now - last[0] >= every:
            last[0] = now
            elapsed = now - start
            rate = f"{t / elapsed:,.0f}" if elapsed > 0 else "?"
            left = _duration((T - t) * elapsed / t) if t else "?"
            print(f"  seeds {block[0]}-{block[-1]}: round {t}/{T}, {_duration(elapsed)} elapsed, "
                  f"{rate} rounds/s, about {left} left", file=sys.stderr, flush=True)
    return progress


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    if seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _long_table(block, cps, res: dict, secs: float) -> dict:
    """One batch's columns (checkpoints x seeds) as the long table (seed, t, ..., seconds)."""
    n = len(cps)
    cols = {"seed": np.repeat(np.asarray(block, dtype=np.int64), n), "t": np.tile(cps, len(block))}
    for key, val in res.items():
        cols[key] = val.T.reshape(-1)
    cols["seconds"] = np.full(n * len(block), secs)
    return cols


def _concat(parts: list) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def simulate(cell: dict, seeds, **kw):
    """:func:`simulate_columns` as a pandas DataFrame."""
    import pandas as pd

    return pd.DataFrame(simulate_columns(cell, seeds, **kw))
