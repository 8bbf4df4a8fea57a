"""Speed benchmark: prints figures, asserts nothing.

    python -m ensemble_bandits.bench            # all sections (a few minutes on 2 cores)
    python -m ensemble_bandits.bench --quick    # per-step costs only

1. microseconds per (instance, round) of LinTS, LinPHE (a = 1) and linear Ensemble++ (M = 16)
   at d = 20, K = 100 with 100 seeds batched (median of repeats), and the cost growth with t (the
   rounds of 10-20 % and 90-100 % of the horizon, each round timed on its own: never negative);
2. GLM-ES (also with --quick): microseconds per (instance, round) at d = 20, K = 50, m = 10, 100 GD
   steps, 50 seeds batched, at t ~ 10^3 and t ~ 10^4, and their ratio (per-arm statistics: the
   per-round cost should not grow with t; goal <= 1.5);
3. wall time of phe-fig1 at paper scale (every cell of the registry, run here, one core);
4., 5. the epp-fig8 and epp-fig2b grids at paper scale: every distinct cell timed on a sample of
   rounds, extrapolated to the paper's seeds and horizon, per cell and in shared passes;
6. the shared pass (also alone: --shared): microseconds per (agent, instance, round) at d = 50,
   |X| = 10,000, each cell run alone vs G cells in one pass, for several G and score-block sizes;
7. the neural agents (also alone: --neural), on the CPU (and on a GPU with --device cuda): neural
   Ensemble++ on the quadratic bandit (d = 100, 50 of 1,000 arms offered, M = 8, 10 seeds batched),
   milliseconds per round including its gradient steps; Neural-ES (m = 10, 100 GD steps, d = 20,
   K = 50, 10 seeds) per round at t ~ 10^3 and t ~ 10^4 and their ratio (per-arm statistics; goal
   <= 1.5); and the cost model's paper-scale CPU-hours of every neural figure, beside, for the epp
   synthetic figures, the hours measured on a sample of rounds of each cell (measured_hours).

8. the text bandit (also alone: --text): milliseconds per round and seed of the epp-fig3d heads on
   frozen features (features cached once per corpus, here random stand-ins of the right shape) and of
   epp-fig16's frozen and finetuned backbone, and the cost model's paper-scale CPU-hours of every
   real-data and text figure.

9. linear Ensemble++'s own work (also alone: --members): microseconds per (instance, round) of its
   propose and update at d = 50, M = 64 and 1,024, 50 seeds batched, for each of the 25 reference x
   perturbation pairs of epp-fig8 (Coordinate and Sparse vectors touch 1 or 2 of the M columns).

    python -m ensemble_bandits.bench --shared   # section 6 only
    python -m ensemble_bandits.bench --neural   # section 7 only
    python -m ensemble_bandits.bench --text     # section 8 only
    python -m ensemble_bandits.bench --members  # section 9 only
    python -m ensemble_bandits.bench --readings # section 10 only

10. neural Ensemble++ on epp-fig3a's and epp-fig9a's Quadratic-family panels under each reading (the
   paper's G = 1, the authors' code's G = 4 / 20, ours): ms per round of 10 seeds batched after the
   first update, the round's MFLOP (its matrix products, forward and backward, as torch counts them), the
   limit (those flops at a single-thread fp32 matmul's rate, measured in the same run), their ratio,
   and the figure's CPU-hours under that reading by the cost model.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import shlex
import statistics
import sys
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


def _round_time(rounds_played, skip: int, rounds: int, clock=time.perf_counter) -> float:
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


EPP_QUADRATIC = {"name": "epp_quadratic", "d": 100, "n_arms": 50, "pool": 1000}
ENSEMBLE_PP_NEURAL = {"name": "ensemble_pp_neural", "M": 8, "reference": "sphere", "update": "coordinate",
                      "perturbation": "sphere", "prior_scale": 5.0, "posterior_scale": 1.0}   # epp-fig3a
NEURAL_ES = {"name": "neural_es", "m": 10, "lam": 1, "scale": 0.1, "L": 3, "N": 20}           # glmes-fig1e


def ms_per_round(env_spec: dict, agent_spec: dict, seeds: int, rounds: int, skip: int, repeats: int = 3,
                 clock=time.perf_counter) -> float:
    """Wall milliseconds (or ``clock``'s) per round of the whole batch: rounds skip+1 .. skip+rounds, the
    median of ``repeats`` fresh runs (set-up and the first ``skip`` rounds not timed)."""
    ids, T = list(range(seeds)), skip + rounds
    walls = []
    for _ in range(repeats):
        env = make_env(env_spec, ids)
        walls.append(_round_time(play(env, make_agent(agent_spec, env.setting, ids, T), T), skip, rounds, clock))
    return 1e3 * statistics.median(walls) / rounds


def neural_figures():
    """Ids whose paper-scale cells include an agent that can use an accelerator (torch)."""
    from .cells import uses_torch

    out = {}
    for fid, entry in sorted(registry.load_registry().items()):
        fig = registry.resolve(entry, "paper", {})
        if any(uses_torch(c) for c in registry.all_cells([fig]).values()):
            out[fid] = fig
    return out


def _on(agent_spec: dict, device: str) -> dict:
    """``agent_spec`` run on the torch ``device`` (the spec itself on the CPU, the default)."""
    return agent_spec if device == "cpu" else {**agent_spec, "device": device}


def measured_hours(fig: dict, per_job: int = 10, rounds: int = 10, device: str = "cpu") -> tuple[float, int]:
    """CPU-hours of a neural figure's paper-scale cells from a timed sample: each distinct cell played
    with one job's seeds (``per_job``) up to its first gradient steps, ``rounds`` rounds after them
    timed, times its horizon and number of jobs.  Cells that run seed by seed are left out (LMC-TS,
    whose rounds also grow with t: the whole history): (hours, cells left out)."""
    from .agents import AGENTS

    total, left_out = 0.0, 0
    for _, s in registry.unique_series([fig]):
        cell, n_seeds = s["cell"], s["seeds"]
        if not getattr(AGENTS[cell["agent"]["name"]], "batch_invariant", True):
            left_out += 1
            continue
        ids, T = list(range(min(per_job, n_seeds))), int(cell["horizon"])
        env = make_env(cell["env"], ids)
        agent = make_agent(_on(cell["agent"], device), env.setting, ids, T)
        skip = int(getattr(agent, "update_start", 1))
        total += _round_time(play(env, agent, T), skip, rounds) / rounds * T * -(-n_seeds // per_job)
        del env, agent
    return total / 3600, left_out


def history_growth(device: str = "cpu", at=(1_000, 10_000), rounds: int = 3) -> dict:
    """Spec 5.5's check of epp-fig9c's "bounded computational steps": the time of a round of
    Ensemble++ (a minibatch from a bounded buffer) and of LMC-TS (Langevin steps over the whole
    history) at t ~ 10^3 and 10^4, on the paper-scale cells of the Quadratic panel: {label: (us, us)}."""
    fig = registry.resolve(registry.load_registry()["epp-fig9c"], "paper", {})
    out = {}
    for _, s in registry.unique_series([fig]):
        cell = s["cell"]
        if cell["env"]["name"] != "epp_quadratic":
            continue
        agent = cell["agent"]
        attr = "num_iter" if agent["name"] == "lmcts" else "G"
        cost = per_round_growth(cell["env"], _on(agent, device), seeds=1, at=at, rounds=rounds, fit_attr=attr)
        out[s["curve"]] = (cost[min(at)], cost[max(at)])
    return out


def neural_section(device: str = "cpu"):
    """Section 7: neural Ensemble++ ms per round, Neural-ES cost growth with t, paper-scale CPU-hours."""
    from . import costs

    import torch

    torch.set_num_threads(1)        # as in the workflow's jobs (OMP_NUM_THREADS=1): one core each
    print(f"\n7. neural agents on {device} (torch {torch.__version__}, 1 thread)", flush=True)
    ms = ms_per_round(EPP_QUADRATIC, _on(ENSEMBLE_PP_NEURAL, device), seeds=10, rounds=200, skip=100)
    print(f"   Ensemble++ (M = 8), quadratic bandit d = 100, 10 seeds batched: {ms:.2f} ms per round incl. its "
          f"gradient steps (goal <= 1.5); a 10^5-round curve of 10 seeds: {ms * 1e5 / 60e3:.1f} min", flush=True)
    env = {"name": "glmes_quadratic", "d": 20, "n_arms": 50, "noise_sd": 0.5}
    cost = per_round_growth(env, _on(NEURAL_ES, device), seeds=10, rounds=5)
    early, late = cost[1_000], cost[10_000]
    print(f"   Neural-ES (m = 10, 100 GD steps, d = 20, K = 50, 10 seeds), ms per (instance, round): t ~ 10^3 "
          f"{early / 1e3:.2f}, t ~ 10^4 {late / 1e3:.2f}, ratio {late / early:.2f} (goal <= 1.5)", flush=True)
    for name, (early, late) in history_growth(device).items():
        print(f"   {name} on epp-fig9c's Quadratic cell (1 seed), ms per round: t ~ 10^3 {early / 1e3:.1f}, t ~ 10^4 "
              f"{late / 1e3:.1f}, ratio {late / early:.2f} (spec 5.5: flat for Ensemble++, linear in t for LMC-TS)",
              flush=True)
    print(f"   paper scale, hours: CPU-hours of this machine by the cost model (cli estimate), and for the epp "
          f"synthetic figures measured on {device} (hours of one process: 10 rounds after the first gradient step, "
          f"one job's 10 seeds, times the horizon and the jobs; LMC-TS cells left out: their rounds grow with t)",
          flush=True)
    for fid, fig in neural_figures().items():
        secs = costs.cost_summary(costs.run_costs([fig], 50))["seconds"]
        line = f"     {fid:14s} model {secs / 3600:8.1f}"
        if fid.startswith("epp-") and not any(c["env"]["name"] in ("uci_classification", "hate_speech")
                                               for c in registry.all_cells([fig]).values()):
            hours, left_out = measured_hours(fig, device=device)
            line += f"   measured {hours:6.1f}" + (f" (+ {left_out} LMC-TS cells)" if left_out else "")
        print(line, flush=True)


def matmul_rate(n: int = 256, repeats: int = 30, device: str = "cpu", dtype=None) -> float:
    """FLOP/s of one matrix product (n x n) @ (n x n) (fp32 unless ``dtype``) on one thread: the best of
    ``repeats`` (2 n^3 flops each), the limit a round's arithmetic is held against."""
    import torch

    dtype = dtype or torch.float32
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(10):
            (a @ b).sum().item() if device != "cpu" else a @ b
        best = min(best, (time.perf_counter() - t0) / 10)
    return 2 * n ** 3 / best


def round_flops(cell: dict, seeds: int, skip: int) -> float:
    """Flops of round ``skip`` + 1 of a batch of ``seeds`` (after the first update when ``skip`` is
    past ``update_start``), as torch counts them (torch.utils.flop_counter: the matrix products of the
    forward and backward passes; elementwise work is not counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    _play_round_under(cell, seeds, skip, counter)
    return float(counter.get_total_flops())


def _play_round_under(cell: dict, seeds: int, skip: int, mode) -> None:
    """Play rounds 1 .. ``skip`` of ``cell`` on a batch of ``seeds``, then round ``skip`` + 1 inside the
    context ``mode`` (a torch dispatch mode that counts or records it)."""
    ids = list(range(seeds))
    env = make_env(cell["env"], ids)
    rounds = play(env, make_agent(cell["agent"], env.setting, ids, skip + 1), skip + 1)
    for _ in range(skip):
        next(rounds)
    with mode:
        next(rounds)


def round_products(cell: dict, seeds: int, skip: int) -> list:
    """The matrix products of round ``skip`` + 1 of a batch of ``seeds`` (as :func:`round_flops`), forward
    and backward: per call the aten op and its arguments, a tensor as (shape, stride, dtype)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    products = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
    calls = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in products:
                calls.append((func, [(tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor)
                                     else a for a in args], dict(kwargs or {})))
            return func(*args, **(kwargs or {}))

    _play_round_under(cell, seeds, skip, Record())
    return calls


def products_ms(calls: list, device: str = "cpu", repeats: int = 20, clock=time.perf_counter) -> float:
    """Milliseconds of the products ``calls`` (:func:`round_products`) alone, each on random tensors of its
    recorded shapes and strides (a transposed or broadcast operand stays so): the best of ``repeats``
    passes over all of them.  The products' own floor at their shapes, against the limit's one large
    product."""
    import torch

    def operand(a):
        if not isinstance(a, tuple):
            return a
        shape, stride, dtype = a
        size = 1 + sum((n - 1) * st for n, st in zip(shape, stride))
        return torch.randn(size, dtype=dtype, device=device).as_strided(shape, stride)

    ready = [(func, [operand(a) for a in args], kwargs) for func, args, kwargs in calls]
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for func, args, kwargs in ready:
            func(*args, **kwargs)
        if device != "cpu":
            torch.cuda.synchronize()
        best = min(best, clock() - t0)
    return 1e3 * best


READING_FIGURES = ("epp-fig3a", "epp-fig9a")


def readings_section(device: str = "cpu", seeds: int = 10, rounds: int = 40):
    """Section 10: Ensemble++ on the Quadratic-family panels under each reading of epp-fig3a and
    epp-fig9a: ms per round of 10 seeds batched (after the first update), the round's flops
    (:func:`round_flops`) and their time at the single-thread fp32 matmul rate measured here (the
    limit), the ratio of the two, the time of the round's products alone at their own shapes
    (:func:`products_ms`: what small batched products cost over the limit's large one) and the
    cost model's CPU-hours of the figure's cells under that reading."""
    import torch

    from . import costs

    torch.set_num_threads(1)
    rate = matmul_rate(device=device)
    print(f"\n10. Ensemble++ per reading on {device} (torch {torch.__version__}, 1 thread), {seeds} seeds batched; "
          f"limit = the round's flops at the fp32 matmul rate measured now, {rate / 1e9:.1f} GFLOP/s", flush=True)
    print(f"   {'figure':10s} {'reading':28s} {'panel':18s} {'G':>3s} {'ms/round':>9s} {'MFLOP':>7s} {'limit ms':>9s} "
          f"{'ratio':>6s} {'mm ms':>6s} {'mm/limit':>8s} {'fig CPU-h':>10s}", flush=True)
    entries = registry.load_registry()
    for fid in READING_FIGURES:
        fig = registry.resolve(entries[fid], "paper", {})
        series = fig["series"] + fig.get("pending_series", [])   # a pending reading is timed too
        hours = {}                                              # the figure's cost-model CPU-hours per reading
        for x in series:
            r = x.get("reading", "")
            hours[r] = hours.get(r, 0.0) + costs.cell_cost_seconds(x["cell"], x["seeds"]) / 3600
        for s in series:
            if s["cell"].get("agent", {}).get("name") != "ensemble_pp_neural" or s["panel"] == "Neural":
                continue
            cell, reading = s["cell"], s.get("reading", "")
            start = int(cell["agent"].get("update_start", 128))
            ms = ms_per_round(cell["env"], _on(cell["agent"], device), seeds=seeds, rounds=rounds, skip=start)
            flops = round_flops(cell, seeds, start)
            limit = 1e3 * flops / rate
            mm = products_ms(round_products(cell, seeds, start), device)
            print(f"   {fid:10s} {reading or 'paper text':28s} {s['panel'][:18]:18s} {cell['agent'].get('G', 1):3d} "
                  f"{ms:9.2f} {flops / 1e6:7.1f} {limit:9.2f} {ms / limit:6.2f} {mm:6.2f} {mm / limit:8.2f} "
                  f"{hours[reading]:10.1f}", flush=True)


def _stand_in_features(cache_dir) -> None:
    """A features file of the hate-speech corpus with random stand-ins (the cost of a round does not
    depend on the values; the real file takes minutes to encode: rule embed_text)."""
    from . import text

    c = text.load_corpus()
    feats = np.random.default_rng(0).standard_normal((len(c.text), text.encoder("minilm").dim)).astype(np.float32)
    with open(text.embedding_file(cache_dir, c.sha256), "wb") as fh:
        np.savez(fh, features=feats, sha256=c.sha256)


def text_section(device: str = "cpu"):
    """Section 8: per-round cost of the text bandit's heads and backbones (on ``device``); paper-scale
    CPU-hours."""
    import tempfile

    import torch

    from . import costs
    from .paths import project_root

    torch.set_num_threads(1)
    entries = registry.load_registry()
    data_dir = str((project_root() or Path.cwd()) / "resources" / "data")
    print(f"\n8. the text bandit on {device} (1 thread), milliseconds per round and seed, 4 seeds batched", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        _stand_in_features(cache)
        for fid, rounds, skip in (("epp-fig3d", 400, 100), ("epp-fig16", 20, 25)):
            fig = registry.resolve(entries[fid], "paper", {})
            for series in fig["series"]:
                cell = series["cell"]
                env_spec = dict(cell["env"], cache_dir=cache) if cell["env"].get("features") != "tokens" else cell["env"]
                ids = list(range(4))
                env = make_env(env_spec, ids, data_dir)
                agent = make_agent(_on(cell["agent"], device), env.setting, ids, skip + rounds)
                ms = 1e3 * _round_time(play(env, agent, skip + rounds), skip, rounds) / (rounds * len(ids))
                print(f"   {fid:10s} {series['panel'][:18]:18s} {series['curve']:22s} {ms:8.2f}", flush=True)
    print("   paper scale, CPU-hours by the cost model (cli estimate; it over-estimates these cells 2-5x):",
          flush=True)
    for fid in ("glmes-fig5a", "glmes-fig5b", "glmes-fig5c", "glmes-fig5d", "epp-fig3c", "epp-fig9b", "epp-fig9c",
                "epp-fig3d", "epp-fig15", "epp-fig16"):
        secs = costs.cost_summary(costs.run_costs([registry.resolve(entries[fid], "paper", {})], 50))["seconds"]
        print(f"     {fid:14s} {secs / 3600:8.1f}", flush=True)


GLMES_FIXED_ARM = ("glmes-fig1d", "glmes-fig1e", "glmes-fig2d", "glmes-fig4b")


def product_flops(calls: list) -> dict:
    """Flops of the matrix products ``calls`` (:func:`round_products`) by dtype: 2 x the multiply-adds
    of each mm / bmm / addmm / baddbmm."""
    out = {}
    for func, args, _ in calls:
        a, b = [x for x in args if isinstance(x, tuple)][-2:]        # the two factors (an add's term first)
        n = int(np.prod(a[0][:-1])) * a[0][-1] * b[0][-1]
        out[a[2]] = out.get(a[2], 0.0) + 2.0 * n
    return out


def glmes_section(device: str = "cpu", seeds: int = 10, rounds: int = 4, skip: int = 2):
    """Section 11: the glmes neural agents on their fixed arm sets (the paper-scale cells of
    :data:`GLMES_FIXED_ARM`), one block of ``seeds`` batched: CPU microseconds per seed-round (process
    time on the CPU: the paper runs share the cores), the round's matrix-product flops per seed (float32 networks,
    float64 widths and U^-1), the limit (those flops at this machine's single-thread fp32 and fp64
    matmul rates, measured now), the ratio of the two, and the round's products alone at their own
    shapes (:func:`products_ms`: what small batched products cost over the limit's large one)."""
    import torch

    torch.set_num_threads(1)
    rates = {torch.float32: matmul_rate(device=device), torch.float64: matmul_rate(device=device, dtype=torch.float64)}
    print(f"\n11. glmes neural agents on fixed arm sets, {device} (torch {torch.__version__}, 1 thread), {seeds} seeds "
          f"batched (the default: fixed seed blocks), CPU time of rounds {skip + 1}-{skip + rounds} (a round's work is "
          f"flat in t); limit = the round's product flops at the matmul rates measured now (256 x 256, best of 30), "
          f"fp32 {rates[torch.float32] / 1e9:.1f} and fp64 {rates[torch.float64] / 1e9:.1f} GFLOP/s; mm = the round's "
          f"products alone at their shapes", flush=True)
    print(f"   {'figure':12s} {'curve':18s} {'us/seed-rnd':>11s} {'MFLOP32':>8s} {'MFLOP64':>8s} {'limit us':>9s} "
          f"{'ratio':>6s} {'mm us':>7s} {'mm/limit':>8s}", flush=True)
    entries, seen = registry.load_registry(), set()
    for fid in GLMES_FIXED_ARM:
        fig = registry.resolve(entries[fid], "paper", {})
        for s in fig["series"]:
            cell = s["cell"]
            if "agent" not in cell or s["key"] in seen:
                continue
            seen.add(s["key"])
            clock = time.process_time if device == "cpu" else time.perf_counter   # CPU time: the cores are shared
            us = 1e3 * ms_per_round(cell["env"], _on(cell["agent"], device), seeds, rounds, skip, repeats=1,
                                    clock=clock) / seeds
            calls = round_products({**cell, "agent": _on(cell["agent"], device)}, seeds, skip)
            flops = product_flops(calls)
            f32, f64 = (flops.get(t, 0.0) / seeds for t in (torch.float32, torch.float64))
            limit = 1e6 * (f32 / rates[torch.float32] + f64 / rates[torch.float64])
            mm = 1e3 * products_ms(calls, device, repeats=3, clock=clock) / seeds
            print(f"   {fid:12s} {s['curve'][:18]:18s} {us:11.0f} {f32 / 1e6:8.1f} {f64 / 1e6:8.1f} {limit:9.0f} "
                  f"{us / limit:6.2f} {mm:7.0f} {mm / limit:8.2f}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="per-step costs only")
    p.add_argument("--shared", action="store_true", help="the shared pass only (section 6)")
    p.add_argument("--neural", action="store_true", help="the neural agents only (section 7)")
    p.add_argument("--text", action="store_true", help="the text bandit only (section 8)")
    p.add_argument("--members", action="store_true", help="linear Ensemble++'s member work only (section 9)")
    p.add_argument("--readings", action="store_true", help="neural Ensemble++ per reading only (section 10)")
    p.add_argument("--glmes", action="store_true",
                   help="the glmes neural agents on fixed arm sets against their flop limit only (section 11)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="torch device of sections 7 and 8")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--page", default=None, metavar="FILE",
                   help="also write the output as a generated markdown page, e.g. docs/benchmark.md")
    args = p.parse_args(argv)
    if args.page:
        from . import pages

        command = shlex.join(["eb-bench", *(sys.argv[1:] if argv is None else argv)])   # as typed
        pages.write_page(args.page, "Benchmark", command, "Speed of the simulations (ensemble_bandits.bench; "
                         "docs/performance.md explains each section).", pages.captured(_run, args))
        return
    _run(args)


def _run(args):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .malloc import keep_freed_memory
    kept = keep_freed_memory()                       # as in the simulate jobs
    print(f"machine: {os.cpu_count()} cores; numpy {np.__version__}; large blocks kept in the heap: {kept}")
    if args.shared:
        shared_section()
        return
    if args.neural:
        neural_section(args.device)
        return
    if args.text:
        text_section(args.device)
        return
    if args.members:
        members_section()
        return
    if args.readings:
        readings_section(args.device)
        return
    if args.glmes:
        glmes_section(args.device)
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
    neural_section(args.device)
    text_section(args.device)
    members_section()
    readings_section(args.device)
    glmes_section(args.device)


if __name__ == "__main__":
    main()
