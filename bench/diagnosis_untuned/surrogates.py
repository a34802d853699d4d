"""Functions whose backward is *deliberately* not the derivative: straight-through estimators,
gradient reversal and smooth surrogate gradients for spikes. A gradient checker fails them; a
good diagnosis says what they are. torch-style on gradcli's engine.
"""
import gradcli as torch


def _away_from_steps():
    # no element within 0.1 of a rounding step (k + 0.5) or of 0
    return (torch.tensor([[0.2, -1.3, 2.7, 0.8], [-0.4, 1.2, -2.2, 0.35],
                          [1.9, -0.7, 0.6, -1.8]], requires_grad=True),)


class RoundStraightThrough(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "round() has zero derivative; backward passes grad_output through unchanged"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clone()  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_steps()


class BinarizeClippedStraightThrough(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "sign() binarization with the hardtanh straight-through gradient 1{|x| <= 1}"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).type_as(x)  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_steps()


class GradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x", "also": ["sign"],
           "note": "identity forward, backward -lambda * grad_output (domain-adversarial training)"}

    @staticmethod
    def forward(ctx, x, lambd=1.0):
        ctx.lambd = lambd
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return -ctx.lambd * grad_output, None  # BUG


class SpikeSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "Heaviside spike forward; backward is the derivative of sigmoid(k x), k = 4"}

    @staticmethod
    def forward(ctx, x, k=4.0):
        ctx.save_for_backward(x)
        ctx.k = k
        return (x > 0).type_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(ctx.k * x)
        return grad_output * ctx.k * s * (1 - s), None  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_steps()


class SpikeFastSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "Heaviside spike forward; backward is SuperSpike's 1 / (1 + a|x|)^2, a = 10"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).type_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output / (1 + 10.0 * x.abs()) ** 2  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_steps()
