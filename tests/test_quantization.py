"""A config.json's quantization_config read whole (symllm.arch.quantization): the published blocks of real
checkpoints (tests/data/quantization_configs.json, each with its Hub id and where it was copied from) set the
weight format, and the bytes every door reports are the format's, checked against hand arithmetic written
out here from each format's layout, and against OpenAI's published checkpoint sizes of gpt-oss (model card:
gpt-oss-20b 12.8 GiB, gpt-oss-120b 60.8 GiB). The checkpoints compressed-tensors' and bitsandbytes' own CPU
packers write are in tests/test_checkpoints.py. Anything not understood is one line naming the key, exit 2.
"""
import json
from math import ceil
from pathlib import Path

import pytest
from hypothesis import given

import symllm
from symllm.arch import quantization
from symllm.arch.config import from_dict
from symllm.errors import SymllmError
from .strategies import quantization_configs

DATA = Path(__file__).parent / "data"
BLOCKS = {k: v for k, v in json.loads((DATA / "quantization_configs.json").read_text()).items() if k != "_about"}
PRESETS = Path(symllm.__file__).parent / "presets"

#: meta-llama/Llama-3.1-8B-Instruct's config.json (the architecture of the AWQ, NVFP4 and bnb checkpoints)
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
              "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": False,
              "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
              "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16", "vocab_size": 128256}
#: meta-llama/Llama-2-7b-chat-hf's config.json (the architecture of TheBloke's GPTQ)
LLAMA2_7B = {"architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
             "intermediate_size": 11008, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "tie_word_embeddings": False,
             "torch_dtype": "float16", "vocab_size": 32000}


def _linears(d, n_q, n_kv, d_h, d_ff):
    """(out rows o, row length r) of one LLaMA block's seven projections."""
    return [(n_q * d_h, d), (n_kv * d_h, d), (n_kv * d_h, d), (d, n_q * d_h), (d_ff, d), (d_ff, d), (d, d_ff)]


def _with(raw, key):
    return {**raw, "quantization_config": BLOCKS[key]["quantization_config"]}


def _preset(name):
    return json.loads((PRESETS / f"{name}.json").read_text())["config"]


def _write(tmp_path, raw) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return path


def test_published_blocks_name_their_formats():
    """Each published block reads as the format its checkpoint stores (what each method writes, by hand)."""
    want = {"awq": "awq", "gptq": "gptq", "fp8-block-deepseek": "fp8-block", "fp8-block-qwen3": "fp8-block",
            "mxfp4": "mxfp4", "bnb-nf4": "nf4", "bnb-int8": "int8", "nvfp4-modelopt": "nvfp4"}
    assert set(want) == set(BLOCKS)
    for key, fmt in want.items():
        assert quantization.read(BLOCKS[key]["quantization_config"])[0] == fmt, key
    from symllm.costs.formats import FORMATS
    assert set(quantization.SCHEMES.values()) <= set(FORMATS)  # the one table names only formats that exist


def _llama31_bytes(per_linear):
    """Llama-3.1-8B: seven projections per block in the format, embeddings, lm_head and norms in bf16."""
    d, V, L = 4096, 128256, 32
    bf16 = 2 * (2 * V * d + (2 * L + 1) * d)
    return bf16 + L * sum(per_linear(o, r) for o, r in _linears(d, 32, 8, 128, 14336))


def test_awq_config_sets_bytes_everywhere(cli, tmp_path):
    """hugging-quants' AWQ block on Llama-3.1-8B: count (text and --json), the Python API (path and dict),
    report's β_w and plan all price AutoAWQ's qweight (n/2), qzeros (r/128 · o/8 int32) and fp16 scales
    (r/128 · o), not bf16's 14.96 GiB."""
    want = _llama31_bytes(lambda o, r: o * r // 2 + (r // 128) * (o // 8) * 4 + (r // 128) * o * 2)
    path = _write(tmp_path, _with(LLAMA31_8B, "awq"))
    r = cli(["count", path, "--json"])
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["weight_format"]["format"] == "awq" and out["workload"]["weight_format"] == "awq"
    assert out["weight_format"]["bytes"] == out["memory"]["weights"] == want != 2 * 8030261248
    assert out["weight_format"]["source"].startswith("quantization_config: quant_method awq")
    text = cli(["count", path]).out
    assert "weights in awq, read from the config's quantization_config" in text
    assert f"weights in awq                        {want:,}" in text  # plain count shows the bytes too
    back = tmp_path / "back.json"  # count --json's config reads back with its format
    back.write_text(json.dumps(out["config"]))
    assert json.loads(cli(["count", back, "--json"]).out)["memory"]["weights"] == want
    assert symllm.workload(str(path))["memory"]["weights"] == want
    assert symllm.workload(_with(LLAMA31_8B, "awq"))["memory"]["weights"] == want
    plan = cli(["plan", path, "--gpus", "1xh100-sxm"])
    assert plan.code == 0 and "awq" in plan.out.splitlines()[1], plan.out + plan.err
    assert "weights in awq, read from the config's quantization_config" in " ".join(plan.out.split())


def test_awq_config_in_derive_report_and_sweep(cli, tmp_path):
    """derive, report and sweep price the same AWQ bytes as count and name the format where β_w is listed
    (derive, report) or in the summary (sweep)."""
    want = _llama31_bytes(lambda o, r: o * r // 2 + (r // 128) * (o // 8) * 4 + (r // 128) * o * 2)
    path = _write(tmp_path, _with(LLAMA31_8B, "awq"))
    r = cli(["derive", "--model", path, "--quantity", "memory", "--memory", "weights"])
    assert r.code == 0 and f"{want:,}" in r.out, r.out + r.err
    assert "bytes per weight in awq (read from the config's quantization_config)" in r.out
    r = cli(["report", path, "--format", "markdown"])
    assert r.code == 0 and "bytes per weight in awq (read from the config's" in r.out, r.err
    r = cli(["sweep", "--base", path, "--seq", "1024,2048", "--quantity", "weights", "--format", "jsonl"])
    assert r.code == 0 and [json.loads(line)["weights"] for line in r.out.splitlines()] == [want, want]
    assert "weights in awq, read from the config's quantization_config" in " ".join(r.err.split())


def test_weight_format_overrides_the_config(cli, tmp_path):
    """--weight-format wins over the config's format, and the output says so (NF4 with double quantization,
    bitsandbytes' blocks of 64: n/2 + n/64 absmax bytes + fp32 per 256 blocks + codes 64 + 1024 + 4)."""
    def nf4(o, r):
        n = o * r
        return n // 2 + n // 64 + 4 * ceil(n / 64 / 256) + 64 + 1024 + 4
    path = _write(tmp_path, _with(LLAMA31_8B, "awq"))
    out = json.loads(cli(["count", path, "--weight-format", "nf4", "--json"]).out)
    assert out["weight_format"]["format"] == "nf4" and out["memory"]["weights"] == _llama31_bytes(nf4)
    assert "overrides the config's awq" in out["weight_format"]["source"]
    assert "--weight-format nf4 overrides the config's awq" in cli(["count", path, "--weight-format", "nf4"]).out
    bnb = json.loads(cli(["count", _write(tmp_path, _with(LLAMA31_8B, "bnb-nf4")), "--json"]).out)
    assert bnb["memory"]["weights"] == _llama31_bytes(nf4)


def test_gptq_bytes_by_hand(cli, tmp_path):
    """TheBloke's GPTQ block (4 bits, group 128, desc_act) on Llama-2-7B: qweight n/2, qzeros (r/128 · o/8)
    int32, fp16 scales (r/128 · o), g_idx int32 per input column; embeddings, lm_head, norms fp16."""
    d, V, L = 4096, 32000, 32
    per = sum(o * r // 2 + (r // 128) * (o // 8) * 4 + (r // 128) * o * 2 + 4 * r
              for o, r in _linears(d, 32, 32, 128, 11008))
    want = 2 * (2 * V * d + (2 * L + 1) * d) + L * per
    out = json.loads(cli(["count", _write(tmp_path, _with(LLAMA2_7B, "gptq")), "--json"]).out)
    assert out["weight_format"]["format"] == "gptq" and out["memory"]["weights"] == want


@pytest.mark.parametrize("group, bits, name", [(32, 4, "gptq-g32"), (-1, 4, "gptq-channel"), (64, 8, "gptq-8bit-g64")])
def test_gptq_group_sizes_by_hand(cli, tmp_path, group, bits, name):
    """TheBloke's other branches (gptq-4bit-32g-actorder_True, group_size -1, 8-bit 64g): the group size names
    the format and prices qzeros (r/g · o·b/32 int32) and fp16 scales (r/g · o) per group of g inputs (a
    whole row when -1), qweight r·b/32 · o int32, g_idx r int32."""
    block = {**BLOCKS["gptq"]["quantization_config"], "group_size": group, "bits": bits}
    d, V, L = 4096, 32000, 32
    def per_linear(o, r):
        g = r if group == -1 else group
        return o * r * bits // 8 + (r // g) * (o * bits // 32) * 4 + (r // g) * o * 2 + 4 * r
    want = 2 * (2 * V * d + (2 * L + 1) * d) + L * sum(per_linear(o, r) for o, r in _linears(d, 32, 32, 128, 11008))
    out = json.loads(cli(["count", _write(tmp_path, {**LLAMA2_7B, "quantization_config": block}), "--json"]).out)
    assert out["weight_format"]["format"] == name and out["memory"]["weights"] == want
    assert json.loads(cli(["count", "llama2-7b", "--weight-format", name, "--json"]).out)["memory"]["weights"] == want


def test_fp8_block_bytes_by_hand(cli, tmp_path):
    """Qwen3-8B-FP8's block (128×128): one byte per weight and an fp32 weight_scale_inv per block of every
    projection; embeddings, lm_head, norms and the per-head q/k norms (128 each) in bf16."""
    d, V, L, d_ff = 4096, 151936, 36, 12288
    per = sum(o * r + 4 * ceil(o / 128) * ceil(r / 128) for o, r in _linears(d, 32, 8, 128, d_ff))
    want = 2 * (2 * V * d + L * (2 * d + 2 * 128) + d) + L * per
    out = json.loads(cli(["count", _write(tmp_path, _with(_preset("qwen3-8b"), "fp8-block-qwen3")), "--json"]).out)
    assert out["weight_format"]["format"] == "fp8-block" and out["memory"]["weights"] == want
    deepseek = symllm.workload(_with(_preset("deepseek-v3"), "fp8-block-deepseek"))
    assert deepseek["weight_format"]["format"] == "fp8-block"
    assert deepseek["memory"]["weights"] < symllm.workload("deepseek-v3")["memory"]["weights"] * 0.55


def test_nvfp4_bytes_by_hand(cli, tmp_path):
    """ModelOpt NVFP4: 16 four-bit values (8 bytes) and an E4M3 scale byte per 16, an fp32 weight_scale_2 per
    projection; the lm_head (its ignore list) and the rest bf16."""
    want = _llama31_bytes(lambda o, r: o * r // 16 * 9 + 4)
    out = json.loads(cli(["count", _write(tmp_path, _with(LLAMA31_8B, "nvfp4-modelopt")), "--json"]).out)
    assert out["weight_format"]["format"] == "nvfp4" and out["memory"]["weights"] == want


@pytest.mark.parametrize("name, gib", [("gpt-oss-20b", 12.8), ("gpt-oss-120b", 60.8)])
def test_gpt_oss_mxfp4_is_openais_checkpoint_size(name, gib):
    """gpt-oss's MXFP4 block (experts only; attention, router, embeddings and lm_head kept, as it lists): the
    weights are OpenAI's published checkpoint sizes (gpt-oss model card: 12.8 GiB and 60.8 GiB)."""
    w = symllm.workload(_with(_preset(name), "mxfp4"))
    assert w["weight_format"]["format"] == "mxfp4" and round(w["memory"]["weights"] / 2**30, 1) == gib
    assert "'lm_head'" in w["weight_format"]["source"]


@pytest.mark.parametrize("block, line", [
    ({"quant_method": "hqq", "nbits": 4}, "quantization_config.quant_method: 'hqq'"),
    ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "quantization_config.bits: 3"),
    ({"quant_method": "awq", "bits": 4, "group_size": 48}, "quantization_config.group_size: 48"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:.*lm_head": {}}},
     "quantization_config.dynamic: "),
    ({"quant_method": "fp8", "weight_block_size": [64, 64]}, "quantization_config.weight_block_size: [64, 64]"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}},
      "kv_cache_scheme": {"num_bits": 4, "type": "float"}}, "quantization_config.kv_cache_scheme: "),
])
def test_not_understood_is_one_line(cli, tmp_path, block, line):
    """A method, a bit width, a group or an exception symllm has no format for: one line naming the key and
    the value, exit 2, in count, and the same error from the Python API; never bf16."""
    path = _write(tmp_path, {**LLAMA31_8B, "quantization_config": block})
    r = cli(["count", path])
    assert r.code == 2 and r.err.startswith("symllm: error: " + line) and len(r.err.strip().splitlines()) == 1
    with pytest.raises(SymllmError, match="^" + line.replace("[", r"\[").replace("]", r"\]")):
        from_dict({**LLAMA31_8B, "quantization_config": block})


@given(quantization_configs([b["quantization_config"] for b in BLOCKS.values()]))
def test_any_block_reads_as_a_format_or_one_line(q):
    """Any quantization_config (published blocks with keys changed, dropped or hostile, any JSON value) reads
    as a format weight_bytes knows, or is refused in one line of at most 85 columns (100 with count's
    "symllm: error: ") naming a quantization_config key; nothing else is raised."""
    from symllm.costs.formats import check_format
    try:
        fmt, said = quantization.read(q)
    except SymllmError as e:
        line = str(e)
        assert line.startswith("quantization_config") and "\n" not in line and len(line) <= 85, line
    else:
        assert check_format(fmt) == fmt and said.startswith("quantization_config: quant_method ")


def _nf4(o, r):
    """bitsandbytes NF4 with double quantization (blocks of 64; fp32 per 256 blocks; codes 64 + 1024 + 4)."""
    n = o * r
    return n // 2 + n // 64 + 4 * ceil(n / 64 / 256) + 64 + 1024 + 4


#: unsloth's dynamic 4-bit keeps some projections in bf16 (its llm_int8_skip_modules): a block of that shape
UNSLOTH_DYNAMIC = {"_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "bfloat16",
                   "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
                   "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False,
                   "llm_int8_skip_modules": ["lm_head", "multi_modal_projector", "merger", "modality_projection",
                                             "model.layers.1.mlp", "model.layers.3.self_attn.o_proj",
                                             "model.layers.31.mlp.down_proj"],
                   "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False,
                   "quant_method": "bitsandbytes"}


def test_kept_modules_are_priced_in_bf16_by_hand(cli, tmp_path):
    """Issue 41 item 1: modules a quantization_config keeps unquantized are priced, not refused: on Llama-3.1-8B
    NF4 with layer 1's MLP (three projections), layer 3's o_proj and layer 31's down_proj kept, those five
    projections weigh two bytes a weight and the other 219 NF4's bytes; the output says so. The same total
    from count, the Python API and a sweep; --weight-format awq (another format) prices them all in AWQ."""
    d, d_ff = 4096, 14336
    kept = [(d_ff, d), (d_ff, d), (d, d_ff), (d, 32 * 128), (d, d_ff)]  # gate, up, down of layer 1; o; down
    want = _llama31_bytes(_nf4) + sum(2 * o * r - _nf4(o, r) for o, r in kept)
    path = _write(tmp_path, {**LLAMA31_8B, "quantization_config": UNSLOTH_DYNAMIC})
    out = json.loads(cli(["count", path, "--json"]).out)
    assert out["weight_format"]["format"] == "nf4" and out["memory"]["weights"] == want
    assert "priced in bf16" in out["weight_format"]["source"] and "'model.layers.1.mlp'" in out["weight_format"]["source"]
    assert symllm.workload({**LLAMA31_8B, "quantization_config": UNSLOTH_DYNAMIC})["memory"]["weights"] == want
    r = cli(["sweep", "--base", path, "--seq", "1024", "--quantity", "weights", "--format", "jsonl"])
    assert r.code == 0 and json.loads(r.out)["weights"] == want, r.err
    assert "priced in bf16" in " ".join(cli(["count", path]).out.split())
    awq = _llama31_bytes(lambda o, r: o * r // 2 + (r // 128) * (o // 8) * 4 + (r // 128) * o * 2)
    assert json.loads(cli(["count", path, "--weight-format", "awq", "--json"]).out)["memory"]["weights"] == awq
    from symllm.costs import formats
    tensors = formats.weight_bytes(symllm.resolve(str(path)), "nf4")["tensors"]
    assert tensors["block/feed_forward/w2"]["type"] == "nf4 (2 of 32 layers bf16)"


@pytest.mark.parametrize("entry", ["model.layers.1.mlp", "model.layers.1", "layers.1.mlp.up_proj", "up_proj",
                                   r"model.layers.\d+.self_attn", "model.layers.*.mlp", "mlp.gate",
                                   "model.layers.11.mlp.down_proj", "o_proj"])
def test_kept_modules_match_as_transformers_matches_them(entry):
    """The exemptions of modules_to_not_convert / llm_int8_skip_modules match the module names transformers'
    own should_convert_module leaves unconverted (layer.1 is not layer.11; mlp.gate is not mlp.gate_proj)."""
    import re
    from transformers.quantizers.quantizers_utils import should_convert_module
    from symllm.costs import formats
    names = [n for t in formats.tensors(symllm.resolve(LLAMA31_8B)) for n in quantization.hf_modules(t) or ()]
    assert len(names) == 7 * 32
    q = {"quant_method": "bitsandbytes", "load_in_4bit": True, "llm_int8_skip_modules": [entry]}
    patterns = quantization.kept_patterns(q)  # none where the entry names what is kept anyway (mlp.gate: a router)
    ours = [n for n in names if any(re.match(p, n) for p in patterns)]
    assert ours == [n for n in names if not should_convert_module(n, [entry])]
    assert bool(ours) == (entry != "mlp.gate")


def test_compressed_tensors_ignore_matches_names_and_re_patterns(cli, tmp_path):
    """compressed-tensors' ignore: an exact module name or a ``re:`` pattern (llm-compressor's recipes:
    ``re:.*down_proj$``); W8A8-FP8 per channel (one byte a weight and a bf16 scale per output row: compressed-tensors
    keeps scales in the checkpoint's dtype) with every down_proj and layer 0's q_proj kept: 33 projections in bf16."""
    block = {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                 "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False}}},
             "ignore": ["lm_head", "re:.*down_proj$", "model.layers.0.self_attn.q_proj"]}
    d, d_ff = 4096, 14336
    fp8 = lambda o, r: o * r + 2 * o  # noqa: E731
    kept = [(d, d_ff)] * 32 + [(32 * 128, d)]
    want = _llama31_bytes(fp8) + sum(2 * o * r - fp8(o, r) for o, r in kept)
    out = json.loads(cli(["count", _write(tmp_path, {**LLAMA31_8B, "quantization_config": block}), "--json"]).out)
    assert out["weight_format"]["format"] == "w8a8-fp8" and out["memory"]["weights"] == want


#: llm-compressor's FP8 KV cache (its quantization_kv_cache example): compressed-tensors' kv_cache_scheme
FP8_KV = {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
              "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True,
                                    "symmetric": True}}},
          "ignore": ["lm_head"],
          "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False,
                              "symmetric": True}}


def test_kv_cache_scheme_sets_the_kv_cache_dtype(cli, tmp_path):
    """Issue 41 item 1: a checkpoint's kv_cache_scheme (FP8, one byte a cached element) is the KV cache dtype
    unless --kv-dtype or --kv-format is given, through count, the Python API, a sweep and --serve; the output
    says where it was read. Llama-3.1-8B at 4,096 tokens: 2 x 32 layers x 8 KV heads x 128 x 4,096 x 1 byte."""
    path = _write(tmp_path, {**LLAMA31_8B, "quantization_config": FP8_KV})
    kv = 2 * 32 * 8 * 128 * 4096
    out = json.loads(cli(["count", path, "--seq", "4096", "--json"]).out)
    assert out["memory"]["kv_cache"] == kv and out["workload"]["kv_dtype"] == "fp8"
    assert out["config"]["kv_dtype"] == "fp8"
    assert json.loads(cli(["count", path, "--seq", "4096", "--kv-dtype", "bf16", "--json"]).out)[
        "memory"]["kv_cache"] == 2 * kv
    assert json.loads(cli(["count", path, "--seq", "4096", "--kv-format", "q8_0", "--json"]).out)[
        "memory"]["kv_cache"] == kv * 17 // 16  # q8_0: 34 bytes per block of 32
    text = " ".join(cli(["count", path, "--seq", "4096"]).out.split())
    assert "KV cache in fp8, read from the config's quantization_config.kv_cache_scheme" in text
    assert symllm.workload({**LLAMA31_8B, "quantization_config": FP8_KV}, seq=4096)["memory"]["kv_cache"] == kv
    r = cli(["sweep", "--base", path, "--seq", "4096", "--quantity", "kv_cache", "--format", "jsonl"])
    assert r.code == 0 and json.loads(r.out)["kv_cache"] == kv, r.err
    assert "KV cache in fp8, read from the config's" in " ".join(r.err.split())
    plan = cli(["plan", path, "--gpus", "1xh100-sxm", "--seq", "4096"])
    assert plan.code == 0 and "KV cache in fp8, read from the config's" in " ".join(plan.out.split()), plan.err
    serve = json.loads(cli(["count", path, "--serve", "--gpu", "h100-sxm", "--json"]).out)["serving"]
    assert serve["kv_bytes_per_token"] == 2 * 32 * 8 * 128
    back = tmp_path / "back.json"  # count --json's config reads back with its KV cache dtype
    back.write_text(json.dumps(out["config"]))
    assert json.loads(cli(["count", back, "--seq", "4096", "--json"]).out)["memory"]["kv_cache"] == kv


def test_a_kept_module_symllm_cannot_name_is_one_line(cli, tmp_path):
    """An exemption that matches no projection symllm names (a typo, a module of another architecture) is one
    line when the weights are priced (count exits 2, the Python API raises), never a silently bf16-free total."""
    block = {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["model.layers.1.mlpx"]}
    r = cli(["count", _write(tmp_path, {**LLAMA31_8B, "quantization_config": block})])
    assert r.code == 2 and r.err.startswith("symllm: error: quantization_config: a module kept unquantized")
    assert len(r.err.strip().splitlines()) == 1
    with pytest.raises(SymllmError, match="^quantization_config: a module kept unquantized"):
        symllm.workload({**LLAMA31_8B, "quantization_config": block})
