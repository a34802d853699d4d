"""Automatic inputs: the parameters nobody gave a value, built from what forward's source says
(``infer.py``) and checked by running forward (``shape_search.py``), plus the second input sets (``more_sets.py``)
that exercise what the first leaves out (a None default as a tensor, the other string modes).

Every value built here is recorded with a SPEC that rebuilds it (``--input NAME=SPEC``, same
``--seed``): the ``reproduce:`` line works as printed. specs/check.md §2 is the contract.
"""
from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Optional

from gradcli.check import callable_params, environment, equal_sizes, shape_search
from gradcli.check.inputs import (AUTO_DOMAINS, UNSUITABLE_INPUT_ERRORS, Case, ForwardBroken, NoInputs, Spec,
                                  _from_spec, _record, format_domain, forward_problem, parse_spec)
from gradcli.check.more_sets import MoreSets
from gradcli.check.shape_search import Plan
from gradcli.check.skip_advice import spec_kind, suggested_spec
from gradcli.check.trials import backward_runs, cpu_seconds, slow_advice, too_slow
from gradcli.check.spec import format_value_spec

MAX_BACKWARD_CHECKS = 24  # plans whose forward ran but whose backward raised, before the search stops
SEARCH_SECONDS = 30.0  # forward's own CPU time over the shape search: a slow forward (an iterative solver) stops it
SMALL_SIZE = 2  # a slow forward is tried again with every size above this cut to it


class Builder(MoreSets):
    def __init__(self, target, be, params, specs, seed, dtype, base_shape):
        self.target, self.be, self.params, self.specs = target, be, params, specs
        self.seed, self.dtype, self.base_shape = seed, dtype, base_shape
        self.by_name = {p.name: p for p in params}
        self.backward_refused = None  # (Case, plain --shape tensors?, why) of the first plan whose backward raised
        self.backward_checks = 0
        self.first_refusal = None  # (exception, arguments) of the first plan forward raised at
        self.last_refusal = None  # ... and of the last one
        self.environment = None  # text of a "... is not initialized" exception forward raised (environment.py)
        self.group_started = False  # a single-process torch.distributed group was started for forward
        self.initialized = None  # the package's set-up called (initializers.py): its description, "" if none ran
        self.spent = 0.0  # CPU seconds forward and backward took over the search (not wall time: load-independent)
        self.taken = None  # (plans, domain, numbers_from) of the plan the search took

    # ----- the first input set ----------------------------------------------------------------
    def search(self, args, records, auto) -> Case:
        case = self._search(args, records, auto)
        slow = too_slow(self.be, self.target, case)
        if slow is None:
            return case
        smaller = self._smaller(args, records, auto)  # the same plan with small sizes: fewer evaluations
        again = too_slow(self.be, self.target, smaller) if smaller is not None else None
        if smaller is not None and again is None:
            return smaller
        raise NoInputs(slow_advice(slow, again, self.target.timeout))

    def _smaller(self, args, records, auto) -> Optional[Case]:
        """The plan taken with every tensor size (and size tuple) above SMALL_SIZE cut to it, if forward and
        backward run there; None otherwise."""
        if self.taken is None:
            return None
        plans, domain, numbers_from = self.taken
        shrunk = {}
        for name, plan in plans.items():
            if plan.kind == "tensor" and plan.shape and max(plan.shape) > SMALL_SIZE:
                shape = tuple(min(k, SMALL_SIZE) for k in plan.shape)
                plan = replace(plan, shape=shape, why=f"{plan.why or 'a shape forward accepts'}; small, as forward "
                               f"is slow at {'x'.join(map(str, plans[name].shape))}")
            elif plan.kind == "shape" and plan.value and max(plan.value) > SMALL_SIZE:
                plan = replace(plan, value=tuple(min(k, SMALL_SIZE) for k in plan.value))
            shrunk[name] = plan
        if shrunk == plans:
            return None
        case, _, _ = self._try(args, records, auto, shrunk, domain, numbers_from)
        return case

    def _search(self, args, records, auto) -> Case:
        names = [args[i][0].name for i in auto]
        hints = {n: self.by_name[n].hint for n in names}
        plans = shape_search.first_plans(hints, self.base_shape)
        self._stand_in_faithful(plans, hints)
        problems: dict = {}
        storm = True
        for domain in AUTO_DOMAINS:
            case, reason, everywhere = self._try(args, records, auto, plans, domain)
            if case is not None:
                return case
            storm = storm and everywhere
            problems.setdefault(reason, []).append(format_domain(domain))
        dims = "x".join(str(d) for d in self.base_shape)
        if storm:
            raise ForwardBroken(f"forward returns NaN/Inf for every element of its output, for {dims} inputs in "
                                f"every domain tried: {', '.join(format_domain(d) for d in AUTO_DOMAINS)}")
        guided = self._guided(args, records, auto, plans)
        if guided is not None:
            return guided
        for alternative in shape_search.alternatives(plans, hints, self.base_shape):
            if self.spent > SEARCH_SECONDS:
                raise NoInputs(f"cannot build inputs automatically: forward is slow ({self.spent:.0f} s of CPU over the "
                               f"plans tried, none of which fit; the search stops after {SEARCH_SECONDS:g} s). "
                               f"Give the inputs with --input NAME=SPEC (SPEC grammar: specs/check.md), or add a "
                               f"staticmethod example_inputs() to {self.target.name}")
            for domain in AUTO_DOMAINS:
                case, reason, _ = self._try(args, records, auto, alternative, domain)
                if case is not None:
                    return case
                if reason.startswith("forward raised"):
                    break  # the shapes do not fit: another domain will not help
        numbers = self._trailing_numbers(args, records, auto, plans)
        if numbers is not None:
            return numbers
        if self.backward_refused is not None and environment.missing_environment(self.backward_refused[2]):
            raise NoInputs(environment.environment_skip(self.backward_refused[2], "backward", self.target.name))
        if self.environment is not None:
            raise NoInputs(environment.environment_skip(self.environment, "forward", self.target.name))
        if self.backward_refused is not None:  # forward ran, backward raised on every plan
            case, plain, why = self.backward_refused
            if plain:  # plain --shape tensors, as gradcli always built: check them (backward's error is the result)
                return case
            specs = " ".join("--input " + shlex.quote(f"{r['name']}={r['spec']}")
                             for r in case.records if r and r.get("source") == "auto")
            raise NoInputs(f"cannot build inputs automatically: forward runs at {specs} but backward raises "
                           f"there ({why}), and at every other plan tried. Give the inputs with --input "
                           f"NAME=SPEC (SPEC grammar: specs/check.md), or add a staticmethod example_inputs() "
                           f"to {self.target.name}")
        self._raise_as_before(args, records, auto)
        found = "; ".join(f"{why} on {', '.join(domains)}" if len(domains) < len(AUTO_DOMAINS) else
                          f"{why} for {dims} inputs in every domain tried" for why, domains in problems.items())
        blockers = self._blockers(args, auto)
        if blockers and len(blockers) < len(names):
            rest = [n for n in names if n not in blockers]
            raise NoInputs(f"cannot build inputs automatically: {found}, nor with the other shapes tried. forward "
                           f"refuses the {' and '.join(blockers)} gradcli built: give "
                           f"{' '.join('--input ' + shlex.quote(f'{n}=SPEC') for n in blockers)} (for "
                           f"{'; '.join(spec_kind(self.by_name[n], plans[n], self.first_refusal[0]) for n in blockers)}; SPEC grammar: "
                           f"specs/check.md; {', '.join(rest)} will still be built automatically), or add a "
                           f"staticmethod example_inputs() to {self.target.name} returning "
                           f"({', '.join(p.name for p in self.params)})")
        callables = [n for n in names if plans[n].kind == "callable"]  # fn:tanh was tried: not offered again
        given = " ".join("--input " + shlex.quote(f"{n}={suggested_spec(self.by_name[n], plans[n])}")
                         for n in names if n not in callables)
        other = (f"{', '.join(callables)} (a callable other than the fn:tanh tried) with an inputs file "
                 f"(--inputs-from FILE.py)") if callables else ""
        raise NoInputs(f"cannot build inputs automatically: {found}, nor with the other shapes tried. Give "
                       f"{given + (' and ' if given and other else '') + other}"
                       f" (SPEC grammar: specs/check.md), or add a staticmethod example_inputs() to "
                       f"{self.target.name} returning ({', '.join(p.name for p in self.params)})")

    def _stand_in_faithful(self, plans, hints):
        """A skip when forward calls an automatic callable with arguments fn:tanh (of the last) ignores and a
        parameter whose gradient backward returns reaches the output through them (``dist(x1 / l, x2 / l)``):
        a verdict there would be of the stand-in, not of the Function (infer_calls._dropped)."""
        for name, plan in plans.items():
            dropped = [q for q in (hints[name].dropped if plan.kind == "callable" and hints[name] else ())
                       if (plans[q].kind == "tensor" and plans[q].requires_grad if q in plans else False)]
            if dropped:
                raise NoInputs(f"cannot build inputs automatically: forward calls {name} with several arguments, "
                               f"and {' and '.join(dropped)} reach{'es' if len(dropped) == 1 else ''} its output "
                               f"through one other than the last, which gradcli's stand-in (fn:{plan.value} of the "
                               f"last argument) ignores: a verdict would be about the stand-in, not "
                               f"{self.target.name}. Give {name} (a callable like the one the package passes) with "
                               f"an inputs file (--inputs-from FILE.py; specs/check.md §2a) or example_inputs()")

    def _guided(self, args, records, auto, plans) -> Optional[Case]:
        """Plans the exceptions forward raised ask for (guided.py), each from the refusal before it."""
        from gradcli.check import guided

        if self.backward_refused is not None and self.taken is None:  # forward ran, backward asked for numbers
            plan = guided.single_elements(plans, self.backward_refused[2]) \
                or guided.reduced_shapes(plans, self.backward_refused[2], hints={n: self.by_name[n].hint for n in plans}) \
                or equal_sizes.plan(plans, self.backward_refused[2])  # sizes of different inputs meet in backward
            for domain in AUTO_DOMAINS if plan is not None else ():
                case, reason, _ = self._try(args, records, auto, plan, domain)
                if case is not None:
                    return case
                if reason.startswith("forward raised"):
                    break
        refusal = self.first_refusal
        for _ in range(guided.ROUNDS):
            plan = (guided.guess(plans, refusal[0], self._blockers(args, auto, refusal))
                    or guided.float_indices(plans, refusal[0], {n: self.by_name[n].hint for n in plans})) \
                if refusal else None
            if plan is None:
                return None
            self.last_refusal = None
            for domain in AUTO_DOMAINS:
                case, reason, _ = self._try(args, records, auto, plan, domain)
                if case is not None:
                    return case
                if reason.startswith("forward raised"):
                    break
            plans, refusal = plan, self.last_refusal
        return None

    def _blockers(self, args, auto, refusal=None) -> list:
        from gradcli.check.skip_advice import blocking

        refusal = refusal or self.first_refusal
        if refusal is None:
            return []
        exc, _ = refusal
        try:
            return blocking(exc, [args[i][0].name for i in auto])
        except Exception:  # noqa: BLE001 -- advice only: without it, every parameter is named
            return []

    def _raise_as_before(self, args, records, auto):
        """Nothing worked. When forward, given plain ``--shape`` tensors everywhere (what gradcli tried
        before it read sources), raises something other than UNSUITABLE_INPUT_ERRORS, that exception is
        the result (error), as it was; a guess of ours that made forward raise never is. An assertion of
        forward's own refusing them is a skip quoting it (refusing_assert.py)."""
        plain = {args[i][0].name: Plan("tensor", shape=tuple(self.base_shape)) for i in auto}
        trial, _ = self.materialize(args, records, auto, plain, AUTO_DOMAINS[0])
        try:
            forward_problem(self.be, self.target.fn, trial)
        except UNSUITABLE_INPUT_ERRORS:
            pass
        except AssertionError as e:  # forward's own assert refuses what gradcli built: an inputs problem, a skip
            from gradcli.check.refusing_assert import assertion_skip

            raise NoInputs(assertion_skip(e, [args[i][0].name for i in auto], self.target)) from None
        except AttributeError as e:  # 'Tensor' object has no attribute 'model_slices': an object, not a tensor
            if environment.missing_attribute(e) is None:
                raise
            from gradcli.check.skip_advice import blocking

            raise NoInputs(environment.object_skip(e, self.params, blocking(e, [args[i][0].name for i in auto]),
                                                   self.target)) from None

    def _try(self, args, records, auto, plans, domain, numbers_from=None):
        """(Case or None, why not, whether every output element was non-finite). Any exception from
        forward means the plan does not fit."""
        trial, trial_records = self.materialize(args, records, auto, plans, domain, numbers_from)
        started = cpu_seconds()
        try:
            why, everywhere = forward_problem(self.be, self.target.fn, trial)
        except Exception as e:  # noqa: BLE001 -- a plan of ours that forward refuses
            self.spent += cpu_seconds() - started
            if environment.needs_process_group(e) and not self.group_started \
                    and environment.start_single_process_group():
                self.group_started = True  # a single-process group, as a user would start: try again
                return self._try(args, records, auto, plans, domain, numbers_from)
            if environment.missing_environment(str(e)) and self._initialize(e):
                return self._try(args, records, auto, plans, domain, numbers_from)
            if environment.missing_environment(str(e)) and self.environment is None:
                self.environment = f"{type(e).__name__}: {e}"
            if self.first_refusal is None:
                self.first_refusal = (e, trial)
            self.last_refusal = (e, trial)
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return None, f"forward raised {type(e).__name__}: {text}", False
        if why is not None:
            return None, "forward's output is NaN/Inf", everywhere
        if self.backward_checks >= MAX_BACKWARD_CHECKS:
            return None, "backward raised", False  # enough plans whose backward raised: stop looking
        raised: list = []
        ok, why = backward_runs(self.be, self.target.fn, trial, raised=raised)
        self.spent += cpu_seconds() - started
        if not ok and environment.missing_environment(why) and raised and self._initialize(raised[0]):
            return self._try(args, records, auto, plans, domain, numbers_from)
        if not ok:
            if environment.needs_process_group(RuntimeError(why)) and not self.group_started \
                    and environment.start_single_process_group():
                self.group_started = True  # backward's all_reduce needs a group, as forward's may: one process
                return self._try(args, records, auto, plans, domain, numbers_from)
            # forward fits but backward raises: perhaps our shapes (a per-row index, ...). Look further
            self.backward_checks += 1
            raised = self._raised_count(args, records, auto, plans, domain, numbers_from, why)
            if raised is not None:
                return raised, "", False
            if self.backward_refused is None:
                plain = all(p.kind == "tensor" and tuple(p.shape) == tuple(self.base_shape) for p in plans.values())
                self.backward_refused = (Case(trial, trial_records, []), plain and numbers_from is None, why)
            return None, "backward raised", False
        larger = self._larger_counts(args, records, auto, plans, domain, numbers_from, trial)
        if larger is not None:
            return larger, "", False
        not_checked = [{"input": r["name"], "reason": f"guessed the number {r['value']} for {r['name']}: forward "
                        f"refused tensors there; give --input {r['name']}=SPEC for another value"}
                       for r in trial_records if r and r.get("number")]
        if self.group_started:
            not_checked.append(dict(environment.WORLD_SIZE_ONE))
        if self.initialized:
            from gradcli.check.initializers import not_checked as initialized

            not_checked.append(initialized(self.initialized))
        self.taken = (plans, domain, numbers_from)
        return Case(trial, trial_records, not_checked), "", False

    def _initialize(self, exc) -> bool:
        """The package's own set-up the assert ``exc`` stopped at, called once (initializers.py)."""
        if self.initialized is not None:
            return False
        from gradcli.check.initializers import initialize

        self.initialized = initialize(exc) or ""
        return bool(self.initialized)

    def _larger_counts(self, args, records, auto, plans, domain, numbers_from, trial) -> Optional[Case]:
        """The plan with a guessed int raised (guided.larger_count) when backward, run twice on one forward as a
        check does, refuses the second pass naming it; None when it does not, or the raised plan fails too."""
        from gradcli.check import guided

        counts = [p.value or 0 for p in plans.values() if p.kind == "int" and (p.value or 0) < guided.LARGE_COUNT]
        if not counts:
            return None
        # a check runs backward more than twice on one forward: one pass more than a count (counts start at 2) shows it
        ok, why = backward_runs(self.be, self.target.fn, trial, times=min(4, max(2, max(counts) + 1)))
        return None if ok else self._raised_count(args, records, auto, plans, domain, numbers_from, why)

    def _raised_count(self, args, records, auto, plans, domain, numbers_from, why) -> Optional[Case]:
        from gradcli.check import guided

        plan = guided.larger_count(plans, why)
        if plan is None:
            return None
        case, _, _ = self._try(args, records, auto, plan, domain, numbers_from)
        return case

    def materialize(self, args, records, auto, plans, domain, numbers_from=None):
        """``args`` with the automatic parameters filled in from ``plans`` (float tensors from
        ``domain``); from position ``numbers_from`` of ``auto`` on, the guessed Python int 1."""
        trial, trial_records = list(args), list(records)
        shapes = {p.name: tuple(a.shape) for p, a in zip(self.params, args) if self.be.is_tensor(a)}
        shapes.update({n: p.shape for n, p in plans.items() if p.kind == "tensor"})
        for position, i in enumerate(auto):
            p, key = args[i]
            if numbers_from is not None and position >= numbers_from:
                trial[i] = 1
                trial_records[i] = dict(_record(self.be, p.name, 1, source="auto", spec="int(1)"), number=True)
                continue
            plan = plans[p.name]
            spec = self.plan_spec(plan, p, shapes, domain)
            trial[i], trial_records[i] = _from_spec(self.be, spec, key, self.seed, self.dtype, p, source="auto")
            if plan.why:
                trial_records[i]["inferred"] = plan.why
        return callable_params.bind(self.be, self.params, trial), trial_records  # fn:sinh@w holds w

    def plan_spec(self, plan: Plan, param, shapes: dict, domain) -> Spec:
        hint = param.hint
        if plan.kind in ("int", "float", "bool", "str", "shape"):
            text = value_spec(param, plan.value)
            return parse_spec(text)
        if plan.kind == "callable":
            return parse_spec(f"fn:{plan.value}")
        if plan.kind == "object":
            return parse_spec("default()")
        if plan.kind == "none":
            return parse_spec("none")
        if plan.kind == "index":
            kind, of = plan.value if isinstance(plan.value, tuple) else (hint.index_kind, hint.index_of)
            shape, bounds = shape_search.index_layout(kind, shapes.get(of), self.base_shape,
                                                      hint.index_dim if plan.value == "one" else None)
            return Spec("tensor", "", shape=shape, dtype="int64", domain=bounds)
        if plan.kind == "mask":
            return Spec("tensor", "", shape=shapes.get(hint.mask_of) or self.base_shape, dtype="bool")
        shape = tuple(plan.shape)
        structure = plan.structure if len(shape) >= 2 and shape[-1] == shape[-2] else None
        if structure is not None:  # "4x4@sym" rebuilds it: always from (-2, 2)
            domain = (-2.0, 2.0)
        return Spec("tensor", "", shape=shape, dtype=self.dtype, domain=domain,
                    requires_grad=plan.requires_grad, structure=structure)

    def _trailing_numbers(self, args, records, auto, plans) -> Optional[Case]:
        """forward(ctx, x, dim) with nothing in the source saying so: the last automatic parameters
        (as few as work) become the guessed int 1, the others as planned. Each is listed in
        ``not_checked``. None if that does not make forward run either."""
        for cut in range(len(auto) - 1, 0, -1):
            for domain in AUTO_DOMAINS:
                trial, trial_records = self.materialize(args, records, auto, plans, domain, numbers_from=cut)
                try:
                    why, _ = forward_problem(self.be, self.target.fn, trial)
                except Exception:  # noqa: BLE001 -- any exception: numbers there do not work (x @ 1, ...)
                    break
                if why is None:
                    case, _, _ = self._try(args, records, auto, plans, domain, numbers_from=cut)
                    return case
        return None


def value_spec(param, value) -> str:
    """The SPEC that gives ``value`` for ``param`` again: plain (``1``, ``1.5``) where a NUMBER is a
    Python number for this parameter, else the cast form (``int(1)``)."""
    from gradcli.check.inputs import python_number

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        plain = repr(value)
        again = python_number(param, parse_spec(plain).value)
        if again is not None and type(again) is type(value) and again == value:
            return plain
    return format_value_spec(value)
