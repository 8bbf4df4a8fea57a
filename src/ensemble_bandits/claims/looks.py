"""A claim decided look by look: the group-sequential rule of :mod:`ensemble_bandits.sequential`
applied to a claim's comparisons, and which curves still need seeds.

At look k of a :class:`~ensemble_bandits.sequential.Design` the claim's comparisons (computed on the
first n_k seeds, as every check computes them) are decided by :func:`.core.decide` at the look's
nominal level alpha_k in place of ``stats.ALPHA``: reproduced when every comparison is decided for
the claim, not reproduced when one is decided against it after Holm's correction over the claim's
comparisons, at alpha_k; a "similar" comparison's two one-sided tests (TOST) both at alpha_k.  A
comparison decided for the claim at a look keeps that decision (its seeds stop).  A claim neither
reproduced nor refuted is *futile* at a look before the last when some open comparison cannot be
decided for it, and none against it, within n_K seeds, even at an optimistic effect
(:func:`ensemble_bandits.sequential.seeds_needed`); at the last look it is left open (budget).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import sequential as seq
from .core import CHECKS, FAILED, INCONCLUSIVE, REPRODUCED, ClaimError, decide
from .evaluate import CLAIM_LEVEL, check_curves

DECIDED, UNDECIDED, FUTILE = "decided", "undecided", "futile"     # statuses of a claim at a look
# claim-level checks a claim decided in looks cannot use (``after_round``, a condition on the horizon, it can)
LOOKS_REFUSE = tuple(fn for fn in CLAIM_LEVEL if fn != "after_round")


@dataclass(frozen=True)
class LookDecision:
    """A claim at look ``look`` of ``looks`` with ``n`` seeds: ``status`` (decided / undecided /
    futile), ``verdict`` (reproduced / not reproduced / inconclusive), the look's z-boundary and
    nominal level, the summary of :func:`.core.decide`, per comparison whether it needs no more
    seeds (``settled``), and the break-even seeds of the open comparison furthest from a decision."""
    status: str
    verdict: str
    look: int
    looks: int
    n: int
    boundary: float
    nominal: float
    summary: str
    settled: tuple = ()
    seeds_needed: float | None = None

    @property
    def text(self):
        at = f"look {self.look} of {self.looks} (n = {self.n})"
        if self.status == DECIDED:
            return f"{self.verdict}, decided at {at}"
        if self.status == FUTILE:
            return f"inconclusive (futile) at {at}"
        if self.look == self.looks:
            return f"inconclusive (budget) at {at}"
        return f"undecided at {at}"


def _futile(design, k, comparisons, optimism):
    """Some comparison cannot be decided for the claim and none against it by n_K seeds."""
    n_max = design.looks[-1]
    cannot_for = [seq.seeds_needed(c.p_confirm, design, k, optimism) > n_max for c in comparisons]
    cannot_against = [seq.seeds_needed(c.p_contradict, design, k, optimism) > n_max for c in comparisons]
    return any(cannot_for) and all(cannot_against)


def decide_look(design: seq.Design, k: int, comparisons, frozen=(), optimism=seq.OPTIMISM) -> LookDecision:
    """The claim of ``comparisons`` (each on the first n_k seeds) at look ``k`` (1-based) of ``design``;
    ``frozen``: the indices of comparisons decided for the claim at an earlier look (pass their
    comparison from that look: they count as decided for, their p against as then)."""
    comparisons, frozen = list(comparisons), set(frozen)
    c_k, alpha_k = float(design.z[k - 1]), float(design.nominal[k - 1])
    counted = [replace(c, p_confirm=0.0) if i in frozen else c for i, c in enumerate(comparisons)]
    verdict, summary = decide(counted, alpha_k)
    open_ = [c for i, c in enumerate(comparisons) if i not in frozen and not c.p_confirm <= alpha_k]
    needed = max((seq.seeds_needed(c.p_confirm, design, k) for c in open_), default=None)
    if verdict in (REPRODUCED, FAILED):
        status = DECIDED
    elif k < design.K and open_ and _futile(design, k, open_, optimism):
        status = FUTILE
    else:
        status = UNDECIDED
    settled = tuple(status != UNDECIDED or i in frozen or c.p_confirm <= alpha_k for i, c in enumerate(comparisons))
    verdict = verdict if status == DECIDED else INCONCLUSIVE
    return LookDecision(status, verdict, k, design.K, design.looks[k - 1], c_k, alpha_k, summary, settled, needed)


def run_looks(design: seq.Design, comparisons_at, available=None, optimism=seq.OPTIMISM) -> LookDecision | None:
    """The protocol: looks 1, 2, ... of ``design`` in turn, up to ``available`` seeds (all looks by
    default), ``comparisons_at(n)`` giving the claim's comparisons on the first n seeds; stops at the
    first look that decides the claim or finds it futile.  None when no look has its seeds."""
    frozen, last = {}, None
    for k, n in enumerate(design.looks, start=1):
        if available is not None and n > available:
            break
        comparisons = [frozen.get(i, c) for i, c in enumerate(comparisons_at(n))]
        last = decide_look(design, k, comparisons, frozen, optimism)
        if last.status != UNDECIDED:
            return last
        frozen.update({i: c for i, (c, done) in enumerate(zip(comparisons, last.settled)) if done and i not in frozen})
    return last


def claim_comparisons(table, claim, n) -> list:
    """The comparisons of a registry claim's checks (``{"checks": [{fn, args}, ...]}``) on the first
    ``n`` seeds of a figure table, each with its curves (those its check gives it, else every curve
    the check names); the claim-level conditions premise and seed blocks are not supported (after_round:
    a horizon that ends by its round is not measured, a ClaimError)."""
    seeds = sorted(table["seed"].unique())[:n]
    sub = table[table["seed"].isin(seeds)]
    out = []
    for chk in claim["checks"]:
        if chk["fn"] == "after_round":     # a condition on the horizon, not on the seeds
            if int(table["t"].max()) <= int(chk["args"]["t"]):
                raise ClaimError(f"not measured: the runs end at t = {int(table['t'].max())}, not after round "
                                 f"{chk['args']['t']}")
            continue
        if chk["fn"] in LOOKS_REFUSE:
            raise ClaimError(f"a claim decided in looks cannot use {chk['fn']!r} (yet)")
        args = dict(chk.get("args", {}))
        if args.pop("report_only", False):
            continue
        names = tuple(check_curves(chk))
        out += [c if c.curves else replace(c, curves=names)
                for c in getattr(CHECKS[chk["fn"]](sub, **args), "comparisons", ())]
    return out


def curves_to_continue(claims) -> set:
    """The curves that need the next seed range: ``claims`` holds (LookDecision, curves per comparison)
    for each claim of a figure; a curve goes on while a comparison it takes part in is not settled
    (and stops at the first look at which every one of them is)."""
    return {curve for decision, curves in claims for done, names in zip(decision.settled, curves) if not done
            for curve in names}
