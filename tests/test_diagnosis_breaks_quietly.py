"""A diagnosis that raises adds no finding: the verdict and its values message stand alone."""
import numpy as np

from gradcli.check import diagnosis
from gradcli.check.report import Check, CheckReport


def test_an_exception_inside_the_diagnosis_gives_no_finding(monkeypatch):
    report = CheckReport(function="F")
    report.checks.append(Check("values", "fail", "x: 1 of 1 elements wrong", 0, {}))

    def broken(*args, **kwargs):
        raise AttributeError("'DenseLinearOperator' object has no attribute 'data'")

    monkeypatch.setattr(diagnosis, "diagnose", broken)
    assert not report.ok
    diagnosis.attach(report, lambda x: x, (np.ones(1),))
    assert report.diagnosis == [] and "diagnosis_s" in report.timing
