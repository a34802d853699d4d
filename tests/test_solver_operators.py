"""The operator of a conjugate-gradient solve is definite (gradcli/check/solver_operators.py, specs/check.md §2).
``linear_cg(prec.matmul, rhs)`` with ``prec = natural_mat.mul(-2.0)`` converges only where prec is symmetric
positive definite: natural_mat gets ``@nsd``. The Functions and the solver here are this file's own."""
import ast
import textwrap

from check_run import by_name, check_json, need, write

NATURAL = """
    import torch


    def linear_cg(matmul, rhs, max_iter=100, tolerance=1e-4):
        x = torch.zeros_like(rhs)
        r = rhs - matmul(x)
        p, rs = r, (r * r).sum()
        for _ in range(max_iter):
            if rs.sqrt() <= tolerance * rhs.norm():
                return x
            ap = matmul(p)
            alpha = rs / (p * ap).sum()
            x, r = x + alpha * p, r - alpha * ap
            new = (r * r).sum()
            p, rs = r + new / rs * p, new
        raise ValueError("conjugate gradients did not converge: the operator is not positive definite")


    class NaturalSolve(torch.autograd.Function):
        @staticmethod
        def forward(ctx, natural_mat, b):
            prec = natural_mat.mul(-2.0)
            rhs = b.unsqueeze(-1)
            linear_cg(prec.matmul, rhs[..., :1, :] if rhs.dim() > 2 else rhs)   # a well-posed solve, checked
            x = torch.linalg.solve(prec, rhs)
            ctx.save_for_backward(prec, x)
            return x.squeeze(-1)

        @staticmethod
        def backward(ctx, g):
            prec, x = ctx.saved_tensors
            gb = torch.linalg.solve(prec.mT, g.unsqueeze(-1))
            g_nat = FACTOR * gb @ x.mT
            while g_nat.dim() > 2:
                g_nat = g_nat.sum(0)
            return g_nat, gb.squeeze(-1)


    FACTOR = 2.0
"""


def test_the_operator_of_a_cg_solve_through_minus_two_is_negative_definite(tmp_path):
    need("torch")
    path = write(tmp_path, "natural.py", NATURAL)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["NaturalSolve"]
    assert result["status"] == "pass", result["message"]
    natural_mat = result["inputs"][0][0]
    assert natural_mat["spec"] == "float64[4,4]@nsd"
    assert natural_mat["inferred"] == ("the operator of linear_cg() is minus a multiple of it: conjugate gradients "
                                       "need a symmetric positive definite operator, so it is negative definite")
    assert outcome.exit_code == 0


def test_a_wrong_sign_there_fails(tmp_path):
    need("torch")
    path = write(tmp_path, "natural.py", NATURAL.replace("FACTOR = 2.0", "FACTOR = -2.0"))
    _, doc = check_json(tmp_path, path)
    result = by_name(doc)["NaturalSolve"]
    assert result["status"] == "fail"
    assert result["message"].startswith("values: natural_mat: ")


def _hints(source, names):
    from gradcli.check.infer import Hint
    from gradcli.check.solver_operators import refine

    hints = {n: Hint() for n in names}
    refine(ast.parse(textwrap.dedent(source)).body[0], hints)
    return {n: h.structure for n, h in hints.items()}


def test_which_operators_are_read():
    assert _hints("def f(ctx, a, b):\n    return linear_cg(a.matmul, b)", ["a", "b"]) == {"a": "spd", "b": None}
    assert _hints("def f(ctx, a, b):\n    return cg(lambda v: (-0.5 * a) @ v, b)", ["a", "b"]) == {"a": "nsd",
                                                                                             "b": None}
    assert _hints("def f(ctx, a, b):\n    m = 2 * a\n    return pcg(m, b)", ["a", "b"]) == {"a": "spd", "b": None}
    # not a conjugate-gradient solve: nothing said
    assert _hints("def f(ctx, a, b):\n    return lstsq(a.matmul, b)", ["a", "b"]) == {"a": None, "b": None}
    assert _hints("def f(ctx, a, b):\n    return linear_cg(a.exp().matmul, b)", ["a", "b"]) == {"a": None, "b": None}
