"""Shared static readers for the labelled diagnosis corpora (bench/diagnosis_*/).

Used by tests/test_diagnosis_{heldout,blind,fresh,unseen,sealed,latest,hidden,withheld,unknown,sequestered,reserved,
foreign,outside,stranger,unheard,remote,distant,faraway,yonder,afar,elsewhere,beyond,further,abroad,overseas,
afield,hinterland,uncharted,offshore,wayward}_corpus.py
(those importing ``label_tests`` take their shared label tests from it). Everything here is ``ast``
and text: nothing imports a corpus or runs the diagnosis (scoring is bench/diagnosis_untuned.py's
job).
"""
import ast
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "diagnosis_untuned.py")
ENGINE_IMPORT = "import gradcli as torch"
# deliberate estimators: their exact derivative is zero, so they have no correct twin
ESTIMATORS = {"straight_through", "smooth_surrogate", "gradient_reversal"}
PATTERN_KINDS = ("scale", "sign", "zero", "ignores_grad_output", "not_reduced", "swapped",
                 "transposed", "region", "missing_term", "inplace", "term_sign", "wrong_axis",
                 "wrong_variable", "not_accumulated", "missing_flip", "missing_reshape",
                 "straight_through", "gradient_reversal", "smooth_surrogate")


def load(path, name):
    """Import the script at ``path`` as module ``name`` (the benches are not a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load(BENCH, "diagnosis_untuned_bench_labels")


def record_id(record):
    return f"{os.path.basename(record['file'])}::{record['function']}"


class Corpus:
    """One corpus folder's labels, read statically."""

    def __init__(self, folder):
        self.folder = folder
        self.records = bench.read_corpus(folder)
        self.buggy = [r for r in self.records if r["bug"] is not None]
        self.correct = [r for r in self.records if r["bug"] is None]
        self.files = sorted(n for n in os.listdir(folder) if n.endswith(".py"))

    def source(self, name):
        with open(os.path.join(self.folder, name), encoding="utf-8") as handle:
            return handle.read()

    def readme(self):
        with open(os.path.join(self.folder, "README.md"), encoding="utf-8") as handle:
            return handle.read()

    def rows_of(self, name):
        return [r for r in self.records if os.path.basename(r["file"]) == name]

    def engine_and_torch_files(self):
        engine = [n for n in self.files if ENGINE_IMPORT + "\n" in self.source(n)]
        torch_files = [n for n in self.files if "\nimport torch\n" in self.source(n)]
        return engine, torch_files

    def kind_counts(self):
        counts = {}
        for r in self.buggy:
            counts[r["bug"]["kind"]] = counts.get(r["bug"]["kind"], 0) + 1
        return counts


def imported_modules(source):
    """The top-level package names a source file imports."""
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    return imported


def bug_marks_outside_function_classes(corpus):
    """``file:line`` of every ``# BUG`` mark that is not inside a Function class."""
    outside = []
    for name in corpus.files:
        source = corpus.source(name)
        spans = [(n.lineno, n.end_lineno) for n in ast.parse(source).body
                 if isinstance(n, ast.ClassDef) and bench._is_function_class(n)]
        for number, line in enumerate(source.splitlines(), 1):
            if bench.BUG_MARK in line and not any(lo <= number <= hi for lo, hi in spans):
                outside.append(f"{name}:{number}")
    return outside


def example_inputs_taking_arguments(corpus, allow_classmethod=True):
    """``file::Class`` of every ``example_inputs`` gradcli could not call on the class."""
    bad = []
    allowed = {"staticmethod", "classmethod"} if allow_classmethod else {"staticmethod"}
    for name in corpus.files:
        for node in ast.parse(corpus.source(name)).body:
            if not (isinstance(node, ast.ClassDef) and bench._is_function_class(node)):
                continue
            method = bench._methods(node).get("example_inputs")
            if method is None:
                continue
            decorators = {ast.unparse(d) for d in method.decorator_list} & allowed
            expected = 1 if "classmethod" in decorators else 0
            if not decorators or len(method.args.args) != expected:
                bad.append(f"{name}::{node.name}")
    return bad


def readme_table_mismatches(corpus):
    """The README table rows ``| file | ... | buggy | correct |`` that disagree with the labels."""
    lines = corpus.readme().splitlines()
    wrong = []
    for name in corpus.files:
        rows = corpus.rows_of(name)
        buggy = sum(1 for r in rows if r["bug"] is not None)
        line = next((line for line in lines if line.startswith(f"| {name}")), None)
        if line is None:
            wrong.append(f"{name}: no row")
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[-2:] != [str(buggy), str(len(rows) - buggy)]:
            wrong.append(line)
    return wrong


def readme_kind_counts(corpus):
    """The README's ``By kind: k n, k n, ...`` sentence as a dict."""
    readme = " ".join(corpus.readme().split())
    line = readme.split("By kind: ", 1)[1].split(".", 1)[0]
    stated = {}
    for part in line.split(", "):
        kind, count = part.rsplit(" ", 1)
        stated[kind] = int(count)
    return stated


def label_problems(record):
    """What is wrong with a buggy record's ``bug = {...}`` label (empty when nothing)."""
    bug = record["bug"]
    if not isinstance(bug, dict):
        return ["bug is not a dict"]
    problems = []
    if not set(bug) <= {"kind", "input", "note", "also"}:
        problems.append(f"unknown keys {sorted(set(bug) - {'kind', 'input', 'note', 'also'})}")
    if bug.get("kind") not in bench.KINDS:
        problems.append(f"kind {bug.get('kind')!r} is not one of the bench's KINDS")
    if bug.get("input") not in record["params"]:
        problems.append(f"{bug.get('input')!r} is not a parameter of forward")
    if not (isinstance(bug.get("note"), str) and len(bug["note"]) > 10):
        problems.append("note missing or too short")
    also = bug.get("also", [])
    if not (isinstance(also, list) and set(also) <= bench.KINDS - {"none", bug.get("kind")}):
        problems.append(f"bad also {also!r}")
    return problems


def bug_site_problems(record, inplace_in_forward=True):
    """What is wrong with a buggy record's single ``# BUG`` mark (empty when nothing).

    With ``inplace_in_forward`` the mark must be in backward, except for an ``inplace`` bug, whose
    mark is in forward (the in-place change after saving); without it, in either method."""
    if len(record["bug_marks"]) != 1:
        return [f"{len(record['bug_marks'])} BUG marks"]
    if len(record["bug_sites"]) != 1:
        return ["the # BUG line must be in forward or backward"]
    site = record["bug_sites"][0]
    low, high = site["statement"]
    problems = [] if low <= site["line"] <= high else ["mark outside its statement"]
    if site["method"] not in ("forward", "backward"):
        return problems + [f"mark in {site['method']}"]
    expected = "forward" if record["bug"]["kind"] == "inplace" else "backward"
    if inplace_in_forward and site["method"] != expected:
        problems.append(f"mark in {site['method']}, expected {expected}")
    return problems


def twinless_buggy(corpus):
    """``file::Function`` of every non-estimator bug with no correct twin of the same parameters."""
    missing = []
    for name in corpus.files:
        rows = corpus.rows_of(name)
        twins = [r for r in rows if r["bug"] is None]
        for r in rows:
            if r["bug"] is not None and r["bug"]["kind"] not in ESTIMATORS:
                if not any(t["params"] == r["params"] for t in twins):
                    missing.append(f"{name}::{r['function']}")
    return missing


def readme_total_problems(corpus):
    """The README's table and its sentences of totals ("N buggy Functions (P with a pattern, K
    without)", "M correct twins") against the labels: [] when they agree."""
    readme = corpus.readme()
    problems = list(readme_table_mismatches(corpus))
    no_pattern = corpus.kind_counts()["none"]
    for sentence in (f"{len(corpus.buggy)} buggy Functions ({len(corpus.buggy) - no_pattern} with a "
                     f"pattern, {no_pattern} without)", f"{len(corpus.correct)} correct twins"):
        if sentence not in readme:
            problems.append(f"README lacks {sentence!r}")
    return problems


def label_tests(corpus) -> dict:
    """The label tests every corpus written to the sealed corpus's format shares, as test functions
    for a test module's namespace (``globals().update(label_tests(CORPUS))``)."""
    import pytest

    @pytest.mark.parametrize("record", corpus.records, ids=record_id)
    def test_every_function_declares_bug(record):
        assert record["has_bug_attribute"], "declare bug = {...} or bug = None (a correct twin)"

    @pytest.mark.parametrize("record", corpus.buggy, ids=record_id)
    def test_buggy_label_is_valid(record):
        assert label_problems(record) == []

    @pytest.mark.parametrize("record", corpus.buggy, ids=record_id)
    def test_buggy_has_exactly_one_bug_line_in_the_right_method(record):
        assert bug_site_problems(record) == []

    @pytest.mark.parametrize("record", corpus.correct, ids=record_id)
    def test_correct_twin_has_no_bug_line(record):
        assert record["bug_marks"] == []

    def test_every_buggy_function_has_a_twin_unless_an_estimator():
        assert twinless_buggy(corpus) == []

    def test_no_bug_mark_outside_a_function_class():
        assert bug_marks_outside_function_classes(corpus) == []

    def test_example_inputs_are_static_and_take_no_argument():
        assert example_inputs_taking_arguments(corpus, allow_classmethod=False) == []

    def test_readme_totals_and_counts_by_kind_match_the_labels():
        assert readme_total_problems(corpus) == []
        assert readme_kind_counts(corpus) == corpus.kind_counts()

    def test_engine_import_is_the_one_the_validator_replaces():
        engine, _ = corpus.engine_and_torch_files()
        assert engine and all(ENGINE_IMPORT + "\n" in corpus.source(n) for n in engine)

    return {name: fn for name, fn in locals().items() if name.startswith("test_")}
