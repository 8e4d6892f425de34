"""``--engine hf`` training: the all-reduces transformers' plan runs in backward beside its linears', as its classes
run them (transformers 5.23, installed).

- The routing weights' gradient: ``moe_tp_experts`` (``MoeExpertsParallel``, distributed/tensor_parallel.py) wraps
  the ``top_k_weights`` the router hands the experts in ``_AllReduceBackward``, at the dtype the router leaves them
  in: fp32 where it computes them so (DeepSeek-V3's ``DeepseekV3TopkRouter`` scores ``F.linear(hidden_states.type(
  torch.float32), ...)``; Mixtral's softmax of ``router_logits.float()``), the hidden states' where it casts them
  back (Qwen's), none where the experts take none (``Llama4TextExperts.forward(hidden_states)``: Llama 4 scales the
  experts' input by the router's scores before them). Read here by running each preset family's model on the meta
  device in bf16 to its first experts' call and looking at what they are handed.
- ``replicated_with_grad_allreduce`` (the per-head q and k norms of Qwen3's plan and seven more families'): every
  rank holds the weight and all-reduces its gradient in backward, one call each (``_training_step_comm``'s
  CommDebugMode counts them as c10d's ``allreduce_``).
"""
from __future__ import annotations

import warnings

import pytest

from symllm.arch.config import preset_info
from symllm.arch.resolved import spec

from .conftest import requires
from .test_hf_plans import FAMILIES, TP, _meta_model, _training_step_comm


class _Called(Exception):
    """Raised by the hook on the experts: what they were handed is read, the forward stops there."""


def _routing_handed(raw: dict) -> int | None:
    """The bytes of each routing weight transformers' model for ``raw`` (bf16, on the meta device) hands its first
    routed experts' module beside their input (0: it hands none), None for a model without routed experts."""
    torch, transformers = requires("torch"), requires("transformers")
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(**raw).get_text_config()
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    experts = next((m for n, m in model.named_modules() if n.rsplit(".", 1)[-1] == "experts"), None)
    if experts is None:
        return None
    handed = []

    def hook(module, args):
        handed.extend(args)
        raise _Called
    experts.register_forward_pre_hook(hook)
    with warnings.catch_warnings(), pytest.raises(_Called):
        warnings.simplefilter("ignore")
        model(torch.zeros(1, 4, dtype=torch.long, device="meta"))
    weights = [a for a in handed[1:] if a.is_floating_point()]  # (hidden states, indices, weights)
    return weights[0].element_size() if weights else 0


MOE_FAMILIES = sorted(k for k, name in FAMILIES.items() if spec(name).n_experts)


@pytest.mark.parametrize("kind", MOE_FAMILIES)
def test_routing_weights_all_reduced_at_the_dtype_the_router_hands_them(kind):
    """Each preset mixture family under ``--engine hf`` (bf16, ``β_a`` 2): symllm counts a routing all-reduce a MoE
    layer where transformers' experts take routing weights, none where they take none (Llama 4), each weight at the
    bytes the family's router hands them (fp32: 4; the hidden states' dtype: 2), where its experts are split."""
    import sympy as sp

    from symllm.arch import symbols as S
    from symllm.costs import collectives, parallel

    name = FAMILIES[kind]
    handed = _routing_handed(preset_info(name)["config"])
    spc = spec(name)
    laid = parallel.layout(spc.model(), "hf")
    values = {**spc.values(), S.N_t: TP, S.N_p: 1, S.beta_a: 2}
    routed = [c for c in laid.walk() if c.rules.split == "expert"]  # split ones: MoeExpertsParallel's
    count = int(sp.sympify(collectives.training_collectives(parallel.stages(laid)[0])["routing"]).subs(values))
    assert routed or kind == "gpt_oss"  # (gpt-oss's experts whole under its plan: no routing all-reduce)
    assert (count > 0) == bool(handed and routed), kind
    for c in routed:
        assert int(sp.sympify(S.beta_a if c.rules.routing is None else c.rules.routing).subs(values)) == handed, kind


def _ours_in_bf16(config, seq: int) -> tuple[dict, int]:
    """symllm's training count and ``comm.tp`` bytes under ``--engine hf`` for transformers' ``config`` (``β_a`` 2,
    tp 2, one sequence of ``seq`` tokens)."""
    import sympy as sp

    from symllm.arch import symbols as S
    from symllm.costs import collectives, parallel

    spc = spec(config.to_dict())
    values = {**spc.values(), S.N_t: TP, S.N_p: 1, S.N_d: 1, S.b: 1, S.s: seq, S.beta_a: 2}
    number = lambda e: int(sp.sympify(e).subs(values))  # noqa: E731
    laid = parallel.layout(spc.model(), "hf")
    count = collectives.training_collectives(parallel.stages(laid)[0])
    return {k: number(v) for k, v in count.items()}, number(parallel.comm(laid)["tp"])


def test_deepseek_v3_routing_weights_all_reduced_in_fp32():
    """A training step of a one-layer DeepSeek-V3 in bf16 under its whole plan on a fake process group of 2 ranks:
    8 all-reduces (5 DTensor's; 3 c10d's in place: the experts' output in forward, their input's and routing
    weights' gradients in backward), the logits' all-gather, and the bytes rank 0 sends, the ``b·s·k`` fp32 routing
    weights' among them (8 tokens x 2 experts x 4 bytes, a ring all-reduce's share at 2 ranks: 64 bytes; at bf16 it
    would be 32): symllm's calls (6 all-reduces, the routing weights', the head's input gradient) and ``comm.tp``
    at ``β_a`` 2."""
    torch, transformers = requires("torch"), requires("transformers")

    config = transformers.DeepseekV3Config(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=64, moe_intermediate_size=16, n_routed_experts=4, num_experts_per_tok=2, n_group=1,
        topk_group=1, first_k_dense_replace=0, q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=4,
        qk_nope_head_dim=4, v_head_dim=8, tie_word_embeddings=False)
    seq = 8
    counted, sent = _training_step_comm(config, seq, torch.bfloat16)
    assert counted == {"all_reduce": 5, "allreduce_": 3, "all_gather_into_tensor": 1}

    assert _ours_in_bf16(config, seq) == ({"all_reduce": 6, "all_gather": 0, "reduce_scatter": 0, "loss": 0,
                                           "gathered": 1, "gathered_grads": 1, "routing": 1}, sent)


def _grad_reduced(raw: dict) -> int:
    """The weights transformers' plan for ``raw``'s family marks ``replicated_with_grad_allreduce`` (each all-reduces
    its gradient once a step), as the model built on the meta device expands its plan onto its parameters."""
    model = _meta_model(raw)
    plan = model._expand_parallel_plan(model.tp_plan or {})
    names = {n for n, _ in model.named_parameters()}
    return sum(1 for k, style in plan.items() if style == "replicated_with_grad_allreduce" and k in names)


@pytest.mark.parametrize("kind", sorted(k for k in FAMILIES if k != "mpt"))
def test_grad_reduced_weights_are_transformers_plans(kind):
    """Each preset family under ``--engine hf``: the weights whose gradient symllm all-reduces (``grad_reduced``,
    repeats included) are those transformers' plan marks ``replicated_with_grad_allreduce`` (Qwen3's q and k norms,
    two a layer with attention; GLM-4.5's, OLMo 2's and MiniMax-M2's QK-norms none: their plans leave them out)."""
    import sympy as sp

    from symllm.costs import parallel

    name = FAMILIES[kind]
    spc = spec(name)

    def count(comp) -> sp.Expr:
        return comp.repeat * (int(comp.rules.split == "grad_reduced") + sum((count(c) for c in comp.children), 0))
    ours = int(sp.sympify(count(parallel.layout(spc.model(), "hf"))).subs(spc.values()))
    assert ours == _grad_reduced(preset_info(name)["config"]), name


def test_qk_norm_gradients_all_reduced_as_transformers_runs_them():
    """A training step of a one-layer Qwen3 in bf16 under its whole plan on a fake process group of 2 ranks: Llama's
    9 all-reduces and the logits' all-gather, and the q and k norms' gradients all-reduced (c10d's in place, 2), each
    ``d_h`` bf16 numbers (8 x 2 bytes, a ring all-reduce's share at 2 ranks: 16 bytes); symllm's calls and
    ``comm.tp`` at ``β_a`` 2 (the model's dtype)."""
    torch, transformers = requires("torch"), requires("transformers")

    config = transformers.Qwen3Config(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=8, intermediate_size=64,
                                      tie_word_embeddings=False)
    seq = 8
    assert config.base_model_tp_plan["layers.*.self_attn.q_norm"] == "replicated_with_grad_allreduce"
    counted, sent = _training_step_comm(config, seq, torch.bfloat16)
    assert counted == {"all_reduce": 9, "allreduce_": 2, "all_gather_into_tensor": 1}
    llama, _ = _training_step_comm(transformers.LlamaConfig(**{k: v for k, v in config.to_dict().items()
                                                                 if k in ("vocab_size", "hidden_size",
                                                                          "num_hidden_layers", "num_attention_heads",
                                                                          "num_key_value_heads", "head_dim",
                                                                          "intermediate_size",
                                                                          "tie_word_embeddings")}),
                                   seq, torch.bfloat16)
    assert llama == {"all_reduce": 9, "all_gather_into_tensor": 1}

    assert _ours_in_bf16(config, seq) == ({"all_reduce": 10, "all_gather": 0, "reduce_scatter": 0, "loss": 0,
                                           "gathered": 1, "gathered_grads": 1, "routing": 0}, sent)
