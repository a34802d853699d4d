import gradcli as torch

"""A leaky integrator recurrence by Python loop and per-row normalisations written with keepdim
reductions, on gradcli's engine (runs without PyTorch)."""

EPS = 1e-5


def _leaky_inputs():
    g = torch.Generator().manual_seed(101)
    u = torch.randn(3, 5, generator=g, dtype=torch.float64)
    lam = torch.rand(3, 1, generator=g, dtype=torch.float64) * 0.6 + 0.2
    return u, lam


def _integrate(u, lam):
    h = torch.zeros_like(u[:, :1])
    states = []
    for t in range(u.shape[1]):
        h = (1 - lam) * h + lam * u[:, t:t + 1]
        states.append(h)
    return torch.cat(states, dim=1)


# --------------------------------------------------------------------------- leaky integrator
class UnheardLeakyIntegrator(torch.autograd.Function):
    """h_t = (1 - lam) h_{t-1} + lam u_t from h_0 = 0, one leak rate per row."""

    bug = None

    @staticmethod
    def forward(ctx, u, lam):
        states = _integrate(u, lam)
        ctx.save_for_backward(u, lam, states)
        return states

    @staticmethod
    def backward(ctx, grad_h):
        u, lam, states = ctx.saved_tensors
        steps = u.shape[1]
        carry = torch.zeros_like(lam)
        grad_lam = torch.zeros_like(lam)
        cols = [None] * steps
        for t in reversed(range(steps)):
            carry = grad_h[:, t:t + 1] + carry
            prev = states[:, t - 1:t] if t > 0 else torch.zeros_like(lam)
            cols[t] = lam * carry
            grad_lam = grad_lam + carry * (u[:, t:t + 1] - prev)
            carry = carry * (1 - lam)
        return torch.cat(cols, dim=1), grad_lam

    example_inputs = staticmethod(_leaky_inputs)


class UnheardLeakyIntegratorForwardSweep(torch.autograd.Function):
    """Same recurrence; the adjoint swept in a second loop."""

    bug = {"kind": "missing_flip", "input": "u",
           "note": "the adjoint of a forward recurrence runs from the last step back; this loop "
                   "runs from t = 0 upwards, carrying gradient from earlier steps"}

    @staticmethod
    def forward(ctx, u, lam):
        states = _integrate(u, lam)
        ctx.save_for_backward(u, lam, states)
        return states

    @staticmethod
    def backward(ctx, grad_h):
        u, lam, states = ctx.saved_tensors
        steps = u.shape[1]
        adj = torch.zeros_like(lam)
        adjoints = []
        for t in range(steps):  # BUG
            adj = grad_h[:, t:t + 1] + (1 - lam) * adj
            adjoints.append(adj)
        adjoints = torch.cat(adjoints, dim=1)
        # the leak-rate gradient, from the correct (reverse-time) adjoint
        rev = torch.zeros_like(lam)
        grad_lam = torch.zeros_like(lam)
        for t in range(steps - 1, -1, -1):
            rev = grad_h[:, t:t + 1] + (1 - lam) * rev
            prev = states[:, t - 1:t] if t > 0 else torch.zeros_like(lam)
            grad_lam = grad_lam + rev * (u[:, t:t + 1] - prev)
        return lam * adjoints, grad_lam

    example_inputs = staticmethod(_leaky_inputs)


class UnheardLeakyIntegratorRateOverwrite(torch.autograd.Function):
    """Same recurrence; ctx keeps the states, the leak-rate gradient built inside the loop."""

    bug = {"kind": "not_accumulated", "input": "lam",
           "note": "lam acts at every step, so its gradient is a sum over steps; the loop "
                   "assigns each step's term and keeps only the last one (t = 0)"}

    @staticmethod
    def forward(ctx, u, lam):
        ctx.states = _integrate(u, lam)
        ctx.save_for_backward(u, lam)
        return ctx.states

    @staticmethod
    def backward(ctx, grad_h):
        u, lam = ctx.saved_tensors
        h = ctx.states
        carry = torch.zeros_like(lam)
        grad_u = torch.zeros_like(u)
        grad_lam = torch.zeros_like(lam)
        for t in reversed(range(u.shape[1])):
            carry = carry * (1 - lam) + grad_h[:, t:t + 1]
            h_prev = h[:, t - 1:t] if t else torch.zeros_like(lam)
            grad_u[:, t:t + 1] = lam * carry
            grad_lam = carry * (u[:, t:t + 1] - h_prev)  # BUG
        return grad_u, grad_lam

    example_inputs = staticmethod(_leaky_inputs)


# --------------------------------------------------------------------------- row L2 normalise
def _row_inputs():
    g = torch.Generator().manual_seed(102)
    return (torch.randn(3, 4, generator=g, dtype=torch.float64) + 0.5,)


class UnheardRowL2Normalise(torch.autograd.Function):
    """x / ||x|| per row (keepdim norm)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(-1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, norm = ctx.saved_tensors
        radial = (grad_y * y).sum(-1, keepdim=True)
        return (grad_y - y * radial) / norm

    example_inputs = staticmethod(_row_inputs)


class UnheardRowL2NormaliseColumnDot(torch.autograd.Function):
    """Same normalisation; the projection off the radial direction written by hand."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the radial component <g, y> is a per-row dot product; it is summed down "
                   "the columns (dim 0)"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=1, keepdim=True)
        ctx.save_for_backward(x, norm)
        return x / norm

    @staticmethod
    def backward(ctx, grad_y):
        x, norm = ctx.saved_tensors
        y = x / norm
        dot = (grad_y * y).sum(0, keepdim=True)  # BUG
        return grad_y / norm - y * dot / norm

    example_inputs = staticmethod(_row_inputs)


# ------------------------------------------------------------------------- row standardise
class UnheardRowStandardise(torch.autograd.Function):
    """(x - row mean) / sqrt(row var + eps), population variance, keepdim reductions."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        sd = torch.sqrt(var + EPS)
        y = (x - mu) / sd
        ctx.save_for_backward(y, sd)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, sd = ctx.saved_tensors
        g_mean = grad_y.mean(-1, keepdim=True)
        gy_mean = (grad_y * y).mean(-1, keepdim=True)
        return (grad_y - g_mean - y * gy_mean) / sd

    example_inputs = staticmethod(_row_inputs)


class UnheardRowStandardiseMeanOnly(torch.autograd.Function):
    """Same standardisation; backward through the centring only."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "the row std also depends on x; the term -y mean(g y) from differentiating "
                   "it is missing"}

    @staticmethod
    def forward(ctx, x):
        xc = x - x.mean(1, keepdim=True)
        sd = (xc.pow(2).mean(1, keepdim=True) + EPS).sqrt()
        ctx.save_for_backward(sd)
        return xc / sd

    @staticmethod
    def backward(ctx, grad_y):
        (sd,) = ctx.saved_tensors
        centred = grad_y - grad_y.mean(1, keepdim=True)
        return centred / sd  # BUG

    example_inputs = staticmethod(_row_inputs)
