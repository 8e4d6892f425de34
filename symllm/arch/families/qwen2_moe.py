"""The ``qwen2_moe`` family: transformers' ``Qwen2MoeForCausalLM`` (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B).

Qwen2's attention (biases on q, k and v as ``qkv_bias`` says, default true; none on o) with a mixture of
experts: a layer is MoE unless listed in ``mlp_only_layers`` or off the ``decoder_sparse_step`` (layer ``i``
is MoE when ``(i + 1) % decoder_sparse_step == 0``), and ``num_experts`` is positive. A MoE layer routes each
token to ``num_experts_per_tok`` of ``num_experts`` SwiGLU experts of width ``moe_intermediate_size`` (a
softmax over every expert; ``norm_topk_prob`` renormalises the top k: no parameters, no matmul), and runs
every token through a shared expert, a SwiGLU of width ``shared_expert_intermediate_size`` whose output is
scaled by ``sigmoid(shared_expert_gate(x))``, a ``d -> 1`` linear. The other layers are a dense SwiGLU of
``intermediate_size``. With ``use_sliding_window: true`` the window (``sliding_window``) is in the layers
``layer_types`` calls ``sliding_attention``, or, derived as ``Qwen2MoeConfig`` derives it, in the even
layers (``(i + 1) % 2``) below ``max_window_layers``.

>>> f = _fields({"num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [0]}, 3)
>>> [(k.ffn, n) for k, n in f["layers"]], f["hidden_dim"], f["dense_hidden_dim"], f["shared_hidden_dim"]
([('dense', 1), ('moe', 2)], 1408, 5632, 5632)
>>> raw = {"use_sliding_window": True, "max_window_layers": 3, "num_experts": 0}
>>> [(k.window, n) for k, n in _fields(raw, 4)["layers"]]
[('sliding', 1), (None, 1), ('sliding', 1), (None, 1)]
"""
from symllm.arch.families.hf import flag, groups, indices, integer, register
from symllm.arch.layers import LayerKind
from symllm.arch.families.qwen import QWEN2

__all__ = ["QWEN2_MOE"]

#: Qwen2MoeConfig's defaults for the keys this family reads itself
_DEFAULTS = {"intermediate_size": 5632, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
             "num_experts": 60, "num_experts_per_tok": 4, "sliding_window": 4096, "max_window_layers": 28}


def _window(raw: dict, n_layers: int) -> tuple[int | None, list]:
    """The window and each layer's (``"sliding"`` or None), as ``Qwen2MoeConfig.__post_init__`` derives
    ``layer_types``."""
    on = flag(raw, "use_sliding_window", False)
    window = integer(raw, "sliding_window", _DEFAULTS["sliding_window"], nullable=True, minimum=1 if on else 0)
    top = integer(raw, "max_window_layers", _DEFAULTS["max_window_layers"], minimum=0)
    types = raw.get("layer_types")  # names and length checked with every family's (hf._check)
    if types is None:
        types = ["sliding_attention" if on and (i + 1) % 2 and i < top else "full_attention" for i in range(n_layers)]
    if not on or window is None:  # transformers' sliding_window is 0 without use_sliding_window
        return None, [None] * n_layers
    return window, ["sliding" if kind == "sliding_attention" else None for kind in types]


def moe_layers(raw: dict, n_layers: int, experts: int) -> set:
    """The layers with a mixture of experts, as Qwen2MoE and Qwen3MoE decoder layers choose them: none when
    ``experts`` is 0, else those off ``mlp_only_layers`` with ``(i + 1) % decoder_sparse_step == 0``.

    >>> sorted(moe_layers({"decoder_sparse_step": 2, "mlp_only_layers": [3]}, 6, 4))
    [1, 5]
    """
    step = integer(raw, "decoder_sparse_step", 1)
    dense_only = set(indices(raw, "mlp_only_layers", n_layers, default=[]))
    return {i for i in range(n_layers) if i not in dense_only and experts > 0 and (i + 1) % step == 0}


def _fields(raw: dict, n_layers: int) -> dict:
    flag(raw, "norm_topk_prob", False)  # checked only: it changes no count
    E = integer(raw, "num_experts", _DEFAULTS["num_experts"], minimum=0)
    moe = moe_layers(raw, n_layers, E)
    window, windows = _window(raw, n_layers)
    out = {"sliding_window": window} if window is not None and "sliding" in windows else {}
    out.update(groups([LayerKind(ffn="moe" if i in moe else "dense", window=w) for i, w in enumerate(windows)]))
    dense = integer(raw, "intermediate_size", _DEFAULTS["intermediate_size"])
    if not moe:  # every layer dense
        return {**out, "hidden_dim": dense}
    out.update(n_experts=E, experts_per_token=integer(raw, "num_experts_per_tok", _DEFAULTS["num_experts_per_tok"]),
               hidden_dim=integer(raw, "moe_intermediate_size", _DEFAULTS["moe_intermediate_size"]),
               shared_expert=True, shared_hidden_dim=integer(raw, "shared_expert_intermediate_size",
                                                             _DEFAULTS["shared_expert_intermediate_size"]))
    if len(moe) < n_layers:
        out["dense_hidden_dim"] = dense
    return out


#: Qwen2's attention and windows with experts and a gated shared expert (its fields), its q/k/v biases read from
#: qkv_bias (default on), Qwen1.5-MoE-A2.7B's sizes, no nullable size
QWEN2_MOE = register(QWEN2.extend(
    "qwen2_moe", fields=_fields, reads=("qkv_bias",), qkv_bias=False, nullable=(),
    defaults={"vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
              "num_key_value_heads": 16, "qkv_bias": True},
    models=("num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers"),
    names={"hidden_dim": "moe_intermediate_size", "dense_hidden_dim": "intermediate_size",
           "shared_hidden_dim": "shared_expert_intermediate_size", "n_experts": "num_experts",
           "experts_per_token": "num_experts_per_tok"},
    # Qwen2MoeConfig.base_model_tp_plan's ``layers.*.mlp.gate_proj`` (up, down) name the dense MLP's, not
    # ``mlp.shared_expert.*`` (transformers 5.23 models/qwen2_moe/configuration_qwen2_moe.py): the shared expert whole
    tp_plan={"shared_expert": "whole"},
    presets="config.json of Qwen/Qwen1.5-MoE-A2.7B, Qwen/Qwen2-57B-A14B"))
