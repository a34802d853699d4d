"""Running `gradcli check` as a user meets it, for the tests of statuses and coverage: a file written
from source (``{lib}`` is ``gradcli`` or ``torch``: the same Function on both backends), click's
CliRunner, and the --json document."""
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import main

LIBS = ["gradcli", "torch"]


def need(lib):
    if lib == "torch":
        pytest.importorskip("torch")


def write(directory, name, source, lib="gradcli"):
    path = Path(directory) / name
    path.write_text(textwrap.dedent(source).replace("{lib}", lib))
    return path


def check(*args):
    result = CliRunner().invoke(main, ["check", *map(str, args)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def check_json(tmp_path, *args):
    out = Path(tmp_path) / "report.json"
    result = check("--format", "plain", *args, "--json", out)  # a --format in args wins
    return result, json.loads(out.read_text())


def by_name(doc):
    return {r["function"]: r for r in doc["results"]}
