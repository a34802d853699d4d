"""Where ``gradcli check`` output goes: the chosen renderer (streamed per file, or after the
progress bar), the progress bar on stderr, and the --json / --junit files."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile

from gradcli.check.runner import RunEvents

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
    """RunEvents that render as files finish, with a progress bar on a terminal's stderr."""

    def __init__(self, fmt: str, seed: int, verbose: bool, collect_only: bool = False):
        self.fmt = fmt
        self.renderer = make_renderer(fmt, seed, verbose)
        self.collect_only = collect_only
        self.show_progress = sys.stderr.isatty() and not collect_only
        self.deferred = []  # (path, results) rendered after the progress bar when it may be shown
        self.seen = set()  # files already rendered or deferred
        self.progress = None
        self.task = None
        self.total = 0  # Functions collected so far
        self.done = 0  # Functions with a result

    # RunEvents
    def collected(self, count: int):
        self.total += count
        if self.show_progress and self.progress is None and self.total >= PROGRESS_MIN_FUNCTIONS:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
            self.progress.start()
            self.task = self.progress.add_task("", total=self.total, completed=self.done)
        elif self.progress is not None:
            self.progress.update(self.task, total=self.total)

    def started(self, file: str, name: str):
        if self.progress is not None:
            self.progress.update(self.task, description=f"{file}::{name}")

    def result(self, result):
        self.done += 1
        if self.progress is not None:
            self.progress.update(self.task, completed=self.done)

    def file_done(self, path: str, results: list):
        self.seen.add(path)
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
