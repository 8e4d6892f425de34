"""Every symbol symllm uses, created once, with assumptions; their code names, LaTeX names and descriptions
are :mod:`symllm.arch.glossary`'s (plain text, read by the command line's help without SymPy).

SymPy names are the short mathematical names (``d``, ``n_kv``, ``d_ff``), so expressions print
readably by default; ``CODE_NAMES`` maps Meta's / HF's field names to them, and ``LATEX`` maps each symbol to
its default LaTeX (users may override it: a paper uses its own notation).

>>> from symllm.arch.symbols import d, n_h, n_kv, d_h
>>> (2 * d * d_h * (n_h + n_kv)).free_symbols == {d, d_h, n_h, n_kv}
True
>>> latex_name(n_kv)
'n_{kv}'
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import sympy as sp

from symllm.arch import glossary
from symllm.numbers.kernels import float_symbol

__all__ = [
    "SymbolInfo", "SYMBOLS", "CODE_NAMES", "LATEX", "describe", "latex_name",
    "V", "d", "L", "n_h", "n_kv", "d_h", "d_ff", "m", "f", "n_e", "k", "d_fd", "d_se", "GROUP_COUNTS", "W",
    "r_q", "r_kv", "d_hr", "d_hn", "d_hv", "L_mtp", "n_gk", "n_gv", "d_gk", "d_gv", "K_c",
    "n_ha", "n_kva", "d_ha", "d_p", "V_p", "n_m", "d_m", "d_s", "n_g", "Q_c", "n_I", "d_I", "K_I", "d_lm",
    "n_hc", "g_o", "r_o", "m_c", "m_h", "I_hc",
    "b", "s", "s_o", "t", "n", "beta_w", "beta_kv", "beta_a", "N_d", "N_t", "N_p", "N_e", "r_lora",
    "g", "r", "N", "D", "C", "E", "A", "B", "alpha", "beta", "P", "B_mem",
]


@dataclass(frozen=True)
class SymbolInfo(glossary.Entry):
    """One symbol with its meaning (:class:`symllm.arch.glossary.Entry`: code name, LaTeX name, description)."""

    #: the SymPy symbol
    symbol: sp.Symbol = field(kw_only=True)

    @property
    def binds(self) -> tuple[str, str | int]:
        """What this symbol binds in a model: ``("group", i)``, the count of its group of layers (position
        ``i`` of the counts per group), or ``("field", code)``, a config's or spec's field (a JSON-able pair:
        symllm.studies.quick stores it beside a compiled kernel and reads it back without SymPy).

        >>> SYMBOLS[GROUP_COUNTS[0]].binds, SYMBOLS[d].binds
        (('group', 1), ('field', 'dim'))
        """
        return ("group", self.group) if self.group is not None else ("field", self.code)

    def value(self, counts: tuple, fields):
        """The number this symbol binds (:attr:`binds`): its group's count in ``counts`` (a config's or spec's
        counts per group of layers; None where the model has no such group), else its field, ``fields(code)``.

        >>> SYMBOLS[GROUP_COUNTS[0]].value((30, 18), None), SYMBOLS[d].value((48,), {"dim": 8}.get)
        (18, 8)
        """
        kind, what = self.binds
        if kind == "group":
            return counts[what] if what < len(counts) else None
        return fields(what)


_size = dict(integer=True, positive=True)

V = sp.Symbol("V", **_size)
d = sp.Symbol("d", **_size)
L = sp.Symbol("L", **_size)
n_h = sp.Symbol("n_h", **_size)
n_kv = sp.Symbol("n_kv", **_size)
d_h = sp.Symbol("d_h", **_size)
d_ff = sp.Symbol("d_ff", **_size)
m = sp.Symbol("m", **_size)
f = float_symbol("f", positive=True, finite=True)  # its values are doubles: the kernels round it as one
# mixture of experts (Mixtral, Llama 4)
n_e = sp.Symbol("n_e", **_size)
k = sp.Symbol("k", **_size)
d_fd = sp.Symbol("d_fd", **_size)
# Qwen2-MoE's gated shared expert and DeepSeek's shared experts have their own width
d_se = sp.Symbol("d_se", **_size)
# Nemotron-3 Super's latent experts: the routed experts run in this width (moe_latent_size), between a d -> d_lm
# and a d_lm -> d projection (symllm.arch.components.mixture.moe)
d_lm = sp.Symbol("d_lm", **_size)
#: the blocks of the 2nd, 3rd, ... group of identical layers (symllm.arch.layers: one group per kind of
#: layer); the first group has the rest, ``L - L_2 - ...``, and a model with one group has ``L`` alone
GROUP_COUNTS = tuple(sp.Symbol(e.name, **_size) for e in glossary.ENTRIES if e.group is not None)
# sliding-window (Mistral) or chunked (Llama 4) attention
W = sp.Symbol("W", **_size)
# multi-head latent attention (DeepSeek-V2/V3) and multi-token prediction
r_q = sp.Symbol("r_q", **_size)
r_kv = sp.Symbol("r_kv", **_size)
d_hr = sp.Symbol("d_hr", **_size)
d_hn = sp.Symbol("d_hn", **_size)
d_hv = sp.Symbol("d_hv", **_size)
L_mtp = sp.Symbol("L_mtp", **_size)
# Gated DeltaNet (Qwen3-Next, Qwen3.5: symllm.arch.components.deltanet)
n_gk = sp.Symbol("n_gk", **_size)
n_gv = sp.Symbol("n_gv", **_size)
d_gk = sp.Symbol("d_gk", **_size)
d_gv = sp.Symbol("d_gv", **_size)
K_c = sp.Symbol("K_c", **_size)
# per-layer embeddings (Gemma 4 E2B/E4B: symllm.arch.components.embeddings.per_layer_embedding)
d_p = sp.Symbol("d_p", **_size)
V_p = sp.Symbol("V_p", **_size)
# the second head shape of some kinds of layer (LayerKind.heads "own": Gemma 4's full-attention layers)
n_ha = sp.Symbol("n_ha", **_size)
n_kva = sp.Symbol("n_kva", **_size)
d_ha = sp.Symbol("d_ha", **_size)
#: Mamba-2 (Nemotron-H): heads, head width, SSM state size, groups of B and C, the SSD scan's chunk
n_m = sp.Symbol("n_m", **_size)
d_m = sp.Symbol("d_m", **_size)
d_s = sp.Symbol("d_s", **_size)
n_g = sp.Symbol("n_g", **_size)
Q_c = sp.Symbol("Q_c", **_size)
# DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5: symllm.arch.components.latent.indexer)
n_I = sp.Symbol("n_I", **_size)
d_I = sp.Symbol("d_I", **_size)
K_I = sp.Symbol("K_I", **_size)
# DeepSeek-V4 (symllm.arch.components.compressed): residual streams, the grouped output projection, compression rates
n_hc = sp.Symbol("n_hc", **_size)
g_o = sp.Symbol("g_o", **_size)
r_o = sp.Symbol("r_o", **_size)
m_c = sp.Symbol("m_c", **_size)
m_h = sp.Symbol("m_h", **_size)
I_hc = sp.Symbol("I_hc", **_size)
b = sp.Symbol("b", **_size)
s = sp.Symbol("s", **_size)
s_o = sp.Symbol("s_o", **_size)  # positions per sequence whose logits a forward computes
t = sp.Symbol("t", integer=True, nonnegative=True)
n = sp.Symbol("n", integer=True, nonnegative=True)
beta_w = sp.Symbol("beta_w", positive=True)
beta_kv = sp.Symbol("beta_kv", positive=True)
beta_a = sp.Symbol("beta_a", positive=True)
N_d = sp.Symbol("N_d", **_size)
N_t = sp.Symbol("N_t", **_size)
N_p = sp.Symbol("N_p", **_size)
N_e = sp.Symbol("N_e", **_size)
# fine-tuning (symllm.costs.finetune)
r_lora = sp.Symbol("r_lora", **_size)
# scaling laws (symllm.costs.scaling)
g = sp.Symbol("g", positive=True)
r = sp.Symbol("r", positive=True)
N = sp.Symbol("N", positive=True)
D = sp.Symbol("D", positive=True)
C = sp.Symbol("C", positive=True)
E = sp.Symbol("E", positive=True)
A = sp.Symbol("A", positive=True)
B = sp.Symbol("B", positive=True)
alpha = sp.Symbol("alpha", positive=True)
beta = sp.Symbol("beta", positive=True)
# an accelerator (symllm.costs.hardware): bound from Workload.gpu
P = sp.Symbol("P", positive=True)
B_mem = sp.Symbol("B_mem", positive=True)

#: the symbols by name (the group counts are no module attribute of their own)
_NAMED = {**{n: globals()[n] for n in __all__ if isinstance(globals().get(n), sp.Symbol)},
          **{s.name: s for s in GROUP_COUNTS}}
_TABLE = [SymbolInfo(**dataclasses.asdict(e), symbol=_NAMED[e.name]) for e in glossary.ENTRIES]

#: symbol -> SymbolInfo, in a fixed, readable order
SYMBOLS: dict[sp.Symbol, SymbolInfo] = {i.symbol: i for i in _TABLE}
#: Meta / symllm field name -> symbol
CODE_NAMES: dict[str, sp.Symbol] = {i.code: i.symbol for i in _TABLE}
#: symbol -> default LaTeX name
LATEX: dict[sp.Symbol, str] = {i.symbol: i.latex for i in _TABLE}


def describe(symbol: sp.Symbol) -> str:
    """One line saying what ``symbol`` means.

    >>> describe(d_ff)
    'SwiGLU inner width'
    """
    return SYMBOLS[symbol].description


def latex_name(symbol: sp.Symbol, notation: dict | None = None) -> str:
    """The LaTeX for ``symbol``: the user's ``notation`` first, then the default table.

    >>> latex_name(d, {d: r"d_\\mathrm{model}"})
    'd_\\\\mathrm{model}'
    """
    if notation and symbol in notation:
        return notation[symbol]
    return LATEX.get(symbol, sp.latex(symbol))
