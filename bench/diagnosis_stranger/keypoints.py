"""Keypoints: a spatial softmax over channels-last feature maps (expected x, y per channel), a 1-D
soft-argmax with a learnable temperature, and a straight-through rounding of keypoints to the
pixel grid (a deliberate estimator)."""
import torch


def _grid(h, w, dtype):
    """Pixel-centre coordinates in [-1, 1], flattened row-major: (H*W,) for x and for y."""
    xs = torch.linspace(-1.0, 1.0, w, dtype=dtype)
    ys = torch.linspace(-1.0, 1.0, h, dtype=dtype)
    return xs.repeat(h), ys.repeat_interleave(w)


def _feature_maps():
    gen = torch.Generator().manual_seed(401)
    return (torch.randn(1, 3, 4, 2, dtype=torch.float64, generator=gen),)  # (N, H, W, C)


class StrangerSpatialSoftmaxKeypoints(torch.autograd.Function):
    """(N, H, W, C) features -> (N, C, 2) expected (x, y) under a softmax over H*W per channel."""

    bug = None

    @staticmethod
    def forward(ctx, feats):
        n, h, w, c = feats.shape
        flat = feats.permute(0, 3, 1, 2).reshape(n * c, h * w)
        prob = torch.softmax(flat, dim=-1)
        gx, gy = _grid(h, w, feats.dtype)
        ctx.save_for_backward(prob, gx, gy)
        ctx.dims = (n, h, w, c)
        return torch.stack([prob @ gx, prob @ gy], dim=-1).view(n, c, 2)

    @staticmethod
    def backward(ctx, grad_out):
        prob, gx, gy = ctx.saved_tensors
        n, h, w, c = ctx.dims
        g = grad_out.reshape(n * c, 2)
        grad_prob = g[:, :1] * gx + g[:, 1:] * gy
        grad_flat = prob * (grad_prob - (prob * grad_prob).sum(-1, keepdim=True))
        return grad_flat.view(n, c, h, w).permute(0, 2, 3, 1)

    @staticmethod
    def example_inputs():
        return _feature_maps()


class StrangerSpatialSoftmaxKeypointsNoCentring(torch.autograd.Function):
    """Spatial softmax keypoints, the gradient built coordinate by coordinate."""

    bug = {"kind": "missing_term", "input": "feats",
           "note": "d E[x] / d logits = p * (x - E[x]); the -E[x] term of the softmax is dropped"}

    @staticmethod
    def forward(ctx, feats):
        n, h, w, c = feats.shape
        logits = feats.permute(0, 3, 1, 2).reshape(n * c, h * w)
        prob = logits.softmax(-1)
        coords = torch.stack(_grid(h, w, feats.dtype), dim=0)  # (2, H*W)
        ctx.save_for_backward(prob, coords)
        ctx.dims = (n, h, w, c)
        expected = prob @ coords.T
        return expected.reshape(n, c, 2)

    @staticmethod
    def backward(ctx, grad_out):
        prob, coords = ctx.saved_tensors
        n, h, w, c = ctx.dims
        g = grad_out.reshape(n * c, 2)
        grad_logits = torch.zeros_like(prob)
        for axis in range(2):
            grad_logits += g[:, axis:axis + 1] * prob * coords[axis]  # BUG
        return grad_logits.reshape(n, c, h, w).permute(0, 2, 3, 1)

    @staticmethod
    def example_inputs():
        return _feature_maps()


class StrangerSpatialSoftmaxKeypointsFlatReshape(torch.autograd.Function):
    """Spatial softmax keypoints with einsum for the expectation."""

    bug = {"kind": "missing_reshape", "input": "feats", "also": ["transposed"],
           "note": "the (N*C, H*W) gradient is reshaped straight to (N, H, W, C) without undoing "
                   "the forward's permute to channels-first"}

    @staticmethod
    def forward(ctx, feats):
        n, h, w, c = feats.shape
        chw = feats.permute(0, 3, 1, 2)
        prob = torch.softmax(chw.reshape(n, c, h * w), dim=-1)
        gx, gy = _grid(h, w, feats.dtype)
        grid = torch.stack([gx, gy], dim=-1)  # (H*W, 2)
        ctx.save_for_backward(prob, grid)
        return torch.einsum("ncs,sd->ncd", prob, grid)

    @staticmethod
    def backward(ctx, grad_out):
        prob, grid = ctx.saved_tensors
        n, h, w = prob.shape[0], 3, 4
        grad_prob = torch.einsum("ncd,sd->ncs", grad_out, grid)
        inner = (grad_prob * prob).sum(-1, keepdim=True)
        grad_logits = prob * (grad_prob - inner)
        return grad_logits.reshape(n, h, w, -1)  # BUG

    @staticmethod
    def example_inputs():
        return _feature_maps()


def _soft_argmax_inputs():
    gen = torch.Generator().manual_seed(402)
    return (torch.randn(3, 5, dtype=torch.float64, generator=gen),
            torch.tensor(0.7, dtype=torch.float64))


class StrangerSoftArgmaxTemperature(torch.autograd.Function):
    """Soft-argmax over 5 bins: sum_i i * softmax(logits / T)_i per row, T a learnable 0-d tensor."""

    bug = None

    @staticmethod
    def forward(ctx, logits, temperature):
        prob = torch.softmax(logits / temperature, dim=-1)
        positions = torch.arange(logits.shape[-1], dtype=logits.dtype)
        out = (prob * positions).sum(-1)
        ctx.save_for_backward(logits, temperature, prob, positions, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        logits, temperature, prob, positions, out = ctx.saved_tensors
        grad_z = grad_out[:, None] * prob * (positions - out[:, None])
        grad_logits = grad_z / temperature
        grad_t = -(grad_z * logits).sum() / temperature ** 2
        return grad_logits, grad_t

    @staticmethod
    def example_inputs():
        return _soft_argmax_inputs()


class StrangerSoftArgmaxTemperatureLogitsUnscaled(torch.autograd.Function):
    """Soft-argmax with a temperature; backward written on z = logits / T."""

    bug = {"kind": "scale", "input": "logits",
           "note": "returns dL/dz as the logits' gradient, missing the 1 / T factor"}

    @staticmethod
    def forward(ctx, logits, temperature):
        z = logits / temperature
        prob = torch.softmax(z, dim=1)
        idx = torch.arange(z.shape[1], dtype=z.dtype)
        ctx.save_for_backward(z, temperature, prob, idx)
        return prob @ idx

    @staticmethod
    def backward(ctx, grad_out):
        z, temperature, prob, idx = ctx.saved_tensors
        mean = prob @ idx
        d_z = prob * (idx[None, :] - mean[:, None]) * grad_out[:, None]
        grad_logits = d_z  # BUG
        grad_temperature = -(d_z * z).sum() / temperature
        return grad_logits, grad_temperature

    @staticmethod
    def example_inputs():
        return _soft_argmax_inputs()


class StrangerSoftArgmaxTemperatureJacobianOnly(torch.autograd.Function):
    """Soft-argmax with a temperature; backward row by row from the softmax Jacobian."""

    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "the logits' gradient is the Jacobian's row sum d out / d logits, never "
                   "weighted by grad_out"}

    @staticmethod
    def forward(ctx, logits, temperature):
        prob = torch.softmax(logits / temperature, dim=-1)
        positions = torch.arange(logits.shape[-1], dtype=logits.dtype)
        ctx.save_for_backward(logits, temperature, prob, positions)
        return (prob * positions).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        logits, temperature, prob, positions = ctx.saved_tensors
        rows = []
        grad_t = torch.zeros((), dtype=logits.dtype)
        for r in range(prob.shape[0]):
            p = prob[r]
            jac = (torch.diag(p) - torch.outer(p, p)) / temperature  # d prob / d logits
            rows.append(jac @ positions)  # BUG
            grad_t = grad_t - grad_out[r] * (jac @ positions * logits[r]).sum() / temperature
        return torch.stack(rows), grad_t

    @staticmethod
    def example_inputs():
        return _soft_argmax_inputs()


class StrangerKeypointPixelRounding(torch.autograd.Function):
    """Rounds keypoint coordinates to a 0.25-pixel grid; straight-through in backward."""

    bug = {"kind": "straight_through", "input": "coords",
           "note": "deliberate: rounding has zero derivative almost everywhere, backward passes "
                   "grad_out through unchanged"}
    STEP = 0.25

    @staticmethod
    def forward(ctx, coords):
        return torch.round(coords / StrangerKeypointPixelRounding.STEP) * StrangerKeypointPixelRounding.STEP

    @staticmethod
    def backward(ctx, grad_out):
        grad_coords = grad_out.clone()  # BUG
        return grad_coords
