"""Detection losses: GIoU loss on (x1, y1, x2, y2) boxes, an FCOS centre-ness target from (l, r) and
(t, b) distances, binary focal loss with alpha, and a triangular surrogate for an IoU-threshold
match indicator (a deliberate estimator)."""
import torch


def _boxes():
    pred = torch.tensor([[0.0, 0.0, 2.0, 2.0],
                         [1.0, 0.5, 3.5, 2.5],
                         [0.2, 1.0, 1.8, 3.0]], dtype=torch.float64)
    target = torch.tensor([[1.0, 0.8, 3.1, 2.6],
                           [0.5, 1.1, 2.7, 3.2],
                           [0.6, 0.1, 2.4, 2.3]], dtype=torch.float64)
    return pred, target


def _giou_parts(pred, target):
    px1, py1, px2, py2 = pred.unbind(-1)
    tx1, ty1, tx2, ty2 = target.unbind(-1)
    iw = (torch.minimum(px2, tx2) - torch.maximum(px1, tx1)).clamp(min=0)
    ih = (torch.minimum(py2, ty2) - torch.maximum(py1, ty1)).clamp(min=0)
    inter = iw * ih
    union = (px2 - px1) * (py2 - py1) + (tx2 - tx1) * (ty2 - ty1) - inter
    cw = torch.maximum(px2, tx2) - torch.minimum(px1, tx1)
    ch = torch.maximum(py2, ty2) - torch.minimum(py1, ty1)
    return iw, ih, inter, union, cw, ch


def _overlap_grads(g_len, lo_p, hi_p, lo_t, hi_t):
    """Gradients of len = min(hi_p, hi_t) - max(lo_p, lo_t) to the four coordinates."""
    p_hi_wins = (hi_p < hi_t).to(g_len.dtype)
    p_lo_wins = (lo_p > lo_t).to(g_len.dtype)
    return (-g_len * p_lo_wins, g_len * p_hi_wins, -g_len * (1 - p_lo_wins), g_len * (1 - p_hi_wins))


def _enclosure_grads(g_len, lo_p, hi_p, lo_t, hi_t):
    """Gradients of len = max(hi_p, hi_t) - min(lo_p, lo_t) to the four coordinates."""
    p_hi_wins = (hi_p > hi_t).to(g_len.dtype)
    p_lo_wins = (lo_p < lo_t).to(g_len.dtype)
    return (-g_len * p_lo_wins, g_len * p_hi_wins, -g_len * (1 - p_lo_wins), g_len * (1 - p_hi_wins))


class StrangerGIoULoss(torch.autograd.Function):
    """Per box: 1 - GIoU = 1 - I/U + (C - U)/C."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        iw, ih, inter, union, cw, ch = _giou_parts(pred, target)
        enclose = cw * ch
        ctx.save_for_backward(pred, target)
        return 1 - inter / union + (enclose - union) / enclose

    @staticmethod
    def backward(ctx, grad_out):
        pred, target = ctx.saved_tensors
        iw, ih, inter, union, cw, ch = _giou_parts(pred, target)
        enclose = cw * ch
        g_inter = -grad_out / union
        g_union = grad_out * (inter / union ** 2 - 1 / enclose)
        g_enclose = grad_out * union / enclose ** 2
        g_inter = g_inter - g_union  # union = area_p + area_t - inter
        g_iw = g_inter * ih * (iw > 0)
        g_ih = g_inter * iw * (ih > 0)
        px1, py1, px2, py2 = pred.unbind(-1)
        tx1, ty1, tx2, ty2 = target.unbind(-1)
        a = _overlap_grads(g_iw, px1, px2, tx1, tx2)
        b = _overlap_grads(g_ih, py1, py2, ty1, ty2)
        c = _enclosure_grads(g_enclose * ch, px1, px2, tx1, tx2)
        d = _enclosure_grads(g_enclose * cw, py1, py2, ty1, ty2)
        pw, ph, tw, th = px2 - px1, py2 - py1, tx2 - tx1, ty2 - ty1
        grad_pred = torch.stack([a[0] + c[0] - g_union * ph, b[0] + d[0] - g_union * pw,
                                 a[1] + c[1] + g_union * ph, b[1] + d[1] + g_union * pw], dim=-1)
        grad_target = torch.stack([a[2] + c[2] - g_union * th, b[2] + d[2] - g_union * tw,
                                   a[3] + c[3] + g_union * th, b[3] + d[3] + g_union * tw], dim=-1)
        return grad_pred, grad_target

    @staticmethod
    def example_inputs():
        return _boxes()


class StrangerGIoULossInvertedMinRoute(torch.autograd.Function):
    """GIoU loss, backward with the min / max routing written inline, axis by axis."""

    bug = {"kind": "region", "input": "pred",
           "note": "the intersection's right edge min(px2, tx2) is routed to pred where px2 > tx2, "
                   "i.e. exactly where the target's edge is the minimum"}

    @staticmethod
    def forward(ctx, pred, target):
        iw, ih, inter, union, cw, ch = _giou_parts(pred, target)
        ctx.save_for_backward(pred, target, iw, ih, inter, union, cw, ch)
        return 1 - inter / union + 1 - union / (cw * ch)

    @staticmethod
    def backward(ctx, grad_out):
        pred, target, iw, ih, inter, union, cw, ch = ctx.saved_tensors
        area_c = cw * ch
        gu = grad_out * (inter / union ** 2 - 1 / area_c)
        gi = -grad_out / union - gu
        gc = grad_out * union / area_c ** 2
        gp = torch.zeros_like(pred)
        gt = torch.zeros_like(target)
        for axis, (g_len, g_enc) in enumerate([(gi * ih * (iw > 0), gc * ch),
                                                (gi * iw * (ih > 0), gc * cw)]):
            lo, hi = axis, axis + 2
            p_lo, p_hi, t_lo, t_hi = pred[:, lo], pred[:, hi], target[:, lo], target[:, hi]
            p_side = pred[:, 3 - axis] - pred[:, 1 - axis]  # the box's other side length
            t_side = target[:, 3 - axis] - target[:, 1 - axis]
            hi_to_pred = (p_hi > t_hi).to(pred.dtype)  # BUG
            lo_to_pred = (p_lo > t_lo).to(pred.dtype)
            gp[:, hi] += g_len * hi_to_pred + g_enc * (p_hi > t_hi) + gu * p_side
            gp[:, lo] += -g_len * lo_to_pred - g_enc * (p_lo < t_lo) - gu * p_side
            gt[:, hi] += g_len * (t_hi <= p_hi) + g_enc * (t_hi >= p_hi) + gu * t_side
            gt[:, lo] += -g_len * (t_lo >= p_lo) - g_enc * (t_lo <= p_lo) - gu * t_side
        return gp, gt

    @staticmethod
    def example_inputs():
        return _boxes()


class StrangerGIoULossFixedEnclosure(torch.autograd.Function):
    """GIoU loss whose backward treats the enclosing box as a constant."""

    bug = {"kind": "missing_term", "input": "pred",
           "note": "the enclosing box C depends on the boxes too; the (C - U)/C term's gradient "
                   "through C is left out"}

    @staticmethod
    def forward(ctx, pred, target):
        iw, ih, inter, union, cw, ch = _giou_parts(pred, target)
        enclose = cw * ch
        ctx.save_for_backward(pred, target)
        return 1 - inter / union + (enclose - union) / enclose

    @staticmethod
    def backward(ctx, grad_out):
        pred, target = ctx.saved_tensors
        iw, ih, inter, union, cw, ch = _giou_parts(pred, target)
        enclose = cw * ch
        g_union = grad_out * (inter / union ** 2 - 1 / enclose)
        g_inter = -grad_out / union - g_union
        px1, py1, px2, py2 = pred.unbind(-1)
        tx1, ty1, tx2, ty2 = target.unbind(-1)
        a = _overlap_grads(g_inter * ih * (iw > 0), px1, px2, tx1, tx2)
        b = _overlap_grads(g_inter * iw * (ih > 0), py1, py2, ty1, ty2)
        pw, ph, tw, th = px2 - px1, py2 - py1, tx2 - tx1, ty2 - ty1
        grad_pred = torch.stack([a[0] - g_union * ph, b[0] - g_union * pw,
                                 a[1] + g_union * ph, b[1] + g_union * pw], dim=-1)  # BUG
        grad_target = torch.stack([a[2] - g_union * th, b[2] - g_union * tw,
                                   a[3] + g_union * th, b[3] + g_union * tw], dim=-1)
        return grad_pred, grad_target

    @staticmethod
    def example_inputs():
        return _boxes()


def _ratio_grads(pair):
    """r = min(a, b) / max(a, b) per row and dr / d pair (rows with a != b)."""
    lo, _ = pair.min(dim=1)
    hi, _ = pair.max(dim=1)
    ratio = lo / hi
    first_is_lo = (pair[:, 0] < pair[:, 1]).to(pair.dtype)
    d_lo, d_hi = 1 / hi, -lo / hi ** 2
    grad = torch.stack([first_is_lo * d_lo + (1 - first_is_lo) * d_hi,
                        first_is_lo * d_hi + (1 - first_is_lo) * d_lo], dim=1)
    return ratio, grad


def _distances():
    gen = torch.Generator().manual_seed(501)
    return (torch.rand(4, 2, dtype=torch.float64, generator=gen) * 3 + 0.5,
            torch.rand(4, 2, dtype=torch.float64, generator=gen) * 3 + 0.5)


class StrangerCentreness(torch.autograd.Function):
    """FCOS centre-ness sqrt(min(l,r)/max(l,r) * min(t,b)/max(t,b)) per location."""

    bug = None

    @staticmethod
    def forward(ctx, left_right, top_bottom):
        a, _ = _ratio_grads(left_right)
        b, _ = _ratio_grads(top_bottom)
        c = torch.sqrt(a * b)
        ctx.save_for_backward(left_right, top_bottom, c)
        return c

    @staticmethod
    def backward(ctx, grad_out):
        left_right, top_bottom, c = ctx.saved_tensors
        a, da = _ratio_grads(left_right)
        b, db = _ratio_grads(top_bottom)
        # dc/da = b / (2c), dc/db = a / (2c)
        grad_lr = (grad_out * b / (2 * c))[:, None] * da
        grad_tb = (grad_out * a / (2 * c))[:, None] * db
        return grad_lr, grad_tb

    @staticmethod
    def example_inputs():
        return _distances()


class StrangerCentrenessReturnsPairsReversed(torch.autograd.Function):
    """Centre-ness with the chain rule through the log: d log c = (d log a + d log b) / 2."""

    bug = {"kind": "swapped", "input": "left_right",
           "note": "the horizontal and vertical gradients are computed right but returned as "
                   "(grad_tb, grad_lr)"}

    @staticmethod
    def forward(ctx, left_right, top_bottom):
        ratio_h = left_right.min(1).values / left_right.max(1).values
        ratio_v = top_bottom.min(1).values / top_bottom.max(1).values
        out = (ratio_h * ratio_v).sqrt()
        ctx.save_for_backward(left_right, top_bottom, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        left_right, top_bottom, out = ctx.saved_tensors
        half = 0.5 * grad_out * out
        grads = []
        for pair in (left_right, top_bottom):
            # log(min/max) = log min - log max: +1/min on the smaller entry, -1/max on the larger
            is_min = pair == pair.min(1, keepdim=True).values
            dlog = torch.where(is_min, 1 / pair, -1 / pair)
            grads.append(half[:, None] * dlog)
        grad_lr, grad_tb = grads
        return grad_tb, grad_lr  # BUG

    @staticmethod
    def example_inputs():
        return _distances()


def _focal_inputs():
    gen = torch.Generator().manual_seed(502)
    logits = torch.randn(3, 4, dtype=torch.float64, generator=gen) * 1.5
    targets = torch.tensor([[1, 0, 0, 1], [0, 0, 1, 0], [1, 1, 0, 0]])
    return logits, targets


class StrangerFocalLossAlpha(torch.autograd.Function):
    """Elementwise binary focal loss -alpha_t (1 - p_t)^gamma log p_t, alpha 0.25, gamma 2."""

    bug = None
    ALPHA, GAMMA = 0.25, 2.0

    @staticmethod
    def forward(ctx, logits, targets):
        alpha, gamma = StrangerFocalLossAlpha.ALPHA, StrangerFocalLossAlpha.GAMMA
        p = torch.sigmoid(logits)
        positive = targets.bool()
        pt = torch.where(positive, p, 1 - p)
        alpha_t = torch.where(positive, torch.full_like(p, alpha), torch.full_like(p, 1 - alpha))
        ctx.save_for_backward(pt, alpha_t, positive)
        return -alpha_t * (1 - pt) ** gamma * torch.log(pt)

    @staticmethod
    def backward(ctx, grad_out):
        pt, alpha_t, positive = ctx.saved_tensors
        gamma = StrangerFocalLossAlpha.GAMMA
        d_loss_d_pt = -alpha_t * (-gamma * (1 - pt) ** (gamma - 1) * torch.log(pt)
                                  + (1 - pt) ** gamma / pt)
        d_pt_d_x = torch.where(positive, 1.0, -1.0) * pt * (1 - pt)
        return grad_out * d_loss_d_pt * d_pt_d_x, None

    @staticmethod
    def example_inputs():
        return _focal_inputs()


class StrangerFocalLossAlphaModulatorSign(torch.autograd.Function):
    """Focal loss differentiated by the product rule, written with log-sigmoids."""

    bug = {"kind": "term_sign", "input": "logits",
           "note": "d/dpt of (1 - pt)^gamma is -gamma (1 - pt)^(gamma - 1); the modulator's term "
                   "is added with the wrong sign"}

    @staticmethod
    def forward(ctx, logits, targets):
        sign = targets.to(logits.dtype) * 2 - 1
        log_pt = torch.nn.functional.logsigmoid(sign * logits)
        pt = log_pt.exp()
        alpha_t = 0.75 - 0.5 * targets.to(logits.dtype)
        ctx.save_for_backward(sign, pt, log_pt, alpha_t)
        return -alpha_t * (1 - pt) ** 2 * log_pt

    @staticmethod
    def backward(ctx, grad_out):
        sign, pt, log_pt, alpha_t = ctx.saved_tensors
        modulator = (1 - pt) ** 2
        term_modulator = 2 * (1 - pt) * log_pt  # BUG
        term_log = modulator / pt
        d_pt = -alpha_t * (term_modulator + term_log)
        return grad_out * d_pt * sign * pt * (1 - pt), None

    @staticmethod
    def example_inputs():
        return _focal_inputs()


class StrangerFocalLossAlphaLogInPlace(torch.autograd.Function):
    """Focal loss that saves p_t on ctx, then takes its log in place to spare a buffer."""

    bug = {"kind": "inplace", "input": "logits",
           "note": "pt.log_() after ctx.pt = pt: backward reads log p_t where it expects p_t"}

    @staticmethod
    def forward(ctx, logits, targets):
        p = logits.sigmoid()
        positive = targets == 1
        pt = torch.where(positive, p, 1 - p)
        ctx.alpha_t = torch.where(positive, 0.25, 0.75).to(logits.dtype)
        ctx.positive = positive
        modulator = (1 - pt) ** 2
        ctx.pt = pt
        log_pt = pt.log_()  # BUG
        return -ctx.alpha_t * modulator * log_pt

    @staticmethod
    def backward(ctx, grad_out):
        pt, alpha_t = ctx.pt, ctx.alpha_t
        d_pt = -alpha_t * (-2 * (1 - pt) * torch.log(pt) + (1 - pt) ** 2 / pt)
        d_x = torch.where(ctx.positive, pt * (1 - pt), -pt * (1 - pt))
        return grad_out * d_pt * d_x, None

    @staticmethod
    def example_inputs():
        return _focal_inputs()


class StrangerAnchorMatchSurrogate(torch.autograd.Function):
    """Anchor match indicator [IoU > 0.5]; backward a triangular surrogate of width 0.2."""

    bug = {"kind": "smooth_surrogate", "input": "iou",
           "note": "deliberate: the step's derivative is zero; backward uses a triangle around "
                   "the threshold"}
    THRESHOLD, WIDTH = 0.5, 0.2

    @staticmethod
    def forward(ctx, iou):
        ctx.save_for_backward(iou)
        return (iou > StrangerAnchorMatchSurrogate.THRESHOLD).to(iou.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (iou,) = ctx.saved_tensors
        t, w = StrangerAnchorMatchSurrogate.THRESHOLD, StrangerAnchorMatchSurrogate.WIDTH
        bump = (1 - (iou - t).abs() / w).clamp(min=0) / w  # BUG
        return grad_out * bump

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(503)
        return (torch.rand(3, 4, dtype=torch.float64, generator=gen),)
