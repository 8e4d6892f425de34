"""Smooth approximations of the exact counts and the named FLOP conventions with their sources (the first half
of :mod:`symllm.costs.scaling`, which re-exports every name here).

symllm's totals are exact (Meta's ``floor``/``ceiling`` rounding of ``d_ff``, ``d_h`` and ``n_kv`` as their own
symbols). Scaling-law work wants the same model as a smooth expression SymPy can simplify, differentiate and
solve; :func:`approximate` gets it, and keeps what it dropped as its own expression. ``g = n_h / n_kv`` and
``r = d / L`` are the symbols it adds (:mod:`symllm.arch.symbols`).

>>> from symllm.arch.components import model
>>> approximate(model(hidden="meta_plain").closed_form(), g=1).smooth
12*L*d**2 + 2*L*d + 2*V*d + d
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.catalogue import resolve
from symllm.arch.resolved import model_for, params
from symllm.arch.components import model
from symllm.arch.config import ModelConfig
from symllm.arch.widths import SWIGLU_RATIO
from symllm.errors import SymllmError
from symllm.validate import choice
from symllm.costs.numbered import values
from symllm.costs.phases import flops
from symllm.numbers.exact import sympy_value
from symllm.arch.symbols import N, g, r

__all__ = ["approximate", "Approximation", "unround", "WIDTH_LIKE", "training_flops_per_token", "Convention",
           "CONVENTIONS", "convention", "compare", "values_of"]

#: symbols that grow like the width: a term's order is its degree in these (vocabulary and context
#: lengths count as width-like, so ``V d`` and ``L s d`` are leading terms next to ``L d²``)
WIDTH_LIKE = (S.d, S.V, S.s, S.t, S.d_ff, S.d_h)


# --------------------------------------------------------------------------------------- approximations
def unround(expr: sp.Expr) -> sp.Expr:
    """``expr`` without Meta's rounding: every ``floor``/``ceiling`` replaced by its argument.

    >>> from symllm.arch.components import meta_hidden_dim
    >>> unround(meta_hidden_dim())
    8*d*f/3
    """
    expr = sp.sympify(expr)
    return expr.replace(sp.floor, lambda x: x).replace(sp.ceiling, lambda x: x)


def _order(term: sp.Expr) -> int:
    """The degree of a monomial in the width-like symbols (each scaled by one factor)."""
    lam = sp.Dummy("lam", positive=True)
    ratio = sp.powsimp(term.xreplace({x: lam * x for x in WIDTH_LIKE}) / term, force=True)
    base, exp = ratio.as_base_exp()
    return int(exp) if base == lam else 0


@dataclass(frozen=True)
class Approximation:
    """An exact expression and its smooth approximation, with what was dropped kept apart.

    ``exact`` is the expression given; ``smooth`` is it without rounding and with the substitutions
    made (no term dropped); ``approx`` is ``smooth`` less ``dropped``.
    """

    #: the expression given, rounding and all
    exact: sp.Expr
    #: rounding dropped, substitutions made, every term kept
    smooth: sp.Expr
    #: what is left after dropping terms
    approx: sp.Expr
    #: the terms dropped (``smooth - approx``), its own expression
    dropped: sp.Expr
    #: the substitutions made, symbol -> expression
    substitutions: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()

    def numbers(self, config: ModelConfig | str, **workload) -> dict[str, float]:
        """``exact``, ``approx``, ``dropped``, the whole error ``exact - approx`` (rounding included)
        and ``relative_error`` on a config (``workload`` by code name: ``batch=1, seq=2048``).

        >>> from symllm.arch.components import model
        >>> a = approximate(model(hidden="meta").closed_form(), drop=("lower",))
        >>> round(a.numbers("llama3.1-8b")["relative_error"], 4)   # mostly d_ff's rounding up to 1024
        0.0067
        """
        vals = values_of(config, **workload)
        exact = sympy_value(self.exact, vals)
        approx = sympy_value(self.approx, vals)
        dropped = sympy_value(self.dropped, vals)
        error = exact - approx
        return {"exact": exact, "approx": float(approx), "dropped": float(dropped),
                "error": float(error), "relative_error": float(error) / float(exact)}


def values_of(config: ModelConfig | str, **workload) -> dict:
    """values(config) plus the symbols this module adds (g, r); an explicit ``hidden_dim``
    also gives the effective multiplier f = 3 d_ff / (8 d), so the unrounded d_ff is exact for it
    (shared by :mod:`symllm.costs.optimal` and :mod:`symllm.costs.scaling`).

    >>> v = values_of("llama3-8b", batch=1)   # 32 query heads on 8 key/value heads; d 4096 on 32 layers
    >>> int(v[g]), int(v[r])
    (4, 128)
    """
    config = resolve(config)
    vals = values(config, **workload)
    vals[g] = Fraction(config.n_heads, config.n_kv_heads)
    vals[r] = Fraction(config.dim, config.n_layers)
    if S.f not in vals:
        vals[S.f] = Fraction(config.hidden_dim) / (SWIGLU_RATIO * config.dim) if config.hidden_dim else 1
    return vals


def approximate(expr: sp.Expr, *, rounding: bool = False, head_dim: bool = True, gqa: bool = True,
                g=g, drop: tuple[str, ...] = (), subs: dict | None = None) -> Approximation:
    """A smooth approximation of ``expr`` (any total or closed form), keeping what it drops.

    * ``rounding=False`` drops Meta's rounding (``d_ff ≈ f·8d/3``; a bare ``d_ff`` becomes ``8fd/3``);
    * ``head_dim=True`` substitutes ``d_h = d / n_h``; ``gqa=True`` substitutes ``n_kv = n_h / g``
      (pass ``g=1`` for MHA);
    * ``drop`` names terms to drop: ``"lower"`` (terms of lower order in the width-like symbols
      :data:`WIDTH_LIKE`, e.g. the norms' ``(2L + 1) d``) and ``"vocab"`` (terms with ``V``);
    * ``subs`` are further substitutions made last (e.g. ``{f: 1}``, ``{L: d / r}``).

    >>> from symllm.arch.components import model
    >>> a = approximate(model(hidden="meta_plain").closed_form(), g=1, drop=("lower", "vocab"))
    >>> a.approx, a.dropped
    (12*L*d**2, 2*L*d + 2*V*d + d)
    """
    for name in drop:
        choice("drop", name, ("lower", "vocab"))
    exact = sp.sympify(expr)
    out = exact
    substitutions: dict = {}
    if not rounding:
        out = unround(out)
        substitutions[S.d_ff] = sp.Rational(SWIGLU_RATIO) * S.f * S.d
    if head_dim:
        substitutions[S.d_h] = S.d / S.n_h
    if gqa:
        substitutions[S.n_kv] = S.n_h / g
    out = out.subs(substitutions)
    if subs:
        out = out.subs(subs)
        substitutions.update(subs)
    smooth = sp.expand(out)
    terms = sp.Add.make_args(smooth)
    top = max((_order(t_) for t_ in terms if not t_.has(S.V) or "vocab" not in drop), default=0)
    kept = []
    for term in terms:
        if "vocab" in drop and term.has(S.V):
            continue
        if "lower" in drop and _order(term) < top:
            continue
        kept.append(term)
    approx = sp.Add(*kept)
    return Approximation(exact, smooth, approx, sp.expand(smooth - approx), tuple(substitutions.items()))


# ------------------------------------------------------------------------------------------ conventions
def training_flops_per_token(mdl=None, *, passes: int = 3) -> sp.Expr:
    """symllm's exact matmul FLOPs per token: :func:`symllm.costs.phases.flops` of the prefill (``passes=1``,
    one forward at ``t = 0``) or of training (``passes=3``: forward + a backward of twice the forward;
    ``4`` with full recomputation), divided by the ``b·s`` tokens. Dense attention rectangle unless
    ``mdl`` was built causal.

    >>> sp.factor(training_flops_per_token().coeff(S.V))
    6*d
    """
    if passes not in (1, 3, 4):
        raise SymllmError(f"passes: expected 1 (forward), 3 (training) or 4 (recomputation), got {passes!r}")
    mdl = mdl if mdl is not None else model()
    total = flops(mdl, "prefill") if passes == 1 else flops(mdl, "training", recompute=passes == 4)
    return sp.expand(total / (S.b * S.s))


@dataclass(frozen=True)
class Convention:
    """A named way of counting, as expressions in symllm's symbols, with its source.

    ``training`` and ``forward`` are FLOPs per token at sequence length ``s`` (``N`` in them stands for
    ``params`` when the convention states one, else for the model's exact count).
    """

    #: short name
    name: str
    #: the publication and the place in it
    source: str
    #: FLOPs per training token (forward and backward)
    training: sp.Expr
    #: forward FLOPs per token
    forward: sp.Expr
    #: the parameter count the convention uses (None: the model's own N)
    params: sp.Expr | None = None
    #: what the convention assumes
    notes: str = ""

    def expand(self, mdl=None) -> Convention:
        """This convention with ``N`` replaced by its ``params`` (or ``mdl``'s exact count)."""
        n_expr = self.params if self.params is not None else (mdl or model()).total("params")
        return Convention(self.name, self.source, sp.expand(self.training.subs(N, n_expr)),
                          sp.expand(self.forward.subs(N, n_expr)), n_expr, self.notes)


_L, _d, _V, _s, _nh, _dh, _dff = S.L, S.d, S.V, S.s, S.n_h, S.d_h, S.d_ff
_chinchilla_fwd = (2 * _s * _V * _d + _L * (2 * 3 * _s * _d * _dh * _nh + 2 * _s * _s * _dh * _nh
                                           + 3 * _nh * _s * _s + 2 * _s * _s * _dh * _nh
                                           + 2 * _s * _dh * _nh * _d + 2 * _s * 2 * _d * _dff)
                   + 2 * _s * _d * _V) / _s

#: the named conventions (the exact one, "symllm", is built by :func:`convention`)
CONVENTIONS: dict[str, Convention] = {c.name: c for c in [
    Convention(
        "kaplan2020",
        "Kaplan et al. 2020, Scaling Laws for Neural Language Models (arXiv:2001.08361), Sec. 2.1, "
        "Table 1 and Eq. 2.2: N = 2 d L (2 d_attn + d_ff) = 12 L d^2 with d_attn = d_ff/4 = d; "
        "C_forward = 2N + 2 L n_ctx d_attn; C = 6N per training token",
        training=3 * (2 * N + 2 * _L * _s * _d), forward=2 * N + 2 * _L * _s * _d,
        params=12 * _L * _d ** 2,
        notes="non-embedding; d_attn = d, d_ff = 4d; biases, norms, nonlinearities omitted"),
    Convention(
        "palm2022",
        "Chowdhery et al. 2022, PaLM (arXiv:2204.02311), Appendix B (model FLOPs utilization): "
        "6N + 12 L H Q T FLOPs per token, H heads of size Q, sequence length T",
        training=6 * N + 12 * _L * _nh * _dh * _s, forward=2 * N + 4 * _L * _nh * _dh * _s,
        notes="N: the model's parameters; the attention term counts the full T x T rectangle; "
              "no recomputation"),
    Convention(
        "chinchilla2022",
        "Hoffmann et al. 2022, Training Compute-Optimal Large Language Models (arXiv:2203.15556), "
        "Appendix F: embeddings 2sVd, per layer QKV 2*3*s*d*(k*h), logits 2*s*s*(k*h), softmax "
        "3*h*s*s, reductions 2*s*s*(k*h), final linear 2*s*(k*h)*d, dense 2*s*(d*ffw + d*ffw); "
        "final logits 2*s*d*V; backward = 2 x forward",
        training=sp.expand(3 * _chinchilla_fwd), forward=sp.expand(_chinchilla_fwd),
        notes="per sequence of length s, divided by s here; two dense matrices (GeLU MLP, ffw = d_ff), "
              "an embedding matmul, softmax FLOPs; MHA (k*h = n_h*d_h for K and V too)"),
    Convention(
        "megatron2021",
        "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
        "Megatron-LM (arXiv:2104.04473), Sec. 5.1, Eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) "
        "per iteration, with full activation recomputation",
        training=sp.expand(96 * _L * _d ** 2 * (1 + _s / (6 * _d) + _V / (16 * _L * _d))),
        forward=sp.expand(24 * _L * _d ** 2 * (1 + _s / (6 * _d)) + 2 * _V * _d),
        notes="per iteration divided by B s; GPT: MHA, d_ff = 4h; 4 passes through the layers "
              "(recomputation), 3 through the logits"),
    Convention(
        "megatron2022",
        "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models "
        "(arXiv:2205.05198), Sec. 6 (model FLOPs): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) per "
        "iteration, without recomputation",
        training=sp.expand(72 * _L * _d ** 2 * (1 + _s / (6 * _d) + _V / (12 * _L * _d))),
        forward=sp.expand(24 * _L * _d ** 2 * (1 + _s / (6 * _d)) + 2 * _V * _d),
        notes="per iteration divided by B s; GPT: MHA, d_ff = 4h; forward + backward = 3 passes"),
]}


def convention(name: str, config: ModelConfig | str | None = None) -> Convention:
    """The convention called ``name``, with ``N`` expanded; ``"symllm"`` is the exact count
    (of ``config``'s model when given: tying, biases, where ``d_ff`` comes from).

    >>> convention("kaplan2020").training
    72*L*d**2 + 6*L*d*s
    >>> sorted(CONVENTIONS) + ["symllm"]
    ['chinchilla2022', 'kaplan2020', 'megatron2021', 'megatron2022', 'palm2022', 'symllm']
    """
    mdl = model_for(config) if config is not None else model()
    if name == "symllm":
        return Convention(
            "symllm", "symllm.arch.components: exact matmul FLOPs (2 per multiply-add) of one forward at "
                      "t = 0, times 3 for training; parameters counted exactly",
            training=training_flops_per_token(mdl), forward=training_flops_per_token(mdl, passes=1),
            params=mdl.total("params"),
            notes="dense attention rectangle; lm_head logits at every position; element-wise excluded")
    return CONVENTIONS[choice("convention", name, (*sorted(CONVENTIONS), "symllm"))].expand(mdl)


def compare(first: str, second: str, *, quantity: str = "training", configs=(), seq: int = 2048,
            mha: bool = False) -> dict:
    """Two conventions side by side: ``difference`` (first − second, both approximated the same way:
    no rounding, ``d_h = d/n_h``, ``n_kv = n_h/g``, ``g = 1`` with ``mha``), and per config the
    values, the difference and ``relative`` (first / second − 1). ``quantity``: "training",
    "forward" or "params".

    >>> c = compare("kaplan2020", "symllm", quantity="params", mha=True)
    >>> sp.factor(c["difference"].subs(S.f, 1))  # f = 1: LLaMA's 3 d (8d/3) equals Kaplan's 2 d (4d)
    -d*(2*L + 2*V + 1)
    >>> round(compare("kaplan2020", "symllm", quantity="params", configs=["llama3.2-1b"])
    ...       ["llama3.2-1b"]["relative"], 4)
    -0.3484
    """
    choice("quantity", quantity, ("training", "forward", "params"))
    pair = [convention(first), convention(second)]
    exprs = [getattr(c, quantity) for c in pair]
    if any(e is None for e in exprs):
        raise SymllmError(f"quantity: {quantity} is not stated by {first} or {second}")
    smooth = [approximate(e, g=1 if mha else g).smooth for e in exprs]
    out: dict = {"first": first, "second": second, "quantity": quantity,
                 "expressions": tuple(smooth),
                 "difference": sp.factor_terms(sp.expand(smooth[0] - smooth[1]))}
    for cfg in configs:
        config = resolve(cfg)
        vals = values_of(config, batch=1, seq=seq)
        nums = [sympy_value(getattr(convention(n, config), quantity), vals) for n in (first, second)]
        out[config.name] = {"first": nums[0], "second": nums[1], "difference": nums[0] - nums[1],
                            "relative": float(Fraction(nums[0]) / Fraction(nums[1]) - 1)
                            if not isinstance(nums[0], float) else nums[0] / nums[1] - 1}
    return out
