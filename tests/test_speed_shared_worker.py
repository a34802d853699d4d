"""Plain files share a reused worker (specs/check.md §3 "Isolation", §5): which files are plain, the
fingerprint that retires a worker after a file that changed the process anyway, and what a hang in a
shared worker costs (only its own Function: the rest of the folder and of the file is still checked).
Engine Functions only: these run with and without torch."""
import json
import math
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.check import plain_files, shared_worker
from gradcli.check.plain_files import fingerprint, is_plain, unchanged
from gradcli.cli import main

DOUBLE = """
    import gradcli as torch


    class Double{n}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
"""


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def check_json(tmp_path, *args):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["check", *map(str, args), "--json", str(out)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    doc = json.loads(out.read_text())
    return {(Path(r["file"]).name, r["function"]): (r["status"], r["message"]) for r in doc["results"]}


@pytest.fixture(autouse=True)
def _fresh_rule():
    plain_files.is_plain.cache_clear()
    yield
    plain_files.is_plain.cache_clear()


@pytest.mark.parametrize("body, plain", [
    (DOUBLE.format(n=0), True),
    ("import gradcli as torch\nimport math\nSCALE = 2.0\n" + textwrap.dedent(DOUBLE.format(n=1)).split("\n", 1)[1], True),
    ("import os\n" + textwrap.dedent(DOUBLE.format(n=2)), False),  # os: could do anything
    ("import gradcli as torch\ntorch.cos = None\n", False),  # patches the library at import
    (DOUBLE.format(n=3).replace("return x * 2", "torch.manual_seed(0)\n            return x * 2"), False),
    (DOUBLE.format(n=4).replace("return x * 2", "global k\n            return x * 2"), False),
    (DOUBLE.format(n=5).replace("return x * 2", "ctx.k = 2\n            return x * ctx.k"), True),
    (DOUBLE.format(n=6).replace("return x * 2", "open('f')\n            return x * 2"), False),
])
def test_which_files_are_plain(tmp_path, body, plain):
    assert is_plain(str(write(tmp_path, "fn.py", body))) is plain


def test_a_file_beside_an_init_is_never_plain(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    assert is_plain(str(write(tmp_path, "fn.py", DOUBLE.format(n=0)))) is False


def test_the_fingerprint_sees_a_patched_library_and_changed_modes_but_not_a_lazy_submodule(monkeypatch):
    before = fingerprint()
    assert unchanged(before, fingerprint())
    monkeypatch.setattr(math, "cos", math.sin)
    assert not unchanged(before, fingerprint())
    monkeypatch.undo()
    assert unchanged(before, fingerprint())
    monkeypatch.setattr(math, "an_added_number", 3, raising=False)
    assert not unchanged(before, fingerprint())
    monkeypatch.undo()
    monkeypatch.setattr(math, "lazily_imported", textwrap, raising=False)  # a module: a library's lazy import
    assert unchanged(before, fingerprint())
    monkeypatch.undo()
    old = np.seterr(over="raise")
    try:
        assert not unchanged(before, fingerprint())
    finally:
        np.seterr(**old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not unchanged(before, fingerprint())
    assert unchanged(before, fingerprint())


def _count_workers(monkeypatch) -> dict:
    counts = {"started": 0, "assigned": 0}
    start, assign = shared_worker.SharedWorker.__init__, shared_worker.SharedWorker.assign

    def counted_start(self, *args, **kwargs):
        counts["started"] += 1
        start(self, *args, **kwargs)

    def counted_assign(self, *args, **kwargs):
        counts["assigned"] += 1
        return assign(self, *args, **kwargs)

    monkeypatch.setattr(shared_worker.SharedWorker, "__init__", counted_start)
    monkeypatch.setattr(shared_worker.SharedWorker, "assign", counted_assign)
    return counts


def test_plain_files_are_checked_one_after_another_in_one_worker(tmp_path, monkeypatch):
    folder = tmp_path / "fns"
    folder.mkdir()
    for n in range(3):
        write(folder, f"fn{n}.py", DOUBLE.format(n=n))
    counts = _count_workers(monkeypatch)
    results = check_json(tmp_path, folder, "-j", "1", "--no-exact")
    assert results == {(f"fn{n}.py", f"Double{n}"): ("pass", "") for n in range(3)}
    assert counts == {"started": 1, "assigned": 3}  # the first file is assigned as it starts


def test_a_file_that_changes_the_process_retires_its_worker(tmp_path, monkeypatch):
    """The rule lets ``box[0].tau = 1.0`` through (the target's root is a local name); the fingerprint
    does not: the next file gets a fresh worker, and its math.tau is the real one."""
    folder = tmp_path / "fns"
    folder.mkdir()
    write(folder, "a_patches.py", """
        import math
        import gradcli as torch


        class Double0(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                box = [math]
                box[0].tau = 1.0
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
    """)
    write(folder, "b_uses.py", """
        import math
        import gradcli as torch


        class TimesTau(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * math.tau

            @staticmethod
            def backward(ctx, g):
                return g * 6.283185307179586
    """)
    assert is_plain(str(folder / "a_patches.py"))
    counts = _count_workers(monkeypatch)
    results = check_json(tmp_path, folder, "-j", "1", "--no-exact")
    assert results == {("a_patches.py", "Double0"): ("pass", ""), ("b_uses.py", "TimesTau"): ("pass", "")}
    assert counts["started"] == 2
    assert math.tau == 6.283185307179586


def test_a_hang_in_a_shared_worker_costs_only_its_function(tmp_path, monkeypatch):
    # CPU seconds read 10x (as in test_speed_check_clock.py): the spinning Function reaches its limit long
    # before the wall cap, however little CPU a loaded machine lends it
    from gradcli.check import check_clock

    real = check_clock.process_cpu_seconds
    monkeypatch.setattr(check_clock, "process_cpu_seconds", lambda pid: None if real(pid) is None else 10 * real(pid))
    folder = tmp_path / "fns"
    folder.mkdir()
    write(folder, "a_first.py", DOUBLE.format(n=0))
    write(folder, "b_hangs.py", DOUBLE.format(n=1).replace(
        "return x * 2", "for _ in range(10 ** 12):\n                pass\n            return x * 2")
        + DOUBLE.format(n=2).split("\n", 3)[3])
    write(folder, "c_last.py", DOUBLE.format(n=3))
    assert is_plain(str(folder / "b_hangs.py"))
    results = check_json(tmp_path, folder, "-j", "1", "--no-exact", "--timeout", "3")
    assert results == {
        ("a_first.py", "Double0"): ("pass", ""),
        ("b_hangs.py", "Double1"): ("error", "timed out after 3 s of CPU time (--timeout)"),  # it spins
        ("b_hangs.py", "Double2"): ("pass", ""),  # the rest of the file, in a worker of its own
        ("c_last.py", "Double3"): ("pass", ""),
    }


TORCH_THREADS = """
    import torch


    class ScaledByThreads{n}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * torch.get_num_threads()  # right only on one thread
"""


def test_a_shared_torch_worker_runs_torch_on_one_thread(tmp_path):
    pytest.importorskip("torch")
    import os
    import subprocess
    import sys

    from gradcli.check.threads import THREAD_VARIABLES

    folder = tmp_path / "fns"
    folder.mkdir()
    for n in range(2):
        write(folder, f"fn{n}.py", TORCH_THREADS.format(n=n))
    assert is_plain(str(folder / "fn0.py"))
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    done = subprocess.run([sys.executable, "-m", "gradcli", "check", str(folder), "--format", "plain", "--no-exact"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("2 passed in ")


def test_a_shared_worker_retires_after_max_files(tmp_path, monkeypatch):
    folder = tmp_path / "fns"
    folder.mkdir()
    for n in range(3):
        write(folder, f"fn{n}.py", DOUBLE.format(n=n))
    monkeypatch.setattr(shared_worker, "MAX_FILES", 2)  # inherited by the worker forked here
    counts = _count_workers(monkeypatch)
    results = check_json(tmp_path, folder, "-j", "1", "--no-exact")
    assert results == {(f"fn{n}.py", f"Double{n}"): ("pass", "") for n in range(3)}
    assert counts == {"started": 2, "assigned": 3}


@pytest.mark.skipif(not (hasattr(__import__("os"), "fork") and hasattr(__import__("os"), "waitid")), reason="forked workers")
def test_an_idle_shared_worker_that_died_refuses_its_next_file(tmp_path):
    import os
    import signal

    from gradcli.check.channels import _Frames
    from gradcli.check.discovery import expand_paths
    from gradcli.check.results import RunOptions

    folder = tmp_path / "fns"
    folder.mkdir()
    for n in range(2):
        write(folder, f"fn{n}.py", DOUBLE.format(n=n))
    items = expand_paths([str(folder)])
    options = RunOptions(gradcheck={"seed": 0}, exact="off")
    worker = shared_worker.SharedWorker(items[0], options, False)
    frames, kinds = _Frames(), []
    while "file_done" not in kinds:
        kinds += [message[0] for message in frames.feed(os.read(worker.fd, 1 << 20))]
    assert kinds == ["file", "collected", "start", "cases", "result", "file_done"]
    os.kill(worker.pid, signal.SIGKILL)  # dies while idle
    while os.read(worker.fd, 1 << 20):
        pass
    os.waitid(os.P_PID, worker.pid, os.WEXITED | os.WNOWAIT)  # dead (its descriptors closed), not yet reaped
    assert worker.assign(items[1], options) is False  # the scheduler then discards it and forks a fresh one
    worker.discard()
