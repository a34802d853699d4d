"""The confidence rules of single patterns, on hand-built evidence (no function is run): each rule
names its pattern when the numbers leave no doubt, and stays silent when they could mean
something else."""
import numpy as np
import pytest

from gradcli.check.diagnosis import cotangents, patterns
from gradcli.check.diagnosis import region as regions
from gradcli.check.diagnosis import terms
from gradcli.check.diagnosis.evidence import Evidence, nice_number, short_number

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 4))
V_RANDOM = RNG.standard_normal((2, 3, 4))
ROWS = np.concatenate([np.ones((1, 3, 4)), V_RANDOM])  # cotangents: ones, random, random


def evidence(analytic, numeric, values=X, name="x", index=0, kinds=("ones", "random", "random"), **extra):
    numeric = np.asarray(numeric, dtype=float)
    analytic = None if analytic is None else np.asarray(analytic, float)
    cotangents = extra.pop("cotangents", None) or [(row,) for row in ROWS[: len(numeric)]]
    return Evidence(index, name, numeric.shape[1:], "float64", analytic, numeric, np.zeros_like(numeric), list(kinds),
                    cotangents, values=values, outputs=extra.pop("outputs", []), **extra)


def elementwise(local):
    """Rows vᵀJ of an elementwise function with derivative ``local`` at X."""
    return ROWS * local


@pytest.mark.parametrize("value, simple", [(2.0000000001, 2.0), (1 / 3, 1 / 3), (-1.0, -1.0), (0.125, 0.125),
                                           (1.2345, None), (0.0, None), (1e-9, None)])
def test_nice_number_recognises_simple_fractions_only(value, simple):
    assert nice_number(value) == simple


def test_short_number_writes_thirds_as_fractions():
    assert (short_number(1 / 3), short_number(2.0), short_number(0.5), short_number(1.2345)) == ("1/3", "2", "0.5",
                                                                                                   "1.234")


def test_scale_is_fitted_by_least_squares_and_rounded_to_the_simple_factor():
    numeric = elementwise(np.cos(X))
    finding = patterns.scale(evidence(numeric * 2.5, numeric))
    assert (finding.kind, finding.params["factor"], finding.confidence) == ("scale", 2.5, 0.95)
    assert finding.message == "backward is 2.5× too large for input x (factor 2.5)"


def test_scale_needs_three_independent_numbers_for_an_arbitrary_factor():
    numeric = np.zeros((3, 3, 4))
    numeric[:, 0, 0] = [1.0, -0.4, 0.9]  # one position carries signal, seen through three cotangents
    # ... of a scalar output (one cotangent, scaled): any two numbers are proportional
    scalar = [(np.array(c),) for c in (1.0, -0.7, 2.1)]
    assert patterns.scale(evidence(numeric * 1.2345, numeric, cotangents=scalar)) is None
    assert patterns.scale(evidence(numeric * 3, numeric, cotangents=scalar)).confidence == 0.7
    # ... of a 3x4 output (ones and two random cotangents): vᵀJ′ = c·vᵀJ for three independent v
    # is J′ = c·J whatever c is (a scalar parameter's dθ/dp = π/4 forgotten)
    finding = patterns.scale(evidence(numeric * 4 / np.pi, numeric))
    assert finding.params["factor"] == pytest.approx(4 / np.pi, rel=1e-6)
    assert finding.message == "backward is 4/π times too large for input x (factor 4/π)"
    assert patterns.scale(evidence(numeric * 1.2345, numeric)).message == (
        "backward is 1.234× too large for input x (factor 1.234)")


def test_short_number_names_pi_and_log_factors():
    assert [short_number(v) for v in (np.pi / 4, 4 / np.pi, -2 * np.pi, 3 * np.pi / 2, np.log(10), 1 / np.log(2))] \
        == ["π/4", "4/π", "-2π", "3π/2", "ln 10", "1/ln 2"]


def test_scale_does_not_fit_a_gradient_wrong_in_shape():
    numeric = elementwise(np.cos(X))
    assert patterns.scale(evidence(numeric * (1 + 0.5 * np.sin(X)), numeric)) is None


def test_ignores_grad_output_needs_a_cotangent_that_changes_the_true_answer():
    local = np.cos(X)
    blind = np.broadcast_to(local, (3, 3, 4))
    assert cotangents.ignores_grad_output(evidence(blind, elementwise(local))).params["ones_ok"] is True
    # every cotangent a copy of ones: the numeric answer never changes, nothing to tell apart
    same = np.broadcast_to(local, (3, 3, 4))
    assert cotangents.ignores_grad_output(evidence(same * 2, same)) is None


def test_transposed_is_not_claimed_for_a_symmetric_gradient():
    sym = X[:3, :3] + X[:3, :3].T
    numeric = np.stack([sym, 2 * sym])
    ev = evidence(numeric.transpose(0, 2, 1) * 1.0, numeric, values=sym, kinds=("random", "random"))
    assert patterns.transposed(ev) is None
    skew = X[:3, :3]
    numeric = np.stack([skew, 2 * skew])
    ev = evidence(numeric.transpose(0, 2, 1), numeric, values=skew, kinds=("random", "random"))
    assert patterns.transposed(ev).params == {"permutation": [1, 0]}


def test_swapped_is_not_claimed_when_both_inputs_have_the_same_gradient():
    numeric = elementwise(np.cos(X))
    x = evidence(numeric * 2, numeric)
    y = evidence(numeric, numeric, name="y", index=1)
    x.others = {1: y}
    assert patterns.swapped(x) is None
    y.numeric = numeric * 2
    assert patterns.swapped(x).params["other_input"] == 1


def test_region_reports_a_simple_threshold_and_the_fraction():
    local = np.where(X > 0, 1.0, 0.1)
    ev = evidence(elementwise(np.ones_like(X)), elementwise(local))
    finding = regions.region(ev)
    assert finding.params["description"] == "x < 0"
    assert finding.params["fraction"] == pytest.approx(np.mean(X < 0))
    assert (finding.params["within"], finding.params["factor"]) == ("scale", 10.0)
    assert finding.confidence == 0.9


def test_region_with_an_odd_threshold_is_marked_approximate_and_less_confident():
    # wrong below 0.37: the gap (0.36, 0.38) holds no simple number
    x = np.array([-1.9, -1.2, -0.6, 0.1, 0.3, 0.36, 0.38, 0.6, 0.9, 1.3, 1.7, 1.95]).reshape(3, 4)
    ev = evidence(elementwise(np.ones_like(x)), elementwise(np.where(x < 0.37, 3.0, 1.0)), values=x)
    finding = regions.region(ev)
    assert finding.params["description"] == "x < 0.37 (approximately)"
    assert finding.confidence == 0.6


def test_region_described_by_two_inputs_at_once_loses_confidence():
    local = np.where(X > 0, 1.0, 0.1)
    ev = evidence(elementwise(np.ones_like(X)), elementwise(local))
    alone = regions.region(ev).confidence
    ev.others = {1: evidence(None, elementwise(local), values=X + 5.0, name="y", index=1)}  # y > 5 ⇔ x > 0
    assert regions.region(ev).confidence == pytest.approx(alone - 0.1)


def test_region_single_first_element():
    numeric = elementwise(np.cos(X))
    analytic = numeric.copy()
    analytic[:, 0, 0] *= 2
    finding = regions.region(evidence(analytic, numeric, values=np.abs(X) + 1))
    assert (finding.params["description"], finding.params["count"], finding.confidence) == ("the first element", 1,
                                                                                             0.75)


def test_region_needs_a_proper_subset():
    numeric = elementwise(np.cos(X))
    assert regions.region(evidence(numeric * 2, numeric)) is None  # everything wrong: not a region


def test_kink_from_the_report_mask_alone():
    numeric = elementwise(np.sign(X))
    analytic = numeric.copy()
    analytic[:, 1, 2] = ROWS[:, 1, 2] * 0.3
    mask = np.zeros((3, 4), dtype=bool)
    mask[1, 2] = True
    finding = regions.kink(evidence(analytic, numeric, kink_mask=mask))
    assert (finding.kind, finding.params["count"], finding.confidence) == ("kink", 1, 0.8)
    mask[1, 2] = False
    assert regions.kink(evidence(analytic, numeric, kink_mask=mask)) is None


def test_kink_rejects_a_value_outside_the_one_sided_derivatives():
    numeric = elementwise(np.sign(X))
    analytic = numeric.copy()
    analytic[:, 1, 2] = ROWS[:, 1, 2] * 5.0  # far outside [-1, 1]
    left, right = numeric.copy(), numeric.copy()
    left[:, 1, 2], right[:, 1, 2] = -ROWS[:, 1, 2], ROWS[:, 1, 2]
    assert regions.kink(evidence(analytic, numeric, left=left, right=right)) is None
    analytic[:, 1, 2] = ROWS[:, 1, 2] * 0.5
    assert regions.kink(evidence(analytic, numeric, left=left, right=right)).params["left"] == pytest.approx(
        -ROWS[0, 1, 2])


def test_missing_term_needs_three_positions_and_an_exact_fit():
    y = np.sin(X)
    numeric = elementwise(np.cos(X) + X)
    ev = evidence(elementwise(np.cos(X)), numeric, outputs=[y])
    finding = terms.missing_term(ev)
    assert (finding.params["term"], finding.params["coefficient"]) == ("x", 1.0)
    ev = evidence(elementwise(np.cos(X)), elementwise(np.cos(X) + 0.3 * np.tanh(X)), outputs=[y])
    assert terms.missing_term(ev) is None  # tanh is not a simple term: no guess


def test_wrong_saved_tensor_needs_the_same_form_in_both():
    y = np.exp(X)
    ev = evidence(elementwise(1 - X * X), elementwise(1 - y * y), outputs=[y])
    finding = terms.wrong_variable(ev)
    assert (finding.kind, finding.params["used"], finding.params["needed"]) == ("wrong_variable", "x", "output")
    # an analytic gradient that is merely *some* simple expression is no evidence of a wrong tensor
    ev = evidence(elementwise(np.sin(X)), elementwise(np.sin(X) + X * np.cos(X) ** 3), outputs=[y])
    assert terms.wrong_variable(ev) is None and terms.missing_term(ev) is None


def test_broadcast_dims():
    assert patterns.broadcast_dims((4,), (3, 4)) == [0]
    assert patterns.broadcast_dims((1, 4), (3, 4)) == [0]
    assert patterns.broadcast_dims((3, 1), (3, 4)) == [1]
    assert patterns.broadcast_dims((4,), (4, 3)) is None


def test_permuted_entries_names_a_cycle_but_leaves_a_reversal_to_missing_flip():
    numeric = elementwise(np.cos(X))[:, :, :3]  # three entries along dim 1
    values = X[:, :3]
    cycled = cotangents.permuted_entries(evidence(numeric[:, :, [1, 2, 0]], numeric, values=values))
    assert (cycled.kind, cycled.params["axis"], cycled.params["order"]) == ("missing_reshape", 1, [1, 2, 0])
    assert cotangents.permuted_entries(evidence(numeric[:, :, ::-1], numeric, values=values)) is None
    assert cotangents.permuted_entries(evidence(numeric, numeric, values=values)) is None
