"""Write the papermill notebooks, one per plot kind (``notebooks/<kind>.ipynb``), from their one
template, ``notebooks/template.ipynb.in`` (``@KIND@``: the kind, ``@KIND_ID@``: it as a cell-id stem):

    python tools/notebooks.py            # write them
    python tools/notebooks.py --check    # exit 1 naming each committed notebook that differs

tests/test_plotting.py checks that the committed notebooks are what this writes.
"""
from __future__ import annotations

import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TEMPLATE = NOTEBOOKS / "template.ipynb.in"


def notebooks() -> dict:
    """{path: text} of every kind's notebook (ensemble_bandits.plotting.KINDS)."""
    from ensemble_bandits.plotting import KINDS

    template = TEMPLATE.read_text(encoding="utf-8")
    return {NOTEBOOKS / f"{kind}.ipynb": template.replace("@KIND_ID@", kind.replace("_", "-")).replace("@KIND@", kind)
            for kind in KINDS}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    wanted = notebooks()
    if "--check" in argv:
        stale = [p.name for p, text in wanted.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        print(f"notebooks not what {TEMPLATE.name} gives: {', '.join(stale)}" if stale else "notebooks up to date")
        return 1 if stale else 0
    for path, text in wanted.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
