"""pytest-xdist's scheduler for a ``--gradcli`` run under ``--dist load`` (xdist's default with -n),
in the controller: xdist's load scheduling for ordinary tests, and the gradcli items dealt out in one
block per worker, so that each worker checks its block in one run of the runner at its first item
(pytest_batch.py) instead of paying a worker fork per file as the items come one by one.

The workers list their gradcli items (node ids) in a file named by the run's testrunuid when their
collection ends (xdist gives the controller node ids only: an item ``file.py::Name`` could be a test
function as well); the controller deals them, files kept whole, in contiguous blocks of about equal
numbers of items, one per worker, writes the blocks to a second file and sends each worker its block
before any other item. A worker that dies gives its items back to xdist's load scheduling (a worker
checks what it gets outside its block one by one). Only imported when xdist calls
``pytest_xdist_make_scheduler``, i.e. with xdist installed.
"""
from __future__ import annotations

from xdist.scheduler import LoadScheduling

from gradcli.pytest_batch import read_shared, shared_file, write_shared


def deal(nodeids: list, workers: list) -> dict:
    """{worker: its block of ``nodeids``}: contiguous, a file's items (``file.py::...``) in one block,
    each file in the block its middle item falls in when the items are cut into len(workers) equal parts."""
    blocks: dict = {worker: [] for worker in workers}
    files: list = []
    for nodeid in nodeids:
        path = nodeid.split("::")[0]
        if files and files[-1][0] == path:
            files[-1][1].append(nodeid)
        else:
            files.append((path, [nodeid]))
    before = 0
    for _, ids in files:
        middle = before + len(ids) / 2
        blocks[workers[min(len(workers) - 1, int(middle * len(workers) / len(nodeids)))]].extend(ids)
        before += len(ids)
    return blocks


def _worker_number(worker_id: str):
    digits = worker_id[2:]  # xdist names its workers gw0, gw1, ...
    return (0, int(digits), "") if digits.isdigit() else (1, 0, worker_id)


class GradcliScheduling(LoadScheduling):
    """LoadScheduling, but the gradcli items go out first, in one block per worker (above)."""

    def __init__(self, config, log=None, state=None):
        super().__init__(config, log)
        self.state = state

    def schedule(self) -> None:
        collections = list(self.node2collection.values())
        if self.collection is not None or not collections or any(c != collections[0] for c in collections[1:]):
            super().schedule()  # later workers, or collections that differ: xdist's own handling
            return
        run_id = self.nodes[0].workerinput.get("testrunuid")
        listed = read_shared(shared_file(run_id, "items"))
        collection = collections[0]
        index = {nodeid: i for i, nodeid in enumerate(collection)}
        gradcli = [n for n in listed if n in index] if isinstance(listed, list) else []
        if not gradcli:
            super().schedule()
            return
        nodes = {node.gateway.id: node for node in self.nodes}
        blocks = deal(gradcli, sorted(nodes, key=_worker_number))
        path = shared_file(run_id, "blocks")
        write_shared(path, blocks)  # before any item goes out: a worker reads it at its first
        if self.state is not None and path not in self.state.written:
            self.state.written.append(path)  # removed at the end (pytest_configure_node adds it as well)
        self.collection = collection
        if self.maxschedchunk is None:
            self.maxschedchunk = len(collection)
        dealt: set = set()
        for worker, block in blocks.items():
            indices = [index[nodeid] for nodeid in block]
            if indices:
                self.node2pending[nodes[worker]].extend(indices)
                nodes[worker].send_runtest_some(indices)
                dealt.update(indices)
        self.pending[:] = [i for i in range(len(collection)) if i not in dealt]
        if len(self.pending) < 2 * len(self.nodes):  # ordinary tests: as LoadScheduling's first round
            for node in (self.nodes * 2)[:len(self.pending)]:
                self._send(node, 1)
        else:
            chunk = max(2, min(len(self.pending) // len(self.nodes) // 4, self.maxschedchunk))
            for node in self.nodes:
                self._send(node, chunk)
        if not self.pending:
            for node in self.nodes:
                node.shutdown()

    def _send(self, node, count: int) -> None:
        indices = self.pending[:count]
        if indices:
            del self.pending[:count]
            self.node2pending[node].extend(indices)
            node.send_runtest_some(indices)
