"""Stencils and field operators: a learnable 1-D finite-difference stencil by F.conv1d, a 1x1
channel mixing of a field by permute + reshape + @, a 3x3 stencil by F.unfold / F.fold, a
separable smoothing A X B^T with matmuls, .mT and torch.einsum."""
import torch
import torch.nn.functional as F


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _stencil_inputs():
    g = _gen(51)
    return (torch.randn(2, 8, dtype=torch.float64, generator=g),
            torch.tensor([0.5, -1.0, 0.25], dtype=torch.float64))


class FarawayLearnedStencil(torch.autograd.Function):
    """Valid cross-correlation of each row of x (B, L) with a learnable stencil w (K,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv1d(x[:, None], w.view(1, 1, -1))[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        x, w = ctx.saved_tensors
        K = w.shape[0]
        padded = F.pad(grad_out[:, None], (K - 1, K - 1))
        grad_x = F.conv1d(padded, w.flip(0).view(1, 1, -1))[:, 0]
        grad_w = F.conv1d(x[None], grad_out[None])[0, 0]
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _stencil_inputs()


class FarawayLearnedStencilUnflipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient is a full convolution, but the stencil is not flipped for it"}

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv1d(x[:, None], w.view(1, 1, -1))[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        x, w = ctx.saved_tensors
        K = w.shape[0]
        padded = F.pad(grad_out[:, None], (K - 1, K - 1))
        grad_x = F.conv1d(padded, w.view(1, 1, -1))[:, 0]  # BUG
        grad_w = F.conv1d(x[None], grad_out[None])[0, 0]
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _stencil_inputs()


def _mix_inputs():
    g = _gen(52)
    return (torch.randn(2, 3, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 3, dtype=torch.float64, generator=g))


def _mix_forward(ctx, x, W):
    B, C, L = x.shape
    flat = x.permute(0, 2, 1).reshape(B * L, C)
    ctx.save_for_backward(flat, W)
    ctx.shape = (B, C, L)
    return (flat @ W.T).reshape(B, L, C).permute(0, 2, 1)


class FarawayChannelMix(torch.autograd.Function):
    """1x1 channel mixing of a field x (B, C, L) by W (C, C), through a (B*L, C) matrix."""
    bug = None

    @staticmethod
    def forward(ctx, x, W):
        return _mix_forward(ctx, x, W)

    @staticmethod
    def backward(ctx, grad_out):
        flat, W = ctx.saved_tensors
        B, C, L = ctx.shape
        g = grad_out.permute(0, 2, 1).reshape(B * L, C)
        grad_W = g.T @ flat
        grad_x = (g @ W).reshape(B, L, C).permute(0, 2, 1)
        return grad_x, grad_W

    @staticmethod
    def example_inputs():
        return _mix_inputs()


class FarawayChannelMixFlatBack(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "the (B*L, C) input gradient is reshaped straight to (B, C, L) without going through (B, L, C) and the permute back"}

    @staticmethod
    def forward(ctx, x, W):
        return _mix_forward(ctx, x, W)

    @staticmethod
    def backward(ctx, grad_out):
        flat, W = ctx.saved_tensors
        B, C, L = ctx.shape
        g = grad_out.permute(0, 2, 1).reshape(B * L, C)
        grad_W = g.T @ flat
        grad_x = (g @ W).reshape(B, C, L)  # BUG
        return grad_x, grad_W

    @staticmethod
    def example_inputs():
        return _mix_inputs()


class FarawayChannelMixWeightOuter(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "W",
           "note": "the weight gradient is formed as flat^T @ g, the transpose of g^T @ flat"}

    @staticmethod
    def forward(ctx, x, W):
        return _mix_forward(ctx, x, W)

    @staticmethod
    def backward(ctx, grad_out):
        flat, W = ctx.saved_tensors
        B, C, L = ctx.shape
        g = grad_out.permute(0, 2, 1).reshape(B * L, C)
        grad_W = flat.T @ g  # BUG
        grad_x = (g @ W).reshape(B, L, C).permute(0, 2, 1)
        return grad_x, grad_W

    @staticmethod
    def example_inputs():
        return _mix_inputs()


def _unfold_inputs():
    g = _gen(53)
    return (torch.randn(2, 1, 4, 5, dtype=torch.float64, generator=g),
            torch.randn(9, dtype=torch.float64, generator=g))


def _unfold_forward(ctx, x, w):
    N, _, H, W = x.shape
    cols = F.unfold(x, 3, padding=1)
    ctx.save_for_backward(cols, w)
    ctx.hw = (H, W)
    return (w[None, :, None] * cols).sum(1).view(N, 1, H, W)


class FarawayUnfoldStencil(torch.autograd.Function):
    """A learnable 3x3 stencil (9 weights) applied to (N, 1, H, W) images by F.unfold."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _unfold_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        N = grad_out.shape[0]
        g = grad_out.reshape(N, 1, -1)
        grad_x = F.fold(w[None, :, None] * g, ctx.hw, 3, padding=1)
        grad_w = (g * cols).sum((0, 2))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _unfold_inputs()


class FarawayUnfoldStencilBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "w",
           "note": "the stencil gradient is summed over the batch but left per position (9, H*W)"}

    @staticmethod
    def forward(ctx, x, w):
        return _unfold_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        N = grad_out.shape[0]
        g = grad_out.reshape(N, 1, -1)
        grad_x = F.fold(w[None, :, None] * g, ctx.hw, 3, padding=1)
        grad_w = (g * cols).sum(0)  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _unfold_inputs()


def _separable_inputs():
    g = _gen(54)
    return (torch.randn(2, 3, 3, dtype=torch.float64, generator=g),
            torch.randn(3, 3, dtype=torch.float64, generator=g),
            torch.randn(3, 3, dtype=torch.float64, generator=g))


class FarawaySeparableSmoothing(torch.autograd.Function):
    """Y = A X B^T per batch item: rows smoothed by A (H, H), columns by B (W, W)."""
    bug = None

    @staticmethod
    def forward(ctx, X, A, B):
        ctx.save_for_backward(X, A, B)
        return A @ X @ B.mT

    @staticmethod
    def backward(ctx, G):
        X, A, B = ctx.saved_tensors
        grad_X = A.mT @ G @ B
        grad_A = torch.einsum("nij,nkj->ik", G @ B, X)
        grad_B = (G.mT @ A @ X).sum(0)
        return grad_X, grad_A, grad_B

    @staticmethod
    def example_inputs():
        return _separable_inputs()


class FarawaySeparableSmoothingRowOperator(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "X",
           "note": "the row operator is applied to G as A, where its adjoint A^T is needed"}

    @staticmethod
    def forward(ctx, X, A, B):
        ctx.save_for_backward(X, A, B)
        return A @ X @ B.mT

    @staticmethod
    def backward(ctx, G):
        X, A, B = ctx.saved_tensors
        grad_X = A @ G @ B  # BUG
        grad_A = torch.einsum("nij,nkj->ik", G @ B, X)
        grad_B = (G.mT @ A @ X).sum(0)
        return grad_X, grad_A, grad_B

    @staticmethod
    def example_inputs():
        return _separable_inputs()
