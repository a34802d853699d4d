"""Collection for the pytest plugin's ``--gradcli`` (pytest_plugin.py), kept out of the plugin module
so that a pytest run without ``--gradcli`` loads none of it.

Every file is collected by the runner's ``--collect-only`` in a forked worker of its own (user code
never runs in the pytest process). All files at once, several at a time (as ``gradcli check -j``):
one call per file would fork and wait for each in turn. Under pytest-xdist every worker collects the
same files: the first to take a lock collects them while the others wait, and leaves the result in
a file named by the run's testrunuid for the others to read (the plugin removes it at the end). A
worker that finds the lock taken imports torch and warms up for its checks while it waits.
"""
import fcntl
import os
import pickle
import tempfile


def shared_path(run_id) -> str:
    return os.path.join(tempfile.gettempdir(), f"gradcli-collection-{run_id}.pickle")


def collect_all(state, paths=None) -> dict:
    """{realpath: (TargetInfos, load-error FunctionResult or None)} for ``paths`` (default: every
    file of the run)."""
    from gradcli.check.discovery import imports_torch
    from gradcli.check.runner import RunOptions
    from gradcli.check.session import run

    paths = list(state.files) if paths is None else paths
    import gradcli.autograd.namespace  # noqa: F401 -- numpy and the engine, inherited by every fork
    if any(imports_torch(p) for p in paths):
        state._load_torch()  # before forking: the collecting workers and every checker inherit it
    jobs = min(4, os.cpu_count() or 1)
    result = run([state.files[p] for p in paths], RunOptions(collect_only=True, timeout=state.collect_timeout,
                                                            jobs=jobs))
    if result.interrupted:  # the runner turns Ctrl-C into a partial result: pytest must stop
        raise KeyboardInterrupt
    abspath_of = {state.files[p].path: p for p in paths}
    found = {p: ([], None) for p in paths}
    for info in result.collected:
        found[abspath_of[info.file]][0].append(info)
    for load_error in result.results:
        path = abspath_of[load_error.file]
        found[path] = (found[path][0], load_error)
    return found


def warm_for_checks(state) -> None:
    """What this process loads before its first check anyway (torch when a file imports it, then
    warm_parent.prepare: gradcli's checking modules, SymPy where the exact check needs it, one
    warm-up check), done while another xdist worker collects: beside that worker's work on the
    other core, instead of after it on this worker's critical path."""
    from gradcli.check import warm_parent
    from gradcli.check.discovery import imports_torch

    kinds = {imports_torch(p) for p in state.files}
    if True in kinds:
        state._load_torch()
    for torch_file in sorted(kinds):
        warm_parent.prepare(torch_file, state.options)


def shared_collection(state) -> dict:
    """``collect_all`` once for all the xdist workers of one run (``state.run_id``)."""
    path = shared_path(state.run_id)
    with open(path + ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another worker collects: get ready for the checks meanwhile
            try:
                warm_for_checks(state)
            except Exception:  # noqa: BLE001 -- only an optimisation: the first check loads what it needs
                pass
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_uid == os.getuid():  # written by this run's first worker (a random name)
                with open(path, "rb") as f:
                    found = pickle.load(f)
                if set(found) == set(state.files):
                    return found
        except (OSError, EOFError, pickle.UnpicklingError):
            pass
        found = collect_all(state)
        partial = f"{path}.{os.getpid()}"
        with open(partial, "wb") as f:
            pickle.dump(found, f)
        os.replace(partial, path)  # whole or absent: a reader never sees half a file
        return found
