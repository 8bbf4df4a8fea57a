"""A method's look, declared once for every figure: each agent of the library belongs to one
method family, and a family has one colour and one base line style in every plot kind.

A figure whose curves are several methods draws each in its family colour (agents of one family
that can share a figure, e.g. Lin-TS and Neural-TS, in fixed shades of it); several curves of one
agent (e.g. Lin-ES and its ablations) get shades of that colour and line styles in turn; a reading's curve (``<curve> [<label>]``) takes its base curve's colour, dash-dotted (or, with the plot option ``split_readings``, its base curve's look in a panel of its own).  Figures
that sweep a parameter of one method colour by that parameter instead (plot option ``hue_by``).

Where a paper states its style it is used: Sun, Wang & Xu draw ensemble sampling grey and dashed and
its doubling-trick variants dotted.
"""
from __future__ import annotations

import matplotlib.colors as mcolors
import seaborn as sns

_CB = sns.color_palette("colorblind")

# family -> (colour, base line style)
FAMILIES = {
    "Ensemble++": (_CB[0], "-"),
    "Thompson sampling": (_CB[1], "-"),
    "UCB": (_CB[2], "-"),
    "perturbed history": ("#B2182B", "-"),   # dark red: the palette's vermillion, lightened for a second curve, met TS's orange
    "greedy": (_CB[4], "-"),
    "follow the perturbed leader": ("#7570b3", "-"),   # slate blue: the palette's brown is too near a dark orange
    "Ensemble+": (_CB[5], "-"),      # brown: the palette's pink sat too near greedy's purple (they share figures)
    "ensemble sampling": (_CB[7], "--"),
    "ensemble sampling, doubling trick": (_CB[9], ":"),
    "EpiNet": ("#8F8A00", "-"),      # dark olive: the palette's yellow read faintly on white
    "Langevin Monte Carlo TS": ((0.1, 0.1, 0.1), "-"),
}

# agent (registry name) -> family
AGENT_FAMILY = {
    "ensemble_pp": "Ensemble++", "ensemble_pp_neural": "Ensemble++",
    "lints": "Thompson sampling", "logts": "Thompson sampling", "glm_tsl": "Thompson sampling",
    "neural_ts": "Thompson sampling",
    "linucb": "UCB", "glm_ucb": "UCB", "ucb_glm": "UCB", "neural_ucb": "UCB",
    "linphe": "perturbed history", "glinphe": "perturbed history", "logphe": "perturbed history",
    "neural_phe": "perturbed history",
    "egreedy": "greedy", "log_egreedy": "greedy", "greedy_neural": "greedy",
    "glm_fpl": "follow the perturbed leader",
    "ensemble_plus": "Ensemble+",
    "ensemble_sampling": "ensemble sampling", "glm_es": "ensemble sampling", "neural_es": "ensemble sampling",
    "glm_es_anytime": "ensemble sampling, doubling trick", "neural_es_anytime": "ensemble sampling, doubling trick",
    "epinet": "EpiNet",
    "lmcts": "Langevin Monte Carlo TS",
}
# agents of one family that share a figure (e.g. Lin-TS and Neural-TS) are told apart by a fixed shade
# of the family colour: + mixes towards white, - towards black, by that fraction
AGENT_SHADE = {
    "glm_tsl": -0.4, "neural_ts": 0.45,
    "glm_ucb": -0.4, "ucb_glm": 0.4, "neural_ucb": -0.45,
    "glinphe": -0.4, "neural_phe": 0.45,
    "glm_es": -0.45, "neural_es": -0.8,
    "glm_es_anytime": -0.4, "neural_es_anytime": -0.4,
}
READING_LINESTYLE = "-."                                      # the first reading's curves
READING_LINESTYLES = [READING_LINESTYLE, ":", (0, (6, 2, 1, 2, 1, 2))]   # readings in order of appearance
_MORE_STYLES = ["-", "--", ":", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (8, 2))]


def family_of(agent: str | None) -> str | None:
    return AGENT_FAMILY.get(agent) if agent else None


def mix(color, frac: float):
    """``color`` mixed towards white (``frac`` > 0) or black (``frac`` < 0) by ``|frac|``."""
    rgb = mcolors.to_rgb(color)
    target = 1.0 if frac > 0 else 0.0
    return tuple(c + (target - c) * abs(frac) for c in rgb)


def agent_look(agent: str):
    """(colour, base line style) of ``agent`` in every figure, or None for an agent of no family."""
    fam = family_of(agent)
    if fam is None:
        return None
    color, style = FAMILIES[fam]
    return mix(color, AGENT_SHADE.get(agent, 0.0)), style


def shade(color, i: int, n: int):
    """The ``i``-th of ``n`` shades of ``color``: the colour itself first, then mixed towards white
    (at most 55 %) and black in turn, so neighbours stay apart."""
    if n <= 1 or i == 0:
        return mcolors.to_rgb(color)
    k = (i + 1) // 2
    frac = 0.55 * k / ((n + 1) // 2)
    return mix(color, frac if i % 2 else -min(frac, 0.45))


def method_styles(curves, methods: dict, readings: dict) -> dict:
    """curve -> {color, linestyle} for the curves whose agent belongs to a known family (``methods``:
    curve -> agent name; ``readings``: a reading's curve -> its base curve).  The first curve of an
    agent takes the agent's look; further curves of the same agent (e.g. an ablation) shades of its
    colour in other line styles; a reading's curve its base curve's colour in its reading's line style
    (:data:`READING_LINESTYLES`, one per reading).  Curves of no known family are left out (the caller
    colours them)."""
    by_agent: dict[str, list] = {}
    for c in curves:
        if c not in readings and agent_look(methods.get(c)):
            by_agent.setdefault(methods[c], []).append(c)
    styles = {}
    for agent, members in by_agent.items():
        color, base = agent_look(agent)
        order = [base] + [s for s in _MORE_STYLES if s != base]
        for i, c in enumerate(members):
            styles[c] = {"color": shade(color, i, len(members)), "linestyle": order[i % len(order)]}
    styles.update(reading_styles(curves, readings, styles, methods))
    return styles


def reading_styles(curves, readings: dict, styles: dict, methods: dict | None = None) -> dict:
    """curve -> {color, linestyle} for the readings' curves (``readings``: a reading's curve -> its base
    curve): the base curve's colour in ``styles`` (else its agent's look) in its reading's line style
    (:data:`READING_LINESTYLES`, one per reading, in order of appearance)."""
    out, which = {}, []                   # which: reading labels ("<base curve> [<label>]") in order of appearance
    for c in curves:
        base_curve = readings.get(c)
        if base_curve is None:
            continue
        label = c[len(base_curve):] if c.startswith(base_curve) else c
        which += [label] if label not in which else []
        dash = READING_LINESTYLES[which.index(label) % len(READING_LINESTYLES)]
        if base_curve in styles:
            out[c] = {"color": styles[base_curve]["color"], "linestyle": dash}
        elif agent_look((methods or {}).get(c)):
            out[c] = {"color": agent_look(methods[c])[0], "linestyle": dash}
    return out
