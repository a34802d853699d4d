"""Is a forward that refused every automatic input set broken, or merely picky about its inputs?

``build_cases`` gives up (``NoInputs``: a skip) when forward raised on every automatic input set it
tried. That is right for a forward that needs shapes or types gradcli did not guess (a matmul, a
1-D dot, an index tensor) and wrong for one that raises whatever it is given
(``raise ValueError("not implemented yet")``, ``ctx.save_for_backward(x, 3.0)``): a broken Function
must not pass CI as a skip. So before the skip stands, forward is called on a spread of input sets
that fit most signatures -- float tensors of several shapes (``--shape``, square, 1-D, 0-d, batches of squares, 2x2 and [2]) and
domains, with and without requires_grad, integer tensors after the first parameter (indices), trailing Python
numbers -- and when
every one of them raises the *same* exception (type and message) at the *same* line, forward is
reported as an error with that exception. Messages that name the inputs' shapes or values differ
between the sets, so a shape mismatch stays a skip. See specs/check.md, "Status rules".
"""
from __future__ import annotations

from typing import Optional


def always_raises(target, shape, seed: int = 0) -> Optional[BaseException]:
    """The exception forward raises on every probe input set, or None (it ran on one, or the
    exceptions differ). Only parameters without a default are filled; defaults stay."""
    import numpy as np

    from gradcli.check.inputs import backend_for, forward_params

    params, star = forward_params(target)
    if star:
        return None
    free = [i for i, p in enumerate(params) if not p.has_default]
    if not free:
        return None
    be = backend_for(target.backend)
    rng = np.random.default_rng([seed, 7])
    n = int(shape[-1]) if len(shape) else 3

    def floats(dims, low, high, grad=True):
        return be.leaf(rng.uniform(low, high, size=dims).astype(np.float64), grad)

    def integers(dims):
        return be.leaf(rng.integers(0, max(1, min(dims) if dims else 1), size=dims).astype(np.int64), False)

    makers = [lambda: floats(tuple(shape), -2.0, 2.0), lambda: floats(tuple(shape), 0.1, 2.0),
              lambda: floats((n, n), 0.1, 2.0), lambda: floats((n,), 0.1, 2.0), lambda: floats((), 0.5, 1.5),
              lambda: floats((2, n, n), 0.1, 2.0), lambda: floats((2, 2, n, n), 0.1, 2.0),
              lambda: floats((2, 2), 0.1, 2.0), lambda: floats((2,), 0.1, 2.0),  # forwards made for small sizes
              # tensors that do not require grad (a forward may refuse inputs that do: gpytorch's kernels)
              lambda: floats(tuple(shape), 0.1, 2.0, grad=False), lambda: floats((n, n), 0.1, 2.0, grad=False)]
    trials = [[make] * len(free) for make in makers]
    if len(free) > 1:  # (as build_cases' number fallback: a tensor stays first)
        trials.append([makers[0]] + [lambda: integers(tuple(shape))] * (len(free) - 1))
        for cut in range(len(free) - 1, 0, -1):  # the last parameters as the int 1
            trials.append([makers[0]] * cut + [lambda: 1] * (len(free) - cut))
    seen = None
    last = None
    for trial in trials:
        args = [p.default for p in params]
        for position, make in zip(free, trial):
            args[position] = make()
        try:
            with be.no_grad(), np.errstate(all="ignore"):
                target.fn(*args)
        except Exception as exc:  # noqa: BLE001 -- user code: the exception is the evidence
            key = (type(exc), str(exc), _raising_line(exc))
            if seen is not None and key != seen:
                return None
            seen, last = key, exc
            continue
        return None  # forward ran on this one: it depends on its inputs
    if last is not None and _not_a_bug(last, [p.name for p in params]):
        return None  # an environment or object forward needs (environment.py, refusing_assert.py): the skip says which
    return last


def _not_a_bug(exc: BaseException, params: list) -> bool:
    from gradcli.check import environment
    from gradcli.check.refusing_assert import requires_object

    return (environment.needs_process_group(exc) or environment.missing_environment(str(exc))
            or environment.missing_attribute(exc) is not None or requires_object(exc, params))


def _raising_line(exc: BaseException) -> tuple:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    return (frames[-1].filename, frames[-1].lineno) if frames else ()
