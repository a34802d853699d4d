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

``runner.run`` calls ``run_workers`` when ``os.fork`` exists; what a result is and how one
Function is checked live in ``runner.py``.
"""
from __future__ import annotations

import fcntl
import gc
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import time
from typing import Callable, Optional

from gradcli.check import warm_parent
from gradcli.check.discovery import imports_torch
from gradcli.check.reaper import become_subreaper, children, die_with_parent, kill_group, reap_orphans
from gradcli.check.runner import CaseResult, FunctionResult, RunOptions, _Collector, check_target, file_messages

KILL_GRACE = 10.0  # the parent's backstop beyond the worker's own per-Function timeout
MAX_OUTPUT = 4000  # characters of captured user output kept with a result
CHANNEL_FD = 512  # result pipes are moved to the first free descriptor from here (out of user code's way)
START_ATTEMPTS = 2  # a worker that dies before it imports its file is started once more, then an error

_HEADER = struct.Struct("!Q")


def _send(fd: int, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class _Frames:
    """Reassembles pickled frames from a pipe read in arbitrary chunks."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> list:
        self.buffer += chunk
        out = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                break
            out.append(pickle.loads(bytes(self.buffer[_HEADER.size:_HEADER.size + size])))
            del self.buffer[:_HEADER.size + size]
        return out


def _channel(w: int) -> int:
    """The write end of a result pipe moved to a high, close-on-exec descriptor: user code that
    closes or reuses low descriptors (``os.closerange(3, 256)``, ``dup2`` onto 3) misses it, and a
    program it ``exec``s does not inherit it."""
    try:
        high = fcntl.fcntl(w, fcntl.F_DUPFD_CLOEXEC, CHANNEL_FD)
    except OSError:  # a low descriptor limit: keep the pipe where it is
        return w
    os.close(w)
    return high


def _fork(body: Callable[[int], None], new_group: bool = False) -> tuple:
    """Fork a child running ``body(write_fd)`` (in its own process group if ``new_group``);
    returns (pid, read_fd)."""
    _flush()
    gc.freeze()  # the child's garbage collector leaves inherited objects alone: no copy-on-write storm
    r, w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            die_with_parent(parent)
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if new_group:
                os.setpgid(0, 0)  # Ctrl-C at the terminal reaches the parent only; it kills the group
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            body(_channel(w))
        except BaseException:  # noqa: BLE001 -- a child must never fall back into the parent's code
            import traceback

            traceback.print_exc(file=_STREAMS[1] if _STREAMS else None)  # into the captured output
            code = 70
        finally:
            os._exit(code)
    gc.unfreeze()  # this process goes on as before (frozen objects would never be collected)
    os.close(w)
    return pid, r


_CAPTURE: list = []  # the temporary file a worker's (and its checkers') fds 1 and 2 point to
_STREAMS: list = []  # gradcli's own text streams on fds 1 and 2 (user code may close or replace sys.stdout)


def _flush():
    """Flush buffered output before a fork or a read: gradcli's own streams when capturing (what
    user code did to ``sys.stdout``/``sys.stderr`` must not break the result channel), else the
    process's."""
    for stream in _STREAMS or (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 -- closed, replaced by None, a stream that raises
            pass


def _capture(capture=None) -> int:
    """Send this process's fds 1 and 2 to a temporary file (once; ``capture`` if given); returns its
    fd, to read back."""
    if not _CAPTURE:
        _CAPTURE.append(capture if capture is not None else tempfile.TemporaryFile())
        os.dup2(_CAPTURE[0].fileno(), 1)
        os.dup2(_CAPTURE[0].fileno(), 2)
        # the parent's sys.stdout may not be fd 1 (a test runner's buffer): write to the fds themselves
        _STREAMS[:] = [open(1, "w", closefd=False, errors="replace"), open(2, "w", closefd=False, errors="replace")]
        sys.stdout, sys.stderr = _STREAMS
    return _CAPTURE[0].fileno()


def _read_output(fd: int) -> str:
    _flush()
    try:
        text = os.pread(fd, MAX_OUTPUT + 1, 0).decode("utf-8", "replace")  # the file, not fd 1 (user code's)
    except OSError:
        return ""
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output truncated]"


def _died(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by signal {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else \
            f"killed by signal {sig}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


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
    frames, cases, result, timed_out, extended = _Frames(), [], None, False, 0.0
    deadline = time.monotonic() + options.timeout
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while result is None:  # not until EOF: a process user code forked may hold the pipe open
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
                timed_out = True
                kill_group(pid)
                break
            chunk = pipe.read(1 << 20)
            if not chunk:
                break
            for kind, payload in frames.feed(chunk):
                if kind == "cases":
                    cases = payload
                elif kind == "extend":  # --prove's own budget, beyond --timeout
                    deadline += payload
                    extended += payload
                else:
                    result = payload
    kill_group(pid)  # processes user code forked (its group), then those that left it (this worker's orphans)
    _, status = os.waitpid(pid, 0)
    reap_orphans()
    if result is not None:
        return result
    limit = f"{options.timeout + extended:g} s (--timeout + --prove-timeout)" if extended else \
        f"{options.timeout:g} s (--timeout)"
    why = f"timed out after {limit}" if timed_out else \
        f"the checking process {_died(status)} without a result (os._exit or a crash in user code?)"
    return FunctionResult(target.file, target.name, target.backend, "error", why, line=target.line,
                          backward_line=target.backward_line, style=target.style,
                          cases=[CaseResult(records, "error", why) for records in cases],
                          output=_read_output(out_fd), duration=time.perf_counter() - start)


def _worker_body(item, options: RunOptions, w: int, capture=None):
    _capture(capture)  # user code's prints never reach the terminal
    become_subreaper()  # orphans of what user code forks come back here, to be killed (reaper.py)
    inherited = sys.modules.get("torch")  # None too where a caller blocked the import (sys.modules["torch"] = None)
    if hasattr(inherited, "set_num_threads") and not warm_parent.TORCH_HERE:
        # imported and used before the fork by someone else (a test session, an API caller): its OpenMP
        # pool did not survive the fork, and the first parallel op would wait for it forever; one thread
        # runs inline (gradcli's own warm-up runs only ops too small to start the pool)
        inherited.set_num_threads(1)
    _send(w, ("file", 0))
    inline = _check_inline(w)
    chosen: list = []
    for message in file_messages(item, options, lambda t, o: (inline if len(chosen) == 1 else _check_in_child)(t, o)):
        if message[0] == "collected":
            chosen[:] = message[1]
        try:
            _send(w, message)
        except Exception as e:  # noqa: BLE001 -- e.g. an unpicklable object in a report
            if message[0] != "result":
                raise
            result = message[1]
            _send(w, ("result", FunctionResult(result.file, result.function, result.backend, "error",
                                               f"could not transfer the result: {type(e).__name__}: {e}")))
    reap_orphans()  # what the file's import forked, before the parent hears that the file is done
    _send(w, ("file_done", 0))


class _Worker:
    """A forked process checking one file."""

    def __init__(self, item, options: RunOptions, attempt: int = 1):
        self.item = item
        self.attempt = attempt
        self.started = False  # it sent "file": it is importing or checking
        self.done = False  # it sent "file_done"
        self.current = None  # Function being checked
        self.inline = False  # the file has one Function: the worker checks it itself (_check_inline)
        self.cases: list = []  # the inline check's input sets, once built
        self.extended = 0.0  # the inline check's --prove budget
        self.check_start = 0.0
        self.timeout = options.timeout
        self.capture = tempfile.TemporaryFile()  # its fds 1 and 2: read here if it dies checking inline
        self.pid, self.fd = _fork(lambda w: _worker_body(item, options, w, self.capture), new_group=True)
        try:
            os.setpgid(self.pid, self.pid)
        except OSError:
            pass
        self.frames = _Frames()
        self.deadline = time.monotonic() + options.timeout

    def kill(self):
        kill_group(self.pid)


def run_workers(items, options: RunOptions, collector: _Collector):
    """Check ``items`` in forked workers, feeding ``collector``; Ctrl-C propagates (workers killed)."""
    jobs = 1 if options.exitfirst else max(1, options.jobs)
    queue = [(item, 1) for item in items]  # (file, attempt), in file order
    active: dict = {}
    before = children(os.getpid())  # a test runner's own children are not ours to kill
    try:
        while queue or active:
            while queue and len(active) < jobs and not collector.stop:
                item, attempt = queue.pop(0)
                warm_parent.prepare(imports_torch(item.abspath), options)  # before the fork: inherited
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


def _inline_failure(worker: _Worker, collector: _Collector, status: int, timed_out: bool):
    """The error result of a Function checked inline whose worker died or was killed: worded as
    ``_check_in_child`` words a checker's."""
    item = worker.item
    info = next((i for i in collector.collected.get(item.path, ()) if i.name == worker.current), None)
    limit = f"{worker.timeout + worker.extended:g} s (--timeout + --prove-timeout)" if worker.extended else \
        f"{worker.timeout:g} s (--timeout)"
    why = f"timed out after {limit}" if timed_out else \
        f"the checking process {_died(status)} without a result (os._exit or a crash in user code?)"
    collector.handle(item, ("result", FunctionResult(
        item.path, worker.current, info.backend if info else "gradcli", "error", why,
        line=info.line if info else None, backward_line=info.backward_line if info else None,
        style=info.style if info else "", cases=[CaseResult(records, "error", why) for records in worker.cases],
        output=_read_output(worker.capture.fileno()), duration=time.monotonic() - worker.check_start)))
    collector.file_finished(item)


def _pids(active: dict) -> set:
    return {worker.pid for worker in active.values()}


def _relay(worker: _Worker, message, collector: _Collector, options: RunOptions):
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


def _finish(worker: _Worker, collector: _Collector, timeout: Optional[float] = None, keep=(),
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
    what = f"timed out after {timeout:g} s" if timeout is not None else _died(status)
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
