"""The Python lint: ruff with the project's configuration (pyproject: [tool.ruff]) finds nothing in
the library, the tools, the workflow's scripts and the tests."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from helpers import timeout_s

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: pip install -e '.[test]'"
    res = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "src", "tools", "workflow/scripts",
                          "tests"], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s(120))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
