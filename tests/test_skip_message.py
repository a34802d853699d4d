"""A Function whose every values check skips says why, on the result (not an empty "SKIP Name: ")."""
import textwrap

from tests.check_run import check_json

ONLY_AT_ITS_POINT = """
    import gradcli as torch
    from gradcli.autograd import Function


    class OnlyAtItsPoint(Function):
        # finite at the point it was first called at, NaN at every other point: nothing can be compared
        seen = None

        @staticmethod
        def forward(ctx, x):
            if OnlyAtItsPoint.seen is None:
                OnlyAtItsPoint.seen = x.detach().clone()
            same = (x == OnlyAtItsPoint.seen).all().item()
            return x * 2 if same else x * float("nan")

        @staticmethod
        def backward(ctx, g):
            return g * 2
"""


def test_a_skip_with_nothing_compared_names_the_skipped_check(tmp_path):
    path = tmp_path / "skipper.py"
    path.write_text(textwrap.dedent(ONLY_AT_ITS_POINT))
    result, doc = check_json(tmp_path, str(path), "--no-exact")
    (r,) = doc["results"]
    assert r["status"] == "skip", result.output
    assert r["message"] == ("values: x: the numerical derivative could not be computed "
                            "(non-finite function values around the point)")
    assert "SKIP OnlyAtItsPoint: values: x: the numerical derivative could not be computed" in result.output
