"""The calibration table: every fitted constant of the cost model in one place, with its value, unit,
what it counts, the date of its fit, what it was fitted to and the command that refits it.

The cost model (:mod:`ensemble_bandits.costs`) estimates a simulation job's CPU seconds from the cell's
dimensions; each model family counts its own work (its agent classes' ``round_costs``) and prices it
with the constants below.  The modules that read them bind them by name at import
(``constants(model, *names)``), so the numbers live here once:

- ``linear``: the default model of :mod:`ensemble_bandits.costs` (every agent without its own);
- ``glm``: the GLM fits of :mod:`ensemble_bandits.agents.glm_fit` (GLM-ES, LogPHE, GLM-UCB, ...);
- ``neural_es``: the Neural-ES family of :mod:`ensemble_bandits.agents.neural_es`;
- ``neural_pp``: the neural Ensemble++ family, :mod:`ensemble_bandits.agents.neural_pp.cost_model`.

``python tools/calibrate.py`` prints the table; ``python tools/calibrate.py --refit <model>`` refits a
model's constants that enter its cost linearly on the simulate jobs' logged CPU seconds
(``ensemble-bandits timings --cells`` reads the same logs), or on short runs timed there and then
(``--measure``), and prints the new values beside these.  A refit changes estimates and SLURM
runtime requests only, never a simulated number; copy a new value here with today's date.
"""
from __future__ import annotations

from dataclasses import dataclass

TIMINGS = "ensemble-bandits timings --scale paper --cells"


@dataclass(frozen=True)
class Fit:
    """How a model's constants were fitted: ``on`` what measurements, and the command that refits them."""

    reader: str          # the module that reads the constants (a refit patches its names)
    on: str
    refit: str


@dataclass(frozen=True)
class Constant:
    """One fitted constant: ``value`` (a number, a tuple of the coefficients of a small formula, or numbers by
    family), its
    ``unit`` (what one of it is worth), ``counts`` (what it prices) and the date of its fit."""

    model: str
    name: str
    value: float | tuple | dict
    unit: str
    counts: str
    fitted: str
    note: str = ""
    reader: str = ""     # "module:Class.attribute" where not the model's reader module's attribute ``name``

    def read(self):
        """The value its reader holds (the same object, unless a module was patched)."""
        import importlib

        module, _, attr = (self.reader or f"{FITS[self.model].reader}:{self.name}").partition(":")
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


FITS = {
    "linear": Fit(
        "ensemble_bandits.costs",
        "the paper-scale CPU seconds of the linear agents' jobs on a 2-core machine (docs/performance.md; "
        "phe-fig1 73 s, phe-runtime 310 s, lines-msweep 624 s, epp-fig2a 832 s, epp-fig6 599 s, ...) and the "
        "benchmark's estimates of the epp-fig2b and epp-fig8 grids: non-negative least squares on the relative "
        "error; within a factor of about 2 of each",
        f"python tools/calibrate.py --refit linear  (on the logs `{TIMINGS}` reads)"),
    "glm": Fit(
        "ensemble_bandits.agents.glm_fit",
        "glm_fit.gradient_descent and the GLM agents at d = 20, K = 50 and d = 50, K = 500 (B = 1 and 50) and the "
        "LinPHE paper's d = 5, 10, 20, K = 100, one core at a time while the other was busy (the minimum of "
        "repeats; tests/test_config_errors.py GLM_MEASURED_US); GD_RUN_FACTOR: the median ratio of whole "
        "paper-scale jobs to that sum (glmes-fig1c, glmes-fig4a; tests/test_config_errors.py GLM_MEASURED_JOBS)",
        "python tools/calibrate.py --refit glm --measure  (the per-step constants, on short timed runs); "
        "python tools/calibrate.py --refit glm --only GD_RUN_FACTOR  (the whole-job factor, on the logs)"),
    "neural_es": Fit(
        "ensemble_bandits.agents.neural_es",
        "the wall time of runner.simulate of one block of 10 seeds (20 for two blocks) over 150 rounds on the "
        "quadratic bandit with d = 20, K = 50 (N = 50 over 100 rounds) and 10 rounds with d = 50, K = 500, for "
        "neural_es, its doubling trick, neural_ts, neural_ucb and neural_phe, torch on one CPU thread, while two "
        "paper simulations kept both cores busy; within a factor 2 of each (tests/test_config_errors.py); "
        "NN_ROW_MAC_S from Neural-ES (m = 10, d = 63, K = 7, B = 3) on per-round contexts at t = 1000 and 5000",
        "python tools/calibrate.py --refit neural_es --measure"),
    "neural_pp": Fit(
        "ensemble_bandits.agents.neural_pp.cost_model",
        "the CPU seconds of the paper-scale jobs of epp-fig3a, 3b, 10, 11 and 12a-c (38 jobs of 10 seeds, "
        "10^4-10^5 rounds, idle 2-core machine, torch 2.13 CPU, one thread, float32): non-negative least squares "
        "of the four constants on the relative error; model / measured 0.8-1.4 on every job but EpiNet's "
        "(0.56-0.69), 0.94 over all (the earlier fit, on short runs under load, over-estimated them 1.3-4.8x).  "
        "Not in the fit: epp-fig4's 10,000-arm scoring, LMC-TS's history and the text backbone",
        f"python tools/calibrate.py --refit neural_pp  (on the logs `{TIMINGS}` reads)"),
}

_S = "s"
TABLE = [
    # linear: the default model (costs.default_round_costs)
    Constant("linear", "COST_ROUND_S", 60e-6, _S, "per round of a batch (Python overhead; per seed when unbatched)",
             "2026-11-23"),
    Constant("linear", "COST_SEED_ROUND_S", 1.3e-6, _S, "per seed and round", "2026-11-23"),
    Constant("linear", "COST_ARM_S", 5e-10, _S, "per seed, round and d x K (scoring the arms of a finite arm set)",
             "2026-11-23"),
    Constant("linear", "COST_MEMBER_S", 4e-9, _S, "per seed, round and M x d (ensemble members)", "2026-11-23"),
    Constant("linear", "COST_SHARED_ARM_S", 1.2e-10, _S,
             "per seed, round and d x K of an agent whose arms a shared pass scores with the others'", "2026-11-23",
             "eb-bench --shared (section 5, arm scoring only: 4.1x below COST_ARM_S at the default group size 64)"),
    Constant("linear", "MEMBER_SHARE_REFERENCE", {"gaussian": 0.35, "sphere": 0.35, "cube": 0.3, "coordinate": 0.13,
                                                  "sparse": 0.3}, "x COST_MEMBER_S",
             "linear Ensemble++'s member work by reference family (its share of the dense default)", "2026-11-23",
             "least squares on eb-bench --members (section 9) at d = 50, M = 1024: the 25 pairs' times over the plain "
             "form's mean; within 36 % of each",
             reader="ensemble_bandits.agents.linear:EnsemblePlusPlus.MEMBER_SHARE_REFERENCE"),
    Constant("linear", "MEMBER_SHARE_PERTURBATION", {"gaussian": 0.46, "sphere": 0.46, "cube": 0.44, "coordinate": 0.0,
                                                     "sparse": 0.06}, "x COST_MEMBER_S",
             "linear Ensemble++'s member work by perturbation family (Coordinate and Sparse touch 1 or 2 of the M "
             "columns)", "2026-11-23", "the same fit as MEMBER_SHARE_REFERENCE",
             reader="ensemble_bandits.agents.linear:EnsemblePlusPlus.MEMBER_SHARE_PERTURBATION"),
    # glm: the fits (glm_fit.fit_costs) and the GLM agents' rounds
    Constant("glm", "GD_CALL_S", 6e-6, _S, "per GD step and batch: the step's numpy calls (per seed when a seed "
             "runs alone)", "2026-11-23"),
    Constant("glm", "GD_MAC_S", 5e-11, _S, "per seed and multiply-add of a step's two products (2 M N d): about "
             "40 GFLOP/s", "2026-11-23"),
    Constant("glm", "GD_SCORE_S", 1.65e-9, _S, "per seed and score mu(x^T theta) of a step (M N): exp, +1, "
             "reciprocal", "2026-11-23"),
    Constant("glm", "GD_READ_S", 2.5e-10, _S, "per seed and element of the design a step reads (N d): the "
             "matrix-vector floor", "2026-11-23"),
    Constant("glm", "GD_SEED_S", 1.5e-7, _S, "per seed and step: the in-place updates of theta", "2026-11-23"),
    Constant("glm", "EIG_S", (8e-6, 5e-10), "(s, s)", "per seed: lambda_max of the Gram matrix for sum_safe, "
             "a + b d^3", "2026-11-23"),
    Constant("glm", "GD_RUN_FACTOR", 2.4, "ratio", "whole runs over the sum of the per-step minima (cache "
             "misses across a run's growing data, the other core's load): a gradient-descent fit's estimate is "
             "scaled by it", "2026-11-27", "paper-scale GLM jobs measured 1.84-2.67x the sum (median 2.44)"),
    Constant("glm", "NEWTON_S", (6e-6, 9e-10, 1.5e-4), "(s, s, s)", "Newton/IRLS to convergence from a warm start "
             "(3-4 steps): per seed a + b N d^2, and c per batch", "2026-11-23"),
    Constant("glm", "LOGTS_SELECT_S", (2e-6, 5e-11), "(s, s)", "LogTS's arm choice beyond scoring the arms, per "
             "seed and round: a + b K d^2 (the Hessian at theta_hat, its Cholesky factor, one solve)", "2026-11-23",
             reader="ensemble_bandits.agents.glm:LogTS.select_costs"),
    Constant("glm", "GLMUCB_SELECT_S", (2e-6, 5e-11), "(s, s)", "GLM-UCB's arm choice beyond scoring the arms, per "
             "seed and round: a + b K d^2 (|x|_{V^-1} of every arm, Sherman-Morrison)", "2026-11-23",
             reader="ensemble_bandits.agents.glm:GLMUCB.select_costs"),
    Constant("glm", "ROUND_S", 1.5e-4, _S, "per round and batch: the round's other calls (select, update, the "
             "environment)", "2026-11-23"),
    Constant("glm", "SEED_ROUND_S", 5e-6, _S, "per seed and round: data update, scoring the arms, random draws",
             "2026-11-23"),
    # neural_es: the Neural-ES family (neural_es.NeuralAgent.round_costs)
    Constant("neural_es", "NN_STEP_S", 3e-4, _S, "per GD step and batch: the step's torch calls (per seed with "
             "seed_by_seed)", "2026-11-29", "refitted for revision 1 (batched in fixed seed blocks)"),
    Constant("neural_es", "NN_MAC_S", 8e-11, _S, "per seed and multiply-add of a GD step: forward and backward, "
             "3 M K d'", "2026-11-29", "refitted for revision 1"),
    Constant("neural_es", "NN_WIDTH_MAC_S", 1.1e-10, _S, "per seed and float64 multiply-add of the widths "
             "(structured: K (N^2 + N p_D + p_D^2))", "2026-11-23", "checked for revision 1 on 2026-11-29"),
    Constant("neural_es", "NN_MATRIX_S", 1e-8, _S, "per seed and entry of U^-1 in the rank-one step (two passes: "
             "d'^2; d' diagonal)", "2026-11-29"),
    Constant("neural_es", "NN_ROW_MAC_S", 3.5e-11, _S, "per seed and multiply-add of a GD step over the history "
             "rows (per-round contexts)", "2026-11-23",
             "Neural-ES at t = 1000 and 5000: 0.52 and 2.7 s a round, under load about 3"),
    # neural_pp: the neural Ensemble++ family (neural_pp.cost_model.NeuralCostModel.round_costs)
    Constant("neural_pp", "COST_ROUND_S", 3.3e-4, _S, "per round of a batch: the torch dispatch overhead of a "
             "select and an update", "2026-11-24"),
    Constant("neural_pp", "COST_STEP_S", 1.7e-4, _S, "per gradient step, batch and trainable tensor: forward, "
             "backward, one Adam update", "2026-11-24"),
    Constant("neural_pp", "COST_MAC_S", 4.7e-11, _S, "per seed and multiply-add of the arm scores and of the "
             "gradient steps' forward pass", "2026-11-24"),
    Constant("neural_pp", "COST_BACKWARD", 3.0, "ratio", "a gradient step's multiply-adds over its forward "
             "pass's (forward + backward)", "2026-11-24", "fixed, not fitted: the refit keeps it"),
    Constant("neural_pp", "COST_DRAW_S", 3.5e-8, _S, "per random number a gradient step draws in numpy "
             "(minibatch, index vectors, Langevin noise)", "2026-11-24"),
]
FIXED = {("neural_pp", "COST_BACKWARD")}           # constants a refit keeps (not fitted)
_BY_NAME = {(c.model, c.name): c for c in TABLE}


def constant(model: str, name: str) -> Constant:
    """The table's entry ``name`` of ``model`` (a KeyError naming both)."""
    try:
        return _BY_NAME[model, name]
    except KeyError:
        raise KeyError(f"no calibrated constant {name!r} in model {model!r}") from None


def constants(model: str, *names: str):
    """The values of ``names`` of ``model``, in order (one value for one name)."""
    values = tuple(constant(model, n).value for n in names)
    return values[0] if len(values) == 1 else values


def rows(model: str | None = None) -> list:
    """The table's entries (of ``model``), in order."""
    return [c for c in TABLE if model in (None, c.model)]
