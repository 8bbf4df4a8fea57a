"""An edit to the entry of a figure that is already built fails exactly like one to an unbuilt
figure: the whole registry is checked while the workflow is parsed (workflow/rules/common.smk), not
in input functions, for which Snakemake would take the existing figure for a source file and say
"Nothing to be done" (docs/reliability.md).  Dry runs in a scratch copy whose figure files exist."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_project, timeout_s

pytestmark = pytest.mark.workflow

# (what, anchor in config/figures/lines.yaml (lines-gauss-ts), replacement, message)
EDITS = [
    ("unknown agent", "{name: lints, prior_var: 0.25, noise_sd: 0.5}", "{name: lintz, prior_var: 0.25, noise_sd: 0.5}",
     "curve 'LinTS': unknown agent 'lintz'"),
    ("NaN hyper-parameter", "{name: lints, prior_var: 0.25, noise_sd: 0.5}",
     "{name: lints, prior_var: 0.25, noise_sd: .nan}", "noise_sd: nan is not allowed: a finite number"),
    ("negative claim tolerance", 'b: LinTS, rel_tol: 0.05}', 'b: LinTS, rel_tol: -1}',
     "check 'same_distribution': argument rel_tol = -1 is not allowed: a number at least 0"),
    ("self-comparison", 'b: LinTS, rel_tol: 0.05}', 'b: "generalised LinPHE (Gaussian)", rel_tol: 0.05}',
     "check 'same_distribution' compares curve 'generalised LinPHE (Gaussian)' with itself"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A scratch copy in which lines-gauss-ts's smoke figure files exist (as after a build)."""
    root = copy_project(tmp_path_factory.mktemp("eager"))
    for ext in ("png", "pdf"):
        path = root / "figures" / "smoke" / f"lines-gauss-ts.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"built")
    return root


def dry_run(root: Path, *targets):
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", *targets, "--config",
                          "scale=smoke"], cwd=root, capture_output=True, text=True, timeout=timeout_s(300))
    return res.returncode, res.stdout + res.stderr


@pytest.mark.parametrize("what, anchor, replacement, message", EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_to_a_built_figure_fails_before_any_job(built, what, anchor, replacement, message):
    registry_file = built / "config" / "figures" / "lines.yaml"
    original = registry_file.read_text()
    assert original.count(anchor) >= 1
    start = original.index("lines-gauss-ts:")
    registry_file.write_text(original[:start] + original[start:].replace(anchor, replacement, 1))
    try:
        for target in ("figures/smoke/lines-gauss-ts.png", "lines-gauss-ts"):
            rc, out = dry_run(built, target)
            assert rc != 0 and message in out, out[-3000:]
            assert "Nothing to be done" not in out and "invalid figure registry" in out
    finally:
        registry_file.write_text(original)


def test_the_untouched_built_figure_has_nothing_to_do_for_its_file(built):
    rc, out = dry_run(built, "figures/smoke/lines-gauss-ts.png")
    assert rc == 0 and "Nothing to be done" in out, out[-3000:]
