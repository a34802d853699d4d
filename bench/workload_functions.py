"""The small autograd Functions of the CI-workload benchmark (bench/folder_workload.py).

Each template is the body of one Function class, written once for both backends: its file starts
with ``import torch`` (real PyTorch) or ``import gradcli as torch`` (gradcli's engine). ``{a}`` is a
constant varied between files, so that every file is its own Function. Every backward is correct:
the workload measures what a green CI run costs. Inputs are 3x4 float64 tensors (gradcli's
automatic inputs; the torch loop draws the same shapes).
"""

# name -> (number of 3x4 inputs, class body); the body's forward/backward use only ops both backends have
TEMPLATES = {
    "Sin": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin({a} * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * {a} * torch.cos({a} * x)
"""),
    "Tanh": (1, """
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh({a} * x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * {a} * (1 - y * y)
"""),
    "Sigmoid": (1, """
    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + torch.exp(-{a} * x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * {a} * y * (1 - y)
"""),
    "Softplus": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp({a} * x)) / {a}

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output / (1 + torch.exp(-{a} * x))
"""),
    "Swish": (1, """
    @staticmethod
    def forward(ctx, x):
        s = 1 / (1 + torch.exp(-{a} * x))
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * (s + {a} * x * s * (1 - s))
"""),
    "Cube": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return {a} * x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * {a} * x ** 2
"""),
    "SoftSqrt": (1, """
    @staticmethod
    def forward(ctx, x):
        y = torch.sqrt(x * x + {a})
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * x / y
"""),
    "LogCosh": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(torch.cosh({a} * x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * {a} * torch.tanh({a} * x)
"""),
    "Atan": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.atan({a} * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * {a} / (1 + ({a} * x) ** 2)
"""),
    "Gaussian": (1, """
    @staticmethod
    def forward(ctx, x):
        y = torch.exp(-{a} * x * x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * (-2 * {a}) * x * y
"""),
    "LeakyRelu": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, {a} * 0.1 * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, grad_output, {a} * 0.1 * grad_output)
"""),
    "Mul": (2, """
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return {a} * x * y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * {a} * y, grad_output * {a} * x
"""),
    "SafeDiv": (2, """
    @staticmethod
    def forward(ctx, x, y):
        d = y * y + {a}
        ctx.save_for_backward(x, y, d)
        return x / d

    @staticmethod
    def backward(ctx, grad_output):
        x, y, d = ctx.saved_tensors
        return grad_output / d, -grad_output * x * 2 * y / (d * d)
"""),
    "Bilinear": (2, """
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return {a} * (x @ y.t())

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return {a} * (grad_output @ y), {a} * (grad_output.t() @ x)
"""),
    "Lerp": (2, """
    @staticmethod
    def forward(ctx, x, y):
        return x + {a} * 0.25 * (y - x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * (1 - {a} * 0.25), grad_output * {a} * 0.25
"""),
    "SumSquares": (1, """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return {a} * (x * x).sum()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * {a} * x
"""),
    "RowNorm": (1, """
    @staticmethod
    def forward(ctx, x):
        n = torch.sqrt((x * x).sum(1, keepdim=True) + {a})
        ctx.save_for_backward(x, n)
        return n

    @staticmethod
    def backward(ctx, grad_output):
        x, n = ctx.saved_tensors
        return grad_output * x / n
"""),
    "Softmax": (1, """
    @staticmethod
    def forward(ctx, x):
        e = torch.exp({a} * (x - x.max(1, keepdim=True)[0]))
        y = e / e.sum(1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return {a} * y * (grad_output - (grad_output * y).sum(1, keepdim=True))
"""),
    "LogSumExp": (1, """
    @staticmethod
    def forward(ctx, x):
        m = x.max(1, keepdim=True)[0]
        e = torch.exp({a} * (x - m))
        s = e.sum(1, keepdim=True)
        ctx.save_for_backward(e, s)
        return torch.log(s) / {a} + m

    @staticmethod
    def backward(ctx, grad_output):
        e, s = ctx.saved_tensors
        return grad_output * e / s
"""),
    "Center": (1, """
    @staticmethod
    def forward(ctx, x):
        return {a} * (x - x.mean(1, keepdim=True))

    @staticmethod
    def backward(ctx, grad_output):
        return {a} * (grad_output - grad_output.mean(1, keepdim=True))
"""),
    "Cumsum": (1, """
    @staticmethod
    def forward(ctx, x):
        return {a} * torch.cumsum(x, 1)

    @staticmethod
    def backward(ctx, grad_output):
        return {a} * torch.flip(torch.cumsum(torch.flip(grad_output, [1]), 1), [1])
"""),
    "Variance": (1, """
    @staticmethod
    def forward(ctx, x):
        c = x - x.mean(0, keepdim=True)
        ctx.save_for_backward(c)
        return {a} * (c * c).mean(0)

    @staticmethod
    def backward(ctx, grad_output):
        (c,) = ctx.saved_tensors
        return {a} * 2 * c * grad_output / c.shape[0]
"""),
}

CONSTANTS = (0.5, 1.0, 1.5, 2.0, 3.0)


def sources(backend: str, count: int) -> dict:
    """``count`` file names -> source, cycling the templates over the constants."""
    header = "import torch\n" if backend == "torch" else "import gradcli as torch\n"
    out = {}
    names = list(TEMPLATES)
    for k in range(count):
        name = names[k % len(names)]
        a = CONSTANTS[(k // len(names)) % len(CONSTANTS)]
        body = TEMPLATES[name][1].replace("{a}", repr(a))
        cls = f"{name}{k // len(names)}"
        out[f"fn_{k:03d}_{name.lower()}.py"] = (f'"""{name} with a = {a} (benchmark workload)."""\n{header}\n\n'
                                                f"class {cls}(torch.autograd.Function):{body}")
    return out


def arity(file_name: str) -> int:
    """The number of 3x4 inputs of the Function in a file made by ``sources``."""
    stem = file_name[:-3].split("_", 2)[2]
    return next(n for name, (n, _) in TEMPLATES.items() if name.lower() == stem)
