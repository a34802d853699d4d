"""The composite GitHub Action (action.yml at the repository's top): its steps' commands run here as
the runner would run them -- inputs reach each script as the environment variables the step maps
them to, ``python`` and ``gradcli`` are this interpreter's -- on a folder with a right and a wrong
Function; the files the upload step names are the ones the check step wrote."""
import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # in the test extra (pyproject.toml)

ACTION = Path(__file__).resolve().parent.parent / "action.yml"
INPUT = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def action():
    return yaml.safe_load(ACTION.read_text())


def resolve(text: str, inputs: dict) -> str:
    """``${{ inputs.NAME }}`` -> the input's value (what the runner substitutes)."""
    return INPUT.sub(lambda m: inputs[m.group(1)], text)


def given(**overrides) -> dict:
    inputs = {name: spec.get("default", "") for name, spec in action()["inputs"].items()}
    inputs.update(overrides)
    return inputs


def run_step(step: dict, inputs: dict, cwd: Path, output: Path) -> subprocess.CompletedProcess:
    assert step["shell"] == "bash"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADCLI_", "GITHUB_"))}
    env.update({k: resolve(str(v), inputs) for k, v in step.get("env", {}).items()})
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["GITHUB_OUTPUT"] = str(output)
    env["PIP_NO_INDEX"] = "1"  # no network here: gradcli is installed already, pip only confirms it
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_action_is_composite_and_keeps_inputs_out_of_scripts():
    doc = action()
    assert doc["runs"]["using"] == "composite"
    steps = doc["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    assert steps[0]["with"]["python-version"] == "${{ inputs.python-version }}"
    assert steps[-1]["uses"].startswith("actions/upload-artifact@")
    assert steps[-1]["if"] == "always() && inputs.upload == 'true'"  # uploaded when the check fails too
    for step in steps:
        assert "${{" not in step.get("run", ""), step.get("name")  # inputs reach scripts as env only (no injection)
    assert doc["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit-code }}"


def test_action_steps_run_and_report(tmp_path):
    work = tmp_path / "repo"
    (work / "ops").mkdir(parents=True)
    (work / "ops" / "ops.py").write_text(textwrap.dedent("""\
        import gradcli as torch
        from gradcli.autograd import Function


        class Good(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 2 * x * grad_output


        class Bad(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 3 * x * grad_output


        class Deselected(Bad):
            pass
        """))
    inputs = given(paths="ops", args="-k 'Good or Bad' --seed 3")
    output = tmp_path / "github_output"
    output.write_text("")
    steps = {step["name"]: step for step in action()["runs"]["steps"]}

    install = run_step(steps["Install gradcli"], inputs, work, output)
    assert install.returncode == 0, install.stderr
    assert "gradcli" in install.stdout  # "Requirement already satisfied: gradcli ..."

    check = run_step(steps["gradcli check"], inputs, work, output)
    assert check.returncode == 1, check.stdout + check.stderr  # a failure fails the step
    assert output.read_text() == "exit-code=1\n"
    annotations = [line for line in check.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == 1
    assert annotations[0].startswith("::error file=ops/ops.py,line=24,title=gradcli check%3A Bad failed::")
    assert "1 passed, 1 failed, 1 deselected" in check.stdout

    report = json.loads((work / inputs["json"]).read_text())
    assert report["seed"] == 3  # the quoted -k and the --seed of `args` both arrived
    assert {r["function"]: r["status"] for r in report["results"]} == {"Good": "pass", "Bad": "fail"}
    suite = ET.parse(work / inputs["junit"]).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")

    upload = steps["Upload the reports"]["with"]
    assert resolve(upload["path"], inputs).split() == [inputs["json"], inputs["junit"]]  # the files just written
    assert resolve(upload["name"], inputs) == "gradcli-report"
