"""Types and ranges of the claim checks' arguments, checked while the workflow is parsed.

An argument's kind comes from :data:`KINDS` (by name, e.g. every ``rel_tol`` is a tolerance), or
else from its default in the check's signature (a boolean, an integer, a number, a name); a
relation's words from :data:`CHOICES`.  Every number anywhere in a check's arguments must be
finite: NaN passes every ``<`` and would void or flip a verdict without a word.  And no curve (or
grid point of a curve) is compared with itself: a claim ``a: X, b: X`` is "reproduced" with a
difference of exactly 0.
"""
from __future__ import annotations

import inspect
import json
import numbers

from ..registry import non_finite
from .core import CHECKS, ClaimError

# kind: (what the message says is allowed, test)
_NUMBER = ("a finite number", lambda v: _real(v))
_TOLERANCE = ("a number at least 0", lambda v: _real(v) and v >= 0)
_POSITIVE = ("a number more than 0", lambda v: _real(v) and v > 0)
_SHARE = ("a number more than 0 and at most 1", lambda v: _real(v) and 0 < v <= 1)
_COUNT = ("an integer at least 1", lambda v: _integer(v) and v >= 1)
_ROUND = ("an integer at least 0", lambda v: _integer(v) and v >= 0)
_FLAG = ("true or false", lambda v: isinstance(v, bool))
_NAME = ("a name (text)", lambda v: isinstance(v, str))

KINDS = {
    "rel_tol": _TOLERANCE, "tol": _TOLERANCE, "margin": _TOLERANCE, "max_rel_insensitive": _TOLERANCE,
    "min_rel_sensitive": _TOLERANCE, "rel_spread_max": _TOLERANCE, "noise": _TOLERANCE,
    "factor": _POSITIVE, "collapse": _POSITIVE, "threshold": _NUMBER, "max_slope": _NUMBER, "min_slope": _NUMBER,
    "expected": _NUMBER, "x_min": _NUMBER, "x_max": _NUMBER, "at": (_NUMBER[0], lambda v: _real(v) or isinstance(v, dict)),
    "r2_min": ("a number from 0 to 1", lambda v: _real(v) and 0 <= v <= 1), "t_share": _SHARE,
    "n_boot": _COUNT, "t_min": _ROUND, "report_only": _FLAG, "fraction": _SHARE,
}
CHOICES = {
    ("versus_levels", "relation"): ("better", "not_worse", "worse", "similar"),
    ("final_level", "relation"): ("above", "below"),
    ("rate_ratio", "relation"): ("above", "below"),
    ("linear_fit", "interval"): ("percentile", "bca"),
    "location": ("mean", "pseudo-median"),
}


def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _integer(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _kind_of(fn: str, name: str):
    """(allowed, test) of argument ``name`` of check ``fn``, or None when only finiteness is checked."""
    choices = CHOICES.get((fn, name), CHOICES.get(name))
    if choices:
        return f"one of {', '.join(choices)}", lambda v: v in choices
    if name in KINDS:
        return KINDS[name]
    param = inspect.signature(CHECKS[fn]).parameters.get(name)
    default = param.default if param is not None else None
    if isinstance(default, bool):
        return _FLAG
    if isinstance(default, int):
        return "an integer", _integer
    if isinstance(default, float):
        return _NUMBER
    if isinstance(default, str) and name not in getattr(CHECKS[fn], "curve_args", ()):
        return _NAME
    return None


def check_args(where: str, fn: str, args: dict) -> None:
    """ClaimError naming ``where`` (figure and claim), the argument and its value unless every argument of
    check ``fn`` has its kind and every number in them is finite, and no curve is compared with itself."""
    for name, value in args.items():
        bad = non_finite(value)
        if bad is not None:
            at = f"{name}/{bad[0]}" if bad[0] else name
            raise ClaimError(f"{where}: check {fn!r}: argument {at} = {bad[1]!r} is not allowed: a finite number")
        if value == [] and (name == "panels" or name in getattr(CHECKS[fn], "curve_args", ())):
            raise ClaimError(f"{where}: check {fn!r}: argument {name} = [] is not allowed: a non-empty list (an empty "
                             "one would decide the claim on nothing)")
        kind = _kind_of(fn, name)
        if kind is not None and value is not None and not kind[1](value):
            raise ClaimError(f"{where}: check {fn!r}: argument {name} = {value!r} is not allowed: {kind[0]}")
    _no_self_comparison(where, fn, args)


def _no_self_comparison(where: str, fn: str, args: dict) -> None:
    """A curve (or one grid point of a curve) named by two curve arguments of one check, or twice in one."""
    seen = {}
    for name in getattr(CHECKS[fn], "curve_args", ()):
        values = args.get(name)
        for value in values if isinstance(values, list) else [] if values is None else [values]:
            item = json.dumps(value, sort_keys=True, default=str)
            if item in seen:
                raise ClaimError(f"{where}: check {fn!r} compares curve {value!r} with itself ({seen[item]} and "
                                 f"{name}); name two different curves")
            seen[item] = name
