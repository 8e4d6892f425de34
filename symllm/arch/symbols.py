"""Every symbol symllm uses, created once, with assumptions, LaTeX names and descriptions.

SymPy names are the short mathematical names (``d``, ``n_kv``, ``d_ff``), so expressions print
readably by default; ``CODE_NAMES`` maps Meta's / HF's field names to them, and ``LATEX`` is the
one table of LaTeX names (users may override it: a paper uses its own notation).

>>> from symllm.arch.symbols import d, n_h, n_kv, d_h
>>> (2 * d * d_h * (n_h + n_kv)).free_symbols == {d, d_h, n_h, n_kv}
True
>>> latex_name(n_kv)
'n_{kv}'
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

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
class SymbolInfo:
    """One symbol with its code name, LaTeX name and meaning."""

    #: the SymPy symbol
    symbol: sp.Symbol
    #: Meta's ``ModelArgs`` name (or symllm's, for workload symbols)
    code: str
    #: the LaTeX used in reports unless the user's notation overrides it
    latex: str
    #: one line saying what the symbol means
    description: str
    #: "model", "workload", "bytes", "scaling" or "hardware" (bound by Workload.values() when --gpu is given)
    kind: str
    #: a group count (kind "layers"): the position of the group of layers whose count it binds, in
    #: ``ModelConfig.groups`` and ``Spec.counts`` (its ``code`` names no field); None for every other symbol
    group: int | None = None

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
GROUP_COUNTS = tuple(sp.Symbol(f"L_{i}", **_size) for i in range(2, 9))
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

_TABLE = [
    SymbolInfo(V, "vocab_size", "V", "vocabulary size", "model"),
    SymbolInfo(d, "dim", "d", "model width (hidden size)", "model"),
    SymbolInfo(L, "n_layers", "L", "number of transformer blocks", "model"),
    SymbolInfo(n_h, "n_heads", "n_h", "query heads", "model"),
    SymbolInfo(n_kv, "n_kv_heads", "n_{kv}", "key/value heads (n_h: MHA, 1: MQA, between: GQA)", "model"),
    SymbolInfo(d_h, "head_dim", "d_h", "width of one attention head", "model"),
    SymbolInfo(d_ff, "hidden_dim", "d_{ff}", "SwiGLU inner width", "model"),
    SymbolInfo(m, "multiple_of", "m", "Meta's rounding granule for d_ff", "model"),
    SymbolInfo(f, "ffn_dim_multiplier", "f", "Meta's width multiplier for d_ff", "model"),
    SymbolInfo(n_e, "n_experts", "n_e", "routed experts in each mixture-of-experts layer", "model"),
    SymbolInfo(k, "experts_per_token", "k", "experts each token is routed to (top-k)", "model"),
    SymbolInfo(d_fd, "dense_hidden_dim", r"d_{ff}^{\mathrm{dense}}",
               "SwiGLU width of the dense layers of a model that interleaves MoE layers", "model"),
    SymbolInfo(d_se, "shared_hidden_dim", r"d_{ff}^{\mathrm{shared}}",
               "SwiGLU width of a shared expert of its own width (Qwen2-MoE's gated shared_expert_intermediate_size; "
               "DeepSeek's shared experts, n_shared_experts x moe_intermediate_size)", "model"),
    SymbolInfo(d_lm, "moe_latent_size", r"d_{\mathrm{lat}}",
               "width the routed experts run in, between the latent projections (Nemotron-3 Super's "
               "moe_latent_size)", "model"),
    *(SymbolInfo(count, f"n_layers_{i}", f"L_{{{i}}}", f"blocks of the group of identical layers numbered {i} "
                 "(one group per kind of layer, in model order; the first has the rest of the L)", "layers",
                 group=i - 1)
      for i, count in enumerate(GROUP_COUNTS, start=2)),
    SymbolInfo(W, "window", "W", "keys a query may see: the sliding window, or the attention chunk", "model"),
    SymbolInfo(r_q, "q_lora_rank", "r_q", "rank of the compressed query of latent attention (MLA)", "model"),
    SymbolInfo(r_kv, "kv_lora_rank", r"r_{kv}", "rank of the compressed key-value latent of latent attention (MLA)",
               "model"),
    SymbolInfo(d_hr, "qk_rope_head_dim", r"d_h^{R}",
               "rotated (RoPE) width of a query/key head: MLA's decoupled RoPE part, or a partial rotary's", "model"),
    SymbolInfo(d_hn, "qk_nope_head_dim", r"d_h^{C}", "width of a query/key head's part without RoPE (MLA)", "model"),
    SymbolInfo(d_hv, "v_head_dim", r"d_h^{v}", "width of a value head (MLA)", "model"),
    SymbolInfo(L_mtp, "n_mtp_layers", r"L_{\mathrm{mtp}}",
               "multi-token-prediction modules the checkpoint stores (DeepSeek-V3, GLM-4.5; not in the model)",
               "model"),
    SymbolInfo(n_gk, "linear_key_heads", r"n_{k}^{\Delta}", "query/key heads of a Gated DeltaNet layer", "model"),
    SymbolInfo(n_gv, "linear_value_heads", r"n_{v}^{\Delta}",
               "value heads of a Gated DeltaNet layer (one recurrent state each)", "model"),
    SymbolInfo(d_gk, "linear_key_dim", r"d_{k}^{\Delta}", "width of a Gated DeltaNet query/key head", "model"),
    SymbolInfo(d_gv, "linear_value_dim", r"d_{v}^{\Delta}", "width of a Gated DeltaNet value head", "model"),
    SymbolInfo(K_c, "conv_kernel", "K_c", "width of the short causal convolution (Gated DeltaNet, Mamba-2)", "model"),
    SymbolInfo(n_ha, "alt_heads", r"n_h'", "query heads of the layers with their own head shape", "model"),
    SymbolInfo(n_kva, "alt_kv_heads", r"n_{kv}'", "key/value heads of the layers with their own head shape",
               "model"),
    SymbolInfo(d_ha, "alt_head_dim", r"d_h'", "head width of the layers with their own head shape", "model"),
    SymbolInfo(d_p, "per_layer_dim", r"d_{p}", "width of each layer's per-layer input (Gemma 4's "
               "hidden_size_per_layer_input)", "model"),
    SymbolInfo(V_p, "per_layer_vocab", r"V_{p}", "rows of the per-layer embedding table (Gemma 4's "
               "vocab_size_per_layer_input)", "model"),
    SymbolInfo(n_m, "mamba_heads", r"n_{m}", "heads of a Mamba-2 mixer (one SSM state of d_m x d_s each)", "model"),
    SymbolInfo(d_m, "mamba_head_dim", r"d_{m}", "width of a Mamba-2 head", "model"),
    SymbolInfo(d_s, "ssm_state", r"d_{s}", "SSM state size of a Mamba-2 mixer (ssm_state_size)", "model"),
    SymbolInfo(n_g, "mamba_groups", r"n_{g}", "groups of a Mamba-2 mixer's B and C (n_groups)", "model"),
    SymbolInfo(Q_c, "ssm_chunk", r"Q_{c}", "positions per chunk of the Mamba-2 SSD scan (chunk_size)", "model"),
    SymbolInfo(n_I, "index_heads", r"n_{I}", "query heads of the sparse-attention indexer (DSA: index_n_heads)",
               "model"),
    SymbolInfo(d_I, "index_head_dim", r"d_{I}",
               "width of an indexer query head and of its one cached key a token (DSA: index_head_dim)", "model"),
    SymbolInfo(K_I, "index_topk", r"K_{I}", "keys each query attends under sparse attention (DSA: index_topk)",
               "model"),
    SymbolInfo(n_hc, "hc_mult", r"n_{hc}", "residual streams of DeepSeek-V4's hyper-connections (hc_mult)", "model"),
    SymbolInfo(g_o, "o_groups", r"g_{o}", "groups of DeepSeek-V4's grouped output projection (o_groups)", "model"),
    SymbolInfo(r_o, "o_lora_rank", r"r_{o}", "outputs per group of DeepSeek-V4's grouped output projection "
               "(o_lora_rank)", "model"),
    SymbolInfo(m_c, "compress_csa", r"m_{c}", "tokens pooled into one entry by DeepSeek-V4's compressed sparse "
               "attention", "model"),
    SymbolInfo(m_h, "compress_hca", r"m_{h}", "tokens pooled into one entry by DeepSeek-V4's heavily compressed "
               "attention", "model"),
    SymbolInfo(I_hc, "hc_sinkhorn_iters", r"I_{hc}", "Sinkhorn iterations of DeepSeek-V4's hyper-connections "
               "(hc_sinkhorn_iters; element-wise work only)", "model"),
    SymbolInfo(b, "batch", "b", "sequences in a batch", "workload"),
    SymbolInfo(s, "seq", "s", "new tokens per sequence in a forward pass (prompt length)", "workload"),
    SymbolInfo(s_o, "logit_positions", "s_o", "positions per sequence whose logits an inference forward computes "
               "(--logits: 1, the last, as serving engines and generate do; s, every one)", "workload"),
    SymbolInfo(t, "context", "t", "tokens already in the KV cache", "workload"),
    SymbolInfo(n, "gen", "n", "tokens generated per sequence", "workload"),
    SymbolInfo(beta_w, "weight_bytes", r"\beta_w", "bytes per weight", "bytes"),
    SymbolInfo(beta_kv, "kv_bytes", r"\beta_{kv}", "bytes per KV-cache element", "bytes"),
    SymbolInfo(beta_a, "activation_bytes", r"\beta_a", "bytes per activation element", "bytes"),
    SymbolInfo(N_d, "dp", "N_d", "data-parallel ranks sharing the model states (ZeRO)", "workload"),
    SymbolInfo(N_t, "tp", "N_t", "tensor-parallel ranks sharing each layer", "workload"),
    SymbolInfo(N_p, "pp", "N_p", "pipeline-parallel stages of contiguous layers", "workload"),
    SymbolInfo(N_e, "ep", "N_e", "expert-parallel ranks sharing a layer's routed experts (carved out of N_d)",
               "workload"),
    SymbolInfo(r_lora, "lora_rank", r"r_{\mathrm{LoRA}}", "rank of each LoRA adapter (symllm.costs.finetune)",
               "finetune"),
    SymbolInfo(g, "gqa_ratio", "g", "query heads per key/value head (1: MHA, n_h: MQA)", "scaling"),
    SymbolInfo(r, "aspect_ratio", "r", "aspect ratio d / L", "scaling"),
    SymbolInfo(N, "params", "N", "parameters", "scaling"),
    SymbolInfo(D, "tokens", "D", "training tokens", "scaling"),
    SymbolInfo(C, "compute", "C", "training FLOPs", "scaling"),
    SymbolInfo(E, "loss_floor", "E", "irreducible loss of L(N, D) = E + A/N^alpha + B/D^beta", "scaling"),
    SymbolInfo(A, "loss_a", "A", "parameter term's constant of the parametric loss", "scaling"),
    SymbolInfo(B, "loss_b", "B", "data term's constant of the parametric loss", "scaling"),
    SymbolInfo(alpha, "loss_alpha", r"\alpha", "parameter exponent of the parametric loss", "scaling"),
    SymbolInfo(beta, "loss_beta", r"\beta", "data exponent of the parametric loss", "scaling"),
    SymbolInfo(P, "peak_flops", "P", "peak dense matmul FLOP/s of the accelerator (--gpu) in the matmuls' dtype",
               "hardware"),
    SymbolInfo(B_mem, "bandwidth", r"B_{\mathrm{mem}}", "memory bandwidth of the accelerator, bytes/s", "hardware"),
]

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
