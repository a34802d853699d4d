import gradcli as torch

"""On gradcli's engine: a sigmoid gate with a learned temperature, x * sigmoid(z / temp), and a
bounded rational activation a x / (1 + b x**2) with learned per-feature a and b > 0."""


def _gate_inputs():
    gen = torch.Generator().manual_seed(81)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    z = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    return x, z, torch.tensor(0.7, dtype=torch.float64)


class ElsewhereTempGate(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, z, temp):
        s = torch.sigmoid(z / temp)
        ctx.save_for_backward(x, z, temp, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, z, temp, s = ctx.saved_tensors
        ds = grad * x * s * (1 - s)
        grad_x = grad * s
        grad_z = ds / temp
        grad_temp = -(ds * z / temp ** 2).sum()
        return grad_x, grad_z, grad_temp

    @staticmethod
    def example_inputs():
        return _gate_inputs()


class ElsewhereTempGateNoTemp(torch.autograd.Function):
    bug = {"kind": "scale", "input": "z",
           "note": "the chain rule's 1/temp from sigmoid(z / temp) is forgotten in the logits' gradient"}

    @staticmethod
    def forward(ctx, x, z, temp):
        s = torch.sigmoid(z / temp)
        ctx.save_for_backward(x, z, temp, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, z, temp, s = ctx.saved_tensors
        ds = grad * x * s * (1 - s)
        grad_x = grad * s
        grad_z = ds  # BUG
        grad_temp = -(ds * z / temp ** 2).sum()
        return grad_x, grad_z, grad_temp

    @staticmethod
    def example_inputs():
        return _gate_inputs()


class ElsewhereTempGateTempSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "temp",
           "note": "d(z / temp)/dtemp = -z / temp**2, the minus is lost"}

    @staticmethod
    def forward(ctx, x, z, temp):
        s = torch.sigmoid(z / temp)
        ctx.save_for_backward(x, z, temp, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, z, temp, s = ctx.saved_tensors
        ds = grad * x * s * (1 - s)
        grad_x = grad * s
        grad_z = ds / temp
        grad_temp = (ds * z / temp ** 2).sum()  # BUG
        return grad_x, grad_z, grad_temp

    @staticmethod
    def example_inputs():
        return _gate_inputs()


# --------------------------------------------------------- bounded rational activation
def _rational_inputs():
    gen = torch.Generator().manual_seed(82)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    a = 0.5 + torch.rand(4, generator=gen, dtype=torch.float64)
    b = 0.5 + torch.rand(4, generator=gen, dtype=torch.float64)
    return x, a, b


class ElsewhereBoundedRational(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a, b):
        den = 1 + b * x * x
        ctx.save_for_backward(x, a, b, den)
        return a * x / den

    @staticmethod
    def backward(ctx, grad):
        x, a, b, den = ctx.saved_tensors
        grad_x = grad * (a * den - a * x * 2 * b * x) / den ** 2
        grad_a = (grad * x / den).sum(0)
        grad_b = -(grad * a * x ** 3 / den ** 2).sum(0)
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _rational_inputs()


class ElsewhereBoundedRationalQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the quotient rule's P Q' term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, a, b):
        den = 1 + b * x * x
        ctx.save_for_backward(x, a, b, den)
        return a * x / den

    @staticmethod
    def backward(ctx, grad):
        x, a, b, den = ctx.saved_tensors
        grad_x = grad * (a * den + a * x * 2 * b * x) / den ** 2  # BUG
        grad_a = (grad * x / den).sum(0)
        grad_b = -(grad * a * x ** 3 / den ** 2).sum(0)
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _rational_inputs()


class ElsewhereBoundedRationalDenominatorOnce(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the quotient rule's numerator is divided by Q instead of Q**2"}

    @staticmethod
    def forward(ctx, x, a, b):
        den = 1 + b * x * x
        ctx.save_for_backward(x, a, b, den)
        return a * x / den

    @staticmethod
    def backward(ctx, grad):
        x, a, b, den = ctx.saved_tensors
        grad_x = grad * (a * den - a * x * 2 * b * x) / den  # BUG
        grad_a = (grad * x / den).sum(0)
        grad_b = -(grad * a * x ** 3 / den ** 2).sum(0)
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _rational_inputs()
