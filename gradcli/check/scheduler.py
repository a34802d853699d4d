"""The parent's side of ``gradcli check``'s isolation: starting workers, reading them, timing them out.

Up to ``jobs`` workers run at once, started in file order (results are handed to the collector,
which keeps file order); each file gets a worker of its own, forked from the warmed parent
(warm_parent.py), and a worker that dies before it begins its file is started once more.

A worker reused for several files (statically "plain" ones, that neither patch a module nor set
global state) was tried and measured (specs/check.md §5): on the 87-file torch folder it saved no
CPU time that could be told from noise (the fork of the warmed parent and its exit cost ~5 ms of
system time per file once bytecode is cached), so every file keeps a process of its own.
"""
from __future__ import annotations

import os
import select
import signal
import time
from contextlib import contextmanager

from gradcli.check import warm_parent
from gradcli.check.discovery import imports_torch
from gradcli.check.processes import KILL_GRACE, _finish, _Worker
from gradcli.check.reaper import children, reap_orphans
from gradcli.check.collector import Collector
from gradcli.check.results import RunOptions


def run_workers(items, options: RunOptions, collector: Collector, warm_symbolic: bool = True):
    """Check ``items`` in forked workers, feeding ``collector``; Ctrl-C propagates (workers killed).
    ``warm_symbolic=False``: SymPy is left to the workers (warm_parent.prepare)."""
    jobs = 1 if options.exitfirst else max(1, options.jobs)
    queue = [(item, 1) for item in items]  # (file, attempt), in file order
    active: dict = {}
    before = children(os.getpid())  # a test runner's own children are not ours to kill
    try:
        while queue or active:
            while queue and len(active) < jobs and not collector.stop:
                item, attempt = queue.pop(0)
                # before the fork: inherited; a run of one file leaves SymPy to its worker
                warm_parent.prepare(imports_torch(item.abspath), options, symbolic=warm_symbolic)
                with _interrupt_deferred():  # Ctrl-C between the fork and here would leave a worker unkilled
                    worker = _Worker(item, options, attempt)
                    active[worker.fd] = worker
            if not active:
                break
            timeout = max(0.0, min(w.deadline for w in active.values()) - time.monotonic())
            for fd in select.select(list(active), [], [], timeout)[0]:
                worker = active[fd]
                chunk = os.read(fd, 1 << 20)
                for message in worker.frames.feed(chunk):
                    _relay(worker, message, collector, options)
                if worker.done or not chunk:  # done: a process user code forked may still hold the pipe
                    queue[:0] = _finish(active.pop(fd), collector, keep=before | _pids(active))
            for fd, worker in list(active.items()):
                if time.monotonic() > worker.deadline:
                    worker.kill()
                    queue[:0] = _finish(active.pop(fd), collector, timeout=options.timeout,
                                        keep=before | _pids(active))
            if collector.stop:  # -x: the first fail or error ends the run
                queue.clear()
                for fd, worker in list(active.items()):
                    worker.kill()
                    _finish(active.pop(fd), collector, keep=before | _pids(active), stopped=True)
    finally:
        for worker in active.values():  # interrupted: kill what still runs
            worker.kill()
            os.waitpid(worker.pid, 0)
            os.close(worker.fd)
        reap_orphans(keep=before)  # what a killed worker's checkers left (gradcli is their subreaper)


@contextmanager
def _interrupt_deferred():
    """SIGINT held back (delivered on leaving) where it exists, so that a KeyboardInterrupt cannot
    strike between forking a worker and recording it in ``active``, where the ``finally`` kills it."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:
        yield
        return
    mask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        mask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _pids(active: dict) -> set:
    return {worker.pid for worker in active.values()}


def _relay(worker, message, collector: Collector, options: RunOptions):
    kind = message[0]
    # the worker times checks itself (--timeout, plus --prove's budget when a checker asks for it)
    worker.deadline = time.monotonic() + options.timeout + options.symbolic_seconds() + KILL_GRACE
    if kind == "file":
        worker.started = True
        worker.deadline = time.monotonic() + options.timeout  # importing it
    elif kind == "file_done":
        worker.done = True
        worker.current = None
        collector.file_finished(worker.item)
    elif kind in ("cases", "extend"):  # from an inline check: the parent times it as a checker
        if kind == "cases":
            worker.cases = message[1]
        else:
            worker.extended += message[1]
        worker.deadline = worker.check_start + options.timeout + worker.extended
    else:
        if kind == "collected":
            worker.inline = len(message[1]) == 1
        worker.current = message[1] if kind == "start" else None
        if kind == "start" and worker.inline:
            worker.check_start = time.monotonic()
            worker.deadline = worker.check_start + options.timeout
        collector.handle(worker.item, message)
