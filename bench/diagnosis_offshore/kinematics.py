"""Planar-arm forward kinematics: joint angles are summed along the chain (cumsum), links of learned
length; the end effector, every joint position, and an arm with joint limits (clamped angles).
A gradient reversal layer for sim-to-real features closes the file."""
import torch


def _arm_inputs():
    gen = torch.Generator().manual_seed(31)
    theta = torch.rand(4, 4, generator=gen, dtype=torch.float64) * 1.2 - 0.6  # B = J = 4
    lengths = torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    return theta, lengths


def _rev_cumsum(t, dim):
    return torch.flip(torch.cumsum(torch.flip(t, dims=[dim]), dim=dim), dims=[dim])


class OffshoreArmFK(torch.autograd.Function):
    """End-effector (x, y) of a planar arm: phi = cumsum(theta), p = sum_j l_j (cos phi_j, sin phi_j)."""

    bug = None

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        ctx.save_for_backward(phi, lengths)
        px = (lengths * torch.cos(phi)).sum(dim=1)
        py = (lengths * torch.sin(phi)).sum(dim=1)
        return torch.stack([px, py], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        gx, gy = grad_out[:, 0:1], grad_out[:, 1:2]
        dphi = lengths * (-torch.sin(phi) * gx + torch.cos(phi) * gy)
        grad_theta = _rev_cumsum(dphi, 1)
        grad_lengths = (torch.cos(phi) * gx + torch.sin(phi) * gy).sum(dim=0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmFKLoop(torch.autograd.Function):
    """The same end effector, its backward written joint by joint from the tip down."""

    bug = None

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        ctx.save_for_backward(phi, lengths)
        return torch.stack([(lengths * torch.cos(phi)).sum(1), (lengths * torch.sin(phi)).sum(1)], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        B, J = phi.shape
        grad_theta = torch.zeros_like(phi)
        carry = torch.zeros(B, dtype=phi.dtype)
        for t in reversed(range(J)):
            carry = carry + lengths[t] * (-torch.sin(phi[:, t]) * grad_out[:, 0]
                                          + torch.cos(phi[:, t]) * grad_out[:, 1])
            grad_theta[:, t] = carry
        grad_lengths = (torch.cos(phi) * grad_out[:, :1] + torch.sin(phi) * grad_out[:, 1:]).sum(0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmFKNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "theta",
           "note": "the adjoint of cumsum is a reversed cumsum; the backward runs a plain forward cumsum"}

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        ctx.save_for_backward(phi, lengths)
        px = (lengths * torch.cos(phi)).sum(dim=1)
        py = (lengths * torch.sin(phi)).sum(dim=1)
        return torch.stack([px, py], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        gx, gy = grad_out[:, 0:1], grad_out[:, 1:2]
        dphi = lengths * (-torch.sin(phi) * gx + torch.cos(phi) * gy)
        grad_theta = torch.cumsum(dphi, dim=1)  # BUG
        grad_lengths = (torch.cos(phi) * gx + torch.sin(phi) * gy).sum(dim=0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmFKBatchAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "theta",
           "note": "the reversed cumsum runs over the batch (dim 0) instead of the joints (dim 1)"}

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        ctx.save_for_backward(phi, lengths)
        px = (lengths * torch.cos(phi)).sum(dim=1)
        py = (lengths * torch.sin(phi)).sum(dim=1)
        return torch.stack([px, py], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        gx, gy = grad_out[:, 0:1], grad_out[:, 1:2]
        dphi = lengths * (-torch.sin(phi) * gx + torch.cos(phi) * gy)
        grad_theta = _rev_cumsum(dphi, 0)  # BUG
        grad_lengths = (torch.cos(phi) * gx + torch.sin(phi) * gy).sum(dim=0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmFKCosDerivSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "theta",
           "note": "d cos(phi) written +sin(phi): the x term of the joint gradient has the wrong sign"}

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        ctx.save_for_backward(phi, lengths)
        px = (lengths * torch.cos(phi)).sum(dim=1)
        py = (lengths * torch.sin(phi)).sum(dim=1)
        return torch.stack([px, py], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        gx, gy = grad_out[:, 0:1], grad_out[:, 1:2]
        dphi = lengths * (torch.sin(phi) * gx + torch.cos(phi) * gy)  # BUG
        grad_theta = _rev_cumsum(dphi, 1)
        grad_lengths = (torch.cos(phi) * gx + torch.sin(phi) * gy).sum(dim=0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmFKLengthUsesTheta(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "lengths",
           "note": "the link-length gradient uses cos/sin of the relative joint angles theta, not of the absolute phi"}

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        ctx.save_for_backward(theta, phi, lengths)
        px = (lengths * torch.cos(phi)).sum(dim=1)
        py = (lengths * torch.sin(phi)).sum(dim=1)
        return torch.stack([px, py], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        theta, phi, lengths = ctx.saved_tensors
        gx, gy = grad_out[:, 0:1], grad_out[:, 1:2]
        dphi = lengths * (-torch.sin(phi) * gx + torch.cos(phi) * gy)
        grad_theta = _rev_cumsum(dphi, 1)
        grad_lengths = (torch.cos(theta) * gx + torch.sin(theta) * gy).sum(dim=0)  # BUG
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmJointPositions(torch.autograd.Function):
    """Every joint's position (B, J, 2): P_k = sum_{i<=k} l_i (cos phi_i, sin phi_i)."""

    bug = None

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        seg = lengths[None, :, None] * torch.stack([torch.cos(phi), torch.sin(phi)], dim=-1)
        ctx.save_for_backward(phi, lengths)
        return torch.cumsum(seg, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        B, J = phi.shape
        grad_seg = torch.zeros_like(grad_out)
        acc = torch.zeros(B, 2, dtype=grad_out.dtype)
        for k in reversed(range(J)):
            acc = acc + grad_out[:, k]
            grad_seg[:, k] = acc
        c, s = torch.cos(phi), torch.sin(phi)
        dphi = lengths * (-s * grad_seg[..., 0] + c * grad_seg[..., 1])
        grad_theta = _rev_cumsum(dphi, 1)
        grad_lengths = (c * grad_seg[..., 0] + s * grad_seg[..., 1]).sum(0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmJointPositionsOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "theta",
           "note": "the suffix sum of the joint-position gradients is overwritten by each joint's own "
                   "gradient instead of accumulated (lengths' gradient is wrong too)"}

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        seg = lengths[None, :, None] * torch.stack([torch.cos(phi), torch.sin(phi)], dim=-1)
        ctx.save_for_backward(phi, lengths)
        return torch.cumsum(seg, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        B, J = phi.shape
        grad_seg = torch.zeros_like(grad_out)
        acc = torch.zeros(B, 2, dtype=grad_out.dtype)
        for k in reversed(range(J)):
            acc = grad_out[:, k]  # BUG
            grad_seg[:, k] = acc
        c, s = torch.cos(phi), torch.sin(phi)
        dphi = lengths * (-s * grad_seg[..., 0] + c * grad_seg[..., 1])
        grad_theta = _rev_cumsum(dphi, 1)
        grad_lengths = (c * grad_seg[..., 0] + s * grad_seg[..., 1]).sum(0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


class OffshoreArmJointPositionsForwardLoop(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "theta",
           "note": "the joint-position adjoint loop runs base to tip (a prefix sum) instead of tip to base "
                   "(lengths' gradient is wrong too)"}

    @staticmethod
    def forward(ctx, theta, lengths):
        phi = torch.cumsum(theta, dim=1)
        seg = lengths[None, :, None] * torch.stack([torch.cos(phi), torch.sin(phi)], dim=-1)
        ctx.save_for_backward(phi, lengths)
        return torch.cumsum(seg, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths = ctx.saved_tensors
        B, J = phi.shape
        grad_seg = torch.zeros_like(grad_out)
        acc = torch.zeros(B, 2, dtype=grad_out.dtype)
        for k in range(J):  # BUG
            acc = acc + grad_out[:, k]
            grad_seg[:, k] = acc
        c, s = torch.cos(phi), torch.sin(phi)
        dphi = lengths * (-s * grad_seg[..., 0] + c * grad_seg[..., 1])
        grad_theta = _rev_cumsum(dphi, 1)
        grad_lengths = (c * grad_seg[..., 0] + s * grad_seg[..., 1]).sum(0)
        return grad_theta, grad_lengths

    @staticmethod
    def example_inputs():
        return _arm_inputs()


def _limited_inputs():
    theta = torch.tensor([[0.2, -0.9, 0.4, 1.1],
                          [-1.2, 0.3, 0.95, -0.1],
                          [0.5, 0.1, -0.7, 1.3]], dtype=torch.float64)
    lengths = torch.tensor([1.0, 0.8, 0.6, 0.4], dtype=torch.float64)
    return theta, lengths, 0.8


class OffshoreArmJointLimits(torch.autograd.Function):
    """End effector of an arm whose joints saturate at +-limit (a float): theta is clamped first."""

    bug = None

    @staticmethod
    def forward(ctx, theta, lengths, limit):
        inside = theta.abs() < limit
        phi = torch.cumsum(theta.clamp(-limit, limit), dim=1)
        ctx.save_for_backward(phi, lengths, inside)
        return torch.stack([(lengths * phi.cos()).sum(1), (lengths * phi.sin()).sum(1)], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths, inside = ctx.saved_tensors
        dphi = lengths * (-phi.sin() * grad_out[:, :1] + phi.cos() * grad_out[:, 1:])
        grad_theta = torch.where(inside, _rev_cumsum(dphi, 1), torch.zeros_like(dphi))
        grad_lengths = (phi.cos() * grad_out[:, :1] + phi.sin() * grad_out[:, 1:]).sum(0)
        return grad_theta, grad_lengths, None

    @staticmethod
    def example_inputs():
        return _limited_inputs()


class OffshoreArmJointLimitsNoMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "theta",
           "note": "the saturated joints (|theta| > limit) still get the gradient; the clamp's mask is never applied"}

    @staticmethod
    def forward(ctx, theta, lengths, limit):
        inside = theta.abs() < limit
        phi = torch.cumsum(theta.clamp(-limit, limit), dim=1)
        ctx.save_for_backward(phi, lengths, inside)
        return torch.stack([(lengths * phi.cos()).sum(1), (lengths * phi.sin()).sum(1)], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        phi, lengths, inside = ctx.saved_tensors
        dphi = lengths * (-phi.sin() * grad_out[:, :1] + phi.cos() * grad_out[:, 1:])
        grad_theta = _rev_cumsum(dphi, 1)  # BUG
        grad_lengths = (phi.cos() * grad_out[:, :1] + phi.sin() * grad_out[:, 1:]).sum(0)
        return grad_theta, grad_lengths, None

    @staticmethod
    def example_inputs():
        return _limited_inputs()


class OffshoreSimToRealGradReversal(torch.autograd.Function):
    """Gradient reversal layer (lambda = 1) between a policy's features and a sim-vs-real classifier."""

    bug = {"kind": "gradient_reversal", "also": ["sign"], "input": "features",
           "note": "deliberate: identity forward, negated gradient backward (lambda = 1, so exactly a sign flip)"}

    @staticmethod
    def forward(ctx, features):
        return features.view_as(features)

    @staticmethod
    def backward(ctx, grad_out):
        return -grad_out  # BUG
