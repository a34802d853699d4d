"""Which ``--gradcli`` items are checked together, in one run of the runner (pytest_plugin.py;
specs/testing.md, "Verdicts").

A run of one file costs a worker fork of the ~200 MB pytest process (and, for a file of several
Functions, a checker fork each): ~50-75 ms per file, where `gradcli check FOLDER` hands plain files
to one shared worker (~7 ms per Function). So at the first item that has no result yet, the plugin
checks, in one ``session.run`` (the runner's own scheduling, as `gradcli check PATHS` does it), every
item this process is going to run:

* serial (not an xdist worker) and ``--dist each``: every selected gradcli item of the session still
  unchecked;
* an xdist worker under the plugin's scheduler (pytest_scheduler.py: ``--dist load``, xdist's default):
  the block of items the controller dealt this worker, which it wrote to a file before sending them;
* ``--dist loadfile`` / ``loadscope`` (a file's items go to one worker): the items of the item's file;
* otherwise (another scheduler; an item sent on after a worker crashed): the item alone.

With ``-x`` (``--maxfail 1``) the run stops after its first failure or error, as `gradcli check -x`;
an item after it is checked alone if pytest reaches it. Results are kept for their items
(``RunState.done``); each Function is still checked by itself (its inputs, seed, timeout), so a
batch changes no verdict. Ctrl-C during the run stops pytest.
"""
from __future__ import annotations

import json
import os
import tempfile


def shared_file(run_id, what: str) -> str:
    """A file of one xdist run in the temporary directory: ``items`` (the gradcli items' node ids, by
    the workers) or ``blocks`` (which worker checks which, by the controller)."""
    return os.path.join(tempfile.gettempdir(), f"gradcli-{what}-{run_id}.json")


def write_shared(path: str, data) -> None:
    partial = f"{path}.{os.getpid()}"
    with open(partial, "w") as f:
        json.dump(data, f)
    os.replace(partial, path)  # whole or absent: a reader never sees half a file


def read_shared(path: str):
    """The JSON in ``path`` when this user wrote it (a name by the run's random id), else None."""
    try:
        if os.stat(path).st_uid != os.getuid():
            return None
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _key(item) -> tuple:
    return os.path.realpath(item.path), item.name


def items_to_check(item, state) -> list:
    """The items to check in one run at ``item`` (itself included), in the session's order."""
    config = item.config

    def unchecked(other) -> bool:
        return isinstance(other, type(item)) and other.result is None and _key(other) not in state.done

    worker = getattr(config, "workerinput", None)
    dist = worker.get("gradcli_dist") if worker is not None else None  # the controller's --dist (workers get "no")
    if worker is None or dist == "each":
        return [other for other in item.session.items if unchecked(other)]
    if dist in ("loadfile", "loadscope"):
        return [other for other in item.session.items if other.path == item.path and unchecked(other)]
    if state.blocks is None:
        blocks = read_shared(shared_file(state.run_id, "blocks"))
        state.blocks = blocks if isinstance(blocks, dict) else {}
    block = set(state.blocks.get(worker.get("workerid"), ()))
    if item.nodeid not in block:
        return [item]
    return [other for other in item.session.items if other.nodeid in block and unchecked(other)]


def check_ahead(item, state) -> None:
    """Check ``item``'s batch (items_to_check) when ``item`` has no result yet."""
    if _key(item) in state.done:
        return
    batch = items_to_check(item, state)
    if len(batch) > 1:
        check_together(state, [_key(other) for other in batch], exitfirst=item.config.option.maxfail == 1)
        _freeze_after_batch()


def _freeze_after_batch() -> None:
    """Collect garbage once, then freeze what is left (``gc.freeze``). The pytest process holds torch,
    SymPy and gradcli's modules (~10^6 objects), which the runner's forks leave unfrozen
    (check/channels.py): pytest's garbage collections at its end and the interpreter's at its exit
    traversed them all, ~0.5-1 s of CPU per pytest process (each xdist worker) after the last test.
    Garbage made from now on is still collected; an object alive now that later becomes cyclic
    garbage stays in memory until the process ends (a later fork unfreezes everything again)."""
    import gc

    gc.collect()
    gc.freeze()


def check_together(state, keys: list, exitfirst: bool = False) -> None:
    """Check the Functions ``keys`` ((realpath, name), files in their first key's order) in one run
    and keep each result in ``state.done``. With ``exitfirst`` the run stops after its first failure
    or error; the Functions after it get no result here."""
    import dataclasses

    from gradcli.check.results import BAD, FunctionResult
    from gradcli.check.session import run

    names: dict = {}
    for abspath, name in keys:
        if (abspath, name) not in state.done and name not in names.setdefault(abspath, []):
            names[abspath].append(name)
    files = [dataclasses.replace(state.files[abspath], names=chosen) for abspath, chosen in names.items()]
    finished = _FinishedFiles()
    options = dataclasses.replace(state.options, exitfirst=True) if exitfirst else state.options
    run_result = run(files, options, finished, warm_symbolic=True)
    if run_result.interrupted:  # the runner turns Ctrl-C into a partial result: pytest must stop
        raise KeyboardInterrupt
    stopped = exitfirst and any(r.status in BAD for r in run_result.results)
    for abspath, file in zip(names, files):
        results = finished.results.get(file.path)
        if results is None and stopped:
            continue  # not reached before -x stopped the run
        if results is None:  # (every file of a run that was not stopped finishes; kept apart all the same)
            results = [r for r in run_result.results if r.file == file.path]
        for name in file.names:
            found = [r for r in results if r.function == name] or \
                [r for r in results if r.function is None]  # the file stopped importing
            if found:
                state.done[(abspath, name)] = found[0]
            elif not stopped:
                message = f"{name} was collected but is no longer defined in {file.path}"
                state.done[(abspath, name)] = FunctionResult(file.path, name, "gradcli", "error", message)


class _FinishedFiles:
    """The run's events (collector.RunEvents' methods): each finished file's results, by its path."""

    def __init__(self):
        self.results: dict = {}

    def collected(self, count):
        pass

    def started(self, file, name):
        pass

    def result(self, result):
        pass

    def file_done(self, file, results):
        self.results[file] = list(results)
