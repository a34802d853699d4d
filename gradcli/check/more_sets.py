"""More input sets for automatic inputs (``auto_inputs.Builder`` inherits ``MoreSets``): what the first
set leaves out -- a tensor for each None default, the other string modes, numbers and bools forward
compares a parameter with, None for an ``Optional[Tensor]``. A value none of these can take goes to the
first set's ``not_checked``. specs/check.md §2 is the contract.
"""
from __future__ import annotations

from typing import Optional

from gradcli.check import shape_search
from gradcli.check.inputs import AUTO_DOMAINS, Case, Spec, _from_spec, _record, forward_problem, parse_spec

MAX_CHOICE_SETS = 3  # other string modes / numbers / the other bool, each one more input set


class MoreSets:
    def variants(self, base: Case) -> list:
        """A tensor for each None default (and the other string modes / bool of automatic choices),
        each as one more input set; a None default no tensor can replace goes to ``not_checked``."""
        out = []
        for i, p in enumerate(self.params):
            if i >= len(base.args) or p.name in self.specs:
                continue
            rec = base.records[i] or {}
            if rec.get("source") == "default" and p.default is None and _may_be_tensor(p.hint):
                case = self._none_as_tensor(base, i, p)
                if case is not None:
                    out.append(case)
            elif rec.get("source") == "auto" and "inferred" in rec and (rec.get("type") in ("str", "bool") or (
                    rec.get("type") == "float" and p.hint and p.hint.kind == "float" and p.hint.choices)):
                out += self._other_choices(base, i, p)
            elif rec.get("source") == "auto" and rec.get("type") == "tensor" and p.hint and p.hint.optional:
                case = self._as_none(base, i, p)  # Optional[Tensor] / `if p is None:` with no default
                if case is not None:
                    out.append(case)
        return out

    def _as_none(self, base: Case, i: int, p) -> Optional[Case]:
        args = list(base.args)
        args[i] = None
        try:
            why, _ = forward_problem(self.be, self.target.fn, args)
        except Exception:  # noqa: BLE001 -- forward does not take None there after all
            return None
        if why is not None:
            return None
        records = list(base.records)
        records[i] = dict(_record(self.be, p.name, None, source="auto", spec="none"),
                          inferred="None: forward checks for it")
        return Case(args, records, [dict(n) for n in base.not_checked])

    def _none_as_tensor(self, base: Case, i: int, p) -> Optional[Case]:
        tensors = [tuple(a.shape) for a in base.args if self.be.is_tensor(a)]
        first = tensors[0] if tensors else self.base_shape
        out_shape = self._output_shape(base.args) or first
        candidates = [shape_search.hinted_shape(p.hint, first)] if p.hint and (p.hint.shape or p.hint.ndim) else []
        # a bias has the output's trailing size
        candidates += [out_shape[-1:], (1,) + out_shape[-1:], out_shape, first[-1:], first]
        sizes = [k for shape in reversed(tensors) for k in reversed(shape)]
        candidates += shape_search.variants_of_one(first, list(dict.fromkeys(sizes)))
        domain = _domain_of(base) or AUTO_DOMAINS[0]
        nograd = bool(p.hint and p.hint.backward_none)
        seen = []
        for shape in candidates:
            if shape in seen:
                continue
            seen.append(shape)
            spec = Spec("tensor", "", shape=tuple(shape), dtype=self.dtype, domain=domain, requires_grad=not nograd)
            value, rec = _from_spec(self.be, spec, f"{self.target.name}.{p.name}", self.seed, self.dtype, p, "auto")
            args = list(base.args)
            args[i] = value
            try:
                why, _ = forward_problem(self.be, self.target.fn, args)
            except Exception:  # noqa: BLE001 -- a shape of ours that forward refuses
                continue
            if why is None:
                records = list(base.records)
                records[i] = dict(rec, inferred="a tensor for its None default (a second input set)")
                not_checked = [dict(n) for n in base.not_checked]
                if nograd:
                    not_checked.append({"input": p.name, "reason": f"backward returns None for {p.name}: checked "
                                        f"as a tensor that does not require grad ({rec['spec']})"})
                return Case(args, records, not_checked)
        base.not_checked.append({"input": p.name, "reason": f"defaults to None, and no tensor of the shapes tried "
                                 f"made forward run: give --input {p.name}=SPEC to check it as a tensor"})
        return None

    def _output_shape(self, args) -> Optional[tuple]:
        from gradcli.check.backends import flatten_outputs

        try:
            with self.be.no_grad():
                out = self.target.fn(*args)
        except Exception:  # noqa: BLE001 -- it ran in search(); if not now, fall back to the inputs' shapes
            return None
        shapes = [tuple(o.shape) for o in flatten_outputs(out) if self.be.is_tensor(o)]
        return shapes[0] if shapes else None

    def _other_choices(self, base: Case, i: int, p) -> list:
        current = base.args[i]
        others = [c for c in (p.hint.choices if p.hint.kind in ("str", "float") else [not current]) if c != current]
        out = []
        for choice in others[:MAX_CHOICE_SETS]:
            from gradcli.check.auto_inputs import value_spec

            text = value_spec(p, choice)
            value, rec = _from_spec(self.be, parse_spec(text), "", self.seed, self.dtype, p, "auto")
            args = list(base.args)
            args[i] = value
            try:
                why, _ = forward_problem(self.be, self.target.fn, args)
            except Exception as e:  # noqa: BLE001 -- that mode does not run here: say so, not an error
                why = f"forward raised {type(e).__name__}"
            if why is None:
                records = list(base.records)
                records[i] = dict(rec, inferred=base.records[i]["inferred"])
                out.append(Case(args, records, [dict(n) for n in base.not_checked]))
            else:
                base.not_checked.append({"input": p.name, "reason": f"{p.name}={text} not checked: {why.split(' (')[0]}"})
        return out


def _may_be_tensor(hint) -> bool:
    return hint is None or hint.kind in (None, "index", "mask")


def _domain_of(case: Case):
    for rec in case.records:
        if rec and rec.get("source") == "auto" and rec.get("type") == "tensor" and rec.get("spec"):
            spec = parse_spec(rec["spec"])
            if spec.dtype in (None, "float64", "float32", "float16") and spec.domain:
                return spec.domain
    return None
