"""GPU names as people type them (issue 40, a new user's pass): ``--gpu``, ``--gpus NxNAME`` and the Python API take a
catalogue card in any case, with or without dashes, spaces and underscores, or by the name nvidia-smi prints for it;
a name that starts several cards' names, or none, is refused in one line naming the nearest; ``count A B --gpu``
shows count's bound and expected times per model; a plot warns for the time-only options it ignores."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import symllm
from symllm.costs import accelerators
from symllm.errors import SymllmError

DOCS_DATA = Path(__file__).parent.parent / "docs" / "data"

#: by hand: what a user types -> the card it means (the catalogue names are rtx4090, h100-sxm, a100-80gb, ...);
#: nvidia-smi's names as RunPod's GPU-type table lists them (runpod/docs docs/references/gpu-types.md at 3dfc5b6)
SPELLINGS = [("rtx-4090", "rtx4090"), ("RTX4090", "rtx4090"), ("RTX 4090", "rtx4090"), ("H100-SXM", "h100-sxm"),
             ("h100_sxm", "h100-sxm"), ("H100 SXM", "h100-sxm"), ("A100-80GB-PCIe", "a100-80gb-pcie"),
             ("MI300X", "mi300x"), ("Apple M2 Ultra", "apple-m2-ultra"),
             ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA H100 80GB HBM3", "h100-sxm"),
             ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
             ("NVIDIA H100 PCIe", "h100-pcie"), ("nvidia geforce rtx 3090", "rtx3090"), ("NVIDIA L4", "l4"),
             # RunPod's table of 2024-03-26 (033a3ef); nvidia-smi tables in NVIDIA/gpu-admin-tools issue #4 (H100 NVL),
             # NVIDIA/TensorRT-LLM issue #10278 (B200) and vLLM's error in vllm-project/vllm issue #1400 (T4)
             ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA L40S", "l40s"), ("NVIDIA H100 NVL", "h100-nvl"),
             ("NVIDIA B200", "b200"), ("Tesla T4", "t4")]


@pytest.mark.parametrize("typed, card", SPELLINGS)
def test_each_spelling_names_its_card(typed, card):
    assert accelerators.gpu(typed).name == card
    dtype = "fp16" if card == "t4" else "bf16"  # (a T4 has no bf16 tensor cores)
    assert symllm.workload("llama3.2-1b", gpu=typed, dtype=dtype)["workload"]["gpu"] == card  # the Python API's door


def test_the_names_the_lent_cards_printed():
    """nvidia-smi's name of each card lent to the team (docs/data, 2026-11-28) names that card."""
    for path, card in (("h100-2026-11-28.json", "h100-sxm"), ("h200-2026-11-28.json", "h200")):
        env = json.loads((DOCS_DATA / path).read_text(encoding="utf-8"))["env"]
        assert accelerators.gpu(env["nvidia_smi"].split(",")[0]).name == card
        assert accelerators.gpu(env["device"]).name == card  # torch.cuda.get_device_name: the same name


@pytest.mark.parametrize("typed, cards", [
    ("h100", "h100-sxm, h100-pcie, h100-nvl, h100-sxm-hbm2e"), ("NVIDIA H100", "h100-sxm, h100-pcie, h100-nvl"),
    ("a100", "a100-40gb, a100-80gb, a100-80gb-pcie"), ("RTX", "rtx3090, rtx4090, rtx5090"),
    ("apple", "apple-m2-ultra, apple-m4-max")])
def test_an_ambiguous_name_is_refused_with_its_cards(typed, cards):
    with pytest.raises(SymllmError) as e:
        accelerators.gpu(typed)
    assert str(e.value) == f"gpu: {typed!r} is ambiguous (one of: {cards})"


def test_an_unknown_name_is_refused_with_the_nearest():
    with pytest.raises(SymllmError, match=r"^gpu: unknown 'RTX 4080' \(known: rtx4090"):
        accelerators.gpu("RTX 4080")
    with pytest.raises(SymllmError, match=r"^gpu: unknown ' - ' \(known: all "):
        accelerators.gpu(" - ")  # nothing left to compare: no card


def test_every_door_takes_a_spelling(cli):
    count = json.loads(cli(["count", "llama3.2-1b", "--gpu", "rtx4090", "--json"]).out)
    typed = cli(["count", "llama3.2-1b", "--gpu", "NVIDIA GeForce RTX 4090", "--json"])
    assert typed.code == 0 and json.loads(typed.out) == count
    r = cli(["plan", "llama3.2-1b", "--gpus", "2xNVIDIA-L4", "--top", "1", "--json"])
    assert r.code == 0 and json.loads(r.out)["gpu"] == "l4"
    assert cli(["derive", "--quantity", "ridge", "--gpu", "RTX_4090"]).out == \
        cli(["derive", "--quantity", "ridge", "--gpu", "rtx4090"]).out
    r = cli(["report", "llama3.2-1b", "--gpu", "H100-SXM"])
    assert r.code == 0 and "NVIDIA H100 SXM5 80GB" in r.out
    r = cli(["sweep", "--base", "llama3.2-1b", "--quantity", "params", "--gpu", "H100 SXM"])
    assert r.code == 0 and "--gpu does not apply to a sweep" in r.err
    for argv, field in ((["count", "llama3.2-1b", "--gpu", "H100"], "gpu"),
                        (["plan", "llama3.2-1b", "--gpus", "8xH100"], "gpus"),
                        (["derive", "--quantity", "ridge", "--gpu", "rtx"], "gpu")):
        r = cli(argv)  # refused naming the option typed: --gpus is plan's, not count's --gpu
        assert r.code == 2 and r.err.startswith(f"symllm: error: {field}: ") and "is ambiguous" in r.err
        assert r.err.count("\n") == 1 and not r.out
    r = cli(["plan", "llama3.2-1b", "--gpus", "8xfoo"])
    assert r.code == 2 and r.err.startswith("symllm: error: gpus: unknown 'foo'") and r.err.count("\n") == 1


def test_compare_shows_counts_times(cli):
    """count A B --gpu: each model's bound and expected prefill, decode step, tokens/s, training step and MFU are
    the numbers count A --gpu gives; a model that does not fit has none ("does not fit")."""
    models = ["llama3.2-1b", "llama3.1-70b"]
    both = json.loads(cli(["count", *models, "--gpu", "h100-sxm", "--json"]).out)["models"]
    one = json.loads(cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--json"]).out)["time"]
    got = both["llama3.2-1b"]
    for key in ("prefill_s", "decode_token_s", "tokens_per_s", "training_step_s", "mfu"):
        assert got[key] == one[key] and got[f"expected_{key}"] == one["expected"][key], key
    assert got["decode_token_s"] < got["expected_decode_token_s"]  # a bound is below what runs
    assert both["llama3.1-70b"]["prefill_s"] is None  # 141 GB of bf16 weights on 80 GiB
    text = cli(["count", *models, "--gpu", "h100-sxm"]).out
    rows = {cells[0]: cells[1:] for cells in (re.split(r"\s{2,}", line.strip()) for line in text.splitlines())}
    assert rows["decode step, bound"] == [f"{one['decode_token_s']:.4g} s", "does not fit"]
    assert rows["training MFU, expected"][0] == f"{one['expected']['mfu']:.1%}"
    assert all(len(line) <= 100 for line in text.splitlines())


def test_plots_warn_for_the_options_they_ignore(cli, tmp_path):
    """plot memory draws no time: --tp-overlap and --tokens are said to be ignored in one line (before the plot,
    whether or not matplotlib is installed); plot roofline draws times, not a training step's."""
    r = cli(["plot", "memory", "llama3.2-1b", "--tp-overlap", "--engine", "torchtitan", "--tokens", "1e9",
             "-o", tmp_path / "m.png"])
    assert r.err.splitlines()[0] == ("symllm: warning: --tp-overlap, --tokens do not apply to plot memory (ignored; it "
                                     "draws no time)")
    r = cli(["plot", "roofline", "llama3.2-1b", "--gpu", "l4", "--tokens", "1e9", "-o", tmp_path / "r.png"])
    assert r.err.splitlines()[0] == ("symllm: warning: --tokens does not apply to plot roofline (ignored; it draws "
                                     "no training step)")
