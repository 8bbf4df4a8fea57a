"""Group-sequential decisions: seeds added in planned looks, one-sided alpha spent over the looks.

A :class:`Design` plans K looks at n_1 < ... < n_K seeds (information fractions t_k = n_k / n_K,
the paired differences of independent seeds carrying information proportional to n).  The
one-sided level ``alpha`` (``stats.ALPHA`` = 2.5 %) is spent over the looks by a Lan-DeMets
spending function (Lan & DeMets 1983): the O'Brien-Fleming type alpha(t) = 2 - 2 Phi(z_{alpha/2} /
sqrt(t)) (default) or the Pocock type alpha(t) = alpha ln(1 + (e - 1) t).  Look k's z-boundary c_k
is the value whose crossing, not crossed before, has probability alpha(t_k) - alpha(t_{k-1}) under
the null; the joint law of the canonical statistics Z_k = S_k / sqrt(t_k) (S a standard Brownian
motion in t) is integrated by the Armitage-McPherson-Rowe recursion on a Simpson grid (Jennison &
Turnbull 2000, ch. 19).  :func:`crossing` gives the crossing probabilities of any boundaries under a
drift, hence the design's power, and the tests check both against published tables and by Monte Carlo.

A claim at look k is decided by the claims library's rule (``claims.core.decide``) at the look's
*nominal* level alpha_k = 1 - Phi(c_k) (``claims.looks``).  Futility (non-binding, so it cannot raise
the error rate): one side of a test is futile at look k < K when even the effect at a one-sided 80 %
confidence bound of the observed one (z_k + 0.84) would need more than n_K seeds to reach c_K
(:func:`seeds_needed`); at 0 instead of 0.84 (the observed effect itself, about 50 % conditional
power) the stop would cost a design planned at 90 % power nearly half of it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .stats import ALPHA

OPTIMISM = 0.8416                   # Phi^-1(0.8): futility reads the effect at a one-sided 80 % bound


def _norm():
    from scipy.stats import norm    # here, not at import: scipy.stats takes a while

    return norm


# --------------------------------------------------------------------------------------------
# spending functions and boundaries
# --------------------------------------------------------------------------------------------
def obrien_fleming(t, alpha=ALPHA):
    """Lan-DeMets O'Brien-Fleming-type spending: alpha(t) = 2 - 2 Phi(z_{alpha/2} / sqrt(t)),
    t in (0, 1], one-sided ``alpha`` spent in all at t = 1."""
    norm = _norm()
    t = np.asarray(t, dtype=float)
    return 2.0 * norm.sf(norm.isf(alpha / 2.0) / np.sqrt(t))


def pocock(t, alpha=ALPHA):
    """Lan-DeMets Pocock-type spending: alpha(t) = alpha ln(1 + (e - 1) t)."""
    return alpha * np.log1p((math.e - 1.0) * np.asarray(t, dtype=float))


SPENDING = {"obrien-fleming": obrien_fleming, "pocock": pocock}

_SDS = 10.0     # the grid covers the mean +- this many standard deviations
_POINTS = 801   # Simpson points per look (odd)


def _simpson(lo, hi, points=_POINTS):
    """Points and Simpson weights on [lo, hi] (``points`` odd)."""
    x = np.linspace(lo, hi, points)
    w = np.ones(points)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return x, w * (hi - lo) / (3.0 * (points - 1))


def _sf(x):
    from scipy.special import ndtr

    return ndtr(-x)


def _phi(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


class _Recursion:
    """The sub-density of S_k = Z_k sqrt(t_k) on look k's continuation region (lower_k, upper_k),
    look after look, under drift ``drift`` (E S_t = drift t): ``crossing(c)`` is the probability
    that look k + 1 is reached and Z_{k+1} >= c; ``advance`` moves on to look k + 1."""

    def __init__(self, drift=0.0):
        self.drift, self.t = float(drift), 0.0
        self.x, self.g = np.zeros(1), np.ones(1)      # S_0 = 0 with mass 1

    def _move(self, t):
        step = t - self.t
        return self.x + self.drift * step, math.sqrt(step)

    def crossing(self, t, c):
        """P(reach look t, Z_t >= c)."""
        mean, sd = self._move(t)
        return float(self.g @ _sf((c * math.sqrt(t) - mean) / sd))

    def advance(self, t, lower, upper, futile=0.0):
        """Keep the mass reaching look t with lower < Z_t < upper and not |Z_t| < ``futile`` (a
        futility band), on a fresh grid (a Simpson piece per interval kept)."""
        mean, sd = self._move(t)
        centre, spread = self.drift * t, math.sqrt(t)
        lo, hi = max(lower * spread, centre - _SDS * spread), min(upper * spread, centre + _SDS * spread)
        band = futile * spread if futile > 0 else 0.0
        pieces = [(lo, min(hi, -band)), (max(lo, band), hi)] if band else [(lo, hi)]
        xs, gs = [np.zeros(0)], [np.zeros(0)]
        for a, b in pieces:
            if b > a:
                y, w = _simpson(a, b)
                xs.append(y)
                gs.append(_phi((y[:, None] - mean[None, :]) / sd) @ self.g / sd * w)
        self.x, self.g, self.t = np.concatenate(xs), np.concatenate(gs), t


def _fractions(fractions):
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or t[-1] > 1:
        raise ValueError(f"information fractions must increase within (0, 1]; got {list(fractions)}")
    return t


def crossing(upper, fractions, lower=None, drift=0.0, futile=None):
    """Per-look probabilities of stopping by crossing ``upper`` (z-boundaries c_k: Z_k >= c_k) at look
    k, not having stopped before: the trial goes on while lower_k < Z_k < upper_k (no lower boundary
    by default) and not |Z_k| < futile_k (a futility band; none by default), with E Z_k = ``drift``
    sqrt(t_k): ``drift`` = effect / sd x sqrt(n_K), the mean z of a fixed-sample test at n_K."""
    t = _fractions(fractions)
    upper = np.asarray(upper, dtype=float)
    lower = np.full(t.size, -np.inf) if lower is None else np.asarray(lower, dtype=float)
    futile = np.zeros(t.size) if futile is None else np.nan_to_num(np.asarray(futile, dtype=float), neginf=0.0)
    rec, out = _Recursion(drift), []
    for tk, ck, ak, fk in zip(t, upper, lower, futile):
        out.append(rec.crossing(tk, ck) if np.isfinite(ck) else 0.0)
        rec.advance(tk, ak, ck, fk)
    return np.array(out)


def boundaries(fractions, alpha=ALPHA, spending="obrien-fleming"):
    """z-boundaries c_1..c_K of a one-sided level-``alpha`` group-sequential test with looks at
    information ``fractions`` (increasing, the last 1 for the full level) spending alpha by
    ``spending`` (a name in :data:`SPENDING` or a function t, alpha -> spent by t)."""
    return np.array(_boundaries(tuple(float(f) for f in _fractions(fractions)), float(alpha), spending))


@functools.lru_cache(maxsize=64)
def _boundaries(t, alpha, spending):
    spend = SPENDING[spending] if isinstance(spending, str) else spending
    from scipy.optimize import brentq

    spent = np.concatenate([[0.0], [float(spend(tk, alpha)) for tk in t]])
    rec, out = _Recursion(), []
    for k, tk in enumerate(t):
        target = spent[k + 1] - spent[k]
        if target <= 1e-300:
            c = math.inf
        else:
            c = brentq(lambda c: rec.crossing(tk, c) - target, -10.0, 40.0, xtol=1e-10)
        out.append(c)
        rec.advance(tk, -math.inf, c)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# a planned design
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Design:
    """K looks planned at ``looks`` seeds (increasing), one-sided ``alpha`` spent by ``spending``."""
    looks: tuple
    alpha: float = ALPHA
    spending: str = "obrien-fleming"

    def __post_init__(self):
        looks = tuple(int(n) for n in self.looks)
        if not looks or looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:])):
            raise ValueError(f"looks must be increasing seed counts >= 2; got {list(self.looks)}")
        object.__setattr__(self, "looks", looks)

    @classmethod
    def doubling(cls, n0, k=4, **kw):
        """Looks at n0 x {1, 2, 4, ..., 2^(k-1)}."""
        return cls(tuple(int(n0) * 2 ** i for i in range(k)), **kw)

    @property
    def K(self):
        return len(self.looks)

    @property
    def fractions(self):
        return np.array(self.looks, dtype=float) / self.looks[-1]

    @property
    def z(self):
        """z-boundary per look."""
        return boundaries(self.fractions, self.alpha, self.spending)

    @property
    def nominal(self):
        """Nominal one-sided level per look: a p-value at or below it crosses the boundary."""
        return _norm().sf(self.z)

    def futility_z(self, optimism=OPTIMISM):
        """Per look, the z below which one side of a test is futile: even at z + ``optimism`` (the
        effect at a one-sided confidence bound of the observed one) it would need more than n_K seeds
        to reach c_K (:func:`seeds_needed`); -inf at the last look, which decides or leaves open."""
        lower = self.z[-1] * np.sqrt(self.fractions) - optimism
        lower[-1] = -np.inf
        return lower

    def power(self, drift, optimism=None):
        """Probability of deciding for a one-sided claim (of one comparison, decided against at -c_k)
        whose fixed-sample z at n_K would be ``drift`` on average (effect / sd x sqrt(n_K)), with the
        claim's futility stops (both sides futile: |Z_k| below :meth:`futility_z`) when ``optimism``
        is set."""
        futile = None if optimism is None else self.futility_z(optimism)
        return float(crossing(self.z, self.fractions, -self.z, drift, futile).sum())

    def drift_for(self, power=0.9, optimism=OPTIMISM):
        """The drift (effect / sd x sqrt(n_K)) that the design decides with probability ``power``
        (futility stops at ``optimism``; None for none): n_K = (drift x sd / effect)^2 plans the looks
        for an effect of interest (the fixed-sample test needs z_{alpha} + z_{1-power})."""
        from scipy.optimize import brentq

        return brentq(lambda d: self.power(d, optimism) - power, 0.0, 20.0, xtol=1e-8)

    def table(self):
        """Rows (look, n, fraction, z, nominal p, alpha spent by then)."""
        spend = SPENDING[self.spending] if isinstance(self.spending, str) else self.spending
        return [(k + 1, n, float(t), float(c), float(p), float(spend(t, self.alpha)))
                for k, (n, t, c, p) in enumerate(zip(self.looks, self.fractions, self.z, self.nominal))]


def seeds_needed(p, design: Design, k: int, optimism=0.0):
    """Seeds at which a one-sided test with p-value ``p`` at look ``k`` (z_k = Phi^-1(1 - p)) would
    reach the last boundary c_K if its z grew as sqrt(n) from z_k + ``optimism``: n_k (c_K / (z_k +
    optimism))^2, the break-even point (about 50 % power) at ``optimism`` 0; inf where z_k + optimism
    <= 0."""
    z = float(_norm().isf(min(max(p, 0.0), 1.0))) + optimism
    if z <= 0:
        return math.inf
    return math.ceil(design.looks[k - 1] * (design.z[-1] / z) ** 2) if math.isfinite(z) else design.looks[k - 1]
