"""Max/Min and comparisons of traced input symbols, decided by the signs they carry.

SymPy's ``Max(a, b, c)`` compares every pair of its arguments to drop those it can prove smaller
(``MinMaxBase._is_connected``: up to eight relational evaluations a pair, each building ``a - b``
and asking its sign), and a comparison ``a > b`` builds ``a - b`` and asks the same. On the
symbols the tracer makes for input elements -- real, and positive or negative where the value at
the point is (trace.symbol_array) -- every such answer depends on the two symbols' assumptions
only. So these rules ask SymPy once per pair of assumption sets, on two template symbols, and
build the result from that answer: a softmax's ``x.max(1)`` over 3x4 inputs took ~0.1 s of the
exact check's CPU, most of a Function's tracing. Anything else (an argument that is not such a
symbol) is left to SymPy as before; tests/test_exact_speed.py checks that both give the same
expressions.
"""
import sympy

_KINDS: dict = {}        # a symbol's deduced facts (Symbol._assumptions0) -> "real" | "positive" | "negative"
_TEMPLATES: dict = {}    # kind -> two distinct symbols of that kind
_DECIDED: dict = {}      # (head or relation, kind, kind, same symbol) -> SymPy's answer on templates


def _templates():
    if not _TEMPLATES:
        for kind, flags in (("real", {}), ("positive", {"positive": True}), ("negative", {"negative": True})):
            pair = tuple(sympy.Symbol(f"_gradcli_{kind}{k}", real=True, **flags) for k in (0, 1))
            _TEMPLATES[kind] = pair
            facts = getattr(pair[0], "_assumptions0", None)  # another SymPy without it: no symbol has a kind
            if facts is not None:
                _KINDS[facts] = kind
    return _TEMPLATES


def kind_of(e):
    """"real", "positive" or "negative" for a Symbol made with exactly those assumptions, else None."""
    if type(e) is not sympy.Symbol:
        return None
    _templates()
    return _KINDS.get(getattr(e, "_assumptions0", None))


def _answer(op, a_kind, b_kind, same):
    """``op`` applied by SymPy to template symbols of these kinds (the same one when ``same``)."""
    key = (op, a_kind, b_kind, same)
    if key not in _DECIDED:
        templates = _templates()
        a = templates[a_kind][0]
        b = a if same else templates[b_kind][1]
        _DECIDED[key] = op(a, b)
    return _DECIDED[key]


def relation(op, a, b):
    """``op(a, b)`` (sympy.Gt, Ge, Lt, Le, Eq, Ne) for two input symbols, as SymPy evaluates it;
    None when either is not one (the caller asks SymPy)."""
    a_kind, b_kind = kind_of(a), kind_of(b)
    if a_kind is None or b_kind is None:
        return None
    found = _answer(op, a_kind, b_kind, a is b)
    if isinstance(found, sympy.logic.boolalg.BooleanAtom):
        return found
    return op(a, b, evaluate=False)   # undecided: the relation as SymPy leaves it


def extreme(head, a, b):
    """``head(a, b)`` (sympy.Max or Min) where ``a`` and ``b`` are input symbols or ``head``s of them
    (a fold over a slice), as SymPy evaluates it; None otherwise (the caller asks SymPy)."""
    args = []
    for e in (a, b):
        args.extend(e.args if isinstance(e, head) else (e,))
    kinds = {}
    for e in args:
        kind = kind_of(e)
        if kind is None:
            return None
        kinds[e] = kind
    kept = set(kinds)
    # an argument is dropped where SymPy proves another one beyond it (the pair's answer on templates)
    for e in list(kept):
        for other in kinds:
            if other is not e and e in kept and _answer(head, kinds[e], kinds[other], False) \
                    == _TEMPLATES[kinds[other]][1]:
                kept.discard(e)
    if len(kept) == 1:
        return kept.pop()
    return head(*kept, evaluate=False)
