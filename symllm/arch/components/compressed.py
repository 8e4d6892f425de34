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
tensor-parallel plan splits only the routed experts, not even the shared expert: :func:`swiglu_clamps`; LoRA
targets every linear but the grouped output projection ``o_a_proj`` (PEFT wraps it as a plain linear whose forward
fails): :func:`symllm.costs.finetune.adapt`; no GGUF names: llama.cpp has none yet). ``kv_cache``: the window's
last ``W - 1`` keys of the one head (transformers' sliding-window slice), held as keys and values in a
sliding-only layer and as one tensor read as both in a compressing one. The
compressors' buffers, compressed entries and overlap state are ``state_cache`` (:func:`_series_state`).

Matmul FLOPs (a pass of ``s`` queries after ``t`` cached tokens; equal to ``FlopCounterMode`` on transformers'
eager model but for CSA's top-k, tests/test_dsv4.py): every linear's ``2·fan_in·fan_out`` a token (the
compressors' ``kv_proj`` and ``gate_proj`` too, the grouped ``o_a_proj`` ``2·n_h·d_h·r_o``); the core's
``4·n_h·d_h`` per query-key pair (:func:`core_pairs`): the window's keys (transformers keeps ``min(t, W - 1)`` and
the ``s`` new ones) and the compressed entries, ``⌊(t + s)/m⌋`` after the pass (:func:`entry_pairs`), every one
in an HCA layer and at most the top ``K_I`` in a CSA layer (what DeepSeek's sparse kernel gathers; transformers'
eager core scores them all and masks the rest: ``4·n_h·d_h`` more per unselected pair); the indexer's scores,
``2·n_I·d_I`` per query and compressed indexer key, every one; each hyper-connection's projection of the
flattened ``n_hc·d`` streams to ``(2 + n_hc)·n_hc`` mixing weights and its mix of the streams ``comb.T @ streams``
(``2·n_hc²·d`` a token), and ``hc_head``'s projection to ``n_hc`` weights. The compressors' pooling (a softmax-
weighted sum over each window), the head-weighted sum of the indexer's scores, the streams' collapse and expansion
and the Sinkhorn iterations are element-wise: not in the matmul bucket. Training is ``3×`` the forward's matmuls
(:mod:`symllm.costs.phases`) but for the indexer's, forward only (again under full recomputation): its one output,
the top-k indices, carries no gradient, so transformers runs no backward through it, holds nothing of it for
backward and leaves its weights' (and LoRA adapters') gradients None, declared on its rules as DeepSeek Sparse
Attention's indexer is (:attr:`~symllm.arch.components.base.Rules.no_grad`). So is a compressor whose prompt closes
none of its windows (``s < m``: its entries are empty, its projections feed nothing the loss reads), on the same
declaration as an expression in ``s`` (:func:`_idle`): ``1 + 2·min(⌊s/m⌋, 1)`` times its forward.

Element-wise FLOPs (docs/conventions.md's weights; equal to tests/elementwise_oracle.py's count of transformers'
forward, tests/test_elementwise.py): per closed window its pooling, entry norm and RoPE (:func:`_pooling`); per
token the weightless ``q_b_norm``, RoPE on the queries, the key-value head and the output (undone), the
indexer's query RoPE and head-weight scale; per query-key pair the scale and softmax, per query and head the
sink's softmax entry; per indexer score and head 4; the hyper-connections' (:func:`hyper_connection`) and
``hc_head``'s norms, sigmoids, softmax, ``I_hc`` Sinkhorn rounds, collapses and stream updates (a block has no
residual add of its own); the SwiGLUs' clamps (:func:`swiglu_clamps`).

Saved activations (``saved``, ``eager_saved``) and the inference working set (``live``, ``eager_live``; the block's
``resident``): each part's, as transformers' eager model holds them (docs/conventions.md, "Compressed attention";
:func:`norm_saved`, :func:`_compressor_saved`, :func:`_eager_live`).

>>> from symllm.arch.symbols import d, d_h, n_h, r_q
>>> a = compressed_attention("shared_kv")
>>> [c.name for c in a.children]
['wq_a', 'q_a_norm', 'wq_b', 'wkv', 'kv_norm', 'wo_a', 'wo_b', 'sinks', 'scores', 'context']
>>> sp.expand(a.total("params") - (d*r_q + r_q + r_q*n_h*d_h + d*d_h + d_h + n_h*d_h*r_o + g_o*r_o*d + n_h))
0
>>> sp.expand(compressed_attention("heavily_compressed").total("params") - a.total("params"))
2*d*d_h + d_h*m_h + d_h
"""
from __future__ import annotations

import dataclasses

import sympy as sp


from symllm.arch.components.base import (check_switches, T, Component, ELEMENTWISE, INDEX_BYTES, linear, matmul, Rules,
                                         STAT_BYTES)
from symllm.arch.components.gqa import query_key_pairs, WindowPairs
from symllm.arch.components.norms import rmsnorm
from symllm.arch.algebra import minimum
from symllm.arch.dtypes import FP32
from symllm.arch.symbols import (W, b, beta_a, beta_kv, d, d_ff, d_h, d_I, d_se, g_o, I_hc, k, K_I, m_c, m_h, n,
                                 n_e, n_h, n_hc, n_I, r_o, r_q, s, t)
from symllm.validate import choice

#: the positions a layer's cache has seen after a pass: the ``t`` cached and the ``s`` new
_HELD = t + s

__all__ = ["LABEL", "compressed_attention", "compressor", "hyper_connection", "hyper_head", "COMPRESSED_MIXERS",
           "EntryPairs", "TopEntryPairs", "entry_pairs", "norm_saved"]

#: the LayerKind mixers of DeepSeek-V4's attention -> transformers' layer type
COMPRESSED_MIXERS = {"shared_kv": "sliding_attention", "compressed_sparse": "compressed_sparse_attention",
                     "heavily_compressed": "heavily_compressed_attention"}

#: how the stacks and the workload checks name these parts
LABEL = "DeepSeek-V4's compressed attention and hyper-connections"


class EntryPairs(WindowPairs):
    """``Σ_{j=1}^{x} ⌊j/m⌋``: the compressed entries the query at position ``j`` (1-based) may see, one per
    closed window of ``m`` tokens (transformers' ``causal_threshold = (position + 1) // compress_rate``), summed
    over the first ``x`` positions; ``E(x) - E(x - 1) = ⌊x/m⌋``, so a decode step's entries telescope over steps.

    >>> EntryPairs(10, 4), sum(j // 4 for j in range(1, 11))
    (10, 10)
    """

    @staticmethod
    def explicit(x, m):
        q = sp.floor(x / m)
        return m * q * (q - 1) / 2 + q * (x - q * m + 1)


class TopEntryPairs(WindowPairs):
    """``Σ_{j=1}^{x} min(K, ⌊j/m⌋)`` for ``w = (m, K)``: the compressed entries a CSA query attends, at most the
    indexer's top ``K`` of those it may see (:class:`EntryPairs`).

    >>> TopEntryPairs(10, sp.Tuple(2, 3)), sum(min(3, j // 2) for j in range(1, 11))
    (21, 21)
    """

    @classmethod
    def eval(cls, x, w):
        if x == 0:
            return sp.S.Zero
        if x.is_Integer and all(a.is_Integer for a in w):
            return cls.explicit(x, w)
        return None

    @staticmethod
    def explicit(x, w):
        m, k = w
        low = sp.Min(x, k * m)  # past k·m every query sees at least k entries and attends k
        return EntryPairs.explicit(low, m) + k * (x - low)


def entry_pairs(rate, causal: bool, top=None) -> sp.Expr:
    """Query-entry pairs per sequence and head of a pass of ``s`` queries after ``t`` cached tokens, over the
    compressed entries of one every ``rate`` tokens (``top``: at most that many a query, CSA's ``K_I``).
    Not ``causal``: what transformers computes, each query against every entry the cache holds after the pass,
    ``s·min(top, ⌊(t + s)/rate⌋)`` (written as a first difference, so that decode steps telescope); ``causal``:
    the entries each query may see, ``⌊(p + 1)/rate⌋`` for the query at position ``p``.

    >>> entry_pairs(4, False).subs({t: 6, s: 3}), entry_pairs(4, True).subs({t: 6, s: 3})
    (6, 5)
    >>> entry_pairs(2, False, 3).subs({t: 6, s: 3}), entry_pairs(2, True, 3).subs({t: 6, s: 3})
    (9, 9)
    """
    def pairs(x):
        return EntryPairs(x, rate) if top is None else TopEntryPairs(x, sp.Tuple(rate, top))
    if causal:
        return pairs(t + s) - pairs(t)
    return s * (pairs(t + s) - pairs(t + s - 1))


def _rules(hf: str, weight: str = "linear", lora: tuple[str, ...] = (), refused: tuple[str, ...] = (),
           engines: tuple[tuple[str, str], ...] = (), units=None) -> Rules:
    """A part of DeepSeek-V4's attention or streams: replicated (transformers' plan keeps them whole; ``engines``:
    an engine's own split, :data:`VLLM`, by ``units``), in no named stack; a linear adapted by LoRA under ``lora``'s
    names."""
    return Rules("replicated", lora=lora, weight=weight, stacks=(), label=LABEL, hf=hf, refused=refused,
                 engines=engines, units=units)


#: vLLM's split of the parts transformers' plan keeps whole (vllm/model_executor/models/deepseek_v4.py at
#: vllm-project/vllm 023da1fc828eb07787cf0734a1ba32f0a0f11887, read 2026-11-29; tests/test_dsv4_tp.py quotes it):
#: ``wq_b = ColumnParallelLinear``, ``wo_a = ColumnParallelLinear`` (its output groups), ``wo_b = RowParallelLinear``,
#: the shared expert a ``DeepseekV4MLP`` (``MergedColumnParallelLinear`` gate and up, ``RowParallelLinear`` down)
VLLM = {"wq_b": "column", "wo_a": "column", "wo_b": "row"}
#: the whole units vLLM's split of a part keeps together beyond the heads (:attr:`Rules.units`): the grouped output
#: projection's ``g_o`` groups. vLLM gives a rank ``self.n_local_groups = self.n_groups // tp_size`` of them (no assert;
#: deepseek_v4.py above) and its forward divides the rank's heads among them (``heads_per_group=self.n_local_heads //
#: self.n_local_groups``, vllm/model_executor/layers/deepseek_v4_attention.py, stored version
#: 0a291a2e1074b13971361df76245548a4ea4a77d, read 2026-11-29): at ``tp > o_groups`` a rank holds no group and that
#: division fails; below, a ``tp`` not dividing ``o_groups`` gives ``wo_a`` rows that are not whole groups (or fails
#: ``ColumnParallelLinear``'s divisibility assert). So tensor ranks must divide ``o_groups`` (tests/test_dsv4_tp.py)
VLLM_UNITS = {"wo_a": g_o, "wo_b": g_o}


#: a linear's LoRA name by its module name: PEFT matches ``target_modules`` against the end of every module's
#: name, so one name adapts each linear called so, the compressors' and the indexer's with the attention's
#: (``kv_proj``: attention, compressor and indexer; ``gate_proj``: compressor and indexer, beside the shared
#: expert's ``w1``; ``q_b_proj``: attention and indexer); the names symllm gives elsewhere where it has them
#: (latent attention's ``wq_a``/``wq_b``, the SwiGLU's ``w1``)
LORA = {"q_a_proj": "wq_a", "q_b_proj": "wq_b", "kv_proj": "wkv", "gate_proj": "w1", "weights_proj": "weights_proj",
        "o_a_proj": "wo_a", "o_b_proj": "wo_b"}


def _linear(name: str, fan_in, fan_out, hf: str, doc: str) -> Component:
    # o_a_proj (a DeepseekV4GroupedLinear): PEFT wraps it as a plain linear, whose forward then fails
    # (tests/test_dsv4.py): a LoRA target naming it is refused
    ours = LORA[hf]
    engines = (("vllm", VLLM[name]),) if name in VLLM else ()
    return linear(name, fan_in, fan_out, doc=doc, rules=_rules(
        hf, lora=(ours, hf), refused=(ours,) if hf == "o_a_proj" else (), engines=engines, units=VLLM_UNITS.get(name)))


#: 1 where ``x.float()`` makes a copy (activations not fp32), 0 where it returns ``x`` itself (fp32 activations): the
#: code's explicit fp32 casts keep a second tensor for backward only then
COPIED = sp.Min(sp.Max(beta_a - FP32, FP32 - beta_a), 1)  # (no Abs: the compiled kernels have none)


def norm_saved(width, rows=T) -> sp.Expr:
    """Bytes ``DeepseekV4RMSNorm`` saves for backward over ``rows`` rows of ``width``: it computes in fp32
    whatever the activations (``hidden_states.to(torch.float32)``), so ``pow`` keeps that fp32 input, ``rsqrt``
    its fp32 output (one a row) and the weight's product the fp32 normalised rows.

    >>> norm_saved(d).subs({b: 2, s: 3, d: 8})  # 4·(2·6·8 + 6)
    408
    """
    return FP32 * (2 * rows * width + rows)


def _norm(name: str, width, hf: str, doc: str, rows=T) -> Component:
    return rmsnorm(name, width, rows, doc=doc, rules=_rules(hf, "norm")).replace(saved=norm_saved(width, rows))


def _entry_norm(name: str, width, hf: str, doc: str) -> Component:
    """A compressor's RMSNorm: it normalises each compressed entry, not each token, so its element-wise work is
    counted with the entries (:func:`_pooling`)."""
    return _norm(name, width, hf, doc).replace(elementwise=0, saved=0)


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


def _closed(rate) -> sp.Expr:
    """Compressed entries a pass of ``s`` tokens after ``t`` closes: ``⌊(t + s)/rate⌋ - ⌊t/rate⌋`` (the windows its
    tokens complete; without a cache, transformers pools the ``⌊s/rate⌋`` whole windows of the prompt)."""
    return sp.floor(_HELD / rate) - sp.floor(t / rate)


def _pooling(rate, width, slots, rotated) -> sp.Expr:
    """Element-wise FLOPs of a compressor's closed windows in a pass (per sequence): each window's gate plus its
    ``position_bias`` (``rate × width``: 1 each), the softmax over its ``slots`` (4), the gated product (1) and the
    sum over the slots (1), each of the pooled ``d`` wide series (``slots × d`` where ``width`` is two series of
    ``d``), then the entry's RMSNorm (``ELEMENTWISE['rmsnorm']`` a channel) and RoPE on its last ``rotated``
    channels (``ELEMENTWISE['rope']``). HCA: one series of ``d_h`` over ``m_h`` slots; CSA: the two series of
    ``d_h`` (``2·d_h`` wide) over ``2·m_c`` slots, the first window's earlier half ``-inf`` gates, computed all
    the same; the indexer's at ``d_I``."""
    series = width if slots == rate else width / 2
    entry = (rate * width + (ELEMENTWISE["softmax"] - 1 + 2) * slots * series
             + ELEMENTWISE["rmsnorm"] * series + ELEMENTWISE["rope"] * rotated)
    return b * _closed(rate) * entry


def _entries(rate) -> sp.Expr:
    """Compressed entries a training forward over ``s`` tokens pools a sequence: its ``⌊s/rate⌋`` whole windows."""
    return sp.floor(s / rate)


def _idle(rate) -> sp.Expr:
    """1 where a training prompt closes none of a compressor's windows (``s < rate``), 0 where it closes one or
    more: its :attr:`~symllm.arch.components.base.Rules.no_grad`. transformers' compressor (no cache) pools the
    ``⌊s/rate⌋·rate`` first positions of its ``kv_proj`` and ``gate_proj`` outputs; with none, its entries are
    ``new_zeros`` and nothing it computed reaches the loss (its forward runs, its backward never, nothing of it is
    held, its weights' gradients stay None). With one window or more the slice's backward writes the whole of
    ``kv_proj``'s and ``gate_proj``'s output gradient (zeros past the last window), so both projections' backward
    runs over all ``s`` tokens: all or nothing, not in proportion to the windows closed.

    >>> [_idle(4).subs(s, x) for x in (1, 3, 4, 9)]
    [1, 1, 0, 0]
    """
    return 1 - minimum(_entries(rate), 1)


def _compressor_saved(rate, slots, rotated) -> sp.Expr:
    """Bytes a compressor's training forward saves for backward (transformers' eager ``DeepseekV4HCACompressor`` /
    ``DeepseekV4CSACompressor`` without a cache, ``C = ⌊s/rate⌋`` windows of the prompt, one or more: with none it
    holds nothing, :func:`_idle`): the pooled keys of each window, ``slots`` a window of ``d_h`` (HCA: the slice of
    ``kv_proj``'s output it views, whose storage holds every one of the ``s`` positions; CSA: the ``2·m_c`` slots
    ``new_kv`` copies them into), the
    gates' fp32 softmax and its cast to the activations' dtype (:data:`COPIED`), the entries' RMSNorm
    (:func:`norm_saved` over ``b·C`` rows) and RoPE's cos and sin tables of the entries' positions, ``b·C`` rows of
    the ``rotated`` channels each. The indexer keeps nothing: its top-k indices carry no gradient, so nothing it
    saved is reachable from the loss (its graph is freed at the end of the forward).

    >>> # 2·9·8 + (4 + 2)·2·4·8 + 4·(2·2·8 + 2) + 2·2·2·2
    >>> _compressor_saved(4, 4, 2).subs({b: 1, s: 9, d_h: 8, beta_a: 2})
    680
    """
    C = _entries(rate)
    pooled = slots * b * C * d_h
    kv = beta_a * (b * s * d_h if slots == rate else pooled)
    return kv + (FP32 + beta_a * COPIED) * pooled + norm_saved(d_h, b * C) + 2 * beta_a * b * C * rotated


def _core(name: str, flops, doc: str) -> Component:
    """A part of the attention core or the indexer's scoring: matmul FLOPs, no weight."""
    return Component(name, flops=flops, doc=doc, rules=Rules("replicated", lora=(), stacks=(), label=LABEL))


def compressor(kind: str, *, causal: bool = False, rotated=d_h) -> Component:
    """The compressor of a ``heavily_compressed`` (HCA: one series, ``m_h`` tokens an entry) or ``compressed_sparse``
    layer (CSA: two overlapping series of ``d_h``, ``m_c`` tokens an entry, and its lightning indexer).

    >>> sp.expand(compressor("heavily_compressed").total("params"))
    2*d*d_h + d_h*m_h + d_h
    >>> sp.expand(compressor("compressed_sparse").child("indexer").total("params"))
    4*d*d_I + d*n_I + 2*d_I*m_c + d_I*n_I*r_q + d_I
    """
    choice("compressor", kind, ("heavily_compressed", "compressed_sparse"))
    check_switches(causal=causal)
    if kind == "heavily_compressed":
        return Component("compressor", elementwise=_pooling(m_h, d_h, m_h, rotated), children=(
            _linear("compress_kv", d, d_h, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, head_dim)"),
            _linear("compress_gate", d, d_h, "gate_proj", "self.gate_proj = nn.Linear(hidden_size, head_dim)"),
            _vector("position_bias", m_h * d_h, "position_bias", "nn.Parameter(torch.empty(compress_rate, head_dim))"),
            _entry_norm("compress_norm", d_h, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(head_dim)")),
            state_cache=b * _series_state(m_h, d_h, False), saved=_compressor_saved(m_h, m_h, rotated),
            doc="DeepseekV4HCACompressor", rules=dataclasses.replace(_rules("compressor", "none"), no_grad=_idle(m_h)))
    index = Component("indexer", children=(
        _linear("index_kv", d, 2 * d_I, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, 2 * index_head_dim)"),
        _linear("index_gate", d, 2 * d_I, "gate_proj", "self.gate_proj = nn.Linear(hidden_size, 2 * index_head_dim)"),
        _vector("index_position_bias", m_c * 2 * d_I, "position_bias",
                "nn.Parameter(torch.empty(compress_rate, 2 * index_head_dim))"),
        _entry_norm("index_norm", d_I, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(index_head_dim)"),
        _linear("index_wq_b", r_q, n_I * d_I, "q_b_proj", "self.q_b_proj = nn.Linear(q_lora_rank, index_n_heads * "
                "index_head_dim)"),
        _linear("index_weights", d, n_I, "weights_proj", "self.scorer.weights_proj = nn.Linear(hidden_size, "
                "index_n_heads)"),
        # every query's index_n_heads heads against every compressed indexer key (both causal and not: the
        # top-k needs every score); the head-weighted sum is element-wise (scores * weights).sum(dim=2)
        _core("index_scores", matmul(b * n_I, d_I, 1) * entry_pairs(m_c, causal),
              "scores = torch.matmul(q.float(), compressed_kv.transpose(-1, -2).float().unsqueeze(1))"
              ).replace(elementwise=4 * b * n_I * entry_pairs(m_c, causal))),
        # its pooling; RoPE on its queries' heads; the head weights' scale (1 a token and head); per score and
        # head: ReLU, the 1/√d_I scale, the head weight's multiply and the sum over heads (4)
        elementwise=_pooling(m_c, 2 * d_I, 2 * m_c, rotated) + ELEMENTWISE["rope"] * T * n_I * rotated + T * n_I,
        state_cache=b * _series_state(m_c, 2 * d_I, True),
        # forward only in training (Rules.no_grad): its one output, the top-k indices, carries no gradient
        doc="DeepseekV4Indexer", rules=dataclasses.replace(_rules("indexer", "none"), no_grad=True))
    return Component("compressor", children=(
        _linear("compress_kv", d, 2 * d_h, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, 2 * head_dim)"),
        _linear("compress_gate", d, 2 * d_h, "gate_proj", "self.gate_proj = nn.Linear(hidden_size, 2 * head_dim)"),
        _vector("position_bias", m_c * 2 * d_h, "position_bias",
                "nn.Parameter(torch.empty(compress_rate, 2 * head_dim))"),
        _entry_norm("compress_norm", d_h, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(head_dim)"),
        index), state_cache=b * _series_state(m_c, 2 * d_h, True), elementwise=_pooling(m_c, 2 * d_h, 2 * m_c, rotated),
        saved=_compressor_saved(m_c, 2 * m_c, rotated),
        doc="DeepseekV4CSACompressor", rules=dataclasses.replace(_rules("compressor", "none"), no_grad=_idle(m_c)))


def core_pairs(kind: str, causal: bool = False) -> sp.Expr:
    """Query-key pairs per sequence and head of the attention core of a layer of ``kind``: the sliding window's
    (:func:`~symllm.arch.components.gqa.query_key_pairs`: transformers' ``min(t, W - 1) + s`` keys a query, or those the
    mask keeps) and the compressed entries' (:func:`entry_pairs`): all of them in a ``heavily_compressed``
    layer, at most the indexer's top ``K_I`` in a ``compressed_sparse`` one (what a sparse kernel gathers;
    transformers' eager core scores every entry and masks the others).

    >>> core_pairs("heavily_compressed").subs({t: 0, s: 9, W: 4, m_h: 4})  # 9 queries × (9 keys + 2 entries)
    99
    """
    window = query_key_pairs(causal, "sliding")
    if kind == "shared_kv":
        return window
    if kind == "heavily_compressed":
        return window + entry_pairs(m_h, causal)
    return window + entry_pairs(m_c, causal, K_I)


def _fused_live(keys) -> sp.Expr:
    """Activation elements a fused core holds live in a prefill (the convention of
    :mod:`symllm.arch.components.gqa`'s: no ``s × k`` tensor): q_a_norm's output (the compressor reads it after the
    core in transformers' order), the queries, the ``keys`` of the one key-value head, the output and a log-sum-exp
    per query and head (fp32, in whole activation elements)."""
    return (T * r_q + 2 * T * n_h * d_h + b * keys * d_h
            + sp.ceiling(STAT_BYTES / beta_a) * b * n_h * s)


def _eager_live(kind: str, keys, rotated) -> tuple[sp.Expr, ...]:
    """Activation elements transformers' eager ``DeepseekV4Attention`` holds live at its peak in a prefill of ``s``
    tokens without a cache (measured on CPU by the live storages' bytes, tests/test_dsv4.py), the larger of two
    moments: the softmax's max subtraction, the scores after the mask, the scores with the sinks' column, their
    maxima and the difference (``b·n_h·s·(3·k + 3)`` over the ``k`` keys); and A·V's output made contiguous, the
    difference, the probabilities, A·V's output and its copy (``2·b·n_h·s·(k + 1) + 2·b·s·n_h·d_h``: this one at
    published widths, ``d_h`` 512, for fewer than ``2·d_h`` keys); each beside q_a_norm's output, RoPE's repeated cos
    and sin (``s`` rows of half the rotated channels each), the queries, the keys (the window's and the compressed
    entries, one head); a compressing layer also keeps its compressed entries, the block bias over them (HCA ``b·s·C``;
    CSA ``b·s·(C + 1)`` and a ``2·s`` buffer of the indexer's rotary) and the mask widened to the keys (``b·s·k``). A
    decode step's candidate is its core's score-sized tensors alone, ``b·n_h·(3·k + 3)`` with ``k`` its keys after the
    ``s + n`` positions (the window's ``min(s + n - 1, W - 1) + 1`` and every entry)."""
    C = keys - s
    common = T * r_q + s * rotated + T * n_h * d_h + b * keys * d_h
    if kind == "heavily_compressed":
        common += b * C * d_h + b * s * C + b * s * keys
    elif kind == "compressed_sparse":
        common += b * C * d_h + b * s * (C + 1) + 2 * s + b * s * keys
    rate = {"heavily_compressed": m_h, "compressed_sparse": m_c}.get(kind)
    held = s + n
    decoded = minimum(held - 1, W - 1) + 1 + (sp.floor(held / rate) if rate is not None else 0)
    rows = b * n_h * s
    return (common + rows * (3 * keys + 3),  # at the max subtraction
            common + rows * 2 * (keys + 1) + 2 * T * n_h * d_h,  # at A·V's output made contiguous
            b * n_h * (3 * decoded + 3))


def compressed_attention(kind: str = "shared_kv", *, causal: bool = False, rotated=d_h) -> Component:
    """DeepSeek-V4's attention in a layer of ``kind`` (:data:`COMPRESSED_MIXERS`; the module docstring).

    Matmul FLOPs: the projections' (:func:`~symllm.arch.components.base.linear`; ``o_a_proj``, a block-diagonal
    ``bmm``, ``2·n_h·d_h·r_o`` a token), the core's ``2·n_h·d_h`` for ``QKᵀ`` and again for ``A·V`` per query-key
    pair (:func:`core_pairs`; the one key-value head is broadcast to the ``n_h`` query heads), the compressor's.

    >>> [c.name for c in compressed_attention("compressed_sparse").children][-1]
    'compressor'
    >>> compressed_attention().child("scores").flops.subs({t: 0, W: 8})
    2*b*d_h*n_h*s**2
    """
    choice("mixer", kind, tuple(COMPRESSED_MIXERS))
    check_switches(causal=causal)
    pairs = core_pairs(kind, causal)
    # the window's last W - 1 keys (DynamicSlidingWindowLayer's slice), one head; a sliding-only layer's cache
    # holds them as keys and as values, a compressing layer's one tensor read as both (``self.values = self.keys``)
    window = minimum(_HELD, W - 1) * d_h
    # element-wise, a token: the weightless q_b_norm (ELEMENTWISE['l2norm'] an element of the n_h·d_h queries),
    # RoPE on the last ``rotated`` channels of each query head, of the one key-value head and, undone, of each
    # output head; per query-key pair the scale and softmax (ELEMENTWISE['softmax']), per query and head the
    # sink's logit in the softmax (without the scale, as gpt-oss's sinks)
    own = (T * (ELEMENTWISE["l2norm"] * n_h * d_h + ELEMENTWISE["rope"] * (2 * n_h + 1) * rotated)
           + ELEMENTWISE["softmax"] * b * n_h * pairs + (ELEMENTWISE["softmax"] - ELEMENTWISE["scale"]) * T * n_h)
    # saved for backward (a training forward, no cache; transformers' eager model, tests/test_dsv4.py): the normed
    # input of q_a_proj and kv_proj; the weightless q_b_norm's input and 1/rms (fp32, and in the activations' dtype
    # where .float() copies); the queries after RoPE (QKᵀ's operand); RoPE's cos and sin tables, repeated for each of
    # its three uses (queries, the key-value head, the output undone), s rows of the rotated channels each
    queries = T * n_h * d_h
    saved = (beta_a * (T * d + queries + 6 * s * rotated) + (FP32 + beta_a * COPIED) * (queries + T * n_h))
    # the keys a training query's core holds: the s of the window (the mask keeps W) and every compressed entry
    keys = s + (0 if kind == "shared_kv" else _entries(m_h if kind == "heavily_compressed" else m_c))
    return Component("attention", kv_cache=b * window * (2 if kind == "shared_kv" else 1), elementwise=own,
                     saved=saved, children=(
        _linear("wq_a", d, r_q, "q_a_proj", "self.q_a_proj = nn.Linear(hidden_size, q_lora_rank)"),
        _norm("q_a_norm", r_q, "q_a_norm", "self.q_a_norm = DeepseekV4RMSNorm(q_lora_rank)"),
        _linear("wq_b", r_q, n_h * d_h, "q_b_proj", "self.q_b_proj = nn.Linear(q_lora_rank, num_heads * head_dim)"
                ).replace(saved=beta_a * T * r_q),  # its input, q_a_norm's output
        _linear("wkv", d, d_h, "kv_proj", "self.kv_proj = nn.Linear(hidden_size, head_dim)  # one head, K = V"),
        _norm("kv_norm", d_h, "kv_norm", "self.kv_norm = DeepseekV4RMSNorm(head_dim)"),
        # DeepseekV4GroupedLinear(n_h·d_h/g_o, g_o·r_o, g_o): a weight of g_o·r_o × n_h·d_h/g_o
        _linear("wo_a", n_h * d_h / g_o, g_o * r_o, "o_a_proj", "self.o_a_proj = DeepseekV4GroupedLinear("
                "num_heads * head_dim // o_groups, o_groups * o_lora_rank, o_groups)"
                ).replace(saved=beta_a * queries),  # its input, the output with RoPE undone
        _linear("wo_b", g_o * r_o, d, "o_b_proj", "self.o_b_proj = nn.Linear(o_groups * o_lora_rank, hidden_size)"
                ).replace(saved=beta_a * T * g_o * r_o),  # its input
        _vector("sinks", n_h, "sinks", "self.sinks = nn.Parameter(torch.empty(num_heads))", "sinks"),
        # the core's own: fused (a FlashAttention-style kernel with sinks), the one key-value head once, the
        # output and a log-sum-exp per query and head; eager (transformers'), repeat_kv's two copies of the keys
        # (for QKᵀ and A·V), the softmax's output over the keys and the sink, and max's int64 indices
        _core("scores", matmul(b * n_h, d_h, 1) * pairs,
              "attn_weights = torch.matmul(query, key_states.transpose(2, 3))").replace(
            saved=STAT_BYTES * b * n_h * s + beta_a * (b * keys * d_h + queries),
            eager_saved=beta_a * b * n_h * (2 * keys * d_h + s * (keys + 1)) + INDEX_BYTES * b * n_h * s,
            live=(_fused_live(keys),), eager_live=_eager_live(kind, keys, rotated)),
        _core("context", matmul(b * n_h, d_h, 1) * pairs, "attn_output = torch.matmul(attn_weights, value_states)"),
        *((compressor(kind, causal=causal, rotated=rotated),) if kind != "shared_kv" else ())),
        doc=f"DeepseekV4Attention ({COMPRESSED_MIXERS[kind]})", rules=_rules("self_attn", "none"))


def hyper_connection(name: str, hf: str) -> Component:
    """One manifold-constrained hyper-connection (``attn_hc`` or ``ffn_hc`` of a block): the projection of the
    ``n_hc`` flattened streams to the pre, post and comb weights, its bias and three scales.

    >>> sp.expand(hyper_connection("attn_hc", "attn_hc").total("params") - ((2 + n_hc) * n_hc * (n_hc * d + 1) + 3))
    0
    """
    width = (2 + n_hc) * n_hc
    # element-wise, a token: the weightless RMSNorm of the n_hc·d flattened streams (ELEMENTWISE['l2norm']); pre
    # and post, sigmoid(w·scale + base) (+ eps, or × 2: 1 + 1 + 4 + 1 a stream each); comb, softmax(w·scale + base)
    # + eps (1 + 1 + 4 + 1 an entry); Sinkhorn: a column sum and divide, then I_hc - 1 rounds of a row and a column
    # sum and divide (2 + 4·(I_hc - 1) an entry); the collapse pre·streams summed over the streams (2 an element);
    # the block's update of the streams, post·output + the mix (a multiply and an add an element)
    sinkhorn = 2 + 4 * (I_hc - 1)
    elementwise = T * (ELEMENTWISE["l2norm"] * n_hc * d + 2 * (2 + ELEMENTWISE["sigmoid"] + 1) * n_hc
                       + (2 + ELEMENTWISE["softmax"] - 1 + 1 + sinkhorn) * n_hc ** 2 + 2 * n_hc * d + 2 * n_hc * d)
    # saved for backward (transformers' eager DeepseekV4HyperConnection, then the block's update of the streams):
    # the flattened streams as fp32 (and the streams themselves where .float() copies: the collapse and the mix
    # read them) and their 1/rms; the normed rows (fn's input), the projection's output (pre, post and comb read
    # views of it), the two sigmoids' outputs and pre, comb's softmax, and each Sinkhorn division's numerator and
    # denominator (2·I_hc - 1 of them), all fp32; the update post·output + comb.T @ streams keeps post, the
    # sublayer's output and comb
    streams = T * n_hc * d
    sinkhorn_saved = (2 * I_hc - 1) * (T * n_hc ** 2 + T * n_hc)
    saved = (FP32 * (2 * streams + T + T * width + 3 * T * n_hc + T * n_hc ** 2 + sinkhorn_saved)
             + beta_a * COPIED * streams + beta_a * T * (n_hc + d + n_hc ** 2))
    # the mix of the streams into the block's output: comb.T @ hidden_states, n_hc × n_hc by n_hc × d a token
    return Component(name, flops=matmul(T * n_hc, n_hc, d), elementwise=elementwise, saved=saved, children=(
        _vector(f"{name}_fn", width * n_hc * d, "fn", "nn.Parameter(torch.empty((2 + hc_mult) * hc_mult, "
                "hc_mult * hidden_size))").replace(flops=matmul(T, n_hc * d, width)),
        _vector(f"{name}_base", width, "base", "nn.Parameter(torch.empty((2 + hc_mult) * hc_mult))"),
        _vector(f"{name}_scale", 3, "scale", "nn.Parameter(torch.empty(3))")),
        doc="DeepseekV4HyperConnection", rules=_rules(hf, "none"))


def swiglu_clamps(ffn: Component) -> Component:
    """DeepSeek-V4's feed-forward with its SwiGLUs clamped (``swiglu_limit``: ``gate.clamp(max=limit)``,
    ``up.clamp(min=-limit, max=limit)``, in the routed experts and the shared expert): 3 compares per element of
    each gate, added to the ``experts`` and ``shared_experts`` of ``ffn``. Their gate elements are their matmul
    FLOPs over ``2·d`` (three linears of ``d`` by the width: ``6·d`` FLOPs a gate element).

    And what transformers' eager ``DeepseekV4SparseMoeBlock`` holds for backward (``eager_saved``; the fused
    stack keeps the mixture's own convention), from modeling_deepseek_v4.py: the block's normed input; the
    router's logits (softplus's input), its scores (the square root's output), the ``k`` gathered weights and
    their sum (the division's) and the gather's int64 indices; per token-expert pair (``DeepseekV4Experts``' loop)
    the gathered input, the fused ``gate_up`` output (both clamps read it), the clamped gate (SiLU's input),
    SiLU's output and the clamped up (the product's), the product (down's input), down's output and the routing
    weight (the weighting's), the weighted output (``index_add_`` keeps its source) and the two int64 positions
    ``torch.where`` gives (token, slot); the shared expert's two projections' outputs (the clamps'), the clamped
    gate, SiLU's output, the clamped up and the product: ``6·d_se`` a token.

    >>> from symllm.arch.components import moe
    >>> m = moe(shared_experts=True)
    >>> sp.expand(swiglu_clamps(m).child("experts").elementwise - m.child("experts").elementwise)
    3*b*d_ff*k*s
    >>> swiglu_clamps(m).child("experts").total("eager_saved")
    b*k*s*(3*beta_a*d + 6*beta_a*d_ff + beta_a + 16)
    """
    pairs = k * T  # token-expert pairs
    eager = {"experts": beta_a * pairs * (3 * d + 6 * d_ff + 1) + 2 * INDEX_BYTES * pairs,
             "shared_experts": 6 * beta_a * T * d_se}

    def clamped(c: Component) -> Component:
        if c.name not in ("experts", "shared_experts"):
            return c
        if c.name == "shared_experts":  # transformers' deepseek_v4 plan splits only the routed experts; vLLM
            # splits the shared expert as a dense MLP (:data:`VLLM`), by whole columns of its width d_se
            # (``MergedColumnParallelLinear``: ``assert all(output_size % self.tp_size == 0 ...)``, vllm
            # model_executor/layers/linear.py, stored version 0036d38de46c5d48fdedeb658dedc0fc0f95677d, read 2026-11-29)
            c = c.replace(children=tuple(x.replace(rules=dataclasses.replace(
                x.rules, split="replicated", engines=(("vllm", x.rules.split),), units=d_se)) for x in c.children))
        return c.replace(elementwise=c.elementwise + sp.expand(3 * c.total("flops") / (6 * d)),
                         eager_saved=sp.factor(eager[c.name]))
    if ffn.name != "moe":
        return ffn.replace(children=tuple(clamped(c) for c in ffn.children))
    return ffn.replace(children=tuple(clamped(c) for c in ffn.children),
                       eager_saved=beta_a * (T * d + 2 * T * n_e + pairs + T) + INDEX_BYTES * pairs)


def hyper_head() -> Component:
    """The final collapse of the ``n_hc`` streams (``model.hc_head``).

    >>> sp.expand(hyper_head().total("params"))
    d*n_hc**2 + n_hc + 1
    """
    # element-wise, a token: the streams' weightless RMSNorm, sigmoid(w·scale + base) + eps (7 a stream), the
    # collapse (2 an element)
    elementwise = T * ((ELEMENTWISE["l2norm"] + 2) * n_hc * d + (2 + ELEMENTWISE["sigmoid"] + 1) * n_hc)
    # saved: the streams as fp32 (and themselves where .float() copies), their 1/rms and normed rows, the
    # projection's output, its sigmoid and pre (fp32)
    streams = T * n_hc * d
    saved = FP32 * (2 * streams + T + 3 * T * n_hc) + beta_a * COPIED * streams
    return Component("hc_head", elementwise=elementwise, saved=saved, children=(
        _vector("hc_fn", n_hc * n_hc * d, "hc_fn", "nn.Parameter(torch.empty(hc_mult, hc_mult * hidden_size))"
                ).replace(flops=matmul(T, n_hc * d, n_hc)),
        _vector("hc_base", n_hc, "hc_base", "nn.Parameter(torch.empty(hc_mult))"),
        _vector("hc_scale", 1, "hc_scale", "nn.Parameter(torch.empty(1))")),
        doc="DeepseekV4HyperHead", rules=_rules("model.hc_head", "none"))
