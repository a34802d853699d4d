"""No process outlives gradcli check: what a backward forks (plainly, or detached with setsid) is
killed when its Function is done, through a real process and through CliRunner."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from gradcli.check.reaper import children, reap_orphans
from gradcli.cli import main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreapers and /proc are Linux's")

FORKS = """
    import os
    import time
    from gradcli.autograd import Function

    PIDS = {pids!r}

    def spawn(detach):
        pid = os.fork()
        if pid == 0:
            if detach:  # a new session, and the session leader's child: outside every group of gradcli's
                os.setsid()
                if os.fork():
                    os._exit(0)
            with open(PIDS, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(120)
            os._exit(0)
        if detach:
            os.waitpid(pid, 0)

    class ForksPlainly(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            spawn(detach=False)
            return g * 2

    class ForksDetached(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            spawn(detach=True)
            return g * 3
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _file(tmp_path):
    pids = tmp_path / "pids.txt"
    path = tmp_path / "forks.py"
    path.write_text(textwrap.dedent(FORKS.format(pids=str(pids))))
    return path, pids


def _pids(pids_file):
    return [int(line) for line in pids_file.read_text().split()]


def test_a_real_run_leaves_no_process_behind(tmp_path):
    path, pids = _file(tmp_path)
    done = subprocess.run([sys.executable, "-m", "gradcli", "check", str(path), "--format", "plain", "--no-exact",
                           "--json", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {r["function"]: r["status"] for r in json.loads((tmp_path / "r.json").read_text())["results"]} == {
        "ForksPlainly": "pass", "ForksDetached": "pass"}
    started = _pids(pids)
    assert len(started) >= 2  # each backward ran at least once
    assert [pid for pid in started if alive(pid)] == []


def test_an_in_process_run_leaves_no_process_behind(tmp_path):
    path, pids = _file(tmp_path)
    before = children(os.getpid())
    result = CliRunner().invoke(main, ["check", str(path), "--format", "plain", "--no-exact"])
    assert result.exit_code == 0, result.output
    started = _pids(pids)
    assert len(started) >= 2
    assert [pid for pid in started if alive(pid)] == []
    assert children(os.getpid()) - before == set()


def test_reap_orphans_kills_and_reaps_only_new_children():
    keep = children(os.getpid())
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert sleeper.pid in children(os.getpid())
    assert reap_orphans(keep=keep) == 1
    assert not alive(sleeper.pid)
