"""Speed benchmark of the torch agents (sections 7, 8, 10, 11 and 12 of :mod:`bench`): neural Ensemble++
and Neural-ES per round, the text bandit's heads and backbone, each round's matrix products against a
single-thread matmul's rate (on fixed arm sets and, growing with t, on the UCI bandits), and the cost
model's CPU-hours of every neural figure beside measured ones."""
from __future__ import annotations

from pathlib import Path
import statistics
import time

import numpy as np

from . import registry
from .bench_numpy import per_round_growth, round_time
from .runner import make_agent, make_env, play


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
        walls.append(round_time(play(env, make_agent(agent_spec, env.setting, ids, T), T), skip, rounds, clock))
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
        total += round_time(play(env, agent, T), skip, rounds) / rounds * T * -(-n_seeds // per_job)
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
    ``repeats`` (2 n^3 flops each), the limit a round's arithmetic is held against.  On the CPU timed
    in CPU time, as the rounds held against it, so that other processes on the cores do not lower it."""
    import torch

    dtype = dtype or torch.float32
    clock = time.process_time if device == "cpu" else time.perf_counter
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for _ in range(10):
            (a @ b).sum().item() if device != "cpu" else a @ b
        best = min(best, (clock() - t0) / 10)
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


def _recorder(calls: list):
    """A torch dispatch mode that runs every op and appends each matrix product to ``calls``: the aten
    op and its arguments, a tensor as (shape, stride, dtype)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    products = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in products:
                calls.append((func, [(tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor)
                                     else a for a in args], dict(kwargs or {})))
            return func(*args, **(kwargs or {}))

    return Record()


def round_products(cell: dict, seeds: int, skip: int) -> list:
    """The matrix products of round ``skip`` + 1 of a batch of ``seeds`` (as :func:`round_flops`), forward
    and backward (:func:`_recorder`)."""
    calls = []
    _play_round_under(cell, seeds, skip, _recorder(calls))
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
                ms = 1e3 * round_time(play(env, agent, skip + rounds), skip, rounds) / (rounds * len(ids))
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


def matmul_rates(device: str = "cpu") -> dict:
    """{dtype: :func:`matmul_rate`} for float32 and float64."""
    import torch
    return {torch.float32: matmul_rate(device=device), torch.float64: matmul_rate(device=device, dtype=torch.float64)}


def flop_limit(calls: list, seeds: int, rates: dict) -> tuple:
    """(fp32 flops, fp64 flops, microseconds at ``rates``) per seed of the products ``calls`` of a batch
    of ``seeds`` (:func:`product_flops`, :func:`matmul_rates`)."""
    import torch
    flops = product_flops(calls)
    f32, f64 = (flops.get(k, 0.0) / seeds for k in (torch.float32, torch.float64))
    return f32, f64, 1e6 * (f32 / rates[torch.float32] + f64 / rates[torch.float64])


def glmes_section(device: str = "cpu", seeds: int = 10, rounds: int = 4, skip: int = 2):
    """Section 11: the glmes neural agents on their fixed arm sets (the paper-scale cells of
    :data:`GLMES_FIXED_ARM`), one block of ``seeds`` batched: CPU microseconds per seed-round (process
    time on the CPU: the paper runs share the cores), the round's matrix-product flops per seed (float32 networks,
    float64 widths and U^-1), the limit (those flops at this machine's single-thread fp32 and fp64
    matmul rates, measured now), the ratio of the two, and the round's products alone at their own
    shapes (:func:`products_ms`: what small batched products cost over the limit's large one)."""
    import torch

    torch.set_num_threads(1)
    rates = matmul_rates(device)
    print(f"\n11. glmes neural agents on fixed arm sets, {device} (torch {torch.__version__}, 1 thread), {seeds} seeds "
          f"batched (the default: fixed seed blocks), CPU time of rounds {skip + 1}-{skip + rounds} (a round's work is "
          f"flat in t); limit = the round's product flops at the matmul rates measured now (256 x 256, best of 30), "
          f"fp32 {rates[torch.float32] / 1e9:.1f} and fp64 {rates[torch.float64] / 1e9:.1f} GFLOP/s; mm = the round's "
          f"products alone at their shapes", flush=True)
    entries, rows = registry.load_registry(), {}
    for fid in GLMES_FIXED_ARM:
        for s in registry.resolve(entries[fid], "paper", {})["series"]:
            if "agent" in s["cell"]:
                rows.setdefault(s["key"], (fid, s))
    width = max(len(s["curve"]) for _, s in rows.values())      # whole labels: fig2d's differ at the end
    print(f"   {'figure':12s} {'curve':{width}s} {'us/seed-rnd':>11s} {'MFLOP32':>8s} {'MFLOP64':>8s} {'limit us':>9s} "
          f"{'ratio':>6s} {'mm us':>7s} {'mm/limit':>8s}", flush=True)
    clock = time.process_time if device == "cpu" else time.perf_counter   # CPU time: the cores are shared
    for fid, s in rows.values():
        cell = s["cell"]
        us = 1e3 * ms_per_round(cell["env"], _on(cell["agent"], device), seeds, rounds, skip, repeats=1,
                                clock=clock) / seeds
        calls = round_products({**cell, "agent": _on(cell["agent"], device)}, seeds, skip)
        f32, f64, limit = flop_limit(calls, seeds, rates)
        mm = 1e3 * products_ms(calls, device, repeats=3, clock=clock) / seeds
        print(f"   {fid:12s} {s['curve']:{width}s} {us:11.0f} {f32 / 1e6:8.1f} {f64 / 1e6:8.1f} {limit:9.0f} "
              f"{us / limit:6.2f} {mm:7.0f} {mm / limit:8.2f}", flush=True)


GLMES_CONTEXTS = ("glmes-fig5a", "glmes-fig5b", "glmes-fig5c")


def contexts_round(cell: dict, seeds: int, at=(1_000, 5_000), rounds: int = 2, data_dir=None, clock=time.process_time):
    """A glmes neural agent of ``cell`` on per-round contexts, one batch of ``seeds``: at each t of ``at``
    (the rounds before played without GD steps: the same history, :func:`bench_numpy.per_round_growth`'s
    way), the round's matrix products recorded (:func:`_recorder`), then ``rounds`` rounds timed by
    ``clock``: {t: (seconds per round of the batch, the recorded products)}."""
    ids = list(range(seeds))
    env = make_env(cell["env"], ids, data_dir)
    agent = make_agent(cell["agent"], env.setting, ids, max(at) + rounds + 1)
    steps, rounds_played, t, out = agent.steps, play(env, agent, max(at) + rounds + 1), 0, {}
    for start in sorted(at):
        agent.steps = 0
        while t < start - 1:
            next(rounds_played)
            t += 1
        agent.steps, calls = steps, []
        with _recorder(calls):
            next(rounds_played)
        times = []
        for _ in range(rounds):
            c0 = clock()
            next(rounds_played)
            times.append(clock() - c0)
        t += rounds + 1
        out[start] = (statistics.median(times), calls)
    return out


def contexts_section(device: str = "cpu", seeds: int = 10, at=(1_000, 5_000), rounds: int = 2):
    """Section 12: the glmes neural agents on the UCI bandits (:data:`GLMES_CONTEXTS`), whose GD steps run
    over the t past rounds, so a round's cost grows with t: CPU microseconds per seed-round at each t of
    ``at`` (:func:`contexts_round`), the round's product flops per seed, the limit at this machine's
    matmul rates and the ratio; then each cell's CPU-hours at paper scale from the measured rounds
    (a round's cost linear in t through the two points, summed over the horizon) beside the cost model's."""
    import torch

    from . import costs
    from .cells import uses_torch
    from .paths import project_root

    torch.set_num_threads(1)
    rates = matmul_rates(device)
    clock = time.process_time if device == "cpu" else time.perf_counter
    data_dir = str((project_root() or Path.cwd()) / "resources" / "data")
    print(f"\n12. glmes neural agents on the UCI bandits (per-round contexts), {device} (torch {torch.__version__}, "
          f"1 thread), {seeds} seeds batched, CPU time of a round at t (the rounds before played without GD steps); "
          f"limit = the round's product flops at the matmul rates measured now, fp32 {rates[torch.float32] / 1e9:.1f} "
          f"and fp64 {rates[torch.float64] / 1e9:.1f} GFLOP/s; CPU-h = the cell at paper scale, measured (cost linear "
          f"in t through the two points) and by the cost model", flush=True)
    print(f"   {'figure':12s} {'curve':11s} {'t':>5s} {'us/seed-rnd':>11s} {'MFLOP32':>8s} {'MFLOP64':>8s} "
          f"{'limit us':>9s} {'ratio':>6s} {'CPU-h':>6s} {'model':>6s}", flush=True)
    entries = registry.load_registry()
    for fid in GLMES_CONTEXTS:
        fig = registry.resolve(entries[fid], "paper", {})
        for s in fig["series"]:
            cell = {**s["cell"], "agent": _on(s["cell"]["agent"], device)}
            if not uses_torch(cell):
                continue
            points = contexts_round(cell, seeds, at, rounds, data_dir, clock)
            (t1, (c1, _)), (t2, (c2, _)) = sorted(points.items())
            slope = (c2 - c1) / (t2 - t1)
            T, blocks = int(cell["horizon"]), -(-int(s["seeds"]) // seeds)
            hours = blocks * (T * (c1 - slope * t1) + slope * T * (T + 1) / 2) / 3600
            model = costs.cell_cost_seconds(s["cell"], int(s["seeds"])) / 3600
            for n, (t, (secs, calls)) in enumerate(sorted(points.items())):
                f32, f64, limit = flop_limit(calls, seeds, rates)
                us = 1e6 * secs / seeds
                tail = f" {hours:6.1f} {model:6.1f}" if n else ""
                print(f"   {fid:12s} {s['curve'][:11]:11s} {t:5d} {us:11.0f} {f32 / 1e6:8.1f} {f64 / 1e6:8.1f} "
                      f"{limit:9.0f} {us / limit:6.2f}{tail}", flush=True)
