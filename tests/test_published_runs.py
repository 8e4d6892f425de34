"""symllm's expected times against the published runs in tests/data/published_runs.json (issue 40's
validation table: engine and version, hardware, model, precision, layout, workload, figure, source).

Nothing in symllm/costs/efficiency.json was fitted to these rows: its figures come from the H200
measurements of benchmarks/gpu_efficiency.py or are marked as assumed. The test prints predicted against
measured for every row it can predict, and holds the median and worst relative error where they stand
today (docs/efficiency.md shows the table); rows symllm cannot predict yet (a model or GPU not in its
catalogue, serving lengths not stated) are listed with the reason."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

import symllm
from symllm.costs.formats import check_format

ROWS = json.loads((Path(__file__).parent / "data" / "published_runs.json").read_text())["rows"]

#: engines the table names under another name: NVIDIA NIM runs TensorRT-LLM; Meta's Llama 3 training stack is
#: 4D-parallel like Megatron (gpt-fast is its own engine: the torch engine's figures, its own tensor-parallel layout)
ENGINE = {"nim": "trtllm", "meta-internal": "megatron"}


#: vLLM v0.2.6's release (2023-12-17): the first with CUDA graphs; a vLLM build dated before it ran eagerly
VLLM_GRAPHS = "2023-12-17"


def engine(row: dict) -> str:
    """symllm's engine for a row: ENGINE's name; vLLM's V0 engine where the row says it ran V0, and vLLM
    before v0.2.6 (vllm-v0.2: eager decode, NCCL all-reduces) where the row's build is dated before it."""
    version = row.get("engine_version") or ""
    if row["engine"] == "vllm" and "V0" in version:
        return "vllm-v0"
    dated = re.search(r"\d{4}-\d{2}-\d{2}", version)
    if row["engine"] == "vllm" and dated and dated.group() < VLLM_GRAPHS:
        return "vllm-v0.2"
    return ENGINE.get(row["engine"], row["engine"])
#: kinds predicted from count's time group, and the expected key each is compared with
KINDS = {"decode_tokens_per_s": "tokens_per_s", "itl_s": "decode_token_s", "ttft_s": "prefill_s",
         "prefill_s": "prefill_s", "training_tokens_per_s_per_gpu": "training_tokens_per_s_per_gpu",
         "mfu": "mfu"}


def _weights(text: str) -> dict:
    """The row's weights as workload options: a dtype, or a quantized format symllm knows."""
    name = text.split(" ")[0]
    if name in ("bf16", "fp16", "fp8"):
        return {"dtype": name}
    if name.startswith("gguf:"):
        return {"weight_format": name[5:]}
    if name.startswith("int4"):
        # MLC's q4f16_1 groups 32 weights a scale (mlc_llm/quantization/quantization.py, GroupQuantize
        # "q4f16_1": group_size=32); an int4 row that names no group is read as 128
        return {"dtype": "int4", "group_size": 32 if "g32" in name or "q4f16_1" in name else 128}
    check_format(name)
    return {"weight_format": name}


def options(row: dict) -> dict | None:
    """The workload options of a row, or None where symllm has no prediction for its kind or model."""
    if row["kind"] not in KINDS or row["model"] is None or row.get("preset") is None:
        return None  # a kind not predicted yet, or a model or GPU symllm has no entry for (MPT-7B)
    w, lay = row["workload"], row["layout"]
    out = {"gpu": row["gpu"], "engine": engine(row), **_weights(row["weights"]),
           "tp": lay["tp"], "pp": lay["pp"]}
    if row["kv"] is not None:  # the KV dtype the row states; else the engine's default, the model's dtype
        out["kv_dtype"] = row["kv"]
    if row["kind"] in ("training_tokens_per_s_per_gpu", "mfu"):
        dp = row["gpus"] // (lay["tp"] * lay["pp"])
        micro = w.get("micro_batch") or 1
        tokens = w.get("global_batch_tokens")
        steps = max(1, tokens // (w["seq"] * micro * dp)) if tokens else 1
        pipe = w.get("pipeline_microbatches") or 1  # a rank's batch split through the pipeline (torchtitan)
        assert micro % pipe == 0, row["id"]
        # torchtitan's "selective" is its op policy in every row here (selective_ac_option = 'op' in its Llama 3
        # configs at 1ea476e, 9dec370 and e7c0cae: the rows' notes)
        op = w.get("recompute") == "selective" and row["engine"] == "torchtitan"
        out.update(seq=w["seq"], batch=micro // pipe, dp=dp, ep=lay.get("ep") or 1, micro_batches=steps * pipe,
                   recompute="op" if op else "full" if w.get("recompute") == "full" else "none", sp=bool(lay.get("sp")),
                   tp_overlap=lay.get("tp_overlap"),
                   zero_stage=3 if lay.get("fsdp") else 1, compute_dtype=row["compute"],
                   schedule=lay.get("schedule") or "1f1b", virtual_stages=lay.get("virtual_stages") or 2)
        out.pop("dtype", None)
        return out
    prompt = max(1, w.get("input_len") or 1)
    out.update(batch=w.get("batch") or 1, seq=prompt)
    if row["kind"] in ("decode_tokens_per_s", "itl_s"):
        out["context"] = prompt + (w.get("output_len") or 0) // 2  # the mean context of the decode steps
    return out


#: what a predicted row ran that symllm has no option for (printed beside its error): torch.compile's fusions
#: (the torchtitan engine's train_factor is an uncompiled forward and backward). Async tensor parallelism and
#: Megatron's tp_comm_overlap are modelled: a row's layout says tp_overlap (symllm.costs.tp_overlap). The 500 W limit of torchtitan's H100s is modelled: the card
#: h100-sxm-hbm2e runs at 500 W of its rated 700 (symllm.costs.power.power_fraction, from a bf16 matmul
#: measured at two board powers: docs/efficiency.md). torchtitan's selective op checkpointing is
#: --selective-ac op (symllm.costs.selective) and its Float8 on the linear layers only the torchtitan engine's
#: fp8_linears_only (efficiency.json): both modelled.
_COMPILED = "torch.compile"
UNMODELLED = {
    "torchtitan-llama3.1-8b-h100x8-fsdp-compile-fp8": _COMPILED,
    "torchtitan-llama3.1-70b-h100x256-fsdp-tp8-fp8": _COMPILED,
    "torchtitan-llama3.1-70b-h100x256-fsdp-tp8-fp8-asynctp": _COMPILED,
    "torchtitan-llama3.1-405b-h100x512-3d-1f1b": _COMPILED,
    "torchtitan-llama3.1-405b-h100x512-3d-interleaved1f1b": _COMPILED,
    "torchtitan-llama3.1-8b-h200x32-fsdp-compile-fp8": _COMPILED,
}


def _under_load(row: dict) -> float | None:
    """Output tokens/s under load (symllm.costs.traffic): a stated concurrency, or all requests sent at once
    (an offline benchmark: as many running as the KV cache holds); None where the lengths are not stated."""
    w, lay = row["workload"], row["layout"]
    if not w.get("input_len") or not w.get("output_len"):
        return None
    from symllm.costs import batching
    from symllm.costs.traffic import under_load
    bench = {}
    if "trtllm-bench" in (row.get("notes") or ""):  # trtllm-bench's own max_batch_size and max_num_tokens
        s = batching.trtllm_bench_settings(row["model"], row["gpu"], tp=lay["tp"], pp=lay["pp"], seq=w["input_len"],
                                           gen=w["output_len"])
        bench = {"max_num_batched_tokens": s["max_num_tokens"], "max_num_seqs": s["max_batch_size"]}
    r = under_load(row["model"], gpu=row["gpu"], tp=lay["tp"], engine=engine(row),
                   seq=w["input_len"], gen=w["output_len"], concurrency=w.get("concurrency") or 10 ** 6,
                   **_weights(row["weights"]), **bench, **({"kv_dtype": row["kv"]} if row["kv"] else {}))
    return r["output_tokens_per_s"]


def _kv_tokens(row: dict) -> float:
    """The KV-cache tokens an engine allocates (symllm.costs.serving.capacity, by the engine's own memory rule:
    symllm.costs.engine_memory): vLLM V0's profile run is max_model_len tokens (the row says so where it was), the
    model's own context otherwise; the engine's options the row states (its workload's serve_options: SGLang's
    --mem-fraction-static as gpu_memory_utilization, ...), the engine's defaults otherwise."""
    from symllm.costs import serving
    w, lay = row["workload"], row["layout"]
    notes = row["workload"].get("notes") or ""
    seq = w.get("seq") or symllm.spec(row["model"]).config.max_positions
    profile = {"max_num_batched_tokens": seq} if "profiling" in notes else {}  # V0: max_model_len tokens
    r = serving.capacity(row["model"], gpu=row["gpu"], tp=lay["tp"], seq=seq, kv_dtype=row["kv"],
                         engine=engine(row), **_weights(row["weights"]), **profile, **(w.get("serve_options") or {}))
    return float(r["kv_tokens"])


def predictions() -> list[tuple[dict, float | None, str]]:
    """(row, predicted value or None, why not)."""
    out = []
    for row in ROWS:
        if row["kind"] == "kv_cache_tokens":
            out.append((row, _kv_tokens(row), ""))
            continue
        if row["kind"] == "serving_output_tokens_per_s" and row.get("preset") is not None:
            value = _under_load(row)
            out.append((row, value, "" if value is not None else "prompt and output lengths not stated"))
            continue
        opts = options(row)
        if opts is None:
            why = (f"{row['kind']}: not predicted yet" if row["kind"] not in KINDS
                   else "model or GPU not in symllm's presets or catalogue")
            out.append((row, None, why))
            continue
        e = symllm.workload(row["model"], **opts)["time"]["expected"]
        if row["kind"] == "mfu" and (row.get("mfu_definition") or "").startswith(("torchtitan", "llm-foundry")):
            out.append((row, source_mfu(row, e), ""))  # the source's definition, not symllm's
            continue
        out.append((row, e[KINDS[row["kind"]]], ""))
    return out


def source_mfu(row: dict, expected: dict) -> float:
    """MFU as the source defines it, from the predicted tokens/s per GPU: torchtitan's is tokens/s x (6N +
    12·L·H·Q·T) / 312e12 (N every parameter, embeddings included; attention over the whole T x T rectangle,
    not causal; the row's notes quote it), where symllm's counts the causal pairs and no embedding lookup;
    llm-foundry's (its MPT flops_per_batch, 3 x (2N·T + 4·L·d·T²) a sequence) is the same with d = H·Q.
    Checked: 2,973 tokens/s of Llama 3 8B give the published 58.2%, 331 of Llama 3 70B 51.7%, 4,641 of MPT-7B
    64.2% (test_source_mfu_reproduces_the_published_figures)."""
    c = symllm.spec(row["model"]).config
    n = symllm.workload(row["model"])["params"]["per_gpu"]
    per_token = 6 * n + 12 * c.n_layers * c.n_heads * c.head_dim * row["workload"]["seq"]
    return expected["training_tokens_per_s_per_gpu"] * per_token / 312e12


def _error(row, predicted) -> float:
    return predicted / row["value"] - 1


def test_the_table_is_whole():
    """At least 25 rows, each with its source, engine, hardware, model, precision, layout and workload."""
    assert len(ROWS) >= 25
    for row in ROWS:
        for key in ("engine", "gpu", "weights", "layout", "workload", "value", "as_published"):
            assert row[key] is not None, (row["id"], key)
        assert row["source"]["url"].startswith("http") and row["source"]["where"], row["id"]


@pytest.mark.parametrize("rid,tokens", [("torchtitan-llama3-8b-a100x64-fsdp-mfu", 2973),
                                         ("torchtitan-llama3-70b-a100x64-fsdp-mfu", 331)])
def test_source_mfu_reproduces_the_published_figures(rid, tokens):
    """torchtitan's formula at the tokens/s per GPU its page prints gives the MFU it prints (to 0.1%)."""
    row = next(r for r in ROWS if r["id"] == rid)
    assert round(source_mfu(row, {"training_tokens_per_s_per_gpu": tokens}), 3) == row["value"]


def test_torchtitan_pipeline_rows_run_its_defaults():
    """The 405B rows on 512 GPUs (FSDP 8 x TP 8 x PP 8, local batch 32): torchtitan 9dec370 splits a rank's 32
    sequences into as many micro-batches as pipeline stages (pipeline_llama.py: 8 of 4) and gives an
    interleaved schedule 2 stages a rank (pipelining_utils.generate_split_points); its TP is sequence-parallel;
    the card is the 500 W H100 96GB HBM2e entry."""
    for rid, schedule in (("torchtitan-llama3.1-405b-h100x512-3d-1f1b", "1f1b"),
                          ("torchtitan-llama3.1-405b-h100x512-3d-interleaved1f1b", "interleaved")):
        o = options(next(r for r in ROWS if r["id"] == rid))
        assert (o["gpu"], o["tp"], o["pp"], o["dp"], o["zero_stage"]) == ("h100-sxm-hbm2e", 8, 8, 8, 3)
        assert (o["batch"], o["micro_batches"], o["schedule"], o["virtual_stages"], o["sp"]) == (4, 8, schedule, 2, True)
        assert (o["compute_dtype"], o["recompute"], o["seq"]) == ("fp8", "full", 8192)


def test_gptfast_rows_at_their_330_w_limit_do_not_move():
    """gpt-fast's A100s were power-limited to 330 W (the rows' notes): its three rows are batch-1
    decode, memory-bound (the weights streamed), so the power limit rule (compute-bound kernels only,
    symllm.costs.power.power_fraction: 0.954 at 330 W of 400) leaves their expected times as they are."""
    for rid in ("gptfast-llama2-7b-a100-bf16-b1", "gptfast-llama2-7b-a100-int4-b1", "gptfast-llama2-70b-a100x8-tp8-bf16-b1"):
        row = next(r for r in ROWS if r["id"] == rid)
        o = options(row)
        rated = symllm.workload(row["model"], **o)["time"]["expected"]["decode_token_s"]
        assert symllm.workload(row["model"], **o, power_cap=330)["time"]["expected"]["decode_token_s"] == rated, rid


def test_megatron_bridge_tensor_parallel_rows_run_sequence_parallel():
    """Megatron-Bridge's Llama 3 70B (TP 4) and 405B (TP 8) rows: the recipes their performance script builds on
    (llama3_70b_pretrain_config, llama31_405b_pretrain_config in src/megatron/bridge/recipes/llama/llama3.py) set
    sequence_parallel = True with tp_comm_overlap; its TP 1 rows have no tensor ranks to split the sequence over."""
    for row in ROWS:
        if row["id"].startswith("megatron-bridge-llama"):
            o = options(row)
            assert o["sp"] is (o["tp"] > 1), row["id"]


def test_a_vllm_build_before_cuda_graphs_runs_eagerly():
    """The vLLM row of October 2023 (commit acbed3e, 2023-10-06) predates v0.2.6 (2023-12-17), vLLM's first
    release with CUDA graphs: it runs as vllm-v0.2 (eager decode, NCCL all-reduces); a row without a dated
    build, or dated after, runs vLLM's current conventions."""
    row = next(r for r in ROWS if r["id"] == "vllm-llama2-70b-a100pcie-x4-fp16-b1")
    assert engine(row) == "vllm-v0.2"
    assert engine({**row, "engine_version": "vLLM commit 1234567 (2024-02-01)"}) == "vllm"
    assert engine({**row, "engine_version": "vLLM 0.6.3"}) == "vllm"


def test_llm_foundry_mfu_reproduces_its_published_figure():
    """llm-foundry's formula at the 4,641 tokens/s per GPU its A100 table prints gives its 64.23% to 0.2%: the
    mpt-7b preset's 6,649,286,656 parameters in N, where its benchmark model has 6,658,859,008 (the row's notes:
    vocabulary 50368, a 2048-position embedding and biases), 0.14% more of N."""
    row = next(r for r in ROWS if r["id"] == "llm-foundry-mpt-7b-a100x8-bf16-mfu")
    assert abs(source_mfu(row, {"training_tokens_per_s_per_gpu": 4641}) / row["value"] - 1) < 0.002


#: DeepGEMM's dense FP8 GEMMs on an H800 SXM5 (the H100 SXM's SMs, clocks and 3.35 TB/s), kernel-timed (its
#: tests' bench_kineto: no host dispatch in the time), as its README published them at 78cacf7 (2025-02-26):
#: M -> the six DeepSeek-V3 shapes' TFLOPS (N x K 2112 x 7168, 24576 x 1536, 32768 x 512, 7168 x 16384,
#: 4096 x 7168, 7168 x 2048)
DEEPGEMM_H800 = {64: (206, 289, 219, 336, 287, 295), 128: (352, 535, 358, 645, 533, 510),
                 4096: (1058, 990, 590, 1358, 1304, 1025)}


def test_small_m_gemms_do_not_close_the_trtllm_70b_row(monkeypatch):
    """The 70B TP2 row's decode steps run fp8 GEMMs of about 240 rows, where the gemm.fp8 table (timed one
    eager call at a time: the host's dispatch sits in it) reads 0.196 of the peak. TensorRT-LLM replays them from
    CUDA graphs and calls cuBLASLt (its FP8 linear: torch.ops.trtllm.cublas_scaled_mm, the library torch's
    _scaled_mm calls), whose kernel-only times at small M are not published. A bound: at the fastest published
    kernel-timed FP8 GEMMs (DeepGEMM's, the median of its six shapes, 0.146, 0.264 and 0.526 of 1,978.9 TFLOP/s
    at M 64, 128 and 4,096, log-interpolated as the table is, kept where faster than the table) the row is still
    more than 5% under the published 4,205 tokens/s; the 8B rows move by under 1%, the NIM rows not at all."""
    import math
    from symllm.costs import figures
    medians = {m: sorted(v)[2:4] for m, v in DEEPGEMM_H800.items()}
    kernel = {m: (a + b) / 2 / 1978.9 for m, (a, b) in medians.items()}
    assert [round(kernel[m], 3) for m in (64, 128, 4096)] == [0.146, 0.264, 0.526]

    def at(m):  # log2-linear between the published points, as figures.interpolate
        (m0, y0), (m1, y1) = [(a, kernel[a]) for a in (128, 4096)] if m > 128 else [(64, kernel[64]), (128, kernel[128])]
        return y0 + (y1 - y0) * (math.log2(m) - math.log2(m0)) / (math.log2(m1) - math.log2(m0))
    ids = [r["id"] for r in ROWS if r["engine"] in ("trtllm", "nim")]
    before = {r["id"]: v for r, v, _ in predictions() if r["id"] in ids}
    table = [[m, str(max(float(v), at(m)))] for m, v in figures.data()["gemm"]["fp8"]]
    monkeypatch.setitem(figures.data()["gemm"], "fp8", table)
    after = {r["id"]: (v, r["value"]) for r, v, _ in predictions() if r["id"] in ids}
    value, published = after["trtllm-llama3.3-70b-h100x2-fp8-tp2-1000-1000"]
    assert value / published - 1 < -0.05
    for rid in ids:
        if rid != "trtllm-llama3.3-70b-h100x2-fp8-tp2-1000-1000":
            assert after[rid][0] / before[rid] - 1 == pytest.approx(0, abs=0.01), rid


@pytest.fixture(scope="module")
def predicted() -> list[tuple[dict, float | None, str]]:
    """predictions(), computed once for the tests that read them unpatched."""
    return predictions()


def summary(rows: list[tuple[dict, float | None, str]]) -> dict[str, tuple[int, float, float]]:
    """Each of GROUPS' rows and "all" of them: (rows predicted, median |error|, worst |error|), the figures
    docs/efficiency.md's table under "Checked against published runs" prints."""
    errors = [(row["kind"], abs(_error(row, value))) for row, value, _ in rows if value is not None]
    out = {}
    for group, members in [*GROUPS.items(), ("all", None)]:
        part = sorted(e for kind, e in errors if members is None or kind in members)
        out[group] = (len(part), statistics.median(part), part[-1])
    return out


def test_expected_against_published_runs(predicted, capsys):
    """Predicted against measured, by row; the median and worst relative errors stay where they are today
    (docs/efficiency.md, "Checked against published runs")."""
    figures = summary(predicted)
    count, median, worst = figures.pop("all")
    with capsys.disabled():
        print(f"\n{'run':58} {'kind':31} {'published':>11} {'expected':>11} {'error':>7}")
        for row, value, why in predicted:
            if value is None:
                print(f"{row['id'][:58]:58} {row['kind']:31} {row['value']:>11.4g} {'-':>11} {why}")
                continue
            missing = f"  not modelled: {UNMODELLED[row['id']]}" if row["id"] in UNMODELLED else ""
            print(f"{row['id'][:58]:58} {row['kind']:31} {row['value']:>11.4g} {value:>11.4g} "
                  f"{_error(row, value):>+7.1%}{missing}")
        print(f"{count} rows predicted: median |error| {median:.1%}, worst {worst:.1%}")
        for group, (n, med, top) in figures.items():
            print(f"  {group}: {n} rows, median {med:.1%}, worst {top:.1%}")
    for group, (_, med, top) in figures.items():
        assert med <= BOUNDS[group][0] and top <= BOUNDS[group][1], group
    assert count >= 25
    assert median <= MEDIAN and worst <= WORST


ROOT = Path(__file__).resolve().parent.parent
VIEW = ROOT / "tests" / "data" / "published_runs.md"
#: docs/efficiency.md's summary table: a row's label (its text before the parenthesis) -> summary()'s group
LABELS = {"inference": "inference", "serving under load": "serving", "KV capacity": "memory",
          "training": "training", "all": "all"}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def test_the_docs_summary_table_is_the_computed_one(predicted):
    """docs/efficiency.md's table under "Checked against published runs" prints, for each group and for all,
    the rows predicted, the median and the worst |error| that summary() computes, at its 0.1%."""
    text = (ROOT / "docs" / "efficiency.md").read_text(encoding="utf-8")
    section = text.split("\n## Checked against published runs\n", 1)[1].split("\n## ", 1)[0]
    lines = section[section.index("\n|") + 1:].split("\n\n", 1)[0].splitlines()  # the section's first table
    assert _cells(lines[0]) == ["rows", "predicted", "median error", "worst"]
    table = {_cells(line)[0].split(" (")[0]: _cells(line)[1:] for line in lines[2:]}
    assert sorted(table) == sorted(LABELS)
    figures = summary(predicted)
    for label, group in LABELS.items():
        count, median, worst = figures[group]
        assert table[label] == [str(count), f"{median:.1%}", f"{worst:.1%}"], label


def test_the_docs_count_the_published_measurements_there_are():
    """Every "N published measurements" or "N published runs" in README.md, docs/*.md and the table's view
    is the JSON's count of rows; docs/efficiency.md and the view state it."""
    found = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), VIEW]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        found[page.name] = [int(n) for n in re.findall(r"\b(\d+) published (?:measurements|runs)\b", text)]
    assert found["efficiency.md"] and found["published_runs.md"], found
    assert {name: n for name, n in found.items() if set(n) - {len(ROWS)}} == {}, len(ROWS)


def test_the_view_lists_each_row_once_as_the_json_has_it():
    """tests/data/published_runs.md lists every JSON row once, by its id, and no other: with its engine
    (and version), GPU and count, model, precision, kind and value, and preset as the JSON has them."""
    lines = [_cells(line) for line in VIEW.read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    ids = [cells[0].strip("`") for cells in lines]
    assert sorted(ids) == sorted(row["id"] for row in ROWS)  # each once, no other
    view = dict(zip(ids, lines))
    for row in ROWS:
        _, engine_, gpu, model, precision, _, _, figure, preset, _ = view[row["id"]]
        version = f" ({row['engine_version']})" if row.get("engine_version") else ""
        assert engine_ == row["engine"] + version, row["id"]
        assert (gpu, model, preset) == (f"{row['gpu']} x {row['gpus']}", row["model"],
                                        "yes" if row["preset"] else "no"), row["id"]
        kv = f", kv {row['kv']}" if row["kv"] else ""
        assert precision == f"w {row['weights']}, compute {row['compute']}{kv}", row["id"]
        kind, _, value = figure.partition(" = ")
        assert (kind, float(value.split(" ")[0])) == (row["kind"], row["value"]), row["id"]


GROUPS = {"inference": ("decode_tokens_per_s", "itl_s", "ttft_s", "prefill_s"),
          "serving": ("serving_output_tokens_per_s",),
          "memory": ("kv_cache_tokens",),
          "training": ("training_tokens_per_s_per_gpu", "mfu")}
#: where the errors stand on 2026-11-28 (issue 40 asks for a median under 15% and a worst under 35%: met by
#: the serving, memory and training rows (serving's worst, TensorRT-LLM's 70B TP2, -19.8% since its prompts run in
#: the decode step's forward, -27.4% before), and by every group's median; not by the inference group's worst
#: row (memory's worst is now SGLang's Qwen3-235B TP4 cache, +10.7% since SGLang's own rule was read,
#: engine_memory: +6.2% when it was read as vLLM's; then vLLM V0's RTX 3090 cache at 29,000 tokens, +9.1%; vLLM V1's
#: Qwen3-235B TP4 cache,
#: +88% before vLLM V1's dummy sampler run and its NCCL communicators were counted, is +2.6%; inference's is
#: vLLM of October 2023 on eight PCIe A100s, +59% (+63% before its host's work beyond the layers, step_host), a
#: held-out row added with its four-GPU row's table (that row +31%, +34% before step_host, +78% before a
#: torch.distributed call's host time, kernel.collective_host_s, +85% before its Ray round
#: trip and its eager all-reduces' launches were counted; the held-out rows raised the median from 5.6% to 7.1%);
#: training's is Megatron-Bridge's GPT-OSS-120B, +18.3% (+19.1% before its head-64 core read the head-64 figures;
#: median 4.9% to 5.2% as the causal backward sped FlashAttention-2's rows), since the training attention core ran at its kernel's rates
#: (symllm.costs.attention_training; median 7.9% to 4.9%, torchtitan's 8B on 128 H100s +23.5% to +16.6%); before it
#: torchtitan's 8B on 128 H100s, +23.5% (+27.3% before op checkpointing's element-wise rerun, +29.1%
#: before AdamW's and FSDP2's copy-out passes: symllm.costs.step_passes; its compiled FP8 8B on 8 H100s +17.8%,
#: +31.9% before both), since FP8's quantization launches on a dropless
#: MoE layer's floor took Megatron-Bridge's Qwen3-30B-A3B rows from +42% (26.02) and +38% (25.11) to +2.0% and
#: -1.2%, GPT-OSS-120B (BF16) staying +18% (+117%, +110% and +45% before a dropless layer's measured floor,
#: moe.layer_floor; the 25.11 row +148% before it was read at its branch's MBS 1 and VP 12, not the table's copied
#: MBS 2 and VP 24: the row's notes); the training median is 9.1%, 10.2% before FP8's launches on the floor,
#: 12.3% before the attention core ran on its causal kernel's tiles):
#: docs/efficiency.md says which rows and why)
MEDIAN, WORST = 0.10, 0.64
#: training's from (0.06, 0.20) on 2026-11-29: the tensor-parallel overlap the five TP rows ran (symllm.costs.tp_overlap,
#: derived from the engines' source, no figure fitted) moved torchtitan's async-TP rows up to +13%, +18% and +21%; then
#: torchtitan's float8 all-gathers (torchao's Float8 tensor parallelism: fp8_tp_all_gathers) to +17.6%, +19.1% and
#: +22.1%, and the 70B's pair without async TP (829 TPS/GPU, +11.3%) joined: median 6.4% to 7.4%, worst 20.9% to 22.1%
BOUNDS = {"inference": (0.08, 0.64), "serving": (0.10, 0.20), "memory": (0.075, 0.11), "training": (0.075, 0.23)}
