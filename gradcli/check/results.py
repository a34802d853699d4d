"""What ``gradcli check`` produces: the run's options and results (dataclasses with ``to_dict()``).

Data flows one way: inputs -> gradcheck -> these dataclasses -> renderers (specs/check.md §4).
Statuses (specs/check.md, "Status rules"): ``pass`` (``partial`` when something differentiable
was not exercised: ``not_checked``), ``fail``, ``error``, ``skip``, and ``surrogate`` (a Function
that declares its backward is not its forward's derivative, with the measured mismatch).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

BAD = ("fail", "error")
STATUSES = ("pass", "fail", "error", "skip", "surrogate")


@dataclass
class RunOptions:
    gradcheck: dict = field(default_factory=dict)  # passed through to gradcli.gradcheck
    seed: int = 0
    dtype: str = "float64"
    shape: tuple = (3, 4)
    specs: dict = field(default_factory=dict)  # forward parameter name -> inputs.Spec
    timeout: float = 60.0
    exitfirst: bool = False
    keyword: Optional[Callable] = None  # compiled -k expression
    collect_only: bool = False
    jobs: int = 1  # files checked at the same time
    isolate: bool = True  # fork per file and per Function (needs os.fork)
    debug: bool = False  # tracebacks keep gradcli's own frames
    given_inputs: Any = None  # inputs_from.GivenInputs: --inputs-from and [tool.gradcli] inputs
    # issue 6 (symbolic_checks.py); the defaults keep API users (assert_gradcheck, the pytest plugin) as they were
    exact: str = "off"  # "auto": engine Functions up to EXACT_AUTO_ELEMENTS, formulas always; "on"; "off"
    expr: Optional[tuple] = None  # --expr: the forward's formula(s), one per differentiable output
    prove: bool = False
    prove_shape: tuple = (2, 2)
    prove_timeout: float = 10.0
    strict: bool = False  # --strict: partial and skipped results fail the run
    # issue 21, reference mode (reference_mode.py): the --dtype grid's low-precision dtypes, --reference, ...
    reference_dtypes: tuple = ()
    reference: Optional[str] = None  # --reference FILE.py::NAME | module.name, for the one selected Function
    device: str = "cpu"
    error_ratio: float = 2.0
    max_memory: Optional[int] = None  # --max-memory bytes; None: budget.default_limit() in the checker

    def symbolic_seconds(self) -> float:
        """Time a checker may take beyond ``timeout`` (the exact check shares ``timeout``)."""
        from gradcli.check.symbolic_checks import PROVE_SLACK

        return self.prove_timeout + PROVE_SLACK if self.prove else 0.0


@dataclass
class CaseResult:
    """One set of forward arguments and gradcheck's report for it."""

    inputs: list  # JSON records, one per argument (see inputs._record)
    status: str = "pass"
    message: str = ""
    report: Any = None  # CheckReport, None when gradcheck did not run
    traceback: str = field(default="", repr=False)  # of an exception (not in JSON)
    not_checked: list = field(default_factory=list)  # inputs.Case.not_checked: [{"input", "reason"}]


@dataclass
class FunctionResult:
    file: str
    function: Optional[str]  # None for a file that failed to import
    backend: str
    status: str  # pass | fail | error | skip
    message: str = ""
    cases: list = field(default_factory=list)
    line: Optional[int] = None  # the class (or, for errors, the failing line) in ``file``
    backward_line: Optional[int] = None
    style: str = ""
    backward_file: Optional[str] = None  # an inherited backward's file, when not ``file``
    hint: str = ""  # e.g. the migration hint for the legacy style (not in JSON)
    traceback: str = field(default="", repr=False)
    output: str = field(default="", repr=False)  # captured stdout/stderr of user code
    duration: float = 0.0
    proofs: Optional[list] = None  # --prove: ProofResult.to_dict() + "input_set", per differentiated input
    # what was not exercised: [{"input", "reason", "input_set", "partial"}] (coverage.py)
    not_checked: list = field(default_factory=list)
    surrogate: Optional[dict] = None  # a declared surrogate: {"declared", "max_abs_error", "max_rel_error", ...}

    @property
    def partial(self) -> bool:
        """A pass that left something differentiable unexercised (``PASS (partial: ...)``)."""
        return self.status == "pass" and any(e.get("partial", True) for e in self.not_checked)

    def verdict(self) -> str:
        """The status as every format words it: ``pass``, ``partial``, ``fail``, ``error``, ``skip``, ``surrogate``."""
        return "partial" if self.partial else self.status

    def to_dict(self) -> dict:
        from gradcli.check.report import json_safe

        return {
            "file": self.file,
            "function": self.function,
            "backend": self.backend,
            "status": self.status,
            "message": self.message,
            "inputs": json_safe([c.inputs for c in self.cases]),
            "checks": [c.report.to_dict() if c.report is not None else None for c in self.cases],
            "proofs": json_safe(self.proofs),
            "partial": self.partial,
            "not_checked": json_safe(self.not_checked),
            "surrogate": json_safe(self.surrogate),
            "compatibility": self.compatibility(),
        }

    def compatibility(self) -> dict:
        """What the Function supports, over its input sets (check/compat.py); {} when none was checked."""
        from gradcli.check.compat import merge

        return merge([c.report for c in self.cases])


@dataclass
class RunResult:
    results: list = field(default_factory=list)
    seed: int = 0
    duration: float = 0.0
    collected: list = field(default_factory=list)  # TargetInfo of every selected Function, in file order
    deselected: int = 0  # by -k
    not_found: list = field(default_factory=list)  # ``file::Name`` selectors that matched nothing
    files: list = field(default_factory=list)  # every file of the run, in order
    interrupted: bool = False
    strict: bool = False  # --strict: partial and skipped results count as failures

    def count(self, verdict: str) -> int:
        return sum(r.verdict() == verdict for r in self.results)

    @property
    def summary(self) -> dict:
        """Counts by verdict; ``passed`` are full passes, ``partial`` passes that left something out."""
        return {"passed": self.count("pass"), "partial": self.count("partial"), "failed": self.count("fail"),
                "errors": self.count("error"), "skipped": self.count("skip"), "surrogates": self.count("surrogate")}

    def strict_failures(self) -> int:
        """Results that --strict turns into failures (partial and skipped ones); 0 without --strict."""
        s = self.summary
        return s["partial"] + s["skipped"] if self.strict else 0

    def closing_line(self) -> str:
        """pytest's form: ``3 passed, 1 partial, 1 failed, 1 error in 0.84s``; with --strict and
        partial or skipped results, ``1 partial (strict: fails)``."""
        s = self.summary
        fails = " (strict: fails)" if self.strict else ""
        parts = [f"{s['passed']} passed"] if s["passed"] else []
        parts += [f"{s['partial']} partial{fails}"] if s["partial"] else []
        parts += [f"{s['surrogates']} surrogate{'s' if s['surrogates'] != 1 else ''}"] if s["surrogates"] else []
        parts += [f"{s['failed']} failed"] if s["failed"] else []
        parts += [f"{s['errors']} error{'s' if s['errors'] != 1 else ''}"] if s["errors"] else []
        parts += [f"{s['skipped']} skipped{fails}"] if s["skipped"] else []
        parts += [f"{self.deselected} deselected"] if self.deselected else []
        text = ", ".join(parts) if parts else "no Functions checked"
        return f"{text} in {self.duration:.2f}s" + (" (interrupted)" if self.interrupted else "")

    def exit_code(self, strict: Optional[bool] = None, collect_only: bool = False) -> int:
        """pytest's codes: 0 passed, 1 failures (or, with ``strict``, partial or skipped results), 2
        interrupted or a selector that matched nothing, 3 errors in user code only, 5 nothing collected."""
        s = self.summary
        strict = self.strict if strict is None else strict
        if self.interrupted or self.not_found:
            return 2
        if collect_only:
            return 3 if s["errors"] else 0 if self.collected else 5
        if not self.results:
            return 5
        if s["failed"] or (strict and (s["skipped"] or s["partial"])):
            return 1
        if s["errors"]:
            return 3
        return 0

    def unused_inputs(self, names) -> list:
        """``--input`` names that are no parameter of any selected Function's forward."""
        known = {p for info in self.collected for p in info.params}
        return sorted(set(names) - known) if self.collected else []

    def to_dict(self) -> dict:
        from gradcli import __version__

        return {"gradcli_version": __version__, "seed": self.seed, "summary": self.summary,
                "results": [r.to_dict() for r in self.results]}


