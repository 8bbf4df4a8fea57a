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

11. and 12. (also alone: --glmes) the glmes neural agents against their flop limit: on the fixed arm
   sets of glmes-fig1d, 1e, 2d and 4b (us per seed-round, the round's product flops, the limit at the
   measured fp32 / fp64 matmul rates, the ratio, the products alone at their shapes), and on the UCI
   bandits of glmes-fig5a-c, whose rounds grow with t: the same at t = 1,000 and 5,000, and each
   cell's paper-scale CPU-hours from those two rounds beside the cost model's.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys

import numpy as np

from .bench_neural import contexts_section, glmes_section, neural_section, readings_section, text_section
from .bench_numpy import (AGENTS, GRIDS, SHARED_GROUP, estimate, estimate_shared, glm_es_per_round, members_section,
                          per_step, phe_fig1_paper, shared_section)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="per-step costs only")
    p.add_argument("--shared", action="store_true", help="the shared pass only (section 6)")
    p.add_argument("--neural", action="store_true", help="the neural agents only (section 7)")
    p.add_argument("--text", action="store_true", help="the text bandit only (section 8)")
    p.add_argument("--members", action="store_true", help="linear Ensemble++'s member work only (section 9)")
    p.add_argument("--readings", action="store_true", help="neural Ensemble++ per reading only (section 10)")
    p.add_argument("--glmes", action="store_true",
                   help="the glmes neural agents against their flop limit only: on fixed arm sets (section 11) "
                        "and on the UCI bandits (section 12)")
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
        contexts_section(args.device)
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
    contexts_section(args.device)


if __name__ == "__main__":
    main()
