"""Barycentric interpolation of vertex attributes at fixed pixels, vertex-normal accumulation over
faces, nearest-texel texture lookup and a per-pixel material table looked up by integer id."""
import torch


def _bary_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    attr = torch.randn(6, 3, dtype=torch.float64, generator=gen)            # V = 6 vertices, C = 3
    raw = torch.rand(6, 3, dtype=torch.float64, generator=gen) + 0.2
    bary = raw / raw.sum(-1, keepdim=True)                                  # P = 6 pixels
    tri = torch.tensor([[0, 1, 2], [0, 2, 3], [1, 2, 4], [0, 1, 2], [2, 3, 5], [3, 4, 5]],
                       dtype=torch.int64)                                   # shared vertices
    return attr, bary, tri


def _bary_forward(ctx, attr, bary, tri):
    corners = attr[tri]                                                     # (P, 3, C)
    out = (bary[..., None] * corners).sum(dim=1)
    ctx.save_for_backward(attr, bary, tri, out)
    return out


class OverseasBaryInterp(torch.autograd.Function):
    """out[p] = sum_j bary[p, j] * attr[tri[p, j]]."""

    bug = None

    @staticmethod
    def forward(ctx, attr, bary, tri):
        return _bary_forward(ctx, attr, bary, tri)

    @staticmethod
    def backward(ctx, grad_out):
        attr, bary, tri, out = ctx.saved_tensors
        contrib = bary[..., None] * grad_out[:, None, :]
        grad_attr = torch.zeros_like(attr)
        grad_attr.index_add_(0, tri.reshape(-1), contrib.reshape(-1, attr.shape[1]))
        grad_bary = (attr[tri] * grad_out[:, None, :]).sum(-1)
        return grad_attr, grad_bary, None

    @staticmethod
    def example_inputs():
        return _bary_inputs(41)


class OverseasBaryInterpIndexPut(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "attr",
           "note": "index_put_ without accumulate=True keeps one pixel's contribution per shared vertex"}

    @staticmethod
    def forward(ctx, attr, bary, tri):
        return _bary_forward(ctx, attr, bary, tri)

    @staticmethod
    def backward(ctx, grad_out):
        attr, bary, tri, out = ctx.saved_tensors
        contrib = bary[..., None] * grad_out[:, None, :]
        grad_attr = torch.zeros_like(attr)
        grad_attr.index_put_((tri.reshape(-1),), contrib.reshape(-1, attr.shape[1]))  # BUG
        grad_bary = (attr[tri] * grad_out[:, None, :]).sum(-1)
        return grad_attr, grad_bary, None

    @staticmethod
    def example_inputs():
        return _bary_inputs(42)


class OverseasBaryInterpOutAsCorner(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "bary",
           "note": "the barycentric gradient dots grad_output with the interpolated output instead of each corner's attribute"}

    @staticmethod
    def forward(ctx, attr, bary, tri):
        return _bary_forward(ctx, attr, bary, tri)

    @staticmethod
    def backward(ctx, grad_out):
        attr, bary, tri, out = ctx.saved_tensors
        contrib = bary[..., None] * grad_out[:, None, :]
        grad_attr = torch.zeros_like(attr)
        grad_attr.index_add_(0, tri.reshape(-1), contrib.reshape(-1, attr.shape[1]))
        grad_bary = (out[:, None, :] * grad_out[:, None, :]).sum(-1).expand_as(bary)  # BUG
        return grad_attr, grad_bary, None

    @staticmethod
    def example_inputs():
        return _bary_inputs(43)


class OverseasBaryInterpSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "attr",
           "note": "the attribute and barycentric gradients (both 6x3 here) are returned in each other's places"}

    @staticmethod
    def forward(ctx, attr, bary, tri):
        return _bary_forward(ctx, attr, bary, tri)

    @staticmethod
    def backward(ctx, grad_out):
        attr, bary, tri, out = ctx.saved_tensors
        contrib = bary[..., None] * grad_out[:, None, :]
        grad_attr = torch.zeros_like(attr)
        grad_attr.index_add_(0, tri.reshape(-1), contrib.reshape(-1, attr.shape[1]))
        grad_bary = (attr[tri] * grad_out[:, None, :]).sum(-1)
        return grad_bary, grad_attr, None  # BUG

    @staticmethod
    def example_inputs():
        return _bary_inputs(44)


NUM_VERTICES = 5


def _normal_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    face_n = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    faces = torch.tensor([[0, 1, 2], [0, 2, 3], [1, 2, 4], [2, 3, 4]], dtype=torch.int64)
    return face_n, faces


def _normal_forward(ctx, face_n, faces):
    ctx.save_for_backward(faces)
    out = face_n.new_zeros(NUM_VERTICES, 3)
    index = faces.reshape(-1, 1).expand(-1, 3)
    return out.scatter_add_(0, index, face_n.repeat_interleave(3, dim=0))


class OverseasVertexNormalAccum(torch.autograd.Function):
    """Un-normalised vertex normals: each vertex sums the normals of its incident faces."""

    bug = None

    @staticmethod
    def forward(ctx, face_n, faces):
        return _normal_forward(ctx, face_n, faces)

    @staticmethod
    def backward(ctx, grad_out):
        (faces,) = ctx.saved_tensors
        grad_face_n = grad_out[faces].sum(dim=1)  # (F, corner, xyz) -> over the corners
        return grad_face_n, None

    @staticmethod
    def example_inputs():
        return _normal_inputs(45)


class OverseasVertexNormalAccumXYZSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "face_n",
           "note": "grad_out[faces] is (F, corner, xyz) and the sum is over xyz instead of over the three corners"}

    @staticmethod
    def forward(ctx, face_n, faces):
        return _normal_forward(ctx, face_n, faces)

    @staticmethod
    def backward(ctx, grad_out):
        (faces,) = ctx.saved_tensors
        grad_face_n = grad_out[faces].sum(dim=-1)  # BUG
        return grad_face_n, None

    @staticmethod
    def example_inputs():
        return _normal_inputs(46)


def _texture_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    texture = torch.randn(3, 3, 4, dtype=torch.float64, generator=gen)      # (C, H, W)
    texel = torch.tensor([0, 5, 5, 11, 2, 7, 0, 9], dtype=torch.int64)      # repeats
    return texture, texel


def _texture_forward(ctx, texture, texel):
    C, H, W = texture.shape
    ctx.save_for_backward(texel)
    ctx.chw = (C, H, W)
    flat = texture.permute(1, 2, 0).reshape(H * W, C)
    return flat[texel]


class OverseasTextureLookup(torch.autograd.Function):
    """Nearest-texel lookup of a channel-first texture at integer texel ids."""

    bug = None

    @staticmethod
    def forward(ctx, texture, texel):
        return _texture_forward(ctx, texture, texel)

    @staticmethod
    def backward(ctx, grad_out):
        (texel,) = ctx.saved_tensors
        C, H, W = ctx.chw
        grad_flat = grad_out.new_zeros(H * W, C)
        grad_flat.scatter_add_(0, texel[:, None].expand(-1, C), grad_out)
        return grad_flat.view(H, W, C).permute(2, 0, 1), None

    @staticmethod
    def example_inputs():
        return _texture_inputs(47)


class OverseasTextureLookupScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "texture",
           "note": "scatter_ instead of scatter_add_: a texel sampled by several pixels keeps only one gradient"}

    @staticmethod
    def forward(ctx, texture, texel):
        return _texture_forward(ctx, texture, texel)

    @staticmethod
    def backward(ctx, grad_out):
        (texel,) = ctx.saved_tensors
        C, H, W = ctx.chw
        grad_flat = grad_out.new_zeros(H * W, C)
        grad_flat.scatter_(0, texel[:, None].expand(-1, C), grad_out)  # BUG
        return grad_flat.view(H, W, C).permute(2, 0, 1), None

    @staticmethod
    def example_inputs():
        return _texture_inputs(48)


class OverseasTextureLookupNoPermute(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "texture",
           "note": "the (H*W, C) gradient is reshaped straight to (C, H, W) without undoing the channel-last permute"}

    @staticmethod
    def forward(ctx, texture, texel):
        return _texture_forward(ctx, texture, texel)

    @staticmethod
    def backward(ctx, grad_out):
        (texel,) = ctx.saved_tensors
        C, H, W = ctx.chw
        grad_flat = grad_out.new_zeros(H * W, C)
        grad_flat.scatter_add_(0, texel[:, None].expand(-1, C), grad_out)
        grad_texture = grad_flat.reshape(C, H, W)  # BUG
        return grad_texture, None

    @staticmethod
    def example_inputs():
        return _texture_inputs(49)


def _material_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    table = torch.randn(4, 5, dtype=torch.float64, generator=gen)           # 4 materials
    light = torch.rand(7, dtype=torch.float64, generator=gen) + 0.5
    material_id = torch.tensor([2, 0, 2, 3, 2, 1, 0], dtype=torch.int64)
    return table, light, material_id


def _material_forward(ctx, table, light, material_id):
    ctx.save_for_backward(table, light, material_id)
    return table[material_id] * light[:, None]


class OverseasMaterialLookup(torch.autograd.Function):
    """Per-pixel material parameters looked up by id and scaled by the pixel's light intensity."""

    bug = None

    @staticmethod
    def forward(ctx, table, light, material_id):
        return _material_forward(ctx, table, light, material_id)

    @staticmethod
    def backward(ctx, grad_out):
        table, light, material_id = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table.index_add_(0, material_id, grad_out * light[:, None])
        grad_light = (grad_out * table[material_id]).sum(-1)
        return grad_table, grad_light, None

    @staticmethod
    def example_inputs():
        return _material_inputs(51)


class OverseasMaterialLookupPlusEquals(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "grad_table[ids] += ... with repeated ids writes each row once instead of summing the repeats"}

    @staticmethod
    def forward(ctx, table, light, material_id):
        return _material_forward(ctx, table, light, material_id)

    @staticmethod
    def backward(ctx, grad_out):
        table, light, material_id = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table[material_id] += grad_out * light[:, None]  # BUG
        grad_light = (grad_out * table[material_id]).sum(-1)
        return grad_table, grad_light, None

    @staticmethod
    def example_inputs():
        return _material_inputs(52)
