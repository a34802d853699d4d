"""``[tool.gradcli]`` run settings (paths, shape, dtype, timeout, seed, exact, strict, format): found
like pytest finds its rootdir, overridden by the command line, shown by ``--show-config``; and
``check --help`` grouped by concern."""
import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import CHECK_SECTIONS, main

SQUARE = """\
from gradcli.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output
"""


def project(tmp_path, table: str) -> Path:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "square.py").write_text(SQUARE)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.gradcli]\n" + textwrap.dedent(table))
    return tmp_path


def invoke(cwd, *args):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", *map(str, args)])
    finally:
        os.chdir(old)


def run_json(cwd, *args) -> dict:
    result = invoke(cwd, *args, "--json", "out.json")
    assert result.exit_code == 0, result.output
    return json.loads((Path(cwd) / "out.json").read_text())


def test_the_file_changes_the_run_and_the_command_line_wins(tmp_path):
    root = project(tmp_path, """\
        paths = ["ops"]
        shape = "2x5"
        dtype = "float32"
        seed = 7
        format = "plain"
        """)
    doc = run_json(root)  # no PATHS: [tool.gradcli] paths, relative to the file
    (record,), = doc["results"][0]["inputs"]
    assert doc["seed"] == 7
    assert (record["shape"], record["dtype"], record["spec"]) == ([2, 5], "float32", "float32[2,5]@(-2,2)")
    doc = run_json(root, "--seed", "1", "--shape", "3", "--dtype", "float64")  # the command line wins
    (record,), = doc["results"][0]["inputs"]
    assert doc["seed"] == 1 and (record["shape"], record["dtype"]) == ([3], "float64")


def test_found_from_a_subfolder_and_from_the_paths_given(tmp_path):
    root = project(tmp_path, 'seed = 4\nformat = "plain"\n')
    assert run_json(root / "ops")["seed"] == 4  # walking up from the working directory
    elsewhere = tmp_path.parent / f"{tmp_path.name}_cwd"
    elsewhere.mkdir()
    assert run_json(elsewhere, root / "ops" / "square.py")["seed"] == 4  # from the checked path, not the cwd


def test_exact_strict_and_timeout_from_the_file(tmp_path):
    root = project(tmp_path, "exact = false\nstrict = true\ntimeout = 5\n")
    doc = run_json(root, "ops")
    assert [c["name"] for c in doc["results"][0]["checks"][0]["checks"]].count("exact") == 0  # exact = false
    shown = invoke(root, "--show-config").output
    assert "exact          = false" in shown and "strict         = true" in shown
    assert "timeout        = 5.0" in shown
    doc = run_json(root, "ops", "--exact")  # the command line turns it back on
    assert "exact" in [c["name"] for c in doc["results"][0]["checks"][0]["checks"]]


def test_show_config_says_what_is_in_force_and_from_where(tmp_path):
    root = project(tmp_path, """\
        paths = ["ops"]
        shape = [2, 2]
        format = "github"
        [tool.gradcli.inputs]
        "Square" = ["x=3x3"]
        """)
    result = invoke(root, "--show-config", "--seed", "9")
    assert result.exit_code == 0
    config = str(root / "pyproject.toml")
    assert result.output.splitlines() == [
        f"config file: {config}",
        f"paths          = {root / 'ops'}{' ' * max(0, 24 - len(str(root / 'ops')))} ({config})",
        f"shape          = 2x2                      ({config})",
        "dtype          = float64                  (default)",
        "timeout        = 60.0                     (default)",
        "seed           = 9                        (command line)",
        "exact          = auto                     (default)",
        "strict         = false                    (default)",
        f"format         = github                   ({config})",
        f"inputs         Square = x=3x3 ({config})",
    ]
    nothing = invoke(tmp_path.parent, "--show-config")  # no [tool.gradcli] from there up: every default
    assert nothing.exit_code == 0
    assert nothing.output.startswith("config file: none (no pyproject.toml with [tool.gradcli] found)\n")
    assert "seed           = 0                        (default)" in nothing.output


@pytest.mark.parametrize("table, message", [
    ('seed = "seven"', "[tool.gradcli] seed: expected an integer, got 'seven'"),
    ('dtype = "float16"', "[tool.gradcli] dtype: expected one of 'float64', 'float32', got 'float16'"),
    ("timeout = 0", "[tool.gradcli] timeout: expected a number of seconds > 0, got 0"),
    ('shape = "3y4"', "[tool.gradcli] shape: "),
    ('exact = "yes"', "[tool.gradcli] exact: expected true, false or \"auto\", got 'yes'"),
    ("paths = []", "[tool.gradcli] paths: expected a list of files, folders or modules, got []"),
])
def test_a_bad_value_is_a_usage_error_naming_the_file(tmp_path, table, message):
    root = project(tmp_path, table + "\n")
    result = invoke(root, "ops")
    assert result.exit_code == 2
    assert f"Error: {root / 'pyproject.toml'}: {message}" in result.output
    assert "Traceback" not in result.output


def test_help_groups_the_options_by_concern():
    text = CliRunner().invoke(main, ["check", "--help"]).output
    titles = [title for title, _ in CHECK_SECTIONS]
    assert titles == ["Selection", "Inputs", "Checking", "Reference mode", "Exact reference and proofs", "Output"]
    positions = [text.index(f"\n{title}:\n") for title in titles]
    assert positions == sorted(positions)
    section = lambda title: text.split(f"\n{title}:\n")[1].split("\n\n")[0]  # noqa: E731
    assert "--input NAME=SPEC" in section("Inputs") and "--shape SHAPE" in section("Inputs")
    assert "--prove-shape SHAPE" in section("Exact reference and proofs")
    assert "--show-config" in section("Output") and "--junit FILE" in section("Output")
    assert "--atol FLOAT" in section("Checking") and "-k EXPR" in section("Selection")
    listed = {name for _, names in CHECK_SECTIONS for name in names}
    options = {p.name for p in main.commands["check"].params if p.param_type_name == "option"}
    assert options - listed == set()  # every option has its section (--help: under "Other options")
