"""Attention past a window: Mistral's sliding window and Llama 4's attention chunks, at any length.

Expected numbers come from transformers itself: its models run on the CPU under FlopCounterMode through a
prefill and decode steps with its own cache (dense: the rectangle its kernels compute), its mask functions
evaluated on every (query, key) pair (causal: the pairs the mask keeps), the cache tensors it holds, and
plain-Python sums written here from the definitions of the windows."""
import json

import sympy

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm import api
from symllm.costs import phases as costs
from symllm.arch.config import from_hf
from symllm.errors import SymllmError

from .conftest import generate, requires
from .strategies import MISTRAL, llama4 as _llama4, windowed

def _generate(raw: dict, b: int, s: int, n: int):
    """FLOPs of a prefill of s tokens and n decode steps through transformers' own cache, and the K/V
    elements that cache holds afterwards (:func:`tests.conftest.generate`)."""
    steps, held, _ = generate(raw, b, s, n)
    return sum(steps), held


def generation_agrees(raw: dict, b: int, s: int, n: int) -> None:
    """symllm's generation FLOPs and fp32 KV cache equal what :func:`_generate` measures through transformers'
    own cache (its prompt a plain forward: every position's logits)."""
    flops, held = _generate(raw, b, s, n)
    work = costs.workload(from_hf(raw), batch=b, seq=s, gen=n, dtype="fp32", kv_dtype="fp32", logits="all")
    assert work["flops"]["generation"] == flops and work["memory"]["kv_cache"] == 4 * held


def _windowed_layers(raw: dict) -> int:
    """The layers with the window: Llama 4's RoPE layers, Qwen's from max_window_layers on (transformers'
    Qwen2Config / Qwen3Config layer_types), every Mistral layer."""
    if raw["model_type"] == "llama4_text":
        return sum(raw["no_rope_layers"])
    return raw["num_hidden_layers"] - raw.get("max_window_layers", 0)


@given(windowed())
def test_generation_past_the_window_equals_transformers(args):
    """Prefill + decode FLOPs (dense: what transformers' eager kernels compute, min(t, W - 1) cached keys
    and the s new ones per query) equal FlopCounterMode's over transformers' own generation loop; the KV
    cache is min(s + n, W) positions per windowed layer: transformers holds one fewer between steps once
    the window is full (the next step's own key completes it), and every position in full-attention layers."""
    raw, b, s, n = args
    flops, held = _generate(raw, b, s, n)
    work = costs.workload(from_hf(raw), batch=b, seq=s, gen=n, dtype="fp32", kv_dtype="fp32", logits="all")  # a plain forward
    assert work["flops"]["generation"] == flops
    window = raw.get("sliding_window") or raw["attention_chunk_size"]
    per_position = 2 * b * raw["num_key_value_heads"] * (raw.get("head_dim") or 4)
    dropped = _windowed_layers(raw) * per_position * (s + n >= window)
    assert work["memory"]["kv_cache"] == 4 * (held + dropped)


@pytest.mark.parametrize("kind", ["sliding", "chunked"])
@given(window=st.integers(1, 12), t=st.integers(0, 40), s=st.integers(1, 30))
def test_causal_pairs_equal_transformers_masks(kind, window, t, s):
    """--attention causal counts the (query, key) pairs transformers' mask keeps for s queries after t
    cached tokens: its sliding-window or chunked causal mask function, evaluated on every pair."""
    torch = requires("torch")
    masks = requires("transformers").masking_utils
    keep = (masks.sliding_window_causal_mask_function(window) if kind == "sliding"
            else masks.chunked_causal_mask_function(window, torch.zeros(1, dtype=torch.long)))
    q, kv = torch.arange(t, t + s)[:, None], torch.arange(t + s)[None, :]
    pairs = int(keep(0, 0, q, kv).sum())
    raw = dict(MISTRAL, sliding_window=window) if kind == "sliding" else _llama4(window, [1])
    spec = api.spec(from_hf(raw))
    scores = spec.model("causal").child("block/attention/scores")
    per_pair = 2 * 4 * 4  # a d_h = 4 dot product per head, 4 heads, b = 1
    forward = costs.flops(scores, "forward").subs({**spec.values(), symllm.arch.symbols.b: 1, symllm.arch.symbols.t: t,
                                                   symllm.arch.symbols.s: s})
    assert forward == per_pair * pairs


@pytest.mark.parametrize("kind", ["sliding", "chunked"])
@given(window=st.integers(1, 12), s=st.integers(1, 30), n=st.integers(0, 30))
def test_causal_generation_is_the_sum_of_its_steps(kind, window, s, n):
    """Causal generation FLOPs: the prefill's kept pairs plus every decode step's, summed here one step at
    a time from the window's definition (sliding: min(p + 1, W) keys at position p; chunked: p mod W + 1)."""
    keys = (lambda p: min(p + 1, window)) if kind == "sliding" else (lambda p: p % window + 1)
    pairs = sum(keys(p) for p in range(s + n))  # every position is a query once: prefill or decode step
    raw = dict(MISTRAL, sliding_window=window) if kind == "sliding" else _llama4(window, [1])
    spec = api.spec(from_hf(raw))
    scores = spec.model("causal").child("block/attention/scores")
    got = costs.flops(scores, "generation").subs({**spec.values(), symllm.arch.symbols.b: 1, symllm.arch.symbols.s: s,
                                                  symllm.arch.symbols.n: n})
    assert got == 2 * 4 * 4 * pairs


def test_mistral_at_32k_counts_a_window_of_keys(cli):
    """Mistral 7B v0.1 at a 32k prompt: the KV cache is the window's 4096 positions, by hand from the
    model card (32 layers, 8 KV heads of 128, bf16); the decode step attends to 4096 keys."""
    out = json.loads(cli(["count", "mistral-7b-v0.1", "--seq", "32768", "--gen", "100", "--json"]).out)
    assert out["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 4096 * 2
    at_8k = json.loads(cli(["count", "mistral-7b-v0.1", "--seq", "8192", "--json"]).out)
    at_32k = json.loads(cli(["count", "mistral-7b-v0.1", "--seq", "32768", "--json"]).out)
    assert at_32k["flops"]["decode_token"] == at_8k["flops"]["decode_token"]  # both see the last 4096 keys


def test_some_windowed_layers_are_counted_past_the_window(cli, tmp_path):
    """Qwen with use_sliding_window from max_window_layers on is two groups of layers, full below and
    sliding from layer 2 on (transformers' layer_types), counted at any length: its parameters are
    transformers' class's on the meta device, its KV cache at a 200-token prompt is 200 positions in the two
    full layers and the window's 64 in the two sliding ones (by hand: 2 K/V x 2 heads x 4 wide x 2 bytes a
    position), and a sweep past the window keeps every point, each equal to count --json."""
    transformers, torch = requires("transformers"), requires("torch")
    raw = {"model_type": "qwen2", "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 4,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 40, "use_sliding_window": True,
           "sliding_window": 64, "max_window_layers": 2}
    config = transformers.AutoConfig.for_model(**raw)
    assert config.layer_types == ["full_attention"] * 2 + ["sliding_attention"] * 2
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert symllm.params(from_hf(raw))["total"] == sum(p.numel() for p in model.parameters())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    one = json.loads(cli(["count", str(path), "--seq", "200", "--json"]).out)
    assert one["memory"]["kv_cache"] == 2 * 2 * 4 * 2 * (2 * 200 + 2 * 64)
    swept = cli(["sweep", "--base", str(path), "--seq", "32,200", "--quantity", "prefill_flops,kv_cache"])
    head, *rows = [row.split(",") for row in swept.out.splitlines()]
    assert swept.code == 0 and [row[0] for row in rows] == ["32", "200"]
    for row in rows:
        one = json.loads(cli(["count", str(path), "--seq", row[0], "--json"]).out)
        assert int(row[head.index("prefill_flops")]) == one["flops"]["prefill"]
        assert int(row[head.index("kv_cache")]) == one["memory"]["kv_cache"]


@pytest.mark.parametrize("name", ["mistral-7b-v0.1", "llama4-scout-17b-16e"])
def test_sweep_past_the_window_equals_count(cli, name):
    """A sweep over a windowed model keeps every point, each equal to count --json."""
    r = cli(["sweep", "--base", name, "--seq", "1024,8192,40000", "--gen", "16", "--quantity",
             "prefill_flops,generation_flops,kv_cache"])
    rows = [row.split(",") for row in r.out.splitlines()]
    assert r.code == 0 and len(rows) == 4
    head = rows[0]
    for row in rows[1:]:
        seq = int(row[head.index("seq")])
        one = json.loads(cli(["count", name, "--seq", str(seq), "--gen", "16", "--json"]).out)
        assert int(row[head.index("prefill_flops")]) == one["flops"]["prefill"]
        assert int(row[head.index("generation_flops")]) == one["flops"]["generation"]
        assert int(row[head.index("kv_cache")]) == one["memory"]["kv_cache"]


@pytest.mark.parametrize("stack", ["hf-eager", "hf-sdpa"])
def test_hf_stacks_refuse_a_window(cli, stack):
    """The HF stacks' memory is derived for LlamaForCausalLM's full-attention cache: a windowed model is
    refused in one line rather than given that cache."""
    r = cli(["count", "mistral-7b-v0.1", "--stack", stack])
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith(f"symllm: error: stack: {stack} does not model") and "sliding window" in r.err


def _without_window(comp):
    """``comp`` with every window its attentions declare taken off their rules (labels and FLOPs unchanged)."""
    import dataclasses
    rules = getattr(comp, "rules", None)
    if rules is not None and rules.window:
        comp = comp.replace(rules=dataclasses.replace(rules, window=""))
    return comp.replace(children=tuple(_without_window(c) for c in comp.children))


def test_the_expected_time_finds_a_window_by_the_rule_that_declares_it_not_by_its_label():
    """gpt-oss-20b's sliding layers (every other one of L, by its config's layer_types) run QKᵀ and A·V on the
    window's keys: a prompt of s tokens with no cache (t = 0) and s under the window W = 128 gives each sliding
    layer's core 2 · 2·b·n_h·d_h·s² FLOPs (every query-key pair counted, as `--attention dense` counts them), so
    L - L_2 layers give 4·b·d_h·n_h·s²·(L - L_2). The same model with its windows taken off the rules, labels
    still reading "a sliding window", has no windowed core: the window is read from `Rules.window` alone."""
    from symllm import api
    from symllm.arch import symbols as S
    from symllm.arch.components.base import Rules
    from symllm.costs.stage_parts import windowed as _windowed
    mdl = api.spec("gpt-oss-20b").model()
    b, d_h, n_h, s, L = S.b, S.d_h, S.n_h, S.s, S.L
    L_2 = sympy.Symbol("L_2", integer=True, positive=True)  # the sliding group's layers
    assert (_windowed(mdl, "sliding").flops.subs(S.t, 0) - 4 * b * d_h * n_h * s ** 2 * (L - L_2)).expand() == 0
    assert _windowed(mdl, "chunked").flops == 0
    bare = _without_window(mdl)
    assert any(c.rules.label.startswith("a sliding window") for c in bare.walk() if getattr(c, "rules", None))
    assert _windowed(bare, "sliding").flops == 0
    with pytest.raises(SymllmError, match="window: unknown 'diagonal'"):
        Rules("replicated", window="diagonal")
