"""Polynomials with learnable coefficients evaluated by Horner's rule, on gradcli's engine."""
import gradcli as torch


def _poly_inputs(seed, n=6, k=4):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, dtype=torch.float64, generator=gen),
            torch.randn(k, dtype=torch.float64, generator=gen))


def _horner(x, coeffs):
    """p(x) = c0 + x (c1 + x (c2 + ...)) and p'(x), both by Horner's rule."""
    K = coeffs.shape[0]
    p = coeffs[K - 1] * torch.ones_like(x)
    dp = torch.zeros_like(x)
    for k in reversed(range(K - 1)):
        dp = dp * x + p
        p = p * x + coeffs[k]
    return p, dp


class RemoteHorner(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        p, dp = _horner(x, coeffs)
        ctx.save_for_backward(x, dp)
        ctx.degree = coeffs.shape[0]
        return p

    @staticmethod
    def backward(ctx, grad_p):
        x, dp = ctx.saved_tensors
        powers = [torch.ones_like(x)]
        for _ in range(ctx.degree - 1):
            powers.append(powers[-1] * x)
        grad_c = torch.stack([(grad_p * pk).sum() for pk in powers])
        return grad_p * dp, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(120)


class RemoteHornerPerSample(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "coeffs",
           "note": "the coefficient gradient is left per sample, (K, N), never summed over the N points"}

    @staticmethod
    def forward(ctx, x, coeffs):
        p, dp = _horner(x, coeffs)
        ctx.save_for_backward(x, dp)
        ctx.degree = coeffs.shape[0]
        return p

    @staticmethod
    def backward(ctx, grad_p):
        x, dp = ctx.saved_tensors
        powers = [torch.ones_like(x)]
        for _ in range(ctx.degree - 1):
            powers.append(powers[-1] * x)
        grad_c = torch.stack([grad_p * pk for pk in powers])  # BUG
        return grad_p * dp, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(121)


class RemoteHornerPowersReversed(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "coeffs",
           "note": "powers collected in Horner's order (highest first) and not reversed: c_k gets x^(K-1-k)"}

    @staticmethod
    def forward(ctx, x, coeffs):
        p, dp = _horner(x, coeffs)
        ctx.save_for_backward(x, dp)
        ctx.degree = coeffs.shape[0]
        return p

    @staticmethod
    def backward(ctx, grad_p):
        x, dp = ctx.saved_tensors
        K = ctx.degree
        grads = []
        for k in reversed(range(K)):
            grads.append((grad_p * x ** k).sum())
        grad_c = torch.stack(grads)  # BUG
        return grad_p * dp, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(122)


class RemoteHornerDerivativeFromTwo(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "p'(x) = sum_k k c_k x^(k-1) summed from k = 2: the constant term c_1 of the derivative is lost"}

    @staticmethod
    def forward(ctx, x, coeffs):
        p, _ = _horner(x, coeffs)
        ctx.save_for_backward(x, coeffs)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        x, coeffs = ctx.saved_tensors
        K = coeffs.shape[0]
        dp = torch.zeros_like(x)
        for k in range(2, K):  # BUG
            dp = dp + k * coeffs[k] * x ** (k - 1)
        grad_c = torch.stack([(grad_p * x ** k).sum() for k in range(K)])
        return grad_p * dp, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(123)


class RemoteHornerValueForSlope(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the saved p(x) (the output) is used where the saved slope p'(x) is needed"}

    @staticmethod
    def forward(ctx, x, coeffs):
        p, dp = _horner(x, coeffs)
        ctx.save_for_backward(x, p, dp)
        ctx.degree = coeffs.shape[0]
        return p

    @staticmethod
    def backward(ctx, grad_p):
        x, p, dp = ctx.saved_tensors
        grad_c = torch.stack([(grad_p * x ** k).sum() for k in range(ctx.degree)])
        grad_x = grad_p * p  # BUG
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(124)


class RemoteHornerDamped(torch.autograd.Function):
    """p(x) exp(-x^2 / 2): a polynomial times a Gaussian envelope."""
    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        p, dp = _horner(x, coeffs)
        env = torch.exp(-0.5 * x * x)
        ctx.save_for_backward(x, p, dp, env)
        return p * env

    @staticmethod
    def backward(ctx, grad_y):
        x, p, dp, env = ctx.saved_tensors
        grad_x = grad_y * env * (dp - x * p)
        g = grad_y * env
        grad_c = torch.stack([(g * x ** k).sum() for k in range(4)])
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(125)


class RemoteEvenPolynomial(torch.autograd.Function):
    """q(x) = p(x^2): an even polynomial, Horner in x^2."""
    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        s = x * x
        p, dp = _horner(s, coeffs)
        ctx.save_for_backward(x, s, dp)
        return p

    @staticmethod
    def backward(ctx, grad_q):
        x, s, dp = ctx.saved_tensors
        powers = [torch.ones_like(s)]
        for _ in range(3):
            powers.append(powers[-1] * s)
        return grad_q * 2 * x * dp, torch.stack([(grad_q * pk).sum() for pk in powers])

    @staticmethod
    def example_inputs():
        return _poly_inputs(126)


class RemoteHornerRatio(torch.autograd.Function):
    """p(x) / (1 + x^2), a rational function whose numerator's coefficients are learned."""
    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        p, dp = _horner(x, coeffs)
        den = 1 + x * x
        ctx.save_for_backward(x, p, dp, den)
        return p / den

    @staticmethod
    def backward(ctx, grad_r):
        x, p, dp, den = ctx.saved_tensors
        grad_x = grad_r * (dp * den - p * 2 * x) / (den * den)
        g = grad_r / den
        grad_c = torch.stack([(g * x ** k).sum() for k in range(4)])
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _poly_inputs(127)
