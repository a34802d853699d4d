"""Polynomial and orthogonal series with learned coefficients: Horner's rule, Chebyshev and
Legendre series by their three-term recurrences, evaluated at learned points."""
import torch


def _points():
    gen = torch.Generator().manual_seed(11)
    coeffs = torch.randn(5, dtype=torch.float64, generator=gen)
    x = torch.rand(6, dtype=torch.float64, generator=gen) * 1.6 - 0.8
    return coeffs.requires_grad_(), x.requires_grad_()


# ------------------------------------------------------------------------------ Horner's rule
def _horner(coeffs, x):
    y = torch.zeros_like(x) + coeffs[-1]
    for k in reversed(range(coeffs.shape[0] - 1)):
        y = y * x + coeffs[k]
    return y


class BeyondHorner(torch.autograd.Function):
    """p(x) = sum_k c_k x^k by Horner's rule; dp/dx by the derivative carried along the loop."""
    bug = None

    @staticmethod
    def forward(ctx, coeffs, x):
        ctx.save_for_backward(coeffs, x)
        return _horner(coeffs, x)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x = ctx.saved_tensors
        K = coeffs.shape[0]
        powers = torch.stack([x ** k for k in range(K)])  # (K, N)
        grad_coeffs = (powers * grad_out).sum(dim=1)
        y = torch.zeros_like(x) + coeffs[-1]
        d = torch.zeros_like(x)
        for k in reversed(range(K - 1)):
            d = d * x + y
            y = y * x + coeffs[k]
        return grad_coeffs, grad_out * d

    @staticmethod
    def example_inputs():
        return _points()


class BeyondHornerCoeffsNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "coeffs",
           "note": "the coefficient gradient sums the powers x^k over the points without weighting them by grad_out"}

    @staticmethod
    def forward(ctx, coeffs, x):
        ctx.save_for_backward(coeffs, x)
        return _horner(coeffs, x)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x = ctx.saved_tensors
        K = coeffs.shape[0]
        powers = torch.stack([x ** k for k in range(K)])
        grad_coeffs = powers.sum(dim=1)  # BUG
        y = torch.zeros_like(x) + coeffs[-1]
        d = torch.zeros_like(x)
        for k in reversed(range(K - 1)):
            d = d * x + y
            y = y * x + coeffs[k]
        return grad_coeffs, grad_out * d

    @staticmethod
    def example_inputs():
        return _points()


class BeyondHornerDerivStale(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the derivative accumulator is updated after y, so it carries the new value of y instead of the previous one"}

    @staticmethod
    def forward(ctx, coeffs, x):
        ctx.save_for_backward(coeffs, x)
        return _horner(coeffs, x)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x = ctx.saved_tensors
        K = coeffs.shape[0]
        powers = torch.stack([x ** k for k in range(K)])
        grad_coeffs = (powers * grad_out).sum(dim=1)
        y = torch.zeros_like(x) + coeffs[-1]
        d = torch.zeros_like(x)
        for k in reversed(range(K - 1)):
            y = y * x + coeffs[k]
            d = d * x + y  # BUG
        return grad_coeffs, grad_out * d

    @staticmethod
    def example_inputs():
        return _points()


# ------------------------------------------------------------------------------ Chebyshev series
def _chebyshev(coeffs, x):
    T = [torch.ones_like(x), x]
    for k in range(1, coeffs.shape[0] - 1):
        T.append(2 * x * T[k] - T[k - 1])
    T = torch.stack(T[:coeffs.shape[0]])  # (K, N)
    return T, coeffs @ T


def _cheb_inputs():
    gen = torch.Generator().manual_seed(12)
    coeffs = torch.randn(5, dtype=torch.float64, generator=gen)
    x = torch.rand(5, dtype=torch.float64, generator=gen) * 1.6 - 0.8
    return coeffs.requires_grad_(), x.requires_grad_()


class BeyondChebyshev(torch.autograd.Function):
    """f(x) = sum_k c_k T_k(x); T'_{k+1} = 2 T_k + 2x T'_k - T'_{k-1}."""
    bug = None

    @staticmethod
    def forward(ctx, coeffs, x):
        T, y = _chebyshev(coeffs, x)
        ctx.save_for_backward(coeffs, x, T)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, T = ctx.saved_tensors
        grad_coeffs = (T * grad_out[None, :]).sum(dim=1)
        dT = [torch.zeros_like(x), torch.ones_like(x)]
        for k in range(1, coeffs.shape[0] - 1):
            dT.append(2 * T[k] + 2 * x * dT[k] - dT[k - 1])
        dT = torch.stack(dT[:coeffs.shape[0]])
        return grad_coeffs, grad_out * (coeffs @ dT)

    @staticmethod
    def example_inputs():
        return _cheb_inputs()


class BeyondChebyshevDerivDropT(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the derivative recurrence differentiates 2x T_k as 2x T'_k only and drops the product-rule term 2 T_k"}

    @staticmethod
    def forward(ctx, coeffs, x):
        T, y = _chebyshev(coeffs, x)
        ctx.save_for_backward(coeffs, x, T)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, T = ctx.saved_tensors
        grad_coeffs = (T * grad_out[None, :]).sum(dim=1)
        dT = [torch.zeros_like(x), torch.ones_like(x)]
        for k in range(1, coeffs.shape[0] - 1):
            dT.append(2 * x * dT[k] - dT[k - 1])  # BUG
        dT = torch.stack(dT[:coeffs.shape[0]])
        return grad_coeffs, grad_out * (coeffs @ dT)

    @staticmethod
    def example_inputs():
        return _cheb_inputs()


class BeyondChebyshevDerivPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the derivative recurrence adds T'_{k-1} where the three-term recurrence subtracts it"}

    @staticmethod
    def forward(ctx, coeffs, x):
        T, y = _chebyshev(coeffs, x)
        ctx.save_for_backward(coeffs, x, T)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, T = ctx.saved_tensors
        grad_coeffs = (T * grad_out[None, :]).sum(dim=1)
        dT = [torch.zeros_like(x), torch.ones_like(x)]
        for k in range(1, coeffs.shape[0] - 1):
            dT.append(2 * T[k] + 2 * x * dT[k] + dT[k - 1])  # BUG
        dT = torch.stack(dT[:coeffs.shape[0]])
        return grad_coeffs, grad_out * (coeffs @ dT)

    @staticmethod
    def example_inputs():
        return _cheb_inputs()


class BeyondChebyshevCoeffAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "coeffs",
           "note": "the coefficient gradient sums T_k(x_n) grad_n over the degrees (dim 0) instead of over the points (dim 1)"}

    @staticmethod
    def forward(ctx, coeffs, x):
        T, y = _chebyshev(coeffs, x)
        ctx.save_for_backward(coeffs, x, T)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, T = ctx.saved_tensors
        grad_coeffs = (T * grad_out[None, :]).sum(dim=0)  # BUG
        dT = [torch.zeros_like(x), torch.ones_like(x)]
        for k in range(1, coeffs.shape[0] - 1):
            dT.append(2 * T[k] + 2 * x * dT[k] - dT[k - 1])
        dT = torch.stack(dT[:coeffs.shape[0]])
        return grad_coeffs, grad_out * (coeffs @ dT)

    @staticmethod
    def example_inputs():
        return _cheb_inputs()


# ------------------------------------------------------------------------------ Legendre series
def _legendre(coeffs, x):
    P = [torch.ones_like(x), x]
    for k in range(1, coeffs.shape[0] - 1):
        P.append(((2 * k + 1) * x * P[k] - k * P[k - 1]) / (k + 1))
    P = torch.stack(P[:coeffs.shape[0]])
    return P, torch.einsum("k,kn->n", coeffs, P)


class BeyondLegendre(torch.autograd.Function):
    """f(x) = sum_k c_k P_k(x); P'_{k+1} = P'_{k-1} + (2k+1) P_k."""
    bug = None

    @staticmethod
    def forward(ctx, coeffs, x):
        P, y = _legendre(coeffs, x)
        ctx.save_for_backward(coeffs, x, P)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, P = ctx.saved_tensors
        grad_coeffs = torch.einsum("kn,n->k", P, grad_out)
        dP = [torch.zeros_like(x), torch.ones_like(x)]
        for k in range(1, coeffs.shape[0] - 1):
            dP.append(dP[k - 1] + (2 * k + 1) * P[k])
        dP = torch.stack(dP[:coeffs.shape[0]])
        grad_x = grad_out * torch.einsum("k,kn->n", coeffs, dP)
        return grad_coeffs, grad_x

    @staticmethod
    def example_inputs():
        return _points()


class BeyondLegendreMonomialRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "P_k' is taken as k P_{k-1}, the monomial power rule, which is not the Legendre derivative"}

    @staticmethod
    def forward(ctx, coeffs, x):
        P, y = _legendre(coeffs, x)
        ctx.save_for_backward(coeffs, x, P)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, P = ctx.saved_tensors
        grad_coeffs = torch.einsum("kn,n->k", P, grad_out)
        dP = torch.stack([torch.zeros_like(x)] + [k * P[k - 1] for k in range(1, coeffs.shape[0])])  # BUG
        grad_x = grad_out * torch.einsum("k,kn->n", coeffs, dP)
        return grad_coeffs, grad_x

    @staticmethod
    def example_inputs():
        return _points()


class BeyondLegendreFixedNodes(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "the evaluation points are treated as fixed quadrature nodes and get no gradient although they are learned"}

    @staticmethod
    def forward(ctx, coeffs, x):
        P, y = _legendre(coeffs, x)
        ctx.save_for_backward(coeffs, x, P)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, x, P = ctx.saved_tensors
        grad_coeffs = torch.einsum("kn,n->k", P, grad_out)
        return grad_coeffs, None  # BUG

    @staticmethod
    def example_inputs():
        return _points()
