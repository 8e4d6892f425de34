"""Fine-tuning with LoRA and QLoRA (symllm.costs.finetune) against the real thing.

Expected numbers: PEFT's ``get_peft_model`` on transformers' own model classes built on the meta device
(trainable parameters; PEFT's printed figure for Llama-2-7B), torch's own bytes of the adapters' weights,
gradients and Adam moments after a real CPU training step of a PEFT model, the bytes torch saves for
backward with and without the adapters (the torch reference model), and the QLoRA paper's
bits-per-parameter arithmetic written out here over the linear layers transformers builds.
"""
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.costs import finetune
from symllm.arch.config import preset_info
from symllm.arch.families.hf import family_of
from symllm.errors import SymllmError

from .conftest import one_per_shape, requires, saved_during
from .strategies import configs, hf_configs

HF_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
#: the same linears by symllm's (Meta's) names, to spell a target either way
META_NAMES = {"q_proj": "wq", "k_proj": "wk", "v_proj": "wv", "o_proj": "wo", "gate_proj": "w1",
              "up_proj": "w3", "down_proj": "w2"}

#: QLoRA paper (Dettmers et al. 2023), §3 "Double Quantization": 4-bit NF4 codes; the first-level
#: constants are 8-bit floats, one per block of 64 weights; the second-level constants are 32-bit floats,
#: one per block of 256 first-level constants: "8/64 + 32/(64·256) = 0.127 bits per parameter"
NF4_BITS_PER_WEIGHT = 4 + Fraction(8, 64) + Fraction(32, 64 * 256)


def _hf(name: str) -> dict:
    """A preset as an HF config.json: as kept (a multimodal wrapper's: its language model, the text_config as
    the family transformers builds it as: what symllm counts), or (a Meta params.json preset) written as a
    llama one."""
    info = preset_info(name)
    if info["format"] == "hf":
        raw = info["config"]
        family = family_of(raw.get("model_type", "llama"))
        if raw.get("model_type") in family.wrappers:
            return {**raw["text_config"], "model_type": family.model_type}
        return dict(raw)
    cfg = symllm.resolved_config(name)
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": cfg["vocab_size"],
            "hidden_size": cfg["dim"], "intermediate_size": cfg["hidden_dim"], "num_hidden_layers": cfg["n_layers"],
            "num_attention_heads": cfg["n_heads"], "num_key_value_heads": cfg["n_kv_heads"],
            "head_dim": cfg["head_dim"], "tie_word_embeddings": cfg["tie_embeddings"], "hidden_act": "silu"}


def _meta_model(raw: dict):
    """transformers' own model class for ``raw``, built on the meta device."""
    transformers = requires("transformers")
    torch = requires("torch")
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _peft_trainable(raw: dict, rank: int, targets: list[str] | None) -> int:
    """PEFT's trainable-parameter count of LoRA on transformers' model for ``raw`` (meta device)."""
    peft = requires("peft")
    model = peft.get_peft_model(_meta_model(raw), peft.LoraConfig(r=rank, target_modules=targets))
    return model.get_nb_trainable_parameters()[0]


# --- trainable parameters -----------------------------------------------------------------------------

def test_peft_published_llama2_7b_figure(cli):
    """PEFT's print_trainable_parameters() says "trainable params: 4,194,304" for Llama-2-7B with r=8 on
    q_proj and v_proj (the figure issue 12 quotes), and so does `symllm count --json`; PEFT run here on the
    meta device agrees: on one of the 32 identical decoder layers, times 32 (``_one_period``: the targets
    sit only in decoder layers, so the count is the same as on the whole model, without building 32 of
    them)."""
    r = cli(["count", "llama2-7b", "--lora-rank", "8", "--lora-targets", "q_proj,v_proj", "--json"])
    assert r.code == 0, r.err
    assert json.loads(r.out)["params"]["trainable"] == 4_194_304
    cut, repeats = _one_period(_hf("llama2-7b"))
    assert (cut["num_hidden_layers"], repeats) == (1, 32)
    assert repeats * _peft_trainable(cut, 8, ["q_proj", "v_proj"]) == 4_194_304


def test_default_targets_are_pefts_llama_default():
    """With no target_modules PEFT picks its Llama default; symllm's default targets count the same."""
    raw = _hf("llama3.2-1b")
    ours = finetune.lora("llama3.2-1b", lora_rank=4)["params"]["trainable"]
    assert ours == _peft_trainable(raw, 4, None)


#: PEFT adapts Qwen3-MoE's fused experts (a LoRA of each 3-D tensor through transformers' weight-conversion
#: mapping: gate_up_proj at twice the rank from targets gate_proj and up_proj together, down_proj from
#: down_proj), which symllm does not model: it refuses those targets in one line (as for Mixtral, PEFT leaves
#: Qwen2-MoE's and gpt-oss's fused experts alone, and so does symllm). The same for DeepSeek-V2/V3/V3.2 and
#: GLM-4.5/GLM-5, Qwen3-Next, Qwen3.5-MoE and Laguna (fused experts too), where PEFT with transformers 5 also leaves
#: the dense and shared SwiGLUs' gate_proj/up_proj/down_proj alone (their names go to the experts).
_PEFT_ADAPTS_FUSED_EXPERTS = {n for n in symllm.preset_names() if _hf(n).get("model_type")
                              in ("qwen3_moe", "deepseek_v2", "deepseek_v3", "glm4_moe", "minimax_m2",
                                 "qwen3_next", "deepseek_v32", "glm_moe_dsa", "qwen3_5_moe_text", "laguna")}


def _one_period(raw: dict) -> tuple[dict, int]:
    """``raw`` cut to the fewest first layers whose pattern repeats through the model (which layers are
    MoE, dense, without RoPE, of which type), and how many times it repeats. The seven LoRA targets sit
    only in decoder layers, so PEFT's count of the whole model is that many times the cut one's (an HF
    config whose layers the cut cannot describe, e.g. Qwen's max_window_layers, is kept whole: 1 repeat)."""
    layers = "n_layers" if raw.get("model_type") == "mpt" else "num_hidden_layers"  # MptConfig's own name
    L = raw[layers]
    if raw.get("use_sliding_window") and "max_window_layers" in raw:
        return raw, 1
    if raw.get("model_type") == "mimo_v2_flash" and not {"layer_types", "mlp_layer_types"} <= set(raw):
        return raw, 1  # MiMoV2FlashConfig derives absent layer lists from the count (the first layer alone dense)
    flags = {key: [int(i in raw[key]) for i in range(L)] for key in ("moe_layers", "mlp_only_layers")
             if isinstance(raw.get(key), list)}
    flags |= {key: list(raw[key]) for key in ("no_rope_layers", "layer_types", "mlp_layer_types",
                                              "num_attention_heads_per_layer") if isinstance(raw.get(key), list)}
    if isinstance(raw.get("hybrid_override_pattern"), str):  # Nemotron-H: one character a layer
        flags["hybrid_override_pattern"] = list(raw["hybrid_override_pattern"])
    if isinstance(raw.get("compress_ratios"), list):  # DeepSeek-V4: a ratio a layer (and the MTP layer's after them)
        flags["compress_ratios"] = raw["compress_ratios"][:L]
    steps = [raw.get(k) or 1 for k in ("interleave_moe_layer_step", "decoder_sparse_step", "no_rope_layer_interval",
                                       "full_attention_interval")]
    for p in (p for p in range(1, L + 1) if L % p == 0 and all(p % s == 0 for s in steps)):
        if all(v == v[:p] * (L // p) for v in flags.values()):
            cut = {**raw, layers: p}
            cut |= {k: [i for i in raw[k] if i < p] for k in ("moe_layers", "mlp_only_layers") if k in flags}
            cut |= {k: raw[k][:p] for k in ("no_rope_layers", "layer_types", "mlp_layer_types",
                                            "num_attention_heads_per_layer", "hybrid_override_pattern",
                                            "compress_ratios") if k in flags}
            return cut, L // p
    return raw, 1


def test_one_period_cuts_only_repeating_patterns():
    """Llama 4 Maverick (MoE every 2nd layer, no RoPE every 4th) repeats every 4 of its 48 layers; a
    pattern that does not repeat is kept whole."""
    raw = _hf("llama4-maverick-17b-128e")
    cut, repeats = _one_period(raw)
    assert (cut["num_hidden_layers"], repeats, cut["moe_layers"], cut["no_rope_layers"]) == (4, 12, [1, 3], [1, 1, 1, 0])
    odd = {**raw, "moe_layers": [1, 3, 5]}
    assert _one_period(odd) == (odd, 1)
    assert _one_period(_hf("llama2-7b"))[1] == 32


@pytest.mark.parametrize("name", one_per_shape(symllm.preset_names(), first="llama3.1-405b"))
def test_presets_equal_peft(name):
    """One preset of each shape (``conftest.one_per_shape``: 34 of 58; Llama 3.1 405B for Meta's LLaMA-2/3),
    LoRA r=16 on all seven linears: symllm's count equals PEFT's, PEFT run on transformers' model of one period of the preset's layers (every width as published;
    a dense model's one layer, Llama 4 Maverick's four) and multiplied by its repeats (``_one_period``).
    Qwen3-MoE: the SwiGLU targets are refused in one line, the attention's equal PEFT's."""
    raw = _hf(name)
    targets = HF_TARGETS
    if name in _PEFT_ADAPTS_FUSED_EXPERTS:
        with pytest.raises(SymllmError, match="^lora_targets: 'down_proj,gate_proj,up_proj' adapt experts "
                                              "in PEFT[^\n]*$"):
            finetune.lora(name, lora_rank=16, lora_targets=",".join(HF_TARGETS))
        targets = HF_TARGETS[:4]
    ours = finetune.lora(name, lora_rank=16, lora_targets=",".join(targets))["params"]["trainable"]
    cut, repeats = _one_period(raw)
    assert ours == repeats * _peft_trainable(cut, 16, targets)


def test_peft_adapts_qwen3_moe_fused_experts_which_symllm_refuses(cli):
    """Why the refusal: on a small Qwen3-MoE, PEFT's adapters under gate_proj/up_proj/down_proj sit on the
    experts' fused tensors (E·r rows: not r·(fan_in + fan_out) per linear); symllm's command line refuses
    the targets in one line, spelled either way."""
    peft = requires("peft")
    raw = {"model_type": "qwen3_moe", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 12,
           "moe_intermediate_size": 5, "num_experts": 3, "num_experts_per_tok": 2}
    model = peft.get_peft_model(_meta_model(raw), peft.LoraConfig(r=2, target_modules=HF_TARGETS[4:]))
    adapted = {n: tuple(p.shape) for n, p in model.named_parameters() if p.requires_grad}
    assert adapted and all(".mlp.experts." in n for n in adapted)
    assert (12, 8) in adapted.values()  # gate_up_proj's lora_A: E · 2r rows of d
    for targets in ("gate_proj,up_proj,down_proj", "w2"):
        r = cli(["count", "qwen3-30b-a3b", "--lora-rank", "8", "--lora-targets", targets])
        assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and "adapt experts in PEFT: not modelled" in r.err


@given(hf_configs(), st.integers(1, 64),
       st.lists(st.sampled_from(HF_TARGETS), min_size=1, unique=True), st.lists(st.booleans(), min_size=7))
def test_random_configs_ranks_and_targets_equal_peft(raw, rank, targets, meta_spelling):
    """For random config.json files (llama, mistral, qwen2 with q/k/v biases, qwen3 with QK-norm), ranks
    and target sets, spelled by HF or symllm names, symllm's trainable count equals PEFT's."""
    spelled = ",".join(META_NAMES[t] if m else t for t, m in zip(targets, meta_spelling))
    ours = finetune.lora(symllm.from_hf(raw), lora_rank=rank, lora_targets=spelled)["params"]["trainable"]
    assert ours == _peft_trainable(raw, rank, targets)


# --- adapter training states: torch's own bytes after a real step ----------------------------------------

@given(hf_configs().filter(lambda raw: raw["model_type"] == "llama"), st.integers(1, 8),
       st.lists(st.sampled_from(HF_TARGETS), min_size=1, unique=True))
def test_adapter_weights_gradients_and_adam_bytes(raw, rank, targets):
    """A bf16 model wrapped by PEFT (its default upcasts the adapters to fp32), one real CPU training step
    with torch's Adam: the bytes of the trainable weights, their gradients and Adam's state tensors equal
    symllm's lora_adapter_weights, lora_adapter_gradients and lora_optimizer_states."""
    torch = requires("torch")
    transformers = requires("transformers")
    peft = requires("peft")
    config = transformers.AutoConfig.for_model(**raw)
    model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(r=rank, target_modules=targets))
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trained)
    tokens = torch.randint(0, raw["vocab_size"], (1, 3))
    model(input_ids=tokens, labels=tokens).loss.backward()
    opt.step()
    nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)  # noqa: E731
    moments = [v for state in opt.state.values() for k, v in state.items() if k in ("exp_avg", "exp_avg_sq")]
    got = finetune.lora(symllm.from_hf(raw), lora_rank=rank, lora_targets=",".join(targets))["memory"]
    assert got["lora_adapter_weights"] == nbytes(trained)
    assert got["lora_adapter_gradients"] == nbytes(p.grad for p in trained)
    assert got["lora_optimizer_states"] == nbytes(moments)


# --- activations: the adapters' extra saved tensors ----------------------------------------------------

@given(configs(), st.integers(1, 8), st.lists(st.sampled_from(list(META_NAMES.values())), min_size=1, unique=True),
       st.integers(1, 3), st.integers(1, 6))
def test_adapters_save_their_r_wide_intermediate(cfg, rank, targets, b, s):
    """PEFT's adapters injected into the torch reference model (every weight trainable, so the base saves
    what it saves in full training): torch saves exactly symllm's lora_activations - activations more,
    the r-wide input of each lora_B (lora_A's input is the layer's, saved already)."""
    torch = requires("torch")
    peft = requires("peft")
    from symllm import reference
    torch.manual_seed(0)
    model = reference.build(cfg, device="cpu", dtype=torch.float32)
    tokens = torch.randint(0, cfg.vocab_size, (b, s))
    before = saved_during(lambda: model(tokens), model)
    model = peft.inject_adapter_in_model(peft.LoraConfig(r=rank, target_modules=targets), model)
    for p in model.parameters():
        p.requires_grad_(True)
    after = saved_during(lambda: model(tokens), model)
    work = dict(batch=b, seq=s, dtype="fp32")
    ours = finetune.lora(cfg, lora_rank=rank, lora_targets=",".join(targets), **work)["memory"]["lora_activations"]
    assert ours - symllm.workload(cfg, **work)["memory"]["activations"] == after - before


# --- QLoRA ------------------------------------------------------------------------------------------

def test_paper_overhead_is_0_127_bits():
    """The paper's rounded figure: 0.127 bits of constants per parameter."""
    assert round(float(NF4_BITS_PER_WEIGHT - 4), 3) == 0.127


def _qlora_base_bytes(raw: dict) -> Fraction:
    """NF4 for the weight of every nn.Linear transformers builds but the lm_head (bitsandbytes' rule:
    transformers keeps the output embedding unquantized), bf16 for every other parameter (embeddings,
    norms, biases, the lm_head)."""
    torch = requires("torch")
    model = _meta_model(raw)
    linear = sum(m.weight.numel() for name, m in model.named_modules()
                 if isinstance(m, torch.nn.Linear) and name != "lm_head")
    total = sum(p.numel() for p in model.parameters())
    return Fraction(linear) * NF4_BITS_PER_WEIGHT / 8 + 2 * (total - linear)


@pytest.mark.parametrize("name", ["llama1-65b", "llama2-7b", "llama3.2-1b", "qwen2.5-7b", "qwen3-8b"])
def test_qlora_base_weights_of_presets(name):
    """QLoRA's frozen base: the paper's 4.127 bits per linear weight and bf16 for the rest, over the
    parameters transformers builds for the preset."""
    got = finetune.lora(name, lora_rank=64, qlora=True)["memory"]["lora_base_weights"]
    assert got == _qlora_base_bytes(_hf(name))


@given(hf_configs())
def test_qlora_base_weights_of_random_configs(raw):
    """The same for random config.json files (biases, tied embeddings, QK-norm)."""
    got = finetune.lora(symllm.from_hf(raw), lora_rank=1, qlora=True)["memory"]["lora_base_weights"]
    assert Fraction(got) == _qlora_base_bytes(raw)


def test_qlora_adapter_states_and_65b_on_one_48gb_gpu():
    """QLoRA's adapters: bf16 weights and gradients and 32-bit Adam moments, 2 + 2 + 8 bytes per trainable
    parameter; and the paper's headline: LLaMA-65B with r=64 adapters on every linear layer fine-tunes on
    one 48 GB GPU (here: batch 1, 512 tokens, gradient checkpointing)."""
    m = finetune.lora("llama1-65b", lora_rank=64, lora_targets=",".join(HF_TARGETS), qlora=True,
                      recompute=True, batch=1, seq=512)
    n = finetune.lora("llama1-65b", lora_rank=64, lora_targets=",".join(HF_TARGETS))["params"]["trainable"]
    mem = m["memory"]
    assert (mem["lora_adapter_weights"], mem["lora_adapter_gradients"], mem["lora_optimizer_states"]) == \
        (2 * n, 2 * n, 8 * n)
    assert mem["lora_total"] == sum(v for k, v in mem.items() if k != "lora_total")
    assert mem["lora_total"] < 48e9


# --- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, field", [
    (["--lora-rank", "8", "--lora-targets", "qkv"], "lora_targets"),
    (["--lora-rank", "0"], "lora_rank"),
    (["--qlora"], "qlora"),
    (["--lora-rank", "8", "--lora-targets", ","], "lora_targets"),
])
def test_bad_lora_options_are_one_line(cli, argv, field):
    """A bad LoRA option: one line naming the field, exit status 2."""
    r = cli(["count", "llama2-7b", *argv])
    assert r.code == 2 and r.err.count("\n") == 1 and f"error: {field}:" in r.err, r.err


def test_targets_the_model_lacks():
    """As PEFT: a target the model has no linear of adapts nothing; if no target has one, an error."""
    from symllm.arch.components import attention
    assert finetune.trainable(attention(), "wq,gate_proj") == finetune.trainable(attention(), "wq")
    with pytest.raises(SymllmError, match="lora_targets: no linear layer of this model is named 'w1,w3'"):
        finetune.adapt(attention(), "up_proj,gate_proj")


def test_count_without_lora_has_no_lora_numbers(cli):
    """Without --lora-rank count --json shows neither params.trainable nor memory.lora_*."""
    out = json.loads(cli(["count", "llama2-7b", "--json"]).out)
    assert "trainable" not in out["params"] and not [k for k in out["memory"] if k.startswith("lora_")]


# --- one answer through every door (issue 41) ----------------------------------------------------

def test_python_api_gives_counts_lora_numbers(cli):
    """symllm.workload under LoRA gives the keys and numbers count --json prints (params.trainable,
    memory.lora_*), and the training peak is LoRA's: Llama-2-7B, QLoRA r=16 on wq and wv, batch 1 x 2048.

    By hand: 32 blocks x 2 adapted 4096 x 4096 matrices x 16 x (4096 + 4096) = 8,388,608 trainable; NF4 on the
    32 x (4·4096² + 3·4096·11008) = 6,476,005,376 linear weights at 4 + 8/64 + 32/16384 = 2113/512 bits, the
    other 6,738,415,616 − 6,476,005,376 parameters in bf16; adapters 2 + 2 + 8 bytes each; activations: full
    training's (checked against torch in tests/test_memory.py) plus 32 x 2 adapters' r-wide bf16 intermediate
    2 x 2048 x 16 bytes. The total is 11.77 GiB, against full fine-tuning's 108.60 GiB."""
    api = symllm.workload("llama2-7b", lora_rank=16, qlora=True)
    printed = json.loads(cli(["count", "llama2-7b", "--lora-rank", "16", "--qlora", "--json"]).out)
    assert api["params"]["trainable"] == printed["params"]["trainable"] == 32 * 2 * 16 * (4096 + 4096)
    assert api["memory"] == printed["memory"]
    n, linears = 6_738_415_616, 32 * (4 * 4096 ** 2 + 3 * 4096 * 11008)
    base = Fraction(linears * 2113, 512 * 8) + 2 * (n - linears)
    full = symllm.workload("llama2-7b")["memory"]  # no LoRA: full fine-tuning's figures
    hand = {"lora_base_weights": base, "lora_adapter_weights": 2 * 8_388_608,
            "lora_adapter_gradients": 2 * 8_388_608, "lora_optimizer_states": 8 * 8_388_608,
            "lora_activations": full["activations"] + 32 * 2 * 2 * 2048 * 16}
    hand["lora_total"] = sum(hand.values())
    assert {k: api["memory"][k] for k in hand} == hand
    assert api["memory"]["training_peak"] == hand["lora_total"] == 12_636_430_336  # 11.77 GiB
    assert api["memory"]["full_finetune_peak"] == full["training_peak"] == 116_611_702_784  # 108.60 GiB
    assert api["memory_per_gpu"]["training_peak"] == hand["lora_total"]


def test_lora_training_peak_is_the_headline_and_the_fit(cli):
    """count's text under LoRA: the training peak row and the --gpu fit verdict are LoRA's (11.77 GiB),
    full fine-tuning's is a line labelled as such; the largest training batch is LoRA's: the largest b with
    base + adapters + b x (activations and intermediates of one sequence) <= 80 GiB (the peak is affine in b)."""
    text = cli(["count", "llama2-7b", "--lora-rank", "16", "--qlora", "--gpu", "h100-sxm"]).out
    rows = {" ".join(x.split()[:-3]): x.split()[-3:] for x in text.splitlines() if x.startswith("training_peak")}
    assert rows == {"training_peak (LoRA)": ["12,636,430,336", "11.77", "GiB"],
                    "training_peak (full fine-tuning)": ["116,611,702,784", "108.60", "GiB"]}
    line = next(x for x in text.splitlines() if x.startswith("training peak (LoRA)"))
    assert "11.77 GiB" in line and "fits" in line
    t = symllm.workload("llama2-7b", lora_rank=16, qlora=True, gpu="h100-sxm")["time"]
    one = symllm.workload("llama2-7b", lora_rank=16, qlora=True)["memory"]
    two = symllm.workload("llama2-7b", lora_rank=16, qlora=True, batch=2)["memory"]
    per_sequence = two["lora_total"] - one["lora_total"]
    fixed = one["lora_total"] - per_sequence
    assert t["training_peak"] == one["lora_total"] and t["training_fits"]
    assert t["training_max_batch"] == (80 * 2 ** 30 - fixed) // per_sequence
    assert f"up to batch {t['training_max_batch']:,}" in line
