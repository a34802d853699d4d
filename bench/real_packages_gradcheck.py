"""torch.autograd.gradcheck at the inputs gradcli used: the torch side of bench/real_packages.py.

Runs in the corpus venv (it needs torch and the installed packages, not gradcli):

    CORPUS_PYTHON bench/real_packages_gradcheck.py JOB.json OUT.json

JOB.json: {"timeout": seconds, "functions": [{"key", "module", "class", "input_sets": [[record, ...], ...]}]}
with gradcli's JSON input records (specs/check.md §4 `inputs`). For every Function: does its module import by
its dotted name (as the package's own users import it), and, per input set, the status of
`torch.autograd.gradcheck(Class.apply, inputs, fast_mode=False)` with torch's defaults
(check_undefined_grad=True) and again with check_undefined_grad=False (to tell torch's undefined-grad check
apart from a values mismatch).
"""
import importlib
import json
import signal
import sys
import traceback


class TimedOut(Exception):
    pass


def _alarm(signum, frame):
    raise TimedOut()


CALLABLES = {"tanh": "Tanh", "sigmoid": "Sigmoid", "identity": "Identity"}  # gradcli's fn:NAME SPECs


def rebuild(records, torch):
    """Forward's arguments from gradcli's records, or (None, why) when a record cannot be reproduced."""
    args = []
    for rec in records:
        kind = rec.get("type")
        if kind == "tensor":
            if rec.get("value") is None:
                return None, f"{rec.get('name')}: values not recorded (too many elements)"
            dtype = getattr(torch, rec.get("dtype") or "float64", None)
            if dtype is None:
                return None, f"{rec.get('name')}: unknown dtype {rec.get('dtype')}"
            value = torch.tensor(rec["value"], dtype=dtype)
            if rec.get("requires_grad") and (value.is_floating_point() or value.is_complex()):
                value.requires_grad_(True)
            args.append(value)
        elif kind in ("int", "float", "bool", "str", "none"):
            args.append(rec.get("value"))
        elif kind == "tuple":
            args.append(tuple(rec.get("value") or ()))
        elif kind == "object" and rec.get("spec") == "default()" and rec.get("class"):  # Params() again
            module, _, qualname = rec["class"].rpartition(".")
            try:
                cls = importlib.import_module(module)
                for part in qualname.split("."):
                    cls = getattr(cls, part)
                args.append(cls())
            except Exception as e:  # noqa: BLE001 -- a class only gradcli's loader could reach
                return None, f"{rec.get('name')}: cannot build {rec['class']}() again ({type(e).__name__})"
        elif kind == "callable" and rec.get("value") in CALLABLES:  # fn:tanh -> torch.nn.Tanh()
            args.append(getattr(torch.nn, CALLABLES[rec["value"]])())
        else:
            return None, f"{rec.get('name')}: a {kind} cannot be rebuilt from its record"
    return args, ""


def one_gradcheck(torch, fn, args, undefined, timeout):
    signal.alarm(timeout)
    try:
        ok = torch.autograd.gradcheck(fn, tuple(args), fast_mode=False, check_undefined_grad=undefined,
                                      raise_exception=True)
        return {"status": "pass" if ok else "fail", "message": ""}
    except importlib.import_module("torch.autograd.gradcheck").GradcheckError as exc:
        return {"status": "fail", "message": str(exc).strip().splitlines()[0][:300]}
    except TimedOut:
        return {"status": "error", "message": f"timed out after {timeout}s"}
    except BaseException as exc:  # user code raising is a result, not a crash of this script
        return {"status": "error", "message": f"{type(exc).__name__}: {str(exc).strip()[:300]}"}
    finally:
        signal.alarm(0)


def overall(statuses):
    if not statuses:
        return None
    for status in ("fail", "error", "unreproducible"):
        if status in statuses:
            return status
    return "pass"


def check_function(torch, job, timeout):
    out = {"key": job["key"], "importable": False, "import_error": "", "input_sets": []}
    try:
        module = importlib.import_module(job["module"])
        cls = getattr(module, job["class"])
        out["importable"] = True
    except BaseException as exc:
        out["import_error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
        return out
    for records in job.get("input_sets") or []:
        args, why = rebuild(records, torch)
        if args is None:
            out["input_sets"].append({"default": {"status": "unreproducible", "message": why},
                                      "no_undefined": {"status": "unreproducible", "message": why}})
            continue
        torch.manual_seed(0)
        default = one_gradcheck(torch, cls.apply, args, True, timeout)
        args, _ = rebuild(records, torch)  # fresh leaves: the first run may have changed them in place
        torch.manual_seed(0)
        no_undefined = one_gradcheck(torch, cls.apply, args, False, timeout)
        out["input_sets"].append({"default": default, "no_undefined": no_undefined})
    out["status"] = overall([s["default"]["status"] for s in out["input_sets"]])
    out["values_status"] = overall([s["no_undefined"]["status"] for s in out["input_sets"]])
    return out


def main(job_path, out_path):
    import warnings
    warnings.simplefilter("ignore")
    import torch
    job = json.load(open(job_path))
    signal.signal(signal.SIGALRM, _alarm)
    results = []
    for function in job["functions"]:
        try:
            results.append(check_function(torch, function, int(job.get("timeout", 60))))
        except BaseException:
            results.append({"key": function["key"], "importable": None, "status": "error",
                            "import_error": traceback.format_exc(limit=2)[-300:], "input_sets": []})
        with open(out_path, "w") as fh:  # written after each Function: a crash later keeps what finished
            json.dump(results, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
