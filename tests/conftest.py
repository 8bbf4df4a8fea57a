"""Make tests/helpers.py importable from every test module; fixtures shared by test modules."""
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
def entries():
    """The project's figure registry, validated."""
    from ensemble_bandits import registry

    return registry.load_registry(ROOT / "config", ROOT / "workflow" / "schemas" / "registry.schema.yaml")
