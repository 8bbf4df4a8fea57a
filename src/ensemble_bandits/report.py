"""Claims of one figure (JSON + reStructuredText for the Snakemake report) and REPORT.md."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess

from . import ALGORITHMS_VERSION, __version__
from .atomic import write_text_atomic

PAPERS = {
    "phe": "Kveton et al. 2019, Perturbed-History Exploration in Stochastic Linear Bandits (LinPHE)",
    "lines": "Lee & Oh 2024, Improved Regret of Linear Ensemble Sampling (theory only: designed experiments)",
    "glmes": "Sun, Wang & Xu 2025, Provable Anytime Ensemble Sampling in Nonlinear Contextual Bandits (GLM-ES)",
    "epp": "Li, Xu, Wang & Luo 2025, Scalable Exploration via Ensemble++",
}
ICON = {"reproduced": "✅ reproduced", "not reproduced": "❌ not reproduced", "inconclusive": "❔ inconclusive"}


def rst_escape(text: str) -> str:
    """Plain text safe inside reStructuredText (captions of the Snakemake report), on one line."""
    for ch in "\\*`|_":
        text = text.replace(ch, f"\\{ch}")
    return " ".join(text.split())


def claims_rst(fid: str, results: list) -> str:
    if not results:
        return "*No quantitative claim is attached to this item.*\n"
    lines = ["**Claims** (status at this scale):", ""]
    for r in results:
        lines.append(f"- **{r['status']}** — “{rst_escape(r['quote'])}” — {rst_escape(r['numbers'])}")
    return "\n".join(lines) + "\n"


def provenance(scale: str) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        # uncommitted changes to the code or config, not to the outputs under figures/
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!figures"],
                               capture_output=True, text=True, check=True).stdout.strip()
        commit += "+uncommitted" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git checkout)"
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.node() or 'unknown host'}, {os.cpu_count()} cores, {platform.platform()}"
    return (f"Provenance: commit {commit}, scale `{scale}`, generated {when}, machine {machine}; "
            f"ensemble_bandits {__version__} (algorithms v{ALGORITHMS_VERSION}); {package_versions()}.")


def package_versions(names=("numpy", "scipy", "torch", "pandas", "snakemake", "papermill")) -> str:
    """``python 3.11.7, numpy 2.4.6, ...``: the versions that produced a report (read from the
    installed distributions' metadata, so torch is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {platform.python_version()}"]
    for name in names:
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} not installed")
    return ", ".join(parts)


def report_markdown(scale: str, figures: list, skipped=()) -> str:
    """``figures``: dicts with id, paper, title, caption, seeds, horizon, choices, claims (results)."""
    counts = {}
    for f in figures:
        for c in f["claims"]:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
    total = sum(counts.values())
    out = [f"# Replication report — scale `{scale}`", "", provenance(scale), "",
           f"{total} claims checked: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in ICON) + ".",
           "", "Each claim is the paper's own sentence; its check, thresholds and numbers are shown. "
           "Paired differences are across seeds (same instance and reward noise for every method); "
           "intervals are 95 % Student-t intervals. A claim marked *not reproduced* failed its check at "
           "this scale; *inconclusive* means the interval does not decide it.", ""]
    if skipped:
        out += [f"Not run at this scale (left out with `skip`; see README, Scales): {', '.join(skipped)}.", ""]
    for paper in PAPERS:
        figs = [f for f in figures if f["paper"] == paper]
        if not figs:
            continue
        out += [f"## {paper} — {PAPERS[paper]}", ""]
        for f in figs:
            out += [f"### {f['id']} — {f['title']}", ""]
            if f.get("png"):
                out += [f"![{f['id']}]({f['png']})", ""]
            size = f"{f['seeds']} seeds × {f['horizon']} rounds" if f.get("seeds") else "closed form / static"
            out += [f"*Size at this scale:* {size}.", ""]
            if f.get("choices"):
                out += [f"*Choices where the paper is silent or ambiguous:* {' '.join(f['choices'].split())}", ""]
            if f["claims"]:
                out += ["| claim | status | numbers |", "|---|---|---|"]
                for c in f["claims"]:
                    quote = c["quote"].replace("|", "\\|")
                    nums = c["numbers"].replace("|", "\\|")
                    note = f" *{c['note']}*" if c.get("note") else ""
                    out.append(f"| {c['id']}: “{quote}”{note} | {ICON[c['status']]} | {nums} |")
                out.append("")
            else:
                out += ["No quantitative claim attached.", ""]
    return "\n".join(out) + "\n"


def dump_claims(fid: str, results: list, json_path, rst_path) -> None:
    write_text_atomic(json.dumps({"id": fid, "claims": results}, indent=1), json_path)
    write_text_atomic(claims_rst(fid, results), rst_path)
