"""Derivative values against independent sources: torch autograd (when installed) and mpmath.

Every printed number must be right to the digits it shows: checked against mpmath's own numerical
derivative at 40 digits, which shares no code with SymPy's symbolic derivative.
"""
import importlib.util
import math

import mpmath
import pytest

from gradcli.expr.api import DiffRequest, run

HAS_TORCH = importlib.util.find_spec("torch") is not None
mp = mpmath.mp

# expression, point, mpmath function, torch function (tensors in --wrt order)
TABLE = [
    ("sqrt(x)+1/x+2*y**2", {"x": "3", "y": "2"},
     lambda x, y: mp.sqrt(x) + 1 / x + 2 * y ** 2, lambda t, x, y: t.sqrt(x) + 1 / x + 2 * y ** 2),
    ("sin(x)*exp(-y^2)", {"x": "0.7", "y": "1.3"},
     lambda x, y: mp.sin(x) * mp.exp(-y ** 2), lambda t, x, y: t.sin(x) * t.exp(-y ** 2)),
    ("log(x^2+1)*tanh(y)", {"x": "2", "y": "-0.5"},
     lambda x, y: mp.log(x ** 2 + 1) * mp.tanh(y), lambda t, x, y: t.log(x ** 2 + 1) * t.tanh(y)),
    ("sigmoid(x*y)", {"x": "1.5", "y": "-2"},
     lambda x, y: 1 / (1 + mp.exp(-x * y)), lambda t, x, y: t.sigmoid(x * y)),
    ("softplus(x) - relu(y)", {"x": "0.3", "y": "2"},
     lambda x, y: mp.log(1 + mp.exp(x)) - max(0, y),
     lambda t, x, y: t.nn.functional.softplus(x) - t.relu(y)),
    ("gelu(x) * y", {"x": "0.8", "y": "1.1"},
     lambda x, y: x * (1 + mp.erf(x / mp.sqrt(2))) / 2 * y, lambda t, x, y: t.nn.functional.gelu(x) * y),
    ("logsumexp(x, y, 1)", {"x": "0.5", "y": "-1"},
     lambda x, y: mp.log(mp.exp(x) + mp.exp(y) + mp.e), lambda t, x, y: t.logsumexp(
         t.stack([x, y, t.ones_like(x)]), dim=0)),
    ("atan(x/y)", {"x": "1", "y": "2"}, lambda x, y: mp.atan(x / y), lambda t, x, y: t.atan(x / y)),
    ("atan2(y, x) * hypot(x, y)", {"x": "-1", "y": "0.5"},  # second quadrant: atan2, not atan(y/x)
     lambda x, y: mp.atan2(y, x) * mp.hypot(x, y), lambda t, x, y: t.atan2(y, x) * t.hypot(x, y)),
    ("arctan2(x^2, 3)", {"x": "0.8", "y": "1"}, lambda x, y: mp.atan2(x ** 2, 3),
     lambda t, x, y: t.atan2(x ** 2, t.full_like(x, 3.0)) + 0 * y),
    ("x^y", {"x": "2", "y": "3.5"}, lambda x, y: x ** y, lambda t, x, y: x ** y),
    ("asinh(x)+acosh(y)+atanh(x/2)", {"x": "0.5", "y": "2"},
     lambda x, y: mp.asinh(x) + mp.acosh(y) + mp.atanh(x / 2),
     lambda t, x, y: t.asinh(x) + t.acosh(y) + t.atanh(x / 2)),
    ("erf(x)*erfc(y)", {"x": "0.4", "y": "0.9"},
     lambda x, y: mp.erf(x) * mp.erfc(y), lambda t, x, y: t.erf(x) * t.erfc(y)),
    ("abs(x)*max(x, y)", {"x": "-1.5", "y": "0.5"},
     lambda x, y: abs(x) * max(x, y), lambda t, x, y: t.abs(x) * t.maximum(x, y)),
    ("cot(x)+sec(y)+csc(x*y)", {"x": "0.9", "y": "0.4"},
     lambda x, y: mp.cot(x) + mp.sec(y) + mp.csc(x * y),
     lambda t, x, y: 1 / t.tan(x) + 1 / t.cos(y) + 1 / t.sin(x * y)),
    ("2^x + log(y, 3)", {"x": "1.7", "y": "5"},
     lambda x, y: 2 ** x + mp.log(y) / mp.log(3), lambda t, x, y: 2 ** x + t.log(y) / math.log(3)),
    ("(x^2+1)^(1/3) * y", {"x": "1.2", "y": "-3"},
     lambda x, y: mp.cbrt(x ** 2 + 1) * y, lambda t, x, y: (x ** 2 + 1) ** (1 / 3) * y),
    ("log1p(x)+expm1(y)+rsqrt(x)", {"x": "0.6", "y": "-0.2"},
     lambda x, y: mp.log(1 + x) + mp.expm1(y) + 1 / mp.sqrt(x),
     lambda t, x, y: t.log1p(x) + t.expm1(y) + t.rsqrt(x)),
]


def _shown_right(text, true_value):
    """``text`` (e.g. '0.1775640235') is ``true_value`` rounded to the digits it shows."""
    shown = mpmath.mpf(text)
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0") or "0"
    exponent = int(mpmath.floor(mpmath.log10(abs(shown)))) if shown != 0 else 0
    last_digit = mpmath.mpf(10) ** (exponent - len(mantissa) + 1)
    return abs(shown - true_value) <= last_digit / 2 * (1 + 1e-12) + mpmath.mpf(10) ** -30


def _result(text, point):
    at = ",".join(f"{k}={v}" for k, v in point.items())
    return run(DiffRequest([text], wrt=list(point), at=[at], simplify=False))


@pytest.mark.parametrize("text, point, mp_f, torch_f", TABLE, ids=[row[0] for row in TABLE])
def test_printed_values_are_right_to_every_digit_shown(text, point, mp_f, torch_f):
    result = _result(text, point)
    (p,) = result.points
    assert p.ok, p.problem
    names = list(point)
    with mp.workdps(40):
        args = [mpmath.mpf(mpmath.mpmathify(v)) if "." not in v else mpmath.mpf(v) for v in point.values()]
        truth = {(): mp_f(*args)}
        for k, name in enumerate(names):
            orders = [1 if j == k else 0 for j in range(len(names))]
            truth[(name,)] = mpmath.diff(mp_f, args, orders)
        for cell in p.cells:
            expected = truth[cell.key[1]]
            assert _shown_right(cell.value_text, expected), (cell.label["ascii"], cell.value_text, expected)
            assert cell.value == pytest.approx(float(expected), rel=1e-14, abs=1e-300)
            if cell.key[1]:
                # the finite-difference text keeps only digits its error estimate vouches for
                assert _shown_right(cell.fd_text, expected), (cell.label["ascii"], cell.fd_text, expected)


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
@pytest.mark.parametrize("text, point, mp_f, torch_f", TABLE, ids=[row[0] for row in TABLE])
def test_exact_values_match_torch_autograd(text, point, mp_f, torch_f):
    import torch
    result = _result(text, point)
    (p,) = result.points
    tensors = [torch.tensor(float(mpmath.mpf(v)), dtype=torch.float64, requires_grad=True) for v in point.values()]
    value = torch_f(torch, *tensors)
    grads = torch.autograd.grad(value, tensors)
    by_key = {cell.key[1]: cell for cell in p.cells}
    assert by_key[()].value == pytest.approx(value.item(), rel=1e-12)
    for name, grad in zip(point, grads):
        assert by_key[(name,)].value == pytest.approx(grad.item(), rel=1e-10, abs=1e-12)
        # and the engine column agrees with torch too
        assert by_key[(name,)].autograd == pytest.approx(grad.item(), rel=1e-10, abs=1e-12)


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_hessian_matches_torch():
    import torch
    result = run(DiffRequest(["sin(x)*y^3 + exp(x*y)"], at=["x=0.3,y=0.7"], hessian=True, simplify=False))
    (p,) = result.points
    values = {cell.key[1]: cell.value for cell in p.cells}
    hessian = torch.autograd.functional.hessian(
        lambda v: torch.sin(v[0]) * v[1] ** 3 + torch.exp(v[0] * v[1]), torch.tensor([0.3, 0.7], dtype=torch.float64))
    assert values[("x", "x")] == pytest.approx(hessian[0, 0].item(), rel=1e-12)
    assert values[("x", "y")] == pytest.approx(hessian[0, 1].item(), rel=1e-12)
    assert values[("y", "y")] == pytest.approx(hessian[1, 1].item(), rel=1e-12)
    assert p.ok


def test_third_order_mixed_partials_against_mpmath():
    result = run(DiffRequest(["exp(x)*sin(y)*x"], order=3, at=["x=0.5,y=1.2"], simplify=False))
    (p,) = result.points
    f = lambda x, y: mp.exp(x) * mp.sin(y) * x  # noqa: E731
    with mp.workdps(40):
        for cell in p.cells:
            wrt = cell.key[1]
            orders = (wrt.count("x"), wrt.count("y"))
            expected = mpmath.diff(f, (mpmath.mpf("0.5"), mpmath.mpf("1.2")), orders)
            assert _shown_right(cell.value_text, expected), (wrt, cell.value_text)
    assert p.ok
    assert {c.key[1] for c in p.cells} >= {("x", "x", "x"), ("x", "x", "y"), ("x", "y", "y"), ("y", "y", "y")}


def test_jacobian_of_two_expressions():
    result = run(DiffRequest(["x*y", "x+y^2"], at=["x=1,y=2"]))
    (p,) = result.points
    values = {cell.key: cell.value for cell in p.cells}
    assert values == {(0, ()): 2.0, (1, ()): 5.0, (0, ("x",)): 2.0, (0, ("y",)): 1.0,
                      (1, ("x",)): 1.0, (1, ("y",)): 4.0}
    assert [f.text["ascii"] for f in result.formulas] == ["y", "x", "1", "2*y"]
