"""RMSNorms: the residual stream's (:func:`rmsnorm`) and those on queries and keys (:func:`qk_norms`)."""
from __future__ import annotations

import dataclasses

import sympy as sp

from symllm.arch.components.base import (_STREAM_NORM, _switches, _T, Component, ELEMENTWISE, named, Rules,
                                         STAT_BYTES)
from symllm.arch.symbols import b, beta_a, d, d_h, n_h, n_kv, s
from symllm.errors import SymllmError


def rmsnorm(name: str = "rmsnorm", width: sp.Expr = d, rows: sp.Expr = _T, doc: str = "",
            rules: Rules = _STREAM_NORM, offset: bool = False) -> Component:
    """RMSNorm: a weight of ``width`` (``d``; no bias) over ``rows`` rows (the ``b·s`` tokens),
    ``ELEMENTWISE['rmsnorm']`` FLOPs per element; by default a norm of the residual stream (``rules``).
    With ``offset`` (Gemma) it scales by ``1 + weight``: the same parameters, and the ``width`` adds of
    ``1 + weight`` once per call.

    Models ``self.weight = nn.Parameter(torch.ones(dim))`` in ``RMSNorm``.

    >>> rmsnorm().params, rmsnorm("q_norm", d_h, b * s * n_h).elementwise
    (d, 4*b*d_h*n_h*s)
    >>> rmsnorm(offset=True).elementwise - rmsnorm().elementwise
    d
    """
    _switches(offset=offset)
    if offset:
        doc = (doc or "GemmaRMSNorm(dim)") + "  # output * (1.0 + self.weight)"
        rules = dataclasses.replace(rules, stacks=(), label="RMSNorm scaling by (1 + weight) (Gemma)")
    return Component(name, params=width,
                     elementwise=ELEMENTWISE["rmsnorm"] * rows * width + (ELEMENTWISE["offset"] * width if offset else 0),
                     saved=beta_a * rows * width + STAT_BYTES * rows,  # its input x and the per-row 1/rms
                     doc=doc or "RMSNorm(args.dim): self.weight = nn.Parameter(torch.ones(dim))", rules=rules)


def qk_norms(kind: str = "rmsnorm", offset: bool = False) -> tuple[Component, Component]:
    """A norm on every query head and every key head (:func:`_qk_norms`), named ``q_norm`` and ``k_norm`` in
    Hugging Face's checkpoints and ``attn_q_norm``, ``attn_k_norm`` in GGUF's.

    >>> [c.params for c in qk_norms()], [c.params for c in qk_norms("l2")], [c.params for c in qk_norms("full")]
    ([d_h, d_h], [0, 0], [d_h*n_h, d_h*n_kv])
    """
    return tuple(named(c, c.name, f"attn_{c.name}") for c in _qk_norms(kind, offset))


def _qk_norms(kind: str, offset: bool) -> tuple[Component, Component]:
    """A norm on every query head and every key head: Qwen3's ``q_norm`` and ``k_norm`` (``"rmsnorm"``:
    RMSNorms of width ``d_h``, ``2·d_h`` parameters per layer, before RoPE; Gemma 3's scale by ``1 +
    weight``: ``offset``) or Llama 4's ``"l2"`` norm (no weight, after RoPE), over ``b·s·n_h`` and
    ``b·s·n_kv`` rows; or OLMo 2's ``"full"``: one RMSNorm over the whole query width ``n_h·d_h`` and one
    over the whole key width ``n_kv·d_h``, per token, before RoPE."""
    if kind == "full":
        # transformers' plan gathers q_proj's and k_proj's outputs for these norms: replicated on every rank
        rules = Rules("replicated", lora=(), weight="norm", stacks=(), label="QK-norms over the whole q and k (OLMo 2)")
        return (rmsnorm("q_norm", n_h * d_h, _T, "self.q_norm = Olmo2RMSNorm(num_attention_heads * head_dim)",
                        rules),
                rmsnorm("k_norm", n_kv * d_h, _T, "self.k_norm = Olmo2RMSNorm(num_key_value_heads * head_dim)",
                        rules))
    # on the heads, already split by tensor parallelism; LlamaForCausalLM has none
    rules = Rules("replicated", lora=(), weight="norm", stacks=(), label="per-head q/k norms (Qwen3, Llama 4)")
    if kind == "l2":
        doc = "self.qk_norm = Llama4TextL2Norm(config.rms_norm_eps)  # no weight; on each {} head after RoPE"
        return tuple(rmsnorm(name, d_h, _T * heads, doc.format(what), rules).replace(
                         params=0, elementwise=ELEMENTWISE["l2norm"] * _T * heads * d_h)
                     for name, heads, what in (("q_norm", n_h, "query"), ("k_norm", n_kv, "key")))
    if kind != "rmsnorm":
        raise SymllmError(f"qk_norm: unknown {kind!r} (known: rmsnorm, l2, full)")
    return (rmsnorm("q_norm", d_h, _T * n_h, "self.q_norm = Qwen3RMSNorm(self.head_dim)  # on each query head", rules,
                    offset),
            rmsnorm("k_norm", d_h, _T * n_kv, "self.k_norm = Qwen3RMSNorm(self.head_dim)  # on each key head", rules,
                    offset))
