"""Isolation that holds (specs/check.md §2, "Isolation"): every file is imported in a worker of its own,
forked from the warmed parent, so no user file reaches another's verdict; the result channel survives
what user code does to stdout/stderr and low descriptors; a worker that cannot start is retried once,
then reported; -x stops the whole run, torch files included."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import main

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]


def write(directory, name, source):
    path = Path(directory) / name
    path.write_text(textwrap.dedent(source))
    return path


def check_json(tmp_path, *args):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["check", *map(str, args), "--json", str(out)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result, json.loads(out.read_text())


def verdicts(doc):
    return {(Path(r["file"]).name, r["function"]): r["status"] for r in doc["results"]}


def messages(doc):
    return {(Path(r["file"]).name, r["function"]): r["message"] for r in doc["results"]}


RECORDS_PID = """
    import os
    {imports}

    with open({log!r}, "a") as f:
        f.write(f"{{os.getpid()}}\\n")

    class Twice{n}({base}):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
"""


def _pid_file(tmp_path, n, torch_file, log):
    imports = "import torch" if torch_file else "from gradcli.autograd import Function"
    base = "torch.autograd.Function" if torch_file else "Function"
    write(tmp_path, f"f{n}.py", RECORDS_PID.format(imports=imports, log=str(log), n=n, base=base))


@pytest.mark.parametrize("torch_files", [False, pytest.param(True, marks=needs_torch)])
def test_every_file_is_imported_in_a_process_of_its_own(tmp_path, torch_files):
    log = tmp_path / "pids.txt"
    folder = tmp_path / "fns"
    folder.mkdir()
    for n in range(4):
        _pid_file(folder, n, torch_files, log)
    result, doc = check_json(tmp_path, folder)
    assert sorted(verdicts(doc).values()) == ["pass"] * 4
    pids = log.read_text().split()
    assert len(pids) == 4 and len(set(pids)) == 4  # four imports, four processes
    assert str(os.getpid()) not in pids  # the parent never imports user code


@needs_torch
def test_a_torch_files_monkeypatching_reaches_no_other_file(tmp_path):
    write(tmp_path, "a_patches.py", """
        import torch

        torch.cos = lambda t: t * 0  # at import: every later torch.cos in this process returns zeros
        torch.Tensor.cos = lambda t: t * 0

        class Identity(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g
    """)
    write(tmp_path, "b_sin.py", """
        import torch

        class TorchSin(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return torch.sin(x)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * torch.cos(x)
    """)
    result, doc = check_json(tmp_path, tmp_path)
    assert verdicts(doc) == {("a_patches.py", "Identity"): "pass", ("b_sin.py", "TorchSin"): "pass"}
    result, doc = check_json(tmp_path, tmp_path, "-j", "1")  # one at a time: still a fresh process each
    assert verdicts(doc) == {("a_patches.py", "Identity"): "pass", ("b_sin.py", "TorchSin"): "pass"}


STREAMS = """
    import os
    import sys
    from gradcli.autograd import Function

    {at_import}

    class ClosesStdout(Function):
        @staticmethod
        def forward(ctx, x):
            if sys.stdout is not None and not sys.stdout.closed:  # forward runs many times
                print("closing")
                sys.stdout.close()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class ReplacesStreams(Function):
        @staticmethod
        def forward(ctx, x):
            sys.stdout, sys.stderr = None, None
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class ClosesLowDescriptors(Function):
        @staticmethod
        def forward(ctx, x):
            os.closerange(3, 256)
            return x * 4

        @staticmethod
        def backward(ctx, g):
            for fd in (1, 2):
                try:
                    os.close(fd)
                except OSError:  # closed by an earlier call
                    pass
            return g * 4
"""


@pytest.mark.parametrize("at_import", ["", "sys.stdout.close()\nsys.stderr = None"])
def test_user_code_closing_or_replacing_its_streams_leaves_the_result_channel_alone(tmp_path, at_import):
    path = write(tmp_path, "streams.py", STREAMS.format(at_import=at_import.replace("\n", "\n    ")))
    result, doc = check_json(tmp_path, path)
    assert verdicts(doc) == {("streams.py", "ClosesStdout"): "pass", ("streams.py", "ReplacesStreams"): "pass",
                             ("streams.py", "ClosesLowDescriptors"): "pass"}, messages(doc)


def test_a_worker_that_dies_before_its_file_is_started_twice_then_reported(tmp_path, monkeypatch):
    from gradcli.check import processes

    starts = tmp_path / "starts.txt"

    def dies_at_start():  # runs in the forked worker, before it touches its file
        with open(starts, "a") as f:
            f.write("start\n")
        os._exit(4)

    monkeypatch.setattr(processes, "become_subreaper", dies_at_start)
    write(tmp_path, "good.py", """
        from gradcli.autograd import Function

        class Double(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
    """)
    result, doc = check_json(tmp_path, tmp_path / "good.py")
    assert result.exit_code == 3
    assert verdicts(doc) == {("good.py", None): "error"}
    assert messages(doc)[("good.py", None)] == \
        "the worker process exited with code 4 before importing the file (started 2 times)"
    assert starts.read_text().split() == ["start", "start"]  # once more, then no more


TORCH_FN = """
    import torch

    class {name}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return {factor} * x * g
"""


@needs_torch
def test_exitfirst_stops_a_torch_folder_at_its_first_failure(tmp_path):
    for n, factor in enumerate([2, 2, 3, 2, 3]):  # the third file's backward is wrong, and the fifth's
        write(tmp_path, f"t{n}.py", TORCH_FN.format(name=f"Square{n}", factor=factor))
    result, doc = check_json(tmp_path, tmp_path, "-x")
    assert result.exit_code == 1
    assert verdicts(doc) == {("t0.py", "Square0"): "pass", ("t1.py", "Square1"): "pass",
                             ("t2.py", "Square2"): "fail"}
    assert result.output.splitlines()[-1].startswith("2 passed, 1 failed in ")


@needs_torch
def test_exitfirst_stops_on_an_engine_failure_before_torch_files(tmp_path):
    write(tmp_path, "a_bad.py", """
        from gradcli.autograd import Function

        class Triple(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return g * 2
    """)
    for n in range(3):
        write(tmp_path, f"t{n}.py", TORCH_FN.format(name=f"Square{n}", factor=2))
    result, doc = check_json(tmp_path, tmp_path, "-x")
    assert result.exit_code == 1
    assert verdicts(doc) == {("a_bad.py", "Triple"): "fail"}


def _in_fresh_python(code: str) -> str:
    done = subprocess.run([PY, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_parent_loads_torch_only_for_a_file_that_imports_it():
    out = _in_fresh_python("""
        import sys
        from gradcli.check import warm_parent
        from gradcli.check.runner import RunOptions

        warm_parent.prepare(False, RunOptions(collect_only=True))
        print("torch" in sys.modules)
        warm_parent.prepare(True, RunOptions(collect_only=True))
        print("torch" in sys.modules or "no-torch")
    """)
    assert out[0] == "False"
    assert out[1] == ("True" if HAS_TORCH else "no-torch")  # without torch: its import fails quietly


def test_the_warm_up_check_leaves_the_random_generators_as_they_were():
    out = _in_fresh_python("""
        import numpy as np
        import gradcli
        from gradcli.check import warm_parent
        from gradcli.check.runner import RunOptions

        np.random.seed(5)
        gradcli.manual_seed(7)
        warm_parent.prepare(False, RunOptions(exact="auto"))
        print("check:gradcli" in warm_parent._DONE)
        print(repr(float(np.random.random())), repr(float(gradcli.rand(1).data[0])))
        np.random.seed(5)
        gradcli.manual_seed(7)
        print(repr(float(np.random.random())), repr(float(gradcli.rand(1).data[0])))
    """)
    assert out[0] == "True"
    assert out[1:3] == out[3:5]


def test_the_kernels_list_of_children_is_every_child():
    from gradcli.check.reaper import _listed_children, _scanned_children

    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        listed = _listed_children(os.getpid())
        mine = {p.pid for p in sleepers}
        assert mine <= _scanned_children(os.getpid())
        if listed is not None:  # a kernel without CONFIG_PROC_CHILDREN scans /proc instead
            assert mine <= listed and listed == _scanned_children(os.getpid())
    finally:
        for p in sleepers:
            p.kill()
            p.wait()


HANGS = """
    import time
    from gradcli.autograd import Function

    class Hangs(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            print("about to hang")
            time.sleep(600)
"""
EXITS = """
    import os
    from gradcli.autograd import Function

    class Exits(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            os._exit(5)
"""


def test_a_files_only_function_checked_in_its_worker_fails_as_it_would_in_a_checker(tmp_path):
    # a file with one Function is checked by its worker itself; with two, each in a forked checker:
    # the same hang and the same crash read the same
    alone, together = tmp_path / "alone", tmp_path / "together"
    alone.mkdir()
    together.mkdir()
    write(alone, "hangs.py", HANGS)
    write(alone, "exits.py", EXITS)
    write(together, "both.py", "import os\n" + textwrap.dedent(HANGS) + textwrap.dedent(EXITS).split("\n", 3)[3])
    _, doc_alone = check_json(tmp_path, alone, "--timeout", "3")
    _, doc_together = check_json(tmp_path, together, "--timeout", "3")
    expected = {"Hangs": "timed out after 12 s of wall time, 4x the CPU-time limit of 3 s (--timeout): it waits (a sleep, a lock, a blocking read) or got almost no CPU",  # it sleeps
                "Exits": "the checking process exited with code 5 without a result (os._exit or a crash in user code?)"}
    for doc in (doc_alone, doc_together):
        by_name = {r["function"]: r for r in doc["results"]}
        assert {name: r["message"] for name, r in by_name.items()} == expected
        assert {name: r["status"] for name, r in by_name.items()} == {"Hangs": "error", "Exits": "error"}
    assert [r["inputs"] for r in sorted(doc_alone["results"], key=lambda r: r["function"])] == \
        [r["inputs"] for r in sorted(doc_together["results"], key=lambda r: r["function"])]
