"""Under pytest-xdist (``--dist load``, the default with -n), the plugin's scheduler deals the gradcli
items in one block per worker (gradcli/pytest_scheduler.py) and each worker checks its block in one
run of the runner at its first item; ordinary tests are scheduled as xdist schedules them, and the
verdicts and JUnit are a serial run's."""
import json
import os
import textwrap
import uuid
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

import gradcli.autograd.namespace  # noqa: F401 -- imported before in-process pytester runs (numpy)
import gradcli.check.gradcheck  # noqa: F401
from gradcli.pytest_batch import read_shared, shared_file, write_shared

pytest_plugins = ["pytester"]
pytest.importorskip("xdist")

from gradcli.pytest_scheduler import GradcliScheduling, deal  # noqa: E402 -- needs xdist


def test_deal_keeps_files_whole_in_contiguous_blocks_of_about_equal_size():
    ids = ["a.py::A", "a.py::B", "b.py::C", "c.py::D", "c.py::E", "c.py::F"]
    assert deal(ids, ["gw0", "gw1"]) == {"gw0": ["a.py::A", "a.py::B", "b.py::C"],
                                         "gw1": ["c.py::D", "c.py::E", "c.py::F"]}
    assert deal(ids, ["gw0", "gw1", "gw2"]) == {"gw0": ["a.py::A", "a.py::B"], "gw1": ["b.py::C"],
                                                "gw2": ["c.py::D", "c.py::E", "c.py::F"]}
    # one file of many Functions stays on one worker (one import); the other gets nothing
    assert deal(["big.py::A", "big.py::B", "big.py::C"], ["gw0", "gw1"]) == \
        {"gw0": [], "gw1": ["big.py::A", "big.py::B", "big.py::C"]}


class FakeNode:
    def __init__(self, worker_id, run_id):
        self.gateway = SimpleNamespace(id=worker_id)
        self.workerinput = {"workerid": worker_id, "testrunuid": run_id}
        self.shutting_down = False
        self.sent, self.shut = [], False

    def send_runtest_some(self, indices):
        self.sent.append(list(indices))

    def shutdown(self):
        self.shut = True


def scheduler(collection, gradcli_ids):
    run_id = uuid.uuid4().hex
    if gradcli_ids is not None:
        write_shared(shared_file(run_id, "items"), gradcli_ids)
    config = SimpleNamespace(getvalue=lambda name: ["2*popen"] if name == "tx" else None,
                             getoption=lambda name: None)
    state = SimpleNamespace(written=[])
    sched = GradcliScheduling(config, None, state)
    nodes = [FakeNode("gw1", run_id), FakeNode("gw0", run_id)]  # ready in either order
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    return sched, {node.gateway.id: node for node in nodes}, run_id, state


def test_the_scheduler_sends_each_worker_its_block_first_and_ordinary_tests_by_load():
    collection = ["ops/a.py::A", "ops/a.py::B", "ops/b.py::C", "ops/b.py::D"] + \
        [f"tests/test_x.py::test_{i}" for i in range(10)]
    sched, nodes, run_id, state = scheduler(collection, collection[:4])
    try:
        sched.schedule()
        blocks = read_shared(shared_file(run_id, "blocks"))
        assert blocks == {"gw0": collection[:2], "gw1": collection[2:4]}
        assert state.written == [shared_file(run_id, "blocks")]  # the controller removes it at the end
        assert nodes["gw0"].sent[0] == [0, 1] and nodes["gw1"].sent[0] == [2, 3]  # the block comes first
        ordinary = [i for node in nodes.values() for chunk in node.sent[1:] for i in chunk]
        assert all(i >= 4 for i in ordinary) and ordinary  # then ordinary tests, xdist's way
        assert sorted(ordinary + sched.pending) == list(range(4, 14))  # each sent once or still pending
        assert not any(node.shut for node in nodes.values())
    finally:
        for what in ("items", "blocks"):
            if os.path.exists(shared_file(run_id, what)):
                os.remove(shared_file(run_id, what))


def test_only_gradcli_items_are_all_sent_at_once_and_the_workers_shut_down():
    collection = ["ops/a.py::A", "ops/b.py::B", "ops/c.py::C"]
    sched, nodes, run_id, _ = scheduler(collection, collection)
    try:
        sched.schedule()
        assert (nodes["gw0"].sent, nodes["gw1"].sent) == ([[0]], [[1, 2]])  # b.py's item is the middle one
        assert sched.pending == [] and all(node.shut for node in nodes.values())
    finally:
        for what in ("items", "blocks"):
            if os.path.exists(shared_file(run_id, what)):
                os.remove(shared_file(run_id, what))


def test_without_the_workers_list_it_schedules_as_xdist_does():
    collection = [f"tests/test_x.py::test_{i}" for i in range(12)]
    sched, nodes, run_id, state = scheduler(collection, None)
    sched.schedule()
    assert not os.path.exists(shared_file(run_id, "blocks")) and state.written == []
    assert sorted(i for node in nodes.values() for chunk in node.sent for i in chunk) + sched.pending \
        == sorted(range(12))


FUNCTION = """
    class {name}(Function):
        @staticmethod
        def forward(ctx, x):
            return x * {factor}

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * {slope}
"""
FILES = {
    "ops/a.py": [("Triple", 3, 2), ("Double", 2, 2)],
    "ops/b.py": [("Quadruple", 4, 4)],
    "ops/c.py": [("Half", 0.5, 0.5), ("Twice", 2, 1)],
    "ops/d.py": [("Third", 1 / 3, 1 / 3)],
}
RUN_LOG = """
import json, os
import gradcli.check.session as session

_run = session.run


def run(items, options, *args, **kwargs):  # every checking run of the runner, by pytest process
    if not options.collect_only:
        with open(os.environ["GRADCLI_TEST_RUNS"], "a") as f:
            f.write(json.dumps([os.environ.get("PYTEST_XDIST_WORKER", "main"),
                                {item.path: item.names for item in items}]) + "\\n")
    return _run(items, options, *args, **kwargs)


session.run = run
"""


def junit(path) -> dict:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        child = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        cases[(case.get("classname"), case.get("name"))] = (child.tag, child.text) if child is not None else None
    return cases


def test_each_worker_checks_its_block_in_one_run_beside_ordinary_tests(pytester, monkeypatch):
    for name, functions in FILES.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from gradcli.autograd import Function\n" + "\n".join(
            textwrap.dedent(FUNCTION.format(name=n, factor=f, slope=s)) for n, f, s in functions))
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_plain.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('i', range(6))\ndef test_plain(i):\n    assert i < 6\n")
    (pytester.path / "conftest.py").write_text(RUN_LOG)
    log = pytester.path / "runs.jsonl"
    monkeypatch.setenv("GRADCLI_TEST_RUNS", str(log))
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)  # this suite may itself run under xdist: the serial run is not

    serial = pytester.runpytest_subprocess("tests", "--gradcli", "ops", "--junitxml=serial.xml")
    serial.assert_outcomes(passed=10, failed=2)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert runs == [["main", {"ops/a.py": ["Triple", "Double"], "ops/b.py": ["Quadruple"],
                              "ops/c.py": ["Half", "Twice"], "ops/d.py": ["Third"]}]]

    log.unlink()
    run_id = uuid.uuid4().hex
    parallel = pytester.runpytest_subprocess("tests", "--gradcli", "ops", "-n", "2", "--junitxml=parallel.xml",
                                             "--testrunuid", run_id)
    parallel.assert_outcomes(passed=10, failed=2)  # the six ordinary tests ran too
    parallel.stdout.fnmatch_lines(["*2 workers*"])
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(worker for worker, _ in runs) == ["gw0", "gw1"]  # one checking run per worker
    blocks = dict(runs)
    assert blocks["gw0"] == {"ops/a.py": ["Triple", "Double"], "ops/b.py": ["Quadruple"]}
    assert blocks["gw1"] == {"ops/c.py": ["Half", "Twice"], "ops/d.py": ["Third"]}
    assert junit(pytester.path / "parallel.xml") == junit(pytester.path / "serial.xml")
    for what in ("items", "blocks"):  # the run's files in the temporary directory are gone
        assert not os.path.exists(shared_file(run_id, what))

    log.unlink()  # --dist loadfile: xdist sends a file's items to one worker, which checks them in one run
    by_file = pytester.runpytest_subprocess("tests", "--gradcli", "ops", "-n", "2", "--dist", "loadfile")
    by_file.assert_outcomes(passed=10, failed=2)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(json.dumps(files, sort_keys=True) for _, files in runs) == sorted(
        json.dumps({name: [n for n, _, _ in functions]}) for name, functions in FILES.items())
