import gradcli as torch
import gradcli.nn.functional as F
import math

# Activations on gradcli's engine (runs without PyTorch): a cubic polynomial activation with
# learned coefficients, a rational (Pade-style) activation, mish, hard-swish, GELU (tanh form)
# and squareplus with a learned b (BLIND corpus, see README.md).

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# ------------------------------------------------------------------------ polynomial activation
def _poly_inputs():
    gen = torch.Generator().manual_seed(81)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    coeffs = torch.tensor([0.1, 1.0, -0.4, 0.3], dtype=torch.float64)
    return x, coeffs


class ForeignPolyActivation(torch.autograd.Function):
    """c0 + c1 x + c2 x^2 + c3 x^3 with learned coefficients c (4,)."""

    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        out = torch.zeros_like(x)
        for k in range(coeffs.shape[0]):
            out = out + coeffs[k] * x ** k
        return out

    @staticmethod
    def backward(ctx, grad):
        x, coeffs = ctx.saved_tensors
        slope = torch.zeros_like(x)
        for k in range(1, coeffs.shape[0]):
            slope = slope + k * coeffs[k] * x ** (k - 1)
        grad_coeffs = torch.stack([(grad * x ** k).sum() for k in range(coeffs.shape[0])])
        return grad * slope, grad_coeffs

    @staticmethod
    def example_inputs():
        return _poly_inputs()


class ForeignPolyActivationDropsCubic(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the derivative's loop stops one power early (range(1, 3)), losing 3 c3 x^2"}

    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        powers = [torch.ones_like(x), x, x * x, x * x * x]
        out = powers[0] * coeffs[0]
        for k in range(1, 4):
            out = out + powers[k] * coeffs[k]
        return out

    @staticmethod
    def backward(ctx, grad):
        x, coeffs = ctx.saved_tensors
        powers = [torch.ones_like(x), x, x * x, x * x * x]
        slope = torch.zeros_like(x)
        for k in range(1, 3):  # BUG
            slope = slope + k * coeffs[k] * powers[k - 1]
        grad_coeffs = torch.stack([(grad * p).sum() for p in powers])
        return grad * slope, grad_coeffs

    @staticmethod
    def example_inputs():
        return _poly_inputs()


# -------------------------------------------------------------------------- rational activation
def _rational_inputs():
    gen = torch.Generator().manual_seed(82)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen) * 1.5
    p = torch.tensor([0.2, 1.0, 0.5], dtype=torch.float64)
    q = torch.tensor([0.7], dtype=torch.float64)
    return x, p, q


def _rational_parts(x, p, q):
    num = p[0] + p[1] * x + p[2] * x * x
    den = 1 + q * x * x
    return num, den


class ForeignRationalActivation(torch.autograd.Function):
    """(p0 + p1 x + p2 x^2) / (1 + q x^2), learned p (3,) and q (1,)."""

    bug = None

    @staticmethod
    def forward(ctx, x, p, q):
        num, den = _rational_parts(x, p, q)
        ctx.save_for_backward(x, p, q, num, den)
        return num / den

    @staticmethod
    def backward(ctx, grad):
        x, p, q, num, den = ctx.saved_tensors
        dnum = p[1] + 2 * p[2] * x
        dden = 2 * q * x
        grad_x = grad * (dnum * den - num * dden) / (den * den)
        g_den = grad / den
        grad_p = torch.stack([g_den.sum(), (g_den * x).sum(), (g_den * x * x).sum()])
        grad_q = (-grad * num * x * x / (den * den)).sum().reshape(1)
        return grad_x, grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _rational_inputs()


class ForeignRationalActivationQuotientPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "quotient rule written (N' D + N D') / D^2 instead of (N' D - N D') / D^2"}

    @staticmethod
    def forward(ctx, x, p, q):
        num, den = _rational_parts(x, p, q)
        ctx.save_for_backward(x, p, q)
        return num / den

    @staticmethod
    def backward(ctx, grad):
        x, p, q = ctx.saved_tensors
        num, den = _rational_parts(x, p, q)
        inv = 1.0 / den
        grad_x = grad * (inv * (p[1] + 2 * p[2] * x) + num * 2 * q * x * inv * inv)  # BUG
        grad_p = torch.stack([(grad * inv * x ** k).sum() for k in range(3)])
        grad_q = -(grad * num * inv * inv * x ** 2).sum().view(1)
        return grad_x, grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _rational_inputs()


# ------------------------------------------------------------------------------------------ mish
class ForeignMish(torch.autograd.Function):
    """x * tanh(softplus(x))."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(F.softplus(x))
        ctx.save_for_backward(x, t)
        return x * t

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        return grad * (t + x * (1 - t * t) * torch.sigmoid(x))


class ForeignMishSigmoidOfSoftplus(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "softplus'(x) = sigmoid(x) is evaluated at softplus(x) instead of at x"}

    @staticmethod
    def forward(ctx, x):
        sp = F.softplus(x)
        ctx.save_for_backward(x, sp)
        return x * torch.tanh(sp)

    @staticmethod
    def backward(ctx, grad):
        x, sp = ctx.saved_tensors
        t = torch.tanh(sp)
        dsp = torch.sigmoid(sp)  # BUG
        return grad * (t + x * (1 - t ** 2) * dsp)


# ------------------------------------------------------------------------------------ hard-swish
def _hardswish_inputs():
    return (torch.tensor([[-4.2, -2.5, -1.1, 0.4], [1.7, 2.6, 3.4, 5.1],
                          [-3.6, -0.3, 0.9, 4.4]], dtype=torch.float64),)


class ForeignHardSwish(torch.autograd.Function):
    """x * relu6(x + 3) / 6."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.clamp(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        slope = torch.where(x < -3, torch.zeros_like(x),
                            torch.where(x > 3, torch.ones_like(x), (2 * x + 3) / 6))
        return grad * slope

    @staticmethod
    def example_inputs():
        return _hardswish_inputs()


class ForeignHardSwishUpperFlat(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "only the ramp -3 < x < 3 gets a slope; the x > 3 region, where the output is x "
                   "and the slope 1, is zeroed like x < -3"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * F.relu6(x + 3) / 6

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ramp = torch.logical_and(x > -3, x < 3)
        slope = torch.where(ramp, (2 * x + 3) / 6, torch.zeros_like(x))  # BUG
        return grad * slope

    @staticmethod
    def example_inputs():
        return _hardswish_inputs()


# --------------------------------------------------------------------------------- GELU (tanh)
def _gelu_inner(x):
    return SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)


class ForeignGeluTanh(torch.autograd.Function):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GELU's tanh approximation."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(_gelu_inner(x))
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1 + t)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        du = SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du)


class ForeignGeluTanhLocalOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "backward returns the local derivative gelu'(x) without multiplying by grad"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(_gelu_inner(x)))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = torch.tanh(_gelu_inner(x))
        sech2 = 1 - t * t
        left = 0.5 * (1 + t)
        right = 0.5 * x * sech2 * SQRT_2_OVER_PI * (1 + 0.134145 * x * x)
        dgelu = left + right  # BUG
        return dgelu


# ------------------------------------------------------------------------------------ squareplus
def _squareplus_inputs():
    gen = torch.Generator().manual_seed(86)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen) * 2,
            torch.tensor([4.0], dtype=torch.float64))


class ForeignSquareplus(torch.autograd.Function):
    """(x + sqrt(x^2 + b)) / 2 with a learned b > 0 (shape (1,))."""

    bug = None

    @staticmethod
    def forward(ctx, x, b):
        root = torch.sqrt(x * x + b)
        ctx.save_for_backward(x, root)
        return 0.5 * (x + root)

    @staticmethod
    def backward(ctx, grad):
        x, root = ctx.saved_tensors
        grad_x = 0.5 * grad * (1 + x / root)
        grad_b = (0.25 * grad / root).sum().reshape(1)
        return grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _squareplus_inputs()


class ForeignSquareplusHalfOfB(torch.autograd.Function):
    bug = {"kind": "scale", "input": "b",
           "note": "d sqrt(x^2 + b)/db = 1 / (2 sqrt) is taken, but the outer 1/2 of the "
                   "squareplus is forgotten: 0.5 / root instead of 0.25 / root"}

    @staticmethod
    def forward(ctx, x, b):
        root = torch.sqrt(x * x + b)
        ctx.save_for_backward(x, root)
        return 0.5 * (x + root)

    @staticmethod
    def backward(ctx, grad):
        x, root = ctx.saved_tensors
        half = 0.5 * grad
        grad_x = half + half * x / root
        d_root_db = 0.5 / root  # BUG
        return grad_x, (grad * d_root_db).sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _squareplus_inputs()


class ForeignSquareplusSoftplusSlope(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the x gradient is softplus's derivative sigmoid(x), reused for this "
                   "'smooth ReLU': an entirely wrong formula"}

    @staticmethod
    def forward(ctx, x, b):
        root = torch.sqrt(x * x + b)
        ctx.save_for_backward(x, root)
        return 0.5 * (x + root)

    @staticmethod
    def backward(ctx, grad):
        x, root = ctx.saved_tensors
        grad_x = grad * torch.sigmoid(x)  # BUG
        grad_b = (grad / (4 * root)).sum().reshape(1)
        return grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _squareplus_inputs()
