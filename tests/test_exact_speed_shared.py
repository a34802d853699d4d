"""What the exact reference's tracing no longer repeats per element (shared_numbers.py, signed_symbols.py,
point_partials' numbers) changes no expression and no value: each shortcut against SymPy's own answer."""
import contextlib
import itertools
import random

import mpmath
import numpy as np
import pytest
import sympy
from sympy.core.assumptions import StdFactKB

import gradcli as torch
from gradcli.autograd import Function
from gradcli.symbolic import exact as exact_module
from gradcli.symbolic import signed_symbols
from gradcli.symbolic.exact import exact_reference, run_backward
from gradcli.symbolic.point_partials import PointPartials
from gradcli.symbolic.shared_numbers import shared_numbers

KINDS = {"real": {}, "positive": {"positive": True}, "negative": {"negative": True}}
SYMBOLS = [sympy.Symbol(f"x[{i}]", real=True, **KINDS[k]) for i, k in enumerate(list(KINDS) * 3)]
RELATIONS = (sympy.Gt, sympy.Ge, sympy.Lt, sympy.Le, sympy.Eq, sympy.Ne)


def same_expression(a, b):
    return a == b and type(a) is type(b) and a.args == b.args


@pytest.mark.parametrize("relation", RELATIONS, ids=lambda r: r.__name__)
def test_a_comparison_of_input_symbols_is_what_sympy_evaluates(relation):
    for a, b in itertools.product(SYMBOLS, SYMBOLS):
        found = signed_symbols.relation(relation, a, b)
        assert same_expression(found, relation(a, b)), (a, b, found)
    positive, negative = SYMBOLS[1], SYMBOLS[2]
    assert signed_symbols.relation(sympy.Gt, positive, negative) is sympy.true
    assert isinstance(signed_symbols.relation(sympy.Gt, SYMBOLS[0], positive), sympy.StrictGreaterThan)


@pytest.mark.parametrize("head", [sympy.Max, sympy.Min], ids=["Max", "Min"])
def test_an_extreme_folded_over_input_symbols_is_what_sympy_evaluates(head):
    rng = random.Random(0)
    for n in range(2, 8):
        for _ in range(40):
            row = [rng.choice(SYMBOLS) for _ in range(n)]   # duplicates included
            folded, expected = row[0], row[0]
            for e in row[1:]:
                folded, expected = signed_symbols.extreme(head, folded, e), head(expected, e)
                assert same_expression(folded, expected), (row, folded, expected)
    positive, negative, real = SYMBOLS[1], SYMBOLS[2], SYMBOLS[0]
    assert signed_symbols.extreme(sympy.Max, positive, negative) is positive
    assert signed_symbols.extreme(sympy.Min, positive, negative) is negative
    assert signed_symbols.extreme(sympy.Max, real, negative).args == (real, negative) or \
        set(signed_symbols.extreme(sympy.Max, real, negative).args) == {real, negative}


def test_anything_but_input_symbols_is_left_to_sympy():
    x, z = SYMBOLS[1], sympy.Symbol("z")                        # z: no real assumption
    k = sympy.Symbol("k", integer=True)
    assert signed_symbols.extreme(sympy.Max, x, sympy.Integer(0)) is None
    assert signed_symbols.extreme(sympy.Max, x, x + 1) is None
    assert signed_symbols.extreme(sympy.Max, x, z) is None
    assert signed_symbols.relation(sympy.Gt, x, k) is None
    assert signed_symbols.relation(sympy.Gt, x, 0) is None
    assert signed_symbols.kind_of(sympy.Dummy("d", real=True)) is None


def test_shared_numbers_shares_floats_only_while_on_and_puts_everything_back():
    original_new, original_copy = sympy.Float.__dict__["_new"], StdFactKB.__dict__["copy"]
    assert sympy.Float(0.5) is not sympy.Float(0.5)
    with shared_numbers():
        with shared_numbers():  # nested: still on after the inner one ends
            assert sympy.Float(0.5) is sympy.Float(0.5)
        a = sympy.Float(0.25)
        assert a is sympy.Float("0.25") and a is not sympy.Float(0.25, 30)  # one per (value, precision)
        assert sympy.Float(0.0) is sympy.Float(0.0) and sympy.Float(0.0).is_zero
        x = SYMBOLS[1]
        assert (0.5 * x).is_positive and (-0.5 * x).is_negative and (0.0 * x) == 0
    assert sympy.Float.__dict__["_new"] is original_new and StdFactKB.__dict__["copy"] is original_copy
    assert sympy.Float(0.5) is not sympy.Float(0.5)
    with pytest.raises(RuntimeError), shared_numbers():
        raise RuntimeError("the check ran out of time")
    assert sympy.Float.__dict__["_new"] is original_new and StdFactKB.__dict__["copy"] is original_copy


def test_copied_facts_are_the_facts_sympy_deduces_again():
    x, y = SYMBOLS[1], SYMBOLS[2]
    for e in (x, y, x * y, x + y, sympy.exp(x), sympy.Float(0.5), sympy.Integer(3), sympy.Max(x, SYMBOLS[0])):
        e.is_zero, e.is_extended_positive  # some facts asked, others not
        kb = e._assumptions if isinstance(e._assumptions, StdFactKB) else StdFactKB(e._assumptions)
        deduced = StdFactKB(kb)  # what SymPy's copy does: deduce everything again
        with shared_numbers():
            copied = kb.copy()
        assert dict(copied) == dict(deduced) and copied.generator == deduced.generator
        assert type(copied) is StdFactKB and copied.rules is deduced.rules and copied is not kb


class SoftmaxHalf(Function):  # a max over each row, a float constant distributed over a difference
    @staticmethod
    def forward(ctx, x):
        e = torch.exp(0.5 * (x - x.max(1, keepdim=True)[0]))
        y = e / e.sum(1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 0.5 * y * (g - (g * y).sum(1, keepdim=True))


class Mixed(Function):  # constants, a clamp of an input (Max/Min of symbols and numbers), a mask, a minimum
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return (torch.clamp(x, -0.5, 0.75) * 1.5 + torch.where(x > w, x * w, 0.25 * w)
                + torch.minimum(x, w) + x.amin(0, keepdim=True) / 3.0)

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError  # only the reference is computed here


@pytest.mark.parametrize("fn, shapes", [(SoftmaxHalf, [(3, 4)]), (Mixed, [(3, 4), (3, 4)])], ids=["softmax", "mixed"])
def test_the_reference_is_the_same_without_the_shortcuts(fn, shapes, monkeypatch):
    rng = np.random.default_rng(3)
    inputs = [torch.tensor(rng.uniform(-2, 2, s), requires_grad=True) for s in shapes]
    inputs[0].data[0, 0] = 0.0  # a "real" symbol (no sign) among positive and negative ones
    outs = fn.apply(*inputs)
    sets = [(rng.standard_normal(outs.data.shape),) for _ in range(2)]
    fast = exact_reference(fn, inputs, sets, [outs.data.shape])
    monkeypatch.setattr(signed_symbols, "kind_of", lambda e: None)           # SymPy's Max, Min, comparisons
    monkeypatch.setattr(exact_module, "shared_numbers", contextlib.nullcontext)  # a Float per element
    slow = exact_reference(fn, inputs, sets, [outs.data.shape])
    for i in fast.values:
        assert all(np.array_equal(a, b) for a, b in zip(fast.values[i], slow.values[i]))
        assert np.array_equal(fast.kinks[i], slow.kinks[i])
        assert all(np.array_equal(a, b) for a, b in zip(fast.magnitudes[i], slow.magnitudes[i]))
    assert any(np.any(v != 0) for v in fast.values[0])


def test_the_softmax_backward_is_judged_against_that_reference():
    from gradcli.check.exact import exact_check

    x = torch.tensor(np.random.default_rng(4).uniform(-2, 2, (3, 4)), requires_grad=True)
    check = exact_check(SoftmaxHalf, [x])
    assert check.status == "pass" and check.details["inputs"][0]["exact_error"] < 1e-15
    analytic, _, _ = run_backward(SoftmaxHalf, [x], None)
    assert np.all(np.isfinite(analytic[0][0]))


def test_point_partials_keep_no_numbers_and_give_the_same_partials():
    x, y = SYMBOLS[1], SYMBOLS[2]
    expr = sympy.Float(2.0) * sympy.tanh(sympy.Float(0.5) * x) + sympy.Max(x, 0) * y + sympy.Abs(y) / 3
    at = {x: mpmath.mpf("0.625"), y: mpmath.mpf("-1.375")}
    with mpmath.workdps(40):
        numbers = PointPartials(at)
        found = {s: (v, kink) for s, v, kink in numbers.partials(expr)}
        assert not any(getattr(node, "is_Number", False) for node in numbers.values)
        rational = expr.xreplace({sympy.Float(2.0): sympy.Integer(2), sympy.Float(0.5): sympy.S.Half})
        for s, (value, kink) in found.items():  # SymPy's derivative, its constants exact (not at 53 bits)
            exact = sympy.diff(rational, s).subs({x: sympy.Rational(5, 8), y: sympy.Rational(-11, 8)}).evalf(50)
            assert abs(value - mpmath.mpf(str(exact))) < mpmath.mpf(10) ** -30 and not kink


def test_shared_numbers_in_two_threads_is_off_only_after_both():
    import threading

    original_new = sympy.Float.__dict__["_new"]
    inside, leave, seen = threading.Barrier(2), threading.Event(), []

    def work(first):
        with shared_numbers():
            inside.wait()
            if first:
                leave.wait()  # the other thread has left: still on here
                seen.append(sympy.Float(1.5) is sympy.Float(1.5))
        if not first:
            seen.append(sympy.Float.__dict__["_new"] is not original_new)
            leave.set()

    threads = [threading.Thread(target=work, args=(k == 0,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen == [True, True] and sympy.Float.__dict__["_new"] is original_new
