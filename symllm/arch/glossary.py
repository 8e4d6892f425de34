"""What each symbol means, in plain text: its SymPy name, its code name (Meta's ``ModelArgs`` field, or
symllm's for a workload symbol), its LaTeX, one line of description and its kind. No SymPy: the command
line's help reads the descriptions here (``symllm sweep --help`` says what each config field it varies means)
without building a symbol, and :mod:`symllm.arch.symbols` creates the symbols from this table, so each
description is written once.

>>> BY_CODE["dim"].description, BY_CODE["dim"].name
('model width (hidden size)', 'd')
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Entry", "ENTRIES", "BY_CODE"]


@dataclass(frozen=True)
class Entry:
    """One symbol's meaning: everything about it but the SymPy object."""

    #: the SymPy symbol's name (``n_kv``)
    name: str
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
    #: a config field ``symllm sweep`` may vary (``--dim 2048:8192:256``; a workload's axes are its own:
    #: :attr:`symllm.costs.workloads.Option.axis`)
    axis: bool = False


#: every symbol's meaning, in a fixed, readable order (the order of symllm.arch.symbols.SYMBOLS)
ENTRIES = (
    Entry("V", "vocab_size", "V", "vocabulary size", "model", axis=True),
    Entry("d", "dim", "d", "model width (hidden size)", "model", axis=True),
    Entry("L", "n_layers", "L", "number of transformer blocks", "model", axis=True),
    Entry("n_h", "n_heads", "n_h", "query heads", "model", axis=True),
    Entry("n_kv", "n_kv_heads", "n_{kv}", "key/value heads (n_h: MHA, 1: MQA, between: GQA)", "model", axis=True),
    Entry("d_h", "head_dim", "d_h", "width of one attention head", "model", axis=True),
    Entry("d_ff", "hidden_dim", "d_{ff}", "SwiGLU inner width", "model", axis=True),
    Entry("m", "multiple_of", "m", "Meta's rounding granule for d_ff", "model", axis=True),
    Entry("f", "ffn_dim_multiplier", "f", "Meta's width multiplier for d_ff", "model", axis=True),
    Entry("n_e", "n_experts", "n_e", "routed experts in each mixture-of-experts layer", "model"),
    Entry("k", "experts_per_token", "k", "experts each token is routed to (top-k)", "model"),
    Entry("d_fd", "dense_hidden_dim", r"d_{ff}^{\mathrm{dense}}",
          "SwiGLU width of the dense layers of a model that interleaves MoE layers", "model"),
    Entry("d_se", "shared_hidden_dim", r"d_{ff}^{\mathrm{shared}}",
          "SwiGLU width of a shared expert of its own width (Qwen2-MoE's gated shared_expert_intermediate_size; "
          "DeepSeek's shared experts, n_shared_experts x moe_intermediate_size)", "model"),
    Entry("d_lm", "moe_latent_size", r"d_{\mathrm{lat}}",
          "width the routed experts run in, between the latent projections (Nemotron-3 Super's "
          "moe_latent_size)", "model"),
    *(Entry(f"L_{i}", f"n_layers_{i}", f"L_{{{i}}}", f"blocks of the group of identical layers numbered {i} "
            "(one group per kind of layer, in model order; the first has the rest of the L)", "layers", group=i - 1)
      for i in range(2, 9)),
    Entry("W", "window", "W", "keys a query may see: the sliding window, or the attention chunk", "model"),
    Entry("r_q", "q_lora_rank", "r_q", "rank of the compressed query of latent attention (MLA)", "model"),
    Entry("r_kv", "kv_lora_rank", r"r_{kv}", "rank of the compressed key-value latent of latent attention (MLA)",
          "model"),
    Entry("d_hr", "qk_rope_head_dim", r"d_h^{R}",
          "rotated (RoPE) width of a query/key head: MLA's decoupled RoPE part, or a partial rotary's", "model"),
    Entry("d_hn", "qk_nope_head_dim", r"d_h^{C}", "width of a query/key head's part without RoPE (MLA)", "model"),
    Entry("d_hv", "v_head_dim", r"d_h^{v}", "width of a value head (MLA)", "model"),
    Entry("L_mtp", "n_mtp_layers", r"L_{\mathrm{mtp}}",
          "multi-token-prediction modules the checkpoint stores (DeepSeek-V3, GLM-4.5; not in the model)",
          "model"),
    Entry("n_gk", "linear_key_heads", r"n_{k}^{\Delta}", "query/key heads of a Gated DeltaNet layer", "model"),
    Entry("n_gv", "linear_value_heads", r"n_{v}^{\Delta}",
          "value heads of a Gated DeltaNet layer (one recurrent state each)", "model"),
    Entry("d_gk", "linear_key_dim", r"d_{k}^{\Delta}", "width of a Gated DeltaNet query/key head", "model"),
    Entry("d_gv", "linear_value_dim", r"d_{v}^{\Delta}", "width of a Gated DeltaNet value head", "model"),
    Entry("K_c", "conv_kernel", "K_c", "width of the short causal convolution (Gated DeltaNet, Mamba-2)", "model"),
    Entry("n_ha", "alt_heads", r"n_h'", "query heads of the layers with their own head shape", "model"),
    Entry("n_kva", "alt_kv_heads", r"n_{kv}'", "key/value heads of the layers with their own head shape",
          "model"),
    Entry("d_ha", "alt_head_dim", r"d_h'", "head width of the layers with their own head shape", "model"),
    Entry("d_p", "per_layer_dim", r"d_{p}", "width of each layer's per-layer input (Gemma 4's "
          "hidden_size_per_layer_input)", "model"),
    Entry("V_p", "per_layer_vocab", r"V_{p}", "rows of the per-layer embedding table (Gemma 4's "
          "vocab_size_per_layer_input)", "model"),
    Entry("n_m", "mamba_heads", r"n_{m}", "heads of a Mamba-2 mixer (one SSM state of d_m x d_s each)", "model"),
    Entry("d_m", "mamba_head_dim", r"d_{m}", "width of a Mamba-2 head", "model"),
    Entry("d_s", "ssm_state", r"d_{s}", "SSM state size of a Mamba-2 mixer (ssm_state_size)", "model"),
    Entry("n_g", "mamba_groups", r"n_{g}", "groups of a Mamba-2 mixer's B and C (n_groups)", "model"),
    Entry("Q_c", "ssm_chunk", r"Q_{c}", "positions per chunk of the Mamba-2 SSD scan (chunk_size)", "model"),
    Entry("n_I", "index_heads", r"n_{I}", "query heads of the sparse-attention indexer (DSA: index_n_heads)",
          "model"),
    Entry("d_I", "index_head_dim", r"d_{I}",
          "width of an indexer query head and of its one cached key a token (DSA: index_head_dim)", "model"),
    Entry("K_I", "index_topk", r"K_{I}", "keys each query attends under sparse attention (DSA: index_topk)",
          "model"),
    Entry("n_hc", "hc_mult", r"n_{hc}", "residual streams of DeepSeek-V4's hyper-connections (hc_mult)", "model"),
    Entry("g_o", "o_groups", r"g_{o}", "groups of DeepSeek-V4's grouped output projection (o_groups)", "model"),
    Entry("r_o", "o_lora_rank", r"r_{o}", "outputs per group of DeepSeek-V4's grouped output projection "
          "(o_lora_rank)", "model"),
    Entry("m_c", "compress_csa", r"m_{c}", "tokens pooled into one entry by DeepSeek-V4's compressed sparse "
          "attention", "model"),
    Entry("m_h", "compress_hca", r"m_{h}", "tokens pooled into one entry by DeepSeek-V4's heavily compressed "
          "attention", "model"),
    Entry("I_hc", "hc_sinkhorn_iters", r"I_{hc}", "Sinkhorn iterations of DeepSeek-V4's hyper-connections "
          "(hc_sinkhorn_iters; element-wise work only)", "model"),
    Entry("b", "batch", "b", "sequences in a batch", "workload"),
    Entry("s", "seq", "s", "new tokens per sequence in a forward pass (prompt length)", "workload"),
    Entry("s_o", "logit_positions", "s_o", "positions per sequence whose logits an inference forward computes "
          "(--logits: 1, the last, as serving engines and generate do; s, every one)", "workload"),
    Entry("t", "context", "t", "tokens already in the KV cache", "workload"),
    Entry("n", "gen", "n", "tokens generated per sequence", "workload"),
    Entry("beta_w", "weight_bytes", r"\beta_w", "bytes per weight", "bytes"),
    Entry("beta_kv", "kv_bytes", r"\beta_{kv}", "bytes per KV-cache element", "bytes"),
    Entry("beta_a", "activation_bytes", r"\beta_a", "bytes per activation element", "bytes"),
    Entry("N_d", "dp", "N_d", "data-parallel ranks sharing the model states (ZeRO)", "workload"),
    Entry("N_t", "tp", "N_t", "tensor-parallel ranks sharing each layer", "workload"),
    Entry("N_p", "pp", "N_p", "pipeline-parallel stages of contiguous layers", "workload"),
    Entry("N_e", "ep", "N_e", "expert-parallel ranks sharing a layer's routed experts (carved out of N_d)",
          "workload"),
    Entry("r_lora", "lora_rank", r"r_{\mathrm{LoRA}}", "rank of each LoRA adapter (symllm.costs.finetune)",
          "finetune"),
    Entry("g", "gqa_ratio", "g", "query heads per key/value head (1: MHA, n_h: MQA)", "scaling"),
    Entry("r", "aspect_ratio", "r", "aspect ratio d / L", "scaling"),
    Entry("N", "params", "N", "parameters", "scaling"),
    Entry("D", "tokens", "D", "training tokens", "scaling"),
    Entry("C", "compute", "C", "training FLOPs", "scaling"),
    Entry("E", "loss_floor", "E", "irreducible loss of L(N, D) = E + A/N^alpha + B/D^beta", "scaling"),
    Entry("A", "loss_a", "A", "parameter term's constant of the parametric loss", "scaling"),
    Entry("B", "loss_b", "B", "data term's constant of the parametric loss", "scaling"),
    Entry("alpha", "loss_alpha", r"\alpha", "parameter exponent of the parametric loss", "scaling"),
    Entry("beta", "loss_beta", r"\beta", "data exponent of the parametric loss", "scaling"),
    Entry("P", "peak_flops", "P", "peak dense matmul FLOP/s of the accelerator (--gpu) in the matmuls' dtype",
          "hardware"),
    Entry("B_mem", "bandwidth", r"B_{\mathrm{mem}}", "memory bandwidth of the accelerator, bytes/s", "hardware"),
)

#: code name (a config's or workload's field) -> its entry
BY_CODE: dict[str, Entry] = {e.code: e for e in ENTRIES}
