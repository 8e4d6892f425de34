"""Derivations: assembled and evaluated here, laid out by :mod:`symllm.present.render`.

A :class:`Derivation` is one total worked through: its symbols, one equation per sub-term, their sum,
the collected closed form and, for a config, the numbers substituted and evaluated. Everything is computed
here (formulas through :mod:`symllm.costs.phases`; the closed forms kept between processes by
:mod:`symllm.present.forms`); the templates are handed plain data and wrapped formulas. A whole model's
report, made of derivations, is :mod:`symllm.present.reports`.

>>> derive("attention").render("text").splitlines()[-1].strip()
'= 2*d*d_h*(n_h + n_kv)'
>>> derive("attention", kind="mqa").closed_latex()
'2 \\\\, d \\\\, d_h \\\\, \\\\left(n_h + 1\\\\right)'
>>> derive("attention", notation={"d": r"d_\\mathrm{model}"}).closed_latex()
'2 \\\\, d_\\\\mathrm{model} \\\\, d_h \\\\, \\\\left(n_h + n_{kv}\\\\right)'
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from symllm.arch import resolved
from symllm.arch.algebra import rename
from symllm.costs import checks, expert_layout
from symllm.costs import numbered
from symllm.costs import phases as costs
from symllm.costs import accelerators, hardware, roofline_bytes
from symllm.costs import parallel
from symllm.costs.collectives import column_parallel
from symllm.arch import symbols as S
from symllm.arch.components import Component, LayerKind, collected, component, model
from symllm.errors import SymllmError
from symllm.validate import choice, short, with_list
from symllm.numbers.cache import cache_get, cache_put, key as cache_key
from symllm.numbers.kernels import evaluate
from symllm.present.format import FORMATS, QUANTITIES
from symllm.present.notations import notation as notation_of
from symllm.present.printers import Formula, Safe, num_latex
from symllm.present.render import EXTENSIONS, label, math_delimiters, render_template
from symllm.present.render import standalone as standalone_document
from symllm.costs.selective import recompute_of
from symllm.costs.replication import kv_heads_split
from symllm.costs.workloads import Workload, with_stated
from symllm.present.forms import collected_cached, from_srepr

__all__ = ["OPTIONS", "Derivation", "derive", "repr_latex", "repr_markdown"]

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
    """The ``\\label`` of a derivation's numbered equation (its total), stable and unique per question:
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


# --------------------------------------------------------------------------- derivations

def number_formula(expr, vals) -> Formula:
    """``expr`` with every symbol replaced by a stand-in that prints as its number (not evaluated).

    >>> print(number_formula(S.b * S.s, {S.b: 2, S.s: 512}))
    2*512
    """
    expr = sp.sympify(expr)
    given = tuple(sorted(((sym, type(vals[sym]), vals[sym]) for sym in expr.free_symbols if sym in vals),
                         key=lambda x: x[0].name))
    return _substituted_at(expr, given)


@lru_cache(maxsize=512)
def _substituted_at(expr, given: tuple) -> Formula:
    """:func:`number_formula` once per expression and values (a report shows a sub-term more than once);
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


def templated(default: str, context: dict, names, fmt: str, standalone: bool, title: str, template,
              template_dir) -> str:
    """``context`` through ``template`` (else the ``default`` template); a whole LaTeX document with
    ``title`` when ``standalone``.

    >>> d = derive("model", "params", config="llama3.2-1b")
    >>> templated("derive.md.j2", d.context("markdown"), {}, "markdown", False, "", None, None) == d.render("markdown")
    True
    """
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
    #: the answer where the total has no number (``value`` None): a decode step memory-bound at any batch
    note: str | None = None

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
        shows each once); ``eqlabel`` is the numbered equation's ``\\label`` (:func:`equation_label`)."""
        title, letter = QUANTITIES[self.quantity]
        if self.quantity == "comm":  # whose tensor-parallel collectives: the training engine's column-parallel linears
            title += f", {column_parallel(self.workload.engine)}'s tp"
        result, of = self.result()
        vals = self.values or {}
        evaluated = self.values is not None
        values = self.term_values if evaluated else (None,) * len(self.terms)
        terms = [{"name": name, "label": label(letter, name.rsplit("/", 1)[-1]), "expr": Formula(e),
                  "subst": number_formula(e, vals) if evaluated else None, "value": v}
                 for (name, e), v in zip(self.terms, values)]
        definitions = [{"symbol": Formula(sym), "name": sym.name, "expr": Formula(e),
                        "subst": number_formula(e, vals) if evaluated else None,
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
            "subst": number_formula(self.closed, vals) if evaluated else None, "value": self.value, "note": self.note,
            "per_block": self.component in ("block", "attention", "feed_forward", "rope") and evaluated,
            "active": Formula(self.active) if self.active is not None else None, "active_value": self.active_value,
            "active_subst": number_formula(self.active, vals) if evaluated and self.active is not None else None,
            "math": math_delimiters(flavor), "format": fmt,
            "eqlabel": Safe(equation_label(label_prefix, self.model, self.component, self.quantity, self.options,
                                           self.kind if {S.n_kv, S.n_h} & set(used) else "")),
        }

    def render(self, fmt: str = "latex", *, standalone: bool = False, template_dir=None,
               template: str | None = None, flavor: str = "github", glossary: bool = True,
               definitions: bool = True, label_prefix: str | None = None) -> str:
        """The derivation as ``text``, ``pretty``, ``latex`` (an ``align`` environment whose one numbered
        equation, the total, carries ``\\label{<label_prefix>:...}``: :func:`equation_label`) or
        ``markdown``; ``glossary`` and ``definitions``: see :meth:`context`.

        >>> print(derive("embedding").render("latex").split("\\n")[1])
        \\begingroup\\allowdisplaybreaks\\begin{align}
        """
        choice("format", fmt, FORMATS)
        return templated(f"derive.{EXTENSIONS[fmt]}.j2",
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
            expr = hardware.decode_batch(costs.flops(bare, "decode"), roofline_bytes.bytes_moved(bare, "decode"))
        return {quantity: expr}, expr
    # bytes one GPU sends per training step of one micro-batch under tp/pp/dp/sp (symllm.costs.parallel)
    if quantity == "comm":
        if comp.name != "model":
            raise SymllmError(f"component: comm is the whole model's, not {comp.name!r}")
        # an engine's own EP layout, or its experts over tp x dp: no training step to send in
        unanswered = expert_layout.serves_only(work, parallel.has_experts(bare))
        if unanswered:
            raise SymllmError(f"quantity: comm; {unanswered}")
        checks.check(bare, work)
        leaves = parallel.workload_comm(bare, work)  # as count's: its training engine's linears, its float8 gathers
        return dict(leaves), sum(leaves.values(), sp.S.Zero)
    if quantity == "flops":
        opts = dict(bucket=options["bucket"], macs=options["macs"], recompute=recompute_of(work))
        own = "flops" if options["bucket"] == "matmul" else "elementwise"
        leaves = {path: costs.flops(Component(path.rsplit("/", 1)[-1], **{own: e}), options["phase"], **opts)
                  for path, e in comp.breakdown(own).items()}
        return leaves, costs.flops(bare, options["phase"], **opts)
    opts = dict(zero_stage=work.zero_stage, recompute=recompute_of(work), stack=work.stack, optimizer=work.optimizer)
    if options["memory"] == "training_peak":  # its parts: states held, activations or the step's largest moment
        if bare.name != "model":
            raise SymllmError(f"kind: training_peak is the whole model's (it holds the loss), not {bare.name!r}")
        if work.lora_rank is not None:  # LoRA's training peak, as count's (symllm.costs.finetune): its parts
            from symllm.costs import finetune
            forms = finetune.closed_forms(bare, work)
            leaves = {k: forms[k] for k in finetune.MEMORY_KEYS if k != "lora_total"}
            return leaves, forms["lora_total"]
        leaves = costs.training_peak_parts(bare, work.stack, work.zero_stage, recompute_of(work), work.optimizer)
        return dict(leaves), sum(leaves.values(), sp.S.Zero)
    kinds = ("weights", "kv_cache") if options["memory"] == "inference" else (options["memory"],)
    leaves = {k: costs.memory(bare, k, **opts) for k in kinds}
    return leaves, costs.memory(bare, options["memory"], **opts)


def _component_for(name: str, spec, work: Workload, kind: str = "inference"):
    """The component ``name`` as it sits in the spec's model (or the default model) under the workload's
    attention convention, laid out as its engine of ``kind`` lays it out (the bytes a training step sends: the
    training engine's), and the model's definitions (Meta's ``d_ff`` rounding)."""
    if spec is not None:
        whole = costs.model_of(spec, work, kind)
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
    attention variant and derive()'s options, with a hash of symllm's source files. A miss or a damaged entry builds
    them.

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
            out = ({k: from_srepr(v) for k, v in data["leaves"]}, from_srepr(data["total"]),
                   from_srepr(data["closed"]), tuple((from_srepr(a), from_srepr(b)) for a, b in data["definitions"]))
            _keep(key, out)
            return dict(out[0]), *out[1:]
        except Exception:  # noqa: BLE001 (a damaged entry: built again below)
            pass
    comp, definitions = _component_for(name, spec, work, "training" if quantity == "comm" else "inference")
    leaves, total = _expressions(comp, quantity, work, options)
    swap = {} if _KINDS[kind_key] is None else {S.n_kv: _KINDS[kind_key]}
    leaves = {k: sp.sympify(v).subs(swap) for k, v in leaves.items()}
    total = sp.sympify(total).subs(swap)
    used = set(total.free_symbols).union(*(v.free_symbols for v in leaves.values() if v != 0))
    definitions = tuple((sym, e) for sym, e in definitions if sym in used)
    closed = collected_cached(total)
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


def derive_resolved(name: str, quantity: str, kind: str | None, spec, names: dict, work: Workload,
                    options: dict) -> Derivation:
    """derive() once its arguments are resolved: a :class:`~symllm.arch.specs.Spec` (or None), the notation,
    one :class:`Workload` and derive()'s options.

    >>> spc = resolved.spec("llama3.2-1b")
    >>> d = derive_resolved("model", "params", None, spc, notation_of(None), Workload(), OPTIONS)
    >>> d.value == derive("model", "params", config="llama3.2-1b").value
    True
    """
    kind_key = (kind or "gqa").lower()
    if kind_key not in _KINDS:
        choice("kind", kind, tuple(_KINDS))
    if spec is not None and kind is not None and kind_key != "gqa" and spec.attention_kind.lower() != kind_key:
        raise SymllmError(f"kind: {spec.name} is {spec.attention_kind} (n_kv_heads {spec.n_kv_heads}), "
                          f"not {kind_key.upper()}")
    leaves, total, closed, definitions = _symbolic(name, quantity, kind_key, spec, work, options)
    terms = tuple((k, v) for k, v in leaves.items() if v != 0)
    vals = numbered.values(spec, work) if spec is not None else None
    if quantity in ROOFLINE:  # numbers on a named accelerator only (the ridge point needs no model)
        vals = None if accelerators.of(work) is None else work.values() if quantity == "ridge" else vals
    if vals is not None and quantity in ("comm", "decode_batch") and S.n_kv in vals:  # one GPU's: one KV head a
        vals = {**vals, S.n_kv: kv_heads_split(vals[S.n_kv], work.tp)}  # rank where tp is a multiple (replicated)
    note = None  # no batch turns compute-bound: that is the answer (the formula's value would be negative)
    if quantity == "decode_batch" and vals is not None and not hardware.decode_batch_exists(total, vals):
        note = (f"memory-bound at any batch on {work.gpu} at t = {work.context:,}: each sequence's bytes take at "
                "least as long to read as its FLOPs take to run, so no batch turns compute-bound")
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
        value=evaluate(total, vals) if vals is not None and note is None else None, note=note,
        term_values=tuple(None if note else evaluate(e, vals) for _, e in terms) if vals is not None else (),
        names=tuple(names.items()), workload=work if quantity != "params" else None,
        options=tuple(options.items()) if quantity != "params" else (), weights=_weights_meaning(spec, work))


def _weights_meaning(spec, work: Workload) -> str | None:
    """β_w's meaning under a weight format: given (``--weight-format``, which overrides the config's), or
    read from the config's ``quantization_config`` (symllm.arch.quantization; ``work`` carries it once
    :func:`~symllm.costs.workloads.with_stated` has read it); None without one."""
    stated = spec.config.weight_format if spec is not None else None
    if work.weight_format is not None and work.weight_format != stated:
        over = f", overriding the config's {stated}" if stated else ""
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
    if spec is not None:  # what the config states (count's: with_stated), then too many stages, expert parallelism
        work = with_stated(work, spec.config)  # its experts do not allow, a window's limit
        checks.check(spec, work)
    return derive_resolved(component, quantity, kind, spec, notation_of(notation), work, options)


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
