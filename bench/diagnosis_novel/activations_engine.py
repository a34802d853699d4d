"""Activations with parameters on gradcli's engine: channel PReLU, Swish-beta, ELU-alpha, softplus-beta,
Snake, a sigmoid with a learnable temperature."""
import gradcli as torch


def _x_param(seed, *shape, param_shape, low=0.5):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, dtype=torch.float64, generator=gen),
            torch.rand(*param_shape, dtype=torch.float64, generator=gen) + low)


class NovelPReLUChannel(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.where(x > 0, x, a[:, None] * x)

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        neg = (x <= 0).to(x.dtype)
        gx = g * (1 - neg) + g * neg * a[:, None]
        ga = (g * x * neg).sum(dim=(0, 2))
        return gx, ga

    @staticmethod
    def example_inputs():
        return _x_param(80, 2, 3, 5, param_shape=(3,), low=0.1)


class NovelPReLUChannelSlopeOnPositives(torch.autograd.Function):
    bug = {"kind": "region", "input": "a",
           "note": "the slope's gradient is collected where x > 0, the side the slope does not touch"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.where(x > 0, x, a[:, None] * x)

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        neg = (x <= 0).to(x.dtype)
        gx = g * (1 - neg) + g * neg * a[:, None]
        ga = (g * x * (x > 0).to(x.dtype)).sum(dim=(0, 2))  # BUG
        return gx, ga

    @staticmethod
    def example_inputs():
        return _x_param(81, 2, 3, 5, param_shape=(3,), low=0.1)


class NovelSwishBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        gx = g * (s + x * beta * ds)
        gbeta = (g * x * x * ds).sum().reshape(beta.shape)
        return gx, gbeta

    @staticmethod
    def example_inputs():
        return _x_param(82, 3, 4, param_shape=(1,))


class NovelSwishBetaGateOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the product rule's second term x * beta * s(1-s) is left out: only the gate s is kept"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        gx = g * s  # BUG
        gbeta = (g * x * x * ds).sum().reshape(beta.shape)
        return gx, gbeta

    @staticmethod
    def example_inputs():
        return _x_param(83, 3, 4, param_shape=(1,))


class NovelELUAlpha(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        em1 = torch.expm1(x)
        y = torch.where(x > 0, x, alpha * em1)
        ctx.save_for_backward(x, alpha, em1, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, alpha, em1, y = ctx.saved_tensors
        pos = x > 0
        gx = torch.where(pos, g, g * alpha * (em1 + 1))
        galpha = torch.where(pos, g * 0, g * em1).sum().reshape(alpha.shape)
        return gx, galpha

    @staticmethod
    def example_inputs():
        return _x_param(84, 3, 4, param_shape=(1,), low=1.2)


class NovelELUAlphaFromOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "alpha",
           "note": "the alpha gradient uses the saved output y = alpha (e^x - 1) where e^x - 1 is needed"}

    @staticmethod
    def forward(ctx, x, alpha):
        em1 = torch.expm1(x)
        y = torch.where(x > 0, x, alpha * em1)
        ctx.save_for_backward(x, alpha, em1, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, alpha, em1, y = ctx.saved_tensors
        pos = x > 0
        gx = torch.where(pos, g, g * alpha * (em1 + 1))
        galpha = torch.where(pos, g * 0, g * y).sum().reshape(alpha.shape)  # BUG
        return gx, galpha

    @staticmethod
    def example_inputs():
        return _x_param(85, 3, 4, param_shape=(1,), low=1.2)


BETA = 2.0


class NovelSoftplusBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(BETA * x)) / BETA

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(BETA * x)


class NovelSoftplusBetaChainTwice(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inner derivative beta is multiplied in although the 1/beta outside cancels it"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(BETA * x)) / BETA

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return BETA * g * torch.sigmoid(BETA * x)  # BUG


class NovelSnake(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        ax = a * x
        gx = g * (1 + torch.sin(2 * ax))
        ga = (g * (x * torch.sin(2 * ax) / a - torch.sin(ax) ** 2 / a ** 2)).sum(0)
        return gx, ga

    @staticmethod
    def example_inputs():
        return _x_param(86, 3, 4, param_shape=(4,))


class NovelSnakeQuotientPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "a",
           "note": "the quotient rule's -sin^2(ax)/a^2 term is added"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        ax = a * x
        gx = g * (1 + torch.sin(2 * ax))
        ga = (g * (x * torch.sin(2 * ax) / a + torch.sin(ax) ** 2 / a ** 2)).sum(0)  # BUG
        return gx, ga

    @staticmethod
    def example_inputs():
        return _x_param(87, 3, 4, param_shape=(4,))


class NovelSnakeSineRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the input gradient is a cos(ax), the derivative of sin(ax), not of x + sin^2(ax)/a"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        ax = a * x
        gx = g * a * torch.cos(ax)  # BUG
        ga = (g * (x * torch.sin(2 * ax) / a - torch.sin(ax) ** 2 / a ** 2)).sum(0)
        return gx, ga

    @staticmethod
    def example_inputs():
        return _x_param(88, 3, 4, param_shape=(4,))


class NovelTemperatureSigmoid(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, t):
        s = torch.sigmoid(x / t)
        ctx.save_for_backward(x, t, s)
        return s

    @staticmethod
    def backward(ctx, g):
        x, t, s = ctx.saved_tensors
        ds = g * s * (1 - s)
        return ds / t, (-(ds * x).sum() / (t * t)).reshape(t.shape)

    @staticmethod
    def example_inputs():
        return _x_param(89, 3, 4, param_shape=(1,))


class NovelTemperatureSigmoidTempNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "t",
           "note": "the temperature's gradient sums s(1-s) x / t^2 without the incoming gradient"}

    @staticmethod
    def forward(ctx, x, t):
        s = torch.sigmoid(x / t)
        ctx.save_for_backward(x, t, s)
        return s

    @staticmethod
    def backward(ctx, g):
        x, t, s = ctx.saved_tensors
        ds = g * s * (1 - s)
        gt = -(s * (1 - s) * x).sum() / (t * t)  # BUG
        return ds / t, gt.reshape(t.shape)

    @staticmethod
    def example_inputs():
        return _x_param(90, 3, 4, param_shape=(1,))
