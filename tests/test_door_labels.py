"""What each door's labels say, as a new user reads them (issue 40: "count, plan, reports and plots show expected
times beside bounds", every door one answer): a cache sized by the context shows the most sequences count's
verdict points at; ``--tp-overlap`` is named where it moves an expected step (report, plan) and warned of where
it cannot apply (no ``--sp``; a serving plan), as Megatron-LM refuses ``--tp-comm-overlap`` without
``--sequence-parallel`` (megatron/training/arguments.py: "Tensor parallel communication/GEMM overlap can happen
only when sequence parallelism is enabled").

Expected figures are hand arithmetic written out here, or the number another door gives for the same input.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

from symllm.cli import main

GIB = 2 ** 30
N_8B = 8_030_261_248  # Llama-3.1-8B's parameters (Meta's 8.03B; symllm count llama3.1-8b)


def _run(capsys, *argv) -> tuple[str, str]:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_cache_sized_by_the_context_shows_the_sequences_the_verdict_names(capsys):
    """llama.cpp on an RTX 4090 (24 GiB) serving Llama-3.1-8B at 2,048 tokens: its cache holds n_ctx cells of
    2 (K, V) x 32 layers x 8 heads x 128 x 2 bytes = 131,072 bytes a token, 268,435,456 a sequence; beside the bf16
    weights (2 x 8,030,261,248 = 16,060,522,496 bytes) and the engine's activation and non-torch memory the card
    holds floor(room / 268,435,456) sequences. count's verdict said "llama.cpp's KV cache holds 33 (serving,
    below)" while the section below showed only the one sequence --batch 1 sizes: the row it points at is there."""
    opts = ["count", "llama3.1-8b", "--gpu", "rtx4090", "--engine", "llama.cpp", "--serve"]
    cap = json.loads(_run(capsys, *opts, "--json")[0])["serving"]
    assert cap["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2 == 131_072
    assert cap["weights"] == 2 * N_8B and cap["memory"] == 24 * GIB
    room = 24 * GIB - 2 * N_8B - cap["activation_peak"] - cap["non_torch"]
    most = int(room // (2048 * 131_072))
    assert cap["most_sequences"] == most and most > cap["batch"] == 1
    text = _run(capsys, *opts)[0]
    assert f"llama.cpp's KV cache holds {most:,} (serving, below)" in " ".join(text.split())
    assert re.search(rf"^most sequences the card holds +{most:,} +of 2,048 tokens each", text, re.M), text


def test_tp_overlap_without_sp_or_a_training_step_warns(capsys):
    """--tp-overlap overlaps the all-gathers and reduce-scatters of --sp: without --sp (or without a GPU to time
    on, or in a serving plan) it moves nothing, and says so in one warning line; the numbers stay those without it."""
    base = ["count", "llama3.1-8b", "--tp", "8", "--gpu", "h100-sxm", "--engine", "megatron", "--json"]
    off, err = _run(capsys, *base)
    on, err_on = _run(capsys, *base, "--tp-overlap")
    assert err == "" and json.loads(on)["time"] == json.loads(off)["time"]
    assert err_on.strip() == "symllm: warning: --tp-overlap does not apply without --sp (ignored)"
    _, err = _run(capsys, *base, "--sp", "--tp-overlap")
    assert err == ""
    _, err = _run(capsys, "count", "llama3.1-8b", "--tp", "8", "--sp", "--tp-overlap")
    assert err.strip() == "symllm: warning: --tp-overlap does not apply without --gpu (ignored)"
    _, err = _run(capsys, "plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--tp-overlap", "--top", "1")
    assert err.strip() == "symllm: warning: --tp-overlap does not apply without --train (ignored)"


def test_report_and_plan_name_the_tp_overlap_they_time(capsys):
    """report's training step under --tp-overlap is count's overlapped expected step, and says it is overlapped
    (count's layout line does: "sp, TP overlap"); plan --train says its sp rows are; neither says so without."""
    lay = ["llama3.1-8b", "--tp", "8", "--sp", "--gpu", "h100-sxm", "--engine", "megatron"]
    step = json.loads(_run(capsys, "count", *lay, "--tp-overlap", "--json")[0])["time"]["expected"]["training_step_s"]
    rep = _run(capsys, "report", *lay, "--tp-overlap")[0]
    assert f"expected {step:.4g} s" in rep and "(megatron, TP overlap) |" in rep
    assert "TP overlap" not in _run(capsys, "report", *lay)[0]
    plan = ["plan", "llama3-8b", "--gpus", "8xh100-sxm", "--train", "--engine", "megatron", "--global-batch", "16",
            "--seq", "4096", "--top", "3"]
    said = "the sp rows' tensor-parallel collectives overlapped with their GEMMs (TP overlap)"
    assert said in " ".join(_run(capsys, *plan, "--tp-overlap")[0].split())
    assert "TP overlap" not in _run(capsys, *plan)[0]
    # a mixture overlaps its attention sublayer only (TE's GroupedLinear takes no userbuffers): plan says what
    # count's layout line says (symllm.present.format.overlap_words), not a whole block's overlap
    moe = ["plan", "qwen3-30b-a3b", *plan[2:], "--tp-overlap"]
    assert "overlapped with their GEMMs (TP overlap: attention only)" in " ".join(_run(capsys, *moe)[0].split())


def test_plan_help_says_every_batch_is_tried(capsys):
    """plan --concurrency's help said batches 1, 2, 4, ... were tried; plan tries every batch up to it: with
    --concurrency 3 on one H100 Llama-3.1-8B's row is batch 3, batches 1 and 2 folded into it (the weights,
    2 x 8,030,261,248 bytes, and three sequences' cache fit an 80 GiB card), batch 3 not a power of two."""
    rows = json.loads(_run(capsys, "plan", "llama3.1-8b", "--gpus", "1xh100-sxm", "--concurrency", "3",
                           "--json")[0])["rows"]
    assert [(r["batch"], r["batches"]) for r in rows if (r["tp"], r["pp"]) == (1, 1)] == [(3, [1, 3])]  # (folded)
    help_text = subprocess.run([sys.executable, "-m", "symllm", "plan", "--help"], capture_output=True, text=True,
                               check=True).stdout
    assert "every batch 1, 2, 3, ... up to it" in " ".join(help_text.split())


def test_max_num_batched_tokens_where_the_engine_sizes_its_own_working_set(capsys):
    """llama.cpp reserves its compute buffer for one micro-batch of n_ubatch tokens (512 by default: llama.cpp
    common/common.h, ``int32_t n_ubatch = 512``), whatever --max-num-batched-tokens says: the option changed none of
    its numbers and said nothing, then said "ignored" though it is llama.cpp's n_batch (llama_context's constructor:
    n_ubatch = min(n_batch, n_ubatch); llama-server's tokens a step). Now one warning line says so and names the 512
    tokens it holds; vLLM, whose profile run is max_num_batched_tokens, takes it without one."""
    base = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--seq", "1000", "--gen", "100",
            "--concurrency", "4", "--json"]
    off = json.loads(_run(capsys, *base, "--engine", "llama.cpp")[0])["serving"]
    out, err = _run(capsys, *base, "--engine", "llama.cpp", "--max-num-batched-tokens", "1024")
    on = json.loads(out)["serving"]
    # above n_ubatch it is llama.cpp's n_batch, not "ignored": the step's 1,024 tokens under load (2,048 without)
    assert err.strip() == "symllm: warning: --max-num-batched-tokens 1,024 is llama.cpp's n_batch: micro-batches of 512"
    assert on["activation_peak"] == off["activation_peak"] and on["load"]["ttft_s"] == off["load"]["ttft_s"]
    assert (off["load"]["max_num_batched_tokens"], on["load"]["max_num_batched_tokens"]) == (2048, 1024)
    # gpt-fast's static batch runs each prompt whole whatever the budget: there it is ignored
    _, err = _run(capsys, *base, "--engine", "gpt-fast", "--max-num-batched-tokens", "4096")
    assert err.strip() == ("symllm: warning: --max-num-batched-tokens ignored: gpt-fast holds its own working set "
                           "(1,000 tokens)")
    out, err = _run(capsys, *base, "--engine", "vllm", "--max-num-batched-tokens", "1024")
    assert err == "" and json.loads(out)["serving"]["profile_tokens"] == 1024
