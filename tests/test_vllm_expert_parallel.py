"""Serving under vLLM's expert parallelism as vLLM lays it out (symllm.costs.expert_layout):
``--enable-expert-parallel`` makes the expert-parallel group every tensor rank of every data-parallel rank (``ep_size = tp x dp``) and gives
each rank whole experts (the MoE layer's ``tp_size`` 1), the attention split over ``--tp`` only
(``FusedMoEParallelConfig.make``, vllm/model_executor/layers/fused_moe/config.py, vLLM 0.33.0's wheel, read
2026-11-29). Training engines keep symllm's own layout (ep carved out of dp, experts split over tp).

The hand counts read Mixtral-8x7B's config.json (symllm/presets/mixtral-8x7b.json, the published file): hidden
4096, intermediate 14336, 32 layers, 32 query heads and 8 key/value heads of 128, 8 experts (2 a token), vocabulary
32000, untied head; bf16 weights (2 bytes).
"""
from __future__ import annotations

import contextlib
import io
import json
from functools import lru_cache

import pytest

import symllm
from symllm.cli import main
from symllm.costs import serving
from symllm.errors import SymllmError

D, I, L, H, KV, DH, E, V = 4096, 14336, 32, 32, 8, 128, 8, 32000
MIB = 2 ** 20


def _weights_by_hand(tp: int, experts_a_rank: int, expert_width: int) -> int:
    """Rank 0's bf16 weights: q and o (D x H·DH), k and v (D x KV·DH) over tp, the router (D x E) and two
    norms whole, the rank's experts (gate, up, down: 3 x D x width), the embedding and head over tp (vocabulary
    parallel), the final norm."""
    attention = (2 * D * H * DH + 2 * D * KV * DH) // tp
    layer = attention + D * E + 2 * D + experts_a_rank * 3 * D * expert_width
    return 2 * (L * layer + 2 * V * D // tp + D)


def _serve(**layout):
    return serving.capacity("mixtral-8x7b", gpu="h100-sxm", seq=4096, **layout)


def test_vllm_ep_over_tp_and_dp_holds_whole_experts():
    """TP 2 with expert parallelism over 8 GPUs (DP 4): 8 experts over 8 ranks, one whole expert a rank
    (12,881,240,064 bytes), the attention over the 2 tensor ranks; TP 8 with EP on one node the same expert and an
    eighth of the attention (11,677,999,104 bytes)."""
    assert _weights_by_hand(2, 1, I) == 12_881_240_064
    assert _serve(tp=2, dp=4, ep=8, engine="vllm")["weights"] == 12_881_240_064
    assert _serve(tp=8, ep=8, engine="vllm")["weights"] == _weights_by_hand(8, 1, I) == 11_677_999_104
    # without expert parallelism vLLM splits every expert's width over the tensor ranks
    assert _serve(tp=2, engine="vllm")["weights"] == _weights_by_hand(2, E, I // 2)


def test_vllm_ep_kv_and_workspace():
    """A token's keys and values stay the tensor rank's (2 x 32 layers x 8/2 heads x 128 x 2 bytes); the fused-MoE
    workspace holds whole experts' rows (N = 2 x 14336, not over tp: cache13 M·k·max(N, D) and cache2 M·k·N/2)."""
    r = _serve(tp=2, dp=4, ep=8, engine="vllm")
    assert r["kv_bytes_per_token"] == 2 * L * (KV // 2) * DH * 2 == 65_536
    m, k, n = r["profile_tokens"], 2, 2 * I
    assert r["moe_workspace"] == (m * k * max(n, D) + m * k * n // 2) * 2


def test_nccl_counted_per_group():
    """vLLM's groups of more than one rank each hold a PyNccl communicator of 688 MiB (initialize_model_parallel):
    TP 2 its tensor group's, torch's tensor group (the logits' all-gather) and the expert group's of TP x DP = 2
    ranks (3, as before); a pipeline of 2 on one tensor rank its pipeline group's (1); TP 2 x DP 4 under EP adds the
    data-parallel group's (4)."""
    assert _serve(tp=2, engine="vllm")["nccl"] == 3 * 688 * MIB
    assert _serve(pp=2, engine="vllm")["nccl"] == 688 * MIB
    assert _serve(tp=2, dp=4, ep=8, engine="vllm")["nccl"] == 4 * 688 * MIB
    assert _serve(engine="vllm")["nccl"] == 0


def test_nccl_of_a_dense_model_and_of_a_mixture_over_replicas():
    """vLLM 0.33.0 (its wheel, vllm/distributed/parallel_state.py initialize_model_parallel: "Don't create EP group
    for dense models", under model_config.is_moe; vllm/v1/engine/core.py: "Non-MoE DP ranks are completely
    independent", a MoE model's DP ranks one DPEngineCoreProc): a dense model at TP 2 holds its tensor group's
    PyNccl and torch's (2), at DP 4 still 2 (four engines of their own); Mixtral at TP 2 x DP 4 without expert
    parallelism the tensor group's two, the data-parallel group's and the expert group's of 8 ranks (4)."""
    dense = dict(gpu="h100-sxm", seq=4096, engine="vllm")
    assert serving.capacity("llama3.1-8b", tp=2, **dense)["nccl"] == 2 * 688 * MIB
    assert serving.capacity("llama3.1-8b", tp=2, dp=4, **dense)["nccl"] == 2 * 688 * MIB
    assert _serve(tp=2, dp=4, engine="vllm")["nccl"] == 4 * 688 * MIB
    assert _serve(dp=4, engine="vllm")["nccl"] == 2 * 688 * MIB  # the dp group and the expert group of 4


@pytest.mark.parametrize("layout, message", [
    (dict(tp=2, dp=4, ep=4, engine="vllm"), "ep: 4; vllm's expert parallelism (--enable-expert-parallel) spans "
                                            "--tp x --dp = 8 ranks: give --engine vllm --ep 8 or 1"),
    (dict(tp=2, dp=4, ep=8, expert_tp="split", engine="vllm"), "expert_tp: split; vllm's expert parallelism keeps "
                                                               "each routed expert whole"),
    (dict(tp=2, dp=4, ep=8), "ep: 8 expert-parallel ranks must divide the 4 data-parallel ranks (--dp); --tp x --dp "
                             "of them is vLLM's (--engine vllm)"),
])
def test_layouts_the_engine_cannot_run_are_refused(layout, message):
    with pytest.raises(SymllmError) as why:
        _serve(**layout)
    assert str(why.value).startswith(message) and "\n" not in str(why.value)


def test_refusal_on_the_command_line(cli):
    r = cli(["count", "mixtral-8x7b", "--serve", "--gpu", "h100-sxm", "--engine", "vllm", "--tp", "2", "--dp", "4",
             "--ep", "4"])
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert r.err.startswith("symllm: error: ep: 4; vllm's expert parallelism")


def test_training_engines_keep_their_layout():
    """Megatron's expert parallelism is carved out of dp, each expert's width split over tp (unchanged)."""
    w = symllm.Workload(tp=2, dp=4, ep=4, engine="megatron")
    assert w.expert_tp == "split"
    got = symllm.workload("mixtral-8x7b", tp=2, dp=4, ep=4, engine="megatron")["params"]["per_gpu"]
    assert got == _weights_by_hand(2, E // 4, I // 2) // 2


_EP = ["mixtral-8x7b", "--engine", "vllm", "--tp", "2", "--dp", "4", "--ep", "8", "--gpu", "h100-sxm"]
_NOTE = "training: not in vllm's expert-parallel layout (it serves only)"


def test_no_training_figure_in_vllms_layout():
    """vLLM serves only: its EP layout (8 ranks over 4 replicas) has no training step. Megatron's forms put in it
    give an expert-data-parallel group of N_d/N_e = 4/8 ranks and negative gradient traffic (sent: dp was
    -20,138,151,936 bytes); every per-GPU training figure is null instead, with the reason, the serving ones kept."""
    out = symllm.workload("mixtral-8x7b", tp=2, dp=4, ep=8, engine="vllm", gpu="h100-sxm")
    per_gpu = out["memory_per_gpu"]
    assert per_gpu["weights"] == _weights_by_hand(2, 1, I)
    assert [per_gpu[k] for k in ("training_states", "activations", "training_peak")] == [None] * 3
    assert set(out["comm"].values()) == {None}
    t = out["time"]
    assert "training_fits" not in t and t["fits"] is True
    assert t["training_step_s"] is None and t["mfu"] is None and t["expected"]["training_step_s"] is None
    assert out["training"] == {"reason": _NOTE}
    # symllm's own layout (Megatron's: ep carved out of dp) still answers them
    kept = symllm.workload("mixtral-8x7b", tp=2, dp=4, ep=4, engine="megatron")
    assert kept["comm"]["dp"] > 0 and "training" not in kept


def test_count_says_so_in_one_line(cli):
    r = cli(["count", *_EP])
    assert r.code == 0 and "-20,138,151,936" not in r.out
    per_gpu = r.out.split("per GPU (tp 2, pp 1, dp 4, ep 8", 1)[1]
    assert "sent:" not in per_gpu and "training_states" not in per_gpu and "training_peak" not in per_gpu
    assert "training step" not in per_gpu and "training tokens/s" not in per_gpu and "training peak" not in per_gpu
    assert r.out.count(_NOTE) == 1
    r = cli(["count", *_EP, "--json"])
    assert r.code == 0 and '"dp": null' in r.out and _NOTE in r.out


@pytest.mark.parametrize("argv, message", [
    (["report", *_EP], "ep: 8; report derives training, not in vllm's expert-parallel layout"),
    (["derive", "--model", *_EP, "--quantity", "comm"], f"quantity: comm; {_NOTE}"),
    (["sweep", "--base", *_EP[:-2], "--quantity", "comm_dp"], f"quantity: comm_dp; {_NOTE}"),
])
def test_training_requests_refused_in_vllms_layout(cli, argv, message):
    r = cli(argv)
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert r.err.startswith(f"symllm: error: {message}")


def test_training_plan_under_vllm_tries_no_expert_parallelism(cli):
    """Training under --engine vllm: vLLM's expert-parallel layout serves only (and at tp 1 x dp 32 its ep 8 or 16
    would be refused by vLLM's layout as a workload), so no training row has expert parallelism."""
    r = cli(["plan", "mixtral-8x7b", "--gpus", "32xh100-sxm", "--train", "--engine", "vllm", "--json"])
    assert r.code == 0
    rows = json.loads(r.out)["rows"]
    assert rows and {row.get("ep", 1) for row in rows} == {1}


_WORK = ["--seq", "1000", "--gen", "100", "--engine", "vllm"]


@lru_cache(maxsize=None)
def _plan() -> dict:
    """plan --json of Mixtral on 8 H100s under vLLM at 1,000 + 100 tokens, up to 64 a replica (one plan for every
    layout the test below reads): what the command line prints, read back."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["plan", "mixtral-8x7b", "--gpus", "8xh100-sxm", "--concurrency", "64", "--json", *_WORK])
    assert code in (None, 0)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("ep", [8, 1])
def test_plans_tp2_dp4_rows_are_counts_answers(cli, ep):
    """Serving plan under --engine vllm: vLLM's expert parallelism spans tp x dp ranks, so at tp 2 on 8 GPUs its only
    EP layout is tp 2 dp 4 ep 8 (plan had filtered the divisors of dp by (1, tp x dp) and never tried it at tp > 1),
    beside the layout without EP (ep 1: each expert over the tp x dp ranks). One answer: each row (plan --json) is
    count's at its layout (count --json and count --serve --json): the decode step's bound and expected time at the
    decode point (the row's batch, context 1,000 + 100), the sequences a replica holds and the figures under load at
    the row's batch as concurrency."""
    p = _plan()
    rows = [r for r in p["rows"] if (r["tp"], r["dp"]) == (2, 4)]
    assert sorted(r["ep"] for r in rows) == [1, 8]
    row = next(r for r in rows if r["ep"] == ep)
    layout = ["--tp", "2", "--dp", "4", "--ep", str(ep), "--gpu", "h100-sxm", "--json"]
    step = json.loads(cli(["count", "mixtral-8x7b", *layout, "--engine", "vllm", "--batch", str(row["batch"]),
                           "--seq", "1", "--context", "1100"]).out)["time"]
    assert row["decode_token_s"] == step["decode_token_s"]
    assert row["expected"]["decode_token_s"] == step["expected"]["decode_token_s"]
    serving = json.loads(cli(["count", "mixtral-8x7b", *layout, *_WORK, "--serve", "--concurrency",
                              str(row["batch"])]).out)["serving"]
    name = "tp 2 ep 8" if ep > 1 else "tp 2"
    assert p["sequences"][name] == int(serving["max_concurrency"]) >= row["batch"]
    for k in ("ttft_s", "itl_s", "output_tokens_per_s"):
        assert row["load"][k] == serving["load"][k], k


def test_vllm_without_ep_over_replicas_splits_each_expert_over_tp_x_dp():
    """vLLM 0.33.0 without --enable-expert-parallel at DP above 1 (FusedMoEParallelConfig.make: tp_size =
    flatten_tp_across_dp_and_pcp = dp x tp, ep_size 1; its docstring's "TP = 2, DP(PCP) = 2 and EP = False ... the
    tensors are sharded across 4 devices"): Mixtral at TP 2 x DP 4 holds an eighth of each expert's width
    (14336 / 8 = 1792) on each GPU and half the attention: by hand 2 x (32 x (attention/2 + router + norms + 8 x 3 x
    4096 x 1792) + head and embedding/2 + norm) = 12,881,240,064 bytes (8 eighths of an expert a layer hold as much
    as one whole one: the EP layout's figure); a token's keys and values are still the tensor rank's (65,536 bytes);
    the fused-MoE workspace's rows N = 2 x 14336 / 8. Given --expert-tp split, each replica is a server of its own
    (the experts over its 2 tensor ranks)."""
    r = _serve(tp=2, dp=4, engine="vllm")
    assert r["weights"] == _weights_by_hand(2, E, I // 8) == 12_881_240_064
    assert r["kv_bytes_per_token"] == 2 * L * (KV // 2) * DH * 2 == 65_536
    m, k, n = r["profile_tokens"], 2, 2 * I // 8
    assert r["moe_workspace"] == (m * k * max(n, D) + m * k * n // 2) * 2
    apart = _serve(tp=2, dp=4, expert_tp="split", engine="vllm")
    assert apart["weights"] == _weights_by_hand(2, E, I // 2) and apart["nccl"] == 3 * 688 * MIB
    assert r["kv_tokens"] > apart["kv_tokens"]
    # other engines keep symllm's layout: each replica's experts over its tensor ranks
    assert _serve(tp=2, dp=4, engine="sglang")["weights"] == _weights_by_hand(2, E, I // 2)
    w = symllm.workload("mixtral-8x7b", tp=2, dp=4, engine="vllm", gpu="h100-sxm")
    assert w["workload"]["expert_tp"] == "tp_x_dp" and w["memory_per_gpu"]["weights"] == 12_881_240_064
    assert w["training"] == {"reason": "training: not in vllm's layout of the experts over --tp x --dp ranks (it "
                                       "serves only)"}
    dense = symllm.workload("llama3.1-8b", tp=2, dp=4, engine="vllm", gpu="h100-sxm")
    assert dense["workload"]["expert_tp"] == "split" and "training" not in dense  # no experts to spread


@pytest.mark.parametrize("layout", [dict(tp=2, dp=4, expert_tp="tp_x_dp", engine="sglang"),
                                    dict(tp=2, expert_tp="tp_x_dp", engine="vllm")])
def test_tp_x_dp_given_where_no_engine_runs_it_is_refused(layout):
    with pytest.raises(SymllmError) as why:
        _serve(**layout)
    assert str(why.value).startswith("expert_tp: tp_x_dp; only vLLM spreads the experts over --tp x --dp ranks")


def test_count_names_the_experts_spread_over_tp_x_dp_in_words(cli):
    """count's per-GPU title says vLLM's layout without expert parallelism at dp 4 in words, not the option's value
    (each expert split over --tp x --dp = 8 ranks)."""
    r = cli(["count", "mixtral-8x7b", "--tp", "2", "--dp", "4", "--gpu", "h100-sxm", "--serve", "--engine", "vllm",
             "--seq", "1000", "--gen", "100"])
    assert r.code == 0 and "per GPU (tp 2, pp 1, dp 4; routed experts split over tp x dp)" in r.out
    assert "tp_x_dp" not in r.out
