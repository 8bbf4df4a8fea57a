"""Speed benchmark of the numpy agents (sections 1-6 and 9 of :mod:`bench`): per-step costs, GLM-ES per
round, paper-scale estimates of phe-fig1 and the epp-fig8 / epp-fig2b grids, the shared pass and linear
Ensemble++'s member work; and the round timers every section uses (:func:`round_time`)."""
from __future__ import annotations

import statistics
import time

import numpy as np

from . import registry, shared
from .distributions import VECTOR_FAMILIES
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
    rounds 10-20 % and 90-100 % of the horizon (growth with t), each the median over the runs."""
    cell = {"env": {"name": "phe_linear", "d": d, "n_arms": K}, "agent": agent, "horizon": horizon}
    tenth = horizon // 10
    runs = [_window_times(cell, seeds, [(tenth, 2 * tenth), (horizon - tenth, horizon)]) for _ in range(repeats)]
    total, early, late = (statistics.median(col) for col in zip(*runs))
    scale = 1e6 / (seeds * tenth)
    return 1e6 * total / (seeds * horizon), early * scale, late * scale


def _window_times(cell, seeds: int, windows) -> tuple:
    """One run of ``cell``: its wall seconds in all (set-up included), then the seconds spent in the
    rounds ``a < t <= b`` of each window: each round timed on its own and summed, so a window's time
    is never negative (a difference of two whole-run timings can be, on a busy machine)."""
    ids = list(range(seeds))
    t0 = time.perf_counter()
    env = make_env(cell["env"], ids)
    agent = make_agent(cell["agent"], env.setting, ids, cell["horizon"])
    spent = [0.0] * len(windows)
    last = time.perf_counter()
    for rnd in play(env, agent, cell["horizon"]):
        now = time.perf_counter()
        for i, (a, b) in enumerate(windows):
            if a < rnd.t <= b:
                spent[i] += now - last
        last = now
    return (last - t0, *spent)


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


def round_time(rounds_played, skip: int, rounds: int, clock=time.perf_counter) -> float:
    """Wall time (or ``clock``'s) of ``rounds`` rounds of a round loop, after ``skip`` untimed ones."""
    for _ in range(skip):
        next(rounds_played)
    t0 = clock()
    for _ in range(rounds):
        next(rounds_played)
    return clock() - t0


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
                wall += round_time(play(env, make_agent(cell["agent"], env, ids, T), T), 5, rounds)
                del env
        else:
            env = make_env(SHARED_ENV, ids)
            agents = [make_agent(c["agent"], env, ids, T) for c in cells]
            wall = round_time(shared.play_group(env, agents, T, score_bytes or shared.SCORE_BYTES), 5, rounds)
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


def members_per_round(reference: str, perturbation: str, d: int, M: int, seeds: int = 50, rounds: int = 30,
                      repeats: int = 2) -> tuple[float, float]:
    """Microseconds per (instance, round) of linear Ensemble++'s own work, ``propose`` and ``update``
    apart (the arm scoring and the environment not counted), on the compact sphere of dimension d,
    ``seeds`` seeds batched as in a workflow job: rounds 6 .. 5 + ``rounds``, minimum of ``repeats``."""
    ids, T = list(range(seeds)), 5 + rounds
    spec = {"name": "ensemble_pp", "M": M, "reference": reference, "perturbation": perturbation}
    best = (np.inf, np.inf)
    for _ in range(repeats):
        env = make_env({"name": "compact_sphere", "d": d}, ids)
        agent = make_agent(spec, env, ids, T)
        prop = upd = 0.0
        for t in range(1, T + 1):
            obs = env.observe(t)
            t0 = time.perf_counter()
            theta = agent.propose(t, obs)
            t1 = time.perf_counter()
            arms = agent.greedy(theta, obs)
            r = env.step(arms)[0]
            t2 = time.perf_counter()
            agent.update(t, obs, arms, r)
            t3 = time.perf_counter()
            if t > 5:
                prop, upd = prop + t1 - t0, upd + t3 - t2
        best = (min(best[0], prop), min(best[1], upd))
    return 1e6 * best[0] / (seeds * rounds), 1e6 * best[1] / (seeds * rounds)


def members_section(number: int = 9, d: int = 50, Ms=(64, 1024)):
    print(f"\n{number}. linear Ensemble++ per (instance, round), d = {d}, 50 seeds batched: propose + update "
          f"in microseconds (arm scoring not included), per reference x perturbation pair", flush=True)
    for M in Ms:
        print(f"   M = {M}: {'reference':10s} " + " ".join(f"{p:>20s}" for p in VECTOR_FAMILIES), flush=True)
        for ref in VECTOR_FAMILIES:
            cells = [members_per_round(ref, pert, d, M) for pert in VECTOR_FAMILIES]
            print(f"   {'':8s}{ref:10s} " + " ".join(f"{a:6.1f} + {b:6.1f} ={a + b:6.1f}" for a, b in cells),
                  flush=True)


GLM_ES = {"name": "glm_es", "m": 10}   # the paper's GLM-ES: 100 GD steps of 0.01, warm-up 500, lam = 1


def per_round_growth(env_spec: dict, agent_spec: dict, seeds: int, at=(1_000, 10_000), rounds: int = 20,
                     fit_attr: str = "steps") -> dict:
    """Microseconds per (instance, round) of a fitted agent: the median over ``rounds`` timed rounds
    starting at each round of ``at``.  The rounds in between are played with no fitting (the agent's
    ``fit_attr``, its steps per round, set to 0: the same data and bookkeeping): the fit's cost
    depends on the state the fit reads, which per-arm statistics keep at (B, m, K) whatever t is
    (GLM-ES, Neural-ES: "steps"), and which is the whole history for LMC-TS ("num_iter")."""
    ids = list(range(seeds))
    env = make_env(env_spec, ids)
    agent = make_agent(agent_spec, env.setting, ids, max(at) + rounds)
    steps, rounds_played, out = getattr(agent, fit_attr), play(env, agent, max(at) + rounds), {}
    t = 0
    for start in sorted(at):
        setattr(agent, fit_attr, 0)
        while t < start - 1:
            next(rounds_played)
            t += 1
        setattr(agent, fit_attr, steps)
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            next(rounds_played)
            times.append(time.perf_counter() - t0)
        t += rounds
        out[start] = 1e6 * statistics.median(times) / seeds
    return out


def glm_es_per_round(seeds: int = 50, d: int = 20, K: int = 50, at=(1_000, 10_000), rounds: int = 20):
    """Section 2: :func:`per_round_growth` of GLM-ES on the logistic bandit."""
    return per_round_growth({"name": "sphere_logistic", "d": d, "n_arms": K}, GLM_ES, seeds, at, rounds)
