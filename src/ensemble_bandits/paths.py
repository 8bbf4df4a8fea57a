"""Where the project is: the one place that knows the layout of a checkout (``Snakefile``,
``config/config.yaml``), used by the command line when it runs outside the project root."""
from __future__ import annotations

from pathlib import Path

CONFIG = Path("config") / "config.yaml"


def is_project(path: Path) -> bool:
    return (path / "Snakefile").is_file() and (path / CONFIG).is_file()


def project_root(start: Path | str | None = None) -> Path | None:
    """The project directory holding ``start`` (default: the working directory), else the source
    checkout this package was installed from (``pip install -e .``), else None."""
    here = Path(start or Path.cwd()).resolve()
    for path in (here, *here.parents):
        if is_project(path):
            return path
    checkout = Path(__file__).resolve().parents[2]      # src/ensemble_bandits/paths.py -> checkout
    return checkout if is_project(checkout) else None
