"""A new user's pass over the command line (issue 40's session 14): what a user typed that crashed, named the
wrong field or was silently ignored. Each case is the command that found it; the expected line names the
field and the value as typed (hand-written here), with exit status 2 and no traceback.
"""
from __future__ import annotations

import re

import pytest

from symllm.studies import plans


def _refused(r, line: str) -> None:
    assert "Traceback" not in r.err, r.err
    assert r.code == 2, (r.code, r.err)
    assert r.err == f"symllm: error: {line}\n", r.err


@pytest.mark.parametrize("argv, line", [
    # float("inf") has no Fraction: these were tracebacks (accelerators._given)
    (["--gpu", "h100-sxm", "--gpu-memory", "inf"], "gpu_memory: expected a positive number, got inf"),
    (["--gpu", "h100-sxm", "--gpu-flops", "1e400"], "gpu_flops: expected a positive number, got inf"),
    (["--gpu", "h100-sxm", "--gpu-bandwidth", "nan"], "gpu_bandwidth: expected a positive number, got nan"),
    # the value given is judged before the missing ones are asked for: this named gpu_bandwidth
    (["--gpu-memory", "-80"], "gpu_memory: expected a positive number, got -80.0"),
    # a price of inf passed the check (inf >= 0) and crashed the cost's Fraction
    (["--gpu", "h100-sxm", "--tokens", "1T", "--price", "inf"], "price: expected a non-negative number, got inf"),
])
def test_count_refuses_numbers_with_one_line(cli, argv, line):
    _refused(cli(["count", "llama3.1-8b", *argv]), line)


def test_plan_refuses_an_infinite_price(cli):
    _refused(cli(["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--train", "--tokens", "1T", "--price", "inf"]),
             "price: expected a non-negative number, got inf")


def test_plan_refuses_concurrency_under_train(cli):
    """--concurrency is serving's (every batch per replica up to it): under --train it was ignored without a
    word, as --global-batch without --train is refused (symllm.studies.plans)."""
    _refused(cli(["plan", "llama3.1-70b", "--gpus", "8xh200", "--train", "--concurrency", "5"]),
             "concurrency: applies to serving, not --train (training takes --global-batch)")


def test_plan_serving_tries_the_concurrency_given(cli):
    """Without --concurrency serving tries batches up to 256 a replica (docs/plan.md); with 5, up to 5."""
    import json
    rows = json.loads(cli(["plan", "llama3.2-1b", "--gpus", "1xh100-sxm", "--concurrency", "5", "--json"]).out)["rows"]
    assert max(r["batch"] for r in rows) == 5
    rows = json.loads(cli(["plan", "llama3.2-1b", "--gpus", "1xh100-sxm", "--json"]).out)["rows"]
    assert max(r["batch"] for r in rows) == 256


def test_a_comparison_warns_for_the_options_it_does_not_show(cli):
    """count of several models (a column each: symllm.costs.comparison.ROWS) has no serving or cost rows: --serve,
    its load and --tokens were dropped without a word."""
    r = cli(["count", "llama3.2-1b", "llama3.2-3b", "--gpu", "h100-sxm", "--serve", "--concurrency", "4",
             "--tokens", "1T"])
    assert r.code == 0
    assert r.err.startswith("symllm: warning: --serve, --concurrency, --tokens do not apply to a comparison "), r.err
    assert "ignored" in r.err
    r = cli(["count", "llama3.2-1b", "llama3.2-3b", "--gpu", "h100-sxm"])
    assert r.code == 0 and r.err == ""


@pytest.mark.parametrize("kind", ["context", "flops"])
def test_a_plot_warns_once_for_its_longest_context(cli, tmp_path, kind):
    """plot context / flops of qwen3-8b (40,960 positions trained) over 1k, 64k and 128k: one warning, for the
    longest (131,072), as a sweep warns (tests/test_findings.py); it warned once a context past the window."""
    pytest.importorskip("matplotlib")
    r = cli(["plot", kind, "qwen3-8b", "--contexts", "1024,65536,131072", "-o", tmp_path / "p.svg"])
    assert r.code == 0
    assert r.err == ("symllm: warning: seq + gen: 131,072 > 40,960 trained positions (counted: RoPE scaling can "
                     "run it)\n")


@pytest.mark.parametrize("argv, line", [
    # a flag of the other command: what this one takes (plan's --serve hint, issue 40's, for the others)
    (["count", "llama3.1-8b", "--train"],
     "unrecognized arguments: --train (count times training always; plan takes --train)"),
    (["count", "llama3.1-8b", "--gpus", "8xh100-sxm"],
     "unrecognized arguments: --gpus 8xh100-sxm (count takes --gpu; plan takes --gpus)"),
    (["plan", "llama3.1-8b", "--gpu", "h100-sxm"],
     "ambiguous option: --gpu (plan takes --gpus NxGPU, e.g. 8xh100-sxm)"),
    (["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--serve"],
     "unrecognized arguments: --serve (plan ranks serving layouts unless --train)"),
    # a typo: the nearest flag of the command
    (["count", "llama3.1-8b", "--tpp", "8"], "unrecognized arguments: --tpp 8 (did you mean --tp?)"),
    (["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--trian"],
     "unrecognized arguments: --trian (did you mean --train?)"),
    # nothing near enough: argparse's line alone (--serves is not --seq)
    (["count", "llama3.1-8b", "--zzzz"], "unrecognized arguments: --zzzz"),
    (["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--serves"], "unrecognized arguments: --serves"),
])
def test_a_flag_of_another_command_or_a_typo_says_what_was_meant(cli, argv, line):
    _refused(cli(argv), line)


@pytest.mark.parametrize("command", ["count", "verify", "report"])
def test_a_missing_path_is_a_missing_file_not_an_unknown_preset(cli, tmp_path, command):
    """A path that does not exist (spelt as one: absolute, ./) is the file count cannot read, as a missing
    x.json is; it was 'unknown preset', pointing at the preset list."""
    missing = tmp_path / "no-such-folder"
    _refused(cli([command, str(missing)]), "config: cannot read '.../no-such-folder': No such file or directory")
    _refused(cli([command, "./no-such-folder"]), "config: cannot read 'no-such-folder': No such file or directory")


def test_a_positional_s_unknown_choice_names_its_field_in_lower_case(cli, tmp_path):
    """plot's KIND and the COMMAND, misspelt: the field in the lower case every other field's name has
    (``model:``, ``gpu:``); they read ``KIND:`` and ``COMMAND:``."""
    _refused(cli(["plot", "contxt", "llama3.2-1b", "-o", tmp_path / "p.png"]),
             "kind: unknown 'contxt' (known: memory, context, flops, roofline, sweep)")
    assert cli(["cout", "llama3.2-1b"]).err.startswith("symllm: error: command: unknown 'cout' (known: count")


def test_a_training_plan_none_fits_says_how_many_would(cli):
    """plan llama3.1-8b --gpus 1xh100-sxm --train: no layout fits (AdamW's 16 bytes a parameter: 16 x
    8,030,261,248 = 119.66 GiB of training states on one 80 GiB card), and the plan said only that. It now names
    the fewest: ZeRO 3 over dp 2 leaves 59.83 GiB of states a GPU, room for one recomputed micro-batch. plan on 2
    finds that layout (tp 1, pp 1, dp 2 under ZeRO 3), one answer."""
    r = cli(["plan", "llama3.1-8b", "--gpus", "1xh100-sxm", "--train"])
    assert r.code == 0
    assert " ".join(r.out.split()).endswith(
        "No layout of 1 fits; the fewest h100-sxm whose training peak fits: 2 (tp 1, pp 1, dp 2, ZeRO 3, full "
        "recomputation; symllm.studies.plans.fewest_gpus).")
    assert 16 * 8_030_261_248 > 80 * 2**30 > 16 * 8_030_261_248 / 2
    rows = cli(["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--train", "--top", "50"]).out.splitlines()
    assert any(line.split()[1:6] == ["1", "1", "2", "no", "3"] for line in rows), rows
    assert "No layout" not in " ".join(rows)


#: Llama-3.1-405B's parameters from its config.json (126 layers of width 16,384, FFN 53,248, 128 query and 8 KV
#: heads of 128, vocabulary 128,256, untied): each layer 2 x 16,384^2 + 2 x 16,384 x 1,024 (attention) + 3 x 16,384
#: x 53,248 (MLP) + 2 x 16,384 (norms), the embedding and head 2 x 128,256 x 16,384, the final norm 16,384
PARAMS_405B = 126 * (2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384) + 2 * 128256 * 16384 + 16384


@pytest.mark.parametrize("gpus", ["8xh100-sxm", "4xrtx4090"])
def test_a_serving_plan_none_fits_says_the_weights_exceed_the_cards(cli, gpus):
    """plan llama3.1-405b on 8 H100s or 4 RTX 4090s: no layout serves a sequence, and the plan said only "more
    sequences than vllm's KV cache holds". It now says, as the training plan does, why and what would: the bf16
    weights alone, 2 x 405,853,388,800 bytes = 755.96 GiB, exceed 8 x 80 GiB = 640 GiB (4 x 24 GiB = 96 GiB); the
    fewest H100s that serve it (at least 756 / 80 = 9.45, so 10: the plan on that many keeps a row, one fewer
    none), and a weight format that serves it on 8 (plan on 8 in it keeps a row). On 4 RTX 4090s none does: 4-bit
    weights alone are over 405.85e9 / 2 bytes = 189 GiB."""
    assert PARAMS_405B == 405_853_388_800
    count, gpu = gpus.split("x", 1)
    out = " ".join(cli(["plan", "llama3.1-405b", "--gpus", gpus]).out.split())
    cards = int(count) * (80 if gpu == "h100-sxm" else 24)
    assert (f"No layout of {count} x {gpu} serves a sequence: the weights alone, {2 * PARAMS_405B / 2**30:.2f} "
            f"GiB, exceed the cards' {count} x {cards // int(count)}.00 GiB = {cards}.00 GiB.") in out
    if gpu == "h100-sxm":
        fewest = int(re.search(r"The fewest h100-sxm that serve it: (\d+) ", out).group(1))
        assert fewest >= 10
        assert plans.plan("llama3.1-405b", fewest, gpu).rows and not plans.plan("llama3.1-405b", fewest - 1, gpu).rows
        name = re.search(r"On 8: --weight-format (\S+) ", out).group(1)
        assert plans.plan("llama3.1-405b", 8, gpu, weight_format=name).rows
    else:
        assert PARAMS_405B / 2 > cards * 2**30
        assert out.endswith("No weight format of fp8-block, awq serves it on 4.")


def test_serving_sees_the_gpu_memory_given(cli):
    """count --gpu h100-sxm --gpu-memory 96 --serve: the fit line said 96.00 GiB while the serving table started
    from the 79.18 GiB an 80 GB H100 reports to torch (docs/serving.md), the --gpu-memory given dropped. The
    pool is now 0.9 x 96 GiB = 86.40 GiB; without --gpu-memory it stays 0.9 x 79.18 = 71.26 GiB."""
    import json
    base = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--json"]
    given = json.loads(cli(base + ["--gpu-memory", "96"]).out)["serving"]
    assert given["memory"] == 96 * 2**30 and given["usable"] == pytest.approx(96 * 2**30 * 0.9)
    card = json.loads(cli(base).out)["serving"]
    assert round(card["memory"] / 2**30, 2) == 79.18


def test_a_token_budget_of_any_size_stays_in_the_table(cli):
    """count --tokens 1e300: the row printed every digit of 10**300 (and of its days, GPU-hours and cost), 41 lines
    past 100 columns; a number of 10**15 or more is now written 1.000e+300, below it in full with commas."""
    out = cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--tokens", "1e300", "--price", "1"]).out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert any(line.startswith("1.000e+300 tokens ") for line in out.splitlines()), out
    out = cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--tokens", "15T"]).out
    assert any(line.startswith("15,000,000,000,000 tokens ") for line in out.splitlines()), out
    report = cli(["report", "llama3.2-1b", "--gpu", "h100-sxm", "--tokens", "1e300", "--format", "markdown"]).out
    assert "| 1.000e+300 training tokens |" in report and "0,000,000" not in report


def test_counts_are_singular_at_one_and_plural_past_it(cli):
    """count said "1 shared experts" (DeepSeek-V3's config.json: n_shared_experts 1), "1 multi-token prediction
    module(s)" (num_nextn_predict_layers 1), "x 1 replica(s)" and, under load at --gen 1, "1 tokens generated":
    every count is singular at one and plural past it (symllm.validate.plural), never "(s)"."""
    out = " ".join(cli(["count", "deepseek-v3"]).out.split())
    assert "1 shared expert of width 2048;" in out and "1 multi-token prediction module in the checkpoint" in out
    out = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "2000", "--gen", "1", "--serve",
               "--concurrency", "4"]).out
    assert "batch 1 x 1 replica\n" in out and " 1 token generated" in out
    assert "(s)" not in out, out[out.find("(s)") - 200:out.find("(s)") + 50]
    assert not re.search(r"\b1 tokens", out)
    out = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--dp", "8", "--batch", "2"]).out
    assert "batch 2 x 8 replicas" in out and "(s)" not in out


def test_a_comparison_prints_a_time_past_a_floats_range():
    """count A B --gpu G's side-by-side table formats an exact time of any size as count does (10**400/3 s is
    3.333e+399 s by hand); Python 3.11's Fraction takes no '.4g' format, which raised there."""
    from fractions import Fraction

    from symllm.present.format import side_by_side
    rows = [("t", "step", "seconds"), ("r", "tokens/s", "rate")]
    out = side_by_side(rows, ["a"], {"a": {"t": Fraction(10 ** 400, 3), "r": Fraction(10 ** 400, 7)}})
    assert out.split("\n")[0].split()[-2:] == ["3.333e+399", "s"] and out.split("\n")[1].split()[-1] == "1.429e+399"


# issue 40, session 15: a new user's questions (405B at 128k on 8 and 16 H100s, 8 B200s, 4 RTX 4090s; serving at
# 2k in / 500 out; LoRA of 8B; a Q4_K_M 70B on a Mac or two 4090s), asked from the shell


def test_an_unknown_card_points_where_every_card_is_listed(cli):
    """count --gpu mac said "all 23: see --help", but --gpu's help names five cards and "..." (a dead end); the
    catalogue is listed whole in docs/hardware.md, where an ambiguous name already points. 23: the cards of
    symllm/costs/gpus.json, counted from the file, each named in that page."""
    import json
    from pathlib import Path
    root = Path(__file__).parent.parent
    names = [g["name"] for g in json.loads((root / "symllm/costs/gpus.json").read_text())["gpus"]]
    page = (root / "docs/hardware.md").read_text()
    assert all(f"`{n}`" in page for n in names)
    _refused(cli(["count", "llama3.1-8b", "--gpu", "mac"]), f"gpu: unknown 'mac' (known: all {len(names)}: see "
             "docs/hardware.md)")
    _refused(cli(["plan", "llama3.1-8b", "--gpus", "2x4090"]), "gpus: unknown '4090' (known: rtx4090, rtx5090, "
             f"rtx3090; all {len(names)}: see docs/hardware.md)")


@pytest.mark.parametrize("gpus", [["8", "h100-sxm"], ["8x", "h100-sxm"], ["8", "x", "h100-sxm"], ["8X", "H100-SXM"]])
def test_plan_s_gpus_typed_as_two_words_says_the_one_word(cli, gpus):
    """plan --gpus 8 h100-sxm (the count and the card apart, as one says it) was argparse's bare
    "unrecognized arguments: h100-sxm"; the line now writes the one word --gpus takes."""
    stray = " ".join(gpus[1:])
    _refused(cli(["plan", "llama3.1-8b", "--gpus", *gpus]),
             f"unrecognized arguments: {stray} (--gpus is one word, N x GPU: --gpus 8x{gpus[-1]})")


def test_plan_s_other_stray_words_get_no_gpus_hint(cli):
    """A second model after plan's one (plan compares no models) is not read as --gpus' card."""
    r = cli(["plan", "llama3.1-8b", "llama3.1-70b", "--gpus", "8xh100-sxm"])
    assert r.code == 2 and "--gpus is one word" not in r.err, r.err


def test_sweep_s_flops_help_says_it_is_not_count_s_prefill(cli):
    """sweep --quantity flops is one forward of s new tokens after t cached (t = s unless --context:
    docs/sweeps.md), not count's prefill (sweep's prefill_flops): for Llama-3.1-405B at 128k it is 389P where count
    says 247P. --help listed "flops" first with no word of it. By hand, at s = t = 8,192 for Llama-3.1-8B (L 32,
    n_h 32, d_h 128), the difference is the attention over the t cached keys: 4·L·n_h·d_h·s·t."""
    import json
    help_text = " ".join(cli(["sweep", "--help"]).out.split())
    assert ("flops (one forward of --seq new tokens after --context cached, --seq unless given; count's prefill: "
            "prefill_flops)") in help_text, help_text
    rows = cli(["sweep", "--base", "llama3.1-8b", "--seq", "8192", "--quantity", "flops,prefill_flops"]).out
    head, row = rows.strip().split("\n")
    got = dict(zip(head.split(","), row.split(",")))
    assert int(got["flops"]) - int(got["prefill_flops"]) == 4 * 32 * 32 * 128 * 8192 * 8192
    count = json.loads(cli(["count", "llama3.1-8b", "--seq", "8192", "--json"]).out)
    assert int(got["prefill_flops"]) == count["flops"]["prefill"]


def test_a_lora_training_time_says_its_flops_are_full_fine_tuning_s(cli):
    """count llama3.1-8b --lora-rank 16 --gpu h100-sxm printed a training step, MFU and cost as if measured
    for LoRA, from full fine-tuning's FLOPs: no frozen weight's gradient is taken off (docs/finetuning.md: "Not
    modelled yet: LoRA's FLOPs"), so a LoRA step, about 4N a token against full's 6N (a frozen linear's backward
    computes its input's gradient only), reads up to 1.5x long. The count and the report now say so beside their
    times, from time.assumes.training_step."""
    import json
    base = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "4096", "--batch", "2"]
    lora = json.loads(cli(base + ["--lora-rank", "16", "--json"]).out)
    full = json.loads(cli(base + ["--json"]).out)
    assert lora["flops"]["training_step"] == full["flops"]["training_step"]
    said = "full fine-tuning's FLOPs (the frozen weights' gradients not taken off; docs/finetuning.md)"
    assert lora["time"]["assumes"]["training_step"] == said and "training_step" not in full["time"]["assumes"]
    out = " ".join(cli(base + ["--lora-rank", "16"]).out.split())
    assert f"LoRA: the training step counts {said}" in out, out
    assert "LoRA: the training step" not in " ".join(cli(base).out.split())
    report = " ".join(cli(["report", *base[1:], "--lora-rank", "16"]).out.split())
    assert f"no allocator overhead; a LoRA step counts {said}" in report


#: Llama-3.1-8B-Instruct's config.json (meta-llama/Llama-3.1-8B-Instruct on the Hugging Face Hub), its shape keys
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
              "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False,
              "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
              "hidden_act": "silu", "torch_dtype": "bfloat16"}


def _cached_repo(root, commits, ref=None):
    """A Hugging Face cache's repository folder as huggingface_hub writes it: snapshots/<commit>/config.json and,
    with ``ref``, refs/main naming that commit."""
    import json
    repo = root / "models--meta-llama--Llama-3.1-8B-Instruct"
    for commit in commits:
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text(json.dumps(LLAMA31_8B))
    if ref:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(ref)
    return repo


def test_a_cache_repository_folder_reads_its_main_snapshot(cli, tmp_path):
    """count ~/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B-Instruct (the folder a user finds in the
    cache, tab-completed) said "has no config.json": the config is in snapshots/<refs/main>/, where count of the
    Hub id reads it. 8,030,261,248: the safetensors metadata total of meta-llama/Llama-3.1-8B
    (tests/data/published_params.json)."""
    import json

    from .conftest import PUBLISHED
    repo = _cached_repo(tmp_path, ["a" * 40, "b" * 40], ref="b" * 40)
    r = cli(["count", str(repo), "--json"])
    assert r.code == 0, r.err
    assert json.loads(r.out)["params"]["total"] == PUBLISHED["llama3.1-8b"]["total"] == 8_030_261_248


def test_a_cache_repository_folder_of_several_snapshots_and_no_ref_names_them(cli, tmp_path):
    """Without refs/main (a download of one commit writes none) the one snapshot is read, as for a Hub id; of
    several, none is guessed: the line says to give the snapshot folder."""
    repo = _cached_repo(tmp_path, ["a" * 40, "b" * 40])
    _refused(cli(["count", str(repo)]), "model: 'meta-llama/Llama-3.1-8B-In...: 2 snapshots, no refs/main: give one's "
             "folder")


def test_a_deep_folder_without_a_config_says_so_within_the_line(cli, tmp_path):
    """count of a model folder with no config.json (weights still downloading, the wrong level of a tree) deep in
    the tree: the line quoted the whole path and was cut before "has no config.json", the one thing it had to
    say. The path is cut at its start, as every other path in a message is (symllm.validate.shown_path: the last
    26 characters, "/that/is/deep/llama-3.1-8b", from their first whole folder)."""
    folder = tmp_path.joinpath(*"a very long path to some models folder that is deep".split(), "llama-3.1-8b")
    folder.mkdir(parents=True)
    _refused(cli(["count", str(folder)]), "config: '.../that/is/deep/llama-3.1-8b' has no config.json")


@pytest.mark.parametrize("argv, line", [
    # derive reads its model from --model; count, report, verify and plan take it as their first word
    (["derive", "llama3.1-405b"], "unrecognized arguments: llama3.1-405b (derive takes a model as --model "
     "llama3.1-405b)"),
    (["derive", "--quantity", "flops", "llama3.1-8b", "--seq", "8192"],
     "unrecognized arguments: llama3.1-8b (derive takes a model as --model llama3.1-8b)"),
    # --json is count's and plan's (and presets'): the others write their own formats
    (["report", "llama3.1-8b", "--json"],
     "unrecognized arguments: --json (report writes --format markdown or latex)"),
    (["derive", "--model", "llama3.1-8b", "--json"],
     "unrecognized arguments: --json (derive writes --format text, pretty, latex, markdown)"),
    (["sweep", "--base", "llama3.1-8b", "--json"], "unrecognized arguments: --json (sweep writes JSON lines: "
     "--format jsonl)"),
])
def test_a_model_or_json_where_a_command_takes_neither_says_what_it_takes(cli, argv, line):
    """A new user's derive llama3.1-405b and report ... --json were argparse's bare "unrecognized arguments"."""
    _refused(cli(argv), line)


@pytest.mark.parametrize("name", ["Llama-3.1-405B", "llama-3.1-405b", "llama3.1-405B-instruct", "llama31-405b"])
def test_a_misspelt_preset_s_suggestions_are_whole(cli, name):
    """count Llama-3.1-405B (the Hub's spelling, without its org): the suggestions were sized as "a, b, c" and
    printed as "a or b or c", so the line ran past its width and was cut ("did you mean llama3.1-405b or
    llama3.1-70b..."): never a list cut short (docs/commands.md). Whole names, as many as the line holds, the nearest
    first (llama3.1-405b: the preset of meta-llama/Llama-3.1-405B, tests/data/published_params.json)."""
    r = cli(["count", name])
    assert r.code == 2 and "Traceback" not in r.err
    line = r.err.removeprefix("symllm: error: ").rstrip("\n")
    assert line.startswith(f"model: unknown preset {name!r}; did you mean llama3.1-405b"), line
    assert line.endswith("?") and "..." not in line, line


def test_a_weight_format_s_bytes_per_gpu_are_whole(cli):
    """count llama3.1-70b --weight-format Q4_K_M --pp 2 (a 70B GGUF over two RTX 4090s): the per-GPU rows read
    "weights 21,256,268,196.067767" -- the format's bytes a weight, averaged over the model, times one GPU's
    parameters, a float, printed with its decimals in a column of bytes. A byte count is whole: rounded, as the
    rounded column (19.80 GiB) already was. By hand from --json: 42,512,531,456 bytes x 35,276,857,344 of the
    70,553,706,496 parameters = 21,256,268,196.07, so 21,256,268,196."""
    import json
    argv = ["count", "llama3.1-70b", "--weight-format", "Q4_K_M", "--pp", "2"]
    d = json.loads(cli(argv + ["--json"]).out)
    assert d["params"]["per_gpu"] == 35_276_857_344 and d["params"]["total"] == 70_553_706_496
    assert d["memory"]["weights"] == 42_512_531_456
    assert 42_512_531_456 * 35_276_857_344 // 70_553_706_496 == 21_256_268_196
    rows = {line.split()[0]: line.split()[1] for line in cli(argv).out.splitlines()[-12:] if line.strip()}
    assert rows["weights"] == "21,256,268,196" and "." not in rows["inference_peak"], rows


@pytest.mark.parametrize("typed, name", [("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp32"),
                                         ("BFloat16", "bf16"), ("torch.float16", "fp16"), ("half", "fp16")])
def test_a_dtype_as_config_json_spells_it_is_read_as_symllm_s(cli, typed, name):
    """config.json's torch_dtype spells bf16 bfloat16 (torch's names: torch.bfloat16, torch.half is float16): every
    option taking a dtype was refused ("dtype: unknown 'bfloat16'"); each reads it and the output says symllm's."""
    r = cli(["count", "llama3.2-1b", "--dtype", typed, "--kv-dtype", typed, "--act-dtype", typed])
    assert r.code == 0, r.err
    assert f"weights {name}, KV cache {name}, activations {name};" in r.out
    r = cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--compute-dtype", typed, "--json"])
    if name == "fp32":  # no fp32 matmuls in --compute-dtype: refused under symllm's name with the one typed
        _refused(r, f"compute_dtype: unknown {typed!r} (known: bf16, fp16, fp8)")
        return
    import json
    assert json.loads(r.out)["workload"]["compute_dtype"] == name


def test_an_fp8_dtype_by_torch_s_name_is_fp8(cli):
    """torch's float8_e4m3fn (TransformerEngine's and torchao's float8 training) is --compute-dtype fp8."""
    r = cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--compute-dtype", "float8_e4m3fn", "--kv-dtype", "FP8"])
    assert r.code == 0, r.err
    assert "KV cache fp8," in r.out and "dense fp8" in r.out


def _tiny_llama(**rope) -> dict:
    """A two-layer Llama config.json (hand-written) with the RoPE keys given."""
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 1000, "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            **rope}


def test_past_the_window_a_config_already_scaling_rope_says_it_is_past_its_scaling(cli):
    """Llama 3.1 (rope_scaling llama3 from 8,192 to max_position_embeddings 131,072) past 131,072 was told "RoPE
    scaling can run it": its config already applies RoPE scaling, and 131,072 is where it reaches."""
    r = cli(["count", "llama3.1-8b", "--seq", "131000", "--gen", "100"])
    assert r.code == 0
    assert r.err == ("symllm: warning: seq + gen: 131,100 > 131,072 positions its RoPE scaling "
                     "(llama3) reaches (counted)\n")


def test_within_a_yarn_window_past_max_position_embeddings_no_warning(cli, tmp_path):
    """Qwen's YaRN recipe leaves max_position_embeddings at 32,768 and adds rope_scaling yarn, factor 4 from
    original_max_position_embeddings 32,768: 4 x 32,768 = 131,072 positions (vLLM's derived max_model_len reads
    yarn as original x factor). 65,536 is within: no warning; 140,000 is past the scaled 131,072."""
    import json
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_tiny_llama(max_position_embeddings=32768, rope_scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})))
    r = cli(["count", str(path), "--seq", "65536"])
    assert r.code == 0 and r.err == "", r.err
    r = cli(["count", str(path), "--seq", "140000"])
    assert r.code == 0
    assert r.err == ("symllm: warning: seq + gen: 140,000 > 131,072 positions its RoPE scaling "
                     "(yarn) reaches (counted)\n")


def test_past_the_window_of_a_config_without_rope_scaling_says_scaling_can_run_it(cli, tmp_path):
    """No rope_scaling stated (nor transformers 5's rope_parameters default): past max_position_embeddings the
    model could still run with RoPE scaling added: the warning says so."""
    import json
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_tiny_llama(max_position_embeddings=4096,
                                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0})))
    r = cli(["count", str(path), "--seq", "5000"])
    assert r.code == 0
    assert r.err == "symllm: warning: seq + gen: 5,000 > 4,096 trained positions (counted: RoPE scaling can run it)\n"


def test_an_unknown_format_is_the_house_line_not_argparse_s(cli):
    """report --format html read "argument --format: invalid choice: 'html' (choose from 'latex', 'markdown')",
    argparse's wording, where a short list fit the line; every other refusal names the field and what it knows."""
    _refused(cli(["report", "llama3.2-1b", "--format", "html"]), "format: unknown 'html' (known: latex, markdown)")


def test_derive_with_an_empty_extra_argument_is_one_line(cli):
    """An empty extra word (`derive ... ''`, what Hypothesis's fuzz drew) is argparse's unrecognized argument, in
    one line and exit 2: the hint for a model given without --model read its first word, and there is none."""
    r = cli(["derive", "--component", "attention", "--quantity", "flops", ""])
    assert r.code == 2 and r.err.startswith("symllm: error: unrecognized arguments") and r.err.count("\n") == 1
    assert "Traceback" not in r.err and "--model" not in r.err
