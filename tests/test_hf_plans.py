"""``--engine hf``: each preset family laid out as transformers' own tensor-parallel plan for it says.

Expected numbers come from transformers 5.23 itself (installed): each family's ``*ForCausalLM`` built on the meta
device from the preset's config.json, its plan as the model resolves it (``model.tp_plan``: the config class's
``base_model_tp_plan``, the model class's ``_tp_plan`` for the lm_head, and the embedding's vocabulary split that
``PreTrainedModel.init_parallel_plans`` adds where the base model's plan is not empty and ``embed_tokens`` is an
``nn.Embedding``: ``distributed/mixin.py``), expanded onto the parameters by transformers' own
``_expand_parallel_plan``, and each parameter's rank-0 shard under its style as ``distributed/tensor_parallel.py``'s
``shard_param`` places it, written out here: ``colwise`` (``colwise_gather_output``, ``colwise_rep``) and
``packed_colwise`` shard a weight's output dimension (``Shard(ndim - 2)``; a bias with it), ``rowwise``
(``rowwise_split_input``, ``rowwise_rep``) and ``packed_rowwise`` its input dimension (``Shard(-1)``; a bias whole),
``embedding_rowwise`` the rows (``Shard(0)``), ``embedding_colwise`` the columns; every other style
(``replicated_with_grad_allreduce``, ``moe_tp_experts``, ``mla_kv_a_proj``, ``local_params``) and every parameter
no rule names stays whole on every rank. Rank 0 holds the ceiling of a sharded dimension (DTensor's chunks).

Two choices symllm makes where transformers' plan would hold something no run can use: a key/value head is never
split (a family's preset with fewer KV heads than ranks is skipped for one that has enough: symllm replicates the
head, as vLLM does, where transformers' ``colwise`` would cut it in half), and gpt-oss's routed experts, which its
plan keeps whole on every rank, are what ``--expert-tp whole`` holds (its default under ``--engine hf``).
"""
from __future__ import annotations

import json
import warnings

import pytest

from symllm.arch.config import preset_info, preset_names
from symllm.arch.resolved import spec
from symllm.costs import phases as costs

from .conftest import requires

TP = 2
#: the dimension each of transformers' styles shards (module docstring): "out" a weight's ndim-2 (a bias's only
#: one), "in" a weight's last (a bias whole), "rows" dim 0, "cols" dim 1
STYLES = {"colwise": "out", "colwise_gather_output": "out", "colwise_rep": "out", "packed_colwise": "out",
          "rowwise": "in", "rowwise_split_input": "in", "rowwise_rep": "in", "packed_rowwise": "in",
          "embedding_rowwise": "rows", "embedding_colwise": "cols"}


def _families() -> dict:
    """Every preset family (the config.json's model_type; Meta's params.json are Llama's, read as TinyLlama's
    config.json) -> its first preset whose key/value heads the ranks divide, else its first (DeepSeek-V4's one KV
    head, which its plan keeps whole)."""
    out: dict = {}
    for name in sorted(preset_names(), key=lambda n: spec(n).n_kv_heads % TP != 0):
        info = preset_info(name)
        if info["format"] == "hf":
            out.setdefault(info["config"]["model_type"], name)
    return out


def _meta_model(raw: dict):
    """transformers' causal LM of a config.json on the meta device (a multimodal wrapper's language model)."""
    transformers, torch = requires("transformers"), requires("torch")
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(**raw).get_text_config()
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        return transformers.AutoModelForCausalLM.from_config(config)


def _shard(shape: tuple, style: str | None, tp: int) -> int:
    """Rank 0's elements of a parameter of ``shape`` under ``style`` (module docstring)."""
    shape, kind = list(shape), STYLES.get(style)
    dim = {"out": max(len(shape) - 2, 0), "in": len(shape) - 1, "rows": 0, "cols": 1}.get(kind)
    if dim is not None and not (kind == "in" and len(shape) == 1):
        shape[dim] = -(-shape[dim] // tp)
    out = 1
    for size in shape:
        out *= size
    return out


def transformers_rank0(raw: dict, tp: int = TP) -> tuple[int, dict]:
    """Parameters tensor rank 0 holds under transformers' own plan for ``raw``'s family, and that plan."""
    model = _meta_model(raw)
    plan = model.tp_plan or {}
    expanded = model._expand_parallel_plan(plan)
    return sum(_shard(tuple(p.shape), expanded.get(name), tp) for name, p in model.named_parameters()), plan


FAMILIES = _families()


def test_every_preset_family_is_checked():
    """One preset of each family the presets hold (MPT has no plan: below)."""
    kinds = {preset_info(n)["config"]["model_type"] for n in preset_names() if preset_info(n)["format"] == "hf"}
    assert kinds == set(FAMILIES) and len(FAMILIES) >= 30 and FAMILIES["llama"] == "tinyllama-1.1b"


@pytest.mark.parametrize("kind", sorted(k for k in FAMILIES if k != "mpt"))
def test_hf_engine_holds_what_transformers_plan_shards(kind):
    """``--engine hf --tp 2``: each rank's parameters are the sum of each parameter's rank-0 shard under transformers'
    plan for the family (module docstring), the attention and MLP projections, the experts, the norms, the
    embedding and the lm_head each as that plan lays them out."""
    name = FAMILIES[kind]
    expected, _ = transformers_rank0(preset_info(name)["config"])
    assert costs.workload(name, tp=TP, engine="hf")["params"]["per_gpu"] == expected, name


def test_the_plans_that_differ_from_the_default_layout():
    """Where transformers' plan for a family is not symllm's default layout, and by how much at tp 2 (transformers'
    numbers, above): Nemotron-H keeps its Mamba-2 mixers, attention, MLPs and lm_head whole (only the embedding and
    the routed experts split), DeepSeek-V3 its latent attention, Qwen2-MoE its shared expert, Qwen3-Next and Qwen3.5
    their Gated DeltaNet's convolution, A_log and dt_bias, gpt-oss all but its lm_head; every other family's plan is
    the default layout, the embedding split over the vocabulary included."""
    differs = {kind for kind, name in FAMILIES.items() if kind != "mpt"
               and costs.workload(name, tp=TP)["params"]["per_gpu"]
               != costs.workload(name, tp=TP, engine="hf")["params"]["per_gpu"]}
    assert differs == {"nemotron_h", "deepseek_v3", "kimi_k25", "qwen2_moe", "qwen3_next", "qwen3_5", "qwen3_5_moe",
                       "gpt_oss"}  # (Kimi-K2.5's language model is DeepSeek-V3's)
    _, plan = transformers_rank0(preset_info(FAMILIES["llama"])["config"])
    assert plan["model.embed_tokens"] == "embedding_rowwise" and plan["lm_head"] == "colwise_gather_output"
    _, plan = transformers_rank0(preset_info(FAMILIES["nemotron_h"])["config"])
    assert plan["model.embeddings"] == "embedding_rowwise" and "lm_head" not in plan
    assert not any("mixer.in_proj" in k or "self_attn" in k for k in plan)


def test_mpt_has_no_plan_and_hf_refuses_its_tensor_parallelism(cli):
    """transformers 5.23 has no plan for MPT (MptConfig has no ``base_model_tp_plan``, MptForCausalLM no ``_tp_plan``)
    and refuses a ``tp_size`` above 1 for it; ``--engine hf --tp 2`` is refused in one line naming the field, exit
    2; at ``--tp 1``, or under another engine, it counts."""
    _, plan = transformers_rank0(preset_info("mpt-7b")["config"])
    assert plan == {}
    r = cli(["count", "mpt-7b", "--tp", "2", "--engine", "hf"])
    assert r.code == 2 and r.err.strip().splitlines() == [
        "symllm: error: engine: transformers has no tensor-parallel plan for mpt-7b: hf runs it at tp 1"]
    assert cli(["count", "mpt-7b", "--engine", "hf"]).code == 0
    assert cli(["count", "mpt-7b", "--tp", "2", "--engine", "vllm"]).code == 0


def test_output_names_the_plan_it_lays_out(cli):
    """Under ``--engine hf`` a model whose family's plan differs names its layout ("transformers' plan"); a Llama,
    laid out alike under every engine but MLC's, gpt-fast's and lmdeploy's, names none."""
    r = cli(["count", "nemotron-h-8b", "--tp", "2", "--engine", "hf", "--json"])
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["tp_layout"] == "transformers" and out["params"]["per_gpu"] == 7_832_417_280
    assert "transformers' plan" in cli(["count", "nemotron-h-8b", "--tp", "2", "--engine", "hf"]).out
    assert "tp_layout" not in json.loads(cli(["count", "llama3.1-8b", "--tp", "2", "--engine", "hf", "--json"]).out)


@pytest.mark.parametrize("name, default, hf", [
    # 52 layers, one sublayer each, every one split by default (and the embedding's): 53 and the logits' gather;
    # transformers splits only the embedding (embedding_rowwise: its partial rows all-reduced), the head whole
    ("nemotron-h-8b", (53, 1), (1, 0)),
    # 61 layers: attention and feed-forward each all-reduced by default, 2·61 + 1; transformers' plan keeps the
    # attention whole: the 61 feed-forwards' (3 dense MLPs, 58 MoE) and the embedding's
    ("deepseek-v3", (123, 1), (62, 1)),
    ("llama3.1-8b", (65, 1), (65, 1)),  # 32 layers, two each, the embedding's: the plan is the default
])
def test_hf_plans_collectives_by_hand(name, default, hf):
    """A forward pass's all-reduces of the residual stream and gathers of the logits at tp 2, counted by hand from
    transformers' plan for the family (a sublayer all-reduces where a row-split linear or split experts sum across
    the ranks, the embedding where it is split over the vocabulary, the logits where the head is)."""
    import sympy as sp

    from symllm.arch import symbols as S
    from symllm.costs import collectives, parallel

    spc = spec(name)
    values = {**spc.values(), S.N_t: TP, S.N_p: 1}
    for engine, expected in ((None, default), ("hf", hf)):
        stage = parallel.shard(parallel.layout(spc.model(), engine), False, "split")
        counts = collectives.step_collectives(stage)
        assert tuple(int(sp.sympify(counts[k]).subs(values)) for k in ("residual", "logits")) == expected, engine


def _ring_sizes():
    """A dispatch mode that adds up the bytes one rank sends in the functional collectives run under it (``sent``):
    each one's ring share of its whole tensor (tests/test_parallel.py's ``RING``); and in c10d's in-place all-reduce
    (``dist.all_reduce``: transformers' ``_AllReduceForward`` and ``_AllReduceBackward``, a list of one tensor)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from .test_parallel import RING

    class Sizes(TorchDispatchMode):
        sent = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kind = func._overloadpacket.__name__
            if func.namespace == "c10d" and kind == "allreduce_":
                self.sent += sum(RING["all_reduce"](TP, t.numel() * t.element_size()) for t in args[0])
            elif func.namespace == "_c10d_functional" and kind in RING:
                whole = args[0].numel() * args[0].element_size() * (TP if kind == "all_gather_into_tensor" else 1)
                self.sent += RING[kind](TP, whole)
            return func(*args, **(kwargs or {}))
    return Sizes()


#: a small config of each family with Gated DeltaNet layers (one linear-attention layer, transformers' own keys)
_DELTANET = dict(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=8, intermediate_size=64, linear_num_key_heads=2, linear_num_value_heads=4,
                 linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
                 layer_types=["linear_attention"], tie_word_embeddings=False)
_MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16,
            decoder_sparse_step=1, mlp_only_layers=[0])


@pytest.mark.parametrize("config_class, extra, projections", [
    ("Qwen3NextConfig", _MOE, 3),  # in_proj_qkvz, in_proj_ba, out_proj
    ("Qwen3_5TextConfig", {}, 5),  # in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj
])
def test_deltanet_collectives_as_transformers_runs_them(config_class, extra, projections):
    """transformers 5.23's plan makes every Gated DeltaNet projection ``colwise_gather_output``, the out_proj too
    (models/qwen3_next/configuration_qwen3_next.py, qwen3_5/configuration_qwen3_5.py: ``base_model_tp_plan``), which
    ``distributed/tensor_parallel.py`` runs as ``ColwiseParallel(input_layouts=Replicate(),
    output_layouts=Replicate())``: counted by torch's CommDebugMode on a fake process group of 2 ranks (the plan's DeltaNet rules applied by
    transformers' ``apply_tensor_parallelism`` to a one-layer model on the CPU), a forward without gradients all-gathers
    each projection's output, and a training forward and backward also all-reduces each one's input gradient; the bytes
    one rank sends are ring shares of each collective's own tensor (a dispatch mode sees their sizes). symllm counts
    the same calls (``gathered`` in the step's and the micro-batch's counts) and bytes (``comm.tp``'s part), and a layer
    no longer all-reduces the residual stream at out_proj (it is not a row split)."""
    torch, transformers = requires("torch"), requires("transformers")
    import sympy as sp
    from torch.distributed.tensor.debug import CommDebugMode
    from transformers.distributed.tensor_parallel import apply_tensor_parallelism

    from symllm.arch import symbols as S
    from symllm.costs import collectives, parallel

    from .test_parallel import fake_group

    transformers.logging.set_verbosity_error()
    config = getattr(transformers, config_class)(**_DELTANET, **extra)
    seq = 8

    with warnings.catch_warnings(), fake_group(TP) as mesh:
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config)
        plan = {k: v for k, v in model._expand_parallel_plan(model.tp_plan).items() if ".linear_attn." in k}
        assert set(plan.values()) == {"colwise_gather_output"} and len(plan) == 2 * projections  # modules, weights
        apply_tensor_parallelism(model, mesh, plan)
        layer = model.model.layers[0].linear_attn
        x = torch.randn(1, seq, config.hidden_size)
        with CommDebugMode() as forward, torch.no_grad():
            layer(x)
        sizes = _ring_sizes()
        with sizes, CommDebugMode() as training:
            layer(x.clone().requires_grad_()).sum().backward()
    counted = {k.__name__: v for k, v in forward.get_comm_counts().items()}
    assert counted == {"all_gather_into_tensor": projections}
    counted = {k.__name__: v for k, v in training.get_comm_counts().items()}
    assert counted == {"all_gather_into_tensor": projections, "all_reduce": projections}

    spc = spec(config.to_dict())
    values = {**spc.values(), S.N_t: TP, S.N_p: 1, S.b: 1, S.s: seq, S.beta_a: 4}  # fp32 on the CPU
    stage = parallel.stages(parallel.layout(spc.model(), "hf"))[0]
    step, trained = collectives.step_collectives(stage), collectives.training_collectives(stage)
    number = lambda e: int(sp.sympify(e).subs(values))  # noqa: E731
    assert number(step["gathered"]) == projections and number(step["residual"]) == 2  # the MLP's, the embedding's
    # in training the lm_head's logits are gathered too (and its input gradient all-reduced): the model's test below
    assert (number(trained["gathered"]), number(trained["gathered_grads"])) == (projections + 1, projections + 1)
    deltanet = next(c for c in stage.walk() if c.name == "linear_attention")
    assert number(collectives.gathered(deltanet)["training_bytes"]) == sizes.sent
    widths = sum(m.out_features for m in layer.modules() if isinstance(m, torch.nn.Linear))
    assert number(collectives.gathered(stage)["widths"]) == widths


def _training_step_comm(config, seq: int, dtype=None) -> tuple[dict, int]:
    """One training step (forward, the loss, backward) of transformers' model for ``config`` (in ``dtype``, default
    fp32) under its whole plan on a fake process group of 2 ranks: CommDebugMode's count of its collectives by name,
    and the bytes rank 0 sends in them (:func:`_ring_sizes`)."""
    torch, transformers = requires("torch"), requires("transformers")
    from torch.distributed.tensor.debug import CommDebugMode
    from transformers.distributed.tensor_parallel import apply_tensor_parallelism

    from .test_parallel import fake_group

    transformers.logging.set_verbosity_error()
    with warnings.catch_warnings(), fake_group(TP) as mesh:
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config).to(dtype or torch.float32)
        apply_tensor_parallelism(model, mesh, model._expand_parallel_plan(model.tp_plan))
        tokens = torch.randint(0, config.vocab_size, (1, seq))
        sizes = _ring_sizes()
        with sizes, CommDebugMode() as comm:
            model(tokens, labels=tokens).loss.backward()
    return {k.__name__: v for k, v in comm.get_comm_counts().items()}, sizes.sent


def test_hf_training_gathers_the_logits():
    """transformers 5.23's lm_head is ``colwise_gather_output`` (``LlamaForCausalLM._tp_plan``; every family's), and
    its loss is taken over the whole logits: a training step of a one-layer Llama under its whole plan, on a fake
    process group of 2 ranks, runs 9 all-reduces (the embedding's, o_proj's and down_proj's in forward; q, k, v, gate,
    up and the lm_head's input gradients in backward) and one all-gather of the logits, and no vocabulary-parallel
    loss statistics (torchtitan's ``loss_parallel``, symllm's default training engine's); symllm's calls and
    ``comm.tp`` bytes under ``--engine hf`` are those (CommDebugMode's count; a dispatch mode's ring shares)."""
    transformers = requires("transformers")
    import sympy as sp

    from symllm.arch import symbols as S
    from symllm.costs import collectives, parallel

    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=64, tie_word_embeddings=False)
    seq = 8
    assert transformers.LlamaForCausalLM._tp_plan["lm_head"] == "colwise_gather_output"
    counted, sent = _training_step_comm(config, seq)
    assert counted == {"all_reduce": 9, "all_gather_into_tensor": 1}

    spc = spec(config.to_dict())
    values = {**spc.values(), S.N_t: TP, S.N_p: 1, S.N_d: 1, S.b: 1, S.s: seq, S.beta_a: 4}  # fp32 on the CPU
    laid = parallel.layout(spc.model(), "hf")
    count = collectives.training_collectives(parallel.stages(laid)[0])
    number = lambda e: int(sp.sympify(e).subs(values))  # noqa: E731
    assert {k: number(v) for k, v in count.items()} == {"all_reduce": 8, "all_gather": 0, "reduce_scatter": 0,
                                                        "loss": 0, "gathered": 1, "gathered_grads": 1, "routing": 0}
    assert number(parallel.comm(laid)["tp"]) == sent


def _loss_memory(vocab: int, seq: int) -> tuple[int, int]:
    """One training step's forward and backward of a one-layer bf16 Llama of ``vocab`` tokens under transformers'
    whole plan on a fake process group of 2 ranks (the CPU): the bytes rank 0 saves for backward (torch's
    ``saved_tensors_hooks``, deduplicated by storage, without the parameters' storages) and MemTracker's peak
    without the parameters (their local shards), the loss taken as ``model(...).loss`` (the output dropped)."""
    torch, transformers = requires("torch"), requires("transformers")
    from torch.distributed._tools.mem_tracker import MemTracker
    from transformers.distributed.tensor_parallel import apply_tensor_parallelism

    from .test_parallel import fake_group

    transformers.logging.set_verbosity_error()
    config = transformers.LlamaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=64, tie_word_embeddings=False)
    local = lambda t: getattr(t, "_local_tensor", t)  # noqa: E731  (a DTensor's shard)
    with warnings.catch_warnings(), fake_group(TP) as mesh:
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
        apply_tensor_parallelism(model, mesh, model._expand_parallel_plan(model.tp_plan))
        params = {local(p).untyped_storage().data_ptr(): local(p).untyped_storage().nbytes()
                  for p in model.parameters()}
        saved: dict = {}

        def pack(t):
            storage = local(t).untyped_storage()
            if storage.data_ptr() not in params:
                saved[storage.data_ptr()] = storage.nbytes()
            return t
        tokens = torch.randint(0, vocab, (1, seq))
        tracker = MemTracker()
        tracker.track_external(model, tokens)
        with tracker:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                loss = model(input_ids=tokens, labels=tokens).loss
            loss.backward()
        peak = sum(dev["Total"] for dev in tracker.get_tracker_snapshot("peak").values())
    return sum(saved.values()), peak - sum(params.values())


def test_hf_training_holds_the_whole_logits_and_transformers_loss():
    """transformers 5.23's lm_head is ``colwise_gather_output``: every rank holds the whole ``b·s × V`` logits and
    takes ``ForCausalLMLoss`` over them (loss/loss_utils.py: ``logits.float()``, then cross_entropy), whose
    log_softmax saves its fp32 output and whose backward starts with two more fp32 ``b·s × V`` gradients live. What
    a rank saves and its peak beyond its parameters, measured at two vocabularies (a one-layer bf16 Llama under the
    whole plan, :func:`_loss_memory`), grow with the vocabulary as symllm's ``--engine hf`` per-GPU activations and
    training peak beyond the training states do (4 and 12 bytes a token and a logit, on every rank); the default
    training layout's fused vocabulary-parallel cross-entropy holds ``β_a`` bytes of rank 0's share instead."""
    seq, small, large = 32, 4096, 8192
    (saved_small, peak_small), (saved_large, peak_large) = _loss_memory(small, seq), _loss_memory(large, seq)
    grown = (saved_large - saved_small, peak_large - peak_small)
    assert grown == (4 * seq * (large - small), 12 * seq * (large - small))

    def per_gpu(vocab: int, engine) -> tuple[int, int]:
        raw = dict(model_type="llama", vocab_size=vocab, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                   num_key_value_heads=2, intermediate_size=64, tie_word_embeddings=False)
        m = costs.workload(raw, batch=1, seq=seq, tp=TP, engine=engine)["memory_per_gpu"]
        return m["activations"], m["training_peak"] - m["training_states"]
    for engine, expected in (("hf", grown),
                             (None, (0, 2 * seq * (large - small) // TP))):  # bf16: β_a 2, rank 0's half
        (a_small, p_small), (a_large, p_large) = per_gpu(small, engine), per_gpu(large, engine)
        assert (a_large - a_small, p_large - p_small) == expected, engine


def test_hf_training_all_reduces_the_routing_weights_gradient():
    """transformers 5.23's ``moe_tp_experts`` (``MoeExpertsParallel``, distributed/tensor_parallel.py) wraps the
    experts' hidden states and their ``top_k_weights`` in ``_AllReduceBackward`` and sums their output with
    ``_AllReduceForward``: a training step of a one-layer Mixtral under its whole plan, on a fake process group of 2
    ranks, runs 9 all-reduces (the embedding's, o_proj's and the experts' output in forward; q, k, v, the lm_head's and
    the experts' input gradients and the routing weights' in backward) and one all-gather of the logits, as
    CommDebugMode counts them; symllm's calls under ``--engine hf`` are those (``routing`` one a MoE layer) and its
    ``comm.tp`` the ring shares a dispatch mode adds up, the ``b·s·k`` routing weights' included."""
    transformers = requires("transformers")
    import sympy as sp

    from symllm.arch import symbols as S
    from symllm.costs import collectives, parallel

    config = transformers.MixtralConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                        num_key_value_heads=2, intermediate_size=64, num_local_experts=4,
                                        num_experts_per_tok=2, tie_word_embeddings=False)
    seq = 8
    assert config.base_model_tp_plan["layers.*.mlp.experts"] == "moe_tp_experts"
    counted, sent = _training_step_comm(config, seq)
    assert counted == {"all_reduce": 6, "allreduce_": 3, "all_gather_into_tensor": 1}  # DTensor's; dist.all_reduce

    spc = spec(config.to_dict())
    values = {**spc.values(), S.N_t: TP, S.N_p: 1, S.N_d: 1, S.b: 1, S.s: seq, S.beta_a: 4}  # fp32 on the CPU
    number = lambda e: int(sp.sympify(e).subs(values))  # noqa: E731
    counts = {engine: {k: number(v) for k, v in collectives.training_collectives(
        parallel.stages(parallel.layout(spc.model(), engine))[0]).items()} for engine in ("hf", None)}
    assert counts["hf"] == {"all_reduce": 7, "all_gather": 0, "reduce_scatter": 0, "loss": 0, "gathered": 1,
                            "gathered_grads": 1, "routing": 1}
    assert counts[None]["routing"] == 0  # (torchtitan's and Megatron's experts: not transformers')
    assert number(parallel.comm(parallel.layout(spc.model(), "hf"))["tp"]) == sent
