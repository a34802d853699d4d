"""Forward evaluations per input element: gradcli.gradcheck against torch.autograd.gradcheck.

    python bench/eval_counts.py [--json out.json]

For smooth, kinked and costly torch Functions (written here; one is shaped like pytorch-wavelets'
``AFB1D``: a two-output strided convolution that does not broadcast over a batch axis), both
gradchecks run on the same inputs and every call of the Function's forward is counted by wrapping
it. Reported per differentiable input element: forward calls (what a costly forward pays), and for
gradcli also the points its calls evaluated (a batched call of r perturbed copies counts r;
``timing.forward_evaluations``), and the numeric side's calls per estimator. torch runs in its
default mode (``fast_mode=False``: 2 evaluations per element) and in fast mode. The ratio column is
gradcli's calls per element over torch's default; issue 16 asks ≤ 4 on smooth functions.
Needs torch. Counts are deterministic (seed 0); run it under any load.
"""
from __future__ import annotations

import argparse
import json
import sys


def functions():
    import torch
    import torch.nn.functional as F

    class Softplus(torch.autograd.Function):
        """Smooth, element-wise (gradcli: the broadcast strategy, O(1) evaluations)."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.log1p(torch.exp(x))

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * torch.sigmoid(x)

    class RowSoftmax(torch.autograd.Function):
        """Smooth, couples each row (per-element strategy, batched)."""

        @staticmethod
        def forward(ctx, x):
            y = torch.softmax(x, dim=-1)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return y * (g - (g * y).sum(-1, keepdim=True))

    class RowSoftmaxDim1(RowSoftmax):
        """The same over dim 1 (a leading batch axis changes which axis that is: no batching, a loop)."""

        @staticmethod
        def forward(ctx, x):
            y = torch.softmax(x, dim=1)
            ctx.save_for_backward(y)
            return y

    class Matmul(torch.autograd.Function):
        """Smooth, bilinear, two inputs (per-element strategy)."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g @ b.T, a.T @ g

    class Relu(torch.autograd.Function):
        """Kinked: element-wise, some inputs exactly at the kink."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x > 0)

    class MaxPool(torch.autograd.Function):
        """Kinked: a row maximum (ties at the maximum are kinks)."""

        @staticmethod
        def forward(ctx, x):
            values, index = x.max(dim=-1)
            ctx.save_for_backward(index)
            ctx.shape = x.shape
            return values

        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            out = torch.zeros(ctx.shape, dtype=g.dtype)
            return out.scatter(-1, index.unsqueeze(-1), g.unsqueeze(-1))

    class FilterBank(torch.autograd.Function):
        """Costly shape: like pytorch-wavelets' AFB1D, lowpass and highpass halves of a strided conv
        (two outputs; a conv1d does not take an extra leading axis, so per element one call)."""

        @staticmethod
        def forward(ctx, x, h0, h1):
            ctx.save_for_backward(h0, h1)
            ctx.length = x.shape[-1]
            c = x.shape[1]
            h = torch.cat([h0, h1] * c, dim=0)
            lohi = F.conv1d(F.pad(x, (1, 2)), h, stride=2, groups=c)
            return lohi[:, ::2].contiguous(), lohi[:, 1::2].contiguous()

        @staticmethod
        def backward(ctx, dx0, dx1):
            h0, h1 = ctx.saved_tensors
            c = dx0.shape[1]
            h = torch.cat([h0, h1] * c, dim=0)
            g = torch.stack([dx0, dx1], dim=2).reshape(dx0.shape[0], 2 * c, -1)
            padded = ctx.length + 3
            extra = padded - ((g.shape[-1] - 1) * 2 + h.shape[-1])
            dx = F.conv_transpose1d(g, h, stride=2, groups=c, output_padding=extra)
            return dx[..., 1:1 + ctx.length], None, None

    gen = torch.Generator().manual_seed(0)

    def rand(*shape, grad=True):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).requires_grad_(grad)

    relu_x = rand(4, 6, grad=False)
    relu_x[0, :3] = 0.0
    relu_x.requires_grad_(True)
    h0 = torch.tensor([[[0.48, 0.84, 0.22, -0.13]]], dtype=torch.float64)
    h1 = torch.tensor([[[-0.13, -0.22, 0.84, -0.48]]], dtype=torch.float64)

    def bank_inputs():
        return (rand(2, 2, 8), h0, h1)

    return [
        ("smooth", "Softplus 3x4", Softplus, (rand(3, 4),)),
        ("smooth", "Softplus 16x16", Softplus, (rand(16, 16),)),
        ("smooth", "RowSoftmax 3x4", RowSoftmax, (rand(3, 4),)),
        ("smooth", "RowSoftmax 8x16", RowSoftmax, (rand(8, 16),)),
        ("smooth", "RowSoftmax dim=1 3x4 (loop)", RowSoftmaxDim1, (rand(3, 4),)),
        ("smooth", "Matmul 4x5 @ 5x3", Matmul, (rand(4, 5), rand(5, 3))),
        ("kinked", "Relu 4x6 (3 at 0)", Relu, (relu_x,)),
        ("kinked", "MaxPool 4x6", MaxPool, (rand(4, 6),)),
        ("costly", "FilterBank 2x2x8 (AFB1D-like)", FilterBank, bank_inputs()),
    ]


class Counted:
    """Counts the calls of ``cls.forward`` while in a ``with`` block."""

    def __init__(self, cls):
        self.cls, self.calls = cls, 0

    def __enter__(self):
        original = self.original = self.cls.__dict__["forward"].__func__

        def forward(ctx, *args):
            self.calls += 1
            return original(ctx, *args)

        self.cls.forward = staticmethod(forward)
        return self

    def __exit__(self, *exc):
        self.cls.forward = staticmethod(self.original)


def elements(args) -> int:
    return sum(a.numel() for a in args if hasattr(a, "requires_grad") and a.requires_grad)


def measure(fn, args) -> dict:
    import torch

    import gradcli

    n = elements(args)
    row = {"elements": n}
    for label, fast in (("torch", False), ("torch_fast", True)):
        with Counted(fn) as counter:
            ok = torch.autograd.gradcheck(fn.apply, args, fast_mode=fast, raise_exception=False)
        row[label] = {"calls": counter.calls, "per_element": counter.calls / n, "ok": bool(ok)}
    with Counted(fn) as counter:
        report = gradcli.gradcheck(fn, args)
    counts = report.timing.get("forward_evaluations", {})
    row["gradcli"] = {"calls": counter.calls, "per_element": counter.calls / n, "ok": bool(report.ok),
                      "points_per_element": counts.get("points_per_element"), "mode": report.mode,
                      "numeric": {k: v for k, v in counts.items() if k not in ("elements", "points_per_element")},
                      "methods": sorted({r.method for r in report.inputs})}
    row["ratio"] = row["gradcli"]["per_element"] / row["torch"]["per_element"]
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="", help="write the rows here")
    args = parser.parse_args(argv)
    rows = []
    header = (f"{'kind':7s} {'function':32s} {'n':>4s} {'torch/el':>8s} {'fast/el':>7s} {'gradcli/el':>10s} "
              f"{'points/el':>9s} {'ratio':>6s}  gradcli numeric calls by estimator")
    print(header)
    for kind, name, fn, inputs in functions():
        row = measure(fn, inputs)
        row.update(kind=kind, function=name)
        rows.append(row)
        g = row["gradcli"]
        by = ", ".join(f"{k} {v}" for k, v in g["numeric"].items() if k not in ("calls", "points")) or "-"
        points = "-" if g["points_per_element"] is None else f"{g['points_per_element']:.2f}"
        verdicts = "" if g["ok"] == row["torch"]["ok"] else f"  (verdicts differ: gradcli {g['ok']}, torch " \
                                                          f"{row['torch']['ok']})"
        print(f"{kind:7s} {name:32s} {row['elements']:4d} {row['torch']['per_element']:8.2f} "
              f"{row['torch_fast']['per_element']:7.2f} {g['per_element']:10.2f} {points:>9s} {row['ratio']:6.2f}  "
              f"{by}{verdicts}")
    smooth = [r["ratio"] for r in rows if r["kind"] == "smooth"]
    print(f"\nsmooth: worst ratio {max(smooth):.2f} (target ≤ 4); all: worst {max(r['ratio'] for r in rows):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
