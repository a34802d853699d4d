"""Embeddings, rotary positions, cumulative ops and a gated linear recurrence, hand-written backwards."""
import torch

DISCOUNT = 0.9


def _rotary_angles(t, d):
    inv = 1.0 / (100.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    return torch.arange(t, dtype=torch.float64)[:, None] * inv[None, :]



class ReservedEmbedding(torch.autograd.Function):
    """Embedding lookup weight[ids] with repeated ids."""
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.num = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        grad = grad_out.new_zeros(ctx.num, grad_out.shape[-1])
        grad.index_add_(0, ids, grad_out)
        return grad, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(51)
        return torch.randn(5, 3, dtype=torch.float64, generator=g), torch.tensor([0, 2, 2, 4, 0, 2])


class ReservedEmbeddingOverwrite(torch.autograd.Function):
    """Embedding lookup weight[ids] with repeated ids."""
    bug = {'kind': 'not_accumulated', 'input': 'weight', 'note': "writes each row's gradient by assignment, so a repeated id keeps only one of its gradients"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.num = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        grad = grad_out.new_zeros(ctx.num, grad_out.shape[-1])
        grad[ids] = grad_out  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(51)
        return torch.randn(5, 3, dtype=torch.float64, generator=g), torch.tensor([0, 2, 2, 4, 0, 2])


class ReservedEmbeddingBagMean(torch.autograd.Function):
    """EmbeddingBag(mode='mean') with bags of a fixed size: ids (B, S) -> (B, D)."""
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.num = weight.shape[0]
        return weight[ids].mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        b, s = ids.shape
        per_id = (grad_out / s).unsqueeze(1).expand(b, s, -1).reshape(b * s, -1)
        grad = torch.zeros(ctx.num, grad_out.shape[1], dtype=grad_out.dtype)
        return grad.index_add_(0, ids.reshape(-1), per_id), None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(52)
        return torch.randn(6, 4, dtype=torch.float64, generator=g), torch.tensor([[1, 3, 1], [5, 0, 3]])


class ReservedEmbeddingBagMeanSumNotMean(torch.autograd.Function):
    """EmbeddingBag(mode='mean') with bags of a fixed size: ids (B, S) -> (B, D)."""
    bug = {'kind': 'scale', 'input': 'weight', 'note': "forgets the 1/S of the mean: the bag backward of mode='sum'"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.num = weight.shape[0]
        return weight[ids].mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        b, s = ids.shape
        per_id = grad_out.unsqueeze(1).expand(b, s, -1).reshape(b * s, -1)  # BUG
        grad = torch.zeros(ctx.num, grad_out.shape[1], dtype=grad_out.dtype)
        return grad.index_add_(0, ids.reshape(-1), per_id), None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(52)
        return torch.randn(6, 4, dtype=torch.float64, generator=g), torch.tensor([[1, 3, 1], [5, 0, 3]])


class ReservedRotary(torch.autograd.Function):
    """Rotary position embedding of (T, D): pairs (x0, x1) rotated by t * theta_i."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ang = _rotary_angles(*x.shape)
        cos, sin = ang.cos(), ang.sin()
        ctx.save_for_backward(cos, sin)
        x0, x1 = x[:, 0::2], x[:, 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(1)

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        g0, g1 = grad_out[:, 0::2], grad_out[:, 1::2]
        grad0 = g0 * cos + g1 * sin
        grad1 = g1 * cos - g0 * sin
        return torch.stack((grad0, grad1), dim=-1).flatten(1)

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(53)),)


class ReservedRotaryForwardRotation(torch.autograd.Function):
    """Rotary position embedding of (T, D): pairs (x0, x1) rotated by t * theta_i."""
    bug = {'kind': 'term_sign', 'input': 'x', 'note': 'rotates the gradient forwards: the sine term of the second component has the wrong sign'}

    @staticmethod
    def forward(ctx, x):
        ang = _rotary_angles(*x.shape)
        cos, sin = ang.cos(), ang.sin()
        ctx.save_for_backward(cos, sin)
        x0, x1 = x[:, 0::2], x[:, 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(1)

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        g0, g1 = grad_out[:, 0::2], grad_out[:, 1::2]
        grad0 = g0 * cos + g1 * sin
        grad1 = g1 * cos + g0 * sin  # BUG
        return torch.stack((grad0, grad1), dim=-1).flatten(1)

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(53)),)


class ReservedReverseCumsum(torch.autograd.Function):
    """Reverse cumulative sum along the last dim (returns-to-go)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.flip(-1).cumsum(-1).flip(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(dim=-1)


class ReservedCumsumRows(torch.autograd.Function):
    """cumsum along dim 0; its gradient is the reverse cumulative sum of grad_out along dim 0."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        flipped = torch.flip(grad_out, dims=(0,))
        return torch.flip(flipped.cumsum(dim=0), dims=(0,))


class ReservedCumsumRowsOneFlip(torch.autograd.Function):
    """cumsum along dim 0; its gradient is the reverse cumulative sum of grad_out along dim 0."""
    bug = {'kind': 'missing_flip', 'input': 'x', 'note': 'reverses grad_out before the cumulative sum but forgets to reverse the result back'}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        flipped = torch.flip(grad_out, dims=(0,))
        return flipped.cumsum(dim=0)  # BUG


class ReservedCumsumRowsAlongColumns(torch.autograd.Function):
    """cumsum along dim 0; its gradient is the reverse cumulative sum of grad_out along dim 0."""
    bug = {'kind': 'wrong_axis', 'input': 'x', 'note': "accumulates along dim 1 instead of the forward's dim 0"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        flipped = torch.flip(grad_out, dims=(0,))
        return torch.flip(flipped.cumsum(dim=1), dims=(0,))  # BUG


class ReservedCumprod(torch.autograd.Function):
    """cumprod along the last dim of nonzero inputs."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        tail = (grad_out * y).flip(-1).cumsum(-1).flip(-1)
        return tail / x

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(54)
        return (torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5,)


class ReservedCumprodDivideByProduct(torch.autograd.Function):
    """cumprod along the last dim of nonzero inputs."""
    bug = {'kind': 'wrong_variable', 'input': 'x', 'note': 'divides by the running product y instead of the input x'}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        tail = (grad_out * y).flip(-1).cumsum(-1).flip(-1)
        return tail / y  # BUG

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(54)
        return (torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5,)


class ReservedDiscountedReturns(torch.autograd.Function):
    """Discounted returns G_t = r_t + 0.9 G_{t+1} along the last dim, by a loop."""
    bug = None

    @staticmethod
    def forward(ctx, rewards):
        out = torch.empty_like(rewards)
        running = torch.zeros_like(rewards[..., 0])
        for t in reversed(range(rewards.shape[-1])):
            running = rewards[..., t] + DISCOUNT * running
            out[..., t] = running
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grad = torch.empty_like(grad_out)
        carry = torch.zeros_like(grad_out[..., 0])
        for t in range(grad_out.shape[-1]):
            carry = grad_out[..., t] + DISCOUNT * carry
            grad[..., t] = carry
        return grad


class ReservedDiscountedReturnsSameDirection(torch.autograd.Function):
    """Discounted returns G_t = r_t + 0.9 G_{t+1} along the last dim, by a loop."""
    bug = {'kind': 'missing_flip', 'input': 'rewards', 'note': 'runs the backward recursion from the end, like the forward, instead of from the start'}

    @staticmethod
    def forward(ctx, rewards):
        out = torch.empty_like(rewards)
        running = torch.zeros_like(rewards[..., 0])
        for t in reversed(range(rewards.shape[-1])):
            running = rewards[..., t] + DISCOUNT * running
            out[..., t] = running
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grad = torch.empty_like(grad_out)
        carry = torch.zeros_like(grad_out[..., 0])
        for t in reversed(range(grad_out.shape[-1])):  # BUG
            carry = grad_out[..., t] + DISCOUNT * carry
            grad[..., t] = carry
        return grad


class ReservedGatedRecurrence(torch.autograd.Function):
    """Gated linear recurrence h_t = a_t * h_{t-1} + x_t over the last dim (time), h_0 = 0."""
    bug = None

    @staticmethod
    def forward(ctx, a, x):
        hs, h = [], torch.zeros_like(x[:, 0])
        for t in range(x.shape[1]):
            h = a[:, t] * h + x[:, t]
            hs.append(h)
        out = torch.stack(hs, dim=1)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, out = ctx.saved_tensors
        steps = out.shape[1]
        grad_a, grad_x = torch.zeros_like(a), torch.zeros_like(out)
        carry = torch.zeros_like(out[:, 0])
        for t in reversed(range(steps)):
            carry = grad_out[:, t] + (a[:, t + 1] * carry if t + 1 < steps else 0)
            grad_x[:, t] = carry
            prev = out[:, t - 1] if t > 0 else torch.zeros_like(carry)
            grad_a[:, t] = carry * prev
        return grad_a, grad_x


class ReservedGatedRecurrenceGateTimesCurrent(torch.autograd.Function):
    """Gated linear recurrence h_t = a_t * h_{t-1} + x_t over the last dim (time), h_0 = 0."""
    bug = {'kind': 'wrong_variable', 'input': 'a', 'note': 'multiplies the carried gradient by the current state h_t instead of h_{t-1}'}

    @staticmethod
    def forward(ctx, a, x):
        hs, h = [], torch.zeros_like(x[:, 0])
        for t in range(x.shape[1]):
            h = a[:, t] * h + x[:, t]
            hs.append(h)
        out = torch.stack(hs, dim=1)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, out = ctx.saved_tensors
        steps = out.shape[1]
        grad_a, grad_x = torch.zeros_like(a), torch.zeros_like(out)
        carry = torch.zeros_like(out[:, 0])
        for t in reversed(range(steps)):
            carry = grad_out[:, t] + (a[:, t + 1] * carry if t + 1 < steps else 0)
            grad_x[:, t] = carry
            prev = out[:, t]  # BUG
            grad_a[:, t] = carry * prev
        return grad_a, grad_x


class ReservedGatedRecurrenceNoCarry(torch.autograd.Function):
    """Gated linear recurrence h_t = a_t * h_{t-1} + x_t over the last dim (time), h_0 = 0."""
    bug = {'kind': 'missing_term', 'input': 'x', 'note': 'forgets the gradient carried back from later steps, a_{t+1} * carry'}

    @staticmethod
    def forward(ctx, a, x):
        hs, h = [], torch.zeros_like(x[:, 0])
        for t in range(x.shape[1]):
            h = a[:, t] * h + x[:, t]
            hs.append(h)
        out = torch.stack(hs, dim=1)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, out = ctx.saved_tensors
        steps = out.shape[1]
        grad_a, grad_x = torch.zeros_like(a), torch.zeros_like(out)
        carry = torch.zeros_like(out[:, 0])
        for t in reversed(range(steps)):
            carry = grad_out[:, t]  # BUG
            grad_x[:, t] = carry
            prev = out[:, t - 1] if t > 0 else torch.zeros_like(carry)
            grad_a[:, t] = carry * prev
        return grad_a, grad_x
