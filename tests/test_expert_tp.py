"""Routed experts under tensor parallelism (``--expert-tp``, symllm.costs.parallel): split over the tensor ranks
by default, as the engines hold them, or whole.

Expected numbers are independent of symllm:

* hand arithmetic, written out below, of tensor rank 0's parameters of Mixtral-8x7B (tp 2) and Qwen3-235B-A22B
  (tp 4): the attention and the head split as torch's DTensor plan for LLaMA splits them, every routed expert
  shaped as vLLM's ``FusedMoE`` creates it per rank (vllm/model_executor/layers/fused_moe/layer.py:
  ``intermediate_size_per_partition = intermediate_size // self.tp_size``; ``w13_weight`` ``(num_experts,
  2 * intermediate_size_per_partition, hidden_size)``, ``w2_weight`` ``(num_experts, hidden_size,
  intermediate_size_per_partition)``), the router whole on each rank;
* DTensor's local shards of stacked experts under a fake process group: tests/test_expert_parallel.py
  (``test_per_gpu_params_and_states_equal_torch_shards``, both layouts), and transformers' own fused expert
  tensors split by hand: tests/test_moe_families.py (``test_per_gpu_params_of_a_preset_by_hand``).
"""
import json

import pytest

import symllm
from symllm.arch.config import preset_info
from symllm.errors import SymllmError


def test_mixtral_tp2_by_hand():
    """Mixtral-8x7B at tp 2: V 32000, d 4096, 32 layers, 32 query and 8 KV heads of 128, 8 experts of width
    14336 (7168 a rank, vLLM's intermediate_size_per_partition)."""
    embedding = head = 32000 // 2 * 4096
    attention = 4096 * (32 * 128 // 2) * 2 + 4096 * (8 * 128 // 2) * 2   # wq, wo; wk, wv
    experts = 8 * (2 * 7168 * 4096 + 4096 * 7168)                        # w13, w2 of each expert
    layer = attention + 2 * 4096 + 4096 * 8 + experts                     # two norms, the router
    expected = embedding + head + 4096 + 32 * layer
    assert expected == 23_352_053_760
    assert symllm.workload("mixtral-8x7b", tp=2)["params"]["per_gpu"] == expected
    # kept whole, each rank holds every expert's 3·4096·14336
    whole = symllm.workload("mixtral-8x7b", tp=2, expert_tp="whole")["params"]["per_gpu"]
    assert whole - expected == 32 * 8 * 3 * 4096 * (14336 - 7168)


def test_qwen3_235b_tp4_by_hand():
    """Qwen3-235B-A22B at tp 4: V 151936, d 4096, 94 layers, 64 query and 4 KV heads of 128 (one KV head a
    rank) with q/k norms, 128 experts of width 1536 (384 a rank), untied head."""
    embedding = head = 151936 // 4 * 4096
    attention = 4096 * (64 * 128 // 4) * 2 + 4096 * (4 * 128 // 4) * 2 + 2 * 128
    experts = 128 * (2 * 384 * 4096 + 4096 * 384)
    layer = attention + 2 * 4096 + 4096 * 128 + experts
    expected = embedding + head + 4096 + 94 * layer
    assert expected == 58_810_969_600
    w = symllm.workload("qwen3-235b-a22b", tp=4, dtype="fp8")
    assert w["params"]["per_gpu"] == expected
    assert w["memory_per_gpu"]["weights"] == expected  # one byte a weight (fp8, no scales: --dtype)
    # about a quarter of the whole model (the norms and routers are whole on every rank)
    assert 4 * expected - symllm.params("qwen3-235b-a22b")["total"] == 3 * (4096 + 94 * (2 * 4096 + 256 + 4096 * 128))


def test_split_experts_flops_and_comm_per_gpu():
    """A rank runs its share of every routed expert's matmuls (half of them at tp 2, as the other half of each
    expert's width is the other rank's), and sums the partial outputs: one forward all-reduce and one backward
    (the input gradient) per MoE layer more than with the experts whole, each of the b·s·d residual stream in
    bf16, of which a ring sends 2·(2-1)/2."""
    opts = dict(seq=64, batch=2)
    split = symllm.workload("mixtral-8x7b", tp=2, **opts)
    whole = symllm.workload("mixtral-8x7b", tp=2, expert_tp="whole", **opts)
    assert whole["comm"]["tp"] - split["comm"]["tp"] == -32 * 2 * (2 * 64 * 4096 * 2)
    # activations saved per rank: each routed row keeps 3 x d_ff of its experts' own (w1, w3 and w2's input)
    rows = 2 * 64 * 2  # b·s·k
    assert whole["memory_per_gpu"]["activations"] - split["memory_per_gpu"]["activations"] == \
        32 * 2 * rows * 3 * (14336 - 7168)


def _config(tmp_path, width: int) -> str:
    raw = {**preset_info("qwen3-30b-a3b")["config"], "moe_intermediate_size": width}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return str(path)


def test_a_width_the_ranks_do_not_divide_is_refused_in_one_line(cli, tmp_path):
    """vLLM and SGLang assert intermediate_size % tp_size == 0 in FusedMoE: count refuses it (exit 2, one line
    naming tp), sweeps and plan skip it, and --expert-tp whole counts it."""
    path = _config(tmp_path, 770)  # 770 = 2·385: splits over 2 ranks, not over 4
    r = cli(["count", path, "--tp", "4"])
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert r.err.startswith("symllm: error: tp: 4 ranks do not divide the 770 columns of each routed expert")
    assert cli(["count", path, "--tp", "2"]).code == 0
    assert cli(["count", path, "--tp", "4", "--expert-tp", "whole"]).code == 0
    with pytest.raises(SymllmError, match="tp: 4 ranks do not divide the 770 columns"):
        symllm.workload(path, tp=4)
    r = cli(["count", "mixtral-8x7b", "--tp", "2", "--expert-tp", "halves"])
    assert r.code == 2 and r.err.startswith("symllm: error: expert_tp: unknown 'halves' (known: split, whole, tp_x_dp)")


def test_plan_tries_only_widths_that_split(tmp_path):
    """plan's tensor-parallel choices leave out a tp that does not divide the experts' width (split), and keep
    it when the experts stay whole."""
    from symllm.arch.resolved import spec
    from symllm.costs.workloads import Workload
    from symllm.studies.plans import _tp_choices
    s = spec(_config(tmp_path, 770))
    assert 4 not in _tp_choices(s) and 2 in _tp_choices(s)
    assert 4 in _tp_choices(s, Workload(expert_tp="whole"))


def test_count_says_how_the_experts_lie(cli):
    """count's per-GPU table names the layout of a mixture's experts under tp (and a dense model's does not)."""
    split = cli(["count", "mixtral-8x7b", "--tp", "2"]).out
    assert "per GPU (tp 2, pp 1, dp 1; routed experts split; a training step)" in split
    whole = cli(["count", "mixtral-8x7b", "--tp", "2", "--expert-tp", "whole"]).out
    assert "per GPU (tp 2, pp 1, dp 1; routed experts whole; a training step)" in whole
    assert "per GPU (tp 2, pp 1, dp 1; a training step)" in cli(["count", "llama3.1-8b", "--tp", "2"]).out


def test_vllm_s_spread_needs_tp_x_dp_to_divide_each_expert(cli):
    """vLLM without --ep at dp > 1 splits each expert's width over --tp x --dp ranks, and its FusedMoE asserts the
    ranks divide it: Mixtral's 14,336 columns (2^11 x 7) over dp 3 (14,336 % 3 = 2) and Gemma 4 26B-A4B's 704
    (2^6 x 11) over tp 2 x dp 64 = 128 (704 % 128 = 64) are refused in one line naming the remedy (vLLM's --ep over the
    128 ranks, which divide its 128 experts; Mixtral's 8 experts over 3 ranks do not: each replica on its own), and
    plan on 3 H100s under vLLM never lists Mixtral at dp 3 without expert parallelism."""
    assert 14336 % 3 and 704 % 128 and 128 % 128 == 0 and 8 % 3
    r = cli(["count", "mixtral-8x7b", "--dp", "3", "--gpu", "h100-sxm", "--serve", "--engine", "vllm", "--seq", "1000"])
    assert r.code == 2 and r.err == ("symllm: error: tp: 1 x dp 3 ranks do not divide an expert's 14336 columns "
                                     "(--expert-tp split)\n")
    r = cli(["count", "gemma-4-26b-a4b", "--tp", "2", "--dp", "64", "--gpu", "h100-sxm", "--serve", "--engine", "vllm",
             "--seq", "1000"])
    assert r.code == 2 and "tp: 2 x dp 64 ranks do not divide an expert's 704 columns (--ep 128: experts whole)" in r.err
    rows = json.loads(cli(["plan", "mixtral-8x7b", "--gpus", "3xh100-sxm", "--engine", "vllm", "--seq", "1000",
                           "--gen", "100", "--json"]).out)["rows"]
    assert rows and all(not (r["dp"] == 3 and r["ep"] == 1) for r in rows)
