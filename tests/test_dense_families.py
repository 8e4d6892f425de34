"""Phi-3, OLMo 2 and Gemma 1, 2, 3: their presets and random configs against transformers' own classes.

Expected numbers come from transformers (its ``Phi3ForCausalLM``, ``Olmo2ForCausalLM``, ``GemmaForCausalLM``,
``Gemma2ForCausalLM``, ``Gemma3ForCausalLM`` built on the meta device for parameters per kind, run on small
CPU models under FlopCounterMode through a prefill and decode steps with its own cache, its tensor-parallel
plans), PEFT's LoRA on them, the published figures of tests/data/published_params.json and hand arithmetic.
"""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf, preset_info
from symllm.costs import phases as costs

from .conftest import DATA, assert_refused_in_one_line, generate, one_per_shape, requires
from .strategies import DENSE_FAMILIES, dense_family_configs

#: the model types the transformers property draws one at a time (each under every profile)
KINDS = DENSE_FAMILIES

PRESETS = [n for n in symllm.preset_names() if preset_info(n)["config"].get("model_type") in DENSE_FAMILIES]
#: one preset of each family's parts, for the command line: Gemma 1's (GeGLU, (1 + weight) norms, the √d
#: embedding scale) are all in Gemma 2 2B's report too, beside its sandwich norms, soft-capping and local
#: layers (a Gemma 1 report, seconds of cold rendering, went through the same paths)
ONE_EACH = ["phi-3-mini-4k", "olmo-2-7b", "gemma-2-2b", "gemma-3-1b"]

#: transformers' module names -> symllm's kinds; post_attention_layernorm is the pre-feed-forward norm of
#: the LLaMA-like blocks (Phi-3, Gemma 1) and the post-attention norm of OLMo 2 and Gemma 2, 3
_KINDS = {"embed_tokens": "embedding", "q_proj": "attention/wq", "k_proj": "attention/wk",
          "v_proj": "attention/wv", "o_proj": "attention/wo", "qkv_proj": "attention/wqkv",
          "q_norm": "attention/q_norm", "k_norm": "attention/k_norm", "gate_proj": "feed_forward/w1",
          "up_proj": "feed_forward/w3", "down_proj": "feed_forward/w2", "gate_up_proj": "feed_forward/w13",
          "input_layernorm": "attention_norm", "pre_feedforward_layernorm": "ffn_norm",
          "post_feedforward_layernorm": "post_ffn_norm", "norm": "norm", "lm_head": "lm_head",
          # Gemma 4's per-layer embeddings: the model's table, projection and norm, each layer's gate, projection, norm
          "embed_tokens_per_layer": "per_layer_embedding", "per_layer_model_projection": "per_layer_model_projection",
          "per_layer_projection_norm": "per_layer_norm", "per_layer_input_gate": "per_layer_gate",
          "per_layer_projection": "per_layer_projection", "post_per_layer_input_norm": "post_per_layer_norm",
          # Gemma 4's MoE block (enable_moe_block): the router's projection and its two bare vectors, the fused
          # experts (gate_up_proj and down_proj, bare on Gemma4TextExperts), the three norms around the branches
          "proj": "moe/router/router_proj", "router.scale": "moe/router/router_scale",
          "router.per_expert_scale": "moe/router/per_expert_scale", "experts.gate_up_proj": "moe/experts",
          "experts.down_proj": "moe/experts", "post_feedforward_layernorm_1": "post_ffn_norm_1",
          "pre_feedforward_layernorm_2": "moe_norm", "post_feedforward_layernorm_2": "post_moe_norm"}


def _hf_model(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    # eager experts (Gemma 4's MoE block): each expert's matmuls over the tokens routed to it, which FlopCounterMode
    # counts (the default grouped_mm kernel needs aligned strides on the CPU)
    config = transformers.AutoConfig.for_model(**raw, attn_implementation="eager", experts_implementation="eager")
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(config)


def _hf_kinds(raw: dict) -> dict:
    """numel per symllm kind of transformers' model for ``raw`` (meta device), and the total."""
    model = _hf_model(raw)
    out = {"total": sum(p.numel() for p in model.parameters())}  # a tied matrix once
    # a block with a norm after its feed-forward (OLMo 2, Gemma 2, 3) has one after attention too: its
    # post_attention_layernorm is that one, not the pre-feed-forward norm (read off transformers' own modules)
    post_norm = any(name.endswith("post_feedforward_layernorm.weight") for name, _ in model.named_parameters())
    routed = 0
    for name, p in model.named_parameters():
        # a module's weight by its module's name; a parameter bare on its module (Gemma 4's router and experts)
        # by both names
        leaf = name.split(".")[-2] if name.endswith((".weight", ".bias")) else ".".join(name.split(".")[-2:])
        kind = ("post_attention_norm" if post_norm else "ffn_norm") if leaf == "post_attention_layernorm" \
            else _KINDS[leaf]
        out[kind] = out.get(kind, 0) + p.numel()
        routed += p.numel() if leaf.startswith("experts.") else 0
    # every weight is used by every token but the routed experts, of which a token uses top_k of num_experts
    config = model.config
    out["active"] = out["total"] - (routed - routed * config.top_k_experts // config.num_experts if routed else 0)
    return out


# --- parameters ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", one_per_shape(PRESETS))
def test_presets_equal_transformers_on_meta(name):
    """Each kind of parameter (fused or separate projections, QK-norms, pre-, post- and sandwich norms) and
    the total of one preset of each shape (``conftest.one_per_shape``: the others differ only in sizes) equal
    transformers' model built from its config.json on the meta device."""
    assert by_kind(symllm.params(name)) == {k: v for k, v in _hf_kinds(preset_info(name)["config"]).items() if v}


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_random_configs_equal_transformers_on_meta(kind, data):
    """Per kind, the total and the active count of random Phi-3, OLMo 2 and Gemma 1-3 configs equal
    transformers' model on the meta device (each family drawn under every profile)."""
    raw = data.draw(dense_family_configs(kind))
    assert by_kind(symllm.params(from_hf(raw))) == {k: v for k, v in _hf_kinds(raw).items() if v}


def test_published_figures():
    """The figures their makers publish (tests/data/published_params.json, each with its source): the Gemma
    reports' non-embedding counts exactly (their embedding counts are for a padded vocabulary), and the
    rounded totals of the model cards within the digits they print."""
    figures = json.loads((DATA / "published_params.json").read_text(encoding="utf-8"))
    checked = 0
    for name in PRESETS:
        figure = figures.get(name, {})
        if "non_embedding" in figure:
            counts, published = symllm.params(name), figure["non_embedding"]
            assert abs(counts["total"] - counts["embedding"] - published["value"]) <= published.get("within_abs", 0), name
            checked += 1
    assert checked == 9  # Gemma 2B, 7B; Gemma 2 2B, 9B, 27B exactly; Gemma 3 1B, 4B, 12B, 27B to the million


# --- FLOPs and the KV cache: transformers run on the CPU ----------------------------------------------

@given(dense_family_configs(), st.integers(1, 2), st.integers(1, 10), st.integers(0, 4))
def test_prefill_decode_and_kv_equal_transformers(raw, b, s, n):
    """Prefill, one decode step and the whole generation (dense attention: what transformers' eager kernels
    compute, a window's last min(t, W - 1) cached keys and the new ones) equal FlopCounterMode's over
    transformers' own loop, soft-capping and GeGLU being element-wise, past Phi-3's and Gemma's windows too
    (Gemma's local layers beside its global ones); the KV cache holds what transformers' cache holds, but
    for the one position fewer it keeps in each sliding layer between steps once the window is full (the
    next step's own key completes it)."""
    _generation_agrees(raw, b, s, n)


@given(dense_family_configs("exaone4"), st.integers(1, 2), st.integers(1, 10), st.integers(0, 4))
def test_exaone4_prefill_decode_and_kv_equal_transformers(raw, b, s, n):
    """The same for EXAONE 4 alone (its local layers with RoPE and a window beside global ones without
    either), so that every profile draws it."""
    _generation_agrees(raw, b, s, n)


@given(dense_family_configs("gemma4_text"), st.integers(1, 2), st.integers(1, 10), st.integers(0, 4))
def test_gemma4_prefill_decode_and_kv_equal_transformers(raw, b, s, n):
    """The same for Gemma 4 alone (full layers of their own head width and key/value heads, without v_proj
    under attention_k_eq_v, beside sliding ones of the model's shape), so that every profile draws it."""
    _generation_agrees(raw, b, s, n)


@given(dense_family_configs("exaone4"))
def test_random_exaone4_configs_equal_transformers_on_meta(raw):
    """Per kind, EXAONE 4's parameters equal Exaone4ForCausalLM's on the meta device."""
    assert by_kind(symllm.params(from_hf(raw))) == {k: v for k, v in _hf_kinds(raw).items() if v}


def test_exaone4_rotates_only_its_local_layers():
    """Exaone4Attention applies RoPE in the layers with a window only (counted by wrapping transformers' own
    apply_rotary_pos_emb over one forward), and symllm's tree has a rope in exactly those layers and no query
    temperature anywhere (Llama 4's, which a layer without RoPE does not imply)."""
    transformers, torch = requires("transformers"), requires("torch")
    from unittest import mock
    module = transformers.models.exaone4.modeling_exaone4
    raw = {"model_type": "exaone4", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 24,
           "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 4,
           "sliding_window_pattern": 3, "pad_token_id": 0}
    model = _hf_model(raw, "cpu").eval()
    with mock.patch.object(module, "apply_rotary_pos_emb", wraps=module.apply_rotary_pos_emb) as rope, torch.no_grad():
        model(torch.zeros(1, 5, dtype=torch.long))
    counts = symllm.params(from_hf(raw))  # one entry per group of blocks, times its count
    spec = symllm.spec(from_hf(raw))
    ropes = sum(count for (kind, count) in spec.config.groups if kind.rotary)
    assert rope.call_count == ropes == 4  # layers 0, 1, 3, 4 of 6: every third is global
    assert not any(k.endswith("/temperature") for k in counts)
    assert not any(c.name == "temperature" for c in spec.model().walk())


def _generation_agrees(raw: dict, b: int, s: int, n: int, slot: int | None = None) -> None:
    """Prefill, the last decode step and the whole generation equal :func:`generate`'s FlopCounterMode counts,
    and the fp32 KV cache what transformers' cache holds, but for the one position fewer each sliding layer
    keeps between steps once the window is full (the next step's own key completes it): ``slot`` elements a
    sequence (a GQA layer's 2·n_kv·d_h unless given)."""
    steps, held, sliding = generate(raw, b, s, n)
    cfg = from_hf(raw)
    # transformers' loop runs the prompt as a plain forward: every position's logits (--logits all)
    work = costs.workload(cfg, batch=b, seq=s, gen=n, dtype="fp32", kv_dtype="fp32", logits="all")
    assert work["flops"]["prefill"] == steps[0]
    assert work["flops"]["generation"] == sum(steps)
    if n:
        assert costs.workload(cfg, batch=b, seq=s + n - 1, gen=1)["flops"]["decode_token"] == steps[-1]
    full = bool(raw.get("sliding_window") and s + n >= raw["sliding_window"])
    dropped = sliding * b * (2 * cfg.n_kv_heads * cfg.head_dim if slot is None else slot) * full
    assert work["memory"]["kv_cache"] == 4 * (held + dropped)


def test_phi3_sliding_window_passed_equals_transformers():
    """Phi-3's window (Phi-3-mini's 2047) is in every layer: a small Phi-3 with a window of 4 run past it
    gives transformers' FLOPs and cache."""
    raw = {"model_type": "phi3", "vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 4, "pad_token_id": 0}
    steps, held, sliding = generate(raw, 1, 7, 3)
    work = costs.workload(from_hf(raw), batch=1, seq=7, gen=3, dtype="fp32", kv_dtype="fp32", logits="all")  # a plain forward
    assert sliding == 2 and work["flops"]["generation"] == sum(steps)
    assert work["memory"]["kv_cache"] == 4 * (held + 2 * 2 * 2 * 4)  # one position more per layer, K and V


def test_elementwise_conventions_by_hand():
    """Gemma 2's element-wise FLOPs over a LLaMA of the same sizes, by hand: GeGLU's gelu_pytorch_tanh is 9 per
    element (x³: 2, ×0.044715, +x, ×√(2/π), tanh, +1, ×x, ×0.5) against SiLU's 4; soft-capping 3 per score and
    per logit (÷c, tanh, ×c); √d on every embedded element; two more RMSNorms a block (4 per element); every
    norm's (1 + weight) once per call. The prefill computes the last position's logits (the default), b·V."""
    sizes = {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4}
    gemma2 = from_hf(dict(sizes, model_type="gemma2", sliding_window=64))
    llama = from_hf(dict(sizes, model_type="llama"))
    b, s = 2, 5
    T, d, V, L, d_ff, n_h = b * s, 16, 40, 2, 24, 4
    per_block = (T * d_ff * (9 - 4)  # GeGLU's activation against SiLU's
                 + 3 * b * n_h * s * s  # soft-capped scores: the dense s × s rectangle of a prefill
                 + 2 * 4 * T * d  # the post-attention and post-feed-forward norms
                 + 4 * d)  # (1 + weight) of the block's four norms, once each
    extra = L * per_block + 3 * b * V + T * d + d  # soft-capped last logits, × √d, the final norm's (1 + weight)
    got = (costs.workload(gemma2, batch=b, seq=s)["flops"]["elementwise"]
           - costs.workload(llama, batch=b, seq=s)["flops"]["elementwise"])
    assert got == extra


# --- saved activations ------------------------------------------------------------------------------

def _hf_gemma_extras(raw: dict, b: int, s: int) -> int:
    """Bytes transformers' eager Gemma (fp32) saves beyond symllm's eager stack, term by term: each RMSNorm
    (two a layer and the final one) keeps its unweighted product and its ``1 + weight`` (a new tensor of
    ``d``); GeGLU keeps gelu(gate_proj x) besides gate_proj's output; repeat_kv copies K and V for all ``n_h``
    heads (no copy with one KV head and one sequence: the stride-0 view reaches bmm as is); the RoPE tables
    (cos and sin of ``s × d_h``), once a forward; the embeddings' √d normalizer (a 0-d tensor). 4 bytes an
    element."""
    L, d, T, d_h = raw["num_hidden_layers"], raw["hidden_size"], b * s, raw["head_dim"]
    n_h, n_kv = raw["num_attention_heads"], raw["num_key_value_heads"]
    repeat = 0 if n_kv == 1 and b == 1 else 2 * (n_h - n_kv) * T * d_h
    elements = ((2 * L + 1) * (T * d + d) + L * T * raw["intermediate_size"] + L * repeat + 2 * s * d_h + 1)
    return 4 * elements


@given(dense_family_configs(family="gemma"), st.integers(1, 2), st.integers(1, 5))
def test_gemma_saved_activations_equal_transformers_saved_tensors(raw, b, s):
    """What transformers' eager Gemma saves for backward in a training forward (fp32; saved_tensors_hooks, each
    storage once, parameters left out) is symllm's eager stack (its GeGLU saving what SwiGLU does, its
    (1 + weight) norms what RMSNorm does, the embeddings' scaling nothing) plus the terms of
    _hf_gemma_extras."""
    torch = requires("torch")
    from .conftest import saved_and_eager
    torch.manual_seed(0)
    measured, ours = saved_and_eager(_hf_model(raw, "cpu").train(), raw, b, s)
    assert measured == ours + _hf_gemma_extras(raw, b, s)

# --- fused projections: LoRA, tensor parallelism ------------------------------------------------------

@given(dense_family_configs(family="phi3"), st.integers(1, 16),
       st.lists(st.sampled_from(["qkv_proj", "gate_up_proj", "o_proj", "down_proj"]), min_size=1, unique=True))
def test_lora_on_fused_projections_equals_peft(raw, rank, targets):
    """LoRA on Phi-3's fused qkv_proj and gate_up_proj (and o_proj, down_proj): symllm's trainable count equals
    PEFT's on transformers' Phi3ForCausalLM (meta device): one adapter of r·(d + (n_h + 2·n_kv)·d_h) and one of
    r·(d + 2·d_ff) per layer, not three and two."""
    peft = requires("peft")
    from symllm.costs import finetune
    model = peft.get_peft_model(_hf_model(raw), peft.LoraConfig(r=rank, target_modules=targets))
    ours = finetune.lora(from_hf(raw), lora_rank=rank, lora_targets=",".join(targets))["params"]["trainable"]
    assert ours == model.get_nb_trainable_parameters()[0]


def test_default_lora_targets_adapt_the_fused_qkv_proj():
    """PEFT has no default target for Phi-3 (get_peft_model without target_modules refuses it: its q_proj and
    v_proj do not exist); symllm's default (wq,wv: PEFT's q_proj,v_proj for Llama) adapts the fused linear
    that holds them, qkv_proj: PEFT's trainable count with target_modules=["qkv_proj"], on the preset's
    config (two layers) on the meta device."""
    peft = requires("peft")
    from symllm.costs import finetune
    raw = dict(preset_info("phi-3-mini-4k")["config"], num_hidden_layers=2)
    with pytest.raises(ValueError, match="target_modules"):
        peft.get_peft_model(_hf_model(raw), peft.LoraConfig(r=8))
    model = peft.get_peft_model(_hf_model(raw), peft.LoraConfig(r=8, target_modules=["qkv_proj"]))
    ours = finetune.lora(from_hf(raw), lora_rank=8)["params"]["trainable"]
    assert ours == model.get_nb_trainable_parameters()[0] == 2 * 8 * (3072 + 3 * 3072)
    with pytest.raises(symllm.SymllmError, match="no linear layer of this model is named 'wq'"):
        finetune.lora(from_hf(raw), lora_rank=8, lora_targets="q_proj")  # named, a target stays strict


def test_split_rules_are_transformers_plans():
    """Each projection's declared split is transformers' plan for its HF name (colwise, colwise_gather_output:
    column; rowwise, rowwise_split_input: row): Phi-3's fused qkv_proj and gate_up_proj column, o_proj and
    down_proj row; OLMo 2's and Gemma 3's q_norm and k_norm are replicated (gathered outputs / replicated)."""
    transformers = requires("transformers")
    for name, config in (("phi-3-mini-4k", transformers.Phi3Config), ("olmo-2-7b", transformers.Olmo2Config),
                         ("gemma-3-1b", transformers.Gemma3TextConfig), ("gemma-2-2b", transformers.Gemma2Config)):
        plan = {k.rsplit(".", 1)[-1]: v for k, v in config.base_model_tp_plan.items()}
        seen = set()  # Gemma 2 and 3: the local and the global group hold the same projections
        for c in symllm.model_for(name).walk():
            hf = c.rules.lora[1] if c.rules.lora else c.name if c.name in ("q_norm", "k_norm") else None
            if hf in plan:
                style = plan[hf].split("_")[0]
                assert c.rules.split == {"colwise": "column", "rowwise": "row", "replicated": "replicated"}[style], \
                    (name, c.name)
                seen.add(hf)
            elif hf in ("q_norm", "k_norm"):  # OLMo 2: gathered q and k, normed whole on every rank
                assert c.rules.split == "replicated", (name, c.name)
        assert len(seen) == {"phi-3-mini-4k": 4, "olmo-2-7b": 7, "gemma-3-1b": 9, "gemma-2-2b": 7}[name]


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_per_gpu_shards_of_the_fused_projections(tp):
    """Phi-3-mini under tensor parallelism: a rank holds 1/N_t of qkv_proj (3·3072·3072) and of gate_up_proj
    (2·3072·8192) and of o_proj and down_proj, 1/N_t of the vocabulary's embedding and lm_head rows, and every
    norm whole (hand arithmetic from the checkpoint's shapes)."""
    L, d, d_ff, V = 32, 3072, 8192, 32064
    per_layer = (3 * d * d + d * d + 2 * d * d_ff + d_ff * d) // tp + 2 * d
    expected = L * per_layer + 2 * (-(-V // tp)) * d + d
    assert costs.workload("phi-3-mini-4k", tp=tp)["params"]["per_gpu"] == expected


# --- the command line -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ONE_EACH)
def test_count_derive_report_and_sweep(cli, tmp_path, name):
    """count --json gives the preset's total; derive and report run; a LaTeX report compiles and fits the page;
    a sweep's row equals count --json (params, FLOPs, KV cache)."""
    from .test_render import _run_pdflatex
    out = json.loads(cli(["count", name, "--seq", "256", "--gen", "8", "--json"]).out)
    assert out["params"]["total"] == symllm.params(name)["total"]
    assert cli(["derive", "--component", "block", "--model", name, "--seq", "256", "--format", "text"]).code == 0
    r = cli(["report", name, "--seq", "256", "--gen", "8", "--format", "latex", "--standalone",
             "-o", str(tmp_path / "r.tex")])
    assert r.code == 0, r.err
    log = _run_pdflatex((tmp_path / "r.tex").read_text(), tmp_path, "r")
    assert "Overfull" not in log
    swept = cli(["sweep", "--base", name, "--seq", "256", "--gen", "8", "--quantity",
                 "params,prefill_flops,generation_flops,kv_cache"])
    head, row = (line.split(",") for line in swept.out.splitlines()[:2])
    assert int(row[head.index("params")]) == out["params"]["total"]
    assert int(row[head.index("prefill_flops")]) == out["flops"]["prefill"]
    assert int(row[head.index("generation_flops")]) == out["flops"]["generation"]
    assert int(row[head.index("kv_cache")]) == out["memory"]["kv_cache"]


def test_gemma3_multimodal_config_counts_its_text_config(cli, tmp_path):
    """A Gemma 3 checkpoint's own config.json (model_type gemma3: text_config and vision_config) counts the
    language model (Gemma3ForCausalLM of its text_config on the meta device), saying the vision tower is not."""
    text = preset_info("gemma-3-4b")["config"]
    raw = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
           "text_config": {k: v for k, v in text.items() if k != "model_type"},
           "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", str(path), "--seq", "512", "--json"])
    assert r.code == 0 and json.loads(r.out)["params"]["total"] == _hf_kinds(text)["total"]
    assert "vision encoder" in json.loads(r.out)["config"]["note"]


@pytest.mark.parametrize("raw, start", [
    (dict(preset_info("phi-3-mini-4k")["config"], partial_rotary_factor=0.7), "partial_rotary_factor: 0.7 rotates 67"),
    (dict(preset_info("phi-4-mini")["config"], rope_parameters={"partial_rotary_factor": 0.5}),
     "partial_rotary_factor: 0.75 differs from rope_parameters' 0.5"),
    (dict(preset_info("phi-3-mini-4k")["config"], attention_bias=True), "attention_bias: True is ignored"),
    (dict(preset_info("olmo-2-7b")["config"], sliding_window=4096), "sliding_window: 4096 is ignored"),
    (dict(preset_info("olmo-2-7b")["config"], hidden_act="gelu"), "hidden_act: 'gelu' is not modelled"),
    (dict(preset_info("gemma-2b")["config"], hidden_act="relu"), "hidden_act: 'relu' is not modelled"),
    (dict(preset_info("gemma-2b")["config"], hidden_activation="gelu"), "hidden_activation: 'gelu' is ignored"),
    (dict(preset_info("gemma-2-2b")["config"], hidden_activation="silu"), "hidden_activation: 'silu' is not"),
    (dict(preset_info("gemma-2-2b")["config"], attn_logit_softcapping=-1.0), "attn_logit_softcapping: "),
    (dict(preset_info("gemma-3-1b")["config"], use_bidirectional_attention=True), "use_bidirectional_attention"),
    # Gemma3Attention never passes its attn_logit_softcapping to the attention (the element-wise oracle saw no
    # capped score): a value there is refused, not counted as 3 FLOPs a score transformers never computes
    (dict(preset_info("gemma-3-1b")["config"], attn_logit_softcapping=50.0),
     "attn_logit_softcapping: 50.0 is ignored by transformers' gemma3_text"),
    (dict(preset_info("gemma-3-1b")["config"], layer_types=["full_attention"] * 26),
     "layer_types: ['full_attention'"),
    (dict(preset_info("gemma-3-1b")["config"], layer_types=["chunked_attention"] * 26), "layer_types: 'chunked"),
    (dict(preset_info("gemma-3-1b")["config"], num_local_experts=4), "num_local_experts: 4"),
])
def test_unmodelled_keys_are_refused_in_one_line(cli, tmp_path, raw, start):
    """A key of these families that symllm does not model, or that their class ignores while saying something
    else, is one line and exit 2, never counted as another model."""
    assert_refused_in_one_line(cli, tmp_path, raw, start)


def test_gemma3_kv_cache_at_32k_by_hand(cli):
    """Gemma 3 1B at a 32,768-token prompt, by hand from its config: 26 layers, one KV head of 256, every 6th
    layer global (4 of them: all 32,768 positions), the other 22 local (their 512-token window), bf16."""
    out = json.loads(cli(["count", "gemma-3-1b", "--seq", "32768", "--json"]).out)
    assert out["memory"]["kv_cache"] == 2 * 1 * 256 * 2 * (22 * 512 + 4 * 32768)


def test_phi4_mini_partial_rotary_by_hand():
    """Phi-4-mini rotates int(128 × 0.75) = 96 of each head's 128 elements (partial_rotary_factor): RoPE's
    element-wise FLOPs are 3 a rotated element of the 24 query and 8 key heads, the rest as with a whole
    rotary; parameters (3,836,021,760: 32 layers of 3072·(24 + 2·8)·128 + 3072² + 3·3072·8192 + 2·3072, the
    tied 200,064 × 3072 embedding, the final norm) and the bf16 KV cache (2·32·8·128·2 bytes a token) do not
    depend on it."""
    L, b, s = 32, 2, 100
    assert symllm.params("phi-4-mini")["total"] == L * (3072 * 40 * 128 + 3072 ** 2 + 3 * 3072 * 8192 + 2 * 3072) \
        + 200064 * 3072 + 3072
    raw = preset_info("phi-4-mini")["config"]
    whole = from_hf(dict(raw, partial_rotary_factor=1.0))
    part, full = (costs.workload(c, batch=b, seq=s) for c in ("phi-4-mini", whole))
    assert full["flops"]["elementwise"] - part["flops"]["elementwise"] == 3 * b * s * L * (24 + 8) * (128 - 96)
    assert part["flops"]["prefill"] == full["flops"]["prefill"]
    assert part["memory"]["kv_cache"] == full["memory"]["kv_cache"] == b * s * 2 * L * 8 * 128 * 2


def test_longrope_scaling_changes_no_count():
    """Phi-3.5-mini's rope_scaling (LongRoPE: a long and a short factor per rotated frequency pair) holds no
    parameter: with it, transformers' model and symllm's count are Phi-3-mini's."""
    raw = dict(preset_info("phi-3.5-mini")["config"],
               rope_scaling={"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48})
    assert symllm.params(from_hf(raw))["total"] == _hf_kinds(raw)["total"] == symllm.params("phi-3-mini-4k")["total"]
