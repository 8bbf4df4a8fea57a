"""Claim checks: small predicates over a figure's table, registered by name, and the evaluation
of a registry entry's claims.

Each check returns ``(status, numbers)``, status one of ``reproduced``, ``not reproduced`` or
``inconclusive``, with the numbers behind it (a ``Verdict``, which also carries the check's
comparisons).  *Reproduced* needs positive evidence: every comparison decided for the claim by a
one-sided test at ``stats.ALPHA`` (one edge of the 95 % interval shown), "similar" by an
equivalence test against a margin fixed in advance in the registry; *not reproduced* needs a
comparison decided against it after Holm's correction over the claim's comparisons.

- ``core``: statuses, the registry of checks, selection of rows and curves, the decision;
- ``paired``: curve-against-curve checks across seeds (outperforms, similar, not worse, ...);
- ``trends``: slopes, rate ratios, late levels against a reference, fractions over time, final levels,
  a fall before the regret bends, coupling,
  timing ratios, linear fits;
- ``closed_form``: checks of closed-form and static tables;
- ``evaluate``: a registry entry's claims (premise, seed blocks, reported numbers), name checks.
"""
from ..stats import paired_ci
from .closed_form import column_is, decreasing, insensitive, interval_below, near_minimum, value_close
from .core import CHECKS, FAILED, INCONCLUSIVE, REPORTED, REPRODUCED, ClaimError, Comparison, Verdict, check
from .core import combine, decide, isin
from .evaluate import CLAIM_LEVEL, claim_source, evaluate, validate_names
from .paired import analogous, band_entry, exceeds_by, group_outperforms, not_worse, outperforms, same_distribution, similar
from .paired import spread_higher
from .paired import similar_across_panels, versus_levels, within_factor, worse_by
from .trends import coupled_identical, falls_before_bend, final_level, fraction_at_least, level_below, linear_fit
from .trends import rate_ratio, ratio_below, slope_at_least, slope_at_most

__all__ = [
    "CHECKS", "CLAIM_LEVEL", "FAILED", "INCONCLUSIVE", "REPORTED", "REPRODUCED", "ClaimError", "Comparison", "Verdict",
    "analogous", "band_entry", "check", "claim_source", "column_is", "combine", "coupled_identical", "decide", "decreasing",
    "evaluate", "exceeds_by", "falls_before_bend", "final_level", "fraction_at_least", "group_outperforms", "insensitive", "interval_below", "isin",
    "level_below", "linear_fit",
    "near_minimum", "not_worse", "outperforms", "paired_ci", "rate_ratio", "ratio_below", "same_distribution", "similar",
    "similar_across_panels", "slope_at_least",
    "slope_at_most", "spread_higher", "validate_names", "value_close", "versus_levels", "within_factor", "worse_by",
]
