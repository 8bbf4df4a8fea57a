"""Replays of an independent test of 113 bad inputs against the workflow (ids R01 ... S06), of its 6
interruptions (I01 ... I06) and 2 determinism runs (D01, D02): what a user sees now.

Each id is covered exactly once: by a test here, whose parameter id is the case's id (so
``pytest -k V03`` finds it), or by the existing test that already asserts it, named in ``COVERED``
(checked to exist, so the mapping cannot rot).  ``VERDICTS`` is each bad input's verdict now;
docs/reliability.md prints its counts (checked below).

Cheap first: the checks the workflow runs while it builds its job graph are called in process (the
Snakefile's config checks, ``registry.load_registry``, ``registry.resolve`` + ``validation.check_figure``
as common.smk's ``figure()`` calls them, ``cells.check_cell``, the command line's ``cli.main``).
Snakemake runs only where the case lives in Snakemake itself: its own parsing of ``--config`` and
``--configfile`` and the Snakefile's first lines (Snakemake's command line called once per case, all
in one process), one dry run that replays the state an interrupted run leaves (with hostile paths,
titles and a huge ``seeds_per_job`` batched in), one dry run of a target outside the project, and
one real run of a single local job (a directory that cannot be written).
"""
from __future__ import annotations

import ast
import base64
import copy
import errno
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ensemble_bandits import cells, cli, data, registry, validation
from ensemble_bandits.registry import RegistryError
from helpers import ROOT, copy_project, repo_data_dir, timeout_s

CONFIG_SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
REGISTRY_SCHEMA = ROOT / "workflow" / "schemas" / "registry.schema.yaml"

# Every id of the independent test: 113 bad inputs (there is no K09 and no V10), 6 interruptions, 2
# determinism runs.
AUDIT_IDS = """
    R01 R02 R03 R04 R05 R06 R07 R08 R09 R10 R11 R12 R13 R14
    R15 R16 R17 R18 R19 R20 R21 R22
    C01 C02 C03 C04 C05 C06 C07 C08 C09 C10 C11 C12 C13 C14
    C15 C16 C17 C18 C19 C20 C21 C22 C23 C24 C25 C26 C27
    G01 G02 G03 G04 G05 G06 G07 G08 G09 G10 G11 G12 G13 G14
    G15 G16 G17 G18
    V01 V02 V03 V04 V05 V06 V07 V08 V09 V11
    K01 K02 K03 K04 K05 K06 K07 K08 K10 K11 K12 K13
    L01 L02 L03 L04 L05 L06 L07 L08 L09 L10 L11 L12 L13 L14
    L15 L16 L17 L18
    S01 S02 S03 S04 S05 S06
    I01 I02 I03 I04 I05 I06
    D01 D02
""".split()
BAD_INPUT_IDS = [i for i in AUDIT_IDS if i[0] not in "ID"]

# Verdict of each bad input now:
#   clear      one line naming the cause, before any job runs
#   recovery   fails in the job that meets it (a damaged or foreign cached file, a full disk), in one
#              line naming the file and the documented fix; nothing else is lost
#   handled    an odd but valid input, handled correctly (accepted, coerced, quoted or warned)
#   vague      an error before any job, that does not name the real cause
#   traceback  a Python traceback (in Snakemake itself, before or outside the workflow's code)
#   silent     accepted without a word although it is wrong
VERDICTS = {
    **{f"R{i:02d}": "clear" for i in range(1, 23)},
    "K01": "recovery", "K06": "recovery",
    **{c: "clear" for c in ("C01", "C03", "C04", "C10", "C11", "C12", "C13", "C14", "C15", "C16", "C17", "C19",
                            "C21", "C22", "C25")},
    "C02": "handled", "C05": "vague", "C23": "vague", "C06": "clear", "C09": "clear", "C07": "traceback",
    "C08": "traceback", "C18": "handled", "C20": "clear", "C24": "traceback", "C26": "clear", "C27": "clear",
    **{f"G{i:02d}": "clear" for i in range(1, 19)}, "G09": "handled",
    **{v: "clear" for v in ("V01", "V02", "V03", "V04", "V05", "V06", "V07", "V08", "V09", "V11")},
    "K10": "recovery", "K11": "traceback", "K02": "recovery", "K03": "recovery", "K04": "handled",
    "K05": "recovery", "K07": "handled", "K08": "clear", "K12": "recovery", "K13": "clear",
    **{f"L{i:02d}": "clear" for i in range(1, 19)}, "L08": "handled", "L10": "handled", "L16": "handled",
    "S01": "handled", "S02": "handled", "S03": "handled", "S04": "clear", "S05": "clear", "S06": "clear",
}
VERDICT_ROWS = [  # (verdict, the words docs/reliability.md uses for it)
    ("clear", "one line naming the cause, before any job runs"),
    ("recovery", "fails in the job that meets it, naming the file and the documented fix"),
    ("handled", "odd but valid, handled correctly (accepted, coerced, quoted or warned)"),
    ("vague", "an error before any job that does not name the cause"),
    ("traceback", "a Python traceback"),
    ("silent", "accepted without a word"),
]

# Cases an existing test already asserts: audit id -> "tests/<file>.py::<test>[<parameter>]" (the
# parameter, when given, is a string of that file, e.g. a case name of its parameter table).
COVERED = {
    "R01": "tests/test_config_errors.py::test_typo_fails_the_dry_run_with_a_clear_message[unknown config key]",
    "R02": "tests/test_config_errors.py::test_typo_fails_the_dry_run_with_a_clear_message"
           "[skip pattern matching nothing]",
    "R03": "tests/test_config_errors.py::test_typo_fails_the_dry_run_with_a_clear_message[unknown bare target]",
    "R04": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[unknown scale]",
    "R05": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[wrong type in config]",
    "R06": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[unknown figure id]",
    "R07": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[unknown agent]",
    "R08": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[unknown environment]",
    "R09": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[unknown distribution]",
    "R10": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[unknown hyper-parameter]",
    "R11": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[claim naming a missing curve]",
    "R12": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[wrong type in registry]",
    "R13": "tests/test_robustness.py::test_bad_input_fails_with_a_clear_message[out of range in registry]",
    "R14": "tests/test_config_errors.py::test_typo_fails_the_dry_run_with_a_clear_message"
           "[duplicate key in config.yaml]",
    "R15": "tests/test_config_errors.py::test_typo_fails_the_dry_run_with_a_clear_message"
           "[duplicate key in the registry]",
    "R17": "tests/test_config_errors.py::test_duplicate_key_in_a_configfile_given_on_the_command_line",
    "R18": "tests/test_robustness.py::test_bad_data_directory_fails_with_the_file_and_checksum[data directory missing]",
    "R19": "tests/test_robustness.py::test_bad_data_directory_fails_with_the_file_and_checksum[data file missing]",
    "R20": "tests/test_robustness.py::test_bad_data_directory_fails_with_the_file_and_checksum[data checksum mismatch]",
    "R21": "tests/test_data.py::test_missing_file_names_file_and_checksum",
    "K01": "tests/test_robustness.py::test_corrupted_run_file_names_the_file_and_recomputes_once_deleted",
    "K06": "tests/test_cli.py::test_claims_command_on_a_corrupt_table_prints_one_line",
    "C26": "tests/test_bad_values.py::test_an_absurd_seed_count_is_refused_before_the_graph_is_built",
    "G01": "tests/test_config_errors.py::test_a_hostile_figure_id_is_refused_at_load[phe-a b]",
    "G02": "tests/test_config_errors.py::test_a_hostile_figure_id_is_refused_at_load[phe-x;touch PWNED]",
    "G03": "tests/test_config_errors.py::test_a_hostile_figure_id_is_refused_at_load[phe-../x]",
    "G04": "tests/test_config_errors.py::test_a_hostile_figure_id_is_refused_at_load[xyz-fig1]",
    "G07": "tests/test_config_errors.py::test_a_registry_whose_top_level_is_a_list_is_one_clear_error",
    "G08": "tests/test_bad_values.py::test_a_registry_file_that_is_not_utf8_is_one_line",
    "G11": "tests/test_claims.py::test_validate_names",
    "G12": "tests/test_bad_values.py::test_a_misspelt_claim_argument_is_refused_at_load_naming_the_arguments",
    "G15": "tests/test_bad_values.py::test_a_grid_variable_typo_in_a_scale_override_is_refused",
    "G16": "tests/test_registry.py::test_load_registry_invalid_entry",
    "G17": "tests/test_plotting.py::test_a_misspelt_plot_option_or_static_table_fails_before_any_job",
    "V01": "tests/test_bad_values.py::test_a_bad_agent_value_is_refused_naming_key_value_and_what_is_allowed",
    "V02": "tests/test_bad_values.py::test_a_bad_agent_value_is_refused_naming_key_value_and_what_is_allowed",
    "V03": "tests/test_bad_values.py::test_a_bad_agent_value_is_refused_naming_key_value_and_what_is_allowed",
    "V05": "tests/test_bad_values.py::test_a_bad_agent_value_is_refused_naming_key_value_and_what_is_allowed",
    "V06": "tests/test_bad_values.py::test_a_bad_agent_value_is_refused_naming_key_value_and_what_is_allowed",
    "V07": "tests/test_bad_values.py::test_a_bad_environment_value_is_refused",
    "V08": "tests/test_bad_values.py::test_a_bad_environment_value_is_refused",
    "V09": "tests/test_bad_values.py::test_a_bad_environment_value_is_refused",
    "K02": "tests/test_run_identity.py::test_another_cells_file_copied_in_is_refused",
    "K03": "tests/test_run_identity.py::test_a_file_holding_part_of_its_seeds_is_refused",
    "K05": "tests/test_run_identity.py::test_a_file_of_another_algorithms_version_is_refused",
    "K08": "tests/test_robustness.py::test_kill_and_resume",
    "K12": "tests/test_bad_values.py::test_a_failing_report_job_leaves_the_committed_report_and_names_the_fix",
    "L03": "tests/test_config_errors.py::test_cli_estimate_prints_cells_jobs_and_cpu_time",
    "L04": "tests/test_cli.py::test_unknown_scale_is_refused_with_the_choices",
    "L05": "tests/test_bad_values.py::test_cli_simulate_bad_arguments_are_one_line",
    "L06": "tests/test_bad_values.py::test_cli_simulate_bad_arguments_are_one_line",
    "L14": "tests/test_bad_values.py::test_cli_simulate_bad_arguments_are_one_line",
    "L16": "tests/test_cli.py::test_outside_any_project_the_cli_uses_its_own_checkout",
    "S04": "tests/test_config_errors.py::test_a_hostile_id_or_skip_pattern_executes_nothing",
    "S06": "tests/test_config_errors.py::test_a_hostile_skip_pattern_is_refused[phe-fig1;touch PWNED]",
    "I02": "tests/test_robustness.py::test_kill_and_resume",
    "I06": "tests/test_bad_values.py::test_a_job_killed_by_a_signal_says_so",
    "D01": "tests/test_robustness.py::test_split_invariance_through_the_workflow",
    "D02": "tests/test_threads.py::test_torch_agents_give_the_same_numbers_at_one_and_two_threads",
}


# ---------------------------------------------------------------------------------------------
# the mapping itself


def _replayed_here() -> list:
    """The audit ids of this module's tests (their parameter ids)."""
    found = []
    for name, fn in globals().items():
        if not name.startswith("test_"):
            continue
        for mark in getattr(fn, "pytestmark", []):
            if mark.name != "parametrize":
                continue
            ids = mark.kwargs.get("ids")
            values = mark.args[1]
            for i, value in enumerate(values):
                pid = getattr(value, "id", None) or (ids[i] if ids else None)
                if pid in AUDIT_IDS:
                    found.append(pid)
    return found


def test_every_audit_id_is_covered_exactly_once():
    here = _replayed_here()
    assert len(AUDIT_IDS) == len(set(AUDIT_IDS)) == 121 and len(BAD_INPUT_IDS) == 113
    assert len(here) == len(set(here)), sorted(i for i in here if here.count(i) > 1)
    assert not set(here) & set(COVERED), sorted(set(here) & set(COVERED))
    assert sorted(set(here) | set(COVERED)) == sorted(AUDIT_IDS)
    assert sorted(VERDICTS) == sorted(BAD_INPUT_IDS)
    assert set(VERDICTS.values()) <= {v for v, _ in VERDICT_ROWS}


@functools.lru_cache(maxsize=None)
def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"))


@pytest.mark.parametrize("aid", sorted(COVERED), ids=[f"covered-{i}" for i in sorted(COVERED)])
def test_the_covering_test_exists(aid):
    """The test COVERED names for ``aid`` is a test function of its file, and its parameter a string
    there (``pytest -k V03`` finds this test, which says where the case is asserted)."""
    m = re.fullmatch(r"(tests/\w+\.py)::(\w+)(?:\[(.+)\])?", COVERED[aid])
    assert m, COVERED[aid]
    path, name, param = m.groups()
    tree = _tree(path)
    assert any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body), f"no {name} in {path}"
    if param:
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert param in strings, f"{path} has no case {param!r}"


def test_the_reliability_page_prints_these_counts():
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert "tests/test_audit_cases.py" in text and "independent test of 113 bad inputs" in text
    for verdict, words in VERDICT_ROWS:
        n = sum(v == verdict for v in VERDICTS.values())
        assert f"| {words} | {n} |" in text, (verdict, n)
    assert f"| bad inputs tried | {len(VERDICTS)} |" in text


# ---------------------------------------------------------------------------------------------
# the Snakefile's config checks, in process (C*)


def test_the_snakefile_checks_config_in_this_order():
    """What ``snakefile_config`` replays is what the Snakefile runs, in the same order."""
    text = (ROOT / "Snakefile").read_text(encoding="utf-8")
    calls = ["validation.check_config_args(workflow.config_settings.config_args)",
             'validation.check_config(config, workflow.configfiles, "workflow/schemas/config.schema.yaml")',
             'validate(config, "workflow/schemas/config.schema.yaml")']
    at = [text.find(c) for c in calls]
    assert -1 not in at and at == sorted(at), at


def snakefile_config(args=(), configfiles=()):
    """The config the Snakefile checks for ``snakemake --config ARGS --configfile FILES``: Snakemake's
    own parsing (``parse_config``, ``ConfigSettings``) and the ``configfile:`` merge, then the
    Snakefile's checks (check_config_args, check_config, validate)."""
    from snakemake.cli import parse_config
    from snakemake.common.configfile import load_configfile
    from snakemake.settings.types import ConfigSettings
    from snakemake.utils import update_config, validate

    settings = ConfigSettings(config=parse_config(list(args)), configfiles=[Path(f) for f in configfiles],
                              config_args=list(args) or None)
    config = load_configfile(str(ROOT / "config" / "config.yaml"))
    update_config(config, settings.overwrite_config)
    validation.check_config_args(settings.config_args)
    validation.check_config(config, [ROOT / "config" / "config.yaml", *settings.configfiles], CONFIG_SCHEMA)
    validate(config, str(CONFIG_SCHEMA))
    return config


CONFIG_CASES = [  # (id, --config entries, a --configfile's text or None, the message)
    ("C01", ["seeds_per_job=-3"], None, "ValidationError: -3 is less than the minimum of 1"),
    ("C03", ["seeds_per_job=1.5"], None, "ValidationError: 1.5 is not of type 'integer'"),
    ("C04", ["scale=Smoke"], None, "ValidationError: 'Smoke' is not one of ['smoke', 'default', 'paper']"),
    ("C10", ["scale="], None, "ValidationError: None is not of type 'string'"),
    ("C11", [], "scales:\n  smoke: null\n", "ValidationError: None is not of type 'object'"),
    ("C12", [], "scales:\n  smoke: {max_seed: 4}\n",
     "ValidationError: Additional properties are not allowed ('max_seed' was unexpected)"),
    ("C13", [], "scale: [smoke]\n", "ValidationError: ['smoke'] is not of type 'string'"),
    ("C14", ["skip=epp-fig1"], None, "ValidationError: 'epp-fig1' is not of type 'array'"),
    ("C15", ["gpu=-1"], None, "ValidationError: -1 is less than the minimum of 0"),
    ("C16", ["device=tpu"], None, "ValidationError: 'tpu' is not one of ['cpu', 'cuda']"),
    ("C17", ["torch_threads=0"], None, "ValidationError: 0 is less than the minimum of 1"),
    ("C19", ["reuse_records=yes"], None, "ValidationError: 'yes' is not one of [True, False, 'true', 'false']"),
    ("C21", ["data_dir="], None, "ValidationError: None is not of type 'string'"),
    ("C22", ["shared_pass_group=0"], None, "ValidationError: 0 is less than the minimum of 1"),
    ("C25", ["data_fetch=1"], None, "ValidationError: 1 is not one of [True, False, 'true', 'false']"),
]


@pytest.mark.parametrize("args,text,message", [pytest.param(*c[1:], id=c[0]) for c in CONFIG_CASES])
def test_a_bad_config_value_is_one_schema_error(tmp_path, args, text, message):
    from snakemake.exceptions import WorkflowError

    files = []
    if text is not None:
        files = [tmp_path / "extra.yaml"]
        files[0].write_text(text)
    with pytest.raises(WorkflowError) as err:      # Snakemake prints a WorkflowError without a traceback
        snakefile_config(args, files)
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize("args", [pytest.param(["reuse_records=True"], id="C18")])
def test_a_python_boolean_on_the_command_line_is_a_boolean(args):
    assert snakefile_config(args)["reuse_records"] is True


@pytest.mark.parametrize("seeds", [pytest.param(10 ** 6, id="C27")])
def test_a_million_seeds_is_refused_as_a_likely_typo(fixture_entries, config, seeds):
    entry = dict(fixture_entries["phe-regret"], seeds=seeds)
    with pytest.raises(RegistryError, match=r"1,000,000 seeds at scale paper is more than 100,000; a typo\?"):
        registry.resolve(entry, "paper", config["scales"])


@pytest.mark.parametrize("case", [pytest.param("R16", id="R16")])
def test_a_key_twice_in_the_config_schema_names_the_file_and_both_lines(tmp_path, config, case):
    schema = tmp_path / "config.schema.yaml"
    text = CONFIG_SCHEMA.read_text(encoding="utf-8")
    anchor = "  seeds_per_job:\n    type: integer\n"
    assert text.count(anchor) == 1
    schema.write_text(text.replace(anchor, anchor + "    type: string\n"))
    line = text[:text.index(anchor)].count("\n") + 2
    with pytest.raises(RegistryError, match=rf"config\.schema\.yaml, line {line + 1}: duplicate key 'type' "
                                            rf"\(first at line {line}\)"):
        validation.check_config(config, [], schema)


# ---------------------------------------------------------------------------------------------
# registry files and entries, in process, as common.smk loads and resolves them (G*, V*, K13)


FIXTURE_FIGURES = ROOT / "tests" / "data" / "registry" / "figures"     # the fixture registry's files


def edited_registry(tmp_path, name, fid, old, new):
    """The fixture registry's figures/<name> (tests/data/registry) alone in a scratch config dir, ``old``
    replaced by ``new`` once inside the entry ``fid`` (as a user edits the file)."""
    text = (FIXTURE_FIGURES / name).read_text(encoding="utf-8")
    start = text.index(f"\n{fid}:\n")
    end = text.find("\n\n", start + 2)
    end = len(text) if end < 0 else end
    assert text[start:end].count(old) == 1, (fid, old)
    figures = tmp_path / "config" / "figures"
    figures.mkdir(parents=True)
    (figures / name).write_text(text[:start] + text[start:end].replace(old, new) + text[end:], encoding="utf-8")
    return tmp_path / "config"


def dag_check(entry, config, scale="smoke"):
    """What common.smk's figure() checks of a registry entry while the job graph is built."""
    fig = registry.resolve(entry, scale, config["scales"])
    validation.check_figure(entry, fig, config["scales"])
    return fig


def _registry_dir(tmp_path, text, name="zz.yaml"):
    figures = tmp_path / "config" / "figures"
    figures.mkdir(parents=True)
    (figures / name).write_text(text)
    return tmp_path / "config"


@pytest.mark.parametrize("text, message", [
    pytest.param("lonely:\n  title: t\n  caption: c\n  kind: table\n  static: {name: lines_table1}\n",
                 r"zz\.yaml: figure id 'lonely' is not allowed: an id is a paper prefix \(phe, lines, glmes, epp\), a dash",
                 id="G05"),                                    # an id without a paper prefix
    pytest.param("lines-null:\n", r"zz\.yaml: figure 'lines-null', key \(entry\): None is not of type 'object'",
                 id="G06"),                                    # an empty entry
])
def test_a_bad_registry_entry_is_refused_at_load_naming_it(tmp_path, text, message):
    cfg = _registry_dir(tmp_path, text)
    with pytest.raises(RegistryError, match=message):
        registry.load_registry(cfg, REGISTRY_SCHEMA)


@pytest.mark.parametrize("case", [pytest.param("G09", id="G09")])
def test_an_empty_registry_file_adds_nothing(tmp_path, case):
    cfg = _registry_dir(tmp_path, "")
    shutil.copy(FIXTURE_FIGURES / "lines.yaml", cfg / "figures" / "lines.yaml")
    loaded = registry.load_registry(cfg, REGISTRY_SCHEMA)
    assert loaded and all(fid.startswith("lines-") for fid in loaded)


@pytest.mark.parametrize("case", [pytest.param("G10", id="G10")])
def test_an_anchor_typo_names_the_file_the_alias_and_the_line(tmp_path, case):
    text = (FIXTURE_FIGURES / "lines.yaml").read_text(encoding="utf-8")
    alias = re.search(r"(?m)^ *(?:- |<<: )\*([\w-]+)", text)
    assert alias, "the fixture's lines.yaml uses no YAML alias any more: pick another anchor"
    line = text[:alias.start(1)].count("\n") + 1
    bad = text[:alias.end()] + "x" + text[alias.end():]
    cfg = _registry_dir(tmp_path, bad, "lines.yaml")
    # libyaml (registry._StrictLoader when built with it) names the line and column, not the alias
    with pytest.raises(RegistryError, match=rf"(?s)lines\.yaml: not valid YAML: found undefined alias"
                                            rf"( '?{alias.group(1)}x'?)?\s.*lines\.yaml\", line {line}, column "):
        registry.load_registry(cfg, REGISTRY_SCHEMA)


SCHEMA_EDITS = [  # (id, file, figure, old, new, the message's tail)
    ("G13", "lines.yaml", "lines-audit", "smoke: {seeds: 4, horizon: 20", "smoke: {seeds: 4, horizn: 20",
     "figure 'lines-audit', key scales/smoke: Additional properties are not allowed ('horizn' was unexpected)"),
]


@pytest.mark.parametrize("name,fid,old,new,message", [pytest.param(*c[1:], id=c[0]) for c in SCHEMA_EDITS])
def test_a_schema_error_in_a_scale_override_names_the_key(tmp_path, name, fid, old, new, message):
    with pytest.raises(RegistryError) as err:
        registry.load_registry(edited_registry(tmp_path, name, fid, old, new), REGISTRY_SCHEMA)
    assert str(err.value).endswith(message), str(err.value)


@pytest.mark.parametrize("case", [pytest.param("G14", id="G14")])
def test_an_empty_grid_in_a_scale_override_is_refused(tmp_path, case):
    cfg = edited_registry(tmp_path, "lines.yaml", "lines-audit", "grid: {a: [2]}", "grid: {a: []}")
    with pytest.raises(RegistryError, match=r"figure 'lines-audit', key scales/smoke/grid/a: \[\] should be non-empty"):
        registry.load_registry(cfg, REGISTRY_SCHEMA)


@pytest.mark.parametrize("case", [pytest.param("G18", id="G18")])
def test_a_curve_restricted_to_a_missing_panel_is_refused_naming_the_panel(fixture_entries, config, case):
    entry = copy.deepcopy(fixture_entries["phe-regret"])
    curve = next(c for c in entry["curves"] if c["label"] == "LinUCB")
    curve["panels"] = ["d = 4"]
    for e in (entry, dict(entry, claims=[])):      # named by a claim or not: the panel is the cause
        with pytest.raises(RegistryError, match=r"figure 'phe-regret', curve 'LinUCB' is restricted to panel\(s\) "
                                                r"\['d = 4'\] that the figure does not have; panels: "
                                                r"\['d = 2', 'd = 3'\]"):
            dag_check(e, config)
    curve["panels"] = ["d = 3"]
    dag_check(entry, config)                       # a panel it has


@pytest.mark.parametrize("case", [pytest.param("V04", id="V04")])
def test_a_word_for_a_number_is_refused_naming_the_curve(tmp_path, config, case):
    cfg = edited_registry(tmp_path, "lines.yaml", "lines-audit", "name: linucb, lam: 1.0", "name: linucb, lam: one")
    entry = registry.load_registry(cfg, REGISTRY_SCHEMA)["lines-audit"]
    with pytest.raises(RegistryError) as err:
        dag_check(entry, config)
    assert str(err.value) == ("figure 'lines-audit', panel 'd = 2', curve 'LinUCB': agent 'linucb': "
                              "hyper-parameter lam = 'one' is not allowed: a number")


@pytest.mark.parametrize("cell", [pytest.param({"env": {"name": "russo_finite", "d": 5, "n_arms": 10},
                                                "agent": {"name": "ensemble_pp", "M": "8"}, "horizon": 10}, id="V11")])
def test_an_ensemble_size_written_as_a_string_is_refused(cell):
    """Once coerced to 8 silently; now refused like M = 2.5 (what runs is what is written)."""
    with pytest.raises(ValueError, match=r"^agent 'ensemble_pp': hyper-parameter M = '8' is not allowed: an integer$"):
        cells.check_cell(cell)


@pytest.mark.parametrize("case", [pytest.param("K13", id="K13")])
def test_a_misspelt_claim_argument_of_a_paper_figure_is_refused_before_any_job(tmp_path, config, case):
    """The typo that once made a failing claims job delete a committed paper-scale record (glmes-fig3b's
    ``toll``), here in the fixture figure's claim."""
    cfg = edited_registry(tmp_path, "lines.yaml", "lines-audit", "threshold: 0.8", "threshhold: 0.8")
    entry = registry.load_registry(cfg, REGISTRY_SCHEMA)["lines-audit"]
    with pytest.raises(RegistryError, match=r"lines-audit: claim 'ucb-slower': check 'rate_ratio' has no argument\(s\) "
                                            r"\['threshhold'\]; its arguments: .*\bthreshold\b"):
        dag_check(entry, config, "paper")


# ---------------------------------------------------------------------------------------------
# data files (R22)


@pytest.mark.parametrize("case", [pytest.param("R22", id="R22")])
def test_an_empty_data_file_names_the_file_its_size_and_checksum(tmp_path, case):
    d = tmp_path / "data"
    shutil.copytree(repo_data_dir() / "mushroom", d / "mushroom")
    f = d / "mushroom" / "agaricus-lepiota.data"
    f.chmod(0o644)
    f.write_bytes(b"")
    with pytest.raises(data.DataError, match=rf"data file {re.escape(str(f))} has SHA-256 e3b0c442\w+, expected "
                                             r"e65d0820\w+ \(dataset mushroom: .*; this file is 0 bytes\): "
                                             r"it is corrupt"):
        data.verify(["mushroom"], d)


# ---------------------------------------------------------------------------------------------
# the command line (L*, K04, K10)

CELL = {"env": {"name": "russo_finite", "d": 3, "n_arms": 5}, "agent": {"name": "lints"}, "horizon": 20}


def _simulate(out, cell=CELL, seeds=("0", "2")):
    cli.main(["simulate", "--cell", json.dumps(cell), "--seeds", *seeds, "--out", str(out)])


CLI_ERRORS = [  # (id, argv, exit code or message)
    ("L01", [], 2),
    ("L02", ["simulat"], 2),
    ("L07", ["simulate", "--cell", json.dumps(CELL), "--seeds", "5", "2", "--out", "x.npz"],
     "--seeds 5 2: need 0 <= FIRST < END (seeds FIRST .. END-1)"),
    ("L09", ["aggregate", "--figure", "nope.json", "--table", "t.parquet", "--spec", "s.json"],
     "cannot read the resolved figure nope.json: [Errno 2] No such file or directory"),
    ("L13", ["simulate", "--cell", json.dumps({**CELL, "agent": {"name": "lints", "prior_var": "x"}}), "--seeds",
             "0", "2", "--out", "x.npz"],
     "invalid cell: agent 'lints': hyper-parameter prior_var = 'x' is not allowed: a number"),
    ("L15", ["report", "--scale", "smoke", "--ids", "phe-fig99", "--out", "REPORT.md"],
     "report: unknown figure id(s) ['phe-fig99']; known ids: epp-fig1, "),
]


@pytest.mark.parametrize("argv,expected", [pytest.param(*c[1:], id=c[0]) for c in CLI_ERRORS])
def test_a_bad_command_line_is_one_line(tmp_path, monkeypatch, capsys, argv, expected):
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / a) if a in ("x.npz", "REPORT.md") else a for a in argv]
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    err = capsys.readouterr().err
    if isinstance(expected, int):            # argparse: usage, then one line naming the problem
        assert done.value.code == expected and "error: " in err.splitlines()[-1], err
        assert ("invalid choice: 'simulat'" in err) if argv else ("required: cmd" in err)
    else:
        assert str(done.value.code).startswith(expected) and "\n" not in str(done.value.code), done.value.code
    assert not (tmp_path / "x.npz").exists() and not (tmp_path / "REPORT.md").exists()


def test_report_names_a_missing_record_and_how_to_build_it(tmp_path, monkeypatch):
    """A known id without a record (as L15's unknown id, not "unreadable ... delete it")."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "config", tmp_path / "config")
    shutil.copytree(ROOT / "workflow" / "schemas", tmp_path / "workflow" / "schemas")
    with pytest.raises(SystemExit, match=r"^report: phe-tab1 has no record at scale smoke \(figures/smoke/records/"
                                         r"phe-tab1\.json\): build its figure first \(snakemake --cores 2 "
                                         r"figures/smoke/phe-tab1\.pdf --config scale=smoke\)$"):
        cli.main(["report", "--scale", "smoke", "--ids", "phe-tab1", "--out", "REPORT.md"])
    assert not (tmp_path / "REPORT.md").exists()


@pytest.mark.parametrize("case", [pytest.param("L11", id="L11")])
def test_data_check_on_a_corrupt_directory_names_the_dataset(tmp_path, capsys, case):
    d = tmp_path / "data"
    shutil.copytree(repo_data_dir(), d, ignore=shutil.ignore_patterns("covertype"))
    f = d / "mushroom" / "agaricus-lepiota.data"
    f.chmod(0o644)
    f.write_bytes(f.read_bytes()[:1000])
    with pytest.raises(SystemExit, match=r"^1 of \d+ dataset\(s\) not usable: mushroom$"):
        cli.main(["data", "check", "--data-dir", str(d)])
    out = capsys.readouterr()
    assert str(f) in out.out + out.err, out           # and the file at fault, on its own line


@pytest.mark.parametrize("case", [pytest.param("L12", id="L12")])
def test_data_check_of_an_unknown_dataset_names_it_and_the_known_ones(capsys, case):
    with pytest.raises(SystemExit, match=r"^1 of 1 dataset\(s\) not usable: nosuchset$"):
        cli.main(["data", "check", "nosuchset", "--data-dir", str(repo_data_dir())])
    assert "FAIL  nosuchset: unknown dataset(s) 'nosuchset'; known: adult, " in capsys.readouterr().out


@pytest.mark.parametrize("case", [pytest.param("L17", id="L17")])
def test_estimate_with_a_broken_configfile_names_it(tmp_path, case):
    bad = tmp_path / "broken.yaml"
    bad.write_text("scale: [smoke\n")
    with pytest.raises(SystemExit, match=rf"^estimate: {re.escape(str(bad))}: not valid YAML: "):
        cli.main(["estimate", "phe-tab1", "--configfile", str(bad)])


@pytest.mark.parametrize("case", [pytest.param("L10", id="L10")])
def test_estimate_from_another_directory_works_in_the_project(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    cli.main(["estimate", "phe-tab1", "--scale", "smoke"])
    out = capsys.readouterr()
    assert f"(working in the project at {ROOT})" in out.err and "phe-tab1" in out.out


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """One run file written by ``cli simulate`` into a directory that did not exist."""
    out = tmp_path_factory.mktemp("sim") / "not" / "yet" / "seeds-0-2.npz"
    _simulate(out)
    return out


@pytest.mark.parametrize("case", [pytest.param("L08", id="L08")])
def test_simulate_creates_the_directory_of_its_output(simulated, case):
    assert simulated.is_file() and (simulated.parent / "cell.json").is_file()


@pytest.mark.parametrize("case", [pytest.param("K04", id="K04")])
def test_a_deleted_cell_json_is_not_needed(simulated, tmp_path, case):
    from ensemble_bandits.tables import read_run

    run = tmp_path / simulated.name
    shutil.copy(simulated, run)                              # the run file alone, no cell.json beside it
    assert sorted(set(read_run(run, CELL)["seed"])) == [0, 1]


@pytest.mark.parametrize("case", [pytest.param("K10", id="K10")])
def test_a_full_disk_leaves_no_partial_file_and_the_same_command_resumes(simulated, tmp_path, monkeypatch, case):
    """The job that meets a full disk fails with one line (the log's last, on the terminal); no file
    is left under its final name (nor a temp file); once space is freed the same command writes it."""
    import numpy as np

    from ensemble_bandits.tables import read_run

    out = tmp_path / "runs" / "seeds-0-2.npz"
    real_savez = np.savez

    def full(fh, **cols):
        fh.write(b"PK\x03\x04 partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(OSError, match="No space left on device"):
        _simulate(out)
    assert os.listdir(out.parent) == []                      # nothing under the final name, no temp file
    monkeypatch.setattr(np, "savez", real_savez)
    _simulate(out)                                           # space freed: the same command
    assert sorted(set(read_run(out, CELL)["seed"])) == [0, 1]
    log = tmp_path / "job.log"                              # what the terminal shows of the failed job
    res = subprocess.run(["bash", str(ROOT / "workflow" / "scripts" / "logged.sh"), str(log), sys.executable, "-c",
                          "import errno, os; raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))"],
                         capture_output=True, text=True, timeout=timeout_s(60))
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == f"error: OSError: [Errno 28] No space left on device [log: {log}]"


# ---------------------------------------------------------------------------------------------
# Snakemake's own parsing of --config and --configfile, and the Snakefile's first lines: Snakemake's
# command line (snakemake.cli.main, what `python -m snakemake` runs) for each case in turn, in one
# fresh process (one import of Snakemake), each case's output read from its file descriptors

SNAKEMAKE_CASES = """
import json, os, sys, tempfile
from snakemake.cli import main
out = {}
for aid, cwd, argv in json.loads(sys.argv[1]):
    os.chdir(cwd)
    with tempfile.TemporaryFile() as f:
        saved = os.dup(1), os.dup(2)
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(f.fileno(), 1); os.dup2(f.fileno(), 2)
        try:
            main(argv)
            code = 0
        except SystemExit as done:
            code = done.code
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
        f.seek(0)
        out[aid] = [f.read().decode(errors="replace"), code]
print(json.dumps(out))
"""

# (id, --configfile name and bytes (None: no file) or None, snakemake arguments, what it says)
EARLY = [
    ("C05", ("cf.yaml", b"scale: [smoke\n"), ["-n", "lines-tab1"], "Config file is not valid JSON or YAML"),
    ("C23", ("cf.yaml", b"scales:\n\tsmoke:\n\t\tmax_seeds: 2\n"), ["-n", "lines-tab1"],
     "Config file is not valid JSON or YAML"),
    ("C06", ("cf.yaml", b""), ["-n", "lines-tab1"], "Config file must be given as JSON or YAML with keys at top level"),
    ("C09", ("cf.yaml", b"- scale\n- smoke\n"), ["-n", "lines-tab1"],
     "Config file must be given as JSON or YAML with keys at top level"),
    ("C07", ("cf.yaml", "data_dir: d\xf6\n".encode("latin-1")), ["-n", "lines-tab1"],
     "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xf6"),
    ("C08", ("cf-nope.yaml", None), ["-n", "lines-tab1"],
     "FileNotFoundError: [Errno 2] No such file or directory: 'C08-cf-nope.yaml'"),
    ("C24", None, ["-n", "--config", "scale=smoke", "lines-tab1"], "Invalid config definition"),
    ("C20", None, ["-n", "lines-tab1", "--config", "scale=smoke", "scale=paper"],
     "config key 'scale' given twice after --config (scale=smoke and scale=paper); give it once"),
    ("L18", None, ["-n", "-s", "<root>/Snakefile", "lines-tab1"],
     "Workflow defines configfile config/config.yaml but it is not present or accessible"),
]


@pytest.fixture(scope="module")
def early(tmp_path_factory):
    """Output and exit code of each EARLY case, in a scratch copy of the workflow."""
    base = tmp_path_factory.mktemp("early")
    for item in ("config", "workflow", "profiles"):
        shutil.copytree(ROOT / item, base / item, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "Snakefile", base / "Snakefile")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    cases = []
    for aid, cf, args, _ in EARLY:
        args = ["--cores", "1", *(a.replace("<root>", str(base)) for a in args)]
        if cf:
            if cf[1] is not None:
                (base / f"{aid}-{cf[0]}").write_bytes(cf[1])
            args += ["--configfile", f"{aid}-{cf[0]}"]
        cases.append((aid, str(elsewhere if aid == "L18" else base), args))
    res = subprocess.run([sys.executable, "-c", SNAKEMAKE_CASES, json.dumps(cases)], capture_output=True, text=True,
                         timeout=timeout_s(300))
    assert res.returncode == 0, res.stderr[-3000:]
    assert not (base / "results").exists() and not (elsewhere / "results").exists()     # no job ran
    return json.loads(res.stdout.splitlines()[-1])


@pytest.mark.parametrize("aid,message", [pytest.param(c[0], c[3], id=c[0]) for c in EARLY])
def test_snakemake_refuses_a_bad_config_before_any_job(early, aid, message):
    """Each fails before any job (no results/ directory, no job listed), saying ``message``.  The
    verdict is what the output shows: a Python traceback, an error that does not name the file at
    fault (vague), or one clear line."""
    text, code = early[aid]
    assert code != 0 and message in text, text[-3000:]
    assert "Job stats" not in text and "rule " not in text
    traceback = "Traceback (most recent call last)" in text
    assert traceback == (VERDICTS[aid] == "traceback"), text[-3000:]
    if VERDICTS[aid] == "vague":             # Snakemake does not say which file
        assert f"{aid}-cf.yaml" not in text, text[-3000:]


# ---------------------------------------------------------------------------------------------
# one dry run of the state an interrupted run leaves, in a checkout at a hostile path


HOSTILE_DIR = "a ce;x $HOME"
HOSTILE_DATA = "it's a dir;touch PWNED_data;`touch PWNED_bt`"
HOSTILE_TITLE = "S03 `touch PWNED_title` $(touch PWNED_sub); rm -rf PWNED_nothing {} {x}"


def _b64(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return copy_project(tmp_path_factory.mktemp("audit") / HOSTILE_DIR)


@pytest.fixture(scope="module")
def interrupted(project, tmp_path_factory, config):
    """``snakemake -n -p`` of lines-gauss-ts, glmes-tab1 and lines-tab1 (smoke) after an interrupted
    run: LinTS's run file complete but still marked incomplete (its job was killed after the rename);
    a garbage metadata record of an existing output; seeds_per_job=10^12; the checkout's path, the
    data directory and lines-tab1's title hostile to a shell."""
    data_dir = project / HOSTILE_DATA                   # its absolute path holds both hostile names
    shutil.copytree(repo_data_dir(), data_dir, ignore=shutil.ignore_patterns("covertype"))
    lines = project / "config" / "figures" / "lines.yaml"
    text = lines.read_text(encoding="utf-8")
    old = 'title: "Comparison of regret bounds for linear ensemble sampling (Table 1)"'
    assert text.count(old) == 1
    lines.write_text(text.replace(old, f"title: {json.dumps(HOSTILE_TITLE)}"), encoding="utf-8")

    entry = registry.load_registry(project / "config", REGISTRY_SCHEMA)["lines-gauss-ts"]
    fig = registry.resolve(entry, "smoke", config["scales"])
    lints = next(s for s in fig["series"] if s["curve"] == "LinTS")
    run = f"results/smoke/runs/{lints['key']}/seeds-0-{lints['seeds']}.npz"
    _simulate(project / run, lints["cell"], ("0", str(lints["seeds"])))
    meta = project / ".snakemake"
    (meta / "incomplete").mkdir(parents=True)
    (meta / "incomplete" / _b64(run)).write_text('{"external_jobid": null}')
    resolved = "results/smoke/figures/lines-gauss-ts.json"
    (project / resolved).parent.mkdir(parents=True, exist_ok=True)
    (project / resolved).write_text(registry.figure_document(fig, 10 ** 12))
    (meta / "metadata").mkdir()
    (meta / "metadata" / _b64(resolved)).write_text('{"version": ')              # garbage
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "lines-gauss-ts",
                          "glmes-tab1", "lines-tab1", "--config", "scale=smoke", "seeds_per_job=1000000000000",
                          f"data_dir={data_dir}"], cwd=project, capture_output=True, text=True, timeout=timeout_s(300))
    return {"rc": res.returncode, "out": res.stdout + res.stderr, "run": run, "keys": [s["key"] for s in fig["series"]],
            "data_dir": str(data_dir)}


def _job_counts(output: str) -> dict:
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)\s*$", output, flags=re.M) if rule != "total"}


def _shell_commands(output: str) -> list:
    return [ln.strip() for ln in output.splitlines() if "python -m ensemble_bandits" in ln]


@pytest.mark.parametrize("aid", [pytest.param(i, id=i) for i in ("I01", "I03", "I04", "I05")])
def test_an_interrupted_run_resumes_with_the_plain_command(interrupted, aid):
    """A job killed after renaming its run file into place leaves that complete file marked
    incomplete (I01 Ctrl-C, I03 Snakemake alone killed, I04/I05 torch jobs): the plain command reruns
    it (rerun-incomplete of profiles/default, which Snakemake reads by itself) instead of stopping
    with IncompleteFilesException."""
    out = interrupted["out"]
    assert interrupted["rc"] == 0, out[-4000:]
    assert "IncompleteFilesException" not in out and "--rerun-incomplete" not in out
    assert "Using workflow specific profile profiles/default" in out, out[-4000:]
    plan = re.findall(r"output: (results/smoke/runs/\S+)", out)
    assert interrupted["run"] in plan, out[-4000:]


@pytest.mark.parametrize("aid", [pytest.param("K07", id="K07")])
def test_a_garbage_metadata_record_is_ignored_with_a_warning(interrupted, aid):
    assert interrupted["rc"] == 0
    assert "Ignore corrupted or currently written metadata record" in interrupted["out"], interrupted["out"][-4000:]


@pytest.mark.parametrize("aid", [pytest.param("C02", id="C02")])
def test_a_huge_seeds_per_job_gives_one_job_per_cell(interrupted, aid):
    counts = _job_counts(interrupted["out"])
    assert counts.get("simulate") == len(interrupted["keys"]) == 2, interrupted["out"][-4000:]
    plan = re.findall(r"output: results/smoke/runs/(\w+)/seeds-0-4\.npz", interrupted["out"])
    assert sorted(plan) == sorted(interrupted["keys"])


@pytest.mark.parametrize("aid", [pytest.param(i, id=i) for i in ("S01", "S02", "S03")])
def test_hostile_paths_and_titles_reach_no_shell_unquoted(interrupted, aid):
    """S01 a data directory and S02 a checkout whose names hold shell syntax: the one absolute path
    the commands hold (the data directory, inside the checkout) is one quoted word of each; S03 a
    title full of shell syntax is in no command at all."""
    commands = _shell_commands(interrupted["out"])
    assert interrupted["rc"] == 0 and commands, interrupted["out"][-4000:]
    data_dir = interrupted["data_dir"]
    if aid == "S03":
        assert not any("PWNED_title" in c or "PWNED_sub" in c or "PWNED_nothing" in c for c in commands)
        return
    with_dir = [c for c in commands if "--data-dir" in c]
    assert with_dir, commands                                # glmes-tab1's aggregate job reads the data
    hostile = HOSTILE_DATA if aid == "S01" else HOSTILE_DIR
    for c in commands:
        words = shlex.split(c)
        assert all(hostile not in w or w == data_dir for w in words), c
        if c in with_dir:
            assert words[words.index("--data-dir") + 1] == data_dir, c


@pytest.mark.parametrize("aid", [pytest.param("S05", id="S05")])
def test_a_target_outside_the_project_is_no_rule(project, aid):
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                          "figures/smoke/../../../../tmp/x.pdf", "--config", "scale=smoke"], cwd=project,
                         capture_output=True, text=True, timeout=timeout_s(300))
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "No rule to produce" in out, out[-3000:]
    assert "Traceback (most recent call last)" not in out and "Job stats" not in out


@pytest.mark.parametrize("aid", [pytest.param("K11", id="K11")])
def test_an_output_directory_that_cannot_be_written(project, aid):
    """Snakemake removes a job's old output before it runs the job; when the directory cannot be
    written (chattr +i; chmod for a non-root user) that removal fails inside Snakemake."""
    out_dir = project / "results" / "smoke" / "figures"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "lines-tab1.json"
    target.write_text("{}")
    locked = False
    try:
        if os.geteuid() == 0:
            locked = shutil.which("chattr") and subprocess.run(["chattr", "+i", str(out_dir)]).returncode == 0
        else:
            out_dir.chmod(0o555)
            locked = True
        if not locked:
            pytest.skip("no way to make a directory unwritable here (root without chattr +i)")
        res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1",
                              "results/smoke/figures/lines-tab1.json", "--forcerun", "resolve_figure", "--config",
                              "scale=smoke"], cwd=project,
                             capture_output=True, text=True, timeout=timeout_s(300))
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(out_dir)])
        else:
            out_dir.chmod(0o755)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "PermissionError" in out and "Operation not permitted" in out, out[-3000:]
    assert ("Traceback (most recent call last)" in out) == (VERDICTS[aid] == "traceback"), out[-3000:]
    assert target.read_text() == "{}"
