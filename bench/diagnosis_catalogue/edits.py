"""Bugs one edit away from right (issue 17, third pass: the rules' own tuning corpus): a dim, a
transpose, one tensor occurrence, a permute before a reshape, a dropped output, a cotangent
scaled by the wrong tensor, a reduction term over a second output, a per-row ignore target."""
import torch
from torch.autograd import Function

DOUBLE = torch.float64


def _seeded(seed, *shapes):
    torch.manual_seed(seed)
    return tuple(torch.randn(*s, dtype=DOUBLE) for s in shapes)


class SoftmaxPoolWrongDim(Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "softmax pooling; the softmax backward sums over dim 0"}

    @staticmethod
    def forward(ctx, x, v):
        p = torch.softmax(x, dim=1)
        ctx.save_for_backward(p, v)
        return (p * v).sum(1)

    @staticmethod
    def backward(ctx, g):
        p, v = ctx.saved_tensors
        gv = g[:, None] * v
        dx = p * (gv - (gv * p).sum(0, keepdim=True))  # BUG
        return dx, g[:, None] * p

    @staticmethod
    def example_inputs():
        return _seeded(101, (4, 5), (4, 5))


class SoftmaxPool(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, v):
        p = torch.softmax(x, dim=1)
        ctx.save_for_backward(p, v)
        return (p * v).sum(1)

    @staticmethod
    def backward(ctx, g):
        p, v = ctx.saved_tensors
        gv = g[:, None] * v
        return p * (gv - (gv * p).sum(1, keepdim=True)), g[:, None] * p

    @staticmethod
    def example_inputs():
        return _seeded(101, (4, 5), (4, 5))


class TanhMatmulOperandNotTransposed(Function):
    bug = {"kind": "transposed", "input": "a", "note": "tanh(a @ b): dA = h @ b where h @ b.T is needed"}

    @staticmethod
    def forward(ctx, a, b):
        y = torch.tanh(a @ b)
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        h = g * (1 - y * y)
        da = h @ b  # BUG
        return da, a.t() @ h

    @staticmethod
    def example_inputs():
        return _seeded(102, (3, 3), (3, 3))


class WeightedLogisticUsesLogits(Function):
    bug = {"kind": "wrong_variable", "input": "z", "note": "w·(z − t)/N where w·(sigmoid(z) − t)/N is needed"}

    @staticmethod
    def forward(ctx, z, w, t):
        ctx.save_for_backward(z, w, t)
        return (w * (torch.nn.functional.softplus(z) - t * z)).mean()

    @staticmethod
    def backward(ctx, g):
        z, w, t = ctx.saved_tensors
        n = z.numel()
        dz = w * (z - t) / n  # BUG
        return dz * g, g * (torch.nn.functional.softplus(z) - t * z) / n, -g * w * z / n

    @staticmethod
    def example_inputs():
        torch.manual_seed(103)
        return (torch.randn(3, 4, dtype=DOUBLE), torch.rand(3, 4, dtype=DOUBLE) + 0.5,
                torch.rand(3, 4, dtype=DOUBLE))


class TanhSigmoidPairDropsSecond(Function):
    bug = {"kind": "missing_term", "input": "x", "also": ["ignores_grad_output"],
           "note": "(tanh x, sigmoid x): backward forgets grad_s · s(1 − s)"}

    @staticmethod
    def forward(ctx, x):
        t, s = torch.tanh(x), torch.sigmoid(x)
        ctx.save_for_backward(t, s)
        return t, s

    @staticmethod
    def backward(ctx, grad_t, grad_s):
        t, s = ctx.saved_tensors
        return grad_t * (1 - t * t)  # BUG

    @staticmethod
    def example_inputs():
        return _seeded(104, (3, 4))


class TanhSigmoidPair(Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        t, s = torch.tanh(x), torch.sigmoid(x)
        ctx.save_for_backward(t, s)
        return t, s

    @staticmethod
    def backward(ctx, grad_t, grad_s):
        t, s = ctx.saved_tensors
        return grad_t * (1 - t * t) + grad_s * s * (1 - s)

    @staticmethod
    def example_inputs():
        return _seeded(104, (3, 4))


def _reverse_cumsum(z):
    return torch.flip(torch.cumsum(torch.flip(z, [1]), 1), [1])


class ExpCumsumUsesInput(Function):
    bug = {"kind": "wrong_variable", "input": "x", "note": "y = exp(cumsum x): reverse cumsum of g·x, g·y needed"}

    @staticmethod
    def forward(ctx, x):
        y = torch.exp(torch.cumsum(x, 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(g * x)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(105)
        return (0.3 * torch.randn(3, 4, dtype=DOUBLE),)


class SumAndCentredOverRowsMissingTerm(Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "(x.sum(0), x − mean_0 x): the centred output's −mean_0(grad) term is missing"}

    @staticmethod
    def forward(ctx, x):
        return x.sum(0, keepdim=True), x - x.mean(0, keepdim=True)

    @staticmethod
    def backward(ctx, grad_sum, grad_centred):
        return grad_sum + grad_centred  # BUG

    @staticmethod
    def example_inputs():
        return _seeded(106, (4, 3))


class GatherColumnsScatterWrongDim(Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "x.gather(1, idx): backward scatter_adds along dim 0"}

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        dx = torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(0, idx, g)  # BUG
        return dx, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(107)
        return (torch.randn(4, 4, dtype=DOUBLE), torch.tensor([[0, 3], [1, 1], [2, 0], [3, 2]]))


class GatherColumns(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(1, idx, g), None

    @staticmethod
    def example_inputs():
        torch.manual_seed(107)
        return (torch.randn(4, 4, dtype=DOUBLE), torch.tensor([[0, 3], [1, 1], [2, 0], [3, 2]]))


def _windows(x, k):
    """(N, L_out, C·k) patches of a (N, C, L) signal, channel-major within a patch."""
    n, c, length = x.shape
    return torch.stack([x[:, :, i:i + k] for i in range(length - k + 1)], 1).reshape(n, length - k + 1, c * k)


class Conv1dLoopMissingPermute(Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "patch gradients (N, L_out, C·k) reshaped to (N, C, L_out, k) without the permute"}

    @staticmethod
    def forward(ctx, x, w):
        o, c, k = w.shape
        cols = _windows(x, k)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[2]
        return (cols @ w.reshape(o, c * k).t()).transpose(1, 2)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        o, c, k = w.shape
        n, _, l_out = g.shape
        gt = g.transpose(1, 2)
        dw = (gt.reshape(n * l_out, o).t() @ cols.reshape(n * l_out, c * k)).reshape(o, c, k)
        dcols = (gt @ w.reshape(o, c * k)).reshape(n, c, l_out, k)  # BUG
        dx = torch.zeros(n, c, ctx.length, dtype=g.dtype)
        for i in range(k):
            dx[:, :, i:i + l_out] += dcols[..., i]
        return dx, dw

    @staticmethod
    def example_inputs():
        return _seeded(108, (2, 2, 5), (3, 2, 2))


class Conv1dLoop(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        o, c, k = w.shape
        cols = _windows(x, k)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[2]
        return (cols @ w.reshape(o, c * k).t()).transpose(1, 2)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        o, c, k = w.shape
        n, _, l_out = g.shape
        gt = g.transpose(1, 2)
        dw = (gt.reshape(n * l_out, o).t() @ cols.reshape(n * l_out, c * k)).reshape(o, c, k)
        dcols = (gt @ w.reshape(o, c * k)).reshape(n, l_out, c, k).permute(0, 2, 1, 3)
        dx = torch.zeros(n, c, ctx.length, dtype=g.dtype)
        for i in range(k):
            dx[:, :, i:i + l_out] += dcols[..., i]
        return dx, dw

    @staticmethod
    def example_inputs():
        return _seeded(108, (2, 2, 5), (3, 2, 2))


IGNORE = -1


class NLLIgnoreMaskForgotten(Function):
    bug = {"kind": "region", "input": "logp", "note": "ignored rows (target −1) get −1/count in backward too"}

    @staticmethod
    def forward(ctx, logp, target):
        kept = target != IGNORE
        safe = target.clamp(min=0)
        ctx.save_for_backward(safe, kept)
        ctx.shape = logp.shape
        picked = logp.gather(1, safe[:, None])[:, 0]
        return -(picked * kept).sum() / kept.sum()

    @staticmethod
    def backward(ctx, g):
        safe, kept = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype).scatter(1, safe[:, None], -1.0)
        return grad / kept.sum() * g, None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(109)
        return (torch.randn(5, 3, dtype=DOUBLE), torch.tensor([2, 0, IGNORE, 1, 0]))


class NLLIgnoreIndex(Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        kept = target != IGNORE
        safe = target.clamp(min=0)
        ctx.save_for_backward(safe, kept)
        ctx.shape = logp.shape
        picked = logp.gather(1, safe[:, None])[:, 0]
        return -(picked * kept).sum() / kept.sum()

    @staticmethod
    def backward(ctx, g):
        safe, kept = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype).scatter(1, safe[:, None], -1.0)
        return grad * kept[:, None] / kept.sum() * g, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(109)
        return (torch.randn(5, 3, dtype=DOUBLE), torch.tensor([2, 0, IGNORE, 1, 0]))


class RMSNormWeightedMissingTerm(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "dx = γ·g/rms, missing −x̂·mean(g·γ·x̂)/rms"}

    @staticmethod
    def forward(ctx, x, gamma):
        rms = torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)
        xhat = x / rms
        ctx.save_for_backward(xhat, rms, gamma)
        return xhat * gamma

    @staticmethod
    def backward(ctx, g):
        xhat, rms, gamma = ctx.saved_tensors
        dx = g * gamma / rms  # BUG
        return dx, (g * xhat).sum(0)

    @staticmethod
    def example_inputs():
        torch.manual_seed(110)
        return (torch.randn(3, 5, dtype=DOUBLE), torch.rand(5, dtype=DOUBLE) + 0.5)
