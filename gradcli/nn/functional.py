"""torch.nn.functional's common helpers, each a composition of gradcli ops (so each is
differentiable, twice, wherever its parts are)."""
import math

import numpy as np

import gradcli.autograd  # noqa: F401  (the engine, before the ops)
from gradcli.autograd import ops as _ops
from gradcli.autograd.ops.more import log_softmax, softmax  # noqa: F401
from gradcli.autograd.tensor import Tensor

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu6(input, inplace=False):
    return input.clamp(0.0, 6.0)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _ops.where(input > 0, input, input * negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _ops.where(input > 0, input, (input.clamp(max=0.0).exp() - 1) * alpha)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        inner = (input + input ** 3 * 0.044715) * _SQRT_2_OVER_PI
        return input * 0.5 * (inner.tanh() + 1)
    return input * 0.5 * ((input / _SQRT_2).erf() + 1)


def silu(input, inplace=False):
    return input * input.sigmoid()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def logsigmoid(input):
    return -(-input).softplus()


def softplus(input, beta=1.0, threshold=20.0):
    """(1/beta) log(1 + exp(beta x)), linear where beta x > threshold (as torch)."""
    scaled = input * beta
    smooth = scaled.softplus() / beta if beta != 1 else input.softplus()
    return _ops.where(scaled > threshold, input, smooth)


def linear(input, weight, bias=None):
    out = input @ weight.t()
    return out if bias is None else out + bias


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input, target, reduction="mean"):
    return _reduce((input - target) ** 2, reduction)


def l1_loss(input, target, reduction="mean"):
    return _reduce((input - target).abs(), reduction)


def nll_loss(input, target, reduction="mean"):
    """``input``: log-probabilities (N, C); ``target``: class indices (N,)."""
    index = np.asarray(target.data if isinstance(target, Tensor) else target).reshape(-1, 1)
    picked = -_ops.gather(input, 1, index).reshape(-1)
    return _reduce(picked, reduction)


def cross_entropy(input, target, reduction="mean"):
    """``input``: logits (N, C); ``target``: class indices (N,) or class probabilities (N, C)."""
    logp = log_softmax(input, 1)
    if isinstance(target, Tensor) and target.data.dtype.kind == "f":
        return _reduce(-(logp * target).sum(dim=1), reduction)
    return nll_loss(logp, target, reduction)


def binary_cross_entropy(input, target, reduction="mean"):
    # torch clamps the logs at -100 so that a saturated probability gives a finite loss
    log_p = input.log().clamp(min=-100.0)
    log_1mp = (1 - input).log().clamp(min=-100.0)
    return _reduce(-(target * log_p + (1 - target) * log_1mp), reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):
    # log(1 + exp(-|x|)) keeps exp from overflowing: loss = max(x, 0) - x t + log(1 + exp(-|x|))
    loss = input.clamp(min=0.0) - input * target + (-input.abs()).exp().log1p()
    return _reduce(loss, reduction)


def one_hot(tensor, num_classes=-1):
    index = np.asarray(tensor.data)
    n = int(index.max()) + 1 if num_classes == -1 else num_classes
    return Tensor((index[..., None] == np.arange(n)).astype(np.int64))


def normalize(input, p=2.0, dim=1, eps=1e-12):
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return input
    from gradcli.autograd import creation
    keep = creation._rng().random(input.data.shape) >= p
    return input * Tensor(keep.astype(input.data.dtype) / (1 - p))
