import gradcli as torch

# A 2-D rotation of points by a learned angle on gradcli's engine, about the origin and about a
# learned centre: out = (points - centre) @ R(angle).mT + centre.


def _matrices(angle):
    c, s = torch.cos(angle), torch.sin(angle)
    rot = torch.stack([torch.cat([c, -s]), torch.cat([s, c])])
    d_rot = torch.stack([torch.cat([-s, -c]), torch.cat([c, -s])])
    return rot, d_rot


def _rotate_inputs():
    g = torch.Generator().manual_seed(701)
    points = torch.randn(5, 2, dtype=torch.float64, generator=g, requires_grad=True)
    angle = torch.tensor([0.7], dtype=torch.float64, requires_grad=True)
    return points, angle


class AfarRotate2D(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, angle):
        rot, d_rot = _matrices(angle)
        ctx.save_for_backward(points, rot, d_rot)
        return points @ rot.mT

    @staticmethod
    def backward(ctx, grad_out):
        points, rot, d_rot = ctx.saved_tensors
        grad_points = grad_out @ rot
        grad_angle = (grad_out * (points @ d_rot.mT)).sum().reshape(1)
        return grad_points, grad_angle

    @staticmethod
    def example_inputs():
        return _rotate_inputs()


class AfarRotate2DSameDirection(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "points",
           "note": "the points' gradient is rotated by R.T again (grad_out @ rot.mT) instead of back by R"}

    @staticmethod
    def forward(ctx, points, angle):
        rot, d_rot = _matrices(angle)
        ctx.save_for_backward(points, rot, d_rot)
        return points @ rot.mT

    @staticmethod
    def backward(ctx, grad_out):
        points, rot, d_rot = ctx.saved_tensors
        grad_points = grad_out @ rot.mT  # BUG
        grad_angle = (grad_out * (points @ d_rot.mT)).sum().reshape(1)
        return grad_points, grad_angle

    @staticmethod
    def example_inputs():
        return _rotate_inputs()


class AfarRotate2DAngleNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "angle",
           "note": "the angle's gradient sums dR/dangle applied to the points without weighting by grad_out"}

    @staticmethod
    def forward(ctx, points, angle):
        rot, d_rot = _matrices(angle)
        ctx.save_for_backward(points, rot, d_rot)
        return points @ rot.mT

    @staticmethod
    def backward(ctx, grad_out):
        points, rot, d_rot = ctx.saved_tensors
        grad_points = grad_out @ rot
        grad_angle = (points @ d_rot.mT).sum().reshape(1)  # BUG
        return grad_points, grad_angle

    @staticmethod
    def example_inputs():
        return _rotate_inputs()


class AfarRotate2DAngleDropped(torch.autograd.Function):
    bug = {"kind": "zero", "input": "angle",
           "note": "backward returns None for the angle, as if it were a fixed hyperparameter and not learned"}

    @staticmethod
    def forward(ctx, points, angle):
        rot, d_rot = _matrices(angle)
        ctx.save_for_backward(points, rot, d_rot)
        return points @ rot.mT

    @staticmethod
    def backward(ctx, grad_out):
        points, rot, d_rot = ctx.saved_tensors
        grad_points = grad_out @ rot
        return grad_points, None  # BUG

    @staticmethod
    def example_inputs():
        return _rotate_inputs()


# ------------------------------------------------------------------- rotation about a centre
def _about_inputs():
    points, angle = _rotate_inputs()
    centre = torch.tensor([0.4, -0.8], dtype=torch.float64, requires_grad=True)
    return points, centre, angle


class AfarRotateAboutCentre(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, centre, angle):
        rot, d_rot = _matrices(angle)
        rel = points - centre
        ctx.save_for_backward(rel, rot, d_rot)
        return rel @ rot.mT + centre

    @staticmethod
    def backward(ctx, grad_out):
        rel, rot, d_rot = ctx.saved_tensors
        grad_rel = grad_out @ rot
        grad_centre = grad_out.sum(0) - grad_rel.sum(0)
        grad_angle = (grad_out * (rel @ d_rot.mT)).sum().reshape(1)
        return grad_rel, grad_centre, grad_angle

    @staticmethod
    def example_inputs():
        return _about_inputs()


class AfarRotateAboutCentreFlipped(torch.autograd.Function):
    bug = {"kind": "sign", "input": "centre",
           "note": "the centre's gradient is written grad_rel.sum - grad_out.sum, the negative of the right one"}

    @staticmethod
    def forward(ctx, points, centre, angle):
        rot, d_rot = _matrices(angle)
        rel = points - centre
        ctx.save_for_backward(rel, rot, d_rot)
        return rel @ rot.mT + centre

    @staticmethod
    def backward(ctx, grad_out):
        rel, rot, d_rot = ctx.saved_tensors
        grad_rel = grad_out @ rot
        grad_centre = grad_rel.sum(0) - grad_out.sum(0)  # BUG
        grad_angle = (grad_out * (rel @ d_rot.mT)).sum().reshape(1)
        return grad_rel, grad_centre, grad_angle

    @staticmethod
    def example_inputs():
        return _about_inputs()
