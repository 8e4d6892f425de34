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
"""
from __future__ import annotations

import pytest

import symllm
from symllm.costs.figures import data

P = 8_030_261_248
N = 128
RING = 2 * P - (2 * P) // N             # bytes one rank sends in a ring of a bf16 copy: 15,935,049,664
BW = 0.7 * 8 * 50e9                      # 8 NICs a node at 0.7
LAT = 20e-6
WORK = dict(gpu="h100-sxm", engine="torchtitan", dp=N, zero_stage=3, seq=8192, batch=1, micro_batches=4)


def _step(**over) -> float:
    return symllm.workload("llama3.1-8b", **{**WORK, **over})["time"]["expected"]["training_step_s"]


def test_the_parameter_count_the_hand_arithmetic_reads():
    assert symllm.workload("llama3.1-8b", **WORK)["params"]["per_gpu"] == P


def test_torchtitan_gathers_twice_and_reduces_in_fp32_every_micro_batch(monkeypatch):
    """4 micro-batches: 4 x (2 gathers x 2 bytes + 1 reduce x 4 bytes) = 32 bytes a parameter's ring share
    in 4 calls, against 3 x 2 = 6 in one call without the engine's two fields: the step grows by
    0.2 x ((4 x 20 us + 32/2 x RING / BW) - (20 us + 3 x RING / BW)) = 0.14798 s."""
    with_fields = _step()
    engine = data()["engines"]["torchtitan"]
    monkeypatch.delitem(engine, "fsdp_per_micro_batch")
    monkeypatch.delitem(engine, "grad_reduce_bytes")
    plain = _step()
    new = 4 * LAT + 4 * (2 * 2 + 4) / 2 * RING / BW
    old = LAT + 3 * RING / BW
    assert with_fields - plain == pytest.approx(0.2 * (new - old), rel=1e-9)
    assert 0.2 * (new - old) == pytest.approx(0.14798, abs=1e-5)


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
