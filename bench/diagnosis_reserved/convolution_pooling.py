"""Convolution by unfold / im2col, pooling and pixel shuffle with hand-written backwards."""
import torch
import torch.nn.functional as F



class ReservedConv1dUnfold(torch.autograd.Function):
    """conv1d (no padding, stride 1) as a matmul over F.unfold columns; input grad by F.fold."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        n, c, length = x.shape
        o, _, kw = weight.shape
        cols = F.unfold(x.unsqueeze(2), kernel_size=(1, kw))
        ctx.save_for_backward(cols, weight)
        ctx.length = length
        return weight.reshape(o, -1) @ cols

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        o, c, kw = weight.shape
        grad_w = (grad_out @ cols.mT).sum(0).view(o, c, kw)
        grad_cols = weight.reshape(o, -1).mT @ grad_out
        grad_x = F.fold(grad_cols, output_size=(1, ctx.length), kernel_size=(1, kw)).squeeze(2)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(31)
        return (torch.randn(2, 2, 6, dtype=torch.float64, generator=g),
                torch.randn(3, 2, 3, dtype=torch.float64, generator=g))


class ReservedConv1dFlip(torch.autograd.Function):
    """conv1d by F.conv1d; the input gradient as a full correlation with the flipped kernel."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return F.conv1d(x, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        kw = weight.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (kw - 1, kw - 1)), weight.transpose(0, 1).flip(-1))
        grad_w = F.conv1d(x.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(32)
        return (torch.randn(2, 2, 6, dtype=torch.float64, generator=g),
                torch.randn(3, 2, 3, dtype=torch.float64, generator=g))


class ReservedConv1dFlipNoFlip(torch.autograd.Function):
    """conv1d by F.conv1d; the input gradient as a full correlation with the flipped kernel."""
    bug = {'kind': 'missing_flip', 'input': 'x', 'note': 'the transposed convolution for the input gradient forgets to flip the kernel'}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return F.conv1d(x, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        kw = weight.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (kw - 1, kw - 1)), weight.transpose(0, 1))  # BUG
        grad_w = F.conv1d(x.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(32)
        return (torch.randn(2, 2, 6, dtype=torch.float64, generator=g),
                torch.randn(3, 2, 3, dtype=torch.float64, generator=g))


class ReservedChannelBias(torch.autograd.Function):
    """A per-channel bias added to (N, C, L) feature maps."""
    bug = None

    @staticmethod
    def forward(ctx, x, bias):
        return x + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, grad_out.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(33)
        return (torch.randn(2, 3, 5, dtype=torch.float64, generator=g),
                torch.randn(3, dtype=torch.float64, generator=g))


class ReservedChannelBiasBatchOnly(torch.autograd.Function):
    """A per-channel bias added to (N, C, L) feature maps."""
    bug = {'kind': 'not_reduced', 'input': 'bias', 'note': 'the bias gradient is summed over the batch but left per position'}

    @staticmethod
    def forward(ctx, x, bias):
        return x + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, grad_out.sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(33)
        return (torch.randn(2, 3, 5, dtype=torch.float64, generator=g),
                torch.randn(3, dtype=torch.float64, generator=g))


class ReservedConv2dIm2col(torch.autograd.Function):
    """conv2d by im2col: weight (O, C, K, K) times unfolded patches."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        o, c, kh, kw = weight.shape
        h, w = x.shape[-2:]
        cols = F.unfold(x, (kh, kw))
        ctx.save_for_backward(cols, weight)
        ctx.hw = (h, w)
        out = weight.view(o, -1) @ cols
        return out.view(x.shape[0], o, h - kh + 1, w - kw + 1)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        o, c, kh, kw = weight.shape
        g = grad_out.flatten(2)
        grad_w = torch.einsum("nol,nkl->ok", g, cols).reshape(weight.shape)
        grad_x = F.fold(weight.view(o, -1).T @ g, ctx.hw, (kh, kw))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(34)
        return (torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=g),
                torch.randn(3, 2, 2, 2, dtype=torch.float64, generator=g))


class ReservedConv2dIm2colWeightKO(torch.autograd.Function):
    """conv2d by im2col: weight (O, C, K, K) times unfolded patches."""
    bug = {'kind': 'transposed', 'input': 'weight', 'note': "the weight gradient is built as (C*K*K, O) and then reshaped to the weight's shape without the transpose"}

    @staticmethod
    def forward(ctx, x, weight):
        o, c, kh, kw = weight.shape
        h, w = x.shape[-2:]
        cols = F.unfold(x, (kh, kw))
        ctx.save_for_backward(cols, weight)
        ctx.hw = (h, w)
        out = weight.view(o, -1) @ cols
        return out.view(x.shape[0], o, h - kh + 1, w - kw + 1)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        o, c, kh, kw = weight.shape
        g = grad_out.flatten(2)
        grad_w = torch.einsum("nol,nkl->ko", g, cols).reshape(weight.shape)  # BUG
        grad_x = F.fold(weight.view(o, -1).T @ g, ctx.hw, (kh, kw))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(34)
        return (torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=g),
                torch.randn(3, 2, 2, 2, dtype=torch.float64, generator=g))


class ReservedAvgPool(torch.autograd.Function):
    """Average pooling over non-overlapping windows of 2 along the last dim."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.unflatten(-1, (-1, 2)).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(2, dim=-1) / 2


class ReservedAvgPoolNoDivide(torch.autograd.Function):
    """Average pooling over non-overlapping windows of 2 along the last dim."""
    bug = {'kind': 'scale', 'input': 'x', 'note': 'spreads the gradient over the window without dividing by its size'}

    @staticmethod
    def forward(ctx, x):
        return x.unflatten(-1, (-1, 2)).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(2, dim=-1)  # BUG


class ReservedMaxPool(torch.autograd.Function):
    """Max pooling over windows of 3 along the last dim, the argmax saved."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        windows = x.unflatten(-1, (-1, 3))
        values, where = windows.max(dim=-1)
        ctx.save_for_backward(where)
        ctx.shape = windows.shape
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        grad = grad_out.new_zeros(ctx.shape).scatter_(-1, where.unsqueeze(-1), grad_out.unsqueeze(-1))
        return grad.flatten(-2)

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(35)),)


class ReservedMaxPoolWholeWindow(torch.autograd.Function):
    """Max pooling over windows of 3 along the last dim, the argmax saved."""
    bug = {'kind': 'region', 'input': 'x', 'note': 'routes the pooled gradient to every entry of the window, not only to its maximum'}

    @staticmethod
    def forward(ctx, x):
        windows = x.unflatten(-1, (-1, 3))
        values, where = windows.max(dim=-1)
        ctx.save_for_backward(where)
        ctx.shape = windows.shape
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        grad = grad_out.unsqueeze(-1).expand(ctx.shape).clone()  # BUG
        return grad.flatten(-2)

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(35)),)


class ReservedPixelShuffle(torch.autograd.Function):
    """Pixel shuffle with r = 2: (N, C*4, H, W) -> (N, C, 2H, 2W)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c4, h, w = x.shape
        c = c4 // 4
        return x.view(n, c, 2, 2, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, 2 * h, 2 * w)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, h2, w2 = grad_out.shape
        h, w = h2 // 2, w2 // 2
        g = grad_out.view(n, c, h, 2, w, 2).permute(0, 1, 3, 5, 2, 4)
        return g.reshape(n, 4 * c, h, w)

    @staticmethod
    def example_inputs():
        return (torch.randn(1, 8, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(36)),)


class ReservedPixelShuffleSubpixelOrder(torch.autograd.Function):
    """Pixel shuffle with r = 2: (N, C*4, H, W) -> (N, C, 2H, 2W)."""
    bug = {'kind': 'transposed', 'input': 'x', 'note': 'the inverse permutation swaps the two sub-pixel axes (column offset before row offset)'}

    @staticmethod
    def forward(ctx, x):
        n, c4, h, w = x.shape
        c = c4 // 4
        return x.view(n, c, 2, 2, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, 2 * h, 2 * w)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, h2, w2 = grad_out.shape
        h, w = h2 // 2, w2 // 2
        g = grad_out.view(n, c, h, 2, w, 2).permute(0, 1, 5, 3, 2, 4)  # BUG
        return g.reshape(n, 4 * c, h, w)

    @staticmethod
    def example_inputs():
        return (torch.randn(1, 8, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(36)),)
