"""Run times taken in turns: whole runs of several cells timed round-robin in one process.

In every pass each cell runs once (one seed, alone, as a timing cell times it), the order rotated
from pass to pass, so that a load that comes and goes on a shared machine falls on every cell alike.
Ratios of such times compare implementations on a loaded machine; they are a reading, not the
figure's timing (each run alone on an idle machine, ``timing: unbatched``)."""
from __future__ import annotations

import os

import numpy as np


def run_seconds(cell: dict, seed: int, data_dir=None) -> tuple:
    """(wall, CPU) seconds of one full run of ``cell`` for ``seed`` alone: every round played, after the
    environment and the agent are built.  The process's CPU time leaves out the time it waits for a core
    on a busy machine (what a shared core's contention adds to the wall time)."""
    import time

    from .runner import make_agent, make_env, play

    T = int(cell["horizon"])
    env = make_env(cell["env"], [seed], data_dir)
    agent = make_agent(cell["agent"], env.setting, [seed], T)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in play(env, agent, T):
        pass
    return time.perf_counter() - wall, time.process_time() - cpu


def interleaved(runs: dict, passes: int, seed_of=lambda p: p) -> dict:
    """{label: array (passes, ...) of what ``runs[label](seed)`` returns}: pass p calls every label's run
    with seed ``seed_of(p)``, starting at label p mod n (a rotated order: no label always runs first or
    right after another)."""
    labels = list(runs)
    times = {label: [None] * passes for label in labels}
    for p in range(passes):
        for i in range(len(labels)):
            label = labels[(p + i) % len(labels)]
            times[label][p] = runs[label](seed_of(p))
    return {label: np.asarray(t, dtype=float) for label, t in times.items()}


def summary(times: dict, reference: str) -> list:
    """Per label: median, quartiles, the ratio of its median to ``reference``'s and the median and
    quartiles over passes of the per-pass ratio (runs of the same pass, hence the same load)."""
    ref = np.asarray(times[reference])
    rows = []
    for label, t in times.items():
        t = np.asarray(t)
        q1, med, q3 = np.quantile(t, [0.25, 0.5, 0.75])
        r1, rmed, r3 = np.quantile(t / ref, [0.25, 0.5, 0.75])
        rows.append({"label": label, "passes": len(t), "median_s": float(med), "q1_s": float(q1),
                     "q3_s": float(q3), "ratio_of_medians": float(med / np.median(ref)),
                     "paired_ratio_median": float(rmed), "paired_ratio_q1": float(r1),
                     "paired_ratio_q3": float(r3)})
    return rows


def load_average() -> list:
    """The machine's 1, 5 and 15 minute load averages (empty where the system has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []
