"""The ends of the model: the token :func:`embedding` and the output projection :func:`lm_head`."""
from __future__ import annotations

import dataclasses

from symllm.arch import keeps
from symllm.arch.components.base import _switches, _T, Component, ELEMENTWISE, INDEX_BYTES, linear, matmul, Rules
from symllm.arch.symbols import b, beta_a, d, s_o, V


def embedding(*, scale: bool = False) -> Component:
    """Token embedding ``V·d`` (a table look-up: no FLOPs); with ``scale`` (Gemma) the looked-up rows are
    multiplied by ``√d``, one element-wise FLOP per element and no parameter (a buffer).

    Models ``self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)``.

    >>> embedding().params, embedding(scale=True).elementwise
    (V*d, b*d*s)
    """
    _switches(scale=scale)
    out = Component("embedding", params=V * d, saved=INDEX_BYTES * _T,  # backward keeps the int64 token ids
                    doc="self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)",
                    # VocabParallelEmbedding
                    rules=Rules("vocab", lora=(), weight="embedding", stacks=keeps.hf_rules(keeps.embedding),
                                hf="model.embed_tokens", gguf="token_embd"))
    if not scale:
        return out
    return out.replace(elementwise=ELEMENTWISE["scale"] * _T * d,
                       doc="GemmaTextScaledWordEmbedding: embed_tokens(input_ids) * hidden_size**0.5",
                       rules=dataclasses.replace(out.rules, stacks=(), label="embeddings scaled by sqrt(d) (Gemma)"))


def lm_head(*, tied: bool = False, softcap: bool = False, scale: bool = False) -> Component:
    """The output projection ``d -> V``: ``V·d`` parameters untied, 0 tied (counted once, in the
    embedding), and ``2·b·s_o·d·V`` FLOPs either way over the ``s_o`` positions of each sequence whose logits
    are computed (``--logits``: 1, the last, by default at inference, as vLLM, SGLang, TensorRT-LLM and HF
    ``generate`` do: ``logits_to_keep``; ``s``, every position, in training: :mod:`symllm.costs.phases`), the
    ``b·s_o·V`` logits live; with ``softcap`` (Gemma 2) each logit is soft-capped,
    ``ELEMENTWISE['softcap']`` FLOPs per logit.

    >>> lm_head(tied=True).params, lm_head(tied=True).flops, lm_head().live
    (0, 2*V*b*d*s_o, (V*b*s_o,))
    >>> lm_head(tied="no")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'

    With ``scale`` (Command-R's ``logit_scale``) each logit is multiplied by a constant: one FLOP a logit,
    nothing saved (the product by a Python number keeps no tensor for backward).

    >>> lm_head(scale=True).elementwise
    V*b*s_o
    """
    _switches(tied=tied, softcap=softcap, scale=scale)
    # ColumnParallelLinear over the vocabulary (its loss vocabulary-parallel); no LoRA target; transformers
    # keeps the output embedding out of bitsandbytes' quantization
    out = linear("lm_head", d, V, doc="self.output = nn.Linear(params.dim, params.vocab_size, bias=False)",
                 rules=Rules("column", lora=(), weight="head", stacks=keeps.hf_rules(keeps.lm_head), hf="lm_head",
                             gguf="output"))
    rows = b * s_o  # the positions whose logits are computed (hidden_states[:, -logits_to_keep:, :])
    # saves its input (training: every position); the logits are live
    out = out.replace(flops=matmul(rows, d, V), saved=beta_a * _T * d, live=(rows * V,))
    if softcap:  # logits = tanh(logits / cap) * cap: element-wise, after the matmul
        out = out.replace(elementwise=ELEMENTWISE["softcap"] * rows * V, doc=out.doc + "; soft-capped logits",
                          saved=out.saved + beta_a * _T * V,  # tanh's backward keeps its output
                          rules=dataclasses.replace(out.rules, stacks=(), label="soft-capped final logits (Gemma 2)"))
    if scale:  # logits = logits * self.logit_scale
        out = out.replace(elementwise=out.elementwise + ELEMENTWISE["scale"] * rows * V,
                          doc=out.doc + "; logits * logit_scale")
    return out.replace(params=0, doc=out.doc + " (tied to tok_embeddings)") if tied else out
