"""Numerical pieces on gradcli's engine: Horner evaluation of a polynomial with learnable
coefficients, Simpson's rule with a learnable step, a Pade approximant with two learnable
coefficients, a Chebyshev series by its three-term recurrence, Kepler's equation solved by an
unrolled fixed-point iteration."""
import math

import gradcli as torch

DEGREE = 3


def _horner_inputs():
    return (torch.tensor([0.5, -1.2, 0.9, 1.6, -0.3], dtype=torch.float64),
            torch.tensor([0.8, -0.5, 1.3, 0.2], dtype=torch.float64))


def _horner_forward(ctx, x, coeffs):
    acc = coeffs[0] * torch.ones_like(x)
    for k in range(1, DEGREE + 1):
        acc = acc * x + coeffs[k]
    ctx.save_for_backward(x, coeffs)
    return acc


class FarawayHorner(torch.autograd.Function):
    """p(x) = c0 x^3 + c1 x^2 + c2 x + c3 by Horner's rule (coefficients highest power first)."""
    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        return _horner_forward(ctx, x, coeffs)

    @staticmethod
    def backward(ctx, grad_out):
        x, coeffs = ctx.saved_tensors
        dp = torch.zeros_like(x)
        for k in range(DEGREE):
            dp = dp + (DEGREE - k) * coeffs[k] * x ** (DEGREE - k - 1)
        grad_c = torch.stack([(grad_out * x ** (DEGREE - k)).sum() for k in range(DEGREE + 1)])
        return grad_out * dp, grad_c

    @staticmethod
    def example_inputs():
        return _horner_inputs()


class FarawayHornerPowersAscending(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "coeffs",
           "note": "coefficient k multiplies x^(3-k), but its gradient uses x^k (powers in the wrong order)"}

    @staticmethod
    def forward(ctx, x, coeffs):
        return _horner_forward(ctx, x, coeffs)

    @staticmethod
    def backward(ctx, grad_out):
        x, coeffs = ctx.saved_tensors
        dp = torch.zeros_like(x)
        for k in range(DEGREE):
            dp = dp + (DEGREE - k) * coeffs[k] * x ** (DEGREE - k - 1)
        grad_c = torch.stack([(grad_out * x ** k).sum() for k in range(DEGREE + 1)])  # BUG
        return grad_out * dp, grad_c

    @staticmethod
    def example_inputs():
        return _horner_inputs()


def _simpson_inputs():
    return (torch.tensor([[0.3, 1.1, -0.4, 0.8, 2.0], [-1.0, 0.2, 0.6, -0.7, 0.4]], dtype=torch.float64),
            torch.tensor([0.25], dtype=torch.float64))


def _simpson_forward(ctx, f, h):
    w = torch.tensor([1.0, 4.0, 2.0, 4.0, 1.0], dtype=f.dtype)
    s = (f * w).sum(1)
    ctx.save_for_backward(s, h, w)
    return h / 3 * s


class FarawaySimpson(torch.autograd.Function):
    """Composite Simpson's rule on 5 samples per row: h/3 (f0 + 4f1 + 2f2 + 4f3 + f4)."""
    bug = None

    @staticmethod
    def forward(ctx, f, h):
        return _simpson_forward(ctx, f, h)

    @staticmethod
    def backward(ctx, grad_out):
        s, h, w = ctx.saved_tensors
        grad_f = grad_out[:, None] * w * (h / 3)
        grad_h = (grad_out * s / 3).sum().reshape(1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _simpson_inputs()


class FarawaySimpsonWeightsOnly(torch.autograd.Function):
    bug = {"kind": "scale", "input": "f",
           "note": "the samples' gradient uses the weights times h but drops the 1/3"}

    @staticmethod
    def forward(ctx, f, h):
        return _simpson_forward(ctx, f, h)

    @staticmethod
    def backward(ctx, grad_out):
        s, h, w = ctx.saved_tensors
        grad_f = grad_out[:, None] * w * h  # BUG
        grad_h = (grad_out * s / 3).sum().reshape(1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _simpson_inputs()


def _pade_inputs():
    return (torch.tensor([[0.4, -1.3, 0.9], [1.8, -0.2, 0.7]], dtype=torch.float64),
            torch.tensor([0.3], dtype=torch.float64),
            torch.tensor([0.6], dtype=torch.float64))


def _pade_forward(ctx, x, a, b):
    num, den = x + a * x ** 3, 1 + b * x * x
    ctx.save_for_backward(x, a, b, num, den)
    return num / den


class FarawayPade(torch.autograd.Function):
    """The rational approximant (x + a x^3) / (1 + b x^2) with learnable a, b (1,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, a, b):
        return _pade_forward(ctx, x, a, b)

    @staticmethod
    def backward(ctx, grad_out):
        x, a, b, num, den = ctx.saved_tensors
        grad_x = grad_out * ((1 + 3 * a * x * x) * den - num * 2 * b * x) / den ** 2
        grad_a = (grad_out * x ** 3 / den).sum().reshape(1)
        grad_b = -(grad_out * num * x * x / den ** 2).sum().reshape(1)
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _pade_inputs()


class FarawayPadeCoefficientsCrossed(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "the numerator and denominator coefficients' gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, x, a, b):
        return _pade_forward(ctx, x, a, b)

    @staticmethod
    def backward(ctx, grad_out):
        x, a, b, num, den = ctx.saved_tensors
        grad_x = grad_out * ((1 + 3 * a * x * x) * den - num * 2 * b * x) / den ** 2
        grad_a = (grad_out * x ** 3 / den).sum().reshape(1)
        grad_b = -(grad_out * num * x * x / den ** 2).sum().reshape(1)
        return grad_x, grad_b, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return _pade_inputs()


def _cheb_inputs():
    return (torch.tensor([-0.8, -0.3, 0.1, 0.55, 0.9], dtype=torch.float64),
            torch.tensor([0.5, -0.7, 0.3, 0.9, -0.4], dtype=torch.float64))


def _cheb_polys(x, n):
    Ts = [torch.ones_like(x), x]
    for _ in range(2, n):
        Ts.append(2 * x * Ts[-1] - Ts[-2])
    return Ts


def _cheb_forward(ctx, x, c):
    Ts = _cheb_polys(x, c.shape[0])
    y = torch.zeros_like(x)
    for n, T in enumerate(Ts):
        y = y + c[n] * T
    ctx.save_for_backward(x, c)
    return y


class FarawayChebyshevSeries(torch.autograd.Function):
    """sum_n c_n T_n(x), the T_n by the recurrence T_{n+1} = 2x T_n - T_{n-1}."""
    bug = None

    @staticmethod
    def forward(ctx, x, c):
        return _cheb_forward(ctx, x, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, c = ctx.saved_tensors
        Ts = _cheb_polys(x, c.shape[0])
        dTs = [torch.zeros_like(x), torch.ones_like(x)]
        for n in range(1, c.shape[0] - 1):
            dTs.append(2 * Ts[n] + 2 * x * dTs[n] - dTs[n - 1])
        dy = torch.zeros_like(x)
        for n in range(c.shape[0]):
            dy = dy + c[n] * dTs[n]
        grad_c = torch.stack([(grad_out * T).sum() for T in Ts])
        return grad_out * dy, grad_c

    @staticmethod
    def example_inputs():
        return _cheb_inputs()


class FarawayChebyshevSeriesDerivativeRecurrence(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "differentiating T_{n+1} = 2x T_n - T_{n-1} drops the product rule's 2 T_n"}

    @staticmethod
    def forward(ctx, x, c):
        return _cheb_forward(ctx, x, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, c = ctx.saved_tensors
        Ts = _cheb_polys(x, c.shape[0])
        dTs = [torch.zeros_like(x), torch.ones_like(x)]
        for n in range(1, c.shape[0] - 1):
            dTs.append(2 * x * dTs[n] - dTs[n - 1])  # BUG
        dy = torch.zeros_like(x)
        for n in range(c.shape[0]):
            dy = dy + c[n] * dTs[n]
        grad_c = torch.stack([(grad_out * T).sum() for T in Ts])
        return grad_out * dy, grad_c

    @staticmethod
    def example_inputs():
        return _cheb_inputs()


KEPLER_STEPS = 5


def _kepler_inputs():
    return (torch.tensor([0.3, 1.2, 2.5, 4.0, 5.5], dtype=torch.float64),
            torch.tensor([0.2, 0.45, 0.3, 0.6, 0.1], dtype=torch.float64))


def _kepler_forward(ctx, M, e):
    Es = [M]
    for _ in range(KEPLER_STEPS):
        Es.append(M + e * torch.sin(Es[-1]))
    ctx.save_for_backward(e, *Es)
    return Es[-1]


class FarawayKeplerFixedPoint(torch.autograd.Function):
    """Eccentric anomaly from Kepler's equation E = M + e sin E by unrolled fixed-point steps."""
    bug = None

    @staticmethod
    def forward(ctx, M, e):
        return _kepler_forward(ctx, M, e)

    @staticmethod
    def backward(ctx, grad_out):
        e, *Es = ctx.saved_tensors
        g_E = grad_out
        g_M, g_e = torch.zeros_like(e), torch.zeros_like(e)
        for E in reversed(Es[:-1]):
            g_M = g_M + g_E
            g_e = g_e + g_E * torch.sin(E)
            g_E = g_E * e * torch.cos(E)
        return g_M + g_E, g_e

    @staticmethod
    def example_inputs():
        return _kepler_inputs()


class FarawayKeplerFixedPointMeanAnomalyOnce(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "M",
           "note": "M enters every step, but its gradient is reassigned in the loop instead of summed"}

    @staticmethod
    def forward(ctx, M, e):
        return _kepler_forward(ctx, M, e)

    @staticmethod
    def backward(ctx, grad_out):
        e, *Es = ctx.saved_tensors
        g_E = grad_out
        g_M, g_e = torch.zeros_like(e), torch.zeros_like(e)
        for E in reversed(Es[:-1]):
            g_M = g_E  # BUG
            g_e = g_e + g_E * torch.sin(E)
            g_E = g_E * e * torch.cos(E)
        return g_M + g_E, g_e

    @staticmethod
    def example_inputs():
        return _kepler_inputs()
