"""Tensor-parallel all-reduces counted from the model's structure (symllm.costs.collectives.reduced_sublayers): one per
sublayer whose output the ranks sum, not two a block whatever the block holds.

Expected numbers come from the engines' model code read by hand and from torch's DTensor, never from symllm:

* vLLM's Nemotron-H (vllm/model_executor/models/nemotron_h.py, vllm-project/vllm commit
  00b08dc44519a82cbdd9061d92d1226985094622, read 2026-11-29): every layer is one ``*DecoderLayer`` holding one
  ``mixer`` under one ``RMSNorm`` (``ALL_DECODER_LAYER_TYPES``: ``"M"`` ``NemotronHMambaDecoderLayer``, ``"-"``
  ``NemotronHMLPDecoderLayer``, ``"*"`` ``NemotronHAttentionDecoderLayer``, ``"E"`` ``NemotronHMoEDecoderLayer``,
  picked by ``hybrid_override_pattern[layer_idx]``); the MLP's ``down_proj`` and the attention's ``o_proj`` are
  ``RowParallelLinear`` with ``reduce_results`` left True (one all-reduce of the residual stream each), the
  Mamba-2 mixer's ``out_proj`` is a ``RowParallelLinear`` too (``MambaMixer2``,
  vllm/model_executor/layers/mamba/mamba_mixer2.py), and the MoE's shared expert is built with
  ``reduce_results=False``, summed inside ``FusedMoE`` with the routed experts' output: one all-reduce a layer;
* vLLM's Gemma 4 (vllm/model_executor/models/gemma4.py, commit 001cabc1be16a59a70d720ed61a13b678c060a18, read
  2026-11-29): ``Gemma4Attention.o_proj`` and ``Gemma4MLP.down_proj`` are ``RowParallelLinear`` (reduce_results
  True) and ``Gemma4MoE``'s ``FusedMoE`` has ``reduce_results=True``: a layer with the MoE block beside the dense
  MLP sends three;
* torch's DTensor: ``CommDebugMode`` counts the all-reduces a forward pass of the tiny LLaMA reference runs under
  torch's tensor-parallel plan (tests/test_parallel.py's helpers): one per ``RowwiseParallel`` output (``wo``,
  ``w2``) and the vocabulary-split embedding's.
"""
import warnings

import pytest

import symllm
from symllm.arch import symbols as S
from symllm.arch.config import preset_info
from symllm.costs import efficiency

from .conftest import requires


def _calls(name: str, **work) -> list[tuple[int, int]]:
    """The ``(calls, bytes)`` of every tensor-parallel group of collectives the expected times ask for (prefill,
    decode step, training step, in that order) in a workload of ``name`` at ``work``."""
    seen = []
    real, trained = efficiency.allreduce_s, efficiency.training_tp_s

    def spy(calls, sent, link, serve=None, ranks=None):
        seen.append((calls, int(sent)))
        return real(calls, sent, link, serve, ranks)

    def training(calls, gathers, sent, link, ranks):
        seen.append((calls, int(sent)))
        return trained(calls, gathers, sent, link, ranks)
    efficiency.allreduce_s, efficiency.training_tp_s = spy, training
    try:
        symllm.workload(name, **work)
    finally:
        efficiency.allreduce_s, efficiency.training_tp_s = real, trained
    return seen


def _terms(name: str, tp: int, b: int, s: int) -> dict:
    """The whole model's (one stage's) tensor-parallel terms of ``name`` at ``tp``, batch ``b``, prompt ``s``, bf16."""
    from symllm.arch.resolved import spec
    from symllm.costs import hardware
    from symllm.costs.phases import flops
    spc = spec(name)
    terms = hardware.stage_times(spc.model(), True, phase_flops=flops)["stages"][0]
    values = {**spc.values(), S.N_t: tp, S.N_p: 1, S.b: b, S.s: s, S.s_o: 1, S.beta_a: 2}
    from symllm.costs.collectives import reduced_sublayers
    return {**{k: terms[k].subs(values) for k in ("layers", "collectives", "prefill_tp", "decode_tp")},
            "reductions": reduced_sublayers(spc.model()).subs(values)}


def test_nemotron_h_8b_sends_one_all_reduce_a_layer_by_hand():
    """nemotron-h-8b at tp 2: its hybrid_override_pattern holds 24 Mamba-2 mixers (M), 24 MLPs (-) and 4
    attention layers (*), 52 layers of one sublayer each, each reduced once by vLLM (module docstring): 52
    all-reduces of the residual stream and the embedding's, not the 2·52 + 1 = 105 of two a block. Each sends
    2·(2-1)/2 of the b·s·d bf16 stream, ring: at b 1, a 128-token prompt, 2·128·4096 = 1,048,576 bytes (a
    decode step: 2·4096 = 8,192); the logits' all-gather sends half of the 2·131,072 bytes of one position's
    logits. Its 8 Mamba-2 groups split over the 2 ranks: no gated norm spans them (no extra all-reduce)."""
    pattern = preset_info("nemotron-h-8b")["config"]["hybrid_override_pattern"]
    assert (pattern.count("M"), pattern.count("-"), pattern.count("*"), len(pattern)) == (24, 24, 4, 52)
    layers = 24 + 24 + 4
    t = _terms("nemotron-h-8b", 2, 1, 128)
    assert (t["layers"], t["reductions"], t["collectives"]) == (52, 52, 54)
    assert t["prefill_tp"] == (layers + 1) * 2 * 128 * 4096 + 131072 == 55_705_600
    assert t["decode_tp"] == (layers + 1) * 2 * 4096 + 131072 == 565_248
    # the expected times' calls: one a layer, the embedding's and the logits' gather (the same count as the bytes)
    prefill, decode, _ = _calls("nemotron-h-8b", tp=2, gpu="h100-sxm", batch=1, seq=128)
    assert prefill == (layers + 2, 55_705_600) and decode == (layers + 2, 565_248)


def test_llama_keeps_two_all_reduces_a_block():
    """LLaMA-3.1-8B at tp 2 (32 blocks, d 4096, V 128,256): the attention's wo and the feed-forward's w2 each
    all-reduce, two a block, 2·32 + 1 with the embedding's: 65 of 1,048,576 bytes at b 1, s 128, and half of
    the 2·128,256 bytes of the logits; 2·32 + 2 calls with the logits' gather."""
    t = _terms("llama3.1-8b", 2, 1, 128)
    assert (t["layers"], t["reductions"], t["collectives"]) == (32, 64, 66)
    assert t["prefill_tp"] == 65 * 2 * 128 * 4096 + 128256 == 68_285_696
    prefill, decode, _ = _calls("llama3.1-8b", tp=2, gpu="h100-sxm", batch=1, seq=128)
    assert prefill == (66, 68_285_696) and decode[0] == 66


def test_gemma4_moe_layer_sends_three():
    """Gemma 4 26B-A4B: 30 layers, each an attention, a dense MLP and the MoE block beside it, each reduced by
    vLLM on its own (module docstring): 3 a layer, 90."""
    assert preset_info("gemma-4-26b-a4b")["config"]["text_config"]["num_hidden_layers"] == 30
    assert _terms("gemma-4-26b-a4b", 2, 1, 128)["reductions"] == 3 * 30


@pytest.mark.parametrize("layers, ranks", [(1, 2), (3, 2), (2, 4)])
def test_llama_forward_all_reduces_equal_comm_debug_mode(layers, ranks):
    """A forward pass of the tiny LLaMA reference under torch's plan: CommDebugMode counts one all-reduce per
    row-wise linear output (wo, w2) and the vocabulary-split embedding's; reduced_sublayers is that count less
    the embedding's (the head's output stays sharded for the parallel loss: no collective)."""
    torch = requires("torch")
    from torch.distributed.tensor.debug import CommDebugMode
    from symllm.costs.collectives import reduced_sublayers
    from .test_parallel import _parallel_reference, fake_group
    cfg = symllm.ModelConfig(vocab_size=4 * ranks, dim=2 * ranks * 2 + 2, n_layers=layers, n_heads=2 * ranks,
                             n_kv_heads=ranks, head_dim=2, hidden_dim=3 * ranks)
    with fake_group(ranks) as mesh:
        model = _parallel_reference(cfg, ranks, mesh, device="cpu")
        for layer in model.layers:  # each rank attends with its own heads
            layer.attention.n_heads //= ranks
            layer.attention.n_kv_heads //= ranks
        with torch.no_grad(), CommDebugMode() as comm:
            model(torch.randint(0, cfg.vocab_size, (1, 3)))
    counted = {k.__name__: v for k, v in comm.get_comm_counts().items()}
    from symllm.arch.resolved import spec
    ours = reduced_sublayers(spec(cfg).model()).subs(S.L, layers)
    assert counted == {"all_reduce": 2 * layers + 1} and ours + 1 == counted["all_reduce"]


@pytest.mark.parametrize("name, sp, micro, dtensor, megatron", [
    ("nemotron-h-8b", True, 1, 4 * 52 + 2 + 2 + 3, 5 * 52 + 2 + 3 + 3),
    ("nemotron-h-8b", True, 3, 4 * 52 + 7, 5 * 52 + 8),
    ("llama3.1-8b", True, 2, 4 * 2 * 32 + 7, 10 * 32 + 8), ("llama3.1-8b", False, 1, 7 * 32 + 1 + 1 + 3, 4 * 32 + 5)])
@pytest.mark.parametrize("engine", [None, "torchtitan", "mlc"])
def test_training_collective_calls_are_the_step_count_with_backward_head_and_loss(name, sp, micro, dtensor, megatron,
                                                                                  engine):
    """A training step's tensor-parallel collective calls (the latency term), each micro-batch's, by hand from
    Megatron-Core (NVIDIA/Megatron-LM, read 2026-11-29: megatron/core/tensor_parallel/mappings.py at a11077467a90,
    layers.py, cross_entropy.py at 8e6e7cd73500) and torch's DTensor (tests/test_parallel.py counts them with
    CommDebugMode). With sequence parallelism a sublayer's column-parallel input is all-gathered in forward and its
    gradient reduce-scattered in backward (``gather_from_sequence_parallel_region``), its row-parallel output
    reduce-scattered in forward and its gradient all-gathered in backward
    (``reduce_scatter_to_sequence_parallel_region``): four a sublayer; the vocabulary-parallel embedding two
    (``reduce_scatter_embeddings``: a reduce-scatter, its backward an all-gather), the output layer two (its input
    all-gathered, its gradient reduce-scattered) and ``VocabParallelCrossEntropy`` three fp32 all-reduces in forward
    (the logits' max, the target's logit, the sum of exponentials), none in backward. nemotron-h-8b: 52 one-sublayer
    layers, 4·52 + 7 = 215; LLaMA-3.1-8B: 64 sublayers, 263. Without sequence parallelism (DTensor's
    ``ColwiseParallel`` reduces each column-wise linear's input gradient: wq, wk, wv, w1, w3): 2 forward and 5
    backward all-reduces a block, the embedding's forward one (none in backward: ``reduce_from_...``), the head's
    input gradient and the loss's three: 7·32 + 5 = 229. That is torchtitan's count (it runs DTensor's).

    No engine, and an inference engine (MLC: no one trains with it), count the default training engine's,
    Megatron-Core's ``ColumnParallelLinear``, which under sequence parallelism all-gathers its input once more in
    backward for the weight gradient (layers.py:432-447 at core_r0.9.0, 1afee592e85a; the test below), the output
    layer's too: LLaMA-3.1-8B's block has two column-parallel linears (fused ``linear_qkv``, ``linear_fc1``) and two
    row-parallel ones, 6 all-gathers and 4 reduce-scatters, 10·32 + 2 (embedding) + 3 (output layer) + 3 (loss) =
    328; without sequence parallelism 2 + 2 all-reduces a block, 4·32 + 5 = 133. nemotron-h-8b's every layer is one
    column-parallel and one row-parallel linear under Megatron-Core: the Mamba-2 mixer's single ``in_proj`` and its
    ``out_proj`` (megatron/core/ssm/mamba_mixer.py at 2255f6b71cc6; ``mamba_stack_spec`` builds them as
    ``TELayerNormColumnParallelLinear`` and ``TERowParallelLinear``, megatron/core/models/mamba/
    mamba_layer_specs.py, read 2026-11-29), the squared-ReLU MLP's ``linear_fc1`` and ``linear_fc2`` (no gate),
    the attention's ``linear_qkv`` and ``linear_proj``: 3 all-gathers and 2 reduce-scatters a layer, 5·52 + 8 =
    268."""
    *_, training = _calls(name, tp=2, gpu="h100-sxm", batch=1, seq=128, micro_batches=micro, sp=sp, engine=engine)
    assert training[0] == (dtensor if engine == "torchtitan" else megatron) * micro


@pytest.mark.parametrize("engine", ["megatron", "nemo"])
@pytest.mark.parametrize("sp, all_reduces, gathers, scatters", [(False, 2 * 32 + 2 * 32 + 1 + 1 + 3, 0, 0),
                                                              (True, 3, 6 * 32 + 1 + 2, 4 * 32 + 1 + 1)])
def test_megatron_training_calls_by_hand_from_its_column_parallel_linear(engine, sp, all_reduces, gathers, scatters):
    """LLaMA-3.1-8B (32 layers) at tp 2, one micro-batch, as Megatron-Core runs it, counted by hand from its code
    (NVIDIA/Megatron-LM tag core_r0.9.0, 1afee592e85a, 2024-10-24; the same lines moved at core_v0.13.0, c550cf6c41c3,
    2025-07-25; read 2026-11-29). A block has two column-parallel linears, attention's ``linear_qkv`` (one linear
    from hidden_size to the query and both kv projections: megatron/core/transformer/attention.py:347-357) and the
    MLP's ``linear_fc1`` (gate and up in one, ffn_hidden_size doubled for a gated unit: transformer/mlp.py:64-79),
    and two row-parallel ones, ``linear_proj`` and ``linear_fc2``.

    Without sequence parallelism: ``RowParallelLinear.forward`` all-reduces its output
    (``reduce_from_tensor_model_parallel_region``, tensor_parallel/layers.py:1156), and a ``ColumnParallelLinear``
    all-reduces its input gradient once in backward (``allreduce_dgrad``, layers.py:820-822, run at layers.py:462;
    ``copy_to_tensor_model_parallel_region``'s backward, mappings.py:252-254, where it is not set): 2 forward and 2
    backward a block, 128; the embedding's forward one, the output layer's input gradient, the loss's three: 133
    (DTensor's 229 above: wq, wk, wv, w1, w3 each reduce theirs).

    With sequence parallelism: each column-parallel linear all-gathers its input in forward (layers.py:400-409) and
    again in backward for the weight gradient, having saved only the rank's shard (layers.py:432-447), and
    reduce-scatters its input gradient (layers.py:468-480); each row-parallel one reduce-scatters its output
    (layers.py:1153-1154), all-gathered in backward (``_ReduceScatterToSequenceParallelRegion``): a block 6
    all-gathers and 4 reduce-scatters; the embedding a reduce-scatter and its all-gather; the output layer, a
    ``ColumnParallelLinear`` too (models/gpt/gpt_model.py:140), two all-gathers and a reduce-scatter; the loss's
    three fp32 all-reduces. NeMo runs Megatron-Core: the same."""
    from symllm.costs import efficiency

    seen = []
    real = efficiency.training_tp_s

    def spy(calls, gathers_, sent, link, ranks):
        seen.append((calls, gathers_))
        return real(calls, gathers_, sent, link, ranks)
    efficiency.training_tp_s = spy
    try:
        symllm.workload("llama3.1-8b", tp=2, gpu="h100-sxm", batch=1, seq=128, sp=sp, engine=engine)
    finally:
        efficiency.training_tp_s = real
    assert seen == [(all_reduces + gathers + scatters, gathers + scatters)]


@pytest.mark.parametrize("engine, gathers", [("torchtitan", 260), (None, 325)])
def test_training_bytes_are_the_calls_at_their_sizes_by_hand(engine, gathers):
    """LLaMA-3.1-8B at tp 2 with sequence parallelism, b 1, s 128, bf16: each of a micro-batch's all-gathers and
    reduce-scatters of the 2·128·4096-byte residual stream sends half of it (524,288 B), each of the loss's three
    fp32 all-reduces of 128 values twice half of 512 B, the training step's bytes at the calls counted above:
    torchtitan's (DTensor's) 260 of them, 260·524,288 + 3·512 = 136,316,416 bytes a micro-batch; no engine's
    (Megatron-Core's) 6·32 + 1 + 2 all-gathers and 4·32 + 1 + 1 reduce-scatters, 325, 170,395,136 bytes."""
    *_, training = _calls("llama3.1-8b", tp=2, gpu="h100-sxm", batch=1, seq=128, micro_batches=2, sp=True,
                          engine=engine)
    assert training == (2 * (gathers + 3), 2 * (gathers * 524288 + 3 * 512))


def test_deepseek_v4_reduces_its_experts_only_as_transformers_plan_splits_them():
    """DeepSeek-V4 as symllm builds it follows transformers' tensor-parallel plan (DeepseekV4Config
    .base_model_tp_plan, transformers 5.23: only ``layers.*.mlp.experts`` split, gate_up packed column-wise, down
    row-wise; the attention, the shared expert and the hyper-connections replicated): one all-reduce a layer, the
    mixture's. (vLLM's DeepseekV4Attention splits the heads, its wo_b a RowParallelLinear: vllm/model_executor/
    models/deepseek_v4.py at 023da1fc828eb07787cf0734a1ba32f0a0f11887; symllm does not model that plan.)"""
    from symllm.arch.config import from_hf
    from symllm.arch.resolved import spec
    from symllm.costs.collectives import reduced_sublayers
    transformers = requires("transformers")
    assert transformers.DeepseekV4Config.base_model_tp_plan == {
        "layers.*.mlp.experts.gate_up_proj": "packed_colwise", "layers.*.mlp.experts.down_proj": "rowwise",
        "layers.*.mlp.experts": "moe_tp_experts"}
    from .test_dsv4 import _ONE_OF_EACH
    spc = spec(from_hf(_ONE_OF_EACH))
    assert reduced_sublayers(spc.model()).subs(spc.values()) == 3


# --- one count of a step's collectives: its latencies, its bytes and the host's calls ----------------------------

def test_vllm_tp4_step_collectives_by_hand(monkeypatch):
    """Llama-2-70B fp16 over four A100 SXM (NVLink 3) under vLLM, batch 1, a 7-token prompt: vLLM's
    ``VocabParallelEmbedding.forward`` all-reduces its masked rows (``tensor_model_parallel_all_reduce``,
    vllm/model_executor/layers/vocab_parallel_embedding.py at 00db0119c37674b956dec4228d4e571549020976) and its
    ``LogitsProcessor._gather_logits`` gathers the logits (vllm/model_executor/layers/logits_processor.py at
    00db1f124590c3a5655a1781c857334d4a3ce83b; both read 2026-11-29): a step runs 2·80 + 1 residual all-reduces
    and the gather, 162 collectives. Each residual one sends 2·3/4 of the row's 8,192 fp16 values, 24,576 B a
    token, the gather 3/4 of 32,000 fp16 logits, 48,000 B. At vLLM's own all-reduce over NVLink, 9.2 us a call,
    and 0.69 of NVLink 3's 300 GB/s: 162 x 9.2 us + 4,004,736 B / 207 GB/s = 1.5097 ms a decode step; each
    microsecond more a call is 162 us more a step (CUDA graphs: the collectives add to the GPU's time)."""
    from fractions import Fraction
    from symllm.costs import collectives, figures
    work = dict(gpu="a100-80gb", engine="vllm", dtype="fp16", tp=4, batch=1, seq=7, context=135)
    prefill, decode, _ = _calls("llama2-70b", **work)
    assert decode == (162, 161 * 24_576 + 48_000) == (162, 4_004_736)
    assert prefill == (162, 161 * 7 * 24_576 + 48_000)
    us = Fraction(1, 10 ** 6)
    link = ("NVLink 3", 300 * 10 ** 9)
    by_hand = 162 * Fraction("9.2") * us + Fraction(4_004_736) / (Fraction(69, 100) * 300 * 10 ** 9)
    assert collectives.allreduce_s(*decode, link, figures.engine("vllm")) == by_hand
    assert 1e3 * float(by_hand) == pytest.approx(1.5097, abs=1e-4)

    def step():
        e = symllm.workload("llama2-70b", **work)["time"]["expected"]
        return e["decode_token_s"], e["prefill_s"]
    before = step()
    monkeypatch.setitem(figures.data()["engines"]["vllm"], "custom_allreduce_s", "0.0000102")
    after = step()
    assert [a - b for a, b in zip(after, before)] == pytest.approx([162e-6, 162e-6], rel=1e-9)


def _whole(mdl, *weights):
    """``mdl`` with its parts of these ``weights`` (embedding, head) laid out whole on every tensor rank, as an
    engine that does not split the vocabulary lays them (split ``replicated``)."""
    import dataclasses

    def laid(c):
        rules = (dataclasses.replace(c.rules, split="replicated", engines=()) if c.rules.weight in weights
                 else c.rules)
        return c.replace(rules=rules, children=tuple(laid(x) for x in c.children))
    return laid(mdl)


def test_a_step_without_a_vocabulary_parallel_embedding_by_hand():
    """Llama-2-70B at tp 4 over PCIe with the embedding whole on every rank: each rank looks its tokens up in
    the whole table, no all-reduce of its rows: 2·80 residual all-reduces and the logits' gather, 161
    collectives, 160 x 24,576 + 48,000 B a decode step; the lm_head whole too (every rank computes every
    logit): no gather, 160. At 20.4 us a call over four ranks (4.8 + 2 x 3 x 2.6 us) and 0.58 of PCIe Gen4's 32 GB/s
    (nccl-tests' figures in efficiency.json): 161 x 20.4 us + 3,980,160 B / 18.56 GB/s = 3.4988 ms a step, against
    the split embedding's 162 x 20.4 us + 4,004,736 B / 18.56 GB/s = 3.5206 ms (its all-reduce: one latency and
    24,576 B more)."""
    from fractions import Fraction
    from symllm.arch.resolved import spec
    from symllm.costs import collectives, hardware
    from symllm.costs.phases import flops
    spc = spec("llama2-70b")
    values = {**spc.values(), S.N_t: 4, S.N_p: 1, S.b: 1, S.s: 7, S.s_o: 1, S.beta_a: 2}

    def terms(mdl):
        t = hardware.stage_times(mdl, True, phase_flops=flops)["stages"][0]
        return tuple(t[k].subs(values) for k in ("collectives", "decode_tp"))
    split = terms(spc.model())
    embedding_whole = terms(_whole(spc.model(), "embedding"))
    both_whole = terms(_whole(spc.model(), "embedding", "head"))
    assert split == (162, 161 * 24_576 + 48_000)
    assert embedding_whole == (161, 160 * 24_576 + 48_000)
    assert both_whole == (160, 160 * 24_576)
    link = ("PCIe Gen4 x16", 32 * 10 ** 9)
    rate = Fraction(58, 100) * 32 * 10 ** 9
    us = Fraction(1, 10 ** 6)
    for calls, sent in (split, embedding_whole, both_whole):
        by_hand = calls * Fraction(204, 10) * us + Fraction(int(sent)) / rate
        assert collectives.allreduce_s(int(calls), int(sent), link, ranks=4) == by_hand
    assert 1e3 * float(161 * Fraction(204, 10) * us + Fraction(3_980_160) / rate) == pytest.approx(3.4988, abs=1e-4)
    assert 1e3 * float(162 * Fraction(204, 10) * us + Fraction(4_004_736) / rate) == pytest.approx(3.5206, abs=1e-4)


def test_the_last_pipeline_stage_runs_no_embedding_all_reduce():
    """At pp 2 the embedding is on the first stage and the head on the last: Llama-2-70B's first stage runs its
    40 blocks' 80 all-reduces and the embedding's, the last its 80 and the logits' gather (81 each, not the
    embedding's all-reduce on both)."""
    from symllm.arch.resolved import spec
    from symllm.costs import hardware
    from symllm.costs.phases import flops
    spc = spec("llama2-70b")
    values = {**spc.values(), S.N_t: 4, S.N_p: 2, S.b: 1, S.s: 7, S.s_o: 1, S.beta_a: 2}
    first, last = (tuple(t[k].subs(values) for k in ("collectives", "decode_tp"))
                   for t in hardware.stage_times(spc.model(), True, phase_flops=flops)["stages"])
    assert first == (81, 81 * 24_576)
    assert last == (81, 80 * 24_576 + 48_000)


def test_all_gathers_and_reduce_scatters_at_nccls_ring_latency():
    """NCCL's own latency model (NVIDIA/nccl src/graph/tuning.cc at v2.19.3-1, 8c6c595, 2023-09-26; the same figures
    v2.18.3-1 to v2.23.4-1; read 2026-11-29): a ring collective takes baseLat + nsteps x hwLat, nsteps 2(n-1) for an
    all-reduce and n-1 for an all-gather or a reduce-scatter (lines 158-159); the LL protocol's baseLat 6.6 us (line
    57) and hwLat 0.6 us a step over NVLink, 2.7 over the network (lines 67, 75). Against a link's measured all-reduce
    latency L (efficiency.json's collectives, read from nccl-tests), an all-gather's is L (6.6 + (n-1) h) / (6.6 +
    2 (n-1) h): over NVLink 4 at 8 ranks L x 10.8/15, at 2 ranks L x 7.2/7.8; over InfiniBand at 2, L x 9.3/12.
    A training micro-batch of LLaMA-3.1-8B at tp 2 with sequence parallelism: 260 all-gathers and reduce-scatters,
    3 all-reduces (above), 136,316,416 bytes at NVLink 4's 0.82 of 450 GB/s."""
    from fractions import Fraction

    from symllm.costs import collectives

    nvlink, ib = ("NVLink 4", 450 * 10 ** 9), ("InfiniBand NDR", 50 * 10 ** 9)
    nv, net = (Fraction(collectives.collective(link[0])["latency_s"]) for link in (nvlink, ib))
    assert collectives.gather_latency_s(nvlink, 8) == nv * Fraction(108, 150)
    assert collectives.gather_latency_s(nvlink, 2) == nv * Fraction(72, 78)
    assert collectives.gather_latency_s(ib, 2) == net * Fraction(93, 120)
    assert collectives.gather_latency_s(nvlink, 1) == nv and collectives.gather_latency_s(None, 8) == 0
    sent = 260 * 524288 + 3 * 512
    by_hand = 3 * nv + 260 * nv * Fraction(72, 78) + Fraction(sent) / (Fraction(82, 100) * 450 * 10 ** 9)
    assert collectives.training_tp_s(263, 260, sent, nvlink, 2) == by_hand


@pytest.mark.parametrize("queries", ["q_lora", "q_proj"])
@pytest.mark.parametrize("engine, sp, counted", [
    ("megatron", False, {"all_reduce": 3, "all_gather": 0, "reduce_scatter": 0}),
    ("megatron", True, {"all_reduce": 0, "all_gather": 5, "reduce_scatter": 3}),
    ("dtensor", False, {"all_reduce": 3, "all_gather": 0, "reduce_scatter": 0}),
    ("dtensor", True, {"all_reduce": 0, "all_gather": 2, "reduce_scatter": 2})])
def test_mla_up_projections_read_two_latents_not_one_input(queries, engine, sp, counted):
    """One MLA attention sublayer (DeepSeek-V2, V3) over tensor ranks, counted by hand: its column-parallel linears
    are the query's up-projection (``wq_b``; without a query latent ``wq``) and the key-value up-projection
    (``wkv_b``), and they read different tensors, the normed query latent (or the block's normed input) and the
    normed key-value latent: DeepSeek-V3's inference/model.py ``self.wq_b(self.q_norm(self.wq_a(x)))`` and
    ``self.wkv_b(...)`` on ``self.kv_norm(kv)``; transformers 5.23 ``DeepseekV3Attention.forward``
    (modeling_deepseek_v3.py 440 and 416: ``q_b_proj(q_a_layernorm(q_a_proj(hidden_states)))``,
    ``kv_b_proj(kv_nope)`` of ``kv_a_layernorm``); Megatron-Core core_v0.13.0 (c550cf6c41c3)
    transformer/multi_latent_attention.py 475 and 486: ``linear_q_up_proj(q_compressed)`` and
    ``linear_kv_up_proj(kv_compressed)``, two ``ColumnParallelLinear`` s (models/gpt/gpt_layer_specs.py 125-147; no
    MLA at core_r0.9.0). So they are two groups, not one: without sequence parallelism each all-reduces its own
    input's gradient in backward (2) and ``wo`` its output in forward (1): 3; with it, under Megatron-Core, each group
    all-gathers its input in forward and again in backward and reduce-scatters the gradient (2 + 2 + 2) and ``wo``
    reduce-scatters its output and all-gathers the gradient: 5 all-gathers and 3 reduce-scatters. DTensor with
    sequence parallelism as torchtitan plans it (deepseek_v3/infra/parallelize.py at 3e3a19fe, 222-256) gathers the
    attention's input once, d wide, and its up-projections' Partial input gradients meet there, one reduce-scatter:
    with ``wo``'s two, 2 and 2 (test_tp_overlap.py's CommDebugMode test). Each group's collectives are of its own
    input's width, the latents' (DTensor with sp: d): test_mla_latent_collectives_sized_by_their_width_by_hand."""
    from symllm.arch.components import Component
    from symllm.arch.components.latent import latent_attention
    from symllm.costs import collectives

    sublayer = Component("block", children=(latent_attention(queries=queries),))
    count = collectives.training_collectives(sublayer, sp, columns=engine)
    assert {k: count[k] for k in counted} == counted


#: DeepSeek-V3's config.json (deepseek-ai/DeepSeek-V3, read 2026-11-29): hidden_size, q_lora_rank, kv_lora_rank,
#: qk_rope_head_dim, num_hidden_layers, first_k_dense_replace (the first 3 layers dense, the other 58 MoE)
DSV3 = {"d": 7168, "q_lora_rank": 1536, "kv_lora_rank": 512, "rope": 64, "layers": 61, "dense": 3}


def _ring(width: int, tp: int = 8, b: int = 1, s: int = 2048, dtype_bytes: int = 2) -> int:
    """What the busiest of ``tp`` ranks sends in a ring all-gather or reduce-scatter of a ``b·s·width`` bf16 tensor
    (``tp - 1`` of its ``tp`` chunks; an all-reduce twice this), by hand."""
    full = dtype_bytes * b * s * width
    return full - full // tp


@pytest.mark.parametrize("engine, sp", [("torchtitan", False), ("torchtitan", True),
                                        ("megatron", False), ("megatron", True)])
def test_mla_latent_collectives_sized_by_their_width_by_hand(engine, sp):
    """comm.tp of DeepSeek-V3 at TP 8, b 1, s 2048 (bf16), by hand: each collective is of its own tensor's width.
    The residual stream's are ``d`` 7,168 wide (2·2048·7168·7/8 = 25,690,112 bytes a share), but MLA's up-projections
    read the latents: ``wq_b`` the query latent, ``q_lora_rank`` 1,536 (5,505,024 bytes), ``wkv_b`` the key-value
    latent, ``kv_lora_rank`` 512 (1,835,008 bytes). The loss: 3 fp32 all-reduces of b·s statistics (2·(4·2048·7/8) =
    14,336 bytes each). Counted in shares (an all-reduce 2, an all-gather or a reduce-scatter 1):

    * torchtitan (DTensor, one collective a column linear; DeepSeek's ``wq_a``/``wkv_a`` replicated, inference/model.py
      ``Linear``), no sp: ``wo`` 1 all-reduce (d), ``wq_b``'s and ``wkv_b``'s input gradients 1 each (r_q, r_kv);
      dense FFN ``w1``, ``w3``, ``w2``: 3 (d); MoE layer: the shared expert's 3 and the tensor-split routed experts'
      pair 2: 5 (d). Plus embedding and head 1 each. d: 2·(61 + 3·3 + 58·5 + 2) = 724 shares; r_q 2·61, r_kv 2·61.
    * torchtitan, sp (deepseek_v3/infra/parallelize.py at 3e3a19fe, 222-256): the attention's input all-gathered
      once, d wide, and its gradient reduce-scattered (the up-projections' Partial input gradients summed through
      wq_a and wkv_a: no latent's collective), ``wo`` reduce-scatters its output and all-gathers the gradient (4 a
      layer), every other group 2, every other summed output 2, routed experts 4: d 61·4 + 3·4 + 58·8 + 2 + 2 = 724;
      r_q 0, r_kv 0.
    * megatron (ColumnParallelLinear, the linears sharing an input one), no sp: ``wo`` 1, ``linear_fc1`` 1,
      ``linear_fc2`` 1, routed experts 2 all-reduces: d 2·(61 + 3·2 + 58·4 + 2) = 602; r_q, r_kv 2·61 each. And the
      down-projections, column-parallel (Megatron-Core core_v0.13.0 gpt_layer_specs.py 144, 146): each all-reduces
      its input gradient (d: 2·2·61 more, 846) and all-gathers its output (multi_latent_attention.py 423, 436: r_q
      61 more, 183; r_kv + qk_rope_head_dim, 576 wide, 61).
    * megatron, sp: a group's input all-gathered again in backward (3 shares), the head's too (3): d 61·2 + 3·(3 + 2)
      + 58·(3 + 2 + 4) + 2 + 3 = 664; r_q, r_kv 3·61 = 183 each. The down-projections: each its input all-gathered
      twice and its gradient reduce-scattered (d: 6·61 more, 1,030), its output all-gathered (r_q 61; 576 wide 61)
      and its latent, scattered to the sequence (425, 443), all-gathered in backward (r_q 61, r_kv 61 more: 305, 244).
    """
    d, r_q, r_kv, rope, layers, dense = (DSV3[k] for k in ("d", "q_lora_rank", "kv_lora_rank", "rope", "layers",
                                                            "dense"))
    moe = layers - dense
    loss = 3 * 2 * (4 * 2048 - 4 * 2048 // 8)
    shares = {("torchtitan", False): (2 * (layers + 3 * dense + 5 * moe + 2), 2 * layers, 2 * layers, 0),
              ("torchtitan", True): (4 * layers + 4 * dense + 8 * moe + 2 + 2, 0, 0, 0),
              ("megatron", False): (2 * (layers + 2 * dense + 4 * moe + 2) + 4 * layers, 3 * layers, 2 * layers,
                                    layers),
              ("megatron", True): (2 * layers + 5 * dense + 9 * moe + 2 + 3 + 6 * layers, 5 * layers, 4 * layers,
                                   layers)}[engine, sp]
    assert shares == {("torchtitan", False): (724, 122, 122, 0), ("torchtitan", True): (724, 0, 0, 0),
                      ("megatron", False): (846, 183, 122, 61), ("megatron", True): (1030, 305, 244, 61)}[engine, sp]
    widths = (d, r_q, r_kv, r_kv + rope)
    assert tuple(map(_ring, widths)) == (25_690_112, 5_505_024, 1_835_008, 2_064_384) and loss == 43_008
    by_hand = sum(n * _ring(w) for n, w in zip(shares, widths)) + loss
    ours = symllm.workload("deepseek-v3", batch=1, seq=2048, tp=8, sp=sp, engine=engine)
    assert int(ours["comm"]["tp"]) == by_hand
    assert ours["training_tp_layout"] == ("megatron" if engine == "megatron" else "transformers")


def test_megatron_holds_mla_down_projections_split_by_hand():
    """Under Megatron-Core (``--engine megatron``, and the default training engine) the training states hold MLA's
    down-projections split over the tensor ranks (column-parallel, core_v0.13.0 gpt_layer_specs.py 144, 146), where
    torchtitan's (DTensor, DeepSeek's replicated ``wq_a``/``wkv_a``) hold them whole: DeepSeek-V3 at TP 8, each layer's
    7168·1536 + 7168·(512 + 64) = 15,138,816 weights, 7/8 of them fewer a rank, at 16 bytes a weight (bf16 weight and
    gradient, fp32 master and two Adam moments): 16·61·13,246,464 = 12,928,548,864 bytes. The inference layout (the
    weights, params per GPU) stays transformers'."""
    per_layer = DSV3["d"] * (DSV3["q_lora_rank"] + DSV3["kv_lora_rank"] + DSV3["rope"])
    assert per_layer == 15_138_816 and per_layer - per_layer // 8 == 13_246_464
    runs = {e: symllm.workload("deepseek-v3", tp=8, engine=e) for e in ("torchtitan", "megatron", None)}
    states = {e: w["memory_per_gpu"]["training_states"] for e, w in runs.items()}
    assert states["torchtitan"] - states["megatron"] == 16 * DSV3["layers"] * 13_246_464 == 12_928_548_864
    assert states[None] == states["megatron"]
    assert runs["torchtitan"]["params"]["per_gpu"] == runs["megatron"]["params"]["per_gpu"]


def test_mla_collectives_message_sizes_under_dtensor():
    """transformers' ``DeepseekV3Attention`` (one layer, CPU, fp32) under torch's DTensor on a fake process group of 2
    ranks, split as symllm's default layout splits it (``q_b_proj``, ``kv_b_proj`` ``ColwiseParallel``, ``o_proj``
    ``RowwiseParallel``, the down-projections whole): CommDebugMode counts a forward and backward's 3 all-reduces, and
    a dispatch mode their bytes, each of its own tensor: ``o_proj``'s output (hidden_size wide), ``q_b_proj``'s
    input gradient (q_lora_rank) and ``kv_b_proj``'s (kv_lora_rank), as symllm's bytes for the sublayer give them."""
    torch, transformers = requires("torch"), requires("transformers")
    import sympy as sp
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    from symllm.arch.components import Component
    from symllm.arch.components.latent import latent_attention
    from symllm.costs import collectives

    from .test_hf_plans import TP, _ring_sizes
    from .test_parallel import fake_group

    transformers.logging.set_verbosity_error()
    dims = dict(hidden_size=32, q_lora_rank=12, kv_lora_rank=6, qk_rope_head_dim=4, qk_nope_head_dim=4,
                v_head_dim=4, num_attention_heads=4, num_key_value_heads=4)
    config = transformers.DeepseekV3Config(vocab_size=64, num_hidden_layers=1, intermediate_size=64,
                                           first_k_dense_replace=1, **dims)
    seq = 8
    with warnings.catch_warnings(), fake_group(TP) as mesh:
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config)
        attention = model.model.layers[0].self_attn
        parallelize_module(attention, mesh, {"q_b_proj": ColwiseParallel(), "kv_b_proj": ColwiseParallel(),
                                             "o_proj": RowwiseParallel()})
        x = torch.randn(1, seq, dims["hidden_size"], requires_grad=True)
        rope = model.model.rotary_emb(x, torch.arange(seq)[None])
        sizes = _ring_sizes()
        with sizes, CommDebugMode() as comm:
            attention(x, rope, None)[0].sum().backward()
    assert {k.__name__: v for k, v in comm.get_comm_counts().items()} == {"all_reduce": 3}
    ring = lambda width: 4 * seq * width - 4 * seq * width // TP  # noqa: E731  (fp32 rows of one width)
    assert sizes.sent == 2 * (ring(32) + ring(12) + ring(6))
    values = {S.d: 32, S.r_q: 12, S.r_kv: 6, S.N_t: TP, S.b: 1, S.s: seq, S.beta_a: 4}
    ours = collectives.training_tp_bytes(Component("block", children=(latent_attention(),)))
    assert int(sp.sympify(ours).subs(values)) == sizes.sent
