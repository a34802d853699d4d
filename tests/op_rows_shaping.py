"""Rows of the ops table (tests/test_ops.py) for shape and linear-algebra ops: roll, tile, diagonal, einsum, kron, cross, ....

Each row runs through every test of test_ops.py (finite differences, torch, double backward, float32)
and test_trace_ops.py (tracing on symbols and a proof of the backward).
"""
from op_case import Case, away_from_zero, between_integers, distinct, positive_matrix, uniform  # noqa: F401

CASES = [
    # broadcasting
    Case("broadcast_to", lambda T, a: T.broadcast_to(a, (2, 3, 4)), ((3, 1),)),
    Case("broadcast_to_method_minus_one", lambda T, a: a.broadcast_to((2, -1)),
         ((3,),)),
    Case("broadcast_tensors", lambda T, a, b: T.broadcast_tensors(a, b), ((3, 1), (1, 4))),
    Case("broadcast_tensors_three", lambda T, a, b, c: (lambda o: o[0] * o[1] + o[2])(T.broadcast_tensors(a, b, c)),
         ((2, 1, 3), (3,), ())),
    # roll, tile, repeat_interleave, unflatten
    Case("roll_flat", lambda T, a: T.roll(a, 2), ((3, 4),)),
    Case("roll_dim", lambda T, a: a.roll(1, 0), ((3, 4),)),
    Case("roll_dims_tuple", lambda T, a: T.roll(a, shifts=(1, -3), dims=(1, 2)), ((2, 3, 4),)),
    Case("roll_same_dim_twice", lambda T, a: T.roll(a, (1, 1), (0, 0)), ((3, 2),)),
    Case("tile", lambda T, a: T.tile(a, (2, 3)), ((2, 3),)),
    Case("tile_fewer_dims", lambda T, a: a.tile((2,)), ((2, 3),)),
    Case("tile_more_dims", lambda T, a: T.tile(a, (2, 1, 2)), ((3,),)),
    Case("repeat_interleave_flat", lambda T, a: T.repeat_interleave(a, 2), ((2, 3),)),
    Case("repeat_interleave_dim", lambda T, a: a.repeat_interleave(3, dim=1), ((2, 3),)),
    Case("repeat_interleave_tensor_repeats",
         lambda T, a: T.repeat_interleave(a, T.tensor([1, 0, 2]), dim=0), ((3, 2),)),
    Case("unflatten", lambda T, a: T.unflatten(a, 1, (2, -1)), ((3, 4),)),
    Case("unflatten_method_last", lambda T, a: a.unflatten(-1, (2, 1, 3)), ((2, 6),)),
    Case("meshgrid_ij", lambda T, a, b: T.meshgrid(a, b, indexing="ij"), ((3,), (4,))),
    Case("meshgrid_xy", lambda T, a, b, c: T.meshgrid([a, b, c], indexing="xy"), ((2,), (3,), (4,))),
    # diagonals
    Case("diagonal", lambda T, a: T.diagonal(a), ((3, 4),)),
    Case("diagonal_offset", lambda T, a: a.diagonal(1), ((3, 4),)),
    Case("diagonal_negative_offset_dims", lambda T, a: T.diagonal(a, -1, 2, 0), ((3, 2, 4),)),
    Case("diagonal_batched", lambda T, a: a.diagonal(dim1=-2, dim2=-1), ((2, 3, 3),)),
    Case("diag_embed", lambda T, a: T.diag_embed(a), ((2, 3),)),
    Case("diag_embed_offset_dims", lambda T, a: a.diag_embed(offset=-1, dim1=0, dim2=2), ((2, 3),)),
    Case("diag_embed_of_diagonal", lambda T, a: T.diag_embed(T.diagonal(a, 0, -2, -1)) * a, ((2, 3, 3),)),
    # products
    Case("mv", lambda T, a, v: T.mv(a, v), ((3, 4), (4,))),
    Case("mv_method", lambda T, a, v: a.mv(v), ((2, 3), (3,))),
    Case("addmv", lambda T, x, a, v: T.addmv(x, a, v, beta=0.5, alpha=2.0), ((3,), (3, 4), (4,))),
    Case("addmm", lambda T, x, a, b: T.addmm(x, a, b), ((3, 2), (3, 4), (4, 2))),
    Case("addmm_broadcast_beta_alpha", lambda T, x, a, b: x.addmm(a, b, beta=0.5, alpha=-1.5), ((2,), (3, 4), (4, 2))),
    Case("addmm_beta_zero", lambda T, x, a, b: T.addmm(x, a, b, beta=0), ((3, 2), (3, 4), (4, 2))),
    Case("baddbmm", lambda T, x, a, b: T.baddbmm(x, a, b, alpha=0.5), ((2, 3, 2), (2, 3, 4), (2, 4, 2))),
    Case("baddbmm_broadcast_input", lambda T, x, a, b: x.baddbmm(a, b, beta=2), ((3, 1), (2, 3, 4), (2, 4, 2))),
    Case("einsum_matmul", lambda T, a, b: T.einsum("ij,jk->ik", a, b), ((3, 4), (4, 2))),
    Case("einsum_batch_matmul", lambda T, a, b: T.einsum("bij,bjk->bik", a, b), ((2, 3, 4), (2, 4, 2))),
    Case("einsum_outer", lambda T, a, b: T.einsum("i,j->ij", a, b), ((3,), (4,))),
    Case("einsum_trace", lambda T, a: T.einsum("ii->", a), ((3, 3),)),
    Case("einsum_diagonal", lambda T, a: T.einsum("ii->i", a), ((3, 3),)),
    Case("einsum_transpose", lambda T, a: T.einsum("ij->ji", a), ((3, 4),)),
    Case("einsum_sum_axes", lambda T, a: T.einsum("ijk->j", a), ((2, 3, 4),)),
    Case("einsum_bilinear", lambda T, a, w, b: T.einsum("bi,ij,bj->b", a, w, b), ((2, 3), (3, 4), (2, 4))),
    Case("einsum_implicit", lambda T, a, b: T.einsum("ij,jk", a, b), ((3, 4), (4, 2))),
    Case("einsum_ellipsis_broadcast", lambda T, a, b: T.einsum("...ij,...jk->...ik", a, b),
         ((2, 1, 3, 4), (3, 4, 2))),
    Case("einsum_spaces_list_operands", lambda T, a, b: T.einsum("i j , j -> i", [a, b]), ((3, 4), (4,))),
    Case("einsum_repeated_label_with_other", lambda T, a, b: T.einsum("iij,j->i", a, b), ((3, 3, 2), (2,))),
    Case("einsum_same_operand_twice", lambda T, a: T.einsum("ij,ij->", a, a), ((3, 4),)),
    Case("tensordot_int", lambda T, a, b: T.tensordot(a, b, 1), ((2, 3), (3, 4))),
    Case("tensordot_default", lambda T, a, b: T.tensordot(a, b), ((2, 3, 4), (3, 4, 2))),
    Case("tensordot_dim_lists", lambda T, a, b: T.tensordot(a, b, dims=([0, 2], [2, 0])), ((2, 3, 4), (4, 3, 2))),
    Case("kron", lambda T, a, b: T.kron(a, b), ((2, 3), (3, 2))),
    Case("kron_vectors", lambda T, a, b: a.kron(b), ((3,), (2,))),
    Case("kron_mixed_ndim", lambda T, a, b: T.kron(a, b), ((2,), (2, 3, 2))),
    Case("cross_dim", lambda T, a, b: T.cross(a, b, dim=1), ((2, 3), (2, 3))),
    Case("cross_method_broadcast", lambda T, a, b: a.cross(b, -1), ((4, 1, 3), (1, 2, 3))),
    Case("cross_dim0", lambda T, a, b: T.cross(a, b, 0), ((3, 2), (3, 2))),
    Case("cdist", lambda T, a, b: T.cdist(a, b), ((3, 4), (2, 4))),
    Case("cdist_batched", lambda T, a, b: T.cdist(a, b, p=2.0), ((2, 3, 2), (2, 4, 2))),
    Case("cdist_p1", lambda T, a, b: T.cdist(a, b, p=1), ((3, 2), (2, 2)), distinct()),
    # median: its values have a gradient (to the chosen element)
    Case("median_all", lambda T, a: T.median(a), ((3, 3),), distinct()),
    Case("median_all_even", lambda T, a: a.median(), ((2, 3),), distinct()),
    Case("median_dim", lambda T, a: T.median(a, 1).values, ((3, 4),), distinct()),
    Case("median_dim_keepdim", lambda T, a: a.median(dim=0, keepdim=True)[0], ((3, 4),), distinct()),
]

# row id -> the start of the NotTraceable reason, for ops whose result depends on an order or a
# position of the values (they cannot run on symbols)
_MEDIAN = "the built-in op median cannot run on symbols: it orders the elements by value"
NOT_TRACEABLE = {"median_all": _MEDIAN, "median_all_even": _MEDIAN, "median_dim": _MEDIAN,
                 "median_dim_keepdim": _MEDIAN}

# rows whose double backward is also compared with torch's (tests/test_ops.py)
DOUBLE_BACKWARD_VS_TORCH = ["einsum_bilinear", "einsum_trace", "einsum_repeated_label_with_other",
                            "tensordot_dim_lists", "kron_mixed_ndim", "cross_method_broadcast",
                            "diagonal_negative_offset_dims", "diag_embed_offset_dims", "roll_dims_tuple",
                            "addmm_broadcast_beta_alpha", "median_dim"]
