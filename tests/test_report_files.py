"""--json / --junit files: written whole or not at all (temporary file + rename), and --no-timing
gives byte-identical reruns."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.check.runner import FunctionResult, RunResult
from gradcli.cli import main
from gradcli.report import check_output
from gradcli.report.check_output import write_atomically, write_files

ROOT = Path(__file__).resolve().parents[1]


def _run():
    return RunResult([FunctionResult("ops.py", "Exp", "gradcli", "pass", "", duration=0.25)], duration=0.5)


def test_no_timing_reruns_are_byte_identical(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    paths = [tmp_path / f"r{i}.json" for i in range(2)]
    for path in paths:
        result = CliRunner().invoke(main, ["check", "examples/seed_exp.py", "examples/buggy_ops.py", "--format",
                                           "plain", "--no-timing", "--json", str(path)])
        assert result.exit_code == 1, result.output
    assert paths[0].read_bytes() == paths[1].read_bytes()
    doc = json.loads(paths[0].read_text())
    assert '"timing"' not in paths[0].read_text() and "timing" not in doc["results"][0]["checks"][0]
    with_timing = tmp_path / "t.json"
    CliRunner().invoke(main, ["check", "examples/seed_exp.py", "--format", "plain", "--json", str(with_timing)])
    assert "total_s" in json.loads(with_timing.read_text())["results"][0]["checks"][0]["timing"]


def test_a_write_interrupted_midway_leaves_the_previous_report(tmp_path, monkeypatch):
    report = tmp_path / "report.json"
    report.write_text("previous report\n")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(check_output.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_files(_run(), json_path=str(report))
    assert report.read_text() == "previous report\n"
    assert os.listdir(tmp_path) == ["report.json"]  # the temporary file is gone too


def test_written_report_replaces_the_old_one_with_the_files_permissions(tmp_path):
    report = tmp_path / "report.json"
    report.write_text("old")
    write_files(_run(), json_path=str(report), junit_path=str(tmp_path / "j.xml"))
    assert json.loads(report.read_text())["results"][0]["function"] == "Exp"
    assert (tmp_path / "j.xml").read_text().startswith("<?xml")
    assert report.stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert sorted(os.listdir(tmp_path)) == ["j.xml", "report.json"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


KILLED_WRITER = """
import sys
from gradcli.report.check_output import write_atomically
print("writing", flush=True)
write_atomically(sys.argv[1], "x" * (200 << 20) + "\\n")
print("written", flush=True)
"""


def test_a_process_killed_while_writing_never_leaves_an_empty_or_partial_report(tmp_path):
    report = tmp_path / "report.json"
    report.write_text("previous report\n")
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(report)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "writing\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    size = report.stat().st_size
    assert size in (len("previous report\n"), (200 << 20) + 1)  # the old report or the whole new one
    if size == len("previous report\n"):
        assert report.read_text() == "previous report\n"
