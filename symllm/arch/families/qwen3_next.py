"""The Gated DeltaNet hybrids: ``qwen3_next`` (transformers' ``Qwen3NextForCausalLM``, Qwen3-Next-80B-A3B),
``qwen3_5_text`` (``Qwen3_5ForCausalLM``; ``qwen3_5``, the multimodal wrapper whose ``text_config`` it is) and
``qwen3_5_moe_text`` (``Qwen3_5MoeForCausalLM``; ``qwen3_5_moe``, its wrapper).

Each layer's token mixer is a Gated DeltaNet (``linear_attention``: :mod:`symllm.arch.components.deltanet`) or a
gated full attention (``full_attention``: Qwen3's attention with a per-head QK-norm, a ``q_proj`` doubled for a
sigmoid output gate, RoPE on ``int(head_dim × partial_rotary_factor)`` of each head, default 0.25), as
``layer_types`` says or, absent, as the config class derives it: layer ``i`` is full attention when
``(i + 1) % full_attention_interval == 0`` (default 4). Every RMSNorm but the DeltaNet's gated one scales by
``1 + weight`` (zero-centred). Qwen3-Next's feed-forward is Qwen2-MoE's (``num_experts`` routed experts of
``moe_intermediate_size``, a shared expert of ``shared_expert_intermediate_size`` scaled by a sigmoid gate) on
the layers ``mlp_only_layers`` / ``decoder_sparse_step`` leave MoE, a dense SwiGLU of ``intermediate_size``
elsewhere; Qwen3.5-MoE's is that MoE on every layer; Qwen3.5's a dense SwiGLU. Qwen3.5's DeltaNet has four
input projections where Qwen3-Next's has two (the same parameters). The ``mtp_num_hidden_layers``
multi-token-prediction modules the checkpoints store (``mtp.*``), which transformers does not build, are
reported apart from the total (``mtp``), as vLLM's ``Qwen3NextMultiTokenPredictor`` lays each out: norms of the
embedding and of the hidden state, ``fc`` (``2d -> d``), one full-attention layer (its feed-forward a MoE as layer
0's would be: Qwen3-Next's ``decoder_sparse_step`` and ``mlp_only_layers``, Qwen3.5-MoE's always, Qwen3.5's a
SwiGLU) and a norm, the embedding and head the model's (``mtp_use_dedicated_embeddings`` true is refused).

>>> f = _fields({"num_hidden_layers": 4}, 4, "qwen3_next")
>>> [(k.mixer, k.ffn, n) for k, n in f["layers"]], f["linear_value_heads"]
([('linear_attention', 'moe', 3), ('attention', 'moe', 1)], 32)
"""
from symllm.arch.families.hf import QK_NORM_GRADS, flag, groups, indices, integer, register, rotary_factor
from symllm.arch.layers import LayerKind
from symllm.arch.families.qwen2_moe import QWEN2_MOE
from symllm.arch.recurrent_sizes import stated_state_dtype
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["QWEN3_NEXT", "QWEN3_5", "QWEN3_5_MOE"]

#: the Gated DeltaNet's keys and their defaults (the same in the three config classes)
_LINEAR = {"linear_num_key_heads": ("linear_key_heads", 16), "linear_num_value_heads": ("linear_value_heads", 32),
           "linear_key_head_dim": ("linear_key_dim", 128), "linear_value_head_dim": ("linear_value_dim", 128),
           "linear_conv_kernel_dim": ("conv_kernel", 4)}


def _mixers(raw: dict, n_layers: int) -> list[str]:
    """Each layer's mixer, as the config class derives ``layer_types`` (names and length checked by hf._check)."""
    types = raw.get("layer_types")
    if types is None:
        interval = integer(raw, "full_attention_interval", 4)
        types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n_layers)]
    return ["linear_attention" if kind == "linear_attention" else "attention" for kind in types]


def _mtp(raw: dict, out: dict) -> dict:
    """``out`` with the multi-token-prediction modules: ``mtp_num_hidden_layers`` of them, each one full-attention
    block whose feed-forward is what layer 0's would be (vLLM's Qwen3NextDecoderLayer at index 0), a kind of
    the model's (``mtp_kinds``)."""
    count = integer(raw, "mtp_num_hidden_layers", 0, minimum=0)
    if not count:
        return out
    if flag(raw, "mtp_use_dedicated_embeddings", False):
        raise SymllmError("mtp_use_dedicated_embeddings: true (an MTP embedding of its own) is not modelled")
    first = next(kind for kind, _ in out["layers"])  # the groups in model order: layer 0's kind first
    kind = LayerKind(ffn=first.ffn)  # a full-attention layer with layer 0's feed-forward
    return {**out, "n_mtp_layers": count, "mtp_kinds": (kind,)}


def _fields(raw: dict, n_layers: int, kind: str) -> dict:
    return _mtp(raw, _layers(raw, n_layers, kind))


def _layers(raw: dict, n_layers: int, kind: str) -> dict:
    mixers = _mixers(raw, n_layers)
    out = {f: integer(raw, key, default) for key, (f, default) in _LINEAR.items()}
    out.update(qk_norm="rmsnorm", norm_offset=True, output_gate=True, delta_split=kind != "qwen3_next",
               partial_rotary_factor=rotary_factor(raw, 0.25))
    if "linear_attention" not in mixers:
        for f in ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim", "conv_kernel"):
            out[f] = None
    elif kind != "qwen3_next":  # the state's dtype vLLM's Qwen3.5 hook reads (recurrent_sizes.SSM_STATE_DTYPES)
        out["ssm_dtype"] = stated_state_dtype(raw, "mamba_ssm_dtype")
    if kind == "qwen3_5_text":
        out["hidden_dim"] = integer(raw, "intermediate_size", 12288)
        return {**out, **groups([LayerKind(mixer=m) for m in mixers])}
    flag(raw, "norm_topk_prob", True)  # checked only: it changes no count
    defaults = _FAMILIES[kind].defaults
    E = integer(raw, "num_experts", defaults["num_experts"], minimum=0)
    if kind == "qwen3_next":
        step = integer(raw, "decoder_sparse_step", 1)
        dense_only = set(indices(raw, "mlp_only_layers", n_layers, default=[]))
        moe = {i for i in range(n_layers) if i not in dense_only and E > 0 and (i + 1) % step == 0}
    else:  # Qwen3_5MoeDecoderLayer: every layer's feed-forward is the sparse block
        if E == 0:
            raise SymllmError("num_experts: 0 (Qwen3.5-MoE builds a mixture of experts in every layer)")
        moe = set(range(n_layers))
    out.update(groups([LayerKind(ffn="moe" if i in moe else "dense", mixer=m) for i, m in enumerate(mixers)]))
    if not moe:
        return {**out, "hidden_dim": integer(raw, "intermediate_size", defaults["intermediate_size"])}
    # PEFT adapts the fused routed experts (Qwen3NextExperts' gate_up_proj / down_proj) under gate_proj /
    # up_proj / down_proj through transformers' weight-conversion mapping: refused, as for Qwen3-MoE
    out.update(n_experts=E, experts_per_token=integer(raw, "num_experts_per_tok", defaults["num_experts_per_tok"]),
               hidden_dim=integer(raw, "moe_intermediate_size", 512), shared_expert=True,
               shared_hidden_dim=integer(raw, "shared_expert_intermediate_size", 512), peft_fused_experts=True)
    if len(moe) < n_layers:
        out["dense_hidden_dim"] = integer(raw, "intermediate_size", defaults["intermediate_size"])
    return out


def _check_gate(raw: dict) -> None:
    """``attn_output_gate`` (Qwen3.5's configs state it): transformers always builds the gate, so only true is read."""
    if raw.get("attn_output_gate", True) is not True:
        raise SymllmError(f"attn_output_gate: {short(raw['attn_output_gate'])} is not what transformers builds "
                          "(its attention is always gated)")


def _reader(kind: str):
    def read(raw: dict, n_layers: int) -> dict:
        _check_gate(raw)
        return _fields(raw, n_layers, kind)
    return read


_MOE_KEYS = ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "partial_rotary_factor")

#: transformers' plan of the three (5.23: models/qwen3_next/configuration_qwen3_next.py, models/qwen3_5/ and
#: models/qwen3_5_moe/configuration_*.py, their text configs' base_model_tp_plan) splits the Gated DeltaNet's input
#: and output projections only, each ``colwise_gather_output`` (its output gathered whole on every rank: "gathered",
#: the out_proj too, by its output features): the core between them (convolution, A_log and dt_bias, the delta rule,
#: the gated norm) runs whole on every rank, every head's recurrent and convolution state with it
_PLAN = {"conv1d": "whole", "decay": "whole", "delta_rule": "whole", "linear_attention.norm": "whole",
         **{name: "gathered" for name in ("in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b",
                                          "in_proj_a", "linear_attention.out_proj")}, **QK_NORM_GRADS}

#: Qwen2-MoE's experts and gated shared expert, with Gated DeltaNet layers beside gated full attention (its
#: fields: the per-head QK-norm, (1 + weight) norms, a partial rotary), attention_bias read in place of the
#: q/k/v biases, its own linear-attention keys' names and Qwen3-Next-80B-A3B's sizes
QWEN3_NEXT = register(QWEN2_MOE.extend(
    "qwen3_next", fields=_reader("qwen3_next"), reads=("attention_bias",),
    layer_types=("full_attention", "linear_attention"),
    defaults={"vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16,
              "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": 5632, "num_experts": 512,
              "num_experts_per_tok": 10},
    models=(*_MOE_KEYS, "decoder_sparse_step", "mlp_only_layers"),
    names={**QWEN2_MOE.names, **{f: key for key, (f, _) in _LINEAR.items()}},
    tp_plan=_PLAN, presets="config.json of Qwen/Qwen3-Next-80B-A3B-Instruct"))
#: Qwen3-Next with a dense SwiGLU in every layer, read inside the qwen3_5 wrapper too, and Qwen3.5's sizes
QWEN3_5 = register(QWEN3_NEXT.extend(
    "qwen3_5_text", fields=_reader("qwen3_5_text"), wrappers=("qwen3_5",), tp_plan=_PLAN,
    defaults={"vocab_size": 248320, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 16,
              "num_key_value_heads": 4, "head_dim": 256},
    models=("partial_rotary_factor",), names={**QWEN3_NEXT.names, "hidden_dim": "intermediate_size"},
    presets="the text_config of Qwen/Qwen3.5-27B's config.json (the other Qwen3.5 checkpoints: no citable "
            "copy of their config.json was found)"))
#: Qwen3-Next with experts in every layer, read inside the qwen3_5_moe wrapper too, and Qwen3.5-MoE's sizes
QWEN3_5_MOE = register(QWEN3_NEXT.extend(
    "qwen3_5_moe_text", fields=_reader("qwen3_5_moe_text"), wrappers=("qwen3_5_moe",), tp_plan=_PLAN,
    defaults={"vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 16,
              "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": 512, "num_experts": 256,
              "num_experts_per_tok": 8},
    models=_MOE_KEYS,
    presets="the text_config of Qwen/Qwen3.5-397B-A17B's and Qwen/Qwen3.5-35B-A3B's config.json (the other "
            "Qwen3.5-MoE checkpoints: no citable copy of their config.json was found)"))
_FAMILIES = {"qwen3_next": QWEN3_NEXT, "qwen3_5_text": QWEN3_5, "qwen3_5_moe_text": QWEN3_5_MOE}
