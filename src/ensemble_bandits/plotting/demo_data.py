"""Built-in demo data: a small deterministic synthetic (table, spec) per kind, so every notebook
runs standalone.  Imported only when a demo is drawn or asked for."""
from __future__ import annotations

import numpy as np
import pandas as pd


def _regret_table(rng, panels, curves, n_seeds=8, T=1000):
    """Long table: concave regret curves (level / sqrt(t) instantaneous regret) with seed noise."""
    ts = np.unique(np.concatenate([np.linspace(10, T, 100), np.geomspace(1, T, 20)]).round().astype(int))
    seeds = np.repeat(np.arange(n_seeds), len(ts))
    tt = np.tile(ts, n_seeds)
    rows = []
    for plabel, pattrs, pscale in panels:
        for c, (clabel, cattrs, level) in enumerate(curves):
            inc = (level * pscale / np.sqrt(np.arange(1, T + 1)) * rng.lognormal(0, 0.35, (n_seeds, T))
                   * rng.lognormal(0, 0.25, (n_seeds, 1)))
            reg = np.cumsum(inc, axis=1)[:, ts - 1].ravel()
            secs = (1e-4 * ts * (1 + 0.1 * c) * rng.lognormal(0, 0.05, (n_seeds, 1))).ravel()
            rows.append(pd.DataFrame({"panel": plabel, "curve": clabel, "seed": seeds, "t": tt, "regret": reg,
                                      "seconds": secs, "optfrac": 1 - np.exp(-tt / (200 * level)),
                                      **pattrs, **cattrs}))
    return pd.concat(rows, ignore_index=True)


def build(kind: str):
    """(table, spec) of a small deterministic synthetic example of ``kind`` (a known kind)."""
    rng = np.random.default_rng(20240611)
    base = {"id": f"demo-{kind}", "kind": kind, "scale": "demo", "caption": "Synthetic demo data."}
    if kind == "regret_curves":
        panels = [("d = 10", {"d": 10}, 1.0), ("d = 20", {"d": 20}, 1.7), ("d = 50", {"d": 50}, 2.6)]
        curves = [("LinTS", {"method": "LinTS", "a": np.nan}, 9.0),
                  ("LinUCB", {"method": "LinUCB", "a": np.nan}, 11.0),
                  ("e-greedy", {"method": "e-greedy", "a": np.nan}, 16.0),
                  ("LinPHE (a = 2)", {"method": "LinPHE", "a": 2.0}, 7.5),
                  ("LinPHE (a = 1)", {"method": "LinPHE", "a": 1.0}, 6.5),
                  ("LinPHE (a = 0.5)", {"method": "LinPHE", "a": 0.5}, 8.5)]
        df = _regret_table(rng, panels, curves)
        spec = {**base, "title": "Demo: regret of LinPHE and baselines", "band": "se",
                "panels": [p[0] for p in panels], "curves": [c[0] for c in curves],
                "plot": {"legend_split": True, "legend_split_at": 3, "black": ["LinTS"]}}
        return df, spec
    if kind in ("final_vs_param", "heatmap"):
        Ms = [2, 4, 8, 16, 32] if kind == "final_vs_param" else [2, 8, 32]
        dists = ["Gaussian", "Sphere", "Cube", "Coordinate", "Sparse"]
        panels = [("finite, d = 10", {"d": 10}, 1.0), ("compact, d = 50", {"d": 50}, 2.2)]
        curves = [("TS", {"method": "TS", "M": np.nan, "reference": None, "perturbation": None}, 8.0)]
        if kind == "final_vs_param":
            for M in Ms:
                curves.append((f"Ensemble++ (M={M})", {"method": "Ensemble++", "M": float(M), "reference": "Gaussian",
                                                        "perturbation": "Sphere"}, 8.0 * (1 + 2.0 / M)))
                curves.append((f"ES (M={M})", {"method": "ES", "M": float(M), "reference": "Coordinate",
                                                "perturbation": "Gaussian"}, 8.0 * (1 + 9.0 / M)))
        else:
            for M in Ms:
                for i, ref in enumerate(dists):
                    for j, pert in enumerate(dists):
                        pen = (0.6 if ref == "Coordinate" else 0.15) * (4 if M == 2 else 1) + 0.05 * j
                        if M == 32 and ref == pert == "Coordinate":
                            pen += 0.8
                        curves.append((f"{ref}/{pert} M={M}", {"method": "Ensemble++", "M": float(M),
                                                               "reference": ref, "perturbation": pert},
                                       8.0 * (1 + pen)))
        df = _regret_table(rng, panels, curves, n_seeds=5, T=500)
        if kind == "final_vs_param":
            spec = {**base, "title": "Demo: final regret vs ensemble size M", "band": "ci95",
                    "panels": [p[0] for p in panels], "curves": [c[0] for c in curves],
                    "plot": {"x": "M", "hue": "method", "logx": True, "base": 2, "hlines": ["TS"],
                             "xlabel": "ensemble size M"}}
        else:
            spec = {**base, "title": "Demo: reference × perturbation distributions", "band": "ci95",
                    "panels": [p[0] for p in panels], "curves": [c[0] for c in curves],
                    "plot": {"facet": "M", "row": "reference", "col": "perturbation", "normalise_by": "TS"}}
        return df, spec
    if kind == "min_ensemble_size":
        rows = []
        for n_arms, off in ((100, -0.8), (1000, 0.0), (10000, 0.9)):
            for d in range(10, 101, 10):
                m = 0.42 * d + off + rng.normal(0, 1.5)
                m = float(2 * max(1, round(m / 2)))
                if n_arms == 10000 and d == 100:
                    m = np.nan
                rows.append({"d": d, "n_arms": n_arms, "M_min": m, "M_max_tried": 44.0})
        spec = {**base, "title": "Demo: minimum ensemble size to match TS",
                "plot": {}}
        return pd.DataFrame(rows), spec
    if kind == "table":
        df = pd.DataFrame({
            "algorithm": ["LinPHE", "LinTS", "LinUCB", "Ensemble++"],
            "a": [1.0, np.nan, np.nan, np.nan],
            "per-round cost": [1.5e-4, 4.2e-4, 3.9e-4, 2.25e-4],
            "regret bound": ["O(d sqrt(n) log n) with a = O(1) pseudo-rewards per observation",
                             "O(d^{3/2} sqrt(n) log n)", "O(d sqrt(n) log n)",
                             "O(d sqrt(n log |X|)) for M = O(d log T) ensemble members"],
        })
        spec = {**base, "title": "Demo: algorithm summary", "plot": {}}
        return df, spec
    if kind == "function_curve":
        rows = []
        for T0 in (10, 50, 100, 300, 1000):
            b = np.linspace(1.05, 6.0, 200)
            b = b[T0 * (b - 1) > 1]
            g, dl = 0.5, 1.5
            l = ((np.log(T0 * (b - 1) + 1) / np.log(T0 * (b - 1))) ** dl * b ** g * (b - 1) ** g / (b ** g - 1))
            rows.append(pd.DataFrame({"b": b, "l": l, "T0": T0}))
        spec = {**base, "title": "Demo: doubling-trick constant l(T0, b)",
                "plot": {"vline": (3 + 5 ** 0.5) / 2, "vline_label": "b = 2.618", "ylim": [3.0, 6.0],
                         "xlabel": "growth factor b", "ylabel": "l(1/2, 3/2, T0, b)"}}
        return pd.concat(rows, ignore_index=True), spec
    if kind == "runtime":
        rows = []
        for i, (curve, sel, upd) in enumerate([("GLM-ES", 0.4, 8.0), ("GLM-ES-DT100", 0.6, 11.0), ("UCB-GLM", 1.5, 5.0),
                                               ("GLM-TSL", 2.0, 5.2), ("GLM-FPL", 0.4, 5.5)]):
            noise = rng.lognormal(0, 0.05, 3)
            rows.append({"panel": "Logistic bandit, d = 20, K = 50", "curve": curve, "runs": 5, "repeats": 5,
                         "seconds_per_run": (sel + upd + 1.0) * noise[0], "seconds_sd": 0.05 * (sel + upd + 1.0),
                         "select_per_run": sel * noise[1], "select_sd": 0.05 * sel,
                         "update_per_run": upd * noise[2], "update_sd": 0.05 * upd})
        spec = {**base, "title": "Demo: run time, arm selection and model update", "band": "sd", "plot": {}}
        return pd.DataFrame(rows), spec
    # diagram
    return None, {**base, "title": "Demo: RRLS sequential dependence (Ensemble++ Fig. 5)",
                  "plot": {"diagram": "rrls"}}
