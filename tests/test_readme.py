"""The README never lies: every fenced command in it is run, and its shown output is compared.

Conventions the README follows (and this test enforces):
* ```console blocks: ``$ command`` lines, each followed by its exact output; a ``...`` line stands for
  any number of lines left out; timings (``in 2.94s``) may differ, and so may round-off: errors
  below 1e-14 (``0.0e+00``, ``2.2e-16``) and digits past the 10th significant one of long numbers
  (the exact reference's time-budgeted simplification changes them from run to run).
* ```bash blocks: commands whose output is not shown; they must exit with the expected code.
* ```python blocks: run; a ``print(...)  # text`` line must print ``text``; a block defining
  ``test_`` functions is run by pytest instead and must pass.
* The ```yaml block is the GitHub Actions recipe: its ``run:`` steps are run in a project with a
  correct and a buggy Function, and the artifact it uploads is the JUnit file the check writes.
* The two set-up commands are run by CI itself (.ci/run runs exactly them); running the test suite
  from inside the test suite would recurse, so here they are checked against .ci/run.
Commands run in a temporary copy of examples/, so that they leave nothing in the working tree.
"""
import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
SETUP_COMMANDS = ["pip install -e '.[test]'", "python -m pytest -q"]
# Commands that report the deliberately buggy examples: exit code 1 (failures found) is their success.
EXPECTED_EXIT = {"gradcli check examples/": 1, "pytest --gradcli examples/": 1}
TIMING = re.compile(r"\bin \d+\.\d+s\b")
ROUNDOFF = re.compile(r"\b(?:0\.0e\+00|\d\.\de-(?:1[5-9]|[2-9]\d))\b")  # |error| < 1e-14, as printed
LONG_NUMBER = re.compile(r"-?\d+\.\d{11,}")

# (marker, language, body): a block right after a `<!-- needs torch -->` line needs PyTorch
BLOCKS = re.findall(r"^(<!-- needs torch -->\n)?```(\w+)\n(.*?)^```$", README, re.M | re.S)
HAS_TORCH = importlib.util.find_spec("torch") is not None
NEEDS_TORCH = pytest.mark.skipif(not HAS_TORCH, reason="the README marks this block <!-- needs torch -->")


def blocks(kind: str) -> list:
    return [body for _, lang, body in BLOCKS if lang == kind]


def needs_torch(body: str) -> list:
    """pytest marks for an item of ``body``: skipped without torch when its block is marked."""
    return [NEEDS_TORCH] if any(marker and b == body for marker, _, b in BLOCKS) else []


def shell_env() -> dict:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    for name in ("COLUMNS", "LINES", "FORCE_COLOR", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    return env


def run(command: str, cwd: Path, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env or shell_env(), capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def expected_exit(command: str) -> int:
    return next((code for prefix, code in EXPECTED_EXIT.items() if command.startswith(prefix)), 0)


@pytest.fixture
def workdir(tmp_path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def console_commands() -> list:
    """(command, expected output lines, pytest marks) of every ``$`` line of the console blocks."""
    found = []
    for body in blocks("console"):
        for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            found.append((command, output.rstrip("\n").splitlines(), needs_torch(body)))
    return found


def ellipsis_match(expected: list, actual: list) -> bool:
    pattern = "".join(r"(?:[^\n]*\n)*?" if line == "..." else re.escape(line) + r"\n" for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def normalise(lines: list) -> list:
    lines = [TIMING.sub("in <time>s", line.rstrip()) for line in lines]
    lines = [ROUNDOFF.sub("<~0>", line) for line in lines]
    lines = [LONG_NUMBER.sub(lambda m: format(float(m.group()), ".10g"), line) for line in lines]
    while lines and not lines[0]:  # `gradcli check` opens with a blank line; the README does not show it
        lines.pop(0)
    return lines


def test_the_readme_shows_the_commands_it_promises():
    commands = [c for c, _, _ in console_commands()]
    assert any(c.startswith("gradcli check examples/") for c in commands)
    assert any(c.startswith("gradcli diff ") for c in commands)
    assert blocks("bash")[0].split("\n")[:2] == SETUP_COMMANDS  # the two set-up commands, first
    assert "[`specs/`](specs/)" in README
    assert len(blocks("yaml")) == 1
    assert "`gradcli-check`" in README and "- id: gradcli-check" in (ROOT / ".pre-commit-hooks.yaml").read_text()


def test_the_setup_commands_are_the_ones_ci_runs():
    # .ci/run spells pip as `python -m pip install -q` (quiet, and the venv's own pip): the same command
    ci = [re.sub(r"^python -m pip install (-q )?", "pip install ", line.strip())
          for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    for command in SETUP_COMMANDS:
        assert command in ci, f"{command!r} is not what .ci/run runs"


@pytest.mark.parametrize("command,expected", [pytest.param(c, out, marks=marks, id=c)
                                              for c, out, marks in console_commands()])
def test_console_commands_print_what_the_readme_shows(command, expected, workdir):
    done = run(command, workdir)
    assert done.returncode == expected_exit(command), done.stdout + done.stderr
    actual = normalise(done.stdout.rstrip("\n").splitlines())
    wanted = normalise(expected)
    if not ellipsis_match(wanted, actual):
        diff = "\n".join(difflib.unified_diff(wanted, actual, "README.md", command, lineterm="", n=1))
        pytest.fail(f"README output of `{command}` differs from the real output (... lines are wildcards):\n{diff}")


def bash_commands() -> list:
    return [pytest.param(line, marks=needs_torch(body), id=line) for body in blocks("bash")
            for line in body.splitlines() if line.strip() and not line.startswith("#") and line not in SETUP_COMMANDS]


def test_torch_marks_are_where_torch_is_needed():
    """The marks are what the skips rely on: every block that checks the torch examples is marked."""
    marked = [body for marker, _, body in BLOCKS if marker]
    assert len(marked) == 3
    for _, lang, body in BLOCKS:
        if re.search(r"gradcli check examples/(\s|$|buggy_torch|real_torch)|pytest --gradcli examples/", body):
            assert body in marked, body


@pytest.mark.parametrize("command", bash_commands())
def test_bash_commands_run(command, workdir):
    done = run(command, workdir)
    assert done.returncode == expected_exit(command), done.stdout[-3000:] + done.stderr[-3000:]
    if command.startswith("pytest --gradcli examples/"):
        # as `gradcli check examples/`: 13 passed, 6 failed, 1 skipped (README's check output)
        closing = next(out for c, out, _ in console_commands() if c.startswith("gradcli check examples/"))
        summary = re.search(r"(\d+) passed, (\d+) failed, (\d+) skipped", closing[-1])
        passed, failed, skipped = summary.groups()
        assert re.search(rf"\b{failed} failed, {passed} passed, {skipped} skipped\b", done.stdout), done.stdout[-2000:]
        junit = ET.parse(workdir / "gradcli-junit.xml").getroot()
        assert sum(1 for _ in junit.iter("testcase")) == int(passed) + int(failed) + int(skipped)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_blocks_run_and_print_what_they_say(index, workdir):
    body = blocks("python")[index]
    env = dict(shell_env(), PYTHONPATH=str(workdir / "examples"))
    if re.search(r"^def test_", body, re.M):
        (workdir / "test_readme_block.py").write_text(body)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_readme_block.py"],
                              cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return
    done = subprocess.run([sys.executable, "-c", body], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    promised = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+# (.*)$", body, re.M)]
    assert promised, "a python block that promises no output"
    assert done.stdout.splitlines() == promised


GOOD = """
    from gradcli.autograd import Function


    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2
"""


def test_the_github_actions_recipe_runs(tmp_path):
    recipe = blocks("yaml")[0]
    steps = [m.group(1) for m in re.finditer(r"^\s+- run: (.+)$", recipe, re.M)]
    assert steps[0] == "pip install gradcli"
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "good.py").write_text(textwrap.dedent(GOOD))
    bad = textwrap.dedent(GOOD).replace("Double", "Triple").replace("x * 2", "x * 3")
    (tmp_path / "ops" / "bad.py").write_text(bad)
    # offline (PIP_NO_INDEX): the name resolves to this installed package, nothing is downloaded
    install = run(steps[0], tmp_path)
    assert install.returncode == 0 and "Requirement already satisfied: gradcli" in install.stdout, install.stderr
    check = run(steps[1], tmp_path)
    assert check.returncode == 1, check.stdout + check.stderr
    # an annotation on the failing backward's line (def backward of Triple: line 11)
    assert re.search(r"^::error file=ops/bad\.py,line=11,title=gradcli check%3A Triple failed::values: x: ",
                     check.stdout, re.M), check.stdout
    uploaded = re.search(r"^\s+path: (.+)$", recipe, re.M).group(1)
    cases = {c.get("name"): c for c in ET.parse(tmp_path / uploaded).getroot().iter("testcase")}
    assert set(cases) == {"Double", "Triple"} and cases["Triple"].find("failure") is not None
