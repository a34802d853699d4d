"""Checkers run BLAS/OpenMP (and torch) single-threaded unless the user set a thread count."""
import os
import subprocess
import sys
import textwrap

import pytest

from gradcli.check.threads import THREAD_VARIABLES

RECORDS = """
    import os
    {imports}
    from {base} import Function

    class Recorder(Function):
        @staticmethod
        def forward(ctx, x):
            with open({out!r}, "w") as f:
                f.write(",".join(os.environ.get(n, "-") for n in {names!r}) + "|" + {threads})
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
"""


def _run(tmp_path, env_extra, torch_file=False):
    out = tmp_path / "seen.txt"
    source = RECORDS.format(imports="import torch" if torch_file else "", out=str(out), names=THREAD_VARIABLES,
                            base="torch.autograd" if torch_file else "gradcli.autograd",
                            threads="str(torch.get_num_threads())" if torch_file else "'-'")
    path = tmp_path / "recorder.py"
    path.write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(env_extra)
    done = subprocess.run([sys.executable, "-m", "gradcli", "check", str(path), "--format", "plain", "--no-exact"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    variables, threads = out.read_text().split("|")
    return variables.split(","), threads


def test_checkers_are_single_threaded_by_default(tmp_path):
    variables, _ = _run(tmp_path, {})
    assert variables == ["1", "1", "1"]


def test_a_thread_count_the_user_set_is_kept(tmp_path):
    variables, _ = _run(tmp_path, {"OMP_NUM_THREADS": "3"})
    assert variables == ["3", "-", "-"]


def test_torch_checkers_run_torch_on_one_thread(tmp_path):
    pytest.importorskip("torch")
    _, threads = _run(tmp_path, {}, torch_file=True)
    assert threads == "1"
    _, threads = _run(tmp_path, {"OMP_NUM_THREADS": "2"}, torch_file=True)
    assert threads == "2"


CROSS_ENTROPY = """
    import torch
    import torch.nn.functional as F

    class Xent(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits):
            ctx.save_for_backward(logits)
            target = torch.arange(logits.shape[0]) % logits.shape[1]
            return F.cross_entropy(logits.repeat(64, 8), target.repeat(64))

        @staticmethod
        def backward(ctx, g):
            (logits,) = ctx.saved_tensors
            with torch.enable_grad():
                x = logits.detach().requires_grad_()
                target = torch.arange(x.shape[0]) % x.shape[1]
                (grad,) = torch.autograd.grad(F.cross_entropy(x.repeat(64, 8), target.repeat(64)), x)
            return g * grad
"""


def test_a_torch_pool_started_before_the_fork_does_not_hang_the_checker(tmp_path):
    """torch used in this process first (as in a test session): its OpenMP pool does not survive the fork,
    and a parallel op in the forked checker would wait for it until --timeout."""
    torch = pytest.importorskip("torch")
    from click.testing import CliRunner

    from gradcli.cli import main

    a = torch.randn(400, 400)
    torch.nn.functional.cross_entropy(a @ a, torch.randint(0, 400, (400,)))  # starts the intra-op pool here
    path = tmp_path / "xent.py"
    path.write_text(textwrap.dedent(CROSS_ENTROPY))
    result = CliRunner().invoke(main, ["check", str(path), "--format", "plain", "--timeout", "30"])
    assert result.exit_code == 0, result.output
    assert "timed out" not in result.output


def test_a_thread_count_the_user_set_runs_parallel_ops_in_checkers_forked_from_the_warmed_parent(tmp_path):
    """gradcli imported torch in its own process before forking (warm_parent.py) and kept the user's
    OMP_NUM_THREADS=2: its warm-up ran only ops too small to start the pool, so a parallel op in a
    forked checker starts a pool of its own instead of waiting for one that did not survive the fork."""
    pytest.importorskip("torch")
    path = tmp_path / "xent.py"
    path.write_text(textwrap.dedent(CROSS_ENTROPY))
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["OMP_NUM_THREADS"] = "2"
    done = subprocess.run([sys.executable, "-m", "gradcli", "check", str(path), "--format", "plain", "--no-exact",
                           "--timeout", "60"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "timed out" not in done.stdout
