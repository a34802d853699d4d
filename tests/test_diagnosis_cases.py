"""The catalogue of seeded bugs, pattern-free failures and correct Functions for the diagnosis.

Every Function is written once against a ``Backend`` (gradcli's engine or torch) so each case
runs on both. ``tests/test_diagnosis.py`` asserts the diagnosis of every case and
``bench/diagnosis_accuracy.py`` measures the accuracy over the same catalogue. The tests in this
file check the catalogue itself: a seeded bug must really fail gradcheck and a correct Function
must really pass it, or the diagnosis tests would prove nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pytest

RNG = np.random.default_rng(20260811)
X = RNG.standard_normal((3, 4))  # both signs (8 negative elements): x < 0 regions
Y = RNG.standard_normal((3, 4))
BIAS = RNG.standard_normal(4)
SQUARE = RNG.standard_normal((3, 3))
SQUARE2 = RNG.standard_normal((3, 3))
WIDE = RNG.standard_normal((2, 3))
TALL = RNG.standard_normal((3, 4))
POSITIVE = RNG.uniform(0.5, 2.0, (3, 4))
AROUND_ONE = RNG.uniform(0.2, 1.8, (3, 4))
WITH_ZEROS = np.array([[-1.5, 0.0, 0.7], [0.0, 2.0, -0.3]])


class Backend:
    """``ns`` is the torch-like module (gradcli or torch), ``Function`` its autograd Function."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch

            self.ns, self.Function = torch, torch.autograd.Function
        else:
            import gradcli
            from gradcli.autograd import Function

            self.ns, self.Function = gradcli, Function

    def tensor(self, array, dtype="float64"):
        return self.ns.tensor(np.array(array), dtype=getattr(self.ns, dtype), requires_grad=True)


BACKENDS = ["gradcli", "torch"]


def backend(name) -> Backend:
    """The backend for a test; torch tests skip when torch is not installed."""
    if name == "torch":
        pytest.importorskip("torch")
    return Backend(name)


@dataclass
class Case:
    name: str
    build: Callable  # Backend -> (fn, inputs)
    kind: Optional[str]  # expected finding kind; None: correct Function (no finding expected)
    input: Optional[int] = None  # input the finding is about (None: the whole Function)
    params: dict = field(default_factory=dict)  # expected params (floats compared to 1e-6 relative)
    gradcheck_fails: bool = True  # kink: gradcheck accepts it, only a bare report fails there
    # gradcheck options the case needs: an unreduced gradient autograd sums down (torch's sum_to) is only a
    # structure warning by default, a failure with strict_shapes=True
    gradcheck_options: dict = field(default_factory=dict)


# ----- seeded bugs ---------------------------------------------------------------------------------
def sin_doubled(B):
    class SinDoubled(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 2 * x.cos()

    return SinDoubled.apply, (B.tensor(X),)


def square_halved(B):
    class SquareHalved(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x

    return SquareHalved.apply, (B.tensor(X),)


def exp_off_by_1e3(B):
    class ExpSlightlyOff(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * y * 1.001

    return ExpSlightlyOff.apply, (B.tensor(X),)


def bias_mean(B):
    class BiasMean(B.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output.mean(0)

    return BiasMean.apply, (B.tensor(X), B.tensor(BIAS))


def cos_sign(B):
    class CosSign(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.cos()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.sin()

    return CosSign.apply, (B.tensor(X),)


def exp_ignores(B):
    class ExpIgnoresGrad(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return x.exp()

    return ExpIgnoresGrad.apply, (B.tensor(X),)


def sum_of_squares_ignores(B):
    class SumSquaresIgnoresGrad(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x).sum()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2 * x

    return SumSquaresIgnoresGrad.apply, (B.tensor(X),)


def matmul_weight_transposed(B):
    class MatMulWeightT(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            return grad_output @ w.T, grad_output.T @ x

    return MatMulWeightT.apply, (B.tensor(SQUARE), B.tensor(SQUARE2))


def matmul_weight_wrong_shape(B):
    class MatMulWeightShape(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            return grad_output @ w.T, grad_output.T @ x

    return MatMulWeightShape.apply, (B.tensor(WIDE), B.tensor(TALL))


def matmul_missing_transpose(B):
    class MatMulMissingT(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            return grad_output @ w, x.T @ grad_output

    return MatMulMissingT.apply, (B.tensor(SQUARE), B.tensor(SQUARE2))


def product_swapped(B):
    class ProductSwapped(B.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y.sin()

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * x * y.cos(), grad_output * y.sin()

    return ProductSwapped.apply, (B.tensor(X), B.tensor(Y))


def bias_not_reduced(B):
    class BiasNotReduced(B.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    return BiasNotReduced.apply, (B.tensor(X), B.tensor(BIAS))


def bias_first_row(B):
    class BiasFirstRow(B.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output[0]

    return BiasFirstRow.apply, (B.tensor(X), B.tensor(BIAS))


def row_bias_first_row(B):
    class RowBiasFirstRow(B.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output[0]  # shape (4,) for a (1, 4) bias: the engine refuses it

    return RowBiasFirstRow.apply, (B.tensor(X), B.tensor(BIAS.reshape(1, 4)))


def product_too_few(B):
    class ProductOneGradient(B.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * y

    return ProductOneGradient.apply, (B.tensor(X), B.tensor(Y))


def leaky_relu_slope_lost(B):
    ns = B.ns

    class LeakyReluSlopeLost(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return ns.where(x > 0, x, 0.1 * x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output

    return LeakyReluSlopeLost.apply, (B.tensor(X),)


def diagonal_doubled(B):
    ns = B.ns

    class DiagonalDoubled(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x + x * ns.eye(x.shape[0], dtype=x.dtype)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    return DiagonalDoubled.apply, (B.tensor(SQUARE),)


def first_row_tripled(B):
    ns = B.ns

    class FirstRowTripled(B.Function):
        @staticmethod
        def forward(ctx, x):
            weight = ns.ones(x.shape, dtype=x.dtype)
            weight[0] = 3.0
            return x * weight

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    return FirstRowTripled.apply, (B.tensor(X),)


def hinge_above_one(B):
    ns = B.ns

    class SquareAboveOne(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return ns.where(x > 1, x * x, x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * ns.ones_like(x)

    return SquareAboveOne.apply, (B.tensor(AROUND_ONE),)


def linear_term_dropped(B):
    class SquarePlusX(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x + x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 2 * x

    return SquarePlusX.apply, (B.tensor(X),)


def product_rule_dropped(B):
    class XSinX(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x * x.cos()

    return XSinX.apply, (B.tensor(X),)


def exp_saves_input(B):
    class ExpSavesInput(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x

    return ExpSavesInput.apply, (B.tensor(X),)


def product_none(B):
    class ProductNoneForY(B.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * y, None

    return ProductNoneForY.apply, (B.tensor(X), B.tensor(Y))


def sin_zeros(B):
    ns = B.ns

    class SinZeroGrad(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            return ns.zeros_like(grad_output)

    return SinZeroGrad.apply, (B.tensor(X),)


def sin_noisy(B):
    ns = B.ns

    class SinNoisy(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.cos() * (1 + 1e-3 * ns.rand_like(x))

    return SinNoisy.apply, (B.tensor(X),)


def sin_modifies_input(B):
    class SinShiftsInput(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            y = x.sin()
            x.add_(1.0)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.cos()

    return SinShiftsInput.apply, (B.tensor(X),)


def exp_output_modified(B):
    class ExpSavesOutput(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * y

    def fn(x):
        return ExpSavesOutput.apply(x).mul_(2.0)  # modifies the tensor backward will read

    return fn, (B.tensor(X),)


def abs_at_zero(B):
    class AbsSignAtZero(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.abs()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * ((x >= 0) * 2.0 - 1.0)

    return AbsSignAtZero.apply, (B.tensor(WITH_ZEROS),)


def tanh_saves_input(B):
    class TanhSavesInput(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.tanh()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (1 - x * x)

    return TanhSavesInput.apply, (B.tensor(X),)


# ----- failures without a simple pattern ---------------------------------------------------------
def softplus_with_tanh(B):
    class SoftplusWithTanh(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (1 + x.exp()).log()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.tanh()

    return SoftplusWithTanh.apply, (B.tensor(X),)


def sqrt_wrong_power(B):
    class SqrtWrongPower(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sqrt()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            # not 0.5 / x: that is 0.5 / output with x saved in its place, a wrong_variable
            return grad_output * 0.5 / x ** 0.75

    return SqrtWrongPower.apply, (B.tensor(POSITIVE),)


def sin_of_square_chain_rule(B):
    class SinOfSquare(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x).sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.cos() * 2 * x

    return SinOfSquare.apply, (B.tensor(X),)


def log_shifted(B):
    class LogShifted(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.log()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output / (x + 1)

    return LogShifted.apply, (B.tensor(POSITIVE),)


def sin_phase(B):
    class SinPhase(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (x + 0.3).cos()

    return SinPhase.apply, (B.tensor(X),)


# ----- correct Functions ------------------------------------------------------------------------
def sin_ok(B):
    class Sin(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.cos()

    return Sin.apply, (B.tensor(X),)


def product_ok(B):
    class Product(B.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * y, grad_output * x

    return Product.apply, (B.tensor(X), B.tensor(Y))


def matmul_ok(B):
    class MatMul(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            return grad_output @ w.T, x.T @ grad_output

    return MatMul.apply, (B.tensor(WIDE), B.tensor(TALL))


def bias_ok(B):
    class Bias(B.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output.sum(0)

    return Bias.apply, (B.tensor(X), B.tensor(BIAS))


def relu_ok(B):
    class Relu(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.relu()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (x > 0)

    return Relu.apply, (B.tensor(WITH_ZEROS),)


def maximum_ties_ok(B):
    ns = B.ns

    class Maximum(B.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return ns.maximum(x, y)

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            share = (x > y) + 0.5 * (x == y)
            return grad_output * share, grad_output * (1 - share)

    y = X.copy()
    y[0, :2] = X[0, :2]  # ties
    y[1:] = Y[1:]
    return Maximum.apply, (B.tensor(X), B.tensor(y))


def exp_float32_ok(B):
    class Exp(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * y

    return Exp.apply, (B.tensor(X, "float32"),)


def sincos_two_outputs_ok(B):
    class SinCos(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            (x,) = ctx.saved_tensors
            return grad_sin * x.cos() - grad_cos * x.sin()

    return SinCos.apply, (B.tensor(X),)


def tanh_ok(B):
    class Tanh(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.tanh()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * (1 - y * y)

    return Tanh.apply, (B.tensor(X),)


def sum_of_squares_ok(B):
    class SumSquares(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x).sum()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2 * x * grad_output

    return SumSquares.apply, (B.tensor(X),)



def gelu_rounded_constant(B):
    """tanh-GELU whose backward uses sqrt(2/pi) rounded to 5 digits: right to ~1e-5, no better --
    a precision finding, not a bug pattern."""
    import math

    class GeluRoundedConstant(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)).tanh())

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            k = 0.79788  # sqrt(2/pi), rounded
            t = (k * (x + 0.044715 * x ** 3)).tanh()
            return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x ** 2))

    return GeluRoundedConstant.apply, (B.tensor(X),)


# ----- seeded bugs of the structural and formula-level kinds (issue 17) and surrogates (14.4) --------
PERMUTATION = [2, 0, 1, 5, 3, 4]  # a sort's permutation of 6 elements (not an involution)
VECTOR = RNG.standard_normal(6)
EMBEDDING = RNG.standard_normal((3, 4))
TOKENS = [0, 2, 0, 1, 2]  # rows 0 and 2 (8 elements of the weight) are looked up twice


def attention_missing_scale(B):
    """Attention with d = 4 whose backward forgets the 1/√d = 1/2 for q and k: exactly 2× too large."""
    class AttentionNoScale(B.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            s = (q @ k.transpose(0, 1)) * 0.5
            e = (s - s.max(1, keepdim=True)[0]).exp()
            p = e / e.sum(1, keepdim=True)
            ctx.save_for_backward(q, k, v, p)
            return p @ v

        @staticmethod
        def backward(ctx, grad_output):
            q, k, v, p = ctx.saved_tensors
            dp = grad_output @ v.transpose(0, 1)
            ds = p * (dp - (dp * p).sum(1, keepdim=True))
            return ds @ k, ds.transpose(0, 1) @ q, p.transpose(0, 1) @ grad_output

    return AttentionNoScale.apply, (B.tensor(X), B.tensor(Y), B.tensor(TALL))


def sort_gathers(B):
    """A sort (a fixed permutation here) whose backward gathers with the permutation instead of scattering."""
    ns = B.ns

    class SortGather(B.Function):
        @staticmethod
        def forward(ctx, x):
            index = ns.tensor(np.array(PERMUTATION))
            ctx.save_for_backward(index)
            return x[index]

        @staticmethod
        def backward(ctx, grad_output):
            (index,) = ctx.saved_tensors
            return grad_output[index]

    return SortGather.apply, (B.tensor(VECTOR),)


def sqrt_plus_inverse_sign(B):
    """√x + 1/x whose backward writes +1/x² where −1/x² is right."""
    class SqrtPlusInverse(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sqrt() + 1 / x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (1 / (2 * x.sqrt()) + 1 / x ** 2)

    return SqrtPlusInverse.apply, (B.tensor(POSITIVE),)


def softmax_wrong_dim(B):
    class SoftmaxWrongDim(B.Function):
        @staticmethod
        def forward(ctx, x):
            e = (x - x.max(1, keepdim=True)[0]).exp()
            y = e / e.sum(1, keepdim=True)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return y * (grad_output - (grad_output * y).sum(0, keepdim=True))

    return SoftmaxWrongDim.apply, (B.tensor(X),)


def centering_wrong_dim(B):
    class CenterWrongDim(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x - x.mean(1, keepdim=True)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output - grad_output.mean(0, keepdim=True)

    return CenterWrongDim.apply, (B.tensor(X),)


def batchnorm_dgamma_uses_x(B):
    """Batch norm over dim 0 whose dgamma uses x where x̂ is needed."""
    class BatchNormDgammaX(B.Function):
        @staticmethod
        def forward(ctx, x, gamma, beta):
            mean = x.mean(0, keepdim=True)
            std = ((x - mean) ** 2).mean(0, keepdim=True).add(1e-5).sqrt()
            xhat = (x - mean) / std
            ctx.save_for_backward(x, xhat, gamma, std)
            return gamma * xhat + beta

        @staticmethod
        def backward(ctx, grad_output):
            x, xhat, gamma, std = ctx.saved_tensors
            g = grad_output * gamma
            dx = (g - g.mean(0, keepdim=True) - xhat * (g * xhat).mean(0, keepdim=True)) / std
            return dx, (grad_output * x).sum(0), grad_output.sum(0)

    return BatchNormDgammaX.apply, (B.tensor(X), B.tensor(BIAS), B.tensor(RNG.standard_normal(4)))


def embedding_overwrites(B):
    ns = B.ns

    class EmbeddingOverwrite(B.Function):
        @staticmethod
        def forward(ctx, weight, tokens):
            ctx.save_for_backward(tokens)
            ctx.rows = weight.shape[0]
            return weight[tokens]

        @staticmethod
        def backward(ctx, grad_output):
            (tokens,) = ctx.saved_tensors
            grad_weight = ns.zeros((ctx.rows, grad_output.shape[1]), dtype=grad_output.dtype)
            grad_weight[tokens] = grad_output  # duplicates overwrite each other
            return grad_weight, None

    return EmbeddingOverwrite.apply, (B.tensor(EMBEDDING), B.ns.tensor(np.array(TOKENS)))


def cumsum_missing_flips(B):
    class CumsumNoFlip(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x.cumsum(1)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.cumsum(1)  # needs grad_output.flip(1).cumsum(1).flip(1)

    return CumsumNoFlip.apply, (B.tensor(X),)


def transpose_missing_in_backward(B):
    """Forward returns (x·w)ᵀ; backward reshapes grad_output back instead of transposing it."""
    class ScaledTranspose(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return (x * w).transpose(0, 1)

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            grad_x = grad_output.reshape(3, 4) * w
            return grad_x, (grad_output.transpose(0, 1) * x).sum(0)

    return ScaledTranspose.apply, (B.tensor(X), B.tensor(BIAS))


def exp_minus_one_in_place(B):
    class ExpM1InPlace(B.Function):
        @staticmethod
        def forward(ctx, x):
            e = x.exp()
            ctx.save_for_backward(e)
            return e.sub_(1)

        @staticmethod
        def backward(ctx, grad_output):
            (e,) = ctx.saved_tensors
            return grad_output * e

    return ExpM1InPlace.apply, (B.tensor(X),)


def shifted_after_saving(B):
    class ShiftAfterSave(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(x, y)
            y.add_(1.0)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * y  # y was saved as exp(x), then shifted in place

    return ShiftAfterSave.apply, (B.tensor(POSITIVE),)


def round_straight_through(B):
    class RoundSTE(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    return RoundSTE.apply, (B.tensor(X),)


def sign_clipped_straight_through(B):
    class SignClippedSTE(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sign()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (x.abs() <= 1)

    return SignClippedSTE.apply, (B.tensor(X),)


def gradient_reversal_layer(B):
    class GradReverse(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            return -0.5 * grad_output

    return GradReverse.apply, (B.tensor(X),)


def spike_sigmoid_surrogate(B):
    class SpikeSurrogate(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x > 0).double()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            s = (4 * x).sigmoid()
            return grad_output * 4 * s * (1 - s)

    return SpikeSurrogate.apply, (B.tensor(X),)


def layernorm_missing_term(B):
    """LayerNorm over dim 1 whose backward misses −x̂·mean(g·x̂)/σ."""
    class LayerNormMissingTerm(B.Function):
        @staticmethod
        def forward(ctx, x):
            mean = x.mean(1, keepdim=True)
            std = ((x - mean) ** 2).mean(1, keepdim=True).add(1e-5).sqrt()
            xhat = (x - mean) / std
            ctx.save_for_backward(xhat, std)
            return xhat

        @staticmethod
        def backward(ctx, grad_output):
            xhat, std = ctx.saved_tensors
            return (grad_output - grad_output.mean(1, keepdim=True)) / std

    return LayerNormMissingTerm.apply, (B.tensor(X),)


def logsumexp_wrong_dim(B):
    """logsumexp over dim 1 whose backward normalizes exp(x) over dim 0: A/N = one factor per row
    times one per column."""
    class LogSumExpWrongDim(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp().sum(1).log()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            e = x.exp()
            return grad_output.reshape(-1, 1) * e / e.sum(0, keepdim=True)

    return LogSumExpWrongDim.apply, (B.tensor(X),)


def rmsnorm_missing_term(B):
    class RMSNormMissingTerm(B.Function):
        @staticmethod
        def forward(ctx, x):
            rms = (x * x).mean(1, keepdim=True).add(1e-6).sqrt()
            ctx.save_for_backward(rms)
            return x / rms

        @staticmethod
        def backward(ctx, grad_output):
            (rms,) = ctx.saved_tensors
            return grad_output / rms  # misses −y·mean(grad_output·y)/rms

    return RMSNormMissingTerm.apply, (B.tensor(X),)


def spike_triangle_surrogate(B):
    """A spike whose surrogate derivative is the triangle max(0, 1 − |x|): zero away from the step."""
    class SpikeTriangle(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x > 0).double()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * (1 - x.abs()).clamp(min=0)

    return SpikeTriangle.apply, (B.tensor(X),)


# ----- correct Functions of the same shapes (the structural rules must stay silent) -----------------
def softmax_ok(B):
    class Softmax(B.Function):
        @staticmethod
        def forward(ctx, x):
            e = (x - x.max(1, keepdim=True)[0]).exp()
            y = e / e.sum(1, keepdim=True)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return y * (grad_output - (grad_output * y).sum(1, keepdim=True))

    return Softmax.apply, (B.tensor(X),)


def cumsum_ok(B):
    class Cumsum(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x.cumsum(1)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.flip(1).cumsum(1).flip(1)

    return Cumsum.apply, (B.tensor(X),)


def sort_ok(B):
    ns = B.ns

    class SortScatter(B.Function):
        @staticmethod
        def forward(ctx, x):
            index = ns.tensor(np.array(PERMUTATION))
            ctx.save_for_backward(index)
            return x[index]

        @staticmethod
        def backward(ctx, grad_output):
            (index,) = ctx.saved_tensors
            grad = ns.zeros_like(grad_output)
            grad[index] = grad_output
            return grad

    return SortScatter.apply, (B.tensor(VECTOR),)


SEEDED = [
    Case("scale: factor 2", sin_doubled, "scale", 0, {"factor": 2.0}),
    Case("scale: factor 1/2", square_halved, "scale", 0, {"factor": 0.5}),
    Case("scale: 1e-3 relative error", exp_off_by_1e3, "scale", 0, {"factor": 1.001}),
    Case("scale: mean instead of sum", bias_mean, "scale", 1, {"factor": 1 / 3}),
    Case("sign flipped", cos_sign, "sign", 0, {"factor": -1.0}),
    Case("ignores grad_output", exp_ignores, "ignores_grad_output", 0, {"ones_ok": True}),
    Case("ignores a scalar grad_output", sum_of_squares_ignores, "ignores_grad_output", 0, {"ones_ok": True}),
    Case("transposed (square)", matmul_weight_transposed, "transposed", 1, {"permutation": [1, 0]}),
    Case("transposed (wrong shape)", matmul_weight_wrong_shape, "transposed", 1, {"permutation": [1, 0]}),
    Case("missing transpose of an operand", matmul_missing_transpose, "transposed", 0, {"operand": "w"}),
    Case("swapped", product_swapped, "swapped", 0, {"other_input": 1}),
    Case("not reduced (shape)", bias_not_reduced, "not_reduced", 1, {"dims": [0]},
         gradcheck_options={"strict_shapes": True}),
    Case("not reduced (one slice)", bias_first_row, "not_reduced", 1, {"dims": [0], "taken": "first"}),
    Case("not reduced (slice, refused shape)", row_bias_first_row, "not_reduced", 1, {"dims": [0], "taken": "first"}),
    Case("region: x < 0", leaky_relu_slope_lost, "region", 0,
         {"description": "x < 0", "fraction": float(np.mean(X < 0))}),
    Case("region: the diagonal", diagonal_doubled, "region", 0, {"description": "the diagonal", "fraction": 1 / 3}),
    Case("region: the first row", first_row_tripled, "region", 0, {"description": "the first row", "fraction": 1 / 3}),
    Case("region: x > 1", hinge_above_one, "region", 0,
         {"description": "x > 1", "fraction": float(np.mean(AROUND_ONE > 1))}),
    Case("missing term: constant", linear_term_dropped, "missing_term", 0, {"term": "1", "coefficient": 1.0}),
    Case("missing term: product rule", product_rule_dropped, "missing_term", 0, {"term": "sin(x)"}),
    Case("wrong saved tensor: exp", exp_saves_input, "wrong_variable", 0, {"used": "x", "needed": "output"}),
    Case("wrong saved tensor: tanh", tanh_saves_input, "wrong_variable", 0, {"used": "x", "needed": "output"}),
    Case("zero: None", product_none, "zero", 1, {"returned": "None"}),
    Case("zero: zeros", sin_zeros, "zero", 0, {"returned": "zeros"}),
    Case("zero: too few gradients", product_too_few, "zero", 1, {"returned": "missing", "count": 1}),
    Case("nondeterministic", sin_noisy, "nondeterministic", None),
    Case("inplace: forward modifies its input", sin_modifies_input, "inplace", None),
    Case("inplace: saved output modified", exp_output_modified, "inplace", None),
    Case("kink: abs at 0", abs_at_zero, "kink", 0, {"count": 2}, gradcheck_fails=False),
    Case("precision: a constant rounded to 5 digits", gelu_rounded_constant, "precision", 0, {"dtype": "float32"}),
    # issue 17: a constant factor is simpler than a cotangent story; structural and formula-level kinds
    Case("scale: attention missing 1/sqrt(d)", attention_missing_scale, "scale", 0, {"factor": 2.0}),
    Case("transposed Jacobian: sort gathers instead of scattering", sort_gathers, "transposed", 0,
         {"jacobian": True}),
    Case("term_sign: +1/x² where -1/x² is right", sqrt_plus_inverse_sign, "term_sign", 0,
         {"term": "grad_output / (x ** 2)"}),
    Case("wrong_axis: softmax summed over dim 0", softmax_wrong_dim, "wrong_axis", 0,
         {"dims": [0], "expected_dims": [1]}),
    Case("wrong_axis: mean over dim 0", centering_wrong_dim, "wrong_axis", 0, {"dims": [0], "expected_dims": [1]}),
    Case("wrong_variable: batch-norm dgamma uses x", batchnorm_dgamma_uses_x, "wrong_variable", 1, {"used": "x"}),
    Case("not_accumulated: embedding overwrites duplicates", embedding_overwrites, "not_accumulated", 0,
         {"kept": "last", "duplicates": 8}),
    Case("missing_flip: cumsum backward without flips", cumsum_missing_flips, "missing_flip", 0,
         {"dim": 1, "missing": "both"}),
    Case("missing_reshape: reshape where a transpose is needed", transpose_missing_in_backward, "missing_reshape",
         0, {"side": "grad_output"}),
    Case("inplace: saved exp changed by sub_", exp_minus_one_in_place, "inplace", None, {"after_save": True}),
    Case("inplace: saved output shifted by add_", shifted_after_saving, "inplace", None, {"after_save": True}),
    Case("missing term: LayerNorm's reduction term", layernorm_missing_term, "missing_term", 0,
         {"variant": "reduction", "dim": 1, "coefficient": -1.0}),
    Case("wrong_axis: logsumexp normalized over dim 0", logsumexp_wrong_dim, "wrong_axis", 0,
         {"dims": [0], "expected_dims": [1], "call": "sum"}),
    Case("missing term: RMSNorm's reduction term", rmsnorm_missing_term, "missing_term", 0,
         {"variant": "reduction", "dim": 1, "coefficient": -1.0}),
    # issue 14.4: undeclared surrogates still fail, and are named
    Case("straight_through: round", round_straight_through, "straight_through", 0, {"clipped": None}),
    Case("straight_through: clipped sign", sign_clipped_straight_through, "straight_through", 0, {"clipped": 1.0}),
    Case("gradient_reversal: lambda 0.5", gradient_reversal_layer, "gradient_reversal", 0, {"lambda": 0.5}),
    Case("smooth_surrogate: sigmoid' for a spike", spike_sigmoid_surrogate, "smooth_surrogate", 0),
    Case("smooth_surrogate: a triangle for a spike", spike_triangle_surrogate, "smooth_surrogate", 0),
]

NO_PATTERN = [
    Case("softplus with tanh's derivative", softplus_with_tanh, "none", 0),
    Case("sqrt with the wrong power", sqrt_wrong_power, "none", 0),
    Case("chain rule misapplied", sin_of_square_chain_rule, "none", 0),
    Case("log with a shifted denominator", log_shifted, "none", 0),
    Case("sin with a phase error", sin_phase, "none", 0),
]

CORRECT = [
    Case("sin", sin_ok, None, gradcheck_fails=False),
    Case("product", product_ok, None, gradcheck_fails=False),
    Case("matmul", matmul_ok, None, gradcheck_fails=False),
    Case("bias", bias_ok, None, gradcheck_fails=False),
    Case("relu at 0", relu_ok, None, gradcheck_fails=False),
    Case("maximum with ties", maximum_ties_ok, None, gradcheck_fails=False),
    Case("exp in float32", exp_float32_ok, None, gradcheck_fails=False),
    Case("two outputs", sincos_two_outputs_ok, None, gradcheck_fails=False),
    Case("tanh", tanh_ok, None, gradcheck_fails=False),
    Case("sum of squares", sum_of_squares_ok, None, gradcheck_fails=False),
    Case("softmax", softmax_ok, None, gradcheck_fails=False),
    Case("cumsum", cumsum_ok, None, gradcheck_fails=False),
    Case("sort (scatter)", sort_ok, None, gradcheck_fails=False),
]


def params_match(expected: dict, got: dict) -> bool:
    for key, want in expected.items():
        have = got.get(key)
        if isinstance(want, float):
            if not isinstance(have, (int, float)) or abs(have - want) > 1e-6 * max(1.0, abs(want)):
                return False
        elif have != want:
            return False
    return True


# ----- the catalogue is what it claims to be ------------------------------------------------------
@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("case", SEEDED + NO_PATTERN + CORRECT, ids=lambda c: c.name)
def test_gradcheck_verdict_matches_the_catalogue(case, backend_name):
    from gradcli.check.gradcheck import gradcheck

    fn, inputs = case.build(backend(backend_name))
    report = gradcheck(fn, inputs, **case.gradcheck_options)
    assert report.ok is not case.gradcheck_fails, report.summary()
