"""Human output of ``gradcli check``: a rich table per file with failure panels, or plain text.

Both renderers stream: ``file()`` is called as each file finishes, ``finish()`` once at the end.
"""
from __future__ import annotations

from gradcli.report import check_view as view

STATUS_STYLE = {"pass": "green", "fail": "bold red", "error": "bold red", "skip": "yellow", "not checked": "yellow",
                "surrogate": "magenta"}
PROOF_STYLE = {"proved": "green", "DISPROVED": "bold red", "undecided": "yellow", "not traceable": "dim"}
ROUTINE_EXACT_SKIPS = ("torch", "elements")  # exact checks not computed by default: said with -v only
HEAT_RICH = ("·", "░", "▒", "▓", "█")
HEAT_PLAIN = (".", "-", "+", "*", "#")


class PlainRenderer:
    """ASCII only, no colour: for NO_COLOR, pipes, CI logs and ``--format plain``."""

    ascii_only = True

    def __init__(self, write, seed: int = 0, verbose: bool = False):
        self.write = write  # write(str): one line at a time
        self.seed = seed
        self.verbose = verbose

    def file(self, path: str, results: list):
        if not results:
            return
        self.write("")
        self.write(path)
        checked = [r for r in results if r.function is not None]  # not a file that failed to import
        flags = {"exact": view.shows_exact(checked), "proof": view.shows_proofs(checked)}
        header = view.columns(**flags)
        table = [header] + [row.cells(**flags) for r in checked for row in view.rows(r, ascii_only=True)]
        widths = [max(len(str(line[i])) for line in table) for i in range(len(header))]
        for line in table if checked else ():
            self.write("  " + "  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
        self.notes(results)

    def notes(self, results: list):
        for r in results:  # right under the table: what each Function supports (before any panel)
            self.compat_note(r)
        for r in results:
            if r.status in ("fail", "error"):
                self.panel(view.detail(r, self.seed, self.verbose, ascii_only=self.ascii_only))
            elif r.status == "skip":
                self.write(f"  SKIP {r.function or r.file}: {r.message}")
            elif r.status == "surrogate":
                self.write(f"  SURROGATE {r.function}: {r.message}")
            if r.status not in ("fail", "error"):  # a panel lists them
                self.coverage_notes(r)
            if r.status not in ("fail", "error"):  # a panel says these already
                self.symbolic_notes(r)
            if self.verbose and r.cases:
                for i, case in enumerate(r.cases):
                    self.write(f"  inputs {view.label(r, i)}: {view.input_summary(case.inputs)}")
        hinted = [r for r in results if r.hint]
        if hinted:  # the migration snippet once per file, naming every legacy Function
            names = ", ".join(r.function for r in hinted)
            self.write(f"  note: {names} use{'s' if len(hinted) == 1 else ''} the legacy instance style "
                       f"(forward(self, ...), called as {hinted[0].function}()(...)), which current PyTorch "
                       f"refuses. Migrate to:")
            for line in hinted[0].hint.splitlines()[1:]:
                self.write("  " + line)

    def coverage_notes(self, r):
        """What was not exercised: ``PASS (partial: bias not checked) Name: bias: ...`` for a partial
        pass, a note for deliberate gaps and for inputs checked in fast mode only."""
        entries = view.not_checked_entries(r, partial_only=False)
        if r.partial:
            self.write(f"  {view.verdict_word(r)} {r.function}:")
        for entry in entries:
            self.write(f"    not checked: {view.not_checked_line(entry)}" if r.partial else
                       f"  note {r.function}: not checked: {view.not_checked_line(entry)}")
        for i, case in enumerate(r.cases):
            for c in case.report.checks if case.report is not None else ():
                if c.name == "structure" and c.status == "warn":
                    self.write(f"  warning {view.label(r, i)}: structure: {c.message}")
                if c.name == "values" and c.details.get("too_large") and c.status in ("pass", "fail"):
                    self.write(f"  note {view.label(r, i)}: {', '.join(c.details.get('inputs', ()))} checked in fast "
                               f"mode (random directions, not localised element by element): too many elements")

    def compat_note(self, r):
        from gradcli.report.compat_line import compat_text, compat_warnings

        for line in compat_warnings(r):
            self.write("  " + line)
        text = compat_text(r, ascii_only=self.ascii_only)
        if text:
            self.write("  " + text)

    def symbolic_notes(self, r):
        """Lines under the table: exact checks that could not be computed, proofs that did not prove
        (with -v: every proof and every skipped exact check)."""
        for i, case in enumerate(r.cases):
            exact = case.report.check("exact") if case.report is not None else None
            if exact is not None and exact.status == "skip" and \
                    (self.verbose or exact.details.get("reason") not in ROUTINE_EXACT_SKIPS):
                self.write(f"  exact {view.label(r, i)}: {exact.message}")
        proofs = [p for p in r.proofs or () if self.verbose or p["verdict"] != "proved"]
        if proofs and len({(p["verdict"], p["message"]) for p in proofs}) == 1 and len(proofs) > 1:
            proofs = [dict(proofs[0], input="")]  # one reason for every input (e.g. not traceable)
        for p in proofs:
            self.write("  " + view.proof_line(p, r.function, ascii_only=self.ascii_only))

    def panel(self, d: view.Detail):
        self.write("")
        self.write(d.title)
        for _, text in d.lines:
            for line in text.splitlines():
                self.write("    " + line)
        for hm in d.heatmaps:
            self.write(f"    error map of {hm.label}:")
            for row in hm.levels:
                self.write("      " + " ".join(HEAT_PLAIN[v] for v in row))
            self.write(f"      {HEAT_PLAIN[0]} within tolerance, {HEAT_PLAIN[-1]} largest error"
                       + (f"; {hm.note}" if hm.note else ""))

    def finish(self, run):
        for selector in run.not_found:
            self.write(f"error: not found: {selector}")
        for line in proof_summary(run):
            self.write(line)
        self.write(run.closing_line())

    def collect_only(self, run):
        files = list(dict.fromkeys([info.file for info in run.collected] + [r.file for r in run.results]))
        order = {path: k for k, path in enumerate(run.files or files)}
        lines = [(info.file, f"{info.file}::{info.name}  ({info.style}, {info.backend})") for info in run.collected]
        lines += [(r.file, f"{r.status.upper()} {r.file}: {r.message}") for r in run.results]
        for _, line in sorted(lines, key=lambda fl: order.get(fl[0], len(order))):  # stable: file order
            self.write(line)
        n = len(run.collected)
        self.write(f"{n} Function{'s' if n != 1 else ''} collected"
                   + (f", {run.deselected} deselected" if run.deselected else "") + f" in {run.duration:.2f}s")
        for selector in run.not_found:
            self.write(f"error: not found: {selector}")


class RichRenderer(PlainRenderer):
    """The terminal view: box tables, coloured statuses, panels with heat-maps."""

    ascii_only = False

    def __init__(self, console, seed: int = 0, verbose: bool = False):
        super().__init__(lambda text: console.print(text, markup=False, highlight=False), seed, verbose)
        self.console = console

    def file(self, path: str, results: list):
        from rich.table import Table
        from rich.text import Text

        if not results:
            return
        self.console.print()
        checked = [r for r in results if r.function is not None]  # not a file that failed to import
        if not checked:
            self.console.print(Text(path, style="bold"))
        else:
            table = Table(title=path, title_justify="left", title_style="bold")
            flags = {"exact": view.shows_exact(checked), "proof": view.shows_proofs(checked)}
            for name in view.columns(**flags):
                table.add_column(name, justify="right" if name.startswith("max") or name == view.EXACT_COLUMN
                                 else "left", no_wrap=name != "Function")
            for r in checked:
                for row in view.rows(r):
                    cells = list(row.cells(**flags))
                    cells[-1] = Text(cells[-1], style=STATUS_STYLE.get(row.status, ""))
                    if flags["proof"]:
                        cells[-2] = Text(cells[-2], style=PROOF_STYLE.get(row.proof, ""))
                    table.add_row(*cells)
            self.console.print(table)
        self.notes(results)

    def panel(self, d: view.Detail):
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        styles = {"check": "bold", "worst": "", "coverage": "yellow", "finding": "bold magenta", "hint": "magenta", "inputs": "cyan",
                  "repro": "cyan", "output": "dim", "trace": "dim", "exact": "", "proof": "bold"}
        parts = [Text(text, style=styles.get(kind, "")) for kind, text in d.lines]
        for hm in d.heatmaps:
            grid = Text(f"error map of {hm.label}:\n")
            for row in hm.levels:
                for v in row:
                    grid.append(HEAT_RICH[v] + " ", style="red" if v else "green")
                grid.append("\n")
            grid.append(f"{HEAT_RICH[0]} within tolerance, {HEAT_RICH[-1]} largest error"
                        + (f"; {hm.note}" if hm.note else ""), style="dim")
            parts.append(grid)
        self.console.print(Panel(Group(*parts), title=d.title, title_align="left",
                                 border_style=STATUS_STYLE.get(d.status, "")))

    def finish(self, run):
        for selector in run.not_found:
            self.console.print(f"[bold red]error:[/] not found: {selector}", highlight=False)
        for line in proof_summary(run):
            self.console.print(line, style="dim" if line.startswith("note") else "bold", highlight=False)
        s = run.summary
        style = "bold red" if s["failed"] or s["errors"] or run.interrupted or run.strict_failures() else \
            "bold green" if s["passed"] and not s["partial"] else "bold yellow"
        self.console.print(run.closing_line(), style=style, highlight=False)


def proof_summary(run) -> list:
    """``proofs: 12 proved, 2 disproved, ...`` and, when something was proved, what a proof at one
    shape says about the others (no lines without --prove)."""
    proofs = [p for r in run.results for p in getattr(r, "proofs", None) or ()]
    if not proofs:
        return []
    counts = {}
    for p in proofs:
        counts[p["verdict"]] = counts.get(p["verdict"], 0) + 1
    parts = [f"{counts[v]} {view.PROOF_WORDS[v].lower()}" for v in view.PROOF_WORDS if v in counts]
    lines = [f"proofs: {', '.join(parts)}"]
    if counts.get("proved"):
        shapes = sorted({"x".join(map(str, p["shape"])) or "scalar" for p in proofs
                         if p["input_set"] is None and p["verdict"] == "proved"})
        at = f"automatic inputs were proved at shape {', '.join(shapes)} (--prove-shape), given inputs at their " \
             "own shapes; " if shapes else ""
        lines.append(f"note: {at}{view.SHAPE_NOTE}")
    return lines
