"""One size everywhere when backward raises where sizes of different inputs meet (gradcli/check/equal_sizes.py,
specs/check.md §2). A backward that takes a count from one input (``K = w.size(-1)``) and indexes another with it
raises at inputs whose sizes gradcli chose apart (``3x4``: ``index 3 is out of bounds for dimension 0 with size
3``); with every size equal it runs. The Functions here are this file's own."""
import pytest

from check_run import by_name, check_json, need, write

COUNTED = """
    import torch


    class Counted(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            rows = torch.arange(w.size(-1))       # a count from w, used on rows of g: square inputs only
            return (g * w)[rows], SCALE * (g * x)[rows]


    SCALE = 1
"""


def test_backward_indexing_with_a_count_from_another_input_gets_one_size(tmp_path):
    need("torch")
    path = write(tmp_path, "counted.py", COUNTED)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Counted"]
    assert result["status"] == "pass", result["message"]
    x, w = result["inputs"][0]
    assert (x["spec"], w["spec"]) == ("float64[4,4]@(-2,2)", "float64[4,4]@(-2,2)")
    assert x["inferred"] == ("one size (4) for every input: backward raised where sizes of different inputs meet "
                             "(index 3 is out of bounds for dimension 0 with size 3)")
    assert outcome.exit_code == 0


def test_a_wrong_gradient_there_fails(tmp_path):
    need("torch")
    path = write(tmp_path, "counted.py", COUNTED.replace("SCALE = 1", "SCALE = 3"))
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Counted"]
    assert result["status"] == "fail"
    assert result["message"].startswith("values: w: 16 of 16 elements wrong")
    assert outcome.exit_code == 1


def test_the_plan_keeps_dimensions_and_ones_and_reads_only_size_errors():
    from gradcli.check.equal_sizes import plan
    from gradcli.check.shape_search import Plan

    plans = {"x": Plan("tensor", shape=(3, 4)), "b": Plan("tensor", shape=(1, 3)), "n": Plan("shape", value=(3, 4)),
             "k": Plan("int", value=1), "i": Plan("index")}
    out = plan(plans, "RuntimeError: The size of tensor a (4) must match the size of tensor b (3) at non-singleton "
                      "dimension 2")
    assert (out["x"].shape, out["b"].shape, out["n"].value) == ((4, 4), (1, 4), (4, 4))
    assert out["k"] is plans["k"] and out["i"] is plans["i"]
    assert out["x"].why == ("one size (4) for every input: backward raised where sizes of different inputs meet "
                            "(The size of tensor a (4) must match the size of tensor b (3))")
    assert plan(plans, "IndexError: index 3 is out of bounds for dimension 0 with size 3")["x"].shape == (4, 4)
    assert plan(plans, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)") is None
    square = {"x": Plan("tensor", shape=(4, 4))}
    assert plan(square, "IndexError: index 4 is out of bounds for dimension 0 with size 4") is None  # no change
