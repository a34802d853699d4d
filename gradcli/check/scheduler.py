"""The parent's side of ``gradcli check``'s isolation: starting workers, reading them, timing them out.

Up to ``jobs`` workers run at once, started in file order (results are handed to the collector,
which keeps file order). A file that is not plain (plain_files.py) gets a worker of its own, forked
from the warmed parent (warm_parent.py), and a worker that dies before it begins its file is started
once more; plain files of one kind (importing torch or not) are handed, one at a time, to a shared
worker that checks them one after another (shared_worker.py), so that a folder of small Functions
does not pay a fork of a torch process, its copy-on-write faults and its exit per file (measured on
the 87-file torch folder: 6.5-7.8 s CPU with a worker per file, 3.9-4.7 s shared, specs/check.md §5).
A shared worker that dies or hangs costs only what it was doing: the rest of its file goes to a
worker of its own.
"""
from __future__ import annotations

import os
import select
import signal
import time
from contextlib import contextmanager

from gradcli.check import warm_parent
from gradcli.check.check_clock import WALL_FACTOR, CheckClock
from gradcli.check.collector import Collector
from gradcli.check.discovery import imports_torch
from gradcli.check.plain_files import is_plain
from gradcli.check.processes import KILL_GRACE, _finish, _Worker
from gradcli.check.reaper import children, reap_orphans
from gradcli.check.results import RunOptions
from gradcli.check.shared_worker import SharedWorker, shared_finish


def run_workers(items, options: RunOptions, collector: Collector, warm_symbolic: bool = True):
    """Check ``items`` in forked workers, feeding ``collector``; Ctrl-C propagates (workers killed).
    ``warm_symbolic=False``: SymPy is left to the workers (warm_parent.prepare)."""
    jobs = 1 if options.exitfirst else max(1, options.jobs)
    queue = [(item, 1, "") for item in items]  # (file, attempt, how: "" | "isolated" | "resumed"), in file order
    active: dict = {}
    idle: dict = {False: [], True: []}  # shared workers waiting for their next plain file, by kind
    resumed: set = set()  # paths whose collection was told before their shared worker died
    before = children(os.getpid())  # a test runner's own children are not ours to kill

    def end(worker, **how) -> list:
        keep = before | _pids(active) | {w.pid for ws in idle.values() for w in ws}
        if worker.shared:
            return shared_finish(worker, collector, keep=keep, **how)
        return [(item, attempt, "isolated") for item, attempt in _finish(worker, collector, keep=keep, **how)]

    try:
        while queue or active:
            while queue and len(active) < jobs and not collector.stop:
                item, attempt, how = queue.pop(0)
                torch_file = imports_torch(item.abspath)
                # before the fork: inherited; a run of one file leaves SymPy to its worker
                warm_parent.prepare(torch_file, options, symbolic=warm_symbolic)
                with _interrupt_deferred():  # Ctrl-C between the fork and here would leave a worker unkilled
                    if not how and len(items) > 1 and is_plain(item.abspath):
                        worker = None
                        while idle[torch_file] and worker is None:
                            worker = idle[torch_file].pop()
                            if not worker.assign(item, options):
                                worker.discard()  # it died while idle: a fresh one takes the file
                                worker = None
                        if worker is None:
                            worker = SharedWorker(item, options, torch_file)
                    else:
                        worker = _Worker(item, options, attempt)
                        if how == "resumed":
                            resumed.add(item.path)
                    active[worker.fd] = worker
            if not active:
                break
            timeout = min(w.clock.wait() for w in active.values())
            for fd in select.select(list(active), [], [], timeout)[0]:
                worker = active[fd]
                chunk = os.read(fd, 1 << 20)
                for message in worker.frames.feed(chunk):
                    _relay(worker, message, collector, options, resumed)
                if worker.shared and worker.done and chunk and not worker.retired:
                    idle[worker.torch_file].append(active.pop(fd))  # ready for the next plain file of its kind
                elif worker.done or not chunk:  # done: a process user code forked may still hold the pipe
                    queue[:0] = end(active.pop(fd))
            for fd, worker in list(active.items()):
                if worker.timed_out():
                    worker.kill()
                    queue[:0] = end(active.pop(fd), timeout=options.timeout)
            if collector.stop:  # -x: the first fail or error ends the run
                queue.clear()
                for fd, worker in list(active.items()):
                    worker.kill()
                    end(active.pop(fd), stopped=True)
    finally:
        for worker in list(active.values()) + [w for ws in idle.values() for w in ws]:
            if worker.shared:  # interrupted (or idle at the end): kill what still runs
                worker.discard()
                continue
            worker.kill()
            os.waitpid(worker.pid, 0)
            os.close(worker.fd)
            worker.capture.close()
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


def _relay(worker, message, collector: Collector, options: RunOptions, resumed: set = frozenset()):
    kind = message[0]
    if kind in ("cases", "extend"):  # from an inline check: the parent times it as a checker
        if kind == "cases":
            worker.cases = message[1]
        else:
            worker.extended += message[1]
            worker.clock.extend(message[1])
        return
    # the worker times its checkers itself (CPU time, capped at WALL_FACTOR x in wall time): a backstop
    worker.clock = CheckClock(None, WALL_FACTOR * (options.timeout + options.symbolic_seconds()) + KILL_GRACE)
    if kind == "file":
        worker.started = True
        worker.clock = CheckClock(worker.pid, options.timeout)  # importing it
    elif kind == "file_done":
        worker.done, worker.retired = True, bool(message[1])
        worker.current = None
        collector.file_finished(worker.item)
    else:
        if kind == "collected":
            worker.inline = worker.shared or len(message[1]) == 1
            worker.chosen = [info.name for info in message[1]]
        worker.current = message[1] if kind == "start" else None
        if kind == "start" and worker.inline:
            worker.check_start = time.monotonic()
            worker.clock = CheckClock(worker.pid, options.timeout)
        if kind == "result":
            worker.reported.append(message[1].function)
        if kind == "collected" and worker.item.path in resumed:
            return  # the rest of a file whose shared worker died: its collection was told already
        collector.handle(worker.item, message)
