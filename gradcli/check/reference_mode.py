"""Reference mode inside ``gradcli check``: find a Function's reference, run reference.py's
comparison for the ``--dtype`` grid on each input set, and add it to the input set's report.

A reference is ``--reference FILE.py::NAME`` / ``--reference module.name`` for the one selected
Function, else a class attribute ``reference`` (a function, ``staticmethod(fn)``, or a dotted name
such as ``"torch.nn.functional.gelu"``), else an inputs file's ``REFERENCES["module.Class"]``. Dotted names are imported and looked
up attribute by attribute, never evaluated; for an engine Function a name under ``torch.`` is
looked up in gradcli's torch-like namespace (``import gradcli as torch`` code).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import zlib
from typing import Callable, Optional

from gradcli.check.dtype_grid import LOW_PRECISION


class ReferenceNotFound(Exception):
    """The reference named by the class or --reference cannot be found (an error for that Function)."""


def wanted_dtypes(options) -> tuple:
    """The low-precision dtypes of ``--dtype`` (float64 is the numeric check, as without a reference)."""
    return tuple(d for d in getattr(options, "reference_dtypes", ()) or () if d in LOW_PRECISION)


def declared(target, options) -> Optional[tuple]:
    """(reference callable, its name) for ``target``, or None when it has none.
    Raises ReferenceNotFound when one is named but cannot be found."""
    given = getattr(options, "reference", None)
    attr = getattr(target.cls, "reference", None) if given is None else given
    if attr is None:
        attr = _from_inputs_files(target, getattr(options, "given_inputs", None))
    if attr is None:
        return None
    if callable(attr):
        return attr, getattr(attr, "__qualname__", getattr(attr, "__name__", "reference"))
    if not isinstance(attr, str):
        raise ReferenceNotFound(f"reference must be a function or a dotted name, not {type(attr).__name__}")
    return resolve(attr, target.backend), attr


def _from_inputs_files(target, given):
    """``REFERENCES = {"module.Class": fn_or_dotted_name, "Class": ...}`` in an inputs file
    (--inputs-from, [tool.gradcli] inputs-from: specs/check.md §2a), for code the user cannot edit."""
    from gradcli.check.inputs_from import InputsFileError, _load

    keys = [k for k in (f"{target.module}.{target.name}" if target.module else None, target.name) if k]
    for path in getattr(given, "files", ()) or ():
        module = _load(path)
        table = getattr(module, "REFERENCES", None) if not isinstance(module, InputsFileError) else None
        if isinstance(table, dict):
            for key in keys:
                if key in table:
                    return table[key]
    return None


def resolve(text: str, backend: str = "torch") -> Callable:
    """``FILE.py::NAME``, ``module.name`` or ``module.Class.attr``: imported and looked up, never evaluated."""
    if "::" in text:
        path, name = text.rsplit("::", 1)
        if not os.path.isfile(path):
            raise ReferenceNotFound(f"--reference {text}: file not found: {path}")
        module_name = f"gradcli_reference_{zlib.crc32(os.path.realpath(path).encode()):08x}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return _lookup(module, name.split("."), text)
    parts = text.split(".")
    if backend == "gradcli" and parts[0] == "torch":
        parts[0] = "gradcli"  # an engine Function's "torch.nn.functional.gelu" is gradcli's
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return _lookup(module, parts[cut:], text)
    raise ReferenceNotFound(f"reference {text!r}: no importable module in that name")


def _lookup(obj, names: list, text: str) -> Callable:
    for name in names:
        if not name.isidentifier() or not hasattr(obj, name):
            raise ReferenceNotFound(f"reference {text!r}: {name!r} not found")
        obj = getattr(obj, name)
    if not callable(obj):
        raise ReferenceNotFound(f"reference {text!r} is not callable")
    return obj


def add_reference(report, target, case, out, options) -> bool:
    """Reference mode on one input set: ``reference`` checks on ``report``, unchecked dtypes on
    ``out.not_checked``. A Function without a reference is left as it is.
    True when user code (the Function or its reference) raised at a dtype: an error, not a verdict."""
    from gradcli.check.reference import checks_of, not_checked_of, reference_check
    from gradcli.check.report import Check

    dtypes = wanted_dtypes(options)
    if not dtypes:
        return False
    try:
        found = declared(target, options)
    except ReferenceNotFound as e:
        report.checks.append(Check("reference", "fail", str(e)))
        return True
    except Exception as e:  # noqa: BLE001 -- importing the reference ran user code
        report.checks.append(Check("reference", "fail", f"the reference failed to import: {type(e).__name__}: {e}"))
        return True
    if found is None:  # nothing to compare with: the Function is checked as without a grid
        return False
    reference, name = found
    names = [(rec or {}).get("name", f"input {i}") for i, rec in enumerate(case.records)]
    result = reference_check(target.fn, case.args, reference, dtypes=dtypes, error_ratio=options.error_ratio,
                             device=options.device, seed=options.seed, names=names, reference_name=name)
    report.checks.extend(checks_of(result, "option" if getattr(options, "reference", None) else "attribute"))
    if result.status == "fail":
        from gradcli.check.reference import diagnose

        report.diagnosis.extend(diagnose(result))
    out.not_checked.extend(not_checked_of(result))
    return any(d.error for d in result.dtypes)


def only_reference(target, case, out, options, error: BaseException):
    """forward does not run at float64 (a kernel for low precision only): with a reference and a
    grid, reference mode alone gives the verdict and the numeric check is a skip that says why."""
    from gradcli.check.report import Check, CheckReport

    if not wanted_dtypes(options):
        return None
    try:
        if declared(target, options) is None:
            return None
    except Exception:  # noqa: BLE001 -- the reference's own error is reported by the normal path
        return None
    report = CheckReport(target.name, backend=target.backend, seed=options.seed)
    report.checks.append(Check("numeric", "skip", f"forward does not run at the inputs' dtype ({type(error).__name__}: "
                               f"{error}): no finite-difference check; reference mode only"))
    if add_reference(report, target, case, out, options):
        report.checks.append(Check("backward", "fail", next(c.message for c in report.checks if c.status == "fail")))
    return report
