"""Helpers shared by the test modules."""
import contextlib
import functools
import importlib.util
import math
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

from ensemble_bandits import runner


def run_history(agent, env, T):
    """Drive ``agent`` on ``env`` for T rounds with :func:`runner.play`; returns the pulled features
    (B, T, d) and rewards (B, T)."""
    X, Y = [], []
    for rnd in runner.play(env, agent, T):
        X.append(rnd.obs.chosen(rnd.arms).copy())
        Y.append(np.asarray(rnd.rewards).copy())
    return np.stack(X, axis=1), np.stack(Y, axis=1)


ROOT = Path(__file__).resolve().parents[1]


DATA_DIR = ROOT / "resources" / "data"  # the datasets shipped with the repository


def repo_data_dir() -> Path:
    """The datasets shipped with the repository (``resources/data``), wherever the checkout sits.
    Tests read them from here, never skip for want of them: a missing file is a failure."""
    return DATA_DIR


def copy_project(dst: Path) -> Path:
    """A copy of the workflow without outputs, caches or git metadata, as a fresh clone has it:
    the shipped datasets (``resources/``) included, and config/config.yaml unchanged (its relative
    ``data_dir`` resolves against the copy's root).  Covertype, not shipped, is left out even when
    it was fetched into the checkout."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in ("Snakefile", "config", "workflow", "profiles", "notebooks", "resources"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, dst / item, ignore=shutil.ignore_patterns("covertype", "__pycache__"))
        else:
            shutil.copy(src, dst / item)
    return dst


def reachable(obj, seen=None):
    """Every object reachable from ``obj`` through attributes, lists, tuples and dicts."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, types.ModuleType):    # a library (an agent's self.torch), not agent state: lazy
        return                                # modules (transformers) import on attribute access
    children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else \
        vars(obj).values() if hasattr(obj, "__dict__") and not isinstance(obj, type) else ()
    for child in children:
        yield from reachable(child, seen)


class Stop(Exception):
    """Stands for a kill: raised by an environment's step at a chosen round (:func:`stopping_at`)."""


@contextlib.contextmanager
def stopping_at(cell: dict, stop_round: int):
    """Inside the block, the cell's environment class raises :class:`Stop` in the step of round
    ``stop_round`` (class level, so nothing unpicklable enters a checkpoint); restored after it."""
    from ensemble_bandits.envs import ENVIRONMENTS

    cls = ENVIRONMENTS[cell["env"]["name"]]
    step, calls = cls.step, {"n": 0}

    def stepping(self, arms):
        calls["n"] += 1
        if calls["n"] == stop_round:
            raise Stop()
        return step(self, arms)

    cls.step = stepping
    try:
        yield
    finally:
        cls.step = step


def final_per_seed(df):
    """Rows of the last checkpoint of each seed of a simulated table."""
    from ensemble_bandits.stats import final_rows

    return final_rows(df, keys=("seed",))


def run_fresh_python(code: str, idle_s: float = 120) -> None:
    """Run ``code`` in a fresh interpreter (a clean ``sys.modules``) and assert that it printed "ok"
    as its last line (what an import check needs: nothing imported by the test process counts)."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s(idle_s))
    assert res.stdout.strip().endswith("ok"), res.stdout + res.stderr



# Wall-clock limits.  A test that starts a subprocess gives it a limit, so that a hang fails the test
# instead of stalling the suite; the limit is written for an idle 2-core machine and scaled here to
# the machine the tests run on, measured at the moment of the call: its CPU speed (a fixed loop's
# CPU time against this reference) times its load (the loop's wall time over its CPU time, and the
# load average per core).  A busy machine gets proportionally longer limits.  TIMEOUT_ENV overrides
# the measurement: a number is the factor itself, 0 (or "off") removes every limit.
TIMEOUT_ENV = "EB_TEST_TIMEOUT_FACTOR"
_LOOP, _LOOP_CPU_S = 2_000_000, 0.14   # CPU seconds of the loop on the reference machine


@functools.lru_cache(maxsize=1)
def _cpu_speed() -> float:
    """How many times slower than the reference this machine's CPU runs the loop (at least 1)."""
    best = math.inf
    for _ in range(3):
        c0, s = time.process_time(), 0
        for i in range(_LOOP):
            s += i * i
        best = min(best, time.process_time() - c0)
    return max(1.0, best / _LOOP_CPU_S)


def _load() -> float:
    """How many times longer a CPU-bound step takes now than on an idle machine (at least 1)."""
    t0, c0, s = time.perf_counter(), time.process_time(), 0
    for i in range(_LOOP // 10):
        s += i * i
    sampled = (time.perf_counter() - t0) / max(time.process_time() - c0, 1e-3)
    per_core = max(os.getloadavg()) / (os.cpu_count() or 1) if hasattr(os, "getloadavg") else 0.0
    return max(1.0, sampled, per_core)


def timeout_factor():
    """The factor applied to every limit (None: no limits), from TIMEOUT_ENV or measured now."""
    env = os.environ.get(TIMEOUT_ENV, "").strip().lower()
    if env in ("0", "off", "none"):
        return None
    if env:
        return float(env)
    return _cpu_speed() * _load()


def timeout_s(idle_s: float):
    """The wall-clock limit for a step that takes well under ``idle_s`` seconds on an idle 2-core
    machine, scaled to this machine now (see TIMEOUT_ENV); None where limits are off."""
    factor = timeout_factor()
    return None if factor is None else idle_s * factor


def timeout_argv(idle_s: float, kill_after_s: float = 10) -> list:
    """``timeout -k ... <limit>`` to put before a command line: :func:`timeout_s` for a shell
    wrapper (empty where limits are off)."""
    limit = timeout_s(idle_s)
    return [] if limit is None else ["timeout", "-k", str(kill_after_s), str(math.ceil(limit))]


def load_tool(name: str) -> types.ModuleType:
    """tools/<name>.py imported as a module (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_tool", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
