"""Scaling-law helpers: smooth approximations of the exact counts, named FLOP conventions with
their sources, Chinchilla's compute-optimal allocation, inverse sizing and crossovers, in closed form.
One face over three concerns: approximations and conventions (:mod:`symllm.costs.approximation`),
compute-optimal sizes and inverse sizing (:mod:`symllm.costs.optimal`), both re-exported here, and the
crossovers (here).

symllm's totals are exact (Meta's ``floor``/``ceiling`` rounding of ``d_ff``, ``d_h`` and ``n_kv`` as
their own symbols). Scaling-law work wants the same model as a smooth expression SymPy can simplify,
differentiate and solve; :func:`approximate` gets it, and keeps what it dropped as its own expression.

Symbols it uses beyond the model's (created, like all, in :mod:`symllm.arch.symbols`): ``g = n_h / n_kv`` (query heads
per key/value head), ``r = d / L`` (aspect ratio), ``N`` (parameters), ``D`` (training tokens), ``C`` (training FLOPs),
and the loss-law constants ``E, A, B, alpha, beta``.

>>> from symllm.arch.components import model
>>> approximate(model(hidden="meta_plain").closed_form(), g=1).smooth
12*L*d**2 + 2*L*d + 2*V*d + d
>>> chinchilla_optimum()["N"]
G*(C/6)**a
"""
from __future__ import annotations

from pathlib import Path

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.catalogue import resolve
from symllm.arch.resolved import model_for
from symllm.arch.components import component, model
from symllm.arch.config import ModelConfig
from symllm.arch.dtypes import BF16
from symllm.validate import choice
from symllm.numbers.exact import sympy_value
from symllm.arch.symbols import A, B, C, D, E, N, alpha, beta, g, r
from symllm.costs.approximation import (values_of, approximate, Approximation, unround, WIDTH_LIKE,
                                        training_flops_per_token, Convention, CONVENTIONS, convention, compare)
from symllm.costs.optimal import (LossLaw, CHINCHILLA, loss, chinchilla_optimum, optimal_allocation, Family,
                                  compute_optimal_exact, size_for, Sizing)


__all__ = [
    "g", "r", "N", "D", "C", "E", "A", "B", "alpha", "beta",
    "approximate", "Approximation", "unround", "WIDTH_LIKE",
    "training_flops_per_token", "Convention", "CONVENTIONS", "convention", "compare",
    "LossLaw", "CHINCHILLA", "loss", "chinchilla_optimum", "optimal_allocation",
    "Family", "compute_optimal_exact", "size_for", "Sizing",
    "attention_ffn_crossover", "kv_weights_crossover", "crossovers",
]


# -------------------------------------------------------------------------------------------- crossovers
def attention_ffn_crossover(*, causal: bool = False, phase: str = "prefill") -> sp.Expr:
    """The context where the attention core (``QKᵀ`` and ``A·V``) costs as many FLOPs as the SwiGLU
    feed-forward, in closed form: the prompt length ``s`` of a prefill (``t = 0``) or the cached
    context ``t`` of a decode step (``s = 1``).

    >>> attention_ffn_crossover()
    3*d*d_ff/(2*d_h*n_h)
    >>> attention_ffn_crossover(causal=True)
    3*d*d_ff/(d_h*n_h) - 1
    """
    mdl = model(causal=causal)
    # the core: the attention's matmuls that are not its linear layers (the components without a shape)
    core = sum((c.flops for c in component("attention", mdl).walk() if not c.shape), sp.S.Zero)
    ffn = component("feed_forward", mdl).total("flops")
    if phase == "prefill":
        eq, var = sp.Eq(core.subs(S.t, 0), ffn.subs(S.t, 0)), S.s
    elif phase == "decode":
        eq, var = sp.Eq(core.subs(S.s, 1), ffn.subs(S.s, 1)), S.t
    else:
        choice("phase", phase, ("prefill", "decode"))
    roots = [x for x in sp.solve(eq, var) if x != 0]
    return sp.expand(roots[0]) if len(roots) == 1 else roots[0]


#: total tokens per sequence held in the KV cache (t + s)
_T = sp.Symbol("T", positive=True)


def kv_weights_crossover(*, tied: bool = False) -> sp.Expr:
    """The tokens per sequence (``T = t + s`` cached) at which the KV cache of ``b`` sequences
    outweighs the weights: ``b·T·2·L·n_kv·d_h·beta_kv = N·beta_w``, solved for ``T``.

    >>> kv_weights_crossover().subs({S.beta_w: 2, S.beta_kv: 2}).factor().as_numer_denom()[1]
    2*L*b*d_h*n_kv
    """
    mdl = model(tied=tied)
    kv = mdl.total("kv_cache").subs(S.t, _T - S.s) * S.beta_kv
    weights = mdl.total("params") * S.beta_w
    return sp.solve(sp.Eq(kv, weights), _T)[0]


def crossovers(config: ModelConfig | str | Path, *, batch: int = 1, weight_bytes: float = BF16,
               kv_bytes: float = BF16) -> dict[str, float]:
    """Both crossovers evaluated for a config: ``attention_ffn_prefill`` (dense and ``_causal``),
    ``attention_ffn_decode`` and ``kv_outweighs_weights`` (tokens per sequence at ``batch``).

    >>> crossovers("llama3.1-8b")["attention_ffn_prefill"]
    21504
    """
    config = resolve(config)
    mdl = model_for(config)
    vals = values_of(config, batch=batch)
    vals.update({S.beta_w: weight_bytes, S.beta_kv: kv_bytes})
    t_kv = sp.solve(sp.Eq(mdl.total("kv_cache").subs(S.t, _T - S.s) * S.beta_kv,
                          mdl.closed_form("params") * S.beta_w), _T)[0]
    return {
        "attention_ffn_prefill": sympy_value(attention_ffn_crossover(), vals),
        "attention_ffn_prefill_causal": sympy_value(attention_ffn_crossover(causal=True), vals),
        "attention_ffn_decode": sympy_value(attention_ffn_crossover(phase="decode"), vals),
        "kv_outweighs_weights": sympy_value(t_kv, vals),
    }
