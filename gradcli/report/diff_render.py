"""Output of ``gradcli diff``: a rich table (terminal), plain ASCII text (pipes), JSON, LaTeX, Python.

Reads a ``gradcli.expr.model.DiffResult``; computes nothing. The JSON shape is written down in
``specs/diff.md``. Plain, JSON and Python output never import rich (it costs start-up time in pipes).
"""
import json
import math

from gradcli.expr.formatting import to_ascii

PASS_MARK = {"unicode": "✓", "ascii": "ok"}
FAIL_MARK = {"unicode": "✗", "ascii": "FAIL"}
MAX_EXACT_SHOWN = 48   # longer exact values are left to the float (and to JSON)
COLUMNS = ("", "exact", "value", "autograd", "finite diff", "error", "")


def signature(result, style):
    """``f(x, y) = ...`` lines for the expressions."""
    arguments = ", ".join(result.variables + result.parameters)
    return [f"{name}({arguments}) = {text}" for name, text in zip(result.names, result.expressions[style])]


def _exact_text(cell, style):
    if not cell.exact:
        return "—" if style == "unicode" else "-"
    text = cell.exact[style]
    return text if len(text) <= MAX_EXACT_SHOWN else ("…" if style == "unicode" else "...")


def _error_text(value):
    if value is None:
        return "—"
    return "0" if value == 0 else f"{value:.1e}"


def _mark(ok, style):
    if ok is None:
        return ""
    return PASS_MARK[style] if ok else FAIL_MARK[style]


def point_rows(point, style):
    rows = []
    dash = "—" if style == "unicode" else "-"
    for cell in point.cells:
        rows.append([cell.label[style], _exact_text(cell, style), cell.value_text,
                     cell.autograd_text, cell.fd_text if cell.key[1] else dash,
                     _error_text(cell.error), _mark(cell.ok, style)])
    if style == "ascii":
        rows = [[c.replace("—", "-").replace("−", "-") for c in row] for row in rows]
    return rows


def summary_line(point, style):
    if point.max_error is None and point.problem is None:
        return "nothing to compare (see warnings)"
    line = _mark(point.ok, style)
    if point.max_error is not None:
        line = f"largest disagreement {_error_text(point.max_error)} {line}"
    if point.problem:
        line += ": " + (point.problem if style == "unicode" else to_ascii(point.problem))
    return line


def check_lines(result):
    return [f"check d{result.names[0]}/d{c.variable}: {c.verdict}: {c.detail}" for c in result.checks]


# ---- plain ----
def render_plain(result):
    if result.python_code is not None:
        return result.python_code
    out = signature(result, "ascii")
    out += [f"{f.label['ascii']} = {f.text['ascii']}" for f in result.formulas]
    if result.definitions:
        out.append("where")
        out += [f"  {name} = {forms['ascii']}" for name, forms in result.definitions]
    for point in result.points:
        out.append("")
        out.append(f"at {point.at_text}")
        table = [[c.strip() or ("ok?" if i == 6 else "quantity") for i, c in enumerate(COLUMNS)]]
        table[0][6] = "ok"
        table += point_rows(point, "ascii")
        widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
        out += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
        out.append("  " + summary_line(point, "ascii"))
    if result.checks:
        out.append("")
        out += check_lines(result)
    out += [f"note: {line}" for line in result.info]
    out += [f"warning: {w.text['ascii']}" for w in result.warnings]
    return "\n".join(out) + "\n"


# ---- JSON ----
def _number(value):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def _section(result, values):
    """{(output, wrt): x} -> {"value", "gradient"/"jacobian", "hessian"?, "derivatives"?} in the spec's shape."""
    several = len(result.names) > 1
    outputs = range(len(result.names))

    def per_output(build):
        return [build(i) for i in outputs] if several else build(0)

    section = {}
    if any((i, ()) in values for i in outputs):
        section["value"] = per_output(lambda i: values.get((i, ())))
    gradient = per_output(lambda i: {v: values.get((i, (v,))) for v in result.variables})
    section["jacobian" if several else "gradient"] = gradient
    if result.hessian:
        def pair(a, b):   # only the upper triangle is computed; the matrix is symmetric
            return tuple(sorted((a, b), key=result.variables.index))
        section["hessian"] = per_output(lambda i: {a: {b: values.get((i, pair(a, b))) for b in result.variables}
                                                   for a in result.variables})
    higher = {k: v for k, v in values.items() if len(k[1]) > 2 or (len(k[1]) == 2 and not result.hessian)}
    if higher:
        section["derivatives"] = per_output(lambda i: {",".join(k[1]): v for k, v in higher.items() if k[0] == i})
    return section


def to_dict(result):
    formulas = {f.key: f.text["ascii"] for f in result.formulas}
    data = {"expression": result.expressions["ascii"][0] if len(result.names) == 1 else result.expressions["ascii"],
            "variables": list(result.variables), "assumptions": result.assumptions, "method": result.method}
    if result.parameters:
        data["parameters"] = list(result.parameters)
    data.update(_section(result, formulas))
    data.pop("value", None)
    if result.order > 1:
        data["order"] = result.order
    if result.definitions:
        data["definitions"] = {name: forms["ascii"] for name, forms in result.definitions}
    points = []
    for point in result.points:
        exact = {c.key: (c.exact["ascii"] if c.exact else None) for c in point.cells}
        entry = {"at": point.at, "at_text": point.at_text}
        entry.update(_section(result, {c.key: _number(c.value) for c in point.cells}))
        entry["exact"] = _section(result, exact)
        entry["autograd"] = _section(result, {c.key: _number(c.autograd) for c in point.cells})
        entry["finite_difference"] = _section(result, {c.key: _number(c.finite_difference)
                                                       for c in point.cells if c.key[1]})
        entry["max_error"] = _number(point.max_error)
        entry["ok"] = point.ok
        entry["problem"] = to_ascii(point.problem) if point.problem else None
        points.append(entry)
    data["points"] = points
    if result.checks:
        data["check"] = [{"variable": c.variable, "answer": c.answer, "verdict": c.verdict, "detail": c.detail,
                          "point": c.point} for c in result.checks]
    data["warnings"] = [{"kind": w.kind, "message": w.text["ascii"]} for w in result.warnings]
    data["notes"] = list(result.info)
    return data


def render_json(result):
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"


# ---- LaTeX ----
def render_latex(result):
    arguments = ", ".join(result.variables + result.parameters)
    lines = [r"\begin{align*}"]
    body = [f"{name}({arguments}) &= {text}" for name, text in zip(result.names, result.expressions["latex"])]
    body += [f"{f.label['latex']} &= {f.text['latex']}" for f in result.formulas]
    if result.definitions:
        body += [rf"\text{{{name}}} &= {forms['latex']}" for name, forms in result.definitions]
    lines.append(" \\\\\n".join(body))
    lines.append(r"\end{align*}")
    for point in result.points:
        lines.append(rf"At ${point.at_text.replace('=', ' = ')}$:")
        lines.append(r"\begin{align*}")
        rows = []
        for cell in point.cells:
            exact = cell.exact["latex"] if cell.exact else None
            approx = cell.value_text if cell.status == "ok" else rf"\text{{{cell.status}}}"
            same = cell.exact is not None and cell.exact["ascii"] == cell.value_text
            rows.append(f"{cell.label['latex']} &= {exact} \\approx {approx}" if exact and cell.status == "ok"
                        and not same else f"{cell.label['latex']} &= {exact if same else approx}")
        lines.append(" \\\\\n".join(rows))
        lines.append(r"\end{align*}")
    lines += [f"% warning: {w.text['ascii']}" for w in result.warnings]
    return "\n".join(lines) + "\n"


# ---- rich table ----
def render_table(result, console):
    from rich.table import Table
    from rich.text import Text

    if result.python_code is not None:
        console.print(result.python_code, markup=False, highlight=False, end="")
        return
    for line in signature(result, "unicode"):
        console.print(Text(line, style="bold"))
    for formula in result.formulas:
        console.print(Text.assemble("  ", (formula.label["unicode"], "cyan"), " = ", formula.text["unicode"]))
    if result.definitions:
        console.print("  where")
        for name, forms in result.definitions:
            console.print(Text(f"    {name} = {forms['unicode']}"))
    for point in result.points:
        table = Table(title=f"at {point.at_text}", title_justify="left", show_lines=False)
        for k, name in enumerate(COLUMNS):
            table.add_column(name, justify="right" if k in (2, 3, 4, 5) else "left", no_wrap=k != 1)
        for row in point_rows(point, "unicode"):
            style = {PASS_MARK["unicode"]: "green", FAIL_MARK["unicode"]: "bold red"}.get(row[-1])
            table.add_row(*row[:-1], Text(row[-1], style=style or ""))
        console.print()
        console.print(table)
        console.print(Text(summary_line(point, "unicode"), style="green" if point.ok else "bold red"))
    for check in result.checks:
        style = {"proved": "green", "refuted": "bold red"}.get(check.verdict, "yellow")
        console.print(Text.assemble(f"check ∂{result.names[0]}/∂{check.variable}: ", (check.verdict, style),
                                    f": {check.detail}"))
    for line in result.info:
        console.print(Text(f"note: {line}", style="dim"))
    for warning in result.warnings:
        console.print(Text(f"warning: {warning.text['unicode']}", style="yellow"))


def render(result, fmt, console=None):
    """Text for ``fmt`` in plain/json/latex/python; for "table", print to ``console`` and return None."""
    if fmt == "table":
        render_table(result, console)
        return None
    if fmt == "json":
        return render_json(result)
    if fmt == "latex":
        return render_latex(result)
    if fmt == "python":
        return result.python_code or ""
    return render_plain(result)
