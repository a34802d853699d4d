"""pytest-xdist workers share one collection (pytest_collection.py); a worker that finds another one
collecting gets ready for its checks while it waits (torch, gradcli's checking modules, the warm-up),
instead of after the collection."""
import fcntl
import os
import pickle
import threading
import uuid

from gradcli import pytest_collection
from gradcli.check.results import RunOptions


class FakeState:
    def __init__(self, files):
        self.files = files
        self.run_id = uuid.uuid4().hex
        self.options = RunOptions(exact="auto")
        self.torch_loads = 0

    def _load_torch(self):
        self.torch_loads += 1


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_waiting_worker_warms_up_then_reads_the_collectors_result(tmp_path, monkeypatch):
    engine = write(tmp_path, "ops.py", "import gradcli as torch\n")
    state = FakeState({engine: None})
    shared = pytest_collection.shared_path(state.run_id)
    collected = {engine: (["Double"], None)}
    events = []

    def warm(s):
        events.append("warm")
        with open(shared, "wb") as f:  # the collecting worker finishes meanwhile, then lets go
            pickle.dump(collected, f)
        fcntl.flock(holder, fcntl.LOCK_UN)

    monkeypatch.setattr(pytest_collection, "warm_for_checks", warm)
    monkeypatch.setattr(pytest_collection, "collect_all", lambda s, paths=None: events.append("collect"))
    holder = open(shared + ".lock", "a")  # another worker holds the lock: it is collecting
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        found = {}
        waiter = threading.Thread(target=lambda: found.update(pytest_collection.shared_collection(state)))
        waiter.start()
        waiter.join(30)
        assert not waiter.is_alive()
        assert events == ["warm"]  # warmed while waiting, and did not collect again
        assert found == collected
    finally:
        holder.close()
        for path in (shared, shared + ".lock"):
            if os.path.exists(path):
                os.remove(path)


def test_the_first_worker_collects_at_once_without_warming_first(tmp_path, monkeypatch):
    engine = write(tmp_path, "ops.py", "import gradcli as torch\n")
    state = FakeState({engine: None})
    events = []
    monkeypatch.setattr(pytest_collection, "warm_for_checks", lambda s: events.append("warm"))
    monkeypatch.setattr(pytest_collection, "collect_all",
                        lambda s, paths=None: events.append("collect") or {engine: ([], None)})
    try:
        assert pytest_collection.shared_collection(state) == {engine: ([], None)}
        assert events == ["collect"]
    finally:
        shared = pytest_collection.shared_path(state.run_id)
        for path in (shared, shared + ".lock"):
            if os.path.exists(path):
                os.remove(path)


def test_warming_loads_torch_only_for_torch_files_and_prepares_each_kind(tmp_path, monkeypatch):
    from gradcli.check import warm_parent

    engine = write(tmp_path, "engine_ops.py", "import gradcli as torch\n")
    torch_file = write(tmp_path, "torch_ops.py", "import torch\n")
    prepared = []
    monkeypatch.setattr(warm_parent, "prepare", lambda torch_file, options: prepared.append(torch_file))

    state = FakeState({engine: None})
    pytest_collection.warm_for_checks(state)
    assert (state.torch_loads, prepared) == (0, [False])

    prepared.clear()
    state = FakeState({engine: None, torch_file: None})
    pytest_collection.warm_for_checks(state)
    assert (state.torch_loads, prepared) == (1, [False, True])


def test_a_warm_up_that_fails_still_reads_the_collection(tmp_path, monkeypatch):
    engine = write(tmp_path, "ops.py", "import gradcli as torch\n")
    state = FakeState({engine: None})
    shared = pytest_collection.shared_path(state.run_id)
    collected = {engine: (["Double"], None)}

    def broken(s):
        with open(shared, "wb") as f:
            pickle.dump(collected, f)
        fcntl.flock(holder, fcntl.LOCK_UN)
        raise RuntimeError("warm-up broke")

    monkeypatch.setattr(pytest_collection, "warm_for_checks", broken)
    holder = open(shared + ".lock", "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        assert pytest_collection.shared_collection(state) == collected
    finally:
        holder.close()
        for path in (shared, shared + ".lock"):
            if os.path.exists(path):
                os.remove(path)
