"""Same --seed, same report: inputs drawn by a Function's own example_inputs() (here with
gradcli.randn, the global generator) are reproducible too, not only gradcli's automatic inputs."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_json(tmp_path, name, seed):
    out = tmp_path / f"{name}.json"
    subprocess.run([sys.executable, "-m", "gradcli", "check", "examples/broadcast.py", "--seed", str(seed),
                    "--json", str(out), "--format", "plain"], cwd=ROOT, capture_output=True, timeout=120)
    return json.loads(out.read_text())


def without_timing(value):
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in ("timing", "duration")}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def test_example_inputs_drawn_from_global_generators_are_seeded(tmp_path):
    first, second = run_json(tmp_path, "a", 0), run_json(tmp_path, "b", 0)
    assert [r["inputs"] for r in first["results"]] == [r["inputs"] for r in second["results"]]
    assert without_timing(first["results"]) == without_timing(second["results"])
    other = run_json(tmp_path, "c", 1)
    assert [r["inputs"] for r in other["results"]] != [r["inputs"] for r in first["results"]]
