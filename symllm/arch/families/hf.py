"""Reading a HuggingFace ``config.json``: what every family shares, and the registry of families.

A family is one module of :mod:`symllm.arch.families` registering a :class:`Family` for each HF
``model_type`` it reads: the keys transformers' class reads for it (and their defaults when absent), the
keys it models among those symllm refuses elsewhere, the keys its class ignores (refused unless neutral),
and a function reading its own fields. This module reads what they share (sizes, heads, biases,
``layer_types``, what is not modelled) exactly as transformers 5's strict config classes do: an integer
field holds an ``int`` (``4.0``, ``"4"``, ``true`` are refused, as transformers refuses them), a flag a
``bool``; a value transformers would reject is refused in one line, never read another way.

>>> fields = read({"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
...                "num_attention_heads": 4, "intermediate_size": 172}, dict)
>>> fields["sliding_window"], fields["n_kv_heads"]
(4096, 8)
>>> read({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 4.0}, dict)
Traceback (most recent call last):
...
symllm.errors.SymllmError: num_hidden_layers: expected a positive integer, got 4.0
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields as _dataclass_fields, replace

from symllm.arch.layers import runs as _runs
from symllm.errors import SymllmError
from symllm.validate import boolean, short, with_list
from symllm.validate import integer as _integer

__all__ = ["Family", "QK_NORM_GRADS", "register", "registry", "family_of", "plan_of", "routing_of", "read",
           "integer", "flag", "indices", "groups", "rotary_factor", "local_experts", "type_list",
           "REQUIRED", "MAX_LAYERS", "MAX_SIZE", "HF_UNMODELLED", "HF_NOT_YET", "LAYER_TYPES"]

#: the most layers a config.json may have: transformers builds one module per layer, and symllm reads a
#: per-layer list (``layer_types``, the MoE layers) for some families; past this it refuses before building any
MAX_LAYERS = 2**20
#: the largest size or count read from a config.json: torch's tensor sizes are int64
MAX_SIZE = 2**63 - 1
#: a key's default when it must be given (symllm does not guess a size transformers' class would default)
REQUIRED = object()

#: the names transformers 5 accepts in ``layer_types`` (``ALLOWED_ATTN_LAYER_TYPES``); any other is refused
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "window_attention", "indexed_attention",
               "compressed_sparse_attention", "heavily_compressed_attention", "minimax_m3_sparse", "conv", "moe",
               "hybrid", "hybrid_sliding", "reference_sliding_attention", "linear_attention")

#: keys that change the architecture in ways symllm does not model: key -> what it is. Refused unless
#: absent or neutral (null, false, 0, an empty list; ``partial_rotary_factor`` 1), or modelled by the family
#: (:attr:`Family.models`).
HF_UNMODELLED = {
    **dict.fromkeys(("num_local_experts", "num_experts", "num_experts_per_tok", "n_routed_experts",
                     "n_shared_experts", "moe_intermediate_size", "interleave_moe_layer_step", "moe_layers",
                     "decoder_sparse_step", "first_k_dense_replace", "mlp_only_layers"), "mixture-of-experts"),
    "attention_chunk_size": "chunked attention",
    **dict.fromkeys(("use_qk_norm", "qk_norm", "qk_layernorm"), "QK-norm"),
    **dict.fromkeys(("no_rope_layers", "no_rope_layer_interval"), "layers without RoPE"),
    "partial_rotary_factor": "RoPE on part of each head",
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank"), "low-rank (MLA) attention"),
    "num_nextn_predict_layers": "multi-token prediction layers",
    **dict.fromkeys(("attn_logit_softcapping", "final_logit_softcapping"), "logit soft-capping"),
    "vision_config": "a vision encoder",
}

#: config.json keys an engine reads by name, whatever the family (TGI v3.3.6's launcher, RawConfig: its own count of
#: a token's FLOPs), kept as stated (ModelConfig.stated)
STATED = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers",
          "head_dim", "num_experts_per_tok", "n_shared_experts", "num_local_experts")

#: model types of the LLaMA family symllm knows but does not model yet, and why
HF_NOT_YET: dict[str, str] = {}

#: ModelConfig's field names -> the config.json keys they are read from (errors name the user's key)
HF_NAMES = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
            "n_kv_heads": "num_key_value_heads", "hidden_dim": "intermediate_size",
            "tie_embeddings": "tie_word_embeddings", "norm_eps": "rms_norm_eps",
            "max_positions": "max_position_embeddings"}

#: the keys every family reads into ModelConfig's sizes, and their default when absent (``REQUIRED``: must
#: be given; ``None``: derived, ``n_kv_heads = n_heads``, ``head_dim = dim // n_heads``)
COMMON = {"vocab_size": REQUIRED, "hidden_size": REQUIRED, "num_hidden_layers": REQUIRED,
          "num_attention_heads": REQUIRED, "num_key_value_heads": None, "head_dim": None}


@dataclass(frozen=True)
class Family:
    """How transformers' class for one ``model_type`` reads a config.json (see the module docstring)."""

    #: the HF ``model_type``
    model_type: str
    #: ``fields(raw, n_layers)``: the family's own ModelConfig fields (d_ff, experts, windows, ...)
    fields: Callable[[dict, int], dict]
    #: where its presets come from (the checkpoints whose config.json symllm ships)
    presets: str
    #: defaults over :data:`COMMON` (and over false for the keys of ``reads``) for absent keys, as
    #: transformers' class has them
    defaults: dict = field(default_factory=dict)
    #: keys that may be null (then derived as when ``None`` is the default); any other null is refused
    nullable: tuple = ()
    #: the bias keys its class honours (``attention_bias``, ``mlp_bias``); the others must be absent or false
    reads: tuple = ()
    #: q/k/v projections always have biases (Qwen2)
    qkv_bias: bool = False
    #: its QK-norm (see ModelConfig.qk_norm), unless ``fields`` says otherwise
    qk_norm: str | None = None
    #: keys of :data:`HF_UNMODELLED` it models
    models: tuple = ()
    #: keys its class ignores -> their neutral value (of that type: ``true`` is not 1); another value is refused
    #: as ambiguous
    ignored: dict = field(default_factory=dict)
    #: the ``layer_types`` names its model acts on; another (known to transformers) is refused as ignored
    layer_types: tuple = ("full_attention",)
    #: model types whose ``text_config`` is read as this one (the multimodal wrapper: ``llama4``)
    wrappers: tuple = ()
    #: wrappers whose ``text_config`` transformers builds by its own ``model_type``: it must be absent, this
    #: family's or one of its ``aliases`` (Kimi-K2.5's ``SubConfigSpec(AutoConfig, model_type="deepseek_v3")``)
    typed: tuple = ()
    #: per wrapper, the keys its own class reads at the top level -> their default when absent; they replace
    #: the text_config's (Kimi_K25ForConditionalGeneration ties its lm_head by its own ``tie_word_embeddings``,
    #: default true)
    outer: dict = field(default_factory=dict)
    #: model types transformers builds as this one, the same config read the same way (``kimi_k2``: its
    #: ``auto_map`` loads DeepSeek's own ``DeepseekV3Config`` under ``trust_remote_code``, and transformers'
    #: Kimi_K25Config rewrites a ``kimi_k2`` text_config to ``deepseek_v3``)
    aliases: tuple = ()
    #: ModelConfig field -> config.json key, where it differs from :data:`HF_NAMES`
    names: dict = field(default_factory=dict)
    #: the key its class reads the feed-forward's activation from, and the values it models -> the
    #: activation (ModelConfig.activation); another value is refused
    activation: tuple = ("hidden_act", {"silu": "silu", "swish": "silu"})
    #: transformers' ``attribute_map`` of its config class: a shared key -> the family's own name for it (MPT's
    #: ``d_model`` for ``hidden_size``), read under either name; both given and differing is refused, and an
    #: error names the key the file has
    attribute_map: dict = field(default_factory=dict)
    #: transformers' own tensor-parallel plan for this family where it differs from the parts' declared splits (the
    #: plan of Llama's classes: q/k/v and the MLP's gate and up ``colwise``, o and down ``rowwise``, the routed experts
    #: split, the embedding split over the vocabulary, which ``PreTrainedModel.init_parallel_plans`` adds to a base
    #: model's plan whose ``embed_tokens`` is an ``nn.Embedding`` (transformers 5.23 ``distributed/mixin.py``), the
    #: lm_head ``colwise_gather_output`` (each ``*ForCausalLM._tp_plan``), the rest whole): a part's name (or
    #: ``parent.part`` where the name alone is another part's too) -> the split the plan gives it ("whole": it and
    #: every part under it held and run whole on every rank, a sublayer the plan leaves out;
    #: symllm.arch.components.base.SPLITS; the routed experts' entry, each expert whole or split, is what the layout
    #: holds them by under hf: symllm.arch.specs.hf_plan), read in its config class's ``base_model_tp_plan``
    #: and its model class's ``_tp_plan`` (transformers 5.23, installed; read 2026-11-29); what ``--engine hf`` lays
    #: the model out by (:attr:`symllm.arch.config.ModelConfig.tp_plan`). None: transformers has no plan for it
    #: (``tp_size`` above 1 is refused there: ``--engine hf --tp`` above 1 is refused here)
    tp_plan: dict | None = field(default_factory=dict)
    #: the dtype transformers' router for this family hands the routed experts their routing weights in, as its
    #: modelling code computes them (read in transformers 5.23's models/*/modeling_*.py; tests/test_hf_plans.py
    #: runs each family's router to check): None, the hidden states' (Qwen's, cast back); "fp32", computed and left in
    #: fp32 (DeepSeek-V3's ``DeepseekV3TopkRouter``: ``F.linear(hidden_states.type(torch.float32), ...)``; Mixtral's
    #: softmax in fp32); "none", the experts take none (Llama 4's ``Llama4TextExperts.forward(hidden_states)``, its
    #: input scaled by the router's scores before them). What ``--engine hf`` all-reduces the gradient of
    #: (:attr:`symllm.arch.components.Rules.routing`); inherited by :meth:`extend`
    routing_weights: str | None = None

    def extend(self, model_type: str, **changes) -> Family:
        """A family for ``model_type`` that differs from this one only by ``changes`` (each a field, replaced
        whole), as sympy builds ``SI = MKSA.extend(...)``: a family file states what differs from its base.
        The other model types it reads are its own (no wrappers, aliases, typed wrappers or outer keys unless given),
        and so is its tensor-parallel plan (each config class states its own ``base_model_tp_plan``).

        >>> from symllm.arch.families.qwen import QWEN2
        >>> q = QWEN2.extend("qwen2_like", presets="a test")
        >>> (q.model_type, q.qkv_bias, q.layer_types, q.wrappers)
        ('qwen2_like', True, ('full_attention', 'sliding_attention'), ())
        >>> from symllm.arch.families.deepseek import DEEPSEEK_V3  # Kimi's names stay DeepSeek-V3's
        >>> v = DEEPSEEK_V3.extend("v3_like", presets="a test")
        >>> (v.aliases, v.wrappers, v.typed, v.outer, v.names == DEEPSEEK_V3.names)
        ((), (), (), {}, True)
        """
        unknown = sorted(set(changes) - {f.name for f in _dataclass_fields(self)})
        if unknown:
            raise SymllmError(f"{unknown[0]}: not a field of Family")
        own = {"wrappers": (), "aliases": (), "typed": (), "outer": {}, "tp_plan": {}}  # a plan is its class's own
        return replace(self, model_type=model_type, **{**own, **changes})


#: transformers' plan's entries for a per-head QK-norm whose weight every rank holds and whose gradient the ranks
#: all-reduce (``replicated_with_grad_allreduce`` on ``layers.*.self_attn.q_norm`` and ``k_norm``: transformers
#: 5.23's Qwen3, Qwen3-MoE, Qwen3-Next, Qwen3.5, Gemma 3, Gemma 4, EXAONE 4 and Laguna configuration classes; not
#: GLM-4.5's, OLMo 2's or MiniMax-M2's, whose QK-norms its plans leave out): each family's ``tp_plan`` names them
QK_NORM_GRADS = {"q_norm": "grad_reduced", "k_norm": "grad_reduced"}


_REGISTRY: dict[str, Family] = {}
_LOADED = []


def register(family: Family) -> Family:
    """Add a family to the registry, refusing a model type (or wrapper) already read by another."""
    kinds = (family.model_type, *family.wrappers, *family.aliases)
    for kind in kinds:
        if kind in _REGISTRY and _REGISTRY[kind] is not family:
            raise ValueError(f"model_type {kind!r} is read by two families")
    for kind in kinds:
        _REGISTRY[kind] = family
    return family


def registry() -> dict[str, Family]:
    """Every HF model type symllm reads -> its :class:`Family` (each module of the package registers its own).

    >>> registry()["mixtral"].models
    ('num_local_experts', 'num_experts_per_tok')
    """
    if not _LOADED:
        for module in importlib.import_module("symllm.arch.families").MODULES:
            if module != "hf":
                importlib.import_module(f"symllm.arch.families.{module}")
        _LOADED.append(True)
    return _REGISTRY


def family_of(kind) -> Family:
    """The family reading ``model_type`` ``kind``; another model type is refused in one line.

    >>> family_of("qwen3_moe").qk_norm
    'rmsnorm'
    >>> family_of("gpt2")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: model_type: 'gpt2' is not modelled (known: ...)
    """
    families = registry()
    if not isinstance(kind, str) or kind not in families:
        what = f" ({HF_NOT_YET[kind]})" if isinstance(kind, str) and kind in HF_NOT_YET else ""
        raise SymllmError(with_list(f"model_type: {short(kind, 24)}{what} is not modelled (known: ", sorted(families),
                                    see="docs/families.md", near=kind))
    return families[kind]


def plan_of(tp_plan: str | None) -> dict | None:
    """transformers' tensor-parallel plan of the family ``tp_plan`` names where it differs from the parts' own
    splits (:attr:`Family.tp_plan`: a part's name -> its split and every part's under it; ``{}``: none differs, None:
    transformers has no plan for the family): read from the registry, no SymPy (what the checks read off a config,
    :func:`symllm.costs.checks.config_fields`, and the layout, :func:`symllm.arch.specs.hf_plan`).

    >>> plan_of(None), plan_of("mpt"), plan_of("qwen2_moe")
    ({}, None, {'shared_expert': 'whole'})
    """
    return {} if tp_plan is None else family_of(tp_plan).tp_plan


def routing_of(tp_plan: str | None) -> str | None:
    """The dtype transformers' router for the family ``tp_plan`` names hands its experts their routing weights in
    (:attr:`Family.routing_weights`; None: the hidden states').

    >>> routing_of("deepseek_v3"), routing_of("llama4_text"), routing_of("qwen3_moe"), routing_of(None)
    ('fp32', 'none', None, None)
    """
    return None if tp_plan is None else family_of(tp_plan).routing_weights


def integer(raw: dict, key: str, default=REQUIRED, *, nullable: bool = False, minimum: int = 1,
            maximum: int = MAX_SIZE):
    """``raw[key]`` as transformers' strict config reads an ``int`` field: an int (not a bool, not a
    float) from ``minimum`` to ``maximum``; ``default`` when absent (:data:`REQUIRED`: refused), ``None``
    when null and ``nullable``.

    >>> integer({"max_window_layers": 0}, "max_window_layers", minimum=0)
    0
    >>> integer({"num_experts": 2**64}, "num_experts")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: num_experts: expected an integer <= 2**63 - 1, got 18446744073709551616
    """
    if key not in raw:
        if default is REQUIRED:
            raise SymllmError(f"{key}: missing from the HF config")
        return default
    value = raw[key]
    if value is None and nullable:
        return None
    value = _integer(key, value, low=minimum)  # an int, not a bool nor a float (transformers' strict type)
    if value > maximum:
        bound = {MAX_SIZE: "2**63 - 1", MAX_LAYERS: "2**20"}.get(maximum, str(maximum))
        raise SymllmError(f"{key}: expected an integer <= {bound}, got {short(value, 24)}")
    return value


def flag(raw: dict, key: str, default: bool) -> bool:
    """``raw[key]`` as a strict ``bool`` field (``"false"``, ``0`` and ``null`` are refused, as transformers does).

    >>> flag({"use_sliding_window": "false"}, "use_sliding_window", False)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: use_sliding_window: expected True or False, got 'false'
    """
    return boolean(key, raw.get(key, default))


def local_experts(raw: dict, default: int) -> int:
    """``num_local_experts``, or ``num_experts`` (gpt-oss's and MiniMax-M2's config classes map one attribute to
    both names: an ``attribute_map``), ``default`` absent; the two disagreeing is refused.

    >>> local_experts({"num_experts": 8}, 128), local_experts({}, 128)
    (8, 128)
    """
    given = {k: integer(raw, k) for k in ("num_local_experts", "num_experts") if k in raw}
    if len(set(given.values())) > 1:
        raise SymllmError(f"num_experts: {given['num_experts']} differs from num_local_experts "
                          f"{given['num_local_experts']} (one attribute)")
    return next(iter(given.values()), default)


def type_list(raw: dict, key: str, n_layers: int, default: list, known: tuple) -> list:
    """A per-layer list of type names (``layer_types``, ``mlp_layer_types``) as MiMo-V2-Flash's and Laguna's
    config classes take it: one of ``known`` per layer, ``default`` absent; anything else refused in one line.

    >>> type_list({"mlp_layer_types": ["dense", "sparse"]}, "mlp_layer_types", 2, [], ("dense", "sparse"))
    ['dense', 'sparse']
    """
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, list) or len(value) != n_layers or any(v not in known for v in value):
        raise SymllmError(f"{key}: expected {n_layers} of {', '.join(known)}, got {short(value)}")
    return value


def rotary_factor(raw: dict, default: float):
    """``partial_rotary_factor`` at the top level or in ``rope_parameters`` (transformers 5 moves it there;
    Phi-3's class takes the top-level one unless its ``rope_scaling`` states one), ``default`` absent; the
    two disagreeing is refused. Phi-4-mini rotates 0.75 of each head, GLM-4.5 0.5.

    >>> rotary_factor({"rope_parameters": {"partial_rotary_factor": 0.75}}, 1.0), rotary_factor({}, 0.5)
    (0.75, 0.5)
    """
    rope = raw.get("rope_parameters") or raw.get("rope_scaling")
    inner = rope.get("partial_rotary_factor") if isinstance(rope, dict) else None
    outer = raw.get("partial_rotary_factor")
    if inner is not None and outer is not None and inner != outer:
        raise SymllmError(f"partial_rotary_factor: {short(outer)} differs from rope_parameters' {short(inner)}")
    value = outer if outer is not None else inner if inner is not None else default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SymllmError(f"partial_rotary_factor: expected a number, got {short(value)}")
    return value


def rope_scaling(raw: dict) -> dict:
    """The RoPE scaling a config.json states (``rope_scaling``, or transformers 5's ``rope_parameters``: its
    ``rope_type``, ``type`` before; ``default``: none) and the positions it reaches where they are more than
    ``max_position_embeddings``: ``original_max_position_embeddings`` x ``factor`` (YaRN's window, as vLLM derives
    max_model_len for yarn in _get_and_verify_max_len, read 2026-11-29; Llama 3's llama3 and
    Phi-3's longrope reach max_position_embeddings itself, 8,192 x 8 < 131,072).

    >>> rope_scaling({"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    ...               "original_max_position_embeddings": 32768}})
    {'rope_scaling': 'yarn', 'scaled_positions': 131072}
    >>> rope_scaling({"rope_scaling": {"type": "linear", "factor": 2.0}}), rope_scaling({})
    ({'rope_scaling': 'linear'}, {})
    """
    rope = raw.get("rope_scaling") or raw.get("rope_parameters")
    kind = (rope.get("rope_type") or rope.get("type")) if isinstance(rope, dict) else None
    if not isinstance(kind, str) or kind == "default":
        return {}
    out = {"rope_scaling": kind}
    original, factor, window = rope.get("original_max_position_embeddings"), rope.get("factor"), \
        raw.get("max_position_embeddings")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (original, factor)):
        reach = int(original * factor)
        if not isinstance(window, int) or reach > window:
            out["scaled_positions"] = reach
    return out


def groups(kinds) -> dict:
    """The ModelConfig field of a family's per-layer kinds (one :class:`~symllm.arch.layers.LayerKind` per
    layer, in order): ``layers``, the kinds as runs of consecutive identical layers, which
    ``ModelConfig.groups`` collapses into groups of identical layers. All a family says about how its
    layers differ.

    >>> from symllm.arch.layers import LayerKind
    >>> groups([LayerKind(), LayerKind(ffn="moe"), LayerKind(ffn="moe")])["layers"][1]
    (LayerKind(ffn='moe', rotary=True, window=None, temperature=False), 2)
    """
    return {"layers": _runs(kinds)}


def indices(raw: dict, key: str, n_layers: int, default=None):
    """``raw[key]`` as a list of layer indices (each from 0 to ``n_layers - 1``, none twice); ``default``
    when absent or null.

    >>> indices({"mlp_only_layers": [0, 5]}, "mlp_only_layers", 4)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: mlp_only_layers: 5 is not a layer index (0 to 3)
    """
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, list):
        raise SymllmError(f"{key}: expected a list of layer indices, got {short(value)}")
    for i in value:
        if type(i) is not int or not 0 <= i < n_layers:
            raise SymllmError(f"{key}: {short(i)} is not a layer index (0 to {n_layers - 1})")
    if len(set(value)) != len(value):
        raise SymllmError(f"{key}: a layer is listed twice in {short(value)}")
    return value


def _neutral(key: str, value) -> bool:
    if key == "partial_rotary_factor":
        return value is None or (type(value) in (int, float) and value == 1)
    return value is None or value is False or (type(value) is int and value == 0) or value in ([], {})


def _check(raw: dict, family: Family, n_layers: int) -> None:
    """What every family refuses: another head than a causal LM's, a key it does not model, an activation
    other than SiLU, a key its class ignores, ``layer_types`` transformers refuses or the model ignores."""
    kind = family.model_type
    archs = raw.get("architectures") or []
    if not isinstance(archs, list):
        raise SymllmError(f"architectures: expected a list of class names, got {short(archs)}")
    for arch in archs:
        if not (isinstance(arch, str) and arch.endswith("ForCausalLM")):
            raise SymllmError(f"architectures: {short(arch, 24)} is not modelled (only *ForCausalLM)")
    for key, what in HF_UNMODELLED.items():
        if key in raw and key not in family.models and not _neutral(key, raw[key]):
            raise SymllmError(f"{key}: {short(raw[key])} ({what}) is not modelled by symllm")
    key, known = family.activation
    act = raw.get(key, next(iter(known)))
    if not isinstance(act, str) or act not in known:
        what = "SwiGLU: silu" if "silu" in known else f"GeGLU: {', '.join(known)}"
        raise SymllmError(f"{key}: {short(act)} is not modelled (symllm models {what})")
    ignored = {**{k: False for k in ("attention_bias", "mlp_bias") if k not in family.reads}, **family.ignored}
    for key, neutral in ignored.items():
        if key in raw and not (type(raw[key]) is type(neutral) and raw[key] == neutral):  # 1 is not True
            raise SymllmError(f"{key}: {short(raw[key], 20)} is ignored by transformers' {kind} (remove it)")
    types = raw.get("layer_types")
    if types is None:
        return
    if not isinstance(types, list):
        raise SymllmError(f"layer_types: expected a list of layer types, got {short(types)}")
    for name in types:
        if name not in LAYER_TYPES:
            raise SymllmError(with_list(f"layer_types: unknown {short(name, 16)} (", LAYER_TYPES,
                                        see="transformers' ALLOWED_LAYER_TYPES", near=name))
    if len(types) != n_layers:
        raise SymllmError(f"layer_types: {len(types)} entries for {n_layers} layers (transformers refuses "
                          "the mismatch)")
    for name in types:
        if name not in family.layer_types:
            raise SymllmError(with_list(f"layer_types: {short(name, 20)} not in {kind}'s (",
                                        family.layer_types, see="docs/families.md", near=name))


def read(raw: dict, build: Callable):
    """``build(**fields)`` for a config.json (``model_type`` absent: ``llama``): the fields every family
    shares, then the family's own; a ``SymllmError`` from either or from ``build`` names the user's key
    (``text_config.num_hidden_layers`` inside a multimodal wrapper)."""
    kind = raw.get("model_type", "llama")
    family = family_of(kind)
    quantized = {}
    if raw.get("quantization_config") is not None:  # the weight format it states (read whole, or refused)
        from symllm.arch import quantization
        quantized = quantization.fields(raw["quantization_config"])
    prefix, note, wrapper = "", None, None
    if kind in family.aliases:  # built as this family, config and all
        raw = {**raw, "model_type": family.model_type}
        note = f"model_type {kind} is read as {family.model_type}, as transformers builds it"
    elif kind != family.model_type:  # a multimodal wrapper: the language model is its text_config
        inner = raw.get("text_config")
        if not isinstance(inner, dict):
            raise SymllmError(f"text_config: expected the language model's config (an object), got {short(inner)}")
        said = inner.get("model_type", family.model_type)
        if kind in family.typed and said not in (family.model_type, *family.aliases):
            raise SymllmError(f"text_config.model_type: {short(said, 24)} is not modelled inside {kind} "
                              f"(symllm reads {', '.join((family.model_type, *family.aliases))})")
        outer = {key: raw.get(key, default) for key, default in family.outer.get(kind, {}).items()}
        for key, value in outer.items():  # checked here, so that an error names the key where it is
            if isinstance(family.outer[kind][key], bool):
                boolean(key, value)
        towers = ("the vision and audio encoders and their projectors are" if raw.get("audio_config") is not None
                  else "the vision encoder and projector are")  # Gemma 4's wrapper has both
        raw = {**inner, **outer, "model_type": family.model_type}  # transformers builds this family
        prefix = "text_config."
        note = f"the language model (text_config) is counted; {towers} not"
        wrapper = kind
    renamed = {}
    for shared, own in family.attribute_map.items():  # one attribute under two names (MptConfig's d_model)
        if own in raw:
            if shared in raw and raw[shared] != raw[own]:
                raise SymllmError(f"{prefix}{own}: {short(raw[own], 24)} differs from {shared} "
                                  f"{short(raw[shared], 24)} (one attribute)")
            raw, renamed[shared] = {**raw, shared: raw[own]}, own
    try:
        fields = _fields(raw, family)
        if note:
            fields["note"] = note
        if wrapper:
            fields["wrapper"] = wrapper
        fields["stated"] = tuple((key, raw[key]) for key in STATED
                                 if isinstance(raw.get(key), int) and not isinstance(raw.get(key), bool))
        return build(**fields, **quantized)
    except SymllmError as e:  # name the field as the user's file does
        key, _, rest = str(e).partition(":")
        names = {**HF_NAMES, **family.names, **renamed, **{k: renamed[v] for k, v in HF_NAMES.items() if v in renamed}}
        raise SymllmError(f"{prefix}{names.get(key, key)}:{rest}") from None


def _fields(raw: dict, family: Family) -> dict:
    defaults = {**COMMON, **family.defaults}
    size = lambda key: integer(raw, key, defaults[key], nullable=key in family.nullable)  # noqa: E731
    L = integer(raw, "num_hidden_layers", defaults["num_hidden_layers"], maximum=MAX_LAYERS)
    _check(raw, family, L)
    rope = raw.get("rope_parameters")
    theta = raw.get("rope_theta", rope.get("rope_theta", 10000.0) if isinstance(rope, dict) else 10000.0)
    out = dict(vocab_size=size("vocab_size"), dim=size("hidden_size"), n_layers=L,
               n_heads=size("num_attention_heads"), n_kv_heads=size("num_key_value_heads"),
               head_dim=size("head_dim"),
               tie_embeddings=flag(raw, "tie_word_embeddings", family.defaults.get("tie_word_embeddings", False)),
               qkv_bias=family.qkv_bias, qk_norm=family.qk_norm,
               activation=family.activation[1][raw.get(family.activation[0], next(iter(family.activation[1])))],
               norm_eps=raw.get("rms_norm_eps", 1e-6), rope_theta=theta,
               max_positions=raw.get("max_position_embeddings"), **rope_scaling(raw))
    for key in family.reads:
        out[key] = flag(raw, key, family.defaults.get(key, False))
    out.update(family.fields(raw, L))
    if family.tp_plan != {} or family.routing_weights is not None:  # its own plan (or none), or its routing
        out["tp_plan"] = family.model_type  # weights' own dtype, under --engine hf
    return out
