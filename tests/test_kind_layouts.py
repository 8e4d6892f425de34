"""Each kind of quantity in its own engine's tensor-parallel layout (symllm.costs.layouts): under an inference
``--engine`` (MLC, gpt-fast, lmdeploy, vLLM: none of them trains) the training quantities (training states,
activations, training peak, the bytes sent, the training step) are the default training engine's, Megatron's, laid out
as it lays the model out (the embedding split over the vocabulary, the head over its columns: Megatron-LM's
``VocabParallelEmbedding`` and ``ColumnParallelLinear`` lm_head), while the inference quantities (weights, inference
peak, prefill and decode) stay in the inference engine's layout (tests/test_vocab_layouts.py reads MLC's, gpt-fast's
and lmdeploy's code for theirs).

Llama 2 70B (meta-llama/Llama-2-70b-hf config.json): hidden 8,192, intermediate 28,672, 80 layers, 64 query heads and
8 key/value heads of 128, a vocabulary of 32,000, untied. By hand, tensor rank 0 of 4 holds a quarter of each layer's
projections, ``(2·8192·8192 + 2·8192·1024 + 3·8192·28672)/4 = 855,638,016/4 = 213,909,504``, and its two norms whole,
``2·8192``: 213,925,888 a layer, 17,114,071,040 for 80; the final norm, 8,192; and the embedding and the head, each
``32000·8192 = 262,144,000`` parameters, split over the 4 ranks (65,536,000 each) in Megatron's layout, whole
(262,144,000 each) in MLC's: 17,245,151,232 parameters a rank in the first, 17,638,367,232 in the second.
Mixed-precision AdamW at ZeRO 0 keeps 16 bytes a parameter (2 bf16 weights, 2 gradient, 12 fp32 master weight and
moments: Rajbhandari et al. 2020, ZeRO, section 3.1): 275,922,419,712 bytes of training states a rank.
"""
from __future__ import annotations

import json

import pytest

TP = 4
LAYER = (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) // 4 + 2 * 8192
VOCAB = 32_000 * 8192
MEGATRON_RANK = 80 * LAYER + 8192 + 2 * VOCAB // TP
MLC_RANK = 80 * LAYER + 8192 + 2 * VOCAB
TRAINING = ("training_states", "activations", "training_peak")
INFERENCE_ENGINES = ("mlc", "gpt-fast", "lmdeploy")


def _count(cli, *extra) -> dict:
    r = cli(["count", "llama2-70b", "--tp", str(TP), "--json", *extra])
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_the_hand_count():
    """The arithmetic of the docstring, written out."""
    assert VOCAB == 262_144_000 and LAYER == 213_925_888
    assert (MEGATRON_RANK, MLC_RANK) == (17_245_151_232, 17_638_367_232)
    assert 16 * MEGATRON_RANK == 275_922_419_712


@pytest.mark.parametrize("engine", INFERENCE_ENGINES)
def test_training_figures_under_an_inference_engine_are_megatron_s(cli, engine):
    """``count --tp 4 --engine E`` for an inference engine gives the training states, activations, training peak and
    bytes sent that ``--engine megatron`` gives at the same tp, and without an engine; its training states are the
    hand count's (the vocabulary split over the ranks), while its weights are its own layout's (MLC, gpt-fast and
    lmdeploy keep the embedding whole; lmdeploy holds the head whole too)."""
    ours, megatron, plain = _count(cli, "--engine", engine), _count(cli, "--engine", "megatron"), _count(cli)
    for kind in TRAINING:
        assert ours["memory_per_gpu"][kind] == megatron["memory_per_gpu"][kind] == plain["memory_per_gpu"][kind], kind
    assert ours["comm"] == megatron["comm"] == plain["comm"]
    assert ours["memory_per_gpu"]["training_states"] == 16 * MEGATRON_RANK
    assert ours["params"]["per_gpu"] == MLC_RANK and megatron["params"]["per_gpu"] == MEGATRON_RANK
    assert ours["memory_per_gpu"]["weights"] == 2 * MLC_RANK  # (inference: the engine's own layout, as before)
    assert (ours["tp_layout"], ours["training_tp_layout"]) == (engine, "transformers")
    assert "tp_layout" not in megatron and "training_tp_layout" not in megatron


def test_training_times_under_mlc_are_megatron_s(cli):
    """With an accelerator, the training step's bound and expected time, tokens/s and MFU under ``--engine mlc`` are
    ``--engine megatron``'s (Megatron's conventions and layout both), while the decode step stays MLC's own (its whole
    head streamed, its conventions): Llama 2 7B at tp 4 on H100s, where a training step fits."""
    base = ["count", "llama2-7b", "--tp", str(TP), "--gpu", "h100-sxm", "--json"]
    mlc, megatron = (json.loads(cli(base + ["--engine", e]).out)["time"] for e in ("mlc", "megatron"))
    assert mlc["expected"]["training_engine"] == megatron["expected"]["training_engine"] == "megatron"
    assert mlc["training_step_s"] == megatron["training_step_s"] is not None
    for key in ("training_step_s", "training_tokens_per_s_per_gpu", "mfu"):
        assert mlc["expected"][key] == megatron["expected"][key], key
    assert mlc["decode_token_bytes"] > megatron["decode_token_bytes"]  # MLC streams its whole lm_head


def test_count_json_sweep_and_the_api_agree_under_mlc(cli):
    """``sweep --engine mlc`` gives count --json's per-GPU figures of both kinds, and so does the Python API
    (``symllm.workload``)."""
    import symllm
    quantities = ("params_per_gpu", "weights_per_gpu", "inference_peak_per_gpu", "training_states_per_gpu",
                  "activations_per_gpu", "training_peak_per_gpu", "comm_tp")
    r = cli(["sweep", "--base", "llama2-70b", "--tp", str(TP), "--engine", "mlc", "--quantity", ",".join(quantities),
             "--format", "jsonl"])
    assert r.code == 0, r.err
    row = json.loads(r.out.splitlines()[0])
    counted, api = _count(cli, "--engine", "mlc"), symllm.workload("llama2-70b", tp=TP, engine="mlc")
    for out in (counted, api):
        assert row["params_per_gpu"] == out["params"]["per_gpu"]
        assert row["comm_tp"] == out["comm"]["tp"]
        for q in quantities[1:-1]:
            assert row[q] == out["memory_per_gpu"][q.removesuffix("_per_gpu")], q
    assert row["training_states_per_gpu"] == 16 * MEGATRON_RANK


def test_a_training_plan_under_mlc_is_megatron_s(cli):
    """``plan --train --engine mlc`` ranks the layouts ``--engine megatron`` ranks, with the same peaks and times, and
    names the training layout; a serving plan under MLC keeps MLC's."""
    def plan(*extra):
        r = cli(["plan", "llama2-7b", "--gpus", "8xh100-sxm", "--json", *extra])
        assert r.code == 0, r.err
        return json.loads(r.out)
    mlc, megatron = plan("--train", "--engine", "mlc"), plan("--train", "--engine", "megatron")
    assert mlc["rows"] and mlc["rows"] == megatron["rows"]
    assert mlc["tp_layout"] == "transformers" and "tp_layout" not in megatron
    assert plan("--engine", "mlc")["tp_layout"] == "mlc"


def test_deepseek_v4_under_vllm_trains_in_transformers_plan(cli):
    """DeepSeek-V4 under ``--engine vllm`` keeps vLLM's own attention split for its weights (tests/test_dsv4_tp.py),
    and trains as without an engine (transformers' plan: vLLM trains nothing)."""
    base = ["count", "deepseek-v4-flash-base", "--tp", "8", "--json"]
    vllm, plain = (json.loads(cli(base + extra).out) for extra in (["--engine", "vllm"], []))
    for kind in TRAINING:
        assert vllm["memory_per_gpu"][kind] == plain["memory_per_gpu"][kind], kind
    assert vllm["comm"] == plain["comm"]
    assert vllm["memory_per_gpu"]["weights"] < plain["memory_per_gpu"]["weights"]
    assert (vllm["tp_layout"], vllm["training_tp_layout"]) == ("vllm", "transformers")
    assert (plain["tp_layout"], plain["training_tp_layout"]) == ("transformers", "transformers")
