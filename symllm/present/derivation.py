"""Derivations and reports: assembled and evaluated here, laid out by :mod:`symllm.present.render`.

A :class:`Derivation` is one total worked through: its symbols, one equation per sub-term, their sum,
the collected closed form and, for a config, the numbers substituted and evaluated. A :class:`Report`
is a whole model: configuration, parameters by component, FLOPs and memory of a
:class:`~symllm.costs.workloads.Workload`, with their derivations. Everything is computed here (formulas
through :mod:`symllm.costs.phases`, the report's tables through :func:`symllm.arch.resolved.params` and
:func:`symllm.costs.phases.workload` with the report's one workload, so a report shows the numbers
``symllm count --json`` prints); the templates are handed plain data and wrapped formulas.

>>> derive("attention").render("text").splitlines()[-1].strip()
'= 2*d*d_h*(n_h + n_kv)'
>>> derive("attention", kind="mqa").closed_latex()
'2 \\\\, d \\\\, d_h \\\\, \\\\left(n_h + 1\\\\right)'
>>> derive("attention", notation={"d": r"d_\\mathrm{model}"}).closed_latex()
'2 \\\\, d_\\\\mathrm{model} \\\\, d_h \\\\, \\\\left(n_h + n_{kv}\\\\right)'
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from symllm.arch import resolved
from symllm.arch.algebra import rename
from symllm.costs import checks
from symllm.costs import phases as costs
from symllm.costs import hardware
from symllm.costs import parallel
from symllm.arch import symbols as S
from symllm.arch.components import Component, LayerKind, collected, component, model
from symllm.errors import SymllmError
from symllm.validate import choice, short, with_list
from symllm.numbers.cache import cache_get, cache_put, key as cache_key
from symllm.numbers.kernels import TableKernel, evaluate, fingerprint
from symllm.present.format import REPORT_FORMATS, grouped
from symllm.present.render import (EXTENSIONS, FORMATS, QUANTITIES, Formula, Safe, label, math_delimiters, num_latex,
                     render_template)
from symllm.present.render import standalone as standalone_document
from symllm.present.render import notation as notation_of
from symllm.costs.workloads import Workload

__all__ = ["OPTIONS", "Derivation", "Report", "derive", "report", "repr_latex", "repr_markdown"]

#: options of derive() beyond the :class:`~symllm.costs.workloads.Workload` fields, with their defaults: which
#: FLOPs (phase, bucket, MACs) and which memory kind a derivation shows (a report shows them all)
OPTIONS = {"phase": "prefill", "memory": "inference", "macs": False, "bucket": "matmul"}
#: derive()'s roofline quantities (symllm.costs.hardware): the ridge point P / B_mem, and the batch at which a
#: decode step turns compute-bound; evaluated on a named accelerator (``gpu``)
ROOFLINE = ("ridge", "decode_batch")
#: the attention variants derive() writes formulas for: what n_kv becomes
_KINDS = {"gqa": None, "mha": S.n_h, "mqa": sp.S.One}


#: the default prefix of the ``\label`` on each numbered equation symllm writes (:func:`equation_label`)
LABEL_PREFIX = "eq:symllm"
_LABEL_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9:._-]{0,63}")


def equation_label(prefix: str | None, model: str | None, component: str, quantity: str, options=(),
                   kind: str = "") -> str:
    """The ``\label`` of a derivation's numbered equation (its total), stable and unique per question:
    ``<prefix>:<model>:<component>:<quantity>[:<phase or memory kind>][:elementwise][:macs]``, the model
    ``generic`` (or the attention variant, ``gqa``) where no config is given; the model's name is kept to
    letters, digits, ``.`` and ``-`` (any other character becomes ``-``). ``prefix`` (default
    :data:`LABEL_PREFIX`): letters, digits and ``:._-``, starting with a letter (``--label-prefix``); two
    workloads of one model in one paper need two prefixes.

    >>> equation_label(None, "llama3.1-8b", "attention", "params")
    'eq:symllm:llama3.1-8b:attention:params'
    >>> equation_label("eq:paper", "my model", "model", "flops", {"phase": "decode", "bucket": "matmul"})
    'eq:paper:my-model:model:flops:decode'
    >>> equation_label("1x", None, "model", "params")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: label_prefix: '1x' is not a LaTeX label prefix (a letter, then letters, digits, :._-)
    """
    prefix = LABEL_PREFIX if prefix is None else prefix
    if not isinstance(prefix, str) or not _LABEL_PREFIX.fullmatch(prefix):
        raise SymllmError(f"label_prefix: {short(prefix, 30)} is not a LaTeX label prefix "
                          "(a letter, then letters, digits, :._-)")
    opts = dict(options)
    detail = []
    if quantity == "flops":
        detail = ([opts.get("phase", "prefill")] + (["elementwise"] if opts.get("bucket", "matmul") != "matmul" else [])
                  + (["macs"] if opts.get("macs") else []))
    elif quantity == "memory":
        detail = [opts.get("memory", "inference")]
    who = re.sub(r"[^A-Za-z0-9.-]", "-", model) if model else (kind.lower() or "generic")
    return ":".join([prefix, who, component, quantity, *detail])


# --------------------------------------------------------------------------- cached between processes

def _mul(*args, **options):
    """``Mul`` as ``srepr`` wrote it, but a negative coefficient is one number again: ``srepr`` writes
    ``-2*L`` as ``Mul(Integer(-1), Integer(2), L)``, which unevaluated prints ``-1*2*L``."""
    if len(args) > 1 and args[0] == -1 and args[1].is_Number:
        args = (-args[1], *args[2:])
    return sp.Mul(*args, **options)


#: what an ``srepr`` read back may call: SymPy's own expression classes (``Symbol``, ``Integer``, ``Mul``, ...),
#: never a function (``sympify``, ``parse_expr``, ``lambdify`` would evaluate strings)
_SREPR_CALLS = frozenset(name for name, value in vars(sp).items()
                         if isinstance(value, type) and issubclass(value, sp.Basic))
_SREPR_NODES = (ast.Expression, ast.Call, ast.Name, ast.Load, ast.Constant, ast.keyword, ast.Tuple, ast.List,
                ast.UnaryOp, ast.USub)


def _rebuilt(text: str) -> sp.Basic:
    """The expression whose ``srepr`` is ``text``, rebuilt node by node as it was (no evaluation, so the
    tree, and what it prints, is the one ``srepr`` was taken of). ``text`` is data: only calls of SymPy's
    expression classes on literals are accepted (ValueError otherwise), so a cache entry can at worst
    give a wrong formula, which its digest catches (:mod:`symllm.numbers.cache`).

    >>> _rebuilt("Mul(Integer(2), Symbol('d'))")
    2*d
    >>> _rebuilt("Symbol('d').__class__")
    Traceback (most recent call last):
    ...
    ValueError: srepr: Attribute is not an expression's srepr
    """
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _SREPR_NODES):
            raise ValueError(f"srepr: {type(node).__name__} is not an expression's srepr")
        if isinstance(node, ast.Name) and node.id not in _SREPR_CALLS:
            raise ValueError(f"srepr: {node.id!r} is not a SymPy expression class")
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            raise ValueError("srepr: a call of something other than a SymPy expression class")
    with sp.evaluate(False):
        out = eval(compile(tree, "<srepr>", "eval"), {**{k: getattr(sp, k) for k in _SREPR_CALLS}, "Mul": _mul,  # noqa: S307
                                                      "__builtins__": {}})
    if not isinstance(out, sp.Basic):
        raise TypeError(type(out).__name__)
    return out


def _collected(total: sp.Expr) -> sp.Expr:
    """:func:`symllm.arch.components.collected` of ``total`` (a ``factor``, tens of milliseconds), kept in
    :func:`symllm.numbers.cache.cache_dir` by the ``srepr`` of ``total`` and a hash of symllm's source files,
    so a report's closed forms are factored once, not in every process. A miss or a damaged entry
    factors again.

    >>> _collected(2 * S.d * S.d_h * S.n_h + 2 * S.d * S.d_h * S.n_kv)
    2*d*d_h*(n_h + n_kv)
    """
    key = cache_key(fingerprint(total))
    hit = cache_get("collected", key)
    if hit is not None and len(hit) == 1:
        try:
            return _rebuilt(hit[0])
        except Exception:  # noqa: BLE001 (a damaged entry: factored again below)
            pass
    out = collected(total)
    cache_put("collected", key, (sp.srepr(out),))
    return out


def _workload_numbers(spec, work: Workload) -> dict:
    """:func:`symllm.costs.phases.workload` of ``spec`` and ``work``, from a table kernel an earlier process
    compiled when :func:`symllm.numbers.cache.cache_dir` holds one for this structure and these training
    options (building the closed forms is most of a report's time); keyed like :mod:`symllm.studies.quick`'s
    entries. On a miss the kernel is compiled from the closed forms and stored (one kernel for the whole
    table: evaluating each quantity on its own compiled each a second time). The groups are the
    composed quantities' (no ``time`` or ``weight_format``: the report reads those elsewhere).

    >>> w = _workload_numbers(resolved.spec("llama3.1-8b"), Workload.of(seq=4096))
    >>> w == costs.workload("llama3.1-8b", seq=4096)
    True
    """
    key = cache_key(spec.shape(), work.shape())
    checks.check(spec, work)
    vals = costs.values(spec, work)  # β_w of a weight format included
    hit = cache_get("workload", key)
    table = None
    if hit is not None and len(hit) == 3:
        try:
            by_name = {sym.name: sym for sym in vals}
            table = TableKernel.from_source(tuple(by_name[a] for a in json.loads(hit[0])), tuple(json.loads(hit[1])),
                                            hit[2])
        except Exception:  # noqa: BLE001 (a damaged entry: compiled again below)
            table = None
    if table is None:
        exprs = costs.quantities(spec.model(work.attention), work)
        table = TableKernel({f"{group}/{k}": e for group, terms in exprs.items() for k, e in terms.items()})
        cache_put("workload", key, (json.dumps([a.name for a in table.args]), json.dumps(table.names), table.source))
    numbers = {"workload": work.to_dict(), "flops": {}, "memory": {}}
    for name, v in table(vals).items():
        group, k = name.split("/", 1)
        numbers.setdefault(group, {})[k] = v.numerator if type(v) is Fraction and v.denominator == 1 else v
    return numbers


# --------------------------------------------------------------------------- derivations

def _substituted(expr, vals) -> Formula:
    """``expr`` with every symbol replaced by a stand-in that prints as its number (not evaluated)."""
    expr = sp.sympify(expr)
    given = tuple(sorted(((sym, type(vals[sym]), vals[sym]) for sym in expr.free_symbols if sym in vals),
                         key=lambda x: x[0].name))
    return _substituted_at(expr, given)


@lru_cache(maxsize=512)
def _substituted_at(expr, given: tuple) -> Formula:
    """:func:`_substituted` once per expression and values (a report shows a sub-term more than once);
    ``given``: (symbol, type, value) of each free symbol that has a value. The terms of a sum that are
    zero at these values are left out (a layer count of 0 made ``2·32·1·2·128·0·8`` a term)."""
    stand_ins, numbers = {}, {}
    for symbol, _, value in given:
        dummy = sp.Dummy(symbol.name)
        stand_ins[symbol] = dummy
        numbers[dummy] = value
    return Formula(_without_zeros(rename(expr, stand_ins), numbers), numbers)


def _without_zeros(expr: sp.Basic, numbers: dict) -> sp.Basic:
    """``expr`` less the terms of its sums (at any depth) that are zero when each stand-in takes its
    number in ``numbers``; an argument of a max or min that is zero is kept (it can decide it).

    >>> a, b = sp.Dummy("a"), sp.Dummy("b")
    >>> _without_zeros(2 * a + 3 * a * b + b, {a: 5, b: 0})
    2*_a
    """
    exact = {k: sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else sp.sympify(v)
             for k, v in numbers.items()}

    def zero(e) -> bool:
        return e.xreplace(exact) == 0

    def walk(e):
        if e.is_Atom:
            return e
        if isinstance(e, sp.Add):
            kept = [walk(a) for a in e.args if not zero(a)]
            return sp.S.Zero if not kept else kept[0] if len(kept) == 1 else sp.Add(*kept, evaluate=False)
        args = tuple(walk(a) for a in e.args)
        return e if args == e.args else e.func(*args, evaluate=False)

    return sp.S.Zero if zero(expr) else walk(expr)


def _laid_out(default: str, context: dict, names, fmt: str, standalone: bool, title: str, template,
              template_dir) -> str:
    """``context`` through ``template`` (else the ``default`` template); a whole LaTeX document with
    ``title`` when ``standalone``."""
    names = dict(names)
    body = render_template(template or default, context, template_dir=template_dir, names=names)
    if standalone and fmt == "latex":
        return standalone_document(body, title, template_dir=template_dir, names=names)
    return body


@dataclass(frozen=True)
class Derivation:
    """How a component's total is derived: its symbols, one equation per sub-term, their sum, the
    collected closed form and, for a config, the numbers substituted and evaluated.

    Render it with :meth:`render`; in a notebook it displays as typeset math.

    >>> dv = derive("attention", config="llama3.1-8b")
    >>> dv.value, [name for name, _ in dv.terms], dv.term_values[0]
    (41943040, ['wq', 'wk', 'wv', 'wo'], 16777216)
    """

    #: component name (``attention``, ``model``, …)
    component: str
    #: ``params``, ``flops`` or ``memory``
    quantity: str
    #: ``GQA``, ``MHA`` or ``MQA`` (attention variant the formulas are written for)
    kind: str
    #: (leaf path, expression) of each non-zero sub-term, in model order
    terms: tuple
    #: leaf paths contributing nothing to this quantity (RoPE has no parameters)
    zero_terms: tuple
    #: the total as SymPy sums it, and its collected form
    total: sp.Expr
    closed: sp.Expr
    #: (symbol, expression) definitions used, e.g. Meta's d_ff rounding
    definitions: tuple
    #: the model's name and symbol -> number (None without a config)
    model: str | None = None
    values: dict | None = None
    #: the evaluated total and each sub-term's value, in the order of ``terms`` (None, () without a config)
    value: object = None
    term_values: tuple = ()
    #: the notation (symbol -> LaTeX) every output uses
    names: tuple = ()
    #: parameters: the collected closed form of those one token uses, and its value, where that differs
    #: from the total (a mixture of experts: the k routed experts of n_e); else None
    active: sp.Expr | None = None
    active_value: object = None
    #: the workload FLOPs and memory were derived for, and derive()'s options (None, () for parameters)
    workload: Workload | None = None
    options: tuple = ()
    #: what β_w means under a weight format (its name, and where it was read: --weight-format or the config's
    #: quantization_config); None: the dtype's bytes
    weights: str | None = None

    def meaning(self, sym) -> str:
        """A symbol's meaning in this derivation (β_w names its weight format)."""
        if sym == S.beta_w and self.weights:
            return self.weights
        return S.SYMBOLS[sym].description

    def symbols(self) -> list[sp.Symbol]:
        """The symbols the derivation uses, in symllm's table order."""
        used = set(self.total.free_symbols) | (self.active.free_symbols if self.active is not None else set())
        for _, e in self.terms:
            used |= e.free_symbols
        for sym, e in self.definitions:
            used |= e.free_symbols | {sym}
        return [sym for sym in S.SYMBOLS if sym in used]

    def closed_latex(self) -> str:
        """The collected closed form in LaTeX (with this derivation's notation)."""
        return Formula(self.closed).latex(dict(self.names))

    def result(self) -> tuple[str, str | None]:
        """What the total is called (``inference peak``, ``prefill``, ``ridge``; the component for
        parameters) and, when that is a quantity of one component, the component.

        >>> derive("model", "memory", memory="training_peak").result()
        ('training peak', None)
        >>> derive("attention", "flops", phase="decode").result()
        ('decode', 'attention')
        """
        opts = dict(self.options)
        if self.quantity == "flops":
            name = {"training": "training step"}.get(opts["phase"], opts["phase"])
            name += (" element-wise" if opts["bucket"] != "matmul" else "") + (" MACs" if opts["macs"] else "")
        elif self.quantity == "memory":
            name = opts["memory"].replace("_", " ")
        elif self.quantity in ("comm", "ridge", "decode_batch"):
            name = {"comm": "training step", "ridge": "ridge", "decode_batch": "compute-bound"}[self.quantity]
        else:
            return self.component, None
        return name, None if self.component == "model" else self.component

    def context(self, fmt: str = "latex", flavor: str = "github", *, glossary: bool = True,
                definitions: bool = True, label_prefix: str | None = None) -> dict:
        """What the templates are handed (plain data and numbers, formulas wrapped in :class:`Formula`);
        ``glossary`` and ``definitions`` False leave out the symbols' list and the definitions (a report
        shows each once); ``eqlabel`` is the numbered equation's ``\label`` (:func:`equation_label`)."""
        title, letter = QUANTITIES[self.quantity]
        result, of = self.result()
        vals = self.values or {}
        evaluated = self.values is not None
        values = self.term_values if evaluated else (None,) * len(self.terms)
        terms = [{"name": name, "label": label(letter, name.rsplit("/", 1)[-1]), "expr": Formula(e),
                  "subst": _substituted(e, vals) if evaluated else None, "value": v}
                 for (name, e), v in zip(self.terms, values)]
        definitions = [{"symbol": Formula(sym), "name": sym.name, "expr": Formula(e),
                        "subst": _substituted(e, vals) if evaluated else None,
                        "value": vals.get(sym) if evaluated else None} for sym, e in self.definitions
                       if definitions]
        used = self.symbols()
        symbols = [{"symbol": Formula(sym), "name": sym.name, "code": S.SYMBOLS[sym].code,
                    "meaning": self.meaning(sym),
                    "value": vals.get(sym) if evaluated else None} for sym in used if glossary]
        return {
            "component": self.component, "quantity": self.quantity, "quantity_title": title,
            "kind": self.kind if {S.n_kv, S.n_h} & set(used) else "", "label": label(letter, result, of),
            "result": result,
            "letter": letter, "symbols": symbols, "terms": terms, "zero_terms": list(self.zero_terms),
            "sum": Formula(self.total), "closed": Formula(self.closed),
            "definitions": definitions, "model": self.model, "evaluated": evaluated,
            "subst": _substituted(self.closed, vals) if evaluated else None, "value": self.value,
            "per_block": self.component in ("block", "attention", "feed_forward", "rope") and evaluated,
            "active": Formula(self.active) if self.active is not None else None, "active_value": self.active_value,
            "active_subst": _substituted(self.active, vals) if evaluated and self.active is not None else None,
            "math": math_delimiters(flavor), "format": fmt,
            "eqlabel": Safe(equation_label(label_prefix, self.model, self.component, self.quantity, self.options,
                                           self.kind if {S.n_kv, S.n_h} & set(used) else "")),
        }

    def render(self, fmt: str = "latex", *, standalone: bool = False, template_dir=None,
               template: str | None = None, flavor: str = "github", glossary: bool = True,
               definitions: bool = True, label_prefix: str | None = None) -> str:
        """The derivation as ``text``, ``pretty``, ``latex`` (an ``align`` environment whose one numbered
        equation, the total, carries ``\label{<label_prefix>:...}``: :func:`equation_label`) or
        ``markdown``; ``glossary`` and ``definitions``: see :meth:`context`.

        >>> print(derive("embedding").render("latex").split("\\n")[1])
        \\begingroup\\allowdisplaybreaks\\begin{align}
        """
        choice("format", fmt, FORMATS)
        return _laid_out(f"derive.{EXTENSIONS[fmt]}.j2",
                         self.context(fmt, flavor, glossary=glossary, definitions=definitions,
                                      label_prefix=label_prefix), self.names, fmt,
                         standalone, f"{self.component}: {QUANTITIES[self.quantity][0]}", template, template_dir)

    def __str__(self):
        return self.render("text")

    def _repr_latex_(self):
        return repr_latex(self)

    def _repr_markdown_(self):
        return self.render("markdown", flavor="jupyter")


def _expressions(comp: Component, quantity: str, work: Workload, options: dict):
    """The sub-terms and the total of ``quantity`` (one of :data:`QUANTITIES`, checked by :func:`derive`, or
    ``active``) for ``comp``; FLOPs and memory come from :mod:`symllm.costs.phases` (sub-terms: the leaves for
    FLOPs, the memory kinds for memory)."""
    if quantity in ("params", "active"):  # active: the parameters one token uses (MoE: k of n_e experts)
        return comp.breakdown(quantity), comp.total(quantity)
    bare = comp.replace(definitions=())  # d_ff stays a symbol; its definition is shown on its own
    if quantity in ROOFLINE:
        if quantity == "ridge":
            expr = hardware.ridge()
        elif comp.name != "model":
            raise SymllmError(f"component: decode_batch is the whole model's, not {comp.name!r}")
        else:
            expr = hardware.decode_batch(costs.flops(bare, "decode"), hardware.bytes_moved(bare, "decode"))
        return {quantity: expr}, expr
    if quantity == "comm":  # bytes one GPU sends per training step under tp/pp/dp/sp (symllm.costs.parallel)
        if comp.name != "model":
            raise SymllmError(f"component: comm is the whole model's, not {comp.name!r}")
        checks.check(bare, work)
        leaves = parallel.comm(bare, work.sp, work.recompute, work.zero_stage)
        return dict(leaves), sum(leaves.values(), sp.S.Zero)
    if quantity == "flops":
        opts = dict(bucket=options["bucket"], macs=options["macs"], recompute=work.recompute)
        own = "flops" if options["bucket"] == "matmul" else "elementwise"
        leaves = {path: costs.flops(Component(path.rsplit("/", 1)[-1], **{own: e}), options["phase"], **opts)
                  for path, e in comp.breakdown(own).items()}
        return leaves, costs.flops(bare, options["phase"], **opts)
    opts = dict(zero_stage=work.zero_stage, recompute=work.recompute, stack=work.stack, optimizer=work.optimizer)
    if options["memory"] == "training_peak":  # its parts: states held, activations or the step's largest moment
        if bare.name != "model":
            raise SymllmError(f"kind: training_peak is the whole model's (it holds the loss), not {bare.name!r}")
        if work.lora_rank is not None:  # LoRA's training peak, as count's (symllm.costs.finetune): its parts
            from symllm.costs import finetune
            forms = finetune.closed_forms(bare, work)
            leaves = {k: forms[k] for k in finetune.MEMORY_KEYS if k != "lora_total"}
            return leaves, forms["lora_total"]
        leaves = costs.training_peak_parts(bare, work.stack, work.zero_stage, bool(work.recompute), work.optimizer)
        return dict(leaves), sum(leaves.values(), sp.S.Zero)
    kinds = ("weights", "kv_cache") if options["memory"] == "inference" else (options["memory"],)
    leaves = {k: costs.memory(bare, k, **opts) for k in kinds}
    return leaves, costs.memory(bare, options["memory"], **opts)


def _component_for(name: str, spec, work: Workload):
    """The component ``name`` as it sits in the spec's model (or the default model) under the workload's
    attention convention, and the model's definitions (Meta's ``d_ff`` rounding)."""
    if spec is not None:
        whole = spec.model(work.attention)
        return component(name, whole), whole.definitions
    try:  # the general model that has the component: the dense one, or for the MoE parts one with experts
        whole = model(causal=work.causal)
        return component(name, whole), whole.definitions
    except SymllmError:
        whole = model(causal=work.causal, kinds=(LayerKind(ffn="moe"),))
        return component(name, whole), whole.definitions


def _symbolic(name: str, quantity: str, kind_key: str, spec, work: Workload, options: dict) -> tuple:
    """The formulas of a derivation: ``(leaves, total, closed, definitions)`` (sub-terms by leaf path,
    their sum, its collected form, the definitions it uses). Building them (the component tree, the
    costs, a ``factor``) is most of a derivation's time, so they are kept in
    :func:`symllm.numbers.cache.cache_dir` (as ``srepr``, rebuilt node by node) by everything they depend on:
    the spec's and the workload's shape (their fields marked ``shapes``), the component, the quantity, the
    attention variant and derive()'s options, with a hash of symllm's source files. A miss or a damaged entry builds them.

    >>> leaves, total, closed, _ = _symbolic("attention", "params", "gqa", None, Workload(), OPTIONS)
    >>> list(leaves)[:2], closed
    (['wq', 'wk'], 2*d*d_h*(n_h + n_kv))
    """
    try:
        json.dumps(list(options.values()))
    except TypeError:  # an option JSON cannot hold: not cached
        key = None
    else:
        key = cache_key(spec.shape() if spec is not None else None, name, quantity, kind_key, work.shape(),
                        sorted(options.items()))
    if key is not None and key in _SYMBOLIC:  # this process built or read them already
        leaves, total, closed, definitions = _SYMBOLIC[key]
        return dict(leaves), total, closed, definitions
    hit = cache_get("derive", key) if key is not None else None
    if hit is not None and len(hit) == 1:
        try:
            data = json.loads(hit[0])
            out = ({k: _rebuilt(v) for k, v in data["leaves"]}, _rebuilt(data["total"]),
                   _rebuilt(data["closed"]), tuple((_rebuilt(a), _rebuilt(b)) for a, b in data["definitions"]))
            _keep(key, out)
            return dict(out[0]), *out[1:]
        except Exception:  # noqa: BLE001 (a damaged entry: built again below)
            pass
    comp, definitions = _component_for(name, spec, work)
    leaves, total = _expressions(comp, quantity, work, options)
    swap = {} if _KINDS[kind_key] is None else {S.n_kv: _KINDS[kind_key]}
    leaves = {k: sp.sympify(v).subs(swap) for k, v in leaves.items()}
    total = sp.sympify(total).subs(swap)
    used = set(total.free_symbols).union(*(v.free_symbols for v in leaves.values() if v != 0))
    definitions = tuple((sym, e) for sym, e in definitions if sym in used)
    closed = _collected(total)
    if key is not None:
        cache_put("derive", key, (json.dumps({
            "leaves": [[k, sp.srepr(v)] for k, v in leaves.items()], "total": sp.srepr(total),
            "closed": sp.srepr(closed), "definitions": [[sp.srepr(a), sp.srepr(b)] for a, b in definitions]}),))
        _keep(key, (leaves, total, closed, definitions))
    return dict(leaves), total, closed, definitions


#: :func:`_symbolic`'s formulas by their cache key, for this process (a report in two formats, or the same
#: sub-derivation in several reports, read and rebuilt its entries again each time); at most 512 kept
_SYMBOLIC: dict = {}


def _keep(key: str, formulas: tuple) -> None:
    if len(_SYMBOLIC) >= 512:
        _SYMBOLIC.clear()
    _SYMBOLIC[key] = formulas


def _derive(name: str, quantity: str, kind: str | None, spec, names: dict, work: Workload,
            options: dict) -> Derivation:
    """derive() once its arguments are resolved: a :class:`~symllm.arch.specs.Spec` (or None), the notation,
    one :class:`Workload` and derive()'s options."""
    kind_key = (kind or "gqa").lower()
    if kind_key not in _KINDS:
        raise SymllmError(f"kind: unknown {kind!r} (gqa, mha, mqa)")
    if spec is not None and kind is not None and kind_key != "gqa" and spec.attention_kind.lower() != kind_key:
        raise SymllmError(f"kind: {spec.name} is {spec.attention_kind} (n_kv_heads {spec.n_kv_heads}), "
                          f"not {kind_key.upper()}")
    leaves, total, closed, definitions = _symbolic(name, quantity, kind_key, spec, work, options)
    terms = tuple((k, v) for k, v in leaves.items() if v != 0)
    vals = costs.values(spec, work) if spec is not None else None
    if quantity in ROOFLINE:  # numbers on a named accelerator only (the ridge point needs no model)
        vals = None if hardware.of(work) is None else work.values() if quantity == "ridge" else vals
    if quantity == "decode_batch" and vals is not None and not hardware.decode_batch_exists(total, vals):
        raise SymllmError(f"decode_batch: memory-bound at any batch on {work.gpu} at t = {work.context:,}")
    shown_kind = kind_key.upper() if kind is not None else spec.attention_kind if spec is not None else "GQA"
    active = _symbolic(name, "active", kind_key, spec, work, options)[2] if quantity == "params" else None
    if active is not None and sp.expand(active - closed) == 0:
        active = None
    return Derivation(
        active=active, active_value=evaluate(active, vals) if vals is not None and active is not None else None,
        component="feed_forward" if name == "swiglu" else name, quantity=quantity, kind=shown_kind,
        terms=terms, zero_terms=tuple(k for k, v in leaves.items() if v == 0), total=total,
        closed=closed, definitions=definitions,
        model=spec.name if spec is not None else None, values=vals,
        value=evaluate(total, vals) if vals is not None else None,
        term_values=tuple(evaluate(e, vals) for _, e in terms) if vals is not None else (),
        names=tuple(names.items()), workload=work if quantity != "params" else None,
        options=tuple(options.items()) if quantity != "params" else (), weights=_weights_meaning(spec, work))


def _weights_meaning(spec, work: Workload) -> str | None:
    """β_w's meaning under a weight format: given (``--weight-format``, which overrides the config's), or
    read from the config's ``quantization_config`` (symllm.arch.quantization); None without one."""
    stated = spec.config.weight_format if spec is not None else None
    if work.weight_format is not None:
        over = f", overriding the config's {stated}" if stated and stated != work.weight_format else ""
        return f"bytes per weight in {work.weight_format} (--weight-format{over})"
    if stated is not None:
        return f"bytes per weight in {stated} (read from the config's quantization_config)"
    return None


def derive(component: str = "model", quantity: str = "params", *, kind: str | None = None, config=None,
           notation=None, vocab_size: int | None = None, **workload) -> Derivation:
    """The derivation of ``quantity`` (``params``, ``flops``, ``memory``) for ``component``
    (``attention``, ``feed_forward``, ``model``, …; see :data:`symllm.arch.layers.COMPONENTS`).

    ``kind`` writes the attention for ``"mha"`` (``n_kv = n_h``), ``"mqa"`` (``n_kv = 1``) or
    ``"gqa"`` (the general form, the default). With ``config`` (a preset name, a path, a
    :class:`~symllm.arch.config.ModelConfig` or a :class:`~symllm.arch.specs.Spec`) the structure is the config's
    (tying, biases, Meta's ``d_ff`` rounding) and the numbers are substituted and evaluated.
    ``workload``: the :class:`~symllm.costs.workloads.Workload` fields (``batch``, ``seq``, ``gen``,
    ``context``, ``dtype``, ``attention``, …; ``None`` is "not given") and :data:`OPTIONS` (``phase``,
    ``memory`` (the kind), ``macs``, ``bucket``) choose what FLOPs and memory count.

    >>> derive("feed_forward", config="llama3.1-8b").value
    176160768
    >>> dv = derive("model", "flops", config="llama2-7b", phase="decode", context=4096)
    >>> dv.value == costs.workload("llama2-7b", context=4096)["flops"]["decode_token"] == 15362162688
    True
    >>> derive("attention", kind="mha", config="llama3.1-8b")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: kind: llama3.1-8b is GQA (n_kv_heads 8), not MHA
    """
    choice("quantity", quantity, QUANTITIES)  # ("active" is a params derivation's second total, not its own)
    known = (*OPTIONS, *Workload.names())
    unknown = sorted(set(workload) - set(known))
    if unknown:
        raise SymllmError(with_list(f"workload: unknown option {short(unknown[0], 20)} (known: ", known,
                                    see="symllm derive --help", near=unknown[0]))
    options = {**OPTIONS, **{k: v for k, v in workload.items() if k in OPTIONS and v is not None}}
    work = Workload.of(**{k: v for k, v in workload.items() if k not in OPTIONS})
    spec = resolved.spec(config, vocab_size=vocab_size) if config is not None else None
    if spec is not None:  # too many stages, expert parallelism its experts do not allow, a window's limit
        checks.check(spec, work)
    return _derive(component, quantity, kind, spec, notation_of(notation), work, options)


# --------------------------------------------------------------------------- reports

@dataclass(frozen=True)
class Report:
    """A whole-model report: configuration, each component's formula and value, the totals, FLOPs and
    memory of one workload, and the conventions. Render with :meth:`render` (``latex`` fragment or
    standalone, ``markdown``).

    >>> r = report("llama3.1-8b")
    >>> r.total
    8030261248
    >>> "8{,}030{,}261{,}248" in r.render("latex")
    True
    """

    #: the resolved ModelConfig
    config: object
    #: the whole-model parameter derivation (with the config's numbers)
    params: Derivation
    #: notation, symbol -> LaTeX
    names: tuple = ()
    #: the workload of the FLOPs and memory sections
    workload: Workload = field(default_factory=Workload)

    @property
    def spec(self):
        """The config's resolved :class:`~symllm.arch.specs.Spec`."""
        return resolved.spec(self.config)

    @property
    def total(self) -> int:
        """The model's parameter count."""
        return resolved.params(self.spec)["total"]

    def rows(self) -> list[dict]:
        """One row per non-zero leaf of the parameter breakdown, with its formula and value."""
        counts = resolved.params(self.spec)
        return [{"name": name, "formula": Formula(e), "value": counts[name]} for name, e in self.params.terms]

    def context(self, fmt: str = "latex", flavor: str = "github", template_dir=None,
                label_prefix: str | None = None) -> dict:
        """What the report templates are handed."""
        spec, names = self.spec, dict(self.names)
        counts = resolved.params(spec)
        dv = self.params.context(fmt, flavor)
        shown = []  # the derivations the FLOPs, memory and layout sections render (for the glossary)
        costs_part = self._costs(fmt, flavor, template_dir, shown, label_prefix)
        block = _derive("block", "params", None, spec, names, self.workload, OPTIONS)
        config_rows = [
            ("vocabulary size", S.V, spec.vocab_size), ("model width", S.d, spec.dim),
            ("blocks", S.L, spec.n_layers), ("query heads", S.n_h, spec.n_heads),
            ("key/value heads", S.n_kv, spec.n_kv_heads), ("head width", S.d_h, spec.head_dim),
            ("SwiGLU width", S.d_ff, spec.hidden_dim),
        ]
        if spec.shared_hidden_dim is not None:
            config_rows.append(("shared expert width", S.d_se, spec.shared_hidden_dim))
        if spec.hidden_rule != "explicit":
            config_rows.append(("rounding granule", S.m, spec.multiple_of))
        if spec.hidden_rule == "meta":
            config_rows.append(("width multiplier", S.f, spec.ffn_dim_multiplier))
        rule = {"explicit": "stated in the config (never re-rounded)",
                "meta": "Meta's rounding with the multiplier f",
                "meta_plain": "Meta's rounding without a multiplier"}[spec.hidden_rule]
        return {
            "model": spec.name, "kind": spec.attention_kind, "tied": spec.structure.tied,
            "attention_bias": spec.structure.attention_bias, "mlp_bias": spec.structure.mlp_bias,
            "qkv_bias": spec.structure.qkv_bias, "qk_norm": spec.structure.qk_norm,
            "hidden_rule": rule,
            "config": [{"field": f, "symbol": Formula(sym), "code": S.SYMBOLS[sym].code, "value": v}
                       for f, sym, v in config_rows],
            "params": dv, "rows": [{**t, "value": counts[t["name"]]} for t in dv["terms"]],
            "total": counts["total"], "block_value": counts["block"],
            "active": counts["active"] if counts["active"] != counts["total"] else None,
            "experts": spec.n_experts, "experts_per_token": spec.experts_per_token,
            "grouped": len(spec.structure.kinds) > 1,
            # a narrower table where the block's formula is long (OLMo 2's six terms ran into the margin)
            "compact": len(sp.Add.make_args(sp.expand(block.closed))) > 5,
            "block_closed": Formula(block.closed), "block_label": label("N", "block"), "block_subst": _substituted(block.closed, block.values),
            "label": re.sub(r"[^A-Za-z0-9.-]", "-", spec.name), "n_layers": spec.n_layers,
            "blocks": Formula(S.L), "width": Formula(S.d), "d_ff": Formula(S.d_ff),
            "derivation": Safe(self.params.render(fmt, template_dir=template_dir, flavor=flavor, glossary=False,
                                                  label_prefix=label_prefix)),
            "math": math_delimiters(flavor), "format": fmt, **costs_part,
            "glossary": self._glossary([self.params, block, *shown]),
        }

    @staticmethod
    def _glossary(derivations) -> list[dict]:
        """The symbols every derivation of the report uses, in symllm's table order, each once with its
        meaning and value (the derivations inside a report print no "where" list of their own)."""
        values, used, meanings = {}, set(), {}
        for dv in derivations:
            used.update(dv.symbols())
            values.update(dv.values or {})
            meanings.update({sym: dv.meaning(sym) for sym in dv.symbols() if sym == S.beta_w and dv.weights})
        return [{"symbol": Formula(sym), "name": sym.name, "code": S.SYMBOLS[sym].code,
                 "meaning": meanings.get(sym, S.SYMBOLS[sym].description), "value": values.get(sym)}
                for sym in S.SYMBOLS if sym in used]

    def _costs(self, fmt, flavor, template_dir, shown: list, label_prefix: str | None = None) -> dict:
        """The FLOPs and memory sections: symllm.costs.phases.workload's numbers and two derivations (each
        derivation rendered is appended to ``shown``; none repeats the glossary or the definitions)."""
        spec, work, names = self.spec, self.workload, dict(self.names)
        numbers = _workload_numbers(spec, work)
        fl = _derive("model", "flops", None, spec, names, work, {**OPTIONS, "phase": "prefill"})
        mem = _derive("model", "memory", None, spec, names, work, {**OPTIONS, "memory": "inference"})
        shown += [fl, mem]
        once = {"template_dir": template_dir, "flavor": flavor, "glossary": False, "definitions": False,
                "label_prefix": label_prefix}
        context = "s" if "context" in work.derived else f"t = {grouped(work.context)}"
        flops_titles = {"prefill": "prefill (matmuls)",
                        "decode_token": f"one decode step at context {context} (matmuls)",
                        "generation": "prefill + n decode steps (matmuls)",
                        "training_step": "training step, forward + backward (matmuls)",
                        "elementwise": "prefill, element-wise work"}
        memory_titles = {"weights": "weights", "kv_cache": "KV cache after s + n tokens",
                         "training_states": "training states per rank (mixed-precision Adam)",
                         "activations": "activations saved for backward", "inference_peak": "inference peak",
                         "training_peak": "training peak (one step's highest point)",
                         "full_finetune_peak": "full fine-tuning's training peak"}
        if work.lora_rank is not None:  # LoRA's training peak (its parts: the LoRA section)
            memory_titles["training_peak"] = "training peak (LoRA)"
        memory = {k: v for k, v in numbers["memory"].items() if not k.startswith("lora_")}
        return {
            "costs": True, "workload": numbers["workload"],
            "flops_rows": [{"name": flops_titles.get(k, k), "value": v} for k, v in numbers["flops"].items()],
            "memory_rows": [{"name": memory_titles.get(k, k), "value": v} for k, v in memory.items()],
            "flops_derivation": Safe(fl.render(fmt, **once)),
            "memory_derivation": Safe(mem.render(fmt, **once)),
            "flops_value": numbers["flops"]["prefill"], "memory_value": memory["weights"] + memory["kv_cache"],
            **self._training(numbers, fmt, flavor, template_dir, shown, label_prefix),
            **self._peaks(fmt, flavor, template_dir, shown, label_prefix),
        }

    def _peaks(self, fmt, flavor, template_dir, shown: list, label_prefix: str | None = None) -> dict:
        """The peak-memory section: the derivations of ``inference_peak`` and ``training_peak`` under the
        workload's stack, and for an HF stack each moment of the training step with its bytes
        (:func:`symllm.costs.stacks.moments`)."""
        from symllm.costs import stacks

        spec, work, names = self.spec, self.workload, dict(self.names)
        out = []
        for kind, title in (("inference_peak", "Inference peak"), ("training_peak", "Training peak")):
            dv = _derive("model", "memory", None, spec, names, work, {**OPTIONS, "memory": kind})
            shown.append(dv)
            out.append({"title": title, "derivation": Safe(dv.render(fmt, template_dir=template_dir, flavor=flavor,
                                                                     label_prefix=label_prefix,
                                                                     glossary=False, definitions=False))})
        rows = []
        if work.stack not in stacks.COMPONENT_STACKS:
            vals = costs.values(spec, work)
            mdl = spec.model(work.attention)
            rows = [{"name": t.component, "value": evaluate(e.subs(dict(mdl.definitions)), vals)}
                    for t, e in stacks.moments(mdl, work.stack, bool(work.recompute), work.zero_stage)]
        return {"peak_derivations": out, "training_moments": rows, "stack": work.stack, "roofline": self._roofline()}

    def _time(self) -> dict | None:
        """count's ``time`` group (:func:`symllm.costs.hardware.roofline`), once per report; None without an
        accelerator."""
        spec, work = self.spec, self.workload
        if hardware.of(work) is None:
            return None
        if getattr(self, "_time_group", None) is None:
            mdl = spec.model(work.attention)
            vals = {**spec.values(), **work.values()}
            group = hardware.roofline(mdl, work, vals, costs.quantities(mdl, work), costs.flops,
                                      window=spec.config.max_positions)
            object.__setattr__(self, "_time_group", group)
        return self._time_group

    def _roofline(self) -> dict | None:
        """With an accelerator: count's ``time`` group as table rows (:func:`symllm.costs.hardware.roofline`),
        its fit verdicts per GPU of the layout included (the parallel section shows the same ones)."""
        t, work = self._time(), self.workload
        if t is None:
            return None
        first = t["compute_bound_batch"]
        per = f" (per GPU of {t['gpus']})" if t["gpus"] > 1 else ""
        e = t["expected"]  # the expected time beside each bound (symllm.costs.efficiency)
        unfit = ("does not fit", "")  # nothing is timed that does not fit (hardware.blank_unfit)
        rows = [("prefill", f"{t['prefill_s']:.4g} s", f"{t['prefill_bound']}-bound; expected {e['prefill_s']:.4g} s"),
                ("one decode step", f"{t['decode_token_s']:.4g} s",
                 f"{t['decode_token_bound']}-bound; expected {e['decode_token_s']:.4g} s ({e['engine']})"),
                ("decode tokens/s", f"{t['tokens_per_s']:,.1f}",
                 f"at batch {work.batch:,} x {work.dp} replica(s); expected {e['tokens_per_s']:,.1f}")
                ] if t["fits"] else [("prefill", *unfit), ("one decode step", *unfit), ("decode tokens/s", *unfit)]
        rows += [("inference peak fits" + per, "yes" if t["fits"] else "no", f"up to batch {t['max_batch']:,}"),
                 ("training peak fits" + per, "yes" if t["training_fits"] else "no", f"{work.stack} stack")]
        rows += [("training step", f"{t['training_step_s']:.4g} s",
                  f"MFU {t['mfu']:.1%}; expected {e['training_step_s']:.4g} s, MFU {e['mfu']:.1%} "
                  f"({e['training_engine']})"),
                 ("training tokens/s", f"{t['training_tokens_per_s']:,.0f}",
                  f"{t['gpus']} GPU(s); expected {e['training_tokens_per_s_per_gpu'] * t['gpus']:,.0f}")
                 ] if t["training_fits"] else [("training step", *unfit), ("training tokens/s", *unfit)]
        if t["training_fits"] and "training_s" in t:
            rows.append((f"{work.tokens:,} training tokens", f"{t['training_s'] / 86400:,.2f} days",
                         f"{t['gpu_hours']:,.0f} GPU-hours" + (f", cost {t['cost']:,.2f}" if "cost" in t else "")))
        if t["gpus"] == 1:
            rows.append(("decode compute-bound", f"from batch {first:,}" if first else "never",
                         f"at context {work.context:,}"))
        return {"title": t["title"], "ridge": f"{t['ridge']:.1f}", "peak_dtype": t["peak_dtype"],
                "rows": [{"name": a, "value": b, "note": c} for a, b, c in rows],
                "assumes": {"inference": t["assumes"]["fits"], "training": t["assumes"]["training_fits"]}}

    def _training(self, numbers: dict, fmt, flavor, template_dir, shown: list, label_prefix: str | None = None) -> dict:
        """The parallel-layout section (only for a layout: :func:`symllm.costs.parallel.laid_out`): count's
        ``params.per_gpu``, ``memory_per_gpu`` and ``comm`` with the derivation of the communication, and
        whether a training step fits on ``--gpu``; the LoRA section (only with ``lora_rank``): count's
        ``params.trainable`` and ``memory.lora_*`` (:func:`symllm.costs.finetune.lora`)."""
        spec, work = self.spec, self.workload
        out = {"layout": None, "lora": None}
        if parallel.laid_out(work):
            mem = {k: v for k, v in numbers["memory_per_gpu"].items() if k != "training_peak"}
            step = numbers["memory_per_gpu"]["training_peak"]
            titles = {"weights": "weights (part of the training states)",
                      "training_states": "training states (mixed-precision Adam, ZeRO)",
                      "activations": "activations saved for backward (one micro-batch)",
                      "inference_peak": "inference peak (serving on this layout)"}
            fits = None
            t = self._time()
            if t is not None:  # the accelerator's memory: the time group's verdict (one per question)
                fits = {"gpu": t["title"], "capacity": t["capacity"], "fits": t["training_fits"]}
            comm = _derive("model", "comm", None, spec, dict(self.names), work, OPTIONS)
            shown.append(comm)
            comm_titles = {"tp": "tensor parallel (all-reduce, or reduce-scatter and all-gather)",
                           "pp": "pipeline parallel (point-to-point)",
                           "dp": "data parallel (gradients; ZeRO's all-gathers)",
                           "ep": "expert parallel (all-to-all)"}
            out["layout"] = {
                "tp": work.tp, "pp": work.pp, "dp": work.dp, "ep": work.ep, "sp": work.sp,
                "zero": work.zero_stage, "gpus": work.tp * work.pp * work.dp,
                "params": numbers["params"]["per_gpu"],
                "rows": [{"name": titles[k], "value": v} for k, v in mem.items()], "step": step, "fits": fits,
                "comm_rows": [{"name": comm_titles.get(k, k), "key": k, "value": v}
                              for k, v in numbers["comm"].items()],
                "comm_total": sum(numbers["comm"].values()),
                "comm_derivation": Safe(comm.render(fmt, template_dir=template_dir, flavor=flavor, glossary=False,
                                                    label_prefix=label_prefix,
                                                    definitions=False)),
            }
        if work.lora_rank is not None:
            from symllm.costs import finetune  # (builds the adapted tree: only for a LoRA report)
            tuned = finetune.lora(spec, work)
            titles = {"lora_base_weights": "frozen base weights" + (" (NF4 linears)" if work.qlora else ""),
                      "lora_adapter_weights": "adapter weights", "lora_adapter_gradients": "adapter gradients",
                      "lora_optimizer_states": "adapter optimizer states (Adam)",
                      "lora_activations": "activations saved for backward", "lora_total": "total"}
            out["lora"] = {"rank": work.lora_rank, "targets": work.lora_targets.replace(",", ", "),
                           "qlora": work.qlora, "trainable": tuned["params"]["trainable"],
                           "rows": [{"name": titles.get(k, k), "value": v} for k, v in tuned["memory"].items()]}
        return out

    def render(self, fmt: str = "latex", *, standalone: bool = False, template_dir=None,
               template: str | None = None, flavor: str = "github", label_prefix: str | None = None) -> str:
        """The report as a LaTeX fragment (``standalone``: a whole document) or GitHub Markdown; each
        derivation's numbered equation carries a ``\label`` (``label_prefix``: :func:`equation_label`)."""
        choice("format", fmt, REPORT_FORMATS)
        return _laid_out(f"report.{EXTENSIONS[fmt]}.j2", self.context(fmt, flavor, template_dir, label_prefix),
                         self.names, fmt,
                         standalone, f"{self.config.name}: parameters, FLOPs and memory", template, template_dir)

    def __str__(self):
        return self.render("markdown", flavor="jupyter")

    def _repr_latex_(self):
        return None  # a report is a document: notebooks show its Markdown

    def _repr_markdown_(self):
        return self.render("markdown", flavor="jupyter")


def report(config, *, notation=None, vocab_size: int | None = None, **workload) -> Report:
    """The report of a preset name, a config path, a :class:`~symllm.arch.config.ModelConfig` or a
    :class:`~symllm.arch.specs.Spec`; ``workload`` (the :class:`~symllm.costs.workloads.Workload` fields: ``batch``,
    ``seq``, ``gen``, ``context``, ``dtype``, ``kv_dtype``, ``attention``, …) sets what the FLOPs and
    memory sections count. A report shows every phase and memory kind, so derive()'s :data:`OPTIONS`
    (``phase``, ``memory``, …) are not options here.

    >>> report("llama2-7b").total
    6738415616
    >>> "one decode step at context t = 4,096" in report("llama2-7b", context=4096).render("markdown")
    True
    >>> report("llama2-7b", phase="decode")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: workload: a report shows every phase and memory kind; 'phase' is an option of derive
    """
    for key in sorted(workload):
        if key in OPTIONS:
            raise SymllmError(f"workload: a report shows every phase and memory kind; {key!r} is an option of derive")
    work = Workload.of(**workload)
    spec = resolved.spec(config, vocab_size=vocab_size)
    names = notation_of(notation)
    return Report(config=spec.config, params=_derive("model", "params", None, spec, names, work, OPTIONS),
                  names=tuple(names.items()), workload=work)


# --------------------------------------------------------------------------- notebooks

def repr_latex(obj, names=None) -> str:
    """Notebook LaTeX of a derivation (or a component's parameters): its sub-terms and closed form in
    ``aligned``.

    >>> from symllm.arch.components import rmsnorm
    >>> repr_latex(rmsnorm())
    '$$\\\\begin{aligned}N_{\\\\mathrm{rmsnorm}} &= d\\\\end{aligned}$$'
    """
    dv = obj if isinstance(obj, Derivation) else _derivation_of(obj, names)
    ctx = dv.context()
    nm = dict(dv.names)
    lines = [rf"{t['label']} &= {t['expr'].latex(nm)}" for t in ctx["terms"]] if len(ctx["terms"]) > 1 else []
    closed = f"{ctx['label']} &= {ctx['closed'].latex(nm)}"
    if ctx["evaluated"]:
        closed += rf" = {ctx['subst'].latex(nm)} = {num_latex(ctx['value'])}"
    return "$$\\begin{aligned}" + r" \\ ".join(lines + [closed]) + "\\end{aligned}$$"


def repr_markdown(obj, names=None) -> str:
    """Notebook Markdown of a derivation (or a component's parameters): ``$$`` math, Jupyter's flavour."""
    dv = obj if isinstance(obj, Derivation) else _derivation_of(obj, names)
    return dv.render("markdown", flavor="jupyter")


def _derivation_of(comp: Component, names=None) -> Derivation:
    leaves = comp.breakdown("params")
    total = comp.total("params")
    return Derivation(component=comp.name, quantity="params", kind="GQA",
                      terms=tuple((k, v) for k, v in leaves.items() if v != 0),
                      zero_terms=tuple(k for k, v in leaves.items() if v == 0), total=total,
                      closed=collected(total), definitions=(), names=tuple(notation_of(names).items()))
