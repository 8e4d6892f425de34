"""Fine-tuning with LoRA and QLoRA: trainable parameters and training memory, as closed forms over the
component tree, then exact numbers.

**LoRA** (Hu et al. 2021, as PEFT's ``LoraConfig``) freezes the model and adds to each adapted linear
``W: fan_in -> fan_out`` a trainable pair ``lora_A: fan_in -> r`` and ``lora_B: r -> fan_out``:
``r·(fan_in + fan_out)`` parameters per adapted matrix, times the blocks. :func:`adapt` puts the pair
under every linear that declares a target among its LoRA names (``rules.lora``, set where the layer is
defined in :mod:`symllm.arch.components`; its ``shape`` says ``fan_in``, ``fan_out``: nothing is
restated by hand), so every total (parameters, FLOPs, saved bytes) of the adapted tree includes them.
Targets are symllm names ``wq wk wv wo w1 w2 w3`` or HF names ``q_proj k_proj v_proj o_proj gate_proj
down_proj up_proj`` (:func:`symllm.arch.components.lora_names`); the default ``wq,wv`` is PEFT's for Llama.

**Training memory** (bytes, one GPU; ZeRO and the parallel layouts are not applied to them):

* ``lora_base_weights``: the frozen model ``β_w·N``. With **QLoRA** (Dettmers et al. 2023) the
  components whose weight is a ``"linear"`` projection (``rules.weight``: :data:`FORMATS`; ``wq wk wv wo w1
  w2 w3``, in a dense LLaMA every linear layer but the lm_head, which is what bitsandbytes quantizes:
  transformers keeps the output embedding out) hold their ``fan_in·fan_out``
  weights in NF4 with block size 64 and double-quantized constants: 4 bits + an 8-bit constant per 64
  weights + an fp32 constant per 256 of those = ``4 + 8/64 + 32/(64·256)`` = 4.127 bits
  (:data:`NF4_BITS`, the paper's §3 average, exact when 64·256 divides a matrix); embeddings, norms,
  biases and the lm_head stay in ``β_w`` (bf16 by default), and so do a mixture-of-experts model's
  router and fused experts (not checked against bitsandbytes).
* ``lora_adapter_weights``, ``lora_adapter_gradients``, ``lora_optimizer_states``: for the adapters only
  (:data:`ADAPTER_BYTES`). LoRA: fp32 adapters and gradients, as PEFT makes them
  (``get_peft_model(..., autocast_adapter_dtype=True)``, its default, upcasts bf16/fp16 adapters to fp32),
  and Adam's two fp32 moments: 4 + 4 + 8 = 16 bytes per trainable parameter (no separate master copy:
  the weights are fp32 already). QLoRA: bf16 adapters and gradients (the paper's computation dtype)
  and 32-bit Adam moments (its paged AdamW): 2 + 2 + 8 = 12 bytes.
* ``lora_activations``: what the training forward saves for backward (``symllm.costs.phases.activations``
  of the adapted tree, ``--recompute`` included): the model's own activations, counted as for full
  training (an upper bound: a frozen linear that is not adapted need not keep its input), plus each
  adapter's ``r``-wide intermediate ``β_a·b·s·r`` (``lora_B``'s input; ``lora_A``'s input is the
  layer's input, already counted; with PEFT's default ``lora_dropout=0`` there is no dropout mask); an adapter
  inside a part that runs forward only (``Rules.no_grad``: DeepSeek Sparse Attention's indexer, DeepSeek-V4's)
  saves nothing, and gets no gradient, although PEFT counts it trainable: ``lora_adapter_gradients`` and
  ``lora_optimizer_states`` leave it out (torch's AdamW creates no state for a parameter whose ``.grad`` is None).
* ``lora_total``: their sum.

>>> import sympy as sp
>>> from symllm.arch.components import model
>>> sp.factor(trainable(model(), "wq,wv"))
L*r_lora*(2*d + d_h*n_h + d_h*n_kv)
>>> lora("llama2-7b", lora_rank=8, lora_targets="q_proj,v_proj")["params"]["trainable"]
4194304
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import sympy as sp

from symllm.arch.algebra import substitute
from symllm.arch import resolved
from symllm.arch import symbols as S
from symllm.costs import checks, parallel, selective, stacks, zero
from symllm.costs.formats import QUANTIZES
from symllm.arch.components import Component, lora_names, matmul
from symllm.errors import SymllmError
from symllm.validate import choice, short
from symllm.numbers.kernels import evaluate
from symllm.costs.peft_targets import DEFAULT_LORA_TARGETS, lora_targets
from symllm.costs.workloads import Workload

__all__ = ["NF4_BITS", "FORMATS", "ADAPTER_BYTES", "MEMORY_KEYS", "adapt", "trainable", "quantized", "memory",
           "closed_forms", "lora"]

#: bits per NF4 weight with double quantization (QLoRA paper, §3): 4-bit codes, an 8-bit constant per
#: block of 64 weights, an fp32 constant per block of 256 of those: 4 + 8/64 + 32/(64·256) = 4.127
NF4_BITS = 4 + Fraction(8, 64) + Fraction(32, 64 * 256)

#: QLoRA's weight format -> the kinds of weight it stores in NF4 (a component's ``rules.weight``): the rule
#: is bitsandbytes' own, stated once in :data:`symllm.costs.formats.QUANTIZES` (the linear projections;
#: transformers keeps the lm_head out; the router and fused experts stay in ``β_w``); every other weight
#: stays in ``β_w``. ``--dtype int4`` is not one of these: it stores every weight in 4 bits with its group
#: scales (``β_w``)
FORMATS = {"nf4": QUANTIZES["nf4"]}

#: bytes per trainable (adapter) parameter: weights, gradients, optimizer states (Adam's two moments)
ADAPTER_BYTES = {name: tuple(layout[p] for p in ("weights", "gradients", "optimizer"))
                 for name, layout in (("lora", zero.FP32_ADAMW), ("qlora", zero.QLORA_ADAMW))}

#: the memory numbers :func:`lora` gives (``symllm count --json`` adds them under ``memory``)
MEMORY_KEYS = ("lora_base_weights", "lora_adapter_weights", "lora_adapter_gradients", "lora_optimizer_states",
               "lora_activations", "lora_total")

_T = S.b * S.s  # token rows of a training forward


def _pair(fan_in: sp.Expr, fan_out: sp.Expr, rank: sp.Expr) -> tuple[Component, Component]:
    """The adapter of one linear ``fan_in -> fan_out``: ``lora_A`` then ``lora_B`` (no biases)."""
    return (Component("lora_A", params=rank * fan_in, flops=matmul(_T, fan_in, rank),
                      doc="self.lora_A[adapter_name] = nn.Linear(self.in_features, r, bias=False)"),
            Component("lora_B", params=rank * fan_out, flops=matmul(_T, rank, fan_out),
                      saved=S.beta_a * _T * rank,  # its input, the r-wide intermediate
                      doc="self.lora_B[adapter_name] = nn.Linear(r, self.out_features, bias=False)"))


@lru_cache(maxsize=256)
def adapt(mdl: Component, targets: str = "wq,wv", rank: sp.Expr = S.r_lora) -> Component:
    """``mdl`` with a LoRA adapter (children ``lora_A``, ``lora_B``) under every linear that declares one
    of ``targets`` (a comma list, symllm or HF names) among its LoRA names. As PEFT, a target the model
    has no linear of adapts nothing (Mixtral's experts are fused, not linears: ``w1`` there adapts
    nothing); when no target has a linear, it is an error. The default ``wq,wv`` (PEFT's ``q_proj,v_proj``)
    adapts, in a model with neither, the fused linear that holds them (``Rules.holds``: Phi-3's
    ``qkv_proj``, which PEFT must be told by name: it has no default for Phi-3).

    >>> from symllm.arch.components import Variant, block
    >>> a = adapt(block(), "q_proj")
    >>> [c.name for c in a.child("attention/wq").children]
    ['lora_A', 'lora_B']
    >>> a.breakdown()["attention/wq/lora_B"]
    d_h*n_h*r_lora
    >>> [c.name for c in adapt(block(variant=Variant(fused=True))).child("attention/wqkv").children]
    ['lora_A', 'lora_B']
    """
    names = set(lora_targets(targets).split(","))
    found = set()

    def walk(c: Component) -> Component:
        if names & set(c.rules.refused):
            hf = {v: k for k, v in lora_names().items() if k != v}
            given = ",".join(sorted(hf.get(x, x) for x in names & set(c.rules.refused)))
            raise SymllmError(f"lora_targets: {short(given, 30)} adapt {c.name} in PEFT: not modelled")
        if c.shape and c.rules.lora and c.rules.lora[0] in names:
            found.add(c.rules.lora[0])
            return c.replace(children=c.children + _pair(*c.shape, sp.sympify(rank)))
        return c.replace(children=tuple(walk(x) for x in c.children)) if c.children else c

    out = walk(mdl)
    if not found and names == set(DEFAULT_LORA_TARGETS.split(",")):  # the fused linears holding wq or wv
        names = {c.rules.lora[0] for c in mdl.walk() if c.shape and c.rules.lora and names & set(c.rules.holds)}
        out = walk(mdl)
    if not found:
        raise SymllmError(f"lora_targets: no linear layer of this model is named {short(lora_targets(targets), 16)} "
                          "(an expert is not one)")
    return out


def trainable(mdl: Component, targets: str = "wq,wv", rank: sp.Expr = S.r_lora, graded: bool = False) -> sp.Expr:
    """Trainable parameters of LoRA on ``mdl``: ``r·(fan_in + fan_out)`` per adapted linear, times its
    repeats (the blocks): what the adapters add to the model's total (PEFT's count); ``graded``: those that get a
    gradient, an adapter under a part that runs forward only left out (:meth:`Component.trained`): what gets
    optimizer state and the optimizer's update.

    >>> from symllm.arch.components import latent_attention, model
    >>> sp.factor(trainable(model(), "wq,wk,wv,wo", 16))
    32*L*(2*d + d_h*n_h + d_h*n_kv)
    >>> a = latent_attention(sparse=True)  # the indexer's weights_proj: adapted, but no gradient reaches it
    >>> trainable(a, "weights_proj", 1), trainable(a, "weights_proj", 1, graded=True)
    (d + n_I, 0)
    """
    adapted = adapt(mdl, targets, rank)
    if graded:
        adapted, mdl = adapted.trained(), mdl.trained()
    return sp.expand(adapted.total("params") - mdl.total("params"))


def _linears(c: Component, times: sp.Expr = sp.S.One):
    times = times * c.repeat
    if c.shape:
        yield times, c
    for x in c.children:
        yield from _linears(x, times)


def quantized(mdl: Component, fmt: str = "nf4") -> sp.Expr:
    """The weights the format ``fmt`` (:data:`FORMATS`) stores in its own format: for QLoRA's NF4 the
    ``fan_in·fan_out`` of every ``"linear"`` projection (``wq`` … ``w3``, wherever they sit: in a dense
    model every linear but the lm_head); biases, embeddings, norms, the lm_head, and a
    mixture-of-experts model's router and fused experts stay in ``β_w``.

    >>> from symllm.arch.components import model
    >>> quantized(model()) == sp.expand(model().total() - model().child("lm_head").params
    ...     - model().child("embedding").params - 2 * S.L * S.d - S.d)
    True
    """
    kinds = FORMATS[choice("format", fmt, FORMATS)]
    return sp.expand(sum((n * c.shape[0] * c.shape[1] for n, c in _linears(mdl) if c.rules.weight in kinds),
                         sp.S.Zero))


def memory(mdl: Component, targets: str = "wq,wv", *, qlora: bool = False, recompute: bool | str = False,
           rank: sp.Expr = S.r_lora) -> dict[str, sp.Expr]:
    """The closed forms of :data:`MEMORY_KEYS` (bytes) for LoRA (or QLoRA) on ``mdl`` (see the module
    docstring for each convention); ``recompute`` a policy (:func:`symllm.costs.selective.policy`: under ``op``
    a saved linear's adapter keeps its intermediate, a recomputed one's runs again).

    >>> from symllm.arch.components import block
    >>> m = memory(block(), "wq", qlora=True)
    >>> m["lora_optimizer_states"]
    8*d*r_lora + 8*d_h*n_h*r_lora
    >>> m["lora_base_weights"].coeff(S.beta_w)  # the two norms stay in the model's dtype
    2*d
    """
    n_trainable = trainable(mdl, targets, rank)
    n_graded = trainable(mdl, targets, rank, graded=True)  # an adapter that gets no gradient gets no optimizer state
    weight, grad, optim = ADAPTER_BYTES["qlora" if qlora else "lora"]
    total = mdl.total("params")
    if qlora:
        q = quantized(mdl)
        base = sp.nsimplify(NF4_BITS / 8) * q + S.beta_w * sp.expand(total - q)
    else:
        base = S.beta_w * total
    out = {
        "lora_base_weights": base,
        "lora_adapter_weights": weight * n_trainable,
        "lora_adapter_gradients": grad * n_graded,
        "lora_optimizer_states": optim * n_graded,
        "lora_activations": stacks.component_activations(adapt(mdl, targets, rank), recompute),
    }
    out["lora_total"] = sum(out.values(), sp.S.Zero)
    defs = dict(mdl.definitions)
    return {k: substitute(v, defs) for k, v in out.items()}


def closed_forms(mdl: Component, work: Workload) -> dict[str, sp.Expr]:
    """``trainable_params`` and :data:`MEMORY_KEYS` for the model component ``mdl`` under ``work`` (its
    ``lora_rank`` substituted): what :func:`lora` evaluates and what a sweep compiles.

    >>> from symllm.arch.components import model
    >>> closed_forms(model(), Workload(lora_rank=2, lora_targets="wo"))["trainable_params"]
    2*L*d + 2*L*d_h*n_h
    """
    if work.lora_rank is None:
        raise SymllmError("lora_rank: LoRA needs a rank (--lora-rank R), got None")
    rank = {S.r_lora: work.lora_rank}
    out = {"trainable_params": substitute(trainable(mdl, work.lora_targets), dict(mdl.definitions)),
           **memory(mdl, work.lora_targets, qlora=work.qlora, recompute=selective.recompute_of(work))}
    return {k: sp.expand(substitute(v, rank)) if k == "trainable_params" else substitute(v, rank)
            for k, v in out.items()}


def lora(config, work: Workload | None = None, **options) -> dict:
    """Exact LoRA numbers for ``config`` under a workload with ``lora_rank`` set: ``{"params":
    {"trainable": ...}, "memory": {...}}`` (:data:`MEMORY_KEYS`), what ``symllm count --json`` adds.

    >>> m = lora("llama2-7b", lora_rank=64, qlora=True, lora_targets="wq,wk,wv,wo,w1,w2,w3")["memory"]
    >>> m["lora_base_weights"] < 4 * 10**9
    True
    >>> lora("llama2-7b")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: lora_rank: LoRA needs a rank (--lora-rank R), got None
    """
    spec = resolved.spec(config)
    work = Workload.of(work, **options)
    checks.check(spec, work)
    # phases.model_of's rule (phases imports this module): the spec's model under the workload's attention,
    # laid out as its engine lays it out
    exprs = closed_forms(parallel.layout(spec.model(work.attention), work.engine), work)
    vals = {**spec.values(), **work.values()}
    return {"params": {"trainable": evaluate(exprs.pop("trainable_params"), vals)},
            "memory": {k: evaluate(e, vals) for k, e in exprs.items()}}
