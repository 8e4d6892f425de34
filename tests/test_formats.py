"""Weight formats as exact bytes (symllm.costs.formats), against independent truth:

* the ``gguf`` package (gguf-py, llama.cpp's own Python library): its ``GGML_QUANT_SIZES`` table, its
  ``TensorNameMap`` (HF name -> GGUF name), and GGUF files written with ``gguf.GGUFWriter`` from a small
  ``LlamaForCausalLM`` built by transformers, each tensor quantized by ``gguf.quants.quantize`` (it implements
  Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16, MXFP4, TQ1_0; not the K-quants nor the IQ types), read back with
  ``gguf.GGUFReader``: tensor names, types and byte sizes equal symllm's;
* llama-bench's published sizes (tests/data/published_file_sizes.json): the K-quant file types' per-tensor
  choice, which no CPU tool here runs (llama.cpp's quantizer: building llama-cpp-python from source is too
  slow on this shared machine, so it is not used);
* AWQ, GPTQ, bitsandbytes NF4 / LLM.int8, FP8, MXFP4 and NVFP4: no CPU packer is installed here (AutoAWQ,
  GPTQModel and bitsandbytes need CUDA builds; compressed-tensors is not installed), so one 4096×4096 tensor
  is checked by hand arithmetic from each format's specification (stated in each test).
"""
import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given

from symllm.arch.config import from_dict
from symllm.costs import formats as F
from symllm.costs.kv_formats import kv_bytes_per_element
from symllm.errors import SymllmError
from .conftest import gguf_name
from .strategies import hf_configs
from .tiny_models import DELTANET, EXPERTS, TINY, TINY_MLA

gguf = pytest.importorskip("gguf")

DATA = Path(__file__).parent / "data"

#: a small llama whose rows (288, 800) are not multiples of 256: Q4_K_M falls back to types gguf-py writes
SMALL = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 288,
         "intermediate_size": 800, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 72, "vocab_size": 320, "tie_word_embeddings": False, "rms_norm_eps": 1e-5,
         "hidden_act": "silu", "max_position_embeddings": 128}


def test_block_sizes_are_gguf_py_table():
    """Every GGML type's (block size, bytes per block) is gguf-py's GGML_QUANT_SIZES entry."""
    for name, pair in F.GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name]] == pair, name


def test_kv_formats_are_ggml_blocks():
    """llama.cpp's q8_0 / q4_0 KV cache costs its GGML block's bytes per element; fp8 one byte."""
    for name in ("q8_0", "q4_0"):
        block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]]
        assert kv_bytes_per_element(name) == Fraction(size, block)
    assert kv_bytes_per_element("fp8") == 1
    with pytest.raises(SymllmError, match="kv_format: unknown 'q3'"):
        kv_bytes_per_element("q3")


def _hf_model(raw):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(**{k: v for k, v in raw.items() if k not in ("model_type", "architectures")})
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg)


def _gguf_names(model, n_layers):
    names = gguf.TensorNameMap(gguf.MODEL_ARCH.LLAMA, n_layers)
    out = {}
    for hf, p in model.state_dict().items():
        if hf == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        out[gguf_name(names, hf)] = p
    return out


def test_tensors_are_transformers_names_and_shapes():
    """Llama-3.1-8B's GGUF tensors (F16) are the names gguf-py's TensorNameMap gives transformers'
    LlamaForCausalLM parameters (meta device), with their element counts and row lengths."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from symllm.api import spec
    sp_ = spec("llama3.1-8b")
    s = sp_.config
    cfg = transformers.LlamaConfig(hidden_size=s.dim, intermediate_size=sp_.hidden_dim, num_hidden_layers=s.n_layers,
                                   num_attention_heads=s.n_heads, num_key_value_heads=s.n_kv_heads,
                                   head_dim=s.head_dim, vocab_size=s.vocab_size, tie_word_embeddings=False)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg)
    expected = {name: (p.numel(), p.shape[-1]) for name, p in _gguf_names(model, s.n_layers).items()}
    mine = F.weight_bytes("llama3.1-8b", "F16")["tensors"]
    assert {n: (t["elements"], t["bytes"] // (2 if t["type"] == "F16" else 4) // (t["elements"] // expected[n][1]))
            for n, t in mine.items()} == expected


@pytest.mark.parametrize("fmt", ["Q4_K_M", "Q4_0", "Q8_0", "gguf:Q4_1", "gguf:Q5_1", "gguf:MXFP4", "BF16"])
def test_gguf_file_written_and_read_back(tmp_path, fmt):
    """A small llama (transformers, random weights) written as GGUF by gguf.GGUFWriter, each tensor
    quantized by gguf.quants.quantize to the type symllm says (row lengths 288 and 800 make Q4_K_M fall
    back to Q5_0 / Q8_0, which gguf-py implements), read back by gguf.GGUFReader: the same tensors, types
    and bytes as symllm's."""
    model = _hf_model(SMALL)
    mine = F.weight_bytes(from_dict(SMALL), fmt)
    writer = gguf.GGUFWriter(tmp_path / "m.gguf", "llama")
    for name, p in _gguf_names(model, SMALL["num_hidden_layers"]).items():
        qtype = gguf.GGMLQuantizationType[mine["tensors"][name]["type"]]
        data = p.detach().float().numpy()
        writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    read = {t.name: (t.tensor_type.name, int(t.n_bytes)) for t in gguf.GGUFReader(tmp_path / "m.gguf").tensors}
    assert read == {n: (t["type"], t["bytes"]) for n, t in mine["tensors"].items()}
    assert mine["total"] == sum(b for _, b in read.values())


def test_q4_k_m_fallbacks_on_small_rows():
    """Rows of 288 hold no whole 256-blocks: Q4_K -> Q5_0, Q6_K -> Q8_0 (llama_tensor_get_type);
    the last of 3 layers is one use_more_bits picks (i >= 7·3/8 = 2); output.weight Q8_0; norms F32."""
    t = {n: v["type"] for n, v in F.weight_bytes(from_dict(SMALL), "Q4_K_M")["tensors"].items()}
    assert (t["blk.0.attn_v.weight"], t["blk.2.attn_v.weight"], t["blk.2.ffn_down.weight"]) == ("Q5_0", "Q8_0", "Q8_0")
    assert (t["output.weight"], t["token_embd.weight"], t["output_norm.weight"]) == ("Q8_0", "Q5_0", "F32")


def test_use_more_bits_layers_of_llama_8b():
    """Llama-3.1-8B Q4_K_M: attn_v and ffn_down in Q6_K in layers 0-3, 6, 9, ..., 27 and 28-31 (n = 32:
    i < 4, i >= 28, (i - 4) % 3 == 2), Q4_K elsewhere: 20 of each, by hand; token_embd Q4_K, output Q6_K."""
    t = {n: v["type"] for n, v in F.weight_bytes("llama3.1-8b", "Q4_K_M")["tensors"].items()}
    six = [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
    for what in ("attn_v", "ffn_down"):
        assert [i for i in range(32) if t[f"blk.{i}.{what}.weight"] == "Q6_K"] == six
    assert (t["token_embd.weight"], t["output.weight"], t["blk.5.attn_q.weight"]) == ("Q4_K", "Q6_K", "Q4_K")


def test_tied_embedding_takes_output_rule_and_70b_promotes_attn_v():
    """Tied Llama-3.2-3B has no output.weight: token_embd gets its Q6_K; Llama-3.1-70B (80 layers, GQA:
    LLM_TYPE_70B) stores attn_v Q5_K where Q4_K_M would use Q4_K, and ffn_down stays Q4_K there."""
    t = F.weight_bytes("llama3.2-3b", "Q4_K_M")["tensors"]
    assert "output.weight" not in t and t["token_embd.weight"]["type"] == "Q6_K"
    t = F.weight_bytes("llama3.1-70b", "Q4_K_M")["tensors"]
    assert (t["blk.11.attn_v.weight"]["type"], t["blk.11.ffn_down.weight"]["type"]) == ("Q5_K", "Q4_K")


@pytest.mark.parametrize("entry", json.loads((DATA / "published_file_sizes.json").read_text())["sizes_gib"],
                         ids=lambda e: f"{e['model']}-{e['format']}")
def test_published_llama_bench_sizes(entry):
    """llama-bench's size column (sum of tensor bytes, GiB, two decimals) for published GGUF files."""
    assert round(F.weight_bytes(entry["model"], entry["format"])["total"] / 2**30, 2) == entry["gib"]


N = 4096 * 4096


def test_awq_gptq_by_hand():
    """AutoAWQ GEMM (4 bits, group 128): qweight int32 (4096, 512), qzeros int32 (32, 512), scales fp16
    (32, 4096). GPTQ (4 bits, group 128): qweight int32 (512, 4096), qzeros int32 (32, 512), scales fp16
    (32, 4096), g_idx int32 (4096,); 8 bits: qweight (1024, 4096), qzeros (32, 1024)."""
    assert F.tensor_bytes("awq", 4096, 4096)[1] == 4096 * 512 * 4 + 32 * 512 * 4 + 32 * 4096 * 2
    assert F.tensor_bytes("gptq", 4096, 4096)[1] == 512 * 4096 * 4 + 32 * 512 * 4 + 32 * 4096 * 2 + 4096 * 4
    assert F.tensor_bytes("gptq-8bit", 4096, 4096)[1] == 1024 * 4096 * 4 + 32 * 1024 * 4 + 32 * 4096 * 2 + 4096 * 4


def test_bitsandbytes_by_hand():
    """bitsandbytes quantize_4bit (blocksize 64): N/2 packed bytes, the 16-entry fp32 NF4 code; absmax fp32
    per block, or (double quantization) uint8 per block + fp32 per 256 blocks + the 256-entry fp32 nested
    code + an fp32 offset. LLM.int8: int8 CB + fp32 SCB per output row."""
    blocks = N // 64
    assert F.tensor_bytes("nf4-nodq", 4096, 4096)[1] == N // 2 + 4 * blocks + 64
    assert F.tensor_bytes("nf4", 4096, 4096)[1] == N // 2 + blocks + 4 * (blocks // 256) + 1024 + 4 + 64
    assert F.tensor_bytes("int8", 4096, 4096)[1] == N + 4 * 4096


def test_fp8_mx_nv_by_hand():
    """FP8 E4M3: one byte a weight + fp32 scales (per tensor 1, per channel 4096, DeepSeek-V3's 128×128
    blocks 32·32); an 11008×4096 weight has ceil(11008/128) = 86 block rows. MXFP4: 16 + 1 bytes per 32;
    NVFP4: 8 + 1 bytes per 16 and one fp32 global scale."""
    assert F.tensor_bytes("fp8", 4096, 4096)[1] == N + 4
    assert F.tensor_bytes("fp8-channel", 4096, 4096)[1] == N + 4 * 4096
    assert F.tensor_bytes("fp8-block", 4096, 4096)[1] == N + 4 * 32 * 32
    assert F.tensor_bytes("fp8-block", 4096, 11008)[1] == 4096 * 11008 + 4 * 86 * 32
    assert F.tensor_bytes("mxfp4", 4096, 4096)[1] == N // 32 * 17
    assert F.tensor_bytes("nvfp4", 4096, 4096)[1] == N // 16 * 9 + 4


def test_which_tensors_stay_unquantized():
    """The rule table: AWQ keeps embedding, norms and lm_head in bf16; bitsandbytes NF4 keeps Mixtral's
    router and fused experts; FP8 quantizes the experts but not the router; MXFP4 (gpt-oss) only the
    experts. Bytes: Llama-3.2-1B's bf16 total is 2 × its 1,235,814,400 parameters (published)."""
    awq = F.weight_bytes("llama3.1-8b", "awq")["tensors"]
    assert {n: t["type"] for n, t in awq.items() if t["type"] == "bf16"} == dict.fromkeys(
        ("embedding", "block/attention_norm", "block/ffn_norm", "norm", "lm_head"), "bf16")
    assert awq["lm_head"]["bytes"] == 2 * 128256 * 4096
    types = {f: {n: t["type"] for n, t in F.weight_bytes("mixtral-8x7b", f)["tensors"].items()}
             for f in ("nf4", "fp8-block", "mxfp4")}
    assert types["nf4"]["block/moe/router"] == types["nf4"]["block/moe/experts/gate"] == "bf16"
    assert types["fp8-block"]["block/moe/router"] == "bf16"
    assert types["fp8-block"]["block/moe/experts/down"] == "fp8_e4m3"
    assert [n for n, t in types["mxfp4"].items() if t == "mxfp4"] == [
        "block/moe/experts/gate", "block/moe/experts/up", "block/moe/experts/down"]
    assert F.weight_bytes("llama3.2-1b", "bf16")["total"] == 2 * 1235814400


def test_bad_formats_refused():
    """Unknown names and rows a format cannot hold are one-line errors, not wrong numbers."""
    with pytest.raises(SymllmError, match="^weight_format: unknown 'q4'"):
        F.weight_bytes("llama3.1-8b", "q4")
    with pytest.raises(SymllmError, match="weight_format: unknown 'gguf:Q9_K'"):
        F.weight_bytes("llama3.1-8b", "gguf:Q9_K")
    with pytest.raises(SymllmError, match="^weight_format: awq needs rows"):
        F.tensor_bytes("awq", 100, 4096)


def test_workload_weight_format_checked():
    """Workload.weight_format: a known format or gguf:TYPE, else one error naming the field."""
    from symllm.costs.workloads import Workload
    assert Workload(weight_format="gguf:IQ4_XS").weight_format == "gguf:IQ4_XS"
    assert Workload().weight_format is None
    for bad in ("Q4_K_L", "gguf:Q9_K", 4):
        with pytest.raises(SymllmError, match="^weight_format: unknown"):
            Workload(weight_format=bad)


def test_count_shows_weight_format(cli):
    """`count --json --weight-format Q4_K_M`: the format's bytes (llama-bench's 4.58 GiB for Llama-3.1-8B)
    and bits per weight beside the bf16 weights (2 bytes × 8,030,261,248 published parameters); the
    table shows them too; a mixture of experts in a GGUF file type is priced too (exit 0)."""
    r = cli(["count", "llama3.1-8b", "--json", "--weight-format", "Q4_K_M"])
    assert r.code == 0
    f = json.loads(r.out)["weight_format"]
    assert round(f["bytes"] / 2**30, 2) == 4.58 and f["dtype_weights_bytes"] == 2 * 8030261248
    bits = f["bits_per_weight"]  # a JSON number (docs/json.md): the double nearest the exact quotient
    assert type(bits) is float and bits == float(Fraction(8 * f["bytes"], 8030261248))
    r = cli(["count", "llama3.1-8b", "--weight-format", "Q8_0"])
    assert r.code == 0 and "weights in Q8_0" in r.out and "7.95 GiB" in r.out
    r = cli(["count", "mixtral-8x7b", "--weight-format", "Q4_K_M"])
    assert r.code == 0 and "weights in Q4_K_M" in r.out


def test_gguf_mixture_of_experts_bytes_by_hand():
    """Mixtral-8x7B in GGUF F16 and Q8_0 --pure: 2 bytes (34 per 32) a weight, the norms and the router F32
    (4 bytes), the experts one tensor per layer of 8 x 14336 x 4096; by hand from the config's sizes."""
    V, d, L, n_kv, d_h, d_ff, n_e = 32000, 4096, 32, 8, 128, 14336, 8
    matrices = 2 * V * d + L * (2 * d * d + 2 * d * n_kv * d_h + 3 * n_e * d * d_ff)
    f32 = L * (2 * d + n_e * d) + d
    r = F.weight_bytes("mixtral-8x7b", "F16")
    assert r["total"] == 2 * matrices + 4 * f32 and r["elements"] == matrices + f32 == 46702792704
    assert r["tensors"]["blk.31.ffn_down_exps.weight"] == dict(type="F16", count=1, elements=n_e * d * d_ff,
                                                               bytes=2 * n_e * d * d_ff)
    assert F.weight_bytes("mixtral-8x7b", "gguf:Q8_0")["total"] == matrices // 32 * 34 + 4 * f32


#: Q4_K_M's use_more_bits(i, 32) layers (i < 4, i >= 28, (i - 4) % 3 == 2), by hand
_MORE_BITS_32 = [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_mixtral_q4_k_m_by_hand():
    """Mixtral-8x7B Q4_K_M by hand from llama.cpp's llama_tensor_get_type (src/llama-quant.cpp at
    ggml-org/llama.cpp 007dbbf3, read 2026-11-29): with expert_count == 8, attn_k and attn_v Q8_0 (34 bytes a 32)
    and attn_output Q5_K (176 a 256); ffn_down_exps Q6_K (210 a 256) in the 16 use_more_bits blocks (block from
    the name), Q4_K (144 a 256) elsewhere; gate and up experts and attn_q Q4_K; token_embd Q4_K, output
    Q6_K; norms and the router F32."""
    V, d, L, kv, d_ff, n_e = 32000, 4096, 32, 1024, 14336, 8
    q4, q5, q6, q8 = (lambda n: n // 256 * 144), (lambda n: n // 256 * 176), (lambda n: n // 256 * 210), \
        (lambda n: n // 32 * 34)
    experts = n_e * d * d_ff
    layer = q4(d * d) + 2 * q8(d * kv) + q5(d * d) + 2 * q4(experts) + 4 * (2 * d + n_e * d)
    total = L * layer + 16 * q6(experts) + 16 * q4(experts) + q4(V * d) + q6(V * d) + 4 * d
    r = F.weight_bytes("mixtral-8x7b", "Q4_K_M")
    assert r["total"] == total
    t = {n: v["type"] for n, v in r["tensors"].items()}
    assert [i for i in range(L) if t[f"blk.{i}.ffn_down_exps.weight"] == "Q6_K"] == _MORE_BITS_32
    assert (t["blk.5.attn_v.weight"], t["blk.5.attn_k.weight"], t["blk.5.attn_output.weight"],
            t["blk.5.ffn_gate_exps.weight"], t["blk.5.ffn_gate_inp.weight"]) == ("Q8_0", "Q8_0", "Q5_K", "Q4_K", "F32")


def test_many_experts_q4_k_m_types():
    """Qwen3-30B-A3B (128 experts, 48 blocks) Q4_K_M: no 8-expert rule, so attn_k and attn_output stay Q4_K;
    attn_v and ffn_down_exps Q6_K where use_more_bits(i, 48): i < 6, i >= 42, (i - 6) % 3 == 2 (by hand);
    its llama-bench size is in tests/data/published_file_sizes.json (17.28 GiB)."""
    t = {n: v["type"] for n, v in F.weight_bytes("qwen3-30b-a3b", "Q4_K_M")["tensors"].items()}
    six = [0, 1, 2, 3, 4, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 42, 43, 44, 45, 46, 47]
    for what in ("attn_v", "ffn_down_exps"):
        assert [i for i in range(48) if t[f"blk.{i}.{what}.weight"] == "Q6_K"] == six
    assert {t["blk.7.attn_k.weight"], t["blk.7.attn_output.weight"], t["blk.7.ffn_up_exps.weight"]} == {"Q4_K"}


def test_hybrid_attn_v_counts_attention_layers():
    """Nemotron-H-8B: 4 of its 52 layers are attention; llama.cpp's attn_v rule counts the attn_v tensors
    (i_attention_wv of n_attention_wv = 4), so use_more_bits(k, 4) picks k = 2 ((k - 0) % 3 == 2) and
    k = 3 (k >= 7·4/8 = 3): the third and fourth attention layers in Q6_K, by hand."""
    t = F.weight_bytes("nemotron-h-8b", "Q4_K_M")["tensors"]
    assert [v["type"] for n, v in t.items() if n.endswith(".attn_v.weight")] == ["Q4_K", "Q4_K", "Q6_K", "Q6_K"]


def test_hybrid_blocks_numbered_as_the_model():
    """GGUF's blk.N is the model's layer N: Nemotron-H-8B's hybrid_override_pattern
    "M-M-M-M*-M-M-M-M-M*-..." (its config.json) puts attention ('*') at layers 7, 18, 29 and 40."""
    names = [t["name"] for t in F.gguf_tensors("nemotron-h-8b") if t["name"].endswith(".attn_v.weight")]
    assert names == [f"blk.{i}.attn_v.weight" for i in (7, 18, 29, 40)]


def test_relu2_latent_experts_priced():
    """Nemotron-3 Super's routed experts are ungated relu2 experts in the latent width (NemotronHExperts:
    up_proj [d_ff, d_lm], down_proj [d_lm, d_ff]; config.json: moe_latent_size 1024, moe_intermediate_size
    2688, n_routed_experts 512, 40 'E' layers in its hybrid_override_pattern), so every format prices them
    (a refusal before): FP8 is 1 byte a weight and one fp32 scale per tensor. In GGUF Q4_K_M (by hand from
    llama_tensor_get_type): rows of 1024 hold whole Q4_K blocks, rows of 2688 do not (2688 = 10.5·256), so
    ffn_down_exps falls back Q6_K -> Q8_0 where use_more_bits(i, 88) (i < 11 or (i - 11) % 3 == 2 or i >= 77)
    and Q4_K -> Q5_0 elsewhere; 'MEMEMEM*E...' puts the experts at blocks 1, 3, 5, 8, 10, 12, ...;
    fc1_latent_proj is gguf-py's ffn_latent_down ([4096, 1024], Q4_K)."""
    up = F.weight_bytes("nemotron-3-super-120b-a12b", "fp8")["tensors"]["moe_block/moe/experts/up"]
    assert up == dict(type="fp8_e4m3", count=40 * 512, elements=40 * 512 * 2688 * 1024,
                      bytes=40 * 512 * (2688 * 1024 + 4))
    t = F.weight_bytes("nemotron-3-super-120b-a12b", "Q4_K_M")["tensors"]
    downs = [n for n in t if n.endswith("ffn_down_exps.weight")]
    assert downs[:6] == [f"blk.{i}.ffn_down_exps.weight" for i in (1, 3, 5, 8, 10, 12)] and len(downs) == 40
    assert [t[f"blk.{i}.ffn_down_exps.weight"]["type"] for i in (1, 10, 12, 17, 19, 74, 79)] == [
        "Q8_0", "Q8_0", "Q5_0", "Q5_0", "Q8_0", "Q5_0", "Q8_0"]
    assert t["blk.1.ffn_up_exps.weight"]["type"] == t["blk.1.ffn_latent_down.weight"]["type"] == "Q4_K"
    assert t["blk.1.ffn_latent_down.weight"]["elements"] == 4096 * 1024


def test_mpt_gguf_names_and_q4_k_m_by_hand():
    """MPT-7B as llama.cpp's converter names it: each HF module's GGUF name is gguf-py's TensorNameMap for
    MODEL_ARCH.MPT (transformer.blocks.N.attn.Wqkv -> blk.N.attn_qkv, ...), shapes from its config (d 4096,
    32 layers, d_ff 16384, vocab 50432, tied, no biases). Q4_K_M by hand (llama-quant.cpp at 007dbbf3):
    attn_qkv is attn_v-like (category_is_attn_v), so it and ffn_down are Q6_K (210 bytes a 256) in the 16
    use_more_bits layers and Q4_K (144 a 256) elsewhere; the tied token_embd takes output's Q6_K; norms F32."""
    hf = {"token_embd": "transformer.wte", "blk.0.attn_norm": "transformer.blocks.0.norm_1",
          "blk.0.attn_qkv": "transformer.blocks.0.attn.Wqkv", "blk.0.attn_output": "transformer.blocks.0.attn.out_proj",
          "blk.0.ffn_norm": "transformer.blocks.0.norm_2", "blk.0.ffn_up": "transformer.blocks.0.ffn.up_proj",
          "blk.0.ffn_down": "transformer.blocks.0.ffn.down_proj", "output_norm": "transformer.norm_f"}
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.MPT, 32)
    ours = [t["name"].removesuffix(".weight") for t in F.gguf_tensors("mpt-7b") if t["layer"] in (None, 0)]
    assert ours == [names.get_name(hf[n]) for n in ours] == list(hf)
    V, d, L, d_ff = 50432, 4096, 32, 16384
    q4, q6 = (lambda n: n // 256 * 144), (lambda n: n // 256 * 210)
    total = (q6(V * d) + 4 * d + L * (2 * 4 * d + q4(d * d) + q4(d * d_ff))
             + 16 * (q6(3 * d * d) + q6(d_ff * d)) + 16 * (q4(3 * d * d) + q4(d_ff * d)))
    r = F.weight_bytes("mpt-7b", "Q4_K_M")
    assert r["total"] == total
    assert [i for i in range(L) if r["tensors"][f"blk.{i}.attn_qkv.weight"]["type"] == "Q6_K"] == _MORE_BITS_32


_ARCH = {"llama": "LLAMA", "mistral": "LLAMA", "qwen2": "QWEN2", "qwen3": "QWEN3"}


@given(raw=hf_configs())
def test_gguf_tensors_are_transformers_parameters(raw):
    """Every generated HF config: symllm's GGUF tensors (gguf:F16) are transformers' parameters (meta
    device) under gguf-py's TensorNameMap names, with their element counts; 1-D tensors (norms, biases) F32."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    names = gguf.TensorNameMap(gguf.MODEL_ARCH[_ARCH[raw["model_type"]]], raw["num_hidden_layers"])
    expected = {}
    for hf, p in model.state_dict().items():
        if hf == "lm_head.weight" and raw["tie_word_embeddings"]:
            continue
        expected[gguf_name(names, hf)] = (p.numel(), "F32" if p.dim() == 1 else "F16")
    mine = F.weight_bytes(from_dict(raw), "gguf:F16")["tensors"]
    assert {n: (t["elements"], t["type"]) for n, t in mine.items()} == expected


def test_nf4_rule_is_qlora_rule():
    """bitsandbytes NF4 quantizes what QLoRA's base-weight memory assumes (finetune.FORMATS reads it), and its
    double-quantized bytes over a 64·256-divisible tensor are the QLoRA paper's 4.127 bits (§3) plus the
    three per-tensor constants (NF4 code 64 B, nested code 1024 B, offset 4 B)."""
    from symllm.costs import finetune
    assert F.QUANTIZES["nf4"] == F.QUANTIZES["nf4-nodq"] == finetune.FORMATS["nf4"]
    assert F.tensor_bytes("nf4", 4096, 4096)[1] == N * (4 + Fraction(8, 64) + Fraction(32, 64 * 256)) / 8 + 1092


def test_report_and_derive_take_the_weight_format(cli):
    """report and derive --quantity memory price the weights in the format (β_w: its exact bytes over the
    weights): llama-bench's 4.58 GiB Q4_K_M file of Llama-3.1-8B, as count says."""
    counted = json.loads(cli(["count", "llama3.1-8b", "--json", "--weight-format", "Q4_K_M"]).out)["memory"]
    r = cli(["report", "llama3.1-8b", "--weight-format", "Q4_K_M"])
    assert r.code == 0 and f"{counted['weights']:,}" in r.out and "4.58 GiB" in r.out
    r = cli(["derive", "--quantity", "memory", "--memory", "weights", "--model", "llama3.1-8b",
             "--weight-format", "Q4_K_M"])
    assert r.code == 0 and f"{counted['weights']:,}" in r.out and not r.err


def test_derive_warns_weight_format_ignored(cli):
    """derive's quantities do not use the weight format: it says so on stderr."""
    r = cli(["derive", "--component", "attention", "--quantity", "flops", "--weight-format", "Q4_K_M"])
    assert r.code == 0 and "--weight-format does not apply" in r.err


#: transformers' class, its config's class, the config and gguf-py's architecture, for each architecture symllm names
#: in GGUF since issue 40
GGUF_NAMED = {
    "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(TINY, pad_token_id=0, bos_token_id=0, eos_token_id=0), "PHI3"),
    "deepseek_v2": ("DeepseekV2ForCausalLM", "DeepseekV2Config", dict(TINY_MLA, topk_method="greedy"), "DEEPSEEK2"),
    "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepseekV3Config", dict(TINY_MLA, q_lora_rank=8), "DEEPSEEK2"),
    "gpt_oss": ("GptOssForCausalLM", "GptOssConfig", dict(TINY, num_local_experts=4, num_experts_per_tok=2, head_dim=8,
                sliding_window=4, layer_types=["sliding_attention", "full_attention"]), "GPT_OSS"),
    "qwen2_moe": ("Qwen2MoeForCausalLM", "Qwen2MoeConfig", dict(TINY, num_experts=4, num_experts_per_tok=2,
                  moe_intermediate_size=16, shared_expert_intermediate_size=24), "QWEN2MOE"),
    "qwen3_next": ("Qwen3NextForCausalLM", "Qwen3NextConfig", dict(TINY, **DELTANET, **EXPERTS), "QWEN3NEXT"),
    "qwen3_5": ("Qwen3_5ForCausalLM", "Qwen3_5TextConfig", dict(TINY, **DELTANET), "QWEN35"),
    "qwen3_5_moe": ("Qwen3_5MoeForCausalLM", "Qwen3_5MoeTextConfig", dict(TINY, **DELTANET, **EXPERTS), "QWEN35MOE"),
    "glm4_moe": ("Glm4MoeForCausalLM", "Glm4MoeConfig", dict(TINY, n_routed_experts=4, num_experts_per_tok=2,
                 moe_intermediate_size=8, n_shared_experts=1, first_k_dense_replace=1, head_dim=8,
                 num_nextn_predict_layers=0), "GLM4_MOE"),
}


def _converted(hf: str) -> list[str]:
    """The HF names llama.cpp's converter (convert_hf_to_gguf / conversion/*.py) maps for one of transformers'
    parameters: MLA's kv_b_proj split in k_b_proj and v_b_proj (DeepseekV2Model.modify_tensors), the Gated DeltaNet's
    dt_bias renamed dt_proj.bias, transformers' fused experts' gate_up_proj (and gpt-oss's gate_up_proj_bias) stored
    as gate and up apart, the routed experts merged per layer."""
    if hf.endswith("kv_b_proj.weight"):
        return [hf.replace("kv_b_proj", "k_b_proj"), hf.replace("kv_b_proj", "v_b_proj")]
    if hf.endswith("dt_bias"):
        return [hf.replace("dt_bias", "dt_proj.bias")]
    if ".experts.gate_up_proj" in hf:
        return [hf.replace("gate_up_proj", "gate_proj"), hf.replace("gate_up_proj", "up_proj")]
    return [hf]


@pytest.mark.parametrize("family", GGUF_NAMED)
def test_gguf_names_are_gguf_py_names(family):
    """Each architecture's GGUF tensor names are gguf-py's (the ``gguf`` package, 0.19.0): transformers' model (meta
    device) has its parameters named by gguf-py's TensorNameMap of the architecture, after the converter's renames
    (_converted); every such name is in gguf-py's MODEL_TENSORS for it, and symllm's names are exactly these.
    DeepSeek-V3's and GLM-4.5's router e_score_correction_bias (``exp_probs_b``) is a buffer transformers saves, not
    a parameter: symllm counts parameters, so it is left out of both sides."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cls, config_cls, kw, arch = GGUF_NAMED[family]
    config = getattr(transformers, config_cls)(**kw)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    arch = getattr(gguf.MODEL_ARCH, arch)
    names = gguf.get_tensor_name_map(arch, config.num_hidden_layers)
    allowed = {gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[arch]}
    expected = set()
    for hf in model.state_dict():
        if (hf == "lm_head.weight" and config.tie_word_embeddings) or hf.endswith("e_score_correction_bias"):
            continue
        for name in _converted(hf):
            gg = gguf_name(names, name)
            if gg is None and name.endswith("_bias"):  # gpt-oss's experts' biases: gate_up_proj_bias, down_proj_bias
                gg = names.get_name(name.removesuffix("_bias")) + ".bias"
            assert gg is not None, name
            assert gg.rsplit(".", 1)[0].replace(".0.", ".{bid}.").replace(".1.", ".{bid}.") in allowed, gg
            expected.add(gg)
    raw = dict(config.to_dict(), architectures=[cls])
    assert {t["name"] for t in F.gguf_tensors(from_dict(raw))} == expected


#: Q4_K_M bytes of the tiny models of GGUF_NAMED, by hand from llama_tensor_get_type (src/llama-quant.cpp at
#: llama.cpp 007dbbf3): every row is 32 long or shorter, so no Q4_K block (256) fits: the base type falls back to
#: Q5_0 (22 bytes a 32) and Q6_K to Q8_0 (34 a 32) where rows are multiples of 32, both to F16 where not (rows of 48,
#: 24, 16, 8, 6, 4: tensor_type_fallback); output.weight Q8_0 (its rows hold no Q4_K block); norms, biases, routers,
#: sinks, conv and decay vectors F32; with 2 layers use_more_bits(i, 2) picks i = 1 only (i >= 7·2/8)
_Q5, _Q8, _F16, _F32 = (lambda n: n // 32 * 22), (lambda n: n // 32 * 34), (lambda n: 2 * n), (lambda n: 4 * n)
_ENDS = _Q5(64 * 32) + _Q8(64 * 32) + _F32(32)  # token_embd (vocab 64 × d 32), output, output_norm
TINY_Q4_K_M = {
    # attn_qkv (32 → 4·8 + 2·2·8 = 64 rows) is attn_v-like: Q5_0 in layer 0, Q8_0 in layer 1; attn_output 32 × 32;
    # the fused ffn_up 32 → 2·48; ffn_down rows of 48: F16; two norms a layer
    "phi3": _ENDS + 2 * (2 * _F32(32) + _Q5(32 * 32) + _Q5(32 * 96) + _F16(48 * 32)) + _Q5(2048) + _Q8(2048),
    # MLA (n_h 4, r_kv 6, d_hr 4, d_hn 4, d_hv 2): attn_q 32 → 4·8, attn_kv_a_mqa 32 → 10, its norm 6, attn_k_b
    # (4, 6, 4) and attn_v_b (6, 2, 4) F16 (rows of 4 and 6), attn_output rows of 4·2 = 8: F16; layer 0 dense
    # (gate and up 32 → 48, down F16), layer 1: router 32 → 4 (F32), 4 experts of 8 (down rows of 8: F16) and 2
    # shared ones (16 wide: down rows of 16, F16)
    "deepseek_v2": _ENDS + 2 * (_F32(32) + _Q5(32 * 32) + _Q5(32 * 10) + _F32(6) + _F16(4 * 6 * 4) + _F16(6 * 2 * 4)
                                + _F16(8 * 32) + _F32(32))
    + 2 * _Q5(32 * 48) + _F16(48 * 32)
    + _F32(32 * 4) + 2 * _Q5(32 * 8 * 4) + _F16(8 * 32 * 4) + 2 * _Q5(32 * 16) + _F16(16 * 32),
    # layer 0 Gated DeltaNet (2 key heads of 4, 4 value heads of 6, kernel 3): attn_qkv 32 → 2·2·4 + 4·6 = 40, the
    # first of n_attention_wv = 2 (with layer 1's attn_v): Q5_0; attn_gate 32 → 24, ssm_beta and ssm_alpha 32 → 4,
    # ssm_conv1d 40·3, ssm_a and ssm_dt.bias 4 each, ssm_norm 6, ssm_out rows of 24: F16; layer 1 attention: attn_q
    # 32 → 2·4·8 (query and gate), attn_k 32 → 16, attn_v the second attn_v-like: Q8_0, attn_output, q/k norms 8;
    # each layer two norms and gate/up/down 32 ↔ 48
    "qwen3_5": _ENDS + 2 * (2 * _F32(32) + 2 * _Q5(32 * 48) + _F16(48 * 32))
    + _Q5(32 * 40) + _Q5(32 * 24) + 2 * _Q5(32 * 4) + _F32(40 * 3) + 2 * _F32(4) + _F32(6) + _F16(24 * 32)
    + _Q5(32 * 64) + _Q5(32 * 16) + _Q8(32 * 16) + _Q5(32 * 32) + 2 * _F32(8),
    # q/k/v biases; 4 experts of 16 (down rows of 16: F16); the gated shared expert of 24 (ffn_gate_inp_shexp a
    # vector of 32, F32; down rows of 24: F16); attn_v Q5_0 in layer 0, Q8_0 in layer 1
    "qwen2_moe": _ENDS + 2 * (2 * _F32(32) + _Q5(32 * 32) + _F32(32) + _Q5(32 * 16) + 2 * _F32(16) + _Q5(32 * 32)
                              + _F32(32 * 4) + 2 * _Q5(32 * 16 * 4) + _F16(16 * 32 * 4) + _F32(32)
                              + 2 * _Q5(32 * 24) + _F16(24 * 32))
    + _Q5(32 * 16) + _Q8(32 * 16),
    # attention biases on q, k, v and o, 4 sinks a layer, the router and its bias, 4 experts of 48 (down rows of
    # 48: F16) and their biases (gate 48, up 48, down 32 an expert)
    "gpt_oss": _ENDS + 2 * (2 * _F32(32) + _Q5(32 * 32) + _F32(32) + _Q5(32 * 16) + 2 * _F32(16) + _Q5(32 * 32)
                            + _F32(32) + _F32(4) + _F32(32 * 4) + _F32(4) + 2 * _Q5(32 * 48 * 4) + _F16(48 * 32 * 4)
                            + 2 * _F32(48 * 4) + _F32(32 * 4))
    + _Q5(32 * 16) + _Q8(32 * 16),
}


@pytest.mark.parametrize("family", TINY_Q4_K_M)
def test_new_gguf_architectures_q4_k_m_by_hand(family):
    """Each newly named architecture's tiny model (GGUF_NAMED) in Q4_K_M: the bytes by hand (TINY_Q4_K_M)."""
    transformers = pytest.importorskip("transformers")
    cls, config_cls, kw, _ = GGUF_NAMED[family]
    raw = dict(getattr(transformers, config_cls)(**kw).to_dict(), architectures=[cls])
    assert F.weight_bytes(from_dict(raw), "Q4_K_M")["total"] == TINY_Q4_K_M[family]


def test_pure_types_fall_back_as_llama_cpp():
    """gguf:TYPE (llama-quantize --pure) falls back as llama_tensor_get_type's tensor_type_fallback does (src/llama-
    quant.cpp 385-417 at 007dbbf3): gpt-oss-20b's rows of d = 2880 (11.25·256 = 90·32) hold no block of 256, so
    gguf:Q4_K stores those matrices Q5_0 (22 bytes a 32) and gguf:Q3_K Q4_0 (18 a 32), not F16; attn_output's rows
    (64 heads of 64 = 4096) keep the type (144 and 110 bytes a 256). By hand from its config (vocab 201088, 24 layers,
    8 key-value heads of 64, 32 experts of 2880): rows of 2880 2·V·d + L·(d·4096 + 2·d·512 + 3·32·d·2880), rows of
    4096 L·4096·d, the rest F32 (norms 2d a layer and d, attention biases 4096 + 512 + 512 + d, 64 sinks, the router
    32·d and its 32 biases, the experts' biases 32·(2·2880 + d))."""
    V, d, L = 201088, 2880, 24
    narrow, wide = 2 * V * d + L * (d * 4096 + 2 * d * 512 + 3 * 32 * d * 2880), L * 4096 * d
    vectors = L * (2 * d + 4096 + 512 + 512 + d + 64 + 32 * d + 32 + 32 * (2 * 2880 + d)) + d
    assert F.weight_bytes("gpt-oss-20b", "gguf:Q4_K")["total"] == narrow // 32 * 22 + wide // 256 * 144 + 4 * vectors
    assert F.weight_bytes("gpt-oss-20b", "gguf:Q3_K")["total"] == narrow // 32 * 18 + wide // 256 * 110 + 4 * vectors
    with pytest.raises(SymllmError, match="no fallback for Q8_0"):
        F.weight_bytes(from_dict(dict(SMALL, hidden_size=296, head_dim=74)), "gguf:Q8_0")


def test_glm_mtp_layer_written_as_llama_cpp_converts_it():
    """GLM-4.5's multi-token-prediction layer is in its GGUF (llama.cpp's Glm4MoeModel converts num_hidden_layers +
    num_nextn_predict_layers blocks): the tiny GLM-4.5 of GGUF_NAMED with one such layer stores blk.2 as gguf-py's
    TensorNameMap names the checkpoint's model.layers.2 (a decoder layer as transformers' layer 1, and embed_tokens,
    enorm, hnorm, eh_proj, shared_head.norm, shared_head.head: the names GLM-4.5's checkpoint gives them). Q4_K_M by
    hand (TINY_Q4_K_M's rules): three blocks now, so use_more_bits(i, 3) picks i = 2 only: blk.2's attn_v Q8_0 and
    its experts' down F16 either way (rows of 8); the module's embedding (64 × 32), eh_proj (2·32 → 32) and head
    (32 → 64) the base type (no token_embd or output rule: llama-quant.cpp matches those names exactly), Q5_0; its
    three norms F32."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cls, config_cls, kw, arch = GGUF_NAMED["glm4_moe"]
    config = getattr(transformers, config_cls)(**kw)
    with torch.device("meta"):
        layer1 = [k for k in getattr(transformers, cls)(config).state_dict() if k.startswith("model.layers.1.")]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GLM4_MOE, 3)
    hf = [h for k in layer1 if not k.endswith("e_score_correction_bias")
          for h in _converted(k.replace(".layers.1.", ".layers.2."))] + [
        f"model.layers.2.{n}.weight" for n in ("embed_tokens", "enorm", "hnorm", "eh_proj", "shared_head.norm",
                                               "shared_head.head")]
    expected = {gguf_name(names, h) for h in hf}
    assert None not in expected
    raw = dict(config.to_dict(), num_nextn_predict_layers=1, architectures=[cls])
    mine = F.weight_bytes(from_dict(raw), "Q4_K_M")
    assert {n for n in mine["tensors"] if n.startswith("blk.2.")} == expected
    attention = 2 * _F32(32) + _Q5(32 * 32) + _Q5(32 * 16) + _Q5(32 * 32)  # norms, q, k, output
    moe = _F32(32 * 4) + 2 * _Q5(32 * 8 * 4) + _F16(8 * 32 * 4) + 2 * _Q5(32 * 8) + _F16(8 * 32)
    nextn = _Q5(64 * 32) + 3 * _F32(32) + _Q5(64 * 32) + _Q5(64 * 32)
    total = (_ENDS + 3 * attention + 2 * _Q5(32 * 16) + _Q8(32 * 16) + 2 * _Q5(32 * 48) + _F16(48 * 32)
             + 2 * moe + nextn)
    assert mine["total"] == total


def test_qwen3_5_moe_q4_k_m_is_a_published_file_to_the_byte():
    """llama-bench's JSON for lmstudio-community's Qwen3.6-35B-A3B-Q4_K_M.gguf (qwen35moe, Qwen3.5-35B-A3B's sizes;
    build bebc9350e (10700), 2026-08-30, a public log: tests/data/published_file_sizes.json) reports model_size
    21,155,768,832 bytes and model_n_params 34,660,610,688: symllm's Q4_K_M tensors of qwen3.5-35b-a3b, to the byte
    and the element (its Gated DeltaNet's attn_qkv ranked with attn_v, the ssm tensors F32 or quantized as
    llama.cpp does, the shared expert's gate a vector, no MTP layer: the converter writes none for it)."""
    r = F.weight_bytes("qwen3.5-35b-a3b", "Q4_K_M")
    assert (r["total"], r["elements"]) == (21155768832, 34660610688)


def test_nemotron_h_blocks_norm_is_gguf_py_attn_norm():
    """Every Nemotron-H block (Mamba, attention, MLP or MoE) has one norm, ``backbone.layers.N.norm``, which gguf-py
    (0.19.0) names ``blk.N.attn_norm`` under NEMOTRON_H and NEMOTRON_H_MOE whatever the block's mixer: one a layer,
    none named ffn_norm or post_attention_norm (they were, for the MLP and MoE blocks)."""
    for arch, preset, layers in (("NEMOTRON_H", "nemotron-h-8b", 52), ("NEMOTRON_H_MOE", "nemotron-3-nano-30b-a3b", 52)):
        names = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch), layers)
        assert names.get_name("backbone.layers.7.norm.weight", try_suffixes=(".weight",)) == "blk.7.attn_norm.weight"
        stems = [t["stem"] for t in F.gguf_tensors(preset)]
        assert stems.count("attn_norm.weight") == layers
        assert not {"ffn_norm.weight", "post_attention_norm.weight"} & set(stems)
