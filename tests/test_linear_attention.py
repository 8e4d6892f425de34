"""The Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5, Qwen3.5-MoE) against transformers' own classes:
parameters on the meta device (per group of layers and in total, drawn configs), matmul FLOPs under
torch's FlopCounterMode on small CPU models through the torch fallback paths (chunked prefill, recurrent
decode), and the cache a real prefill leaves: its keys and values (memory.kv_cache) and its convolution and
recurrent states (memory.state_cache), byte for byte."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.errors import SymllmError
from tests.conftest import held_for_backward, live_peak, prefill_and_steps, requires, steps_and_caches_agree
from tests.strategies import gated_deltanet_configs

_CLASSES = {"qwen3_next": ("Qwen3NextConfig", "Qwen3NextForCausalLM"),
            "qwen3_5_text": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM"),
            "qwen3_5_moe_text": ("Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM")}


def _hf_model(raw: dict, device: str = "meta"):
    transformers, torch = requires("transformers"), requires("torch")
    config_cls, model_cls = (getattr(transformers, name) for name in _CLASSES[raw["model_type"]])
    options = {k: v for k, v in raw.items() if k not in ("model_type", "partial_rotary_factor")}
    options["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0,
                                  "partial_rotary_factor": raw.get("partial_rotary_factor", 0.25)}
    config = config_cls(**options, attn_implementation="eager", experts_implementation="eager")
    with torch.device(device):
        return model_cls(config)


#: the model types whose per-kind parameter property is here, each drawn under every profile
#: (tests/test_elementwise.py checks every family symllm reads has one)
KINDS = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_params_equal_transformers_on_meta(kind, data):
    """The total, and the linear-attention and attention parameters, equal numel of
    transformers' class built on the meta device."""
    raw = data.draw(gated_deltanet_configs(kind))
    model = _hf_model(raw)
    measured = {"total": 0, "linear_attn": 0, "self_attn": 0}
    for name, p in model.named_parameters():
        measured["total"] += p.numel()
        for part in ("linear_attn", "self_attn"):
            if f".{part}." in name:
                measured[part] += p.numel()
    out = symllm.params(from_hf(raw))
    ours = {"total": out["total"], "linear_attn": 0, "self_attn": 0}
    for key, value in out.items():
        if key.endswith("block") or "/" not in key:
            continue
        if "/linear_attention/" in key:
            ours["linear_attn"] += value
        elif "/attention/" in key:
            ours["self_attn"] += value
    assert ours == measured


@pytest.mark.parametrize("kind", ["qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"])
@pytest.mark.parametrize("b, s", [(1, 5), (2, 70)])
def test_flops_and_caches_equal_transformers_cpu(kind, b, s):
    """A prefill of s tokens (the last position's logits: chunked delta rule, 64-position chunks, the second
    case over two chunks), a decode step (the recurrent form) and a generation of two tokens (the sum of
    the prefill and two steps, summed in closed form) equal FlopCounterMode; after the prefill
    transformers' cache holds exactly memory.kv_cache in its keys and values and memory.state_cache in its
    conv and recurrent states (fp32 run: the state is fp32 whatever the model's dtype)."""
    torch = requires("torch")
    raw = {"model_type": kind, "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 4,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 40,
           "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 6,
           "linear_value_head_dim": 10, "linear_conv_kernel_dim": 4, "full_attention_interval": 2,
           "partial_rotary_factor": 0.25}
    if kind != "qwen3_5_text":
        raw.update(num_experts=3, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=20)
    if kind == "qwen3_next":
        raw["mlp_only_layers"] = [1]
    torch.manual_seed(0)
    model = _hf_model(raw, "cpu").eval()
    ids = torch.randint(0, 50, (b, s))
    (prefill, decode, second), kv, state = prefill_and_steps(model, ids, steps=2)
    cfg = from_hf(raw)
    work = symllm.workload(cfg, batch=b, seq=s, dtype="fp32")
    assert work["flops"]["prefill"] == prefill
    assert work["flops"]["decode_token"] == decode
    generation = symllm.workload(cfg, batch=b, seq=s, gen=2, dtype="fp32")["flops"]["generation"]
    assert generation == prefill + decode + second
    assert (work["memory"]["kv_cache"], work["memory"]["state_cache"]) == (kv, state)


def test_transformers_conv_state_holds_the_whole_kernel():
    """transformers' cache keeps each Gated DeltaNet layer's last ``linear_conv_kernel_dim`` (here 4) inputs of
    its 2·2·6 + 4·10 = 64 channels, after a prefill of 5 tokens and after a decode step: the columns
    symllm's declaration gives transformers (vLLM's one fewer is checked by hand in
    test_preset_serving_holds_a_state_per_sequence)."""
    torch = requires("torch")
    from symllm.arch.recurrent_sizes import conv_state_columns
    raw = {"model_type": "qwen3_next", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 40,
           "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 6,
           "linear_value_head_dim": 10, "linear_conv_kernel_dim": 4, "full_attention_interval": 2,
           "num_experts": 3, "num_experts_per_tok": 2, "moe_intermediate_size": 12,
           "shared_expert_intermediate_size": 20}
    torch.manual_seed(0)
    model = _hf_model(raw, "cpu").eval()
    ids = torch.randint(0, 50, (1, 5))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        shapes = [tuple(getattr(layer, "conv_states")[0].shape) for layer in cache.layers
                  if isinstance(getattr(layer, "conv_states", None), dict) and layer.conv_states.get(0) is not None]
        model(ids[:, -1:], past_key_values=cache, use_cache=True)
        after = [tuple(layer.conv_states[0].shape) for layer in cache.layers
                 if isinstance(getattr(layer, "conv_states", None), dict) and layer.conv_states.get(0) is not None]
    assert shapes == after == [(1, 64, conv_state_columns(4))] and conv_state_columns(4) == 4


@given(gated_deltanet_configs(), st.integers(1, 2), st.integers(4, 70))
def test_random_configs_flops_and_caches_equal_transformers_cpu(raw, b, s):
    """For drawn configs of the three families (prompts of at least 4 tokens: transformers pads a shorter one
    to the convolution's kernel, which symllm does not count), the prefill's and a decode step's matmul
    FLOPs equal FlopCounterMode, and the cache after the prefill holds memory.kv_cache in keys and values
    and memory.state_cache in states."""
    torch = requires("torch")
    L = raw["num_hidden_layers"]
    types = raw.get("layer_types") or ["linear_attention" if (i + 1) % raw["full_attention_interval"] else
                                       "full_attention" for i in range(L)]
    if "full_attention" not in types:  # transformers' cache cannot take a decode step without an attention layer
        raw = {k: v for k, v in raw.items() if k != "full_attention_interval"} | {
            "layer_types": types[:-1] + ["full_attention"]}
    torch.manual_seed(0)
    steps_and_caches_agree(_hf_model(raw, "cpu").eval(), raw, b, s)


def test_state_is_constant_in_context_and_kv_only_attention():
    """Hand arithmetic: one Gated DeltaNet layer of 4 value heads of 8 x 10 (fp32, 4 bytes) and a kernel of
    4 over 2·2·8 + 4·10 = 72 channels (bf16) per sequence; the one attention layer's keys and values."""
    raw = {"model_type": "qwen3_next", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "linear_num_key_heads": 2,
           "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 10,
           "linear_conv_kernel_dim": 4, "full_attention_interval": 2, "num_experts": 2, "num_experts_per_tok": 1,
           "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8}
    state = 3 * (4 * 4 * 8 * 10 + 2 * 4 * 72)
    for seq in (10, 1000):
        memory = symllm.workload(from_hf(raw), batch=3, seq=seq)["memory"]
        assert memory["state_cache"] == state
        assert memory["kv_cache"] == 2 * 3 * seq * 2 * 8 * 2


def test_refusals_name_the_key():
    with pytest.raises(SymllmError, match="linear_num_value_heads: 3 is not a multiple of the 2 key heads"):
        from_hf({"model_type": "qwen3_next", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 3})
    with pytest.raises(SymllmError, match="attn_output_gate"):
        from_hf({"model_type": "qwen3_5_text", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "attn_output_gate": False})


# --- the preset of the published checkpoint ---------------------------------------------------------------

def test_preset_params_equal_transformers_on_meta():
    """qwen3-next-80b-a3b (its config.json as published): transformers' Qwen3NextForCausalLM built on the meta
    device holds exactly symllm's total (79,674,391,296; the card's "80B": tests/data/published_params.json)."""
    torch, transformers = requires("torch"), requires("transformers")
    import json
    from pathlib import Path
    preset = json.loads((Path(symllm.__file__).parent / "presets" / "qwen3-next-80b-a3b.json").read_text())["config"]
    config = transformers.Qwen3NextConfig(**{k: v for k, v in preset.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.Qwen3NextForCausalLM(config)
    assert symllm.params("qwen3-next-80b-a3b")["total"] == sum(p.numel() for p in model.parameters())


def test_preset_caches_by_hand():
    """Hand arithmetic for qwen3-next-80b-a3b at a 32,768-token prompt, bf16: 12 full-attention layers keep
    2 heads of 256 for keys and values (2·12·2·256·2 = 24,576 bytes a token); 36 Gated DeltaNet layers keep,
    per sequence, 32 fp32 states of 128 x 128 and the last 4 inputs of 2·16·128 + 32·128 = 8,192 channels."""
    memory = symllm.workload("qwen3-next-80b-a3b", seq=32768)["memory"]
    assert memory["kv_cache"] == 24576 * 32768
    assert memory["state_cache"] == 36 * (4 * 32 * 128 * 128 + 2 * 4 * 8192) == 77_856_768


def test_preset_serving_holds_a_state_per_sequence():
    """count --serve with a measured KV-cache budget: each sequence holds its 2,048 blocks of 16 tokens
    (24,576 bytes a token) and its state as vLLM shapes it (MambaStateShapeCalculator.gated_delta_net_state_shape,
    vllm/model_executor/layers/mamba/mamba_utils.py at 02d7108: the conv state ``conv_kernel_size - 1`` columns)
    and types it (``MambaStateDtypeCalculator.gated_delta_net_state_dtype`` with ``mamba_ssm_cache_dtype`` "auto":
    the model's dtype; Qwen3-Next has no config hook that sets it, symllm.arch.recurrent_sizes.SSM_STATE_DTYPES):
    36 layers of 32 bf16 states of 128 x 128 and 4 - 1 = 3 inputs of the 8,192 channels in bf16,
    36·(2·32·128·128 + 2·3·8192) = 39,518,208 bytes; at tp 2 the heads, and so the state and the KV heads (2 of
    them: one a rank), halve. Under ``--engine hf`` (transformers' own cache, LinearAttentionLayer: the last
    ``conv_kernel_size`` = 4 inputs, the fp32 state) it is memory.state_cache's 36·(4·32·128·128 + 2·4·8192) =
    77,856,768."""
    from symllm.costs import serving
    budget = 100 * 2**30
    state = 36 * (2 * 32 * 128 * 128 + 2 * 3 * 8192)
    assert state == 39_518_208
    one = serving.capacity("qwen3-next-80b-a3b", gpu="h200", seq=32768, kv_cache_bytes=budget)
    per_sequence = 2048 * 16 * 24576 + state
    assert one["state_bytes_per_sequence"] == state
    assert float(one["max_concurrency"]) == pytest.approx(budget / per_sequence)
    sequences = budget // per_sequence
    assert one["kv_tokens"] == (budget - sequences * state) // (16 * 24576) * 16
    two = serving.capacity("qwen3-next-80b-a3b", gpu="h200", seq=32768, kv_cache_bytes=budget, tp=2)
    assert two["state_bytes_per_sequence"] == state // 2 and two["kv_bytes_per_token"] == 24576 // 2
    hf = serving.capacity("qwen3-next-80b-a3b", gpu="h200", seq=32768, kv_cache_bytes=budget, engine="hf")
    assert hf["state_bytes_per_sequence"] == 36 * (4 * 32 * 128 * 128 + 2 * 4 * 8192) == 77_856_768


def test_preset_lora_targets_by_hand():
    """LoRA of rank 8 on the DeltaNet's in_proj_qkvz (2,048 -> 12,288) and out_proj (4,096 -> 2,048) in its
    36 layers: 8·36·(2048 + 12288 + 4096 + 2048) trainable; the fused experts' gate_proj is refused."""
    work = symllm.workload("qwen3-next-80b-a3b", lora_rank=8, lora_targets="in_proj_qkvz,out_proj")
    assert work["params"]["trainable"] == 8 * 36 * (2048 + 12288 + 4096 + 2048)
    with pytest.raises(SymllmError, match="gate_proj|w1"):
        symllm.workload("qwen3-next-80b-a3b", lora_rank=8, lora_targets="gate_proj")


def test_what_is_not_modelled_is_refused_in_one_line(cli):
    """verify against the torch reference (which has no Gated DeltaNet) is refused in one line, never a wrong
    "DIFFERS"."""
    requires("torch")
    r = cli(["verify", "qwen3-next-80b-a3b"])
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and "Gated DeltaNet" in r.err


def test_checkpoint_names_of_the_published_deltanet_by_hand():
    """A checkpoint of qwen3-next-80b-a3b holds, in each Gated DeltaNet layer (layer 0 is one), the depthwise
    conv1d as torch stores nn.Conv1d(groups=channels): (2·16·128 + 32·128 = 8192 channels, 1, a kernel of 4);
    A_log and dt_bias bare on linear_attn, 32 values each; in_proj_qkvz (2·16·128 + 2·32·128 = 12288 rows of
    2048) and in_proj_ba (2·32 = 64 rows); its full-attention layers (3 is one) a gated q_proj of 2·16·256 rows."""
    from symllm.costs import checkpoints
    want = checkpoints.expected("qwen3-next-80b-a3b")
    layer = "model.layers.0.linear_attn."
    assert want[layer + "conv1d.weight"]["shape"] == [8192, 1, 4]
    assert want[layer + "A_log"]["shape"] == want[layer + "dt_bias"]["shape"] == [32]
    assert want[layer + "in_proj_qkvz.weight"]["shape"] == [12288, 2048]
    assert want[layer + "in_proj_ba.weight"]["shape"] == [64, 2048]
    assert want["model.layers.3.self_attn.q_proj.weight"]["shape"] == [2 * 16 * 256, 2048]
    assert not any(name.startswith("model.layers.3.linear_attn") for name in want)


def test_roofline_traffic_reads_and_writes_the_state():
    """A decode step of qwen3-next-80b-a3b reads and writes each sequence's 77,856,768-byte state (by hand
    above) besides its weights and KV cache: the bytes moved at batch 3 exceed those at batch 1 by the two
    sequences' KV cache, logits and 2 x their states; a prefill writes the state once."""
    from symllm.arch import symbols as S
    from symllm.costs import numbered, roofline_bytes
    spec = symllm.spec("qwen3-next-80b-a3b")
    mdl = spec.model()
    def moved(phase, batch):
        return roofline_bytes.bytes_moved(mdl, phase).subs(numbered.values(spec, batch=batch, seq=1000, dtype="bf16"))
    kv_per_sequence = 24576 * 1001  # 12 layers' keys and values at context 1000, then the new token's
    logits = 2 * 151936  # bf16
    assert moved("decode", 3) - moved("decode", 1) == 2 * (kv_per_sequence + logits + 2 * 77_856_768)
    assert moved("prefill", 3) - moved("prefill", 1) == 2 * (24576 * 1000 + logits + 77_856_768)


def test_comparison_shows_the_state_of_the_hybrid_only():
    """count A B: the hybrid's state cache (77,856,768 bytes a sequence, by hand above) has its row; a model
    without one has no value in it."""
    from symllm.costs import comparison
    out = comparison.compare(["qwen3-next-80b-a3b", "qwen3-30b-a3b"], batch=2, seq=100)["models"]
    assert out["qwen3-next-80b-a3b"]["state_cache"] == 2 * 77_856_768 and "state_cache" not in out["qwen3-30b-a3b"]
    assert "state_cache" in [key for key, _, _ in comparison.ROWS]


# --- saved activations of one Gated DeltaNet, against transformers' own module -------------------------

def _one_linear_layer(raw: dict) -> dict:
    """``raw`` with one layer, a Gated DeltaNet (its other keys, the DeltaNet's shapes, as drawn)."""
    raw = {k: v for k, v in raw.items() if k != "full_attention_interval"}
    raw.update(num_hidden_layers=1, layer_types=["linear_attention"])
    if raw["model_type"] == "qwen3_next":
        raw.update(decoder_sparse_step=1, mlp_only_layers=[])
    return raw


def _linear_attention(raw: dict):
    """``(transformers' DeltaNet module, symllm's linear_attention component)`` of the one-layer ``raw``."""
    mdl = symllm.model_for(from_hf(raw))
    ours = next(c for c in mdl.walk() if c.name == "linear_attention")
    return _hf_model(raw, "cpu").train().model.layers[0].linear_attn, ours


def _saved_case(raw: dict, b: int, s: int, dtype: str = "fp32") -> tuple[int, int]:
    """``(torch's, symllm's)`` saved bytes of one DeltaNet's training forward over ``b × s`` random inputs in
    ``dtype`` (``fp32`` or ``bf16``: the module and its input in that dtype; CPU, the torch fallback path,
    chunked)."""
    torch = requires("torch")
    torch.manual_seed(0)
    module, ours = _linear_attention(raw)
    kind = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    x = torch.randn(b, s, raw["hidden_size"], dtype=kind, requires_grad=True)
    measured = held_for_backward(module.to(kind), x)
    values = symllm.values(from_hf(raw), batch=b, seq=s, dtype=dtype)
    return measured, int(ours.total("saved").subs(values))


def _unrepeated(raw: dict, b: int, s: int) -> int:
    """What transformers saves beyond symllm's convention in an fp32 run (where ``.float()`` is no copy) when
    the key and value heads are as many (``n_gk = n_gv``): ``repeat_interleave`` is skipped, so the l2 norms' inputs are views of the
    convolution's output (its ``b·s·(2·n_gk·d_gk + n_gv·d_gv)`` elements in place of q's and k's own
    ``2·b·n_gv·s·d_gk``), and in Qwen3-Next the gate z stays a view of in_proj_qkvz's whole output (in place
    of z's own ``b·s·n_gv·d_gv``). symllm counts q, k and z at their own sizes, as for grouped heads (the
    published checkpoints: 16 key heads, 32 or 48 value heads)."""
    n_gk, n_gv = raw["linear_num_key_heads"], raw["linear_num_value_heads"]
    if n_gk != n_gv:
        return 0
    d_gk, d_gv = raw["linear_key_head_dim"], raw["linear_value_head_dim"]
    conv = b * s * (2 * n_gk * d_gk + n_gv * d_gv)
    extra = conv - 2 * b * n_gv * s * d_gk
    if raw["model_type"] == "qwen3_next":
        extra += b * s * (conv // (b * s) + n_gv * d_gv) - b * s * n_gv * d_gv
    return 4 * extra


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data(), b=st.integers(2, 3), s=st.integers(2, 140).filter(lambda s: s % 64),
       dtype=st.sampled_from(("bf16", "fp32")))
def test_saved_activations_equal_transformers_saved_tensors(kind, data, b, s, dtype):
    """What transformers' Gated DeltaNet (its torch fallback: the chunked delta rule, the causal convolution's
    reference path) holds for backward after a training forward (CPU, the module in bf16 or fp32) is symllm's
    ``saved`` of the linear_attention component: exactly in bf16, and in fp32 but for :func:`_unrepeated`'s
    views (there ``.float()`` copies nothing). The convention is torch's general case:
    more than one sequence of more than one token, padded by at least one position to whole chunks. (With
    ``s`` a whole number of chunks, one sequence, or one token, torch's transposes and reshapes of tensors
    that are already contiguous return views where the general case copies, so storages are shared: a few
    ``b·n_gv·S``-sized storages more or less, an artefact of the reference no implementation's memory
    depends on; those shapes are not drawn.)"""
    raw = _one_linear_layer(data.draw(gated_deltanet_configs(kind)))
    measured, ours = _saved_case(raw, b, s, dtype)
    assert measured == ours + (_unrepeated(raw, b, s) if dtype == "fp32" else 0)


def _published_heads(kind: str) -> dict:
    """One Gated DeltaNet layer of ``kind`` (``qwen3_next`` or ``qwen3_5_text``) at the published checkpoints'
    head widths (``d_gk = d_gv = 128``, 2 key heads grouping 4 value heads), everything else tiny."""
    raw = {"model_type": kind, "vocab_size": 10, "hidden_size": 64, "num_hidden_layers": 1,
           "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 4,
           "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 128,
           "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "tie_word_embeddings": False,
           "rms_norm_eps": 1e-6, "layer_types": ["linear_attention"]}
    if kind == "qwen3_next":
        raw.update(num_experts=0, num_experts_per_tok=1, moe_intermediate_size=4, shared_expert_intermediate_size=4,
                   decoder_sparse_step=1, mlp_only_layers=[])
    return raw


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("kind", ["qwen3_next", "qwen3_5_text"])
def test_saved_activations_at_published_head_widths(kind, dtype):
    """At the published checkpoints' head widths (``d_gk = d_gv = 128``, 2 key heads grouping 4 value heads
    each, as Qwen3-Next's 16 of 32 and Qwen3.5's 16 of 48 do), over 2 sequences of 600 tokens (10 chunks, the
    last padded), symllm's saved bytes are what torch holds for backward exactly, in bf16 and in fp32 (with
    grouped heads no ``.float()`` view is shared: :func:`_unrepeated` is 0)."""
    raw = _published_heads(kind)
    measured, ours = _saved_case(raw, 2, 600, dtype)
    assert _unrepeated(raw, 2, 600) == 0 and ours == measured


def test_saved_activations_by_hand():
    """Qwen3-Next's DeltaNet, d = 8, 1 key head and 2 value heads (d_gk = 3, d_gv = 5), K_c = 4, over 2
    sequences of 70 tokens (two chunks of 64, the second padded), fp32; what the torch path saves, tensor by
    tensor (transformers' modeling_qwen3_next.py), in elements:

    - in_proj_qkvz's and in_proj_ba's input: b·s·d = 2·70·8 = 1120
    - conv1d's input (b, 16 channels, 70) and its output over 70 + 3 positions (SiLU's input): 2·16·(70 + 73) = 4576
    - sigmoid(b), softplus's input and output (b·s·n_gv = 280 each), exp(A_log) and its negation (2 each): 844
    - the l2 norms: q and k (b·n_gv·s·d_gk = 840 each) and their 1/norms (280 each): 2240
    - padded to S = 128, per value head (b·n_gv = 4): beta and three exps of g's cumulative sum (4·S),
      k padded, the two chunk matmuls' folded copies, the solve's output, q and k decayed (saved by the
      second chunk's scan: 6·S·d_gk), v padded, the solve's output, the scan's two v_new (3·S·d_gv), the pairwise decays,
      k·kᵀ and q·kᵀ, the UT system, the intra-chunk scores (5·S·64): 4·128·(4 + 18 + 15 + 320) = 182784
    - per chunk: its decay and the state it starts from (1 + 15): 4·2·16 = 128
    - the gated norm (280 rows of 5): its input, normalised, weighted, the gate, SiLU(gate) and out_proj's
      input (6·5), and 1/rms (1): 280·31 = 8680

    1120 + 4576 + 844 + 2240 + 182784 + 128 + 8680 = 200372 elements × 4 bytes = 801488, and the 64 × 64
    bool mask (4096 bytes): 805584."""
    raw = {"model_type": "qwen3_next", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
           "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 4,
           "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 3,
           "linear_value_head_dim": 5, "linear_conv_kernel_dim": 4, "tie_word_embeddings": False,
           "rms_norm_eps": 1e-6, "layer_types": ["linear_attention"], "num_experts": 0, "num_experts_per_tok": 1,
           "moe_intermediate_size": 4, "shared_expert_intermediate_size": 4, "decoder_sparse_step": 1,
           "mlp_only_layers": []}
    assert (1120 + 4576 + 844 + 2240 + 182784 + 128 + 8680) * 4 + 64 * 64 == 805584
    assert _saved_case(raw, 2, 70) == (805584, 805584)


# --- the inference working set of one Gated DeltaNet, against the bytes torch holds live ---------------

def _working_set_case(raw: dict, b: int, s: int) -> tuple[int, int]:
    """``(torch's, symllm's)`` working set of one DeltaNet's prefill over ``b × s`` fp32 inputs, in bytes: the
    live peak torch measures (:func:`tests.conftest.live_peak`) plus the layer's input and the residual stream beside it
    (``2·b·s·d``, fp32), and symllm's ``β_a·(2·b·s·d + the largest live candidate)`` of the component."""
    torch = requires("torch")
    from symllm.arch.algebra import maximum
    torch.manual_seed(0)
    module, ours = _linear_attention(raw)
    x = torch.randn(b, s, raw["hidden_size"])
    stream = 4 * 2 * b * s * raw["hidden_size"]
    measured = live_peak(module.eval(), x) + stream
    values = symllm.values(from_hf(raw), batch=b, seq=s, dtype="fp32")
    live = maximum(*(x for c in ours.walk() for x in c.live))
    return measured, stream + 4 * int(live.subs(values))


def _viewed(raw: dict, b: int, s: int) -> int:
    """Qwen3-Next's contiguous copies of z, b and a (``4·b·s·(n_gv·d_gv + 2·n_gv)`` bytes) that torch does
    not make with one key head or as many key heads as value heads (the reshapes are views then); symllm
    counts the published checkpoints' case, several key heads grouping several value heads each."""
    n_gk, n_gv = raw["linear_num_key_heads"], raw["linear_num_value_heads"]
    if raw["model_type"] != "qwen3_next" or 1 < n_gk < n_gv:
        return 0
    return 4 * b * s * (n_gv * raw["linear_value_head_dim"] + 2 * n_gv)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data(), b=st.integers(2, 3), s=st.integers(2, 140).filter(lambda s: s % 64))
def test_working_set_follows_torch_live_bytes(kind, data, b, s):
    """The DeltaNet's inference working set (docs/conventions.md, "Linear attention"; symllm's live candidates
    of the component) is within 2% of the bytes transformers' torch fallback (the chunked rule) holds live at
    its peak, measured on CPU (fp32, no grad) in the general case (:func:`_viewed`). With narrow heads
    (``d_gk``, ``d_gv`` under the chunk of 64) a moment inside the scan that symllm does not name can hold a
    little more; at the published head widths it is exact (:func:`test_working_set_at_published_head_widths`)."""
    raw = _one_linear_layer(data.draw(gated_deltanet_configs(kind)))
    measured, ours = _working_set_case(raw, b, s)
    measured += _viewed(raw, b, s)
    assert abs(ours / measured - 1) < 0.02, (ours, measured)


@pytest.mark.parametrize("kind", ["qwen3_next", "qwen3_5_text"])
@pytest.mark.parametrize("b, s", [(2, 600), (1, 1000)])
def test_working_set_at_published_head_widths(kind, b, s):
    """At the published checkpoints' head widths (``d_gk = d_gv = 128``, 2 key heads grouping 4 value heads
    each, as Qwen3-Next's 16 of 32 and Qwen3.5's 16 of 48 do), symllm's working set is the bytes torch holds
    live at its peak exactly (the peak is the keys' decay before the scan). Before it counted the scan's
    transients, the keys' decay and Qwen3-Next's copies of z, b and a, symllm read 12-13% low for Qwen3-Next
    here (40565760 of 46232064 bytes at b = 2, s = 600) and 4-6% high for Qwen3.5 (it held in_proj_qkv's
    output, which the convolution's output replaces)."""
    raw = _published_heads(kind)
    measured, ours = _working_set_case(raw, b, s)
    assert ours == measured


def test_working_set_by_hand():
    """Qwen3.5's DeltaNet, d = 8, 1 key head and 2 value heads (d_gk = 3, d_gv = 5), K_c = 4, over 2
    sequences of 70 tokens, fp32: the peak is the intra-chunk product (transformers' modeling_qwen3_5.py), in
    elements:

    - the residual stream and the normed input: 2·140·8 = 2240
    - the convolution's output (b, 16 channels, 70), z (140·10), b, a, beta and g (140·2 each): 2240 + 1400 + 1120 = 4760
    - padded to S = 128, per value head (b·n_gv = 4): q, k, k·β (3·3), v, v·β (2·5), beta, g and its
      cumulative sum (3), the pairwise decays, the UT system, q·kᵀ and its decayed product (4·64):
      4·128·(9 + 10 + 3 + 256) = 142336
    - the 64 × 64 bool mask: 4096 bytes

    (2240 + 4760 + 142336)·4 + 4096 = 601440 bytes."""
    raw = {"model_type": "qwen3_5_text", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
           "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 4,
           "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 3,
           "linear_value_head_dim": 5, "linear_conv_kernel_dim": 4, "tie_word_embeddings": False,
           "rms_norm_eps": 1e-6, "layer_types": ["linear_attention"]}
    assert (2240 + 4760 + 142336) * 4 + 4096 == 601440
    assert _working_set_case(raw, 2, 70) == (601440, 601440)
