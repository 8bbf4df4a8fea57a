"""Helpers shared by the test modules."""
import os
import re
import shutil
from pathlib import Path

import numpy as np


def run_history(agent, env, T):
    """Drive ``agent`` on ``env`` for T rounds; returns the pulled features (B, T, d) and rewards (B, T)."""
    X, Y = [], []
    for t in range(1, T + 1):
        a = agent.select(t)
        x = env.chosen(a)
        r, _ = env.step(a)
        agent.update(t, a, x, r)
        X.append(x.copy())
        Y.append(np.asarray(r).copy())
    return np.stack(X, axis=1), np.stack(Y, axis=1)


ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The project's data directory (config data_dir, resolved against the project root)."""
    import yaml

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return Path(os.path.abspath(ROOT / cfg["data_dir"]))


def copy_project(dst: Path) -> Path:
    """A copy of the workflow without outputs, caches or git metadata, whose config names the data
    directory by its absolute path (the relative default would not resolve from a scratch copy)."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in ("Snakefile", "config", "workflow", "notebooks"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst / item)
    cfg = dst / "config" / "config.yaml"
    text = re.sub(r"(?m)^data_dir: .*$", f"data_dir: {shared_data_dir()}", cfg.read_text())
    cfg.write_text(text)
    return dst
