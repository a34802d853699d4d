"""Image ops with hand-written backwards: squared total variation per image, Sobel gradient
magnitude by conv2d, bilinear upsampling by fixed interpolation matrices, channel shuffle.

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import math

import torch
import torch.nn.functional as F


def _seeded(*shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


# --------------------------------------------------------------------------- total variation
class OutsideTotalVariation(torch.autograd.Function):
    """sum of squared vertical and horizontal neighbour differences, one value per image."""

    bug = None

    @staticmethod
    def forward(ctx, img):
        dh = img[..., 1:, :] - img[..., :-1, :]
        dw = img[..., :, 1:] - img[..., :, :-1]
        ctx.save_for_backward(dh, dw)
        ctx.shape = img.shape
        return dh.pow(2).sum(dim=(1, 2, 3)) + dw.pow(2).sum(dim=(1, 2, 3))

    @staticmethod
    def backward(ctx, grad_out):
        dh, dw = ctx.saved_tensors
        g = grad_out.view(-1, 1, 1, 1)
        grad = torch.zeros(ctx.shape, dtype=grad_out.dtype)
        grad[..., 1:, :] += 2 * g * dh
        grad[..., :-1, :] -= 2 * g * dh
        grad[..., :, 1:] += 2 * g * dw
        grad[..., :, :-1] -= 2 * g * dw
        return grad

    @staticmethod
    def example_inputs():
        return (_seeded(2, 1, 4, 4, seed=71),)


class OutsideTotalVariationLeftNeighbour(torch.autograd.Function):
    """Squared TV per image, backward accumulating each difference into both of its pixels."""

    bug = {"kind": "term_sign", "input": "img",
           "note": "a horizontal difference x[j+1] - x[j] is added to its left pixel with + instead of -"}

    @staticmethod
    def forward(ctx, img):
        dh = torch.diff(img, dim=2)
        dw = torch.diff(img, dim=3)
        ctx.save_for_backward(dh, dw)
        ctx.shape = img.shape
        return (dh * dh).flatten(1).sum(1) + (dw * dw).flatten(1).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        dh, dw = ctx.saved_tensors
        g = grad_out[:, None, None, None]
        grad = grad_out.new_zeros(ctx.shape)
        grad[:, :, 1:, :] += 2 * g * dh
        grad[:, :, :-1, :] -= 2 * g * dh
        grad[:, :, :, 1:] += 2 * g * dw
        grad[:, :, :, :-1] += 2 * g * dw  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return (_seeded(2, 1, 4, 4, seed=71),)


class OutsideTotalVariationSquaredInPlace(torch.autograd.Function):
    """Squared TV per image; the differences are kept on ctx and squared in place."""

    bug = {"kind": "inplace", "input": "img",
           "note": "dh is kept on ctx and then squared in place by pow_: backward reads dh^2 as dh"}

    @staticmethod
    def forward(ctx, img):
        dh = img[..., 1:, :] - img[..., :-1, :]
        dw = img[..., :, 1:] - img[..., :, :-1]
        ctx.dh, ctx.dw, ctx.shape = dh, dw, img.shape
        vertical = dh.pow_(2).sum(dim=(1, 2, 3))  # BUG
        return vertical + dw.square().sum(dim=(1, 2, 3))

    @staticmethod
    def backward(ctx, grad_out):
        dh, dw = ctx.dh, ctx.dw
        g = grad_out.view(-1, 1, 1, 1)
        grad = torch.zeros(ctx.shape, dtype=grad_out.dtype)
        grad[..., 1:, :] += 2 * g * dh
        grad[..., :-1, :] -= 2 * g * dh
        grad[..., :, 1:] += 2 * g * dw
        grad[..., :, :-1] -= 2 * g * dw
        return grad

    @staticmethod
    def example_inputs():
        return (_seeded(2, 1, 4, 4, seed=71),)


# ---------------------------------------------------------------------- Sobel edge magnitude
def _sobel_weight(dtype):
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=dtype)
    return torch.stack([kx, kx.t()]).unsqueeze(1)  # (2, 1, 3, 3): d/dx and d/dy


SOBEL_EPS = 1e-9


class OutsideSobelMagnitude(torch.autograd.Function):
    """sqrt(gx^2 + gy^2 + eps) with (gx, gy) = conv2d(img, Sobel, padding=1); img (N, 1, H, W)."""

    bug = None

    @staticmethod
    def forward(ctx, img):
        weight = _sobel_weight(img.dtype)
        edges = F.conv2d(img, weight, padding=1)
        mag = torch.sqrt(edges.pow(2).sum(dim=1, keepdim=True) + SOBEL_EPS)
        ctx.save_for_backward(edges, mag)
        return mag

    @staticmethod
    def backward(ctx, grad_out):
        edges, mag = ctx.saved_tensors
        grad_edges = grad_out * edges / mag
        return F.conv_transpose2d(grad_edges, _sobel_weight(grad_out.dtype), padding=1)

    @staticmethod
    def example_inputs():
        return (_seeded(1, 1, 5, 5, seed=72),)


class OutsideSobelMagnitudeCopyPaste(torch.autograd.Function):
    """Sobel magnitude with the two directions handled separately."""

    bug = {"kind": "wrong_variable", "input": "img",
           "note": "the y-direction's gradient is built from gx (copy of the x line) instead of gy"}

    @staticmethod
    def forward(ctx, img):
        weight = _sobel_weight(img.dtype)
        gx = F.conv2d(img, weight[:1], padding=1)
        gy = F.conv2d(img, weight[1:], padding=1)
        mag = torch.sqrt(gx * gx + gy * gy + SOBEL_EPS)
        ctx.save_for_backward(gx, gy, mag)
        return mag

    @staticmethod
    def backward(ctx, grad_out):
        gx, gy, mag = ctx.saved_tensors
        weight = _sobel_weight(grad_out.dtype)
        grad_gx = grad_out * gx / mag
        grad_gy = grad_out * gx / mag  # BUG
        grad_img = F.conv_transpose2d(grad_gx, weight[:1], padding=1)
        grad_img = grad_img + F.conv_transpose2d(grad_gy, weight[1:], padding=1)
        return grad_img

    @staticmethod
    def example_inputs():
        return (_seeded(1, 1, 5, 5, seed=72),)


class OutsideSobelMagnitudeCorrelate(torch.autograd.Function):
    """Sobel magnitude; the adjoint of the convolution written as another conv2d."""

    bug = {"kind": "missing_flip", "input": "img",
           "note": "the adjoint of conv2d is conv2d with the kernel flipped; unflipped, and the Sobel "
                   "kernels being antisymmetric, the whole gradient comes out negated",
           "also": ["sign"]}

    @staticmethod
    def forward(ctx, img):
        weight = _sobel_weight(img.dtype)
        edges = F.conv2d(img, weight, padding=1)
        mag = (edges ** 2).sum(1, keepdim=True).add(SOBEL_EPS).sqrt()
        ctx.save_for_backward(edges, mag, weight)
        return mag

    @staticmethod
    def backward(ctx, grad_out):
        edges, mag, weight = ctx.saved_tensors
        grad_edges = grad_out * edges / mag
        grad_img = F.conv2d(grad_edges, weight.transpose(0, 1), padding=1)  # BUG
        return grad_img

    @staticmethod
    def example_inputs():
        return (_seeded(1, 1, 5, 5, seed=72),)


# ------------------------------------------------------------------ bilinear upsampling by matrix
def _interp_matrix(n_in, n_out, dtype=torch.float64):
    """Linear interpolation with align_corners=True as an (n_out, n_in) matrix."""
    m = torch.zeros(n_out, n_in, dtype=dtype)
    step = (n_in - 1) / (n_out - 1)
    for i in range(n_out):
        src = i * step
        lo = min(int(math.floor(src)), n_in - 2)
        frac = src - lo
        m[i, lo] += 1.0 - frac
        m[i, lo + 1] += frac
    return m


class OutsideBilinearUpsample(torch.autograd.Function):
    """Y_n = U_h X_n U_w^T: (N, 3, 3) images upsampled to (N, 5, 7)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        uh = _interp_matrix(x.shape[1], 5, x.dtype)
        uw = _interp_matrix(x.shape[2], 7, x.dtype)
        ctx.save_for_backward(uh, uw)
        return torch.einsum("hi,nij,wj->nhw", uh, x, uw)

    @staticmethod
    def backward(ctx, grad_out):
        uh, uw = ctx.saved_tensors
        return torch.einsum("hi,nhw,wj->nij", uh, grad_out, uw)

    @staticmethod
    def example_inputs():
        return (_seeded(2, 3, 3, seed=73),)


class OutsideBilinearUpsampleWidthFirst(torch.autograd.Function):
    """Bilinear upsampling by matrices, backward applying the width matrix first."""

    bug = {"kind": "transposed", "input": "x",
           "note": "U_w^T dY^T U_h is the transpose of the gradient U_h^T dY U_w (square 3x3 input, no error)"}

    @staticmethod
    def forward(ctx, x):
        uh = _interp_matrix(x.shape[1], 5, x.dtype)
        uw = _interp_matrix(x.shape[2], 7, x.dtype)
        ctx.uh, ctx.uw = uh, uw
        return uh @ x @ uw.T

    @staticmethod
    def backward(ctx, grad_out):
        uh, uw = ctx.uh, ctx.uw
        grad_x = uw.T @ grad_out.transpose(1, 2) @ uh  # BUG
        return grad_x

    @staticmethod
    def example_inputs():
        return (_seeded(2, 3, 3, seed=73),)


# -------------------------------------------------------------------------- channel shuffle
GROUPS = 2


class OutsideChannelShuffle(torch.autograd.Function):
    """(N, g*c, H, W) -> view (N, g, c, H, W) -> swap g and c -> (N, c*g, H, W); g = 2, c = 3."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        n, channels, h, w = x.shape
        return x.view(n, GROUPS, channels // GROUPS, h, w).transpose(1, 2).reshape(n, channels, h, w)

    @staticmethod
    def backward(ctx, grad_out):
        n, channels, h, w = grad_out.shape
        grouped = grad_out.view(n, channels // GROUPS, GROUPS, h, w)
        return grouped.transpose(1, 2).reshape(n, channels, h, w)

    @staticmethod
    def example_inputs():
        return (_seeded(1, 6, 2, 2, seed=74),)


class OutsideChannelShuffleSameGrouping(torch.autograd.Function):
    """Channel shuffle; backward "undoes" it with the forward's own grouping."""

    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the gradient is viewed as (N, g, c, ...) like the input, not as the output's (N, c, g, ...): "
                   "with g != c this applies the shuffle again instead of its inverse"}

    @staticmethod
    def forward(ctx, x):
        n, channels, h, w = x.shape
        ctx.split = (GROUPS, channels // GROUPS)
        return x.reshape(n, *ctx.split, h, w).permute(0, 2, 1, 3, 4).reshape(n, channels, h, w)

    @staticmethod
    def backward(ctx, grad_out):
        n, channels, h, w = grad_out.shape
        grouped = grad_out.reshape(n, *ctx.split, h, w)  # BUG
        return grouped.permute(0, 2, 1, 3, 4).reshape(n, channels, h, w)

    @staticmethod
    def example_inputs():
        return (_seeded(1, 6, 2, 2, seed=74),)
