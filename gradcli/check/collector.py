"""One file's check as messages, and their collection into a RunResult in file order.

``file_messages`` imports, collects, selects and checks one file, yielding ("kind", ...) messages; it
runs in a worker process (processes.py) or in-process (session.py). ``Collector`` turns the messages
of every file into the run's RunResult and tells the ``RunEvents`` (progress, streamed output).
"""
from __future__ import annotations

import time
from typing import Callable

from gradcli.check.discovery import LoadError, collect, imports_torch, load_module, select as select_targets
from gradcli.check.results import BAD, FunctionResult, RunOptions, RunResult


class RunEvents:
    """Hooks for progress and streaming output; every method is optional."""

    def collected(self, count: int):
        pass

    def started(self, file: str, name: str):
        pass

    def result(self, result: FunctionResult):
        pass

    def file_done(self, file: str, results: list):
        pass


def file_messages(item, options: RunOptions, check: Callable):
    """Import, collect, select and check one file, yielding ("kind", ...) messages in order."""
    module = load_module(item)
    if isinstance(module, LoadError):
        yield ("load_error", module)
        return
    targets = collect(module, item)
    chosen, deselected, missing = select_targets(targets, item, options.keyword)
    if options.given_inputs and not options.collect_only:
        from gradcli.check.inputs_from import attach

        attach(chosen, options.given_inputs)
    yield ("collected", [t.info() for t in chosen], deselected, missing, [t.name for t in targets])
    if options.collect_only:
        return
    for target in chosen:
        yield ("start", target.name)
        result = check(target, options) if not target.abstract else FunctionResult(
            target.file, target.name, target.backend, "skip", target.abstract, line=target.line, style=target.style)
        if target.given_from:  # example inputs from an inputs file: the reproduce line names it
            from gradcli.check.inputs_from import mark

            mark(result, target.given_from)
        yield ("result", result)
        if options.exitfirst and result.status in BAD:
            return


class Collector:
    """Turns messages into a RunResult, in file order, and tells the events."""

    def __init__(self, items, options: RunOptions, events: RunEvents):
        self.run = RunResult(seed=options.seed, strict=options.strict)
        self.items = items
        self.events = events
        self.per_file = {item.path: [] for item in items}
        self.collected = {}  # file -> TargetInfo of its selected Functions
        self.finished = set()
        self.emitted = 0
        self.stop = False
        self.exitfirst = options.exitfirst

    def handle(self, item, message):
        kind = message[0]
        if kind == "load_error":
            err = message[1]
            self._add(item, FunctionResult(item.path, None, "torch" if imports_torch(item.abspath) else "gradcli",
                                           "skip" if err.skip else "error", err.message, line=err.line,
                                           traceback=err.traceback))
        elif kind == "collected":
            chosen, deselected, missing, known = message[1:]
            self.run.deselected += deselected
            defines = f"{item.path} defines: {', '.join(known)}" if known else f"no Functions in {item.path}"
            self.run.not_found += [f"{item.path}::{n} ({defines})" for n in missing]
            self.collected[item.path] = chosen
            self.events.collected(len(chosen))
        elif kind == "start":
            self.events.started(item.path, message[1])
        elif kind == "result":
            self._add(item, message[1])

    def _add(self, item, result: FunctionResult):
        self.per_file[item.path].append(result)
        self.events.result(result)
        if self.exitfirst and result.status in BAD:
            self.stop = True

    def file_finished(self, item):
        self.finished.add(item.path)
        while self.emitted < len(self.items) and self.items[self.emitted].path in self.finished:
            path = self.items[self.emitted].path
            self.run.results += self.per_file[path]
            self.events.file_done(path, self.per_file[path])
            self.emitted += 1

    def result(self, start: float) -> RunResult:
        for item in self.items[self.emitted:]:  # interrupted: keep what finished
            self.run.results += self.per_file[item.path]
        self.run.collected = [info for item in self.items for info in self.collected.get(item.path, ())]
        self.run.files = [item.path for item in self.items]
        self.run.duration = time.perf_counter() - start
        return self.run
