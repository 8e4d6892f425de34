"""DeepSeek-V4's attention and residual streams, as transformers builds them (``DeepseekV4Attention``,
``DeepseekV4HCACompressor``, ``DeepseekV4CSACompressor``, ``DeepseekV4Indexer``, ``DeepseekV4HyperConnection``,
``DeepseekV4HyperHead``; transformers 5.23 ``models/deepseek_v4``).

Every layer's attention (:func:`compressed_attention`) is shared-key-value multi-query attention: one head of
``d_h`` made by ``kv_proj: d -> d_h`` through an RMSNorm (``kv_norm``), read as both key and value; queries
through a low-rank ``q_a_proj: d -> r_q``, its RMSNorm, ``q_b_proj: r_q -> n_h·d_h`` (and a weightless RMSNorm);
a learned sink per query head (``sinks``); a grouped output projection ``o_a_proj`` (``g_o`` groups, each of
``n_h·d_h/g_o`` inputs to ``r_o`` outputs: ``n_h·d_h·r_o`` weights) then ``o_b_proj: g_o·r_o -> d``. A layer of
kind ``shared_kv`` (``sliding_attention``) attends its last ``W`` keys only; ``heavily_compressed`` (HCA) adds a
compressor pooling every ``m_h`` tokens into one entry (``kv_proj`` and ``gate_proj: d -> d_h``, a
``position_bias`` of ``m_h × d_h``, ``kv_norm``); ``compressed_sparse`` (CSA) a compressor of two overlapping
series (``d -> 2·d_h`` each, ``position_bias`` ``m_c × 2·d_h``, ``kv_norm`` of ``d_h``) with a lightning indexer
(its own compressor at ``d_I``: ``kv_proj``, ``gate_proj: d -> 2·d_I``, ``position_bias`` ``m_c × 2·d_I``,
``kv_norm`` of ``d_I``; ``q_b_proj: r_q -> n_I·d_I``; ``weights_proj: d -> n_I``) that picks each query's top
``K_I`` compressed entries.

Each block keeps ``n_hc`` residual streams, mixed in and out of attention and of the feed-forward by a
manifold-constrained hyper-connection (:func:`hyper_connection`: ``fn`` of ``(2 + n_hc)·n_hc × n_hc·d``,
``base`` of ``(2 + n_hc)·n_hc``, ``scale`` of 3); :func:`hyper_head` collapses them before the final norm
(``hc_fn`` ``n_hc × n_hc·d``, ``hc_base`` ``n_hc``, ``hc_scale`` 1).

Parameters and caches are modelled (each part with its Hugging Face name, replicated: transformers'
tensor-parallel plan splits only the routed experts; LoRA never adapts them here; no GGUF names: llama.cpp has
none yet). ``kv_cache``: the window's last ``W - 1`` keys of the one head (transformers' sliding-window slice),
held as keys and values in a sliding-only layer and as one tensor read as both in a compressing one. The
compressors' buffers, compressed entries and overlap state are ``state_cache`` (:func:`_series_state`). The
FLOPs of the attention core and of the compressors and the hyper-connections' work are not modelled: a workload
on such a model is refused in one line (:mod:`symllm.costs.checks`); the linears' own FLOPs are what
:func:`~symllm.arch.components.base.linear` says.

>>> from symllm.arch.symbols import d, d_h, n_h, r_q
>>> a = compressed_attention("shared_kv")
>>> [c.name for c in a.children]
['wq_a', 'q_a_norm', 'wq_b', 'wkv', 'kv_norm', 'wo_a', 'wo_b', 'sinks']
>>> sp.expand(a.total("params") - (d*r_q + r_q + r_q*n_h*d_h + d*d_h + d_h + n_h*d_h*r_o + g_o*r_o*d + n_h))
0
>>> sp.expand(compressed_attention("heavily_compressed").total("params") - a.total("params"))
2*d*d_h + d_h*m_h + d_h
"""
from __future__ import annotations

import sympy as sp


from symllm.arch.components.base import Component, linear, Rules
from symllm.arch.components.norms import rmsnorm
from symllm.arch.algebra import minimum
from symllm.arch.symbols import W, b, beta_a, beta_kv, d, d_h, d_I, g_o, m_c, m_h, n_h, n_hc, n_I, r_o, r_q, s, t
from symllm.validate import choice

#: the positions a layer's cache has seen after a pass: the ``t`` cached and the ``s`` new
_HELD = t + s

__all__ = ["LABEL", "compressed_attention", "compressor", "hyper_connection", "hyper_head", "COMPRESSED_MIXERS"]

#: the LayerKind mixers of DeepSeek-V4's attention -> transformers' layer type
COMPRESSED_MIXERS = {"shared_kv": "sliding_attention", "compressed_sparse": "compressed_sparse_attention",
                     "heavily_compressed": "heavily_compressed_attention"}

#: how the stacks and the workload checks name these parts
LABEL = "DeepSeek-V4's compressed attention and hyper-connections"


def _rules(hf: str, weight: str = "linear") -> Rules:
    """A part of DeepSeek-V4's attention or streams: replicated (transformers' plan keeps them whole), never
    adapted by LoRA here, in no named stack."""
    return Rules("replicated", lora=(), weight=weight, stacks=(), label=LABEL, hf=hf)


def _linear(name: str, fan_in, fan_out, hf: str, doc: str) -> Component:
    return linear(name, fan_in, fan_out, doc=doc, rules=_rules(hf))


def _norm(name: str, width, hf: str, doc: str) -> Component:
    return rmsnorm(name, width, doc=doc, rules=_rules(hf, "norm"))


def _vector(name: str, params, hf: str, doc: str, weight: str = "bare") -> Component:
    """A parameter tensor on its module with no module of its own (``position_bias``, ``sinks``, ``fn``)."""
    return Component(name, params=params, doc=doc,
                     rules=Rules("replicated", lora=(), weight=weight, stacks=(), label=LABEL, hf_params=(hf,)))


def _series_state(rate, width, overlap: bool) -> sp.Expr:
    """Bytes per sequence a compressor's cache keeps for one series of ``width`` (DeepseekV4HCACache /
    DeepseekV4CSACache after the ``t + s`` positions seen): the tokens since the last full window in
    ``buffer_kv`` and ``buffer_gate`` (``width`` each, the activations' dtype), the ``⌊(t + s)/rate⌋`` compressed
    entries (``compressed_kv``, half of ``width`` with two series), and, with ``overlap`` (CSA), the last
    window's first series in ``overlap_kv`` and ``overlap_gate`` (``rate × width/2`` each) once a window closed."""
    entries = sp.floor(_HELD / rate)
    kept = width / 2 if overlap else width
    state = beta_a * 2 * sp.Mod(_HELD, rate) * width + beta_kv * entries * kept
    if overlap:
        state += beta_a * 2 * rate * kept * minimum(entries, 1)
    return state


def compressor(kind: str) -> Component:
    """The compressor of a ``heavily_compressed`` (HCA: one series, ``m_h`` tokens an entry) or ``compressed_sparse``
    layer (CSA: two overlapping series of ``d_h``, ``m_c`` tokens an entry, and its lightning indexer).

    >>> sp.expand(compressor("heavily_compressed").total("params"))
    2*d*d_h + d_h*m_h + d_h
    >>> sp.expand(compressor("compressed_sparse").child("indexer").total("params"))
    4*d*d_I + d*n_I + 2*d_I*m_c + d_I*n_I*r_q + d_I
    """
    choice("compressor", kind, ("heavily_compressed", "compressed_sparse"))
    if kind == "heavily_compressed":
        return Component("compressor", children=(
            _linear("compress_kv", d, d_h, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, head_dim)"),
            _linear("compress_gate", d, d_h, "gate_proj", "self.gate_proj = nn.Linear(hidden_size, head_dim)"),
            _vector("position_bias", m_h * d_h, "position_bias", "nn.Parameter(torch.empty(compress_rate, head_dim))"),
            _norm("compress_norm", d_h, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(head_dim)")),
            state_cache=b * _series_state(m_h, d_h, False),
            doc="DeepseekV4HCACompressor", rules=_rules("compressor", "none"))
    index = Component("indexer", children=(
        _linear("index_kv", d, 2 * d_I, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, 2 * index_head_dim)"),
        _linear("index_gate", d, 2 * d_I, "gate_proj", "self.gate_proj = nn.Linear(hidden_size, 2 * index_head_dim)"),
        _vector("index_position_bias", m_c * 2 * d_I, "position_bias",
                "nn.Parameter(torch.empty(compress_rate, 2 * index_head_dim))"),
        _norm("index_norm", d_I, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(index_head_dim)"),
        _linear("index_wq_b", r_q, n_I * d_I, "q_b_proj", "self.q_b_proj = nn.Linear(q_lora_rank, index_n_heads * "
                "index_head_dim)"),
        _linear("index_weights", d, n_I, "weights_proj", "self.scorer.weights_proj = nn.Linear(hidden_size, "
                "index_n_heads)")),
        state_cache=b * _series_state(m_c, 2 * d_I, True),
        doc="DeepseekV4Indexer", rules=_rules("indexer", "none"))
    return Component("compressor", children=(
        _linear("compress_kv", d, 2 * d_h, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, 2 * head_dim)"),
        _linear("compress_gate", d, 2 * d_h, "gate_proj", "self.gate_proj = nn.Linear(hidden_size, 2 * head_dim)"),
        _vector("position_bias", m_c * 2 * d_h, "position_bias",
                "nn.Parameter(torch.empty(compress_rate, 2 * head_dim))"),
        _norm("compress_norm", d_h, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(head_dim)"),
        index), state_cache=b * _series_state(m_c, 2 * d_h, True),
        doc="DeepseekV4CSACompressor", rules=_rules("compressor", "none"))


def compressed_attention(kind: str = "shared_kv") -> Component:
    """DeepSeek-V4's attention in a layer of ``kind`` (:data:`COMPRESSED_MIXERS`; the module docstring).

    >>> [c.name for c in compressed_attention("compressed_sparse").children][-1]
    'compressor'
    """
    choice("mixer", kind, tuple(COMPRESSED_MIXERS))
    # the window's last W - 1 keys (DynamicSlidingWindowLayer's slice), one head; a sliding-only layer's cache
    # holds them as keys and as values, a compressing layer's one tensor read as both (``self.values = self.keys``)
    window = minimum(_HELD, W - 1) * d_h
    return Component("attention", kv_cache=b * window * (2 if kind == "shared_kv" else 1), children=(
        _linear("wq_a", d, r_q, "q_a_proj", "self.q_a_proj = nn.Linear(hidden_size, q_lora_rank)"),
        _norm("q_a_norm", r_q, "q_a_norm", "self.q_a_norm = DeepseekV4RMSNorm(q_lora_rank)"),
        _linear("wq_b", r_q, n_h * d_h, "q_b_proj", "self.q_b_proj = nn.Linear(q_lora_rank, num_heads * head_dim)"),
        _linear("wkv", d, d_h, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, head_dim)  # one head, K = V"),
        _norm("kv_norm", d_h, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(head_dim)"),
        # DeepseekV4GroupedLinear(n_h·d_h/g_o, g_o·r_o, g_o): a weight of g_o·r_o × n_h·d_h/g_o
        _linear("wo_a", n_h * d_h / g_o, g_o * r_o, "o_a_proj", "self.o_a_proj = DeepseekV4GroupedLinear("
                "num_heads * head_dim // o_groups, o_groups * o_lora_rank, o_groups)"),
        _linear("wo_b", g_o * r_o, d, "o_b_proj", "self.o_b_proj = nn.Linear(o_groups * o_lora_rank, hidden_size)"),
        _vector("sinks", n_h, "sinks", "self.sinks = nn.Parameter(torch.empty(num_heads))", "sinks"),
        *((compressor(kind),) if kind != "shared_kv" else ())),
        doc=f"DeepseekV4Attention ({COMPRESSED_MIXERS[kind]})", rules=_rules("self_attn", "none"))


def hyper_connection(name: str, hf: str) -> Component:
    """One manifold-constrained hyper-connection (``attn_hc`` or ``ffn_hc`` of a block): the projection of the
    ``n_hc`` flattened streams to the pre, post and comb weights, its bias and three scales.

    >>> sp.expand(hyper_connection("attn_hc", "attn_hc").total("params") - ((2 + n_hc) * n_hc * (n_hc * d + 1) + 3))
    0
    """
    width = (2 + n_hc) * n_hc
    return Component(name, children=(
        _vector(f"{name}_fn", width * n_hc * d, "fn", "nn.Parameter(torch.empty((2 + hc_mult) * hc_mult, "
                "hc_mult * hidden_size))"),
        _vector(f"{name}_base", width, "base", "nn.Parameter(torch.empty((2 + hc_mult) * hc_mult))"),
        _vector(f"{name}_scale", 3, "scale", "nn.Parameter(torch.empty(3))")),
        doc="DeepseekV4HyperConnection", rules=_rules(hf, "none"))


def hyper_head() -> Component:
    """The final collapse of the ``n_hc`` streams (``model.hc_head``).

    >>> sp.expand(hyper_head().total("params"))
    d*n_hc**2 + n_hc + 1
    """
    return Component("hc_head", children=(
        _vector("hc_fn", n_hc * n_hc * d, "hc_fn", "nn.Parameter(torch.empty(hc_mult, hc_mult * hidden_size))"),
        _vector("hc_base", n_hc, "hc_base", "nn.Parameter(torch.empty(hc_mult))"),
        _vector("hc_scale", 1, "hc_scale", "nn.Parameter(torch.empty(1))")),
        doc="DeepseekV4HyperHead", rules=_rules("model.hc_head", "none"))
