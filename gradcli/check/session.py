"""A run of ``gradcli check`` over files: in forked workers where ``os.fork`` exists (scheduler.py),
else file after file in this process, without timeouts."""
from __future__ import annotations

import os
import time
from typing import Optional

from gradcli.check.collector import Collector, RunEvents, file_messages
from gradcli.check.results import RunOptions, RunResult
from gradcli.check.runner import check_target


def run(items, options: RunOptions, events: Optional[RunEvents] = None,
        warm_symbolic: Optional[bool] = None) -> RunResult:
    """Check every file in ``items`` (from discovery.expand_paths). ``warm_symbolic``: load SymPy in
    this process before forking (default: when there are several files; a caller that runs file after
    file in one process, the pytest plugin, passes True)."""
    events = events or RunEvents()
    start = time.perf_counter()
    collector = Collector(items, options, events)
    if not (options.isolate and hasattr(os, "fork")):
        for item in items:
            if collector.stop:
                break
            for message in file_messages(item, options, check_target):
                collector.handle(item, message)
            collector.file_finished(item)
        return collector.result(start)
    from gradcli.check.scheduler import run_workers

    try:
        run_workers(items, options, collector, len(items) > 1 if warm_symbolic is None else warm_symbolic)
    except KeyboardInterrupt:
        collector.run.interrupted = True
    return collector.result(start)
