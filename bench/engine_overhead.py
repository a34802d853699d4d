"""Engine overhead, gradcli against torch CPU, measured side by side in one run.

    python bench/engine_overhead.py [--repeats N]

(a) a chain of 1,000 elementwise ops on 10-element tensors, forward + backward: what the
    per-op bookkeeping (Function.apply, Tensor construction, the engine loop) costs;
(b) a 2-layer MLP (batch 256, 784 -> 256 -> 10, tanh, logsumexp cross-entropy), forward +
    backward: where the arithmetic should dominate.

Both libraries run float64 (gradcli's default) on the same data; the two are timed alternately in
each repeat so that machine noise hits both alike, and the medians are compared. Targets: both
ratios gradcli/torch <= 2. Timing is reported here only, never asserted in tests.
"""
import argparse
import gc
import statistics
import time

import numpy as np

import gradcli

CHAIN_LENGTH = 1000
CHAIN_WIDTH = 10
BATCH, N_IN, N_HIDDEN, N_OUT = 256, 784, 256, 10


def chain(lib, x, a, b):
    """Five elementwise ops per step (tensor*tensor, tensor+tensor, tanh, tensor*scalar, sin),
    then sum and backward: 1,000 recorded elementwise ops."""
    y = x
    for _ in range(CHAIN_LENGTH // 5):
        y = y * a
        y = y + b
        y = y.tanh()
        y = y * 0.9
        y = y.sin()
    y.sum().backward()


def mlp(lib, x, onehot, w1, b1, w2, b2):
    h = (x @ w1 + b1).tanh()
    z = h @ w2 + b2
    loss = (_logsumexp(lib, z) - (z * onehot).sum(dim=1)).mean()
    loss.backward()


def _logsumexp(lib, z):
    if hasattr(lib, "logsumexp"):
        return lib.logsumexp(z, dim=1)
    m = z.detach().max(dim=1, keepdim=True)[0]  # max-shifted log(sum(exp)), with engine ops only
    return ((z - m).exp().sum(dim=1, keepdim=True)).log().squeeze(1) + m.squeeze(1)


def _make_inputs(lib, arrays, requires_grad):
    return [lib.tensor(a, requires_grad=r) for a, r in zip(arrays, requires_grad)]


def _clear(tensors):
    for t in tensors:
        t.grad = None


def compare(name, fn, arrays, requires_grad, repeats, torch):
    libs = {"gradcli": gradcli, "torch": torch}
    inputs = {k: _make_inputs(lib, arrays, requires_grad) for k, lib in libs.items()}
    times = {k: [] for k in libs}
    for _ in range(3):  # warm-up: imports, caches, allocator
        for k, lib in libs.items():
            fn(lib, *inputs[k])
            _clear(inputs[k])
    for _ in range(repeats):
        for k, lib in libs.items():
            gc.collect()
            start = time.perf_counter()
            fn(lib, *inputs[k])
            times[k].append(time.perf_counter() - start)
            _clear(inputs[k])
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["gradcli"] / med["torch"]
    print(f"{name:<34} gradcli {med['gradcli'] * 1e3:8.2f} ms   torch {med['torch'] * 1e3:8.2f} ms   "
          f"ratio {ratio:5.2f}  (target <= 2)")
    return ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        raise SystemExit("torch is not installed: nothing to compare against")
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(0)
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads, numpy {np.__version__}, "
          f"median of {args.repeats} alternating repeats")

    chain_arrays = [rng.standard_normal(CHAIN_WIDTH) for _ in range(3)]
    compare(f"(a) chain of {CHAIN_LENGTH} elementwise ops", chain, chain_arrays, [True, True, True],
            args.repeats, torch)

    labels = rng.integers(0, N_OUT, BATCH)
    mlp_arrays = [rng.standard_normal((BATCH, N_IN)), np.eye(N_OUT)[labels],
                  rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN), np.zeros(N_HIDDEN),
                  rng.standard_normal((N_HIDDEN, N_OUT)) / np.sqrt(N_HIDDEN), np.zeros(N_OUT)]
    compare(f"(b) MLP {BATCH}x{N_IN}->{N_HIDDEN}->{N_OUT}", mlp, mlp_arrays,
            [False, False, True, True, True, True], args.repeats, torch)


if __name__ == "__main__":
    main()
