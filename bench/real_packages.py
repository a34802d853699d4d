"""gradcli check on real packages' autograd Functions, against torch.autograd.gradcheck at the same inputs.

    python bench/real_packages.py [--python /work/corpus/venv/bin/python] [--gradcli CHECKOUT]
                                  [--manifest bench/real_corpus.json] [-j 2] [--timeout 60] [-k WORD]
                                  [--part all|design|held_out] [--no-help] [--json OUT.json]
                                  [--reclassify EARLIER.json]

The corpus (bench/real_corpus.json) names Functions in packages installed in a separate venv (`--python`,
with torch and the packages; see the manifest's `about`); nothing of their code is in this repository. For
each file, one `gradcli check SITE/file::A SITE/file::B --format plain --json` runs in that venv with
CHECKOUT on PYTHONPATH (default: the checkout holding this script), from an empty directory. A Function with
no verdict (skip/error) whose manifest entry has `help` is run again, alone, with those options (an
`--inputs-from bench/real_inputs/PACKAGE.py` is taken relative to the repository holding this script). Every verdict
is then compared with `torch.autograd.gradcheck(fast_mode=False)` at the inputs gradcli recorded
(bench/real_packages_gradcheck.py, in the same venv), after the set-up gradcli recorded in the result's
`not_checked` (a single-process gloo group; the package's initializer it named, called the same way). A Function no verdict can exist for here (an export stub
with no backward, a CUDA-only forward, an abstract base, a package's backward that raises) counts as right when
its outcome is the SKIP/ERROR its manifest entry's `expected` names; such rows are counted apart ("expected").
Prints a table per package (design and held-out part apart), the totals, the disagreements to review by hand, and
with --json writes everything.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from real_packages_verdicts import classify, summarize  # noqa: E402  (bench/ is not a package)

DEFAULT_PYTHON = "/work/corpus/venv/bin/python"


def site_packages(python):
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def git_head(path):
    try:
        return subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run_gradcli(args, selections, extra, timeout, workdir):
    """One `gradcli check` process; returns (results by class name, file-level result, process tail)."""
    out_json = os.path.join(workdir, "report.json")
    env = dict(os.environ, PYTHONPATH=args.gradcli, PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
    command = [args.python, "-m", "gradcli", "check", *selections, "--format", "plain", "--json", out_json,
               "--timeout", str(args.timeout), "-j", "1", *extra]
    outer = args.timeout * len(selections) + 120
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=outer, cwd=workdir, env=env,
                              stdin=subprocess.DEVNULL)
        tail, code = (proc.stdout + proc.stderr)[-2000:], proc.returncode
    except subprocess.TimeoutExpired as exc:
        tail, code = f"bench: gradcli did not finish in {outer}s\n{(exc.stdout or b'')[-1000:]!r}", None
    by_class, file_level = {}, None
    if os.path.exists(out_json):
        with open(out_json) as fh:
            report = json.load(fh)
        os.remove(out_json)
        for result in report.get("results", []):
            result["seed"] = report.get("seed")  # the torch side seeds an inputs file's entry with it
            if result.get("function") is None:
                file_level = result
            else:
                by_class[result["function"]] = result
    return by_class, file_level, {"exit_code": code, "tail": tail, "command": command[1:]}


def help_options(help_args):
    """The manifest's help as command-line options: an inputs file's path made absolute (gradcli runs from an
    empty folder)."""
    out = list(help_args)
    for i, arg in enumerate(out[:-1]):
        if arg == "--inputs-from" and not os.path.isabs(out[i + 1]):
            out[i + 1] = os.path.join(REPO, out[i + 1])
    return out


def gradcli_pass(args, entries, extra, site):
    """gradcli on one file's entries (or one entry with its help); fills entry-level gradcli outcomes."""
    with tempfile.TemporaryDirectory(prefix="gradcli-bench-") as workdir:
        path = os.path.join(site, entries[0]["file"])
        by_class, file_level, proc = run_gradcli(args, [f"{path}::{e['class']}" for e in entries], extra,
                                                 args.timeout, workdir)
    outcomes = {}
    for entry in entries:
        result = by_class.get(entry["class"]) or file_level
        outcomes[entry["key"]] = {"result": result, "process": proc,
                                  "collected": entry["class"] in by_class}
    return outcomes


def torch_pass(args, jobs):
    """bench/real_packages_gradcheck.py on a list of Functions: one process (torch imports once) that writes
    each result as it finishes; if it dies, the Function it was on is an error and a new one takes the rest."""
    results, todo = {}, list(jobs)
    while todo:
        with tempfile.TemporaryDirectory(prefix="gradcli-bench-torch-") as workdir:
            job_path, out_path = os.path.join(workdir, "job.json"), os.path.join(workdir, "out.json")
            with open(job_path, "w") as fh:
                json.dump({"timeout": args.timeout, "functions": todo}, fh)
            outer = args.timeout * 2 * sum(max(1, len(j["input_sets"])) for j in todo) + 120
            try:
                subprocess.run([args.python, os.path.join(HERE, "real_packages_gradcheck.py"), job_path, out_path],
                               capture_output=True, text=True, timeout=outer, cwd=workdir,
                               stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                pass
            done = json.load(open(out_path)) if os.path.exists(out_path) else []
        results.update((r["key"], r) for r in done)
        todo = todo[len(done):]
        if todo:  # the process died on todo[0]
            results[todo[0]["key"]] = {"key": todo[0]["key"], "status": "error", "values_status": "error",
                                       "importable": None, "import_error": "the torch check process died",
                                       "input_sets": []}
            todo = todo[1:]
    return results


def chunks(items, n):
    size = max(1, -(-len(items) // n))
    return [items[i:i + size] for i in range(0, len(items), size)]


def input_sets(result):
    return [records for records in (result or {}).get("inputs") or [] if records]


def select(manifest, args):
    entries = []
    for entry in manifest["functions"]:
        entry = dict(entry, key=f"{entry['file']}::{entry['class']}")
        if args.part == "design" and entry["held_out"] or args.part == "held_out" and not entry["held_out"]:
            continue
        if args.k and args.k.lower() not in f"{entry['package']} {entry['key']}".lower():
            continue
        entries.append(entry)
    return entries


def run(args):
    manifest = json.load(open(args.manifest))
    entries = select(manifest, args)
    site = site_packages(args.python)
    by_file = collections.OrderedDict()
    for entry in entries:
        by_file.setdefault(entry["file"], []).append(entry)
    outcomes = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for part in pool.map(lambda group: gradcli_pass(args, group, [], site), by_file.values()):
            outcomes.update(part)
        needing_help = [e for e in entries if e.get("help") and not args.no_help
                        and (outcomes[e["key"]]["result"] or {}).get("status") not in ("pass", "fail")]
        helped = {}
        for part in pool.map(lambda e: gradcli_pass(args, [e], help_options(e["help"]["args"]), site), needing_help):
            helped.update(part)
        # torch at the inputs of each verdict (automatic, or with help); -j processes in all
        jobs = []
        for entry in entries:
            job = {"key": entry["key"], "module": entry["module"], "class": entry["class"], "input_sets": []}
            for source in (outcomes, helped):
                result = (source.get(entry["key"]) or {}).get("result") or {}
                if result.get("status") in ("pass", "fail") and result.get("function"):
                    job["input_sets"], job["seed"] = input_sets(result), result.get("seed") or 0
                    # the set-up gradcli did first (a one-process group, the package's initializer): torch too
                    job["setup"] = [n for n in result.get("not_checked") or []
                                    if n.get("input") in ("torch.distributed", "environment")]
                    # gradcli re-seeded a forward that draws random numbers: torch gets the same draws
                    job["reseed"] = any(check.get("name") == "random" for report in result.get("checks") or []
                                        if report for check in report.get("checks") or [])
            jobs.append(job)  # also without a verdict: whether the module imports by its dotted name
        torch_results = {}
        for part in pool.map(lambda part: torch_pass(args, part), chunks(jobs, args.jobs)):
            torch_results.update(part)
    raw = {e["key"]: {"auto": _slim(outcomes[e["key"]]), "helped": _slim(helped.get(e["key"])),
                      "torch": torch_results.get(e["key"])} for e in entries}
    bench = {"gradcli": args.gradcli, "gradcli_commit": git_head(args.gradcli), "python": args.python,
             "site_packages": site, "manifest": os.path.relpath(args.manifest), "part": args.part, "raw": raw}
    return reclassify(bench, entries)


def _slim(outcome):
    """An outcome without the per-check reports (the JSON stays small; inputs and messages are kept)."""
    if outcome is None:
        return None
    result = outcome.get("result")
    return dict(outcome, result=None if result is None else {k: v for k, v in result.items() if k != "checks"})


def reclassify(bench, entries):
    """Rows and summary from the raw outcomes (after a run, or of an earlier --json with the current manifest)."""
    rows = [classify(e, bench["raw"][e["key"]]["auto"], bench["raw"][e["key"]]["helped"],
                     bench["raw"][e["key"]]["torch"]) for e in entries if e["key"] in bench["raw"]]
    return dict(bench, functions=rows, summary=summarize(rows))


def percent(part, whole):
    return f"{100.0 * part / whole:5.1f}%" if whole else "    -"


def print_table(bench, out=sys.stdout):
    columns = ("package", "n", "auto", "auto ok", "help", "<=1 ok", "expected", "skip", "error", "ours", "fPASS",
               "fFAIL")
    print(f"gradcli {bench['gradcli']} ({bench['gradcli_commit']}), corpus {bench['site_packages']}", file=out)
    for part in ("design", "held_out"):
        rows = bench["summary"]["packages"].get(part) or {}
        if not rows:
            continue
        print(f"\n{part} part", file=out)
        print("  " + "  ".join(f"{c:>8}" if i else f"{c:<22}" for i, c in enumerate(columns)), file=out)
        for name, s in list(rows.items()) + [("TOTAL", bench["summary"]["totals"][part])]:
            cells = [name, s["n"], s["verdict_auto"], s["correct_auto"], s["verdict_help"], s["correct_help"],
                     s.get("expected_ok", 0), s["skip"], s["error"], s["error_ours"], s["false_pass"], s["false_fail"]]
            print("  " + "  ".join(f"{c:>8}" if i else f"{c:<22}" for i, c in enumerate(cells)), file=out)
    print("\ncolumns: auto = PASS/FAIL with no option; auto ok = of those, agreeing with torch gradcheck (and the "
          "manifest's truth); help = verdict with at most one help; <=1 ok = correct verdicts with no option or "
          "its one help, and the right outcomes where no verdict can exist; expected = of those, the SKIP/ERROR the "
          "manifest's 'expected' names (an export stub, a CUDA-only forward, an abstract base, a backward that "
          "raises: not judged against torch); ours = errors/misses that are gradcli's doing; fPASS/fFAIL = possible false PASS / "
          "false alarm against torch", file=out)
    for part in ("design", "held_out", "all"):
        t = bench["summary"]["totals"].get(part)
        if not t or not t["n"]:
            continue
        print(f"{part:>8}: {t['n']} Functions: correct verdict with no option {percent(t['correct_auto'], t['n'])}"
              f" (any verdict {percent(t['verdict_auto'], t['n'])}), correct with <=1 help "
              f"{percent(t['correct_help'], t['n'])} ({t.get('expected_ok', 0)} of them the expected SKIP/ERROR; "
              f"verdicts alone {percent(t['correct_help'] - t.get('expected_ok', 0), t['n'])}), false PASS {t['false_pass']}, false alarms "
              f"{t['false_fail']}, gradcli's-doing errors {t['error_ours']}", file=out)
    review = [r for r in bench["functions"] if r["review"]]
    if review:
        print("\nto review by hand (gradcli vs torch.autograd.gradcheck at the same inputs):", file=out)
        for r in review:
            print(f"  [{r['review']}] {r['package']} {r['key']}: gradcli {r['gradcli_status']} / torch "
                  f"{r['torch_status']} (values only: {r['torch_values_status']}) {r['torch_message'][:160]}",
                  file=out)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="the corpus venv's interpreter")
    parser.add_argument("--gradcli", default=os.path.dirname(HERE), help="gradcli checkout put on PYTHONPATH")
    parser.add_argument("--manifest", default=os.path.join(HERE, "real_corpus.json"))
    parser.add_argument("-j", "--jobs", type=int, default=2, help="processes at once (default 2)")
    parser.add_argument("--timeout", type=int, default=60, help="gradcli --timeout per Function, seconds")
    parser.add_argument("-k", default=None, help="only entries whose package or file::Class contains this")
    parser.add_argument("--part", choices=("all", "design", "held_out"), default="all")
    parser.add_argument("--no-help", action="store_true", help="do not rerun with the manifest's help")
    parser.add_argument("--json", default=None, help="write the whole bench as JSON here")
    parser.add_argument("--reclassify", default=None, metavar="BENCH.json",
                        help="run nothing: classify the raw outcomes of an earlier --json again")
    args = parser.parse_args(argv)
    args.gradcli = os.path.abspath(args.gradcli)
    return args


def main(argv=None):
    args = parse(argv)
    if args.reclassify:
        with open(args.reclassify) as fh:
            bench = reclassify(json.load(fh), select(json.load(open(args.manifest)), args))
    else:
        bench = run(args)
    print_table(bench)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(bench, fh, indent=1)


if __name__ == "__main__":
    main()
