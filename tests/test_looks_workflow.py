"""A figure planned in looks, built look by look through the workflow (smoke scale, in a scratch
copy): look 2 keeps look 1's run files as they are (same bytes, same modification times) and adds
the next seed range only for the curves whose claims were left open at look 1 (docs/sequential.md)."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from helpers import copy_project, timeout_s

pytestmark = pytest.mark.workflow

FIGURE = """
lines-looks:
  title: "Seeds in planned looks: a test figure"
  caption: A small linear figure for the workflow test of the looks.
  kind: regret_curves
  band: se
  seeds: 12
  horizon: 60
  looks: [6, 12]
  panels:
    - label: "d = 5"
      env: {name: sphere_gaussian, d: 5, n_arms: 20, noise_sd: 0.5}
  curves:
    - label: LinTS
      agent: {name: lints, prior_var: 0.25, noise_sd: 0.5}
    - label: LinUCB
      agent: {name: linucb, lam: 1.0}
    - label: epsilon-greedy
      agent: {name: egreedy, lam: 1.0, rate: 1.0, schedule: literal}
  scales:
    smoke: {seeds: 12, horizon: 60}
  claims:
    - id: ts-greedy
      quote: LinTS has lower regret than epsilon-greedy.
      checks:
        - fn: outperforms
          args: {better: LinTS, worse: epsilon-greedy}
    - id: ts-ucb
      quote: LinTS has lower regret than LinUCB.
      checks:
        - fn: outperforms
          args: {better: LinTS, worse: LinUCB}
"""


def build(root, look):
    res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "lines-looks", "--config", "scale=smoke",
                          f"look={look}"], cwd=root, capture_output=True, text=True, timeout=timeout_s(900))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr


def runs(root):
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in (root / "results" / "smoke" / "runs").rglob("*.npz")}


@pytest.fixture(scope="module")
def looks(tmp_path_factory):
    root = copy_project(tmp_path_factory.mktemp("looks"))
    with open(root / "config" / "figures" / "lines.yaml", "a", encoding="utf-8") as fh:
        fh.write(FIGURE)
    record = root / "figures" / "smoke" / "records" / "lines-looks.json"
    build(root, 1)
    first, rec1 = runs(root), json.loads(record.read_text())
    build(root, 2)
    return root, first, rec1, runs(root), json.loads(record.read_text())


def test_look_1_runs_the_first_seeds_of_every_curve_and_its_record_says_which_curves_go_on(looks):
    _, first, rec1, _, _ = looks
    assert sorted(p.rsplit("/", 1)[1] for p in first) == ["seeds-0-6.npz"] * 3
    assert rec1["look"] == {"k": 1, "of": 2, "seeds": {"LinTS": 6, "LinUCB": 6, "epsilon-greedy": 6}}
    claims = {c["id"]: c for c in rec1["claims"]}
    # at 6 seeds LinTS and epsilon-greedy are about level: inside the futility band, the claim stops
    greedy, ucb = claims["ts-greedy"], claims["ts-ucb"]
    assert (greedy["status"], greedy["look"], greedy["look_status"], greedy["continue"]) == \
        ("inconclusive", 1, "futile", [])
    assert greedy["numbers"].endswith("inconclusive (futile) at look 1 of 2 (n = 6; boundary z = 2.963, "
                                      "nominal p = 0.00153)")
    assert (ucb["status"], ucb["look"], ucb["look_status"], ucb["continue"]) == \
        ("inconclusive", 1, "undecided", ["LinTS", "LinUCB"])


def test_look_2_reuses_look_1s_run_files_and_adds_seeds_only_for_the_curves_that_go_on(looks):
    root, first, rec1, second, rec2 = looks
    assert {p: second[p] for p in first} == first                 # the same bytes and modification times
    new = sorted(set(second) - set(first))
    assert [p.rsplit("/", 1)[1] for p in new] == ["seeds-6-12.npz"] * 2
    doc = json.loads((root / "results" / "smoke" / "figures" / "lines-looks.json").read_text())
    keys = {s["curve"]: s["key"] for s in doc["series"]}
    assert {p.split("/")[3] for p in new} == {keys["LinTS"], keys["LinUCB"]}
    assert rec2["look"] == {"k": 2, "of": 2, "seeds": {"LinTS": 12, "LinUCB": 12, "epsilon-greedy": 6}}
    claims = {c["id"]: c for c in rec2["claims"]}
    assert claims["ts-greedy"] == rec1["claims"][0]                # stopped at look 1: decided as then
    ucb = claims["ts-ucb"]
    assert (ucb["status"], ucb["look"], ucb["n"], ucb["look_status"]) == ("reproduced", 2, 12, "decided")
    assert ucb["numbers"].endswith("decided at look 2 of 2 (n = 12; boundary z = 1.969, nominal p = 0.0245)")
