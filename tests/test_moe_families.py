"""Qwen2-MoE (a gated shared expert) and gpt-oss (attention sinks, biases on every projection, the router
and the experts, a clamped SwiGLU, alternating sliding and full layers) beyond their parameter counts
(those: tests/test_moe.py, against transformers on the meta device).

Expected numbers come from transformers itself (its models run on the CPU under FlopCounterMode through a
prefill and decode steps with its own cache, and the cache tensors it holds), PEFT's LoRA on transformers'
models, the shapes of transformers' parameters split by hand under the tensor-parallel plan written out
here, and pdflatex."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf, preset_info
from symllm.costs import finetune, phases as costs

from .conftest import requires
from .strategies import gpt_oss_configs, minimax_m2_configs, qwen2_moe_configs
from .test_finetune import HF_TARGETS, _peft_trainable
from .test_one_workload import _count_vs_sweep
from .test_windows import _generate

QWEN2_MOE = ("qwen1.5-moe-a2.7b", "qwen2-57b-a14b")
GPT_OSS = ("gpt-oss-20b", "gpt-oss-120b")
FAMILIES = st.one_of(qwen2_moe_configs(), gpt_oss_configs(), minimax_m2_configs())


@given(FAMILIES, st.integers(1, 2), st.integers(1, 8), st.integers(0, 4))
def test_generation_flops_and_kv_cache_equal_transformers(raw, b, s, n):
    """A prefill of s tokens and n decode steps through transformers' own cache (eager attention and
    experts, CPU), inside and past the window of the sliding layers: the matmul FLOPs equal
    FlopCounterMode's (transformers' eager experts run each token through its k experts only, as symllm
    counts; the sinks and the clamp are no matmul), and the KV cache holds what symllm counts (the sinks add
    none): min(s + n, W) positions per sliding layer (transformers one fewer between steps once the window
    is full, the next step's own key completing it), every position in the full layers."""
    flops, held = _generate(raw, b, s, n)
    cfg = from_hf(raw)
    work = costs.workload(cfg, batch=b, seq=s, gen=n, dtype="fp32", kv_dtype="fp32", logits="all")  # a plain forward
    assert work["flops"]["generation"] == flops
    sliding = sum(count for kind, count in cfg.groups if kind.window == "sliding")
    per_position = 2 * b * cfg.n_kv_heads * cfg.head_dim
    dropped = sliding * per_position * (s + n >= raw.get("sliding_window", 0))
    assert work["memory"]["kv_cache"] == 4 * (held + dropped)


@given(FAMILIES, st.integers(1, 16), st.data())
def test_lora_targets_equal_peft(raw, rank, data):
    """LoRA on any of the linears transformers builds (attention; Qwen2-MoE's dense and shared-expert
    SwiGLU and the shared expert's gate): symllm's trainable count equals PEFT's. Neither adapts the fused
    routed experts nor gpt-oss's router, sinks or biases."""
    cfg = from_hf(raw)
    names = HF_TARGETS[:4]
    if raw["model_type"] == "qwen2_moe":
        names = HF_TARGETS + (["shared_expert_gate"] if cfg.n_experts else [])
    targets = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    ours = finetune.lora(cfg, lora_rank=rank, lora_targets=",".join(targets), seq=4)
    assert ours["params"]["trainable"] == _peft_trainable(raw, rank, targets)


#: transformers' names of the linears a tensor-parallel plan splits: column (output features), row (input
#: features; a bias stays whole), as torch's DTensor plan for LLaMA; the shared expert's as a dense SwiGLU's
_COLUMN, _ROW = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"), ("o_proj", "down_proj")


def _rank0(name: str, shape: tuple, tp: int, ep: int, width: int | None = None) -> int:
    """Tensor-parallel rank 0's elements of one of transformers' parameters (and expert-parallel rank 0's
    of the fused routed experts), by hand: a split dimension of n gives ⌈n/tp⌉ rows. ``width``: the routed
    experts' intermediate size, split over tp as vLLM's FusedMoE lays them out (w13_weight
    ``(E, 2·I/tp, d)``, w2_weight ``(E, d, I/tp)``, a down-projection bias whole); None: not tensor-split."""
    parts, numel = name.split("."), 1
    for size in shape:
        numel *= size
    ceil = lambda n, k: -(-n // k)  # noqa: E731
    if "experts" in parts:  # [E, ...]: E/ep experts on each expert-parallel rank
        local = numel // shape[0] * ceil(shape[0], ep)
        if width is None or parts[-1] == "down_proj_bias":
            return local
        split = 2 * width if parts[-1].startswith("gate_up_proj") else width  # the intermediate dimension
        assert split in shape[1:] and width % tp == 0, (name, shape, width)
        return local // split * (split // tp)
    if parts[-2] in ("embed_tokens", "lm_head"):  # the vocabulary split
        return ceil(shape[0], tp) * shape[1]
    if parts[-2] in _COLUMN:
        return ceil(shape[0], tp) * (shape[1] if len(shape) == 2 else 1)
    if parts[-2] in _ROW:
        return shape[0] * ceil(shape[1], tp) if len(shape) == 2 else numel
    if parts[-1] == "sinks":  # one per query head, split with the heads (GptOssConfig's plan: local_rowwise)
        return ceil(shape[0], tp)
    return numel  # norms, the router, the shared expert's gate: whole on every rank


@pytest.mark.parametrize("expert_tp", ["split", "whole"])
@pytest.mark.parametrize("name,seq", [(QWEN2_MOE[0], 512), (GPT_OSS[0], 64)])
def test_per_gpu_params_of_a_preset_by_hand(name, seq, expert_tp):
    """params.per_gpu under tp 2 and ep 2 (dp 2) is rank 0's share of every parameter transformers builds for
    the preset (on meta), split by hand as the plan above says; expert parallelism halves the routed experts,
    their biases too; each routed expert's intermediate width halved by tp as vLLM's FusedMoE holds it
    (--expert-tp split, the default), or whole (--expert-tp whole)."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**preset_info(name)["config"])
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    width = getattr(config, "moe_intermediate_size", None) or config.intermediate_size
    expected = sum(_rank0(n, tuple(p.shape), 2, 2, width if expert_tp == "split" else None)
                   for n, p in model.named_parameters())
    got = symllm.workload(name, seq=seq, tp=2, ep=2, dp=2, expert_tp=expert_tp)["params"]["per_gpu"]
    assert got == expected


@pytest.mark.parametrize("name,options", [(QWEN2_MOE[0], {"seq": 512, "gen": 8, "tp": 2, "ep": 2, "dp": 2}),
                                          (GPT_OSS[0], {"seq": 1024, "gen": 16, "lora_rank": 8,
                                                        "lora_targets": "q_proj,o_proj"})])
def test_sweep_equals_count(name, options, tmp_path):
    """A one-point sweep of the preset gives every number count --json gives (parallel and LoRA included)."""
    _count_vs_sweep(name, options, tmp_path)


def test_count_names_the_parts(cli):
    """count says what the family adds, in one line each model."""
    qwen = " ".join(cli(["count", QWEN2_MOE[0]]).out.split())
    assert "a gated shared expert of width 5632" in qwen and "shared_expert_gate" in qwen
    oss = " ".join(cli(["count", GPT_OSS[1], "--seq", "64"]).out.split())
    assert "attention sinks" in oss and "clamped SwiGLU experts" in oss and "in 18 of 36 layers" in oss


def test_kv_cache_of_alternating_layers_by_hand(cli):
    """gpt-oss-120b at a 4096-token prompt and 100 generated tokens: its 18 full layers hold every position,
    its 18 sliding layers the last 128 (8 KV heads of 64, bf16), by hand from the model card's shapes."""
    out = json.loads(cli(["count", GPT_OSS[1], "--seq", "4096", "--gen", "100", "--json"]).out)
    assert out["memory"]["kv_cache"] == 2 * 8 * 64 * 2 * (18 * (4096 + 100) + 18 * 128)


@pytest.mark.parametrize("name", [QWEN2_MOE[0], GPT_OSS[0]])
def test_hf_stacks_refuse_the_new_parts(cli, name):
    """The HF stacks' tensor lists are LlamaForCausalLM's: a model holding these parts is refused, not counted."""
    r = cli(["count", name, "--seq", "64", "--stack", "hf-eager"])
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1


def test_derive_names_the_new_parts(cli):
    """derive shows the shared expert's width and gate, and the sinks, as terms of their own."""
    r = cli(["derive", "--model", QWEN2_MOE[0], "--format", "text"])
    assert r.code == 0 and "d_se" in r.out and "shared_expert_gate" in r.out
    r = cli(["derive", "--component", "sinks", "--model", GPT_OSS[0], "--seq", "64", "--format", "text"])
    assert r.code == 0 and "n_h" in r.out


def test_reports_compile_and_fit_the_page(cli, tmp_path, monkeypatch):
    """Each family's LaTeX report compiles with pdflatex in one pass, no line runs into the margin, and the
    PDF shows the preset's total."""
    from .test_render import _pdf_text, _run_pdflatex
    monkeypatch.chdir(tmp_path)
    for name in (QWEN2_MOE[0], GPT_OSS[0]):
        assert cli(["report", name, "--seq", "64", "--format", "latex", "--standalone", "-o", f"{name}.tex"]).code == 0
        log = _run_pdflatex((tmp_path / f"{name}.tex").read_text(), tmp_path, name)
        assert "Overfull" not in log
        assert f"{symllm.params(name)['total']:,}" in _pdf_text(tmp_path / f"{name}.pdf")


def test_json_config_round_trip(cli, tmp_path):
    """A preset's config.json written to a file counts as the preset does."""
    for name in QWEN2_MOE + GPT_OSS:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(preset_info(name)["config"]))
        assert symllm.params(str(path))["total"] == symllm.params(name)["total"]
