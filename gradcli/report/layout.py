"""The compact view of ``gradcli check`` (the default; ``-v`` shows the tables): what each line
says, as ``Line`` objects both renderers print -- the plain one as they are, the rich one in
colour, wrapped to the terminal except lines a user copies (``paste``), which are never broken.

Per file (specs/check.md §4): ``path  3 passed: A, B, C`` -- a passing file is that one line --
then one line per result that is not a full pass (``  FAIL   Name — reason``) with its notes.
At the end of the run: the short summary of every failure and error, then the closing line.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gradcli.report import check_view as view

SEP = " — "  # between a name and its reason (ASCII: " - ")


@dataclass
class Line:
    text: str
    style: str = ""  # a key of terminal.LINE_STYLE: "path", "pass", "fail", "note", "dim", ...
    paste: bool = False  # reproduce:, file:line, tracebacks: printed whole (the terminal soft-wraps)
    hang: int = 0  # indent of wrapped continuation lines
    fit: bool = False  # one screen line: the text after ``keep`` characters is cut with "…" to fit
    keep: int = 0  # characters that are never cut (the status word and the name)
    spans: list = field(default_factory=list)  # (start, end, style) within text


def sep(ascii_only: bool) -> str:
    return " - " if ascii_only else SEP


def counts(results) -> str:
    """``2 passed, 1 partial, 1 failed``: the closing line's words for one file."""
    by = {}
    for r in results:
        by[r.verdict()] = by.get(r.verdict(), 0) + 1
    words = (("pass", "passed"), ("partial", "partial"), ("surrogate", "surrogate"), ("fail", "failed"),
             ("error", "error"), ("skip", "skipped"))
    return ", ".join(f"{by[v]} {w}{'s' if v in ('error', 'surrogate') and by[v] != 1 else ''}"
                     for v, w in words if by.get(v))


def file_lines(path: str, results: list, ascii_only: bool = False) -> list:
    """The compact lines of one file: a header naming its full passes, then one line per other result."""
    passed = [r for r in results if r.verdict() == "pass"]
    others = [r for r in results if r.verdict() != "pass"]
    head = path
    spans = [(0, len(path), "path")]
    if passed:
        word = f"  {len(passed)} passed"
        spans.append((len(head), len(head) + len(word), "pass"))
        head += word + ": " + ", ".join(r.function for r in passed)
    if others:
        rest = counts(others)
        head += ("; " if passed else "  ") + rest
    out = [Line(head, hang=4, spans=spans)]
    bad = [r for r in others if r.status in ("fail", "error")]  # skips, surrogates, partial passes: their notes
    width = max((len(r.status) for r in bad), default=0)
    for r in bad:
        word, name, reason = r.status.upper(), r.function or "(import)", view.short_reason(r)
        text = f"  {word.ljust(width)}  {name}"
        keep = len(text)
        if reason:
            text += sep(ascii_only) + (view.ascii_text(reason) if ascii_only else reason)
        # cut to one screen line: the panel below says it all
        out.append(Line(text, fit=True, keep=keep, hang=4, spans=[(2, 2 + len(word), "fail"),
                                                                  (keep - len(name), keep, "name")]))
    return out


def summary_lines(run, ascii_only: bool = False) -> list:
    """pytest's short summary: ``FAIL file.py::Name — reason``, one per failure and error."""
    entries = view.summary_entries(run)
    if not entries:
        return []
    words = {}
    for word, _, _ in entries:
        words[word] = words.get(word, 0) + 1
    said = {"FAIL": "failed", "ERROR": "error", "PARTIAL": "partial", "SKIP": "skipped"}
    out = [Line("short summary: " + ", ".join(f"{n} {said.get(w, w)}{'s' if w == 'ERROR' and n > 1 else ''}"
                                               for w, n in words.items()), style="rule")]
    for word, where, reason in entries:
        text = f"{word} {where}"
        keep = len(text)
        if reason:
            text += sep(ascii_only) + (view.ascii_text(reason) if ascii_only else reason)
        out.append(Line(text, fit=True, keep=keep, spans=[(0, len(word), "fail"), (len(word) + 1, keep, "name")]))
    return out


def panel_lines(d: view.Detail, heat: tuple, ascii_only: bool = False) -> list:
    """A failure panel without a border (a border breaks what is copied out of it): the title with
    file:line, then the body indented; inputs, reproduce, output and traces are never wrapped."""
    out = [Line(d.title, style=d.status, paste=True)]
    for kind, text in d.lines:
        paste = kind in ("inputs", "repro", "output", "trace")
        for k, line in enumerate(text.splitlines()):
            hang = 6 if kind == "hint" else 4
            out.append(Line("    " + line, style=kind, paste=paste or k > 0, hang=hang))
    for hm in d.heatmaps:
        out.append(Line(f"    error map of {hm.label}:", style="check"))
        for row in hm.levels:
            out.append(Line("      " + " ".join(heat[v] for v in row), style="heat", paste=True))
        legend = f"      {heat[0]} within tolerance, {heat[-1]} largest error" + (f"; {hm.note}" if hm.note else "")
        out.append(Line(legend, style="dim"))
    return out
