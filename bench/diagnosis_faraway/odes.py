"""Numerical methods: explicit Euler and RK2 steps with a learnable rate, a leapfrog step, a 1-D
finite-difference Laplacian by slicing, a trapezoid-rule integral, an unrolled Newton iteration."""
import torch

DT = 0.1


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _euler_inputs():
    g = _gen(1)
    return (torch.randn(5, 4, dtype=torch.float64, generator=g),
            torch.rand(4, dtype=torch.float64, generator=g) + 0.5)


class FarawayEulerDecay(torch.autograd.Function):
    """One explicit Euler step of dy/dt = -k * y with a per-feature rate k of shape (D,)."""
    bug = None

    @staticmethod
    def forward(ctx, y, k):
        ctx.save_for_backward(y, k)
        return y + DT * (-k * y)

    @staticmethod
    def backward(ctx, grad_out):
        y, k = ctx.saved_tensors
        grad_y = grad_out * (1 - DT * k)
        grad_k = (grad_out * (-DT * y)).sum(0)
        return grad_y, grad_k

    @staticmethod
    def example_inputs():
        return _euler_inputs()


class FarawayEulerDecayRateNoStep(torch.autograd.Function):
    bug = {"kind": "scale", "input": "k",
           "note": "the step size DT is left out of the rate's gradient (d/dk of -DT*k*y is -DT*y)"}

    @staticmethod
    def forward(ctx, y, k):
        ctx.save_for_backward(y, k)
        return y + DT * (-k * y)

    @staticmethod
    def backward(ctx, grad_out):
        y, k = ctx.saved_tensors
        grad_y = grad_out * (1 - DT * k)
        grad_k = -(grad_out * y).sum(0)  # BUG
        return grad_y, grad_k

    @staticmethod
    def example_inputs():
        return _euler_inputs()


def _per_sample_inputs():
    g = _gen(2)
    return (torch.randn(5, 3, dtype=torch.float64, generator=g),
            torch.rand(5, dtype=torch.float64, generator=g) + 0.5)


class FarawayEulerPerSampleRate(torch.autograd.Function):
    """Euler step with one rate per trajectory: k (B,), state y (B, D)."""
    bug = None

    @staticmethod
    def forward(ctx, y, k):
        ctx.save_for_backward(y, k)
        return y - DT * k[:, None] * y

    @staticmethod
    def backward(ctx, grad_out):
        y, k = ctx.saved_tensors
        grad_y = grad_out * (1 - DT * k[:, None])
        grad_k = -DT * (grad_out * y).sum(1)
        return grad_y, grad_k

    @staticmethod
    def example_inputs():
        return _per_sample_inputs()


class FarawayEulerPerSampleRateUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "k",
           "note": "the per-trajectory rate's gradient is left (B, D): the sum over the state dim is missing"}

    @staticmethod
    def forward(ctx, y, k):
        ctx.save_for_backward(y, k)
        return y - DT * k[:, None] * y

    @staticmethod
    def backward(ctx, grad_out):
        y, k = ctx.saved_tensors
        grad_y = grad_out * (1 - DT * k[:, None])
        grad_k = -DT * grad_out * y  # BUG
        return grad_y, grad_k

    @staticmethod
    def example_inputs():
        return _per_sample_inputs()


class FarawayMidpointStep(torch.autograd.Function):
    """RK2 (midpoint) step of dy/dt = -k * y, backward written stage by stage in reverse."""
    bug = None

    @staticmethod
    def forward(ctx, y, k):
        k1 = -k * y
        ym = y + 0.5 * DT * k1
        k2 = -k * ym
        ctx.save_for_backward(y, k, ym)
        return y + DT * k2

    @staticmethod
    def backward(ctx, grad_out):
        y, k, ym = ctx.saved_tensors
        g_k2 = DT * grad_out
        g_ym = -k * g_k2
        g_k = -ym * g_k2
        g_y = grad_out + g_ym
        g_k1 = 0.5 * DT * g_ym
        g_y = g_y - k * g_k1
        g_k = g_k - y * g_k1
        return g_y, g_k.sum(0)

    @staticmethod
    def example_inputs():
        g = _gen(3)
        return (torch.randn(4, 3, dtype=torch.float64, generator=g),
                torch.rand(3, dtype=torch.float64, generator=g) * 4 + 2.0)


class FarawayMidpointStepDropsFirstStage(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "y",
           "note": "the path through the first stage k1 = -k*y is not added to y's gradient"}

    @staticmethod
    def forward(ctx, y, k):
        k1 = -k * y
        ym = y + 0.5 * DT * k1
        k2 = -k * ym
        ctx.save_for_backward(y, k, ym)
        return y + DT * k2

    @staticmethod
    def backward(ctx, grad_out):
        y, k, ym = ctx.saved_tensors
        g_k2 = DT * grad_out
        g_ym = -k * g_k2
        g_k = -ym * g_k2
        g_y = grad_out + g_ym  # BUG
        g_k1 = 0.5 * DT * g_ym
        g_k = g_k - y * g_k1
        return g_y, g_k.sum(0)

    @staticmethod
    def example_inputs():
        g = _gen(3)
        return (torch.randn(4, 3, dtype=torch.float64, generator=g),
                torch.rand(3, dtype=torch.float64, generator=g) * 4 + 2.0)


def _leapfrog_inputs():
    g = _gen(4)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.rand(4, dtype=torch.float64, generator=g) + 1.0)


class FarawayLeapfrog(torch.autograd.Function):
    """One leapfrog (kick-drift-kick) step for U(q) = w q^2 / 2; returns (q_new, p_new)."""
    bug = None

    @staticmethod
    def forward(ctx, q, p, w):
        p_half = p - 0.5 * DT * w * q
        q_new = q + DT * p_half
        p_new = p_half - 0.5 * DT * w * q_new
        ctx.save_for_backward(q, w, q_new)
        return q_new, p_new

    @staticmethod
    def backward(ctx, grad_q_new, grad_p_new):
        q, w, q_new = ctx.saved_tensors
        g_p_half = grad_p_new.clone()
        g_q_new = grad_q_new - 0.5 * DT * w * grad_p_new
        g_w = -0.5 * DT * (grad_p_new * q_new).sum(0)
        g_p_half = g_p_half + DT * g_q_new
        g_q = g_q_new - 0.5 * DT * w * g_p_half
        g_w = g_w - 0.5 * DT * (g_p_half * q).sum(0)
        return g_q, g_p_half, g_w

    @staticmethod
    def example_inputs():
        return _leapfrog_inputs()


class FarawayLeapfrogReturnsOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "q",
           "note": "the position and momentum gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, q, p, w):
        p_half = p - 0.5 * DT * w * q
        q_new = q + DT * p_half
        p_new = p_half - 0.5 * DT * w * q_new
        ctx.save_for_backward(q, w, q_new)
        return q_new, p_new

    @staticmethod
    def backward(ctx, grad_q_new, grad_p_new):
        q, w, q_new = ctx.saved_tensors
        g_p_half = grad_p_new.clone()
        g_q_new = grad_q_new - 0.5 * DT * w * grad_p_new
        g_w = -0.5 * DT * (grad_p_new * q_new).sum(0)
        g_p_half = g_p_half + DT * g_q_new
        g_q = g_q_new - 0.5 * DT * w * g_p_half
        g_w = g_w - 0.5 * DT * (g_p_half * q).sum(0)
        return g_p_half, g_q, g_w  # BUG

    @staticmethod
    def example_inputs():
        return _leapfrog_inputs()


def _laplacian_inputs():
    g = _gen(5)
    return (torch.randn(3, 7, dtype=torch.float64, generator=g),
            torch.rand(1, dtype=torch.float64, generator=g) + 0.5)


class FarawayDiffusionStencil(torch.autograd.Function):
    """c * (x[i-1] - 2 x[i] + x[i+1]) on the interior of the last dim, by slicing."""
    bug = None

    @staticmethod
    def forward(ctx, x, c):
        lap = x[..., :-2] - 2 * x[..., 1:-1] + x[..., 2:]
        ctx.save_for_backward(lap, c)
        ctx.length = x.shape[-1]
        return c * lap

    @staticmethod
    def backward(ctx, grad_out):
        lap, c = ctx.saved_tensors
        gl = c * grad_out
        grad_x = grad_out.new_zeros(grad_out.shape[:-1] + (ctx.length,))
        grad_x[..., :-2] += gl
        grad_x[..., 1:-1] -= 2 * gl
        grad_x[..., 2:] += gl
        grad_c = (grad_out * lap).sum().reshape(1)
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _laplacian_inputs()


class FarawayDiffusionStencilOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "the three overlapping slices are assigned with = so the later ones overwrite the earlier"}

    @staticmethod
    def forward(ctx, x, c):
        lap = x[..., :-2] - 2 * x[..., 1:-1] + x[..., 2:]
        ctx.save_for_backward(lap, c)
        ctx.length = x.shape[-1]
        return c * lap

    @staticmethod
    def backward(ctx, grad_out):
        lap, c = ctx.saved_tensors
        gl = c * grad_out
        grad_x = grad_out.new_zeros(grad_out.shape[:-1] + (ctx.length,))
        grad_x[..., :-2] = gl
        grad_x[..., 1:-1] = -2 * gl  # BUG
        grad_x[..., 2:] += gl
        grad_c = (grad_out * lap).sum().reshape(1)
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _laplacian_inputs()


def _trapezoid_inputs():
    g = _gen(6)
    return (torch.randn(4, 6, dtype=torch.float64, generator=g),
            torch.rand(1, dtype=torch.float64, generator=g) + 0.2)


class FarawayTrapezoid(torch.autograd.Function):
    """Trapezoid rule per row: h * (f0/2 + f1 + ... + f_{n-2} + f_{n-1}/2)."""
    bug = None

    @staticmethod
    def forward(ctx, f, h):
        s = 0.5 * (f[:, :-1] + f[:, 1:]).sum(1)
        ctx.save_for_backward(s, h)
        ctx.n = f.shape[1]
        return h * s

    @staticmethod
    def backward(ctx, grad_out):
        s, h = ctx.saved_tensors
        w = torch.ones(ctx.n, dtype=grad_out.dtype)
        w[0] = w[-1] = 0.5
        grad_f = grad_out[:, None] * h * w
        grad_h = (grad_out * s).sum().reshape(1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _trapezoid_inputs()


class FarawayTrapezoidPairSums(torch.autograd.Function):
    bug = {"kind": "scale", "input": "f",
           "note": "weights taken from the pair sums f_i + f_{i+1} (1, 2, ..., 2, 1) without the 1/2"}

    @staticmethod
    def forward(ctx, f, h):
        s = 0.5 * (f[:, :-1] + f[:, 1:]).sum(1)
        ctx.save_for_backward(s, h)
        ctx.n = f.shape[1]
        return h * s

    @staticmethod
    def backward(ctx, grad_out):
        s, h = ctx.saved_tensors
        w = torch.full((ctx.n,), 2.0, dtype=grad_out.dtype)
        w[0] = w[-1] = 1.0
        grad_f = grad_out[:, None] * h * w  # BUG
        grad_h = (grad_out * s).sum().reshape(1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _trapezoid_inputs()


NEWTON_STEPS = 3


def _newton_inputs():
    return (torch.rand(3, 4, dtype=torch.float64, generator=_gen(7)) * 3 + 0.5,)


class FarawayNewtonSqrt(torch.autograd.Function):
    """sqrt(a) by NEWTON_STEPS unrolled Newton steps x <- (x + a/x)/2 from x = 1."""
    bug = None

    @staticmethod
    def forward(ctx, a):
        xs = [torch.ones_like(a)]
        for _ in range(NEWTON_STEPS):
            xs.append(0.5 * (xs[-1] + a / xs[-1]))
        ctx.save_for_backward(a, *xs)
        return xs[-1]

    @staticmethod
    def backward(ctx, grad_out):
        a, *xs = ctx.saved_tensors
        g_x = grad_out
        g_a = torch.zeros_like(a)
        for x in reversed(xs[:-1]):
            g_a += g_x * 0.5 / x
            g_x = g_x * 0.5 * (1 - a / x ** 2)
        return g_a

    @staticmethod
    def example_inputs():
        return _newton_inputs()


class FarawayNewtonSqrtLastStepOnly(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "a",
           "note": "a enters every Newton step, but the loop assigns its gradient instead of adding to it"}

    @staticmethod
    def forward(ctx, a):
        xs = [torch.ones_like(a)]
        for _ in range(NEWTON_STEPS):
            xs.append(0.5 * (xs[-1] + a / xs[-1]))
        ctx.save_for_backward(a, *xs)
        return xs[-1]

    @staticmethod
    def backward(ctx, grad_out):
        a, *xs = ctx.saved_tensors
        g_x = grad_out
        g_a = torch.zeros_like(a)
        for x in reversed(xs[:-1]):
            g_a = g_x * 0.5 / x  # BUG
            g_x = g_x * 0.5 * (1 - a / x ** 2)
        return g_a

    @staticmethod
    def example_inputs():
        return _newton_inputs()
