"""What the ``gradcli check`` renderers show, independent of how: table rows, failure details,
heat-map levels and the reproduction command. Plain strings and lists; no rich, no colour."""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from typing import Optional

HEAT_LEVELS = 5  # 0: within tolerance, 1..4: growing share of the largest error
HEAT_MAX_ROWS, HEAT_MAX_COLS = 12, 40
COLUMNS = ("Function", "input", "shape", "max abs err", "max rel err", "method", "status")
EXACT_COLUMN = "exact err"  # after "max rel err", when a result in the table has an exact check
PROOF_COLUMN = "proof"  # before "status", when a result in the table was proved (--prove)
PROOF_WORDS = {"proved": "proved", "disproved": "DISPROVED", "undecided": "undecided",
               "not_traceable": "not traceable"}
SHAPE_NOTE = ("the element structure is the same at every shape for elementwise/broadcast/matmul code, so "
              "their proofs hold at every shape; raise --prove-shape to check shape-specific code")


def columns(exact: bool = False, proof: bool = False) -> tuple:
    out = list(COLUMNS[:5]) + ([EXACT_COLUMN] if exact else []) + ["method"] + ([PROOF_COLUMN] if proof else [])
    return tuple(out + ["status"])


@dataclass
class Row:
    function: str
    input: str
    shape: str
    abs_err: str
    rel_err: str
    method: str
    status: str  # pass | fail | error | skip
    exact_err: str = ""
    proof: str = ""  # a PROOF_WORDS value, or ""

    def cells(self, exact: bool = False, proof: bool = False) -> tuple:
        out = [self.function, self.input, self.shape, self.abs_err, self.rel_err]
        out += [self.exact_err] if exact else []
        out += [self.method] + ([self.proof] if proof else [])
        return tuple(out + [self.status.upper()])


def shows_exact(results) -> bool:
    """Whether the table of these results gets the "exact err" column."""
    return any(c.report is not None and c.report.check("exact") is not None for r in results for c in r.cases)


def shows_proofs(results) -> bool:
    return any(getattr(r, "proofs", None) is not None for r in results)


def proof_for(result, case_index: Optional[int], index: int) -> Optional[dict]:
    """The proof of argument ``index`` in input set ``case_index`` (proofs on --prove-shape symbols,
    ``input_set`` null, stand for every input set; index -1: one verdict for the whole Function)."""
    for p in getattr(result, "proofs", None) or ():
        if p["index"] in (index, -1) and p["input_set"] in (case_index, None):
            return p
    return None


def proofs_of_case(result, case_index: Optional[int]) -> list:
    return [p for p in getattr(result, "proofs", None) or () if p["input_set"] in (case_index, None)]


_ASCII = str.maketrans({"ᵀ": "^T", "−": "-", "—": "-", "×": "x", "·": "*", "²": "^2", "≤": "<=", "≥": ">=",
                        "…": "...", "√": "sqrt", "π": "pi"})


def ascii_text(text: str) -> str:
    """The symbolic layer's messages (Jᵀg, ×, −) for ASCII output."""
    return text.translate(_ASCII)


def proof_line(p: dict, function: Optional[str] = None, ascii_only: bool = False) -> str:
    who = " ".join(x for x in (function, p["input"]) if x)
    line = f"proof {who}: {PROOF_WORDS.get(p['verdict'], p['verdict'])}: {p['message']}"
    return ascii_text(line) if ascii_only else line


def exact_rows(report) -> dict:
    """The exact check's per-input rows by argument index ({} when there is none)."""
    check = report.check("exact") if report is not None else None
    return {row["index"]: row for row in check.details.get("inputs", [])} if check is not None else {}


@dataclass
class HeatMap:
    label: str  # "x (|analytic - numeric|, max 2.2e+00 at [1, 2])"
    levels: list  # rows of ints in 0..HEAT_LEVELS-1
    note: str = ""  # e.g. "8x8 blocks of 100x100, max per block"


@dataclass
class Detail:
    """One failure/error panel: a title and lines of (kind, text); kinds style the text."""

    status: str
    title: str
    lines: list = field(default_factory=list)  # (kind, text); kinds: check worst finding hint inputs repro output trace
    heatmaps: list = field(default_factory=list)


def fmt(value, spec: str = ".1e") -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value  # "nan", "inf" from json_safe
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return format(value, spec)


def fmt_shape(shape, ascii_only: bool = False) -> str:
    if not shape:
        return "scalar"
    return ("x" if ascii_only else "×").join(str(int(s)) for s in shape)


def label(result, case_index: int) -> str:
    name = result.function or "(file)"
    return f"{name}[{case_index + 1}]" if len(result.cases) > 1 else name


def rows(result, ascii_only: bool = False) -> list:
    """Table rows for one FunctionResult: one per (input set, differentiable input) plus one per
    failed Function-level check; a single row when nothing was checked."""
    dash = "-" if ascii_only else "—"
    blank = lambda name, status: Row(name, dash, dash, dash, dash, dash, status, dash)  # noqa: E731
    shown = lambda c: c.status == "fail" and c.name not in ("values", "exact", "reference")  # noqa: E731  (own rows)
    number = lambda v: dash if v is None else fmt(v)  # noqa: E731  (not computed: fast mode, no reference)
    from gradcli.report.reference_rows import numeric_status, reference_rows  # reference mode: rows per dtype

    out = []
    for i, case in enumerate(result.cases):
        name = label(result, i)
        report = case.report
        if report is None:
            out.append(blank(name, case.status))
            continue
        exact = exact_rows(report)
        for r in report.inputs:
            status = r.status if r.status != "skip" else numeric_status(report)
            proof = proof_for(result, i, r.index)
            if (exact.get(r.index) or {}).get("failed_elements") or (proof and proof["verdict"] == "disproved"):
                status = "fail"
            if status == "fail" and case.status == "surrogate":  # the declared mismatch, not a failure
                status = "surrogate"
            if r.status == "skip" and report.mode == "full" and report.status != "skip":
                status = "not checked"
            out.append(Row(name, r.name, fmt_shape(r.shape, ascii_only), number(r.max_abs_error),
                           number(r.max_rel_error), r.method or dash, status, number(r.exact_error),
                           PROOF_WORDS.get(proof["verdict"], "") if proof else ""))
            name = ""
        extra = reference_rows(report, lambda *cells: Row("", *cells[:5], status=cells[5]), ascii_only)
        if extra:
            extra[0].function, name = name, ""
            out += extra
        for c in report.checks:
            if shown(c):
                out.append(Row(name, f"({c.name})", "", "", "", "", "error" if case.status == "error" else
                               "surrogate" if case.status == "surrogate" else "fail"))
                name = ""
        if not report.inputs and not any(shown(c) for c in report.checks):
            out.append(blank(name, report.status))
    if not out and getattr(result, "proofs", None):  # no input set was checked, but the backward was proved
        name = result.function
        for p in result.proofs:
            out.append(Row(name, p["input"] or dash, fmt_shape(p["shape"], ascii_only) if p["shape"] else dash, dash,
                           dash, dash, "fail" if p["verdict"] == "disproved" else result.status, dash,
                           PROOF_WORDS.get(p["verdict"], "")))
            name = ""
    if not out:
        out.append(blank(result.function or "(import)", result.status))
    shown_inputs = {(row.input) for row in out}
    for entry in not_checked_entries(result):
        if entry["input"] in shown_inputs:
            continue  # its row says "not checked" already
        out.append(Row("", entry["input"], dash, dash, dash, dash, "not checked", dash))
    return out


def table_rows(result, ascii_only: bool = False) -> list:
    """The -v table's rows of a result: ``rows`` and the rows its hooks add (``extra_lines`` kind "row")."""
    return rows(result, ascii_only) + [row for kind, row in extra_lines(result, True) if kind == "row"]


def not_checked_entries(result, partial_only: bool = True) -> list:
    """The result's not-checked inputs (those that make a pass partial; with ``partial_only=False``
    also deliberate ones, such as a tensor given without requires_grad)."""
    return [e for e in getattr(result, "not_checked", None) or () if e.get("partial", True) or not partial_only]


def not_checked_line(entry, result=None) -> str:
    where = f" (input set {entry['input_set'] + 1})" if entry.get("input_set") is not None else ""
    return f"{entry['input']}{where}: {entry['reason']}"


def verdict_word(result) -> str:
    """PASS, ``PASS (partial: bias not checked)``, FAIL, ERROR, SKIP, SURROGATE."""
    if getattr(result, "partial", False):
        names = []
        for e in not_checked_entries(result):
            if e["input"] not in names:
                names.append(e["input"])
        return f"PASS (partial: {', '.join(names)} not checked)"
    return result.status.upper()


def input_summary(records) -> str:
    """``x = float64[3,4]@(-2,2) (auto), bias = none``."""
    parts = []
    for rec in records:
        what = rec.get("spec")
        if what is None:
            if rec.get("type") == "tensor":
                what = f"{rec['dtype']}[{','.join(str(s) for s in rec['shape'])}]"
                if rec.get("value") is not None and len(str(rec["value"])) <= 60:
                    what += f" = {rec['value']}"
            elif rec.get("source") == "captured" and rec.get("type") not in PLAIN_TYPES:
                what = f"a {rec.get('type')}"  # an object the package built: its repr may be a page (or an address)
            else:
                what = repr(rec.get("value"))
        source = rec["source"] + (", shaped like the gradient its backward returned" if rec.get("shape_from") else
                                  ", a number: forward refused tensors there" if rec.get("number") else "")
        parts.append(f"{rec['name']} = {what} ({source})")
    text = ", ".join(parts) if parts else "no arguments"
    captured = next((rec.get("inferred") for rec in records if rec.get("source") == "captured"), None)
    return f"{text}; captured: {captured}" if captured else text  # captured_calls.py: where they came from


PLAIN_TYPES = ("tensor", "int", "float", "bool", "str", "none", "tuple", "callable", "object")


def repro_command(result, records, seed: int) -> str:
    """A command line that re-runs this check with the same inputs."""
    cmd = ["gradcli", "check", f"{result.file}::{result.function}", "--seed", str(seed)]
    for rec in records:
        if rec.get("source") in ("auto", "cli") and rec.get("spec"):
            cmd += ["--input", f"{rec['name']}={rec['spec']}"]
    inputs_file = next((rec["inputs_from"] for rec in records if rec.get("inputs_from")), None)
    if inputs_file:  # example inputs from --inputs-from / [tool.gradcli] inputs-from
        cmd += ["--inputs-from", inputs_file]
    if _needs_exact_flag(result):
        cmd.append("--exact")
    from gradcli.report.reference_rows import repro_flags

    cmd += repro_flags(result)
    disproved = [p for p in getattr(result, "proofs", None) or () if p["verdict"] == "disproved"]
    if disproved:
        cmd.append("--prove")
        shapes = {tuple(p["shape"]) for p in disproved if p["input_set"] is None} - {(2, 2)}
        if shapes:
            cmd += ["--prove-shape", "x".join(map(str, min(shapes)))]
    return " ".join(shlex.quote(c) for c in cmd)


def _needs_exact_flag(result) -> bool:
    """A failed traced exact check that the default would not run: a torch Function's (its engine
    twin), or one over more input elements than the default traces."""
    from gradcli.check.symbolic_checks import EXACT_AUTO_ELEMENTS

    for case in result.cases:
        report = case.report
        exact = report.check("exact") if report is not None else None
        if exact is not None and exact.status == "fail" and exact.details.get("source") == "trace":
            elements = sum(math.prod(r.shape) for r in report.inputs)
            return result.backend == "torch" or elements > EXACT_AUTO_ELEMENTS
    return False


def heatmap(r, ascii_only: bool = False) -> Optional[HeatMap]:
    """Where the error lives in a 1-D or 2-D input (block maxima when larger than the panel)."""
    errors = r.error_map()
    if errors is None or errors.ndim not in (1, 2) or errors.size < 2:
        return None
    import numpy as np

    grid = np.atleast_2d(np.nan_to_num(np.asarray(errors, dtype=float), nan=np.inf))
    finite = grid[np.isfinite(grid)]
    top = float(finite.max()) if finite.size else 0.0
    note = ""
    if grid.shape[0] > HEAT_MAX_ROWS or grid.shape[1] > HEAT_MAX_COLS:
        by, bx = -(-grid.shape[0] // HEAT_MAX_ROWS), -(-grid.shape[1] // HEAT_MAX_COLS)
        padded = np.full((-(-grid.shape[0] // by) * by, -(-grid.shape[1] // bx) * bx), 0.0)
        padded[:grid.shape[0], :grid.shape[1]] = grid
        grid = padded.reshape(padded.shape[0] // by, by, padded.shape[1] // bx, bx).max(axis=(1, 3))
        note = f"each cell is the max over a {by}x{bx} block"
    threshold = r.tolerance if r.tolerance is not None else 0.0
    scaled = np.where(np.isfinite(grid), grid / top if top > 0 else 0.0, 1.0)
    levels = np.where(grid <= threshold, 0, 1 + np.minimum(HEAT_LEVELS - 2, (scaled * (HEAT_LEVELS - 1)).astype(int)))
    biggest = fmt(r.max_abs_error) if r.max_abs_error is not None else fmt(top)
    return HeatMap(f"{r.name} (|analytic - numeric|, max {biggest})", levels.tolist(), note)


def detail(result, seed: int, verbose: bool = False, ascii_only: bool = False) -> Detail:
    """The panel for a failed or errored Function."""
    where = f"{result.file}:{result.line}" if result.line else result.file
    bwd_file = getattr(result, "backward_file", None)  # inherited from a base in another file
    bwd = f", backward at {bwd_file + ':' if bwd_file else 'line '}{result.backward_line}" \
        if result.backward_line and result.status == "fail" else ""
    title = f"{result.function}  ({where}{bwd})" if result.function else f"importing {where}"
    d = Detail(result.status, f"{result.status.upper()}  {title}")
    traces = []
    if not result.cases:
        d.lines.append(("check", result.message))
        d.lines += [("proof", proof_line(p, ascii_only=ascii_only)) for p in getattr(result, "proofs", None) or ()]
    for i, case in enumerate(result.cases):
        if case.status not in ("fail", "error"):
            continue
        prefix = f"input set {i + 1}: " if len(result.cases) > 1 else ""
        report = case.report
        if verbose and case.traceback:  # user code raised (in forward, or in backward: gradcheck's check)
            traces.append(case.traceback.rstrip())
        if report is None:
            d.lines.append(("check", prefix + case.message))
        else:
            for c in report.failures:
                d.lines.append(("check", f"{prefix}{c.name}: {c.message}"))
            said = " ".join(c.message for c in report.failures)
            for r in report.inputs:
                if r.status == "fail" and r.worst is not None:
                    analytic, numeric = fmt(r.worst.analytic, ".10g"), fmt(r.worst.numeric, ".10g")
                    if analytic not in said:  # the values check may already name the worst element
                        d.lines.append(("worst", f"worst element {r.name}{list(r.worst.index)}: analytic {analytic}, "
                                                 f"numeric {numeric} (tolerance {fmt(r.tolerance)})"))
                    hm = heatmap(r, ascii_only)
                    if hm is not None:
                        d.heatmaps.append(hm)
            for f in report.diagnosis:
                d.lines.append(("finding", f"Looks like: {f.message}"))
                if f.hint:
                    d.lines.append(("hint", f"  hint: {f.hint}"))
            exact = report.check("exact")
            if exact is not None and exact.status != "fail" and (verbose or not routine_exact_skip(exact)):
                d.lines.append(("exact", f"{prefix}exact: {exact.message}"))  # a failed one is among the failures
        for p in proofs_of_case(result, i):
            d.lines.append(("proof", prefix + proof_line(p, ascii_only=ascii_only)))
            if p["verdict"] == "disproved":
                notes = [ascii_text(n) if ascii_only else n for n in p.get("notes") or ()]
                d.lines += [("proof", f"  note: {note}") for note in notes]
        d.lines.append(("inputs", f"inputs: {input_summary(case.inputs)}"))
        d.lines.append(("repro", f"reproduce: {repro_command(result, case.inputs, seed)}"))
    for entry in not_checked_entries(result, partial_only=False):
        d.lines.append(("coverage", f"not checked: {not_checked_line(entry)}"))
    if result.output.strip():
        d.lines.append(("output", "captured output:\n" + result.output.rstrip()))
    d.lines += [(kind, text) for kind, text in extra_lines(result, verbose) if kind != "row"]
    if verbose and result.traceback:
        traces.append(result.traceback.rstrip())
    d.lines += [("trace", text) for text in dict.fromkeys(traces)]
    return d


# ----- room for more per-Function data (reference modes, compatibility, ...) ------------------------
# A hook is ``hook(result, verbose) -> [(kind, text), ...]``; kinds: "note" (a line under the Function
# in the compact view and in its panel), "row" (a -v table row: text is a Row), any Detail kind for
# panel-only lines. A result may also carry ``extra_lines`` (the same pairs) itself.
LINE_HOOKS: list = []


def extra_lines(result, verbose: bool = False) -> list:
    out = list(getattr(result, "extra_lines", None) or ())
    for hook in LINE_HOOKS:
        out += hook(result, verbose) or []
    return out


def routine_exact_skip(check) -> bool:
    """An exact check not computed by default (a torch Function without formula, too many elements):
    said with -v only."""
    return check.status == "skip" and check.details.get("reason") in ("torch", "elements")


def short_reason(result) -> str:
    """One line saying why a result is not a pass: its first diagnosis finding that names a pattern
    (``backward is 2× too large for input x``), else its message."""
    for case in result.cases:
        report = case.report
        failed = case.status == "fail" and report is not None
        found = [f for f in report.diagnosis if f.kind != "none"] if failed else []
        if found:  # "no simple pattern found" says less than the message
            return found[0].message.splitlines()[0]
    return (result.message or result.status).strip().splitlines()[0] if (result.message or "").strip() else ""


def summary_entries(run) -> list:
    """(verdict word, ``file::Name``, reason) for every failure and error, in run order (with
    --strict also the partial passes and skips it fails)."""
    out = []
    for r in run.results:
        verdict = r.verdict()
        if r.status in ("fail", "error") or (run.strict and verdict in ("partial", "skip")):
            where = f"{r.file}::{r.function}" if r.function else f"{r.file} (import)"
            out.append(({"partial": "PARTIAL"}.get(verdict, r.status.upper()), where, short_reason(r)))
    return out
