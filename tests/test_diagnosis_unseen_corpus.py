"""The fourth diagnosis corpus (bench/diagnosis_unseen/: blind until 2026-12-01 23:25 UTC, a design
corpus since) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_unseen --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_unseen``). These tests
pass with and without torch.
"""
import ast
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "diagnosis_untuned.py")
UNSEEN = os.path.join(ROOT, "bench", "diagnosis_unseen")
ENGINE_IMPORT = "import gradcli as torch"
ESTIMATORS = {"straight_through", "smooth_surrogate", "gradient_reversal"}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load(BENCH, "diagnosis_untuned_bench_unseen")
RECORDS = bench.read_corpus(UNSEEN)
BUGGY = [r for r in RECORDS if r["bug"] is not None]
CORRECT = [r for r in RECORDS if r["bug"] is None]
FILES = sorted(n for n in os.listdir(UNSEEN) if n.endswith(".py"))


def _id(record):
    return f"{os.path.basename(record['file'])}::{record['function']}"


def _source(name):
    with open(os.path.join(UNSEEN, name), encoding="utf-8") as handle:
        return handle.read()


def _readme():
    with open(os.path.join(UNSEEN, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in RECORDS} == {UNSEEN}
    assert UNSEEN not in {os.path.dirname(r["file"]) for r in bench.read_corpus()}


def test_corpus_size_and_mix():
    assert len(BUGGY) >= 50
    assert len(CORRECT) >= 30
    assert 8 <= len(FILES) <= 12
    kinds = {r["bug"]["kind"] for r in BUGGY}
    assert kinds <= bench.KINDS
    no_pattern = [r for r in BUGGY if r["bug"]["kind"] == "none"]
    assert 4 <= len(no_pattern) <= 7
    # every kind but precision (which gradcheck's tolerance cannot catch) is represented
    assert kinds == bench.KINDS - {"precision"}
    most = max(sum(1 for r in BUGGY if r["bug"]["kind"] == k) for k in kinds)
    assert most <= len(BUGGY) // 8  # no kind dominates the score


def test_both_backends_about_one_third_engine():
    engine = [n for n in FILES if ENGINE_IMPORT + "\n" in _source(n)]
    torch_files = [n for n in FILES if "\nimport torch\n" in _source(n)]
    assert sorted(engine + torch_files) == FILES
    assert not set(engine) & set(torch_files)
    assert len(FILES) // 4 <= len(engine) <= len(FILES) // 2
    assert all(n.endswith("_engine.py") for n in engine)


def test_engine_files_use_no_real_torch():
    for name in FILES:
        source = _source(name)
        if ENGINE_IMPORT + "\n" not in source:
            continue
        imported = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.module or "").split(".")[0])
        assert imported <= {"gradcli", "math"}, (name, imported)


OLDER_CORPORA = ("diagnosis_untuned", "diagnosis_heldout", "diagnosis_blind", "diagnosis_fresh")


def test_function_names_are_unique_here_and_across_the_older_corpora():
    names = [r["function"] for r in RECORDS]
    assert len(names) == len(set(names))
    for folder in OLDER_CORPORA:
        other = os.path.join(ROOT, "bench", folder)
        if os.path.isdir(other):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_engine_files_hold_about_a_third_of_the_functions():
    engine = {n for n in FILES if ENGINE_IMPORT + "\n" in _source(n)}
    on_engine = [r for r in RECORDS if os.path.basename(r["file"]) in engine]
    assert len(RECORDS) // 4 <= len(on_engine) <= len(RECORDS) // 2


def test_coding_styles_the_brief_asks_for_occur():
    """needs_input_grad, mark_non_differentiable, einsum, in-place accumulation, ctx attributes,
    several outputs and reductions over a dim other than the last are each used somewhere."""
    source = "\n".join(_source(n) for n in FILES)
    for needle in ("ctx.needs_input_grad[", "ctx.mark_non_differentiable(", "torch.einsum(",
                   "index_add_(", "scatter_add_(", "scatter_(", "+=", ".sum(0", "cumsum(0"):
        assert needle in source, needle
    ctx_attributes = {node.attr for n in FILES for node in ast.walk(ast.parse(_source(n)))
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes
    several_outputs = [r for r in RECORDS if r["function"] == "MaxPoolPairs"]
    assert several_outputs and several_outputs[0]["bug"] is None


def test_readme_names_the_functions_that_fail_by_raising():
    readme = _readme()
    names = {r["function"] for r in BUGGY}
    for name in ("GroupNormBiasKeepsLength", "Conv2dBiasMissesWidth"):
        assert f"`{name}`" in readme and name in names


@pytest.mark.parametrize("record", RECORDS, ids=_id)
def test_every_function_declares_bug(record):
    assert record["has_bug_attribute"], "declare bug = {...} or bug = None (a correct twin)"


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_buggy_label_is_valid(record):
    bug = record["bug"]
    assert set(bug) <= {"kind", "input", "note", "also"}
    assert bug["kind"] in bench.KINDS
    assert bug["input"] in record["params"], f"{bug['input']} is not a parameter of forward"
    assert isinstance(bug["note"], str) and len(bug["note"]) > 10
    also = bug.get("also", [])
    assert isinstance(also, list) and set(also) <= bench.KINDS - {"none", bug["kind"]}


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_buggy_has_exactly_one_bug_line(record):
    assert len(record["bug_marks"]) == 1, record["bug_marks"]
    assert len(record["bug_sites"]) == 1, "the # BUG line must be in forward or backward"
    site = record["bug_sites"][0]
    low, high = site["statement"]
    assert low <= site["line"] <= high
    # the bug is in backward, except an in-place change forward makes after saving
    expected = "forward" if record["bug"]["kind"] == "inplace" else "backward"
    assert site["method"] == expected


@pytest.mark.parametrize("record", CORRECT, ids=_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_every_buggy_function_has_a_twin_with_the_same_parameters_unless_an_estimator():
    for name in FILES:
        rows = [r for r in RECORDS if os.path.basename(r["file"]) == name]
        twins = [r for r in rows if r["bug"] is None]
        for r in rows:
            if r["bug"] is not None and r["bug"]["kind"] not in ESTIMATORS:
                assert any(t["params"] == r["params"] for t in twins), f"{name}::{r['function']}"


def test_no_bug_mark_outside_a_function_class():
    for name in FILES:
        source = _source(name)
        spans = [(n.lineno, n.end_lineno) for n in ast.parse(source).body
                 if isinstance(n, ast.ClassDef) and bench._is_function_class(n)]
        for number, line in enumerate(source.splitlines(), 1):
            if bench.BUG_MARK in line:
                assert any(lo <= number <= hi for lo, hi in spans), f"{name}:{number}"


def test_example_inputs_are_static_and_take_no_argument():
    for name in FILES:
        for node in ast.parse(_source(name)).body:
            if not (isinstance(node, ast.ClassDef) and bench._is_function_class(node)):
                continue
            method = bench._methods(node).get("example_inputs")
            if method is None:
                continue
            decorators = {ast.unparse(d) for d in method.decorator_list}
            assert "staticmethod" in decorators, f"{name}::{node.name}"
            assert method.args.args == [], f"{name}::{node.name}"


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = _readme()
    # blind until the integrator released it to the seventh diagnosis pass; a design corpus since
    assert "BLIND until 2026-12-01 23:25 UTC" in readme and "design corpus" in readme
    assert "--corpus bench/diagnosis_unseen" in readme and "--summary" in readme
    for name in FILES:
        rows = [r for r in RECORDS if os.path.basename(r["file"]) == name]
        buggy = sum(1 for r in rows if r["bug"] is not None)
        line = next(line for line in readme.splitlines() if line.startswith(f"| {name}"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-2:] == [str(buggy), str(len(rows) - buggy)], line
    no_pattern = sum(1 for r in BUGGY if r["bug"]["kind"] == "none")
    assert (f"{len(BUGGY)} buggy Functions ({len(BUGGY) - no_pattern} with a pattern, "
            f"{no_pattern} without)") in readme
    assert f"{len(CORRECT)} correct twins" in readme


def test_readme_counts_by_kind_match_the_labels():
    readme = " ".join(_readme().split())
    line = readme.split("By kind: ", 1)[1].split(".", 1)[0]
    stated = {}
    for part in line.split(", "):
        kind, count = part.rsplit(" ", 1)
        stated[kind] = int(count)
    actual = {}
    for r in BUGGY:
        actual[r["bug"]["kind"]] = actual.get(r["bug"]["kind"], 0) + 1
    assert stated == actual
