"""The documentation stays true to the project: the README's size and Quick start (which .ci/run
executes), every relative link, every spec assumption and section the registry cites, the conda
environment files against pyproject.toml, config/README.md against the config schema, and the
bad-input catalogue against the robustness suite.  Fast: files are read, nothing is run."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ensemble_bandits import quickstart, readme, registry

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
ASSUMPTIONS = ROOT / "docs" / "assumptions.md"
MARKDOWN = [README, ROOT / "config" / "README.md", *DOCS]
QUICK_START = [
    'python3 -m pip install -e . && snakemake --cores all            # every figure at the default scale',
    'python3 -m pip install -e ".[test]" && python3 -m pytest          # unit tests + a smoke run of the workflow',
]
PAPERS = "|".join(registry.PAPERS)
NUM = r"(?:[A-Z]\.)?\d+(?:\.\d+)*"
ID_REF = re.compile(rf"\b({PAPERS})-A(\d+)(?:-A(\d+))?\b")                       # glmes-A10, glmes-A4-A7
SECTION_REF = re.compile(rf"\b({PAPERS})( paper)? §({NUM})(?:-(\d+(?:\.\d+)*))?")  # epp §2.5-2.10, phe §A.6.2


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_docs_exist():
    names = {p.name for p in DOCS}
    assert {"design.md", "extending.md", "registry.md", "cluster.md", "data.md", "reliability.md", "scales.md",
            "assumptions.md"} <= names, names


# ---------------------------------------------------------------------------------------------
# README


def test_readme_is_at_most_250_lines():
    n = len(_text(README).splitlines())
    assert n <= 250, f"README.md has {n} lines; move detail into docs/ (at most 250)"


def test_quick_start_holds_the_install_and_test_commands():
    block = quickstart.commands(_text(README))       # as .ci/run and tools/measure_quickstart.py read them
    for line in QUICK_START:
        assert line in block, f"the Quick start block lost: {line}"
    assert next(ln for ln in block if "pytest" in ln) == QUICK_START[1], ".ci/run runs the first line with pytest"


def test_readme_holds_no_dates_issue_numbers_or_commit_hashes():
    text = _text(README)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "a date in README.md"
    assert not re.search(r"\bissues? \d+", text, flags=re.I), "an issue number in README.md"
    hashes = [h for h in re.findall(r"\b[0-9a-f]{7,40}\b", text) if re.search(r"[a-f]", h) and re.search(r"\d", h)]
    assert not hashes, f"commit hashes in README.md: {hashes}"


@pytest.mark.parametrize("name", list(readme.BLOCKS))
def test_the_readmes_generated_blocks_are_what_the_committed_files_give(name):
    """The headline (the committed paper-scale report's tally) and the measured durations (the timings
    page) are generated, never typed: rewritten when REPORT.md is published and when the page is."""
    text = _text(README)
    assert readme.block(text, name) is not None, f"README.md lost the markers of its {name} block"
    assert readme.block(text, name) == readme.generated(name, ROOT), (
        f"README.md's {name} block is stale: python -m ensemble_bandits.readme {name}")


def test_the_headline_counts_the_report_per_paper_and_refresh_rewrites_only_the_blocks(tmp_path):
    report = ("# Replication report\n\n10 claims checked: 5 reproduced, 3 not reproduced, 2 inconclusive. More.\n\n"
              "- **phe**: 4 checked: 2 reproduced, 1 not reproduced, 1 inconclusive\n"
              "- **epp**: 6 checked: 3 reproduced, 2 not reproduced, 1 inconclusive\n\n"
              "Not run at this scale (left out with `skip`): epp-fig3c, glmes-fig4b.\n")
    text = readme.headline(report)
    assert "10 of the papers' claims are checked: 5 reproduced, 3 not reproduced, 2 inconclusive" in text
    assert "| `phe-` | 4 | 2 | 1 | 1 |" in text and "| `epp-` | 6 | 3 | 2 | 1 |" in text
    assert "](figures/paper/REPORT.md)" in text and "2 figure ids are not run at paper scale" in text
    (tmp_path / "figures/paper").mkdir(parents=True)
    (tmp_path / "figures/paper/REPORT.md").write_text(report)
    start, end = readme.BLOCKS["headline"]
    (tmp_path / "README.md").write_text(f"# T\n\n{start}\nold\n{end}\n\nrest\n")
    assert readme.refresh(("headline",), root=tmp_path) == ["headline"]
    assert (tmp_path / "README.md").read_text() == f"# T\n\n{start}\n{text}\n{end}\n\nrest\n"
    assert readme.refresh(("headline",), root=tmp_path) == []          # up to date: left as it is
    with pytest.raises(ValueError, match="no tally"):
        readme.headline("# an empty report\n")


def test_docs_do_not_point_outside_the_repository():
    for path in MARKDOWN:
        text = _text(path)
        for needle in ("../" + "shared", "/work/", "shared/specs"):
            assert needle not in text, f"{path.relative_to(ROOT)} names {needle}"


# ---------------------------------------------------------------------------------------------
# links


def _strip_code(text: str) -> str:
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    heading = re.sub(r"<[^>]+>", "", heading).strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _text(path)
    found = {_slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} +(.+?) *$", _strip_code(text))}
    found |= set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    return found


def _links(path: Path):
    for m in re.finditer(r"\]\(([^)\s]+)\)", _strip_code(_text(path))):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):          # http:, https:, mailto:
            continue
        yield target


@pytest.mark.parametrize("path", MARKDOWN, ids=[str(p.relative_to(ROOT)) for p in MARKDOWN])
def test_every_relative_link_resolves(path):
    bad = []
    for target in _links(path):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target} (no such anchor in {dest.name})")
    assert not bad, f"{path.relative_to(ROOT)}: broken links: {bad}"


# ---------------------------------------------------------------------------------------------
# assumption ids and spec sections cited by the registry


def _registry_texts():
    return {p.name: _text(p) for p in sorted((ROOT / "config" / "figures").glob("*.yaml"))}


def _cited():
    """{reference as docs/assumptions.md must name it: where it is cited}."""
    refs = {}
    for name, text in _registry_texts().items():
        for m in ID_REF.finditer(text):
            first, last = int(m.group(2)), int(m.group(3) or m.group(2))
            for n in range(first, last + 1):
                refs.setdefault(f"{m.group(1)}-A{n}", name)
        for m in SECTION_REF.finditer(text):
            prefix = f"{m.group(1)}{m.group(2) or ''} §"
            refs.setdefault(prefix + m.group(3), name)
            if m.group(4):                          # a range: its end too (3.3-3.5, A.6.9-10)
                head, tail = m.group(3).split("."), m.group(4).split(".")
                refs.setdefault(prefix + ".".join(head[:len(head) - len(tail)] + tail), name)
    return refs


def test_registry_cites_assumptions():
    assert len(_cited()) > 50


def test_every_cited_assumption_and_section_has_an_entry():
    headings = [ln for ln in _text(ASSUMPTIONS).splitlines() if ln.startswith("#")]
    missing = []
    for ref, where in sorted(_cited().items()):
        pattern = re.compile(re.escape(ref) + r"(?![\w.]*\d)")
        if not any(pattern.search(h) for h in headings):
            missing.append(f"{ref} (cited in config/figures/{where})")
    assert not missing, f"docs/assumptions.md has no heading for: {missing}"


def _unprefixed(text: str) -> list:
    """The lines of ``text`` citing an assumption id (A14) or a section (§2.6) without its paper."""
    rest = SECTION_REF.sub("", ID_REF.sub("", text))
    return [(i, line.strip()[:80]) for i, line in enumerate(rest.splitlines(), 1)
            if re.search(r"(?<![\w\-])A\d+\b|§", line)]


def test_registry_cites_no_assumption_or_section_without_its_paper():
    """A14 or §2.6 alone is ambiguous (the ids are per paper): write glmes-A14, glmes §2.6."""
    bad = [f"{name}:{i}: {line!r}" for name, text in _registry_texts().items() for i, line in _unprefixed(text)]
    assert not bad, f"spec references without a paper prefix (see docs/assumptions.md): {bad}"


def _comments_and_docstrings(path: Path):
    """(line, text) of each comment and docstring of a Python file."""
    import ast
    import io
    import tokenize

    source = _text(path)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield (node.body[0].lineno, doc)


def test_code_comments_cite_no_assumption_or_section_without_its_paper():
    """The registry's prefix rule holds in the library's comments and docstrings too."""
    bad = [f"{path.relative_to(ROOT)}:{at + i - 1}: {line!r}"
           for path in sorted((ROOT / "src").rglob("*.py")) for at, text in _comments_and_docstrings(path)
           for i, line in _unprefixed(text)]
    assert not bad, f"spec references without a paper prefix (see docs/assumptions.md): {bad}"


def test_the_prefix_rule_catches_bare_references():
    assert [i for i, _ in _unprefixed("glmes-A4 and glmes §2.6\nspec A5\nsee §3.6\nphe paper §5.2")] == [2, 3]


# ---------------------------------------------------------------------------------------------
# conda environment files


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_deps() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


@pytest.mark.parametrize("rel", ["environment.yml", "workflow/envs/pipeline.yaml"])
def test_conda_file_lists_every_dependency_and_the_right_channels(rel):
    env = registry.load_yaml(ROOT / rel)
    assert env["channels"] == ["conda-forge", "bioconda"], f"{rel}: channels {env['channels']}"
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next((d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d), [])
    assert "pip" in conda, f"{rel}: pip itself must be a conda dependency"
    names = {_name(d.replace("=", "==", 1) if re.match(r"^[\w.-]+=[^=]", d) else d) for d in conda}
    pip_names = {_name(d) for d in pip if not d.startswith("-")}
    for dep in _pyproject_deps():
        assert _name(dep) in names | pip_names, f"{rel} lacks {dep} (pyproject.toml)"
        if "==" in dep:                               # exact pins come from pip, as pinned
            assert dep.replace(" ", "") in [p.replace(" ", "") for p in pip], f"{rel}: pip needs {dep}"
    torch = next(d for d in _pyproject_deps() if _name(d) == "torch")
    assert "torch" not in names, f"{rel}: torch from conda would not be the CPU wheel; take it from pip"
    assert torch in pip, f"{rel}: pip needs {torch}"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip, f"{rel}: no PyTorch CPU wheel index"


# ---------------------------------------------------------------------------------------------
# config/README.md


def test_config_readme_names_every_config_key():
    schema = registry.load_yaml(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    text = _text(ROOT / "config" / "README.md")
    keys = list(schema["properties"])
    keys += list(schema["properties"]["scales"]["additionalProperties"]["properties"])
    missing = [k for k in keys if f"`{k}`" not in text]
    assert not missing, f"config/README.md does not describe: {missing}"


# ---------------------------------------------------------------------------------------------
# the bad-input catalogue


def test_reliability_page_lists_every_bad_input():
    """Every case of the robustness suite, with what the user gives and the exact message."""
    robustness = pytest.importorskip("test_robustness")
    section = _text(ROOT / "docs" / "reliability.md").split("## Bad input", 1)[1].split("\n## ", 1)[0]
    rows = [*robustness.BAD_INPUTS, (*robustness.CORRUPT[:2], None, robustness.CORRUPT[2]), *robustness.DATA_INPUTS]
    for case, given, _, message in rows:
        row = next((ln for ln in section.splitlines() if ln.startswith(f"| {case} |")), None)
        assert row is not None, f"docs/reliability.md lacks the case {case!r}"
        assert given in row and message.replace("|", "\\|") in row, (case, row)


# Tests of those files that guard valid input (it must stay accepted), not a failure case
VALID_GUARDS = {
    "test_stopped_at_a_random_round_resumes_bit_identically",     # test_checkpoint.py: resumes, not refusals
    "test_a_finished_batch_is_not_played_again",
    "test_a_finished_fixed_block_of_a_partial_job_is_not_played_again",
    "test_seeds_another_job_played_are_taken_and_the_job_gives_one_jobs_numbers",
    "test_a_killed_job_rerun_resumes_and_writes_the_uninterrupted_numbers",
    "test_limits_anchors_aliases_and_merge_keys_of_the_real_registry_still_load",
    "test_limits_the_writer_still_replaces_a_file_and_a_link_to_a_file",
    "test_values_one_label_over_a_grid_stays_one_curve",
    "test_values_one_curve_at_two_grid_points_is_not_a_self_comparison",
    "test_values_every_claim_of_the_real_registry_passes_the_argument_checks",
    "test_values_every_number_argument_of_the_registry_has_a_kind",
    "test_every_committed_record_matches_its_committed_archive",
    "test_the_content_hash_does_not_depend_on_the_parquet_writer",
    "test_the_untouched_built_figure_has_nothing_to_do_for_its_file",
}
CLASS_TESTS = ("test_limits.py", "test_eager_registry.py", "test_verified_reads.py", "test_publish_safety.py",
               "test_checkpoint.py")


def test_reliability_page_lists_every_case_of_the_new_classes_and_counts_them():
    """Each failure case of the tests of the five newer classes is a row of docs/reliability.md that
    names it, each named test exists, and the count the page states is its number of rows."""
    section = _text(ROOT / "docs" / "reliability.md").split("## Values that look valid", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| class |")]
    listed = set(re.findall(r"`(test_[a-z_]+\.py)::(test_[a-z0-9_]+)`", section))
    defined = {(name, fn) for name in CLASS_TESTS
               for fn in re.findall(r"^def (test_[a-z0-9_]+)\(", _text(ROOT / "tests" / name), re.M)}
    assert listed <= defined, sorted(listed - defined)
    assert {fn for _, fn in defined - listed} <= VALID_GUARDS, sorted(defined - listed)
    assert f"The {len(rows)} cases below" in section
