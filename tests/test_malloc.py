"""malloc.keep_freed_memory: large temporaries stop page-faulting (glibc), numbers unchanged."""
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ensemble_bandits.malloc import keep_freed_memory


def _faults_per_round(rounds=20, nbytes=8 * 2**20, live=3):
    """Minor page faults per round of allocating and filling ``live`` 8 MB arrays, then freeing them
    (as a round's temporaries: glibc's dynamic thresholds trim the freed top of the heap)."""
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for i in range(rounds):
        arrays = [np.empty(nbytes // 8) for _ in range(live)]
        for a in arrays:
            a.fill(i)
        del arrays, a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / rounds


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_large_temporaries_stop_page_faulting():
    # a fresh interpreter: the setting lasts for the process, and this one may already have it
    code = ("from tests.test_malloc import _faults_per_round as f; from ensemble_bandits.malloc import "
            "keep_freed_memory as k; before = f(); ok = k(); f(2); print(before, ok, f())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[1]).stdout.split()
    before, applied, after = float(out[0]), out[1] == "True", float(out[2])
    if not applied:
        pytest.skip("no glibc mallopt here")
    assert before > 500           # 24 MB given back and faulted in again each round (6,144 pages)
    assert after < 10


def test_returns_a_bool_and_is_idempotent():
    assert keep_freed_memory() in (True, False)
    assert keep_freed_memory() == keep_freed_memory()
