"""RMSNorms: the residual stream's (:func:`rmsnorm`) and those on queries and keys (:func:`qk_norms`)."""
from __future__ import annotations

import dataclasses

import sympy as sp

from symllm.arch.components.base import (STREAM_NORM, check_switches, T, Component, ELEMENTWISE, named, Rules,
                                         STAT_BYTES)
from symllm.arch.layers import QK_NORMS
from symllm.arch.symbols import b, beta_a, d, d_h, n_h, n_kv, s
from symllm.validate import choice


def rmsnorm(name: str = "rmsnorm", width: sp.Expr = d, rows: sp.Expr = T, doc: str = "",
            rules: Rules = STREAM_NORM, offset: bool = False, mean: bool = False) -> Component:
    """RMSNorm: a weight of ``width`` (``d``; no bias) over ``rows`` rows (the ``b·s`` tokens),
    ``ELEMENTWISE['rmsnorm']`` FLOPs per element; by default a norm of the residual stream (``rules``).
    With ``offset`` (Gemma) it scales by ``1 + weight``: the same parameters, and the ``width`` adds of
    ``1 + weight`` once per call.

    Models ``self.weight = nn.Parameter(torch.ones(dim))`` in ``RMSNorm``.

    >>> rmsnorm().params, rmsnorm("q_norm", d_h, b * s * n_h).elementwise
    (d, 4*b*d_h*n_h*s)
    >>> rmsnorm(offset=True).elementwise - rmsnorm().elementwise
    d
    >>> rmsnorm(mean=True).elementwise, rmsnorm(mean=True).params
    (6*b*d*s, d)

    With ``mean`` it is Cohere's LayerNorm (Command-R): the mean subtracted first, a weight and no bias (the
    same parameters), ``ELEMENTWISE['layernorm']`` FLOPs per element, and the per-row mean saved beside
    1/std; the named stacks (LlamaForCausalLM's tensors) do not model it.
    """
    check_switches(offset=offset, mean=mean)
    if mean:
        return Component(name, params=width, elementwise=ELEMENTWISE["layernorm"] * rows * width,
                         saved=beta_a * rows * width + 2 * STAT_BYTES * rows,  # its input, the mean and 1/std
                         doc=(doc or "CohereLayerNorm(hidden_size)") + "  # mean subtracted; weight, no bias",
                         rules=dataclasses.replace(rules, stacks=(), label="Cohere's LayerNorm (Command-R)"))
    if offset:
        doc = (doc or "GemmaRMSNorm(dim)") + "  # output * (1.0 + self.weight)"
        rules = dataclasses.replace(rules, stacks=(), label="RMSNorm scaling by (1 + weight) (Gemma)")
    return Component(name, params=width,
                     elementwise=ELEMENTWISE["rmsnorm"] * rows * width + (ELEMENTWISE["offset"] * width if offset
                                                                          else 0),
                     saved=beta_a * rows * width + STAT_BYTES * rows,  # its input x and the per-row 1/rms
                     doc=doc or "RMSNorm(args.dim): self.weight = nn.Parameter(torch.ones(dim))", rules=rules)


def qk_norms(kind: str = "rmsnorm", offset: bool = False) -> tuple[Component, Component]:
    """A norm on every query head and every key head (:func:`_qk_norms`), named ``q_norm`` and ``k_norm`` in
    Hugging Face's checkpoints and ``attn_q_norm``, ``attn_k_norm`` in GGUF's.

    >>> [c.params for c in qk_norms()], [c.params for c in qk_norms("l2")], [c.params for c in qk_norms("full")]
    ([d_h, d_h], [0, 0], [d_h*n_h, d_h*n_kv])

    ``"layernorm"`` is Command-R+'s: Cohere's LayerNorm over each query and key head's ``d_h``, with a weight
    of its own per head (``CohereLayerNorm((n_h, d_h))``: ``n_h·d_h`` and ``n_kv·d_h`` parameters), before RoPE.

    >>> [c.params for c in qk_norms("layernorm")]
    [d_h*n_h, d_h*n_kv]
    """
    return tuple(named(c, c.name, f"attn_{c.name}") for c in _qk_norms(kind, offset))


def _qk_norms(kind: str, offset: bool) -> tuple[Component, Component]:
    """A norm on every query head and every key head: Qwen3's ``q_norm`` and ``k_norm`` (``"rmsnorm"``:
    RMSNorms of width ``d_h``, ``2·d_h`` parameters per layer, before RoPE; Gemma 3's scale by ``1 +
    weight``: ``offset``) or Llama 4's ``"l2"`` norm (no weight, after RoPE), over ``b·s·n_h`` and
    ``b·s·n_kv`` rows; or OLMo 2's ``"full"``: one RMSNorm over the whole query width ``n_h·d_h`` and one
    over the whole key width ``n_kv·d_h``, per token, before RoPE."""
    if kind == "layernorm":
        # transformers' plan leaves them out: every rank holds every head's weight
        rules = Rules("replicated", lora=(), weight="head_norm", stacks=(), label="per-head LayerNorms (Command-R+)")
        # weight "head_norm": stored as transformers holds it, a (heads, head_dim) tensor (symllm.costs.formats)
        return tuple(rmsnorm(name, d_h, T * heads, f"self.{name} = CohereLayerNorm(({what}, head_dim))", rules,
                             mean=True).replace(params=heads * d_h)
                     for name, heads, what in (("q_norm", n_h, "num_attention_heads"),
                                               ("k_norm", n_kv, "num_key_value_heads")))
    if kind == "full":
        # transformers' plan gathers q_proj's and k_proj's outputs for these norms: replicated on every rank
        rules = Rules("replicated", lora=(), weight="norm", stacks=(), label="QK-norms over the whole q and k (OLMo 2)")
        return (rmsnorm("q_norm", n_h * d_h, T, "self.q_norm = Olmo2RMSNorm(num_attention_heads * head_dim)",
                        rules),
                rmsnorm("k_norm", n_kv * d_h, T, "self.k_norm = Olmo2RMSNorm(num_key_value_heads * head_dim)",
                        rules))
    # on the heads, already split by tensor parallelism; LlamaForCausalLM has none
    rules = Rules("replicated", lora=(), weight="norm", stacks=(), label="per-head q/k norms (Qwen3, Llama 4)")
    if kind == "l2":
        doc = "self.qk_norm = Llama4TextL2Norm(config.rms_norm_eps)  # no weight; on each {} head after RoPE"
        return tuple(rmsnorm(name, d_h, T * heads, doc.format(what), rules).replace(
                         params=0, elementwise=ELEMENTWISE["l2norm"] * T * heads * d_h)
                     for name, heads, what in (("q_norm", n_h, "query"), ("k_norm", n_kv, "key")))
    if kind != "rmsnorm":
        choice("qk_norm", kind, QK_NORMS[1:])
    return (rmsnorm("q_norm", d_h, T * n_h, "self.q_norm = Qwen3RMSNorm(self.head_dim)  # on each query head", rules,
                    offset),
            rmsnorm("k_norm", d_h, T * n_kv, "self.k_norm = Qwen3RMSNorm(self.head_dim)  # on each key head", rules,
                    offset))
