"""Make tests/helpers.py importable from every test module; fixtures shared by test modules."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def config():
    """The project's config/config.yaml, with the library's defaults."""
    from ensemble_bandits import registry

    return registry.with_defaults(registry.load_yaml(ROOT / "config" / "config.yaml"))


@pytest.fixture(scope="module")
def fixture_entries():
    """The fixture registry of the library's tests (tests/data/registry/figures), validated: a few tiny
    entries, so that a test of the library does not change with the live registry."""
    from ensemble_bandits import registry

    return registry.load_registry(ROOT / "tests" / "data" / "registry",
                                  ROOT / "workflow" / "schemas" / "registry.schema.yaml")


@pytest.fixture(scope="module")
def entries():
    """The live figure registry (config/figures), validated: for tests of the registry as data."""
    from ensemble_bandits import registry

    return registry.load_registry(ROOT / "config", ROOT / "workflow" / "schemas" / "registry.schema.yaml")


# Two workers by default (pytest-xdist, in the test extra), one test file each at a time (module
# fixtures such as the smoke run stay whole): the SLURM test mostly waits on package installs and
# daemons, so the workflow tests run beside it.  The three long files start first.  `-n 0` (or -p
# no:xdist) runs everything in one process.
LONG_FIRST = ("test_workflow.py", "test_slurm.py", "test_robustness.py")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """``-n 2 --dist loadfile`` unless the command line chose (``-n``, ``--dist``, ``-p no:xdist``)."""
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return
    if config.option.numprocesses is None and config.option.dist == "no" and (os.cpu_count() or 1) > 1:
        config.option.numprocesses, config.option.dist, config.option.tx = 2, "loadfile", ["popen"] * 2


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))
