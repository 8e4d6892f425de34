"""Components composed: a :func:`block` of a kind, the :func:`model` of a structure (one group of blocks
per kind), DeepSeek's :func:`mtp` modules, :func:`component` by name, and the LoRA vocabulary read from a
model with every part (:data:`EVERY_PART`, :func:`lora_names`)."""
from __future__ import annotations

import dataclasses
import functools

import sympy as sp

from symllm.arch import keeps
from symllm.arch.components.base import (NO_WEIGHT, no_weight, structure_of, SUM_NORM, check_switches, T, Component,
                                         ELEMENTWISE, linear, named, Rules)
from symllm.arch.components.deltanet import gated_deltanet
from symllm.arch.components.compressed import (COMPRESSED_MIXERS, compressed_attention, hyper_connection, hyper_head,
                                               norm_saved, swiglu_clamps)
from symllm.arch.components.embeddings import embedding, lm_head, per_layer_embedding, per_layer_input
from symllm.arch.components.gqa import attention
from symllm.arch.components.latent import latent_attention
from symllm.arch.components.mamba import mamba2
from symllm.arch.components.mixture import moe
from symllm.arch.components.mlp import feed_forward, meta_hidden_dim
from symllm.arch.components.norms import rmsnorm
from symllm.arch.layers import COMPONENTS, group_names, LayerKind, Structure, Variant
from symllm.arch.part_options import OPTIONS, every_part
from symllm.arch.dtypes import FP32
from symllm.arch.symbols import b, beta_a, d, d_fd, d_ff, d_h, d_hr, GROUP_COUNTS, L, L_mtp, n_hc, s
from symllm.errors import SymllmError
from symllm.validate import choice, short, with_list


def block(structure: Structure | None = None, kind: LayerKind = LayerKind(), *, causal: bool = False,
          name: str = "block", **options) -> Component:
    """One pre-norm transformer block of ``kind`` in a model of ``structure`` (or of a :class:`Structure` of
    ``options``): ``h = x + attention(attention_norm(x))``, ``out = h + feed_forward(ffn_norm(h))``. A kind
    with ``ffn="moe"`` has a mixture of experts (:func:`moe`, with the structure's shared expert or DeepSeek's
    shared experts); a dense one a SwiGLU of width ``d_ff``, or ``d_fd`` in a model that also has MoE layers
    (twice that in a kind with ``wide_ffn``: Gemma 4's ``use_double_wide_mlp``).
    The structure's ``latent`` makes its attention a multi-head latent attention (:func:`latent_attention`).
    The structure's ``variant.norms`` moves the norms: ``"post"`` (OLMo 2) normalises each branch's output
    before its residual add, ``h = x + post_attention_norm(attention(x))``, ``out = h +
    post_ffn_norm(feed_forward(h))``; ``"sandwich"`` (Gemma 2, 3) has both, four norms a block;
    ``"parallel"`` (Command-R) has one norm whose output both read, ``out = x + attention(n) +
    feed_forward(n)`` with ``n = attention_norm(x)``: the same two residual adds, and the normed input saved
    once for both branches. ``variant.layernorm`` makes every norm Cohere's LayerNorm (``rmsnorm(mean=True)``).

    >>> [c.name for c in block().children], [c.name for c in block(kind=LayerKind(ffn="moe")).children][-1]
    (['attention_norm', 'attention', 'ffn_norm', 'feed_forward'], 'moe')
    >>> [c.name for c in block(variant=Variant(norms="post")).children]
    ['attention', 'post_attention_norm', 'feed_forward', 'post_ffn_norm']
    >>> [c.name for c in block(variant=Variant(norms="parallel", layernorm=True)).children]
    ['attention_norm', 'attention', 'feed_forward']
    """
    structure = structure_of(structure, options)
    check_switches(causal=causal)
    variant = structure.variant
    if kind.ffn == "none":
        ffn = None
    elif kind.ffn == "moe":
        ffn = moe(shared=structure.shared_expert, gated=structure.shared_gate, bias=structure.moe_bias,
                  clamped=structure.clamped, fused_lora=structure.fused_lora, shared_experts=structure.shared_experts,
                  shared_bias=structure.mlp_bias and structure.shared_experts,
                  # Nemotron-H's relu2 experts; gpt-oss's and Qwen's expert options (no family sets them with relu2:
                  # tests/test_rules.py's every-part models do) keep the SwiGLU experts they describe
                  activation="silu" if structure.moe_bias or structure.clamped or structure.fused_lora
                  else variant.activation,
                  score_bias=structure.router_score_bias, latent=structure.latent_moe,
                  latent_bias=structure.mlp_bias and structure.latent_moe, scaled=structure.moe_beside_mlp)
    else:
        width = d_fd if structure.has_moe else d_ff
        # Gemma 4's use_double_wide_mlp: intermediate_size * 2 in its KV-shared layers (Gemma4TextMLP)
        ffn = feed_forward(bias=structure.mlp_bias, width=2 * width if kind.wide_ffn else width, variant=variant)
    if kind.mixer == "none":
        attn = None
    elif kind.mixer in COMPRESSED_MIXERS:  # DeepSeek-V4's attention: its core's pairs follow the convention
        attn = compressed_attention(kind.mixer, causal=causal, rotated=d_hr if structure.partial_rope else d_h)
        ffn = swiglu_clamps(ffn)
    elif kind.mixer != "attention":  # a token mixer other than attention (deltanet, mamba)
        attn = mixer(kind.mixer)(structure, kind)
    elif structure.latent is not None:
        attn = latent_attention(queries=structure.latent, bias=structure.attention_bias, causal=causal,
                                sparse=structure.indexer, shared_topk=kind.shared_topk)
    else:
        attn = attention(structure, kind, causal=causal)
    off, mean = variant.norm_offset, variant.layernorm
    if attn is None or ffn is None:  # Nemotron-H: one sublayer a block (its mixer), under one norm
        return Component(
            name,
            elementwise=ELEMENTWISE["residual"] * T * d,
            checkpoint=beta_a * T * d,
            resident=2 * T * d,
            children=(named(rmsnorm("norm", doc="self.norm = NemotronHRMSNorm(hidden_size)", offset=off, mean=mean),
                            "norm", "attn_norm"), attn if ffn is None else ffn),  # (llama.cpp: attn_norm, every kind)
            doc="NemotronHBlock: hidden_states = residual + mixer(norm(hidden_states))",
            rules=Rules("replicated", lora=(), stacks=(), label="a block of one sublayer under one norm (Nemotron-H)"),
        )
    if variant.norms == "parallel":  # Command-R: CohereDecoderLayer
        return Component(
            name,
            elementwise=2 * ELEMENTWISE["residual"] * T * d,  # residual + attention + feed-forward
            checkpoint=beta_a * T * d,
            resident=2 * T * d,
            # the feed-forward reads the tensor the attention already saves: kept once
            children=(named(rmsnorm("attention_norm", doc="self.input_layernorm", offset=off, mean=mean),
                            "input_layernorm", "attn_norm"), attn,
                      ffn.replace(saved=ffn.saved - beta_a * T * d) if kind.ffn == "dense" else ffn),
            doc="CohereDecoderLayer: x + self_attn(input_layernorm(x)) + mlp(input_layernorm(x))",
            rules=Rules("replicated", lora=(), stacks=(), label="a parallel attention/feed-forward block (Command-R)"),
        )
    post = Rules("sequence", lora=(), weight="norm", stacks=(), label="norms after attention and feed-forward "
                 "(OLMo 2, Gemma 2 and 3)")
    pre = variant.norms in ("pre", "sandwich")
    beside = kind.ffn == "moe" and structure.moe_beside_mlp  # Gemma 4's MoE block: the dense MLP kept
    after = variant.norms in ("post", "sandwich")
    mpt = variant.alibi  # MptBlock's names: norm_1, attn, norm_2, ffn (the ALiBi family is MPT)
    # each norm's Hugging Face name (LlamaDecoderLayer's, Olmo2's, Gemma2's) and GGUF name (gguf-py's)
    children = (
        *([named(rmsnorm("attention_norm", offset=off, mean=mean), "norm_1" if mpt else "input_layernorm", "attn_norm")]
          if pre else []),
        attn,
        *([named(rmsnorm("post_attention_norm", doc="post_attention_layernorm(attn_output), before the residual "
                         "add", rules=post, offset=off, mean=mean), "post_attention_layernorm", "post_attention_norm")]
          if after else []),
        *([named(rmsnorm("ffn_norm", rules=SUM_NORM, offset=off, mean=mean),
                 "pre_feedforward_layernorm" if after else "norm_2" if mpt else "post_attention_layernorm", "ffn_norm")]
          if pre else []),
        feed_forward(bias=structure.mlp_bias, width=2 * d_fd if kind.wide_ffn else d_fd, variant=variant)
        if beside else ffn,
        *(_beside_mlp(ffn, off) if beside else ()),
        *([named(rmsnorm("post_ffn_norm", doc="post_feedforward_layernorm(mlp_output), before the residual add",
                         rules=post, offset=off, mean=mean), "post_feedforward_layernorm", "post_ffw_norm")] if after
                         else []),
        *(per_layer_input(variant.activation, off) if structure.per_layer_input else ()),
    )
    if structure.hyper_connections:  # DeepSeek-V4: the streams' mixing around attention and the feed-forward
        # (its RMSNorms compute in fp32 and keep their normalised rows: compressed.norm_saved)
        children = tuple(c.replace(saved=norm_saved(d)) if c.name in ("attention_norm", "ffn_norm") else c
                         for c in children)
        children += (hyper_connection("attn_hc", "attn_hc"), hyper_connection("ffn_hc", "ffn_hc"))
    return Component(
        name,
        # Gemma 4: hidden_states *= self.layer_scalar, one multiply an element of the block's output
        # Gemma 4's per-layer input: its own residual add
        # Gemma 4's MoE block: the dense MLP's and the experts' outputs summed
        # DeepSeek-V4: no residual add; its hyper-connections update the streams (their own element-wise work)
        elementwise=((0 if structure.hyper_connections else 2 + structure.per_layer_input + beside)
                     * ELEMENTWISE["residual"] + (ELEMENTWISE["scale"] if variant.layer_scalar else 0)) * T * d,
        # full recomputation keeps only the block's input (DeepSeek-V4: its n_hc streams)
        checkpoint=beta_a * T * d * (n_hc if structure.hyper_connections else 1),
        # the residual stream and the normed input; DeepSeek-V4 (transformers' eager model, tests/test_dsv4.py): the
        # n_hc streams, their collapse and its norm, the model's inputs_embeds, post and comb (fp32), the mask and
        # RoPE's cos and sin tables (s rows of half the rotated channels each)
        resident=(_hc_resident(structure) if structure.hyper_connections else 2 * T * d),
        children=children,
        doc="TransformerBlock(layer_id, args)",
        # its Hugging Face name, each layer's index after it: LlamaModel's layers, MptModel's blocks
        rules=dataclasses.replace(no_weight(keeps.block), hf="transformer.blocks" if mpt else "model.layers"),
    )


def _hc_resident(structure: Structure) -> sp.Expr:
    """Activation elements DeepSeek-V4's model holds live throughout a block's attention in a prefill (the
    comment at its use)."""
    rotated = d_hr if structure.partial_rope else d_h
    return ((n_hc + 3) * T * d + sp.ceiling(FP32 / beta_a) * T * (n_hc + n_hc ** 2) + b * s * s
            + s * rotated)


def _beside_mlp(moe_: Component, offset: bool) -> tuple[Component, ...]:
    """Gemma 4's MoE block after its dense MLP (``Gemma4TextDecoderLayer`` with ``enable_moe_block``):
    ``post_feedforward_layernorm_1`` on the MLP's output, the router reading the residual (not the MLP's input),
    ``pre_feedforward_layernorm_2`` on the residual before the experts, ``post_feedforward_layernorm_2`` on their
    output; the two outputs summed (the block's add) before ``post_feedforward_layernorm``."""
    post = Rules("sequence", lora=(), weight="norm", stacks=(), label="Gemma 4's MoE block")
    return (named(rmsnorm("post_ffn_norm_1", doc="post_feedforward_layernorm_1(mlp_output)", rules=post,
                          offset=offset), "post_feedforward_layernorm_1"),
            named(rmsnorm("moe_norm", doc="pre_feedforward_layernorm_2(residual), the experts' input", rules=post,
                          offset=offset), "pre_feedforward_layernorm_2"),
            moe_,
            named(rmsnorm("post_moe_norm", doc="post_feedforward_layernorm_2(experts_output)", rules=post,
                          offset=offset), "post_feedforward_layernorm_2"))


#: token mixer (a LayerKind's ``mixer`` other than attention) -> its factory ``(structure, kind) -> Component``
MIXER_FACTORIES = {"linear_attention": gated_deltanet, "mamba": mamba2,
                   **{name: lambda structure, kind: compressed_attention(
                       kind.mixer, rotated=d_hr if structure.partial_rope else d_h) for name in COMPRESSED_MIXERS}}


def mixer(name: str):
    """The factory of the token mixer ``name`` (:data:`MIXER_FACTORIES`).

    >>> mixer("linear_attention").__name__
    'gated_deltanet'
    """
    return MIXER_FACTORIES[choice("mixer", name, tuple(MIXER_FACTORIES))]


def group_counts(groups: int) -> tuple[sp.Expr, ...]:
    """The blocks of each of ``groups`` groups: ``L`` for one; ``L - L_2 - ...`` then ``L_2``, ... for more
    (:data:`symllm.arch.symbols.GROUP_COUNTS`, bound to the spec's counts).

    >>> group_counts(1), group_counts(3)
    ((L,), (L - L_2 - L_3, L_2, L_3))
    """
    rest = GROUP_COUNTS[:groups - 1]
    return (L,) if groups == 1 else (L - sum(rest), *rest)


def model(structure: Structure | None = None, *, causal: bool = False, **options) -> Component:
    """The whole model of ``structure`` (or of a :class:`Structure` of ``options``): embedding, one group of
    identical blocks per kind of layer (``structure.kinds``, each repeated by its count: :func:`group_counts`,
    named by :func:`symllm.arch.layers.group_names`), the final norm and the lm_head.

    ``hidden`` says where ``d_ff`` comes from: ``"explicit"`` (a stated ``hidden_dim`` /
    ``intermediate_size``, never re-rounded), ``"meta"`` (Meta's rounding with a multiplier ``f``) or
    ``"meta_plain"`` (Meta's rounding without one).
    The structure's ``variant`` (:class:`Variant`) is what Phi-3, OLMo 2 and Gemma change of LLaMA's block, in
    every layer.

    >>> sp.expand(model(hidden="explicit").total())
    3*L*d*d_ff + 2*L*d*d_h*n_h + 2*L*d*d_h*n_kv + 2*L*d + 2*V*d + d
    >>> kinds = (LayerKind(), LayerKind(ffn="moe"), LayerKind(ffn="moe", rotary=False, temperature=True))
    >>> [(c.name, c.repeat) for c in model(kinds=kinds).children[1:-2]]
    [('block', L - L_2 - L_3), ('moe_block', L_2), ('nope_block', L_3)]
    """
    structure = structure_of(structure, options)
    check_switches(causal=causal)
    hidden = structure.hidden
    definitions = () if hidden == "explicit" else ((d_ff, meta_hidden_dim(hidden == "meta")),)
    variant = structure.variant
    groups = tuple(block(structure, kind, causal=causal, name=name).replace(repeat=count)
                   for kind, name, count in zip(structure.kinds, group_names(structure.kinds),
                                                group_counts(len(structure.kinds))))
    return Component(
        "model",
        # MptModel's names: transformer.wte, transformer.norm_f (the ALiBi family is MPT)
        children=(named(embedding(scale=variant.embed_scale), "transformer.wte", "token_embd") if variant.alibi
                  else embedding(scale=variant.embed_scale),
                  *(per_layer_embedding() if structure.per_layer_input else ()), *groups,
                  _final_norm(named(rmsnorm("norm", offset=variant.norm_offset, mean=variant.layernorm),
                                    "transformer.norm_f" if variant.alibi else "model.norm", "output_norm"), structure),
                  *((hyper_head(),) if structure.hyper_connections else ()),
                  lm_head(tied=structure.tied, softcap=variant.final_softcap, scale=variant.logit_scale)),
        definitions=definitions,
        doc="Transformer(params)",
        rules=NO_WEIGHT,
    )


def _final_norm(norm: Component, structure: Structure) -> Component:
    """The final norm; DeepSeek-V4's computes in fp32 and keeps its normalised rows (``compressed.norm_saved``)."""
    return norm.replace(saved=norm_saved(d)) if structure.hyper_connections else norm


def mtp(whole: Component, blocks: tuple[str, ...] = (), own: Component | None = None,
        copy: str | None = None) -> Component:
    """The ``L_mtp`` multi-token-prediction modules a checkpoint stores beside the model, which transformers does
    not build: their parameters are reported apart (``mtp``), never in the total.

    Without ``blocks``, DeepSeek-V3's and GLM-4.5's (``model.layers.{L}``: DeepSeek-V3's ``MTP`` of its
    ``inference/model.py`` and paper §2.2), as the checkpoint holds them: its own copies of the embedding and the
    output head (``embed_tokens``, ``shared_head.head``; the paper shares them with the main model), ``enorm``
    and ``hnorm`` (RMSNorms of ``d``), ``eh_proj`` (``2d -> d``), one block like the model's last layer (the
    group ``copy``, by default the last group of ``whole``: groups are in the order their kind first appears,
    so the last group is not always the last layer's) and ``shared_head.norm``. With ``blocks`` (names of ``whole``'s
    groups of blocks, one a block of the module), one whose embedding and head are the model's: vLLM's
    ``NemotronHMultiTokenPredictor`` (``mtp.layers.*``: ``enorm``, ``hnorm`` and ``eh_proj`` on its first layer,
    ``final_layernorm`` on its last, each layer of ``mtp_hybrid_override_pattern`` a Nemotron-H block) and
    ``Qwen3NextMultiTokenPredictor`` (``mtp.*``: ``pre_fc_norm_embedding``, ``pre_fc_norm_hidden``, ``fc`` of ``2d ->
    d``, one full-attention layer, ``norm``): two norms and a ``2d -> d`` fusion before the blocks, a norm after them.
    ``own``: the DeepSeek-style module's block where it differs from the last group's (GLM-5's: its own indexer, the
    last layers' reusing a previous top-k; built by :mod:`symllm.arch.resolved`'s parameter table).

    >>> sp.expand(mtp(model()).total("params") - L_mtp * block().total("params"))
    2*L_mtp*V*d + 2*L_mtp*d**2 + 3*L_mtp*d
    >>> sp.expand(mtp(model(), ("block",)).total("params") - L_mtp * block().total("params"))
    2*L_mtp*d**2 + 3*L_mtp*d
    """
    fusion = linear("eh_proj", 2 * d, d, doc="self.eh_proj = nn.Linear(2 * dim, dim, bias=False)",
                    rules=Rules("replicated", lora=(), weight="linear", stacks=(), label="multi-token prediction"))
    if blocks:
        counts = {name: blocks.count(name) for name in dict.fromkeys(blocks)}
        return Component(
            "mtp", repeat=L_mtp,
            children=(rmsnorm("enorm"), rmsnorm("hnorm"), fusion,
                      *(whole.child(name).replace(repeat=count) for name, count in counts.items()),
                      rmsnorm("final_norm")),
            doc="a multi-token-prediction module sharing the model's embedding and head (mtp.* of the checkpoint)",
            rules=NO_WEIGHT)
    last = own or (whole.child(copy) if copy else [c for c in whole.children if c.checkpoint != 0][-1])

    def nextn(comp: Component, name: str) -> Component:  # its GGUF name: gguf-py's NEXTN_* (nextn.eh_proj, ...)
        return named(comp, comp.rules.hf, f"nextn.{name}")

    return Component(
        "mtp", repeat=L_mtp,
        children=(nextn(embedding(), "embed_tokens"), nextn(rmsnorm("enorm"), "enorm"),
                  nextn(rmsnorm("hnorm"), "hnorm"), nextn(fusion, "eh_proj"), last.replace(repeat=1),
                  nextn(rmsnorm("shared_head_norm"), "shared_head_norm"), nextn(lm_head(), "shared_head_head")),
        doc="the multi-token-prediction module (model.layers.{L} of the checkpoint)", rules=NO_WEIGHT)


def component(name: str, whole: Component | None = None) -> Component:
    """The component called ``name`` (see :data:`COMPONENTS`; ``swiglu`` is ``feed_forward``) as it sits
    in the model ``whole`` (default: :func:`model` with default options); ``block`` is one block.

    >>> component("swiglu").name
    'feed_forward'
    >>> component("block").repeat, component("rmsnorm").total("params")
    (1, d)
    """
    if name not in COMPONENTS:
        raise SymllmError(with_list(f"component: unknown {short(name, 20)} (known: ", COMPONENTS,
                                    see="symllm derive --help", near=name))
    whole = whole if whole is not None else model()
    path = COMPONENTS[name]
    if not path.startswith("block"):
        comp = whole.child(path)
    else:  # the first group of blocks that has it (Maverick's MoE is its second group)
        for group in (c for c in whole.children if c.checkpoint != 0):
            try:
                comp = group.child(path.partition("/")[2])
                break
            except SymllmError:
                continue
        else:
            raise SymllmError(f"component: this model has no {name!r}")
    return comp.replace(repeat=1) if comp.repeat != 1 else comp


#: model() with every structural option switched on: every factory's parts, each at least once
#: (:func:`lora_names` reads the declarations from it): each option's value with every part on
#: (:attr:`symllm.arch.part_options.Option.on`), and a kind of layer for each way layers differ
EVERY_PART = dict(every_part(),
                  kinds=(LayerKind(window="sliding"), LayerKind(ffn="moe", window="chunked"),
                         LayerKind(ffn="moe", rotary=False, temperature=True), LayerKind(mixer="linear_attention"),
                         LayerKind(mixer="mamba", ffn="none"), LayerKind(mixer="none"),
                         LayerKind(mixer="compressed_sparse", ffn="moe")),
                  variant=Variant(**{o.field: o.on for o in OPTIONS if o.axis == "variant" and o.on is not None}))
#: the parts that replace others (Phi-3's fused projections replace wq/wk/wv and w1/w3): a second model
#: :func:`lora_names` reads, after :data:`EVERY_PART`'s
EVERY_FUSED = dict(EVERY_PART, variant=dataclasses.replace(EVERY_PART["variant"], fused=True), delta_split=True)
#: MPT's projections (the ALiBi variant's Wqkv and out_proj, PEFT's names for them): a third model :func:`lora_names`
#: reads, after :data:`EVERY_FUSED`'s (the ALiBi option is not in :data:`EVERY_PART`: its Wqkv replaces Phi-3's)
EVERY_ALIBI = dict(EVERY_FUSED, variant=dataclasses.replace(EVERY_FUSED["variant"], alibi=True))
#: the same for a model with latent attention (DeepSeek), whose attention and shared experts exclude some of
#: EVERY_PART's (q/k/v biases, QK-norm, windows, Llama 4's shared expert, layers without RoPE)
EVERY_LATENT_PART = dict(every_part(latent=True), kinds=(LayerKind(), LayerKind(ffn="moe")))


def lora_names() -> dict[str, str]:
    """Every name LoRA may target -> its symllm name, read from the linears' :class:`Rules` (symllm's
    names first, in model order, then HF/PEFT's): the vocabulary of ``--lora-targets``.

    >>> list(lora_names())[:7]
    ['wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3']
    >>> lora_names()["gate_proj"]
    'w1'
    """
    return dict(_lora_pairs())


@functools.cache
def _lora_pairs() -> tuple:
    """:func:`lora_names` as (name, symllm name) pairs, read once per process (four whole models are walked)."""
    pairs = dict.fromkeys(c.rules.lora for every in (EVERY_PART, EVERY_FUSED, EVERY_LATENT_PART, EVERY_ALIBI)
                          for c in model(**every).walk() if c.rules.lora)
    # a name that is symllm's for one linear and HF's for another (the sparse-attention indexer's wq_b and wk)
    # stays symllm's: the other is spelled by its own symllm name
    ours_names = {ours for ours, _ in pairs}
    return (*((ours, ours) for ours, _ in pairs), *((hf, ours) for ours, hf in pairs if hf not in ours_names))
