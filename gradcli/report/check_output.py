"""Where ``gradcli check`` output goes: the chosen renderer (streamed per file, or after the
progress bar), the progress bar on stderr, and the --json / --junit files."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time

from gradcli.check.collector import RunEvents

PROGRESS_MIN_FUNCTIONS = 4  # "more than a few"


def choose_format(requested: str) -> str:
    """auto -> rich on a colour terminal, plain for NO_COLOR, pipes and dumb terminals."""
    if requested != "auto":
        return requested
    tty = sys.stdout.isatty()
    if not tty or "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return "plain"
    return "rich"


def make_renderer(fmt: str, seed: int, verbose: bool):
    from gradcli.report.terminal import PlainRenderer, RichRenderer

    if fmt == "rich":
        from rich.console import Console

        return RichRenderer(Console(), seed, verbose)
    return PlainRenderer(print, seed, verbose)  # plain and github


class Output(RunEvents):
    """RunEvents that render as files finish, with a progress bar on a terminal's stderr.

    The bar's total is fixed before the first Function runs: ``plan(items, keyword)`` counts the
    Functions the syntax scan found (scan.py, what discovery walked anyway); a file whose import
    collects a different number corrects it once, when it finishes. Beside the bar: the Function
    running longest and its time, so a slow one is visible while it runs."""

    def __init__(self, fmt: str, seed: int, verbose: bool, collect_only: bool = False, stderr=None):
        self.fmt = fmt
        self.renderer = make_renderer(fmt, seed, verbose)
        self.collect_only = collect_only
        self.stderr = sys.stderr if stderr is None else stderr
        self.show_progress = self.stderr.isatty() and not collect_only  # nothing on stderr when not a terminal
        self.deferred = []  # (path, results) rendered after the progress bar when it may be shown
        self.seen = set()  # files already rendered or deferred
        self.progress = None
        self.task = None
        self.planned = {}  # file -> Functions it is expected to check (the scan's count, then the real one)
        self.done = 0  # Functions with a result
        self.running = {}  # (file, name) -> clock() at its start
        self.clock = time.monotonic

    @property
    def total(self) -> int:
        return sum(self.planned.values())

    def plan(self, items, keyword=None):
        """Count the Functions each file will check, from the syntax scan, and start the bar."""
        from gradcli.check.scan import scan_file

        for item in items:
            names = list(scan_file(item.abspath).functions)
            if item.names is not None:
                names = [n for n in names if n in item.names]
            if keyword is not None:
                names = [n for n in names if keyword([n, os.path.basename(item.path), f"{item.path}::{n}"])]
            self.planned[item.path] = len(names) or 1  # a file without a Function found is one result (its import)
            longest = max(map(len, names), default=0)
            if longest > (getattr(self.renderer, "name_width", None) or 0) and hasattr(self.renderer, "name_width"):
                self.renderer.name_width = longest  # -v tables: one width scheme for the whole run
        if self.show_progress and self.total >= PROGRESS_MIN_FUNCTIONS:
            self._start_bar()

    def _start_bar(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 running_column(self), console=Console(file=self.stderr), transient=True)
        self.progress.start()
        self.task = self.progress.add_task("", total=self.total, completed=self.done)

    def now_running(self) -> str:
        """``buggy_ops.py::BuggyExp 14s``: the Function running longest (several run with -j)."""
        if not self.running:
            return ""
        (file, name), since = min(self.running.items(), key=lambda kv: kv[1])
        more = f" (+{len(self.running) - 1})" if len(self.running) > 1 else ""
        return f"{os.path.basename(file)}::{name} {self.clock() - since:.0f}s{more}"

    # RunEvents
    def started(self, file: str, name: str):
        self.running[(file, name)] = self.clock()

    def result(self, result):
        self.done += 1
        self.running.pop((result.file, result.function), None)
        if self.progress is not None:
            self.progress.update(self.task, completed=self.done)

    def file_done(self, path: str, results: list):
        self.seen.add(path)
        if self.planned.get(path, len(results)) != len(results):  # the import found another number
            self.planned[path] = len(results)
            if self.progress is not None:
                self.progress.update(self.task, total=self.total)
        if self.collect_only:
            return  # --collect-only lists every file once, at the end, in file order
        if self.show_progress:
            self.deferred.append((path, results))
        else:
            self.renderer.file(path, results)
            sys.stdout.flush()

    def finish(self, run, collect_only: bool = False):
        if self.progress is not None:
            self.progress.stop()
        if collect_only:
            self.renderer.collect_only(run)
            return
        for r in run.results:  # interrupted: files that never finished still show what was checked
            if r.file not in self.seen:
                self.seen.add(r.file)
                self.deferred.append((r.file, [x for x in run.results if x.file == r.file]))
        for path, results in self.deferred:
            self.renderer.file(path, results)
        if self.fmt == "github":
            from gradcli.report.machine import github_annotations

            for line in github_annotations(run):
                print(line)
        self.renderer.finish(run)


def running_column(output: Output):
    """A rich progress column: the Function running longest and for how long (re-rendered ~10×/s).
    Defined on first use: rich.progress is imported only when a bar is shown."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RunningColumn(ProgressColumn):
        def render(self, task):
            return Text(output.now_running(), style="dim", no_wrap=True, overflow="ellipsis")

    return RunningColumn()


def write_files(run, json_path=None, junit_path=None, timing: bool = True):
    """Write --json / --junit; raises OSError with the path in its message. Each file is written
    whole or not at all: to a temporary file beside it, then renamed over it (a run killed while
    writing leaves the previous report, never an empty or truncated one)."""
    from gradcli.report.machine import json_text, junit_xml

    for path, text in ((json_path, lambda: json_text(run, timing=timing)), (junit_path, lambda: junit_xml(run))):
        if path:
            write_atomically(path, text())


def write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
