import gradcli as torch

# A biquad (direct form I IIR) filter with learned coefficients b (3,) and a (2,), run by a
# Python loop over time; backward runs the adjoint recurrence in reversed time (numpy engine).


def _biquad_inputs():
    gen = torch.Generator().manual_seed(81)
    x = torch.randn(2, 7, dtype=torch.float64, generator=gen)
    b = torch.tensor([0.8, -0.3, 0.2], dtype=torch.float64)
    a = torch.tensor([-0.5, 0.2], dtype=torch.float64)
    return x, b, a


def _biquad_forward(ctx, x, b, a):
    steps = x.shape[1]
    ys = []
    for t in range(steps):
        acc = b[0] * x[:, t]
        if t >= 1:
            acc = acc + b[1] * x[:, t - 1] - a[0] * ys[t - 1]
        if t >= 2:
            acc = acc + b[2] * x[:, t - 2] - a[1] * ys[t - 2]
        ys.append(acc)
    y = torch.stack(ys, dim=1)
    ctx.save_for_backward(x, b, a, y)
    return y


def _shift(g, k):
    """g[:, t + k], zero past the end."""
    if k == 0:
        return g
    return torch.cat([g[:, k:], g.new_zeros(g.shape[0], k)], dim=1)


class FurtherBiquad(torch.autograd.Function):
    """y[t] = b0 x[t] + b1 x[t-1] + b2 x[t-2] - a1 y[t-1] - a2 y[t-2]."""
    bug = None

    @staticmethod
    def forward(ctx, x, b, a):
        return _biquad_forward(ctx, x, b, a)

    @staticmethod
    def backward(ctx, grad):
        x, b, a, y = ctx.saved_tensors
        steps = x.shape[1]
        adj = [None] * steps
        for t in reversed(range(steps)):
            s = grad[:, t]
            if t + 1 < steps:
                s = s - a[0] * adj[t + 1]
            if t + 2 < steps:
                s = s - a[1] * adj[t + 2]
            adj[t] = s
        g_y = torch.stack(adj, dim=1)
        g_x = b[0] * g_y + b[1] * _shift(g_y, 1) + b[2] * _shift(g_y, 2)
        g_b = torch.stack([(g_y * x).sum(), (g_y[:, 1:] * x[:, :-1]).sum(), (g_y[:, 2:] * x[:, :-2]).sum()])
        g_a = torch.stack([-(g_y[:, 1:] * y[:, :-1]).sum(), -(g_y[:, 2:] * y[:, :-2]).sum()])
        return g_x, g_b, g_a

    @staticmethod
    def example_inputs():
        return _biquad_inputs()


class FurtherBiquadFeedbackPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the adjoint recurrence adds a1 * adj[t+1] where the filter's -a1 y[t-1] makes it a subtraction"}

    @staticmethod
    def forward(ctx, x, b, a):
        return _biquad_forward(ctx, x, b, a)

    @staticmethod
    def backward(ctx, grad):
        x, b, a, y = ctx.saved_tensors
        steps = x.shape[1]
        adj = [None] * steps
        for t in reversed(range(steps)):
            s = grad[:, t]
            if t + 1 < steps:
                s = s + a[0] * adj[t + 1]  # BUG
            if t + 2 < steps:
                s = s - a[1] * adj[t + 2]
            adj[t] = s
        g_y = torch.stack(adj, dim=1)
        g_x = b[0] * g_y + b[1] * _shift(g_y, 1) + b[2] * _shift(g_y, 2)
        g_b = torch.stack([(g_y * x).sum(), (g_y[:, 1:] * x[:, :-1]).sum(), (g_y[:, 2:] * x[:, :-2]).sum()])
        g_a = torch.stack([-(g_y[:, 1:] * y[:, :-1]).sum(), -(g_y[:, 2:] * y[:, :-2]).sum()])
        return g_x, g_b, g_a

    @staticmethod
    def example_inputs():
        return _biquad_inputs()


class FurtherBiquadPoleSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "the feedback coefficients' gradients lose the minus of -a_k y[t-k]"}

    @staticmethod
    def forward(ctx, x, b, a):
        return _biquad_forward(ctx, x, b, a)

    @staticmethod
    def backward(ctx, grad):
        x, b, a, y = ctx.saved_tensors
        steps = x.shape[1]
        adj = [None] * steps
        for t in reversed(range(steps)):
            s = grad[:, t]
            if t + 1 < steps:
                s = s - a[0] * adj[t + 1]
            if t + 2 < steps:
                s = s - a[1] * adj[t + 2]
            adj[t] = s
        g_y = torch.stack(adj, dim=1)
        g_x = b[0] * g_y + b[1] * _shift(g_y, 1) + b[2] * _shift(g_y, 2)
        g_b = torch.stack([(g_y * x).sum(), (g_y[:, 1:] * x[:, :-1]).sum(), (g_y[:, 2:] * x[:, :-2]).sum()])
        g_a = torch.stack([(g_y[:, 1:] * y[:, :-1]).sum(), (g_y[:, 2:] * y[:, :-2]).sum()])  # BUG
        return g_x, g_b, g_a

    @staticmethod
    def example_inputs():
        return _biquad_inputs()


class FurtherBiquadPoleOnInputs(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "the feedback coefficients' gradients multiply by past inputs x instead of past outputs y"}

    @staticmethod
    def forward(ctx, x, b, a):
        return _biquad_forward(ctx, x, b, a)

    @staticmethod
    def backward(ctx, grad):
        x, b, a, y = ctx.saved_tensors
        steps = x.shape[1]
        adj = [None] * steps
        for t in reversed(range(steps)):
            s = grad[:, t]
            if t + 1 < steps:
                s = s - a[0] * adj[t + 1]
            if t + 2 < steps:
                s = s - a[1] * adj[t + 2]
            adj[t] = s
        g_y = torch.stack(adj, dim=1)
        g_x = b[0] * g_y + b[1] * _shift(g_y, 1) + b[2] * _shift(g_y, 2)
        g_b = torch.stack([(g_y * x).sum(), (g_y[:, 1:] * x[:, :-1]).sum(), (g_y[:, 2:] * x[:, :-2]).sum()])
        g_a = torch.stack([-(g_y[:, 1:] * x[:, :-1]).sum(), -(g_y[:, 2:] * x[:, :-2]).sum()])  # BUG
        return g_x, g_b, g_a

    @staticmethod
    def example_inputs():
        return _biquad_inputs()


class FurtherBiquadTapsUnshifted(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input's gradient applies the FIR taps as lags (the filter itself) instead of leads (its adjoint)"}

    @staticmethod
    def forward(ctx, x, b, a):
        return _biquad_forward(ctx, x, b, a)

    @staticmethod
    def backward(ctx, grad):
        x, b, a, y = ctx.saved_tensors
        steps = x.shape[1]
        adj = [None] * steps
        for t in reversed(range(steps)):
            s = grad[:, t]
            if t + 1 < steps:
                s = s - a[0] * adj[t + 1]
            if t + 2 < steps:
                s = s - a[1] * adj[t + 2]
            adj[t] = s
        g_y = torch.stack(adj, dim=1)
        lag1 = torch.cat([g_y.new_zeros(g_y.shape[0], 1), g_y[:, :-1]], dim=1)
        lag2 = torch.cat([g_y.new_zeros(g_y.shape[0], 2), g_y[:, :-2]], dim=1)
        g_x = b[0] * g_y + b[1] * lag1 + b[2] * lag2  # BUG
        g_b = torch.stack([(g_y * x).sum(), (g_y[:, 1:] * x[:, :-1]).sum(), (g_y[:, 2:] * x[:, :-2]).sum()])
        g_a = torch.stack([-(g_y[:, 1:] * y[:, :-1]).sum(), -(g_y[:, 2:] * y[:, :-2]).sum()])
        return g_x, g_b, g_a

    @staticmethod
    def example_inputs():
        return _biquad_inputs()
