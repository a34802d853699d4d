"""Rows of the ops table (tests/test_ops.py) for scatter/index_add/masked/take/put and the in-place variants of indexing ops.

Each row runs through every test of test_ops.py (finite differences, torch, double backward, float32)
and test_trace_ops.py (tracing on symbols and a proof of the backward).
"""
from op_case import Case, away_from_zero, between_integers, distinct, positive_matrix, uniform  # noqa: F401


def _mask(T, rows):
    return T.tensor(rows, dtype=T.bool)


CASES = [
    # scatter: no repeated index along dim (torch's result is nondeterministic there)
    Case("scatter_dim0", lambda T, a, b: T.scatter(a, 0, T.tensor([[1, 0, 2, 1], [0, 2, 1, 0]]), b), ((3, 4), (2, 4))),
    Case("scatter_dim1_method", lambda T, a, b: a.scatter(1, T.tensor([[2, 0], [1, 3]]), b), ((2, 4), (2, 2))),
    Case("scatter_negative_dim_3d", lambda T, a, b: T.scatter(a, -1, T.tensor([[[1], [0]], [[0], [1]]]), b),
         ((2, 2, 2), (2, 2, 1))),
    Case("scatter_value", lambda T, a: T.scatter(a, 1, T.tensor([[0], [2]]), 1.5), ((2, 3),)),
    Case("scatter_value_keyword", lambda T, a: a.scatter(0, T.tensor([[1, 0, 1]]), value=-2.0), ((2, 3),)),
    Case("scatter_inplace", lambda T, a, b: (a * 1.0).scatter_(0, T.tensor([[1, 0, 2]]), b) * a, ((3, 3), (1, 3))),
    # scatter_add / index_add: repeated indices accumulate
    Case("scatter_add_dim0_repeated", lambda T, a, b: T.scatter_add(a, 0, T.tensor([[0, 1, 0], [0, 0, 2]]), b),
         ((3, 3), (2, 3))),
    Case("scatter_add_method_dim1", lambda T, a, b: a.scatter_add(1, T.tensor([[1, 1, 0]]), b), ((2, 3), (1, 3))),
    Case("scatter_add_inplace", lambda T, a, b: (a * 2.0).scatter_add_(-1, T.tensor([[0, 0], [1, 0]]), b * b),
         ((2, 2), (2, 2))),
    Case("index_add_dim0_repeated", lambda T, a, b: T.index_add(a, 0, T.tensor([2, 0, 2]), b), ((3, 4), (3, 4))),
    Case("index_add_alpha_dim1", lambda T, a, b: a.index_add(1, T.tensor([1, 1]), b, alpha=-0.5), ((3, 4), (3, 2))),
    Case("index_add_inplace", lambda T, a, b: (a + 0.0).index_add_(0, T.tensor([1, 1]), b * a, alpha=2.0),
         ((2, 3), (2, 3))),
    # masked ops: constant masks (a mask computed from the values is not traceable)
    Case("masked_select", lambda T, a: T.masked_select(a, _mask(T, [[True, False, True], [False, True, True]])),
         ((2, 3),)),
    Case("masked_select_broadcast_mask", lambda T, a: a.masked_select(_mask(T, [True, False, True])), ((2, 3),)),
    Case("masked_select_broadcast_input", lambda T, a: T.masked_select(a, _mask(T, [[True], [False], [True]])),
         ((4,),)),
    Case("masked_scatter_source_larger", lambda T, a, b: T.masked_scatter(
        a, _mask(T, [[True, False, True], [False, False, True]]), b), ((2, 3), (5,))),
    Case("masked_scatter_broadcast_mask", lambda T, a, b: a.masked_scatter(_mask(T, [True, False, True]), b),
         ((2, 3), (2, 3))),
    Case("masked_scatter_inplace",
         lambda T, a, b: (a * 1.0).masked_scatter_(_mask(T, [[False, True], [True, True]]), b), ((2, 2), (3,))),
    Case("masked_fill_inplace", lambda T, a: (a * a).masked_fill_(_mask(T, [True, False, True]), -0.5), ((2, 3),)),
    Case("masked_fill_inplace_tensor_value", lambda T, a, v: (a * 1.0).masked_fill_(_mask(T, [[True], [False]]), v),
         ((2, 3), ())),
    # index_fill / take / index_put / put
    Case("index_fill", lambda T, a: T.index_fill(a, 1, T.tensor([0, 2]), -1.0), ((2, 3),)),
    Case("index_fill_tensor_value_repeated", lambda T, a, v: a.index_fill(0, T.tensor([1, 1]), v), ((3, 2), ())),
    Case("index_fill_inplace_negative_index", lambda T, a: (a * 1.0).index_fill_(-1, T.tensor([-1]), 0.25),
         ((2, 3),)),
    Case("take_repeated_negative", lambda T, a: T.take(a, T.tensor([[0, 5], [5, -1]])), ((2, 3),)),
    Case("take_method", lambda T, a: a.take(T.tensor([3, 0])), ((2, 2),)),
    Case("index_put", lambda T, a, b: T.index_put(a, (T.tensor([0, 2]), T.tensor([1, 0])), b), ((3, 2), (2,))),
    Case("index_put_accumulate_repeated", lambda T, a, b: a.index_put((T.tensor([0, 0, 2]),), b, accumulate=True),
         ((3, 2), (3, 2))),
    Case("index_put_accumulate_broadcast", lambda T, a, b: T.index_put(a, (T.tensor([1, 1]),), b, accumulate=True),
         ((3, 2), (2,))),
    Case("index_put_bool_index", lambda T, a, b: T.index_put(a, (_mask(T, [True, False, True]),), b), ((3, 2), (1, 2))),
    Case("index_put_inplace_list", lambda T, a, b: (a * 1.0).index_put_([T.tensor([1]), T.tensor([0])], b),
         ((2, 2), (1,))),
    Case("put_accumulate_repeated", lambda T, a, b: T.put(a, T.tensor([0, 3, 0]), b, accumulate=True), ((2, 2), (3,))),
    Case("put_method_negative", lambda T, a, b: a.put(T.tensor([1, -1]), b), ((2, 3), (2,))),
    Case("put_inplace", lambda T, a, b: (a * 1.0).put_(T.tensor([[2], [0]]), b), ((3,), (2, 1))),
    # trivial in-place ones
    Case("fill_diagonal_inplace", lambda T, a: (a * 1.0).fill_diagonal_(0.5), ((3, 4),)),
    Case("fill_diagonal_inplace_wrap", lambda T, a: (a * a).fill_diagonal_(-1.0, wrap=True), ((5, 2),)),
    Case("fill_diagonal_inplace_3d", lambda T, a: (a * 1.0).fill_diagonal_(2.0), ((2, 2, 2),)),
    Case("clamp_min_inplace", lambda T, a: (a * 1.0).clamp_min_(0.1), ((6,),), distinct(-1, 1)),
    Case("clamp_max_inplace", lambda T, a: (a * 1.0).clamp_max_(-0.1), ((6,),), distinct(-1, 1)),
]

# row id -> the start of the NotTraceable reason, for ops whose result depends on an order or a
# position of the values (they cannot run on symbols)
NOT_TRACEABLE = {}

# rows whose double backward is also compared with torch's (tests/test_ops.py)
DOUBLE_BACKWARD_VS_TORCH = ["scatter_inplace", "scatter_add_inplace", "index_add_inplace",
                            "masked_fill_inplace", "fill_diagonal_inplace_wrap"]
