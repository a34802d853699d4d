"""A parameter used as a count (``range(n)``, ``[x] * n``) is checked at 2, not 1: with one copy a
backward that keeps the first chunk instead of summing the copies is right, and would PASS."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.cli import main

FUNCTIONS = '''
import gradcli as torch


class CatCopies(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return torch.cat([x] * k, 0)

    @staticmethod
    def backward(ctx, g):
        return sum(g.chunk(ctx.k, 0)), None


class CatCopiesFirstOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return torch.cat([x] * k, 0)

    @staticmethod
    def backward(ctx, g):
        return g.chunk(ctx.k, 0)[0], None  # the bug: the other copies' gradients are dropped


class LoopCopiesFirstOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        return torch.stack([x * 1.0 for _ in range(n)])

    @staticmethod
    def backward(ctx, g):
        return g[0], None  # the same bug, the count read by range()
'''


def run(tmp_path, *args):
    path = tmp_path / "copies.py"
    path.write_text(FUNCTIONS)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["check", str(path), "--no-exact", "--json", str(out), *args])
    return result, {r["function"]: r for r in json.loads(out.read_text())["results"]}


def test_a_count_is_checked_at_two_copies_and_the_dropped_copies_are_found(tmp_path):
    result, r = run(tmp_path)
    assert result.exit_code == 1, result.output
    assert r["CatCopies"]["status"] == "pass" and r["CatCopies"]["not_checked"] == []
    assert r["CatCopiesFirstOnly"]["status"] == "fail"
    assert r["LoopCopiesFirstOnly"]["status"] == "fail"
    assert "k = 2 (auto)" in result.output and "n = 2 (auto)" in result.output
    assert "--input k=2" in result.output  # the reproduce line says it


def test_the_count_given_on_the_command_line_wins(tmp_path):
    result, r = run(tmp_path, "-k", "CatCopiesFirstOnly", "--input", "k=1")
    assert r["CatCopiesFirstOnly"]["status"] == "pass"  # one copy: nothing to sum, as the user asked


@pytest.mark.parametrize("call", [lambda x: x.repeat(0.5, 1), lambda x: x.chunk(1.5), lambda x: x.narrow(0, 0.5, 1),
                                  lambda x: x.select(0, 1.0)])
def test_the_engine_refuses_a_float_where_torch_wants_an_int(call):
    import gradcli as torch

    x = torch.tensor(np.ones((3, 4)))
    with pytest.raises(TypeError, match="must be int, not float"):
        call(x)


def test_the_engine_takes_numpy_and_python_ints():
    import gradcli as torch

    x = torch.tensor(np.arange(12.0).reshape(3, 4))
    assert x.repeat(np.int64(2), 1).shape == (6, 4)
    assert x.narrow(0, 1, 2).data.tolist() == [[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
    assert len(x.chunk(2)) == 2 and x.select(1, 3).data.tolist() == [3.0, 7.0, 11.0]
