"""The four papers: each one's id prefix, citation and arXiv id, in report order, and the paper item a
figure replicates (:func:`paper_figure`).  The one list the registry (figure ids), the report, the
plots and the workflow's paper targets read (the registry schema's enum of ``paper`` is tested
against it)."""
from __future__ import annotations

import re

PAPERS = {   # prefix: (citation, arXiv id)
    "phe": ("Kveton et al. 2019, Perturbed-History Exploration in Stochastic Linear Bandits (LinPHE)", "1903.09132"),
    "lines": ("Lee & Oh 2024, Improved Regret of Linear Ensemble Sampling (theory only: designed experiments)",
              "2411.03932"),
    "glmes": ("Sun, Wang & Xu 2025, Provable Anytime Ensemble Sampling in Nonlinear Contextual Bandits (GLM-ES)",
              "2510.10730"),
    "epp": ("Li, Xu, Wang & Luo 2025, Scalable Exploration via Ensemble++", "2407.13195"),
}
PREFIXES = tuple(PAPERS)
CITATIONS = {prefix: citation for prefix, (citation, _) in PAPERS.items()}
ARXIV = {prefix: arxiv for prefix, (_, arxiv) in PAPERS.items()}

PAPER_REF = re.compile(r"\(((?:Fig|Figs|Table|Prop)\.?\s[^()]*|text claim of section [\d.]+)\)\s*$")


def paper_figure(record: dict) -> str:
    """The paper's own item a figure replicates (from its title) and the paper's arXiv id."""
    m = PAPER_REF.search(record.get("title", ""))
    item = m.group(1).replace("text claim of section", "§") if m else "designed experiment"
    return f"{item}, arXiv {ARXIV[record['paper']]}"
