"""A user's Function file written for a diagnosis test and imported as gradcli imports a user's
module (so the one-edit search can recompile its backward from the file), with the small helpers
the tests of tests/test_diagnosis_exact_fits.py and tests/test_diagnosis_edit_choices.py share."""
from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest

from gradcli.check.diagnosis import diagnose
from gradcli.check.gradcheck import gradcheck

HEADERS = {"gradcli": "import gradcli as torch\n", "torch": "import torch\nimport torch.nn.functional as F\n"}


def user_module(tmp_path, backend, body, name):
    """(module, path) of ``body`` written under ``backend``'s import header and imported."""
    if backend == "torch":
        pytest.importorskip("torch")
    path = tmp_path / f"{name}_{backend}.py"
    path.write_text(HEADERS[backend] + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(f"{name}_{backend}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def float_tensor(module, array):
    return module.torch.tensor(np.asarray(array, dtype=float), dtype=module.torch.float64, requires_grad=True)


def failing_findings(cls, args):
    """The diagnosis of ``cls`` at ``args``, which must fail the check."""
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def line_of(path, text):
    """The first line number of ``path`` holding ``text``."""
    return next(k for k, line in enumerate(path.read_text().splitlines(), 1) if text in line)
