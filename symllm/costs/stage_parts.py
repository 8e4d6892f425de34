"""The parts of a pipeline stage the expected time (:mod:`symllm.costs.efficiency`) runs at an efficiency of their
own, chosen by what the closed forms say, not by names: the attention core (matmul FLOPs that grow with the
context), its windowed layers' share, the routed experts and the output head (:func:`part`). Read by
:func:`symllm.costs.hardware.stage_times`.

>>> from symllm.arch.components import model
>>> moe_layers(model())
0
"""
from __future__ import annotations

import sympy as sp

from symllm.arch import symbols as S

__all__ = ["part", "core", "windowed", "moe_layers", "routed"]


def part(comp, name: str, keep):
    """A component holding the parameters, active parameters and matmul FLOPs that the parts of ``comp`` for
    which ``keep(part)`` holds own themselves, repeats included: what the expected time
    (:mod:`symllm.costs.efficiency`) runs at an efficiency of its own, chosen by what the closed forms say,
    not by names (:func:`core`, :func:`routed`); its FLOPs under ``torch.no_grad`` in a child that says so."""
    from symllm.arch.components import Component, Rules

    def grows(c, q, gradless=None, under=sp.S.Zero) -> sp.Expr:  # gradless: only parts run forward only, or none
        under = 1 - (1 - under) * (1 - c.rules.forward_only)  # 1 where c runs forward only (Rules.no_grad), else 0
        share = {None: 1, True: under, False: 1 - under}[gradless]
        own = share * (c.flops if q == "flops" else c.own(q)) if keep(c) else sp.S.Zero
        return c.repeat * (own + sum((grows(x, q, gradless, under) for x in c.children), sp.S.Zero))
    frozen = grows(comp, "flops", True)
    return Component(name, params=grows(comp, "params"), active=grows(comp, "active"), flops=grows(comp, "flops", False),
                     children=(Component("no_grad", flops=frozen, rules=Rules(no_grad=True)),) if frozen != 0 else ())


def core(comp):
    """The attention core of ``comp``: the matmul FLOPs that grow with the context ``t`` (the scores and the
    weighted values of every attention layer); the expected time runs them at the attention kernel's
    efficiency.

    >>> from symllm.arch.components import model
    >>> core(model()).total("flops")
    4*L*b*d_h*n_h*s*(s + t)
    """
    return part(comp, "core", lambda c: S.t in c.flops.free_symbols or c.flops.has(sp.Min))


def windowed(comp, kind: str):
    """The attention core (:func:`core`'s parts that hold ``W``) of the layers of ``comp`` under a ``kind``
    window ("sliding", "chunked": the window the attention's rules declare, :attr:`Rules.window`), repeats
    included: what the expected time runs on a local kernel's tiles (:mod:`symllm.costs.tiles`).

    >>> from symllm import api
    >>> windowed(api.spec("gpt-oss-20b").model(), "sliding").flops.subs(S.t, 0)
    4*b*d_h*n_h*s**2*(L - L_2)
    """
    from symllm.arch.components import Component

    def grows(c, inside: bool) -> sp.Expr:
        inside = inside or getattr(getattr(c, "rules", None), "window", "") == kind
        own = c.flops if inside and S.W in c.flops.free_symbols and (
            S.t in c.flops.free_symbols or c.flops.has(sp.Min)) else sp.S.Zero
        return c.repeat * (own + sum((grows(x, inside) for x in c.children), sp.S.Zero))
    return Component(f"{kind} core", flops=grows(comp, False))


def moe_layers(comp) -> sp.Expr:
    """The routed-experts parts of ``comp`` (:func:`routed`'s), repeats included: a stage's MoE layers.

    >>> from symllm import api
    >>> moe_layers(api.spec("mixtral-8x7b").model())
    L
    """
    return comp.repeat * (int(comp.active is not None) + sum((moe_layers(c) for c in comp.children), sp.S.Zero))


def routed(comp):
    """The routed experts of ``comp``: every part whose tokens use only some of its parameters (``active``
    set: a mixture's experts); their GEMMs see only the tokens routed to each expert.

    >>> from symllm import api
    >>> r = routed(api.spec("mixtral-8x7b").model())
    >>> r.total("active") / r.total("params")
    k/n_e
    """
    return part(comp, "routed", lambda c: c.active is not None)
