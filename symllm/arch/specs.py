"""The architecture spec: a config with everything derived resolved once, and its component tree.

Config (HF ``config.json``, Meta ``params.json``, preset) → :class:`ModelConfig` (validated, as the
file says it) → :class:`Spec` (frozen; ``n_kv_heads``, ``head_dim`` and Meta's ``d_ff`` resolved) →
one component tree (:meth:`Spec.model`), built once per structural variant and cached. Every command,
the sweep and the reports derive from the spec; binding symbols to numbers iterates the one table
in :mod:`symllm.arch.symbols`.

>>> sp_ = spec_of(load("llama3.1-8b"))
>>> sp_.hidden_dim, sp_.hidden_rule, sp_.attention_kind
(14336, 'meta', 'GQA')
>>> sp_.model() is spec_of(load("llama3-8b")).model()    # the same structure: one tree
True
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.components import Component, meta_hidden_dim, model
from symllm.arch.config import SPEC_FIELDS, ModelConfig, load
from symllm.arch.dtypes import FP32
from symllm.arch.layers import Structure, Variant
from symllm.arch.part_options import structure_options, variant_options
from symllm.numbers.kernels import compile_expr

__all__ = ["Spec", "spec_of", "variant_of", "hidden_dim_kernel", "structure_model", "hf_plan"]


@lru_cache(maxsize=None)
def structure_model(structure: Structure, causal: bool = False) -> Component:
    """The model component of a structure (cached: built once per structural variant; see
    :mod:`symllm.arch.layers` for what a structure holds).

    >>> structure_model(Structure(tied=True)).child("lm_head").params
    0
    """
    return model(structure, causal=causal)


#: a family's routing weights' dtype (:func:`symllm.arch.families.hf.routing_of`) -> the bytes of one
#: (:attr:`Rules.routing`; None: β_a)
_ROUTING = {None: None, "fp32": sp.Integer(FP32), "none": sp.S.Zero}


#: (id of a tree, a family) -> (the tree, the tree as that family's plan declares it): one object each time (the
#: caches keyed on a model's identity hold one entry for it), without hashing the tree
_PLANNED: dict[tuple, tuple] = {}


def hf_plan(tree: Component, tp_plan: str | None) -> Component:
    """``tree`` with each part that transformers' plan for the family ``tp_plan``
    (:func:`symllm.arch.families.hf.plan_of`) splits otherwise
    than the part's own split declaring that split for the ``hf`` engine (``Rules.engines``), the parts under a named
    one alike (under a "whole" one, replicated); ``tree`` itself where the plan is the parts' own (one tree per tree
    and plan).

    >>> tree = structure_model(Structure())
    >>> hf_plan(tree, None) is tree, hf_plan(tree, "gpt_oss").child("embedding").rules.split_under("hf")
    (True, 'replicated')
    """
    hit = _PLANNED.get((id(tree), tp_plan))
    if hit is not None and hit[0] is tree:
        return hit[1]
    from symllm.arch.families.hf import plan_of, routing_of  # (the registry loads every family module)
    plan = plan_of(tp_plan) or {}
    routing = _ROUTING[routing_of(tp_plan)]  # the bytes of a routing weight its experts take (None: β_a)

    def declared(c: Component, split: str | None, parent: str) -> Component:
        name = f"{parent}.{c.name}" if f"{parent}.{c.name}" in plan else c.name  # a part named under its parent
        if c.rules.split == "expert" and name in plan:  # the routed experts' entry: each expert whole on every
            split = "expert_whole" if plan[name] == "whole" else None  # tensor rank, n_e/N_e of them (or split)
        else:
            split = plan.get(name, "replicated" if split == "whole" else split)  # under a whole part: unsplit
        rules = c.rules
        if split is not None and rules.split is not None and split != rules.split:
            rules = dataclasses.replace(rules, engines=(*(e for e in rules.engines if e[0] != "hf"), ("hf", split)))
        if c.rules.split == "expert" and routing is not None:
            rules = dataclasses.replace(rules, routing=routing)
        children = tuple(declared(x, split, c.name) for x in c.children)
        same = rules is c.rules and all(x is y for x, y in zip(children, c.children))
        return c if same else c.replace(rules=rules, children=children)
    out = declared(tree, None, "") if plan or routing is not None else tree
    _PLANNED[(id(tree), tp_plan)] = (tree, out)  # holding the tree keeps its id from being reused
    return out


@lru_cache(maxsize=None)
def hidden_dim_kernel(rule: str):
    """The compiled kernel of Meta's ``d_ff`` rounding for ``rule`` ("meta" or "meta_plain"); it takes
    scalars or numpy arrays (a sweep) and truncates ``f·⌊8d/3⌋`` as Meta's IEEE double product does.

    >>> hidden_dim_kernel("meta")(d=4096, m=1024, f=1.3)
    14336
    """
    return compile_expr(meta_hidden_dim(rule == "meta"))


@dataclass(frozen=True)
class Spec:
    """A resolved architecture: every field a number, ``hidden_dim`` included.

    >>> spec_of(load("llama2-7b")).values()[S.d_ff]
    11008
    """

    name: str
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_dim: int
    multiple_of: int
    ffn_dim_multiplier: float | None
    #: what shapes the closed forms (the fields marked ``shapes``: :meth:`shape`); the others are numbers
    structure: Structure = field(metadata={"shapes": True})
    config: ModelConfig
    #: the blocks of each group of identical layers, in the order of ``structure.kinds`` (the first bound
    #: through ``L``, the others to :data:`symllm.arch.symbols.GROUP_COUNTS`)
    counts: tuple[int, ...] = ()
    #: mixture of experts (None for a dense model): experts, top-k, the dense layers' width
    n_experts: int | None = None
    experts_per_token: int | None = None
    dense_hidden_dim: int | None = None
    #: a shared expert's own width d_se (Qwen2-MoE's gated one; DeepSeek's shared experts, n_shared_experts ×
    #: hidden_dim; None: none, or Llama 4's of width hidden_dim)
    shared_hidden_dim: int | None = None
    #: the sliding window or the attention chunk (None: full attention)
    window: int | None = None
    #: multi-head latent attention's sizes (None: not latent); qk_rope_head_dim is also a partial rotary's width
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    #: multi-token-prediction modules the checkpoint stores (None: none)
    n_mtp_layers: int | None = None
    #: the transformers family whose own tensor-parallel plan the tree declares for ``--engine hf``
    #: (:attr:`symllm.arch.config.ModelConfig.tp_plan`; None: the parts' own splits are transformers' plan)
    tp_plan: str | None = field(default=None, metadata={"shapes": True})

    @property
    def hidden_rule(self) -> str:
        """Where d_ff comes from: "explicit", "meta" or "meta_plain"."""
        return self.structure.hidden

    @property
    def attention_kind(self) -> str:
        """"MHA", "MQA" or "GQA", from n_kv_heads ("MLA": latent attention)."""
        return self.config.attention_kind

    def shape(self) -> tuple:
        """What of this spec shapes the closed forms, read off the fields marked ``shapes``: with
        :meth:`symllm.costs.workloads.Workload.shape`, the key of every cache of formulas.

        >>> spec_of(load("llama3-8b")).shape() == spec_of(load("llama3.1-8b")).shape()
        True
        """
        return tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.metadata.get("shapes"))

    def model(self, attention: str = "dense") -> Component:
        """The component tree of this spec's structure (shared by every spec of that structure and plan), each part
        declaring the split transformers' plan for its family gives it under ``hf`` where that is not its own
        (:func:`hf_plan`).

        >>> tree = spec_of(load("deepseek-v3")).model()
        >>> [c.rules.split_under("hf") for c in tree.walk() if c.name in ("attention", "wq_b")][:2]
        ['whole', 'replicated']
        """
        tree = structure_model(self.structure, attention == "causal")
        return tree if self.tp_plan is None else hf_plan(tree, self.tp_plan)

    @cached_property
    def _values(self) -> dict:
        field = lambda code: getattr(self, code)  # noqa: E731
        values = {info.symbol: info.value(self.counts, field) for kind in ("model", "layers")
                  for info in S.SYMBOLS.values() if info.kind == kind}
        return {symbol: v for symbol, v in values.items() if v is not None}

    def values(self) -> dict:
        """Symbol -> number for every model symbol (``f`` only when the config has a multiplier; a count
        symbol per group of layers after the first).

        >>> spec_of(load("llama4-maverick-17b-128e")).values()[S.GROUP_COUNTS[0]]
        12
        """
        return dict(self._values)


#: the sizes a config states under the spec's own name (:data:`symllm.arch.config.SPEC_FIELDS`' entries that keep
#: their name: the Gated DeltaNet's, the second head shape, per-layer embeddings', the Mamba-2 mixer's, the
#: indexer's, DeepSeek-V4's, the routed experts' latent width): declared once, on ModelConfig, and read off the
#: spec's config (``spec.hc_mult`` is ``spec.config.hc_mult``)
CONFIG_SIZES = tuple(name for name, attr in SPEC_FIELDS.items() if name == attr)


def _config_size(name: str) -> property:
    return property(lambda self: getattr(self.config, name), doc=f"The config's ``{name}``.")


for _name in CONFIG_SIZES:
    setattr(Spec, _name, _config_size(_name))


def variant_of(config: ModelConfig) -> Variant:
    """The :class:`~symllm.arch.components.Variant` of a config's blocks (LLaMA's unless a family says otherwise):
    each variant option's value (:data:`symllm.arch.part_options.OPTIONS`).

    >>> variant_of(load("llama3-8b")) == Variant()
    True
    """
    return Variant(**variant_options(config))


@lru_cache(maxsize=4096)
def spec_of(config: ModelConfig) -> Spec:
    """The spec of a config: the one place its derived fields are resolved (cached per config)."""
    rule = config.hidden_rule
    if rule == "explicit":
        d_ff = config.hidden_dim
    else:
        args = {"d": config.dim, "m": config.multiple_of, "f": config.ffn_dim_multiplier}
        kernel = hidden_dim_kernel(rule)
        d_ff = kernel(**{a.name: args[a.name] for a in kernel.args})
    # every structural option as the registry reads it (symllm.arch.part_options); the kinds are the family's
    structure = Structure(**structure_options(config), kinds=tuple(kind for kind, _ in config.groups),
                          variant=variant_of(config))
    return Spec(name=config.name, vocab_size=config.vocab_size, dim=config.dim, n_layers=config.n_layers,
                n_heads=config.n_heads, n_kv_heads=config.n_kv_heads, head_dim=config.head_dim, hidden_dim=d_ff,
                multiple_of=config.multiple_of, ffn_dim_multiplier=config.ffn_dim_multiplier,
                structure=structure, config=config, counts=tuple(count for _, count in config.groups),
                n_experts=config.n_experts, experts_per_token=config.experts_per_token,
                dense_hidden_dim=config.dense_hidden_dim, window=config.window,
                q_lora_rank=config.q_lora_rank, kv_lora_rank=config.kv_lora_rank,
                qk_nope_head_dim=config.qk_nope_head_dim, v_head_dim=config.v_head_dim,
                n_mtp_layers=config.n_mtp_layers or None, tp_plan=config.tp_plan,
                **{field: getattr(config, attr) for field, attr in SPEC_FIELDS.items() if field not in CONFIG_SIZES})
