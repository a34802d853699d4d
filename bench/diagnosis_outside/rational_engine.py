import gradcli as torch

# Rational and periodic activations with learned coefficients and weighted least-squares losses on
# gradcli's engine (no PyTorch needed).
#
# BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.


def _seeded(*shape, seed, scale=1.0, shift=0.0, uniform=False):
    gen = torch.Generator().manual_seed(seed)
    make = torch.rand if uniform else torch.randn
    return make(*shape, generator=gen, dtype=torch.float64) * scale + shift


# ------------------------------------------------------------------------ rational activation
def _pade_parts(x, p, q):
    """P = p0 + p1 x + p2 x^2, Q = 1 + (q0 x)^2 + (q1 x^2)^2 and their x-derivatives."""
    x2 = x * x
    num = p[0] + p[1] * x + p[2] * x2
    den = 1.0 + q[0] * q[0] * x2 + q[1] * q[1] * x2 * x2
    d_num = p[1] + 2.0 * p[2] * x
    d_den = 2.0 * q[0] * q[0] * x + 4.0 * q[1] * q[1] * x2 * x
    return num, den, d_num, d_den


def _rational_inputs():
    return (_seeded(3, 4, seed=101), torch.tensor([0.1, 1.0, 0.4], dtype=torch.float64),
            torch.tensor([0.8, 0.5], dtype=torch.float64))


class OutsideRationalActivation(torch.autograd.Function):
    """P(x) / Q(x), a Pade-style activation with learned numerator p (3,) and denominator q (2,)."""

    bug = None

    @staticmethod
    def forward(ctx, x, p, q):
        num, den, _, _ = _pade_parts(x, p, q)
        ctx.save_for_backward(x, p, q)
        return num / den

    @staticmethod
    def backward(ctx, grad_out):
        x, p, q = ctx.saved_tensors
        num, den, d_num, d_den = _pade_parts(x, p, q)
        grad_x = grad_out * (d_num * den - num * d_den) / (den * den)
        over_den = grad_out / den
        grad_p = torch.stack([over_den.sum(), (over_den * x).sum(), (over_den * x * x).sum()])
        minus_ratio = -grad_out * num / (den * den)
        grad_q = torch.stack([(minus_ratio * 2.0 * q[0] * x * x).sum(),
                              (minus_ratio * 2.0 * q[1] * x ** 4).sum()])
        return grad_x, grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _rational_inputs()


class OutsideRationalActivationQuotientPlus(torch.autograd.Function):
    """Pade-style activation, the quotient rule for x written out."""

    bug = {"kind": "term_sign", "input": "x",
           "note": "(P' Q + P Q') / Q^2: the P Q' term of the quotient rule has the wrong sign"}

    @staticmethod
    def forward(ctx, x, p, q):
        num, den, d_num, d_den = _pade_parts(x, p, q)
        ctx.save_for_backward(x, num, den, d_num, d_den)
        ctx.p, ctx.q = p, q
        return num / den

    @staticmethod
    def backward(ctx, grad_out):
        x, num, den, d_num, d_den = ctx.saved_tensors
        q = ctx.q
        grad_x = grad_out * (d_num * den + num * d_den) / den ** 2  # BUG
        powers = [torch.ones_like(x), x, x * x]
        grad_p = torch.stack([(grad_out * xk / den).sum() for xk in powers])
        dq_terms = [2.0 * q[0] * x * x, 2.0 * q[1] * x * x * x * x]
        grad_q = torch.stack([(-grad_out * num / den ** 2 * t).sum() for t in dq_terms])
        return grad_x, grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _rational_inputs()


class OutsideRationalActivationDerivativeRatio(torch.autograd.Function):
    """Pade-style activation, the x-gradient taken as the ratio of the two derivatives."""

    bug = {"kind": "none", "input": "x",
           "note": "d(P/Q)/dx written as P'/Q' (l'Hopital's ratio), an unrelated formula"}

    @staticmethod
    def forward(ctx, x, p, q):
        num, den, _, _ = _pade_parts(x, p, q)
        ctx.save_for_backward(x, p, q)
        return num / den

    @staticmethod
    def backward(ctx, grad_out):
        x, p, q = ctx.saved_tensors
        num, den, d_num, d_den = _pade_parts(x, p, q)
        grad_x = grad_out * d_num / d_den  # BUG
        over_den = grad_out / den
        grad_p = torch.stack([over_den.sum(), (over_den * x).sum(), (over_den * x * x).sum()])
        minus_ratio = -grad_out * num / (den * den)
        grad_q = torch.stack([(minus_ratio * 2.0 * q[0] * x * x).sum(),
                              (minus_ratio * 2.0 * q[1] * x ** 4).sum()])
        return grad_x, grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _rational_inputs()


# ------------------------------------------------------------------------ periodic activation
def _periodic_inputs():
    return (_seeded(3, 4, seed=102), _seeded(4, seed=103, scale=1.5, shift=0.5, uniform=True),
            _seeded(4, seed=104, scale=0.5))


class OutsidePeriodicActivation(torch.autograd.Function):
    """sin(omega * x + phi) with a learned frequency omega and phase phi per column (SIREN-like)."""

    bug = None

    @staticmethod
    def forward(ctx, x, omega, phi):
        ctx.save_for_backward(x, omega, phi)
        return torch.sin(omega * x + phi)

    @staticmethod
    def backward(ctx, grad_out):
        x, omega, phi = ctx.saved_tensors
        slope = grad_out * torch.cos(omega * x + phi)
        return slope * omega, (slope * x).sum(0), slope.sum(0)

    @staticmethod
    def example_inputs():
        return _periodic_inputs()


class OutsidePeriodicActivationFrequency(torch.autograd.Function):
    """sin(omega x + phi); backward keeps the cosine and the argument's partials."""

    bug = {"kind": "wrong_variable", "input": "omega",
           "note": "d(omega x)/domega is taken as omega instead of x"}

    @staticmethod
    def forward(ctx, x, omega, phi):
        arg = omega * x + phi
        ctx.save_for_backward(x, omega, arg)
        return torch.sin(arg)

    @staticmethod
    def backward(ctx, grad_out):
        x, omega, arg = ctx.saved_tensors
        c = torch.cos(arg)
        grad_x = grad_out * c * omega
        grad_omega = (grad_out * c * omega).sum(dim=0)  # BUG
        grad_phi = (grad_out * c).sum(dim=0)
        return grad_x, grad_omega, grad_phi

    @staticmethod
    def example_inputs():
        return _periodic_inputs()


# -------------------------------------------------------------------- weighted least squares
def _wls_inputs():
    return (_seeded(3, 4, seed=105), _seeded(3, 4, seed=106),
            _seeded(3, 4, seed=107, scale=1.0, shift=0.5, uniform=True))


class OutsideWeightedSquaredError(torch.autograd.Function):
    """0.5 * sum_j w (pred - target)^2 per row; the positive weights w are learned too."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target, w):
        r = pred - target
        ctx.save_for_backward(r, w)
        return 0.5 * (w * r * r).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        r, w = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        grad_pred = g * w * r
        return grad_pred, -grad_pred, 0.5 * g * r * r

    @staticmethod
    def example_inputs():
        return _wls_inputs()


class OutsideWeightedSquaredErrorMean(torch.autograd.Function):
    """Weighted squared error per row, backward written for a mean over the columns."""

    bug = {"kind": "scale", "input": "pred",
           "note": "the prediction gradient is divided by the number of columns though the row loss is a sum"}

    @staticmethod
    def forward(ctx, pred, target, w):
        ctx.save_for_backward(pred, target, w)
        diff = pred - target
        return (0.5 * w * diff * diff).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        pred, target, w = ctx.saved_tensors
        diff = pred - target
        g = grad_out.unsqueeze(1)
        cols = pred.shape[1]
        grad_pred = g * w * diff / cols  # BUG
        grad_target = -g * w * diff
        grad_w = 0.5 * g * diff * diff
        return grad_pred, grad_target, grad_w

    @staticmethod
    def example_inputs():
        return _wls_inputs()


class OutsideWeightedSquaredErrorTargetSign(torch.autograd.Function):
    """Weighted squared error per row, the target gradient written from the prediction's."""

    bug = {"kind": "sign", "input": "target",
           "note": "d(pred - target)/dtarget = -1 is forgotten: the target gets +w r"}

    @staticmethod
    def forward(ctx, pred, target, w):
        r = pred - target
        ctx.save_for_backward(r, w)
        return 0.5 * (w * r * r).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        r, w = ctx.saved_tensors
        weighted = grad_out.unsqueeze(1) * w
        grad_pred = weighted * r
        grad_target = weighted * r  # BUG
        grad_w = 0.5 * grad_out.unsqueeze(1) * r.pow(2)
        return grad_pred, grad_target, grad_w

    @staticmethod
    def example_inputs():
        return _wls_inputs()


class OutsideNormalisedWLS(torch.autograd.Function):
    """sum_j w r^2 / sum_j w per row: a weighted mean of squared residuals, w learned."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target, w):
        r = pred - target
        total = w.sum(dim=1)
        loss = (w * r * r).sum(dim=1) / total
        ctx.save_for_backward(r, w, total, loss)
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        r, w, total, loss = ctx.saved_tensors
        g = (grad_out / total).unsqueeze(1)
        grad_pred = 2.0 * g * w * r
        grad_w = g * (r * r - loss.unsqueeze(1))
        return grad_pred, -grad_pred, grad_w

    @staticmethod
    def example_inputs():
        return _wls_inputs()


class OutsideNormalisedWLSWeightsNoGrad(torch.autograd.Function):
    """Weighted mean of squared residuals; the weight gradient from the quotient rule."""

    bug = {"kind": "ignores_grad_output", "input": "w",
           "note": "the weights' quotient-rule gradient (r^2 - L) / sum w is not multiplied by grad_out"}

    @staticmethod
    def forward(ctx, pred, target, w):
        r = pred - target
        total = w.sum(dim=1, keepdim=True)
        loss = (w * r * r).sum(dim=1, keepdim=True) / total
        ctx.save_for_backward(r, w, total, loss)
        return loss.squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        r, w, total, loss = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        grad_pred = 2.0 * g * w * r / total
        grad_target = -grad_pred
        grad_w = (r * r - loss) / total  # BUG
        return grad_pred, grad_target, grad_w

    @staticmethod
    def example_inputs():
        return _wls_inputs()
