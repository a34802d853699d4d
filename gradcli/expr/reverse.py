"""Reverse-mode differentiation over the shared-subexpression graph of a SymPy expression.

``sympy.diff`` walks the expression as a tree: a network written as one formula repeats each hidden unit
inside every unit of the next layer, and each variable's derivative re-walks all of it (seconds to
minutes). SymPy's objects are already shared, though, so the expression is really a small DAG. Here every
distinct compound subexpression gets a name (its CSE symbol), local partial derivatives are taken on
those one-line definitions, and adjoints flow backwards once - the gradient with respect to all variables
for the price of about one forward pass. The result is in CSE form: definitions plus gradients that refer
to them.
"""
import sympy

DEFAULT_PREFIX = "_t"   # users cannot name a variable with a leading underscore, so no clashes


def dag_nodes(exprs):
    """Distinct compound subexpressions of ``exprs`` in topological order (arguments before users)."""
    order, seen = [], set()
    for root in exprs:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen or node.is_Atom or not node.free_symbols:
                continue
            seen.add(node)
            stack.append((node, True))
            for arg in reversed(node.args):
                if arg not in seen and not arg.is_Atom and arg.free_symbols:
                    stack.append((arg, False))
    return order


def tree_size(expr):
    """Number of nodes ``expr`` has as a tree (what sympy.diff walks), counted on the DAG."""
    sizes = {}
    for node in dag_nodes([expr]):
        sizes[node] = 1 + sum(sizes.get(arg, 1) for arg in node.args)
    return sizes.get(expr, 1)


def _name_graph(exprs, fresh):
    """Forward definitions: each compound node as its head applied to the names of its arguments."""
    names, definitions = {}, []

    def ref(node):
        return names.get(node, node)

    for node in dag_nodes(exprs):
        symbol = fresh()
        definitions.append((symbol, node.func(*[ref(arg) for arg in node.args])))
        names[node] = symbol
    return definitions, [ref(root) for root in exprs]


def gradient_graph(exprs, variables, prefix=DEFAULT_PREFIX):
    """CSE-form Jacobian of ``exprs``: (definitions, rows) with rows[i][j] = ∂exprs[i]/∂variables[j].

    Definitions are ``(symbol, expression)`` pairs in evaluation order; a row entry may refer to any
    definition. One backward sweep per output.
    """
    counter = iter(range(10 ** 9))

    def fresh():
        return sympy.Symbol(f"{prefix}{next(counter)}", real=True)

    forward, roots = _name_graph(exprs, fresh)
    definition_of = dict(forward)
    definitions = list(forward)
    rows = []
    for root in roots:
        adjoints = {root: [sympy.Integer(1)]}
        for symbol, _ in reversed(forward):
            contributions = adjoints.pop(symbol, None)
            if contributions is None:
                continue
            adjoint = sympy.Add(*contributions)
            if len(contributions) > 1:
                named = fresh()
                definitions.append((named, adjoint))
                adjoint = named
            local = definition_of[symbol]
            for arg in set(local.args):
                if not arg.is_Symbol:
                    continue
                if local.is_Add:   # each named term once: ∂/∂term = 1 (diff would rescan all n terms, n times)
                    adjoints.setdefault(arg, []).append(adjoint)
                    continue
                partial = local.diff(arg)
                if partial == 0:
                    continue
                # f'(u) often contains f(u) itself (exp, tanh, sigmoid): refer to its name instead.
                partial = partial.xreplace({local: symbol})
                adjoints.setdefault(arg, []).append(adjoint * partial)
        row = []
        for variable in variables:
            contributions = adjoints.get(variable, [])
            row.append(sympy.Add(*contributions) if contributions else sympy.Integer(0))
        rows.append(row)
    # Dependency order holds: an adjoint definition is appended when formed, after every forward
    # definition and every earlier adjoint it uses.
    return definitions, rows
