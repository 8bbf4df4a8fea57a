"""Text helpers of REPORT.md's first screen: numbers as prose, a deciding number with its bound, a
cause's one-line summary (pure functions of strings and registry claims; :mod:`report` assembles)."""
from __future__ import annotations

import re

BOUND_ARGS = ("rel_tol", "margin", "threshold", "r2_min", "rel_spread_max", "max_slope", "factor", "tol", "noise")
AGAINST_ZERO = {"outperforms", "group_outperforms"}


def rule_bounds(claim: dict) -> str:
    """The bounds a claim's checks compare against, as the registry states them (``rel_tol 0.2``), or
    ``0`` where every check is a strict comparison (outperforms); empty when it states none."""
    checks = [c for c in claim.get("checks", []) if c["fn"] not in ("premise", "seed_blocks", "after_round")]
    if checks and all(c["fn"] in AGAINST_ZERO for c in checks):
        return "0"
    found = [f"{k} {c['args'][k]:g}" for c in checks for k in BOUND_ARGS
             if isinstance(c.get("args", {}).get(k), (int, float)) and not isinstance(c["args"][k], bool)]
    strict = ["0 for the strict comparisons"] if any(c["fn"] in AGAINST_ZERO for c in checks) else []
    return ", ".join(strict + list(dict.fromkeys(found)))


SCI = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?e[+-]\d+)(?![\w.])")


def readable(text: str) -> str:
    """Numbers written as in prose: 1.125e+04 -> 11,250 (scientific notation kept below 1e-4 and above 1e15)."""
    def one(m):
        x = float(m.group(1))
        if x == 0 or not 1e-4 <= abs(x) < 1e15:
            return m.group(1)
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        return f"{x:.4g}"

    return SCI.sub(one, str(text))


THRESHOLD = re.compile(r"\bband \+-|\bmargin\b|\bthreshold\b|\bat most\b|\bat least\b|\bexpected\b|\ballowed\b|"
                       r"\bvs\b|\(min |\(max ")


BOUND = re.compile(r"(?:band \+-|margin |threshold |allowed factor |expected )[-\d.,e+]+(?: \+- [\d.,e+-]+)?")


def _with_threshold(text: str, numbers: str, bounds: str | None = None) -> str:
    """A deciding number with the bound it was compared against: the band, margin or threshold its
    comparison states in the claim's numbers, else the bounds the registry states (``bounds``, from
    :func:`rule_bounds`; without them a paired difference is read against 0)."""
    if THRESHOLD.search(text):
        return text
    core = re.sub(r"^seeds \[\d+, \d+\): ", "", text)
    at = numbers.find(core)
    if at >= 0:
        segment = re.split(r" \| | — |; \[|\|\|", numbers[at + len(core):], maxsplit=1)[0]
        if segment and not re.search(r"\d(?:e[+-]\d+)? \[-?\d", text):   # a label without its estimate: add it
            return _with_threshold(text + segment, numbers, bounds)
        bound = BOUND.search(segment)
        if bound:
            return f"{text}, {bound.group(0).rstrip(',')}"
    if bounds == "0" or (bounds is None and " diff " in f" {text}"):
        return f"{text} (against 0)"
    return f"{text} (rule: {bounds})" if bounds else text


def summary_line(why: str, fid: str, most: int = 200) -> str:
    """A cause whole when short, else its opening words and a link to the full text in the section."""
    why = " ".join(why.split())
    if len(why) <= most:
        return why
    cut = why[:most].rsplit(" ", 1)[0]
    return f"{cut} … ([full cause](#{fid}))"


INTERVAL = re.compile(r"(-?\d[\d.e+-]*) \[(-?\d[\d.e+-]*), (-?\d[\d.e+-]*)\] \((n=\d+|bootstrap over \d+ seeds)\)")


def intervals(text: str) -> set:
    """The estimates with their interval and sample (``13120 [11850, 14390] (n=10)``) a claim's numbers
    state: two findings that state the same one rest on the same runs."""
    return set(INTERVAL.findall(text))
