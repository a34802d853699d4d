"""Vision sampling blocks written by hand: bilinear sampling at fractional points, ROI average pooling
over a box given by a default, pixel unshuffle (reshape + permute) and channel shuffle (view + transpose)."""
import torch


def _bilinear_inputs():
    gen = torch.Generator().manual_seed(11)
    img = torch.randn(5, 6, dtype=torch.float64, generator=gen)
    # fractional coordinates, several points share corner pixels (so the image gradient accumulates)
    ys = torch.tensor([1.3, 1.6, 2.25, 1.45, 3.7, 2.4], dtype=torch.float64)
    xs = torch.tensor([2.35, 2.7, 1.6, 2.2, 3.3, 1.75], dtype=torch.float64)
    return img, ys, xs


def _corners(img, ys, xs):
    y0 = ys.floor().long()
    x0 = xs.floor().long()
    wy = ys - y0
    wx = xs - x0
    return y0, x0, y0 + 1, x0 + 1, wy, wx


class DistantBilinearSample(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, img, ys, xs):
        y0, x0, y1, x1, wy, wx = _corners(img, ys, xs)
        out = ((1 - wy) * (1 - wx) * img[y0, x0] + (1 - wy) * wx * img[y0, x1]
               + wy * (1 - wx) * img[y1, x0] + wy * wx * img[y1, x1])
        ctx.save_for_backward(img, ys, xs)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        img, ys, xs = ctx.saved_tensors
        y0, x0, y1, x1, wy, wx = _corners(img, ys, xs)
        grad_img = torch.zeros_like(img)
        grad_img.index_put_((y0, x0), grad_out * (1 - wy) * (1 - wx), accumulate=True)
        grad_img.index_put_((y0, x1), grad_out * (1 - wy) * wx, accumulate=True)
        grad_img.index_put_((y1, x0), grad_out * wy * (1 - wx), accumulate=True)
        grad_img.index_put_((y1, x1), grad_out * wy * wx, accumulate=True)
        i00, i01, i10, i11 = img[y0, x0], img[y0, x1], img[y1, x0], img[y1, x1]
        grad_ys = grad_out * ((1 - wx) * (i10 - i00) + wx * (i11 - i01))
        grad_xs = grad_out * ((1 - wy) * (i01 - i00) + wy * (i11 - i10))
        return grad_img, grad_ys, grad_xs

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class DistantBilinearSampleOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "img",
           "note": "index_put_ without accumulate=True: sample points sharing a corner pixel overwrite each other"}

    @staticmethod
    def forward(ctx, img, ys, xs):
        y0, x0, y1, x1, wy, wx = _corners(img, ys, xs)
        out = ((1 - wy) * (1 - wx) * img[y0, x0] + (1 - wy) * wx * img[y0, x1]
               + wy * (1 - wx) * img[y1, x0] + wy * wx * img[y1, x1])
        ctx.save_for_backward(img, ys, xs)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        img, ys, xs = ctx.saved_tensors
        y0, x0, y1, x1, wy, wx = _corners(img, ys, xs)
        grad_img = torch.zeros_like(img)
        grad_img.index_put_((y0, x0), grad_out * (1 - wy) * (1 - wx), accumulate=True)
        grad_img.index_put_((y0, x1), grad_out * (1 - wy) * wx, accumulate=True)
        grad_img.index_put_((y1, x0), grad_out * wy * (1 - wx))  # BUG
        grad_img.index_put_((y1, x1), grad_out * wy * wx, accumulate=True)
        i00, i01, i10, i11 = img[y0, x0], img[y0, x1], img[y1, x0], img[y1, x1]
        grad_ys = grad_out * ((1 - wx) * (i10 - i00) + wx * (i11 - i01))
        grad_xs = grad_out * ((1 - wy) * (i01 - i00) + wy * (i11 - i10))
        return grad_img, grad_ys, grad_xs

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class DistantBilinearSampleCoordOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "ys",
           "note": "the row and column coordinate gradients are returned in (x, y) order"}

    @staticmethod
    def forward(ctx, img, ys, xs):
        y0, x0, y1, x1, wy, wx = _corners(img, ys, xs)
        out = ((1 - wy) * (1 - wx) * img[y0, x0] + (1 - wy) * wx * img[y0, x1]
               + wy * (1 - wx) * img[y1, x0] + wy * wx * img[y1, x1])
        ctx.save_for_backward(img, ys, xs)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        img, ys, xs = ctx.saved_tensors
        y0, x0, y1, x1, wy, wx = _corners(img, ys, xs)
        grad_img = torch.zeros_like(img)
        for (yy, xx, w) in ((y0, x0, (1 - wy) * (1 - wx)), (y0, x1, (1 - wy) * wx),
                            (y1, x0, wy * (1 - wx)), (y1, x1, wy * wx)):
            grad_img.index_put_((yy, xx), grad_out * w, accumulate=True)
        i00, i01, i10, i11 = img[y0, x0], img[y0, x1], img[y1, x0], img[y1, x1]
        d_dy = (1 - wx) * (i10 - i00) + wx * (i11 - i01)
        d_dx = (1 - wy) * (i01 - i00) + wy * (i11 - i10)
        return grad_img, grad_out * d_dx, grad_out * d_dy  # BUG

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


def _roi_inputs():
    gen = torch.Generator().manual_seed(12)
    return (torch.randn(3, 6, 5, dtype=torch.float64, generator=gen),)


class DistantRoiAvgPool(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, feat, box=(1, 4, 0, 3)):
        y0, y1, x0, x1 = box
        ctx.box = box
        ctx.shape = feat.shape
        return feat[:, y0:y1, x0:x1].mean(dim=(1, 2))

    @staticmethod
    def backward(ctx, grad_out):
        y0, y1, x0, x1 = ctx.box
        area = (y1 - y0) * (x1 - x0)
        grad = grad_out.new_zeros(ctx.shape)
        grad[:, y0:y1, x0:x1] = (grad_out / area)[:, None, None]
        return grad, None

    @staticmethod
    def example_inputs():
        return _roi_inputs()


class DistantRoiAvgPoolInclusiveEnd(torch.autograd.Function):
    bug = {"kind": "region", "input": "feat",
           "note": "the box's end row is treated as inclusive in backward: one row outside the box gets gradient"}

    @staticmethod
    def forward(ctx, feat, box=(1, 4, 0, 3)):
        y0, y1, x0, x1 = box
        ctx.box = box
        ctx.shape = feat.shape
        return feat[:, y0:y1, x0:x1].mean(dim=(1, 2))

    @staticmethod
    def backward(ctx, grad_out):
        y0, y1, x0, x1 = ctx.box
        area = (y1 - y0) * (x1 - x0)
        grad = grad_out.new_zeros(ctx.shape)
        grad[:, y0:y1 + 1, x0:x1] = (grad_out / area)[:, None, None]  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _roi_inputs()


class DistantRoiAvgPoolWholeMap(torch.autograd.Function):
    bug = {"kind": "scale", "input": "feat",
           "note": "divides by the whole map's H*W instead of the box's area"}

    @staticmethod
    def forward(ctx, feat, box=(1, 4, 0, 3)):
        y0, y1, x0, x1 = box
        ctx.box = box
        ctx.shape = feat.shape
        return feat[:, y0:y1, x0:x1].mean(dim=(1, 2))

    @staticmethod
    def backward(ctx, grad_out):
        y0, y1, x0, x1 = ctx.box
        grad = grad_out.new_zeros(ctx.shape)
        area = ctx.shape[1] * ctx.shape[2]  # BUG
        grad[:, y0:y1, x0:x1] = (grad_out / area)[:, None, None]
        return grad, None

    @staticmethod
    def example_inputs():
        return _roi_inputs()


def _unshuffle_inputs():
    gen = torch.Generator().manual_seed(13)
    return (torch.randn(2, 3, 4, 6, dtype=torch.float64, generator=gen),)


class DistantPixelUnshuffle(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, r=2):
        n, c, h, w = x.shape
        ctx.r = r
        ctx.shape = x.shape
        y = x.reshape(n, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * r * r, h // r, w // r)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, h, w = ctx.shape
        r = ctx.r
        g = grad_out.reshape(n, c, r, r, h // r, w // r).permute(0, 1, 4, 2, 5, 3)
        return g.reshape(n, c, h, w), None

    @staticmethod
    def example_inputs():
        return _unshuffle_inputs()


class DistantPixelUnshuffleNoPermute(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "backward reshapes grad_out straight to x's shape, without undoing the permute of the blocks"}

    @staticmethod
    def forward(ctx, x, r=2):
        n, c, h, w = x.shape
        ctx.r = r
        ctx.shape = x.shape
        y = x.reshape(n, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * r * r, h // r, w // r)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.reshape(ctx.shape), None  # BUG

    @staticmethod
    def example_inputs():
        return _unshuffle_inputs()


class DistantPixelUnshuffleSamePermute(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "backward applies the forward's permutation (0,1,3,5,2,4) again instead of its inverse (0,1,4,2,5,3)"}

    @staticmethod
    def forward(ctx, x, r=2):
        n, c, h, w = x.shape
        ctx.r = r
        ctx.shape = x.shape
        y = x.reshape(n, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * r * r, h // r, w // r)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, h, w = ctx.shape
        r = ctx.r
        g = grad_out.reshape(n, c, r, r, h // r, w // r)
        g = g.permute(0, 1, 3, 5, 2, 4)  # BUG
        return g.reshape(n, c, h, w), None

    @staticmethod
    def example_inputs():
        return _unshuffle_inputs()


def _shuffle_inputs():
    gen = torch.Generator().manual_seed(14)
    return (torch.randn(2, 6, 5, dtype=torch.float64, generator=gen),)


class DistantChannelShuffle(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, groups=2):
        n, c, length = x.shape
        ctx.groups = groups
        return x.view(n, groups, c // groups, length).transpose(1, 2).reshape(n, c, length)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, length = grad_out.shape
        g = ctx.groups
        return grad_out.view(n, c // g, g, length).transpose(1, 2).reshape(n, c, length), None

    @staticmethod
    def example_inputs():
        return _shuffle_inputs()


class DistantChannelShuffleReapplied(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "backward shuffles grad_out the forward's way, view (groups, C/groups), instead of the inverse view (C/groups, groups)"}

    @staticmethod
    def forward(ctx, x, groups=2):
        n, c, length = x.shape
        ctx.groups = groups
        return x.view(n, groups, c // groups, length).transpose(1, 2).reshape(n, c, length)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, length = grad_out.shape
        g = ctx.groups
        return grad_out.view(n, g, c // g, length).transpose(1, 2).reshape(n, c, length), None  # BUG

    @staticmethod
    def example_inputs():
        return _shuffle_inputs()
