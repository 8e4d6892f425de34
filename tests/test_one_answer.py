"""One question, one answer (issue 41 item 2): the same workload gives the same number, to the byte, through
every door that gives it: ``symllm.workload``, ``count --json``, ``count --serve --json``, ``plan`` (serving and
training), a one-point ``sweep``, ``derive`` and ``report``, for a dense GQA model, a mixture of experts, LoRA,
fp8 weights and a tensor-parallel layout.

The reference number of each quantity is the Python API's; what is asserted is that no door computes its own
variant of it (a default, a convention such as the logits' positions, LoRA's training peak, a layout's per-GPU
share). Where a door answers a neighbouring question its relation is asserted instead: ``plan``'s largest serving
batch at a layout of tensor ranks is what ``count --serve`` says the engine's KV cache holds there (not the
inference peak's "up to batch", which has no engine overhead), and ``--serve``'s weights per GPU are ``count``'s.
"""
import json
import math
from fractions import Fraction

import pytest

import symllm
from symllm.studies import plans
from tests.conftest import engine_peak
from tests.test_vllm_expert_parallel import MIB, _weights_by_hand

GPU = "h100-sxm"

#: (model, workload options): dense GQA, MoE, LoRA (QLoRA), fp8 weights, a tensor-parallel layout
CASES = [
    ("llama3.1-8b", {"seq": 4096}),
    ("qwen1.5-moe-a2.7b", {"seq": 2048}),
    ("llama2-7b", {"seq": 1024, "lora_rank": 16, "qlora": True}),
    ("llama3.1-8b", {"seq": 2048, "dtype": "fp8"}),
    ("llama3.1-70b", {"seq": 8192, "dtype": "fp8", "tp": 4}),
    # LoRA on a model whose layout depends on the engine (DeepSeek-V4: transformers' plan, vLLM's): every door
    # builds the workload's model as phases.model_of does, the engine's layout included
    ("deepseek-v4-flash-base", {"seq": 1024, "lora_rank": 16, "lora_targets": "wq_b,wo_b", "tp": 8}),
    ("deepseek-v4-flash-base", {"seq": 1024, "lora_rank": 16, "lora_targets": "wq_b,wo_b", "tp": 8,
                                "engine": "vllm"}),
    # engines merged in session 12: MLC's own layout, transformers' per-family plan (gpt-oss at tp 2), SGLang
    ("llama2-70b", {"seq": 2048, "tp": 4, "engine": "mlc"}),
    ("gpt-oss-20b", {"seq": 1024, "tp": 2, "engine": "hf"}),
    ("llama3.1-8b", {"seq": 1000, "gen": 100, "engine": "sglang"}),
]
IDS = ["dense-gqa", "moe", "qlora", "fp8", "tp4", "dsv4-lora-tp8", "dsv4-lora-tp8-vllm", "mlc-tp4", "hf-gpt-oss-tp2",
       "sglang"]


def _flags(options: dict) -> list[str]:
    out = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def _number(value):
    """A JSON number, or a fraction printed as "p/q", as an exact number."""
    return Fraction(value) if isinstance(value, str) else value


@pytest.mark.parametrize("model, options", CASES, ids=IDS)
def test_count_json_and_the_python_api_agree(cli, model, options):
    """count --json prints symllm.workload's numbers, every group, LoRA's included."""
    api = symllm.workload(model, gpu=GPU, **options)
    printed = json.loads(cli(["count", model, "--gpu", GPU, *_flags(options), "--json"]).out)
    for group in ("flops", "memory", "memory_per_gpu", "comm"):
        assert {k: _number(v) for k, v in printed[group].items()} == api[group], group
    assert printed["params"]["per_gpu"] == api["params"]["per_gpu"]
    if "lora_rank" in options:
        assert printed["params"]["trainable"] == api["params"]["trainable"]
        assert api["memory"]["training_peak"] == api["memory"]["lora_total"]
    for key in ("inference_peak", "training_peak", "max_batch", "max_context", "training_max_batch"):
        assert _number(printed["time"][key]) == api["time"][key], key
    assert api["time"]["inference_peak"] == api["memory_per_gpu"]["inference_peak"]
    assert api["time"]["training_peak"] == api["memory_per_gpu"]["training_peak"]


@pytest.mark.parametrize("model, options", CASES, ids=IDS)
def test_a_one_point_sweep_gives_counts_numbers(model, options):
    """A sweep of one point computes each quantity on its own path (compiled kernels): the same bytes."""
    api = symllm.workload(model, **options)
    names = {"prefill_flops": api["flops"]["prefill"], "generation_flops": api["flops"]["generation"],
             "training_flops": api["flops"]["training_step"], "weights": api["memory"]["weights"],
             "inference_peak": api["memory"]["inference_peak"], "training_peak": api["memory"]["training_peak"],
             "inference_peak_per_gpu": api["memory_per_gpu"]["inference_peak"],
             "training_peak_per_gpu": api["memory_per_gpu"]["training_peak"]}
    rest = {k: v for k, v in options.items() if k != "seq"}
    got = symllm.Sweep(model, {"seq": [options["seq"]]}, quantities=list(names), workload=rest).run().records()
    assert len(got) == 1
    assert {k: _number(got[0][k]) for k in names} == names


@pytest.mark.parametrize("model, options", CASES, ids=IDS)
def test_derive_and_report_give_counts_numbers(model, options):
    """derive's value and report's tables: the prefill FLOPs, the inference peak and the training peak (LoRA's
    under LoRA) of the whole model."""
    api = symllm.workload(model, **options)
    derived = {"prefill": symllm.derive("model", "flops", config=model, phase="prefill", **options).value,
               "inference_peak": symllm.derive("model", "memory", config=model, memory="inference_peak",
                                               **options).value,
               "training_peak": symllm.derive("model", "memory", config=model, memory="training_peak",
                                              **options).value}
    assert derived == {"prefill": api["flops"]["prefill"], "inference_peak": api["memory"]["inference_peak"],
                       "training_peak": api["memory"]["training_peak"]}
    text = symllm.report(model, **options).render("markdown")
    for label, value in (("prefill (matmuls)", api["flops"]["prefill"]),
                         ("inference peak", api["memory"]["inference_peak"])):
        assert f"| {label} | {value:,} |" in text, label


def _held(serving: dict) -> int:
    """The most sequences count --serve --json's section says one replica holds: a context-sized cache's
    ``most_sequences``, else the whole of its max concurrency (none where it does not fit)."""
    if "most_sequences" in serving:
        return serving["most_sequences"]
    return int(_number(serving["max_concurrency"])) if serving["fits"] else 0


@pytest.mark.parametrize("model, options", CASES, ids=IDS)
def test_plan_rows_are_counts_numbers(cli, model, options):
    """plan at count's layout: a serving row's peak is count's per-GPU inference peak at its batch, the largest
    batch plan keeps is what count --serve says the engine's KV cache holds (its max concurrency, or most
    sequences for a cache sized by the context; every batch up to the concurrency tried), not the inference
    peak's "up to batch"; a training row's peak is count's per-GPU training peak (LoRA's under LoRA), or the
    layout is dropped exactly when count says it does not fit."""
    tp = options.get("tp", 1)
    shared = {k: v for k, v in options.items() if k not in ("tp", "lora_rank", "qlora", "lora_targets")}
    t = symllm.workload(model, gpu=GPU, **options)["time"]
    serving = json.loads(cli(["count", model, "--gpu", GPU, *_flags({**shared, "tp": tp}), "--serve",
                              "--json"]).out)["serving"]
    held = _held(serving)
    serve = plans.plan(model, tp, GPU, concurrency=held + 1, **shared)
    mine = [r for r in serve.rows if (r["tp"], r["pp"], r["dp"]) == (tp, 1, 1)]
    assert max((r["batch"] for r in mine), default=0) == held == serve.sequences[f"tp {tp}"]
    for row in mine[:3]:  # the engine's peak: count's weights and cache of the batch, beside count --serve's figures
        assert row["peak"] == pytest.approx(engine_peak(model, row["batch"], options, serving), rel=1e-12)
        assert row["peak"] <= t["capacity"]
    lora = {k: v for k, v in options.items() if k in ("lora_rank", "qlora", "lora_targets")}
    train = plans.plan(model, tp, GPU, training=True, global_batch=1, **shared, **lora)
    layout = (tp, 1, 1, False, 0, False)
    rows = [r for r in train.rows if (r["tp"], r["pp"], r["dp"], r["sp"], r["zero"], r["recompute"]) == layout]
    dropped = [r for r in train.drops if (r["tp"], r["pp"], r["dp"], r["sp"], r["zero"], r["recompute"]) == layout]
    if t["training_fits"]:
        assert [r["peak"] for r in rows] == [t["training_peak"]] and not dropped
    else:
        assert not rows and [r["reason"] for r in dropped] == ["training peak > 80 GiB per GPU"]


def test_plans_float8_gathers_are_counts():
    """torchtitan runs its sequence-parallel all-gathers in float8 under --compute-dtype fp8 (torchao's float8 tensor
    parallelism): a plan row's roofline step at a tp 2 --sp layout is count's, which counts them at one byte
    (plan had counted them at bf16 while count moved to one byte)."""
    opts = {"engine": "torchtitan", "compute_dtype": "fp8", "seq": 4096}
    p = plans.plan("llama3.1-8b", 8, GPU, training=True, global_batch=16, **opts)
    row = next(r for r in p.rows if (r["tp"], r["sp"], r["pp"], r["accum"]) == (2, True, 1, 1))
    at = {k: row[k] for k in ("tp", "dp", "batch")}
    fp8 = symllm.workload("llama3.1-8b", gpu=GPU, sp=True, zero_stage=row["zero"], recompute=row["recompute"], **at,
                          **opts)["time"]["training_step_s"]
    assert row["step_s"] == pytest.approx(fp8, rel=1e-12)


@pytest.mark.parametrize("model, options", [c for c in CASES if "lora_rank" not in c[1]],
                         ids=[i for c, i in zip(CASES, IDS) if "lora_rank" not in c[1]])
def test_serve_weights_are_counts_per_gpu_weights(cli, model, options):
    """count --serve's weights per GPU are count's memory_per_gpu.weights at the same tensor-parallel layout."""
    printed = json.loads(cli(["count", model, "--gpu", GPU, *_flags(options), "--serve", "--json"]).out)
    api = symllm.workload(model, **options)
    assert _number(printed["serving"]["weights"]) == api["memory_per_gpu"]["weights"]
    assert printed["serving"]["tp"] == options.get("tp", 1)


def test_hf_experts_whole_at_every_door():
    """gpt-oss under ``--engine hf``: transformers' plan keeps its routed experts whole on every rank
    (``with_stated``), and so do the doors that build their own workload: ``derive``'s comm (count's bytes sent, all
    kinds summed) and ``fewest_gpus``' layout, whose per-GPU peak is count's at that layout. Before, both laid the
    experts out split (the engines' default), each an answer count never gives under hf."""
    options = {"seq": 1024, "tp": 2, "engine": "hf"}
    api = symllm.workload("gpt-oss-20b", **options)
    assert symllm.derive("model", "comm", config="gpt-oss-20b", **options).value == sum(api["comm"].values())
    wide = {"seq": 65536, "batch": 16, "engine": "hf"}
    found = plans.fewest_gpus("gpt-oss-20b", gpu=GPU, ranks=("tp", "pp"), training=False, **wide)
    laid = {k: found[k] for k in ("tp", "pp", "dp")}
    assert found["peak"] == symllm.workload("gpt-oss-20b", gpu=GPU, **laid, **wide)["memory_per_gpu"]["inference_peak"]
    assert found == plans.fewest_gpus("gpt-oss-20b", gpu=GPU, ranks=("tp", "pp"), training=False, expert_tp="whole",
                                      **wide)


#: Llama-3.1-8B's config.json (meta-llama/Llama-3.1-8B): num_hidden_layers 32, num_key_value_heads 8,
#: hidden_size 4096 over num_attention_heads 32 (head_dim 128), bf16: a token's keys and values on one GPU
KV_TOKEN = 2 * 32 * 8 * 128 * 2


@pytest.mark.parametrize("engine", ["vllm", "hf"])
@pytest.mark.parametrize("tp", [1, 2])
def test_plan_and_count_serve_hold_the_same_sequences(cli, engine, tp):
    """Issue 40: Llama-3.1-8B on H100s at a 1,000-token prompt and 100 generated (context 1,100). count --serve's
    KV bytes a token are 2·32·8·128·2 = 131,072 by hand (halved on each of 2 tensor ranks: 4 key/value heads
    each); vLLM pages them in blocks of 16 tokens, so its KV cache holds ⌊⌊kv_cache_bytes / (16·131,072/tp)⌋·16
    / 1,100⌋ whole sequences; transformers' cache, sized by the context, holds ⌊(memory − weights − activation
    peak − non-torch) / (1,100·131,072/tp)⌋. plan's largest batch at (tp, 1, 1) is that number, where count's
    inference peak stops earlier (283 on one GPU: a prefill of every prompt at once, no engine). The rows it keeps
    are held within the card and timed as count --serve under load times that concurrency: one answer."""
    args = ["count", "llama3.1-8b", "--gpu", GPU, "--seq", "1000", "--gen", "100", "--engine", engine, "--tp", str(tp)]
    s = json.loads(cli([*args, "--serve", "--json"]).out)["serving"]
    per_token = KV_TOKEN // tp
    assert _number(s["kv_bytes_per_token"]) == per_token and s["context"] == 1100
    if engine == "vllm":
        held = int(_number(s["kv_cache_bytes"]) // (16 * per_token)) * 16 // 1100
    else:
        room = s["memory"] - s["weights"] - _number(s["activation_peak"]) - _number(s["non_torch"])
        held = int(room // (1100 * per_token))
    assert held == _held(s) > 0
    p = plans.plan("llama3.1-8b", tp, GPU, seq=1000, gen=100, engine=engine, concurrency=held + 1)
    assert max(r["batch"] for r in p.rows if (r["tp"], r["pp"], r["dp"]) == (tp, 1, 1)) == held
    assert p.dropped.get(f"more sequences than {engine}'s KV cache holds (count --serve)", 0) >= 1
    if tp == 1:
        assert symllm.workload("llama3.1-8b", gpu=GPU, seq=1000, gen=100)["time"]["max_batch"] == 283 < held
    # the rows plan times: held as the engine holds them (within the card), stepped as under load, their times
    # count --serve --concurrency's at the row's batch, the decode step count's one token a sequence at 1,100
    options = {"seq": 1000, "gen": 100, "engine": engine}
    timed = [r for r in p.rows if "load" in r]
    assert timed and timed[0] is p.rows[0] and all(r["peak"] <= 80 * 2**30 for r in p.rows)
    for row in [r for r in timed if (r["tp"], r["pp"], r["dp"]) == (tp, 1, 1)]:  # (one row a layout)
        assert row["peak"] == pytest.approx(engine_peak("llama3.1-8b", row["batch"], {**options, "tp": row["tp"]}, s),
                                           rel=1e-12)
        flags = [*args[:-2], "--tp", str(row["tp"]), "--serve", "--concurrency", str(row["batch"]), "--json"]
        load = json.loads(cli(flags).out)["serving"]["load"]
        for key in ("ttft_s", "itl_s", "output_tokens_per_s"):
            assert row["load"][key] == load[key] and row["load"]["bound"][key] == load["bound"][key], key
        step = symllm.workload("llama3.1-8b", gpu=GPU, batch=row["batch"], tp=row["tp"], dp=row["dp"], seq=1, gen=0,
                               context=1100, engine=engine)["time"]
        assert row["decode_token_s"] == step["decode_token_s"]
        assert row["expected"]["decode_token_s"] == step["expected"]["decode_token_s"]


def test_hf_experts_whole_below_the_doors(cli):
    """The layout holds gpt-oss's experts whole under ``--engine hf`` (``symllm.arch.specs.hf_plan``), not the workload
    a door reads the config into: a bare ``Workload(tp=2, engine="hf")`` (no config read: ``expert_tp`` its default,
    split) handed straight to the low-level ``quantities`` with the model as hf lays it out gives count's parameters,
    peaks and bytes sent, and so do derive and a one-point sweep (plan's row: the engine's peak
    count --serve reads). Rank 0's parameters by hand from config.json
    (test_serving_layout's arithmetic): everything whole but the lm_head's rows. Before, the low-level path split each
    expert's width over the two ranks."""
    import sympy as sp

    from symllm.arch import resolved
    from symllm.costs import phases
    from symllm.costs.workloads import Workload

    options = {"seq": 1024, "tp": 2, "engine": "hf"}
    spc, bare = resolved.spec("gpt-oss-20b"), Workload(**options)
    assert bare.expert_tp == "split"
    low = phases.quantities(phases.model_of(spc, bare), bare)
    values = {**{s.name: v for s, v in spc.values().items()}, "b": 1, "s": 1024, "n": 0, "t": 1024, "beta_w": 2,
              "beta_a": 2, "beta_kv": 2, "N_t": 2, "N_p": 1, "N_d": 1, "N_e": 1}

    def number(expr):
        return sp.sympify(expr).xreplace({x: values[x.name] for x in sp.sympify(expr).free_symbols})

    api = symllm.workload("gpt-oss-20b", gpu=GPU, **options)
    d, V, L, E, f = 2880, 201088, 24, 32, 2880
    layer = d * 4096 + 4096 + 2 * (d * 512 + 512) + 4096 * d + d + 64 + 2 * d + d * E + E + E * (3 * d * f + 2 * f + d)
    assert number(low["params"]["per_gpu"]) == api["params"]["per_gpu"] == V * d + L * layer + d + V // 2 * d
    assert {k: number(e) for k, e in low["comm"].items()} == api["comm"]
    peaks = {k: number(low["memory_per_gpu"][k]) for k in ("inference_peak", "training_peak")}
    assert peaks == {k: api["memory_per_gpu"][k] for k in peaks}
    assert symllm.derive("model", "comm", config="gpt-oss-20b", **options).value == sum(api["comm"].values())
    rest = {k: v for k, v in options.items() if k != "seq"}
    swept = symllm.Sweep("gpt-oss-20b", {"seq": [1024]}, quantities=["inference_peak_per_gpu", "training_peak_per_gpu"],
                         workload=rest).run().records()[0]
    assert {k: _number(swept[f"{k}_per_gpu"]) for k in peaks} == peaks
    serve = plans.plan("gpt-oss-20b", 2, GPU, concurrency=1, seq=1024, engine="hf")
    serving = json.loads(cli(["count", "gpt-oss-20b", "--gpu", GPU, "--seq", "1024", "--tp", "2", "--engine", "hf",
                              "--serve", "--json"]).out)["serving"]
    assert [r["peak"] for r in serve.rows if (r["tp"], r["pp"], r["dp"], r["batch"]) == (2, 1, 1, 1)] == \
        [engine_peak("gpt-oss-20b", 1, options, serving)]


#: Llama-3.1-8B's config.json: 32 layers, vocab_size 128,256, hidden_size 4096, intermediate_size 14,336, 8 KV
#: heads of 128 over 32 query heads, untied head: one block's parameters (q, k, v, o; gate, up, down; two norms)
BLOCK_8B = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096


def test_a_pipelined_replicas_kv_cache_by_hand(cli):
    """Issue 40: Llama-3.1-8B over 2 pipeline stages (tp 1) on H100s at 1,000 + 100 tokens, vLLM's cache by hand.
    Each stage holds 16 of the 32 layers, so a token's keys and values on a GPU are 16·2·8·128·2 = 65,536 bytes (half
    of one GPU's 131,072); the larger stage is the last (16 blocks, the final norm and the untied head,
    16·218,112,000 + 4,096 + 128,256·4,096 parameters, 2 bytes each, against the first's embedding without the norm);
    vLLM V1 gives every stage the blocks of its fewest (get_kv_cache_configs), the last's. The activation peak (a
    profiled layer's working set, the sampler's rows) is a GPU's as at pp 1; non-torch memory is vLLM's 0.35 GiB and
    the pipeline group's one PyNccl communicator of 688 MiB (vLLM 0.33.0 initialize_model_parallel: a device
    communicator for every group of more than one rank; no tensor group's at tp 1), in whole bytes. So the cache is
    ⌊0.9·memory⌋ − weights − those, in blocks of 16 tokens of 65,536 bytes, and ⌊tokens / 1,100⌋ whole sequences:
    what count --pp 2 --serve prints and what plan's tp 1 pp 2 replica holds."""
    args = ["count", "llama3.1-8b", "--gpu", GPU, "--seq", "1000", "--gen", "100", "--serve", "--json"]
    one = json.loads(cli(args).out)["serving"]
    s = json.loads(cli([*args, "--pp", "2"]).out)["serving"]
    per_token = 16 * 2 * 8 * 128 * 2
    weights = 2 * (16 * BLOCK_8B + 4096 + 128256 * 4096)
    assert BLOCK_8B == 218_112_000 and weights == 8_030_265_344
    assert _number(s["kv_bytes_per_token"]) == per_token == _number(one["kv_bytes_per_token"]) // 2
    assert s["weights"] == weights and s["pp"] == 2
    non_torch = math.ceil(Fraction("0.35") * 2 ** 30) + 688 * 2 ** 20  # whole bytes: 375,809,638.4 rounded up
    assert s["activation_peak"] == one["activation_peak"] and s["non_torch"] == non_torch
    kv = math.floor(Fraction(9, 10) * s["memory"]) - weights - s["activation_peak"] - non_torch  # vLLM's int()
    assert s["kv_cache_bytes"] == kv and type(s["kv_cache_bytes"]) is int
    tokens = int(kv // (16 * per_token)) * 16
    held = tokens // 1100
    assert s["kv_tokens"] == tokens and _held(s) == held > 2 * _held(one)  # half the KV a token and half the weights
    p = plans.plan("llama3.1-8b", 2, GPU, seq=1000, gen=100, concurrency=held + 1)
    assert p.sequences["tp 1 pp 2"] == held
    assert max(r["batch"] for r in p.rows if (r["tp"], r["pp"]) == (1, 2)) == held
    assert [r["batch"] for r in p.drops if (r["tp"], r["pp"]) == (1, 2)] == [held + 1]


def test_plans_pipelined_and_expert_parallel_replicas_are_count_serves(cli):
    """Issue 40: Mixtral-8x7B on 8 H100s at 2,000 + 200 tokens, up to 420 sequences a replica. Every replica plan
    lays out holds what count --serve says vLLM's KV cache holds at that layout (--tp, --pp, --dp, --ep: whole
    sequences of the 2,200-token context), keeps each batch up to it and drops the next as the cache's, and is held
    at the engine's peak; its best row (tp 1 ep 8) is timed under load as count --serve --concurrency times it. Before,
    a pipelined or expert-parallel replica kept the inference peak's batches (tp 2 ep 4: all 256 tried, no engine
    overhead) while tp 2 alone held the engine's 179: two answers. vLLM's expert parallelism at tp 2 spans tp x dp
    ranks (symllm.costs.expert_layout), so plan tries no tp 2 ep 4 replica; without it vLLM spreads each expert over
    the tp x dp ranks of one engine (tp 2 dp 4: 409 sequences), and the best replica is tp 1 dp 8."""
    work = {"seq": 2000, "gen": 200}
    p = plans.plan("mixtral-8x7b", 8, GPU, concurrency=420, **work)
    full = "more sequences than vllm's KV cache holds (count --serve)"
    served = {}
    for tp, pp, dp, ep in ((2, 1, 4, 1), (2, 2, 2, 1), (1, 1, 8, 8)):
        layout = {"tp": tp, "pp": pp, "dp": dp, "ep": ep}
        s = served[tp, pp, dp, ep] = json.loads(cli(["count", "mixtral-8x7b", "--gpu", GPU, *_flags({**work, **layout}),
                                                     "--serve", "--json"]).out)["serving"]
        held = _held(s)
        name = "tp " + str(tp) + (f" pp {pp}" if pp > 1 else "") + (f" ep {ep}" if ep > 1 else "")
        assert p.sequences[name] == held, name
        at = lambda r: (r["tp"], r["pp"], r["dp"], r["ep"]) == (tp, pp, dp, ep)  # noqa: E731
        assert [(r["batch"], r["batches"]) for r in p.rows if at(r)] == [(min(held, 420), [1, min(held, 420)])], name
        assert all(r["reason"] == full and r["batch"] > held for r in p.drops if at(r)), name
        top = max((r for r in p.rows if at(r)), key=lambda r: r["batch"])
        # (as the engine holds them: count's figures under --engine vllm, its experts over tp x dp without EP)
        held_as = {**work, **layout, "engine": "vllm"}
        assert top["peak"] == engine_peak("mixtral-8x7b", top["batch"], held_as, s) <= 80 * 2 ** 30
    # vLLM's EP at tp 2 spans tp x dp ranks; without it at dp 4 each expert's weights span them too (409: 179 over tp).
    # By hand (Mixtral's config: tests/test_vllm_expert_parallel.py): each expert an eighth wide on a GPU (14,336 / 8),
    # the attention over tp 2; the activation peak vLLM V1's dummy sampler run, vllm serve's 1,024 rows on an H100 of
    # the 32,000-entry vocabulary at 38 bytes a logit beside the profile's 8,192 tokens' and the rows' hidden states
    # in bf16 (larger than the forward's working set with its fused-MoE workspace); non-torch vLLM's 0.35 GiB and 4
    # PyNccl communicators of 688 MiB (tensor group, torch's, data-parallel and expert groups); the cache
    # ⌊0.9·memory⌋ less those, in blocks of 16 tokens of 65,536 bytes (32 layers x K and V x 4 KV heads a rank x
    # 128 x 2 bytes), over the 2,200-token context
    s = served[2, 1, 4, 1]
    weights = _weights_by_hand(2, 8, 14336 // 8)
    sampler = 1024 * 32000 * 38 + (8192 + 2 * 1024) * 4096 * 2
    non_torch = math.ceil(Fraction("0.35") * 2 ** 30) + 4 * 688 * MIB
    assert (s["weights"], s["activation_peak"], s["non_torch"]) == (weights, sampler, non_torch)
    assert s["kv_bytes_per_token"] == 32 * 2 * 4 * 128 * 2 == 65_536
    kv = math.floor(Fraction(9, 10) * s["memory"]) - weights - sampler - non_torch
    held = kv // (16 * 65_536) * 16 // 2200
    assert _held(s) == p.sequences["tp 2"] == held == 409 and "tp 2 ep 4" not in p.sequences
    best = p.rows[0]
    assert (best["tp"], best["pp"], best["dp"], best["ep"]) == (1, 1, 8, 1) and "load" in best
    load = json.loads(cli(["count", "mixtral-8x7b", "--gpu", GPU, *_flags(work), "--tp", "1", "--dp", "8", "--ep", "1",
                           "--serve", "--json", "--concurrency", str(best["batch"])]).out)["serving"]["load"]
    for k in ("ttft_s", "itl_s", "output_tokens_per_s"):
        assert math.isclose(best["load"][k], load[k], rel_tol=1e-9), k
