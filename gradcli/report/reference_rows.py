"""Reference mode's table rows (specs/check.md §4): one per output and input gradient per dtype,

    x  bf16  err 3.1e-03  ref 2.0e-03  ratio 1.6  PASS

written into the table's existing columns (input, shape, max abs err, max rel err, method), and a
row per dtype that was not checked. Plain strings; check_view.rows calls ``reference_rows``.
"""
from __future__ import annotations

from gradcli.check.dtype_grid import SHORT


def reference_rows(report, make_row, ascii_only: bool = False) -> list:
    """Rows for the ``reference`` checks of one CheckReport; ``make_row(input, shape, abs_err,
    rel_err, method, status)`` builds the table's Row (the Function column is left to the caller)."""
    dash = "-" if ascii_only else "—"
    out = []
    for check in report.checks if report is not None else ():
        if check.name != "reference":
            continue
        details = check.details or {}
        dtype = SHORT.get(details.get("dtype", ""), details.get("dtype", "") or dash)
        if details.get("skipped"):
            continue  # a dtype not checked: its "not checked" row and line say why
        if not details.get("rows"):
            status = "not checked" if check.status == "skip" else check.status
            out.append(make_row("(reference)", dtype, dash, dash, dash, status))
            continue
        for row in details["rows"]:
            status = "not checked" if row["status"] == "skip" else row["status"]
            out.append(make_row(row["name"], dtype, "err " + _number(row["error"], dash),
                                "ref " + _number(row["reference_error"], dash), "ratio " + _ratio(row["ratio"], dash),
                                status))
    return out


def _number(value, dash: str) -> str:
    if value is None:
        return dash
    return value if isinstance(value, str) else f"{value:.1e}"


def _ratio(value, dash: str) -> str:
    if value is None:
        return dash
    if isinstance(value, str):  # "inf": the reference was exact there
        return value
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"


def numeric_status(report) -> str:
    """The report's status without its reference checks: what a numeric row without its own verdict
    (fast mode) shows, so that a reference failure does not mark the numeric rows FAIL."""
    checks = [c for c in report.checks if c.name != "reference"]
    if len(checks) == len(report.checks):
        return report.status
    statuses = [c.status for c in checks] + [r.status for r in report.inputs]
    return "fail" if "fail" in statuses else "pass"


def repro_flags(result) -> list:
    """``--dtype``, ``--device`` and ``--error-ratio`` for a reproduce line of a result checked in
    reference mode (the checks' details say what ran); [] otherwise."""
    dtypes, device, ratio, given = [], "cpu", 2.0, None
    for case in result.cases:
        for check in case.report.checks if case.report is not None else ():
            if check.name == "reference" and check.details.get("dtype"):
                dtypes += [check.details["dtype"]] if check.details["dtype"] not in dtypes else []
                device = check.details.get("device", device)
                ratio = check.details.get("error_ratio", ratio)
                given = check.details["reference"] if check.details.get("source") == "option" else given
    if not dtypes:
        return []
    flags = ["--dtype", ",".join(dtypes)]
    flags += ["--device", device] if device != "cpu" else []
    flags += ["--error-ratio", f"{ratio:g}"] if ratio != 2.0 else []
    flags += ["--reference", given] if given else []
    return flags
