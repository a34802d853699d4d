"""Indexing, dropout, mixing, correlation, a rotation layer and three deliberate estimators."""
import torch
import torch.nn.functional as F

KEEP = 0.6
MIX = 0.3


def _dropout_mask(shape, seed=61):
    return (torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < KEEP).to(torch.float64)



class ReservedSavedMaskDropout(torch.autograd.Function):
    """Inverted dropout with a fixed, saved mask (keep probability 0.6)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        mask = _dropout_mask(x.shape)
        ctx.save_for_backward(mask)
        return x * mask / KEEP

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        return grad_out * mask / KEEP


class ReservedSavedMaskDropoutNoRescale(torch.autograd.Function):
    """Inverted dropout with a fixed, saved mask (keep probability 0.6)."""
    bug = {'kind': 'scale', 'input': 'x', 'note': 'applies the saved mask but forgets the 1/keep rescaling'}

    @staticmethod
    def forward(ctx, x):
        mask = _dropout_mask(x.shape)
        ctx.save_for_backward(mask)
        return x * mask / KEEP

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        return grad_out * mask  # BUG


class ReservedGather(torch.autograd.Function):
    """x.gather(1, index) with repeated column indices."""
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None
        grad = grad_out.new_zeros(ctx.shape).scatter_add_(1, index, grad_out)
        return grad, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(62)
        return torch.randn(3, 4, dtype=torch.float64, generator=g), torch.tensor([[0, 0, 3], [1, 2, 1], [3, 3, 3]])


class ReservedGatherScatterReplace(torch.autograd.Function):
    """x.gather(1, index) with repeated column indices."""
    bug = {'kind': 'not_accumulated', 'input': 'x', 'note': 'scatter_ replaces where a repeated index must add'}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None
        grad = grad_out.new_zeros(ctx.shape).scatter_(1, index, grad_out)  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(62)
        return torch.randn(3, 4, dtype=torch.float64, generator=g), torch.tensor([[0, 0, 3], [1, 2, 1], [3, 3, 3]])


class ReservedIndexSelectRows(torch.autograd.Function):
    """index_select of rows (dim 0) of a square matrix, an index repeated."""
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return torch.zeros_like(grad_out).index_add_(0, index, grad_out), None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(63)
        return torch.randn(3, 3, dtype=torch.float64, generator=g), torch.tensor([2, 0, 2])


class ReservedIndexSelectRowsColumnAdd(torch.autograd.Function):
    """index_select of rows (dim 0) of a square matrix, an index repeated."""
    bug = {'kind': 'wrong_axis', 'input': 'x', 'note': 'adds the gradient back along dim 1 instead of the selected dim 0'}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return torch.zeros_like(grad_out).index_add_(1, index, grad_out), None  # BUG

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(63)
        return torch.randn(3, 3, dtype=torch.float64, generator=g), torch.tensor([2, 0, 2])


class ReservedMixup(torch.autograd.Function):
    """Mixup interpolation lam * a + (1 - lam) * b with lam = 0.3."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        return MIX * a + (1 - MIX) * b

    @staticmethod
    def backward(ctx, grad_out):
        return MIX * grad_out, (1 - MIX) * grad_out


class ReservedMixupWeightsExchanged(torch.autograd.Function):
    """Mixup interpolation lam * a + (1 - lam) * b with lam = 0.3."""
    bug = {'kind': 'swapped', 'input': 'a', 'note': "returns each input the other input's mixing weight"}

    @staticmethod
    def forward(ctx, a, b):
        return MIX * a + (1 - MIX) * b

    @staticmethod
    def backward(ctx, grad_out):
        return (1 - MIX) * grad_out, MIX * grad_out  # BUG


class ReservedCrossCorrelation(torch.autograd.Function):
    """Valid cross-correlation c[k] = sum_n a[n] b[n + k] of a short and a long signal (batched)."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return F.conv1d(b.unsqueeze(0), a.unsqueeze(1), groups=a.shape[0]).squeeze(0)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        n, k = a.shape
        grad_a = F.conv1d(b.unsqueeze(0), grad_out.unsqueeze(1), groups=n).squeeze(0)
        padded = F.pad(grad_out, (k - 1, k - 1))
        grad_b = F.conv1d(padded.unsqueeze(0), a.flip(-1).unsqueeze(1), groups=n).squeeze(0)
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(64)
        return (torch.randn(2, 3, dtype=torch.float64, generator=g),
                torch.randn(2, 7, dtype=torch.float64, generator=g))


class ReservedCrossCorrelationLongNoFlip(torch.autograd.Function):
    """Valid cross-correlation c[k] = sum_n a[n] b[n + k] of a short and a long signal (batched)."""
    bug = {'kind': 'missing_flip', 'input': 'b', 'note': "the long signal's gradient correlates with a instead of convolving (a not flipped)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return F.conv1d(b.unsqueeze(0), a.unsqueeze(1), groups=a.shape[0]).squeeze(0)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        n, k = a.shape
        grad_a = F.conv1d(b.unsqueeze(0), grad_out.unsqueeze(1), groups=n).squeeze(0)
        padded = F.pad(grad_out, (k - 1, k - 1))
        grad_b = F.conv1d(padded.unsqueeze(0), a.unsqueeze(1), groups=n).squeeze(0)  # BUG
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(64)
        return (torch.randn(2, 3, dtype=torch.float64, generator=g),
                torch.randn(2, 7, dtype=torch.float64, generator=g))


class ReservedRotation2d(torch.autograd.Function):
    """A 2-D rotation layer: rows of x (N, 2) rotated by a learned angle theta."""
    bug = None

    @staticmethod
    def forward(ctx, x, theta):
        c, s = torch.cos(theta), torch.sin(theta)
        rot = torch.stack((torch.stack((c, -s)), torch.stack((s, c))))
        ctx.save_for_backward(x, theta, rot)
        return x @ rot.T

    @staticmethod
    def backward(ctx, grad_out):
        x, theta, rot = ctx.saved_tensors
        c, s = torch.cos(theta), torch.sin(theta)
        d_rot = torch.stack((torch.stack((-s, -c)), torch.stack((c, -s))))
        grad_x = grad_out @ rot
        grad_theta = (grad_out * (x @ d_rot.T)).sum()
        return grad_x, grad_theta

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(65)
        return torch.randn(5, 2, dtype=torch.float64, generator=g), torch.tensor(0.7, dtype=torch.float64)


class ReservedRotation2dInverseNotTaken(torch.autograd.Function):
    """A 2-D rotation layer: rows of x (N, 2) rotated by a learned angle theta."""
    bug = {'kind': 'transposed', 'input': 'x', 'note': "multiplies by the rotation's transpose (the forward map) instead of the rotation"}

    @staticmethod
    def forward(ctx, x, theta):
        c, s = torch.cos(theta), torch.sin(theta)
        rot = torch.stack((torch.stack((c, -s)), torch.stack((s, c))))
        ctx.save_for_backward(x, theta, rot)
        return x @ rot.T

    @staticmethod
    def backward(ctx, grad_out):
        x, theta, rot = ctx.saved_tensors
        c, s = torch.cos(theta), torch.sin(theta)
        d_rot = torch.stack((torch.stack((-s, -c)), torch.stack((c, -s))))
        grad_x = grad_out @ rot.T  # BUG
        grad_theta = (grad_out * (x @ d_rot.T)).sum()
        return grad_x, grad_theta

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(65)
        return torch.randn(5, 2, dtype=torch.float64, generator=g), torch.tensor(0.7, dtype=torch.float64)


class ReservedSwish(torch.autograd.Function):
    """Swish x * sigmoid(x), the sigmoid saved."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        return grad_out * (s + x * s * (1 - s))


class ReservedSwishInPlaceProduct(torch.autograd.Function):
    """Swish x * sigmoid(x), the sigmoid saved."""
    bug = {'kind': 'inplace', 'input': 'x', 'note': 'makes the output by multiplying the saved sigmoid in place'}

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return s.mul_(x)  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        return grad_out * (s + x * s * (1 - s))


class ReservedQuarterSTE(torch.autograd.Function):
    """Quantise to quarters; the gradient passes straight through (deliberate)."""
    bug = {"kind": "straight_through", "input": "x", "note": "rounding to multiples of 0.25 has zero derivative; backward passes grad_out unchanged on purpose"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.clone()  # BUG


class ReservedGradReverse(torch.autograd.Function):
    """Identity forward; backward reverses and scales the gradient by 0.3 (domain-adversarial)."""
    bug = {"kind": "gradient_reversal", "input": "x", "note": "a deliberate gradient reversal layer: -0.3 * grad_out for an identity"}

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * 0.3  # BUG


class ReservedSpikeSurrogate(torch.autograd.Function):
    """Heaviside step of a spiking neuron; backward is the fast-sigmoid surrogate (deliberate)."""
    bug = {"kind": "smooth_surrogate", "input": "v", "note": "the step has zero derivative; backward uses 1 / (1 + |v|)^2, the fast-sigmoid surrogate"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        return grad_out / (1 + v.abs()) ** 2  # BUG
