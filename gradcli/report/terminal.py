"""Human output of ``gradcli check``: the compact view (layout.py) with failure panels, or with
``-v`` a table per file; in colour (rich) or plain text.

Both renderers stream: ``file()`` is called as each file finishes, ``finish()`` once at the end.
"""
from __future__ import annotations

from gradcli.report import check_view as view
from gradcli.report import layout

STATUS_STYLE = {"pass": "green", "fail": "bold red", "error": "bold red", "skip": "yellow", "not checked": "yellow",
                "surrogate": "magenta"}
PROOF_STYLE = {"proved": "green", "DISPROVED": "bold red", "undecided": "yellow", "not traceable": "dim"}
HEAT_RICH = ("·", "░", "▒", "▓", "█")
HEAT_PLAIN = (".", "-", "+", "*", "#")


class PlainRenderer:
    """ASCII only, no colour: for NO_COLOR, pipes, CI logs and ``--format plain``."""

    ascii_only = True

    def __init__(self, write, seed: int = 0, verbose: bool = False):
        self._write = write  # write(str): one line at a time
        self.count = 0  # lines written so far
        self.seed = seed
        self.verbose = verbose
        self.one_liner = False  # the last file was one line: passing files follow each other without a gap

    def compact(self, path: str, results: list):
        """The default view of one file: its lines (layout.py), then its notes and panels."""
        lines = layout.file_lines(path, results, ascii_only=self.ascii_only)
        was = self.one_liner
        self.one_liner = len(lines) == 1 and all(r.verdict() == "pass" for r in results)
        if not (was and self.one_liner):
            self.write("")
        for line in lines:
            self.line(line)
        before = self.count
        self.notes(results)
        self.one_liner = self.one_liner and self.count == before

    def write(self, text: str):
        self.count += 1
        self._write(text)

    def file(self, path: str, results: list):
        if not results:
            return
        if not self.verbose:
            self.compact(path, results)
            return
        self.write("")
        self.one_liner = False
        self.write(path)
        checked = [r for r in results if r.function is not None]  # not a file that failed to import
        flags = {"exact": view.shows_exact(checked), "proof": view.shows_proofs(checked)}
        header = view.columns(**flags)
        table = [header] + [row.cells(**flags) for r in checked for row in view.table_rows(r, ascii_only=True)]
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
                self.line(layout.Line(f"  SKIP {r.function or r.file}: {r.message}", hang=4,
                                      spans=[(2, 6, "skip")]))
            elif r.status == "surrogate":
                self.line(layout.Line(f"  SURROGATE {r.function}: {r.message}", hang=4, spans=[(2, 11, "surrogate")]))
            for kind, text in view.extra_lines(r, self.verbose):
                if kind == "note":
                    self.line(layout.Line(f"  {text}", style="note", hang=4))
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
                    why = "; ".join(c.details.get("why") or ["too many elements"])  # or over the time budget
                    self.write(f"  note {view.label(r, i)}: {', '.join(c.details.get('inputs', ()))} checked in fast "
                               f"mode (random directions, not localised element by element): {why}")

    def compat_note(self, r):
        from gradcli.report.compat_line import compat_failures, compat_text, compat_warnings

        for line in compat_warnings(r):
            self.write("  " + line)
        # the compact view keeps one line per passing file: the line shows there only when a feature
        # beyond backward failed (backward's own failure has its panel); -v shows it for every Function
        if not self.verbose and not compat_failures(r):
            return
        text = compat_text(r, ascii_only=self.ascii_only)
        if text:
            self.write("  " + text)

    def symbolic_notes(self, r):
        """Lines under the table: exact checks that could not be computed, proofs that did not prove
        (with -v: every proof and every skipped exact check)."""
        for i, case in enumerate(r.cases):
            exact = case.report.check("exact") if case.report is not None else None
            if exact is not None and exact.status == "skip" and (self.verbose or not view.routine_exact_skip(exact)):
                self.write(f"  exact {view.label(r, i)}: {exact.message}")
        proofs = [p for p in r.proofs or () if self.verbose or p["verdict"] != "proved"]
        if proofs and len({(p["verdict"], p["message"]) for p in proofs}) == 1 and len(proofs) > 1:
            proofs = [dict(proofs[0], input="")]  # one reason for every input (e.g. not traceable)
        for p in proofs:
            self.write("  " + view.proof_line(p, r.function, ascii_only=self.ascii_only))

    def line(self, line: layout.Line):
        """One Line: plain output writes it whole, whatever its length (logs and pipes wrap nothing)."""
        self.write(line.text)

    def panel(self, d: view.Detail):
        self.write("")
        for line in layout.panel_lines(d, HEAT_RICH if not self.ascii_only else HEAT_PLAIN, self.ascii_only):
            self.line(line)

    def finish(self, run):
        for selector in run.not_found:
            self.write(f"error: not found: {selector}")
        for line in proof_summary(run):
            self.write(line)
        self.short_summary(run)
        self.write(run.closing_line())

    def short_summary(self, run):
        lines = layout.summary_lines(run, ascii_only=self.ascii_only)
        if lines:
            self.write("")
        for line in lines:
            self.line(line)

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


LINE_STYLE = {"path": "bold", "pass": "green", "fail": "bold red", "error": "bold red", "skip": "yellow",
              "surrogate": "magenta", "name": "bold", "check": "bold", "coverage": "yellow", "finding": "bold magenta",
              "hint": "magenta", "inputs": "cyan", "repro": "cyan", "output": "dim", "trace": "dim", "proof": "bold",
              "note": "dim", "dim": "dim", "rule": "bold"}
METHOD_SHORT = {"complex_step": "cstep", "richardson": "richard", "central": "central", "mixed": "mixed"}
NARROW = 100  # below this width the -v table abbreviates the method column


def wrap_offsets(text: str, first: int, rest: int) -> list:
    """(start, end) of each line of ``text`` wrapped at spaces: the first line at most ``first``
    characters, the others ``rest``; a word longer than a line gets a line of its own, whole."""
    import re

    lines, start, end = [], 0, 0
    for word in re.finditer(r"\S+", text):
        room = first if not lines else rest
        if end > start and word.end() - start > room:
            lines.append((start, end))
            start = word.start()
        end = word.end()
    lines.append((start, end))
    return lines


def _short_number(text: str) -> str:
    """``8.9e-16`` -> ``9e-16`` (a narrow -v table); dashes and words as they are."""
    try:
        return format(float(text), ".0e")
    except ValueError:
        return text


class RichRenderer(PlainRenderer):
    """The terminal view: colour, lines wrapped to the console (never those a user copies), -v tables."""

    ascii_only = False

    def __init__(self, console, seed: int = 0, verbose: bool = False):
        super().__init__(lambda text: self.line(layout.Line(text, hang=4)), seed, verbose)
        self.console = console
        self.name_width = None  # the run's longest Function label, when known before the first file

    def file(self, path: str, results: list):
        if not results:
            return
        if not self.verbose:
            self.compact(path, results)
            return
        self.console.print()
        checked = [r for r in results if r.function is not None]  # not a file that failed to import
        self.line(layout.Line(path, style="path", paste=True))
        if checked:
            self.console.print(self.table(checked))
        self.notes(results)

    def table(self, checked: list):
        """-v: one row per (input set, input). Names and statuses never shrink: on a narrow console
        the numbers' headers take two lines, then the numbers lose a digit, then the method column
        goes; input and shape fold. The same scheme for every file (``name_width``: the run's
        longest name, when the Output knows it)."""
        from rich import box
        from rich.table import Table
        from rich.text import Text

        width, narrow = self.console.width, self.console.width < NARROW
        flags = {"exact": view.shows_exact(checked), "proof": view.shows_proofs(checked)}
        rows = [row for r in checked for row in view.table_rows(r)]
        names = max([8, self.name_width or 0] + [len(row.function) for row in rows])
        statuses = max([6] + [len(row.status) for row in rows])
        numbers = 2 + flags["exact"]
        # the scheme depends on the console, the run's names and the columns only: 11 is "NOT CHECKED",
        # 5 + 5 the input and shape columns, 2 the gap between two columns
        fixed = names + 11 + 5 + 5 + 9 * flags["proof"] + 2 * (5 + numbers + flags["proof"])
        short = narrow and fixed + 7 * numbers + 7 > width  # 9e-16 instead of 8.9e-16
        method = not narrow or fixed + (5 if short else 7) * numbers + 7 <= width
        table = Table(box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD, pad_edge=not narrow, show_edge=not narrow,
                      collapse_padding=narrow)
        keep = []
        for k, name in enumerate(view.columns(**flags)):
            right = name.startswith("max") or name == view.EXACT_COLUMN
            if name == "method" and not method:
                continue
            keep.append(k)
            if name == "Function":
                table.add_column(name, no_wrap=True, min_width=names)
            elif name == "status":
                table.add_column(name, no_wrap=True, min_width=statuses)
            elif name in ("input", "shape"):
                table.add_column(name, overflow="fold")
            else:  # numbers and the method never break
                header = name.replace("max ", "").replace(" err", "\nerr") if short else \
                    name.replace(" err", "\nerr") if narrow else name
                table.add_column(header, justify="right" if right else "left", no_wrap=True)
        for row in rows:
            cells = list(row.cells(**flags))
            m = -2 - flags["proof"]
            if narrow:
                cells[m] = METHOD_SHORT.get(cells[m], cells[m])
            if short:
                cells[3:m] = [_short_number(c) for c in cells[3:m]]
            cells[-1] = Text(cells[-1], style=STATUS_STYLE.get(row.status, ""))
            if flags["proof"]:
                cells[-2] = Text(cells[-2], style=PROOF_STYLE.get(row.proof, ""))
            table.add_row(*[cells[k] for k in keep])
        return table

    def line(self, line: layout.Line):
        """A Line in colour: pasted lines whole (soft wrap: the terminal folds them, a copy gets them
        whole), fitted lines cut with an ellipsis after their name, others word-wrapped with a hanging indent."""
        from rich.text import Text

        self.count += 1
        text = Text(line.text, style=LINE_STYLE.get(line.style, ""))
        for start, end, style in line.spans:
            text.stylize(LINE_STYLE.get(style, style), start, end)
        width = self.console.width
        if line.paste or len(line.text) <= width:
            self.console.print(text, soft_wrap=True, highlight=False)
        elif line.fit:
            room = max(width, line.keep + 2)
            text.truncate(room - 1)
            text.append("…")
            self.console.print(text, soft_wrap=True, highlight=False)
        else:  # word-wrapped, continuation lines indented by ``hang``; no word is ever broken
            for k, (a, b) in enumerate(wrap_offsets(line.text, width, max(20, width - line.hang))):
                self.console.print(Text(" " * line.hang * (k > 0)) + text[a:b], soft_wrap=True, highlight=False)

    def finish(self, run):
        for selector in run.not_found:
            self.console.print(f"[bold red]error:[/] not found: {selector}", highlight=False)
        for line in proof_summary(run):
            self.console.print(line, style="dim" if line.startswith("note") else "bold", highlight=False)
        self.short_summary(run)
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
