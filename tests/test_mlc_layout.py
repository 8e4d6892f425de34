"""MLC LLM's tensor-parallel layout (``--engine mlc``): the vocabulary's parts whole on every rank.

Read by hand in mlc-ai/mlc-llm 8e94910 (2023-10-04, the build of mlc-ai/llm-perf-bench's multi-GPU rows; read
2026-11-29), ``mlc_llm/relax_model/llama.py``: the weights a ``shard_strategy`` names are ``query_key_value_proj``
("shard_qkv", lines 238-239), ``o_proj`` ("shard_o_proj_k", 266-267), ``gate_up_proj`` ("shard_gate_up") and
``down_proj`` ("shard_mlp_k", 155-158); ``self.embed_tokens = Embedding(vocab_size_var, config.hidden_size, ...)``
(538) and ``self.lm_head = Linear(config.hidden_size, vocab_size_var, ...)`` (612) name none, and
``mlc_llm/relax_model/commons.py``'s ``create_shard_info_func`` passes a parameter whose ``shard_strategy`` is None
(85-86): every rank holds the embedding and the lm_head whole, looks its tokens up after
``ccl.broadcast_from_worker0(inputs)`` (llama.py 570-571) and computes every logit. The norms are whole on every
rank in every layout.

Llama 2 70B (meta-llama/Llama-2-70b-hf config.json): hidden 8,192, intermediate 28,672, 80 layers, 64 heads of 128,
8 key/value heads, a vocabulary of 32,000, untied. Its parts' parameters are transformers' own (``LlamaForCausalLM``
on the meta device); at TP 4 a rank holds a quarter of each layer's projections (each divides by 4) and, under MLC,
the embedding, the final norm and the lm_head whole; under transformers' plan a quarter of the vocabulary's parts.
"""
from __future__ import annotations

import json

from .conftest import requires

TP = 4
V, D = 32_000, 8_192
SHARDED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _rank0(vocabulary_whole: bool) -> int:
    """Parameters tensor rank 0 of 4 holds of Llama 2 70B, from transformers' parameter counts of the parts."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.LlamaConfig(vocab_size=V, hidden_size=D, intermediate_size=28_672, num_hidden_layers=80,
                                      num_attention_heads=64, num_key_value_heads=8, rms_norm_eps=1e-5,
                                      tie_word_embeddings=False)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    total = 0
    for name, p in model.named_parameters():
        part = name.split(".")[-2]
        if part in SHARDED:
            assert p.numel() % TP == 0, name
            total += p.numel() // TP
        elif part in ("embed_tokens", "lm_head"):
            assert p.numel() == V * D
            total += p.numel() if vocabulary_whole else p.numel() // TP
        else:  # the norms: whole on every rank
            assert part in ("input_layernorm", "post_attention_layernorm", "norm"), name
            total += p.numel()
    return total


def test_mlc_holds_the_vocabulary_whole_on_every_rank(cli):
    """``count llama2-70b --tp 4 --engine mlc`` gives each rank a quarter of the layers' projections and the whole
    embedding and lm_head (17,638,367,232 parameters, fp16 weights twice that); without an engine, transformers'
    plan (a quarter of them too): the difference is three quarters of the two V·d tables."""
    mlc, plan = _rank0(True), _rank0(False)
    assert mlc - plan == 2 * V * D * 3 // 4 == 393_216_000
    for extra, params in ((["--engine", "mlc"], mlc), ([], plan), (["--engine", "vllm"], plan)):
        r = cli(["count", "llama2-70b", "--tp", str(TP), "--json"] + extra)
        assert r.code == 0, r.err
        out = json.loads(r.out)
        assert (out["params"]["per_gpu"], out["memory_per_gpu"]["weights"]) == (params, 2 * params)


def test_mlc_streams_the_whole_lm_head_and_writes_every_logit(cli):
    """A batch-1 decode step under MLC reads three quarters of the lm_head more on each rank (fp16: 2·V·d·3/4 bytes)
    and writes every logit (fp16: 2·V·3/4 bytes more than a quarter of them); the embedding's look-up reads no
    table in either layout. On an A100 80GB PCIe (1,935 GB/s, NVIDIA's datasheet) that is 0.203 ms a token; the bound
    sends less, as a whole embedding needs no all-reduce (2·(n-1)/n·d·2 bytes a rank) and a whole lm_head no gather
    ((n-1)/n·V·2): 72,576 bytes at PCIe 4.0 x16's 32 GB/s, 2.27 µs, so the step is 0.201 ms longer."""
    base = ["count", "llama2-70b", "--tp", str(TP), "--gpu", "a100-80gb-pcie", "--json"]
    plan, mlc = (json.loads(cli(base + extra).out)["time"] for extra in ([], ["--engine", "mlc"]))
    more = 2 * V * D * 3 // 4 + 2 * V * 3 // 4
    assert mlc["decode_token_bytes"] - plan["decode_token_bytes"] == more == 393_264_000
    sent = 2 * (TP - 1) * D * 2 // TP + (TP - 1) * V * 2 // TP
    assert sent == 72_576
    assert round((mlc["decode_token_s"] - plan["decode_token_s"]) * 1e3, 4) == round((more / 1935e9 - sent / 32e9) * 1e3, 4)
    assert round(more / 1935e9 * 1e3, 3) == 0.203


def test_the_output_names_mlc_layout_under_mlc_only(cli):
    """Under ``--engine mlc`` count (text and JSON) and plan name MLC's layout (``tp_layout`` "mlc"); a Llama's output
    without an engine or under another names none (its layout is transformers' plan, every other engine's)."""
    r = cli(["count", "llama2-70b", "--tp", str(TP), "--gpu", "a100-80gb-pcie", "--engine", "mlc"])
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "per GPU (tp 4, pp 1, dp 1; MLC's layout; a training step)" in text
    assert "conventions, times in MLC's layout (docs/efficiency.md)." in text
    assert json.loads(cli(["count", "llama2-70b", "--tp", "4", "--engine", "mlc", "--json"]).out)["tp_layout"] == "mlc"
    plan = cli(["plan", "llama2-70b", "--gpus", "4xa100-80gb-pcie", "--engine", "mlc", "--json"])
    assert plan.code == 0, plan.err
    assert json.loads(plan.out)["tp_layout"] == "mlc"
    for extra in ([], ["--engine", "vllm"], ["--engine", "sglang"], ["--engine", "hf"]):
        r = cli(["count", "llama2-70b", "--tp", str(TP), "--gpu", "a100-80gb-pcie"] + extra)
        assert r.code == 0, r.err
        assert "layout" not in r.out
        assert "tp_layout" not in json.loads(cli(["count", "llama2-70b", "--tp", "4", "--json"] + extra).out)


def test_a_sweep_under_mlc_gives_count_s_per_gpu_figures(cli):
    """``sweep --engine mlc --tp 4`` gives the per-GPU parameters and weights count gives (the hand count above), and
    says on stderr which layout they are in."""
    r = cli(["sweep", "--base", "llama2-70b", "--tp", str(TP), "--quantity", "params_per_gpu,weights_per_gpu",
             "--format", "jsonl", "--engine", "mlc"])
    assert r.code == 0, r.err
    assert "symllm: sweep: llama2-70b: per-GPU quantities in MLC's layout\n" in r.err
    row = json.loads(r.out.splitlines()[0])
    counted = json.loads(cli(["count", "llama2-70b", "--tp", str(TP), "--engine", "mlc", "--json"]).out)
    assert (row["params_per_gpu"], row["weights_per_gpu"]) == (counted["params"]["per_gpu"],
                                                               counted["memory_per_gpu"]["weights"])
    assert row["params_per_gpu"] == _rank0(True)
