"""Machine output of ``gradcli check``: the JSON report, JUnit XML and GitHub Actions annotations."""
from __future__ import annotations

import json
import os
import re
import socket
import time

from gradcli.report import check_view as view

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


TIMING_KEYS = ("timing", "duration", "seconds")


def json_text(run, timing: bool = True) -> str:
    """The ``--json`` document (schema in specs/check.md). Never NaN/Infinity. ``timing=False``
    (``--no-timing``) drops every timing field, so that two runs give byte-identical documents."""
    doc = run.to_dict()
    return json.dumps(doc if timing else _without_timing(doc), indent=2, allow_nan=False) + "\n"


def _without_timing(value):
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _xml(text: str) -> str:
    return _XML_INVALID.sub("?", text or "")


def _detail_text(result, seed: int, verbose: bool = True) -> str:
    d = view.detail(result, seed, verbose=verbose, ascii_only=True)
    return "\n".join(text for _, text in d.lines)


def junit_xml(run) -> str:
    """JUnit XML as CI dashboards read it: one testsuite, one testcase per Function (or file that
    failed to import), ``failure``/``error``/``skipped`` children."""
    import xml.etree.ElementTree as ET

    s = run.summary
    strict = run.strict_failures()  # --strict: partial and skipped results are failures
    counts = {"tests": str(len(run.results)), "failures": str(s["failed"] + strict), "errors": str(s["errors"]),
              "skipped": str(0 if run.strict else s["skipped"]), "time": f"{run.duration:.3f}"}
    suites = ET.Element("testsuites", name="gradcli check", **counts)
    suite = ET.SubElement(suites, "testsuite", name="gradcli check", **counts,
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"), hostname=socket.gethostname())
    for r in run.results:
        module = os.path.splitext(r.file)[0].replace(os.sep, ".").replace("/", ".").lstrip(".")
        attrs = {"classname": module, "name": r.function or "(import)", "file": r.file,
                 "time": f"{r.duration:.3f}"}
        if r.line:
            attrs["line"] = str(r.line)
        case = ET.SubElement(suite, "testcase", **attrs)
        _compat_property(case, r)
        if r.status == "fail":
            ET.SubElement(case, "failure", message=_xml(r.message), type="GradientMismatch").text = \
                _xml(_detail_text(r, run.seed))
        elif r.status == "error":
            ET.SubElement(case, "error", message=_xml(r.message), type="UserCodeError").text = \
                _xml(_detail_text(r, run.seed))
        elif run.strict and r.verdict() in ("skip", "partial"):
            ET.SubElement(case, "failure", message=_xml(f"--strict: {r.verdict()}: {r.message}"),
                          type="NotFullyChecked").text = _xml(_coverage_text(r))
        elif r.status == "skip":
            ET.SubElement(case, "skipped", message=_xml(r.message))
        verdict = _verdict_text(r)
        out = (verdict + "\n" if verdict else "") + (r.output if r.output.strip() else "")
        if out:
            ET.SubElement(case, "system-out").text = _xml(out)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _compat_property(case, r) -> None:
    """``<properties><property name="compatibility" value="backward ok  jvp FAIL …"/>`` (ASCII)."""
    import xml.etree.ElementTree as ET

    from gradcli.report.compat_line import compat_text

    text = compat_text(r, ascii_only=True)
    if text:
        ET.SubElement(ET.SubElement(case, "properties"), "property", name="compatibility",
                      value=_xml(text.split(": ", 1)[1]))


def _coverage_text(r) -> str:
    return "\n".join(f"not checked: {view.not_checked_line(e)}" for e in view.not_checked_entries(r, False))


def _verdict_text(r) -> str:
    """What a passing testcase cannot say with JUnit's elements: a partial pass, a surrogate."""
    if r.status == "surrogate":
        return f"SURROGATE: {r.message}"
    if r.status == "pass" and r.not_checked:
        return f"{view.verdict_word(r)}\n{_coverage_text(r)}"
    return ""


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_VERB = {"fail": "failed", "error": "error", "skip": "skipped", "partial": "passed partially (not everything checked)",
         "surrogate": "is a declared surrogate"}


def github_annotations(run) -> list:
    """``::error file=…,line=…,title=…::message`` lines: failures point at the backward's line,
    errors at the failing line of user code; skips and partial passes are warnings (errors with
    --strict, which fails them), declared surrogates notices."""
    lines = []
    for r in run.results:
        verdict = r.verdict()
        if verdict == "pass":
            continue
        level = {"skip": "warning", "partial": "warning", "surrogate": "notice"}.get(verdict, "error")
        if run.strict and verdict in ("skip", "partial"):
            level = "error"
        at_backward = r.status in ("fail", "surrogate") and r.backward_line
        line = r.backward_line if at_backward else r.line
        where = (getattr(r, "backward_file", None) or r.file) if at_backward else r.file  # an inherited backward
        props = f"file={_escape_prop(where)}" + (f",line={line}" if line else "")
        title = f"gradcli check: {r.function or r.file} {_VERB[verdict]}" + (" (--strict)" if level == "error" and
                                                                           verdict in ("skip", "partial") else "")
        body = _detail_text(r, run.seed, verbose=False) if r.status in ("fail", "error") else r.message
        lines.append(f"::{level} {props},title={_escape_prop(title)}::{_escape_data(body)}")
    return lines
