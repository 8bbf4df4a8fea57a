"""The library's shape: the registry is pure (no analysis code), the library has no import circle,
the command line holds only argument handling, no module grows past a few hundred lines, building
the workflow's job graph imports no torch, agent names are imported lazily, and a new agent class
needs no edit to the runner, the registry code, the cost model or the rules."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_fresh_python, timeout_s

from ensemble_bandits import cells, costs
from ensemble_bandits.agents import AGENTS
from ensemble_bandits.agents.linear import LinearAgent
from ensemble_bandits.catalog import hyper

PKG = Path(__file__).resolve().parents[1] / "src" / "ensemble_bandits"
ANALYSIS = {"claims", "aggregate", "plotting", "paper_tables", "report", "findings", "runner", "agents"}


def _imports(path: Path) -> set[str]:
    """Library modules a file imports (first component after the package), lazy imports included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level >= 1:
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ensemble_bandits."):
            names.add(node.module.split(".")[1])
    return names


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        mod = rel.parts[0] if len(rel.parts) > 1 else rel.name    # a package counts as one node
        graph.setdefault(mod, set()).update(m for m in _imports(path) if m != mod)
    return graph


def test_registry_imports_no_analysis_code():
    assert not (_imports(PKG / "registry.py") & ANALYSIS), _imports(PKG / "registry.py")


def test_plots_and_cell_facts_reach_no_simulation_code():
    """The plots read tables through the neutral ``tables`` (reaching neither ``aggregate``, which reads
    run files, nor ``runner``); what is known of a cell without running it (``cells``) and those who read it
    (``costs``, ``validation``, ``archive``, ``tables``, ``aggregate``) never reach the runner; and
    ``cli`` leaves building a figure's table to ``aggregate``."""
    graph = _graph()
    assert not _reach(graph, "plotting") & {"aggregate", "runner"}, sorted(_reach(graph, "plotting"))
    for mod in ("cells", "costs", "validation", "archive", "tables", "aggregate"):
        assert "runner" not in _reach(graph, mod), (mod, sorted(_reach(graph, mod)))
    tree = ast.parse((PKG / "cli.py").read_text())
    assert not {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} & {"build_table", "figure_spec"}


def _reach(graph: dict, start: str) -> set:
    """Every module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_library_has_no_import_circle():
    graph = _graph()
    circles = sorted(m for m in graph if m in _reach(graph, m) and m != "__init__")
    assert not circles, {m: sorted(graph[m]) for m in circles}


MAX_MODULE_LINES = 600
CLI_STATEMENTS = 6          # a command: read its arguments, call one library function, say its error


def _statements(fn: ast.FunctionDef) -> int:
    """Statements of a function, its docstring, imports and nested definitions not counted."""
    return sum(1 for x in ast.walk(fn) if isinstance(x, ast.stmt) and x is not fn
               and not isinstance(x, (ast.Import, ast.ImportFrom, ast.FunctionDef))
               and not (isinstance(x, ast.Expr) and isinstance(x.value, ast.Constant)))


def test_the_command_line_holds_only_argument_handling():
    """Each subcommand of cli.py reads its arguments and calls one library function (the logic lives
    in the module of its concept), and cli.py defines nothing but its commands, the parser, ``main`` and
    small argument helpers."""
    tree = ast.parse((PKG / "cli.py").read_text())
    long = {f.name: _statements(f) for f in tree.body if isinstance(f, ast.FunctionDef)
            and f.name not in ("build_parser", "main") and _statements(f) > CLI_STATEMENTS}
    assert not long, long
    assert not [n for n in tree.body if isinstance(n, ast.ClassDef)]


def test_no_library_module_is_longer_than_a_reader_takes_in():
    long = {str(p.relative_to(PKG)): n for p in sorted(PKG.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_resolving_and_validating_every_figure_imports_no_torch():
    """What the Snakefile does while it builds the job graph: load, resolve and check every figure
    at every scale (agents included), without importing torch."""
    code = ("import sys; from ensemble_bandits import cells, registry, validation, data, report\n"
            "entries = registry.load_registry('config', 'workflow/schemas/registry.schema.yaml')\n"
            "cfg = registry.with_defaults(registry.load_yaml('config/config.yaml'))\n"
            "for e in entries.values():\n"
            "    for s in registry.SCALES:\n"
            "        fig = registry.resolve(e, s, cfg['scales'])\n"
            "        validation.check_figure(e, fig, cfg['scales'])\n"
            "        [cells.gpu_request(x['cell'], 1) for x in fig['series']]\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "print('ok', len(entries))\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=PKG.parents[1], capture_output=True, text=True,
                         timeout=timeout_s(300))
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stdout + res.stderr


def test_agent_names_are_listed_without_importing_their_modules():
    code = ("import sys; from ensemble_bandits.agents import AGENTS\n"
            "assert 'lints' in AGENTS and 'ensemble_pp' in sorted(AGENTS)\n"
            "assert 'ensemble_bandits.agents.linear' not in sys.modules\n"
            "AGENTS['lints']\n"
            "assert 'ensemble_bandits.agents.linear' in sys.modules\n"
            "print('ok')\n")
    run_fresh_python(code)


class _Toy(LinearAgent):
    """A new agent as a family module would add it: it declares what the workflow needs."""

    name = "toy"
    uses_accelerator = True
    distribution_params = {"noise": "vector"}

    def __init__(self, setting, seeds, horizon, models: int = 3, noise: str = "gaussian"):
        super().__init__(setting, seeds, horizon)

    @classmethod
    def ensemble_size(cls, spec, horizon):
        return int(hyper(cls, spec, "models"))


def test_a_new_agent_needs_no_edit_to_runner_registry_or_costs(monkeypatch):
    monkeypatch.setitem(AGENTS, "toy", _Toy)
    cell = {"env": {"name": "russo_finite", "d": 5, "n_arms": 10}, "agent": {"name": "toy", "models": 7},
            "horizon": 100}
    cells.check_cell(cell)                                                  # names and hyper-parameters
    with pytest.raises(ValueError, match="unknown distribution 'gausian'"):
        cells.check_cell({**cell, "agent": {"name": "toy", "noise": "gausian"}})
    with pytest.raises(ValueError, match=r"unknown hyper-parameter\(s\) \['M'\]"):
        cells.check_cell({**cell, "agent": {"name": "toy", "M": 2}})
    assert cells.cell_dimensions(cell) == {"d": 5, "K": 10, "members": 7, "horizon": 100, "runs": 1}
    assert cells.cell_dimensions({**cell, "agent": {"name": "toy"}})["members"] == 3     # the default
    assert cells.gpu_request(cell, 2) == 2
    one = {**cell, "agent": {"name": "toy", "models": 1}}
    assert costs.cell_cost_seconds(cell, 10) > costs.cell_cost_seconds(one, 10)
