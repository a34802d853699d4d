"""Run SymPy work that may never finish (simplify, proofs, exact values) where it can really be abandoned.

SymPy cannot be interrupted from a thread, so the work runs in a forked child that streams each result
back through a pipe as soon as it is ready; at the deadline the parent keeps what has arrived and kills
the child. The parent meanwhile does its own (numeric) work, so on two cores the symbolic budget mostly
overlaps with the engine and finite-difference checks instead of adding to them.
"""
import os
import pickle
import select
import signal
import sys
import time

from gradcli.expr import lifeline

_HEADER = 8


class Budgeted:
    """Jobs ``(key, function, args)`` running in a child process, results collected until a deadline."""

    def __init__(self, jobs, seconds):
        self.jobs = list(jobs)
        self.seconds = seconds
        self.started = time.monotonic()
        self.results = {}
        self.timed_out = False
        self._pid = None
        self._fd = None
        if not self.jobs:
            return
        if seconds <= 0:   # no time left in the total budget: nothing is started
            self.timed_out = True
            return
        if not hasattr(os, "fork"):  # pragma: no cover - no fork: run inline, without a budget
            for key, function, args in self.jobs:
                self.results[key] = _run_one(function, args)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        # The total budget's alarm must not strike between fork and remembering the child (it would be
        # left running, unreaped): hold SIGALRM back for these few lines.
        blocked = _block_alarm()
        try:
            read_end, write_end = os.pipe()
            parent = os.getpid()
            pid = os.fork()
            if pid == 0:  # child: never returns into the caller's code
                os.close(read_end)
                _child(self.jobs, write_end, parent)
            os.close(write_end)
            self._pid, self._fd = pid, read_end
        finally:
            _unblock_alarm(blocked)

    def collect(self):
        """Results by key; keys missing from the result did not finish within the budget."""
        if self._fd is None:
            return self.results
        deadline = self.started + self.seconds
        buffer = b""
        try:
            while True:
                remaining = max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([self._fd], [], [], remaining)   # 0: what has already arrived
                if not ready:
                    self.timed_out = True
                    break
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                buffer = self._unpack(buffer)
        finally:
            self._stop()
        return self.results

    def abandon(self):
        """Kill the child without collecting (the total budget ran out first); safe to call twice."""
        if self._fd is not None:
            self._stop()

    def _unpack(self, buffer):
        while len(buffer) >= _HEADER:
            size = int.from_bytes(buffer[:_HEADER], "little")
            if len(buffer) < _HEADER + size:
                break
            key, result = pickle.loads(buffer[_HEADER:_HEADER + size])
            self.results[key] = result
            buffer = buffer[_HEADER + size:]
        return buffer

    def _stop(self):
        fd, self._fd = self._fd, None    # first: a second _stop (after an alarm) finds nothing to do
        pid, self._pid = self._pid, None
        if fd is not None:
            os.close(fd)
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _block_alarm():
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        return True
    except (AttributeError, ValueError, OSError):   # no pthread_sigmask (Windows)
        return False


def _unblock_alarm(blocked):
    if blocked:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})


def _run_one(function, args):
    try:
        return ("ok", function(*args))
    except Exception as error:  # reported to the parent as data, never raised across the fork
        return ("error", f"{type(error).__name__}: {error}")


def _child(jobs, write_end, parent):
    try:
        lifeline.bind_to_parent(parent)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)   # the parent's total-budget alarm is not ours
        _unblock_alarm(True)
        for key, function, args in jobs:
            result = _run_one(function, args)
            try:
                data = pickle.dumps((key, result))
            except Exception as error:
                data = pickle.dumps((key, ("error", f"result not transferable: {error}")))
            data = len(data).to_bytes(_HEADER, "little") + data
            view = memoryview(data)
            while view:
                written = os.write(write_end, view)
                view = view[written:]
    finally:
        os._exit(0)  # skip atexit handlers and buffered output inherited from the parent
