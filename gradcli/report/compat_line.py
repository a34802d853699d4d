"""The compatibility line of a Function in the terminal: one line under the table (specs/check.md)."""
from __future__ import annotations

from gradcli.check.compat import line, merge


def compat_text(result, ascii_only: bool = False) -> str:
    """``compat Name: backward ✓  double backward not checked  jvp —  …``; empty when nothing was checked."""
    compat = merge([case.report for case in result.cases])
    if not compat or result.function is None:
        return ""
    return f"compat {result.function}: {line(compat, ascii_only)}"


def compat_failures(result) -> list:
    """The features other than backward that failed for some input set (``["jvp", "layouts"]``)."""
    compat = merge([case.report for case in result.cases])
    return [key for key, state in compat.items() if key != "backward" and state == "fail"]


WARNED = ("ctx_attributes", "random")  # warnings said under the table: issue 22's ctx check, a re-seeded forward


def compat_warnings(result) -> list:
    """``warning Name: ctx_attributes: …`` once per Function (the first input set that warns)."""
    lines = []
    for name in WARNED:
        for case in result.cases:
            check = case.report.check(name) if case.report is not None else None
            if check is not None and check.status == "warn":
                lines.append(f"warning {result.function}: {name}: {check.message}")
                break
    return lines
