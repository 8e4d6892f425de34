"""Grouped-query attention (MHA, GQA, MQA) and its parts: :func:`rope`, gpt-oss's :func:`sinks`, and
the query-key pairs of full, sliding and chunked attention (:class:`SlidingPairs`, :class:`ChunkedPairs`)."""
from __future__ import annotations

import dataclasses

import sympy as sp

from symllm.arch import keeps
from symllm.arch.algebra import minimum
from symllm.arch.components.base import (ELEMENTWISE, STAT_BYTES, T, Component, Rules, check_switches, linear,
                                         linear_rules, matmul, no_weight, structure_of)
from symllm.arch.components.norms import qk_norms
from symllm.arch.layers import LayerKind, Structure, WINDOWS, window_pairs
from symllm.arch.symbols import b, beta_a, d, d_h, d_ha, d_hr, d_hv, n, n_h, n_ha, n_kv, n_kva, s, t, W
from symllm.errors import SymllmError
from symllm.validate import choice


def rope(heads: sp.Expr = n_h + n_kv, width: sp.Expr = d_h) -> Component:
    """Rotary position embedding: no parameters (``freqs_cis`` is a buffer); rotates ``width`` elements
    of each of ``heads`` query and key heads (a partial rotary, GLM-4.5: ``d_hr`` of ``d_h``; MLA: its
    ``d_hr``-wide RoPE part of ``n_h`` query heads and one shared key head).

    >>> rope().params, rope().elementwise
    (0, 3*b*d_h*s*(n_h + n_kv))
    """
    return Component("rope", elementwise=ELEMENTWISE["rope"] * T * heads * width,
                     doc="xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)", rules=no_weight(keeps.rope))


class WindowPairs(sp.Function):
    """``P(x, W)``: the unmasked query-key pairs of the first ``x`` positions of a sequence under a window
    ``W`` (a sum over positions of the keys each sees). Kept unevaluated inside a component's FLOPs so
    that a sum over decode steps telescopes (``P(t+1) - P(t)`` summed over ``t`` is two terms);
    :func:`expand_windows` writes it out with ``Min`` / ``floor`` (what ``costs`` hands on).

    >>> isinstance(SlidingPairs(t, W), WindowPairs), SlidingPairs(0, W), SlidingPairs(3, 2).is_Integer
    (True, 0, True)
    """

    @classmethod
    def eval(cls, x, w):
        if x == 0:
            return sp.S.Zero
        if x.is_Integer and w.is_Integer:
            return cls.explicit(x, w)
        return None

    @staticmethod
    def explicit(x, w):  # pragma: no cover - each subclass states its own
        raise NotImplementedError


class SlidingPairs(WindowPairs):
    """``Σ_{j=1}^{x} min(j, W)``: position ``j`` (1-based) sees the last ``min(j, W)`` positions.

    >>> SlidingPairs(10, 4), sum(min(j, 4) for j in range(1, 11))
    (34, 34)
    >>> SlidingPairs.explicit(s, W)
    W*(s - Min(W, s)) + (Min(W, s) + 1)*Min(W, s)/2
    """

    @staticmethod
    def explicit(x, w):
        return window_pairs("sliding", x, w, least=sp.Min, half=sp.S.Half)


class ChunkedPairs(WindowPairs):
    """``Σ_{j=1}^{x} ((j - 1) mod W + 1)``: position ``j`` sees the positions of its own chunk up to itself.

    >>> ChunkedPairs(10, 4), sum((j - 1) % 4 + 1 for j in range(1, 11))
    (23, 23)
    """

    @staticmethod
    def explicit(x, w):
        return window_pairs("chunked", x, w, floor_div=lambda a, m: sp.floor(a / m), half=sp.S.Half)


def expand_windows(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every :class:`SlidingPairs` / :class:`ChunkedPairs` written out in ``Min`` / ``floor``.

    >>> expand_windows(SlidingPairs(s, W) - SlidingPairs(s - 1, W)).subs({s: 9, W: 4})
    4
    """
    if not expr.has(WindowPairs):
        return expr
    return expr.replace(lambda e: isinstance(e, WindowPairs), lambda e: type(e).explicit(*e.args))


def query_key_pairs(causal: bool, window: str | None = None) -> sp.Expr:
    """Query-key pairs per sequence and head of a pass of ``s`` new queries after ``t`` cached tokens.

    Full attention: the dense rectangle ``s·(t + s)`` or the unmasked causal pairs. With a window the
    dense rectangle is what transformers computes: ``s`` queries × the keys it holds, the last
    ``min(t, W - 1)`` cached ones and the ``s`` new ones (its ``DynamicSlidingWindowLayer``, used for
    sliding and chunked layers alike); causal counts the pairs the mask keeps, ``P(t + s) - P(t)``.

    >>> pairs = query_key_pairs
    >>> pairs(False, "sliding").subs({t: 100, s: 1, W: 8}), pairs(True, "chunked").subs({t: 0, s: 10, W: 4})
    (8, 23)
    """
    choice("window", window, WINDOWS)
    if window is None:
        return s * t + s * (s + 1) / 2 if causal else s * (t + s)
    if not causal:
        return s * (sp.Min(t + 1, W) + s - 1)  # min(t, W - 1) + s keys, written so decode steps telescope
    pairs = SlidingPairs if window == "sliding" else ChunkedPairs
    return pairs(t + s, W) - pairs(t, W)


def temperature() -> Component:
    """Llama 4's attention temperature: the queries of a layer scaled by a per-position factor
    (``attn_temperature_tuning``), one multiply per query element; no parameter (the factor is computed).

    >>> temperature().elementwise
    b*d_h*n_h*s
    """
    return Component("temperature", elementwise=ELEMENTWISE["scale"] * T * n_h * d_h,
                     doc="query_states = query_states * attn_scales  # Llama 4: a layer without RoPE",
                     rules=Rules("replicated", lora=(), stacks=(), label="layers without RoPE (Llama 4)"))


def sinks() -> Component:
    """gpt-oss's attention sinks: one learned logit per query head (``n_h`` parameters per layer), appended to
    every row of scores before the softmax and dropped after it, so that a query may attend to "nothing".
    No matmul; the softmax runs over one more entry per query and head (``ELEMENTWISE['softmax']`` each but
    the ``1/√d_h`` scale a learned logit never gets: 4), and nothing enters the KV cache.

    >>> sinks().params, sinks().elementwise
    (n_h, 4*b*n_h*s)
    """
    # split with the query heads under tensor parallelism (transformers' GptOssConfig plan: "local_rowwise";
    # vLLM's GptOssAttention holds num_attention_heads // tp_size of them); no LoRA target; a vector, kept
    # in the model's dtype by every weight format
    # the sink entry is a learned logit, never scaled by 1/sqrt(d_h): the softmax's work on it but that scale
    return Component("sinks", params=n_h, elementwise=(ELEMENTWISE["softmax"] - ELEMENTWISE["scale"]) * b * n_h * s,
                     doc="self.sinks = nn.Parameter(torch.empty(config.num_attention_heads))  # GptOssAttention",
                     rules=Rules("heads", lora=(), weight="sinks", stacks=(), label="attention sinks (gpt-oss)",
                                 hf_params=("sinks",), gguf="attn_sinks"))  # bare on the attention: self_attn.sinks


#: the model's head shape -> the second one (a kind whose ``heads`` is "own": :data:`symllm.arch.layers.HEADS`)
_OWN_HEADS = {n_h: n_ha, n_kv: n_kva, d_h: d_ha}


def reshaped(comp: Component, sizes: dict) -> Component:
    """``comp`` and its whole tree with the symbols of ``sizes`` replaced (every quantity, a linear's shape):
    the attention of a layer with its own head shape is the model's with ``n_ha``, ``n_kva``, ``d_ha``.

    >>> reshaped(attention(), _OWN_HEADS).total("params")
    2*d*d_ha*n_ha + 2*d*d_ha*n_kva
    """
    def sub(x):
        return x.xreplace(sizes) if isinstance(x, sp.Basic) else x
    changes = {q: sub(getattr(comp, q)) for q in ("params", "flops", "elementwise", "kv_cache", "state_cache",
                                                 "saved", "checkpoint", "resident")}
    changes.update(active=None if comp.active is None else sub(comp.active),
                   live=tuple(map(sub, comp.live)), shape=tuple(map(sub, comp.shape)),
                   eager_saved=None if comp.eager_saved is None else sub(comp.eager_saved),
                   eager_live=None if comp.eager_live is None else tuple(map(sub, comp.eager_live)),
                   children=tuple(reshaped(c, sizes) for c in comp.children))
    return comp.replace(**changes)


def attention(structure: Structure | None = None, kind: LayerKind = LayerKind(), *, causal: bool = False,
              **options) -> Component:
    """Attention for MHA, GQA and MQA alike (``n_kv`` decides), with RoPE and the attention core, of a layer
    of ``kind`` in a model of ``structure`` (or of a :class:`Structure` of ``options``).

    ``wq: d -> n_h·d_h``, ``wk, wv: d -> n_kv·d_h``, ``wo: n_h·d_h -> d``; ``QKᵀ`` and ``A·V`` each
    cost ``2·b·n_h·d_h`` FLOPs per query-key pair (``causal`` picks which pairs count).
    The KV cache holds ``2·b·(t + s)·n_kv·d_h`` elements after the pass. ``attention_bias`` puts a bias on
    all four projections, ``qkv_bias`` on ``wq``, ``wk``, ``wv`` only (Qwen2); ``qk_norm="rmsnorm"`` adds
    Qwen3's ``q_norm`` and ``k_norm`` (see :func:`qk_norms`), ``"l2"`` Llama 4's (in its layers with RoPE).
    A kind without ``rotary`` has no rotation; one with ``temperature`` scales its queries (Llama 4's layers
    without RoPE). The kind's ``window`` (:data:`WINDOWS`) limits the keys a query sees to ``W`` (see
    :func:`query_key_pairs`); the cache then holds the last ``min(t + s, W)`` positions. The structure's
    ``partial_rope`` rotates only ``d_hr`` of each head's ``d_h`` elements (GLM-4.5's
    ``partial_rotary_factor``: element-wise work only), but in a kind whose ``rope_part`` is "whole", which
    rotates all of it (Laguna's sliding layers). The structure's ``sinks``
    adds gpt-oss's attention sinks (:func:`sinks`), a kind's ``sinks`` the same in its layers only (MiMo-V2-Flash's
    sliding ones). The structure's ``value_width`` gives the values heads of their own width ``d_hv``
    (MiMo-V2-Flash's ``v_head_dim``): ``wv``, ``wo``, ``A·V`` and the cache's values, and MiMo-V2-Flash's
    value scale (``attention_value_scale``, one multiply per new value element, which transformers' class does
    even by 1.0). A kind whose ``heads`` is "own" has the second head shape
    (``n_ha``, ``n_kva``, ``d_ha`` for ``n_h``, ``n_kv``, ``d_h``: :func:`reshaped`); one with ``k_eq_v`` has no
    ``wv`` (its values are ``wk``'s output; the cache still holds keys and values, as transformers' does). One
    with ``kv_shared`` reuses the keys and values an earlier layer made (Gemma 4's last ``num_kv_shared_layers``):
    no ``wk``, ``wv``, ``k_norm`` or value norm, only its queries rotated, nothing cached; it attends the same
    query-key pairs as a layer of its window.
    The structure's ``variant`` (:class:`Variant`): Phi-3's fused ``wqkv`` (the same parameters and FLOPs as
    ``wq``, ``wk``, ``wv``), Gemma 2's soft-capped scores (``softcap`` FLOPs per score; eager attention also
    saves the capped scores' tanh for backward), MPT's ALiBi (``alibi``: its bias added to every score, one FLOP a
    score; no parameter), Gemma's ``1 + weight`` QK-norms.

    >>> sp.factor(attention().total("params"))
    2*d*d_h*(n_h + n_kv)
    >>> sp.expand(attention(qkv_bias=True).total("params") - attention().total("params"))
    d_h*n_h + 2*d_h*n_kv
    """
    structure = structure_of(structure, options)
    check_switches(causal=causal)
    if not isinstance(kind, LayerKind):
        raise SymllmError(f"kind: expected a LayerKind, got {kind!r}")
    bias, qkv_bias, rotary, window = structure.attention_bias, structure.qkv_bias, kind.rotary, kind.window
    variant = structure.variant
    qk_norm = None if not rotary and structure.qk_norm == "l2" else structure.qk_norm  # Llama 4: RoPE layers only
    pairs = query_key_pairs(causal, window)
    def holds(positions):  # what the cache holds after ``positions`` tokens: all, or the window's last W
        return positions if window is None else minimum(positions, W)
    held = holds(t + s)  # positions in the cache after the pass
    in_bias = bias or qkv_bias
    norms = qk_norms(qk_norm, variant.norm_offset and qk_norm != "full") if qk_norm is not None else ()
    core = matmul(b * n_h, d_h, 1) * pairs  # per head and query-key pair, a d_h-long dot product
    dv = d_hv if structure.value_width else d_h  # a value head's width (MiMo-V2-Flash: its own, v_head_dim)
    per_score = (ELEMENTWISE["softmax"] + (ELEMENTWISE["softcap"] if variant.attn_softcap else 0)
                 + (ELEMENTWISE["alibi"] if variant.alibi else 0))
    scores_rules = (no_weight(keeps.scores) if not (variant.attn_softcap or variant.alibi) else Rules(
        "replicated", lora=(), stacks=(), label="soft-capped attention scores (Gemma 2)" if variant.attn_softcap
        else "ALiBi attention scores (MPT)"))
    # MPT (the ALiBi family) names its projections Wqkv and out_proj, and PEFT adapts them under those module
    # names (its default target for mpt is Wqkv: the one that holds q, k and v, as Phi-3's qkv_proj does)
    mpt = Rules("column", lora=("Wqkv", "Wqkv"), weight="linear", stacks=(), label="MPT's Wqkv", hf="Wqkv",
                holds=("wq", "wk", "wv"), gguf="attn_qkv") if variant.alibi else None  # gguf-py's MPT names
    if variant.fused:  # Phi-3: one linear for q, k and v, sliced after (its TP plan gathers the output)
        width = (n_h * d_h if kind.kv_shared else (n_h + (1 if kind.k_eq_v else 2) * n_kv) * d_h if dv == d_h
                 else (n_h + n_kv) * d_h + (0 if kind.k_eq_v else n_kv * dv))  # a shared layer: its queries only
        projections = (linear("wqkv", d, width, in_bias,
                              "self.qkv_proj = nn.Linear(hidden_size, (n_heads + 2 * n_kv_heads) * head_dim)",
                              rules=mpt or Rules("column", lora=("wqkv", "qkv_proj"), weight="linear", stacks=(),
                                                 label="fused projections (Phi-3)", holds=("wq", "wk", "wv"),
                                                 gguf="attn_qkv")),)  # gguf-py's PHI3 qkv_proj
    elif structure.output_gate:  # Qwen3-Next, Qwen3.5: q_proj also makes the output gate, one per query element
        projections = (
            linear("wq", d, 2 * n_h * d_h if dv == d_h else n_h * (d_h + dv), in_bias,
                   "self.q_proj = nn.Linear(hidden_size, num_attention_heads * "
                   "head_dim * 2)  # query, gate = chunk(2)", rules=linear_rules("column", "wq", "q_proj", "attn_q")),
            *(linear(name, d, n_kv * (dv if name == "wv" else d_h), in_bias, doc,
                     rules=linear_rules("column", name, hf, gguf))
              for name, hf, gguf, doc in (
                  ("wk", "k_proj", "attn_k", "self.k_proj = nn.Linear(hidden_size, num_key_value_heads * head_dim)"),
                  ("wv", "v_proj", "attn_v", "self.v_proj = nn.Linear(hidden_size, num_key_value_heads * head_dim)"))))
    else:
        projections = (
            linear("wq", d, n_h * d_h, in_bias, "self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim)",
                   rules=linear_rules("column", "wq", "q_proj", "attn_q")),  # ColumnParallelLinear
            linear("wk", d, n_kv * d_h, in_bias, "self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim)",
                   rules=linear_rules("column", "wk", "k_proj", "attn_k")),  # ColumnParallelLinear
            linear("wv", d, n_kv * dv, in_bias, "self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim)",
                   rules=linear_rules("column", "wv", "v_proj", "attn_v")),  # ColumnParallelLinear
        )
    if structure.gate_proj is not None:  # Laguna: a separate g_proj, one gate a head or a query element
        projections += (linear("wg", d, n_h if structure.gate_proj == "head" else n_h * dv, False,
                               "self.g_proj = nn.Linear(hidden_size, num_heads if gate_per_head else "
                               "num_heads * head_dim, bias=False)",
                               rules=Rules("column", lora=(), weight="linear", stacks=(),
                                           label="a softplus output gate (Laguna)",
                                           hf="g_proj")),)
    if kind.k_eq_v:  # Gemma 4: value_states = key_states, before k_norm, v_norm and RoPE
        projections = tuple(p for p in projections if p.name != "wv")
    shared = kind.kv_shared  # Gemma 4: key_states, value_states = shared_kv_states[self.layer_type]
    if shared:  # no k_proj, v_proj, k_norm, v_norm (Gemma4TextAttention builds none), keys not rotated here
        projections = tuple(p for p in projections if p.name not in ("wk", "wv"))
        norms = tuple(c for c in norms if c.name != "k_norm")
    # MPT's clip_qkv: mixed_qkv.clamp(min=-c, max=c), every output of the q, k and v projections (not Laguna's g_proj)
    clipped = sum(p.shape[1] for p in projections if p.name != "wg") if variant.clip_qkv else 0
    # LlamaForCausalLM's stacks hold a full-attention cache: a windowed attention is not theirs
    rules = no_weight(keeps.attention) if window is None else Rules(
        "replicated", lora=(), stacks=(),
        label=f"a {window} window ({'Mistral v0.1' if window == 'sliding' else 'Llama 4'})",
        window=window)
    rules = dataclasses.replace(rules, hf="attn" if variant.alibi else "self_attn")  # MptBlock's self.attn
    comp = Component(
        "attention",
        rules=rules,
        elementwise=ELEMENTWISE["clip"] * T * clipped,
        # a layer sharing keys and values holds none of its own (transformers' DummyLayer)
        kv_cache=0 if shared else 2 * b * held * n_kv * d_h if dv == d_h else b * held * n_kv * (d_h + dv),
        # saved for backward: the normed input of wq/wk/wv; Q and K after RoPE and V (n_kv heads: GQA
        # saves them unrepeated; a layer sharing them reads the tensors the layer that made them saved); the
        # attention output (the core's, and the input of wo); the core's own (the fused kernel's log-sum-exp,
        # or eager's probabilities) sits on `scores`
        saved=beta_a * (T * d + T * d_h * n_h + T * n_h * dv) if shared else
        beta_a * (T * d + T * d_h * (n_h + 2 * n_kv) + T * n_h * d_h) if dv == d_h else
        beta_a * (T * d + T * d_h * (n_h + n_kv) + T * dv * (n_kv + n_h)),
        children=(
            *projections,
            linear("wo", n_h * dv, d, bias, "self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim)",
                   rules=dataclasses.replace(mpt, split="row", lora=("out_proj", "out_proj"), label="MPT's out_proj",
                                             hf="out_proj", holds=(), gguf="attn_output") if mpt else
                   linear_rules("row", "wo", "o_proj", "attn_output")),  # RowParallelLinear
            *norms,
            *((sinks(),) if structure.sinks or kind.sinks else ()),
            *((Component("v_norm", elementwise=(ELEMENTWISE["rmsnorm"] - 1) * T * n_kv * dv,
                         doc="value_states = self.v_norm(value_states)  # Gemma4RMSNorm(with_scale=False)",
                         rules=Rules("replicated", lora=(), stacks=(), label="a weightless norm on the values "
                                     "(Gemma 4)")),) if variant.value_norm and not shared else ()),
            *((Component("value_scale", elementwise=ELEMENTWISE["scale"] * T * n_kv * dv,
                         doc="value_states = self.v_proj(hidden_states)... * self.v_scale  # MiMoV2FlashAttention: "
                             "attention_value_scale, 1.0 when None, multiplied all the same",
                         rules=Rules("replicated", lora=(), stacks=(), label="scaled values (MiMo-V2-Flash)")),)
              if structure.value_width and not shared else ()),
            *((Component("output_gate", elementwise=(ELEMENTWISE["sigmoid"] + ELEMENTWISE["gate"]) * T * n_h * dv,
                         saved=beta_a * T * n_h * dv,  # the gate, for the product's backward
                         doc="attn_output = attn_output * torch.sigmoid(gate)",
                         rules=Rules("replicated", lora=(), stacks=(), label="a gated attention output (Qwen3-Next, "
                                     "Qwen3.5)")),) if structure.output_gate else ()),
            *((Component("output_gate", elementwise=3 * T * (n_h if structure.gate_proj == "head" else n_h * dv)
                         + ELEMENTWISE["gate"] * T * n_h * dv,  # softplus (exp, add, log) of each gate; the product
                         saved=beta_a * T * n_h * dv, doc="attn_output = attn_output * F.softplus(gate)",
                         rules=Rules("replicated", lora=(), stacks=(), label="a softplus-gated attention output "
                                     "(Laguna)")),) if structure.gate_proj is not None else ()),
            # a partial rotary turns d_hr of each head, but in a layer rotating its whole head (Laguna's sliding)
            *((rope(n_h if shared else n_h + n_kv, d_hr if structure.partial_rope and kind.rope_part == "model"
                    else d_h),) if rotary else ()),
            *((temperature(),) if kind.temperature else ()),
            # fused (FlashAttention's forward, SDPA's flash kernel): saves one fp32 log-sum-exp per query and
            # head, and holds live q and the output (k and v are the cache's) and that log-sum-exp (in whole
            # activation elements: exact but for int4 activations, 4.125 bytes a row); the scores
            # are recomputed tile by tile in backward. Eager: saves the probabilities b·n_h·s·s (A·V's left
            # operand), and holds live a prefill's scores and probabilities, or a decode step's at context s + n
            Component("scores", flops=core, elementwise=per_score * b * n_h * pairs,
                      saved=STAT_BYTES * b * n_h * s,
                      live=((2 * T * n_h * d_h if dv == d_h else T * n_h * (d_h + dv))
                            + sp.ceiling(STAT_BYTES / beta_a) * b * n_h * s,),
                      eager_saved=(2 if variant.attn_softcap else 1) * beta_a * b * n_h * s ** 2,
                      eager_live=(2 * b * n_h * s ** 2,
                                  2 * b * n_h * holds(s + n)),  # a decode step: 1 query at context s + n - 1
                      doc="scores = softmax(torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim))"
                          + ("; softcap * tanh(scores / softcap) before the mask" if variant.attn_softcap else "")
                          + ("; + alibi (each head's slope times the key's distance) before the mask" if variant.alibi
                             else ""),
                      rules=scores_rules),
            Component("context", flops=core if dv == d_h else matmul(b * n_h, dv, 1) * pairs,
                      doc="output = torch.matmul(scores, values)",
                      rules=no_weight(keeps.context)),
        ),
        doc="Attention(args): wq, wk, wv, wo; n_kv_heads = n_heads is MHA, 1 is MQA",
    )
    return reshaped(comp, _OWN_HEADS) if kind.heads == "own" else comp
