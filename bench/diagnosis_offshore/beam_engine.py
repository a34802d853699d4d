import gradcli as torch
import math

"""Gaussian beam optics on gradcli's engine: the intensity of a TEM00 beam with a learned waist w0,
I(r, z) = (w0 / w(z))^2 exp(-2 r^2 / w(z)^2), w(z)^2 = w0^2 (1 + (z / zR)^2), zR = pi w0^2 / lambda
(lambda a float), and the power through a circular aperture, P = 1 - exp(-2 a^2 / w^2)."""


def _beam_inputs():
    gen = torch.Generator().manual_seed(8)
    r = torch.rand(8, generator=gen, dtype=torch.float64) * 1.5 + 0.1
    z = torch.rand(8, generator=gen, dtype=torch.float64) * 4.0 - 2.0
    w0 = torch.tensor([0.9], dtype=torch.float64)
    return r, z, w0, 2.0


def _beam_forward(ctx, r, z, w0, wavelength):
    zr = math.pi * w0 * w0 / wavelength
    a = z / zr
    q = 1 + a * a
    w2 = w0 * w0 * q
    inten = torch.exp(-2 * r * r / w2) / q
    ctx.save_for_backward(r, z, w0, inten)
    ctx.wavelength = wavelength
    return inten


def _beam_parts(ctx):
    r, z, w0, inten = ctx.saved_tensors
    zr = math.pi * w0 * w0 / ctx.wavelength
    a = z / zr
    q = 1 + a * a
    w2 = w0 * w0 * q
    return r, z, w0, inten, zr, a, q, w2


class OffshoreGaussianBeam(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        dlog_dq = 2 * r * r / (w0 * w0 * q * q) - 1 / q
        grad_r = grad_out * inten * (-4 * r / w2)
        grad_z = grad_out * inten * dlog_dq * (2 * a / zr)
        dlog_dw0 = 4 * r * r / (w0 ** 3 * q) + dlog_dq * (-4 * a * a / w0)
        grad_w0 = (grad_out * inten * dlog_dw0).sum().reshape(1)
        return grad_r, grad_z, grad_w0, None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


class OffshoreGaussianBeamLog(torch.autograd.Function):
    """The same beam; backward through log I = -2 r^2 / w^2 - log q, one chain at a time."""

    bug = None

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        g = grad_out * inten                      # d/d(log I)
        g_w2 = g * 2 * r * r / (w2 * w2)          # log I has -2 r^2 / w2
        g_q = g_w2 * w0 * w0 - g / q
        g_a = g_q * 2 * a
        grad_z = g_a / zr
        g_zr = -(g_a * a / zr).sum()
        grad_w0 = (g_w2 * 2 * w0 * q).sum() + g_zr * 2 * math.pi * w0 / ctx.wavelength
        return g * (-4 * r / w2), grad_z, grad_w0.reshape(1), None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


class OffshoreGaussianBeamRadialHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "r",
           "note": "d/dr of -2 r^2 / w^2 written -2 r / w^2: the chain rule's factor 2 of r^2 is forgotten"}

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        dlog_dq = 2 * r * r / (w0 * w0 * q * q) - 1 / q
        grad_r = grad_out * inten * (-2 * r / w2)  # BUG
        grad_z = grad_out * inten * dlog_dq * (2 * a / zr)
        dlog_dw0 = 4 * r * r / (w0 ** 3 * q) + dlog_dq * (-4 * a * a / w0)
        grad_w0 = (grad_out * inten * dlog_dw0).sum().reshape(1)
        return grad_r, grad_z, grad_w0, None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


class OffshoreGaussianBeamNoRayleighChain(torch.autograd.Function):
    bug = {"kind": "scale", "input": "z",
           "note": "dq/dz written 2 a instead of 2 a / zR (zR is the same for every point: a constant factor)"}

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        dlog_dq = 2 * r * r / (w0 * w0 * q * q) - 1 / q
        grad_r = grad_out * inten * (-4 * r / w2)
        grad_z = grad_out * inten * dlog_dq * (2 * a)  # BUG
        dlog_dw0 = 4 * r * r / (w0 ** 3 * q) + dlog_dq * (-4 * a * a / w0)
        grad_w0 = (grad_out * inten * dlog_dw0).sum().reshape(1)
        return grad_r, grad_z, grad_w0, None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


class OffshoreGaussianBeamWaistNoRayleigh(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "w0",
           "note": "the waist gradient keeps only the w0^2 of w(z)^2; the path through zR = pi w0^2 / lambda is dropped"}

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        dlog_dq = 2 * r * r / (w0 * w0 * q * q) - 1 / q
        grad_r = grad_out * inten * (-4 * r / w2)
        grad_z = grad_out * inten * dlog_dq * (2 * a / zr)
        dlog_dw0 = 4 * r * r / (w0 ** 3 * q)  # BUG
        grad_w0 = (grad_out * inten * dlog_dw0).sum().reshape(1)
        return grad_r, grad_z, grad_w0, None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


class OffshoreGaussianBeamIgnoresGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "r",
           "note": "the radial gradient is dI/dr alone, grad_out never multiplied in"}

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        dlog_dq = 2 * r * r / (w0 * w0 * q * q) - 1 / q
        grad_r = inten * (-4 * r / w2)  # BUG
        grad_z = grad_out * inten * dlog_dq * (2 * a / zr)
        dlog_dw0 = 4 * r * r / (w0 ** 3 * q) + dlog_dq * (-4 * a * a / w0)
        grad_w0 = (grad_out * inten * dlog_dw0).sum().reshape(1)
        return grad_r, grad_z, grad_w0, None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


class OffshoreGaussianBeamZGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "z",
           "note": "the axial gradient guessed as grad * I * z / zR^2, no chain through w(z) at all"}

    @staticmethod
    def forward(ctx, r, z, w0, wavelength):
        return _beam_forward(ctx, r, z, w0, wavelength)

    @staticmethod
    def backward(ctx, grad_out):
        r, z, w0, inten, zr, a, q, w2 = _beam_parts(ctx)
        dlog_dq = 2 * r * r / (w0 * w0 * q * q) - 1 / q
        grad_r = grad_out * inten * (-4 * r / w2)
        grad_z = grad_out * inten * z / (zr * zr)  # BUG
        dlog_dw0 = 4 * r * r / (w0 ** 3 * q) + dlog_dq * (-4 * a * a / w0)
        grad_w0 = (grad_out * inten * dlog_dw0).sum().reshape(1)
        return grad_r, grad_z, grad_w0, None

    @staticmethod
    def example_inputs():
        return _beam_inputs()


def _aperture_inputs():
    gen = torch.Generator().manual_seed(9)
    a = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.3
    w = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.6
    return a, w


class OffshoreAperturePower(torch.autograd.Function):
    """Fraction of a Gaussian beam's power through a circular aperture of radius a (beam radius w)."""

    bug = None

    @staticmethod
    def forward(ctx, a, w):
        e = torch.exp(-2 * a * a / (w * w))
        ctx.save_for_backward(a, w, e)
        return 1 - e

    @staticmethod
    def backward(ctx, grad_out):
        a, w, e = ctx.saved_tensors
        grad_a = grad_out * e * 4 * a / (w * w)
        grad_w = -grad_out * e * 4 * a * a / (w * w * w)
        return grad_a, grad_w

    @staticmethod
    def example_inputs():
        return _aperture_inputs()


class OffshoreAperturePowerSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "the aperture's and the beam radius' gradients are returned in each other's place (w's is wrong too)"}

    @staticmethod
    def forward(ctx, a, w):
        e = torch.exp(-2 * a * a / (w * w))
        ctx.save_for_backward(a, w, e)
        return 1 - e

    @staticmethod
    def backward(ctx, grad_out):
        a, w, e = ctx.saved_tensors
        grad_a = grad_out * e * 4 * a / (w * w)
        grad_w = -grad_out * e * 4 * a * a / (w * w * w)
        return grad_w, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return _aperture_inputs()
