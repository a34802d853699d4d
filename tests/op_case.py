"""The row type of the ops table (tests/test_ops.py) and the input domains rows draw from.

Shared by test_ops.py and the row modules it gathers (op_rows_*.py), so that each group of ops
keeps its rows in its own file.
"""
from dataclasses import dataclass

import numpy as np


# ---- input domains: where the op is smooth, away from kinks, ties and discontinuities ------
def uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def away_from_zero(lo=0.2, hi=2.0):
    return lambda rng, shape: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def between_integers(rng, shape):
    # fractional parts in (0.2, 0.4): floor, ceil and round are all flat there
    return rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.4, shape)


def distinct(lo=-2.0, hi=2.0):
    """Values at least 0.05 apart: a max/sort/kink cannot switch under a finite-difference step."""
    def draw(rng, shape):
        n = int(np.prod(shape))
        grid = np.linspace(lo, hi, max(n, 2) * 3)[: max(n, 2) * 3]
        return rng.permutation(grid)[:n].reshape(shape) + rng.uniform(-0.01, 0.01, shape)
    return draw


def positive_matrix(rng, shape):
    return rng.uniform(0.5, 1.5, shape)


@dataclass
class Case:
    id: str
    fn: object              # fn(T, *inputs) -> tensor or tuple of tensors
    shapes: tuple           # one shape per differentiable input
    domain: object = uniform(-2.0, 2.0)
    float32: bool = True    # float32 inputs give float32 outputs and gradients
