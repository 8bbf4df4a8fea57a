"""Helpers shared by the test modules."""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from ensemble_bandits import runner


def run_history(agent, env, T):
    """Drive ``agent`` on ``env`` for T rounds with :func:`runner.play`; returns the pulled features
    (B, T, d) and rewards (B, T)."""
    X, Y = [], []
    for rnd in runner.play(env, agent, T):
        X.append(rnd.obs.chosen(rnd.arms).copy())
        Y.append(np.asarray(rnd.rewards).copy())
    return np.stack(X, axis=1), np.stack(Y, axis=1)


ROOT = Path(__file__).resolve().parents[1]


DATA_DIR = ROOT / "resources" / "data"  # the datasets shipped with the repository


def repo_data_dir() -> Path:
    """The datasets shipped with the repository (``resources/data``), wherever the checkout sits.
    Tests read them from here, never skip for want of them: a missing file is a failure."""
    return DATA_DIR


def copy_project(dst: Path) -> Path:
    """A copy of the workflow without outputs, caches or git metadata, as a fresh clone has it:
    the shipped datasets (``resources/``) included, and config/config.yaml unchanged (its relative
    ``data_dir`` resolves against the copy's root).  Covertype, not shipped, is left out even when
    it was fetched into the checkout."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in ("Snakefile", "config", "workflow", "profiles", "notebooks", "resources"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, dst / item, ignore=shutil.ignore_patterns("covertype", "__pycache__"))
        else:
            shutil.copy(src, dst / item)
    return dst


def final_per_seed(df):
    """Rows of the last checkpoint of each seed of a simulated table."""
    from ensemble_bandits.stats import final_rows

    return final_rows(df, keys=("seed",))


def run_fresh_python(code: str, timeout: int = 120) -> None:
    """Run ``code`` in a fresh interpreter (a clean ``sys.modules``) and assert that it printed "ok"
    as its last line (what an import check needs: nothing imported by the test process counts)."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert res.stdout.strip().endswith("ok"), res.stdout + res.stderr

