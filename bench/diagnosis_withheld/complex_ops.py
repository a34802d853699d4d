"""Complex-valued ops (real torch only). torch's convention: for a real loss L of z = x + iy the
gradient is dL/dx + i dL/dy, so a holomorphic f passes grad * conj(f'(z)) back."""
import torch


def _complex_inputs(count, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(3, 4, dtype=torch.complex128, generator=gen).requires_grad_()
                 for _ in range(count))


class WithheldComplexMultiply(torch.autograd.Function):
    """w = a * b elementwise."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return grad_out * b.conj(), grad_out * a.conj()

    @staticmethod
    def example_inputs():
        return _complex_inputs(2, 51)


class WithheldComplexMultiplyOwnFactor(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "each factor is multiplied by its own conjugate instead of the other factor's"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return grad_out * a.conj(), grad_out * b.conj()  # BUG

    @staticmethod
    def example_inputs():
        return _complex_inputs(2, 51)


class WithheldComplexAbs(torch.autograd.Function):
    """|z| (real output); gradient grad * z / |z|."""
    bug = None

    @staticmethod
    def forward(ctx, z):
        r = z.abs()
        ctx.save_for_backward(z, r)
        return r

    @staticmethod
    def backward(ctx, grad_out):
        z, r = ctx.saved_tensors
        return grad_out * z / r

    @staticmethod
    def example_inputs():
        return _complex_inputs(1, 52)


class WithheldComplexAbsConjugated(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "z",
           "note": "returns conj(z) / |z|: the imaginary part dL/dy enters with the wrong sign"}

    @staticmethod
    def forward(ctx, z):
        r = z.abs()
        ctx.save_for_backward(z, r)
        return r

    @staticmethod
    def backward(ctx, grad_out):
        z, r = ctx.saved_tensors
        return grad_out * z.conj() / r  # BUG

    @staticmethod
    def example_inputs():
        return _complex_inputs(1, 52)


class WithheldComplexAngle(torch.autograd.Function):
    """arg(z) (real output); gradient grad * i z / |z|^2."""
    bug = None

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z.angle()

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        return grad_out * 1j * z / z.abs().pow(2)

    @staticmethod
    def example_inputs():
        return _complex_inputs(1, 53)


class WithheldComplexAngleLogAbsGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "z",
           "note": "returns z / |z|^2, the gradient of log|z| (the real part of log z), not of arg z"}

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z.angle()

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        return grad_out * z / z.abs().pow(2)  # BUG

    @staticmethod
    def example_inputs():
        return _complex_inputs(1, 53)
