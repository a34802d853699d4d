"""Mesh geometry by hand: batched cross products, triangle areas and unit normals from vertex
positions (separate and packed (T, 3, 3)), and barycentric interpolation of vertex attributes
through an integer face list that shares vertices."""
import torch


def _pairs():
    g = torch.Generator().manual_seed(201)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True),
            torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True))


def _triangles(seed=202):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True) for _ in range(3))


# ------------------------------------------------------------------------- cross product
class AfarCrossProduct(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.linalg.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return torch.linalg.cross(b, grad_out, dim=-1), torch.linalg.cross(grad_out, a, dim=-1)

    @staticmethod
    def example_inputs():
        return _pairs()


class AfarCrossProductOrder(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "d(a x b)/da is written cross(g, b) instead of cross(b, g), which negates the whole gradient of a"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.linalg.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = torch.linalg.cross(grad_out, b, dim=-1)  # BUG
        grad_b = torch.linalg.cross(grad_out, a, dim=-1)
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _pairs()


class AfarCrossProductReturnOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "both gradients are right but returned as (grad_b, grad_a)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.linalg.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = torch.linalg.cross(b, grad_out, dim=-1)
        grad_b = torch.linalg.cross(grad_out, a, dim=-1)
        return grad_b, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return _pairs()


# -------------------------------------------------------------------------- triangle area
class AfarTriangleArea(torch.autograd.Function):
    """area = 0.5 * |(v1 - v0) x (v2 - v0)| per triangle."""

    bug = None

    @staticmethod
    def forward(ctx, v0, v1, v2):
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1)
        ctx.save_for_backward(e1, e2, n, norm)
        return 0.5 * norm

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm = ctx.saved_tensors
        grad_n = (0.5 * grad_out / norm)[:, None] * n
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        return -(grad_e1 + grad_e2), grad_e1, grad_e2

    @staticmethod
    def example_inputs():
        return _triangles()


class AfarTriangleAreaNoHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "v0",
           "note": "the 0.5 of the area is forgotten in backward: every vertex gradient is twice too large"}

    @staticmethod
    def forward(ctx, v0, v1, v2):
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1)
        ctx.save_for_backward(e1, e2, n, norm)
        return 0.5 * norm

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm = ctx.saved_tensors
        grad_n = (grad_out / norm)[:, None] * n  # BUG
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        return -(grad_e1 + grad_e2), grad_e1, grad_e2

    @staticmethod
    def example_inputs():
        return _triangles()


class AfarTriangleAreaOneEdge(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "v0",
           "note": "v0 enters both edges but its gradient only takes minus the first edge's gradient"}

    @staticmethod
    def forward(ctx, v0, v1, v2):
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1)
        ctx.save_for_backward(e1, e2, n, norm)
        return 0.5 * norm

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm = ctx.saved_tensors
        grad_n = (0.5 * grad_out / norm)[:, None] * n
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        grad_v0 = -grad_e1  # BUG
        return grad_v0, grad_e1, grad_e2

    @staticmethod
    def example_inputs():
        return _triangles()


# --------------------------------------------------------------------------- unit normal
class AfarTriangleUnitNormal(torch.autograd.Function):
    """u = n / |n| with n = (v1 - v0) x (v2 - v0)."""

    bug = None

    @staticmethod
    def forward(ctx, v0, v1, v2):
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1, keepdim=True)
        u = n / norm
        ctx.save_for_backward(e1, e2, n, norm, u)
        return u

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm, u = ctx.saved_tensors
        grad_n = (grad_out - u * (u * grad_out).sum(dim=-1, keepdim=True)) / norm
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        return -(grad_e1 + grad_e2), grad_e1, grad_e2

    @staticmethod
    def example_inputs():
        return _triangles(203)


class AfarTriangleUnitNormalRawProjection(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "v1",
           "note": "the normalisation backward projects with the raw normal n instead of the unit normal u"}

    @staticmethod
    def forward(ctx, v0, v1, v2):
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1, keepdim=True)
        u = n / norm
        ctx.save_for_backward(e1, e2, n, norm, u)
        return u

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm, u = ctx.saved_tensors
        grad_n = (grad_out - n * (n * grad_out).sum(dim=-1, keepdim=True)) / norm  # BUG
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        return -(grad_e1 + grad_e2), grad_e1, grad_e2

    @staticmethod
    def example_inputs():
        return _triangles(203)


# -------------------------------------------------------------------- packed triangle area
def _packed():
    g = torch.Generator().manual_seed(204)
    return (torch.randn(4, 3, 3, dtype=torch.float64, generator=g, requires_grad=True),)


class AfarPackedTriangleArea(torch.autograd.Function):
    """tris: (T, 3 vertices, 3 coords); the vertices are moved first to unpack them."""

    bug = None

    @staticmethod
    def forward(ctx, tris):
        v0, v1, v2 = tris.permute(1, 0, 2)
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1)
        ctx.save_for_backward(e1, e2, n, norm)
        return 0.5 * norm

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm = ctx.saved_tensors
        grad_n = (0.5 * grad_out / norm)[:, None] * n
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        stacked = torch.stack([-(grad_e1 + grad_e2), grad_e1, grad_e2])  # (3, T, 3)
        return stacked.permute(1, 0, 2)

    @staticmethod
    def example_inputs():
        return _packed()


class AfarPackedTriangleAreaReshaped(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "tris",
           "note": "the (vertex, T, coord) stack of gradients is reshaped to (T, 3, 3) instead of permuted back, which scrambles triangles and vertices",
           "also": ["transposed"]}

    @staticmethod
    def forward(ctx, tris):
        v0, v1, v2 = tris.permute(1, 0, 2)
        e1, e2 = v1 - v0, v2 - v0
        n = torch.linalg.cross(e1, e2, dim=-1)
        norm = n.norm(dim=-1)
        ctx.save_for_backward(e1, e2, n, norm)
        return 0.5 * norm

    @staticmethod
    def backward(ctx, grad_out):
        e1, e2, n, norm = ctx.saved_tensors
        grad_n = (0.5 * grad_out / norm)[:, None] * n
        grad_e1 = torch.linalg.cross(e2, grad_n, dim=-1)
        grad_e2 = torch.linalg.cross(grad_n, e1, dim=-1)
        stacked = torch.stack([-(grad_e1 + grad_e2), grad_e1, grad_e2])  # (3, T, 3)
        return stacked.reshape(grad_out.shape[0], 3, 3)  # BUG

    @staticmethod
    def example_inputs():
        return _packed()


# ---------------------------------------------------------------- barycentric interpolation
def _bary_inputs():
    g = torch.Generator().manual_seed(205)
    values = torch.randn(5, 2, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.rand(4, 3, dtype=torch.float64, generator=g) + 0.2
    bary = (w / w.sum(dim=1, keepdim=True)).requires_grad_()
    faces = torch.tensor([[0, 1, 2], [1, 2, 3], [2, 3, 4], [0, 2, 4]], dtype=torch.int64)
    return values, bary, faces


class AfarBarycentricInterp(torch.autograd.Function):
    """out[t] = sum_k bary[t, k] * values[faces[t, k]]: vertex attributes at points in triangles."""

    bug = None

    @staticmethod
    def forward(ctx, values, bary, faces):
        corner = values[faces]  # (T, 3, C)
        ctx.save_for_backward(values, bary, faces)
        return (bary[:, :, None] * corner).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        values, bary, faces = ctx.saved_tensors
        c = values.shape[1]
        per_corner = torch.stack([bary[:, k, None] * grad_out for k in range(3)])  # (3, T, C)
        grad_values = torch.zeros_like(values).index_add_(
            0, faces.reshape(-1), per_corner.transpose(0, 1).reshape(-1, c))
        grad_bary = (values[faces] * grad_out[:, None, :]).sum(dim=-1)
        return grad_values, grad_bary, None

    @staticmethod
    def example_inputs():
        return _bary_inputs()


class AfarBarycentricInterpOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "values",
           "note": "corner contributions are written into the shared vertices with index_put_ (no accumulate): a vertex used by several faces keeps one contribution"}

    @staticmethod
    def forward(ctx, values, bary, faces):
        corner = values[faces]
        ctx.save_for_backward(values, bary, faces)
        return (bary[:, :, None] * corner).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        values, bary, faces = ctx.saved_tensors
        c = values.shape[1]
        per_corner = (bary[:, :, None] * grad_out[:, None, :]).reshape(-1, c)  # (T * 3, C)
        grad_values = torch.zeros_like(values).index_put_((faces.reshape(-1),), per_corner)  # BUG
        grad_bary = (values[faces] * grad_out[:, None, :]).sum(dim=-1)
        return grad_values, grad_bary, None

    @staticmethod
    def example_inputs():
        return _bary_inputs()


class AfarBarycentricInterpCornerMajor(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "values",
           "note": "the contributions are stacked corner-major (3, T, C) but flattened without the transpose back to the face-major order of faces.reshape(-1)",
           "also": ["transposed"]}

    @staticmethod
    def forward(ctx, values, bary, faces):
        corner = values[faces]
        ctx.save_for_backward(values, bary, faces)
        return (bary[:, :, None] * corner).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        values, bary, faces = ctx.saved_tensors
        c = values.shape[1]
        per_corner = torch.stack([bary[:, k, None] * grad_out for k in range(3)])  # (3, T, C)
        grad_values = torch.zeros_like(values).index_add_(0, faces.reshape(-1), per_corner.reshape(-1, c))  # BUG
        grad_bary = (values[faces] * grad_out[:, None, :]).sum(dim=-1)
        return grad_values, grad_bary, None

    @staticmethod
    def example_inputs():
        return _bary_inputs()
