import gradcli as torch
import gradcli.nn.functional as F

# Dynamics on the numpy engine: a soft clipper tanh(drive x) / tanh(drive) with a learned drive,
# and a soft-knee feed-forward compressor with a learned threshold and make-up gain.

RATIO = 4.0
SLOPE = (1 - 1 / RATIO) / 2  # gain = exp(-SLOPE * softplus(log(x^2 + eps) - threshold))
LEVEL_EPS = 1e-2


def _clip_inputs():
    gen = torch.Generator().manual_seed(101)
    return 0.8 * torch.randn(3, 4, dtype=torch.float64, generator=gen), torch.tensor([2.0], dtype=torch.float64)


def _clip_forward(ctx, x, drive):
    t = torch.tanh(drive * x)
    norm = torch.tanh(drive)
    y = t / norm
    ctx.save_for_backward(x, drive, t, y)
    return y


class FurtherSoftClipper(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, drive):
        return _clip_forward(ctx, x, drive)

    @staticmethod
    def backward(ctx, grad):
        x, drive, t, y = ctx.saved_tensors
        norm = torch.tanh(drive)
        g_x = grad * drive * (1 - t * t) / norm
        d_drive = x * (1 - t * t) / norm - t * (1 - norm * norm) / (norm * norm)
        return g_x, (grad * d_drive).sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class FurtherSoftClipperOutputSquared(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "tanh' is taken as 1 - y^2 with the normalised output y instead of the raw tanh(drive x)"}

    @staticmethod
    def forward(ctx, x, drive):
        return _clip_forward(ctx, x, drive)

    @staticmethod
    def backward(ctx, grad):
        x, drive, t, y = ctx.saved_tensors
        norm = torch.tanh(drive)
        g_x = grad * drive * (1 - y * y) / norm  # BUG
        d_drive = x * (1 - t * t) / norm - t * (1 - norm * norm) / (norm * norm)
        return g_x, (grad * d_drive).sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class FurtherSoftClipperNoDrive(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inner derivative d(drive x)/dx = drive is forgotten"}

    @staticmethod
    def forward(ctx, x, drive):
        return _clip_forward(ctx, x, drive)

    @staticmethod
    def backward(ctx, grad):
        x, drive, t, y = ctx.saved_tensors
        norm = torch.tanh(drive)
        g_x = grad * (1 - t * t) / norm  # BUG
        d_drive = x * (1 - t * t) / norm - t * (1 - norm * norm) / (norm * norm)
        return g_x, (grad * d_drive).sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class FurtherSoftClipperSummedGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "drive",
           "note": "grad and the local derivative are summed separately and multiplied, instead of summing their product"}

    @staticmethod
    def forward(ctx, x, drive):
        return _clip_forward(ctx, x, drive)

    @staticmethod
    def backward(ctx, grad):
        x, drive, t, y = ctx.saved_tensors
        norm = torch.tanh(drive)
        g_x = grad * drive * (1 - t * t) / norm
        d_drive = x * (1 - t * t) / norm - t * (1 - norm * norm) / (norm * norm)
        return g_x, (grad.sum() * d_drive.sum()).reshape(1)  # BUG

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class FurtherSoftClipperSech(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "d tanh(u) is written sech(u) = 1/cosh(u) instead of sech(u)^2, divided by tanh(drive) squared"}

    @staticmethod
    def forward(ctx, x, drive):
        return _clip_forward(ctx, x, drive)

    @staticmethod
    def backward(ctx, grad):
        x, drive, t, y = ctx.saved_tensors
        norm = torch.tanh(drive)
        g_x = grad * drive / (torch.cosh(drive * x) * norm * norm)  # BUG
        d_drive = x * (1 - t * t) / norm - t * (1 - norm * norm) / (norm * norm)
        return g_x, (grad * d_drive).sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _clip_inputs()


def _comp_inputs():
    gen = torch.Generator().manual_seed(102)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return x, torch.tensor([-1.0], dtype=torch.float64), torch.tensor([1.5], dtype=torch.float64)


def _comp_parts(x, threshold):
    power = x * x + LEVEL_EPS
    knee = torch.sigmoid(torch.log(power) - threshold)
    return power, knee


class FurtherCompressor(torch.autograd.Function):
    """y = makeup * x * exp(-SLOPE * softplus(log(x^2 + eps) - threshold))."""
    bug = None

    @staticmethod
    def forward(ctx, x, threshold, makeup):
        over = F.softplus(torch.log(x * x + LEVEL_EPS) - threshold)
        gain = torch.exp(-SLOPE * over)
        ctx.save_for_backward(x, threshold, makeup)
        ctx.gain = gain
        return x * gain * makeup

    @staticmethod
    def backward(ctx, grad):
        x, threshold, makeup = ctx.saved_tensors
        power, knee = _comp_parts(x, threshold)
        gain = ctx.gain * makeup
        g_x = grad * gain * (1 - SLOPE * knee * 2 * x * x / power)
        g_threshold = (grad * x * gain * SLOPE * knee).sum().reshape(1)
        g_makeup = (grad * x * ctx.gain).sum().reshape(1)
        return g_x, g_threshold, g_makeup

    @staticmethod
    def example_inputs():
        return _comp_inputs()


class FurtherCompressorThresholdSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "threshold",
           "note": "raising the threshold raises the gain; its gradient is written with the level's minus sign"}

    @staticmethod
    def forward(ctx, x, threshold, makeup):
        over = F.softplus(torch.log(x * x + LEVEL_EPS) - threshold)
        gain = torch.exp(-SLOPE * over)
        ctx.save_for_backward(x, threshold, makeup)
        ctx.gain = gain
        return x * gain * makeup

    @staticmethod
    def backward(ctx, grad):
        x, threshold, makeup = ctx.saved_tensors
        power, knee = _comp_parts(x, threshold)
        gain = ctx.gain * makeup
        g_x = grad * gain * (1 - SLOPE * knee * 2 * x * x / power)
        g_threshold = -(grad * x * gain * SLOPE * knee).sum().reshape(1)  # BUG
        g_makeup = (grad * x * ctx.gain).sum().reshape(1)
        return g_x, g_threshold, g_makeup

    @staticmethod
    def example_inputs():
        return _comp_inputs()


class FurtherCompressorGainMulInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the gain kept on ctx is multiplied by the make-up gain in place, so backward applies make-up twice"}

    @staticmethod
    def forward(ctx, x, threshold, makeup):
        over = F.softplus(torch.log(x * x + LEVEL_EPS) - threshold)
        gain = torch.exp(-SLOPE * over)
        ctx.save_for_backward(x, threshold, makeup)
        ctx.gain = gain
        gain.mul_(makeup)  # BUG
        return x * gain

    @staticmethod
    def backward(ctx, grad):
        x, threshold, makeup = ctx.saved_tensors
        power, knee = _comp_parts(x, threshold)
        gain = ctx.gain * makeup
        g_x = grad * gain * (1 - SLOPE * knee * 2 * x * x / power)
        g_threshold = (grad * x * gain * SLOPE * knee).sum().reshape(1)
        g_makeup = (grad * x * ctx.gain).sum().reshape(1)
        return g_x, g_threshold, g_makeup

    @staticmethod
    def example_inputs():
        return _comp_inputs()


class FurtherCompressorStaticGain(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the gain is treated as independent of x: the level detector's term of the product rule is left out"}

    @staticmethod
    def forward(ctx, x, threshold, makeup):
        over = F.softplus(torch.log(x * x + LEVEL_EPS) - threshold)
        gain = torch.exp(-SLOPE * over)
        ctx.save_for_backward(x, threshold, makeup)
        ctx.gain = gain
        return x * gain * makeup

    @staticmethod
    def backward(ctx, grad):
        x, threshold, makeup = ctx.saved_tensors
        power, knee = _comp_parts(x, threshold)
        gain = ctx.gain * makeup
        g_x = grad * gain  # BUG
        g_threshold = (grad * x * gain * SLOPE * knee).sum().reshape(1)
        g_makeup = (grad * x * ctx.gain).sum().reshape(1)
        return g_x, g_threshold, g_makeup

    @staticmethod
    def example_inputs():
        return _comp_inputs()


class FurtherCompressorThresholdGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "threshold",
           "note": "the threshold gradient is written as grad * softplus(level - threshold) / threshold, a made-up formula"}

    @staticmethod
    def forward(ctx, x, threshold, makeup):
        over = F.softplus(torch.log(x * x + LEVEL_EPS) - threshold)
        gain = torch.exp(-SLOPE * over)
        ctx.save_for_backward(x, threshold, makeup)
        ctx.gain = gain
        return x * gain * makeup

    @staticmethod
    def backward(ctx, grad):
        x, threshold, makeup = ctx.saved_tensors
        power, knee = _comp_parts(x, threshold)
        gain = ctx.gain * makeup
        g_x = grad * gain * (1 - SLOPE * knee * 2 * x * x / power)
        over = F.softplus(torch.log(power) - threshold)
        g_threshold = (grad * over / threshold).sum().reshape(1)  # BUG
        g_makeup = (grad * x * ctx.gain).sum().reshape(1)
        return g_x, g_threshold, g_makeup

    @staticmethod
    def example_inputs():
        return _comp_inputs()
