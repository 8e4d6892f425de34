"""Nemotron-H (Mamba-2, attention without RoPE, squared-ReLU MLP layers) against transformers' own classes:
parameters on the meta device (per kind of layer and in total, drawn configs), matmul FLOPs under torch's
FlopCounterMode on small CPU models through the torch fallback paths (the chunked SSD scan for a prefill, the
recurrent update for a decode step), and the cache a real prefill leaves: its keys and values
(memory.kv_cache) and its convolution and SSM states (memory.state_cache), byte for byte."""
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.errors import SymllmError
from tests.conftest import held_for_backward, live_peak, requires, steps_and_caches_agree
from tests.strategies import nemotron_h_configs

#: the model types whose per-kind parameter property is here, each drawn under every profile
#: (tests/test_elementwise.py checks every family symllm reads has one)
KINDS = ("nemotron_h",)


def _hf_model(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    options = {k: v for k, v in raw.items() if k != "model_type"}
    # eager experts: the per-expert loop of NemotronHExperts.forward (the grouped_mm path counts otherwise)
    config = transformers.NemotronHConfig(**options, attn_implementation="eager", experts_implementation="eager")
    torch.manual_seed(0)
    with torch.device(device):
        return transformers.NemotronHForCausalLM(config)


#: transformers' module of each layer type -> symllm's component holding it
_PARTS = {"linear_attention": "/mamba/", "full_attention": "/attention/", "mlp": "/feed_forward/", "moe": "/moe/"}


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_params_equal_transformers_on_meta(kind, data):
    """The total, the active (the total less, in each MoE layer, the routed experts a token does not run:
    (n_routed_experts - num_experts_per_tok) of its experts.up_proj and down_proj's per-expert slices), and the
    Mamba-2, attention, MLP and MoE mixers' parameters, equal numel of transformers' NemotronHForCausalLM built
    on the meta device."""
    raw = data.draw(nemotron_h_configs())
    model = _hf_model(raw)
    types = model.config.layers_block_type
    measured = dict.fromkeys(("total", "active", *_PARTS), 0)
    for name, p in model.named_parameters():
        measured["total"] += p.numel()
        unused = model.config.n_routed_experts - model.config.num_experts_per_tok
        measured["active"] += p.numel() - (unused * p[0].numel() if ".mixer.experts." in name else 0)
        if ".mixer." in name:
            measured[types[int(name.split(".")[2])]] += p.numel()
    out = symllm.params(from_hf(raw))
    ours = dict.fromkeys(("total", "active", *_PARTS), 0)
    ours["total"], ours["active"] = out["total"], out.get("active", out["total"])
    for key, value in out.items():
        if key.endswith("block") or "/" not in key:
            continue
        for part, path in _PARTS.items():
            if path in key:
                ours[part] += value
    assert ours == measured


def test_mamba_parts_by_hand():
    """One Mamba-2 layer, written out from NemotronHMamba2Mixer.__init__ (d = 16, 4 heads of 6, state 5, 2
    groups, kernel 3, both biases): d_i = 24, conv_dim = 24 + 2·2·5 = 44; in_proj 16·(24 + 44 + 4) + 72 = 1224,
    conv1d 44·3 + 44 = 176, A_log, D, dt_bias 4 each, norm 24, out_proj 24·16 + 16 = 400."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 6, "ssm_state_size": 5,
           "n_groups": 2, "conv_kernel": 3, "use_bias": True, "hybrid_override_pattern": "M"}
    out = symllm.params(from_hf(raw))
    assert {k.split("/")[-1]: v for k, v in out.items() if k.startswith("block/mamba/")} == {
        "in_proj": 1224, "conv1d": 176, "A_log": 4, "D": 4, "dt_bias": 4, "ssd_scan": 0, "norm": 24, "out_proj": 400}
    assert out["total"] == 10 * 16 * 2 + 16 + 1224 + 176 + 12 + 24 + 400 + 16  # embed, lm_head, norms


#: a Nemotron-3 Super-like MoE layer in miniature: latent experts (moe_latent_size 3 of d = 16), with mlp_bias
_LATENT = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 6, "ssm_state_size": 5,
           "n_groups": 2, "conv_kernel": 3, "hybrid_override_pattern": "ME*", "n_routed_experts": 4,
           "num_experts_per_tok": 2, "moe_intermediate_size": 6, "moe_shared_expert_intermediate_size": 5,
           "moe_latent_size": 3, "mlp_bias": True}


def test_latent_moe_parts_by_hand():
    """One latent MoE layer, written out from NemotronHMoE.__init__ and NemotronHExperts.__init__ (d = 16, 4
    experts of 6, 2 a token, shared expert of 5, moe_latent_size 3, mlp_bias): router 4·16 = 64; experts
    4·(6·3 + 3·6) = 144 (up_proj [4, 6, 3], down_proj [4, 3, 6]: the latent width, not d); fc1_latent_proj
    16·3 + 3 = 51; fc2_latent_proj 3·16 + 16 = 64; shared up 16·5 + 5 = 85, down 5·16 + 16 = 96. Active: the
    total less the 2 experts a token does not run, 2·36 = 72."""
    out = symllm.params(from_hf(_LATENT))
    moe = {k.split("/", 2)[-1]: v for k, v in out.items() if "/moe/" in k}
    assert moe == {"router": 64, "fc1_latent_proj": 51, "experts": 144, "fc2_latent_proj": 64,
                   "shared_experts/w3": 85, "shared_experts/w2": 96}
    assert out["total"] - out["active"] == 72


@given(nemotron_h_configs(), st.integers(1, 2), st.integers(4, 40))
@example(dict(_LATENT), 2, 5)  # the latent experts always among the drawn configs
def test_flops_and_caches_equal_transformers_cpu(raw, b, s):
    """For drawn configs (prompts of at least 4 tokens: transformers pads a shorter one to the convolution's
    kernel, which symllm does not count; an attention layer appended where the pattern has none, since
    transformers' cache cannot take a decode step without one), a prefill's matmul FLOPs (the chunked SSD
    scan over chunks of chunk_size, the last position's logits; each token's router logits and its k routed
    experts through transformers' eager experts loop, and the shared expert) and a decode step's (the
    recurrent update)
    equal FlopCounterMode, and after the prefill transformers' cache holds memory.kv_cache in its keys and
    values and memory.state_cache in its conv and recurrent states (an fp32 run)."""
    pattern = raw.pop("hybrid_override_pattern", None)
    types = raw.pop("layers_block_type", None) or [{"M": "linear_attention", "*": "full_attention", "-": "mlp",
                                                    "E": "moe"}[c] for c in pattern]
    if "full_attention" not in types:
        types = [*types, "full_attention"]
    raw = {**raw, "layers_block_type": types, "num_hidden_layers": len(types)}
    steps_and_caches_agree(_hf_model(raw, "cpu").eval(), raw, b, s)


def test_scan_flops_by_hand():
    """The chunked SSD scan of one sequence of s = 5 over chunks of Q = 4 (c = 2 chunks, the second padded), one
    head of width p = 1, state n = 1, written from mamba2_chunk_scan's five einsums: C·Bᵀ scores 2·c·Q²·n = 64,
    their product with x 2·c·Q²·p = 64, the chunk states 2·c·Q·p·n = 16, the chunk-to-chunk recurrence over
    c + 1 = 3 states 2·3²·p·n = 18, C with the starting states 2·c·Q·n·p = 16: 178 (symllm.arch.components.mamba's
    doctest holds it)."""
    from symllm.arch.components.mamba import _scan
    from symllm.arch.symbols import Q_c, d_m, d_s, n_m, s
    assert _scan(s).subs({s: 5, Q_c: 4, n_m: 1, d_m: 1, d_s: 1}) == 64 + 64 + 16 + 18 + 16


@pytest.mark.parametrize("change, message", [
    ({"hybrid_override_pattern": "ME", "moe_latent_size": 0}, "moe_latent_size: "),
    ({"hybrid_override_pattern": "ME", "n_routed_experts": 3, "n_group": 2}, "n_group: 2 does not divide the 3"),
    ({"hybrid_override_pattern": "MX"}, "hybrid_override_pattern: unknown layer 'X'"),
    ({"mamba_hidden_act": "gelu"}, "mamba_hidden_act: 'gelu' is not modelled"),
    ({"mlp_hidden_act": "silu"}, "mlp_hidden_act: 'silu' is not modelled"),
    # the config class's default MTP layers (attention, MoE): a MoE layer the model has none of
    ({"num_nextn_predict_layers": 1}, "mtp_layers_block_type: a 'moe' layer is not modelled there"),
    ({"num_nextn_predict_layers": 1, "mtp_hybrid_override_pattern": "*M"},
     "mtp_hybrid_override_pattern: a 'linear_attention' layer is not modelled there"),
    ({"attention_bias": True}, "attention_bias: True is ignored by transformers' nemotron_h"),
    ({"mamba_num_heads": 3, "n_groups": 2}, "mamba_num_heads: 3 is not a multiple of the 2 groups"),
])
def test_refusals_name_the_key(change, message):
    """What symllm does not model (MoE layers, multi-token-prediction layers vLLM does not build or the model has
    none of, another activation) or transformers would not build is refused in one line naming the config key."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 6, "ssm_state_size": 5,
           "n_groups": 2, "conv_kernel": 3, "hybrid_override_pattern": "M*-"} | change
    with pytest.raises(SymllmError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        from_hf(raw)


def test_nemotron_h_8b_layout_equals_transformers_on_meta():
    """The Nemotron-H-8B layout (52 layers ``M-M-M-M*-...``, d = 4096, MLP 21504, 32 query and 8 key-value heads
    of 128, 128 Mamba heads of 64, state 128, 8 groups, kernel 4: NVIDIA's Megatron-Bridge documentation,
    docs/models/llm/nemotronh.md, and its test fixture of the checkpoint's config.json, keys as the checkpoint
    writes them: ``attention_head_dim``, ``rms_norm_eps``, ``mamba_proj_bias`` beside transformers' own) counts
    what transformers' NemotronHForCausalLM builds on the meta device, 8,100,852,736. No preset is shipped: no
    citable copy of the checkpoint's own config.json was found."""
    transformers, torch = requires("transformers"), requires("torch")
    raw = {"architectures": ["NemotronHForCausalLM"], "attention_bias": False, "attention_head_dim": 128,
           "chunk_size": 128, "conv_kernel": 4, "expand": 2, "hidden_size": 4096,
           "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
           "intermediate_size": 21504, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu",
           "mamba_num_heads": 128, "mamba_proj_bias": False, "max_position_embeddings": 8192, "mlp_bias": False,
           "mlp_hidden_act": "relu2", "model_type": "nemotron_h", "n_groups": 8, "num_attention_heads": 32,
           "num_hidden_layers": 52, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "ssm_state_size": 128,
           "tie_word_embeddings": False, "use_bias": False, "use_conv_bias": True, "vocab_size": 131072}
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    built = sum(p.numel() for p in model.parameters())
    assert symllm.params(from_hf(raw))["total"] == built == 8_100_852_736


def test_nemotron_3_nano_preset_equals_transformers_on_meta():
    """The nemotron-3-nano-30b-a3b preset (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's config.json as
    published: 23 Mamba-2, 23 MoE and 6 attention layers) counts, in total and per mixer, what transformers'
    NemotronHForCausalLM builds from that config on the meta device; the model card's rounded 31.6B total and
    3.6B active are checked by tests/test_params.py::test_rounded_published_figures."""
    transformers, torch = requires("transformers"), requires("torch")
    from symllm.arch.config import preset_info
    raw = preset_info("nemotron-3-nano-30b-a3b")["config"]
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert type(model).__name__ == "NemotronHForCausalLM"
    counts = symllm.params("nemotron-3-nano-30b-a3b")
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    built = {"mixer.in_proj": 0, "mixer.experts": 0, "mixer.q_proj": 0}
    for name, p in model.named_parameters():
        for key in built:
            if key in name:
                built[key] += p.numel()
    assert counts["block/mamba/in_proj"] == built["mixer.in_proj"]
    assert counts["moe_block/moe/experts"] == built["mixer.experts"]
    assert counts["nope_block/attention/wq"] == built["mixer.q_proj"]


# --- the inference working set of one Mamba-2 mixer, against the bytes torch holds live ----------------

def _one_mamba_layer(raw: dict) -> dict:
    """``raw`` with one layer, a Mamba-2 mixer (its shapes as drawn)."""
    raw = {k: v for k, v in raw.items() if k not in ("hybrid_override_pattern", "layers_block_type")}
    return {**raw, "num_hidden_layers": 1, "hybrid_override_pattern": "M"}


def _working_set_case(raw: dict, b: int, s: int) -> tuple[int, int]:
    """``(torch's, symllm's)`` working set of one Mamba-2 mixer's prefill over ``b × s`` fp32 inputs, in bytes:
    the live peak torch measures through its fallback scan (:func:`tests.conftest.live_peak`) plus the mixer's
    input and the residual stream beside it (``2·b·s·d``), and symllm's ``β_a·(2·b·s·d + the largest live
    candidate)`` of the component."""
    torch = requires("torch")
    from symllm.arch.algebra import maximum
    mixer = _hf_model(raw, "cpu").model.layers[0].mixer.eval()
    ours = next(c for c in symllm.model_for(from_hf(raw)).walk() if c.name == "mamba")
    x = torch.randn(b, s, raw["hidden_size"])
    stream = 4 * 2 * b * s * raw["hidden_size"]
    values = symllm.values(from_hf(raw), batch=b, seq=s, dtype="fp32")
    live = maximum(*(x for c in ours.walk() for x in c.live))
    return live_peak(mixer, x) + stream, stream + 4 * int(live.subs(values))


@given(data=st.data(), b=st.integers(2, 3), s=st.integers(3, 70))
def test_working_set_follows_torch_live_bytes(data, b, s):
    """The Mamba-2 mixer's inference working set (docs/conventions.md, "Mamba-2"; symllm's live candidates
    of the component) is the bytes transformers' torch fallback (``mamba2_chunk_scan``) holds live at its
    peak, measured on CPU (fp32, no grad), within 0.1% (the two bool masks rounded up to whole fp32
    elements), in the general case: more than one head (with one, ``torch.einsum`` permutes the states
    without copying them; every published checkpoint has dozens) and sequences padded to whole chunks by
    at least one position (a whole number of chunks pads nothing and some copies become views), in two chunks or
    more. In a single chunk ``torch.einsum`` reads some of the chunk's tensors as views (which ones depends on the
    widths: found by Hypothesis draws), so torch holds fewer bytes than symllm's form, by at most one chunk's
    fp32 states, ``4·b·H·d_h·d_s``: asserted as that bound (and exactly at one width below)."""
    raw = _one_mamba_layer(data.draw(nemotron_h_configs()))
    if raw["mamba_num_heads"] == 1:
        raw["mamba_num_heads"] = 2
    if s % raw["chunk_size"] == 0:
        s += 1
    measured, ours = _working_set_case(raw, b, s)
    states = 4 * b * raw["mamba_num_heads"] * raw["mamba_head_dim"] * raw["ssm_state_size"]
    over = states if s < raw["chunk_size"] else 0
    assert 0 <= ours - measured < measured / 1000 + over, (ours, measured, over)


@pytest.mark.parametrize("s", [3, 5, 9])
def test_working_set_of_one_wide_heads_in_one_chunk(s):
    """Heads of one element (``mamba_head_dim`` 1), chunk 4, 2 heads of state 3, batch 2: in one chunk (``s`` 3)
    torch holds 4·2·2·3 = 48 bytes fewer than symllm's form (the chunk's states read as a view); from two
    chunks on (``s`` 5, 9) the form is exact again."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": 2, "mamba_head_dim": 1,
           "ssm_state_size": 3, "n_groups": 1, "conv_kernel": 1, "chunk_size": 4,
           "hybrid_override_pattern": "M", "num_hidden_layers": 1}
    measured, ours = _working_set_case(raw, 2, s)
    assert ours - measured == (48 if s < 4 else 0)


@pytest.mark.parametrize("b, s, groups", [(2, 70, 8), (2, 200, 8), (1, 300, 2)])
def test_working_set_at_published_widths(b, s, groups):
    """Nemotron-H's Mamba widths (head 64, state 128, chunk 64; 8 heads here, in 8 or 2 groups): symllm's
    working set is the bytes torch holds live at its peak exactly (C's product with the chunks' states, or
    the chunk-to-chunk einsum for two chunks); before the scan's tensors were counted symllm held only a
    chunk's scores and two head-wide tensors, 3.6-4.3 times too few bytes here."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 128, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": 8, "mamba_head_dim": 64,
           "ssm_state_size": 128, "n_groups": groups, "conv_kernel": 4, "chunk_size": 64,
           "hybrid_override_pattern": "M", "num_hidden_layers": 1}
    measured, ours = _working_set_case(raw, b, s)
    assert ours == measured


# --- saved activations of one Mamba-2 mixer, against transformers' own module ----------------------------

def _saved_case(raw: dict, b: int, s: int, dtype: str = "bf16") -> tuple[int, int]:
    """``(torch's, symllm's)`` bytes one Mamba-2 mixer's training forward over ``b × s`` random inputs holds for
    backward (:func:`tests.conftest.held_for_backward`: saved_tensors_hooks, each storage once, parameters left
    out), the mixer and its input in ``dtype`` (``bf16`` or ``fp32``; CPU, transformers' torch fallback: the
    causal convolution's reference path and ``mamba2_chunk_scan``), and symllm's ``saved`` of the component."""
    torch = requires("torch")
    kind = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    mixer = _hf_model(raw, "cpu").model.layers[0].mixer.train().to(kind)
    ours = next(c for c in symllm.model_for(from_hf(raw)).walk() if c.name == "mamba")
    torch.manual_seed(0)
    x = torch.randn(b, s, raw["hidden_size"], dtype=kind, requires_grad=True)
    values = symllm.values(from_hf(raw), batch=b, seq=s, dtype=dtype)
    return held_for_backward(mixer, x), int(ours.total("saved").subs(values))


def _fp32_views(raw: dict, b: int, s: int) -> int:
    """What an fp32 run holds beyond symllm's convention (a run in a dtype below fp32, where every ``.float()``
    copies), in bytes, negative where it holds less: ``x.float()`` is a view of the convolution's whole
    activated output (x, B and C: ``2·n_g·d_s`` a token more than x's own copy), the gate's ``.float()`` a view
    of ``in_proj``'s output, which the convolution's input holds already (``d_i`` less), and the two
    ``.float()`` copies of the clamped dt are the clamp's output itself, one storage (``n_m`` less)."""
    d_i = raw["mamba_num_heads"] * raw["mamba_head_dim"]
    return 4 * b * s * (2 * raw["n_groups"] * raw["ssm_state_size"] - d_i - raw["mamba_num_heads"])


@given(data=st.data(), b=st.integers(1, 3), extra=st.integers(1, 40), dtype=st.sampled_from(("bf16", "fp32")))
def test_saved_activations_equal_transformers_saved_tensors(data, b, extra, dtype):
    """What transformers' Mamba-2 mixer (its torch fallback) holds for backward after a training forward (CPU,
    the mixer in bf16 or fp32) is symllm's ``saved`` of the mamba component: exactly in bf16, and in fp32 but
    for :func:`_fp32_views`. The convention is the general case: more than one head (with one,
    ``torch.einsum`` permutes without copying; every published checkpoint has dozens), a state of more than
    one (the strategy draws it so: an einsum over one element is a product) and at least two chunks
    (``s > chunk_size``; with one, einsum reuses some of them), padded or not."""
    raw = _one_mamba_layer(data.draw(nemotron_h_configs()))
    if raw["mamba_num_heads"] == 1:
        raw["mamba_num_heads"] = 2
    s = raw["chunk_size"] + extra
    measured, ours = _saved_case(raw, b, s, dtype)
    assert measured == ours + (_fp32_views(raw, b, s) if dtype == "fp32" else 0)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("heads, groups, b, s", [(16, 2, 2, 300), (8, 8, 1, 1000)])
def test_saved_activations_at_published_widths(heads, groups, b, s, dtype):
    """Nemotron-H's Mamba widths (Nemotron-3-Nano's config: head 64, state 128, chunk 128, kernel 4; here 16
    heads in 2 groups, 8 a group as its 64 in 8, or 8 in 8): symllm's saved bytes are what torch holds for
    backward exactly (fp32: but for :func:`_fp32_views`). Before the scan's tensors were counted symllm held
    12,464,832 of torch's 92,276,832 bytes in the first bf16 case (7.4 times too few) and 3.1-5.6 times too
    few in the others."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 128, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": heads, "mamba_head_dim": 64,
           "ssm_state_size": 128, "n_groups": groups, "conv_kernel": 4, "chunk_size": 128,
           "hybrid_override_pattern": "M", "num_hidden_layers": 1}
    measured, ours = _saved_case(raw, b, s, dtype)
    assert measured == ours + (_fp32_views(raw, b, s) if dtype == "fp32" else 0)


def test_saved_activations_by_hand():
    """One Mamba-2 mixer, d = 16, 3 heads of 5, state 7, 1 group (d_i = 15, W = 15 + 2·7 = 29 channels), kernel
    4, chunks of 4, over 2 sequences of 10 tokens (T = 20; c = 3 chunks, S = 12 padded positions, H = 2·3 = 6
    heads of a sequence), in bf16; what the torch fallback saves, tensor by tensor (transformers'
    modeling_nemotron_h.py), in elements:

    - in bf16 (2 bytes): in_proj's input T·d = 320; the convolution's input, a transposed view of in_proj's
      whole output T·(15 + 29 + 3) = 940, and its output over 10 + 3 positions 2·29·13 = 754 (SiLU's input);
      dt + dt_bias and its softplus (T·3 = 60 each); out_proj's input T·d_i = 300: 2434 elements, 4868 bytes
    - in fp32 (4 bytes): the two .float() copies of the clamped dt (120), x's copy (T·d_i = 300), exp(A_log)
      and its negation (6); per head and padded position (H·S = 72) exp(A_cumsum) and exp(last - A_cumsum)
      (2), L, G and einsum's copy of G·L (3·4), B padded and einsum's copies of B, C, B decayed and C (5·7),
      the D skip's padded x, einsum's two copies of x, C's product with the states and the padded output
      (5·5): 72·74 = 5328; the chunk decays H·(c + 1)² = 96; einsum's copies of the 4 states and the 3
      starting states H·7·5·7 = 1470; the gated norm: the gate's copy, its SiLU, y·silu(z), its normalised
      rows (4·T·15) and 1/rms (T): 1220. 426 + 5328 + 96 + 1470 + 1220 = 8540 elements, 34160 bytes
    - the segment sums' bool masks, two of 4 x 4 and two of (c + 1)² = 4 x 4: 64 bytes

    4868 + 34160 + 64 = 39092 bytes. In fp32 the copies of x, dt and the gate are views: the activated
    convolution output's T·29 = 580 elements in place of x's 300, one dt (60 less), no gate copy (300
    less): 2434·4 + 34160 + 64 + 4·(580 - 300 - 60 - 300) = 43640."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 16, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "mamba_num_heads": 3, "mamba_head_dim": 5, "ssm_state_size": 7,
           "n_groups": 1, "conv_kernel": 4, "chunk_size": 4, "hybrid_override_pattern": "M", "num_hidden_layers": 1}
    assert 2 * (320 + 940 + 754 + 120 + 300) + 4 * (426 + 5328 + 96 + 1470 + 1220) + 64 == 39092
    assert _saved_case(raw, 2, 10, "bf16") == (39092, 39092)
    measured, ours = _saved_case(raw, 2, 10, "fp32")
    assert measured == 2434 * 4 + 34160 + 64 + 4 * (580 - 300 - 60 - 300) == 43640
    assert ours + _fp32_views(raw, 2, 10) == measured
