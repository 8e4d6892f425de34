"""torchtitan's selective *op* activation checkpointing (``--selective-ac op``): what it recomputes and what it
keeps, as closed forms.

torchtitan (9dec370, 2024-12-26: ``torchtitan/parallelisms/parallelize_llama.py``, ``_apply_ac_to_transformer_block``
with ``activation_checkpoint.mode = "selective"`` and ``selective_ac_option = "op"``) wraps each transformer
block in ``torch.utils.checkpoint.checkpoint`` with ``create_selective_checkpoint_contexts(_custom_policy)``.
Its ``_save_list`` holds ``aten.mm``, the SDPA kernels (``_scaled_dot_product_flash_attention``,
``_scaled_dot_product_efficient_attention``), ``c10d_functional.reduce_scatter_tensor`` and (for Float8's
scales) ``aten.abs`` and ``aten.max``; ``_custom_policy`` counts the block's ``aten.mm`` calls and saves the
output of each op in the list *except every second mm* (``mm_count % 2 == 0``). Everything else in the block
(norms, RoPE, SiLU, the products) is recomputed in backward from the block's input and what was saved; of its
collectives, the all-gathers and all-reduces run again (:data:`symllm.costs.collectives.SAVED_COLLECTIVES`).

A torchtitan Llama block calls its seven linears in this order (``Attention.forward``: wq, wk, wv, SDPA, wo;
``FeedForward.forward``: ``w2(F.silu(w1(x)) * w3(x))``), so the 2nd, 4th and 6th -- wk, wo and w3 -- run
again in backward: ``2·b·s·d·(n_kv·d_h + n_h·d_h + d_ff)`` matmul FLOPs a layer on top of the three forward
passes' worth (forward, two of backward); the attention core is saved (SDPA's output), not recomputed.
Per block the policy keeps (besides the checkpoint's input, ``β_a·b·s·d``) the outputs of wq, wv, w1 and w2
(``β_a·b·s·(n_h·d_h + n_kv·d_h + d_ff + d)``) and SDPA's output and log-sum-exp (``β_a·b·s·n_h·d_h`` and
``4·b·n_h·s``, fp32). The Float8 ``abs``/``max`` outputs are not counted (bf16 training saves none).

The policy is torchtitan's for its Llama blocks: a block whose matmuls are not those seven linears (a
mixture of experts, MLA, a recurrent layer) is refused in one line. Every reader follows this one policy
(:data:`symllm.arch.layers.OP_RECOMPUTED`): a recomputed linear's forward collectives run again
(:func:`symllm.costs.collectives.forward_runs`), its FP8 input is cast again (:func:`symllm.costs.fp8_casts.
fp8_quantize_s`), and its LoRA branch (symllm.costs.finetune: PEFT's ``lora_A``, ``lora_B``) runs again, its
r-wide intermediate not kept, where a saved linear's LoRA branch keeps it (a convention: PEFT's adapters are
``aten.mm`` calls too, which would shift torchtitan's count of them; torchtitan itself has no LoRA).

>>> from symllm.arch.components import model
>>> recomputed(model().children[1])
('wk', 'wo', 'w3')
>>> sp.factor(recomputed_flops(model()))
2*L*b*d*s*(d_ff + d_h*n_h + d_h*n_kv)
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.layers import OP_ORDER, OP_RECOMPUTED
from symllm.costs.workloads import RECOMPUTE
from symllm.errors import SymllmError

__all__ = ["ORDER", "policy", "recompute_of", "recomputed", "recomputed_flops", "saved"]

#: the order a torchtitan Llama block calls its linears (each one ``aten.mm``): torchtitan 9dec370
#: ``torchtitan/models/llama/model.py`` ``Attention.forward`` and ``FeedForward.forward``
ORDER = OP_ORDER


def _is_linear(c) -> bool:
    """A matmul that is not the attention core (whose FLOPs grow with the context ``t``)."""
    return c.flops != 0 and S.t not in c.flops.free_symbols and not c.flops.has(sp.Min)


def _parts(comp):
    """``comp``'s parts, a linear's LoRA adapter (its ``lora_A`` and ``lora_B`` children: symllm.costs.finetune)
    left inside it."""
    for c in comp.children:
        yield c
        if not c.shape:
            yield from _parts(c)


def _linears(block) -> dict:
    found = {c.name: c for c in _parts(block) if _is_linear(c)}
    if set(found) != set(ORDER) or any(c.repeat != 1 for c in found.values()):
        raise SymllmError(f"recompute: op is modelled for Llama blocks ({' '.join(ORDER)}), not {block.name!r}")
    return found


def recomputed(block) -> tuple[str, ...]:
    """The linears of ``block`` whose outputs op checkpointing recomputes: every second ``aten.mm`` in
    :data:`ORDER` (``_custom_policy``'s ``mm_count % 2 == 0``); ``block`` None: their names alone."""
    if block is not None:
        _linears(block)
    return OP_RECOMPUTED


def _blocks(comp) -> list:
    """The checkpointed components of ``comp`` (itself, or its children that are), refused where none is."""
    if comp.checkpoint != 0:
        return [comp]
    blocks = [c for c in comp.children if c.checkpoint != 0]
    if not blocks:
        raise SymllmError(f"recompute: op checkpoints blocks; component {comp.name!r} is not one")
    return blocks


@lru_cache(maxsize=256)
def recomputed_flops(comp) -> sp.Expr:
    """The matmul FLOPs op checkpointing adds to a training step of ``comp`` (a block, or a model or stage
    holding blocks): each block's :func:`recomputed` linears run their forward once more. Repeats
    included; ``comp``'s own repeat is not (as :meth:`Component.total` does not count it). A part of a block
    (``attention``, ``feed_forward``) adds its own linears among them; a part outside the blocks nothing.

    >>> from symllm.arch.components import model
    >>> blk = model().children[1]
    >>> recomputed_flops(blk.children[1]), recomputed_flops(model().children[0])
    (2*b*d*d_h*n_h*s + 2*b*d*d_h*n_kv*s, 0)
    """
    if comp.checkpoint == 0 and not any(c.checkpoint != 0 for c in comp.children):
        names = recomputed(None)
        return sum((c.repeat * c.total("flops") for c in comp.walk() if c.name in names and _is_linear(c)),
                   sp.S.Zero)
    out = sp.S.Zero
    for block in _blocks(comp):
        linears = _linears(block)  # a recomputed linear reruns its LoRA branch too (its adapter's FLOPs)
        out += (block.repeat if block is not comp else 1) * sum((linears[n].total("flops") for n in recomputed(block)),
                                                                sp.S.Zero)
    return out


@lru_cache(maxsize=256)
def saved(block) -> sp.Expr:
    """Bytes op checkpointing keeps per ``block`` beyond its checkpointed input: the outputs of the saved
    linears (wq, wv, w1, w2: the odd mm calls of :data:`ORDER`) in ``β_a``, SDPA's output (q's width) in
    ``β_a`` and its log-sum-exp (one fp32 per query and head). Widths are read off the linears' FLOPs
    (``2·b·s·K·N``: ``N`` = FLOPs / (2·b·s·K), ``K`` = d but for w2's, whose ``K`` is w1's width).

    >>> from symllm.arch.components import model
    >>> sp.factor(saved(model().children[1]))
    b*s*(beta_a*d + beta_a*d_ff + 2*beta_a*d_h*n_h + beta_a*d_h*n_kv + 4*n_h)
    """
    lin = _linears(block)
    rows = S.b * S.s
    width = {n: sp.cancel(lin[n].flops / (2 * rows * S.d)) for n in ("wq", "wv", "w1")}
    width["w2"] = sp.cancel(lin["w2"].flops / (2 * rows * width["w1"]))
    q = width["wq"]
    heads = sp.cancel(q / S.d_h)
    # a saved linear's LoRA branch keeps what it saves (its r-wide intermediate); a recomputed one's runs again
    lora = sum((x.total("saved") for n in ORDER if n not in OP_RECOMPUTED for x in lin[n].children), sp.S.Zero)
    return sp.expand(S.beta_a * rows * (sum(width.values(), sp.S.Zero) + q) + 4 * rows * heads + lora)


def recompute_of(work) -> bool | str:
    """A workload's recomputation policy (``work.recompute``: ``none``, ``full`` or ``op``) as the cost functions
    take it (:func:`policy`).

    >>> from symllm.costs.workloads import Workload
    >>> recompute_of(Workload(recompute="op")), recompute_of(Workload(recompute=True)), recompute_of(Workload())
    ('op', True, False)
    """
    return policy(work.recompute)


def policy(recompute) -> bool | str:
    """A recomputation policy as the cost functions take it: ``False`` (none: every activation saved),
    ``True`` (full: each block keeps its input) or ``"op"`` (this module's); the names ``"none"`` and
    ``"full"`` are read as the booleans.

    >>> policy(False), policy("full"), policy("op")
    (False, True, 'op')
    """
    if recompute in (False, True):
        return bool(recompute)
    if recompute in RECOMPUTE:
        return dict(zip(RECOMPUTE, (False, True, "op")))[recompute]
    raise SymllmError(f"recompute: {recompute!r} is not a recomputation policy (none, full or op)")
