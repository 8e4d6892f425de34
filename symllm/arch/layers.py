"""Layers as a sequence of kinds: what one layer is (:class:`LayerKind`), a model's layers collapsed into
groups of identical layers ``(kind, count)`` (:func:`groups`), and the :class:`Structure` that shapes the
component tree (the kinds in model order, and the options every layer shares).

A family states the kind of each layer (``layer_types``, ``moe_layers``, ``no_rope_layers``,
``max_window_layers``, ... read in its own module of :mod:`symllm.arch.families`); :func:`groups` collapses
them, in the order each kind first appears, and the component tree has one child per group, repeated by
its count (:func:`symllm.arch.components.model`). The counts are numbers of the spec, bound to one count
symbol per group (:data:`symllm.arch.symbols.GROUP_COUNTS`); a model with one group has ``L`` alone.
This module loads no SymPy (config files are read with it).

>>> dense, moe = LayerKind(), LayerKind(ffn="moe")
>>> groups([dense, moe, dense, moe])  # doctest: +NORMALIZE_WHITESPACE
((LayerKind(ffn='dense', rotary=True, window=None, temperature=False), 2),
 (LayerKind(ffn='moe', rotary=True, window=None, temperature=False), 2))
>>> group_names([LayerKind(window="chunked"), LayerKind(ffn="moe", window="chunked"),
...              LayerKind(ffn="moe", rotary=False)])
('block', 'moe_block', 'nope_block')
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction
from itertools import zip_longest

from symllm.errors import SymllmError
from symllm.validate import booleans, choice, positive_int, short

__all__ = ["LayerKind", "window_pairs", "read_groups", "read_mtp_kinds", "kind_fields", "Structure", "Variant", "FFNS",
           "WINDOWS", "MIXERS", "HEADS", "ROPE_PARTS", "HIDDEN_RULES", "QK_NORMS", "NORMS", "ACTIVATIONS",
           "LATENT", "MAX_GROUPS", "COMPONENTS", "runs", "groups", "group_names", "layout_engine"]

#: component names the CLI and derive() accept (:func:`symllm.arch.components.component`; here, without
#: SymPy: the command line checks them) -> where each sits in the model ("" is the model itself;
#: ``block`` is one block, its L repeats undone; ``rmsnorm`` is the final norm)
COMPONENTS = {
    "embedding": "embedding",
    "attention": "block/attention",
    "feed_forward": "block/feed_forward",
    "swiglu": "block/feed_forward",
    "rmsnorm": "norm",
    "rope": "block/attention/rope",
    "lm_head": "lm_head",
    "moe": "block/moe",
    "router": "block/moe/router",
    "experts": "block/moe/experts",
    "sinks": "block/attention/sinks",
    "block": "block",
    "model": "",
}

#: what a layer's feed-forward is: a dense SwiGLU ("dense"; of width ``d_fd`` in a model that also has MoE
#: layers, ``d_ff`` otherwise), a mixture of ``n_e`` SwiGLU experts of width ``d_ff`` ("moe"), or none ("none":
#: a Nemotron-H layer whose one sublayer is its token mixer)
FFNS = ("dense", "moe", "none")
#: how far a query of a layer sees back: full attention (None), the last ``W`` positions ("sliding":
#: Mistral v0.1, Qwen's layers from max_window_layers on), or the positions of its own chunk of ``W``
#: ("chunked": Llama 4's RoPE layers)
WINDOWS = (None, "sliding", "chunked")
#: the engines a part may declare a tensor-parallel split of its own for (``Rules.engines`` in
#: symllm.arch.components: the engine lays it out otherwise than transformers' tp plan, the part's ``split``), as a
#: workload's ``--engine`` names them; the workload's shape holds its engine only when it is one of these. SGLang
#: is not one yet: its DeepSeek-V4 attention splits as vLLM's (docs/parallel.md) but its shared expert's split was
#: not read at a DeepSeek-V4 commit. MLC LLM, gpt-fast and lmdeploy's TurboMind lay the vocabulary's parts out their
#: own ways (symllm.arch.components.embeddings.VOCABULARY); transformers (``hf``) by its plan for the model's family,
#: where that is not the parts' own splits (symllm.arch.families.hf.Family.tp_plan: Nemotron-H, gpt-oss, ...);
#: Megatron-Core (``megatron``: the training layout of every engine training with its ColumnParallelLinear,
#: symllm.costs.layouts.kind_layout) its MLA down-projections column-parallel, their latents gathered
LAYOUT_ENGINES = ("vllm", "mlc", "gpt-fast", "lmdeploy", "hf", "megatron")


def layout_engine(engine: str | None) -> str | None:
    """The engine whose own layout a workload's ``engine`` asks for: its name where a part may declare a split for it
    (:data:`LAYOUT_ENGINES`: symllm.costs.parallel.layout), else None (transformers' tp plan). What of an engine shapes
    the closed forms, and what symllm.costs.checks reads of it.

    >>> layout_engine("vllm"), layout_engine("sglang"), layout_engine(None)
    ('vllm', None, None)
    """
    return engine if engine in LAYOUT_ENGINES else None


#: op checkpointing's one policy (symllm.costs.selective; SymPy-free for the expected times): the order a
#: torchtitan Llama block calls its linears, each one ``aten.mm`` (torchtitan 9dec370 ``torchtitan/models/llama/
#: model.py``), and those whose outputs it recomputes, every second one (``_custom_policy``'s ``mm_count % 2 == 0``)
OP_ORDER = ("wq", "wk", "wv", "wo", "w1", "w3", "w2")
OP_RECOMPUTED = tuple(name for i, name in enumerate(OP_ORDER, start=1) if i % 2 == 0)


def window_pairs(window: str, x, w, *, least=min, floor_div=lambda a, m: a // m, half=Fraction(1, 2)):
    """The unmasked query-key pairs of the first ``x`` positions of a sequence under a ``window`` of ``w``
    (:data:`WINDOWS`): "sliding", ``Σ_{j=1}^{x} min(j, w)`` (position ``j`` sees the last ``min(j, w)``
    positions); "chunked", ``Σ_{j=1}^{x} ((j - 1) mod w + 1)`` (the positions of its own chunk up to itself). One
    rule for numbers (the defaults: exact) and for closed forms (``least=sympy.Min``, a ``floor_div`` and ``half``
    of SymPy's: :class:`symllm.arch.components.SlidingPairs`).

    >>> window_pairs("sliding", 10, 4), sum(min(j, 4) for j in range(1, 11))
    (Fraction(34, 1), 34)
    >>> window_pairs("chunked", 10, 4), sum((j - 1) % 4 + 1 for j in range(1, 11))
    (Fraction(23, 1), 23)
    """
    if window == "sliding":
        low = least(x, w)
        return low * (low + 1) * half + (x - low) * w
    choice("window", window, WINDOWS[1:])
    chunks = floor_div(x, w)
    rest = x - w * chunks
    return chunks * w * (w + 1) * half + rest * (rest + 1) * half
#: a layer's token mixer: attention (softmax attention over the KV cache), or a Gated DeltaNet
#: ("linear_attention": Qwen3-Next's and Qwen3.5's linear-attention layers, a recurrent state per sequence in
#: place of keys and values: :mod:`symllm.arch.components.deltanet`), a Mamba-2 mixer ("mamba": Nemotron-H's,
#: an SSM state and a convolution state per sequence: :mod:`symllm.arch.components.mamba`), or none ("none": a
#: Nemotron-H layer whose one sublayer is its feed-forward); or DeepSeek-V4's attention (shared-key-value MQA over a
#: sliding window: "shared_kv"; with a compressor: "compressed_sparse", CSA, and "heavily_compressed", HCA:
#: :mod:`symllm.arch.components.compressed`)
MIXERS = ("attention", "linear_attention", "mamba", "none", "shared_kv", "compressed_sparse", "heavily_compressed")
#: the head shape of a layer's attention: the model's (``n_h`` query heads, ``n_kv`` key/value heads of width
#: ``d_h``), or the second shape some kinds of layer have ("own": ``n_ha``, ``n_kva``, ``d_ha``; Gemma 4's
#: full-attention layers, with their ``global_head_dim`` and ``num_global_key_value_heads``)
HEADS = ("model", "own")
#: how much of each query and key head a layer's RoPE rotates: the model's part (``d_hr`` of each head where the
#: model has a partial rotary, all of it otherwise: "model"), or all of it where the model's other layers rotate
#: a part ("whole": Laguna's sliding layers, ``partial_rotary_factor`` 1.0 beside the full layers' 0.5)
ROPE_PARTS = ("model", "whole")
#: where ``d_ff`` comes from: a stated width, Meta's rounding with a multiplier ``f``, or without one
HIDDEN_RULES = ("explicit", "meta", "meta_plain")
#: the QK-norms symllm models: none, Qwen3's RMSNorm of width d_h on every query and key head, Llama 4's
#: weightless L2 norm (in its RoPE layers), OLMo 2's RMSNorm over the whole q and k width ("full"), or
#: Command-R+'s LayerNorm on every query and key head with a weight of d_h per head ("layernorm")
QK_NORMS = (None, "rmsnorm", "l2", "full", "layernorm")
#: where a block's norms sit: before attention and feed-forward ("pre": LLaMA), after them on the residual
#: branch ("post": OLMo 2), or both ("sandwich": Gemma 2 and 3); or one norm whose output attention and
#: feed-forward both read, their outputs added to the residual together ("parallel": Command-R)
NORMS = ("pre", "post", "sandwich", "parallel")
#: the feed-forward's activation: SiLU (SwiGLU) or gelu_pytorch_tanh (GeGLU: Gemma), both gated; or that of an
#: ungated two-matrix MLP (``up_proj``, the activation, ``down_proj``): the squared ReLU (``relu2``: Nemotron-H's)
#: or the exact, erf GELU (``gelu``: MPT's ``nn.GELU(approximate="none")``)
ACTIVATIONS = ("silu", "gelu_tanh", "relu2", "gelu")
#: how a latent attention (MLA, DeepSeek-V2/V3) makes its queries: None (not latent: GQA), "q_lora"
#: (compressed through ``wq_a`` of rank ``r_q``, its norm and ``wq_b``) or "q_proj" (one ``wq``:
#: DeepSeek-V2-Lite, ``q_lora_rank`` null)
LATENT = (None, "q_lora", "q_proj")
#: how a checkpoint stores the routed experts (transformers' classes whose save_pretrained writes them fused, one
#: 3-D tensor a projection a layer: the layout is the ``fused_experts`` option's names rule,
#: symllm.arch.part_options): None (one tensor per expert and projection), "in_out" (``[n_e, d, 2·d_ff]`` and
#: ``[n_e, d_ff, d]``: Llama4TextExperts, GptOssExperts) or "out_in" (``[n_e, 2·d_ff, d]`` and ``[n_e, d, d_ff]``:
#: Gemma4TextExperts)
FUSED_EXPERTS = (None, "in_out", "out_in")
#: the most groups of identical layers a model may have (one count symbol each: symllm.arch.symbols)
MAX_GROUPS = 8


@dataclass(frozen=True)
class LayerKind:
    """What one layer is, where layers of a model differ. A new way layers differ (a local RoPE base, a
    different attention) is a new field here with its default the plain LLaMA layer's, a tag in
    :meth:`tags`, and its use in :func:`symllm.arch.components.block`.

    >>> LayerKind(ffn="moe", rotary=False).tags(), LayerKind(rotary=False, temperature=True).tags()
    (('moe', 'nope', 'full'), ('dense', 'nope', 'full', 'tempered'))
    >>> LayerKind(ffn="sparse")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: ffn: unknown 'sparse' (known: dense, moe, none)
    """

    #: the feed-forward (:data:`FFNS`)
    ffn: str = "dense"
    #: the layer rotates q and k (False: a layer without RoPE, as Llama 4's and EXAONE 4's full-attention ones)
    rotary: bool = True
    #: its attention window (:data:`WINDOWS`)
    window: str | None = None
    #: the layer scales its queries by a per-position temperature (Llama 4's layers without RoPE,
    #: ``attn_temperature_tuning``): one multiply per query element
    temperature: bool = False
    #: its token mixer (:data:`MIXERS`; left out of the repr where it is attention, as in every model without one)
    mixer: str = field(default="attention", repr=False)
    #: its attention's head shape (:data:`HEADS`; left out of the repr where it is the model's)
    heads: str = field(default="model", repr=False)
    #: its keys are its values: no ``wv``, the values made by ``wk`` (Gemma 4's ``attention_k_eq_v`` full
    #: layers; the cache still holds a key and a value tensor, as transformers' does)
    k_eq_v: bool = field(default=False, repr=False)
    #: its attention has gpt-oss's sinks (one learned logit per query head) where the model's other layers have
    #: none (MiMo-V2-Flash's sliding layers; gpt-oss's every layer is the structure's ``sinks``)
    sinks: bool = field(default=False, repr=False)
    #: its attention reuses the keys and values an earlier layer of the same window made (Gemma 4's last
    #: ``num_kv_shared_layers``): no ``wk``, ``wv``, ``k_norm`` or value norm, no key rotation, no KV cache of
    #: its own (transformers' cache holds a ``DummyLayer`` for it)
    kv_shared: bool = field(default=False, repr=False)
    #: its dense feed-forward is ``2·d_ff`` wide (Gemma 4's ``use_double_wide_mlp``, in its KV-shared layers)
    wide_ffn: bool = field(default=False, repr=False)
    #: its sparse attention reuses the previous layer's top-k: no indexer of its own (GLM-5's ``indexer_types``
    #: ``shared``; left out of the repr where False)
    shared_topk: bool = field(default=False, repr=False)
    #: how much of each head its RoPE rotates (:data:`ROPE_PARTS`; left out of the repr where it is the model's
    #: part): "whole" rotates all of ``d_h`` in a model whose ``partial_rotary_factor`` rotates ``d_hr`` elsewhere
    rope_part: str = field(default="model", repr=False)

    def __post_init__(self):
        for name, value, known in (("ffn", self.ffn, FFNS), ("window", self.window, WINDOWS),
                                   ("mixer", self.mixer, MIXERS), ("heads", self.heads, HEADS),
                                   ("rope_part", self.rope_part, ROPE_PARTS)):
            choice(name, value, known)
        booleans(self)
        if self.wide_ffn and self.ffn not in ("dense", "moe"):  # moe: the dense MLP beside Gemma 4's experts
            raise SymllmError(f"wide_ffn: a doubled width is a dense feed-forward's (the ffn is {self.ffn})")
        if self.mixer != "attention" and (self.heads != "model" or self.k_eq_v or self.sinks or self.kv_shared
                                          or self.shared_topk):
            raise SymllmError("heads: a head shape or k_eq_v is an attention layer's (the mixer is "
                              f"{self.mixer})")
        if self.rope_part != "model" and (not self.rotary or self.mixer != "attention"):
            raise SymllmError("rope_part: a layer rotating its whole head is an attention layer with RoPE")
        if self.mixer == "none" and self.ffn == "none":
            raise SymllmError("mixer: a layer without a token mixer needs a feed-forward (ffn is 'none')")

    def tags(self) -> tuple[str, ...]:
        """One word per field, saying its value: what names a group (:func:`group_names`); the temperature's
        only where a layer has it ("tempered"), the mixer's only where it is not attention (``linear``, ``mamba``,
        ``no_mixer``), the head shape's and k_eq_v's only where a layer has its own (``heads``, ``kv``).

        >>> LayerKind(mixer="linear_attention").tags(), LayerKind(heads="own", k_eq_v=True).tags()
        (('dense', 'rope', 'full', 'linear'), ('dense', 'rope', 'full', 'heads', 'kv'))
        """
        return (self.ffn, "rope" if self.rotary else "nope", self.window or "full",
                *(("tempered",) if self.temperature else ()),
                *({"linear_attention": ("linear",), "mamba": ("mamba",), "none": ("no_mixer",), "shared_kv": ("swa",),
                   "compressed_sparse": ("csa",), "heavily_compressed": ("hca",)}.get(self.mixer, ())),
                *(("heads",) if self.heads != "model" else ()), *(("kv",) if self.k_eq_v else ()),
                *(("sinks",) if self.sinks else ()), *(("shared",) if self.kv_shared else ()),
                *(("wide",) if self.wide_ffn else ()),
                *(("shared_topk",) if self.shared_topk else ()),
                *(("whole_rope",) if self.rope_part != "model" else ()))

    def __repr__(self):
        """Every field that is not its default (the repr keys the caches of formulas: symllm.numbers.cache).

        >>> LayerKind(heads="own", k_eq_v=True)
        LayerKind(ffn='dense', rotary=True, window=None, temperature=False, heads='own', k_eq_v=True)
        """
        extra = "" if self.mixer == "attention" else f", mixer={self.mixer!r}"
        extra += "" if self.heads == "model" else f", heads={self.heads!r}"
        extra += ", k_eq_v=True" if self.k_eq_v else ""
        extra += ", sinks=True" if self.sinks else ""
        extra += ", kv_shared=True" if self.kv_shared else ""
        extra += ", wide_ffn=True" if self.wide_ffn else ""
        extra += ", shared_topk=True" if self.shared_topk else ""
        extra += "" if self.rope_part == "model" else f", rope_part={self.rope_part!r}"
        return (f"LayerKind(ffn={self.ffn!r}, rotary={self.rotary!r}, window={self.window!r}, "
                f"temperature={self.temperature!r}{extra})")


def runs(kinds) -> tuple[tuple[LayerKind, int], ...]:
    """A model's per-layer kinds as runs of consecutive identical layers ``(kind, count)``, in model order
    (what a config holds: every layer's position kept, compactly).

    >>> [(k.ffn, n) for k, n in runs([LayerKind(), LayerKind(), LayerKind(ffn="moe"), LayerKind()])]
    [('dense', 2), ('moe', 1), ('dense', 1)]
    """
    out: list[list] = []
    for kind in kinds:
        if not isinstance(kind, LayerKind):
            raise SymllmError(f"layers: expected a LayerKind per layer, got {kind!r}")
        if out and out[-1][0] == kind:
            out[-1][1] += 1
        else:
            out.append([kind, 1])
    return tuple((kind, count) for kind, count in out)


def read_groups(value, n_layers: int) -> tuple:
    """A config's ``layers`` as a tuple of ``(LayerKind, count)`` runs in model order, the counts adding up to
    ``n_layers`` (pairs, or :meth:`ModelConfig.to_dict`'s dicts of a kind's fields and its count).

    >>> read_groups([{"ffn": "moe", "count": 2}], 2)[0][1]
    2
    """
    if not isinstance(value, (list, tuple)) or not value:
        raise SymllmError(f"layers: expected groups of (LayerKind, count), got {short(value)}")
    out = []
    for pair in value:
        if isinstance(pair, dict):  # ModelConfig.to_dict's form: the kind's fields and the count
            kind = {k: v for k, v in pair.items() if k != "count"}
            unknown = sorted(set(kind) - set(LayerKind.__dataclass_fields__))
            if unknown or "count" not in pair:
                raise SymllmError(f"layers: expected a kind's fields and its count, got {short(pair)}")
            pair = (LayerKind(**kind), pair["count"])
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], LayerKind):
            raise SymllmError(f"layers: expected (LayerKind, count) pairs, got {short(pair)}")
        out.append((pair[0], positive_int("layers", pair[1])))
    kinds = len({kind for kind, _ in out})
    if kinds > MAX_GROUPS:
        raise SymllmError(f"layers: {kinds} kinds of layer; symllm models at most {MAX_GROUPS}")
    total = sum(count for _, count in out)
    if total != n_layers:
        raise SymllmError(f"layers: the groups hold {total} layers, not n_layers {n_layers} (edit the groups' "
                          "counts too)")
    return tuple(out)


def kind_fields(kind: LayerKind) -> dict:
    """A kind's fields as a config writes them: ``ffn``, ``rotary``, ``window`` and every other that is not its
    default (what ``LayerKind(**...)`` reads back).

    >>> kind_fields(LayerKind(ffn="moe", mixer="mamba"))
    {'ffn': 'moe', 'rotary': True, 'window': None, 'mixer': 'mamba'}
    """
    plain = LayerKind()
    return {f.name: getattr(kind, f.name) for f in fields(kind)
            if f.name in ("ffn", "rotary", "window") or getattr(kind, f.name) != getattr(plain, f.name)}


def read_mtp_kinds(value, n_mtp: int, model: set) -> tuple:
    """The kinds of the blocks of one multi-token-prediction module (LayerKinds, or :func:`kind_fields`' dicts):
    given only with modules (``n_mtp`` of them), each a kind of the model's layers (``model``); None: none given.

    >>> read_mtp_kinds([{"ffn": "moe"}], 1, {LayerKind(ffn="moe")})[0].ffn
    'moe'
    """
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise SymllmError(f"mtp_kinds: expected the kinds of a module's blocks, got {short(value)}")
    try:
        kinds = tuple(k if isinstance(k, LayerKind) else LayerKind(**k) for k in value)
    except TypeError:
        raise SymllmError(f"mtp_kinds: expected the kinds of a module's blocks, got {short(value)}") from None
    if not n_mtp:
        raise SymllmError("mtp_kinds: given without multi-token-prediction modules (n_mtp_layers 0)")
    if any(k not in model for k in kinds):
        raise SymllmError("mtp_kinds: an MTP block of a kind no layer of the model has (not modelled)")
    return kinds


def groups(kinds) -> tuple[tuple[LayerKind, int], ...]:
    """A model's layers (per-layer kinds, or runs ``(kind, count)``) collapsed into groups ``(kind, count)``,
    in the order each kind first appears (totals sum over groups; the position of a layer changes no count).

    >>> groups([LayerKind()] * 3)
    ((LayerKind(ffn='dense', rotary=True, window=None, temperature=False), 3),)
    """
    counts: dict[LayerKind, int] = {}
    for item in kinds:
        kind, count = item if isinstance(item, tuple) else (item, 1)
        if not isinstance(kind, LayerKind):
            raise SymllmError(f"layers: expected a LayerKind per layer, got {kind!r}")
        counts[kind] = counts.get(kind, 0) + count
    return tuple(counts.items())


def group_names(kinds) -> tuple[str, ...]:
    """The component name of each group of blocks: ``block`` for the first; each other group by the first
    tag (:meth:`LayerKind.tags`, in field order) that sets it apart from the first group's kind and that no
    earlier group took (``moe_block``, ``nope_block``, ``sliding_block``, ``full_block``); failing that, its
    differing tags joined, then all of its tags joined. Names are unique (breakdown keys start with them).

    >>> group_names([LayerKind(window="sliding"), LayerKind()])
    ('block', 'full_block')
    >>> group_names([LayerKind(rotary=False), LayerKind(ffn="moe"), LayerKind(), LayerKind(ffn="moe", rotary=False)])
    ('block', 'moe_block', 'rope_block', 'moe_nope_full_block')
    """
    names: list[str] = []
    first = kinds[0].tags() if kinds else ()
    for i, kind in enumerate(kinds):
        differ = [tag for tag, base in zip_longest(kind.tags(), first, fillvalue="attention") if tag != base]
        candidates = [*differ, "_".join(differ), "_".join(kind.tags()), f"group{i + 1}"] if names else [""]
        names.append(next(f"{c}_block".lstrip("_") for c in candidates if f"{c}_block".lstrip("_") not in names))
    return tuple(names)


@dataclass(frozen=True)
class Variant:
    """What a dense family changes of LLaMA's block, the same in every layer (Phi-3, OLMo 2, Gemma 1-3, Command-R):
    none of it is a new size, so a variant changes the shape of the closed forms and no symbol.

    >>> Variant(norms="sandwich", activation="gelu_tanh").norms
    'sandwich'
    >>> Variant(norms="middle")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: norms: unknown 'middle' (known: pre, post, sandwich, parallel)
    """

    #: Phi-3's fused projections: ``wqkv`` (HF ``qkv_proj``: q, k and v in one linear) and ``w13``
    #: (``gate_up_proj``: the gate and up projections in one)
    fused: bool = False
    #: where the norms sit (:data:`NORMS`)
    norms: str = "pre"
    #: the feed-forward's activation (:data:`ACTIVATIONS`)
    activation: str = "silu"
    #: every RMSNorm scales by ``1 + weight`` (Gemma: the same parameters, one add per weight)
    norm_offset: bool = False
    #: the embeddings are multiplied by ``√d`` (Gemma: an element-wise scale, no parameter)
    embed_scale: bool = False
    #: attention scores soft-capped, ``c·tanh(score / c)`` (Gemma 2)
    attn_softcap: bool = False
    #: final logits soft-capped the same way (Gemma 2)
    final_softcap: bool = False
    #: every norm is Cohere's LayerNorm: the mean subtracted, a weight and no bias (Command-R; the same
    #: parameters as an RMSNorm, more element-wise work and one more statistic a row)
    layernorm: bool = False
    #: the logits are multiplied by a constant (Command-R's ``logit_scale``: one multiply a logit)
    logit_scale: bool = False
    #: the values pass a weightless RMSNorm (Gemma 4's ``v_norm``: element-wise work, no parameter)
    value_norm: bool = False
    #: each block's output is multiplied by its ``layer_scalar`` buffer (Gemma 4: one multiply an element, no
    #: parameter)
    layer_scalar: bool = False
    #: ALiBi: a bias, each head's slope times the query-key distance, added to every attention score (MPT: no
    #: parameter, one add a score)
    alibi: bool = False
    #: q, k and v clamped after their projection (MPT's ``clip_qkv``: two compares an element, no parameter)
    clip_qkv: bool = False

    def __post_init__(self):
        for field_, value, known in (("norms", self.norms, NORMS), ("activation", self.activation, ACTIVATIONS)):
            choice(field_, value, known)
        booleans(self)


@dataclass(frozen=True)
class Structure:
    """What decides the shape of the component tree (not the sizes): one tree per structure.

    >>> Structure(kinds=(LayerKind(ffn="moe"),)).has_moe
    True
    """

    #: lm_head shares the embedding matrix
    tied: bool = False
    #: q/k/v/o projections have biases
    attention_bias: bool = False
    #: w1/w2/w3 have biases
    mlp_bias: bool = False
    #: where d_ff comes from (:data:`HIDDEN_RULES`)
    hidden: str = "explicit"
    #: q/k/v projections have biases, wo none (Qwen2)
    qkv_bias: bool = False
    #: the norm on each query and key head: None, "rmsnorm" (Qwen3) or "l2" (Llama 4, in its RoPE layers)
    qk_norm: str | None = None
    #: the MoE layers have Llama 4's shared expert
    shared_expert: bool = False
    #: every attention is a multi-head latent attention (DeepSeek): None, "q_lora" or "q_proj" (:data:`LATENT`)
    latent: str | None = None
    #: the latent attention has DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5): each query attends
    #: the top K_I of its keys (symllm.arch.components.latent.indexer)
    indexer: bool = False
    #: the MoE layers have DeepSeek's shared experts (one SwiGLU of width d_se)
    shared_experts: bool = False
    #: the routed experts run in a latent width d_lm between two projections (Nemotron-3 Super's moe_latent_size)
    latent_moe: bool = False
    #: Gemma 4's MoE block (``enable_moe_block``): in the MoE layers the dense MLP of width d_fd stays, and the
    #: router (Gemma 4's, reading the residual) and the GeGLU experts (after their own norm) sit beside it
    moe_beside_mlp: bool = False
    #: RoPE rotates d_hr of each head's d_h (GLM-4.5's partial_rotary_factor)
    partial_rope: bool = False
    #: the checkpoint stores multi-token-prediction modules (reported apart: symllm.arch.components.mtp)
    mtp: bool = False
    #: the blocks of one multi-token-prediction module whose embedding and head are the model's, by the position
    #: of their kind in ``kinds`` (Nemotron-H's, Qwen3-Next's: symllm.arch.components.mtp); (): DeepSeek-V3's
    #: module, its own embedding and head and one block of the kind :attr:`mtp_copy` says
    mtp_blocks: tuple = ()
    #: the block a DeepSeek-V3-style module (no ``mtp_blocks``) copies, by the position of its kind in ``kinds``:
    #: the kind of the model's last layer (the MTP layer follows it; -1: the last kind in ``kinds``, which is not
    #: always the last layer's: kinds are in the order each first appears)
    mtp_copy: int = -1
    #: the shared expert is Qwen2-MoE's: of its own width d_se, scaled by a sigmoid gate
    shared_gate: bool = False
    #: gpt-oss's attention sinks (one logit per query head)
    sinks: bool = False
    #: gpt-oss's biases on the router and the routed experts
    moe_bias: bool = False
    #: gpt-oss's clamped SwiGLU in the routed experts
    clamped: bool = False
    #: PEFT adapts the fused routed experts (Qwen3-MoE): their LoRA targets are refused
    fused_lora: bool = False
    #: how checkpoints store the routed experts (:data:`FUSED_EXPERTS`): no count depends on it
    fused_experts: str | None = None
    #: the attention's output is gated, ``o_proj(attn · sigmoid(gate))`` with the gate from a doubled ``q_proj``
    #: (Qwen3-Next, Qwen3.5)
    output_gate: bool = False
    #: Laguna's output gate ``o_proj(attn · softplus(g_proj(x)))``, g_proj one gate a head ("head") or a query
    #: element ("element"); None: none
    gate_proj: str | None = None
    #: Laguna's router holds ``e_score_correction_bias`` as a parameter (n_e numbers)
    router_score_bias: bool = False
    #: the Gated DeltaNet's input projections are Qwen3.5's four (``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``,
    #: ``in_proj_a``); False: Qwen3-Next's two (``in_proj_qkvz``, ``in_proj_ba``)
    delta_split: bool = False
    #: the values have heads of their own width ``d_hv`` (MiMo-V2-Flash's ``v_head_dim``; not latent attention's)
    value_width: bool = False
    #: the Mamba-2 mixer's convolution has a bias (Nemotron-H's ``use_conv_bias``)
    conv_bias: bool = False
    #: the Mamba-2 mixer's ``in_proj`` and ``out_proj`` have biases (Nemotron-H's ``use_bias``)
    mamba_bias: bool = False
    #: per-layer embeddings (Gemma 4 E2B/E4B): a table of ``V_p × L·d_p`` and a projection ``d -> L·d_p`` give each
    #: layer an input of ``d_p``, which a gate ``d -> d_p``, a projection ``d_p -> d`` and a norm add to its output
    per_layer_input: bool = False
    #: each block keeps ``n_hc`` residual streams mixed by DeepSeek-V4's hyper-connections (``attn_hc``,
    #: ``ffn_hc``; the model's ``hc_head`` collapses them: symllm.arch.components.compressed)
    hyper_connections: bool = False
    #: the kinds of layer, one per group of identical blocks, in model order (:func:`groups`)
    kinds: tuple[LayerKind, ...] = (LayerKind(),)
    #: what a dense family changes of LLaMA's block in every layer (Phi-3, OLMo 2, Gemma)
    variant: Variant = Variant()

    def __post_init__(self):
        kinds = self.kinds
        if not isinstance(kinds, tuple) or not kinds or not all(isinstance(k, LayerKind) for k in kinds):
            raise SymllmError(f"kinds: expected a tuple of LayerKind, one per group, got {kinds!r}")
        if len(set(kinds)) < len(kinds):
            raise SymllmError("kinds: a kind of layer is listed twice (one group per kind)")
        if len(kinds) > MAX_GROUPS:
            raise SymllmError(f"kinds: {len(kinds)} kinds of layer; symllm models at most {MAX_GROUPS}")
        booleans(self)
        if self.gate_proj not in (None, "head", "element"):
            raise SymllmError(f"gate_proj: expected head or element, got {self.gate_proj!r}")
        if (not isinstance(self.mtp_blocks, tuple)
                or any(type(i) is not int or not 0 <= i < len(kinds) for i in self.mtp_blocks)):
            raise SymllmError(f"mtp_blocks: expected positions in kinds, got {self.mtp_blocks!r}")
        if type(self.mtp_copy) is not int or not -len(kinds) <= self.mtp_copy < len(kinds):
            raise SymllmError(f"mtp_copy: expected a position in kinds, got {self.mtp_copy!r}")
        choice("latent", self.latent, LATENT)
        choice("fused_experts", self.fused_experts, FUSED_EXPERTS)
        if self.indexer and self.latent != "q_lora":
            raise SymllmError("indexer: the sparse-attention indexer reads a latent attention's query latent (q_lora)")
        if not self.indexer and any(kind.shared_topk for kind in self.kinds):
            raise SymllmError("shared_topk: a layer reusing another's top-k in a model without a sparse-attention "
                              "indexer")
        if self.shared_expert and self.shared_experts:
            raise SymllmError("shared_experts: a layer has Llama 4's shared expert or DeepSeek's, not both")
        if not self.moe_beside_mlp and any(kind.wide_ffn and kind.ffn == "moe" for kind in self.kinds):
            raise SymllmError("wide_ffn: a doubled width is a dense feed-forward's (the ffn is moe)")
        if not self.partial_rope and any(k.rope_part != "model" for k in self.kinds):
            raise SymllmError("rope_part: a layer rotating its whole head beside no partial rotary (partial_rope)")
        if self.latent is not None and (self.qkv_bias or self.qk_norm or self.partial_rope
                                        or any(k.window or not k.rotary or k.heads != "model" or k.k_eq_v
                                               or k.kv_shared for k in self.kinds)):
            raise SymllmError("latent: latent attention has no q/k/v bias, QK-norm, window, partial or absent RoPE")
        if self.value_width and self.latent is not None:
            raise SymllmError("value_width: latent attention's values have their own width already")
        choice("qk_norm", self.qk_norm, QK_NORMS)
        if not isinstance(self.variant, Variant):
            raise SymllmError(f"variant: expected a Variant, got {self.variant!r}")
        choice("hidden", self.hidden, HIDDEN_RULES)

    @property
    def has_linear(self) -> bool:
        """Whether some layer's token mixer is a Gated DeltaNet (:data:`MIXERS`)."""
        return any(k.mixer == "linear_attention" for k in self.kinds)

    @property
    def has_own_heads(self) -> bool:
        """Whether some layer's attention has the second head shape (:data:`HEADS`)."""
        return any(k.heads == "own" for k in self.kinds)

    @property
    def has_mamba(self) -> bool:
        """Whether some layer's token mixer is a Mamba-2 mixer (:data:`MIXERS`)."""
        return any(k.mixer == "mamba" for k in self.kinds)

    @property
    def has_moe(self) -> bool:
        """Whether some layer's feed-forward is a mixture of experts (the dense ones then have width ``d_fd``)."""
        return any(k.ffn == "moe" for k in self.kinds)

    def options(self) -> dict:
        """The fields as keywords (``Structure(**s.options())`` is ``s``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
