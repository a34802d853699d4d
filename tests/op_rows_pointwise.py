"""Rows of the ops table (tests/test_ops.py) for elementwise binary and unary ops: atan2, hypot, logaddexp, lerp, addcmul, remainder, ....

Each row runs through every test of test_ops.py (finite differences, torch, double backward, float32)
and test_trace_ops.py (tracing on symbols and a proof of the backward).
"""
from op_case import Case, away_from_zero, between_integers, distinct, positive_matrix, uniform  # noqa: F401

CASES = [
]

# row id -> the start of the NotTraceable reason, for ops whose result depends on an order or a
# position of the values (they cannot run on symbols)
NOT_TRACEABLE = {}
