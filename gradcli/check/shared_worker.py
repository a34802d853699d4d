"""A worker reused for plain files (plain_files.py), one after another.

A fork of the warmed parent holding torch, and its exit, cost ~17 ms of system time (its ~270 MB:
page tables at the fork, unmapping at the exit), and the worker's copy-on-write faults (~4,000 per
file, ~5 us each on this VM) and cold first-use paths another ~30 ms: more than checking a small
Function (~25 ms). Plain files of one kind (importing torch or not) are therefore handed one at a
time to a shared worker: it checks every Function inline (the parent times it as it times any
inline check; a crash or a hang costs only what it was doing, the rest of the file goes to a worker
of its own). Before each file the random generators, ``sys.path`` and ``sys.modules`` (but for
libraries loaded on first use) are put back as they were before its first file; after each file a
fingerprint of what a file could change (plain_files.fingerprint) is compared, and a file that
changed anything retires the worker (the next file gets a fresh one); so does the MAX_FILES-th file.
"""
from __future__ import annotations

import os
import random
import sys
from typing import Optional

from gradcli.check import warm_parent
from gradcli.check.channels import _died, _Frames, _send
from gradcli.check.collector import Collector
from gradcli.check.discovery import imports_torch
from gradcli.check.plain_files import fingerprint, unchanged
from gradcli.check.processes import START_ATTEMPTS, _check_inline, _inline_failure, _send_file, _Worker, \
    _worker_start
from gradcli.check.reaper import reap_orphans
from gradcli.check.results import FunctionResult, RunOptions

LIBRARY_MODULES = ("torch", "numpy", "gradcli", "sympy", "mpmath", "scipy")  # kept between plain files
# files a shared worker checks before it retires: what libraries keep per call (torch.manual_seed queues a
# formatted stack for CUDA's lazy init every time) cannot grow without bound; one fork per this many files
MAX_FILES = 256


def _shared_body(options: RunOptions, w: int, commands: int, capture=None):
    """Check the files that come on ``commands``, one after another, each in the state a fresh fork
    of the parent would have given it; return (the process exits) when the parent closes the pipe,
    or after a file that changed what the fingerprint covers."""
    _worker_start(capture)
    states, python_random = warm_parent._random_states(), random.getstate()
    path, modules = list(sys.path), set(sys.modules)
    inline, frames, checked = _check_inline(w), _Frames(), 0
    while True:
        items: list = []
        while not items:
            chunk = os.read(commands, 1 << 16)
            if not chunk:
                return  # the parent closed the pipe: the run is over
            items = frames.feed(chunk)
        for item in items:
            warm_parent._restore(states)
            random.setstate(python_random)
            before = fingerprint()
            retire: list = []

            def changed() -> bool:
                retire.append(checked + 1 >= MAX_FILES or not unchanged(before, fingerprint()))
                return retire[0]

            _send_file(item, options, w, inline, retire=changed)
            checked += 1
            if retire and retire[0]:
                return
            for name in set(sys.modules) - modules:
                if name.split(".")[0] not in LIBRARY_MODULES:
                    del sys.modules[name]
            sys.path[:] = path


class SharedWorker(_Worker):
    """A worker for plain files of one kind (``torch_file``), given them one by one on a pipe."""

    shared = True

    def __init__(self, item, options: RunOptions, torch_file: bool):
        self.torch_file = torch_file
        self.commands, commands_w = os.pipe()
        super().__init__(item, options)
        os.close(self.commands)
        self.commands = commands_w
        self.assign(item, options)  # a worker that died at once reads as dead from its pipe

    def _body(self, options: RunOptions):
        commands = self.commands
        return lambda w: _shared_body(options, w, commands, self.capture)

    def assign(self, item, options: RunOptions) -> bool:
        """Hand it ``item``; False when it cannot take it (it died while idle: discard it)."""
        self._reset(item, 1, options)
        try:
            _send(self.commands, item)
        except OSError:
            return False
        return True

    def close(self):
        os.close(self.commands)

    def discard(self):
        """Reap an idle worker that died or is no longer wanted."""
        self.kill()
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.close()
        self.capture.close()


def shared_finish(worker: SharedWorker, collector: Collector, timeout: Optional[float] = None, keep=(),
                  stopped: bool = False) -> list:
    """Reap a shared worker that died, retired, was killed after ``timeout`` or stopped by -x (an idle
    one: ``worker.done``). What it had not finished goes back to the queue for workers of their own:
    the file, when it died before collecting it (that worker words the error, as for any file); else
    the Function it was checking is an error worded as an inline check's, and the file's Functions
    after it are checked by a worker of their own. Returns [(file, attempt, how)] to start (``how``:
    "isolated", a worker of its own; "resumed", the same, its collection already told)."""
    import dataclasses

    worker.kill()
    _, status = os.waitpid(worker.pid, 0)
    os.close(worker.fd)
    worker.close()
    item = worker.item
    try:
        if worker.done or stopped:
            if not worker.done:
                collector.file_finished(item)
            return []
        if not worker.started:  # gradcli's own start-up, before the file: as a worker's, once more
            if worker.attempt < START_ATTEMPTS and timeout is None and not collector.stop:
                return [(item, worker.attempt + 1, "isolated")]
            what = worker.why() if timeout is not None else _died(status)
            message = f"the worker process {what} before importing the file (started {worker.attempt} times)"
            backend = "torch" if imports_torch(item.abspath) else "gradcli"
            collector.handle(item, ("result", FunctionResult(item.path, None, backend, "error", message)))
            collector.file_finished(item)
            return []
        if not worker.chosen and worker.current is None:
            return [(item, 1, "isolated")]  # it died importing the file: a worker of its own words it
        if worker.current is not None:
            _inline_failure(worker, collector, status, timed_out=timeout is not None, finish=False)
        left = [n for n in worker.chosen if n not in worker.reported and n != worker.current]
        if not left:
            collector.file_finished(item)
            return []
        return [(dataclasses.replace(item, names=left), 1, "resumed")]
    finally:
        worker.capture.close()
        reap_orphans(keep=keep)
