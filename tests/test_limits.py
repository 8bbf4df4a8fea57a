"""Inputs that look valid but are not, and inputs built to exhaust or destroy: each fails at once in
one line naming the file or figure, the key and the value (docs/reliability.md, "Values that compare
as valid", "Loader and writer limits").  Each test carries its class: the next audit tries other
examples of the same class, so the tests vary the example too."""
from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ensemble_bandits import atomic, cells, registry
from ensemble_bandits.claims.core import ClaimError
from ensemble_bandits.claims.evaluate import validate_names
from ensemble_bandits.registry import RegistryError

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "registry.schema.yaml"
ENV = {"name": "russo_finite", "d": 5, "n_arms": 10}


def one_figure(tmp_path, text: str):
    (tmp_path / "figures").mkdir(exist_ok=True)
    (tmp_path / "figures" / "x.yaml").write_text(text)
    return registry.load_registry(tmp_path, SCHEMA)


ENTRY = """\
lines-x:
  title: t
  caption: c
  kind: regret_curves
  seeds: 3
  horizon: 10
  panels:
    - {label: p, env: {name: sphere_gaussian, d: 3, n_arms: 4, noise_sd: 0.5}}
  curves:
    - {label: A, agent: {name: lints}}
    - {label: B, agent: {name: linucb}}
"""


# --- loader limits ------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [9, 30])
def test_limits_an_alias_bomb_fails_fast_in_one_line(tmp_path, width):
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    with pytest.raises(RegistryError, match=r"bomb\.yaml, line \d+: more than 200,000 values once its aliases are "
                                            r"expanded \(an alias bomb\?\)"):
        registry.load_yaml(path)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("text", ["a: &x [1, *x]\n", "a: &x {b: *x}\n"])
def test_limits_an_alias_inside_its_own_anchor_is_refused(tmp_path, text):
    path = tmp_path / "loop.yaml"
    path.write_text(text)
    with pytest.raises(RegistryError, match=r"loop\.yaml, line 1: nested more than 40 levels deep"):
        registry.load_yaml(path)


def test_limits_an_overlong_id_is_refused_in_one_short_line(tmp_path):
    fid = "lines-" + "x" * 240
    with pytest.raises(RegistryError) as err:
        one_figure(tmp_path, ENTRY.replace("lines-x:", f"{fid}:"))
    msg = str(err.value)
    assert "is not allowed" in msg and "at most 40 characters" in msg and len(msg) < 400


@pytest.mark.parametrize("value, message", [("T" * 5000, r"'TTTT.*\.\.\. \(5,002 characters\) is too long"),
                                            ('""', "'' should be non-empty")])
def test_limits_an_overlong_or_empty_title_is_refused(tmp_path, value, message):
    with pytest.raises(RegistryError, match=rf"figure 'lines-x', key title: {message}") as err:
        one_figure(tmp_path, ENTRY.replace("title: t", f"title: {value}"))
    assert len(str(err.value)) < 500


# --- the atomic writer --------------------------------------------------------------------------

def test_limits_the_writer_refuses_a_directory_a_fifo_a_socket_and_a_link_to_a_device(tmp_path):
    targets = {"a directory": tmp_path / "dir", "a fifo": tmp_path / "fifo", "a device": tmp_path / "null",
               "a socket": tmp_path / "sock"}
    targets["a directory"].mkdir()
    os.mkfifo(targets["a fifo"])
    targets["a device"].symlink_to("/dev/null")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(targets["a socket"]))
    for kind, path in targets.items():
        with pytest.raises(atomic.NotAFileError, match=rf"refusing to write {path}: it exists and is {kind}"):
            atomic.write_text_atomic("x", path)
    sock.close()
    assert os.path.islink(targets["a device"]) and targets["a directory"].is_dir()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]      # no temp file left


def test_limits_pages_and_downloads_go_through_the_same_writer(tmp_path, monkeypatch):
    import dataclasses
    import hashlib

    from ensemble_bandits import data, pages

    (tmp_path / "page.md").mkdir()
    with pytest.raises(atomic.NotAFileError, match=r"page\.md: it exists and is a directory"):
        pages.write_page(str(tmp_path / "page.md"), "t", "cmd", "what", "body")
    name = sorted(data.DATASETS)[0]
    ds = data.DATASETS[name]
    digest = hashlib.sha256(b"x").hexdigest()
    monkeypatch.setitem(data.DATASETS, name, dataclasses.replace(
        ds, files=tuple(dataclasses.replace(f, sha256=digest, url="https://example.org/f") for f in ds.files)))
    monkeypatch.setattr(data, "_download", lambda url: b"x")
    dest = tmp_path / ds.files[0].path
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(dest)
    with pytest.raises(atomic.NotAFileError, match=rf"{dest}: it exists and is a fifo"):
        data.fetch([name], tmp_path, log=lambda *a: None)
    assert dest.is_fifo()


def test_limits_the_writer_still_replaces_a_file_and_a_link_to_a_file(tmp_path):
    (tmp_path / "f").write_text("old")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    atomic.write_text_atomic("new", tmp_path / "f")
    atomic.write_text_atomic("new", tmp_path / "link")
    assert (tmp_path / "f").read_text() == "new"


def test_limits_cli_out_at_a_device_is_one_line_and_leaves_it(tmp_path):
    link = tmp_path / "out.npz"
    link.symlink_to("/dev/null")
    cell = '{"env": {"name": "russo_finite", "d": 2, "n_arms": 3}, "agent": {"name": "lints"}, "horizon": 5}'
    proc = subprocess.run([sys.executable, "-m", "ensemble_bandits.cli", "simulate", "--cell", cell, "--seeds", "0",
                           "1", "--out", str(link)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"refusing to write {link}: it exists and is a device (through a link)" in proc.stderr
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"


# --- values that compare as valid but are not -------------------------------------------------

@pytest.mark.parametrize("spec, key", [
    ({"env": ENV, "agent": {"name": "lints", "noise_sd": float("nan")}}, "noise_sd"),
    ({"env": ENV, "agent": {"name": "lints", "prior_var": float("inf")}}, "prior_var"),
    ({"env": {**ENV, "name": "sphere_gaussian", "noise_sd": float("inf")}, "agent": {"name": "lints"}}, "noise_sd"),
    ({"env": ENV, "agent": {"name": "linucb", "lam": -float("inf")}}, "lam"),
])
def test_values_nan_and_infinity_are_refused_for_every_hyper_parameter(spec, key):
    with pytest.raises(ValueError, match=rf"hyper-parameter {key} = -?(nan|inf) is not allowed: a finite number"):
        cells.check_cell({**spec, "horizon": 10})


@pytest.mark.parametrize("horizon, allowed", [(float("nan"), "a finite number"), (0, "at least 1"), (2.5, "an integer")])
def test_values_a_cells_horizon_is_a_finite_integer_from_one(horizon, allowed):
    with pytest.raises(ValueError, match=rf"cell: hyper-parameter horizon = {horizon} is not allowed: {allowed}"):
        cells.check_cell({"env": ENV, "agent": {"name": "lints"}, "horizon": horizon})


@pytest.mark.parametrize("old, new, key", [
    ("noise_sd: 0.5}", "noise_sd: .nan}", "panels/0/env/noise_sd: nan"),
    ("seeds: 3", "seeds: 3\n  paper_values: [{label: l, quote: q, x: 1, y: .inf}]", "paper_values/0/y: inf"),
    ("{name: lints}", "{name: lints, prior_var: -.inf}", "curves/0/agent/prior_var: -inf"),
])
def test_values_nan_and_infinity_anywhere_in_an_entry_are_refused_at_load(tmp_path, old, new, key):
    with pytest.raises(RegistryError, match=rf"x\.yaml: figure 'lines-x', key {key} is not allowed: a finite number"):
        one_figure(tmp_path, ENTRY.replace(old, new))


@pytest.mark.parametrize("horizon", [0, -5])
def test_values_a_curve_or_panel_horizon_below_one_is_refused(tmp_path, horizon):
    with pytest.raises(RegistryError, match=rf"key curves/0/horizon: {horizon} is less than the minimum of 1"):
        one_figure(tmp_path, ENTRY.replace("{label: A, agent", f"{{label: A, horizon: {horizon}, agent"))
    entry = registry.load_registry(ROOT / "config", SCHEMA)["lines-gauss-ts"]
    entry = copy.deepcopy(entry)
    entry["panels"][0]["grid"] = {"T": [horizon]}
    entry["panels"][0]["horizon"] = "{T}"
    with pytest.raises(RegistryError, match=rf"figure 'lines-gauss-ts', panel .*, curve .*: horizon {horizon} is not "
                                            r"allowed: at least 1"):
        registry.resolve(entry, "paper", {})


def test_values_two_curves_of_one_label_in_a_panel_are_refused(tmp_path):
    entries = one_figure(tmp_path, ENTRY.replace("{label: B,", "{label: A,"))
    with pytest.raises(RegistryError, match=r"figure 'lines-x', panel 'p', curve 'A': two curves of the panel have "
                                            r"this label"):
        registry.resolve(entries["lines-x"], "paper", {})


def test_values_two_readings_of_one_label_on_one_curve_are_refused(tmp_path):
    readings = ("  readings:\n"
                "    r1: {label: code, says: s, curves: [A], agent: {prior_var: 2.0}}\n"
                "    r2: {label: code, says: s, curves: [A], agent: {prior_var: 3.0}}\n")
    entries = one_figure(tmp_path, ENTRY + readings)
    with pytest.raises(RegistryError, match=r"figure 'lines-x', panel 'p', curve 'A \[code\]': two curves of the panel "
                                            r"have this label"):
        registry.resolve(entries["lines-x"], "paper", {})


def test_values_two_panels_of_one_label_are_refused(tmp_path):
    text = ENTRY.replace("  curves:", "    - {label: p, env: {name: sphere_gaussian, d: 5, n_arms: 4}}\n  curves:")
    entries = one_figure(tmp_path, text)
    with pytest.raises(RegistryError, match=r"figure 'lines-x': panel label 'p' given to more than one panel"):
        registry.resolve(entries["lines-x"], "paper", {})


def test_values_one_label_over_a_grid_stays_one_curve(fixture_entries):
    """A curve whose label names none of its grid's variables (the fixture's LinPHE over a = 2, 1)
    stays one curve of several series."""
    entry = copy.deepcopy(fixture_entries["phe-regret"])
    entry["curves"][1]["label"] = "LinPHE"
    fig = registry.resolve(entry, "smoke", {})
    assert fig["curves"] == ["LinUCB", "LinPHE"] and sum(s["curve"] == "LinPHE" for s in fig["series"]) == 4


def test_values_a_claim_id_given_twice_is_refused(tmp_path):
    claim = "    - {id: c, quote: q, checks: [{fn: similar, args: {a: A, b: B}}]}\n"
    with pytest.raises(RegistryError, match=r"figure 'lines-x': claim id\(s\) \['c'\] given twice"):
        one_figure(tmp_path, ENTRY + "  claims:\n" + claim + claim)


def claim(fn, **args):
    return {"id": "lines-x", "claims": [{"id": "c", "quote": "q", "checks": [{"fn": fn, "args": args}]}]}


@pytest.mark.parametrize("fn, args, message", [
    ("similar", {"a": "A", "b": "B", "rel_tol": -1}, "argument rel_tol = -1 is not allowed: a number at least 0"),
    ("similar", {"a": "A", "b": "B", "rel_tol": float("nan")}, "argument rel_tol = nan is not allowed: a finite number"),
    ("similar", {"a": "A", "b": "B", "rel_tol": "0.2"}, "argument rel_tol = '0.2' is not allowed: a number at least 0"),
    ("same_distribution", {"a": "A", "b": "B", "rel_tol": float("inf")}, "argument rel_tol = inf is not allowed"),
    ("exceeds_by", {"a": "A", "b": "B", "margin": -0.1}, "argument margin = -0.1 is not allowed: a number at least 0"),
    ("value_close", {"where": {}, "column": "l", "expected": "3.3", "tol": 0.1},
     "argument expected = '3.3' is not allowed: a finite number"),
    ("value_close", {"where": {"b": float("nan")}, "column": "l", "expected": 3.3, "tol": 0.1},
     "argument where/b = nan is not allowed: a finite number"),
    ("within_factor", {"reference": "A", "others": ["B"], "factor": 0}, "argument factor = 0 is not allowed"),
    ("final_level", {"column": "c", "threshold": 1.0, "relation": "abve", "curves": ["A"]},
     "argument relation = 'abve' is not allowed: one of above, below"),
    ("not_worse", {"a": "A", "baselines": ["B"], "robust": "yes"}, "argument robust = 'yes' is not allowed: true or false"),
    ("similar", {"a": "A", "b": "B", "report_only": 1}, "argument report_only = 1 is not allowed: true or false"),
    ("fraction_at_least", {"column": "c", "threshold": 0.1, "curves": ["A"], "t_min": 2.5},
     "argument t_min = 2.5 is not allowed: an integer at least 0"),
    ("slope_at_most", {"x": "t", "max_slope": 0.5, "curves": []}, "argument curves = [] is not allowed: a non-empty list"),
    ("similar", {"a": "A", "b": "B", "panels": []}, "argument panels = [] is not allowed: a non-empty list"),
])
def test_values_claim_arguments_are_typed_finite_and_ranged(fn, args, message):
    with pytest.raises(ClaimError) as err:
        validate_names(claim(fn, **args), ["A", "B"], ["p"])
    assert str(err.value) == f"lines-x: claim 'c': check {fn!r}: {message}" or \
        str(err.value).startswith(f"lines-x: claim 'c': check {fn!r}: {message}")


@pytest.mark.parametrize("fn, args", [
    ("similar", {"a": "A", "b": "A"}),
    ("same_distribution", {"a": "A", "b": "A", "rel_tol": 0.1}),
    ("not_worse", {"a": "A", "baselines": ["B", "A"]}),
    ("outperforms", {"better": ["A"], "worse": "A"}),
])
def test_values_a_claim_comparing_a_curve_with_itself_is_refused(fn, args):
    with pytest.raises(ClaimError, match=rf"lines-x: claim 'c': check {fn!r} compares curve 'A' with itself"):
        validate_names(claim(fn, **args), ["A", "B"], ["p"])


def test_values_one_curve_at_two_grid_points_is_not_a_self_comparison():
    validate_names(claim("similar", a={"curve": "A", "M": 2}, b={"curve": "A", "M": 4}), ["A"], ["p"])


