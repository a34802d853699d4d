"""A parameter annotated ``Tuple[str, ...]`` is the empty tuple of names (gradcli/check/string_tuples.py,
specs/check.md §2). The Functions here are this file's own."""
import typing

import pytest

from check_run import LIBS, by_name, check_json, need, write

NAMED = """
    from typing import Tuple

    import {lib}


    class Named({lib}.autograd.Function):
        @staticmethod
        def forward(ctx, x, names: Tuple[str, ...]):
            if not all(isinstance(n, str) for n in names):
                raise TypeError("names are strings")
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g, None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_the_names_are_the_empty_tuple(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "named.py", NAMED, lib)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Named"]
    assert result["status"] == "pass", result["message"]
    records = {r["name"]: r for r in result["inputs"][0]}
    assert records["names"]["spec"] == "()" and records["names"]["inferred"] == "annotated Tuple[str, ...]: no names"
    assert outcome.exit_code == 0


def test_which_annotations_are_tuples_of_names():
    from gradcli.check.string_tuples import is_string_tuple

    assert is_string_tuple(typing.Tuple[str, ...]) and is_string_tuple(tuple[str, ...])
    assert is_string_tuple("Tuple[str, ...]") and is_string_tuple("typing.Tuple[str,...]")
    assert is_string_tuple("tuple[str, ...]")
    assert not is_string_tuple(typing.Tuple[str, str])  # a fixed pair: its length matters
    assert not is_string_tuple(typing.Tuple[int, ...]) and not is_string_tuple("Tuple[int, ...]")
    assert not is_string_tuple(str) and not is_string_tuple("Sequence[str]")
