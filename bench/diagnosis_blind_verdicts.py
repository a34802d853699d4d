"""Validate the blind corpus bench/diagnosis_blind/ by verdicts only (pass/fail), never by diagnosis.

    python bench/diagnosis_blind_verdicts.py [--corpus DIR] [--gradcli CHECKOUT] [--no-gradcli]

For every labelled Function (``bug = {...}`` must FAIL, ``bug = None`` must PASS):

- ``torch.autograd.gradcheck`` at its inputs: its ``example_inputs()`` (the first input set), else a
  seeded 3x4 float64 ``randn`` per forward parameter. An engine file (``import gradcli as torch``) is
  run on real torch with that import replaced by ``import torch`` and float64 as the default dtype.
  A backward that raises counts as a failure (torch refuses a gradient of the wrong shape).
- ``gradcli check FILE --no-exact --json``: only ``results[].status`` is read.

It prints one line per Function whose verdict is not the expected one, and the totals. It never
reads gradcli's diagnosis (``checks[].diagnosis``), so it can be run by whoever writes the corpus.
"""
import argparse
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "diagnosis_blind")
ENGINE_IMPORT = "import gradcli as torch\n"


def _load(path):
    import torch
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    engine = ENGINE_IMPORT in source
    if engine:
        source = source.replace(ENGINE_IMPORT, "import torch\ntorch.set_default_dtype(torch.float64)\n")
        source = source.replace("import gradcli.nn.functional as F", "import torch.nn.functional as F")
    module = types.ModuleType(os.path.basename(path)[:-3])
    module.__file__ = path
    previous = torch.get_default_dtype()
    try:
        exec(compile(source, path, "exec"), module.__dict__)  # the corpus's own files, not user text
    finally:
        torch.set_default_dtype(previous)
    return module, engine


def _inputs(cls, torch):
    if hasattr(cls, "example_inputs"):
        made = cls.example_inputs()
        if isinstance(made, list):
            made = made[0]
        made = tuple(made)
    else:
        params = list(inspect.signature(cls.forward).parameters)[1:]
        gen = torch.Generator().manual_seed(0)
        made = tuple(torch.randn(3, 4, dtype=torch.float64, generator=gen) for _ in params)
    tensors = [t for t in made if isinstance(t, torch.Tensor)]
    if not any(t.requires_grad for t in tensors):
        made = tuple(t.detach().requires_grad_() if isinstance(t, torch.Tensor)
                     and t.is_floating_point() else t for t in made)
    return made


def torch_verdicts(path):
    import torch
    torch.set_default_dtype(torch.float64)
    module, engine = _load(path)
    verdicts = {}
    for name, cls in vars(module).items():
        if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)
                and "bug" in vars(cls)):
            continue
        torch.manual_seed(0)
        try:
            inputs = _inputs(cls, torch)
            ok = torch.autograd.gradcheck(cls.apply, inputs, raise_exception=False)
        except Exception as exc:  # a backward that raises fails the check
            verdicts[name + " (raised: " + type(exc).__name__ + ")"] = ("fail", cls.bug)
            continue
        verdicts[name] = ("pass" if ok else "fail", cls.bug)
    torch.set_default_dtype(torch.float32)
    return verdicts, engine


def gradcli_statuses(paths, checkout, python):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "check.json")
        env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
        subprocess.run([python, "-m", "gradcli", "check", *paths, "--format", "plain",
                        "--no-exact", "--json", out, "--timeout", "300"],
                       env=env, cwd=tmp, capture_output=True, text=True)
        with open(out, encoding="utf-8") as handle:
            report = json.load(handle)
    return {(os.path.basename(r["file"]), r.get("function")): r["status"]
            for r in report.get("results", [])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--gradcli", default=REPO)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--no-gradcli", action="store_true", help="torch.autograd.gradcheck only")
    parser.add_argument("files", nargs="*", help="only these corpus files")
    args = parser.parse_args(argv)
    names = args.files or sorted(n for n in os.listdir(args.corpus) if n.endswith(".py"))
    bad = 0
    tally = {"torch": [0, 0, 0, 0], "engine": [0, 0, 0, 0]}  # buggy fail, buggy, twin pass, twins
    labels = {}
    for name in names:
        verdicts, engine = torch_verdicts(os.path.join(args.corpus, name))
        row = tally["engine" if engine else "torch"]
        for function, (got, bug) in verdicts.items():
            labels[(name, function.split(" ")[0])] = bug
            want = "pass" if bug is None else "fail"
            row[0 if bug else 2] += got == want
            row[1 if bug else 3] += 1
            if got != want:
                bad += 1
                print(f"gradcheck: {name}::{function}: {got}, expected {want}")
    for kind, (bf, b, tp, t) in tally.items():
        print(f"gradcheck on torch, {kind} files: {bf}/{b} buggy fail, {tp}/{t} twins pass")
    if not args.no_gradcli:
        paths = ([os.path.join(args.corpus, n) for n in args.files] if args.files
                 else [args.corpus])
        statuses = gradcli_statuses([os.path.abspath(p) for p in paths], args.gradcli, args.python)
        counts = {"fail": 0, "pass": 0, "other": 0}
        for (name, function), bug in labels.items():
            status = statuses.get((name, function), "missing")
            want = "pass" if bug is None else "fail"
            counts[status if status in counts else "other"] += 1
            if status != want:
                bad += 1
                print(f"gradcli check: {name}::{function}: {status}, expected {want}")
        print(f"gradcli check statuses: {counts}")
    print(f"unexpected verdicts: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
