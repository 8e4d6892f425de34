"""Compute-optimal sizes and inverse sizing (the second half of :mod:`symllm.costs.scaling`, which re-exports
every name here): the parametric loss law ``L(N, D)`` and Chinchilla's fit, its closed-form optimum under
``C = 6ND``, the exact optimum for a family of LLaMA shapes, and the shape whose exact count meets a budget.
``N`` (parameters), ``D`` (training tokens), ``C`` (training FLOPs) and the loss-law constants ``E, A, B, alpha,
beta`` are :mod:`symllm.arch.symbols`'.

>>> chinchilla_optimum()["N"]
G*(C/6)**a
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.resolved import model_for, params
from symllm.arch.components import model
from symllm.arch.config import ModelConfig
from symllm.arch.widths import SWIGLU_RATIO
from symllm.arch.dtypes import BF16
from symllm.errors import SymllmError
from symllm.validate import choice
from symllm.numbers.exact import sympy_value
from symllm.arch.symbols import A, B, C, D, E, N, alpha, beta, r
from symllm.costs.approximation import values_of, training_flops_per_token, unround

__all__ = ["LossLaw", "CHINCHILLA", "loss", "chinchilla_optimum", "optimal_allocation", "Family",
           "compute_optimal_exact", "size_for", "Sizing"]

#: the closed-form constants of the compute-optimal frontier
_G, _a, _b = sp.Symbol("G", positive=True), sp.Symbol("a", positive=True), sp.Symbol("b", positive=True)


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
        return sympy_value(training_flops_per_token(model_for(config)), values_of(config, batch=1, seq=self.seq))


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
        vals = values_of(fixed.config(width), batch=1, seq=family.seq)  # d_ff exact: no floats left
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
