"""Each engine's tensor-parallel layout of the vocabulary's parts (symllm.arch.components.embeddings.VOCABULARY),
against transformers' parts on the meta device and hand counts.

MLC LLM (``--engine mlc``), read by hand in mlc-ai/mlc-llm 8e94910 (2023-10-04, the build of mlc-ai/llm-perf-bench's
multi-GPU rows; read 2026-11-29), ``mlc_llm/relax_model/llama.py``: the weights a ``shard_strategy`` names are
``query_key_value_proj`` ("shard_qkv", lines 238-239), ``o_proj`` ("shard_o_proj_k", 266-267), ``gate_up_proj``
("shard_gate_up") and ``down_proj`` ("shard_mlp_k", 155-158); ``self.embed_tokens = Embedding(vocab_size_var,
config.hidden_size, ...)`` (538) and ``self.lm_head = Linear(config.hidden_size, vocab_size_var, ...)`` (612) name none,
and ``mlc_llm/relax_model/commons.py``'s ``create_shard_info_func`` passes a parameter whose ``shard_strategy`` is None
(85-86): every rank holds the embedding and the lm_head whole, looks its tokens up after
``ccl.broadcast_from_worker0(inputs)`` (llama.py 570-571) and computes every logit.

gpt-fast (``--engine gpt-fast``), pytorch-labs/gpt-fast tp.py (the same at c5d3454, 2023-12-16, the README's
tensor-parallel table, and at c62c8f1, its last change; read 2026-11-29): ``apply_tp`` shards each block's attention
(``wqkv`` colwise, ``wo`` rowwise) and feed-forward (``w1``, ``w3`` colwise, ``w2`` rowwise) and all-reduces their
outputs; ``tok_embeddings`` and ``output`` stay whole on every rank: no all-reduce after the look-up, no gather of the
logits.

lmdeploy's TurboMind (``--engine lmdeploy``) at v0.1.0 (InternLM/lmdeploy 477f2db8a, 2023-12-18; read 2026-11-29):
``LlamaWeight.cc`` holds ``tok_embeddings.weight`` whole on every rank and ``LlamaV2::embeddingLookup`` runs no
collective; it also allocates and loads the head's ``output.weight`` whole (``hidden_units_ * vocab_size_padded_``,
lines 86 and 105-107) on every rank, of which ``LlamaV2::postDecodeEmbedding`` multiplies the rank's
vocab_size_padded / tp rows before all-gathering the logits (the same at v0.2.0, b319dce67).

Llama 2 70B (meta-llama/Llama-2-70b-hf config.json): hidden 8,192, intermediate 28,672, 80 layers, 64 heads of 128,
8 key/value heads, a vocabulary of 32,000, untied. Its parts' parameters are transformers' own (``LlamaForCausalLM``
on the meta device); a rank holds 1/tp of each layer's projections (each divides by 4 and 8), the norms whole, and the
vocabulary's parts whole or 1/tp as the engine lays them out.
"""
from __future__ import annotations

import json
import pathlib

from .conftest import requires

TP = 4
V, D = 32_000, 8_192
SHARDED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _rank0(embedding_whole: bool, head_whole: bool, tp: int = TP) -> int:
    """Parameters tensor rank 0 of ``tp`` holds of Llama 2 70B, from transformers' parameter counts of the parts."""
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
            assert p.numel() % tp == 0, name
            total += p.numel() // tp
        elif part in ("embed_tokens", "lm_head"):
            assert p.numel() == V * D
            whole = embedding_whole if part == "embed_tokens" else head_whole
            total += p.numel() if whole else p.numel() // tp
        else:  # the norms: whole on every rank
            assert part in ("input_layernorm", "post_attention_layernorm", "norm"), name
            total += p.numel()
    return total


def test_mlc_holds_the_vocabulary_whole_on_every_rank(cli):
    """``count llama2-70b --tp 4 --engine mlc`` gives each rank a quarter of the layers' projections and the whole
    embedding and lm_head (17,638,367,232 parameters, fp16 weights twice that); without an engine, transformers'
    plan (a quarter of them too): the difference is three quarters of the two V·d tables."""
    mlc, plan = _rank0(True, True), _rank0(False, False)
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
    """Under ``--engine mlc`` count (text and JSON) and a serving plan name MLC's layout for the inference figures
    (``tp_layout`` "mlc") and transformers' plan for the training ones (``training_tp_layout``: MLC trains nothing, its
    training step is Megatron's, tests/test_kind_layouts.py); a Llama's output without an engine or under another
    names none (its layout is transformers' plan, every other engine's)."""
    r = cli(["count", "llama2-70b", "--tp", str(TP), "--gpu", "a100-80gb-pcie", "--engine", "mlc"])
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "per GPU (tp 4, pp 1, dp 1; a training step)" in text
    assert ("training_states, activations, training_peak and the bytes sent in transformers' plan (the "
            "training engine's); the other rows in MLC's layout (the inference engine's)") in text
    assert ("conventions, times in MLC's layout (inference), transformers' plan (training) "
            "(docs/efficiency.md).") in text
    out = json.loads(cli(["count", "llama2-70b", "--tp", "4", "--engine", "mlc", "--json"]).out)
    assert (out["tp_layout"], out["training_tp_layout"]) == ("mlc", "transformers")
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
    assert ("symllm: sweep: llama2-70b: inference per GPU in MLC's layout\n"
            "symllm: sweep: llama2-70b: training per GPU in transformers' plan\n") in r.err
    row = json.loads(r.out.splitlines()[0])
    counted = json.loads(cli(["count", "llama2-70b", "--tp", str(TP), "--engine", "mlc", "--json"]).out)
    assert (row["params_per_gpu"], row["weights_per_gpu"]) == (counted["params"]["per_gpu"],
                                                               counted["memory_per_gpu"]["weights"])
    assert row["params_per_gpu"] == _rank0(True, True)


def test_a_sweep_of_whole_model_quantities_names_no_layout(cli):
    """A sweep that asks no per-GPU quantity names no layout: ``params`` and ``weights`` are the whole model's, the
    same under every engine: Llama 2 70B's published total (tests/data/published_params.json: Together AI's
    parameter table and the Hub's safetensors metadata), at 2 bytes each."""
    total = json.loads((pathlib.Path(__file__).parent / "data" / "published_params.json").read_text())["llama2-70b"]
    for engine in ("mlc", "gpt-fast", "lmdeploy"):
        r = cli(["sweep", "--base", "llama2-70b", "--tp", str(TP), "--quantity", "params,weights",
                 "--format", "jsonl", "--engine", engine])
        assert r.code == 0, r.err
        assert "layout" not in r.err
        row = json.loads(r.out.splitlines()[0])
        assert (row["params"], row["weights"]) == (total["total"], 2 * total["total"])


def test_gpt_fast_holds_and_streams_the_vocabulary_whole(cli):
    """``count llama2-70b --tp 8 --engine gpt-fast`` (the README's TP 8 row): each rank holds an eighth of the layers'
    projections and the whole embedding and output (the difference from transformers' plan: seven eighths of the two
    V·d tables); a bf16 batch-1 decode step reads seven eighths of the output more (2·V·d·7/8 bytes; the look-up reads
    no table in either layout) and writes every logit (2·V·7/8 bytes more)."""
    whole, plan = _rank0(True, True, 8), _rank0(False, False, 8)
    assert whole - plan == 2 * V * D * 7 // 8 == 458_752_000
    base = ["count", "llama2-70b", "--tp", "8", "--gpu", "a100-80gb", "--json"]
    ours, theirs = (json.loads(cli(base + extra).out) for extra in (["--engine", "gpt-fast"], []))
    assert (ours["params"]["per_gpu"], ours["memory_per_gpu"]["weights"]) == (whole, 2 * whole)
    assert theirs["params"]["per_gpu"] == plan
    more = ours["time"]["decode_token_bytes"] - theirs["time"]["decode_token_bytes"]
    assert more == 2 * V * D * 7 // 8 + 2 * V * 7 // 8 == 458_808_000
    assert ours["tp_layout"] == "gpt-fast" and "tp_layout" not in theirs


def test_lmdeploy_holds_both_tables_whole_and_reads_a_share_of_the_head(cli):
    """``count llama2-70b --tp 4 --engine lmdeploy`` (the TurboMind TP 4 row): every rank holds the whole embedding
    and the head's whole table (LlamaWeight.cc loads ``output.weight`` whole into ``hidden_units_ *
    vocab_size_padded_`` on each rank), three quarters of each V·d more than transformers' plan, 17,638,367,232
    parameters a rank (fp16 weights twice that); a decode step's bytes are the plan's: the look-up reads no table,
    and ``postDecodeEmbedding`` multiplies only the rank's quarter of the head's rows (2·V·d/4 bytes) and writes a
    quarter of the logits either way."""
    ours_params, plan = _rank0(True, True), _rank0(False, False)
    assert ours_params - plan == 2 * V * D * 3 // 4 == 393_216_000
    assert ours_params == 17_638_367_232
    base = ["count", "llama2-70b", "--tp", str(TP), "--gpu", "a100-80gb", "--json"]
    ours, theirs = (json.loads(cli(base + extra).out) for extra in (["--engine", "lmdeploy"], []))
    assert (ours["params"]["per_gpu"], ours["memory_per_gpu"]["weights"]) == (ours_params, 2 * ours_params)
    assert theirs["params"]["per_gpu"] == plan
    assert ours["time"]["decode_token_bytes"] == theirs["time"]["decode_token_bytes"]
    # by hand, fp16, batch 1 at the default 2,048 cached positions: the weights the rank multiplies (its quarter of
    # the layers' projections, the norms, the head's quarter; the look-up reads none), the KV cache read and the new
    # token's written (2 tensors · 80 layers · 2 key/value heads a rank · 128 · 2 bytes a position, 2,049
    # positions) and a quarter of the logits written
    weights_read = _rank0(False, False) - V * D // TP  # the plan's rank less its quarter of the embedding
    assert ours["time"]["decode_token_bytes"] == 2 * weights_read + 2 * 80 * 2 * 128 * 2 * 2049 + 2 * V // TP
    assert ours["tp_layout"] == "lmdeploy"


def test_a_step_runs_the_collectives_its_layout_holds():
    """A Llama-2-70B forward at TP 4 without a pipeline (80 layers: two residual all-reduces each): transformers' plan
    adds the split embedding's all-reduce and the logits' gather (161 and 1); gpt-fast and MLC neither (160, 0);
    TurboMind the gather only (160, 1)."""
    from symllm.arch.resolved import spec
    from symllm.costs import parallel
    from symllm.costs.collectives import step_collectives
    llama = spec("llama2-70b").model()
    counts = {}
    for engine in (None, "vllm", "mlc", "gpt-fast", "lmdeploy"):
        stage = parallel.stages(parallel.layout(llama, engine))[0]
        got = step_collectives(stage)
        counts[engine] = tuple(int(got[k].subs({x: {"L": 80, "N_p": 1}[x.name] for x in got[k].free_symbols}))
                               for k in ("residual", "logits"))
    assert counts == {None: (161, 1), "vllm": (161, 1), "mlc": (160, 0), "gpt-fast": (160, 0), "lmdeploy": (160, 1)}


def test_a_sweep_under_gpt_fast_gives_count_s_per_gpu_figures(cli):
    """``sweep --engine gpt-fast --tp 8`` gives the per-GPU parameters count gives (the hand count above) and says on
    stderr which layout they are in."""
    r = cli(["sweep", "--base", "llama2-70b", "--tp", "8", "--quantity", "params_per_gpu,weights_per_gpu",
             "--format", "jsonl", "--engine", "gpt-fast"])
    assert r.code == 0, r.err
    assert ("symllm: sweep: llama2-70b: inference per GPU in gpt-fast's layout\n"
            "symllm: sweep: llama2-70b: training per GPU in transformers' plan\n") in r.err
    row = json.loads(r.out.splitlines()[0])
    assert row["params_per_gpu"] == _rank0(True, True, 8)
