"""Independent numeric reference model for symllm: a plain-torch LLaMA.

symllm derives parameter counts, FLOPs and memory in closed form with SymPy; this module is what the tests
check those formulas against.  It shares no code with the symbolic side: it is a re-implementation of Meta's
``llama/model.py`` (meta-llama/llama3) with plain ``nn.Linear`` / ``nn.Embedding`` instead of fairscale's
parallel layers.  It follows Meta line for line in:

* ``RMSNorm``: ``self._norm(x.float()).type_as(x) * self.weight``;
* ``precompute_freqs_cis`` (theta = ``rope_theta``) and ``apply_rotary_emb`` (rotating the pairs (2i, 2i+1)),
  written with real cos/sin arithmetic instead of complex tensors so that it also runs on the ``meta`` device;
* ``repeat_kv`` and ``Attention.forward``: two explicit ``torch.matmul`` calls (QK^T / sqrt(hd) and scores @ V),
  an additive causal mask and a float32 softmax (no ``scaled_dot_product_attention``, so FLOP counters see both);
* ``FeedForward``: hidden size rule and ``w2(silu(w1(x)) * w3(x))``;
* ``TransformerBlock`` / ``Transformer``: module names, pre-norm residuals and ``output(norm(h)).float()`` logits
  for every position (or the last ``logits_to_keep``, as transformers' ``LlamaForCausalLM``).

Deliberate differences from Meta: optional biases (``attention_bias`` on wq/wk/wv/wo as in HF ``LlamaAttention``,
``qkv_bias`` on wq/wk/wv only as in HF ``Qwen2Attention``, ``mlp_bias`` on w1/w2/w3), an optional QK-norm
(``qk_norm="rmsnorm"``: an ``RMSNorm(head_dim)`` on every query and key head before RoPE, as in HF
``Qwen3Attention``), an explicit ``head_dim``, tied embeddings, a KV cache that grows by concatenation (so its
size equals the tokens actually stored, no max_batch/max_seq preallocation), no ``inference_mode`` decorator
(backward passes can be traced), and the "float32" upcasts are ``promote_types(dtype, float32)`` so a float64
model is never downcast (identical to Meta for fp32/fp16/bf16). Llama 3.1 RoPE frequency scaling is not
implemented (it changes no count).

The dense families beyond LLaMA's block, each an option read from ``args``: Phi-3's fused projections
(``fused``: ``wqkv`` sliced into q, k, v; ``w13`` chunked into gate and up, as ``Phi3Attention`` /
``Phi3MLP``), OLMo 2's QK-norm over the whole q and k (``qk_norm="full"``) and its norms after attention
and feed-forward (``norms="post"``), Gemma's GeGLU (``activation="gelu_tanh"``: ``F.gelu(approximate=
"tanh")``), RMSNorm by ``1 + weight`` (``norm_offset``), embeddings times ``sqrt(dim)`` (``embed_scale``),
Gemma 2's sandwich norms (``norms="sandwich"``) and soft-capped scores and logits (``attn_softcap``,
``final_softcap``: ``c * tanh(x / c)``), MPT's ALiBi (``alibi``) and ungated exact-GELU MLP (``activation="gelu"``).

Only this module imports torch; nothing else in symllm imports it at import time.
"""

import contextlib
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["build", "count", "Transformer", "meta_hidden_dim"]


def meta_hidden_dim(dim: int, multiple_of: int, ffn_dim_multiplier: Optional[float]) -> int:
    """SwiGLU hidden size exactly as Meta's ``FeedForward.__init__`` computes it."""
    hidden = 4 * dim
    hidden = int(2 * hidden / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """Meta's ``x.float()``, except that float64 stays float64."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


class _Config:
    """Resolved hyper-parameters read (duck-typed) from any ``args`` object."""

    def __init__(self, args):
        self.dim = int(args.dim)
        self.n_layers = int(args.n_layers)
        self.n_heads = int(args.n_heads)
        n_kv = getattr(args, "n_kv_heads", None)
        self.n_kv_heads = self.n_heads if n_kv is None else int(n_kv)
        self.vocab_size = int(args.vocab_size)
        self.multiple_of = int(getattr(args, "multiple_of", 256))
        self.ffn_dim_multiplier = getattr(args, "ffn_dim_multiplier", None)
        hidden = getattr(args, "hidden_dim", None)
        self.hidden_dim = (
            meta_hidden_dim(self.dim, self.multiple_of, self.ffn_dim_multiplier)
            if hidden is None else int(hidden)
        )
        head_dim = getattr(args, "head_dim", None)
        self.head_dim = self.dim // self.n_heads if head_dim is None else int(head_dim)
        self.tie_embeddings = bool(getattr(args, "tie_embeddings", False))
        self.attention_bias = bool(getattr(args, "attention_bias", False))
        self.mlp_bias = bool(getattr(args, "mlp_bias", False))
        self.qkv_bias = bool(getattr(args, "qkv_bias", False))
        self.qk_norm = getattr(args, "qk_norm", None)
        assert self.qk_norm in (None, "rmsnorm", "l2", "full", "layernorm"), f"unknown qk_norm {self.qk_norm!r}"
        self.fused = bool(getattr(args, "fused", False))
        self.norms = getattr(args, "norms", "pre")
        assert self.norms in ("pre", "post", "sandwich", "parallel"), f"unknown norms {self.norms!r}"
        self.layernorm = bool(getattr(args, "layernorm", False))  # Command-R: Cohere's LayerNorm everywhere
        self.logit_scale = getattr(args, "logit_scale", None)
        self.activation = getattr(args, "activation", "silu")
        assert self.activation in ("silu", "gelu_tanh", "relu2", "gelu"), f"unknown activation {self.activation!r}"
        self.alibi = bool(getattr(args, "alibi", False))  # MPT: slope_h·(j - i) added to every score
        self.norm_offset = bool(getattr(args, "norm_offset", False))
        self.embed_scale = bool(getattr(args, "embed_scale", False))
        self.attn_softcap = getattr(args, "attn_softcap", None)
        self.final_softcap = getattr(args, "final_softcap", None)
        # mixture of experts (Mixtral, Llama 4) and Llama 4's layers without RoPE
        self.n_experts = getattr(args, "n_experts", None)
        self.experts_per_token = getattr(args, "experts_per_token", None)
        self.shared_expert = bool(getattr(args, "shared_expert", False))
        # Qwen2-MoE's gated shared expert of its own width; gpt-oss's router/expert biases, clamped SwiGLU, sinks
        self.shared_hidden_dim = getattr(args, "shared_hidden_dim", None)
        self.moe_bias = bool(getattr(args, "moe_bias", False))
        self.clamped_swiglu = bool(getattr(args, "clamped_swiglu", False))
        self.attention_sinks = bool(getattr(args, "attention_sinks", False))
        # the kind of each layer, in model order (symllm.arch.layers.LayerKind)
        kinds = args.layer_kinds() if hasattr(args, "layer_kinds") else ()
        mixer = next((m for m in (getattr(k, "mixer", "attention") for k in kinds) if m != "attention"), None)
        from symllm.errors import SymllmError  # transformers' own classes check what it refuses (tests/test_*.py)
        if mixer is not None:
            what = {"linear_attention": "Gated DeltaNet", "mamba": "Mamba-2", "none": "MLP-only"}.get(mixer, "DeepSeek-V4 attention")
            raise SymllmError(f"verify: the torch reference has no {what} layers")
        if getattr(args, "per_layer_dim", None) or any(k.heads != "model" or k.k_eq_v or k.kv_shared or k.wide_ffn for k in kinds):
            raise SymllmError("verify: the torch reference has no Gemma 4 layers (own head shapes, k_eq_v, shared keys "
                              "and values, a doubled MLP, per-layer inputs)")
        self.moe_layers = {i for i, kind in enumerate(kinds) if kind.ffn == "moe"}
        if not kinds and self.n_experts is not None:  # Meta's ModelArgs-like object: every layer MoE
            self.moe_layers = set(range(self.n_layers))
        self.dense_hidden_dim = getattr(args, "dense_hidden_dim", None)
        self.nope_layers = {i for i, kind in enumerate(kinds) if not kind.rotary}
        self.temperature_layers = {i for i, kind in enumerate(kinds) if kind.temperature}  # Llama 4's
        # DeepSeek: shared experts of n_shared_experts x hidden_dim, multi-head latent attention
        self.n_shared_experts = getattr(args, "n_shared_experts", None)
        self.kv_lora_rank = getattr(args, "kv_lora_rank", None)
        self.q_lora_rank = getattr(args, "q_lora_rank", None)
        self.qk_rope_head_dim = getattr(args, "qk_rope_head_dim", None)
        self.qk_nope_head_dim = getattr(args, "qk_nope_head_dim", None)
        self.v_head_dim = getattr(args, "v_head_dim", None)
        if self.kv_lora_rank is None and self.v_head_dim is not None:
            from symllm.errors import SymllmError
            # transformers' own classes check them instead (tests/test_mimo.py)
            raise SymllmError("verify: the torch reference has no GQA values of their own width (v_head_dim)")
        self.norm_eps = float(getattr(args, "norm_eps", 1e-5))
        self.rope_theta = float(getattr(args, "rope_theta", 10000.0))
        assert self.n_heads % self.n_kv_heads == 0, "n_heads must be a multiple of n_kv_heads"
        assert self.head_dim % 2 == 0, "RoPE needs an even head_dim"


class RMSNorm(nn.Module):
    """Root-mean-square layer norm with a learnable ``weight`` of size ``dim``."""

    def __init__(self, dim: int, eps: float = 1e-6, offset: bool = False):
        super().__init__()
        self.eps = eps
        self.offset = offset  # Gemma: scale by (1 + weight), the weight starting at zero
        self.weight = nn.Parameter(torch.zeros(dim) if offset else torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if self.offset:  # Gemma computes (x * (1 + w)) in float32, then casts
            return (self._norm(_upcast(x)) * (1.0 + _upcast(self.weight))).type_as(x)
        return self._norm(_upcast(x)).type_as(x) * self.weight


class LayerNorm(nn.Module):
    """Cohere's LayerNorm: the mean subtracted, scaled by 1/std and a learnable ``weight`` of ``shape``, no
    bias (``shape`` ``(heads, head_dim)``: a weight per head, normalising each head's last axis)."""

    def __init__(self, shape, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(shape))

    def forward(self, x):
        xf = _upcast(x)
        centred = xf - xf.mean(-1, keepdim=True)
        return (centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def _norm(cfg, dim: int) -> nn.Module:
    """The model's norm of width ``dim``: Cohere's LayerNorm (Command-R) or an RMSNorm."""
    return LayerNorm(dim, eps=cfg.norm_eps) if cfg.layernorm else RMSNorm(dim, eps=cfg.norm_eps, offset=cfg.norm_offset)


def rope_cos_sin(head_dim: int, start: int, seqlen: int, theta: float, device, dtype):
    """cos/sin tables (seqlen, head_dim//2) for positions start..start+seqlen-1: Meta's
    ``precompute_freqs_cis(head_dim, end, theta)[start:start+seqlen]``'s angles."""
    exponents = torch.arange(0, head_dim, 2, device=device)[: head_dim // 2].to(dtype) / head_dim  # (hd/2,)
    freqs = 1.0 / (theta ** exponents)  # (hd/2,)
    t = torch.arange(start, start + seqlen, device=device, dtype=dtype)  # (s,)
    angles = torch.outer(t, freqs)  # (s, hd/2)
    return torch.cos(angles), torch.sin(angles)


def apply_rotary_emb(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (2i, 2i+1) of ``x`` (b, s, h, hd); Meta's complex product in real form."""
    xf = _upcast(x).reshape(*x.shape[:-1], -1, 2)  # (b, s, h, hd/2, 2)
    x0, x1 = xf[..., 0], xf[..., 1]  # (b, s, h, hd/2) each
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]  # (1, s, 1, hd/2) each
    out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)  # (b, s, h, hd/2, 2)
    return out.flatten(3).type_as(x)  # (b, s, h, hd)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """torch.repeat_interleave(x, dim=2, repeats=n_rep), as in Meta."""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim)  # (b, slen, n_h, hd)


class Attention(nn.Module):
    """Grouped-query attention with RoPE and an optional growing KV cache."""

    def __init__(self, cfg: _Config, rope: bool = True, temperature: bool = False):
        super().__init__()
        self.rope = rope
        self.temperature = temperature
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.n_rep = self.n_heads // self.n_kv_heads
        bias, in_bias = cfg.attention_bias, cfg.attention_bias or cfg.qkv_bias
        self.fused = cfg.fused
        if self.fused:  # Phi-3: q, k and v from one projection, sliced
            self.wqkv = nn.Linear(cfg.dim, (self.n_heads + 2 * self.n_kv_heads) * self.head_dim, bias=in_bias)
        else:
            self.wq = nn.Linear(cfg.dim, self.n_heads * self.head_dim, bias=in_bias)
            self.wk = nn.Linear(cfg.dim, self.n_kv_heads * self.head_dim, bias=in_bias)
            self.wv = nn.Linear(cfg.dim, self.n_kv_heads * self.head_dim, bias=in_bias)
        self.wo = nn.Linear(self.n_heads * self.head_dim, cfg.dim, bias=bias)
        self.softcap = cfg.attn_softcap
        self.alibi = _alibi_slopes(self.n_heads) if cfg.alibi else None  # MPT: (n_h,), a buffer, no parameter
        self.full_qk_norm = cfg.qk_norm == "full"
        if cfg.qk_norm == "rmsnorm":  # Qwen3: one RMSNorm(head_dim) shared by the heads, on q and on k
            self.q_norm = RMSNorm(self.head_dim, eps=cfg.norm_eps, offset=cfg.norm_offset)
            self.k_norm = RMSNorm(self.head_dim, eps=cfg.norm_eps, offset=cfg.norm_offset)
        elif cfg.qk_norm == "layernorm":  # Command-R+: a LayerNorm per head, each head with its own weight
            self.q_norm = LayerNorm((self.n_heads, self.head_dim), eps=cfg.norm_eps)
            self.k_norm = LayerNorm((self.n_kv_heads, self.head_dim), eps=cfg.norm_eps)
        elif self.full_qk_norm:  # OLMo 2: one RMSNorm over all of q and one over all of k
            self.q_norm = RMSNorm(self.n_heads * self.head_dim, eps=cfg.norm_eps)
            self.k_norm = RMSNorm(self.n_kv_heads * self.head_dim, eps=cfg.norm_eps)
        else:
            self.q_norm = self.k_norm = None
        self.l2_norm = cfg.qk_norm == "l2" and rope  # Llama 4: weightless, after RoPE, in RoPE layers only
        # gpt-oss: a learned logit per head, a column of the softmax that no value follows
        self.sinks = nn.Parameter(torch.zeros(self.n_heads)) if cfg.attention_sinks else None
        self.eps = cfg.norm_eps
        self.cache_k: Optional[torch.Tensor] = None  # (b, tokens_so_far, n_kv, hd)
        self.cache_v: Optional[torch.Tensor] = None  # (b, tokens_so_far, n_kv, hd)

    def forward(self, x, start_pos: int, cos, sin, mask: Optional[torch.Tensor], use_cache: bool):
        bsz, seqlen, _ = x.shape
        q_width, kv_width = self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        if self.fused:
            qkv = self.wqkv(x)  # (b, s, (n_h + 2 n_kv) hd)
            xq, xk, xv = qkv[..., :q_width], qkv[..., q_width:q_width + kv_width], qkv[..., q_width + kv_width:]
        else:
            xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)  # (b, s, n_h hd), (b, s, n_kv hd) twice
        if self.full_qk_norm:
            xq, xk = self.q_norm(xq), self.k_norm(xk)  # over the whole width, before the heads are split
        xq = xq.reshape(bsz, seqlen, self.n_heads, self.head_dim)  # (b, s, n_h, hd)
        xk = xk.reshape(bsz, seqlen, self.n_kv_heads, self.head_dim)  # (b, s, n_kv, hd)
        xv = xv.reshape(bsz, seqlen, self.n_kv_heads, self.head_dim)  # (b, s, n_kv, hd)
        if self.q_norm is not None and not self.full_qk_norm:
            xq, xk = self.q_norm(xq), self.k_norm(xk)  # (b, s, n_h, hd), (b, s, n_kv, hd)
        if self.rope:
            xq, xk = apply_rotary_emb(xq, cos, sin), apply_rotary_emb(xk, cos, sin)
        if self.temperature:  # Llama 4's temperature scaling of the queries of a layer without RoPE (per position)
            positions = torch.arange(start_pos, start_pos + seqlen, device=x.device, dtype=torch.float32)
            scale = torch.log(torch.floor((positions + 1.0) / 8192.0) + 1.0) * 0.1 + 1.0
            xq = (xq * scale[None, :, None, None].to(xq.dtype)).to(xq.dtype)
        if self.l2_norm:
            xq, xk = _l2(xq, self.eps), _l2(xk, self.eps)

        if use_cache:
            if start_pos > 0:
                past = 0 if self.cache_k is None else self.cache_k.shape[1]
                if past < start_pos or self.cache_k.shape[0] != bsz:
                    raise ValueError(f"KV cache holds {past} tokens, start_pos={start_pos}, batch={bsz}")
                xk = torch.cat([self.cache_k[:, :start_pos].to(xk), xk], dim=1)  # (b, start_pos+s, n_kv, hd)
                xv = torch.cat([self.cache_v[:, :start_pos].to(xv), xv], dim=1)  # (b, start_pos+s, n_kv, hd)
            self.cache_k, self.cache_v = xk, xv

        keys = repeat_kv(xk, self.n_rep).transpose(1, 2)  # (b, n_h, kv_len, hd)
        values = repeat_kv(xv, self.n_rep).transpose(1, 2)  # (b, n_h, kv_len, hd)
        xq = xq.transpose(1, 2)  # (b, n_h, s, hd)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)  # (b, n_h, s, kv_len)
        if self.softcap is not None:  # Gemma 2: c * tanh(scores / c), before the mask
            scores = torch.tanh(scores / self.softcap) * self.softcap
        if self.alibi is not None:  # MPT: slope_h * (j - i) on the score of query i and key j, before the mask
            j_i = torch.arange(keys.shape[2])[None, :] - torch.arange(start_pos, start_pos + seqlen)[:, None]
            scores = scores + self.alibi.to(scores)[:, None, None] * j_i.to(scores)  # (b, n_h, s, kv_len)
        if mask is not None:
            scores = scores + mask  # (b, n_h, s, kv_len)
        if self.sinks is not None:  # (b, n_h, s, kv_len + 1), the sink's column dropped after the softmax
            sink = self.sinks.to(scores)[None, :, None, None].expand(bsz, -1, seqlen, 1)
            scores = F.softmax(_upcast(torch.cat([scores, sink], dim=-1)), dim=-1)[..., :-1].type_as(xq)
        else:
            scores = F.softmax(_upcast(scores), dim=-1).type_as(xq)  # (b, n_h, s, kv_len)
        output = torch.matmul(scores, values)  # (b, n_h, s, hd)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)  # (b, s, n_h*hd)
        return self.wo(output)  # (b, s, d)


class LatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V3 ``inference/model.py``'s ``MLA``, its ``naive`` path): queries
    through ``wq_a``/``q_a_norm``/``wq_b`` (or one ``wq``), keys and values from the cached latent
    (``wkv_a``: ``kv_lora_rank`` + one RoPE key of ``qk_rope_head_dim``), decompressed by ``wkv_b`` over the
    whole cache on every pass (as transformers 5 does). The cache holds the latent (``cache_k``) and the
    rotated shared key (``cache_v``)."""

    def __init__(self, cfg: _Config):
        super().__init__()
        self.n_heads, self.rank = cfg.n_heads, cfg.kv_lora_rank
        self.nope, self.rope_dim, self.v_dim = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        qk = self.nope + self.rope_dim
        bias = cfg.attention_bias
        if cfg.q_lora_rank is None:
            self.wq = nn.Linear(cfg.dim, self.n_heads * qk, bias=False)
        else:
            self.wq_a = nn.Linear(cfg.dim, cfg.q_lora_rank, bias=bias)
            self.q_a_norm = RMSNorm(cfg.q_lora_rank, eps=cfg.norm_eps)
            self.wq_b = nn.Linear(cfg.q_lora_rank, self.n_heads * qk, bias=False)
        self.wkv_a = nn.Linear(cfg.dim, self.rank + self.rope_dim, bias=bias)
        self.kv_a_norm = RMSNorm(self.rank, eps=cfg.norm_eps)
        self.wkv_b = nn.Linear(self.rank, self.n_heads * (self.nope + self.v_dim), bias=False)
        self.wo = nn.Linear(self.n_heads * self.v_dim, cfg.dim, bias=bias)
        self.q_norm = self.sinks = None
        self.cache_k: Optional[torch.Tensor] = None  # (b, tokens_so_far, kv_lora_rank)
        self.cache_v: Optional[torch.Tensor] = None  # (b, tokens_so_far, 1, qk_rope_head_dim)

    def forward(self, x, start_pos: int, cos, sin, mask: Optional[torch.Tensor], use_cache: bool):
        bsz, seqlen, _ = x.shape
        q = self.wq(x) if hasattr(self, "wq") else self.wq_b(self.q_a_norm(self.wq_a(x)))  # (b, s, n_h*(nope+rope))
        q = q.view(bsz, seqlen, self.n_heads, self.nope + self.rope_dim)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope_dim], dim=-1)
        kv, k_pe = torch.split(self.wkv_a(x), [self.rank, self.rope_dim], dim=-1)  # (b, s, r), (b, s, rope)
        kv = self.kv_a_norm(kv)
        q_pe = apply_rotary_emb(q_pe, cos, sin)  # (b, s, n_h, rope)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), cos, sin)  # (b, s, 1, rope)
        if use_cache:
            if start_pos > 0:
                kv = torch.cat([self.cache_k[:, :start_pos].to(kv), kv], dim=1)  # (b, start_pos+s, r)
                k_pe = torch.cat([self.cache_v[:, :start_pos].to(k_pe), k_pe], dim=1)  # (b, start_pos+s, 1, rope)
            self.cache_k, self.cache_v = kv, k_pe
        kv = self.wkv_b(kv).view(bsz, kv.shape[1], self.n_heads, self.nope + self.v_dim)  # decompress every position
        k_nope, values = torch.split(kv, [self.nope, self.v_dim], dim=-1)
        keys = torch.cat([k_nope, k_pe.expand(-1, -1, self.n_heads, -1)], dim=-1).transpose(1, 2)  # (b, n_h, t, qk)
        xq = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)  # (b, n_h, s, qk)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.nope + self.rope_dim)  # (b, n_h, s, t)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(_upcast(scores), dim=-1).type_as(xq)
        output = torch.matmul(scores, values.transpose(1, 2))  # (b, n_h, s, v)
        return self.wo(output.transpose(1, 2).contiguous().view(bsz, seqlen, -1))  # (b, s, d)


class FeedForward(nn.Module):
    """SwiGLU MLP: ``w2(silu(w1(x)) * w3(x))``; GeGLU with ``activation="gelu_tanh"``, "relu2": ``w2(relu(w3 x)²)``;
    with ``fused`` the gate and up projections are one ``w13``, chunked (Phi-3); ``clamp``: gpt-oss's clamped
    SwiGLU, ``w2((clamp(w3 x, ±limit) + 1) · g · sigmoid(1.702 g))`` with ``g = min(w1 x, limit)``."""

    def __init__(self, dim: int, hidden_dim: int, bias: bool = False, fused: bool = False,
                 activation: str = "silu", clamp: Optional[float] = None):
        super().__init__()
        self.ungated, self.activation = activation in ("relu2", "gelu"), activation  # Nemotron-H's, MPT's MLP
        self.fused = fused and not self.ungated
        if self.fused:
            self.w13 = nn.Linear(dim, 2 * hidden_dim, bias=bias)
        else:
            if not self.ungated:  # (Nemotron-H's ungated MLP: the up projection w3 and the down projection only)
                self.w1 = nn.Linear(dim, hidden_dim, bias=bias)
            self.w3 = nn.Linear(dim, hidden_dim, bias=bias)
        self.w2 = nn.Linear(hidden_dim, dim, bias=bias)
        self.clamp = clamp
        self.act = F.silu if activation == "silu" else (lambda x: F.gelu(x, approximate="tanh"))

    def forward(self, x):
        if self.ungated:  # Nemotron-H: relu(x)²; MPT: the exact GELU
            return self.w2(F.relu(self.w3(x)).square() if self.activation == "relu2" else F.gelu(self.w3(x)))
        gate, up = self.w13(x).chunk(2, dim=-1) if self.fused else (self.w1(x), self.w3(x))  # (b, s, d_ff) each
        if self.clamp is not None:  # gpt-oss
            gate, up = gate.clamp(max=self.clamp), up.clamp(min=-self.clamp, max=self.clamp)  # (T, d_ff) each
            return self.w2((up + 1) * gate * torch.sigmoid(1.702 * gate))  # (T, d)
        return self.w2(self.act(gate) * up)  # (b, s, d)


def _alibi_slopes(heads: int) -> torch.Tensor:
    """MPT's ALiBi slopes (``build_mpt_alibi_tensor``): ``2**(-8·i / n)``, ``i = 1..n``, ``n`` the heads rounded up
    to a power of 2, interleaved and cut to ``heads`` when they are not one."""
    n = 2 ** math.ceil(math.log2(heads))
    slopes = 2.0 ** (-torch.arange(1, n + 1, dtype=torch.float32) * (8 / n))
    return torch.cat([slopes[1::2], slopes[::2]])[:heads] if n != heads else slopes


def _l2(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Llama 4's L2 norm of each head (no weight), computed in float32."""
    xf = _upcast(x)
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)


class MoE(nn.Module):
    """A mixture of SwiGLU experts: a bias-free router, softmax over the experts, the top ``k`` per token
    renormalised (Mixtral), each token run through its ``k`` experts only, weighted and summed; with
    ``shared`` a dense SwiGLU every token runs (Llama 4's shared expert)."""

    def __init__(self, cfg: _Config):
        super().__init__()
        self.k = cfg.experts_per_token
        self.router = nn.Linear(cfg.dim, cfg.n_experts, bias=cfg.moe_bias)
        clamp = 7.0 if cfg.clamped_swiglu else None
        self.experts = nn.ModuleList(FeedForward(cfg.dim, cfg.hidden_dim, bias=cfg.moe_bias, clamp=clamp)
                                     for _ in range(cfg.n_experts))
        width = cfg.hidden_dim if cfg.shared_hidden_dim is None else cfg.shared_hidden_dim
        self.shared_expert = FeedForward(cfg.dim, width) if cfg.shared_expert else None
        if cfg.n_shared_experts:  # DeepSeek: n_shared_experts experts fused into one SwiGLU (mlp_bias: V2's)
            self.shared_expert = FeedForward(cfg.dim, cfg.n_shared_experts * cfg.hidden_dim, bias=cfg.mlp_bias)
        # Qwen2-MoE: the shared expert's output scaled by sigmoid of a d -> 1 linear
        self.shared_gate = nn.Linear(cfg.dim, 1, bias=False) if cfg.shared_hidden_dim is not None else None

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])  # (T, d)
        probs = F.softmax(_upcast(self.router(x)), dim=-1)  # (T, E)
        weights, chosen = torch.topk(probs, self.k, dim=-1)  # (T, k) each
        weights = (weights / weights.sum(-1, keepdim=True)).type_as(x)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)  # the tokens routed to expert e
            if rows.numel():
                out = out.index_add(0, rows, expert(x[rows]) * weights[rows, slot, None])
        if self.shared_expert is not None:
            shared = self.shared_expert(x)  # (T, d)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(x)) * shared  # (T, 1) * (T, d)
            out = out + shared
        return out.reshape(shape)


class TransformerBlock(nn.Module):
    """Pre-norm block: ``h = x + attn(norm(x)); out = h + ffn(norm(h))``."""

    def __init__(self, layer_id: int, cfg: _Config):
        super().__init__()
        self.layer_id = layer_id
        self.attention = (Attention(cfg, rope=layer_id not in cfg.nope_layers,
                                     temperature=layer_id in cfg.temperature_layers) if cfg.kv_lora_rank is None
                          else LatentAttention(cfg))
        if layer_id in cfg.moe_layers:
            self.feed_forward = MoE(cfg)
        else:  # a dense layer of a model with some MoE layers has its own width
            width = cfg.hidden_dim if not cfg.moe_layers else cfg.dense_hidden_dim
            self.feed_forward = FeedForward(cfg.dim, width, bias=cfg.mlp_bias, fused=cfg.fused,
                                            activation=cfg.activation)
        norm = lambda: _norm(cfg, cfg.dim)  # noqa: E731
        pre, post = cfg.norms in ("pre", "sandwich"), cfg.norms in ("post", "sandwich")
        self.parallel = cfg.norms == "parallel"  # Command-R: one norm, both branches read it
        self.attention_norm = norm() if pre or self.parallel else None
        self.ffn_norm = norm() if pre else None
        self.post_attention_norm = norm() if post else None  # OLMo 2, Gemma 2/3: each branch's output
        self.post_ffn_norm = norm() if post else None

    def forward(self, x, start_pos, cos, sin, mask, use_cache):
        if self.parallel:  # x + attention(n) + feed_forward(n), n = norm(x)
            n = self.attention_norm(x)  # (b, s, d)
            return x + self.attention(n, start_pos, cos, sin, mask, use_cache) + self.feed_forward(n)
        keep = lambda f, y: y if f is None else f(y)  # noqa: E731  (a norm that is not there)
        attn = self.attention(keep(self.attention_norm, x), start_pos, cos, sin, mask, use_cache)  # (b, s, d)
        h = x + keep(self.post_attention_norm, attn)  # (b, s, d)
        return h + keep(self.post_ffn_norm, self.feed_forward(keep(self.ffn_norm, h)))  # (b, s, d)


class Transformer(nn.Module):
    """LLaMA decoder with Meta's module names (``tok_embeddings``, ``layers``, ``norm``, ``output``)."""

    def __init__(self, args):
        super().__init__()
        cfg = self.cfg = _Config(args)
        self.params = args
        self.vocab_size, self.n_layers = cfg.vocab_size, cfg.n_layers
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(TransformerBlock(i, cfg) for i in range(cfg.n_layers))
        self.norm = _norm(cfg, cfg.dim)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight  # one shared Parameter

    def forward(self, tokens: torch.Tensor, start_pos: int = 0, use_cache: bool = False,
                logits_to_keep: int = 0) -> torch.Tensor:
        """Logits (b, s, V) for every position of ``tokens`` (b, s); with ``logits_to_keep`` k > 0 for the
        last k positions only (b, k, V), as transformers' ``LlamaForCausalLM.forward(logits_to_keep=...)``
        slices the hidden states before its ``lm_head`` (what ``generate`` and serving engines compute).

        ``start_pos`` is the absolute position of ``tokens[:, 0]`` (RoPE offset).
        With ``use_cache=True`` the new keys/values are appended to each layer's
        cache (truncated to ``start_pos`` first) and queries attend causally to
        keys 0..start_pos+s-1; otherwise plain causal attention over the s tokens.
        """
        bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)  # (b, s, d)
        if self.cfg.embed_scale:  # Gemma: times sqrt(dim), in the embedding's dtype
            h = h * torch.tensor(self.cfg.dim ** 0.5, dtype=h.dtype)
        rotated = self.cfg.qk_rope_head_dim if self.cfg.kv_lora_rank else self.cfg.head_dim
        cos, sin = rope_cos_sin(rotated, start_pos, seqlen, self.cfg.rope_theta,
                                h.device, torch.promote_types(h.dtype, torch.float32))  # (s, hd/2) each
        kv_len = start_pos + seqlen if use_cache else seqlen
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, kv_len), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=kv_len - seqlen + 1).type_as(h)  # (s, kv_len)
        for layer in self.layers:
            h = layer(h, start_pos, cos, sin, mask, use_cache)  # (b, s, d)
        h = self.norm(h)  # (b, s, d)
        if logits_to_keep:  # transformers: hidden_states[:, slice(-logits_to_keep, None), :]
            h = h[:, -logits_to_keep:, :]  # (b, k, d)
        logits = _upcast(self.output(h))  # (b, s, V) or (b, k, V)
        if self.cfg.final_softcap is not None:  # Gemma 2: c * tanh(logits / c)
            logits = torch.tanh(logits / self.cfg.final_softcap) * self.cfg.final_softcap
        if self.cfg.logit_scale is not None:  # Command-R: logits * logit_scale
            logits = logits * self.cfg.logit_scale
        return logits

    def reset_cache(self) -> None:
        """Drop every layer's KV cache."""
        for layer in self.layers:
            layer.attention.cache_k = layer.attention.cache_v = None

    def kv_cache_bytes(self) -> int:
        """Bytes held by all KV-cache tensors (numel * element_size)."""
        total = 0
        for layer in self.layers:
            for t in (layer.attention.cache_k, layer.attention.cache_v):
                if t is not None:
                    total += t.numel() * t.element_size()
        return total


def build(args, device="meta", dtype=torch.float32) -> Transformer:
    """Construct a ``Transformer`` from ``args`` directly on ``device`` in ``dtype``.

    On ``"meta"`` nothing is allocated and nothing initialised (there are no values: the random
    initialisation of every linear only dispatched ops, two thirds of a mixture of experts' build), so even
    the 405B config builds instantly.
    """
    bare = _uninitialised() if torch.device(device).type == "meta" else contextlib.nullcontext()
    with torch.device(device), bare:
        model = Transformer(args)
    return model.to(dtype=dtype)


@contextlib.contextmanager
def _uninitialised():
    """``nn.Linear`` and ``nn.Embedding`` constructed without ``reset_parameters`` (restored after)."""
    saved = {cls: cls.reset_parameters for cls in (nn.Linear, nn.Embedding)}
    try:
        for cls in saved:
            cls.reset_parameters = lambda self: None
        yield
    finally:
        for cls, reset in saved.items():
            cls.reset_parameters = reset


def count(model: Transformer) -> dict:
    """Exact parameter counts by component (block entries summed over all layers).

    ``lm_head`` is 0 when the output matrix is tied to the embedding (counted once,
    under ``embedding``); ``total`` is ``sum(p.numel() for p in model.parameters())``.
    """
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    out = {}  # keys in model order, each where the model has it (Phi-3 fuses, OLMo 2 norms after)
    out["embedding"] = n(model.tok_embeddings)
    for layer in model.layers:
        for name, child in layer.attention.named_children():
            if name not in ("q_norm", "k_norm"):  # wq, wk, wv, wo; MLA's wq_a, q_a_norm, wq_b, wkv_a, ...
                key = f"block/attention/{name}"
                out[key] = out.get(key, 0) + n(child)
        ffn = layer.feed_forward
        if isinstance(ffn, MoE):  # mixture of experts: by kind, summed over every MoE layer
            parts = {"moe/router": n(ffn.router), "moe/experts": n(ffn.experts),
                     "moe/shared_expert": n(ffn.shared_expert) if ffn.shared_expert is not None else 0,
                     "moe/shared_expert_gate": n(ffn.shared_gate) if ffn.shared_gate is not None else 0}
            for key, value in parts.items():
                out[key] = out.get(key, 0) + value
            out["active"] = out.get("active", 0) - n(ffn.experts) * (len(ffn.experts) - ffn.k) // len(ffn.experts)
        else:
            for name in ("w1", "w2", "w3", "w13"):
                if hasattr(ffn, name):
                    key = f"block/feed_forward/{name}"
                    out[key] = out.get(key, 0) + n(getattr(ffn, name))
        if layer.attention.sinks is not None:
            out["block/attention/sinks"] = out.get("block/attention/sinks", 0) + layer.attention.sinks.numel()
        if layer.attention.q_norm is not None:
            for name in ("q_norm", "k_norm"):
                key = f"block/attention/{name}"
                out[key] = out.get(key, 0) + n(getattr(layer.attention, name))
        for name in ("attention_norm", "ffn_norm", "post_attention_norm", "post_ffn_norm"):
            if getattr(layer, name) is not None:
                out[f"block/{name}"] = out.get(f"block/{name}", 0) + n(getattr(layer, name))
    out["norm"] = n(model.norm)
    tied = model.output.weight is model.tok_embeddings.weight
    out["lm_head"] = 0 if tied else n(model.output)
    out["total"] = n(model)
    out["active"] = out["total"] + out.get("active", 0)  # the total less the experts a token is not sent to
    return out
