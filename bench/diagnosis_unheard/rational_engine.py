import gradcli as torch

"""Piecewise rational activations on gradcli's engine (runs without PyTorch): identity for x >= 0
and a x / (1 - x) below, a Pade [3/2] tanh clipped to +-1 outside |x| < 3, and a rational gate
x^2 / (x^2 + b)."""

CLIP = 3.0


def _piecewise_inputs():
    g = torch.Generator().manual_seed(91)
    x = torch.rand(3, 4, generator=g, dtype=torch.float64) * 1.8 - 0.9
    a = torch.rand(4, generator=g, dtype=torch.float64) + 0.5
    return x, a


# ------------------------------------------------------------------------ piecewise rational
class UnheardPiecewiseRational(torch.autograd.Function):
    """x for x >= 0, a x / (1 - x) for x < 0 (one a per column)."""

    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.where(x >= 0, x, a * x / (1 - x))

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        neg = x < 0
        one_minus = 1 - x
        grad_x = grad_out * torch.where(neg, a / one_minus ** 2, torch.ones_like(x))
        grad_a = (grad_out * torch.where(neg, x / one_minus, torch.zeros_like(x))).sum(0)
        return grad_x, grad_a

    example_inputs = staticmethod(_piecewise_inputs)


class UnheardPiecewiseRationalBranchMask(torch.autograd.Function):
    """Same activation; the branch mask built once as a float tensor."""

    bug = {"kind": "region", "input": "a",
           "note": "a only acts on the negative branch, but its gradient is masked with the "
                   "positive-side mask"}

    @staticmethod
    def forward(ctx, x, a):
        pos = (x >= 0).to(x.dtype)
        ctx.save_for_backward(x, a, pos)
        return pos * x + (1 - pos) * a * x / (1 - x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a, pos = ctx.saved_tensors
        grad_x = grad_out * (pos + (1 - pos) * a / (1 - x) ** 2)
        grad_a = (grad_out * pos * x / (1 - x)).sum(0)  # BUG
        return grad_x, grad_a

    example_inputs = staticmethod(_piecewise_inputs)


# ---------------------------------------------------------------------------- Pade tanh
def _pade_inputs():
    g = torch.Generator().manual_seed(92)
    return (torch.tensor([[-4.1, -2.2, -0.7, 0.3], [0.9, 1.6, 2.4, 3.6],
                          [-1.3, 0.05, -3.4, 2.8]], dtype=torch.float64)
            + 0.01 * torch.randn(3, 4, generator=g, dtype=torch.float64),)


def _pade_parts(x):
    num = x * (27 + x * x)
    den = 27 + 9 * x * x
    return num, den


class UnheardPadeTanh(torch.autograd.Function):
    """x (27 + x^2) / (27 + 9 x^2) inside |x| < 3, sign(x) outside."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        num, den = _pade_parts(x)
        ctx.save_for_backward(x)
        return torch.where(x.abs() < CLIP, num / den, x.sign())

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        num, den = _pade_parts(x)
        dnum = 27 + 3 * x * x
        dden = 18 * x
        slope = (dnum * den - num * dden) / den ** 2
        return grad_out * torch.where(x.abs() < CLIP, slope, torch.zeros_like(x))

    example_inputs = staticmethod(_pade_inputs)


class UnheardPadeTanhUnclipped(torch.autograd.Function):
    """Same activation; backward by the quotient rule."""

    bug = {"kind": "region", "input": "x",
           "note": "the output is clipped to +-1 for |x| >= 3, where the gradient is zero; the "
                   "rational slope is used everywhere"}

    @staticmethod
    def forward(ctx, x):
        num, den = _pade_parts(x)
        ctx.save_for_backward(x)
        inside = (x.abs() < CLIP).to(x.dtype)
        return inside * num / den + (1 - inside) * x.sign()

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        num, den = _pade_parts(x)
        slope = ((27 + 3 * x ** 2) * den - num * 18 * x) / (den * den)
        return grad_out * slope  # BUG

    example_inputs = staticmethod(_pade_inputs)


class UnheardPadeTanhQuotientSign(torch.autograd.Function):
    """Same activation; the quotient rule's two products computed apart."""

    bug = {"kind": "term_sign", "input": "x",
           "note": "(N / D)' = (N' D - N D') / D^2; the N D' product is added"}

    @staticmethod
    def forward(ctx, x):
        num, den = _pade_parts(x)
        inside = x.abs() < CLIP
        ctx.save_for_backward(x, num, den)
        ctx.inside = inside
        return torch.where(inside, num / den, x.sign())

    @staticmethod
    def backward(ctx, grad_out):
        x, num, den = ctx.saved_tensors
        first = (27 + 3 * x * x) * den
        second = num * (18 * x)
        slope = (first + second) / den ** 2  # BUG
        return torch.where(ctx.inside, grad_out * slope, torch.zeros_like(grad_out))

    example_inputs = staticmethod(_pade_inputs)


class UnheardPadeTanhIdentity(torch.autograd.Function):
    """Same activation; backward by the tanh identity."""

    bug = {"kind": "none", "input": "x",
           "note": "1 - f^2 is the derivative of tanh, not of its Pade approximant: an entirely "
                   "wrong formula (close, but not the derivative)"}

    @staticmethod
    def forward(ctx, x):
        num, den = _pade_parts(x)
        y = torch.where(x.abs() < CLIP, num / den, x.sign())
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        slope = torch.where(x.abs() < CLIP, 1 - y * y, torch.zeros_like(y))  # BUG
        return grad_out * slope

    example_inputs = staticmethod(_pade_inputs)


# ----------------------------------------------------------------------------- rational gate
def _gate_inputs():
    g = torch.Generator().manual_seed(93)
    return (torch.randn(3, 4, generator=g, dtype=torch.float64),
            torch.rand(3, 4, generator=g, dtype=torch.float64) + 0.3)


class UnheardRationalGate(torch.autograd.Function):
    """x^2 / (x^2 + b), a smooth gate with a per-element softness b > 0."""

    bug = None

    @staticmethod
    def forward(ctx, x, b):
        den = x * x + b
        ctx.save_for_backward(x, b, den)
        return x * x / den

    @staticmethod
    def backward(ctx, grad_out):
        x, b, den = ctx.saved_tensors
        inv2 = 1.0 / (den * den)
        return grad_out * 2 * x * b * inv2, -grad_out * x * x * inv2

    example_inputs = staticmethod(_gate_inputs)


class UnheardRationalGateReturnOrder(torch.autograd.Function):
    """Same gate; the two partials named after the variable they belong to."""

    bug = {"kind": "swapped", "input": "x",
           "note": "the gradients of x and b are returned in each other's place (same shape)"}

    @staticmethod
    def forward(ctx, x, b):
        ctx.save_for_backward(x, b)
        return x ** 2 / (x ** 2 + b)

    @staticmethod
    def backward(ctx, grad_out):
        x, b = ctx.saved_tensors
        den = x ** 2 + b
        d_x = 2 * x * b / den ** 2
        d_b = -(x ** 2) / den ** 2
        return grad_out * d_b, grad_out * d_x  # BUG

    example_inputs = staticmethod(_gate_inputs)


class UnheardRationalGateLogSlope(torch.autograd.Function):
    """Same gate; the author's derivation of the x gradient went astray."""

    bug = {"kind": "none", "input": "x",
           "note": "2x / (x^2 + b) is the derivative of log(x^2 + b), not of the gate: an "
                   "entirely wrong formula"}

    @staticmethod
    def forward(ctx, x, b):
        den = x * x + b
        ctx.save_for_backward(x, den)
        return x * x / den

    @staticmethod
    def backward(ctx, grad_out):
        x, den = ctx.saved_tensors
        grad_x = grad_out * 2 * x / den  # BUG
        grad_b = -grad_out * (x / den) ** 2
        return grad_x, grad_b

    example_inputs = staticmethod(_gate_inputs)
