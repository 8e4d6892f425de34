"""Scaling-law helpers: smooth approximations of the exact counts, named FLOP conventions with
their sources, Chinchilla's compute-optimal allocation, inverse sizing and crossovers, in closed form.

symllm's totals are exact (Meta's ``floor``/``ceiling`` rounding of ``d_ff``, ``d_h`` and ``n_kv`` as
their own symbols). Scaling-law work wants the same model as a smooth expression SymPy can simplify,
differentiate and solve; :func:`approximate` gets it, and keeps what it dropped as its own expression.

Symbols it uses beyond the model's (created, like all, in :mod:`symllm.arch.symbols`): ``g = n_h / n_kv`` (query heads per key/value head),
``r = d / L`` (aspect ratio), ``N`` (parameters), ``D`` (training tokens), ``C`` (training FLOPs),
and the loss-law constants ``E, A, B, alpha, beta``.

>>> from symllm.arch.components import model
>>> approximate(model(hidden="meta_plain").closed_form(), g=1).smooth
12*L*d**2 + 2*L*d + 2*V*d + d
>>> chinchilla_optimum()["N"]
G*(C/6)**a
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.resolved import model_for, params, resolve
from symllm.arch.components import component, model
from symllm.arch.config import SWIGLU_RATIO, ModelConfig
from symllm.arch.dtypes import BF16
from symllm.errors import SymllmError
from symllm.validate import choice
from symllm.costs.phases import flops, values
from symllm.numbers.kernels import sympy_value

__all__ = [
    "g", "r", "N", "D", "C", "E", "A", "B", "alpha", "beta",
    "approximate", "Approximation", "unround", "WIDTH_LIKE",
    "training_flops_per_token", "Convention", "CONVENTIONS", "convention", "compare",
    "LossLaw", "CHINCHILLA", "loss", "chinchilla_optimum", "optimal_allocation",
    "Family", "compute_optimal_exact", "size_for", "Sizing",
    "attention_ffn_crossover", "kv_weights_crossover", "crossovers",
]

# the scaling-law symbols live, like every symbol, in symllm.arch.symbols
from symllm.arch.symbols import A, B, C, D, E, N, alpha, beta, g, r  # noqa: E402

#: the closed-form constants of the compute-optimal frontier
_G, _a, _b = sp.Symbol("G", positive=True), sp.Symbol("a", positive=True), sp.Symbol("b", positive=True)

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
        vals = _values(config, **workload)
        exact = sympy_value(self.exact, vals)
        approx = sympy_value(self.approx, vals)
        dropped = sympy_value(self.dropped, vals)
        error = exact - approx
        return {"exact": exact, "approx": float(approx), "dropped": float(dropped),
                "error": float(error), "relative_error": float(error) / float(exact)}


def _values(config: ModelConfig | str, **workload) -> dict:
    """values(config) plus the symbols this module adds (g, r); an explicit ``hidden_dim``
    also gives the effective multiplier f = 3 d_ff / (8 d), so the unrounded d_ff is exact for it."""
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
        vals = _values(config, batch=1, seq=seq)
        nums = [sympy_value(getattr(convention(n, config), quantity), vals) for n in (first, second)]
        out[config.name] = {"first": nums[0], "second": nums[1], "difference": nums[0] - nums[1],
                            "relative": float(Fraction(nums[0]) / Fraction(nums[1]) - 1)
                            if not isinstance(nums[0], float) else nums[0] / nums[1] - 1}
    return out


# ------------------------------------------------------------------------------- compute-optimal sizes
@dataclass(frozen=True)
class LossLaw:
    """The parametric loss ``L(N, D) = E + A / N**alpha + B / D**beta`` with its constants."""

    #: irreducible loss
    E: float
    #: model-size term
    A: float
    #: data term
    B: float
    #: model-size exponent
    alpha: float
    #: data exponent
    beta: float
    #: where the constants come from
    source: str = ""

    def constants(self) -> dict[sp.Symbol, sp.Rational]:
        """The constants as exact rationals of their printed decimals, by symbol."""
        return {E: sp.Rational(str(self.E)), A: sp.Rational(str(self.A)), B: sp.Rational(str(self.B)),
                alpha: sp.Rational(str(self.alpha)), beta: sp.Rational(str(self.beta))}


#: Hoffmann et al. 2022 (Chinchilla), approach 3, Eq. 10: the published (rounded) fit
CHINCHILLA = LossLaw(1.69, 406.4, 410.7, 0.34, 0.28,
                     "Hoffmann et al. 2022 (arXiv:2203.15556), Sec. 3.3, Eq. 10 (approach 3)")


def loss(law: LossLaw | None = None) -> sp.Expr:
    """``L(N, D)``; symbolic constants without ``law``.

    >>> loss()
    A/N**alpha + B/D**beta + E
    """
    expr = E + A / N ** alpha + B / D ** beta
    return expr if law is None else expr.subs(law.constants())


def chinchilla_optimum() -> dict[str, sp.Expr]:
    """``N_opt(C)``, ``D_opt(C)`` minimising ``L(N, D)`` subject to ``C = 6ND``, solved by SymPy
    (the first-order conditions are linear in ``log N, log D``), with the constants ``G, a, b`` of
    Hoffmann et al.'s Eq. 4: ``N_opt = G (C/6)**a``, ``D_opt = (C/6)**b / G``.

    ``"solution"`` holds SymPy's own solution (``N``, ``D`` as functions of ``C``); ``"G"``, ``"a"``,
    ``"b"`` the constants; ``"N"``, ``"D"`` the short forms in ``G, a, b``.

    >>> o = chinchilla_optimum()
    >>> o["a"], o["G"]
    (beta/(alpha + beta), (A*alpha/(B*beta))**(1/(alpha + beta)))
    """
    x, y = sp.symbols("x y", real=True)
    # d/dN and d/dD of the Lagrangian, times N and D:  alpha A N^-alpha = 6 lambda N D = beta B D^-beta
    sol = sp.solve([sp.Eq(-alpha * x + beta * y, sp.log(beta * B / (alpha * A))),
                    sp.Eq(x + y, sp.log(C / 6))], [x, y], dict=True)[0]
    n_opt, d_opt = sp.exp(sol[x]), sp.exp(sol[y])
    G_ = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    a_, b_ = beta / (alpha + beta), alpha / (alpha + beta)
    short_n, short_d = G_ * (C / 6) ** a_, (C / 6) ** b_ / G_
    for solved, short in ((n_opt, short_n), (d_opt, short_d)):  # the short forms are SymPy's solution
        assert sp.simplify(sp.expand_log(sp.log(solved) - sp.log(short), force=True)) == 0
    return {"solution": {"N": n_opt, "D": d_opt}, "G": G_, "a": a_, "b": b_,
            "N": _G * (C / 6) ** _a, "D": (C / 6) ** _b / _G,
            "N_full": short_n, "D_full": short_d}


def optimal_allocation(budget: float, law: LossLaw = CHINCHILLA) -> dict[str, float]:
    """The closed-form optimum under ``C = 6ND`` for a budget of ``budget`` FLOPs: ``N``, ``D``,
    ``tokens_per_param``, ``loss`` (floats), with ``law``'s constants.

    >>> o = optimal_allocation(5.76e23)
    >>> f"{o['N']:.3g} params, {o['D']:.3g} tokens"
    '3.22e+10 params, 2.98e+12 tokens'
    """
    k = {s_.name: float(v) for s_, v in law.constants().items()}
    G_ = (k["alpha"] * k["A"] / (k["beta"] * k["B"])) ** (1 / (k["alpha"] + k["beta"]))
    a_ = k["beta"] / (k["alpha"] + k["beta"])
    n_opt = G_ * (budget / 6) ** a_
    d_opt = (budget / 6) ** (1 - a_) / G_
    return {"C": budget, "N": n_opt, "D": d_opt, "tokens_per_param": d_opt / n_opt,
            "loss": k["E"] + k["A"] / n_opt ** k["alpha"] + k["B"] / d_opt ** k["beta"]}


@dataclass(frozen=True)
class Family:
    """A model family: everything fixed but the width ``d`` (and the depth, by ``aspect = d / L``
    or a fixed ``n_layers``). Valid widths are multiples of ``head_dim · gqa``.

    >>> fam = Family(aspect=128, head_dim=128, gqa=4)
    >>> fam.config(4096).n_layers, fam.config(4096).n_kv_heads
    (32, 8)
    """

    #: vocabulary size
    vocab_size: int = 128256
    #: per-head width (fixed across the family)
    head_dim: int = 128
    #: query heads per key/value head
    gqa: int = 1
    #: d / L (None: fixed ``n_layers``)
    aspect: float | None = 128
    #: fixed depth (when ``aspect`` is None)
    n_layers: int | None = None
    #: Meta's rounding granule for d_ff
    multiple_of: int = 256
    #: Meta's width multiplier (None: none)
    ffn_dim_multiplier: float | None = None
    #: lm_head tied to the embedding
    tie_embeddings: bool = False
    #: training sequence length (for FLOPs per token)
    seq: int = 2048

    def __post_init__(self):
        if (self.aspect is None) == (self.n_layers is None):
            raise SymllmError("family: give exactly one of aspect (d / L) and n_layers")

    @property
    def step(self) -> int:
        """Widths are multiples of this: whole query heads, whole key/value groups."""
        return self.head_dim * self.gqa

    def depth(self, width: int) -> int:
        """The family's depth at ``width``: ``round(width / aspect)`` (at least 1), or ``n_layers``."""
        return self.n_layers if self.aspect is None else max(1, round(width / self.aspect))

    def config(self, width: int) -> ModelConfig:
        """The valid config at ``width`` (a multiple of :attr:`step`)."""
        if width % self.step:
            raise SymllmError(f"width: {width} is not a multiple of head_dim*gqa = {self.step}")
        n_heads = width // self.head_dim
        return ModelConfig(vocab_size=self.vocab_size, dim=width, n_layers=self.depth(width),
                           n_heads=n_heads, n_kv_heads=n_heads // self.gqa, multiple_of=self.multiple_of,
                           ffn_dim_multiplier=self.ffn_dim_multiplier,
                           tie_embeddings=self.tie_embeddings, name=f"d{width}-L{self.depth(width)}")

    def _model(self):
        return model(tied=self.tie_embeddings, hidden="meta" if self.ffn_dim_multiplier else "meta_plain")

    def smooth(self, quantity: str = "params") -> sp.Expr:
        """The family's smooth ``params`` or ``training`` FLOPs per token as a polynomial in ``d``
        (no rounding, ``n_h = d/head_dim``, ``n_kv = n_h/gqa``, ``L = d/aspect`` or fixed).

        >>> Family(aspect=128, head_dim=128, gqa=1, vocab_size=32000).smooth()
        3*d**3/32 + d**2/64 + 64001*d
        """
        mdl = self._model()
        expr = mdl.closed_form("params") if quantity == "params" else \
            training_flops_per_token(mdl).subs(dict(mdl.definitions))
        choice("quantity", quantity, ("params", "training"))
        subs = {S.V: self.vocab_size, S.d_h: self.head_dim, S.n_h: S.d / self.head_dim,
                S.n_kv: S.d / (self.head_dim * self.gqa), S.m: self.multiple_of, S.s: self.seq,
                S.f: sp.Rational(str(self.ffn_dim_multiplier)) if self.ffn_dim_multiplier else 1,
                S.L: S.d / sp.Rational(str(self.aspect)) if self.aspect else self.n_layers}
        return sp.expand(unround(expr).subs(S.d_ff, sp.Rational(SWIGLU_RATIO) * S.f * S.d).subs(subs))

    def exact(self, width: int, quantity: str = "params") -> int:
        """The exact ``params`` (via :func:`symllm.arch.resolved.params`) or ``training`` FLOPs per token of the
        config at ``width``."""
        config = self.config(width)
        if quantity == "params":
            return params(config)["total"]
        return sympy_value(training_flops_per_token(model_for(config)), _values(config, batch=1, seq=self.seq))


def _bisect(fn, lo: float, hi: float, iters: int = 200) -> float:
    flo = fn(lo)
    for _ in range(iters):
        mid = (lo + hi) / 2
        fm = fn(mid)
        if (fm > 0) == (flo > 0):
            lo, flo = mid, fm
        else:
            hi = mid
    return (lo + hi) / 2


def compute_optimal_exact(budget: float, family: Family, law: LossLaw = CHINCHILLA) -> dict:
    """The loss-minimising width for ``budget`` training FLOPs when a token costs the family's exact
    training FLOPs ``F(d)`` (not ``6N``): the first-order condition
    ``alpha A N^-alpha · dlnN/dlnd = beta B D^-beta · dlnF/dlnd`` with ``D = C / F(d)`` (returned
    symbolically as ``"condition"``) has no closed-form root in general, so it is solved numerically
    on the smooth polynomials. Returns ``d``, ``L``, ``N``, ``D``, ``loss`` and the ``6ND`` optimum.

    >>> o = compute_optimal_exact(1e21, Family(aspect=128, head_dim=128, gqa=4))
    >>> 0.5 < o["N"] / o["six_nd"]["N"] < 2
    True
    """
    n_d, f_d = family.smooth("params"), family.smooth("training")
    k = law.constants()
    dd = S.d
    d_tokens = C / f_d
    condition = sp.Eq(k[alpha] * k[A] * n_d ** -k[alpha] * sp.diff(n_d, dd) * dd / n_d,
                      k[beta] * k[B] * d_tokens ** -k[beta] * sp.diff(f_d, dd) * dd / f_d)
    lhs = sp.lambdify(dd, (condition.lhs - condition.rhs).subs(C, budget), "math")
    width = math.exp(_bisect(lambda u: lhs(math.exp(u)), math.log(8.0), math.log(1e8)))
    n_num = float(n_d.subs(dd, width))
    d_num = budget / float(f_d.subs(dd, width))
    kk = {s_.name: float(v) for s_, v in k.items()}
    depth = width / family.aspect if family.aspect else family.n_layers
    return {"C": budget, "d": width, "L": depth, "N": n_num, "D": d_num,
            "flops_per_token": float(f_d.subs(dd, width)), "tokens_per_param": d_num / n_num,
            "loss": kk["E"] + kk["A"] / n_num ** kk["alpha"] + kk["B"] / d_num ** kk["beta"],
            "condition": condition, "six_nd": optimal_allocation(budget, law)}


# ---------------------------------------------------------------------------------------- inverse sizing
@dataclass(frozen=True)
class Sizing:
    """What :func:`size_for` found: the equation, its closed-form root, the continuous width or
    depth, and the nearest valid configs with their exact counts."""

    #: the smooth equation solved
    equation: sp.Eq
    #: the root in closed form, as a function of the budget symbol ``budget``
    closed_form: sp.Expr
    #: the symbol standing for the budget in ``closed_form``
    budget_symbol: sp.Symbol
    #: the root at the budget (width, or depth)
    continuous: float
    #: (config, exact count) for the nearest valid configs, closest first
    candidates: list = field(default_factory=list)


def size_for(budget: float, family: Family, *, quantity: str = "params", solve_for: str = "width",
             bytes_per_param: float = BF16, width: int | None = None, count: int = 4) -> Sizing:
    """Invert the family's smooth count: the width ``d`` (or, with ``solve_for="depth"`` and a
    ``width``, the depth ``L``) whose ``quantity`` equals ``budget``; then the nearest valid configs
    with exact counts. ``quantity``: ``"params"``, ``"weight_bytes"`` (params × ``bytes_per_param``)
    or ``"training"`` (FLOPs per token at the family's ``seq``).

    >>> s = size_for(8.03e9, Family(aspect=128, head_dim=128, gqa=4, ffn_dim_multiplier=1.3,
    ...                             multiple_of=1024))
    >>> round(s.continuous), s.candidates[0][0].dim, s.candidates[0][1]
    (4106, 4096, 8030261248)
    """
    choice("quantity", quantity, ("params", "weight_bytes", "training"))
    target = sp.Symbol("budget", positive=True)
    scale = sp.Rational(str(bytes_per_param)) if quantity == "weight_bytes" else 1
    num_scale = Fraction(str(bytes_per_param)) if quantity == "weight_bytes" else 1

    def scaled(count):
        value = count * num_scale
        return int(value) if Fraction(value).denominator == 1 else value
    kind = "training" if quantity == "training" else "params"
    if solve_for == "width":
        expr = family.smooth(kind) * scale
        var = S.d
    elif solve_for == "depth":
        if width is None:
            raise SymllmError("width: give the width to solve for the depth")
        fixed = Family(**{**family.__dict__, "aspect": None, "n_layers": 1})
        mdl = fixed._model()
        base = mdl.total("params") if kind == "params" else training_flops_per_token(mdl)
        vals = _values(fixed.config(width), batch=1, seq=family.seq)  # d_ff exact: no floats left
        vals = {k_: v for k_, v in vals.items() if k_ not in (S.L, S.f, r)}
        expr = sp.expand(base.subs({k_: sp.Rational(v.numerator, v.denominator)
                                    if isinstance(v, Fraction) else v for k_, v in vals.items()}) * scale)
        var = S.L
    else:
        choice("solve_for", solve_for, ("width", "depth"))
    equation = sp.Eq(expr, target)
    roots = sp.solve(equation, var)
    chosen = None
    for root in roots:
        val = complex(sp.N(root.subs(target, budget), 30))
        if abs(val.imag) <= 1e-9 * abs(val) and val.real > 0:
            chosen, cont = root, val.real
            break
    if chosen is None:
        raise SymllmError(f"budget: no positive {solve_for} gives {budget:g}")
    cands = []
    if solve_for == "width":
        base_w = max(1, int(cont // family.step))
        widths = [w * family.step for w in range(max(1, base_w - count // 2 + 1), base_w + count // 2 + 1)]
        for w in widths:
            cfg = family.config(w)
            cands.append((cfg, scaled(family.exact(w, kind))))
    else:
        for depth in sorted({max(1, math.floor(cont)), max(1, math.ceil(cont))}):
            fam = Family(**{**family.__dict__, "aspect": None, "n_layers": depth})
            cands.append((fam.config(width), scaled(fam.exact(width, kind))))
    cands.sort(key=lambda c: abs(c[1] - budget))
    return Sizing(equation, chosen, target, cont, cands)


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
    vals = _values(config, batch=batch)
    vals.update({S.beta_w: weight_bytes, S.beta_kv: kv_bytes})
    t_kv = sp.solve(sp.Eq(mdl.total("kv_cache").subs(S.t, _T - S.s) * S.beta_kv,
                          mdl.closed_form("params") * S.beta_w), _T)[0]
    return {
        "attention_ffn_prefill": sympy_value(attention_ffn_crossover(), vals),
        "attention_ffn_prefill_causal": sympy_value(attention_ffn_crossover(causal=True), vals),
        "attention_ffn_decode": sympy_value(attention_ffn_crossover(phase="decode"), vals),
        "kv_outweighs_weights": sympy_value(t_kv, vals),
    }
