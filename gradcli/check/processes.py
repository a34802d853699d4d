"""Isolation for ``gradcli check``: a forked worker per file, a forked checker per Function.

Process layout (POSIX): the parent never imports user code. A forked *worker*, in its own process
group, imports a file, collects and selects its Functions, then forks one *checker* per Function
and kills it after ``timeout`` seconds; each file has its own worker, except that files importing
torch share one (torch's import costs seconds). Results travel back as pickled frames over pipes.
An exception, ``sys.exit``, ``os._exit``, a crash or a hang in user code becomes an error result
for that Function (or file) and the run goes on (a worker that dies hands its remaining files to
a new one); Ctrl-C in the parent kills the workers' process groups and returns what finished.

``runner.run`` calls ``run_workers`` when ``os.fork`` exists; what a result is and how one
Function is checked live in ``runner.py``.
"""
from __future__ import annotations

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

from gradcli.check.discovery import imports_torch
from gradcli.check.reaper import become_subreaper, children, die_with_parent, kill_group, reap_orphans
from gradcli.check.runner import CaseResult, FunctionResult, RunOptions, _Collector, check_target, file_messages
from gradcli.heavy_import import import_paused

KILL_GRACE = 10.0  # the parent's backstop beyond the worker's own per-Function timeout
MAX_OUTPUT = 4000  # characters of captured user output kept with a result

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


def _fork(body: Callable[[int], None], new_group: bool = False) -> tuple:
    """Fork a child running ``body(write_fd)`` (in its own process group if ``new_group``);
    returns (pid, read_fd)."""
    sys.stdout.flush()
    sys.stderr.flush()
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
            body(w)
        except BaseException:  # noqa: BLE001 -- a child must never fall back into the parent's code
            import traceback

            traceback.print_exc()  # into the captured output, shown with the error result
            code = 70
        finally:
            os._exit(code)
    gc.unfreeze()  # this process goes on as before (frozen objects would never be collected)
    os.close(w)
    return pid, r


_CAPTURE: list = []  # the temporary file a worker's (and its checkers') fds 1 and 2 point to


def _capture() -> int:
    """Send this process's fds 1 and 2 to a temporary file (once); returns its fd, to read back."""
    if not _CAPTURE:
        _CAPTURE.append(tempfile.TemporaryFile())
        os.dup2(_CAPTURE[0].fileno(), 1)
        os.dup2(_CAPTURE[0].fileno(), 2)
        # the parent's sys.stdout may not be fd 1 (a test runner's buffer): write to the fds themselves
        sys.stdout = open(1, "w", closefd=False, errors="replace")
        sys.stderr = open(2, "w", closefd=False, errors="replace")
    return _CAPTURE[0].fileno()


def _read_output(fd: int) -> str:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, MAX_OUTPUT + 1).decode("utf-8", "replace")
    except OSError:
        return ""
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output truncated]"


def _died(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by signal {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else \
            f"killed by signal {sig}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


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

    os.lseek(out_fd, 0, os.SEEK_SET)
    os.ftruncate(out_fd, 0)
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
    _, status = os.waitpid(pid, 0)
    kill_group(pid)  # processes user code forked (its group), then those that left it (this worker's orphans)
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


def _worker_body(batch: list, options: RunOptions, w: int):
    _capture()  # user code's prints never reach the terminal
    become_subreaper()  # orphans of what user code forks come back here, to be killed (reaper.py)
    inherited = sys.modules.get("torch")  # None too where a caller blocked the import (sys.modules["torch"] = None)
    if hasattr(inherited, "set_num_threads"):  # imported before the fork (a test session, an API caller): its
        # OpenMP pool did not survive the fork, and the first parallel op would wait for it forever; one thread
        # runs inline
        inherited.set_num_threads(1)
    if any(imports_torch(item.abspath) for item in batch):
        try:  # the files would import it anyway; this way without garbage collection during the import
            import_paused("torch")
        except Exception:  # noqa: BLE001 -- not installed or broken: each file's own import reports it
            pass
    for position, item in enumerate(batch):
        _send(w, ("file", position))
        for message in file_messages(item, options, _check_in_child):
            _send(w, message)
            if message[0] == "collected" and not options.collect_only:
                _warm_up({info.backend for info in message[1]}, options)
        _send(w, ("file_done", position))


def _warm_up(backends: set, options: RunOptions):
    """Load, once per worker, what every checker would otherwise load again after its fork: the
    checker (when the parent had not yet), and torch's lazily imported autograd machinery. The
    symbolic layer is loaded for torch Functions only when --prove, --expr or --exact needs it (by
    default their exact check is a skip that needs no SymPy)."""
    _preload(options, symbolic="gradcli" in backends or options.prove or bool(options.expr) or options.exact == "on")
    if "torch" in backends:
        torch = sys.modules["torch"]
        x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        torch.autograd.grad(x * 2, x, torch.ones(1, dtype=torch.float64))


class _Worker:
    """A forked process checking a batch of files one after the other."""

    def __init__(self, batch: list, options: RunOptions):
        self.batch = batch
        self.item = None  # file in progress
        self.finished = 0  # files of the batch completely handled
        self.current = None  # Function being checked
        self.pid, self.fd = _fork(lambda w: _worker_body(batch, options, w), new_group=True)
        try:
            os.setpgid(self.pid, self.pid)
        except OSError:
            pass
        self.frames = _Frames()
        self.deadline = time.monotonic() + options.timeout

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass


def _batches(items, exitfirst: bool) -> list:
    """Files that import torch share one worker, so torch is imported once per run (it takes
    seconds); it starts first, except with -x, where checking order follows file order."""
    torch_files = [it for it in items if imports_torch(it.abspath)]
    batches = [[it] for it in items if it not in torch_files]
    if torch_files:
        at = next((i for i, b in enumerate(batches) if items.index(b[0]) > items.index(torch_files[0])),
                  len(batches)) if exitfirst else 0
        batches.insert(at, torch_files)
    return batches


def _preload(options: RunOptions, symbolic: bool = True):
    """What every checker needs, loaded once and inherited by each fork (idempotent)."""
    if not options.collect_only:
        import_paused("gradcli.autograd.namespace")
        import_paused("gradcli.check.diagnosis")
        import_paused("gradcli.check.gradcheck")
        if symbolic and (options.exact != "off" or options.expr or options.prove):
            import_paused("gradcli.check.symbolic_checks")
            import_paused("gradcli.check.exact")  # SymPy, mpmath: ~0.5 s, once per run
            if options.exact != "off" or options.expr:
                from gradcli.check.symbolic_checks import warm_up

                warm_up()  # SymPy's first-use costs, paid here once rather than in every forked checker
            if options.prove:
                import_paused("gradcli.symbolic.prove")


def run_workers(items, options: RunOptions, collector: _Collector):
    """Check ``items`` in forked workers, feeding ``collector``; Ctrl-C propagates (workers killed)."""
    jobs = 1 if options.exitfirst else max(1, options.jobs)
    queue = _batches(items, options.exitfirst)
    active: dict = {}
    before = children(os.getpid())  # a test runner's own children are not ours to kill
    try:
        while queue or active:
            while queue and len(active) < jobs and not collector.stop:
                worker = _Worker(queue.pop(0), options)
                active[worker.fd] = worker
                # after the first fork: the torch batch, the slowest, starts at once; SymPy only for workers to come
                _preload(options, symbolic=bool(queue))
            if not active:
                break
            timeout = max(0.0, min(w.deadline for w in active.values()) - time.monotonic())
            for fd in select.select(list(active), [], [], timeout)[0]:
                worker = active[fd]
                chunk = os.read(fd, 1 << 20)
                for message in worker.frames.feed(chunk):
                    _relay(worker, message, collector, options)
                if not chunk:
                    queue[:0] = _finish(active.pop(fd), collector)
            for fd, worker in list(active.items()):
                if time.monotonic() > worker.deadline:
                    worker.kill()
                    queue[:0] = _finish(active.pop(fd), collector, timeout=options.timeout)
    finally:
        for worker in active.values():  # interrupted: kill what still runs
            worker.kill()
            os.waitpid(worker.pid, 0)
            os.close(worker.fd)
        reap_orphans(keep=before)  # what a killed worker's checkers left (gradcli is their subreaper)


def _relay(worker: _Worker, message, collector: _Collector, options: RunOptions):
    kind = message[0]
    # the worker times checks itself (--timeout, plus --prove's budget when a checker asks for it)
    worker.deadline = time.monotonic() + options.timeout + options.symbolic_seconds() + KILL_GRACE
    if kind == "file":
        worker.item = worker.batch[message[1]]
        worker.deadline = time.monotonic() + options.timeout  # importing it
    elif kind == "file_done":
        collector.file_finished(worker.item)
        worker.item, worker.finished = None, message[1] + 1
    else:
        worker.current = message[1] if kind == "start" else None
        collector.handle(worker.item, message)


def _finish(worker: _Worker, collector: _Collector, timeout: Optional[float] = None) -> list:
    """Reap a worker (killed after ``timeout`` if given); returns the batch's files left to check."""
    _, status = os.waitpid(worker.pid, 0)
    os.close(worker.fd)
    item = worker.item
    if item is not None:
        what = f"timed out after {timeout:g} s" if timeout is not None else _died(status)
        name = worker.current
        message = (f"checking stopped: the worker process {what}" if name else
                   f"importing the file {what}" if timeout is not None else
                   f"the worker process {what} while importing")
        backend = "torch" if imports_torch(item.abspath) else "gradcli"
        collector.handle(item, ("result", FunctionResult(item.path, name, backend, "error", message)))
        collector.file_finished(item)
    rest = worker.batch[worker.finished + (item is not None):]
    return [rest] if rest and not collector.stop else []
