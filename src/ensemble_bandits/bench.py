"""Speed benchmark: prints figures, asserts nothing.

    python -m ensemble_bandits.bench            # all sections (a few minutes on 2 cores)
    python -m ensemble_bandits.bench --quick    # per-step costs only

1. microseconds per (instance, round) of LinTS, LinPHE (a = 1) and linear Ensemble++ (M = 16)
   at d = 20, K = 100 with 100 seeds batched (median of repeats), and the cost growth with t;
2. GLM-ES (also with --quick): microseconds per (instance, round) at d = 20, K = 50, m = 10, 100 GD
   steps, 50 seeds batched, at t ~ 10^3 and t ~ 10^4, and their ratio (per-arm statistics: the
   per-round cost should not grow with t; goal <= 1.5);
3. wall time of phe-fig1 at paper scale (every cell of the registry, run here, one core);
4., 5. the epp-fig8 and epp-fig2b grids at paper scale: every distinct cell timed on a sample of
   rounds, extrapolated to the paper's seeds and horizon, per cell and in shared passes;
6. the shared pass (also alone: --shared): microseconds per (agent, instance, round) at d = 50,
   |X| = 10,000, each cell run alone vs G cells in one pass, for several G and score-block sizes.

    python -m ensemble_bandits.bench --shared   # section 6 only
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from . import registry, shared
from .runner import _run_batch, _run_group_batch, checkpoints, make_agent, make_env, play, simulate

AGENTS = {
    "LinTS": {"name": "lints", "prior_var": 1.0, "noise_sd": 0.5},
    "LinPHE (a = 1)": {"name": "linphe", "a": 1.0},
    "Ensemble++ (M = 16)": {"name": "ensemble_pp", "M": 16, "reference": "gaussian", "perturbation": "sphere",
                            "prior_var": 1.0, "noise_sd": 0.5},
}


SHARED_GROUP = 64     # config/config.yaml shared_pass_group
GRIDS = {"epp-fig8 grid (8a-e share runs)": ["epp-fig8a", "epp-fig8b", "epp-fig8c", "epp-fig8d", "epp-fig8e"],
         "epp-fig2b grid": ["epp-fig2b"]}


def per_step(agent: dict, seeds: int = 100, horizon: int = 2000, repeats: int = 3, d: int = 20, K: int = 100):
    """Median microseconds per (instance, round) over ``repeats`` runs, and the per-round cost in
    rounds 10-20 % and 90-100 % of the horizon (growth with t)."""
    cell = {"env": {"name": "phe_linear", "d": d, "n_arms": K}, "agent": agent, "horizon": horizon}
    totals = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        simulate(cell, range(seeds), max_batch=seeds)
        totals.append(time.perf_counter() - t0)
    tenth = horizon // 10   # differences of timed runs cancel the set-up cost
    early = _timed_rounds(cell, seeds, 2 * tenth) - _timed_rounds(cell, seeds, tenth)
    late = _timed_rounds(cell, seeds, horizon) - _timed_rounds(cell, seeds, horizon - tenth)
    scale = 1e6 / (seeds * tenth)
    return 1e6 * statistics.median(totals) / (seeds * horizon), early * scale, late * scale


def _timed_rounds(cell, seeds, rounds):
    c = dict(cell, horizon=rounds)
    t0 = time.perf_counter()
    _run_batch(c, list(range(seeds)), checkpoints(rounds))
    return time.perf_counter() - t0


def figure_cells(fid: str, scale: str = "paper"):
    entry = registry.load_registry()[fid]
    fig = registry.resolve(entry, scale, {})
    return fig, registry.all_cells([fig])


def phe_fig1_paper() -> float:
    fig, cells = figure_cells("phe-fig1")
    t0 = time.perf_counter()
    for i, cell in enumerate(cells.values(), 1):
        c0 = time.perf_counter()
        simulate(cell, range(fig["seeds"]))
        print(f"    cell {i}/{len(cells)} ({cell['agent']['name']}, d = {cell['env']['d']}): "
              f"{time.perf_counter() - c0:.1f} s", flush=True)
    return time.perf_counter() - t0


def estimate(fids, sample_seeds: int = 10, sample_rounds: int = 60):
    """CPU seconds of the paper-scale cells of ``fids`` (shared cells once), extrapolated from
    timed samples of ``sample_rounds`` rounds (constant cost per round assumed)."""
    cells, seeds = {}, {}
    for fid in fids:
        fig, c = figure_cells(fid)
        cells.update(c)
        for s in fig["series"]:
            seeds[s["key"]] = max(seeds.get(s["key"], 0), s["seeds"])
    cost, total = {}, 0.0
    for key, cell in cells.items():
        env, agent = cell["env"], cell["agent"]
        kind = (tuple(sorted(env.items())), tuple(sorted((k, str(v)) for k, v in agent.items())))
        if kind not in cost:
            c = dict(cell, horizon=sample_rounds)
            t0 = time.perf_counter()
            _run_batch(c, list(range(sample_seeds)), checkpoints(sample_rounds))
            cost[kind] = (time.perf_counter() - t0) / (sample_seeds * sample_rounds)
        total += cost[kind] * seeds[key] * cell["horizon"]
    return total, len(cells), max(seeds.values())


def estimate_shared(fids, group_size: int, sample_seeds: int = 10, sample_rounds: int = 60):
    """As :func:`estimate`, with the cells played as the workflow plays them: in shared passes
    (registry.shared_groups) of at most ``group_size`` cells, each group timed on a sample."""
    figs = [figure_cells(fid)[0] for fid in fids]
    seeds = {s["key"]: s["seeds"] for fig in figs for s in fig["series"]}
    total = 0.0
    groups = registry.shared_groups(figs, group_size)
    for group in groups:
        cells = [dict(c, horizon=sample_rounds) for c in group["cells"]]
        t0 = time.perf_counter()
        _run_group_batch(cells, list(range(sample_seeds)), checkpoints(sample_rounds))
        per = (time.perf_counter() - t0) / (sample_seeds * sample_rounds * len(cells))
        total += sum(per * seeds[k] * c["horizon"] for k, c in zip(group["keys"], group["cells"]))
    return total, len(groups)


SHARED_ENV = {"name": "russo_finite", "d": 50, "n_arms": 10000}
SHARED_MS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)     # TS and Ensemble++ over M, as epp-fig2b / epp-fig8


def shared_cells(n: int, horizon: int) -> list:
    """``n`` cells on the d = 50, |X| = 10,000 environment: TS, then Ensemble++ over M and pairs."""
    pairs = [(r, p) for r in ("gaussian", "sphere", "coordinate") for p in ("sphere", "coordinate")]
    agents = [{"name": "lints", "prior_var": 10.0, "noise_sd": 1.0}]
    agents += [{"name": "ensemble_pp", "M": m, "reference": r, "perturbation": p} for (r, p) in pairs for m in SHARED_MS]
    agents = (agents * (-(-n // len(agents))))[:n]          # repeated beyond 61: separate agents all the same
    return [{"env": SHARED_ENV, "agent": a, "horizon": horizon} for a in agents]


def _round_time(rounds_played, skip: int, rounds: int) -> float:
    """Wall time of ``rounds`` rounds of a round loop, after ``skip`` untimed ones."""
    for _ in range(skip):
        next(rounds_played)
    t0 = time.perf_counter()
    for _ in range(rounds):
        next(rounds_played)
    return time.perf_counter() - t0


def shared_per_round(group: int, seeds: int, rounds: int = 20, score_bytes: int | None = None,
                     alone: bool = False, repeats: int = 2) -> float:
    """Microseconds per (agent, instance, round) of the first ``group`` cells of :func:`shared_cells`,
    in one shared pass or (``alone``) each cell on its own environment: rounds 6 .. 5 + ``rounds``
    timed (set-up and the first rounds not), the minimum of ``repeats`` (the machine may be busy)."""
    ids, T = list(range(seeds)), 5 + rounds
    cells = shared_cells(group, T)
    best = np.inf
    for _ in range(repeats):
        if alone:
            wall = 0.0
            for cell in cells:
                env = make_env(cell["env"], ids)
                wall += _round_time(play(env, make_agent(cell["agent"], env, ids, T), T), 5, rounds)
                del env
        else:
            env = make_env(SHARED_ENV, ids)
            agents = [make_agent(c["agent"], env, ids, T) for c in cells]
            wall = _round_time(shared.play_group(env, agents, T, score_bytes or shared.SCORE_BYTES), 5, rounds)
            del env, agents
        best = min(best, wall)
    return 1e6 * best / (group * seeds * rounds)


def scoring_per_agent(group: int, seeds: int = 8, repeats: int = 7) -> tuple[float, float]:
    """Microseconds per (agent, instance) of the arm scoring alone at d = 50, |X| = 10,000 (the
    product and the argmax, minimum of ``repeats``): one matrix-vector product per agent, and
    :func:`shared.greedy_many` of ``group`` agents."""
    env = make_env(SHARED_ENV, list(range(seeds)))
    obs = env.observe(1)
    agents = [make_agent({"name": "lints"}, env, list(range(seeds)), 1) for _ in range(group)]
    thetas = [np.random.default_rng(i).standard_normal((seeds, env.d)) for i in range(group)]

    def best(fn):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 1e6 * min(times)

    alone = best(lambda: agents[0].greedy(thetas[0], obs)) / seeds
    return alone, best(lambda: shared.greedy_many(agents, thetas, obs)) / (seeds * group)


def shared_section(seeds: int = 4, number: int = 6):
    print(f"\n{number}. shared pass, d = 50, |X| = 10,000, {seeds} seeds: microseconds per (agent, instance, round) "
          f"of G cells (TS, then Ensemble++ over M = 1 ... 1024 and 6 distribution pairs), each run alone "
          f"vs in one shared pass (score block {shared.SCORE_BYTES // 2 ** 20} MiB; at G = 32 also 1 and 16 MiB)",
          flush=True)
    for group in (8, 32, 64, 128, 250):
        alone, together = scoring_per_agent(group)
        print(f"   arm scoring only, G = {group:3d}: one product per agent {alone:6.1f}, shared {together:6.1f} "
              f"({alone / together:.1f}x)", flush=True)
    ts = shared_per_round(1, seeds, alone=True)
    print(f"   TS alone (one matrix-vector product per instance and round): {ts:8.1f}", flush=True)
    for group in (8, 16, 32, 64, 128, 250):
        alone = shared_per_round(group, seeds, alone=True)
        together = shared_per_round(group, seeds)
        print(f"   G = {group:3d}: alone {alone:8.1f}, shared {together:8.1f}  ({alone / together:.1f}x)", flush=True)
        if group == 32:
            for mib in (1, 16):
                us = shared_per_round(group, seeds, score_bytes=mib * 2 ** 20)
                print(f"            shared, score block {mib:2d} MiB: {us:8.1f}  ({alone / us:.1f}x)", flush=True)


GLM_ES = {"name": "glm_es", "m": 10}   # the paper's GLM-ES: 100 GD steps of 0.01, warm-up 500, lam = 1


def glm_es_per_round(seeds: int = 50, d: int = 20, K: int = 50, at=(1_000, 10_000), rounds: int = 20):
    """Microseconds per (instance, round) of GLM-ES on the logistic bandit: the median over ``rounds``
    timed rounds starting at each round of ``at``.  The rounds in between are played with 0 GD steps
    (the same data and bookkeeping, no fitting): the fit's cost depends on the size of the state,
    which per-arm statistics keep at (B, m, K) whatever t is."""
    ids = list(range(seeds))
    env = make_env({"name": "sphere_logistic", "d": d, "n_arms": K}, ids)
    agent = make_agent(GLM_ES, env.setting, ids, max(at) + rounds)
    steps, rounds_played, out = agent.steps, play(env, agent, max(at) + rounds), {}
    t = 0
    for start in sorted(at):
        agent.steps = 0
        while t < start - 1:
            next(rounds_played)
            t += 1
        agent.steps = steps
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            next(rounds_played)
            times.append(time.perf_counter() - t0)
        t += rounds
        out[start] = 1e6 * statistics.median(times) / seeds
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="per-step costs only")
    p.add_argument("--shared", action="store_true", help="the shared pass only (section 5)")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"machine: {os.cpu_count()} cores; numpy {np.__version__}")
    if args.shared:
        shared_section()
        return
    print("\n1. microseconds per (instance, round), d = 20, K = 100, 100 seeds batched, T = 2000")
    print(f"   {'agent':22s} {'median':>8s} {'rounds 10-20%':>14s} {'rounds 90-100%':>15s}")
    for label, agent in AGENTS.items():
        med, early, late = per_step(agent, repeats=args.repeats)
        print(f"   {label:22s} {med:8.2f} {early:14.2f} {late:15.2f}", flush=True)
    print("\n2. GLM-ES, microseconds per (instance, round): d = 20, K = 50, m = 10, 100 GD steps, 50 seeds "
          "batched, median of 20 timed rounds", flush=True)
    cost = glm_es_per_round()
    early, late = cost[1_000], cost[10_000]
    print(f"   t ~ 10^3: {early:8.1f}   t ~ 10^4: {late:8.1f}   ratio {late / early:.2f} (goal <= 1.5)", flush=True)
    if args.quick:
        return
    print("\n3. phe-fig1 at paper scale (18 cells x 100 seeds x 10,000 rounds), one core:", flush=True)
    wall = phe_fig1_paper()
    print(f"   total {wall:.0f} s on one core (about {wall / 2:.0f} s with 2 parallel jobs)")
    for n, (label, fids) in enumerate(GRIDS.items(), start=4):
        print(f"\n{n}. {label} at paper scale:", flush=True)
        total, cells, seeds = estimate(fids)
        print(f"   {cells} cells x up to {seeds} seeds x 1000 rounds: estimated {total / 3600:.1f} CPU-hours "
              f"({total / 3600 / 32:.2f} h on 32 cores), from timed samples of 60 rounds", flush=True)
        total, groups = estimate_shared(fids, SHARED_GROUP)
        print(f"   in shared passes ({groups} groups of <= {SHARED_GROUP} cells): estimated {total / 3600:.1f} "
              f"CPU-hours", flush=True)
    shared_section()


if __name__ == "__main__":
    main()
