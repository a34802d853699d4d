"""Softmax / log_softmax with a temperature, L2 normalisation, weight standardisation, and three
deliberate gradient estimators (clipped straight-through, gradient reversal, a sigmoid surrogate)."""
import torch

EPS = 1e-5


def _x_tau(seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 5, dtype=torch.float64, generator=gen),
            torch.tensor(1.7, dtype=torch.float64))


class NovelSoftmaxTemperature(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        y = torch.softmax(x / tau, dim=-1)
        ctx.save_for_backward(x, tau, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, tau, y = ctx.saved_tensors
        gz = y * (g - (g * y).sum(dim=-1, keepdim=True))
        return gz / tau, -(gz * x).sum() / tau ** 2

    @staticmethod
    def example_inputs():
        return _x_tau(60)


class NovelSoftmaxTemperatureTauSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "tau",
           "note": "d(x / tau)/dtau = -x / tau^2: the minus is dropped"}

    @staticmethod
    def forward(ctx, x, tau):
        y = torch.softmax(x / tau, dim=-1)
        ctx.save_for_backward(x, tau, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, tau, y = ctx.saved_tensors
        gz = y * (g - (g * y).sum(dim=-1, keepdim=True))
        gtau = (gz * x).sum() / tau ** 2  # BUG
        return gz / tau, gtau

    @staticmethod
    def example_inputs():
        return _x_tau(61)


class NovelSoftmaxTemperatureInputUndivided(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the input gradient forgets the chain factor 1/tau"}

    @staticmethod
    def forward(ctx, x, tau):
        y = torch.softmax(x / tau, dim=-1)
        ctx.save_for_backward(x, tau, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, tau, y = ctx.saved_tensors
        gz = y * (g - (g * y).sum(dim=-1, keepdim=True))
        return gz, -(gz * x).sum() / tau ** 2  # BUG

    @staticmethod
    def example_inputs():
        return _x_tau(62)


T_FIXED = 0.5


class NovelLogSoftmaxTemperature(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        out = torch.log_softmax(x / T_FIXED, dim=1)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return (g - out.exp() * g.sum(dim=1, keepdim=True)) / T_FIXED


class NovelLogSoftmaxTemperatureColumnSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the incoming gradient is summed over the batch (dim 0) instead of over the classes"}

    @staticmethod
    def forward(ctx, x):
        out = torch.log_softmax(x / T_FIXED, dim=1)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return (g - out.exp() * g.sum(dim=0, keepdim=True)) / T_FIXED  # BUG


class NovelL2Normalize(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, g):
        y, norm = ctx.saved_tensors
        return (g - y * (g * y).sum(dim=-1, keepdim=True)) / norm


class NovelL2NormalizeSoftmaxBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "softmax's backward, y * (g - sum(g y)), written for an L2 normalisation"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, g):
        y, norm = ctx.saved_tensors
        return y * (g - (g * y).sum(dim=-1, keepdim=True))  # BUG


def _x_w(seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 4, dtype=torch.float64, generator=gen),
            torch.randn(3, 4, dtype=torch.float64, generator=gen))


class NovelWeightStandardised(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        centred = w - w.mean(dim=1, keepdim=True)
        sd = (centred.pow(2).mean(dim=1, keepdim=True) + EPS).sqrt()
        what = centred / sd
        ctx.save_for_backward(x, what, sd)
        return x @ what.mT

    @staticmethod
    def backward(ctx, g):
        x, what, sd = ctx.saved_tensors
        gwh = g.mT @ x
        gw = (gwh - gwh.mean(dim=1, keepdim=True) - what * (gwh * what).mean(dim=1, keepdim=True)) / sd
        return g @ what, gw

    @staticmethod
    def example_inputs():
        return _x_w(63)


class NovelWeightStandardisedDividesSaved(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "w",
           "note": "the centred weight is saved, then divided in place by sd to make w-hat, so backward divides by sd twice"}

    @staticmethod
    def forward(ctx, x, w):
        centred = w - w.mean(dim=1, keepdim=True)
        sd = (centred.pow(2).mean(dim=1, keepdim=True) + EPS).sqrt()
        ctx.save_for_backward(x, centred, sd)
        what = centred.div_(sd)  # BUG
        return x @ what.mT

    @staticmethod
    def backward(ctx, g):
        x, centred, sd = ctx.saved_tensors
        what = centred / sd
        gwh = g.mT @ x
        gw = (gwh - gwh.mean(dim=1, keepdim=True) - what * (gwh * what).mean(dim=1, keepdim=True)) / sd
        return g @ what, gw

    @staticmethod
    def example_inputs():
        return _x_w(64)


class NovelWeightStandardisedRawWeight(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the input gradient multiplies by the raw weight w where the standardised w-hat was used"}

    @staticmethod
    def forward(ctx, x, w):
        centred = w - w.mean(dim=1, keepdim=True)
        sd = (centred.pow(2).mean(dim=1, keepdim=True) + EPS).sqrt()
        what = centred / sd
        ctx.save_for_backward(x, w, what, sd)
        return x @ what.mT

    @staticmethod
    def backward(ctx, g):
        x, w, what, sd = ctx.saved_tensors
        gwh = g.mT @ x
        gw = (gwh - gwh.mean(dim=1, keepdim=True) - what * (gwh * what).mean(dim=1, keepdim=True)) / sd
        gx = g @ w  # BUG
        return gx, gw

    @staticmethod
    def example_inputs():
        return _x_w(65)


class NovelBinaryStepClippedSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate: a hard 0/1 step whose backward passes g through where |x| <= 1"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)  # BUG


class NovelGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate: identity forward, the gradient is negated and scaled by 0.3 (domain-adversarial layer)"}

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return -0.3 * g  # BUG


class NovelStepSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "deliberate: a hard step forward, the derivative of sigmoid(5x) as its backward"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(5 * x)
        return g * 5 * s * (1 - s)  # BUG
