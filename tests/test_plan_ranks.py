"""Issue 40: plan gives the answer count gives and ranks by what a user plans with.

* its best rows are ranked by the expected time (``symllm.studies.ranks``), each checked against ``workload()``'s
  ``time.expected`` at every fitting layout (the other door), the rows past them by the bound;
* a serving plan refuses a training engine as ``count --serve`` does (one line, exit 2, the same text);
* a serving plan takes ``count --serve``'s options, and its row at a layout is ``count --serve``'s answer with
  the same options (KV sequences, time under load).
"""
import json
import math
from fractions import Fraction

import pytest

import symllm
from symllm.errors import SymllmError
from symllm.studies import plans, ranks


def _expected_step(model, row, options):
    """workload()'s expected training step at a plan row's layout: the other door, not the plan's."""
    w = symllm.workload(model, batch=row["batch"], tp=row["tp"], pp=row["pp"], dp=row["dp"], ep=row["ep"],
                        sp=row["sp"], zero_stage=row["zero"], recompute=row["recompute"],
                        micro_batches=row["accum"], **options)
    return w["time"]["expected"]["training_step_s"]


def test_rank_reads_rows_in_the_bounds_order_and_stops_past_the_best():
    """By hand: bounds 1, 2, 3, 4 s with expected 3.5, 2.5, 3.2, 9 s and the best 2: the 4 s row's bound is past
    the 2nd best expected time (3.2 s), so it is never read; the ranking is 2.5, 3.2, then by the bound 1, 4.
    Serving: the most tokens/s first, bounds 100, 90, 50 with expected 60, 80, 40 and the best 1: after two rows
    the 50 tokens/s bound is below 80, not read."""
    rows = [{"step_s": s, "e": e} for s, e in ((1, 3.5), (2, 2.5), (3, 3.2), (4, 9))]
    read = []

    def expect(r):
        read.append(r["step_s"])
        return {"training_step_s": r["e"]}
    got = ranks.rank(rows, True, expect, best=2)
    assert read == [1, 2, 3]
    assert [r["step_s"] for r in got] == [2, 3, 1, 4]
    assert [("expected" in r) for r in got] == [True, True, False, False]
    read.clear()
    rows = [{"tokens_per_s": b, "e": e} for b, e in ((100, 60), (90, 80), (50, 40))]
    got = ranks.rank(rows, False, lambda r: read.append(r["tokens_per_s"]) or {"tokens_per_s": r["e"]}, best=1)
    assert read == [100, 90] and [r["tokens_per_s"] for r in got] == [90, 100, 50]


def test_training_plan_ranks_its_best_rows_by_workloads_expected_step():
    """Llama-3.1-8B on 8 H100s, global batch 8 x 4,096: workload()'s expected step at every fitting layout, sorted,
    gives the plan's best ten in order (exact, though plan reads only the rows its bound cannot rule out); the
    rows past them follow by the bound."""
    opts = {"gpu": "h100-sxm", "seq": 4096}
    p = plans.plan("llama3.1-8b", 8, training=True, global_batch=8, **opts)
    k = ranks.EXPECTED_ROWS
    assert len(p.rows) > 2 * k
    every = sorted(_expected_step("llama3.1-8b", r, opts) for r in p.rows)
    top = [r["expected"]["training_step_s"] for r in p.rows[:k]]
    assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(top, every[:k]))
    rest = [r["step_s"] for r in p.rows[k:]]
    assert rest == sorted(rest) and not any("expected" in r for r in p.rows[k:])


@pytest.mark.parametrize("model, options", [
    ("qwen3-30b-a3b", {}),  # 128 routed experts, Megatron's dropless layers synced: the MoE floors
    ("llama3.1-8b", {"tp_overlap": True, "engine": "torchtitan"}),  # a dense model, its blocks' collectives overlapped
])
def test_plans_ranking_is_every_rows_expected_step_sorted(monkeypatch, model, options):
    """The pruning never drops the true best: on 8 H100s, global batch 8 x 4,096, workload()'s expected step at
    every fitting layout and micro-batch split (count's door, one row at a time, none skipped), sorted (ties in the
    bound's order), each layout's first kept (one row a layout), gives the plan's best ten rows, the same layouts at
    the same splits in the same order; every row's floor (ranks.floors, by which plan passes a row over unread) is
    at or below that step; and plan read fewer rows than fit."""
    opts = {"gpu": "h100-sxm", "seq": 4096, **options}
    seen, read = {}, []
    real = ranks.rank

    def spy(rows, training, expect, best=ranks.EXPECTED_ROWS, floor=None, layout=None):
        seen.update(rows=list(rows), floor=floor)  # the bound's order, as plan hands them over
        return real(rows, training, lambda r: read.append(r) or expect(r), best, floor, layout)
    monkeypatch.setattr(ranks, "rank", spy)
    p = plans.plan(model, 8, training=True, global_batch=8, **opts)
    k, layout = ranks.EXPECTED_ROWS, (lambda r: tuple(r[c] for c in plans._KEYS))
    steps = [_expected_step(model, r, opts) for r in seen["rows"]]
    for r, step in zip(seen["rows"], steps):
        assert seen["floor"](r) <= step * (1 + 1e-12), layout(r)
    best, shown = [], set()  # each layout's best split, the layouts in the order of their best
    for i in sorted(range(len(steps)), key=lambda i: (steps[i], i)):
        at = tuple(seen["rows"][i][c] for c in ("tp", "pp", "dp", "ep", "sp", "zero", "recompute"))
        if at not in shown:
            shown.add(at)
            best.append(i)
    best = best[:k]
    assert [layout(seen["rows"][i]) for i in best] == [layout(r) for r in p.rows[:k]]
    assert all(math.isclose(r["expected"]["training_step_s"], steps[i], rel_tol=1e-12) for r, i in zip(p.rows, best))
    assert k <= len(read) < len(seen["rows"])


def test_the_70b_plan_on_32_h100s_puts_the_best_expected_step_first(cli):
    """The issue's case: `plan llama3.1-70b --gpus 32xh100-sxm --train --tp-overlap`. By the bound tp 4 pp 4 came
    first (1.33 s) though expected at 2.09 s; ranked by the expected step, the first row is count's best expected
    step among the plan's rows, each checked through count --json at its layout."""
    r = cli(["plan", "llama3.1-70b", "--gpus", "32xh100-sxm", "--train", "--tp-overlap", "--json", "--top", "12"])
    assert r.code == 0
    rows = json.loads(r.out)["rows"]
    steps = [x["expected"]["training_step_s"] for x in rows if "expected" in x]
    assert len(steps) == ranks.EXPECTED_ROWS and steps == sorted(steps)
    first, fastest_bound = rows[0], min(rows, key=lambda x: x["step_s"])
    assert fastest_bound["step_s"] < first["step_s"]  # the bound alone would have put another row first
    for row in (first, rows[ranks.EXPECTED_ROWS - 1]):
        c = cli(["count", "llama3.1-70b", "--gpu", "h100-sxm", "--seq", "2048", "--tp-overlap", "--json",
                 "--batch", str(row["batch"]), "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--dp", str(row["dp"]),
                 "--zero", str(row["zero"]), "--micro-batches", str(row["accum"])]
                + (["--sp"] if row["sp"] else []) + (["--recompute"] if row["recompute"] else []))
        assert c.code == 0, c.err
        got = json.loads(c.out)["time"]["expected"]["training_step_s"]
        assert math.isclose(got, row["expected"]["training_step_s"], rel_tol=1e-9)
    assert (first["tp"], first["pp"], first["dp"], first["sp"]) == (4, 1, 8, True)  # docs/plan.md's example


def test_serving_plan_ranks_by_expected_tokens_per_s():
    """Serving Llama-3.1-8B on 2 H100s up to 16 sequences a replica: one row a layout (tp 1 dp 2, tp 2, tp 1 pp 2),
    each at the largest batch (16: all fit), its batches 1 to 16 folded into it; workload()'s expected tokens/s at
    the decode point (one token a sequence at context s + n) at every batch of every layout is at most the row's
    (the largest batch is the layout's best, as docs/plan.md says), and the rows are those bests, the most first."""
    opts = {"gpu": "h100-sxm", "seq": 1000, "gen": 100}
    p = plans.plan("llama3.1-8b", 2, concurrency=16, **opts)

    def expected(r, batch):
        w = symllm.workload("llama3.1-8b", batch=batch, tp=r["tp"], pp=r["pp"], dp=r["dp"], ep=r["ep"],
                            gpu="h100-sxm", seq=1, gen=0, context=1100)
        return w["time"]["expected"]["tokens_per_s"]
    assert sorted((r["tp"], r["pp"], r["dp"]) for r in p.rows) == [(1, 1, 2), (1, 2, 1), (2, 1, 1)]
    assert all(r["batch"] == 16 and r["batches"] == [1, 16] for r in p.rows) and p.fit == 48
    for r in p.rows:
        every = [expected(r, b) for b in range(1, 17)]
        assert math.isclose(r["expected"]["tokens_per_s"], max(every), rel_tol=1e-9), r
    top = [r["expected"]["tokens_per_s"] for r in p.rows]
    assert top == sorted(top, reverse=True)


@pytest.mark.parametrize("engine", ["megatron", "torchtitan"])
def test_a_serving_plan_refuses_a_training_engine_as_count_does(cli, engine):
    """count --serve --engine megatron: exit 2, one line; plan (serving) the same line, through the same check."""
    count = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", engine])
    plan = cli(["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--engine", engine])
    assert count.code == plan.code == 2
    assert plan.err == count.err and plan.err.count("\n") == 1
    assert f"engine: {engine} trains only" in plan.err
    with pytest.raises(SymllmError, match=f"^engine: {engine} trains only"):
        plans.plan("llama3.1-8b", 8, "h100-sxm", engine=engine)
    assert plans.plan("llama3.1-8b", 8, "h100-sxm", training=True, global_batch=8, engine=engine).rows  # trains


def test_plan_refuses_serving_options_as_count_does(cli):
    """A serving option's bad value: the same one line at both doors; with --train, refused (it serves nothing)."""
    for opt in (["--gpu-memory-utilization", "1.5"], ["--non-torch-memory", "-1"], ["--max-num-seqs", "0"]):
        count = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", *opt])
        plan = cli(["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", *opt])
        assert count.code == plan.code == 2 and plan.err == count.err and plan.err.count("\n") == 1, opt
    r = cli(["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--train", "--max-num-seqs", "8"])
    assert r.code == 2 and r.err.startswith("symllm: error: max_num_seqs: applies to serving") and \
        r.err.count("\n") == 1


SERVE_OPTIONS = ["--gpu-memory-utilization", "0.5", "--max-num-batched-tokens", "4096", "--max-num-seqs", "64",
                 "--non-torch-memory", "1.5"]


def test_plans_serving_row_is_count_serves_answer_with_the_same_options(cli):
    """Llama-3.1-8B on one H100, prompt 1,000 + 100 generated, vLLM at gpu_memory_utilization 0.5, a 4,096-token
    profile, 64 sequences at most, 1.5 GiB outside torch: plan's sequences are count --serve's KV tokens over the
    context (whole sequences), its best row's time under load is count --serve --concurrency B's, and the options
    moved the answer (the defaults hold more)."""
    work = ["--seq", "1000", "--gen", "100"]
    count = json.loads(cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--json", *work,
                            *SERVE_OPTIONS]).out)["serving"]
    r = cli(["plan", "llama3.1-8b", "--gpus", "1xh100-sxm", "--concurrency", "64", "--json", *work, *SERVE_OPTIONS])
    assert r.code == 0, r.err
    p = json.loads(r.out)
    held = count["kv_tokens"] // count["context"]
    assert count["context"] == 1100 and count["non_torch"] == 1.5 * 2 ** 30
    assert p["sequences"] == {"tp 1": held}
    assert max(x["batch"] for x in p["rows"]) == min(held, 64)
    default = plans.plan("llama3.1-8b", 1, "h100-sxm", seq=1000, gen=100, concurrency=64)
    assert default.sequences["tp 1"] > held
    best = next(x for x in p["rows"] if "load" in x)
    load = json.loads(cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--json", *work, *SERVE_OPTIONS,
                           "--concurrency", str(best["batch"])]).out)["serving"]["load"]
    for k in ("ttft_s", "itl_s", "output_tokens_per_s"):
        assert math.isclose(best["load"][k], load[k], rel_tol=1e-9), k


def test_a_workload_without_the_largest_batch_search_keeps_every_other_answer():
    """workload(largest=False), what plan's ranking reads at each row: the same time group, expected times and all,
    less the largest batch, context and sequence that fit (a search each), for a mixture at a layout and a dense
    model on one GPU."""
    searched = {"max_batch", "max_context", "training_max_batch", "training_max_seq", "max_context_past_window"}
    for model, layout in (("qwen3-30b-a3b", dict(tp=2, dp=4, ep=4, zero_stage=2, micro_batches=2)),
                          ("llama3.1-8b", {})):
        full = symllm.workload(model, gpu="h100-sxm", seq=4096, **layout)
        lean = symllm.workload(model, gpu="h100-sxm", seq=4096, largest=False, **layout)
        assert searched <= set(full["time"]) and not searched & set(lean["time"])
        assert lean["time"] == {k: v for k, v in full["time"].items() if k not in searched}
        assert {k: v for k, v in lean.items() if k != "time"} == {k: v for k, v in full.items() if k != "time"}


@pytest.mark.parametrize("training", [False, True])
def test_a_plans_rows_are_distinct_layouts(training):
    """Issue 40's new-user pass: `plan llama3.1-70b --gpus 8xh200` showed tp 2 dp 4 at batches 169, 168, ..., 160 and
    no other layout. One row a layout now (serving: tp, pp, dp, ep; training: and sp, zero, recompute), the others
    folded: the batches enumerated and fitting are still counted (``fit``), each row's ``batches`` the least and most
    of its layout's, its own among them; the serving plan's first is tp 2 dp 4 at 171 (vLLM's KV cache at tp 2,
    ``sequences``, with a dense model's two NCCL communicators: by hand below), its second another layout."""
    opts = {"training": True, "global_batch": 16, "seq": 8192} if training else {}
    p = plans.plan("llama3.1-70b", 8, "h200", **opts)
    keys = ("tp", "pp", "dp", "ep") + (("sp", "zero", "recompute") if training else ())
    layouts = [tuple(r[k] for k in keys) for r in p.rows]
    assert len(layouts) == len(set(layouts)) > 1 and p.fit > len(p.rows)
    assert p.fit + sum(p.dropped.values()) == p.layouts
    assert all(r["batches"][0] <= r["batch"] <= r["batches"][1] for r in p.rows)
    if not training:
        assert (p.rows[0]["tp"], p.rows[0]["dp"], p.rows[0]["batch"]) == (2, 4, p.sequences["tp 2"]) == (2, 4, 171)
        assert p.rows[0]["batches"] == [1, 171] and p.rows[1]["tp"] != 2
        assert _vllm_sequences_70b_tp2_h200(communicators=2) == 171


def _vllm_sequences_70b_tp2_h200(communicators: int) -> int:
    """The 2,048-token sequences vLLM's KV cache holds for Llama-3.1-70B on an H200 at tp 2, by hand from its
    config.json (80 layers, hidden 8,192, intermediate 28,672, 64 query and 8 KV heads of 128, vocabulary 128,256,
    untied head; bf16): a rank's weights (the linears, embedding and head over 2, the norms whole); the activation
    peak vLLM V1's dummy sampler run (vllm serve's 1,024 rows on an H100-class card, 38 bytes a logit, beside the
    profile's 8,192 tokens' and the rows' hidden states); non-torch vLLM's 0.35 GiB and ``communicators`` PyNccl
    communicators of 688 MiB (vLLM 0.33.0: the tensor group's and torch's for a dense model; 0.9.2 had a third, the
    expert group's); ⌊0.9·memory⌋ less those in blocks of 16 tokens of 163,840 bytes (80 layers x K and V x 4 KV
    heads a rank x 128 x 2 bytes), 128 blocks a sequence. Was 169 with three communicators: one 688 MiB fewer is
    275 blocks of 2,621,440 bytes more, 2 sequences."""
    from symllm.costs import serving
    d, f, layers, vocab = 8192, 28672, 80, 128256
    layer = (2 * d * d + 2 * d * 1024 + 3 * d * f) // 2 + 2 * d
    weights = 2 * (layers * layer + 2 * vocab * d // 2 + d)
    sampler = 1024 * vocab * 38 + (8192 + 2 * 1024) * d * 2
    non_torch = math.ceil(Fraction("0.35") * 2 ** 30) + communicators * 688 * 2 ** 20
    s = serving.capacity("llama3.1-70b", gpu="h200", tp=2, dp=4)
    assert (s["weights"], s["activation_peak"], s["kv_bytes_per_token"]) == (weights, sampler, 80 * 2 * 4 * 128 * 2)
    assert s["non_torch"] == math.ceil(Fraction("0.35") * 2 ** 30) + 2 * 688 * 2 ** 20
    pool = math.floor(Fraction(9, 10) * s["memory"]) - weights - sampler - non_torch
    return pool // (16 * 163_840) // (2048 // 16)


def test_one_communicator_fewer_is_two_more_sequences():
    """169 -> 171: the change in the serving plan's first row is one 688 MiB communicator (vLLM 0.33.0 builds no
    expert group's for a dense model), 721,420,288 bytes over a block's 2,621,440: 275 blocks of the 21,959."""
    assert _vllm_sequences_70b_tp2_h200(communicators=3) == 169
    assert 688 * 2 ** 20 // (16 * 163_840) == 275


def test_each_served_layouts_row_is_count_serves_answer_at_it(cli):
    """One answer: a serving plan with --gen of Llama-3.1-8B on 2 H100s, prompt 1,000 + 100, up to 64 a replica:
    every row (one a layout: tp 1 dp 2, tp 2, tp 1 pp 2) carries its time under load, and it is count --serve
    --concurrency B's at that layout and batch (one replica's output tokens/s)."""
    work = ["--seq", "1000", "--gen", "100"]
    p = json.loads(cli(["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--concurrency", "64", "--json", *work]).out)
    assert len(p["rows"]) == 3 and all("load" in r for r in p["rows"])
    for r in p["rows"]:
        flags = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--json", *work, "--tp", str(r["tp"]),
                 "--pp", str(r["pp"]), "--dp", str(r["dp"]), "--concurrency", str(r["batch"])]
        load = json.loads(cli(flags).out)["serving"]["load"]
        for k in ("ttft_s", "itl_s", "output_tokens_per_s"):
            assert r["load"][k] == load[k], (r["tp"], r["pp"], k)


def test_a_rows_load_says_one_replicas_output_and_all_replicas(cli):
    """plan --json's ``load.output_tokens_per_s`` is one replica's (count --serve --concurrency B's at the layout)
    while the row's ``tokens_per_s`` and the text's out/s are all replicas': the row of tp 1 dp 2 on 2 H100s
    (Llama-3.1-8B, 1,000 + 100 tokens, 64 a replica) says both, its ``replicas`` (2) and
    ``output_tokens_per_s_all_replicas`` = 2 x count's one replica, expected and bound, and the text's out/s is
    that all-replica figure."""
    work = ["--seq", "1000", "--gen", "100"]
    argv = ["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--concurrency", "64", *work]
    row = next(r for r in json.loads(cli([*argv, "--json"]).out)["rows"] if r["dp"] == 2)
    one = json.loads(cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--json", *work, "--dp", "2",
                          "--concurrency", str(row["batch"])]).out)["serving"]["load"]
    x = row["load"]
    assert x["replicas"] == 2 and x["output_tokens_per_s"] == one["output_tokens_per_s"]
    assert math.isclose(x["output_tokens_per_s_all_replicas"], 2 * one["output_tokens_per_s"], rel_tol=1e-12)
    assert math.isclose(x["bound"]["output_tokens_per_s_all_replicas"], 2 * one["bound"]["output_tokens_per_s"],
                        rel_tol=1e-12)
    line = next(t.split() for t in cli(argv).out.splitlines() if t.split()[1:4] == ["1", "1", "2"])
    assert line[-1] == f"{x['output_tokens_per_s_all_replicas']:,.0f}"


def test_a_lora_plan_says_its_step_counts_full_fine_tunings_flops(cli):
    """plan --train --lora-rank timed each step at full fine-tuning's FLOPs (the frozen weights' gradients kept) and
    did not say so, where count does. It now prints count's line, word for word (hardware.LORA_STEP, one source),
    and its --json names it; what the line says holds: a LoRA row's bound step is the full fine-tuning row's at the
    same layout and micro-batch split (Llama-3.1-8B on 2 H100s, ZeRO 3, full recomputation: a layout both fit)."""
    lora = ["--lora-rank", "16"]
    said = [t for t in " ".join(cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", *lora]).out.split()).split(". ")
            if t.startswith("LoRA: the training step counts")]
    assert len(said) == 1 and "full fine-tuning's FLOPs" in said[0]
    argv = ["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--train", "--top", "50"]
    assert said[0] in " ".join(cli([*argv, *lora]).out.split())
    assert "LoRA: the training step counts" not in cli(argv).out
    assert json.loads(cli([*argv, *lora, "--json"]).out)["training_step"].startswith("full fine-tuning's FLOPs")
    keys = ("tp", "pp", "dp", "sp", "zero", "recompute", "batch", "accum")
    full = {tuple(r[k] for k in keys): r for r in plans.plan("llama3.1-8b", 2, "h100-sxm", training=True).rows}
    adapted = {tuple(r[k] for k in keys): r for r in plans.plan("llama3.1-8b", 2, "h100-sxm", training=True,
                                                                  lora_rank=16).rows}
    both = set(full) & set(adapted)
    assert both and all(full[k]["step_s"] == adapted[k]["step_s"] for k in both)


def test_a_training_plan_refuses_a_concurrency_from_python_as_from_the_command_line(cli):
    """symllm.plan(..., training=True, concurrency=5) silently ignored the concurrency (the CLI refused it, its own
    copy of the rule); plan() refuses it now, with the line the command line prints (exit 2)."""
    line = "concurrency: applies to serving, not --train (training takes --global-batch)"
    with pytest.raises(SymllmError) as e:
        symllm.plan("llama3.1-8b", 8, "h100-sxm", training=True, concurrency=5)
    assert str(e.value) == line
    r = cli(["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--train", "--concurrency", "5"])
    assert r.code == 2 and line in r.err and "Traceback" not in r.err
