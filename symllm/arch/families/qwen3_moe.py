"""The ``qwen3_moe`` family: transformers' ``Qwen3MoeForCausalLM`` (Qwen3-30B-A3B, Qwen3-235B-A22B).

Qwen3's attention (QK-norm of width ``head_dim``; ``attention_bias`` read) with a mixture of experts: a
layer is MoE unless listed in ``mlp_only_layers`` or off the ``decoder_sparse_step`` (layer ``i`` is MoE when
``(i + 1) % decoder_sparse_step == 0``), and ``num_experts`` is positive. A MoE layer routes each token to
``num_experts_per_tok`` of ``num_experts`` (transformers 5 also writes ``num_local_experts``) SwiGLU experts
of width ``moe_intermediate_size``, with no shared expert; ``norm_topk_prob`` renormalises the top-k weights
(no parameters, no matmul). The other layers are a dense SwiGLU of ``intermediate_size``. Unlike Qwen3, an
absent ``head_dim`` is ``hidden_size // num_attention_heads``, absent ``num_key_value_heads`` is 4, and
``use_sliding_window`` puts the window in every layer (this class has no ``max_window_layers``).
The class always has the QK-norm and never reads ``use_qk_norm``, ``qkv_bias`` or
``shared_expert_intermediate_size`` (Qwen3-Coder-480B-A35B-Instruct's and Tongyi-DeepResearch-30B-A3B's
config.json state them): true, false and 0, what it builds, are accepted; another value is refused.

>>> f = _fields({"num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [0], "intermediate_size": 64,
...              "moe_intermediate_size": 16}, 3)
>>> [(k.ffn, count) for k, count in f["layers"]], f["hidden_dim"], f["dense_hidden_dim"]
([('dense', 1), ('moe', 2)], 16, 64)
"""
from symllm.arch.families.hf import QK_NORM_GRADS, flag, groups, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.qwen import QWEN3
from symllm.arch.families.qwen2_moe import moe_layers
from symllm.errors import SymllmError

__all__ = ["QWEN3_MOE"]


def _experts(raw: dict) -> int:
    """``num_experts``, or ``num_local_experts`` as transformers 5 writes it (the same attribute)."""
    given = {k: integer(raw, k, minimum=0) for k in ("num_experts", "num_local_experts") if k in raw}
    if len(set(given.values())) > 1:
        raise SymllmError(f"num_local_experts: {given['num_local_experts']} differs from num_experts "
                          f"{given['num_experts']} (one attribute)")
    return next(iter(given.values()), 128)


def _fields(raw: dict, n_layers: int) -> dict:
    flag(raw, "norm_topk_prob", False)  # checked only: it changes no count
    E = _experts(raw)
    moe = moe_layers(raw, n_layers, E)
    window = integer(raw, "sliding_window", 4096, nullable=True) if flag(raw, "use_sliding_window", False) else None
    out = {"sliding_window": window}
    if not moe:  # every layer dense
        return {**out, "hidden_dim": integer(raw, "intermediate_size", 6144)}
    window = None if window is None else "sliding"
    # PEFT adapts Qwen3MoeExperts' fused gate_up_proj/down_proj under gate_proj/up_proj/down_proj (transformers'
    # weight-conversion mapping): peft_fused_experts refuses those targets rather than count them wrong
    out.update(n_experts=E, experts_per_token=integer(raw, "num_experts_per_tok", 8),
               **groups([LayerKind(ffn="moe" if i in moe else "dense", window=window) for i in range(n_layers)]),
               hidden_dim=integer(raw, "moe_intermediate_size", 768), peft_fused_experts=True)
    if len(moe) < n_layers:
        out["dense_hidden_dim"] = integer(raw, "intermediate_size", 6144)
    return out


#: Qwen3's attention (its per-head QK-norm, attention_bias read) with experts (its fields), 4 KV heads when absent,
#: no nullable size, the window in every layer (no layer_types), and the keys Qwen3-Coder states accepted
QWEN3_MOE = register(QWEN3.extend(
    "qwen3_moe", fields=_fields, defaults={"num_key_value_heads": 4}, nullable=(), layer_types=("full_attention",),
    # keys Qwen3MoeConfig keeps and Qwen3MoeForCausalLM never reads: Qwen3-Coder-480B-A35B-Instruct states the
    # QK-norm it always has, no q/k/v bias and no shared expert (read as it builds; the other value refused)
    ignored={"layer_types": None, "use_qk_norm": True, "qkv_bias": False, "shared_expert_intermediate_size": 0},
    models=("num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
            "decoder_sparse_step", "mlp_only_layers", "use_qk_norm"),
    names={"hidden_dim": "moe_intermediate_size", "dense_hidden_dim": "intermediate_size",
           "n_experts": "num_experts", "experts_per_token": "num_experts_per_tok"},
    tp_plan=QK_NORM_GRADS,
    presets="config.json of Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B, Qwen/Qwen3-Coder-480B-A35B-Instruct"))
