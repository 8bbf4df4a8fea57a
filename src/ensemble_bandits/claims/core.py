"""What every check shares: the statuses, the registry of checks, the selection of rows and
curves in a figure table, and the decision of a claim from its comparisons.

A *comparison* is one statistical question of a claim ("A's final regret is below B's in panel
P"), reduced to two one-sided p-values: one for the claim and one against it.  A claim made of
several comparisons is reproduced when every comparison is decided for it (each at level
``stats.ALPHA``; a conjunction needs no correction) and not reproduced when at least one is
decided against it after Holm's correction over all of them; otherwise it is inconclusive.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from ..stats import ALPHA, final_rows, holm

REPRODUCED, FAILED, INCONCLUSIVE, REPORTED = "reproduced", "not reproduced", "inconclusive", "reported"
CHECKS = {}


def check(curves=()):
    """Register a check under its name; ``curves``: the names of its arguments that hold a curve
    (a name, or ``{curve: name, column: value}`` for one grid point of a curve) or a list of them."""
    def register(fn):
        fn.curve_args = tuple(curves)
        CHECKS[fn.__name__] = fn
        return fn

    return register


class ClaimError(ValueError):
    """A claim names a curve, panel or column that the figure does not have."""


@dataclass(frozen=True)
class Comparison:
    """One question of a claim: ``p_confirm`` (p-value for the claim's side), ``p_contradict``
    (p-value for the opposite side).  A comparison of an interval estimate also keeps its sample
    size ``n``, ``estimate``, interval ``halfwidth`` and decision ``bounds`` (the values the
    interval must clear), from which :meth:`seeds_to_decide` follows; ``curves``: the curves it
    compares, where the check knows them (the curve-pair checks)."""
    label: str
    p_confirm: float
    p_contradict: float
    n: int = 0
    estimate: float = float("nan")
    halfwidth: float = float("nan")
    bounds: tuple = ()
    text: str = ""
    curves: tuple = ()

    def seeds_to_decide(self):
        """The seeds at which the interval, shrinking as 1/sqrt(n) with the observed spread, would
        clear the nearest bound inside it (None without the numbers, inf at a bound)."""
        if self.n < 2 or not self.bounds or not math.isfinite(self.halfwidth):
            return None
        inside = [abs(self.estimate - b) for b in self.bounds if abs(self.estimate - b) <= self.halfwidth]
        if not inside:
            return self.n
        gap = min(inside)
        return math.inf if gap == 0 else math.ceil(self.n * (self.halfwidth / gap) ** 2)


NEVER = "never (the estimate sits on a bound)"


def seeds_record(needed):
    """A finding's ``seeds_to_decide`` as a record stores it: the count, or :data:`NEVER` for inf
    (an estimate on a bound; in looks, one on the wrong side of it: ``report`` words each)."""
    return needed if needed != math.inf else NEVER


def seeds_to_decide(comparisons):
    """The seeds that would decide every undecided comparison (the largest of theirs), or None."""
    needed = [c.seeds_to_decide() for c in comparisons if not (c.p_confirm <= ALPHA or c.p_contradict <= ALPHA)]
    needed = [n for n in needed if n is not None]
    return max(needed) if needed else None


class Verdict(tuple):
    """``(status, numbers)`` of a check, with the comparisons behind the status (empty for exact
    checks), so that a claim made of several checks is decided over all their comparisons."""

    def __new__(cls, status, numbers, comparisons=()):
        obj = super().__new__(cls, (status, numbers))
        obj.comparisons = tuple(comparisons)
        return obj


def decide(comparisons, alpha: float = ALPHA) -> tuple:
    """(status, one-line summary) of a family of comparisons: not reproduced when a comparison
    is decided against the claim after Holm's correction, reproduced when every comparison is
    decided for it, inconclusive otherwise (and when there is none); each at one-sided level
    ``alpha`` (a group-sequential look's nominal level, :mod:`ensemble_bandits.sequential`)."""
    comparisons = list(comparisons)
    if not comparisons:
        return INCONCLUSIVE, "no comparison"
    k = len(comparisons)
    adjusted = holm([c.p_contradict for c in comparisons])
    against = [f"{c.label} (Holm p {fmt(p)})" for c, p in zip(comparisons, adjusted) if p <= alpha]
    if against:
        return FAILED, f"decided against the claim, Holm over {k}: " + _first(against)
    undecided = [c.label for c in comparisons if not c.p_confirm <= alpha]
    if not undecided:
        return REPRODUCED, f"all {k} comparison(s) decided for the claim"
    return INCONCLUSIVE, f"{len(undecided)} of {k} comparison(s) undecided: " + _first(undecided)


def _first(labels, most=3):
    more = f" and {len(labels) - most} more" if len(labels) > most else ""
    return ", ".join(labels[:most]) + more


def verdict(comparisons, parts) -> Verdict:
    """The Verdict of a statistical check: its comparisons decided together, its numbers (a check
    with one text per comparison gives each comparison its text)."""
    if len(parts) == len(comparisons):
        comparisons = [c if c.text else replace(c, text=t) for c, t in zip(comparisons, parts)]
    return Verdict(decide(comparisons)[0], "; ".join(parts), comparisons)


def decisive(comparisons):
    """The comparison that decides a family's status: the one decided against with the smallest
    Holm p (not reproduced), else an undecided one needing the most seeds (inconclusive), else the
    weakest one decided for (reproduced); None without comparisons."""
    comparisons = list(comparisons)
    if not comparisons:
        return None
    adjusted = holm([c.p_contradict for c in comparisons])
    against = [(p, i) for i, p in enumerate(adjusted) if p <= ALPHA]
    if against:
        return comparisons[min(against)[1]]
    undecided = [c for c in comparisons if not c.p_confirm <= ALPHA]
    if undecided:
        return max(undecided, key=lambda c: (c.seeds_to_decide() or 0, c.p_confirm))
    return max(comparisons, key=lambda c: c.p_confirm)


def exact(ok: bool, numbers: str) -> Verdict:
    """The Verdict of an exact check (closed form, or a count without sampling error)."""
    return Verdict(REPRODUCED if ok else FAILED, numbers)


def combine(statuses) -> str:
    """Status of a claim from the statuses of its parts: reproduced only if every decided part
    is, not reproduced if one is not; parts that only report numbers do not count (a claim of
    such parts alone is ``reported``)."""
    statuses = list(statuses)
    decided = [s for s in statuses if s != REPORTED]
    if statuses and not decided:
        return REPORTED
    if decided and all(s == REPRODUCED for s in decided):
        return REPRODUCED
    if any(s == FAILED for s in decided):
        return FAILED
    return INCONCLUSIVE


# --------------------------------------------------------------------------------------------
# rows, curves and panels of a figure table
# --------------------------------------------------------------------------------------------
def isin(column: pd.Series, values) -> pd.Series:
    """Membership test that matches 2 with 2.0 (grid columns with gaps become float)."""
    if pd.api.types.is_numeric_dtype(column) and all(isinstance(v, (int, float)) for v in values):
        return column.isin([float(v) for v in values])
    return column.astype(str).isin([str(v) for v in values])


def _matches(table, where) -> pd.Series:
    hit = pd.Series(True, index=table.index)
    for col, val in (where or {}).items():
        if col not in table.columns:
            raise ClaimError(f"claim filters on column {col!r}, which the table lacks")
        hit &= isin(table[col], val if isinstance(val, list) else [val])
    return hit


def select(table, panel=None, curve=None, where=None):
    """Rows of ``panel`` and ``curve`` matching ``where`` ({column: value or list}); ``where`` may
    hold ``exclude``: a filter (or a list of them) whose matching rows are dropped."""
    where = dict(where or {})
    exclude = where.pop("exclude", [])
    sub = table
    if panel is not None:
        sub = sub[sub["panel"] == panel]
    if curve is not None:
        sub = sub[sub["curve"] == curve]
    sub = sub[_matches(sub, where)]
    for ex in exclude if isinstance(exclude, list) else [exclude]:
        sub = sub[~_matches(sub, ex)]
    return sub


def condition(column, value) -> str:
    """``column = value`` with grid floats written as on the grid (2.0 -> 2)."""
    return f"{column} = {value:g}" if isinstance(value, float) else f"{column} = {value}"


def curve_spec(spec):
    """(curve name, filter, label) of a curve argument: a name, or {curve: name, column: value}."""
    if isinstance(spec, dict):
        where = {k: v for k, v in spec.items() if k != "curve"}
        return spec["curve"], where, spec["curve"] + "".join(f" [{condition(k, v)}]" for k, v in where.items())
    return spec, {}, spec


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def finals(table, panel, spec, column="regret") -> pd.Series:
    """Per-seed final ``column`` of one curve (argument form of :func:`curve_spec`) in ``panel``."""
    curve, where, label = curve_spec(spec)
    sub = select(final_rows(table), panel, curve, where)
    if sub.empty:
        raise ClaimError(f"no rows for curve {label!r} in panel {panel!r}")
    return sub.groupby("seed")[column].mean()


def up_to_share(table, share: float):
    """``table`` cut, per (panel, curve), after its first recorded round t >= ``share`` x its last
    round, so that :func:`finals` reads that round."""
    if not 0.0 < float(share) <= 1.0:
        raise ClaimError(f"t_share must be in (0, 1], got {share}")
    keys = ["panel", "curve"]
    tmax = table.groupby(keys, sort=False)["t"].transform("max")
    reached = table["t"].where(table["t"] >= float(share) * tmax)
    target = reached.groupby([table[k] for k in keys], sort=False).transform("min")
    return table[table["t"] <= target]


def panels_of(table, panels):
    known = list(dict.fromkeys(table["panel"]))
    if panels is None:
        return known
    missing = [p for p in panels if p not in known]
    if missing:
        raise ClaimError(f"claim names unknown panel(s) {missing}; panels: {known}")
    return panels


def curves_exist(table, specs):
    known = set(table["curve"])
    missing = [curve_spec(s)[2] for s in specs if curve_spec(s)[0] not in known]
    if missing:
        raise ClaimError(f"claim names unknown curve(s) {missing}; curves: {sorted(known)}")


def fmt(x):
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def interval_text(label, estimate, lo, hi, n, what="diff"):
    return f"{label}: {what} {fmt(estimate)} [{fmt(lo)}, {fmt(hi)}] (n={n})"
