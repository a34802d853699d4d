import gradcli as torch
import gradcli.nn.functional as F

"""Click and ranking objectives on gradcli's numpy engine (runs without PyTorch): a per-impression
weighted CTR log-loss with soft labels, a pairwise margin (hinge) ranking loss and a
temperature-scaled softmax over candidate scores with a learned temperature."""

MARGIN = 1.0


# -------------------------------------------------------- weighted CTR log-loss (soft labels)
def _ctr_inputs():
    gen = torch.Generator().manual_seed(9901)
    s = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    t = torch.rand(3, 4, dtype=torch.float64, generator=gen)
    wt = torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5
    return s, t, wt


def _ctr_forward(ctx, s, t, wt):
    out = wt * (F.softplus(s) - t * s)
    ctx.save_for_backward(s, t, wt, out)
    return out


class HinterlandWeightedCTRLoss(torch.autograd.Function):
    """wt * BCE-with-logits(s, t) per impression, with soft labels t in [0, 1]."""

    bug = None

    @staticmethod
    def forward(ctx, s, t, wt):
        return _ctr_forward(ctx, s, t, wt)

    @staticmethod
    def backward(ctx, grad_out):
        s, t, wt, out = ctx.saved_tensors
        grad_s = grad_out * wt * (torch.sigmoid(s) - t)
        grad_t = -grad_out * wt * s
        grad_wt = grad_out * (F.softplus(s) - t * s)
        return grad_s, grad_t, grad_wt

    @staticmethod
    def example_inputs():
        return _ctr_inputs()


class HinterlandWeightedCTRLossWeightFromOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "wt",
           "note": "the weight's gradient uses the saved weighted output instead of the unweighted log-loss"}

    @staticmethod
    def forward(ctx, s, t, wt):
        return _ctr_forward(ctx, s, t, wt)

    @staticmethod
    def backward(ctx, grad_out):
        s, t, wt, out = ctx.saved_tensors
        grad_s = grad_out * wt * (torch.sigmoid(s) - t)
        grad_t = -grad_out * wt * s
        grad_wt = grad_out * out  # BUG
        return grad_s, grad_t, grad_wt

    @staticmethod
    def example_inputs():
        return _ctr_inputs()


class HinterlandWeightedCTRLossLabelSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "t",
           "note": "the soft label's gradient loses the minus of -t * s"}

    @staticmethod
    def forward(ctx, s, t, wt):
        return _ctr_forward(ctx, s, t, wt)

    @staticmethod
    def backward(ctx, grad_out):
        s, t, wt, out = ctx.saved_tensors
        grad_s = grad_out * wt * (torch.sigmoid(s) - t)
        grad_t = grad_out * wt * s  # BUG
        grad_wt = grad_out * (F.softplus(s) - t * s)
        return grad_s, grad_t, grad_wt

    @staticmethod
    def example_inputs():
        return _ctr_inputs()


class HinterlandWeightedCTRLossSoftplusForSigmoid(torch.autograd.Function):
    bug = {"kind": "none", "input": "s",
           "note": "softplus itself is used where its derivative, the sigmoid, belongs"}

    @staticmethod
    def forward(ctx, s, t, wt):
        return _ctr_forward(ctx, s, t, wt)

    @staticmethod
    def backward(ctx, grad_out):
        s, t, wt, out = ctx.saved_tensors
        grad_s = grad_out * wt * (F.softplus(s) - t)  # BUG
        grad_t = -grad_out * wt * s
        grad_wt = grad_out * (F.softplus(s) - t * s)
        return grad_s, grad_t, grad_wt

    @staticmethod
    def example_inputs():
        return _ctr_inputs()


# ---------------------------------------------------------------- pairwise margin loss
def _hinge_inputs():
    s_pos = torch.tensor([[0.9, 1.8, -0.2, 0.4], [2.6, 0.1, 1.2, -0.6], [0.3, 1.5, 2.2, 0.8]],
                         dtype=torch.float64)
    s_neg = torch.tensor([[0.5, 0.2, 0.6, -1.1], [0.3, 0.7, 0.8, 0.1], [-0.4, -0.2, 0.4, 1.0]],
                         dtype=torch.float64)  # margins s_pos - s_neg well away from 1
    return s_pos, s_neg


class HinterlandPairwiseHinge(torch.autograd.Function):
    """max(0, margin - (s_pos - s_neg)) per pair."""

    bug = None

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return (MARGIN - d).clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        active = (d < MARGIN).to(grad_out.dtype)
        return -grad_out * active, grad_out * active

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class HinterlandPairwiseHingeInvertedMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "s_pos",
           "note": "the active mask is d > margin, the satisfied pairs, instead of the violating ones"}

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return (MARGIN - d).clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        active = (d > MARGIN).to(grad_out.dtype)  # BUG
        return -grad_out * active, grad_out * active

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class HinterlandPairwiseHingeMaskOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "s_pos",
           "note": "the positive score's gradient is the bare mask, not multiplied by grad_output"}

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return (MARGIN - d).clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        active = (d < MARGIN).to(grad_out.dtype)
        grad_pos = -active  # BUG
        return grad_pos, grad_out * active

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


# --------------------------------------------------------- softmax with a learned temperature
def _temperature_inputs():
    gen = torch.Generator().manual_seed(9902)
    s = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    tau = torch.tensor([0.7], dtype=torch.float64)
    return s, tau


def _temperature_forward(ctx, s, tau):
    p = torch.softmax(s / tau, dim=-1)
    ctx.save_for_backward(p, s, tau)
    return p


class HinterlandTemperatureSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, s, tau):
        return _temperature_forward(ctx, s, tau)

    @staticmethod
    def backward(ctx, grad_out):
        p, s, tau = ctx.saved_tensors
        grad_z = p * (grad_out - (grad_out * p).sum(-1, keepdim=True))
        grad_tau = -(grad_z * s).sum() / tau ** 2
        return grad_z / tau, grad_tau

    @staticmethod
    def example_inputs():
        return _temperature_inputs()


class HinterlandTemperatureSoftmaxNoTau(torch.autograd.Function):
    bug = {"kind": "scale", "input": "s",
           "note": "the scores' gradient forgets the 1/temperature of s / tau"}

    @staticmethod
    def forward(ctx, s, tau):
        return _temperature_forward(ctx, s, tau)

    @staticmethod
    def backward(ctx, grad_out):
        p, s, tau = ctx.saved_tensors
        grad_z = p * (grad_out - (grad_out * p).sum(-1, keepdim=True))
        grad_tau = -(grad_z * s).sum() / tau ** 2
        grad_s = grad_z  # BUG
        return grad_s, grad_tau

    @staticmethod
    def example_inputs():
        return _temperature_inputs()


class HinterlandTemperatureSoftmaxBatchAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "s",
           "note": "the softmax backward's inner product is summed over the batch (dim 0) instead of the candidates"}

    @staticmethod
    def forward(ctx, s, tau):
        return _temperature_forward(ctx, s, tau)

    @staticmethod
    def backward(ctx, grad_out):
        p, s, tau = ctx.saved_tensors
        grad_z = p * (grad_out - (grad_out * p).sum(0, keepdim=True))  # BUG
        grad_tau = -(grad_z * s).sum() / tau ** 2
        return grad_z / tau, grad_tau

    @staticmethod
    def example_inputs():
        return _temperature_inputs()


class HinterlandTemperatureSoftmaxTauSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "tau",
           "note": "d(s / tau)/dtau = -s / tau^2 is written without its minus"}

    @staticmethod
    def forward(ctx, s, tau):
        return _temperature_forward(ctx, s, tau)

    @staticmethod
    def backward(ctx, grad_out):
        p, s, tau = ctx.saved_tensors
        grad_z = p * (grad_out - (grad_out * p).sum(-1, keepdim=True))
        grad_tau = (grad_z * s).sum() / tau ** 2  # BUG
        return grad_z / tau, grad_tau

    @staticmethod
    def example_inputs():
        return _temperature_inputs()
