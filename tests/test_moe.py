"""Mixture of experts (Mixtral, Llama 4), Llama 4's attention variants, and windows.

Expected numbers come from published totals, transformers' own model classes (built on the meta device
for parameters, run on small CPU models under FlopCounterMode for FLOPs), and plain-Python arithmetic
written here from the models' shapes."""
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.costs import phases as costs
from symllm.arch.config import from_hf, preset_info

from symllm.api import by_kind as kinds

from .conftest import one_per_shape, requires
from .strategies import (family_configs, gpt_oss_configs, mimo_configs, minimax_m2_configs, moe_configs,
                         qwen2_moe_configs, qwen3_moe_configs)

MIXTRAL = ("mixtral-8x7b", "mixtral-8x22b")
LLAMA4 = ("llama4-scout-17b-16e", "llama4-maverick-17b-128e")
QWEN3_MOE = ("qwen3-30b-a3b", "qwen3-235b-a22b", "qwen3-coder-480b-a35b")
QWEN2_MOE = ("qwen1.5-moe-a2.7b", "qwen2-57b-a14b")
GPT_OSS = ("gpt-oss-20b", "gpt-oss-120b")
MINIMAX = ("minimax-m2.5",)
#: every MoE family's random config.json files
MOE_FAMILIES = st.one_of(moe_configs(), qwen3_moe_configs(), qwen2_moe_configs(), gpt_oss_configs(),
                         minimax_m2_configs())
#: their model types, which the transformers property draws one at a time (each under every profile)
KINDS = ("mixtral", "llama4_text", "qwen3_moe", "qwen2_moe", "gpt_oss", "minimax_m2", "mimo_v2_flash", "laguna")
_W = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
_ATTN = {"q_proj": "wq", "k_proj": "wk", "v_proj": "wv", "o_proj": "wo", "g_proj": "wg"}  # g_proj: Laguna's gate


def _hf_model(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(config)


def _hf_kinds(model) -> dict:
    """numel per kind of parameter, named as symllm's breakdown without its group of blocks (a shared
    expert as one kind), plus the total."""
    out = {"total": sum(p.numel() for p in model.parameters())}
    for name, p in model.named_parameters():
        parts = name.split(".")
        if "shared_expert_gate" in parts:  # Qwen2-MoE's sigmoid gate of the shared expert
            kind = "moe/shared_expert_gate"
        elif "router" in parts or "gate" in parts:  # Llama 4's and gpt-oss's router, Mixtral's gate
            kind = "moe/router"
        elif "experts" in parts:  # gate_up_proj and down_proj of every routed expert
            kind = "moe/experts"
        elif "shared_expert" in parts or "shared_experts" in parts:  # Laguna's (DeepSeek-like) shared_experts
            kind = "moe/shared_expert"
        elif parts[-2] in _W:
            kind = f"feed_forward/{_W[parts[-2]]}"
        elif parts[-2] in _ATTN:
            kind = f"attention/{_ATTN[parts[-2]]}"
        elif parts[-2] in ("q_norm", "k_norm"):  # Qwen3's QK-norm
            kind = f"attention/{parts[-2]}"
        elif parts[-1] == "sinks":  # gpt-oss's attention sinks
            kind = "attention/sinks"
        else:
            kind = {"embed_tokens": "embedding", "input_layernorm": "attention_norm", "lm_head": "lm_head",
                    "post_attention_layernorm": "ffn_norm", "norm": "norm"}[parts[-2]]
        out[kind] = out.get(kind, 0) + p.numel()
    return out


def _active_from_hf(raw: dict, kinds: dict) -> int:
    """Total minus the routed experts a token does not use: (1 - k/E) of every expert weight."""
    E, k = raw.get("num_local_experts", raw.get("num_experts", raw.get("n_routed_experts"))), raw["num_experts_per_tok"]
    if not E:  # Qwen2-MoE with num_experts 0: every layer dense
        return kinds["total"]
    unused = Fraction(kinds.get("moe/experts", 0)) * (E - k) / E
    assert unused.denominator == 1
    return kinds["total"] - int(unused)


# --- published figures: tests/data/published_params.json (tests/test_params.py checks them all) -------------

def test_qwen3_moe_published_totals_and_active():
    """Qwen3-30B-A3B: "30.5B in total and 3.3B activated"; Qwen3-235B-A22B: "235B in total and 22B
    activated" (the Qwen3 model cards, their figures cut to the digits they print), from their config.json."""
    small, big = symllm.params(QWEN3_MOE[0]), symllm.params(QWEN3_MOE[1])
    assert (int(small["total"] / 1e8), int(small["active"] / 1e8)) == (305, 33)
    assert (int(big["total"] / 1e9), int(big["active"] / 1e9)) == (235, 22)


# --- transformers' own classes -------------------------------------------------------------------------

@pytest.mark.parametrize("name", one_per_shape(MIXTRAL + LLAMA4 + QWEN3_MOE + QWEN2_MOE + GPT_OSS + MINIMAX))
def test_moe_presets_equal_transformers_on_meta(name):
    """Each kind of parameter (router, experts, shared expert, dense SwiGLU, attention, norms) and the
    total equal transformers' model built from the preset's config.json on the meta device; the active
    count equals the total less the (E - k)/E of the expert weights a token does not use. One preset of
    each shape (``conftest.one_per_shape``: the others differ only in sizes)."""
    raw = preset_info(name)["config"]
    measured = _hf_kinds(_hf_model(raw))
    measured["active"] = _active_from_hf(raw, measured)
    assert kinds(symllm.params(name)) == measured


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_random_moe_configs_equal_transformers_on_meta(kind, data):
    """Per kind of parameter, the total and the active count, for random Mixtral, Llama 4, Qwen3-MoE,
    Qwen2-MoE, gpt-oss and MiniMax-M2 configs (each family drawn under every profile)."""
    raw = data.draw(family_configs()[kind])
    measured = _hf_kinds(_hf_model(raw))
    measured["active"] = _active_from_hf(raw, measured)
    assert kinds(symllm.params(from_hf(raw))) == measured


@given(MOE_FAMILIES, st.integers(1, 2), st.integers(1, 6))
def test_moe_prefill_and_training_flops_equal_flopcountermode(raw, b, s):
    """Prefill and training-step matmul FLOPs equal torch's FlopCounterMode on transformers' model (eager
    experts and attention, CPU). Mixtral's and Qwen3-MoE's eager experts run each token through its k
    experts, as symllm counts; transformers' Llama 4 runs all E experts on every token (a batched matmul over the experts),
    which is (E - k) more experts' worth of 6·d·d_ff FLOPs per token per MoE layer than the model's."""
    _flops_agree(raw, b, s)


@given(mimo_configs(), st.integers(1, 2), st.integers(1, 6))
def test_mimo_prefill_and_training_flops_equal_flopcountermode(raw, b, s):
    """The same for MiMo-V2-Flash (values of their own width, sliding layers of twice the key/value heads with
    sinks), which the torch reference does not build (so it is not in MOE_FAMILIES)."""
    _flops_agree(raw, b, s)


def _flops_agree(raw: dict, b: int, s: int) -> None:
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    torch.manual_seed(0)
    model = _hf_model(raw, "cpu")
    tokens = torch.randint(0, raw["vocab_size"], (b, s))
    with FlopCounterMode(display=False) as forward:  # one forward counted, then its backward
        loss = model(tokens).logits.float().sum()
    with FlopCounterMode(display=False) as backward:
        loss.backward()
    cfg = from_hf(raw)
    extra = 0
    if raw["model_type"] == "llama4_text":
        E, k = raw["num_local_experts"], raw["num_experts_per_tok"]
        extra = (E - k) * 6 * b * s * raw["hidden_size"] * raw["intermediate_size"] * cfg.n_moe_layers
    work = costs.workload(cfg, batch=b, seq=s, logits="all")["flops"]  # a plain forward: every position's logits
    assert work["prefill"] + extra == forward.get_total_flops()
    assert work["training_step"] + 3 * extra == forward.get_total_flops() + backward.get_total_flops()


def test_mixtral_flops_are_those_of_its_active_weights():
    """A Mixtral prefill's matmul FLOPs per token are 2 × the active weights (every active weight is one
    multiply-add per token; the embedding is a look-up, the router a d x E matmul), plus attention."""
    b, s = 1, 1
    p = symllm.params("mixtral-8x7b")
    norms = 32 * 2 * 4096 + 4096
    attention_core = 32 * 2 * 2 * 32 * 128 * s  # QK^T and A·V over one key, 32 heads of 128, 32 layers
    expected = 2 * (p["active"] - p["embedding"] - norms) + attention_core
    assert costs.workload("mixtral-8x7b", batch=b, seq=s)["flops"]["prefill"] == expected


# --- windows and chunks (past the window: tests/test_windows.py) ----------------------------------------

@given(st.integers(1, 2), st.integers(1, 7))
def test_inside_the_window_flops_equal_flopcountermode(b, s):
    """A small Mistral with a sliding window of 8 (transformers, eager, CPU): while the prompt fits in the
    window, the prefill's FLOPs are those of full attention, as symllm counts them."""
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    raw = {"model_type": "mistral", "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 40, "sliding_window": 8}
    model = _hf_model(raw, "cpu")
    with FlopCounterMode(display=False) as forward, torch.no_grad():
        model(torch.zeros(b, s, dtype=torch.long))
    assert costs.workload(from_hf(raw), batch=b, seq=s, logits="all")["flops"]["prefill"] == forward.get_total_flops()


# --- the command line -----------------------------------------------------------------------------------

def test_count_shows_total_and_active(cli):
    """count --json carries params.active; the text table names the experts and the active row."""
    r = cli(["count", "mixtral-8x7b", "--json"])
    assert json.loads(r.out)["params"]["active"] == symllm.params("mixtral-8x7b")["active"]  # transformers: above
    text = cli(["count", "mixtral-8x7b"]).out
    assert "active (per token)" in text and "8 experts, 2 per token" in text


def test_multimodal_llama4_config_counts_the_text_model(tmp_path, cli):
    """A Llama 4 checkpoint's own config.json (model_type llama4) counts its text_config, saying in one
    line that the vision encoder is not counted."""
    raw = {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
           "vision_config": {"hidden_size": 1408}, "text_config": preset_info(LLAMA4[0])["config"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", str(path), "--json"])
    assert r.code == 0 and json.loads(r.out)["params"]["total"] == symllm.params(LLAMA4[0])["total"]
    assert "vision encoder" in json.loads(r.out)["config"]["note"]
    assert "vision encoder" in cli(["count", str(path)]).out


def test_derive_moe_shows_total_and_active(cli):
    """derive --component moe shows the mixture's parameters and its active part."""
    r = cli(["derive", "--component", "moe", "--format", "text"])
    assert r.code == 0 and "n_e" in r.out


# --- the torch reference model ----------------------------------------------------------------------

@given(MOE_FAMILIES)
def test_random_moe_configs_equal_the_reference_model(reference, raw):
    """Per kind (router, experts, shared expert, dense SwiGLU, attention, norms), the total and the active
    count equal symllm's torch reference model (its own MoE: a router, ModuleLists of experts) on meta."""
    cfg = from_hf(raw)
    measured = reference.count(reference.build(cfg, device="meta"))
    assert kinds(symllm.params(cfg)) == kinds(measured)


@given(MOE_FAMILIES, st.integers(1, 2), st.integers(1, 6))
def test_reference_moe_flops_equal_flopcountermode(torch, reference, raw, b, s):
    """The reference runs each token through its k experts only (and skips RoPE, adds the temperature
    and the L2 QK-norm where Llama 4 does): prefill and training matmul FLOPs equal FlopCounterMode's."""
    from torch.utils.flop_counter import FlopCounterMode
    cfg = from_hf(raw)
    torch.manual_seed(0)
    model = reference.build(cfg, device="cpu")
    tokens = torch.randint(0, cfg.vocab_size, (b, s))
    with FlopCounterMode(display=False) as forward:  # one forward counted, then its backward
        loss = model(tokens).sum()
    with FlopCounterMode(display=False) as backward:
        loss.backward()
    work = costs.workload(cfg, batch=b, seq=s, logits="all")["flops"]  # model(tokens): every position's logits
    assert (work["prefill"], work["training_step"]) == \
        (forward.get_total_flops(), forward.get_total_flops() + backward.get_total_flops())


@pytest.mark.parametrize("name", (MIXTRAL[0], LLAMA4[0], QWEN3_MOE[0], QWEN2_MOE[0], GPT_OSS[0], "mistral-7b-v0.1"))
def test_verify_agrees_for_the_new_presets(torch, cli, tmp_path, name):
    """symllm verify builds the torch reference and finds every kind of parameter equal (one preset per
    family: every preset's reference is compared kind by kind in tests/test_hypothesis.py). Qwen3-30B-A3B's
    48 identical MoE layers of 128 experts (seconds to build) are verified as its config.json cut to 2 of
    them: the same kinds of parameter, the same widths."""
    if name == QWEN3_MOE[0]:
        raw = preset_info(name)["config"]
        assert raw.get("decoder_sparse_step", 1) == 1 and not raw.get("mlp_only_layers")  # every layer alike
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**raw, "num_hidden_layers": 2}))
        r = cli(["verify", path])
        assert r.code == 0 and r.out.rstrip().endswith(f"{name}: all components agree")
        return
    r = cli(["verify", name])
    assert r.code == 0 and r.out.rstrip().endswith(f"{name}: all components agree")


@pytest.mark.parametrize("name", ["mixtral-8x7b", LLAMA4[0]])
def test_hf_stacks_refuse_what_they_do_not_model(cli, name):
    """The HF stacks' tensor lists are LlamaForCausalLM's; a mixture of experts is refused, not counted."""
    r = cli(["count", name, "--stack", "hf-eager"])
    assert r.code == 2 and r.out == "" and "mixture-of-experts" in r.err and r.err.count("\n") == 1
