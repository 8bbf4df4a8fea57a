"""Time some curves of a timing figure in turns, in one process (ensemble_bandits.interleave), and print
(or write) their medians and ratios with the machine's load: a comparison that a shared machine's load
affects alike, for a reading where the figure itself cannot be timed on an idle machine.

    python tools/interleaved_timing.py phe-runtime --reference "LinTS, one run at a time" \\
        --curves "LinTS, one run at a time [numpy's multivariate_normal]" "LinPHE (a = 1), one run at a time" \\
        --passes 9 --out figures/paper/measurements/phe-runtime-interleaved.json

Curves are named as the figure's series (a pending reading's as "<curve> [<label>]"); every panel of the
figure at ``--scale`` is timed unless ``--panels`` names some.  Pass p runs seed p of every curve; wall
and CPU seconds are both reported (interleave.run_seconds).
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

from ensemble_bandits import interleave, registry


def series_of(fid: str, scale: str) -> dict:
    """{(panel, curve): cell} of the figure's series and its pending readings' series."""
    fig = registry.resolve(registry.load_registry()[fid], scale, {})
    return {(s["panel"], s["curve"]): s["cell"] for s in fig["series"] + fig.get("pending_series", [])}


def _commit() -> str:
    """The checkout's commit, "+uncommitted" when its tracked files differ from it."""
    def git(*args):
        return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+uncommitted" if git("status", "--porcelain", "-uno") else "")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("figure")
    ap.add_argument("--reference", required=True, help="the curve the others are divided by")
    ap.add_argument("--curves", nargs="+", required=True)
    ap.add_argument("--panels", nargs="*")
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--passes", type=int, default=9)
    ap.add_argument("--horizon", type=int, help="play this many rounds instead of the figure's horizon")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    cells = series_of(args.figure, args.scale)
    if args.horizon:
        cells = {k: dict(c, horizon=args.horizon) for k, c in cells.items()}
    panels = args.panels or list(dict.fromkeys(p for p, _ in cells))
    curves = [args.reference] + [c for c in args.curves if c != args.reference]
    missing = [(p, c) for p in panels for c in curves if (p, c) not in cells]
    if missing:
        raise SystemExit(f"{args.figure}: no series {missing}; known: {sorted(cells)}")
    out = {"figure": args.figure, "scale": args.scale, "passes": args.passes, "reference": args.reference,
           "horizon": args.horizon or "the figure's",
           "how": "one process; in each pass every curve runs once (seed = pass), alone, the order rotated from "
                  "pass to pass, so the machine's load falls on every curve alike; a reading, not the figure's "
                  "timing (each run alone on an idle machine)",
           "machine": f"{platform.node()}, {platform.machine()}, {platform.platform()}",
           "commit": _commit(),
           "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_start": interleave.load_average(),
           "panels": {}}
    for panel in panels:
        for c in curves:       # lazy imports and caches warmed, untimed
            interleave.run_seconds(dict(cells[(panel, c)], horizon=200), 0)
        runs = {c: (lambda seed, cell=cells[(panel, c)]: interleave.run_seconds(cell, seed)) for c in curves}
        times = interleave.interleaved(runs, args.passes)
        out["panels"][panel] = {"load_after": interleave.load_average()}
        print(f"{panel} (load after {out['panels'][panel]['load_after']}):")
        for i, clock in enumerate(("wall", "cpu")):
            rows = interleave.summary({c: t[:, i] for c, t in times.items()}, args.reference)
            out["panels"][panel][clock] = rows
            for r in rows:
                print(f"  {clock} {r['label']}: median {r['median_s']:.3f} s [{r['q1_s']:.3f}, {r['q3_s']:.3f}], "
                      f"/ reference {r['ratio_of_medians']:.3f} (per pass {r['paired_ratio_median']:.3f} "
                      f"[{r['paired_ratio_q1']:.3f}, {r['paired_ratio_q3']:.3f}])", flush=True)
    out["load_end"], out["ended"] = interleave.load_average(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
