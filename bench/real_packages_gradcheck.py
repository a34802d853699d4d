"""torch.autograd.gradcheck at the inputs gradcli used: the torch side of bench/real_packages.py.

Runs in the corpus venv (it needs torch and the installed packages, not gradcli):

    CORPUS_PYTHON bench/real_packages_gradcheck.py JOB.json OUT.json

JOB.json: {"timeout": seconds, "functions": [{"key", "module", "class", "seed", "input_sets": [[record, ...], ...]}]}
with gradcli's JSON input records (specs/check.md §4 `inputs`). An input set whose records came from an inputs
file (`"inputs_from": FILE`, a help `--inputs-from FILE`) is built again by calling that file's entry for the
class in this process, with the generators seeded as gradcli seeds them (gradcli/check/inputs.py
`seed_global_generators`); its tensors must equal the recorded values, else the set is unreproducible. For every Function: does its module import by
its dotted name (as the package's own users import it), and, per input set, the status of
`torch.autograd.gradcheck(Class.apply, inputs, fast_mode=False)` with torch's defaults (over the tensor
arguments, the others bound: see over_tensors)
(check_undefined_grad=True) and again with check_undefined_grad=False (to tell torch's undefined-grad check
apart from a values mismatch). Two kinds of Function torch's gradcheck cannot run as they are (their users'
loss.backward() can) are run again adapted, after torch's own run raised the error that names them, and the
result says so ("adapted", see one_gradcheck): one that refuses autograd.grad (checkpointing) gets its
products through torch.autograd.backward; one whose forward frees its input's storage gets clones.
"""
import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import signal
import sys
import traceback
import zlib


class TimedOut(Exception):
    pass


def _alarm(signum, frame):
    raise TimedOut()


CALLABLES = {"tanh": "Tanh", "sigmoid": "Sigmoid", "identity": "Identity"}  # gradcli's fn:NAME SPECs
PAIRWISE = ("cdist", "sqdist")  # fn:cdist / fn:sqdist: Euclidean distances (squared) between the rows of x1 and x2


def elementwise(torch, fn):
    """gradcli's fn:sinh / fn:asinh: the function of the last argument, as a module."""
    class Elementwise(torch.nn.Module):
        def forward(self, *args):
            return fn(args[-1])

    return Elementwise()


def scaled(torch, value):
    """gradcli's fn:NAME@W (a stand-in holding the input W as its Parameter): NAME(x)*exp(W); asinh(y*exp(-W))."""
    base, _, param = value.partition("@")
    fn = getattr(torch, base) if base != "identity" else (lambda x: x)

    class Scaled(torch.nn.Module):
        parameter_input = param

        def forward(self, *args):
            if base == "asinh":
                return fn(args[-1] * torch.exp(-self.weight))
            return fn(args[-1]) * torch.exp(self.weight)

    return Scaled()


def bind_scaled(torch, records, args):
    """The input each fn:NAME@W names becomes one torch.nn.Parameter that every such stand-in holds."""
    position = {rec.get("name"): i for i, rec in enumerate(records)}
    made = {}
    for value in list(args):
        param = getattr(value, "parameter_input", None)
        if param in position and isinstance(args[position[param]], torch.Tensor):
            if param not in made:
                made[param] = torch.nn.Parameter(args[position[param]].detach().clone())
                args[position[param]] = made[param]
            value.weight = made[param]
    return args


def pairwise(torch, squared):
    """gradcli's pairwise stand-in, written here again on torch (the bench does not import gradcli)."""
    class Pairwise(torch.nn.Module):
        def forward(self, x1, x2):
            total = ((x1.unsqueeze(-2) - x2.unsqueeze(-3)) ** 2).sum(-1)
            return total if squared else total.sqrt()

    return Pairwise()


def rebuild(records, torch, job=None, cls=None):
    """Forward's arguments from gradcli's records, or (None, why) when a record cannot be reproduced."""
    if any(rec.get("inputs_from") for rec in records):
        return rebuild_from_file(records, torch, job, cls)
    if any(rec.get("captured") for rec in records):
        return rebuild_captured(records, torch, job, cls)
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
            value, why = default_object(rec, cls)
            if why:
                return None, why
            args.append(value)
        elif kind == "callable" and "@" in (rec.get("value") or ""):  # fn:sinh@w: holds the input w (below)
            args.append(scaled(torch, rec["value"]))
        elif kind == "callable" and rec.get("value") in CALLABLES:  # fn:tanh -> torch.nn.Tanh()
            args.append(getattr(torch.nn, CALLABLES[rec["value"]])())
        elif kind == "callable" and rec.get("value") in ("sinh", "asinh"):
            args.append(elementwise(torch, getattr(torch, rec["value"])))
        elif kind == "callable" and rec.get("value") in PAIRWISE:
            args.append(pairwise(torch, rec["value"] == "sqdist"))
        else:
            return None, f"{rec.get('name')}: a {kind} cannot be rebuilt from its record"
    return bind_scaled(torch, records, args), ""


def default_object(rec, function_cls):
    """``default()``: the class of forward's parameter (its default's class, else its annotation) built with
    no arguments. The recorded class path is the fallback: a metaclass may give the class another
    ``__module__`` than the one it lives in (norse's LIFParameters names norse.torch.utils.pytree)."""
    candidates = []
    try:
        param = inspect.signature(function_cls.forward).parameters.get(rec.get("name"))
    except (TypeError, ValueError, AttributeError):
        param = None
    if param is not None:
        if param.default is not inspect.Parameter.empty and param.default is not None:
            candidates.append(type(param.default))
        if isinstance(param.annotation, type):
            candidates.append(param.annotation)
    module, _, qualname = rec["class"].rpartition(".")
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        candidates.append(found)
    except Exception:  # noqa: BLE001 -- a class path only gradcli's loader could reach
        pass
    for candidate in candidates:
        if f"{candidate.__module__}.{candidate.__qualname__}" == rec["class"] or candidate.__name__ == qualname:
            try:
                return candidate(), ""
            except Exception as e:  # noqa: BLE001
                return None, f"{rec.get('name')}: {rec['class']}() raised {type(e).__name__}: {e}"
    return None, f"{rec.get('name')}: cannot build {rec['class']}() again (not found)"


_INPUTS_FILES = {}  # path -> module


def load_inputs_file(path):
    """The inputs file as a module of its own (a unique name, its folder at the END of sys.path, as gradcli
    loads one: bench/real_inputs/norse.py must not shadow the norse package)."""
    if path not in _INPUTS_FILES:
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.append(folder)
        name = f"bench_inputs_{zlib.crc32(path.encode()):08x}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _INPUTS_FILES[path] = module
    return _INPUTS_FILES[path]


def inputs_entry(module, job):
    """The entry gradcli's lookup finds (gradcli/check/inputs_from.py): INPUTS["module.Class"], INPUTS["Class"],
    then a function named after the class defined in the file."""
    table = getattr(module, "INPUTS", None)
    if isinstance(table, dict):
        for key in (f"{job['module']}.{job['class']}", job["class"]):
            if key in table:
                return table[key]
    func = vars(module).get(job["class"])
    if inspect.isfunction(func) and func.__module__ == module.__name__:
        return func
    return None


def seed_like_gradcli(torch, seed, name):
    derived = (int(seed) * 1_000_003 + zlib.crc32(name.encode())) % 2**32
    torch.manual_seed(derived)
    try:
        import numpy as np
        np.random.seed(derived)
    except ImportError:
        pass


def rebuild_from_file(records, torch, job, cls):
    path = next(rec["inputs_from"] for rec in records if rec.get("inputs_from"))
    try:
        module = load_inputs_file(path)
        entry = inputs_entry(module, job)
        if entry is None:
            return None, f"{path}: no entry for {job['class']}"
        seed_like_gradcli(torch, job.get("seed") or 0, job["class"])
        value = entry() if callable(entry) else entry
    except Exception as e:  # noqa: BLE001 -- the user's inputs file
        return None, f"the inputs file {path} raised {type(e).__name__}: {str(e)[:200]}"
    cases = [v if isinstance(v, tuple) else (v,) for v in value] if isinstance(value, list) else \
        [value if isinstance(value, tuple) else (value,)]
    case = records[0].get("case") or 0
    if case >= len(cases):
        return None, f"{path}: the entry for {job['class']} gave {len(cases)} input set(s), not {case + 1}"
    args = list(cases[case])
    if len(args) != len([r for r in records if r.get("source") == "example"]):
        return None, f"{path}: {len(args)} arguments, gradcli recorded {len(records)}"
    for i, (arg, rec) in enumerate(zip(args, records)):
        if not isinstance(arg, torch.Tensor):
            continue
        if rec.get("type") != "tensor":
            return None, f"{rec.get('name')}: a tensor here, a {rec.get('type')} in gradcli's record"
        if rec.get("value") is not None and arg.layout == torch.strided:  # (gradcli records no sparse values)
            plain = arg.detach().cpu().as_subclass(torch.Tensor)  # an EdgeIndex compares as its values
            if not torch.equal(plain, torch.tensor(rec["value"], dtype=arg.dtype)):
                return None, f"{rec.get('name')}: the inputs file gave other values than gradcli recorded"
        if rec.get("requires_grad") and not arg.requires_grad:  # gradcli marks every float tensor when none is
            args[i] = arg.detach().requires_grad_(True)
    return args, ""


def tanh_of_sum(*args):
    """gradcli's stand-in for a caller's function parameter (gradcli/check/captured_calls.py)."""
    import torch
    total = args[0]
    for a in args[1:]:
        total = total + a
    return torch.tanh(total)


def _recorded_tensor(torch, argument):
    value = torch.tensor(argument["value"], dtype=getattr(torch, argument.get("dtype") or "float64"))
    if argument.get("sparse"):
        return value.to_sparse()
    return value.requires_grad_(True) if argument.get("requires_grad") else value


def rebuild_captured(records, torch, job, cls):
    """Inputs gradcli took from the package's own call of Cls.apply (gradcli/check/captured_calls.py): the same
    caller called again with the recorded arguments (a method's self built from its recorded tensor), the torch
    generator seeded as gradcli seeds it, stopped at Cls.apply; its tensors must equal the recorded values."""
    recipe = records[0]["captured"]
    try:
        module = importlib.import_module(recipe["module"])
        owner, _, method = recipe["qualname"].rpartition(".")
        function = vars(getattr(module, owner))[method] if owner else getattr(module, method)
        positional, keywords = [], {}
        for argument in recipe["arguments"]:
            if "class" in argument:
                class_module, _, class_name = argument["class"].rpartition(".")
                made = getattr(importlib.import_module(class_module), class_name)
                value = (made().double() if issubclass(made, torch.nn.Module) else made()) \
                    if argument.get("from_tensor") is False else \
                    made(_recorded_tensor(torch, argument), *argument.get("flags") or ())
            elif argument.get("callable") == "tanh_of_sum":
                value = tanh_of_sum
            elif argument.get("spec"):
                value = _recorded_tensor(torch, argument)
                value = [value] if argument.get("list") else value
            else:
                value = argument.get("value")
            if argument.get("keyword"):
                keywords[argument["name"]] = value
            else:
                positional.append(value)
    except Exception as e:  # noqa: BLE001
        return None, f"the captured caller {recipe.get('qualname')} cannot be set up again: {type(e).__name__}: {e}"

    class Captured(Exception):
        pass

    def grab(*args, **kwargs):
        raise Captured(args)

    seed_like_gradcli(torch, job.get("seed") or 0, job["class"])
    had, original = "apply" in vars(cls), vars(cls).get("apply")
    cls.apply = grab
    try:
        function(*positional, **keywords)
        return None, f"{recipe['qualname']} did not call {job['class']}.apply again"
    except Captured as got:
        args = list(got.args[0])
    except Exception as e:  # noqa: BLE001
        return None, f"{recipe['qualname']} raised {type(e).__name__}: {str(e)[:200]}"
    finally:
        if had:
            cls.apply = original
        else:
            del cls.apply
    if len(args) != len(records):
        return None, f"{recipe['qualname']} passed {len(args)} arguments, gradcli recorded {len(records)}"
    for i, (arg, rec) in enumerate(zip(args, records)):
        if not isinstance(arg, torch.Tensor) or arg.layout != torch.strided:
            continue
        if rec.get("value") is not None and not torch.equal(arg.detach(), torch.tensor(rec["value"], dtype=arg.dtype)):
            return None, f"{rec.get('name')}: the caller passed other values than gradcli recorded"
        if arg.requires_grad:  # a leaf of its own, as gradcli checks it (the caller may pass a view)
            args[i] = arg.detach().clone().requires_grad_(True)
    return args, ""


def reseeding(torch, fn, seed=0x5EED):
    """``fn`` with the random generators re-seeded before every call, as gradcli checks a forward that
    draws random numbers (gradcli/check/determinism.py): torch's gradcheck then sees the same draws."""
    import random

    import numpy as np

    def seeded(*args):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        return fn(*args)
    return seeded


def over_tensors(torch, fn, args):
    """``fn`` as a function of its tensor arguments only, the others bound: gradcheck recurses into tuple
    arguments, and a NamedTuple of parameters holding tensors (norse's LIFParameters) comes back from
    that as something forward cannot use; as forward's arguments they are constants, as for gradcli."""
    slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    def of_tensors(*tensors):
        # a dict/list argument fresh for every call, as gradcli gives it: forward may pop from it (xitorch)
        full = [type(a)(a) if type(a) in (dict, list, set) else a for a in args]
        for i, t in zip(slots, tensors):
            full[i] = t
        return fn(*full)

    return of_tensors, tuple(args[i] for i in slots)


# torch's gradcheck cannot run two kinds of Function as they are, though their users' loss.backward() does:
# (error pattern, adaptation, what it changes). Each is tried only after torch's own run raised that error,
# and the input set's result says which one was used ("adapted").
REFUSES_GRAD = "not compatible with .grad()"      # checkpointing: torch.utils.checkpoint (reentrant), fairscale, memcnn
FREED_INPUT = "for storage of size 0"              # a reversible layer freed its input's storage in forward


def one_gradcheck(torch, fn, make_args, undefined, timeout):
    """torch's gradcheck at ``make_args()`` (and, adapted, at a fresh ``make_args()``: the first run may have
    freed or changed the tensors)."""
    result = _gradcheck(torch, fn, make_args(), undefined, timeout)
    message = result["message"]
    if result["status"] == "error" and REFUSES_GRAD in message:
        with grad_through_backward(torch):
            result = _gradcheck(torch, fn, make_args(), undefined, timeout)
        result["adapted"] = ("backward: the Function refuses torch.autograd.grad, so gradcheck's vector-Jacobian "
                             "products were taken by torch.autograd.backward (the gradient reaching each input)")
    elif result["status"] == "error" and FREED_INPUT in message:
        result = _gradcheck(torch, cloning(torch, fn), make_args(), undefined, timeout)
        result["adapted"] = ("cloned: forward frees its input's storage, so each tensor argument (not a module's "
                             "Parameter) reaches forward as x.clone(), the gradient passing through the clone")
    return result


def _gradcheck(torch, fn, args, undefined, timeout):
    signal.alarm(timeout)
    try:
        fn, tensors = over_tensors(torch, fn, args)
        ok = torch.autograd.gradcheck(fn, tensors, fast_mode=False, check_undefined_grad=undefined,
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


def cloning(torch, fn):
    """``fn`` with every tensor argument but a module's Parameter copied inside the graph first."""
    def of_clones(*args):
        return fn(*[a.clone() if isinstance(a, torch.Tensor) and not isinstance(a, torch.nn.Parameter) else a
                    for a in args])
    return of_clones


@contextlib.contextmanager
def grad_through_backward(torch):
    """``torch.autograd.grad`` (as gradcheck calls it, over leaves) that, when the graph refuses it, takes the
    same product with ``torch.autograd.backward``: the gradient each leaf's AccumulateGrad node in the graph
    receives (a pre-hook there: ``.grad`` would also hold what a backward writes into it itself, memcnn's
    "mimic backwards", and a tensor hook would also fire inside the backward's own autograd.grad)."""
    real = torch.autograd.grad

    def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
             **options):
        try:
            return real(outputs, inputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph,
                        allow_unused=allow_unused, **options)
        except RuntimeError as exc:
            if REFUSES_GRAD not in str(exc) or create_graph:
                raise
        outputs = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
        inputs = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        if grad_outputs is not None:
            grad_outputs = [grad_outputs] if isinstance(grad_outputs, torch.Tensor) else list(grad_outputs)
        received = [None] * len(inputs)
        nodes = _accumulators(outputs, inputs)

        def catcher(k):
            def catch(grads):
                if grads[0] is not None:
                    received[k] = grads[0].detach().clone() if received[k] is None else received[k] + grads[0]
            return catch

        handles = [node.register_prehook(catcher(k)) for k, node in enumerate(nodes) if node is not None]
        saved = [t.grad for t in inputs]
        try:
            torch.autograd.backward(outputs, grad_outputs, retain_graph=retain_graph)
        finally:
            for handle in handles:
                handle.remove()
            for t, g in zip(inputs, saved):
                t.grad = g
        if not allow_unused and any(g is None for g in received):
            raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph "
                               "(through .backward())")
        return tuple(received)

    torch.autograd.grad = grad
    try:
        yield
    finally:
        torch.autograd.grad = real


def _accumulators(outputs, inputs):
    """Per input leaf, the AccumulateGrad node in the graph of ``outputs`` that accumulates into it."""
    wanted = {id(t): k for k, t in enumerate(inputs) if t.is_leaf}
    found, seen = [None] * len(inputs), set()
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node).__name__ == "AccumulateGrad" and id(node.variable) in wanted:
            found[wanted[id(node.variable)]] = node
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    return found


_SET_UP = re.compile(r"the package's set-up ([\w.]+)\.(\w+)\(([\d, ]*)\) was called first")


def set_up(torch, notes):
    """What gradcli did before checking (its not_checked says): a single-process gloo group; the package's
    initializer it named (``pkg.mod.initialize_model_parallel(1)``), called here the same way."""
    import torch.distributed as dist

    for note in notes:
        if not dist.is_initialized():
            dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
        m = _SET_UP.search(note.get("reason", "")) if note.get("input") == "environment" else None
        if m is None:
            continue
        module = importlib.import_module(m.group(1))
        try:
            getattr(module, m.group(2))(*[int(k) for k in m.group(3).split(",") if k.strip()])
        except AssertionError:  # already set up by an earlier Function of this run
            pass


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
    set_up(torch, job.get("setup") or [])
    for records in job.get("input_sets") or []:
        args, why = rebuild(records, torch, job, cls)
        if args is None:
            out["input_sets"].append({"default": {"status": "unreproducible", "message": why},
                                      "no_undefined": {"status": "unreproducible", "message": why}})
            continue
        apply = reseeding(torch, cls.apply) if job.get("reseed") else cls.apply

        built = [args]

        def fresh_args():  # the arguments built above, then fresh ones: a run may change or free them in place
            made = built.pop() if built else rebuild(records, torch, job, cls)[0]
            torch.manual_seed(0)
            return made

        default = one_gradcheck(torch, apply, fresh_args, True, timeout)
        no_undefined = one_gradcheck(torch, apply, fresh_args, False, timeout)
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
