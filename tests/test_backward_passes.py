"""Issue 13 (reach, "no option"): Python values read from how forward keeps them — ``ctx.keep = keep`` tested
in an ``if`` (a bool), ``[x] * n`` (an int) — and a guessed count that backward, run twice on one forward as
a check does, asks to raise (reversible layers allow ``num_bwd_passes`` backward passes). Small Functions of
our own reproduce the patterns met in real packages; `gradcli check` runs as a user runs it."""
import pytest

from check_run import LIBS, by_name, check_json, need, write

PASSES = """
    import {lib} as torch


    class Passes(torch.autograd.Function):       # allows `passes` backward passes of one forward
        @staticmethod
        def forward(ctx, x, keep, passes):
            ctx.keep = keep
            ctx.left = [x.detach()] * passes
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            if not ctx.left:
                raise RuntimeError("backward ran more times than allowed: try raising 'passes'")
            kept = ctx.left.pop()
            (x,) = ctx.saved_tensors
            if not ctx.keep:
                x = kept
            return 2 * x * g, None, None


    class Silent(torch.autograd.Function):       # the same, but its error names no parameter
        @staticmethod
        def forward(ctx, x, passes):
            ctx.left = [x.detach()] * passes
            return x * x

        @staticmethod
        def backward(ctx, g):
            if not ctx.left:
                raise RuntimeError("no backward pass left")
            x = ctx.left.pop()
            return 2 * x * g, None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_count_backward_asks_to_raise_gets_a_large_one_and_a_ctx_flag_is_a_bool(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "passes.py", PASSES, lib)
    result, doc = check_json(tmp_path, path)
    results = by_name(doc)
    passes = results["Passes"]
    assert passes["status"] == "pass", passes["message"]
    x, keep, count = passes["inputs"][0]
    assert x["spec"] == "float64[3,4]@(-2,2)"
    assert (keep["type"], keep["value"], keep["inferred"]) == ("bool", False, "ctx.keep used as a condition")
    assert (count["type"], count["value"]) == ("int", 10000)
    assert count["inferred"] == ("backward's error asked for more when run twice (RuntimeError: backward ran more "
                                 "times than allowed: try r...)")  # the error's first 57 characters
    # a second input set flips the flag; the count found for the first is kept
    assert [(s[1]["value"], s[2]["value"]) for s in passes["inputs"]] == [(False, 10000), (True, 10000)]


@pytest.mark.parametrize("lib", LIBS)
def test_a_count_nothing_asks_to_raise_keeps_its_guess(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "passes.py", PASSES, lib)
    result, doc = check_json(tmp_path, f"{path}::Silent")
    (r,) = doc["results"]
    x, count = r["inputs"][0]
    # copies kept on ctx count backward passes: the guess stays 1 (copies of data start at 2, test_count_inputs.py)
    assert (count["type"], count["value"], count["inferred"]) == ("int", 1, "repeats a list in forward ([...] * n)")
    # the check takes more than one product of a forward: backward's own error is the result
    assert r["status"] == "error" and "no backward pass left" in r["message"]
