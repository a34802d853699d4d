"""torch's own semantics (specs/gradcheck.md, "Shapes"): a gradient whose shape autograd sums down to
the input's (torch's sum_to; gradcli's engine does the same) is a structure warning naming the shapes,
with the summed values compared; shapes autograd refuses stay failures. Both backends."""
import numpy as np
import pytest

from check_run import LIBS, by_name, check_json, need, write

from gradcli import gradcheck

SOURCE = """
    import {lib} as torch

    class RBF(torch.autograd.Function):
        # exp(-(x/l)^2) with a [1, 1] lengthscale; backward returns l's gradient elementwise, [4, 3],
        # and relies on autograd to sum it down (gpytorch's RBFCovariance does this)
        @staticmethod
        def forward(ctx, x, lengthscale):
            y = torch.exp(-(x / lengthscale) ** 2)
            ctx.save_for_backward(x, lengthscale, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, l, y = ctx.saved_tensors
            return g * y * (-2 * x / l ** 2), g * y * (2 * x ** 2 / l ** 3)

        @staticmethod
        def example_inputs():
            return (torch.tensor([[0.1, -0.4, 0.9], [1.2, -1.0, 0.3], [0.5, 0.7, -0.2], [-1.1, 0.6, 0.0]],
                                 dtype=torch.float64, requires_grad=True),
                    torch.full((1, 1), 1.5, dtype=torch.float64, requires_grad=True))

    class RBFHalved(RBF):
        @staticmethod
        def backward(ctx, g):
            x, l, y = ctx.saved_tensors
            return g * y * (-2 * x / l ** 2), g * y * (x ** 2 / l ** 3)

    class TransposedBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, g):
            return g, g.sum(0).reshape(4, 1)

        @staticmethod
        def example_inputs():
            return (torch.ones(3, 4, dtype=torch.float64, requires_grad=True),
                    torch.ones(1, 4, dtype=torch.float64, requires_grad=True))
"""


def load(tmp_path, lib):
    import importlib.util

    path = write(tmp_path, f"rbf_{lib}.py", SOURCE, lib)
    spec = importlib.util.spec_from_file_location(f"rbf_{lib}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


@pytest.mark.parametrize("lib", LIBS)
def test_a_gradient_autograd_sums_down_is_a_warning_and_its_sum_is_compared(tmp_path, lib):
    need(lib)
    module, _ = load(tmp_path, lib)
    args = module.RBF.example_inputs()
    report = gradcheck(module.RBF, args)
    assert report.ok, report.summary()
    structure = report.check("structure")
    assert structure.status == "warn"
    assert structure.details["returned_shapes"] == [[4, 3], [4, 3]]
    assert structure.message.startswith("gradient for lengthscale has shape [4, 3] but lengthscale has shape [1, 1]: "
                                        "autograd sums it down to that shape (torch's sum_to")
    (x, l) = report.inputs
    assert l.shape == (1, 1) and l.status == "pass"
    # the compared value is the sum: Σ 2x²/l³·exp(-(x/l)²) for the ones cotangent
    xs = np.array([[0.1, -0.4, 0.9], [1.2, -1.0, 0.3], [0.5, 0.7, -0.2], [-1.1, 0.6, 0.0]])
    expected = np.sum(2 * xs ** 2 / 1.5 ** 3 * np.exp(-(xs / 1.5) ** 2))
    assert l.analytic[0].item() == pytest.approx(expected, rel=1e-14)
    assert l.numeric[0].item() == pytest.approx(expected, rel=1e-12)
    # strict_shapes=True: torch would sum it, the backward still returned another shape
    strict = gradcheck(module.RBF, module.RBF.example_inputs(), strict_shapes=True)
    assert strict.check("structure").status == "fail" and not strict.ok


@pytest.mark.parametrize("lib", LIBS)
def test_wrong_values_after_the_sum_and_refused_shapes_still_fail(tmp_path, lib):
    need(lib)
    module, path = load(tmp_path, lib)
    halved = gradcheck(module.RBFHalved, module.RBF.example_inputs())
    assert halved.check("structure").status == "warn"
    assert [r.status for r in halved.inputs] == ["pass", "fail"]
    transposed = gradcheck(module.TransposedBias, module.TransposedBias.example_inputs())
    assert transposed.check("structure").status == "fail"
    assert "gradient for b has shape [4, 1] but b has shape [1, 4] (transposed or permuted?)" in \
        transposed.check("structure").message
    result, doc = check_json(tmp_path, path, "--no-exact")
    assert {name: r["status"] for name, r in by_name(doc).items()} == {
        "RBF": "pass", "RBFHalved": "fail", "TransposedBias": "fail"}
    assert ("  warning RBF: structure: gradient for lengthscale has shape [4, 3] but lengthscale has shape [1, 1]: "
            "autograd sums it down") in result.output
