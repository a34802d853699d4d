"""Classifying bench/real_packages.py's outcomes: verdicts, their agreement with torch, whose doing an error is.

Pure Python (no torch, no gradcli): tests/test_real_corpus_manifest.py imports it.
"""
import collections
import re

VERDICTS = ("pass", "fail")

# (category, pattern on gradcli's message) for results without a verdict; first match wins.
# A file that failed to import under gradcli (a result with "function": null):
IMPORT_CATEGORIES = (
    ("relative import", r"attempted relative import|no known parent package|beyond top-level package"),
    ("import: a module shadowed by the file's folder", r"is not a package|has no attribute|cannot import name"
                                                        r"|partially initialized"),
    ("import: a dependency missing", r"ModuleNotFoundError|No module named"),
)
# One Function's skip or error:
FUNCTION_CATEGORIES = (
    ("gradcli crashed", r"^bench: gradcli crashed"),
    ("not collected", r"^bench: not collected|not found: "),
    ("forward takes *args", r"forward takes \*args"),
    ("inputs: a parameter must be a bool/int/str/shape/index/object",
     r"Boolean value of Tensor|Expected a value of type|must be tuple of ints|invalid combination of arguments"
     r"|must be long, int|expected condition to be a boolean|has no attribute|not callable|only integer tensors"
     r"|must be (int|bool|str)|argument .* must be"),
    ("inputs: shapes (3x4 does not fit)", r"cannot be multiplied|square matrices|not enough values to unpack"
                                          r"|too many indices|multiple lengthscales|size of tensor|dimension"
                                          r"|must match|shape"),
    ("inputs: needs a set-up environment (process group, device)", r"process group|CUDA|cuda"),
    ("shape/type assert in forward", r"AssertionError"),
    ("NaN/Inf at the inputs", r"NaN|non-finite|\bInf\b"),
    ("timeout", r"timed out|did not finish|hung"),
    ("internal error", r"internal error"),
    ("inputs: forward refused automatic tensors (other)", r"cannot build inputs|--input"),
)
# categories in which an error is gradcli's doing whenever the module imports by its dotted name
OURS_WHEN_IMPORTABLE = {"relative import", "import: a module shadowed by the file's folder", "not collected",
                        "internal error", "gradcli crashed"}


def category(status, message, file_level=False):
    for name, pattern in IMPORT_CATEGORIES if file_level else FUNCTION_CATEGORIES:
        if re.search(pattern, message or ""):
            return name
    return ("import: other " if file_level else "other ") + (status or "missing")


def _file_level(outcome):
    result = (outcome or {}).get("result") or {}
    return bool(result) and result.get("function") is None


def _status(outcome):
    if outcome is None:
        return None, ""
    result = outcome.get("result")
    if result is None:
        tail = (outcome.get("process") or {}).get("tail") or ""
        last = tail.strip().splitlines()[-1] if tail.strip() else ""
        if "Traceback (most recent call last)" in tail or "internal error" in tail:
            return "missing", f"bench: gradcli crashed without a result: {last}"
        return "missing", "bench: not collected (gradcli wrote no result for it): " + \
            tail[-300:].strip().replace("\n", " | ")
    if not outcome.get("collected") and result.get("function") is None and result.get("status") != "error":
        return "missing", "bench: not collected: " + (result.get("message") or "")
    return result.get("status"), result.get("message") or ""


def _built_by_gradcli(outcome):
    """Any argument gradcli chose itself (automatic, a default): an error at them may be our inputs' fault."""
    result = (outcome or {}).get("result") or {}
    records = [rec for rs in result.get("inputs") or [] for rec in rs or []]
    return not records or any(rec.get("source") in ("auto", "default", "captured") for rec in records)


def whose_error(status, message, outcome, importable, truth):
    """'gradcli' (imports, collection, inputs it built), 'user' (a genuine bug / the package), or None."""
    if status not in ("error", "missing"):
        return None
    if truth == "user-bug":
        return "user"
    file_level = _file_level(outcome)
    cat = category(status, message, file_level)
    if cat in OURS_WHEN_IMPORTABLE or status == "missing" or file_level:
        # an import that fails only under gradcli (the module imports by its dotted name) is gradcli's doing
        return "gradcli" if importable is not False else "environment"
    return "gradcli" if _built_by_gradcli(outcome) else "user"


def _fail_on_built_number(outcome):
    """A structure FAIL naming an argument gradcli drew as a tensor itself (often a number parameter)."""
    result = (outcome or {}).get("result") or {}
    if result.get("status") != "fail":
        return []
    built = {rec.get("name") for rs in result.get("inputs") or [] for rec in rs or []
             if rec.get("source") == "auto" and rec.get("type") == "tensor"}
    named = re.findall(r"backward returned None for (\w+), but the function depends on it", result.get("message", ""))
    return [name for name in named if name in built]


def _low_precision(outcome):
    """A differentiable input below float64: torch's gradcheck (eps 1e-6, atol 1e-5) cannot judge it there."""
    result = (outcome or {}).get("result") or {}
    return any(rec.get("type") == "tensor" and rec.get("requires_grad") and rec.get("dtype") in LOW_PRECISION
               for records in result.get("inputs") or [] for rec in records or [])


LOW_PRECISION = ("float32", "float16", "bfloat16")


def _correct(gradcli_status, torch_values, truth, low_precision=False):
    if gradcli_status not in VERDICTS:
        return False, None
    if low_precision and truth is not None:   # a float32-only op: the label, verified by hand, decides
        return _correct(gradcli_status, None, truth)
    if torch_values in VERDICTS:
        return gradcli_status == torch_values, "torch"
    if truth in ("surrogate", "not-a-gradient", "user-bug"):
        return gradcli_status == "fail", "truth"
    if truth == "correct":
        return gradcli_status == "pass", "truth"
    return False, None


def _expected_outcome(expected, status, message) -> bool:
    """The manifest's ``expected`` outcome for a Function no verdict can exist for (a SKIP/ERROR, its message)."""
    return bool(expected) and status == expected["status"] and re.search(expected["message"], message or "") is not None


def classify(entry, auto, helped, torch_result):
    """One row of the bench for one manifest entry."""
    torch_result = torch_result or {}
    importable = torch_result.get("importable")
    auto_status, auto_message = _status(auto)
    help_status, help_message = _status(helped)
    verdict = "auto" if auto_status in VERDICTS else "help" if help_status in VERDICTS else None
    gradcli_status = auto_status if verdict == "auto" else help_status if verdict == "help" else None
    torch_status = torch_result.get("status") if verdict else None
    torch_values = torch_result.get("values_status") if verdict else None
    low = _low_precision(auto if verdict == "auto" else helped if verdict == "help" else None)
    correct, judged_by = _correct(gradcli_status, torch_values, entry.get("truth"), low)
    expected_ok = verdict is None and _expected_outcome(entry.get("expected"), *(
        (help_status, help_message) if helped is not None else (auto_status, auto_message)))
    if expected_ok:
        correct, judged_by = True, "expected"
    review = None
    if verdict and low and entry.get("truth") is not None and torch_values in VERDICTS \
            and gradcli_status != torch_values:
        review = f"torch {torch_values} below float64 (judged by the label)"
    elif verdict and torch_values in VERDICTS and gradcli_status != torch_values:
        review = "false PASS?" if gradcli_status == "pass" else "false alarm?"
    elif verdict and gradcli_status == "pass" and torch_values == "pass" and torch_status == "fail":
        review = "torch undefined-grad check only"
    elif verdict and torch_values not in VERDICTS:
        review = f"torch {torch_values}"
    messages = [s[d].get("message", "") for s in torch_result.get("input_sets") or []
                for d in ("no_undefined", "default") if s[d].get("status") != "pass"]
    return {
        "key": entry["key"], "package": entry["package"], "class": entry["class"], "file": entry["file"],
        "held_out": bool(entry["held_out"]), "truth": entry.get("truth"),
        "auto_status": auto_status, "auto_message": auto_message,
        "auto_category": None if auto_status in VERDICTS else category(auto_status, auto_message,
                                                                          _file_level(auto)),
        "fail_on_built_number": _fail_on_built_number(auto),
        "auto_whose_error": whose_error(auto_status, auto_message, auto, importable, entry.get("truth")),
        "help_args": (entry.get("help") or {}).get("args") if helped is not None else None,
        "help_status": help_status, "help_message": help_message,
        "verdict": verdict, "gradcli_status": gradcli_status,
        "torch_status": torch_status, "torch_values_status": torch_values,
        "torch_message": (messages or [""])[0] or torch_result.get("import_error", ""),
        "importable": importable, "correct": correct, "judged_by": judged_by, "review": review,
        "expected_ok": expected_ok,
        "torch_adapted": sorted({s[d]["adapted"] for s in torch_result.get("input_sets") or []
                                 for d in ("no_undefined", "default") if s[d].get("adapted")}),
        "input_sources": sorted({rec.get("source") for rs in ((auto or {}).get("result") or {}).get("inputs") or []
                                 for rec in rs or []} - {None}),
    }


def _tally(rows):
    t = collections.Counter(n=len(rows))
    for r in rows:
        t["verdict_auto"] += r["verdict"] == "auto"
        t["correct_auto"] += r["verdict"] == "auto" and r["correct"]
        t["verdict_help"] += r["verdict"] is not None
        t["correct_help"] += (r["verdict"] is not None or r.get("expected_ok", False)) and r["correct"]
        t["expected_ok"] += bool(r.get("expected_ok"))
        t["skip"] += r["auto_status"] == "skip"
        t["error"] += r["auto_status"] in ("error", "missing")
        t["error_ours"] += r["auto_whose_error"] == "gradcli"
        t["false_pass"] += r["review"] == "false PASS?"
        t["false_fail"] += r["review"] == "false alarm?"
        t["undefined_only"] += r["review"] == "torch undefined-grad check only"
    return {k: t[k] for k in ("n", "verdict_auto", "correct_auto", "verdict_help", "correct_help", "expected_ok",
                              "skip", "error", "error_ours", "false_pass", "false_fail", "undefined_only")}


def summarize(rows):
    packages = {"design": {}, "held_out": {}}
    for part, held in (("design", False), ("held_out", True)):
        names = sorted({r["package"] for r in rows if r["held_out"] == held}, key=str.lower)
        for name in names:
            packages[part][name] = _tally([r for r in rows if r["package"] == name and r["held_out"] == held])
    totals = {"design": _tally([r for r in rows if not r["held_out"]]),
              "held_out": _tally([r for r in rows if r["held_out"]]), "all": _tally(rows)}
    categories = collections.Counter((("held_out" if r["held_out"] else "design"), r["auto_category"])
                                     for r in rows if r["auto_category"])
    return {"packages": packages, "totals": totals,
            "categories": [{"part": p, "category": c, "count": n} for (p, c), n in sorted(categories.items())]}
