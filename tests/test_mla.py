"""DeepSeek-V2/V3 (multi-head latent attention, shared experts, multi-token prediction), Kimi-K2 and GLM-4.5.

Expected numbers come from transformers' own classes (``DeepseekV2ForCausalLM``, ``DeepseekV3ForCausalLM``,
``Glm4MoeForCausalLM``: built on the meta device for parameters, run on small CPU models under
FlopCounterMode for FLOPs and for the cache they return), published figures (tests/data/published_params.json)
and hand arithmetic written here from the checkpoints' shapes."""
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf, preset_info
from symllm.costs import phases as costs, serving
from symllm.errors import SymllmError

from .conftest import CI, one_per_shape, requires
from .strategies import deepseek_configs, dsa_configs, family_configs, glm4_moe_configs

DEEPSEEK = ("deepseek-v2", "deepseek-v2-lite", "deepseek-v3", "deepseek-r1", "kimi-k2")
GLM = ("glm-4.5", "glm-4.5-air")
#: the model types the transformers property draws one at a time (each under every profile)
KINDS = ("deepseek_v2", "deepseek_v3", "glm4_moe", "deepseek_v32", "glm_moe_dsa")

#: transformers' module names -> symllm's kinds (attention/..., feed_forward/..., moe/...)
_ATTN = {"q_proj": "wq", "k_proj": "wk", "v_proj": "wv", "o_proj": "wo", "q_a_proj": "wq_a", "q_b_proj": "wq_b",
         "kv_a_proj_with_mqa": "wkv_a", "kv_b_proj": "wkv_b", "q_a_layernorm": "q_a_norm",
         "kv_a_layernorm": "kv_a_norm", "q_norm": "q_norm", "k_norm": "k_norm"}
_W = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
#: DeepSeek Sparse Attention's indexer (transformers' DeepseekV32Indexer) -> symllm's attention/indexer/...
_INDEXER = {"wq_b": "index_wq_b", "wk": "index_wk", "k_norm": "index_k_norm", "weights_proj": "index_weights"}


def _hf_model(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(config)


def _hf_kinds(model, raw: dict) -> dict:
    """numel per kind of parameter, named as symllm's breakdown without its group of blocks, the total and the
    active count (the total less (E - k)/E of the routed experts' weights)."""
    out = {"total": sum(p.numel() for p in model.parameters())}
    for name, p in model.named_parameters():
        parts = name.split(".")
        if "experts" in parts and "shared_experts" not in parts:
            kind = "moe/experts"  # gate_up_proj and down_proj of every routed expert
        elif "gate" in parts:
            kind = "moe/router"
        elif "shared_experts" in parts:
            kind = "moe/shared_expert"
        elif "indexer" in parts:
            kind = f"attention/indexer/{_INDEXER[parts[-2]]}"
        elif parts[-2] in _ATTN:
            kind = f"attention/{_ATTN[parts[-2]]}"
        elif parts[-2] in _W:
            kind = f"feed_forward/{_W[parts[-2]]}"
        else:
            kind = {"embed_tokens": "embedding", "input_layernorm": "attention_norm", "lm_head": "lm_head",
                    "post_attention_layernorm": "ffn_norm", "norm": "norm"}[parts[-2]]
        out[kind] = out.get(kind, 0) + p.numel()
    E, k = raw.get("n_routed_experts"), raw.get("num_experts_per_tok")
    unused = Fraction(out.get("moe/experts", 0)) * (E - k) / E if "moe/experts" in out else Fraction(0)
    assert unused.denominator == 1
    out["active"] = out["total"] - int(unused)
    return out


# --- transformers on the meta device: every preset, random configs ---------------------------------------

@pytest.mark.parametrize("name", one_per_shape(DEEPSEEK + GLM))
def test_presets_equal_transformers_on_meta(name):
    """Each kind of parameter (MLA's wq_a/wq_b/wkv_a/wkv_b/wo and their norms, GQA's projections with
    biases and QK-norm, router, routed experts, shared experts, the first dense layers), the total and the
    active count equal transformers' model built from the preset's config.json on the meta device (one
    preset of each shape, ``conftest.one_per_shape``: DeepSeek-R1 is DeepSeek-V3's)."""
    raw = preset_info(name)["config"]
    assert by_kind(symllm.params(name)) == _hf_kinds(_hf_model(raw), raw)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_random_configs_equal_transformers_on_meta(kind, data):
    """Per kind of parameter, the total and the active count, for random DeepSeek-V2, V3 and GLM-4.5 configs."""
    raw = data.draw(family_configs()[kind])
    assert by_kind(symllm.params(from_hf(raw))) == _hf_kinds(_hf_model(raw), raw)


# --- FLOPs: FlopCounterMode on small CPU models ------------------------------------------------------

def _run(model, tokens, cache=None):
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model(tokens, past_key_values=cache, use_cache=True)
    return counter.get_total_flops(), out.past_key_values


@given(st.one_of(deepseek_configs(), glm4_moe_configs()), st.integers(1, 2), st.integers(1, 5), st.integers(1, 3))
def test_prefill_decode_training_flops_and_kv_cache_equal_transformers(raw, b, s, steps):
    """transformers' eager model on CPU: the prefill of b × s tokens, each of ``steps`` decode steps after it
    (context s, s + 1, ...: MLA decompresses its whole latent cache with kv_b_proj on every pass, as symllm
    counts it), their sum (generation of ``steps`` tokens) and a training step have symllm's matmul FLOPs
    (dense attention). transformers' eager experts
    run each token through its k routed experts only, as symllm counts. After the prefill and after each
    step, the elements of the cache transformers returns (MLA: its latent, kv_lora_rank + qk_rope_head_dim per
    token and layer, one shared head; GLM: keys and values of n_kv heads) equal symllm's kv_cache_elements at
    that context (the same runs: one model build and one pass per step serve both counts)."""
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    torch.manual_seed(0)
    model = _hf_model(raw, "cpu")
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)  # the closed forms count composes (a workload compiles far more than needed)
    kv = costs.memory(mdl, "kv_cache")

    def held_bytes(cache, n):  # fp32: 4 bytes an element (the cache after s + n tokens, as count reports it)
        held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
        assert kv.subs(symllm.values(cfg, batch=b, seq=s, gen=n, kv_dtype="fp32")) == 4 * held

    tokens = torch.randint(0, raw["vocab_size"], (b, s))
    flops, cache = _run(model, tokens)
    assert costs.flops(mdl, "prefill").subs(symllm.values(cfg, batch=b, seq=s, logits="all")) == flops  # a plain forward
    held_bytes(cache, 0)
    generated = flops
    for step in range(steps):
        flops, cache = _run(model, torch.randint(0, raw["vocab_size"], (b, 1)), cache)
        assert costs.flops(mdl, "decode").subs(symllm.values(cfg, batch=b, seq=s, context=s + step)) == flops
        held_bytes(cache, step + 1)
        generated += flops
    # generation: the prefill and the steps, summed in closed form over the decode steps
    assert costs.flops(mdl, "generation").subs(symllm.values(cfg, batch=b, seq=s, gen=steps, logits="all")) == generated
    with FlopCounterMode(display=False) as train:
        model(tokens).logits.float().sum().backward()
    assert costs.flops(mdl, "training").subs(symllm.values(cfg, batch=b, seq=s)) == train.get_total_flops()


def test_latent_cache_is_what_inference_engines_keep_and_decompressed_is_larger():
    """DeepSeek-V3 keeps 512 + 64 = 576 elements per token and layer (the latent: DeepSeek-V2 paper §2.1.2,
    'only 576 elements' for V3's sizes); a plain implementation's decompressed keys and values hold
    128 × (128 + 64 + 128) = 40,960, 71.1 times as many (the KV cache of 61 layers in bf16: hand arithmetic)."""
    from symllm.arch.components import decompressed_kv_cache
    kv = costs.workload("deepseek-v3", batch=1, seq=1, gen=0, kv_dtype="bf16")["memory"]["kv_cache"]
    assert kv == 61 * 576 * 2
    from symllm.arch.symbols import b, s, t
    sizes = symllm.spec("deepseek-v3").values()
    assert decompressed_kv_cache().subs(sizes).subs({b: 1, s: 1, t: 0}) == 40_960



def _hf_latent_extras(raw: dict, b: int, s: int) -> int:
    """Bytes transformers' eager DeepSeek model (fp32, its layers dense) saves beyond symllm's eager stack,
    term by term: each RMSNorm (two a layer, the final one, and the latents' q_a_layernorm and
    kv_a_layernorm) keeps its unweighted product ``x·rsqrt(...)`` besides its input; kv_a_layernorm's input is
    a view of kv_a_proj_with_mqa's whole output, so that storage keeps the RoPE key's ``d_hr`` columns too;
    silu(gate_proj x) is kept besides gate_proj's output; the RoPE tables, computed once a forward (V3: cos
    and sin of ``s × d_hr``; V2: one complex64 table of ``s × d_hr/2``); and where ``b``, ``s`` or ``n_h`` is
    1, the values reach A·V's matmul as a view of kv_b_proj's output (no copy: the batch and head dimensions
    merge), whose storage holds the keys' ``d_hn`` columns too. 4 bytes an element."""
    L, d, T, d_hr = raw["num_hidden_layers"], raw["hidden_size"], b * s, raw["qk_rope_head_dim"]
    n_h = raw["num_attention_heads"]
    latent_norms = raw["kv_lora_rank"] + (raw["q_lora_rank"] or 0)
    elements = ((2 * L + 1) * T * d + L * T * latent_norms  # unweighted products
                + L * T * d_hr  # the RoPE key in the latent norm's input storage
                + L * T * raw["intermediate_size"]  # SiLU's output
                # the RoPE tables: V3's cos and sin; V2's s × d_hr/2 complex numbers, two floats each
                + (2 if raw["model_type"] == "deepseek_v3" else 1) * s * d_hr
                + (L * T * n_h * raw["qk_nope_head_dim"] if 1 in (b, s, n_h) else 0))  # the values' view
    return 4 * elements


@given(deepseek_configs(), st.integers(1, 2), st.integers(1, 5))
def test_saved_activations_equal_transformers_saved_tensors(raw, b, s):
    """What transformers' eager DeepSeek-V2/V3 saves for backward in a training forward (fp32, every layer
    dense: the latent path alone; saved_tensors_hooks, each storage once, parameters left out) is symllm's
    eager stack — the normed input, the query latent's norm and its output (wq_b's input), q, the KV latent's
    norm and its output (wkv_b's input), the decompressed keys and values, the probabilities, wo's input —
    plus the named terms of _hf_latent_extras."""
    torch = requires("torch")
    from .conftest import saved_and_eager
    raw = {**raw, "first_k_dense_replace": raw["num_hidden_layers"]}
    torch.manual_seed(0)
    measured, ours = saved_and_eager(_hf_model(raw, "cpu").train(), raw, b, s)
    assert measured == ours + _hf_latent_extras(raw, b, s)

# --- published figures and the multi-token-prediction module ----------------------------------------

def test_deepseek_v3_main_model_and_mtp_are_the_published_671b_and_685b():
    """DeepSeek-V3's README: '685B, which includes 671B of the Main Model weights and 14B of the Multi-Token
    Prediction (MTP) Module weights'. transformers builds the main model (671,026,404,352, checked above);
    the MTP module as the checkpoint stores it (model.layers.61: its own embedding and head copies, enorm,
    hnorm, eh_proj and one MoE layer) brings it to 684.5B, which the model page rounds to 685B. Hand
    arithmetic of that module: 2·V·d + 3·d + 2·d² + one MoE layer of layers 3-60."""
    p = symllm.params("deepseek-v3")
    V, d = 129280, 7168
    moe_layer = sum(v for k, v in p.items() if k.startswith("moe_block/")) // 58
    assert p["mtp"] == 2 * V * d + 3 * d + 2 * d * d + moe_layer
    assert round((p["total"] + p["mtp"]) / 1e9) == 684 and round(p["total"] / 1e9) == 671
    assert "mtp" not in symllm.params("kimi-k2")  # num_nextn_predict_layers 0


@pytest.mark.parametrize("name, d, moe_layers, published", [("glm-4.5", 5120, 89, 358), ("glm-4.5-air", 4096, 45, 110)])
def test_glm45_mtp_layer_holds_its_own_embedding_and_head(name, d, moe_layers, published):
    """GLM-4.5's and GLM-4.5-Air's checkpoints store the multi-token-prediction layer (model.layers.92 and .46)
    with its own copies of the embedding and the output head: vLLM's fix for GLM-4.6 (vllm-project/vllm#27597,
    'the GLM-4.6 checkpoint doesn't include the shared parameters (model.layers.92.shared_head.head.weight shared
    with lm_head.weight, model.layers.92.embed_tokens.weight with model.embed_tokens.weight) ... while the GLM-4.5
    checkpoint does'); GLM-4.5-Air's GGUF conversions carry blk.46.nextn.embed_tokens and
    blk.46.nextn.shared_head_head, which llama.cpp's converter reads from those tensors. Hand arithmetic of the
    module: 2·V·d + 3·d (enorm, hnorm, shared_head.norm) + 2·d² (eh_proj) + one MoE layer; with it the
    checkpoint holds 358B and 110B parameters, the Hugging Face pages' safetensors counts (the model cards'
    '355B' and '106B' are the model without it)."""
    p = symllm.params(name)
    V = 151552
    moe_layer = sum(v for k, v in p.items() if k.startswith("moe_block/")) // moe_layers
    assert p["mtp"] == 2 * V * d + 3 * d + 2 * d * d + moe_layer
    assert round((p["total"] + p["mtp"]) / 1e9) == published


def test_vendors_active_figures_leave_out_the_embedding_tables():
    """GLM-4.5 '32B active', GLM-4.5-Air '12B active' (Z.ai): what symllm counts active less the input
    embedding and the output head (33.6B and 13.4B with them, as symllm reports)."""
    for name, published in (("glm-4.5", 32), ("glm-4.5-air", 12)):
        p = symllm.params(name)
        assert int((p["active"] - p["embedding"] - p["lm_head"]) / 1e9) == published


# --- shards, LoRA, the command line -----------------------------------------------------------------

def test_tensor_parallel_shards_follow_transformers_plan():
    """Under tp=2 (DeepseekV3Config.base_model_tp_plan): q_b_proj and kv_b_proj column-split, o_proj row-split,
    q_a_proj and kv_a_proj_with_mqa whole (in no plan / replicated), the shared experts split as a SwiGLU;
    the routed experts are split over expert-parallel ranks (ep=2: half of them) and each expert's width over
    the tensor ranks (tp=2: 4 of moe_intermediate_size 8, as vLLM's FusedMoE holds them), or kept whole."""
    raw = {"model_type": "deepseek_v3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
           "moe_intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
           "q_lora_rank": 8, "kv_lora_rank": 6, "qk_rope_head_dim": 4, "qk_nope_head_dim": 4, "v_head_dim": 2,
           "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 2, "first_k_dense_replace": 1,
           "n_group": 1, "topk_group": 1, "num_nextn_predict_layers": 0}
    cfg = from_hf(raw)
    whole = by_kind(symllm.params(cfg))
    from symllm.arch import symbols as S
    from symllm.costs import parallel
    per_gpu, kept = (parallel.params_per_gpu(symllm.model_for(cfg), pp_stages=False, experts=e).subs(
        {**symllm.spec(cfg).values(), S.N_t: 2, S.N_e: 2}) for e in ("split", "whole"))  # tensor rank 0's
    d, L_moe = 32, 1
    attention = (d * 8 + 8 + 8 * 4 * 8 // 2 + d * (6 + 4) + 6 + 6 * 4 * (4 + 2) // 2 + 4 * 2 * d // 2) * 2
    shared = 3 * d * 16 // 2 * L_moe
    experts = whole["moe/experts"] // 2 // 2
    dense = 3 * d * 48 // 2
    rest = whole["embedding"] // 2 + whole["lm_head"] // 2 + whole["moe/router"] + whole["attention_norm"] + \
        whole["ffn_norm"] + whole["norm"]
    assert per_gpu == attention + shared + experts + dense + rest
    assert kept == per_gpu + experts


def test_lora_targets_name_mlas_projections(cli):
    """--lora-targets takes DeepSeek's HF names (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj):
    LoRA of rank r on them adds r·(fan_in + fan_out) per projection and layer (hand arithmetic)."""
    r = cli(["count", "deepseek-v2-lite", "--lora-rank", "8", "--lora-targets", "q_proj,kv_a_proj_with_mqa,kv_b_proj",
             "--json"])
    assert r.code == 0, r.err
    d, n_h, L = 2048, 16, 27
    expected = 8 * L * ((d + n_h * 192) + (d + 512 + 64) + (512 + n_h * 256))
    assert json.loads(r.out)["params"]["trainable"] == expected


#: the linear names a PEFT user of DeepSeek-V3.2 / GLM-5 writes (transformers' module names: the latent attention's
#: and the indexer's wq_b, wk and weights_proj), and how symllm spells the two whose names are its own for other
#: linears (wq_b: the attention's q_b_proj; wk: GQA's k_proj)
_DSA_TARGETS = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "wq_b", "wk", "weights_proj")
_DSA_SPELLED = {"wq_b": "index_wq_b", "wk": "index_wk"}


@given(dsa_configs(), st.integers(1, 16), st.lists(st.sampled_from(_DSA_TARGETS), min_size=1, max_size=4, unique=True))
def test_dsa_lora_trainable_equals_peft(raw, rank, targets):
    """PEFT's get_peft_model on transformers' DeepSeek-V3.2 / GLM-5 (meta device) matches target_modules against
    the end of every module's name: wq_b, wk and weights_proj adapt the indexer's linears (which transformers runs
    under torch.no_grad: PEFT adds their adapters all the same), q_b_proj the attention's alone. symllm's trainable
    count, the indexer's two spelled index_wq_b and index_wk, equals PEFT's for drawn configs, ranks and targets."""
    peft = requires("peft")
    model = peft.get_peft_model(_hf_model(raw), peft.LoraConfig(r=rank, target_modules=list(targets)))
    theirs = sum(p.numel() for p in model.parameters() if p.requires_grad)
    spelled = ",".join(_DSA_SPELLED.get(t, t) for t in targets)
    ours = symllm.workload(from_hf(raw), lora_rank=rank, lora_targets=spelled)["params"]["trainable"]
    assert ours == theirs


def test_dsa_indexer_lora_by_hand():
    """deepseek-v3.2's 61 indexers (wq_b: q_lora_rank 1536 -> 64 heads x 128; wk: 7168 -> 128; weights_proj:
    7168 -> 64 heads), LoRA of rank 8: 8·61·((1536 + 8192) + (7168 + 128) + (7168 + 64)) = 11,836,928 trainable;
    wq_b keeps naming the attention's q_b_proj (1536 -> 128 heads x (128 + 64)): 8·61·(1536 + 24576)."""
    indexer = symllm.workload("deepseek-v3.2", lora_rank=8, lora_targets="index_wq_b,index_wk,weights_proj")
    assert indexer["params"]["trainable"] == 8 * 61 * ((1536 + 8192) + (7168 + 128) + (7168 + 64)) == 11_836_928
    attention = symllm.workload("deepseek-v3.2", lora_rank=8, lora_targets="wq_b")
    assert attention["params"]["trainable"] == 8 * 61 * (1536 + 24576)


@pytest.mark.parametrize("name", ["deepseek-v3", "glm-4.5-air"])
def test_count_derive_report_and_sweep(cli, tmp_path, name):
    """count names the shared experts, the latent attention and the MTP part apart from the total; derive
    writes the attention's parameters with MLA's sub-terms; report writes a LaTeX document pdflatex compiles;
    a sweep over batch equals count's KV cache."""
    r = cli(["count", name])
    text = " ".join(r.out.split())
    assert r.code == 0 and "1 shared expert of width" in text and "multi-token prediction (apart)" in text
    assert ("multi-head latent attention" in text) == (name == "deepseek-v3")
    r = cli(["derive", "--model", name, "--component", "attention", "--format", "text"])
    assert r.code == 0 and ("wkv_b = n_h*r_kv*(d_hn + d_hv)" in r.out) == (name == "deepseek-v3")
    out = tmp_path / "report.tex"
    assert cli(["report", name, "--format", "latex", "--standalone", "-o", out]).code == 0
    _compiles(out)
    r = cli(["sweep", "--base", name, "--batch", "1,2", "--quantity", "kv_cache", "--format", "jsonl"])
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    kv = [json.loads(cli(["count", name, "--batch", str(b), "--json"]).out)["memory"]["kv_cache"] for b in (1, 2)]
    assert [row["kv_cache"] for row in rows] == kv


def _compiles(tex):
    """pdflatex compiles ``tex`` (skipped without pdflatex, as tests/test_render.py does)."""
    import shutil
    import subprocess
    if shutil.which("pdflatex") is None:
        pytest.fail("CI=true and pdflatex is missing") if CI else pytest.skip("pdflatex is not installed")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tex.parent,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]


def test_not_modelled_keys_are_refused_in_one_line(cli, tmp_path):
    """moe_layer_freq other than 1 (ignored by transformers, used by DeepSeek's code), a head_dim that differs
    from qk_rope_head_dim, and GQA heads with a latent attention are refused in one line."""
    base = preset_info("deepseek-v2-lite")["config"]
    for change, key in (({"moe_layer_freq": 2}, "moe_layer_freq"), ({"head_dim": 128}, "head_dim"),
                        ({"num_key_value_heads": 8}, "num_key_value_heads")):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({**base, **change}))
        r = cli(["count", str(path)])
        assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {key}:") and r.err.count("\n") == 1


# --- the torch reference model (symllm verify) -----------------------------------------------------------

@pytest.mark.parametrize("name", ["deepseek-v2-lite"])  # V3, GLM-4.5: 15,000 expert modules, minutes to build
def test_verify_agrees_for_the_new_presets(torch, cli, name):
    """symllm verify builds the torch reference (its own MLA and shared experts) and finds every kind equal."""
    r = cli(["verify", name])
    assert r.code == 0 and r.out.rstrip().endswith(f"{name}: all components agree")


@given(deepseek_configs(), st.integers(1, 2), st.integers(1, 4))
def test_reference_latent_attention_flops_and_cache_equal_flopcountermode(torch, reference, raw, b, s):
    """The reference's MLA (DeepSeek's naive path: the latent cached, decompressed on every pass) has
    symllm's prefill and decode-step matmul FLOPs under FlopCounterMode and holds its KV-cache bytes."""
    from torch.utils.flop_counter import FlopCounterMode
    cfg = from_hf(raw)
    model, mdl = reference.build(cfg, device="cpu"), symllm.model_for(cfg)
    with FlopCounterMode(display=False) as prefill, torch.no_grad():
        model(torch.zeros(b, s, dtype=torch.long), 0, use_cache=True)
    with FlopCounterMode(display=False) as decode, torch.no_grad():
        model(torch.zeros(b, 1, dtype=torch.long), s, use_cache=True)
    assert costs.flops(mdl, "prefill").subs(symllm.values(cfg, batch=b, seq=s, logits="all")) == prefill.get_total_flops()
    assert costs.flops(mdl, "decode").subs(symllm.values(cfg, batch=b, seq=s, context=s)) == decode.get_total_flops()
    kv = costs.memory(mdl, "kv_cache").subs(symllm.values(cfg, batch=b, seq=s, gen=1, kv_dtype="fp32"))
    assert kv == model.kv_cache_bytes()


# --- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the indexer's FLOPs, its top-k and its key cache -------

@given(dsa_configs(), st.integers(1, 2), st.integers(1, 5), st.integers(1, 3))
def test_sparse_attention_flops_kv_and_state_cache_equal_transformers(raw, b, s, steps):
    """transformers' eager DeepSeek-V3.2 / GLM-5 on CPU, under FlopCounterMode: the prefill of b × s tokens and
    each of ``steps`` decode steps have symllm's matmul FLOPs (the indexer's wq_b, wk, weights_proj, its
    scores ``2·n_I·d_I`` and head-weighted sum ``2·n_I`` per query and cached key) once the attention core's
    convention is stated: eager scores every one of the ``T`` keys a query holds and masks those the indexer
    did not select; symllm counts the ``min(index_topk, T)`` it attends, so the eager count is symllm's plus
    ``2·n_h·(d_hn + d_hr + d_hv)`` per unselected query-key pair and layer (hand arithmetic: QKᵀ and A·V).
    The generation's closed form is their sum. After each pass the latent cache transformers returns is
    symllm's kv_cache and its indexer keys (``indexer_keys``, index_head_dim a token and layer) symllm's
    state_cache, in bytes at fp32."""
    torch = requires("torch")
    torch.manual_seed(0)
    model = _hf_model(raw, "cpu")
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    kv, state = costs.memory(mdl, "kv_cache"), costs.memory(mdl, "state_cache")
    L, n_h, K = raw["num_hidden_layers"], raw["num_attention_heads"], raw["index_topk"]
    per_pair = 2 * n_h * (raw["qk_nope_head_dim"] + raw["qk_rope_head_dim"] + raw["v_head_dim"])

    def unselected(queries, keys):  # eager's pairs beyond the top-k, all layers
        return L * per_pair * b * queries * (keys - min(K, keys))

    def held(cache, n):
        values = symllm.values(cfg, batch=b, seq=s, gen=n, kv_dtype="fp32")
        assert kv.subs(values) == 4 * sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
        assert state.subs(values) == 4 * sum(layer.indexer_keys.numel() for layer in cache.layers
                                             if layer.indexer_keys is not None)  # none in GLM-5's shared layers

    tokens = torch.randint(0, raw["vocab_size"], (b, s))
    flops, cache = _run(model, tokens)
    assert costs.flops(mdl, "prefill").subs(symllm.values(cfg, batch=b, seq=s, logits="all")) == flops - unselected(s, s)
    held(cache, 0)
    generated = flops - unselected(s, s)
    for step in range(steps):
        flops, cache = _run(model, torch.randint(0, raw["vocab_size"], (b, 1)), cache)
        ours = costs.flops(mdl, "decode").subs(symllm.values(cfg, batch=b, seq=s, context=s + step))
        assert ours == flops - unselected(1, s + step + 1)
        held(cache, step + 1)
        generated += ours
    assert costs.flops(mdl, "generation").subs(symllm.values(cfg, batch=b, seq=s, gen=steps, logits="all")) == generated


def test_sparse_attention_core_is_top_k_of_the_context_by_hand():
    """The attention core of one DSA layer at decode: each query attends min(K_I, t + 1) keys, so a step past
    the top-k costs the same whatever the context (DeepSeek-V3.2-Exp's sizes: n_h = 128, d_hn + d_hr = 192,
    d_hv = 128: 2·128·(192 + 128)·2048 FLOPs for K_I = 2048), while the indexer's scoring grows with it,
    2·n_I·(d_I + 1) per cached key (n_I = 64, d_I = 128): hand arithmetic."""
    from symllm.arch import components as C
    from symllm.arch import symbols as S
    attn = C.latent_attention(sparse=True)
    core = attn.child("scores").flops + attn.child("context").flops
    sizes = {S.b: 1, S.s: 1, S.n_h: 128, S.d_hn: 128, S.d_hr: 64, S.d_hv: 128, S.K_I: 2048, S.n_I: 64, S.d_I: 128}
    for t in (4095, 100_000):
        assert core.subs(sizes).subs(S.t, t) == 2 * 128 * (192 + 128) * 2048
        assert attn.child("indexer/index_scores").flops.subs(sizes).subs(S.t, t) == 2 * 64 * 129 * (t + 1)
    assert core.subs(sizes).subs(S.t, 99) == 2 * 128 * (192 + 128) * 100


def _v32_exp() -> dict:
    """DeepSeek-V3.2-Exp as transformers reads it: DeepSeek-V3's config.json (the preset) with the model type and
    the indexer's sizes of deepseek-ai/DeepSeek-V3.2-Exp's inference/config_671B_v3.2.json (index_n_heads 64,
    index_head_dim 128, index_topk 2048; its other sizes are DeepSeek-V3's: dim 7168, 61 layers, 3 dense,
    q_lora_rank 1536, kv_lora_rank 512, heads 128 of 128 + 64, values 128, 256 experts of 2048, 8 per token)."""
    raw = dict(preset_info("deepseek-v3")["config"], model_type="deepseek_v32",
               architectures=["DeepseekV32ForCausalLM"], index_n_heads=64, index_head_dim=128, index_topk=2048)
    return raw


def test_deepseek_v32_exp_is_deepseek_v3_plus_the_indexer_by_hand():
    """DeepSeek-V3.2-Exp's sizes (DeepSeek's inference/config_671B_v3.2.json) count DeepSeek-V3's parameters
    plus, in each of the 61 layers, the indexer: wq_b 1536 × 64·128, wk 7168 × 128, k_norm's weight and bias
    2 × 128, weights_proj 7168 × 64 (hand arithmetic); its state cache after 1,000 tokens at bf16 is
    61 × 1,000 × 128 × 2 bytes, beside the unchanged latent KV cache 61 × 1,000 × 576 × 2."""
    cfg = from_hf(_v32_exp())
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert symllm.params(cfg)["total"] == symllm.params("deepseek-v3")["total"] + 61 * indexer
    memory = costs.workload(cfg, batch=1, seq=1000, gen=0, kv_dtype="bf16")["memory"]
    assert memory["state_cache"] == 61 * 1000 * 128 * 2 and memory["kv_cache"] == 61 * 1000 * 576 * 2


def test_glm5_shared_indexer_layers_by_hand_and_on_meta():
    """GLM-5's layers that reuse the previous layer's top-k (GlmMoeDsaConfig: index_topk_freq 4 after
    index_skip_topk_offset 2 makes layers 0, 1 and 5 of 6 'full', 2-4 'shared') have no indexer
    (GlmMoeDsaAttention: ``self.indexer = None if self.skip_topk``): its parameters are in 3 layers, each
    wq_b 4 × 2·4 = 32, wk 16 × 4 = 64, k_norm's weight and bias 2 × 4 = 8, weights_proj 16 × 2 = 32 (136, hand
    arithmetic from GlmMoeDsaIndexer.__init__), as numel of transformers' model on the meta device says; its
    cached indexer keys after 10 tokens at bf16 are 3 × 10 × 4 × 2 = 240 bytes, the latent cache of all 6
    layers unchanged, 6 × 10 × (4 + 2) × 2 = 720; a config whose first layer is 'shared' is refused."""
    raw = {"model_type": "glm_moe_dsa", "vocab_size": 10, "hidden_size": 16, "num_hidden_layers": 6,
           "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 4, "kv_lora_rank": 4,
           "qk_rope_head_dim": 2, "qk_nope_head_dim": 2, "v_head_dim": 2, "index_n_heads": 2, "index_head_dim": 4,
           "index_topk": 3, "first_k_dense_replace": 1, "n_routed_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 3, "n_shared_experts": 1, "intermediate_size": 8, "index_topk_freq": 4}
    cfg = from_hf(raw)
    assert sum(v for k, v in symllm.params(cfg).items() if "/indexer/" in k) == 3 * 136  # every group's layers
    assert symllm.params(cfg)["total"] == symllm.params(from_hf({**raw, "index_topk_freq": 1}))["total"] - 3 * 136
    model = _hf_model(raw)
    assert sum(p.numel() for n, p in model.named_parameters() if ".indexer." in n) == 3 * 136
    assert sorted({int(n.split(".")[2]) for n, _ in model.named_parameters() if ".indexer." in n}) == [0, 1, 5]
    memory = symllm.workload(cfg, batch=1, seq=10, kv_dtype="bf16")["memory"]
    assert memory["state_cache"] == 240 and memory["kv_cache"] == 720
    with pytest.raises(SymllmError, match="indexer_types: the first layer is 'shared'"):
        from_hf({**raw, "indexer_types": ["shared"] + ["full"] * 5})


def test_glm5_mtp_layer_has_its_own_indexer_when_the_last_layers_share_one():
    """GLM-5's multi-token-prediction layer runs its own indexer whatever the last layers do: SGLang's
    DeepseekV2AttentionMLA for the nextn layer sets skip_topk = False (never reusing a top-k; THUDM/slime's
    sglang patch for GLM-5), and the published GLM-5 checkpoints hold model.layers.{L}.self_attn.indexer.*
    (wq_b, wk, k_norm, weights_proj) beside the layer's MLA and MoE. Five layers with index_topk_freq 4 after
    offset 2: layers 0, 1 'full', 2-4 'shared' (the last one without an indexer). The module, by hand: enorm,
    hnorm and shared_head.norm 16 each, eh_proj 32 × 16, and one MoE decoder layer with its indexer: layer 1 of
    transformers' model on the meta device (numel of model.layers.1.*); the same as when every layer is 'full'.
    No embedding or head of its own: GLM-5's checkpoint stores none (vllm-ascend's GLM-5 guide,
    docs/source/tutorials/models/GLM5.md, copies model.embed_tokens and lm_head into
    model.layers.78.embed_tokens and shared_head.head of the BF16 weights for its loader), unlike
    DeepSeek-V3.2's (tests/test_new_family_presets.py::test_deepseek_v32_preset_is_the_stored_checkpoint)."""
    raw = {"model_type": "glm_moe_dsa", "vocab_size": 10, "hidden_size": 16, "num_hidden_layers": 5,
           "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 4, "kv_lora_rank": 4,
           "qk_rope_head_dim": 2, "qk_nope_head_dim": 2, "v_head_dim": 2, "index_n_heads": 2, "index_head_dim": 4,
           "index_topk": 3, "first_k_dense_replace": 1, "n_routed_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 3, "n_shared_experts": 1, "intermediate_size": 8, "index_topk_freq": 4,
           "num_nextn_predict_layers": 1}
    model = _hf_model(raw)
    assert sorted({int(n.split(".")[2]) for n, _ in model.named_parameters() if ".indexer." in n}) == [0, 1]
    layer = sum(p.numel() for n, p in model.named_parameters() if n.startswith("model.layers.1."))
    module = 3 * 16 + 32 * 16 + layer
    assert symllm.params(from_hf(raw))["mtp"] == module
    assert symllm.params(from_hf({**raw, "index_topk_freq": 1}))["mtp"] == module


def test_serve_pages_the_indexer_keys_beside_the_latent_as_vllm(cli, tmp_path):
    """vLLM's paged cache of DeepSeek-V3.2-Exp, per token, written out from vLLM's source
    (vllm/model_executor/models/deepseek_v2.py): each of the 61 layers' MLA latent, kv_lora_rank + qk_rope_head_dim
    = 512 + 64 elements at bf16 (an MLAAttentionSpec of one head), and its Indexer's DeepseekV32IndexerCache of
    head_dim + head_dim // quant_block_size * 4 = 128 + 128 // 128 * 4 = 132 uint8 bytes (FP8 keys, one fp32
    scale a block of 128), whatever the KV cache's dtype: 61 * (1152 + 132) = 78,324 bytes a token. With vLLM's
    measured KV cache bytes given, its blocks of 16 tokens are that budget over 16 such tokens; and count --serve
    prints the sum and the indexer's part."""
    cfg = from_hf(_v32_exp())
    budget = 10 * 2 ** 30  # a measured "Available KV cache memory"
    r = serving.capacity(cfg, gpu="h200", seq=8192, kv_cache_bytes=budget)
    assert r["indexer_bytes_per_token"] == 61 * 132 and r["kv_bytes_per_token"] == 61 * (576 * 2 + 132)
    assert r["blocks"] == budget // (16 * 78_324) and r["kv_tokens"] == 16 * r["blocks"]
    assert "state_cache_bytes" not in r  # nothing held per sequence: the indexer's keys are paged per token
    fp8 = serving.capacity(cfg, gpu="h200", seq=8192, kv_cache_bytes=budget, kv_dtype="fp8")
    assert fp8["kv_bytes_per_token"] == 61 * (576 + 132)  # the latent in fp8; the indexer's layout unchanged
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_v32_exp()))
    out = cli(["count", str(path), "--gpu", "h200", "--serve"])
    assert out.code == 0 and "78,324 bytes a token" in out.out and "indexer keys" in out.out, out.err
