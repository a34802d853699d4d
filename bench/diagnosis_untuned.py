"""Diagnosis accuracy on the untuned corpus of bench/diagnosis_untuned/ (issue 17, deliverable 3).

    python bench/diagnosis_untuned.py [--gradcli CHECKOUT] [--python PY] [--json OUT] [-v]
                                      [--corpus DIR] [--summary]

``--corpus DIR`` scores any folder in this format (default bench/diagnosis_untuned). bench/diagnosis_heldout
was blind until 2026-12-01 19:30 UTC, bench/diagnosis_blind until 20:30 UTC,
bench/diagnosis_fresh until 22:30 UTC, bench/diagnosis_unseen until 23:25 UTC and
bench/diagnosis_sealed until 23:50 UTC, bench/diagnosis_latest until 2026-12-02 01:15 UTC and
bench/diagnosis_hidden until 02:35 UTC, bench/diagnosis_withheld and bench/diagnosis_novel until 06:05 UTC,
bench/diagnosis_unknown until 06:22 UTC, bench/diagnosis_sequestered until 06:40 UTC,
bench/diagnosis_reserved until 13:05 UTC, bench/diagnosis_foreign until 13:15 UTC and
bench/diagnosis_stranger until 13:40 UTC, bench/diagnosis_outside until 2026-12-03 10:12 UTC,
bench/diagnosis_distant until 13:47 UTC, bench/diagnosis_remote until 14:39 UTC and
bench/diagnosis_unheard until 17:05 UTC, bench/diagnosis_yonder until 17:58 UTC,
bench/diagnosis_further until 2026-12-04 01:27 UTC, bench/diagnosis_overseas until 02:31 UTC,
bench/diagnosis_faraway and bench/diagnosis_beyond until 05:20 UTC; all twenty-three are design
corpora since (their READMEs give their blind scores). bench/diagnosis_afar, _elsewhere, _abroad,
_afield, _hinterland, _uncharted, _offshore and _wayward are BLIND
(score them with ``--summary`` only).
``--summary`` prints only the totals block, no per-Function lines (the only way to score a blind
corpus).

The corpus is a set of torch-style Functions written from scratch, apart from the diagnosis
rules and never used to design them. Each buggy class carries its true bug as a class attribute
``bug = {"kind": KIND, "input": NAME, "note": ...}`` and a ``# BUG`` comment on the statement that
computes the wrong gradient; ``bug = None`` marks a correct twin. The labels are read statically
(``ast``), so reading them never imports the corpus.

The corpus is checked by the gradcli of CHECKOUT as a user runs it — a subprocess
``PY -m gradcli check CORPUS --format plain --no-exact --json TMP`` with CHECKOUT first on
PYTHONPATH (the exact check does not feed the diagnosis and costs minutes on attention; pass
``--exact`` to keep it) — and every labelled Function is scored from the JSON's
``results[].checks[].diagnosis`` findings:

- right: a finding about the labelled input (or a Function-wide one, ``input: null``) has the
  labelled kind, and no finding names another bug kind; *location right* when, in addition, its
  ``params.source.line`` lies in the ``# BUG`` statement (of the same file);
- wrong: some finding names a bug kind other than the label's (``none`` and ``kink`` never count
  as wrong);
- alternative: not wrong, and a finding about the labelled input has one of the label's
  ``also`` kinds — a second name that is also true of the bug (``sign`` for a gradient reversal,
  ``transposed`` for a missing transpose + reshape); counted apart, never as right;
- vague: the check failed and no finding names a bug kind (only ``none``/``kink``, or nothing);
- missed: the check PASSED the buggy Function;
- no verdict: error or skip (a corpus mistake, or torch is not installed for realtorch.py).
Bugs labelled ``none`` (no simple pattern exists) are right when every finding is ``none``/``kink``
("no simple pattern found") and wrong when a bug kind is named. Correct twins: false alarm when
the result is not PASS, wrong when a finding names a bug kind.

Before (2026-12-01, main at 9050297, whose diagnosis is fe6c690's; torch 2.13.0 CPU): of 74
pattern bugs 21 right kind (28.4 %), 16 right kind + location (21.6 %), 2 alternative names,
46 vague, 5 wrong, 0 missed; no-pattern bugs 5 of 6 "no simple pattern"; 34 correct twins all
PASS; 6 wrong diagnoses in all. Details and per-kind figures: bench/diagnosis_untuned/README.md.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "diagnosis_untuned")
REPO = os.path.dirname(HERE)

# The vocabulary shared with the diagnosis (specs/diagnosis.md plus the kinds issue 17 adds).
KINDS = {
    "scale", "sign", "zero", "ignores_grad_output", "not_reduced", "swapped", "transposed",
    "region", "missing_term", "inplace", "precision", "term_sign", "wrong_axis",
    "wrong_variable", "not_accumulated", "missing_flip", "missing_reshape", "straight_through",
    "gradient_reversal", "smooth_surrogate", "none",
}
NOT_A_BUG_KIND = {"none", "kink"}  # findings that never count as wrong
BUG_MARK = "# BUG"


# ---------------------------------------------------------------------------------- labels
def _is_function_class(node: ast.ClassDef) -> bool:
    for base in node.bases:
        text = ast.unparse(base)
        if text.endswith("Function"):
            return True
    return False


def _methods(node: ast.ClassDef) -> dict:
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def _bug_attribute(node: ast.ClassDef):
    """(found, value): the literal value of the class attribute ``bug``."""
    for item in node.body:
        if (isinstance(item, ast.Assign) and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name) and item.targets[0].id == "bug"):
            return True, ast.literal_eval(item.value)
    return False, None


def _statement_at(func: ast.FunctionDef, line: int):
    """The innermost statement of ``func`` whose lines include ``line``."""
    best = None
    for node in ast.walk(func):
        inside = isinstance(node, ast.stmt) and node.lineno <= line <= node.end_lineno
        if inside and node is not func:
            if best is None or (node.end_lineno - node.lineno) <= (best.end_lineno - best.lineno):
                best = node
    return best


def read_file_labels(path: str) -> list:
    """One record per autograd Function class of ``path``, in source order (static: ast only)."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    tree = ast.parse(source, filename=path)
    lines = source.splitlines()
    records = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not _is_function_class(node):
            continue
        methods = _methods(node)
        found, bug = _bug_attribute(node)
        forward = methods.get("forward")
        params = [a.arg for a in forward.args.args][1:] if forward else []  # drop ctx
        marks = [i + 1 for i in range(node.lineno - 1, node.end_lineno)
                 if lines[i].rstrip().endswith(BUG_MARK) or (BUG_MARK + " ") in lines[i]]
        where = []
        for line in marks:
            for name in ("forward", "backward"):
                func = methods.get(name)
                if func is not None and func.lineno <= line <= func.end_lineno:
                    stmt = _statement_at(func, line)
                    if stmt is not None:
                        where.append({"method": name, "line": line,
                                      "statement": [stmt.lineno, stmt.end_lineno]})
        records.append({
            "file": os.path.abspath(path), "function": node.name, "line": node.lineno,
            "has_bug_attribute": found, "bug": bug, "params": params,
            "bug_marks": marks, "bug_sites": where,
        })
    return records


def read_corpus(corpus: str = CORPUS) -> list:
    records = []
    for name in sorted(os.listdir(corpus)):
        if name.endswith(".py") and not name.startswith("."):
            records.extend(read_file_labels(os.path.join(corpus, name)))
    return records


# --------------------------------------------------------------------------------- running
def run_check(corpus, gradcli_checkout, python, exact, timeout, extra):
    """Run ``gradcli check`` on the corpus in a subprocess; return the parsed --json report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "check.json")
        cmd = [python, "-m", "gradcli", "check", corpus, "--format", "plain", "--json", out]
        if not exact:
            cmd.append("--no-exact")
        cmd += ["--timeout", str(timeout)] + list(extra)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.abspath(gradcli_checkout) + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True)
        if not os.path.exists(out):
            sys.exit(f"gradcli check wrote no JSON (exit {proc.returncode}):\n"
                     f"{proc.stderr[-2000:]}")
        with open(out, encoding="utf-8") as handle:
            return json.load(handle), proc


# --------------------------------------------------------------------------------- scoring
def _findings(result, params):
    """Every finding of a result, with the input's name resolved."""
    found = []
    for report in result.get("checks") or []:
        if not report:
            continue
        names = {r.get("index"): r.get("name") for r in report.get("inputs", [])}
        for finding in report.get("diagnosis") or []:
            index = finding.get("input")
            name = None
            if index is not None:
                name = names.get(index) or (params[index] if index < len(params) else str(index))
            source = (finding.get("params") or {}).get("source") or {}
            found.append({"kind": finding.get("kind"), "input": name,
                          "line": source.get("line"), "file": source.get("file"),
                          "message": finding.get("message", "")})
    return found


def _location_right(finding, record):
    if finding["line"] is None or not record["bug_sites"]:
        return False
    if finding["file"] and os.path.basename(finding["file"]) != os.path.basename(record["file"]):
        return False
    low, high = record["bug_sites"][0]["statement"]
    return low <= finding["line"] <= high


def score(record, result):
    """The outcome of one labelled Function given its gradcli check result (or None)."""
    bug = record["bug"]
    out = {"file": os.path.basename(record["file"]), "function": record["function"],
           "label": bug["kind"] if bug else None, "input": bug["input"] if bug else None,
           "status": result["status"] if result else "missing", "findings": [],
           "outcome": None, "kind_right": False, "location_right": False}
    if result is None or result["status"] in ("error", "skip"):
        out["outcome"] = "no_verdict"
        out["message"] = (result or {}).get("message", "not in gradcli's results")
        return out
    findings = _findings(result, record["params"])
    out["findings"] = findings
    bug_named = [f for f in findings if f["kind"] not in NOT_A_BUG_KIND]
    if bug is None:  # a correct twin
        if bug_named:
            out["outcome"] = "wrong"
        elif result["status"] != "pass":
            out["outcome"] = "false_alarm"
        else:
            out["outcome"] = "pass"
        return out
    if result["status"] == "pass":
        out["outcome"] = "missed"
        return out
    if bug["kind"] == "none":
        out["outcome"] = "wrong" if bug_named else "right"
        out["kind_right"] = not bug_named
        return out
    also = set(bug.get("also", ()))
    about = [f for f in findings if f["input"] in (bug["input"], None)]
    matching = [f for f in about if f["kind"] == bug["kind"]]
    alternatives = [f for f in about if f["kind"] in also]
    others = [f for f in bug_named if f["kind"] != bug["kind"] and f["kind"] not in also]
    out["kind_right"] = bool(matching)
    out["location_right"] = any(_location_right(f, record) for f in matching)
    if others:
        out["outcome"] = "wrong"
    elif matching:
        out["outcome"] = "right"
    elif alternatives:
        out["outcome"] = "alternative"
    else:
        out["outcome"] = "vague"
    return out


def totals(rows):
    pattern = [r for r in rows if r["label"] not in (None, "none")]
    no_pattern = [r for r in rows if r["label"] == "none"]
    twins = [r for r in rows if r["label"] is None]
    count = Counter(r["outcome"] for r in pattern)
    right_kind = sum(1 for r in pattern if r["outcome"] == "right")
    right_both = sum(1 for r in pattern if r["outcome"] == "right" and r["location_right"])
    failed = [r for r in pattern if r["outcome"] not in ("missed", "no_verdict")]

    def pct(n, d):
        return round(100.0 * n / d, 1) if d else None

    return {
        "pattern_bugs": len(pattern),
        "pattern_bugs_failed": len(failed),
        "right_kind": right_kind,
        "right_kind_pct": pct(right_kind, len(pattern)),
        "right_kind_of_failed_pct": pct(right_kind, len(failed)),
        "right_kind_and_location": right_both,
        "right_kind_and_location_pct": pct(right_both, len(pattern)),
        "alternative": count["alternative"],
        "vague": count["vague"], "wrong": count["wrong"], "missed": count["missed"],
        "no_verdict": count["no_verdict"],
        "no_pattern_bugs": len(no_pattern),
        "no_pattern_said_none": sum(1 for r in no_pattern if r["outcome"] == "right"),
        "no_pattern_named_a_kind": sum(1 for r in no_pattern if r["outcome"] == "wrong"),
        "no_pattern_missed": sum(1 for r in no_pattern if r["outcome"] == "missed"),
        "no_pattern_no_verdict": sum(1 for r in no_pattern if r["outcome"] == "no_verdict"),
        "correct_twins": len(twins),
        "correct_pass": sum(1 for r in twins if r["outcome"] == "pass"),
        "correct_false_alarm": sum(1 for r in twins if r["outcome"] == "false_alarm"),
        "correct_wrong": sum(1 for r in twins if r["outcome"] == "wrong"),
        "correct_no_verdict": sum(1 for r in twins if r["outcome"] == "no_verdict"),
        "wrong_total": count["wrong"]
        + sum(1 for r in no_pattern + twins if r["outcome"] == "wrong"),
    }


def _got(row):
    parts = []
    for f in row["findings"]:
        where = f":L{f['line']}" if f["line"] else ""
        parts.append(f"{f['kind']}({f['input'] or '*'}){where}")
    return ", ".join(dict.fromkeys(parts)) or "-"


def render(rows, summary, verbose=False, summary_only=False):
    if not summary_only:
        render_rows(rows, verbose)
    render_totals(summary)


def render_rows(rows, verbose=False):
    by_file = defaultdict(list)
    for row in rows:
        by_file[row["file"]].append(row)
    for name, group in by_file.items():
        print(f"\n{name}")
        print(f"  {'Function':34} {'label':20} {'input':10} {'outcome':11} {'loc':4} got")
        for r in group:
            label = r["label"] or "(correct)"
            if r["outcome"] != "right" or r["label"] == "none":
                loc = "-"
            else:
                loc = "yes" if r["location_right"] else "no"
            got = _got(r) if r["outcome"] != "no_verdict" else r.get("message", "")[:60]
            print(f"  {r['function']:34} {label:20} {r['input'] or '':10} {r['outcome']:11} "
                  f"{loc:4} {got}")
            if verbose:
                for f in r["findings"]:
                    print(f"      {f['kind']}: {f['message'][:150]}")
        tally = Counter(r["outcome"] for r in group)
        print("  " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))


def render_totals(summary):
    s = summary
    print(f"\npattern bugs: {s['pattern_bugs']} ({s['pattern_bugs_failed']} failed the check)")
    print(f"  right kind:            {s['right_kind']:3}  {s['right_kind_pct']}% "
          f"(of the failed: {s['right_kind_of_failed_pct']}%)")
    print(f"  right kind + location: {s['right_kind_and_location']:3}  "
          f"{s['right_kind_and_location_pct']}%")
    print(f"  alternative name: {s['alternative']}  vague: {s['vague']}  wrong: {s['wrong']}  "
          f"missed: {s['missed']}  "
          f"no verdict: {s['no_verdict']}")
    print(f"no-pattern bugs (kind none): {s['no_pattern_bugs']}: "
          f"{s['no_pattern_said_none']} got 'no simple pattern', "
          f"{s['no_pattern_named_a_kind']} were given a kind, {s['no_pattern_missed']} missed, "
          f"{s['no_pattern_no_verdict']} no verdict")
    print(f"correct twins: {s['correct_twins']}: {s['correct_pass']} pass, "
          f"{s['correct_false_alarm']} false alarms, {s['correct_wrong']} wrong, "
          f"{s['correct_no_verdict']} no verdict")
    print(f"wrong diagnoses in all: {s['wrong_total']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradcli", default=REPO, help="the gradcli checkout to measure")
    parser.add_argument("--python", default=sys.executable, help="interpreter to run it with")
    parser.add_argument("--corpus", default=CORPUS,
                        help="the folder of labelled Functions to score (default: %(default)s)")
    parser.add_argument("--summary", action="store_true",
                        help="print only the totals, no per-Function lines")
    parser.add_argument("--json", dest="json_out", help="write the per-Function rows and totals")
    parser.add_argument("--exact", action="store_true", help="keep gradcli's exact check on")
    parser.add_argument("--timeout", type=float, default=300,
                        help="gradcli check --timeout per Function (a loaded machine is slow)")
    parser.add_argument("-k", dest="keyword", help="passed to gradcli check -k")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each finding")
    args = parser.parse_args(argv)
    # gradcli check runs in a temporary folder: a relative --corpus must not depend on it
    args.corpus = os.path.abspath(args.corpus)
    if not os.path.isdir(args.corpus):
        parser.error(f"--corpus {args.corpus}: not a folder")

    records = read_corpus(args.corpus)
    extra = ["-k", args.keyword] if args.keyword else []
    report, proc = run_check(args.corpus, args.gradcli, args.python, args.exact, args.timeout,
                             extra)
    results = {}
    for result in report.get("results", []):
        if result.get("function"):
            key = (os.path.basename(result["file"]), result["function"])
            results[key] = result
        else:  # a file that failed to import
            results[(os.path.basename(result["file"]), None)] = result
    rows = []
    for record in records:
        key = (os.path.basename(record["file"]), record["function"])
        result = results.get(key) or results.get((key[0], None))
        if args.keyword and key not in results:
            continue
        rows.append(score(record, result))
    summary = totals(rows)
    render(rows, summary, args.verbose, summary_only=args.summary)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump({"gradcli": os.path.abspath(args.gradcli), "corpus": args.corpus,
                       "gradcli_exit": proc.returncode, "totals": summary, "rows": rows},
                      handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
