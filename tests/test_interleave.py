"""Timings taken in turns (ensemble_bandits.interleave): the rotated order, the summary's ratios, and a
real run timed."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_bandits import interleave


def test_every_pass_runs_every_label_once_the_order_rotated():
    calls = []
    runs = {k: (lambda seed, k=k: calls.append((k, seed)) or (len(calls), 0.0)) for k in "abc"}
    times = interleave.interleaved(runs, passes=4)
    assert calls == [("a", 0), ("b", 0), ("c", 0), ("b", 1), ("c", 1), ("a", 1),
                     ("c", 2), ("a", 2), ("b", 2), ("a", 3), ("b", 3), ("c", 3)]
    assert times["a"].shape == (4, 2) and list(times["a"][:, 0]) == [1, 6, 8, 10]


def test_summary_ratios_of_medians_and_per_pass():
    times = {"ref": np.array([1.0, 2.0, 4.0]), "x": np.array([3.0, 2.0, 4.0])}
    rows = {r["label"]: r for r in interleave.summary(times, "ref")}
    assert rows["ref"]["ratio_of_medians"] == 1.0 and rows["ref"]["paired_ratio_median"] == 1.0
    assert rows["x"]["median_s"] == 3.0 and rows["x"]["ratio_of_medians"] == pytest.approx(1.5)
    assert rows["x"]["paired_ratio_median"] == 1.0 and rows["x"]["paired_ratio_q3"] == pytest.approx(2.0)


def test_run_seconds_times_a_whole_run():
    cell = {"env": {"name": "phe_linear", "d": 3, "n_arms": 8}, "agent": {"name": "lints", "sampler": "numpy"},
            "horizon": 50}
    wall, cpu = interleave.run_seconds(cell, 0)
    assert wall > 0 and cpu > 0
    assert interleave.run_seconds(dict(cell, horizon=2000), 0)[1] > cpu      # more rounds, more CPU time
