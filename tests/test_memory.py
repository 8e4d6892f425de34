"""Memory: symllm's closed forms against what the torch reference model actually holds.

KV cache: the bytes of the reference model's cache tensors after a real prefill and decode steps.
Activations: the bytes of the distinct tensors the eager reference saves for backward (saved_tensors_hooks),
which equal symllm's eager stack plus the terms docs/conventions.md, "FLOPs and memory" names (reference_extras below).
The fused stack's attention is checked against SDPA's CPU flash kernel in tests/test_stacks.py.
"""
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.costs import phases as costs
from symllm.arch import symbols as S
from symllm.arch.dtypes import DTYPES, dtype_bytes
from symllm.numbers.kernels import evaluate

from .conftest import requires, saved_during
from .strategies import configs, generation_workloads

torch = requires("torch")  # the reference model is torch: skipped without it, a failure under CI=true
from symllm import reference  # noqa: E402  (needs torch)

TORCH_DTYPES = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: three presets measured whole (weights in every dtype, training states under ZeRO): ZeRO's sharding looks
#: only at the total Ψ, so its property draws the stage and the ranks over these (every preset's Ψ is
#: measured in tests/test_hypothesis.py; drawing from all 58 compiled a workload per preset, seconds each)
PRESETS = ["llama3.2-1b", "llama2-13b", "llama3.1-405b"]


def _vals(cfg, **workload):
    vals = symllm.values(cfg, **workload)
    vals[S.d_ff] = symllm.hidden_dim(cfg)
    return vals


# --- KV cache ---------------------------------------------------------------------------------------

@given(configs(variant=None), generation_workloads())
def test_kv_cache_bytes_after_prefill_and_decode_steps(cfg, w):
    """After a real CPU prefill of s tokens and each of n decode steps, the reference's cache tensors
    hold exactly symllm's KV-cache bytes for s + (steps so far) tokens."""
    b, s, n, dtype = w["batch"], w["seq"], w["gen"], w["dtype"]
    torch.manual_seed(0)
    model = reference.build(cfg, device="cpu", dtype=TORCH_DTYPES[dtype])
    kv = costs.memory(symllm.model_for(cfg), "kv_cache")
    beta = {S.beta_kv: dtype_bytes(dtype)}
    with torch.no_grad():
        model(torch.randint(0, cfg.vocab_size, (b, s)), start_pos=0, use_cache=True)
        assert model.kv_cache_bytes() == evaluate(kv, {**_vals(cfg, batch=b, seq=s, gen=0), **beta})
        for i in range(n):
            model(torch.randint(0, cfg.vocab_size, (b, 1)), start_pos=s + i, use_cache=True)
            assert model.kv_cache_bytes() == evaluate(kv, {**_vals(cfg, batch=b, seq=s, gen=i + 1), **beta})
    out = costs.workload(cfg, batch=b, seq=s, gen=n, dtype=dtype)["memory"]["kv_cache"]
    assert out == model.kv_cache_bytes()


@given(st.sampled_from(symllm.preset_names()), st.integers(1, 64), st.integers(1, 10**6), st.integers(0, 10**5))
def test_fp16_kv_cache_is_4_bytes_per_layer_kv_head_dim_and_token(name, b, s, n):
    """The fp16 KV cache is 4·b·L·n_kv·d_h·(s+n) bytes (K and V, 2 bytes each; GQA: n_kv heads; MLA:
    2·b·L·(r_kv + d_hr)·(s+n), the latent transformers caches); a layer
    with a sliding window or attention chunk of W (Mistral; Llama 4's layers with RoPE; Gemma's and gpt-oss's
    local layers) holds min(s+n, W); which layers have it is what the config says layer by layer
    (``ModelConfig.groups``: each kind of layer and how many); a linear-attention layer holds none."""
    cfg = symllm.load(name)
    # only attention layers cache keys and values (a Gated DeltaNet layer keeps a state, not a KV cache)
    attending = [(kind, count) for kind, count in cfg.groups if kind.mixer == "attention"]
    windowed = 0 if cfg.window is None else sum(count for kind, count in attending if kind.window)
    positions = (sum(count for _, count in attending) - windowed) * (s + n) + \
        windowed * min(s + n, cfg.window or 0)
    # per position and layer: K and V of n_kv heads of d_h, or multi-head latent attention's one latent of
    # kv_lora_rank plus its decoupled RoPE key of qk_rope_head_dim (DeepSeek: 512 + 64), 2 bytes each
    per_position = 2 * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) if cfg.kv_lora_rank else \
        4 * cfg.n_kv_heads * cfg.head_dim
    by_hand = b * per_position * positions
    assert costs.workload(cfg, batch=b, seq=s, gen=n, dtype="fp16")["memory"]["kv_cache"] == by_hand


# --- weights and training states -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["fp64", "fp32", "bf16", "fp16", "fp8", "int8"])
@pytest.mark.parametrize("name", PRESETS)
def test_weight_bytes_equal_the_reference_storage(preset_numel, name, dtype):
    """Weights in bytes equal the reference model's numel × the element size torch gives that dtype."""
    cfg = symllm.load(name)
    tdtype = {**TORCH_DTYPES, "fp8": torch.float8_e4m3fn, "int8": torch.int8}[dtype]
    measured = preset_numel(name)["total"] * torch.empty((), dtype=tdtype).element_size()
    assert costs.workload(cfg, dtype=dtype)["memory"]["weights"] == measured


def test_int4_weights_are_half_a_byte_plus_fp16_group_scales():
    """int4: N/2 bytes plus one 2-byte scale per 128 weights (docs/conventions.md), exact as a Fraction."""
    cfg = symllm.load("llama3.1-8b")
    N = symllm.params(cfg)["total"]
    assert costs.workload(cfg, dtype="int4")["memory"]["weights"] == Fraction(N, 2) + Fraction(2 * N, 128)
    assert costs.workload(cfg, dtype="int4", group_size=32)["memory"]["weights"] == Fraction(N, 2) + Fraction(2 * N, 32)


@given(st.sampled_from(PRESETS), st.integers(0, 3), st.integers(1, 4096))
def test_training_states_follow_the_zero_paper(preset_numel, name, stage, dp):
    """Per-rank model states = the ZeRO paper's (2 + 2 + K)Ψ with K = 12, sharded by stage over N_d; a rank
    holds ⌈Ψ/N_d⌉ parameters of each sharded part (DeepSpeed pads its flat partition to a multiple of N_d)."""
    cfg = symllm.load(name)
    psi = preset_numel(name)["total"]
    K = 12  # fp32 master weights, momentum, variance (ZeRO, Rajbhandari et al. 2020, §3.1)
    shard = -(-psi // dp)  # ⌈Ψ/N_d⌉
    expected = [(2 + 2 + K) * psi, 2 * psi + 2 * psi + K * shard, 2 * psi + (2 + K) * shard,
                (2 + 2 + K) * shard][stage]
    got = costs.workload(cfg, zero_stage=stage, dp=dp)["memory"]["training_states"]
    assert got == expected


def test_zero_paper_published_example():
    """ZeRO's 7.5B-parameter example on 64 ranks: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB per device."""
    from symllm.arch.components import Component
    psi = 7_500_000_000
    # symllm's rule for a model of Ψ parameters (a component that owns them), on 64 ranks
    expr = {z: costs.memory(Component("model", params=S.N), "training_states", zero_stage=z) for z in range(4)}
    published = [120e9, 31.4e9, 16.6e9, 1.88e9]
    for z in range(4):
        assert float(expr[z].subs({S.N: psi, S.N_d: 64})) == pytest.approx(published[z], rel=0.01)


# --- activations saved for backward ------------------------------------------------------------------

def saved_bytes(model, tokens) -> int:
    """Bytes of the distinct storages autograd saves for backward in one forward (parameters excluded)."""
    return saved_during(lambda: model(tokens), model)


def reference_extras(cfg, b, s, beta) -> dict:
    """What the eager reference model saves beyond symllm's formula, term by term (docs/conventions.md names each).

    The reference upcasts to ``promote_types(dtype, fp32)`` (Meta's ``.float()``; fp64 stays fp64,
    and then ``.to``/``type_as`` return the same tensor, so no second copy is saved)."""
    d, L, n_h, n_kv, d_h, d_ff = cfg.dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, symllm.hidden_dim(cfg)
    norms = 2 * L + 1
    fp32 = 4
    upcast = max(fp32, beta)  # bytes of an upcast element
    return {
        # RMSNorm computes x * rsqrt(...) then * weight as two ops: the unweighted product is saved too
        "rmsnorm_unweighted": norms * beta * b * s * d,
        # RMSNorm upcasts a narrower input to fp32 and saves that copy instead of the input
        "rmsnorm_fp32_input": norms * (upcast - beta) * b * s * d,
        # repeat_kv materialises K and V for all n_h query heads before the matmuls; with one KV head and
        # one sequence (n_kv = b = 1) the expanded stride-0 view reaches bmm as is and nothing is copied
        "kv_repeat": 0 if n_kv == 1 and b == 1 else L * 2 * (n_h - n_kv) * b * s * d_h * beta,
        # softmax runs in fp32 and saves its fp32 output besides the narrower beta_a copy A·V saves
        "softmax_fp32": L * (fp32 * b * n_h * s * s if beta < fp32 else 0),
        # silu(w1 x) * (w3 x) saves SiLU's output besides w1's output
        "silu_output": L * beta * b * s * d_ff,
        # RoPE's cos and sin tables (s × d_h/2 each, upcast dtype), computed once and shared by every layer
        "rope_tables": 2 * s * (d_h // 2) * upcast,
        # QK-norm (Qwen3): the same two RMSNorm extras (unweighted product, upcast input) on the b·s·(n_h+n_kv)
        # query and key rows of width d_h
        "qk_norm": L * upcast * b * s * (n_h + n_kv) * d_h if cfg.qk_norm else 0,
    }


@given(configs(), generation_workloads())
def test_saved_activations_equal_formula_plus_named_terms(cfg, w):
    """Bytes the eager reference saves for backward (distinct storages) = symllm's eager activations + the
    named extras (biases and QK-norm drawn too)."""
    b, s, dtype = w["batch"], w["seq"], w["dtype"]
    model = reference.build(cfg, device="cpu", dtype=TORCH_DTYPES[dtype])
    measured = saved_bytes(model, torch.randint(0, cfg.vocab_size, (b, s)))
    ours = costs.workload(cfg, batch=b, seq=s, dtype=dtype, stack="eager")["memory"]["activations"]
    beta = DTYPES[dtype]
    assert measured == ours + sum(reference_extras(cfg, b, s, beta).values())


def test_llama2_7b_block_activations_by_hand():
    """One Llama-2-7B block at b=1, s=4096 in bf16, summed by hand from the list in docs/conventions.md: the fused
    stack keeps one fp32 log-sum-exp per query and head where eager keeps the s² probabilities."""
    b, s, d, n_h, d_h, d_ff, beta = 1, 4096, 4096, 32, 128, 11008, 2
    shared = (beta * b * s * d + 4 * b * s) * 2 + beta * (  # two RMSNorms: input + fp32 1/rms
        b * s * d + 3 * b * s * n_h * d_h + b * s * n_h * d_h  # attention (MHA): input, q k v, output
        + b * s * d + 3 * b * s * d_ff)  # SwiGLU
    vals = {**_vals(symllm.load("llama2-7b"), batch=b, seq=s), S.beta_a: beta}
    assert evaluate(costs.activations("block", stack="eager"), vals) == shared + beta * b * n_h * s * s
    assert evaluate(costs.activations("block"), vals) == shared + 4 * b * n_h * s
    for stack in ("fused", "eager"):
        assert evaluate(costs.activations("block", recompute=True, stack=stack), vals) == beta * b * s * d


def test_recompute_keeps_block_inputs_plus_one_block():
    """Full recomputation: L block inputs + one block recomputed + what lies outside the blocks.

    A structural identity, not a measurement: it restates the definition in docs/conventions.md in terms of the
    non-recomputed activations (which test_saved_activations_equal_formula_plus_named_terms measures),
    so it fails if recompute stops being "checkpoints + one block + outside"."""
    cfg = symllm.load("llama3.1-8b")
    vals = {**_vals(cfg, batch=2, seq=4096), S.beta_a: 2}
    L = cfg.n_layers
    for stack, ratio in (("eager", 10), ("fused", 3)):
        full = evaluate(costs.activations("model", stack=stack), vals)
        ckpt = evaluate(costs.activations("model", recompute=True, stack=stack), vals)
        one_block = evaluate(costs.activations("block", stack=stack), vals)
        assert ckpt == full - (L - 1) * one_block + L * 2 * 2 * 4096 * cfg.dim
        assert ckpt < full / ratio


def test_inference_peak_is_weights_kv_and_largest_working_set():
    """Inference peak = weights + KV cache + β_a·(2bsd + the largest live tensor group) (docs/conventions.md).

    A structural check of the convention docs/conventions.md states, written out by hand for one workload; the working
    set itself is a convention (a fused kernel's, or an eager one's), not measured against torch."""
    cfg = symllm.load("llama3.1-8b")
    b, s, n, beta = 1, 8192, 256, 2
    for logits, rows in (("last", b), ("all", b * s)):  # the logits of the last position, or of every one
        eager = costs.workload(cfg, batch=b, seq=s, gen=n, stack="eager", logits=logits)["memory"]
        fused = costs.workload(cfg, batch=b, seq=s, gen=n, logits=logits)["memory"]
        live = max(2 * b * cfg.n_heads * s * s, 2 * b * cfg.n_heads * (s + n), 3 * b * s * 14336, rows * cfg.vocab_size)
        assert eager["inference_peak"] == eager["weights"] + eager["kv_cache"] + beta * (2 * b * s * cfg.dim + live)
        live = max(2 * b * s * cfg.n_heads * 128 + 2 * b * cfg.n_heads * s, 3 * b * s * 14336, rows * cfg.vocab_size)
        assert fused["inference_peak"] == fused["weights"] + fused["kv_cache"] + beta * (2 * b * s * cfg.dim + live)
