"""The calibration table (ensemble_bandits.calibration): every fitted constant of the cost model has one
entry (value, unit, fit date, what it was fitted on, the command that refits it), the modules that price
work read it from there, and the refit command (tools/calibrate.py) recovers a model's constants from
measurements that its own estimates made (the fit is right; what it is fed is the machine's business)."""
from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from ensemble_bandits import calibration, costs

from helpers import load_tool

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    return load_tool("calibrate")


def test_every_entry_states_its_unit_date_and_fit():
    assert len({(c.model, c.name) for c in calibration.TABLE}) == len(calibration.TABLE)
    for c in calibration.TABLE:
        assert c.model in calibration.FITS, c
        assert c.unit and c.counts, c
        datetime.date.fromisoformat(c.fitted)
    for model, fit in calibration.FITS.items():
        assert "tools/calibrate.py" in fit.refit and fit.on, model


@pytest.mark.parametrize("entry", calibration.TABLE, ids=lambda c: f"{c.model}.{c.name}")
def test_the_cost_model_reads_every_constant_from_the_table(entry):
    assert entry.read() is entry.value, (entry.model, entry.name, entry.read(), entry.value)


def test_the_show_command_prints_every_constant(capsys):
    _tool().main([])
    out = capsys.readouterr().out
    for c in calibration.TABLE:
        assert c.name in out and c.fitted in out


@pytest.mark.parametrize("model", sorted(calibration.FITS))
def test_a_refit_on_the_models_own_estimates_gives_back_the_table(model, capsys):
    tool = _tool()
    names = tool.FITTED[model]
    fixed = None
    jobs = [(cell, n, False, costs.cell_cost_seconds(cell, n)) for cell, n in tool.MEASURE[model]]
    if model == "glm":                  # the per-step constants too, on estimates with the whole-run factor at 1
        with tool.patched("glm", {"GD_RUN_FACTOR": 1.0}):
            steps = [(cell, n, False, costs.cell_cost_seconds(cell, n)) for cell, n in tool.MEASURE[model]]
        got = tool.refit("glm", tool.MEASURED_PER_STEP, steps, {"GD_RUN_FACTOR": 1.0})
        for name in tool.MEASURED_PER_STEP:
            assert got[name] == pytest.approx(calibration.constants("glm", name), rel=1e-6), name
    got = tool.refit(model, names, jobs, fixed)
    for name in names:
        assert got[name] == pytest.approx(calibration.constants(model, name), rel=1e-6), (model, name)
    assert "model / measured with the table values: median 1.00, range 1.00-1.00" in capsys.readouterr().out
