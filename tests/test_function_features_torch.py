"""Issue 22 in real PyTorch: jvp through forward_ad and torch.func.jvp, vmap rules, the ctx lint,
nondeterminism and layouts (torch strides); the traps and twins are tests/traps/torch_traps.py."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradcli  # noqa: E402

from check_run import check  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRAPS = ROOT / "tests" / "traps" / "torch_traps.py"
sys.path.insert(0, str(TRAPS.parent))
import torch_traps as traps  # noqa: E402


def x34(seed=0):
    return torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def checks(report):
    return {c.name: c for c in report.checks}


def source_line(text):
    return next(n for n, line in enumerate(TRAPS.read_text().splitlines(), 1) if text in line)


def test_wrong_jvp_fails_through_forward_ad_and_the_twin_passes_both_ways():
    wrong = checks(gradcli.gradcheck(traps.WrongJvpSin, (x34(),)))["jvp"]
    assert wrong.status == "fail" and wrong.message.startswith("wrong jvp: torch.autograd.forward_ad gives")
    right = checks(gradcli.gradcheck(traps.JvpSin, (x34(),)))["jvp"]
    assert right.status == "pass"
    assert right.details["ways"] == ["torch.autograd.forward_ad", "torch.func.jvp"]
    assert [p["way"] for p in right.details["probes"]] == ["torch.autograd.forward_ad", "torch.func.jvp"] * 2


def test_jvp_numbers_match_torch_forward_ad():
    """The twin's jvp equals torch's own forward AD of sin: cos(x)·u, projected."""
    report = gradcli.gradcheck(traps.JvpSin, (x34(),))
    for probe in checks(report)["jvp"].details["probes"]:
        np.testing.assert_allclose(probe["analytic"], probe["numeric"], rtol=1e-9)


def test_jvp_without_setup_context_notes_torch_func():
    class OldStyleJvp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.exp()

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * x.exp()

    jvp = checks(gradcli.gradcheck(OldStyleJvp, (x34(),)))["jvp"]
    assert jvp.status == "pass" and jvp.details["ways"] == ["torch.autograd.forward_ad"]
    assert "torch.func.jvp not tried: OldStyleJvp has no setup_context" in jvp.message


def test_wrong_vmap_rule_fails_named_and_twins_pass():
    wrong = gradcli.gradcheck(traps.WrongVmapScaledBySum, (x34(),))
    vmap = checks(wrong)["vmap"]
    assert vmap.status == "fail" and vmap.message.startswith("wrong vmap rule (vmap staticmethod): vmap(")
    assert "differs from a loop over the 3 samples" in vmap.message
    assert wrong.compatibility["vmap"] == "fail" and wrong.compatibility["backward"] == "pass"
    for twin, how in ((traps.VmapScaledBySum, "vmap staticmethod"), (traps.GeneratedVmapScaledBySum,
                                                                      "generate_vmap_rule")):
        report = gradcli.gradcheck(twin, (x34(),))
        check_ = checks(report)["vmap"]
        assert check_.status == "pass", check_.message
        assert check_.details["vmap_rule"] == how
        assert check_.details["compared"] == ["output 0", "vmap(grad) x", "jacrev"]
        assert report.compatibility["vmap"] == "pass"


class ItemInBackward(torch.autograd.Function):
    """A correct vmap rule, but backward calls .item(): the backward cannot run batched (vmap(grad))."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        scale = 3.0 if g.sum().item() == g.sum().item() else 0.0
        return g * scale


def test_backward_that_cannot_be_batched_fails_in_vmap_grad():
    report = gradcli.gradcheck(ItemInBackward, (x34(),))
    vmap = checks(report)["vmap"]
    assert report.compatibility["backward"] == "pass"
    assert vmap.status == "fail"
    assert vmap.message.startswith("vmap(grad) over ItemInBackward raised (generate_vmap_rule): RuntimeError:")
    assert ".item()" in vmap.message


def test_no_setup_context_is_a_note_not_a_failure():
    report = gradcli.gradcheck(traps.SavedExp, (x34(),))
    vmap = checks(report)["vmap"]
    assert report.status == "pass" and vmap.status == "skip"
    assert vmap.message.startswith("not usable with torch.func (vmap, grad, jacrev, jvp): SavedExp has no "
                                   "setup_context")
    assert report.compatibility["vmap"] == "no_setup_context"
    assert gradcli.gradcheck(traps.JvpSin, (x34(),)).compatibility["vmap"] == "not_defined"


def test_ctx_attribute_double_backward_torch():
    report = gradcli.gradgradcheck(traps.CtxAttributeExp, (x34(),))
    line = source_line("ctx.e = e")
    lint, second = checks(report)["ctx_attributes"], checks(report)["second_order"]
    assert lint.status == "warn" and lint.details["attributes"][0]["line"] == line
    assert second.status == "fail"
    assert second.message.startswith(f"double backward is wrong because forward keeps ctx.e (line {line})")
    assert gradcli.gradgradcheck(traps.SavedExp, (x34(),)).status == "pass"


def test_nondeterministic_backward_torch_with_repeat():
    report = gradcli.gradcheck(traps.NondeterministicDouble, (x34(),), repeat=5)
    reentrant = checks(report)["reentrant"]
    assert reentrant.status == "fail" and reentrant.message.startswith("nondeterministic backward: 5 passes")
    assert 0 < reentrant.details["spread"]["x"] < 1e-7
    assert checks(gradcli.gradcheck(traps.DeterministicDouble, (x34(),), repeat=5))["reentrant"].status == "pass"


def test_layout_dependent_backward_torch_both_variants():
    layouts = checks(gradcli.gradcheck(traps.MemoryOrderSquare, (x34(),)))["layouts"]
    assert layouts.status == "fail"
    assert [f["variant"] for f in layouts.details["failed"]] == ["non-contiguous", "expanded"]
    assert "when x is non-contiguous (strides x: (1, 3))" in layouts.message
    assert "when x is expanded (strides x: (0, 1))" in layouts.message
    twin = checks(gradcli.gradcheck(traps.Square, (x34(),)))["layouts"]
    assert twin.status == "pass" and twin.details["tried"] == ["non-contiguous", "expanded"]


def test_layouts_one_dimensional_stride_two():
    layouts = checks(gradcli.gradcheck(traps.MemoryOrderSquare, (torch.linspace(-1, 1, 5, dtype=torch.float64),)))
    assert layouts["layouts"].status == "fail"
    assert "when x is non-contiguous (strides x: (2,))" in layouts["layouts"].message


def test_torch_traps_through_the_cli(tmp_path):
    out = tmp_path / "r.json"
    result = check(TRAPS, "--format", "plain", "--json", out, "--second-order", "-v")
    doc = {r["function"]: r for r in json.loads(out.read_text())["results"]}
    statuses = {name: r["status"] for name, r in doc.items()}
    assert statuses == {"WrongJvpSin": "fail", "JvpSin": "pass", "WrongVmapScaledBySum": "fail",
                        "VmapScaledBySum": "pass", "GeneratedVmapScaledBySum": "pass", "CtxAttributeExp": "fail",
                        "SavedExp": "pass", "NondeterministicDouble": "fail", "DeterministicDouble": "pass",
                        "MemoryOrderSquare": "fail", "Square": "pass"}
    assert doc["WrongVmapScaledBySum"]["message"].startswith("vmap: wrong vmap rule")
    assert doc["CtxAttributeExp"]["message"].startswith("second_order: double backward is wrong because forward "
                                                        "keeps ctx.e")
    assert doc["MemoryOrderSquare"]["message"].startswith("layouts: layout-dependent backward")
    assert doc["NondeterministicDouble"]["message"].startswith("reentrant: nondeterministic backward")
    assert doc["WrongJvpSin"]["message"].startswith("jvp: wrong jvp")
    assert "  compat SavedExp: backward ok  double backward ok  jvp -  vmap no setup_context  undefined grads n/a  "\
        "layouts ok" in result.output.splitlines()
    # the compact view: a compatibility line only where a feature beyond backward failed
    compact = check(TRAPS, "--format", "plain", "--second-order").output
    assert "  compat WrongJvpSin: backward ok  double backward ok  jvp FAIL  vmap -  undefined grads " \
           "n/a  layouts ok" in compact.splitlines()
    assert "compat SavedExp" not in compact and "compat Square" not in compact
