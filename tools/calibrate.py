"""The calibration table of the cost model (ensemble_bandits.calibration): print it, or refit a model's
constants on measured CPU seconds and print the new values beside the table's.

    python tools/calibrate.py                                   # the table: value, unit, fit date, refit command
    python tools/calibrate.py --refit neural_pp --scale paper   # on the simulate jobs' logs of this checkout
    python tools/calibrate.py --refit glm --only GD_RUN_FACTOR  # one constant, the others kept
    python tools/calibrate.py --refit neural_es --measure       # on short runs timed here and now

A refit is a non-negative least-squares fit on the relative error of the constants of the model that
enter a job's estimate linearly (``costs.cell_cost_seconds``, which each agent class's ``round_costs``
feeds): each constant's column is the estimate with that constant at 1 and the model's other fitted
constants at 0, the model's fixed constants (``calibration.FIXED``) and every other model's at their
values.  Jobs whose estimate none of the constants moves are left out.  The measurements are either the
CPU seconds the simulate jobs logged under ``results/<scale>/logs/simulate`` (what ``ensemble-bandits
timings --cells`` reads, the way the table's log-fitted constants were fitted) or, with ``--measure``,
the CPU seconds of the model's calibration cells (``MEASURE``) played here with ``runner.simulate_columns``
(on a quiet machine: a busy one inflates every constant).  It prints; it writes nothing: copy a value
into ``src/ensemble_bandits/calibration.py`` with today's date (estimates and SLURM runtimes change, no
simulated number does).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import time

import numpy as np

from ensemble_bandits import calibration, costs, registry, runner

# the constants a refit fits (the rest of a model's constants are tuples or tables by family, refitted by
# the measurement their entry names, or fixed)
FITTED = {
    "linear": ("COST_ROUND_S", "COST_SEED_ROUND_S", "COST_ARM_S", "COST_MEMBER_S"),
    "glm": ("GD_RUN_FACTOR",),
    "neural_es": ("NN_STEP_S", "NN_MAC_S", "NN_WIDTH_MAC_S", "NN_MATRIX_S", "NN_ROW_MAC_S"),
    "neural_pp": ("COST_ROUND_S", "COST_STEP_S", "COST_MAC_S", "COST_DRAW_S"),
}
MEASURED_PER_STEP = ("GD_CALL_S", "GD_MAC_S", "GD_SCORE_S", "GD_READ_S", "GD_SEED_S", "ROUND_S", "SEED_ROUND_S")
# calibration cells played by --measure: (cell, seeds)
_Q20 = {"name": "glmes_quadratic", "d": 20, "n_arms": 50, "noise_sd": 0.5}
_Q50 = {"name": "glmes_quadratic", "d": 50, "n_arms": 500, "noise_sd": 0.5}
_NES = {"m": 10, "lam": 1, "scale": 0.1, "L": 3, "N": 20}
_L20 = {"name": "sphere_logistic", "d": 20, "n_arms": 50, "noise_sd": 0.5}
_L50 = {"name": "sphere_logistic", "d": 50, "n_arms": 500, "noise_sd": 0.5}
_EPP = {"name": "epp_quadratic", "d": 100, "n_arms": 50, "pool": 1000}
MEASURE = {    # varied in seeds, sizes and steps, so that every constant of a model is told apart
    "neural_es": [({"env": env, "agent": {"name": n, **kw}, "horizon": T}, B) for env, T in ((_Q20, 150), (_Q50, 10))
                  for n, kw in (("neural_es", _NES), ("neural_ts", {"nu": 1.0, "lam": 1.0}),
                                ("neural_ucb", {"gamma": 1.0, "lam": 1.0}), ("neural_phe", {"lam": 1.0}),
                                ("neural_es_anytime", {**_NES, "T0": 50})) for B in (10, 20)]
    + [({"env": {"name": "sphere_contexts", "d": 20, "n_arms": 10}, "agent": {"name": "neural_es", **_NES},
         "horizon": T}, 3) for T in (300, 1000)],
    "glm": [({"env": env, "agent": {"name": n}, "horizon": T}, B) for env, T in ((_L20, 2000), (_L50, 200))
            for n in ("glm_es", "ucb_glm", "glm_tsl", "glm_fpl", "logts", "glm_ucb") for B in (1, 10)],
    "neural_pp": [({"env": _EPP, "agent": {"name": n, **kw}, "horizon": T}, B)
                  for n, kw in (("ensemble_pp_neural", {"M": 8}), ("ensemble_pp_neural", {"M": 8, "update": "gaussian"}),
                                ("ensemble_plus", {"M": 8}), ("epinet", {"M": 8}), ("greedy_neural", {"G": 4}))
                  for T, B in ((400, 10), (1000, 1))],
    "linear": [({"env": {"name": "russo_finite", "d": d, "n_arms": K}, "agent": {"name": n, **kw}, "horizon": 500}, B)
               for d, K in ((50, 1000), (10, 100)) for n, kw in (("lints", {}), ("linphe", {"a": 1.0}),
                                                                 ("ensemble_pp", {"M": 16}), ("ensemble_sampling", {"m": 16}))
               for B in (1, 20)],
}


def show_table(out=sys.stdout) -> None:
    for model, fit in calibration.FITS.items():
        print(f"\n## {model}  (read by {fit.reader})\nfitted on: {fit.on}\nrefit: {fit.refit}", file=out)
        for c in calibration.rows(model):
            note = f"  [{c.note}]" if c.note else ""
            print(f"  {c.name:26s} {c.value!s:>22s} {c.unit:14s} {c.fitted}  {c.counts}{note}", file=out)


@contextlib.contextmanager
def patched(model: str, values: dict):
    """The model's reader module with ``values`` in place of its constants, restored afterwards."""
    reader = importlib.import_module(calibration.FITS[model].reader)
    old = {name: getattr(reader, name) for name in values}
    try:
        for name, value in values.items():
            setattr(reader, name, value)
        yield
    finally:
        for name, value in old.items():
            setattr(reader, name, value)


def columns(model: str, names, job) -> tuple[float, np.ndarray]:
    """(the estimate with every fitted constant at 0, each constant's column) of ``job`` = (cell, seeds,
    shared)."""
    cell, n, shared = job
    zero = dict.fromkeys(names, 0.0)
    with patched(model, zero):
        offset = costs.cell_cost_seconds(cell, n, shared=shared)
    cols = []
    for name in names:
        with patched(model, {**zero, name: 1.0}):
            cols.append(costs.cell_cost_seconds(cell, n, shared=shared) - offset)
    return offset, np.array(cols)


def logged_jobs(scale: str, per_job: int, group_size: int, ids) -> list:
    """(cell, seeds, shared, CPU seconds) of every simulate job of this checkout with a log."""
    from ensemble_bandits.joblogs import JobLogs as _JobLogs

    entries = registry.load_registry()
    figs = {fid: registry.resolve(entries[fid], scale, {}) for fid in sorted(entries)}
    chosen = registry.match_ids(ids, sorted(figs), "id or pattern") if ids else sorted(figs)
    logged = _JobLogs(scale, figs, group_size)
    jobs = []
    for _fig, s in registry.unique_series([figs[f] for f in chosen]):
        for a, b in registry.seed_blocks(s["seeds"], per_job):
            t = logged.seconds(s["key"], a, b)
            if t is not None and t[1]:
                jobs.append((s["cell"], b - a, s["key"] in logged.group_of, float(t[1])))
    return jobs


def measured_jobs(model: str) -> list:
    """(cell, seeds, False, CPU seconds) of the model's calibration cells, each played here once."""
    jobs = []
    for cell, seeds in MEASURE[model]:
        t0 = time.process_time()
        runner.simulate_columns(cell, range(seeds))
        jobs.append((cell, seeds, False, time.process_time() - t0))
        print(f"  measured {cell['agent']['name']:20s} {cell['env']['name']:16s} T={cell['horizon']:<6d} "
              f"B={seeds:<3d} {jobs[-1][3]:9.2f} CPU s", file=sys.stderr, flush=True)
    return jobs


def refit(model: str, names, jobs: list, fixed: dict | None = None) -> dict:
    """Non-negative least squares of ``names`` on the relative error over ``jobs``; prints the fit."""
    from scipy.optimize import nnls

    rows, rhs, used = [], [], []
    with patched(model, fixed or {}):
        for cell, n, shared, seconds in jobs:
            offset, cols = columns(model, names, (cell, n, shared))
            if not cols.any():
                continue
            rows.append(cols / seconds)
            rhs.append(1.0 - offset / seconds)
            used.append((cell, n, shared, seconds, offset, cols))
    if len(used) < len(names):
        raise SystemExit(f"refit {model}: {len(used)} measured job(s) priced by {', '.join(names)}: too few to fit "
                         f"{len(names)} constant(s); run its cells first (or --measure)")
    new, _ = nnls(np.array(rows), np.array(rhs))
    old = np.array([calibration.constants(model, n) for n in names], dtype=float)
    print(f"refit of {model} on {len(used)} jobs (relative error, non-negative least squares):")
    for name, a, b in zip(names, old, new):
        print(f"  {name:18s} table {a:10.3g}   refit {b:10.3g}   ({b / a if a else float('inf'):.2f}x)")
    for label, c in (("table", old), ("refit", new)):
        ratios = np.array([(off + cols @ c) / sec for _cell, _n, _s, sec, off, cols in used])
        print(f"  model / measured with the {label} values: median {np.median(ratios):.2f}, "
              f"range {ratios.min():.2f}-{ratios.max():.2f}")
    return dict(zip(names, new))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--refit", choices=sorted(FITTED), help="refit this model's constants (default: print the table)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="refit only these constants (the others kept)")
    p.add_argument("--measure", action="store_true", help="on the model's calibration cells timed here, not on logs")
    p.add_argument("--scale", default="paper", help="the scale whose simulate logs to read (default paper)")
    p.add_argument("--seeds-per-job", type=int, default=50, help="as the run that wrote the logs (config: 50)")
    p.add_argument("--group-size", type=int, default=64, help="shared_pass_group of that run (config: 64)")
    p.add_argument("ids", nargs="*", help="figure ids or patterns whose jobs to read (default: all)")
    args = p.parse_args(argv)
    if not args.refit:
        show_table()
        return
    model = args.refit
    names = tuple(args.only or (MEASURED_PER_STEP if model == "glm" and args.measure else FITTED[model]))
    unknown = [n for n in names if (model, n) not in {(c.model, c.name) for c in calibration.TABLE}]
    if unknown:
        raise SystemExit(f"--only: no constant {', '.join(unknown)} in model {model}")
    # the GLM per-step constants are minima of short runs: fitted with the whole-run factor at 1
    fixed = {"GD_RUN_FACTOR": 1.0} if model == "glm" and "GD_RUN_FACTOR" not in names else None
    jobs = measured_jobs(model) if args.measure else logged_jobs(args.scale, args.seeds_per_job, args.group_size,
                                                                 args.ids)
    refit(model, names, jobs, fixed)


if __name__ == "__main__":
    main()
