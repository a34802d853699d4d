"""Isolation for ``gradcli check``: a forked worker per file, a forked checker per Function.

Process layout (POSIX): the parent never imports user code. Before forking the first worker for a
kind of file, the parent loads what checks need (warm_parent.py: gradcli's checking modules, SymPy,
torch when a file imports it) so that every fork inherits it. Each file then gets a *worker* of its
own, forked from that warmed parent in its own process group: no other user file has touched the
process it is imported in (one file's monkeypatching of torch cannot reach another's verdict). The
worker imports the file, collects and selects its Functions, then forks one *checker* per Function
and kills it after ``timeout`` seconds. Results travel back as pickled frames over pipes, on a
descriptor user code does not know (moved high, close-on-exec); captured output is read from the
capture file itself, whatever user code did to ``sys.stdout``. An exception, ``sys.exit``,
``os._exit``, a crash or a hang in user code becomes an error result for that Function (or file)
and the run goes on; Ctrl-C in the parent kills the workers' process groups and returns what
finished; with -x the first fail or error stops the run (queued files are dropped, running workers
killed).

``session.run`` calls ``scheduler.run_workers`` (the parent's loop) when ``os.fork`` exists; the
pipes, frames, forks and captured output are in ``channels.py``; what a result is and how one
Function is checked live in ``runner.py``.
"""
from __future__ import annotations

import os
import select
import sys
import tempfile
import time
from typing import Optional

from gradcli.check import warm_parent
from gradcli.check.check_clock import CheckClock
from gradcli.check.channels import _capture, _died, _fork, _Frames, _read_output, _send
from gradcli.check.discovery import imports_torch
from gradcli.check.reaper import become_subreaper, kill_group, reap_orphans
from gradcli.check.collector import Collector, file_messages
from gradcli.check.runner import CaseResult, FunctionResult, RunOptions, check_target

KILL_GRACE = 10.0  # the parent's backstop beyond the worker's own per-Function timeout
START_ATTEMPTS = 2  # a worker that dies before it imports its file is started once more, then an error

def _check_inline(w: int):
    """The check of a file's only Function, in the worker itself: nothing runs in that process
    after it, so a checker forked for it would isolate it from nothing, and the fork of a process
    holding torch costs ~15 ms CPU. The parent times it (``--timeout``, as a checker is timed) and
    words a death or a timeout as it would a checker's (``_inline_failure``)."""
    out_fd = _capture()

    def check(target, options: RunOptions) -> FunctionResult:
        os.ftruncate(out_fd, 0)
        os.lseek(out_fd, 0, os.SEEK_SET)
        result = check_target(target, options, announce=lambda records: _send(w, ("cases", records)),
                              extend=lambda seconds: _send(w, ("extend", seconds)))
        result.output = _read_output(out_fd)
        return result

    return check


def _check_in_child(target, options: RunOptions) -> FunctionResult:
    """Run check_target in a forked checker; time it out; turn a dead child into an error result."""
    out_fd = _capture()

    def body(w):
        result = check_target(target, options, announce=lambda records: _send(w, ("cases", records)),
                              extend=lambda seconds: _send(w, ("extend", seconds)))
        result.output = _read_output(out_fd)
        try:
            _send(w, ("result", result))
        except Exception as e:  # noqa: BLE001 -- e.g. an unpicklable object in a report
            _send(w, ("result", FunctionResult(result.file, result.function, result.backend, "error",
                                               f"could not transfer the result: {type(e).__name__}: {e}")))

    os.ftruncate(out_fd, 0)
    os.lseek(out_fd, 0, os.SEEK_SET)
    start = time.perf_counter()
    pid, fd = _fork(body, new_group=True)  # its own group: what user code forks goes with it
    frames, cases, result, stopped, extended = _Frames(), [], None, None, 0.0
    clock = CheckClock(pid, options.timeout)  # the checker's CPU time, a wall cap for a check that waits
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while result is None:  # not until EOF: a process user code forked may hold the pipe open
            stopped = clock.expired()
            if stopped:
                kill_group(pid)
                break
            if not select.select([pipe], [], [], clock.wait())[0]:
                continue
            chunk = pipe.read(1 << 20)
            if not chunk:
                break
            for kind, payload in frames.feed(chunk):
                if kind == "cases":
                    cases = payload
                elif kind == "extend":  # --prove's own budget, beyond --timeout
                    clock.extend(payload)
                    extended += payload
                else:
                    result = payload
    kill_group(pid)  # processes user code forked (its group), then those that left it (this worker's orphans)
    _, status = os.waitpid(pid, 0)
    reap_orphans()
    if result is not None:
        return result
    why = clock.why(stopped, _limit_name(extended)) if stopped else \
        f"the checking process {_died(status)} without a result (os._exit or a crash in user code?)"
    return FunctionResult(target.file, target.name, target.backend, "error", why, line=target.line,
                          backward_line=target.backward_line, style=target.style,
                          cases=[CaseResult(records, "error", why) for records in cases],
                          output=_read_output(out_fd), duration=time.perf_counter() - start)


def _limit_name(extended: float) -> str:
    return "--timeout + --prove-timeout" if extended else "--timeout"


def _worker_start(capture=None):
    """What every worker does first: capture fds 1 and 2, become a subreaper, fix torch's threads."""
    _capture(capture)  # user code's prints never reach the terminal
    become_subreaper()  # orphans of what user code forks come back here, to be killed (reaper.py)
    inherited = sys.modules.get("torch")  # None too where a caller blocked the import (sys.modules["torch"] = None)
    if hasattr(inherited, "set_num_threads") and not warm_parent.TORCH_HERE:
        # imported and used before the fork by someone else (a test session, an API caller): its OpenMP
        # pool did not survive the fork, and the first parallel op would wait for it forever; one thread
        # runs inline (gradcli's own warm-up runs only ops too small to start the pool)
        inherited.set_num_threads(1)


def _send_file(item, options: RunOptions, w: int, check, seen=lambda message: None, retire=lambda: False):
    """Check one file, sending its messages from ``file`` to ``file_done`` (``seen`` sees each first;
    ``retire()``, asked at the end, goes with ``file_done``: whether this worker takes no further file)."""
    _send(w, ("file", 0))
    for message in file_messages(item, options, check):
        seen(message)
        try:
            _send(w, message)
        except Exception as e:  # noqa: BLE001 -- e.g. an unpicklable object in a report
            if message[0] != "result":
                raise
            result = message[1]
            _send(w, ("result", FunctionResult(result.file, result.function, result.backend, "error",
                                               f"could not transfer the result: {type(e).__name__}: {e}")))
    reap_orphans()  # what the file's import forked, before the parent hears that the file is done
    _send(w, ("file_done", retire()))


def _worker_body(item, options: RunOptions, w: int, capture=None):
    _worker_start(capture)
    inline = _check_inline(w)
    chosen: list = []

    def seen(message):
        if message[0] == "collected":
            chosen[:] = message[1]
            if len(chosen) > 1:  # checkers will fork from here: what the parent left out is loaded once
                warm_parent.prepare(imports_torch(item.abspath), options)

    _send_file(item, options, w, lambda t, o: (inline if len(chosen) == 1 else _check_in_child)(t, o), seen)


class _Worker:
    """A forked process checking one file (``shared``: plain files one after another, shared_worker.py)."""

    shared = False

    def __init__(self, item, options: RunOptions, attempt: int = 1):
        self.timeout = options.timeout
        self.capture = tempfile.TemporaryFile()  # its fds 1 and 2: read here if it dies checking inline
        self._reset(item, attempt, options)
        self.pid, self.fd = _fork(self._body(options), new_group=True)
        try:
            os.setpgid(self.pid, self.pid)
        except OSError:
            pass
        self.clock = CheckClock(self.pid, options.timeout)  # until it begins its file
        self.frames = _Frames()

    def timed_out(self) -> bool:
        """Whether its clock ran out (kept in ``stopped_by``): the check, import or start-up it is in."""
        self.stopped_by = self.clock.expired()
        return self.stopped_by is not None

    def why(self) -> str:
        return self.clock.why(self.stopped_by or "time", _limit_name(self.extended))

    def _reset(self, item, attempt: int, options: RunOptions):
        self.item, self.attempt = item, attempt
        self.started = False  # it sent "file": it is importing or checking
        self.done = False  # it sent "file_done"
        self.retired = False  # a shared worker that will take no further file (the file changed the process)
        self.current = None  # Function being checked
        self.inline = self.shared  # the file has one Function (or a shared worker): checked in the worker
        self.chosen: list = []  # the names of the file's selected Functions, once collected
        self.reported: list = []  # the names of those whose result came
        self.cases: list = []  # the inline check's input sets, once built
        self.extended = 0.0  # the inline check's --prove budget
        self.check_start = 0.0
        self.clock = CheckClock(None, options.timeout)  # until it begins the file (a shared worker: wall time)
        self.stopped_by = None  # how its clock ran out (CheckClock.expired), when it did

    def _body(self, options: RunOptions):
        item = self.item
        return lambda w: _worker_body(item, options, w, self.capture)

    def kill(self):
        kill_group(self.pid)


def _inline_failure(worker: _Worker, collector: Collector, status: int, timed_out: bool, finish: bool = True):
    """The error result of a Function checked inline whose worker died or was killed: worded as
    ``_check_in_child`` words a checker's (``finish``: the file is done with it)."""
    item = worker.item
    info = next((i for i in collector.collected.get(item.path, ()) if i.name == worker.current), None)
    why = worker.why() if timed_out else \
        f"the checking process {_died(status)} without a result (os._exit or a crash in user code?)"
    collector.handle(item, ("result", FunctionResult(
        item.path, worker.current, info.backend if info else "gradcli", "error", why,
        line=info.line if info else None, backward_line=info.backward_line if info else None,
        style=info.style if info else "", cases=[CaseResult(records, "error", why) for records in worker.cases],
        output=_read_output(worker.capture.fileno()), duration=time.monotonic() - worker.check_start)))
    if finish:
        collector.file_finished(item)


def _finish(worker: _Worker, collector: Collector, timeout: Optional[float] = None, keep=(),
            stopped: bool = False) -> list:
    """Reap a worker (killed after ``timeout`` if given, or by -x if ``stopped``) and what user
    code forked in it; returns [(file, attempt)] to start again (a worker that died before it
    began its file gets one more try), else []."""
    worker.kill()  # a finished worker is exiting anyway; this takes the processes of its group along
    _, status = os.waitpid(worker.pid, 0)
    os.close(worker.fd)
    try:
        if worker.inline and worker.current is not None and not worker.done and not stopped:
            _inline_failure(worker, collector, status, timed_out=timeout is not None)
            return []
    finally:
        worker.capture.close()
    reap_orphans(keep=keep)  # descendants that left the group were handed to this process (a subreaper)
    item = worker.item
    if worker.done or stopped:
        if not worker.done:
            collector.file_finished(item)
        return []
    what = worker.why() if timeout is not None else _died(status)
    if not worker.started:  # it died in gradcli's own start-up code, before the file was touched
        if worker.attempt < START_ATTEMPTS and timeout is None and not collector.stop:
            return [(item, worker.attempt + 1)]
        message = f"the worker process {what} before importing the file (started {worker.attempt} times)"
    else:
        name = worker.current
        message = (f"checking stopped: the worker process {what}" if name else
                   f"importing the file {what}" if timeout is not None else
                   f"the worker process {what} while importing")
    backend = "torch" if imports_torch(item.abspath) else "gradcli"
    collector.handle(item, ("result", FunctionResult(item.path, worker.current, backend, "error", message)))
    collector.file_finished(item)
    return []
