"""State-space and recurrence pieces: an exponential moving average by a Python loop over time, a
linear recurrence h_t = a_t * h_{t-1} + x_t by cumprod / cumsum, a gated recurrent cell's update gate,
and a reverse-time discounted return."""
import torch


def _ema_inputs():
    gen = torch.Generator().manual_seed(51)
    return (torch.randn(6, 3, dtype=torch.float64, generator=gen),
            torch.tensor([0.6], dtype=torch.float64))


def _ema_forward(ctx, x, alpha):
    h = torch.zeros_like(x[0])
    outs = []
    for t in range(x.shape[0]):
        h = alpha * h + (1 - alpha) * x[t]
        outs.append(h)
    out = torch.stack(outs)
    ctx.save_for_backward(x, alpha, out)
    return out


class DistantEmaLoop(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        return _ema_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, out = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(x[0])
        for t in reversed(range(x.shape[0])):
            carry = grad_out[t] + carry
            prev = out[t - 1] if t > 0 else torch.zeros_like(out[0])
            grad_x[t] = (1 - alpha) * carry
            grad_alpha += (carry * (prev - x[t])).sum()
            carry = alpha * carry
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class DistantEmaLoopForwardInTime(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the backward loop carries the gradient forward in time (range) instead of in reverse (reversed)"}

    @staticmethod
    def forward(ctx, x, alpha):
        return _ema_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, out = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(x[0])
        for t in range(x.shape[0]):  # BUG
            carry = grad_out[t] + carry
            prev = out[t - 1] if t > 0 else torch.zeros_like(out[0])
            grad_x[t] = (1 - alpha) * carry
            grad_alpha += (carry * (prev - x[t])).sum()
            carry = alpha * carry
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class DistantEmaLoopCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "alpha",
           "note": "alpha's gradient uses the current state out[t] where the previous state h_{t-1} is needed"}

    @staticmethod
    def forward(ctx, x, alpha):
        return _ema_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, out = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(x[0])
        for t in reversed(range(x.shape[0])):
            carry = grad_out[t] + carry
            grad_x[t] = (1 - alpha) * carry
            grad_alpha += (carry * (out[t] - x[t])).sum()  # BUG
            carry = alpha * carry
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


def _scan_inputs():
    gen = torch.Generator().manual_seed(52)
    a = torch.rand(5, 3, dtype=torch.float64, generator=gen) * 0.4 + 0.5
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    return a, x


def _scan_forward(ctx, a, x):
    prods = torch.cumprod(a, dim=0)
    h = prods * torch.cumsum(x / prods, dim=0)
    ctx.save_for_backward(prods, h)
    return h


class DistantLinearScan(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, x):
        return _scan_forward(ctx, a, x)

    @staticmethod
    def backward(ctx, grad_h):
        prods, h = ctx.saved_tensors
        suffix = (grad_h * prods).flip(0).cumsum(0).flip(0)
        grad_x = suffix / prods
        h_prev = torch.cat([torch.zeros_like(h[:1]), h[:-1]], dim=0)
        return grad_x * h_prev, grad_x

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class DistantLinearScanPrefixSum(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the backward of a prefix scan is a suffix sum; the flips around cumsum are left out"}

    @staticmethod
    def forward(ctx, a, x):
        return _scan_forward(ctx, a, x)

    @staticmethod
    def backward(ctx, grad_h):
        prods, h = ctx.saved_tensors
        suffix = (grad_h * prods).cumsum(0)  # BUG
        grad_x = suffix / prods
        h_prev = torch.cat([torch.zeros_like(h[:1]), h[:-1]], dim=0)
        return grad_x * h_prev, grad_x

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class DistantLinearScanShiftWrongDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "a",
           "note": "h_{t-1} is built by shifting h along the feature dim (dim=1) instead of time (dim=0)"}

    @staticmethod
    def forward(ctx, a, x):
        return _scan_forward(ctx, a, x)

    @staticmethod
    def backward(ctx, grad_h):
        prods, h = ctx.saved_tensors
        suffix = (grad_h * prods).flip(0).cumsum(0).flip(0)
        grad_x = suffix / prods
        h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)  # BUG
        return grad_x * h_prev, grad_x

    @staticmethod
    def example_inputs():
        return _scan_inputs()


def _gru_inputs():
    gen = torch.Generator().manual_seed(53)
    return tuple(torch.randn(3, 4, dtype=torch.float64, generator=gen) for _ in range(3))


class DistantGruUpdateGate(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z_pre, h_prev, cand):
        z = torch.sigmoid(z_pre)
        ctx.save_for_backward(z, h_prev, cand)
        return (1 - z) * h_prev + z * cand

    @staticmethod
    def backward(ctx, grad_h):
        z, h_prev, cand = ctx.saved_tensors
        grad_z_pre = grad_h * (cand - h_prev) * z * (1 - z)
        return grad_z_pre, grad_h * (1 - z), grad_h * z

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class DistantGruUpdateGateDifferenceReversed(torch.autograd.Function):
    bug = {"kind": "sign", "input": "z_pre",
           "note": "the gate's gradient uses h_prev - cand, the reversed difference (the gate weights cand, not h_prev)"}

    @staticmethod
    def forward(ctx, z_pre, h_prev, cand):
        z = torch.sigmoid(z_pre)
        ctx.save_for_backward(z, h_prev, cand)
        return (1 - z) * h_prev + z * cand

    @staticmethod
    def backward(ctx, grad_h):
        z, h_prev, cand = ctx.saved_tensors
        grad_z_pre = grad_h * (h_prev - cand) * z * (1 - z)  # BUG
        return grad_z_pre, grad_h * (1 - z), grad_h * z

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class DistantGruUpdateGateKeepSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "h_prev",
           "note": "the previous state and the candidate get each other's gradients (z and 1 - z exchanged)"}

    @staticmethod
    def forward(ctx, z_pre, h_prev, cand):
        z = torch.sigmoid(z_pre)
        ctx.save_for_backward(z, h_prev, cand)
        return (1 - z) * h_prev + z * cand

    @staticmethod
    def backward(ctx, grad_h):
        z, h_prev, cand = ctx.saved_tensors
        grad_z_pre = grad_h * (cand - h_prev) * z * (1 - z)
        grad_cand, grad_prev = grad_h * (1 - z), grad_h * z  # BUG
        return grad_z_pre, grad_prev, grad_cand

    @staticmethod
    def example_inputs():
        return _gru_inputs()


def _return_inputs():
    gen = torch.Generator().manual_seed(54)
    return (torch.randn(2, 6, dtype=torch.float64, generator=gen),)


class DistantDiscountedReturn(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rewards, gamma=0.9):
        ctx.gamma = gamma
        out = torch.zeros_like(rewards)
        running = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(rewards.shape[1])):
            running = rewards[:, t] + gamma * running
            out[:, t] = running
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grad = torch.zeros_like(grad_out)
        running = torch.zeros_like(grad_out[:, 0])
        for t in range(grad_out.shape[1]):
            running = grad_out[:, t] + ctx.gamma * running
            grad[:, t] = running
        return grad, None

    @staticmethod
    def example_inputs():
        return _return_inputs()


class DistantDiscountedReturnSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "rewards",
           "note": "backward accumulates in reverse time like the forward; the transpose of a reverse scan runs forward"}

    @staticmethod
    def forward(ctx, rewards, gamma=0.9):
        ctx.gamma = gamma
        out = torch.zeros_like(rewards)
        running = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(rewards.shape[1])):
            running = rewards[:, t] + gamma * running
            out[:, t] = running
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grad = torch.zeros_like(grad_out)
        running = torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(grad_out.shape[1])):  # BUG
            running = grad_out[:, t] + ctx.gamma * running
            grad[:, t] = running
        return grad, None

    @staticmethod
    def example_inputs():
        return _return_inputs()
