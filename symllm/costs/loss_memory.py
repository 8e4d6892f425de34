"""The training loss's memory: what the logits, their loss and their gradient hold on a GPU, as the training
engine's head and loss hold them; one rule, read by :mod:`symllm.costs.phases` for the whole model (its
``activations`` and ``training_peak``) and for tensor rank 0 of each pipeline stage (``memory_per_gpu``).

* A head split over the vocabulary (``column``, ``held``: Megatron-Core's and torchtitan's, their loss
  vocabulary-parallel): each rank holds its share of the logits, ``⌈V/N_t⌉`` rows, and the loss saves nothing beyond
  them; a fused cross-entropy writes their gradient in place of the logits, ``β_a·b·s·⌈V/N_t⌉`` at the peak
  (docs/stacks.md's convention for the component stacks).
* A head whose logits every rank holds whole: transformers' ``colwise_gather_output`` (``gathered``: every
  ``*ForCausalLM._tp_plan``'s lm_head, symllm.arch.components.embeddings.VOCABULARY) or a plan that keeps it whole
  (``replicated``: Nemotron-H's), the only training layouts that hold one (``--engine hf``;
  symllm.costs.layouts.kind_layout), the loss transformers' ``ForCausalLMLoss`` over the whole ``b·s × V`` logits
  (transformers 5.23.0, loss/loss_utils.py: ``logits = logits.float()``, then ``nn.functional.cross_entropy``,
  log_softmax and nll_loss). ``log_softmax`` saves its output, fp32 (``promote_types(β_a, fp32)``, ``max(4, β_a)``
  bytes: :data:`~symllm.arch.components.base.STAT_BYTES`), an activation held to the backward; the backward's highest
  point is its start, log_softmax's backward, where nll_loss's output gradient and log_softmax's input gradient, two
  more fp32 ``b·s × V`` tensors, are live beside it (``12·b·s·V`` bytes in all; the forward's end holds less:
  ``β_a`` logits, their fp32 copy and the saved output, ``10·b·s·V`` in bf16, ``8`` in fp32, where ``.float()`` is
  the tensor itself). The logits themselves are dropped before backward (the model's output is, as transformers'
  Trainer drops it: symllm.costs.stacks, whose ``hf-*`` stacks state the same loss).
"""
from __future__ import annotations

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.components.base import STAT_BYTES
from symllm.arch.components.embeddings import WHOLE_LOGITS
from symllm.costs.collectives import repeated
from symllm.costs.parallel import vocabulary

__all__ = ["logits_memory"]


def logits_memory(comp, per_rank: bool = False) -> dict[str, sp.Expr]:
    """Bytes the loss of ``comp`` (a whole model, or a pipeline stage as tensor rank 0 holds it with ``per_rank``)
    keeps: ``saved``, held for the backward beside the activations (an activation), and ``gradient``, live at the
    backward's start beside them (the peak's), by how its head lays the logits out (module docstring); nothing for a
    stage without the head.

    >>> from symllm.arch.components import lm_head, model
    >>> from symllm.costs.parallel import layout
    >>> logits_memory(model())
    {'saved': 0, 'gradient': V*b*beta_a*s}
    >>> logits_memory(layout(model(), "hf"), per_rank=True)
    {'saved': V*b*s*Max(4, beta_a), 'gradient': 2*V*b*s*Max(4, beta_a)}
    >>> logits_memory(lm_head(), per_rank=True)["gradient"], logits_memory(model().children[1])
    (b*beta_a*s*ceiling(V/N_t), {'saved': 0, 'gradient': 0})
    """
    out = {"saved": sp.S.Zero, "gradient": sp.S.Zero}
    for head, times in repeated(comp, "head"):  # (a first stage's head: there only where N_p is 1)
        if head.rules.split in WHOLE_LOGITS:  # log_softmax's fp32 output saved; two fp32 gradients at its backward
            out["saved"] += times * STAT_BYTES * S.b * S.s * S.V
            out["gradient"] += times * 2 * STAT_BYTES * S.b * S.s * S.V
        else:  # a fused cross-entropy's, written in place of the rank's logits
            out["gradient"] += times * S.beta_a * S.b * S.s * (vocabulary(head) if per_rank else S.V)
    return out

