"""Decisions (issue 22 item 4): the largest batch and context that fit, the fewest GPUs, ``symllm plan``.

Expected answers are checked against the forward quantity evaluated on its own: the inference peak written
out by hand for a small config (the convention README "Memory" states), and ``symllm.workload`` at the
answer and at the answer + 1 (the first fits, the second does not), for presets, layouts, stacks and random
configs (tests/strategies.py). ``plan``'s rows are checked against ``symllm.workload`` at their layouts.
"""
import functools
import json
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import ModelConfig
from symllm.costs import accelerators, inverse, search, serving
from symllm.errors import SymllmError
from symllm.studies import plans, ranks

from .strategies import configs

GiB = 2 ** 30

#: a small untied config: V=10, d=8, L=2, n_h=2, n_kv=1, d_h=4, d_ff=16
SMALL = ModelConfig(name="small", vocab_size=10, dim=8, n_layers=2, n_heads=2, n_kv_heads=1, head_dim=4,
                    hidden_dim=16, tie_embeddings=False)


def small_peak(b, s, n=0):
    """The fused stack's bf16 inference peak of SMALL by hand: weights, the KV cache of s + n tokens, and the
    residual stream and normed input (2·b·s·d) with the largest live set: the logits (b·s·V), the SwiGLU's
    three b·s·d_ff, or the attention's q and output (2·b·s·n_h·d_h) with its fp32 log-sum-exp."""
    V, d, L, n_h, n_kv, d_h, d_ff = 10, 8, 2, 2, 1, 4, 16
    N = 2 * V * d + d + L * (2 * d * n_h * d_h + 2 * d * n_kv * d_h + 3 * d * d_ff + 2 * d)
    assert N == 1352
    kv = 2 * L * n_kv * d_h * b * (s + n)
    live = max(V * b * s, 3 * b * d_ff * s, 2 * b * d_h * n_h * s + 2 * b * n_h * s)  # the lse: 4 bytes = 2 elements
    return 2 * N + 2 * kv + 2 * (2 * b * s * d + live)


def _capacity(gib: str) -> int:
    return int(Fraction(gib) * GiB)


@pytest.mark.parametrize("gib", ["0.0001", "0.0005", "0.00002"])
def test_inverse_answers_by_hand(gib):
    """max_batch and max_context on a small config: the hand-written peak fits at the answer, not at + 1."""
    cap = _capacity(gib)
    t = symllm.workload(SMALL, gpu="h100-sxm", gpu_memory=float(gib), seq=16, gen=4)["time"]
    assert t["capacity"] == cap
    b = t["max_batch"]
    assert small_peak(b, 16, 4) <= cap < small_peak(b + 1, 16, 4)
    prompt = t["max_context"] - 4
    assert small_peak(1, prompt, 4) <= cap < small_peak(1, prompt + 1, 4)
    assert plans.max_batch(SMALL, gpu="h100-sxm", gpu_memory=float(gib), seq=16, gen=4) == b


def test_inverse_is_in_closed_form_for_the_fused_stack():
    """The fused stack's inference peak is solved in closed form (linear in b and s), and the solution,
    written out, is the floor of the smallest root; a window's Min has none (the exact search answers)."""
    mdl = symllm.spec("llama3.1-8b").model()
    peak = symllm.costs.phases.memory(mdl, "inference_peak")
    assert inverse.solution(peak, symllm.arch.symbols.b) is not None
    assert inverse.solution(peak, symllm.arch.symbols.s) is not None
    assert isinstance(inverse.closed_form(peak, symllm.arch.symbols.b), symllm.arch.symbols.sp.floor)
    windowed = symllm.costs.phases.memory(symllm.spec("mistral-7b-v0.1").model(), "inference_peak")
    assert inverse.solution(windowed, symllm.arch.symbols.s) is None


CASES = [
    ("llama3.1-8b", {"gpu": "h100-sxm", "seq": 8192}),
    ("llama3.1-8b", {"gpu": "l40s", "stack": "eager", "seq": 4096, "gen": 256}),
    ("llama3.2-1b", {"gpu": "l4", "stack": "hf-sdpa", "seq": 1024}),
    ("llama3.1-8b", {"gpu": "h100-sxm", "tp": 2, "sp": True, "dp": 2, "zero_stage": 3, "recompute": True}),
    ("mistral-7b-v0.1", {"gpu": "a10", "seq": 1024}),
    ("mixtral-8x7b", {"gpu": "h100-sxm", "tp": 2, "pp": 4, "dp": 2, "ep": 2, "zero_stage": 1}),
]


@pytest.mark.parametrize("model, options", CASES)
def test_answers_fit_and_one_more_does_not(model, options):
    """The per-GPU peaks workload() gives at each answer fit; one more sequence (or token) does not (a
    layout, sequence parallelism's ceilings and a window's Min are searched, the rest solved)."""
    t = symllm.workload(model, **options)["time"]
    cap = t["capacity"]
    rest = {k: v for k, v in options.items() if k != "gpu"}

    def peak(kind, **more):
        return symllm.workload(model, **{**rest, **more})["memory_per_gpu"][kind]

    assert t["max_batch"] >= 1 and peak("inference_peak", batch=t["max_batch"]) <= cap \
        < peak("inference_peak", batch=t["max_batch"] + 1)
    prompt = t["max_context"] - options.get("gen", 0)
    assert prompt >= 1 and peak("inference_peak", seq=prompt) <= cap < peak("inference_peak", seq=prompt + 1)
    tb, ts = t["training_max_batch"], t["training_max_seq"]
    assert tb == 0 or peak("training_peak", batch=tb) <= cap
    assert peak("training_peak", batch=tb + 1) > cap
    assert ts == 0 or peak("training_peak", seq=ts) <= cap
    assert peak("training_peak", seq=ts + 1) > cap


@given(cfg=configs(), units=st.integers(1, 4000), seq=st.integers(1, 64), gen=st.integers(0, 8))
def test_answers_are_tight_on_random_configs(cfg, units, seq, gen):
    """On any config and capacity: the per-GPU peaks at each answer fit, at the answer + 1 they do not."""
    gib = units / 10 ** 6
    t = symllm.workload(cfg, gpu="h100-sxm", gpu_memory=gib, seq=seq, gen=gen)["time"]
    cap = t["capacity"]

    def mem(**more):
        return symllm.workload(cfg, **{"seq": seq, "gen": gen, **more})["memory"]

    b = t["max_batch"]
    assert (b == 0 or mem(batch=b)["inference_peak"] <= cap) and mem(batch=b + 1)["inference_peak"] > cap
    prompt = t["max_context"] - gen if t["max_context"] else 0
    assert (prompt == 0 or mem(seq=prompt)["inference_peak"] <= cap) and mem(seq=prompt + 1)["inference_peak"] > cap
    tb = t["training_max_batch"]
    assert (tb == 0 or mem(batch=tb)["training_peak"] <= cap) and mem(batch=tb + 1)["training_peak"] > cap


def test_fewest_gpus_is_the_fewest():
    """fewest_gpus' layout fits (workload's verdict) and no layout of the family with fewer GPUs does."""
    opts = {"gpu": "l4", "gpu_memory": 6, "seq": 1024, "recompute": True}
    got = plans.fewest_gpus("llama3.2-1b", ranks=("tp", "pp"), **opts)
    assert got is not None and got["gpus"] > 1
    t = symllm.workload("llama3.2-1b", tp=got["tp"], pp=got["pp"], **opts)["time"]
    assert t["training_fits"] and t["training_peak"] == got["peak"]
    for tp in (1, 2, 4, 8):
        for pp in (1, 2, 4, 8, 16):
            if tp * pp < got["gpus"]:
                assert not symllm.workload("llama3.2-1b", tp=tp, pp=pp, **opts)["time"]["training_fits"]
    dp = plans.fewest_gpus("llama3.2-1b", ranks=("dp",), zero_stage=3, **opts)
    assert symllm.workload("llama3.2-1b", dp=dp["dp"], zero_stage=3, **opts)["time"]["training_fits"]
    assert not symllm.workload("llama3.2-1b", dp=dp["dp"] - 1, zero_stage=3, **opts)["time"]["training_fits"]


@functools.lru_cache(maxsize=None)
def _served(model, options: tuple) -> dict:
    """count --serve's KV cache at a replica's layout and workload (``options``' items), once each: whole sequences
    of s + n."""
    return serving.capacity(model, **dict(options))


def _check_row(model, row, options, training, global_batch=None):
    """A plan row against workload() at its layout: the same peak, verdict and time (a dropped row: its
    reason holds)."""
    layout = {k: row[k] for k in ("tp", "pp", "dp", "ep")}
    if not training and row["dp"] > 1 and "engine" not in options and symllm.spec(model).n_experts:
        layout["engine"] = "vllm"  # a replica of a mixture over dp: its experts as the serving engine spreads them
    if training:
        layout.update(sp=row["sp"], zero_stage=row["zero"], recompute=row["recompute"],
                      micro_batches=max(1, row["accum"]))
    w = symllm.workload(model, batch=row["batch"] or 1, **layout, **options)
    t = w["time"]
    held = cap = None
    if not training:  # a replica at any layout: its engine's KV cache there decides (count --serve's)
        cap = _served(model, tuple(sorted({**layout, **options}.items())))
        held = cap["most_sequences"] if "most_sequences" in cap else cap["kv_tokens"] // cap["context"]
    if "reason" in row:
        peak = t["training_peak"] if training else t["inference_peak"]
        if held is not None:
            assert row["reason"].startswith("more sequences than") and row["batch"] > held
        elif row["reason"].startswith("dp does not divide"):
            assert global_batch % row["dp"]
        else:
            assert peak > t["capacity"] and not (t["training_fits"] if training else t["fits"])
        return
    if training:
        assert t["training_fits"] and t["training_peak"] == row["peak"]
        assert math.isclose(t["training_step_s"], row["step_s"], rel_tol=1e-9)  # m micro-batches, as count's
        assert math.isclose(t["mfu"], row["mfu"], rel_tol=1e-9)
        if "expected" in row:
            assert math.isclose(t["expected"]["training_step_s"], row["expected"]["training_step_s"], rel_tol=1e-9)
        return
    # every serving row steps one token a sequence at context s + n (as serving under load steps it)
    point = symllm.workload(model, batch=row["batch"], **layout, **{**options, "seq": 1, "gen": 0,
                                                                   "context": options["seq"] + options.get("gen", 0)})
    if held is not None:  # held as the engine holds it: the weights and cache of b sequences of s + n tokens
        m, at = w["memory_per_gpu"], point["memory_per_gpu"]
        cache = m["weights"] + m["kv_cache"] + m.get("state_cache", 0)
        working = at["inference_peak"] - at["weights"] - at["kv_cache"] - at.get("state_cache", 0)
        assert row["batch"] <= held and row["peak"] <= t["capacity"]
        assert row["peak"] == math.ceil(cache + max(working, cap["activation_peak"]) + cap["non_torch"])  # whole bytes
    else:
        assert t["fits"] and t["inference_peak"] == row["peak"]
    t = point["time"]
    assert math.isclose(t["tokens_per_s"], row["tokens_per_s"], rel_tol=1e-9)
    assert math.isclose(t["decode_token_s"], row["decode_token_s"], rel_tol=1e-9)
    if "expected" in row:
        assert math.isclose(t["expected"]["decode_token_s"], row["expected"]["decode_token_s"], rel_tol=1e-9)


def test_plan_top_rows_equal_workload():
    """Training on 16 H100s (and a row with gradient accumulation) and serving a mixture of experts on 8: the top rows are workload() at their layouts; the ranking is by
    the expected step time (tokens/s) for the best rows, by the bound's past them (tests/test_plan_ranks.py)."""
    k = ranks.EXPECTED_ROWS
    p = plans.plan("llama3.1-8b", 16, "h100-sxm", training=True, global_batch=32, seq=4096)
    assert p.rows and p.fit + sum(p.dropped.values()) == p.layouts
    top = [r["expected"]["training_step_s"] for r in p.rows[:k]]
    assert top == sorted(top) and [r["step_s"] for r in p.rows[k:]] == sorted(r["step_s"] for r in p.rows[k:])
    assert any(r["accum"] > 1 for r in p.rows[:40])
    for row in p.rows[:2] + [next(r for r in p.rows if r["accum"] > 1)]:
        _check_row("llama3.1-8b", row, {"gpu": "h100-sxm", "seq": 4096}, True)
    s = plans.plan("mixtral-8x7b", 8, "h100-sxm", seq=2048)
    top = [r["expected"]["tokens_per_s"] for r in s.rows[:k]]
    assert top == sorted(top, reverse=True)
    assert [r["tokens_per_s"] for r in s.rows[k:]] == sorted((r["tokens_per_s"] for r in s.rows[k:]), reverse=True)
    for row in s.rows[:3]:
        _check_row("mixtral-8x7b", row, {"gpu": "h100-sxm", "seq": 2048}, False)


def test_every_dropped_layout_really_does_not_fit():
    """A small plan (llama3.2-1b on 2 GPUs of 16 GiB, training and serving): every dropped layout's reason is
    true of workload() at it, and every kept one fits."""
    opts = {"gpu": "l4", "gpu_memory": 16, "seq": 2048}
    p = plans.plan("llama3.2-1b", 2, training=True, global_batch=3, **opts)
    assert p.drops and p.rows
    assert set(p.dropped) == {"training peak > 16 GiB per GPU", "dp does not divide the global batch of 3"}
    for row in p.drops + p.rows:
        _check_row("llama3.2-1b", row, opts, True, global_batch=3)
    serve = plans.plan("llama3.2-1b", 2, concurrency=64, **{**opts, "seq": 8192})
    for row in serve.drops + serve.rows:
        _check_row("llama3.2-1b", row, {**opts, "seq": 8192}, False)
    assert sum(serve.dropped.values()) == len(serve.drops) > 0
    kept = {b for r in serve.rows for b in range(r["batches"][0], r["batches"][1] + 1)}  # folded into its layout's row
    assert sorted(kept | {r["batch"] for r in serve.drops}) == list(range(1, 65))  # every batch tried


def test_plan_refuses_what_it_enumerates():
    with pytest.raises(SymllmError, match="^tp: plan enumerates"):
        plans.plan("llama3.2-1b", 2, "l4", tp=2)
    with pytest.raises(SymllmError, match="^stack: plan"):
        plans.plan("llama3.2-1b", 2, "l4", stack="hf-sdpa")
    with pytest.raises(SymllmError, match="^gpus: expected N×GPU"):
        accelerators.parse_gpus("sixteen h100s")


def test_cli_plan(cli):
    """plan --help, a table (at most 100 columns), --json and --top, and bad input as one line."""
    assert cli(["plan", "--help"]).code == 0
    r = cli(["plan", "llama3.2-1b", "--gpus", "2xl4", "--gpu-memory", "16", "--seq", "8192", "--concurrency", "64",
             "--top", "3"])
    assert r.code == 0 and max(map(len, r.out.splitlines())) <= 100
    dropped = plans.plan("llama3.2-1b", 2, "l4", gpu_memory=16, seq=8192, concurrency=64).dropped
    kv_full = "more sequences than vllm's KV cache holds (count --serve)"  # every replica (pp 2 too): the engine's
    assert f"dropped: {dropped[kv_full]:,} {kv_full}" in r.out.replace("\n  ", " ")
    assert "Pipeline splits: every number of pipeline stages" in r.out and len(r.out.splitlines()) > 5
    r = cli(["plan", "llama3.2-1b", "--gpus", "2xl4", "--gpu-memory", "16", "--train", "--global-batch", "3",
             "--seq", "2048", "--json", "--top", "2"])
    got = json.loads(r.out)
    assert r.code == 0 and len(got["rows"]) == 2 and got["training"]
    assert got["fit"] + sum(got["dropped"].values()) == got["layouts"] == 20
    for argv, start in ((["--gpus", "16xh100"], "gpus: 'h100' is ambiguous"), (["--gpus", "16"], "gpus: expected"),
                        (["--gpus", "2xl4", "--tp", "2"], "unrecognized arguments"),
                        (["--gpus", "2xl4", "--global-batch", "4"], "global_batch: a training option"),
                        (["--gpus", "2xl4", "--top", "0"], "top: expected")):
        r = cli(["plan", "llama3.2-1b", *argv])
        assert r.code == 2 and r.err.startswith(f"symllm: error: {start}") and r.err.count("\n") == 1


def test_cli_count_shows_the_inverse_answers(cli):
    """llama3.1-8b on an H100 (80 GiB) by hand: bf16 weights 2 × 8,030,261,248 bytes; per token the KV cache
    2·32·8·128·2 = 131,072 bytes and, bf16, the residual stream and normed input 2·4096 plus the largest live
    set, the SwiGLU's 3·14,336 (above the last position's 128,256 logits from 3 tokens on, and above the
    fused attention's 2·32·128 + 2·32): 233,472 bytes a token. The largest b·s is ⌊(80 GiB − weights) /
    233,472⌋ = 299,131: the largest context at batch 1, and batch ⌊299,131 / 8,192⌋ = 36 at 8,192 tokens."""
    per_token = 2 * 32 * 8 * 128 * 2 + 2 * (2 * 4096 + 3 * 14336)
    tokens = (80 * GiB - 2 * 8_030_261_248) // per_token
    assert (tokens, tokens // 8192) == (299_131, 36)
    r = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "8192"])
    assert "largest context" in r.out and f"{tokens:,} tokens" in r.out and f"up to batch {tokens // 8192})" in r.out


def q4_k_m_70b_bytes() -> int:
    """Llama-3.1-70B's Q4_K_M file by hand, llama.cpp's per-tensor choice (src/llama-quant.cpp, no imatrix):
    GGML blocks of 256 weights, Q4_K 144 bytes, Q5_K 176, Q6_K 210; token_embd Q4_K, output Q6_K, norms F32;
    attn_v Q6_K in the layers use_more_bits picks (i < L/8, i >= 7L/8, (i - L/8) % 3 == 2), else Q5_K (the
    70B rule); ffn_down Q6_K in those layers, else Q4_K; the rest Q4_K. llama-bench prints 39.59 GiB."""
    V, d, L, n_kv, d_h, d_ff = 128256, 8192, 80, 8, 128, 28672
    q4, q5, q6 = Fraction(144, 256), Fraction(176, 256), Fraction(210, 256)
    total = V * d * q4 + V * d * q6 + 4 * d
    for i in range(L):
        more = i < L // 8 or i >= 7 * L // 8 or (i - L // 8) % 3 == 2
        total += (2 * d * d + d * n_kv * d_h) * q4 + d * n_kv * d_h * (q6 if more else q5)
        total += 2 * d * d_ff * q4 + d_ff * d * (q6 if more else q4) + 2 * d * 4
    assert total.denominator == 1 and round(total / GiB, 2) == Fraction("39.59")
    return int(total)


def llama70b_peak(weights: int, b: int, s: int, kv_bytes) -> int:
    """The fused stack's inference peak of Llama-3.1-70B by hand (small_peak's convention): the weights, the
    KV cache of s tokens, bf16 activations: the residual stream and normed input with the largest live set
    (here the SwiGLU's 3·b·s·d_ff; the last position's logits are b·V)."""
    V, d, L, n_h, n_kv, d_h, d_ff = 128256, 8192, 80, 64, 8, 128, 28672
    live = max(V * b, 3 * b * d_ff * s, 2 * b * d_h * n_h * s + 2 * b * n_h * s)
    return weights + kv_bytes * 2 * L * n_kv * d_h * b * s + 2 * (2 * b * s * d + live)


def test_plan_takes_the_weight_and_kv_formats():
    """Issue 23 item 4: Llama-3.1-70B on one 48 GiB GPU serving 8,192-token prompts fits only quantized. In
    bf16 nothing fits (2N bytes of weights alone exceed it); in Q4_K_M the hand-written inference peak fits two
    sequences (every batch up to the concurrency, 256, tried) with a bf16 or an fp8 KV cache (1 byte an element:
    b·s·2·80·8·128 bytes less, not enough for a third: its activations alone are 4.69 GiB), while vLLM's KV cache
    holds none and one: the plan's rows, each at the engine's peak (the weights and cache by hand beside its
    profiled prefill and non-torch memory), within the card. fewest_gpus and max_batch read the same formats."""
    cap, seq = 48 * GiB, 8192
    n = 2 * 128256 * 8192 + 8192 + 80 * (2 * 8192 ** 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192)
    opts = {"gpu": "l40s", "gpu_memory": 48, "seq": seq}
    q4 = q4_k_m_70b_bytes()
    bf16 = plans.plan("llama3.1-70b", 1, **opts)
    kv_full = "more sequences than vllm's KV cache holds (count --serve)"
    assert 2 * n > cap and not bf16.rows and bf16.dropped == {kv_full: 256}
    # the inference peak (no engine) fits two sequences either way; vLLM's KV cache, after its 0.9 of the card
    # and its profile run, holds none in bf16 and one in fp8 (what count --serve says: test_one_answer)
    for kv_format, kv_bytes, fit, held in ((None, 2, [1, 2], 0), ("fp8", 1, [1, 2], 1)):
        p = symllm.plan("llama3.1-70b", 1, weight_format="Q4_K_M", kv_format=kv_format, **opts)
        hand = {b: llama70b_peak(q4, b, seq, kv_bytes) for b in range(1, 257)}
        assert [b for b, peak in hand.items() if peak <= cap] == fit
        assert sorted(r["batch"] for r in p.rows) == list(range(1, held + 1)) == list(range(1, p.sequences["tp 1"] + 1))
        # the engine's peak (symllm.studies.served): the weights and the KV cache of b·s tokens by hand
        # (2·L·n_kv·d_h bytes a token in the KV format), beside count --serve's profiled prefill and non-torch memory
        engine = serving.capacity("llama3.1-70b", weight_format="Q4_K_M", kv_format=kv_format, **opts)
        assert all(r["peak"] == math.ceil(q4 + kv_bytes * 2 * 80 * 8 * 128 * r["batch"] * seq
                                          + engine["activation_peak"] + engine["non_torch"]) <= cap for r in p.rows)
        assert len(p.drops) == 256 - held and p.workload["weight_format"] == "Q4_K_M"
        _check_row("llama3.1-70b", (p.rows or p.drops)[0], {**opts, "weight_format": "Q4_K_M", "kv_format": kv_format},
                   False)
        assert plans.max_batch("llama3.1-70b", weight_format="Q4_K_M", kv_format=kv_format, **opts) == fit[-1]
    one = plans.fewest_gpus("llama3.1-70b", training=False, weight_format="Q4_K_M", **opts)
    assert one == {"tp": 1, "pp": 1, "dp": 1, "gpus": 1, "peak": llama70b_peak(q4, 1, seq, 2)}
    assert plans.fewest_gpus("llama3.1-70b", training=False, **opts)["gpus"] > 1


def test_cli_plan_names_the_formats(cli):
    """The formats in plan's heading; every batch up to the concurrency (256) tried, the one vLLM's KV cache holds
    (test_plan_takes_the_weight_and_kv_formats) fits."""
    r = cli(["plan", "llama3.1-70b", "--gpus", "1xl40s", "--gpu-memory", "48", "--seq", "8192",
             "--weight-format", "Q4_K_M", "--kv-format", "fp8"])
    assert r.code == 0 and "Q4_K_M, KV cache fp8): 256 layouts and batches, 1 fit" in " ".join(r.out.split())
    assert max(map(len, r.out.splitlines())) <= 100
    r = cli(["plan", "llama3.1-70b", "--gpus", "1xl40s", "--weight-format", "Q3_K_XXL"])
    assert r.code == 2 and r.err.startswith("symllm: error: weight_format: ") and r.err.count("\n") == 1


@given(st.integers(0, 50), st.integers(0, 9), st.integers(0, 3), st.integers(1, 9), st.integers(1, 10 ** 4),
       st.integers(0, 10 ** 7), st.integers(1, 5))
def test_secant_guesses_give_the_largest_that_fits(a, b, c, k, w, capacity, low):
    """The secant-guided search (what a peak without a closed form takes: a window's Min, ceilings) returns
    what counting up from ``low`` gives, for growing peaks with steps (ceilings), a plateau's corner (Min)
    and curvature; or None, leaving it to the doubling search. The brute force is the definition itself."""
    def peak(x):
        return Fraction(a + b * x + c * x * x + -(-x // k) + 7 * min(x, w) + x * x // w)
    got = search._secant(peak, capacity, low)
    if got is None:
        return
    assert got == low - 1 if peak(low) > capacity else (got >= low and peak(got) <= capacity < peak(got + 1))


def test_plan_considers_uneven_pipeline_splits():
    """llama3.2-1b has 16 blocks: on 3 GPUs plan tries pp 3 (6, 5 and 5 blocks; the first stage holds
    ⌈16/3⌉ = 6 and the embedding) beside pp 1, and its rows equal workload() at pp 3, which lays the stages
    out the same way; the output says which splits it considered."""
    opts = {"gpu": "l4", "seq": 2048}
    p = plans.plan("llama3.2-1b", 3, training=True, global_batch=3, **opts)
    assert {r["pp"] for r in p.rows + p.drops} == {1, 3}
    uneven = [r for r in p.rows if r["pp"] == 3]
    assert uneven
    for row in uneven[:2]:
        _check_row("llama3.2-1b", row, opts, True, global_batch=3)
    assert "ceil(L/pp)" in p.to_dict()["splits"]


def test_cli_plan_trains_lora(cli):
    """plan --train takes the LoRA options: every kept layout's peak is LoRA's training peak (one GPU's
    whole, as count's), below full fine-tuning's."""
    r = cli(["plan", "llama2-7b", "--gpus", "2xh100-sxm", "--train", "--seq", "1024", "--lora-rank", "16",
             "--qlora", "--json"])
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert got["rows"]
    for batch in (1, 2):  # micro-batches of the global batch of 2 (one per GPU)
        lora = symllm.workload("llama2-7b", seq=1024, batch=batch, lora_rank=16, qlora=True)["memory"]
        peaks = {row["peak"] for row in got["rows"] if not row["recompute"] and row["batch"] == batch}
        assert peaks == {lora["lora_total"]} and lora["lora_total"] < lora["full_finetune_peak"]


def test_plan_days_for_a_token_budget_are_bound_and_expected(cli):
    """plan --tokens gives each row's days as a bound and as expected, as count does: by hand, a budget of D
    tokens at the row's expected tokens/s per GPU on G GPUs takes D / (tokens/s x G) seconds, G times that in
    GPU-seconds, priced a GPU-hour; count at the row's layout prints the same expected days."""
    D, price = 10 ** 12, 2
    p = plans.plan("llama3.1-8b", 8, "h100-sxm", training=True, seq=8192, tokens=D, price=price)
    row = p.rows[0]
    e = row["expected"]
    seconds = D / (e["training_tokens_per_s_per_gpu"] * 8)
    assert math.isclose(e["training_s"], seconds, rel_tol=1e-9)
    assert math.isclose(e["gpu_hours"], seconds * 8 / 3600, rel_tol=1e-9)
    assert math.isclose(e["cost"], seconds * 8 / 3600 * price, rel_tol=1e-9)
    assert e["training_s"] > row["training_s"]  # expected, at measured efficiencies, is over the bound
    out = cli(["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--train", "--seq", "8192", "--tokens", "1T",
               "--top", "1"]).out.splitlines()
    head = next(line for line in out if line.startswith("#  "))
    first = next(line for line in out if line.startswith("1 ")).split()
    assert head.split()[-2:] == ["days", "exp."]
    assert first[-2:] == [f"{row['training_s'] / 86400:,.1f}", f"{seconds / 86400:,.1f}"]
    assert "over the GPUs' dense peak of the matmuls' dtype" in " ".join(" ".join(out).split())  # the note's wrap moves
    layout = ["--tp", str(row["tp"]), "--pp", str(row["pp"]), "--dp", str(row["dp"]), "--zero", str(row["zero"])]
    count = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "8192", "--tokens", "1T", *layout]).out
    line = next(x for x in count.splitlines() if x.startswith("1,000,000,000,000 tokens"))
    assert line.split()[4] == f"{seconds / 86400:,.2f}"


def test_plan_times_the_interleaved_schedule_as_count_does():
    """plan --schedule interleaved: its pipeline rows' bounds (m + (p-1)/v stage-times, at least p) and expected
    times are workload()'s at their layouts, as the 1F1B rows are."""
    opts = {"gpu": "h100-sxm", "seq": 4096, "schedule": "interleaved"}
    p = plans.plan("llama3.1-8b", 16, training=True, global_batch=32, **opts)
    piped = [r for r in p.rows[:ranks.EXPECTED_ROWS] if r["pp"] > 1] or [r for r in p.rows if r["pp"] > 1][:2]
    assert piped
    for row in piped[:2]:
        _check_row("llama3.1-8b", row, opts, True)


def test_plan_sends_the_training_engines_tensor_parallel_collectives():
    """A training plan's tensor-parallel bytes are its training engine's, as count's (collectives.column_parallel):
    under torchtitan DTensor's, one input-gradient all-reduce a column-wise linear (wq, wk, wv, w1, w3), under no
    engine the default training engine's, Megatron-Core's fused linear_qkv and linear_fc1
    (tests/test_tp_reductions.py counts both by hand): its tp rows are workload()'s under the same engine, and a tp
    row's bound differs between the two."""
    base = {"gpu": "h100-sxm", "seq": 4096}
    steps = {}
    for engine in ("torchtitan", None):
        opts = {**base, "engine": engine} if engine else base
        p = plans.plan("llama3.1-8b", 8, training=True, global_batch=8, **opts)
        rows = [r for r in p.rows if r["tp"] > 1][:2]
        assert rows
        for row in rows:
            _check_row("llama3.1-8b", row, opts, True)
        steps[engine] = {tuple(r[k] for k in ("tp", "pp", "dp", "sp", "zero", "recompute", "accum")): r["step_s"]
                         for r in p.rows if r["tp"] > 1}
    same = set(steps["torchtitan"]) & set(steps[None])
    assert same and all(steps["torchtitan"][k] != steps[None][k] for k in same)
