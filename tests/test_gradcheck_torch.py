"""The same verdicts on the PyTorch backend: seeded bugs caught, correct Functions (kinks, float32) pass."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gradcli.check import gradcheck  # noqa: E402
from gradcli.check.backends import TorchBackend, detect  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """These tensors have a dozen elements: torch's OpenMP workers only add latency, and on a busy
    machine an op that parallelises (softmax) waits milliseconds for a descheduled worker at every
    call — it made one test here take 10 s instead of 0.1 s. Restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def leaf(array, dtype=torch.float64):
    return torch.tensor(np.asarray(array), dtype=dtype, requires_grad=True)


def normal(*shape, seed=0):
    return leaf(np.random.default_rng(seed + sum(shape)).standard_normal(shape))


class Sin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x)


class FactorTwo(Sin):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * torch.cos(x)


class SignFlip(Sin):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * torch.cos(x)


class RelativeError1e3(Sin):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x) * 1.001


class IgnoresGradOutput(Sin):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.cos(x)


class DroppedTerm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sin(x)


class LinearMissingTranspose(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w, x.T @ grad


class BiasNotReduced(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad  # torch silently sums b's gradient down; gradcli reports it


class SwappedGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * 2 * x * y, grad * y * y


class WrongForNegatives(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.1 * x)

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()


class TooFewGradients(SwappedGradients):
    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y * y


class WrongShape(Sin):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * torch.cos(x)).T


class ExpSavingOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


def saved_output_modified_in_place(x):
    return ExpSavingOutput.apply(x).mul_(2.0)


class ExpWrongBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.exp(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 3.0


def calls_forward_directly(x):
    return ExpWrongBackward.forward(None, x)


BUGS = [
    ("factor 2", FactorTwo, (normal(3, 4),), "values"),
    ("sign flip", SignFlip, (normal(3, 4),), "values"),
    ("dropped term", DroppedTerm, (normal(3, 4),), "values"),
    ("missing transpose", LinearMissingTranspose, (normal(3, 4), normal(4, 4)), "values"),
    ("swapped gradients", SwappedGradients, (normal(3, 4), normal(3, 4, seed=1)), "values"),
    ("ignores grad_output", IgnoresGradOutput, (normal(3, 4),), "cotangents"),
    ("wrong for negatives", WrongForNegatives, (normal(3, 4),), "values"),
    ("1e-3 relative error", RelativeError1e3, (normal(3, 4),), "values"),
    ("too few gradients", TooFewGradients, (normal(3, 4), normal(3, 4, seed=1)), "structure"),
    ("wrong shape", WrongShape, (normal(3, 4),), "structure"),
    ("saved output modified in place", saved_output_modified_in_place, (normal(3, 4),), "inplace"),
    ("wrapper calls forward()", calls_forward_directly, (normal(3, 4),), "backward_invoked"),
]


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("fn, inputs, failing", [b[1:] for b in BUGS], ids=[b[0] for b in BUGS])
def test_seeded_bug_is_caught_on_torch(fn, inputs, failing, mode):
    report = gradcheck(fn, inputs, mode=mode)
    assert report.backend == "torch"
    assert not report.ok
    failed = [c.name for c in report.checks if c.status == "fail"]
    assert failing in failed, (failed, report.summary())


class Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0).to(grad.dtype)


class Abs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sign(x)


class SqrtInvSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.sqrt(x) + 1 / x + 2 * y**2

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (0.5 / torch.sqrt(x) - 1 / x**2), grad * 4 * y


class SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) - grad_cos * torch.sin(x)


class SinCosWrongSecond(SinCos):
    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) + grad_cos * torch.sin(x)


def test_two_outputs():
    x = leaf(np.linspace(-3, 3, 7))
    assert gradcheck(SinCos, (x,)).ok
    report = gradcheck(SinCosWrongSecond, (x,))
    assert not report.ok
    assert report.cotangent_kinds == ["ones", "random", "random"]
    assert len(report.cotangents[1]) == 2  # one random cotangent per output


def with_zeros(rng, shape, dtype):
    x = rng.standard_normal(shape)
    x.flat[::3] = 0.0
    return leaf(x, dtype)


# (Function, inputs, seeds). Kinks get more seeds: a seed moves the ties and the cotangents' signs,
# which decide the side of the accepted interval a backward's value must fall in. The smooth cases
# pass with a wide margin (on the engine, over 40 seeds: worst error a quarter of the allowance,
# float32 softmax), so more seeds add time, not evidence.
CORRECT = {
    "relu with zeros": (Relu, lambda r, d: (with_zeros(r, (4, 5), d),), range(6)),
    "abs with zeros": (Abs, lambda r, d: (with_zeros(r, (4, 5), d),), range(6)),
    "max with ties (torch.maximum)": (torch.maximum, lambda r, d: (lambda a: (leaf(a, d), leaf(np.where(r.random(a.shape) < 0.4, a, r.standard_normal(a.shape)), d)))(r.standard_normal((3, 4))), range(6)),
    "sqrt+1/x+2y²": (SqrtInvSquare, lambda r, d: (leaf(r.uniform(0.2, 3, (3, 4)), d), leaf(r.standard_normal((3, 4)), d)), range(3)),
    "torch.softmax": (lambda x: torch.softmax(x, dim=-1), lambda r, d: (leaf(r.standard_normal((3, 5)) * 3, d),), range(3)),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("case", list(CORRECT))
def test_correct_torch_function_passes_over_seeds(case, mode, dtype):
    fn, make, seeds = CORRECT[case]
    for seed in seeds:
        report = gradcheck(fn, make(np.random.default_rng(seed), dtype), mode=mode, seed=seed)
        assert report.ok, (seed, report.summary())


def test_elements_just_off_a_kink_do_not_fail():
    # Within a step of relu's/abs's corner the reference used to extrapolate to the mean slope.
    x = leaf([3e-6, -5e-6, 1e-5, -2e-5, 0.0, 0.5])
    for fn in (Relu, Abs, torch.relu):
        report = gradcheck(fn, (x,))
        assert report.ok, report.summary()


def test_eps_on_torch():
    x = leaf([3e-6, 0.5, -0.5, 0.0])
    report = gradcheck(Relu, (x,), eps=1e-6)
    assert report.ok and report.tolerances["eps"] == 2.0**-20
    assert report.check("kinks").details["count"] == 1  # 3e-6 is resolved at the smaller step
    y = normal(3, 4)
    for fn in (SqrtInvSquare, RelativeError1e3):
        args = (leaf(np.random.default_rng(1).uniform(0.5, 2, (3, 4))), y) if fn is SqrtInvSquare else (y,)
        assert gradcheck(fn, args, eps=1e-6).ok is gradcheck(fn, args).ok is (fn is SqrtInvSquare)


def test_float32_torch_numeric_side_is_float64():
    x = leaf(np.random.default_rng(0).uniform(0.5, 2, 6), torch.float32)
    y = leaf(np.random.default_rng(1).standard_normal(6), torch.float32)
    report = gradcheck(SqrtInvSquare, (x, y))
    assert report.ok
    assert report.dtypes == ["float32", "float32"]
    assert report.numeric_dtype == "float64"


def test_torch_misses_what_gradcli_catches():
    """torch.autograd.gradcheck's defaults (eps 1e-6, atol 1e-5, rtol 1e-3) let a 1e-3 error pass."""
    x = normal(3, 4)
    assert torch.autograd.gradcheck(RelativeError1e3.apply, (x,), raise_exception=False)
    assert not gradcheck(RelativeError1e3, (x,))


def test_torch_is_detected_from_the_inputs_and_imported_lazily():
    assert isinstance(detect(torch.sin, (normal(2),)), TorchBackend)
    assert detect(lambda x: x, (np.zeros(2),)).name == "gradcli"


def test_second_order_on_torch():
    x = leaf(np.random.default_rng(2).uniform(0.5, 2, 5))
    y = leaf(np.random.default_rng(3).standard_normal(5))
    report = gradcheck(SqrtInvSquare, (x, y), second_order=True)
    assert report.check("second_order").status == "pass", report.check("second_order").message


def test_a_torch_dtype_argument_is_not_taken_for_a_complex_tensor():
    # found on linear_operator's Diagonalization and xitorch's _Quadrature (a dtype argument):
    # "TypeError: 'bool' object is not callable" in complex_view, an internal error
    import torch

    class CastSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, dtype):
            ctx.save_for_backward(x)
            return (x * x).to(dtype)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g, None

    x = torch.linspace(-1, 1, 6, dtype=torch.float64, requires_grad=True)
    report = gradcheck(CastSquare, (x, torch.float64))
    assert report.status == "pass", [(c.name, c.status, c.message) for c in report.checks]
