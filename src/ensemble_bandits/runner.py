"""Lockstep simulation of one cell (environment spec, agent spec, horizon) over a block of seeds.

One loop over rounds, :func:`play`, drives all B seeds at once (the protocol of
:mod:`ensemble_bandits.protocol`)::

    obs = env.observe(t); arms = agent.select(t, obs); rewards, regret = env.step(arms)
    agent.update(t, obs, arms, rewards)

The result is a long table (seed, t, regret[, accuracy][, probe columns]) of cumulative pseudo-regret at
checkpoint rounds, plus per-seed wall time.  Seeds are split into memory-bounded
sub-batches; results do not depend on the split.  What is known of a cell without running it (its
checks, dimensions, batch size, seed block, version stamp) is in :mod:`ensemble_bandits.cells`.
"""
from __future__ import annotations

import json
import os
import sys
import time
from time import perf_counter as _split_clock   # the select/update clock (bound once: see _time_calls)
from time import perf_counter as _batch_clock   # a batch's own time, for its checkpoint (bound once, as above)

import numpy as np

from . import probes, shared
from .agents import AGENTS
from .cells import (check_group, checked_spec, group_batch_size, job_batches, run_identity, seed_chunks,
                    timing_repeats)
from .coupling import EXPERIMENTS
from .envs import ENVIRONMENTS
from .protocol import TIMED_PARTS, Setting, play


def _construct(kind: str, registry: dict, spec: dict, *args):
    cls, spec = checked_spec(kind, registry, spec, len(args))
    return cls(*args, **spec)


def make_env(spec: dict, seeds, data_dir=None):
    """The environment of ``spec`` for ``seeds``; one that reads datasets (``datasets(spec)``) gets
    ``data_dir`` (run time only: not part of the spec)."""
    cls, hyper_params = checked_spec("environment", ENVIRONMENTS, spec, 1)
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
                progress(rnd.t, T, last)
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
    parts = []
    for block, keep in job_batches(cell, seeds, max_batch):
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
    for block in seed_chunks(seeds, size):
        t0 = time.perf_counter()
        res = _run_group_batch(cells, block, cps, _progress(block) if verbose else None, score_bytes, data_dir)
        secs = (time.perf_counter() - t0) / (len(block) * len(cells))
        for part, cols in zip(parts, res):
            part.append(_long_table(block, cps, cols, secs))
    return [_concat(p) for p in parts]


def simulate_job(cell: dict, seeds: list, out, data_dir=None, device=None, checkpoint=None,
                 checkpoint_every: float | None = None) -> None:
    """One simulate job (``cli simulate``): ``cell`` (checked, :func:`cells.command_line_cell`) for a
    block of ``seeds``, written as the .npz run file ``out`` with the cell's ``cell.json`` beside it.
    ``device``: the agent's torch device (not part of the cell).  ``checkpoint``: the job's checkpoint
    file (:func:`checkpoint.job_checkpoint`; not for a timing cell, which must run uninterrupted),
    removed once the run file is written; a CheckpointError when the file is not this job's."""
    from .checkpoint import job_checkpoint
    from .joblogs import done_line
    from .malloc import keep_freed_memory

    keep_freed_memory()
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"simulate {os.path.basename(os.path.dirname(out))}: seeds {seeds[0]}..{seeds[-1]}, "
          f"T={cell.get('horizon', cell.get('experiment', {}).get('horizon'))}"
          + (f", device {device}" if device else ""), file=sys.stderr, flush=True)
    run = cell if not device else {**cell, "agent": {**cell["agent"], "device": device}}
    ckpt = None
    if checkpoint and cell.get("timing") != "unbatched" and "experiment" not in cell:
        ckpt = job_checkpoint(checkpoint, str(run_identity(cell, seeds)["_identity"]), checkpoint_every)
    _write_run(cell, seeds, simulate_columns(run, seeds, verbose=True, data_dir=data_dir, checkpoint=ckpt), out)
    if ckpt is not None:
        ckpt.remove()
    print(done_line(t0, c0, ckpt.spent if ckpt is not None else (0.0, 0.0)), file=sys.stderr)


def simulate_group_job(cells: list, seeds: list, outs: list, data_dir=None) -> None:
    """One job of a shared pass (``cli simulate-group``): the ``cells`` (one environment spec and
    horizon) for a block of ``seeds``, one pass, one .npz run file per cell (``outs``, in order)."""
    from .joblogs import done_line
    from .malloc import keep_freed_memory

    keep_freed_memory()
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"simulate-group: {len(cells)} cells on {json.dumps(cells[0]['env'], sort_keys=True)}, seeds "
          f"{seeds[0]}..{seeds[-1]}, T={cells[0]['horizon']}", file=sys.stderr, flush=True)
    # the cells' keys, so that `timings` can share this job's time among them whatever the grouping
    print(f"cells: {' '.join(os.path.basename(os.path.dirname(out)) for out in outs)}", file=sys.stderr,
          flush=True)
    for cell, cols, out in zip(cells, simulate_group_columns(cells, seeds, verbose=True, data_dir=data_dir), outs):
        _write_run(cell, seeds, cols, out)
    print(done_line(t0, c0), file=sys.stderr)


def _write_run(cell: dict, seeds: list, cols: dict, out) -> None:
    """The run file ``out`` of ``cell`` over ``seeds`` (its columns and identity) and ``cell.json`` beside it."""
    from .atomic import write_columns_atomic, write_text_atomic

    write_columns_atomic({**cols, **run_identity(cell, seeds)}, out)
    write_text_atomic(json.dumps(cell, indent=1, sort_keys=True), os.path.join(os.path.dirname(out), "cell.json"))


def _progress(block, every: float = 60.0):
    """A progress callback ``progress(t, T, since=0)`` for a batch of seeds: every tenth of the run and
    at least every ``every`` seconds, a line with the round, the elapsed time, the rate and the time
    left (a job's log shows how far it is and when it will end; `cli progress` counts a log written to
    lately as running).  ``since``: the rounds played before this process began (a resumed run's
    rate and time left count only the rounds it played itself)."""
    import time

    start = time.perf_counter()
    last = [start]

    def progress(t, T, since=0):
        now = time.perf_counter()
        if t == T or t % max(1, T // 10) == 0 or now - last[0] >= every:
            last[0] = now
            elapsed, done = now - start, t - since
            rate = f"{done / elapsed:,.0f}" if elapsed > 0 else "?"
            left = _duration((T - t) * elapsed / done) if done > 0 else "?"
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
