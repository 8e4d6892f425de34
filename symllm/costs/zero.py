"""Training states and ZeRO sharding, once: the bytes per parameter each optimizer layout keeps, and which
of its parts each ZeRO stage shards over the data-parallel ranks.

ZeRO (Rajbhandari et al., arXiv:1910.02054) stage 1 shards the optimizer states over the ``N_d``
data-parallel ranks, stage 2 the gradients too, stage 3 the weights too. Mixed-precision Adam keeps
bf16 weights and gradients (2 + 2 bytes) and fp32 master weights and two moments (12 bytes): ``16N`` at
stage 0, ``16⌈N/N_d⌉`` at stage 3 (a shard is rank 0's ``⌈N/N_d⌉`` parameters: DeepSpeed pads the flat
partition to a whole number per rank).

>>> from symllm.arch import symbols as S
>>> training_states(S.N, 1)
4*N + 12*ceiling(N/N_d)
>>> training_states(S.N, 0, FP32_ADAMW)
16*N

**Optimizers** (``Workload.optimizer``, :data:`OPTIMIZERS`): what each keeps per parameter besides the weights
and gradients (:func:`layout`), and the temporary its step allocates (:func:`step_temporary`):

* ``adamw`` (torch's ``foreach`` implementation, its default on a GPU; the default), ``adamw-fused``,
  ``adamw-single`` (``foreach=False``): two fp32 moments, 8 bytes;
* ``adamw-8bit`` (bitsandbytes' ``AdamW8bit``, block-wise): two uint8 moments and one fp32 absmax per block of
  :data:`BNB_BLOCK` values each, ``2 + 8/256`` bytes (bitsandbytes ``Optimizer2State.init_state``; its
  tensors under ``min_8bit_size`` 4,096 elements keep 32-bit moments: not modelled);
* ``adafactor`` (transformers' ``Adafactor``, ``beta1=None``: no first moment): the factored second moment,
  one fp32 value per row and per column of every matrix, one per element of a vector
  (:func:`factored_elements`);
* ``sgd-momentum``: one fp32 momentum buffer, 4 bytes; ``sgd``: nothing.

Under mixed precision (the fused and eager stacks) every optimizer also keeps fp32 master weights (4 bytes);
ZeRO shards the optimizer part (master weights included) from stage 1.

**Parameters that get no gradient** (a part that runs forward only in training, ``Rules.no_grad``: DeepSeek Sparse
Attention's indexer, DeepSeek-V4's, and DeepSeek-V4's compressors while the prompt closes none of their windows)
keep their weights only (:func:`optimizer_states` counts the gradients and the optimizer part over
:meth:`~symllm.arch.components.base.Component.trained`'s parameters): torch leaves their ``.grad`` None, its
optimizers create state lazily for a parameter with a gradient only (``torch.optim.AdamW``, foreach, fused and
single-tensor: ``_init_group`` skips ``p.grad is None``, torch 2.13.0), and FSDP2 reduce-scatters and shards only
the gradients that exist (``FSDPParamGroup.post_backward``'s ``fsdp_params_with_grad``; its default
``reduce_scatter_unused_params=False``). The fp32 master weights go with the optimizer part: an optimizer
that makes them with its state makes none for these. An implementation that lays out buffers for every parameter
that requires grad up front (DDP's gradient buckets, DeepSpeed's flat fp32 partitions, Megatron's gradient
buffers) holds those bytes for them too: not modelled.
"""
from __future__ import annotations

import sympy as sp

from symllm import validate
from symllm.arch import symbols as S
from symllm.arch.dtypes import BF16, FP32, OPTIMIZER_STATE, OPTIMIZERS

__all__ = ["PARTS", "MIXED_PRECISION_ADAM", "FP32_ADAMW", "QLORA_ADAMW", "sharded", "share",
           "training_states", "layout", "factored_elements", "optimizer_states", "step_temporary"]


#: the parts of the training states, in the order ZeRO's stages shard them
PARTS = ("optimizer", "gradients", "weights")
#: bytes per parameter of mixed-precision Adam: bf16 weights and gradients, fp32 master weights and
#: the two moments (the fused and eager stacks' training states)
MIXED_PRECISION_ADAM = {"weights": BF16, "gradients": BF16, "optimizer": 3 * FP32}
#: fp32 weights and gradients (autocast's low copies are temporaries) and AdamW's two fp32 moments:
#: transformers' Trainer under autocast, and PEFT's LoRA adapters (upcast to fp32)
FP32_ADAMW = {"weights": FP32, "gradients": FP32, "optimizer": 2 * FP32}
#: QLoRA's adapters: bf16 weights and gradients (the paper's computation dtype), 32-bit paged AdamW moments
QLORA_ADAMW = {"weights": BF16, "gradients": BF16, "optimizer": 2 * FP32}


def sharded(part: str, zero_stage: int) -> bool:
    """Whether ZeRO stage ``zero_stage`` shards ``part`` (:data:`PARTS`) over the data-parallel ranks.

    >>> [sharded("gradients", z) for z in range(4)]
    [False, False, True, True]
    """
    return validate.zero_stage(zero_stage) > PARTS.index(validate.choice("part", part, PARTS))


def share(total: sp.Expr, ranks: sp.Expr) -> sp.Expr:
    """Rank 0's padded share of ``total`` split over ``ranks``: ``⌈total/ranks⌉`` (ZeRO's shards, a ring's
    chunks). A symbolic share (a model's parameter or byte count over ``N_d``) is never a whole
    number SymPy can prove, so its ceiling is built as is: evaluating one asks every term of the count
    whether it is an integer, seconds for a large model's.

    >>> share(S.N, S.N_d), share(sp.Integer(10), 3)
    (ceiling(N/N_d), 4)
    """
    x = sp.sympify(total) / ranks
    if x.is_Mul and x.free_symbols and sp.fraction(x)[1].free_symbols:
        return sp.ceiling(x, evaluate=False)
    return sp.ceiling(x)


def training_states(N: sp.Expr, zero_stage: int = 0, layout: dict = MIXED_PRECISION_ADAM,
                    ranks: sp.Expr = S.N_d, trained: sp.Expr | None = None) -> sp.Expr:
    """Bytes one data-parallel rank holds of the training states of ``N`` parameters: ``layout``'s
    bytes per parameter of each part (any of :data:`PARTS`), whole, or over ``ranks`` where ZeRO stage
    ``zero_stage`` shards that part; the gradients and the optimizer part for the ``trained`` of them only
    (those that get a gradient; None: all ``N``).

    >>> training_states(S.N, 3), training_states(S.N, 2, {"weights": 4, "optimizer": 8})
    (16*ceiling(N/N_d), 4*N + 8*ceiling(N/N_d))
    >>> training_states(S.N, 0, trained=S.N - S.d)  # d of them get no gradient: their weights only
    16*N - 14*d
    """
    if trained is None or trained == N:
        kept = sum(b for part, b in layout.items() if not sharded(part, zero_stage))
        return kept * N + (sum(layout.values()) - kept) * share(N, ranks)
    return sum((b * (n if not sharded(part, zero_stage) else share(n, ranks))
                for part, b in layout.items() for n in [N if part == "weights" else trained]), sp.S.Zero)


def layout(optimizer: str = "adamw", master: bool = True) -> dict:
    """Bytes per parameter of each part of the training states under ``optimizer`` (module docstring):
    ``master`` is mixed precision (bf16 weights and gradients, fp32 master weights in the optimizer part: the
    fused and eager stacks), else fp32 weights and gradients (transformers' Trainer under autocast: the HF
    stacks).

    >>> layout() == MIXED_PRECISION_ADAM, layout("adamw", master=False) == FP32_ADAMW
    (True, True)
    >>> layout("adamw-8bit", master=False)["optimizer"], layout("sgd-momentum")["optimizer"]
    (Fraction(65, 32), 8)
    """
    state = OPTIMIZER_STATE[validate.choice("optimizer", optimizer, OPTIMIZERS)]
    if master:
        return {"weights": BF16, "gradients": BF16, "optimizer": FP32 + state}
    return {"weights": FP32, "gradients": FP32, "optimizer": state}


def factored_elements(comp) -> sp.Expr:
    """Adafactor's second-moment elements for the parameters of ``comp`` (a component tree): ``rows + cols``
    of every matrix (a linear's ``shape``, the embedding table ``V × d``), every element of the rest (norms,
    biases), each repeat counted.

    >>> from symllm.arch.components import model
    >>> sp.expand(factored_elements(model())).coeff(S.L)
    9*d + 3*d_ff + 2*d_h*n_h + 2*d_h*n_kv
    """
    own = comp.params
    if comp.shape and own != 0:
        fan_in, fan_out = comp.shape
        own = fan_in + fan_out + sp.expand(own - fan_in * fan_out)  # a bias is a vector
    elif comp.rules.weight == "embedding" and own != 0:
        own = S.V + S.d
    return comp.repeat * (own + sum((factored_elements(c) for c in comp.children), sp.S.Zero))


def optimizer_states(comp, zero_stage: int = 0, optimizer: str = "adamw", master: bool = True,
                     ranks: sp.Expr = S.N_d) -> sp.Expr:
    """Bytes one data-parallel rank holds of the training states of ``comp``'s parameters under ``optimizer``
    (:func:`layout`, :func:`training_states`; Adafactor's factored fp32 moment sharded with the optimizer part):
    the weights of all, the gradients and the optimizer part of those that get a gradient
    (:meth:`~symllm.arch.components.base.Component.trained`; the module docstring).

    >>> from symllm.arch.components import latent_attention, rmsnorm
    >>> optimizer_states(rmsnorm(), 0, "adafactor"), optimizer_states(rmsnorm(), 0, "sgd", master=False)
    (12*d, 8*d)
    >>> a = latent_attention(sparse=True)  # the indexer's weights only: bf16, 2 bytes a parameter
    >>> sp.expand(16 * a.total("params") - optimizer_states(a)) == 14 * sp.expand(a.gradless("params"))
    True
    """
    N = comp.total("params")
    graded = comp.trained()
    out = training_states(N, zero_stage, layout(optimizer, master), ranks, graded.total("params"))
    if optimizer == "adafactor":
        F = factored_elements(graded)
        out += FP32 * (share(F, ranks) if sharded("optimizer", zero_stage) else F)
    return out


def step_temporary(optimizer: str, N: sp.Expr, largest: sp.Expr) -> sp.Expr:
    """Elements (fp32) an optimizer step allocates beyond its states, for ``N`` parameters (one parameter
    group; rank 0's shard under ZeRO) whose largest tensor has ``largest`` elements: ``foreach`` AdamW one
    ``_foreach_sqrt`` of the second moments of the group (N); fused AdamW, bitsandbytes' 8-bit kernels and SGD
    (in-place ``_foreach`` or per-tensor updates) none; single-tensor AdamW and Adafactor work one tensor at a
    time, two temporaries of its size (AdamW: ``exp_avg_sq.sqrt()`` and its division; Adafactor: ``grad**2 +
    eps`` and the factored estimate that replaces it).

    >>> step_temporary("adamw", S.N, S.d), step_temporary("adamw-single", S.N, S.d), step_temporary("sgd", S.N, S.d)
    (N, 2*d, 0)
    """
    validate.choice("optimizer", optimizer, OPTIMIZERS)
    if optimizer == "adamw":
        return N
    if optimizer in ("adamw-single", "adafactor"):
        return 2 * largest
    return sp.S.Zero
