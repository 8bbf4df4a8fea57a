"""Hash every run file under results/<scale>/runs: one line per file, 'key/seeds-a-b.npz sha1',
over every column but the wall times (`seconds`, `seconds_min`, ...), so that two builds can be compared bit for bit:

    python tools/run_hashes.py results/smoke/runs > before.txt
    ... change the code, rebuild ...
    python tools/run_hashes.py results/smoke/runs | diff before.txt -
"""
import hashlib
import sys
from pathlib import Path

import numpy as np


def digest(path: Path) -> str:
    h = hashlib.sha1()
    with np.load(path) as data:
        for name in sorted(data.files):
            if name.startswith("seconds"):
                continue
            col = np.ascontiguousarray(data[name])
            h.update(f"{name}:{col.dtype.str}:{col.shape}".encode())
            h.update(col.tobytes())
    return h.hexdigest()


def main(root: str) -> None:
    files = sorted(Path(root).glob("*/seeds-*.npz"))
    if not files:
        raise SystemExit(f"no run files under {root}")
    for f in files:
        print(f"{f.parent.name}/{f.name} {digest(f)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/smoke/runs")
