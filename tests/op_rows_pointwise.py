"""Rows of the ops table (tests/test_ops.py) for elementwise binary and unary ops: atan2, hypot, logaddexp, lerp, addcmul, remainder, ....

Each row runs through every test of test_ops.py (finite differences, torch, double backward, float32)
and test_trace_ops.py (tracing on symbols and a proof of the backward).
"""
from op_case import Case, away_from_zero, between_integers, distinct, positive_matrix, uniform  # noqa: F401

POS = uniform(0.2, 3.0)
# remainder/fmod rows divide 5.5·a by b with a, b in (1, 1.05): the quotient stays in (5.23, 5.78),
# away from the integers where floor/trunc jump (and -5.5·a gives (-5.78, -5.23): floor -6, trunc -5)
NEAR_ONE = uniform(1.0, 1.05)

CASES = [
    # atan2: |a|, |b| >= 0.2 keeps the points off the origin and off the branch cut (a = 0, b < 0)
    Case("atan2", lambda T, a, b: T.atan2(a, b), ((3, 4), (3, 4)), away_from_zero()),
    Case("atan2_broadcast", lambda T, a, b: T.atan2(a, b), ((2, 3), (3,)), away_from_zero()),
    Case("atan2_broadcast_both", lambda T, a, b: T.atan2(a, b), ((3, 1), (1, 4)), away_from_zero()),
    Case("atan2_method", lambda T, a, b: a.atan2(b), ((4,), (4,)), away_from_zero()),
    Case("atan2_arctan2_alias", lambda T, a, b: T.arctan2(a, b) + b.arctan2(a), ((2, 2), (2, 2)), away_from_zero()),
    Case("hypot", lambda T, a, b: T.hypot(a, b), ((3, 4), (3, 4)), away_from_zero()),
    Case("hypot_broadcast_method", lambda T, a, b: a.hypot(b), ((2, 1, 3), (4, 1)), away_from_zero()),
    Case("logaddexp", lambda T, a, b: T.logaddexp(a, b), ((3, 4), (3, 4)), uniform(-3, 3)),
    Case("logaddexp_broadcast_method", lambda T, a, b: a.logaddexp(b), ((3,), (2, 3)), uniform(-3, 3)),
    Case("lerp_scalar_weight", lambda T, a, b: T.lerp(a, b, 0.3), ((3, 4), (3, 4))),
    Case("lerp_scalar_weight_high", lambda T, a, b: a.lerp(b, 0.8), ((3, 4), (4,))),  # torch's |w| >= 0.5 branch
    Case("lerp_tensor_weight", lambda T, a, b, w: T.lerp(a, b, w), ((3, 4), (3, 4), (3, 4)), uniform(-1, 1.5)),
    Case("lerp_tensor_weight_broadcast", lambda T, a, b, w: a.lerp(b, w), ((2, 3), (3,), (2, 1)), uniform(-1, 1.5)),
    Case("addcmul", lambda T, x, a, b: T.addcmul(x, a, b), ((3, 4), (3, 4), (3, 4))),
    Case("addcmul_value_broadcast", lambda T, x, a, b: T.addcmul(x, a, b, value=-0.5), ((4,), (3, 1), (3, 4))),
    Case("addcmul_method", lambda T, x, a, b: x.addcmul(a, b, value=2), ((2, 3), (2, 3), (3,))),
    Case("addcdiv", lambda T, x, a, b: T.addcdiv(x, a, b), ((3, 4), (3, 4), (3, 4)), away_from_zero()),
    Case("addcdiv_value_broadcast_method", lambda T, x, a, b: x.addcdiv(a, b, value=0.25), ((3, 1), (4,), (3, 4)),
         away_from_zero()),
    Case("log2", lambda T, a: T.log2(a), ((3, 4),), POS),
    Case("log2_method", lambda T, a: a.log2(), ((5,),), POS),
    Case("log10", lambda T, a: T.log10(a), ((3, 4),), POS),
    Case("log10_method", lambda T, a: a.log10() * a, ((5,),), POS),
    Case("remainder", lambda T, a, b: T.remainder(a * 5.5, b), ((3, 4), (3, 4)), NEAR_ONE),
    Case("remainder_negative_broadcast", lambda T, a, b: T.remainder(a * -5.5, b), ((2, 3), (3,)), NEAR_ONE),
    Case("remainder_negative_divisor", lambda T, a, b: (a * 5.5).remainder(-b), ((4,), (4,)), NEAR_ONE),
    Case("remainder_scalar_divisor", lambda T, a: T.remainder(a - 1.0, 0.7), ((5,),), uniform(0.1, 0.25)),
    Case("remainder_operator", lambda T, a, b: (a * 5.5) % b + a % 0.7, ((2, 3), (2, 3)), NEAR_ONE),
    Case("fmod", lambda T, a, b: T.fmod(a * 5.5, b), ((3, 4), (3, 4)), NEAR_ONE),
    Case("fmod_negative_broadcast", lambda T, a, b: T.fmod(a * -5.5, b), ((2, 3), (2, 1)), NEAR_ONE),
    Case("fmod_negative_divisor_method", lambda T, a, b: (a * 5.5).fmod(-b), ((4,), (4,)), NEAR_ONE),
    Case("fmod_scalar_divisor", lambda T, a: T.fmod(a - 1.0, 0.7), ((5,),), uniform(0.1, 0.25)),
    Case("cumprod", lambda T, a: T.cumprod(a, dim=1), ((3, 4),), away_from_zero(0.5, 1.5)),
    Case("cumprod_dim0_method", lambda T, a: a.cumprod(0), ((4, 3),), away_from_zero(0.5, 1.5)),
    Case("cumprod_negative_dim_3d", lambda T, a: T.cumprod(a, -1), ((2, 2, 3),), away_from_zero(0.5, 1.5)),
    Case("cumprod_1d", lambda T, a: T.cumprod(a, 0), ((5,),), away_from_zero(0.5, 1.5)),
    Case("sgn", lambda T, a: T.sgn(a) * a, ((3, 4),), away_from_zero()),
    Case("sgn_method", lambda T, a: a.sgn() + a, ((5,),), away_from_zero()),
    Case("nan_to_num", lambda T, a: T.nan_to_num(a), ((3, 4),)),
    Case("nan_to_num_method_args", lambda T, a: a.nan_to_num(nan=0.5, posinf=1.0, neginf=-1.0) * a, ((5,),)),
]

# row id -> the start of the NotTraceable reason, for ops whose result depends on an order or a
# position of the values (they cannot run on symbols)
NOT_TRACEABLE = {}

# rows whose double backward is also compared with torch's (tests/test_ops.py): every one
DOUBLE_BACKWARD_VS_TORCH = [c.id for c in CASES]
