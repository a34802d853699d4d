import gradcli as torch

"""Element-wise physics on gradcli's engine (runs without PyTorch): a Lennard-Jones pair energy
on given distances, quadratic drag -c v|v| and a Morse potential with a learnable width."""

SIG = 1.0
R0 = 1.0


def _lj_inputs():
    g = torch.Generator().manual_seed(81)
    r = torch.rand(3, 4, generator=g, dtype=torch.float64) * 0.6 + 0.95
    eps = torch.rand(4, generator=g, dtype=torch.float64) + 0.5
    return r, eps


def _powers(r):
    s6 = (SIG / r) ** 6
    return s6, s6 * s6


# ---------------------------------------------------------------------------- Lennard-Jones
class UnheardLennardJones(torch.autograd.Function):
    """E = 4 eps ((s/r)^12 - (s/r)^6) per pair distance, one well depth per column."""

    bug = None

    @staticmethod
    def forward(ctx, r, eps):
        s6, s12 = _powers(r)
        ctx.save_for_backward(r, eps)
        return 4 * eps * (s12 - s6)

    @staticmethod
    def backward(ctx, grad_e):
        r, eps = ctx.saved_tensors
        s6, s12 = _powers(r)
        de_dr = 4 * eps * (-12 * s12 + 6 * s6) / r
        return grad_e * de_dr, (grad_e * 4 * (s12 - s6)).sum(0)

    example_inputs = staticmethod(_lj_inputs)


class UnheardLennardJonesForceSign(torch.autograd.Function):
    """Same energy; the radial derivative written as a force."""

    bug = {"kind": "term_sign", "input": "r",
           "note": "d/dr (s/r)^6 = -6 (s/r)^6 / r enters E with a minus, so it contributes +6; "
                   "the attractive term is subtracted"}

    @staticmethod
    def forward(ctx, r, eps):
        inv6 = (SIG / r) ** 6
        ctx.save_for_backward(r, eps, inv6)
        return 4 * eps * (inv6 * inv6 - inv6)

    @staticmethod
    def backward(ctx, grad_e):
        r, eps, inv6 = ctx.saved_tensors
        repulsive = -12 * inv6 * inv6 / r
        attractive = 6 * inv6 / r
        de_dr = 4 * eps * (repulsive - attractive)  # BUG
        grad_eps = (4 * grad_e * (inv6 * inv6 - inv6)).sum(0)
        return grad_e * de_dr, grad_eps

    example_inputs = staticmethod(_lj_inputs)


class UnheardLennardJonesDepthFactor(torch.autograd.Function):
    """Same energy; the prefactor 4 eps kept on ctx."""

    bug = {"kind": "scale", "input": "r",
           "note": "the radial derivative uses eps instead of the prefactor 4 eps"}

    @staticmethod
    def forward(ctx, r, eps):
        s6, s12 = _powers(r)
        ctx.prefactor = 4 * eps
        ctx.save_for_backward(r, eps)
        return ctx.prefactor * (s12 - s6)

    @staticmethod
    def backward(ctx, grad_e):
        r, eps = ctx.saved_tensors
        s6, s12 = _powers(r)
        grad_r = grad_e * eps * (6 * s6 - 12 * s12) / r  # BUG
        grad_eps = (grad_e * (s12 - s6)).sum(0) * 4
        return grad_r, grad_eps

    example_inputs = staticmethod(_lj_inputs)


class UnheardLennardJonesPowerRule(torch.autograd.Function):
    """Same energy; the author differentiated r^-12 and r^-6 by hand."""

    bug = {"kind": "none", "input": "r",
           "note": "r^-12 differentiated as -12 r^-11 and r^-6 as -6 r^-5: the exponents are "
                   "off by two, an entirely wrong function of r"}

    @staticmethod
    def forward(ctx, r, eps):
        s6, s12 = _powers(r)
        ctx.save_for_backward(r, eps)
        return 4 * eps * (s12 - s6)

    @staticmethod
    def backward(ctx, grad_e):
        r, eps = ctx.saved_tensors
        de_dr = 4 * eps * (-12 * SIG ** 12 * r ** -11 + 6 * SIG ** 6 * r ** -5)  # BUG
        s6, s12 = _powers(r)
        return grad_e * de_dr, (grad_e * 4 * (s12 - s6)).sum(0)

    example_inputs = staticmethod(_lj_inputs)


# -------------------------------------------------------------------------------- drag
def _drag_inputs():
    g = torch.Generator().manual_seed(82)
    v = torch.randn(3, 4, generator=g, dtype=torch.float64)
    c = torch.rand(4, generator=g, dtype=torch.float64) + 0.2
    return v, c


class UnheardQuadraticDrag(torch.autograd.Function):
    """Drag force -c v |v|, one coefficient per column."""

    bug = None

    @staticmethod
    def forward(ctx, v, c):
        speed = v.abs()
        ctx.save_for_backward(v, c, speed)
        return -c * v * speed

    @staticmethod
    def backward(ctx, grad_f):
        v, c, speed = ctx.saved_tensors
        return grad_f * (-2.0 * c * speed), (grad_f * (-v * speed)).sum(0)

    example_inputs = staticmethod(_drag_inputs)


class UnheardQuadraticDragSquareRule(torch.autograd.Function):
    """Same drag; its author treated v |v| like v^2."""

    bug = {"kind": "wrong_variable", "input": "v",
           "note": "d(v |v|)/dv = 2 |v|; the code uses 2 v, wrong wherever v < 0"}

    @staticmethod
    def forward(ctx, v, c):
        ctx.save_for_backward(v, c)
        return -(c * v * v.abs())

    @staticmethod
    def backward(ctx, grad_f):
        v, c = ctx.saved_tensors
        slope = 2.0 * v  # BUG
        grad_v = -c * slope * grad_f
        grad_c = -(grad_f * v * v.abs()).sum(0)
        return grad_v, grad_c

    example_inputs = staticmethod(_drag_inputs)


class UnheardQuadraticDragCoefficient(torch.autograd.Function):
    """Same drag; the coefficient gradient accumulated row by row."""

    bug = {"kind": "sign", "input": "c",
           "note": "the drag is -c v|v|, so dF/dc = -v|v|; the minus is lost"}

    @staticmethod
    def forward(ctx, v, c):
        vv = v * v.abs()
        ctx.save_for_backward(vv, c, v)
        return -c * vv

    @staticmethod
    def backward(ctx, grad_f):
        vv, c, v = ctx.saved_tensors
        grad_c = torch.zeros_like(c)
        for row in range(vv.shape[0]):
            grad_c = grad_c + grad_f[row] * vv[row]  # BUG
        return -2.0 * c * v.abs() * grad_f, grad_c

    example_inputs = staticmethod(_drag_inputs)


# ------------------------------------------------------------------------------- Morse
def _morse_inputs():
    g = torch.Generator().manual_seed(83)
    r = torch.rand(3, 4, generator=g, dtype=torch.float64) + 0.6
    a = torch.rand(3, 4, generator=g, dtype=torch.float64) + 0.5
    return r, a


class UnheardMorseWell(torch.autograd.Function):
    """Morse energy (1 - exp(-a (r - r0)))^2 with a per-pair width a."""

    bug = None

    @staticmethod
    def forward(ctx, r, a):
        e = torch.exp(-a * (r - R0))
        ctx.save_for_backward(r, a, e)
        return (1 - e) ** 2

    @staticmethod
    def backward(ctx, grad_e):
        r, a, e = ctx.saved_tensors
        common = grad_e * 2 * (1 - e) * e
        return common * a, common * (r - R0)

    example_inputs = staticmethod(_morse_inputs)


class UnheardMorseWellWidth(torch.autograd.Function):
    """Same energy; each gradient written out in full."""

    bug = {"kind": "ignores_grad_output", "input": "a",
           "note": "the width gradient is dE/da alone; the incoming gradient is never "
                   "multiplied in"}

    @staticmethod
    def forward(ctx, r, a):
        ctx.save_for_backward(r, a)
        return (1 - torch.exp(-a * (r - R0))) ** 2

    @staticmethod
    def backward(ctx, grad_e):
        r, a = ctx.saved_tensors
        x = r - R0
        e = torch.exp(-a * x)
        grad_r = 2 * (1 - e) * a * e * grad_e
        grad_a = 2 * (1 - e) * x * e  # BUG
        return grad_r, grad_a

    example_inputs = staticmethod(_morse_inputs)
