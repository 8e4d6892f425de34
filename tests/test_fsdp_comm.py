"""FSDP2's data-parallel traffic as torchtitan runs it (issue 40): each micro-batch all-gathers every layer in
forward and again in backward and reduce-scatters its gradients (torchtitan/train.py: no
set_requires_gradient_sync(False) under gradient accumulation; apply_fsdp: reshard_after_forward = not
pp_enabled), the reduce-scatter in fp32 (mixed_precision_reduce = "float32"): the torchtitan engine's
``fsdp_per_micro_batch`` and ``grad_reduce_bytes`` (efficiency.json, each with its source).

Expected figures by hand: Llama 3.1 8B holds 8,030,261,248 parameters (Meta's model card: 8.03B; no tensor or
pipeline split here, so one rank gathers all of them); a ring over N ranks sends 2P - floor(2P/N) bytes of a
2-byte copy of P parameters; ZeRO 3's step without the engine's conventions counts two all-gathers and one
reduce-scatter once, 3 x that. Over 16 H100 nodes (dp 128) the ring runs at the node's 8 NICs, 8 x 50 GB/s,
at the network's all-reduce efficiency 0.7 and 20 us a call (efficiency.json, collectives.network). The
torchtitan engine hides 0.8 of the data-parallel time (``overlap``) while it is under 1.25 x the compute, as
here (a step of about 3.6 s), so the step grows by 0.2 x the traffic's added seconds.

The form itself (symllm.costs.parallel.comm's dp at a reduce dtype's bytes and rounds a step) is checked by hand
and against FSDP2 (torch.distributed.fsdp.fully_shard) running a tiny LlamaForCausalLM on CPU under a fake process
group: the all-gathers and reduce-scatters it issues, with their tensors' sizes, for one and two micro-batches.
"""
from __future__ import annotations

import pytest

import symllm
from symllm.costs import parallel
from symllm.costs.figures import data
from symllm.costs.numbered import values

from .conftest import requires

P = 8_030_261_248
N = 128
RING = 2 * P - (2 * P) // N             # bytes one rank sends in a ring of a bf16 copy: 15,935,049,664
BW = 0.7 * 8 * 50e9                      # 8 NICs a node at 0.7
LAT = 20e-6
#: an all-gather's or a reduce-scatter's latency over N ranks on the network: NCCL's ring model
#: (src/graph/tuning.cc, Ring LL: base 6.6 us, 2.7 us a network step; N - 1 steps against an all-reduce's 2(N - 1))
#: applied to the all-reduce's 20 us: 20 x 349.5 / 692.4 = 10.0953 us
GATHER = LAT * (6.6 + (N - 1) * 2.7) / (6.6 + 2 * (N - 1) * 2.7)
#: torchtitan's FSDP2 calls a micro-batch for Llama 3.1 8B's 32 blocks (apply_fsdp at 018740b, counted under a fake
#: process group below): 34 units (the embedding, 32 blocks, the norm and output), 2 x 34 - 1 all-gathers (the last
#: unit is not resharded after forward) and 34 reduce-scatters
CALLS = (2 * 34 - 1) + 34
WORK = dict(gpu="h100-sxm", engine="torchtitan", dp=N, zero_stage=3, seq=8192, batch=1, micro_batches=4)


def _step(**over) -> float:
    return symllm.workload("llama3.1-8b", **{**WORK, **over})["time"]["expected"]["training_step_s"]


def test_the_parameter_count_the_hand_arithmetic_reads():
    assert symllm.workload("llama3.1-8b", **WORK)["params"]["per_gpu"] == P


def test_torchtitan_gathers_twice_and_reduces_in_fp32_every_micro_batch(monkeypatch):
    """4 micro-batches: 4 x (2 gathers x 2 bytes + 1 reduce x 4 bytes) = 32 bytes a parameter's ring share
    in 4 rounds of CALLS calls, against 3 x 2 = 6 in one round without the engine's two fields: the step grows by
    0.2 x ((4 x 101 x GATHER + 32/2 x RING / BW) - (101 x GATHER + 3 x RING / BW)) = 0.14858 s. (Each gather's
    copy-out on the compute stream, fsdp_copy_out_bytes, follows the gathers too: tests/test_step_passes.py; left
    out here.)"""
    engine = data()["engines"]["torchtitan"]
    monkeypatch.delitem(engine, "fsdp_copy_out_bytes")
    with_fields = _step()
    monkeypatch.delitem(engine, "fsdp_per_micro_batch")
    monkeypatch.delitem(engine, "grad_reduce_bytes")
    plain = _step()
    new = 4 * CALLS * GATHER + 4 * (2 * 2 + 4) / 2 * RING / BW
    old = CALLS * GATHER + 3 * RING / BW
    assert with_fields - plain == pytest.approx(0.2 * (new - old), rel=1e-9)
    assert 0.2 * (new - old) == pytest.approx(0.14858, abs=1e-5)


def test_each_fsdp_unit_pays_an_all_gathers_latency(monkeypatch):
    """The latency side alone, by hand: torchtitan's units make each of the 4 micro-batches 101 calls (CALLS), each
    at GATHER (10.0953 us), where one unit (the whole model: 2 all-gathers and a reduce-scatter a round, without
    the engine's fsdp_units) makes 3; the bytes are the same, so 0.2 of the difference shows (overlap 0.8):
    0.2 x 4 x (101 - 3) x 10.0953 us = 0.79147 ms."""
    engine = data()["engines"]["torchtitan"]
    units = _step()
    monkeypatch.delitem(engine, "fsdp_units")
    whole = _step()
    assert units - whole == pytest.approx(0.2 * 4 * (CALLS - 3) * GATHER, rel=1e-9)
    assert 0.2 * 4 * (CALLS - 3) * GATHER == pytest.approx(0.79147e-3, abs=1e-8)


def test_the_fp32_reduce_alone_moves_a_third_more_bytes_once_a_step(monkeypatch):
    """An engine reducing in fp32 without re-gathering each micro-batch: (2 x 2 + 4) / 6 of the bytes in one
    call; the step grows by 0.2 x (8/6 - 1) x 3 x RING / BW = 0.011382 s over the bf16 reduce."""
    engine = data()["engines"]["torchtitan"]
    monkeypatch.setitem(engine, "fsdp_per_micro_batch", False)
    fp32 = _step()
    monkeypatch.delitem(engine, "grad_reduce_bytes")
    bf16 = _step()
    assert fp32 - bf16 == pytest.approx(0.2 * (8 / 6 - 1) * 3 * RING / BW, rel=1e-9)


@pytest.mark.parametrize("over", [dict(pp=2), dict(zero_stage=1)])
def test_neither_applies_with_a_pipeline_or_below_zero_3(monkeypatch, over):
    """torchtitan keeps the gathered layers through a pipeline's micro-batches (reshard_after_forward = not
    pp_enabled), and mixed_precision_reduce acts through FSDP only: the step is what it is without the fields."""
    with_fields = _step(**over)
    assert with_fields is not None and with_fields > 0  # it fits: a time to compare
    engine = data()["engines"]["torchtitan"]
    monkeypatch.delitem(engine, "fsdp_per_micro_batch")
    monkeypatch.delitem(engine, "grad_reduce_bytes")
    assert _step(**over) == with_fields


def _dp(cfg, dp: int, zero_stage: int = 3, **inputs) -> int:
    """comm's dp form of ``cfg``'s model over ``dp`` ranks (no tensor or pipeline split), at ``inputs``."""
    form = parallel.comm(symllm.spec(cfg).model(), zero_stage=zero_stage, **inputs)["dp"]
    return int(form.subs(values(cfg, dp=dp, zero_stage=zero_stage)))


@pytest.mark.parametrize("n", [128, 7])  # 7 divides neither 2P nor 4P: whole ring chunks
def test_the_dp_form_counts_what_each_round_sends_by_hand(n):
    """A round: ZeRO 3 all-gathers the bf16 weights in forward and in backward and reduce-scatters the gradients at
    the reduce dtype; ZeRO 1 reduce-scatters every round and gathers the updated weights once; ZeRO 0 all-reduces
    (twice a reduce-scatter's bytes) every round. A ring over n ranks sends B - B // n of a B-byte tensor."""
    gather, fp32 = 2 * P - 2 * P // n, 4 * P - 4 * P // n
    assert _dp("llama3.1-8b", n) == 3 * gather  # the ZeRO paper's 3 passes, bf16, once a step
    assert _dp("llama3.1-8b", n, grad_bytes=4, rounds=4) == 4 * (2 * gather + fp32)  # torchtitan, 4 micro-batches
    assert _dp("llama3.1-8b", n, zero_stage=1, grad_bytes=4, rounds=3) == 3 * fp32 + gather
    assert _dp("llama3.1-8b", n, zero_stage=0, grad_bytes=4, rounds=3) == 3 * 2 * fp32
    if n == 7:
        assert (4 * P) // n != 2 * ((2 * P) // n)  # the fp32 tensor's own chunks, not twice the bf16 ones


@pytest.mark.parametrize("name, layout", [("llama3.1-8b", {}), ("mixtral-8x7b", {"ep": 2})])
@pytest.mark.parametrize("zero_stage", range(4))
def test_the_symbolic_inputs_give_the_numbers_the_count_evaluates(name, layout, zero_stage):
    """The count evaluates the form with REDUCE_BYTES and DP_ROUNDS as symbols (hardware.roofline_forms' dp_sent):
    at bf16 once a step it is comm.dp; at any other point the form built with those numbers (experts over the
    dp/ep ranks holding them too)."""
    mdl = symllm.spec(name).model()
    vals = values(name, dp=6, zero_stage=zero_stage, **layout)
    free = parallel.comm(mdl, zero_stage=zero_stage, grad_bytes=parallel.REDUCE_BYTES, rounds=parallel.DP_ROUNDS)["dp"]
    for grad_bytes, rounds in ((2, 1), (4, 3)):
        at = free.subs({parallel.REDUCE_BYTES: grad_bytes, parallel.DP_ROUNDS: rounds, **vals})
        assert at == parallel.comm(mdl, zero_stage=zero_stage, grad_bytes=grad_bytes, rounds=rounds)["dp"].subs(vals)
    assert free.subs({parallel.REDUCE_BYTES: 2, parallel.DP_ROUNDS: 1, **vals}) == symllm.workload(
        name, dp=6, zero_stage=zero_stage, **layout)["comm"]["dp"]


#: a tiny Llama whose every parameter's first dimension 4 ranks divide (FSDP2 pads dim 0 to the ranks otherwise)
TINY = dict(vocab_size=64, dim=32, n_layers=3, n_heads=4, n_kv_heads=2, head_dim=8, hidden_dim=48, tie_embeddings=False)
RANKS = 4


def _fsdp2_sent(reduce_dtype: str, micro_batches: int, torchtitan: bool = False) -> tuple[int, int, int]:
    """(all-gathers, reduce-scatters, bytes rank 0 sends in them under ring algorithms) of ``micro_batches``
    forward and backward passes of TINY under FSDP2 over a fake process group of RANKS ranks: each decoder layer
    and the root ``fully_shard``-ed, bf16 parameters, gradients reduced in ``reduce_dtype``, resharded after forward,
    no set_requires_gradient_sync(False) (torchtitan's train.py); ``torchtitan``: its apply_fsdp's units instead
    (pytorch/torchtitan 018740b, torchtitan/models/llama3/infra/parallelize.py: the embedding, each block, then the
    final norm and the output together with reshard_after_forward False under the default policy)."""
    torch = requires("torch")
    transformers = requires("transformers")
    dist = requires("torch.distributed")
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.utils._python_dispatch import TorchDispatchMode

    class Collectives(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.gathers = self.scatters = self.sent = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = str(func)
            if name.startswith("c10d._allgather_base_"):  # (output, input): n - 1 chunks of the input sent
                self.gathers += 1
                self.sent += (RANKS - 1) * args[1].numel() * args[1].element_size()
            elif name.startswith("c10d._reduce_scatter_base_"):  # (output, input): n - 1 chunks of the output
                self.scatters += 1
                self.sent += (RANKS - 1) * args[0].numel() * args[0].element_size()
            return func(*args, **(kwargs or {}))

    hf = transformers.LlamaConfig(vocab_size=TINY["vocab_size"], hidden_size=TINY["dim"],
                                  intermediate_size=TINY["hidden_dim"], num_hidden_layers=TINY["n_layers"],
                                  num_attention_heads=TINY["n_heads"], num_key_value_heads=TINY["n_kv_heads"],
                                  head_dim=TINY["head_dim"], tie_word_embeddings=False)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=RANKS)
    try:
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(hf)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=getattr(torch, reduce_dtype))
        if torchtitan:
            fully_shard(model.model.embed_tokens, mp_policy=mp, reshard_after_forward=True)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
        if torchtitan:
            fully_shard([model.model.norm, model.lm_head], mp_policy=mp, reshard_after_forward=False)
        fully_shard(model, mp_policy=mp, reshard_after_forward=True)
        ids = torch.randint(0, TINY["vocab_size"], (1, 8))
        with Collectives() as seen:
            for _ in range(micro_batches):
                model(input_ids=ids, labels=ids).loss.backward()
        return seen.gathers, seen.scatters, seen.sent
    finally:
        dist.destroy_process_group()


def _tiny():
    return symllm.resolve("llama3.2-1b").replace(**TINY)


@pytest.mark.parametrize("reduce_dtype, grad_bytes", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("micro_batches", [1, 2])
def test_the_dp_form_is_what_fsdp2_sends(reduce_dtype, grad_bytes, micro_batches):
    """FSDP2 gathers each unit (3 layers and the root) in forward and again in backward and reduce-scatters its
    gradients, every micro-batch: 2 x 4 all-gathers and 4 reduce-scatters each, the bytes of comm's dp at the reduce
    dtype's bytes and rounds = micro-batches (27,360 parameters: 2 x 41,040 bf16 bytes and 82,080 fp32 a round)."""
    gathers, scatters, sent = _fsdp2_sent(reduce_dtype, micro_batches)
    units = TINY["n_layers"] + 1
    assert (gathers, scatters) == (2 * units * micro_batches, units * micro_batches)
    assert symllm.workload(_tiny(), dp=RANKS)["params"]["per_gpu"] == 27_360
    assert sent == _dp(_tiny(), RANKS, grad_bytes=grad_bytes, rounds=micro_batches)


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_torchtitan_keeps_the_norm_and_output_gathered_through_backward(micro_batches):
    """Not modelled (symllm gathers every weight twice a round): torchtitan's apply_fsdp does not reshard its last
    unit, the final norm and the output (d + V·d = 2,080 parameters here), after forward, so each micro-batch
    gathers them once: FSDP2 then sends one bf16 ring share of them a micro-batch fewer, 2·2080 - 2·2080 // 4 bytes
    (for Llama 3.1 8B 525,340,672 of 8,030,261,248 parameters: 1.6% of a round's bytes)."""
    gathers, scatters, sent = _fsdp2_sent("float32", micro_batches, torchtitan=True)
    units = TINY["n_layers"] + 2  # the embedding, 3 blocks, [norm, output] (the root holds none of its own)
    assert (gathers, scatters) == ((2 * units - 1) * micro_batches, units * micro_batches)
    head = 2 * (TINY["dim"] + TINY["vocab_size"] * TINY["dim"])
    assert sent == _dp(_tiny(), RANKS, grad_bytes=4, rounds=micro_batches) - micro_batches * (head - head // RANKS)
