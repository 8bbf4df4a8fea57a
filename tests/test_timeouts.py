"""No test has a fixed wall-clock limit that load can break: every subprocess limit goes through
helpers.timeout_s, scaled to the machine's measured speed and load, with an override
(helpers.TIMEOUT_ENV); the SLURM cluster test is opt-in.  Fast: files are read, a loop is timed."""
from __future__ import annotations

import re
from pathlib import Path

import helpers
import pytest

TESTS = Path(__file__).resolve().parent
FIXED = [re.compile(r"timeout\s*=\s*\d"),                    # subprocess.run(..., timeout=600)
         re.compile(r"""["']timeout["']\s*,\s*["']-k["']\s*,\s*["']\d"""),  # ["timeout", "-k", "10", "900"]
         re.compile(r"monotonic\(\)\s*\+\s*\d")]              # deadline = time.monotonic() + 120


def test_no_test_file_holds_a_fixed_wall_clock_limit():
    found = [f"{p.name}:{i}: {ln.strip()}" for p in sorted(TESTS.glob("*.py")) if p.name != Path(__file__).name
             for i, ln in enumerate(p.read_text().splitlines(), 1) if any(rx.search(ln) for rx in FIXED)]
    assert not found, "fixed wall-clock limits (use helpers.timeout_s):\n" + "\n".join(found)


def test_the_override_sets_the_factor_or_removes_the_limits(monkeypatch):
    monkeypatch.setenv(helpers.TIMEOUT_ENV, "7.5")
    assert helpers.timeout_s(100) == 750
    assert helpers.timeout_argv(100) == ["timeout", "-k", "10", "750"]
    for off in ("0", "off"):
        monkeypatch.setenv(helpers.TIMEOUT_ENV, off)
        assert helpers.timeout_s(100) is None and helpers.timeout_argv(100) == []


def test_the_measured_factor_grows_with_the_load(monkeypatch):
    monkeypatch.delenv(helpers.TIMEOUT_ENV, raising=False)
    assert helpers.timeout_s(100) >= 100                       # never shorter than the idle limit
    monkeypatch.setattr(helpers.os, "getloadavg", lambda: (12.0, 9.0, 7.0))
    monkeypatch.setattr(helpers.os, "cpu_count", lambda: 2)
    assert helpers.timeout_s(100) >= 600                       # load 12 on 2 cores: six times


def test_the_slurm_cluster_test_is_opt_in():
    text = (TESTS / "test_slurm.py").read_text()
    assert 'OPT_IN = "EB_SLURM_TEST"' in text and "skipif(os.environ.get(OPT_IN" in text
    ci = (TESTS.parent / ".ci" / "run").read_text()
    assert 'export EB_SLURM_TEST="${EB_SLURM_TEST:-1}"' in ci
    assert ci.index("export EB_SLURM_TEST") < ci.index('eval "$cmd"'), "CI opts in before the README's command"


@pytest.mark.skipif(not hasattr(helpers.os, "getloadavg"), reason="no load average on this platform")
def test_the_limits_are_measured_at_each_call(monkeypatch):
    monkeypatch.delenv(helpers.TIMEOUT_ENV, raising=False)
    monkeypatch.setattr(helpers.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    idle = helpers.timeout_factor()
    monkeypatch.setattr(helpers.os, "getloadavg", lambda: (40.0, 40.0, 40.0))
    assert helpers.timeout_factor() > idle
