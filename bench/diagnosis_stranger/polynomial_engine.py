import gradcli as torch

# Polynomials and splines on gradcli's engine: Horner evaluation by a Python loop, a cubic Hermite
# spline at fixed unit knots (values and slopes learnable), a piecewise-linear spline at fixed knots.


def _horner_inputs():
    gen = torch.Generator().manual_seed(801)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    coeffs = torch.tensor([0.5, -1.0, 0.3, 0.8], dtype=torch.float64)  # c0 + c1 x + c2 x^2 + c3 x^3
    return x, coeffs


def _horner(x, coeffs):
    n = coeffs.shape[0]
    y = torch.zeros_like(x) + coeffs[n - 1]
    for k in range(n - 2, -1, -1):
        y = y * x + coeffs[k]
    return y


class StrangerHornerPolynomial(torch.autograd.Function):
    """p(x) = sum_k c_k x^k evaluated by Horner's rule, elementwise."""

    bug = None

    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        return _horner(x, coeffs)

    @staticmethod
    def backward(ctx, grad_out):
        x, coeffs = ctx.saved_tensors
        n = coeffs.shape[0]
        # p'(x) by differentiating the Horner recurrence alongside p
        p = torch.zeros_like(x) + coeffs[n - 1]
        dp = torch.zeros_like(x)
        for k in range(n - 2, -1, -1):
            dp = dp * x + p
            p = p * x + coeffs[k]
        grads = []
        power = torch.ones_like(x)
        for k in range(n):
            grads.append((grad_out * power).sum())
            power = power * x
        return grad_out * dp, torch.stack(grads)

    @staticmethod
    def example_inputs():
        return _horner_inputs()


class StrangerHornerPolynomialPowersHighFirst(torch.autograd.Function):
    """Horner polynomial whose coefficient gradient is built in the recurrence's order."""

    bug = {"kind": "missing_flip", "input": "coeffs",
           "note": "the powers x^0, x^1, ... are paired with the coefficients as Horner visits "
                   "them (highest first), so the coefficient gradient comes out reversed"}

    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        return _horner(x, coeffs)

    @staticmethod
    def backward(ctx, grad_out):
        x, coeffs = ctx.saved_tensors
        n = coeffs.shape[0]
        deriv = torch.zeros_like(x)
        for k in range(1, n):
            deriv = deriv + k * coeffs[k] * x ** (k - 1)
        grad_coeffs = torch.zeros_like(coeffs)
        power = torch.ones_like(x)
        for k in reversed(range(n)):
            grad_coeffs[k] = (grad_out * power).sum()  # BUG
            power = power * x
        return grad_out * deriv, grad_coeffs

    @staticmethod
    def example_inputs():
        return _horner_inputs()


class StrangerHornerPolynomialDerivativeOnly(torch.autograd.Function):
    """Horner polynomial, the derivative polynomial evaluated by Horner too."""

    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "x's gradient is p'(x) alone, not grad_out * p'(x)"}

    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        return _horner(x, coeffs)

    @staticmethod
    def backward(ctx, grad_out):
        x, coeffs = ctx.saved_tensors
        n = coeffs.shape[0]
        d_coeffs = torch.stack([k * coeffs[k] for k in range(1, n)])
        grad_x = _horner(x, d_coeffs)  # BUG
        grad_c = torch.stack([(grad_out * x ** k).sum() for k in range(n)])
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _horner_inputs()


KNOTS = 5  # knots at 0, 1, 2, 3, 4


def _spline_inputs():
    x = torch.tensor([0.3, 0.7, 1.4, 1.9, 2.2, 3.6], dtype=torch.float64)  # segments 0, 0, 1, 1, 2, 3
    values = torch.tensor([0.0, 1.2, -0.4, 0.9, 0.3], dtype=torch.float64)
    slopes = torch.tensor([0.5, -0.2, 0.7, 0.1, -0.6], dtype=torch.float64)
    return x, values, slopes


def _segment(x):
    i = torch.floor(x).long().clamp(0, KNOTS - 2)
    return i, x - i.to(x.dtype)


def _hermite_basis(t):
    t2, t3 = t * t, t * t * t
    return 2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + t, -2 * t3 + 3 * t2, t3 - t2


class StrangerCubicHermiteSpline(torch.autograd.Function):
    """Cubic Hermite spline through (k, values[k]) with slopes[k], unit knot spacing."""

    bug = None

    @staticmethod
    def forward(ctx, x, values, slopes):
        i, t = _segment(x)
        h00, h10, h01, h11 = _hermite_basis(t)
        ctx.save_for_backward(values, slopes, i, t)
        return h00 * values[i] + h10 * slopes[i] + h01 * values[i + 1] + h11 * slopes[i + 1]

    @staticmethod
    def backward(ctx, grad_out):
        values, slopes, i, t = ctx.saved_tensors
        h00, h10, h01, h11 = _hermite_basis(t)
        d00, d10 = 6 * t * t - 6 * t, 3 * t * t - 4 * t + 1
        d01, d11 = -6 * t * t + 6 * t, 3 * t * t - 2 * t
        grad_x = grad_out * (d00 * values[i] + d10 * slopes[i] + d01 * values[i + 1] + d11 * slopes[i + 1])
        grad_v = torch.zeros_like(values).index_add_(0, i, grad_out * h00).index_add_(0, i + 1, grad_out * h01)
        grad_m = torch.zeros_like(slopes).index_add_(0, i, grad_out * h10).index_add_(0, i + 1, grad_out * h11)
        return grad_x, grad_v, grad_m

    @staticmethod
    def example_inputs():
        return _spline_inputs()


class StrangerCubicHermiteSplineAssignedValues(torch.autograd.Function):
    """Hermite spline whose value gradient is written per knot side by indexed assignment."""

    bug = {"kind": "not_accumulated", "input": "values",
           "note": "grad_v[i] = ... keeps one query per segment; two queries share segments 0 and 1"}

    @staticmethod
    def forward(ctx, x, values, slopes):
        i, t = _segment(x)
        basis = _hermite_basis(t)
        ctx.basis = basis
        ctx.save_for_backward(x, values, slopes, i, t)
        left = basis[0] * values[i] + basis[1] * slopes[i]
        right = basis[2] * values[i + 1] + basis[3] * slopes[i + 1]
        return left + right

    @staticmethod
    def backward(ctx, grad_out):
        x, values, slopes, i, t = ctx.saved_tensors
        h00, h10, h01, h11 = ctx.basis
        grad_v = torch.zeros_like(values)
        grad_v[i] = grad_out * h00  # BUG
        grad_v.index_add_(0, i + 1, grad_out * h01)
        grad_m = torch.zeros_like(slopes)
        grad_m.index_add_(0, i, grad_out * h10)
        grad_m.index_add_(0, i + 1, grad_out * h11)
        dt = (6 * t * t - 6 * t) * (values[i] - values[i + 1]) \
            + (3 * t * t - 4 * t + 1) * slopes[i] + (3 * t * t - 2 * t) * slopes[i + 1]
        return grad_out * dt, grad_v, grad_m

    @staticmethod
    def example_inputs():
        return _spline_inputs()


class StrangerCubicHermiteSplineSecantSlope(torch.autograd.Function):
    """Hermite spline whose query gradient was taken from the knots around it."""

    bug = {"kind": "none", "input": "x",
           "note": "x's gradient is the secant slope values[i+1] - values[i] of its segment, not "
                   "the derivative of the Hermite cubic"}

    @staticmethod
    def forward(ctx, x, values, slopes):
        i, t = _segment(x)
        h00, h10, h01, h11 = _hermite_basis(t)
        ctx.save_for_backward(values, slopes, i, t)
        return h00 * values[i] + h10 * slopes[i] + h01 * values[i + 1] + h11 * slopes[i + 1]

    @staticmethod
    def backward(ctx, grad_out):
        values, slopes, i, t = ctx.saved_tensors
        h00, h10, h01, h11 = _hermite_basis(t)
        secant = values[i + 1] - values[i]
        grad_x = grad_out * secant  # BUG
        grad_v = torch.zeros_like(values)
        grad_v.index_add_(0, i, grad_out * h00)
        grad_v.index_add_(0, i + 1, grad_out * h01)
        grad_m = torch.zeros_like(slopes)
        grad_m.index_add_(0, i, grad_out * h10)
        grad_m.index_add_(0, i + 1, grad_out * h11)
        return grad_x, grad_v, grad_m

    @staticmethod
    def example_inputs():
        return _spline_inputs()


def _linear_spline_inputs():
    x = torch.tensor([0.2, 0.6, 1.5, 2.1, 2.8, 1.1], dtype=torch.float64)
    values = torch.tensor([1.0, -0.5, 0.7, 0.2], dtype=torch.float64)  # at knots 0, 1, 2, 3
    return x, values


class StrangerPiecewiseLinearSpline(torch.autograd.Function):
    """Linear interpolation of values at knots 0, 1, 2, 3."""

    bug = None

    @staticmethod
    def forward(ctx, x, values):
        i = torch.floor(x).long().clamp(0, values.shape[0] - 2)
        t = x - i.to(x.dtype)
        ctx.save_for_backward(values, i, t)
        return (1 - t) * values[i] + t * values[i + 1]

    @staticmethod
    def backward(ctx, grad_out):
        values, i, t = ctx.saved_tensors
        grad_x = grad_out * (values[i + 1] - values[i])
        grad_values = torch.zeros_like(values)
        grad_values.index_add_(0, i, grad_out * (1 - t))
        grad_values.index_add_(0, i + 1, grad_out * t)
        return grad_x, grad_values

    @staticmethod
    def example_inputs():
        return _linear_spline_inputs()


class StrangerPiecewiseLinearSplineGridQueries(torch.autograd.Function):
    """Linear spline whose author assumed the queries were a fixed sampling grid."""

    bug = {"kind": "zero", "input": "x",
           "note": "x's gradient (the segment slope) is never returned: None for a "
                   "differentiable query"}

    @staticmethod
    def forward(ctx, x, values):
        left = torch.floor(x).long().clamp(0, 2)
        frac = x - left.to(x.dtype)
        ctx.save_for_backward(left, frac)
        ctx.n = values.shape[0]
        return torch.lerp(values[left], values[left + 1], frac)

    @staticmethod
    def backward(ctx, grad_out):
        left, frac = ctx.saved_tensors
        grad_values = torch.zeros(ctx.n, dtype=grad_out.dtype)
        grad_values = grad_values.index_add(0, left, (1 - frac) * grad_out)
        grad_values = grad_values.index_add(0, left + 1, frac * grad_out)
        grad_x = None  # BUG
        return grad_x, grad_values

    @staticmethod
    def example_inputs():
        return _linear_spline_inputs()
