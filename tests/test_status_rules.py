"""specs/check.md "Status rules": a forward that raises the same exception on every input set tried is
an ERROR (exit 3) with the exception and its line; SKIP only when gradcli could not build inputs (and
says how to give them); a correct in-place (ctx.mark_dirty) Function passes on both backends."""
import pytest

from check_run import LIBS, by_name, check, check_json, need, write

FORWARDS = """
    import {lib} as torch

    class NotYet(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("forward is not implemented yet")

        @staticmethod
        def backward(ctx, g):
            return g

    class SavesAFloat(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3.0)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class Rows7(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            if a.shape[0] != 7:
                raise ValueError(f"works on 7 rows, got {a.shape[0]}")
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    class SumDim(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, dim):
            ctx.dim, ctx.shape = dim, x.shape
            return x.sum(dim)

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(ctx.dim).expand(ctx.shape), None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_an_always_raising_forward_is_an_error_with_its_line(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "ops.py", FORWARDS, lib)
    result, doc = check_json(tmp_path, f"{path}::NotYet")
    assert result.exit_code == 3, result.output
    (r,) = doc["results"]
    assert r["status"] == "error"
    assert r["message"] == (f"forward raised ValueError: forward is not implemented yet ({path}:7) on every input set "
                            "tried (float tensors of several shapes and domains, integer tensors, numbers): it fails "
                            "whatever the inputs (a bug in forward, or something it needs that is missing), so it is "
                            "an error, not a skip")
    assert "ERROR  NotYet  (" in result.output and "ops.py:7)" in result.output
    assert result.output.splitlines()[-1].startswith("1 error in ")


@pytest.mark.parametrize("lib", LIBS)
def test_a_forward_raising_for_a_bug_whatever_the_inputs_is_an_error_not_a_skip(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "ops.py", FORWARDS, lib)
    result, doc = check_json(tmp_path, path, "-k", "SavesAFloat or Rows7 or SumDim", "--format", "github")
    r = by_name(doc)
    assert r["SavesAFloat"]["status"] == "error"
    if lib == "gradcli":
        assert r["SavesAFloat"]["message"].startswith("forward raised TypeError: save_for_backward can only save ")
        assert "ops.py:16) on every input set tried" in r["SavesAFloat"]["message"]
    else:  # torch checks saved objects only with grad enabled: the error comes from gradcheck's own forward
        assert r["SavesAFloat"]["message"].startswith("TypeError: save_for_backward can only save variables")
    # needs 7 rows, which nothing in its source says gradcli could read: a skip that says how to give them
    assert r["Rows7"]["status"] == "skip"
    assert "forward refuses the a gradcli built: give --input a=SPEC (for a a float tensor" in r["Rows7"]["message"]
    assert "b will still be built automatically" in r["Rows7"]["message"]
    assert r["SumDim"]["status"] == "pass"  # the number fallback: dim = 1
    assert result.exit_code == 3
    annotations = [line for line in result.output.splitlines() if line.startswith("::")]
    line = 16 if lib == "gradcli" else 13  # torch: the class line (no frame of the user's file)
    assert annotations[0].startswith(f"::error file={path},line={line},title=gradcli check%3A SavesAFloat error::")
    assert annotations[1].startswith(f"::warning file={path},line=23,title=gradcli check%3A Rows7 skipped::")


DIRTY = """
    import {lib} as torch

    class ExpInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.exp_()
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
"""


@pytest.mark.parametrize("lib", LIBS)
def test_mark_dirty_gets_fresh_copies_for_every_evaluation(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "dirty.py", DIRTY, lib)
    result, doc = check_json(tmp_path, path)
    assert result.exit_code == 0, result.output
    (r,) = doc["results"]
    assert r["status"] == "pass"
    (record,) = r["inputs"][0]
    (x,) = r["checks"][0]["inputs"]
    assert x["status"] == "pass" and x["max_rel_error"] < 1e-14
    # the recorded input is the drawn one, not exponentiated by the probes of forward's domain
    import numpy as np

    drawn = np.random.default_rng([0, __import__("zlib").crc32(b"ExpInPlace.x")]).uniform(-2, 2, size=(3, 4))
    assert np.array_equal(np.asarray(record["value"]), drawn)
    assert all(c["status"] != "fail" for c in r["checks"][0]["checks"])


def test_skip_names_the_options_and_strict_fails_it_visibly(tmp_path):
    path = write(tmp_path, "ops.py", FORWARDS)
    result = check(f"{path}::Rows7", "--strict", "--format", "github")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[-1].startswith("1 skipped (strict: fails) in ")
    assert any(line.startswith(f"::error file={path},line=23,title=gradcli check%3A Rows7 skipped (--strict)::")
               for line in lines)
