"""One model, one workload: every sweep quantity that `symllm count --json` also shows equals it, for
random configs and random workloads, through the Python API and through the command line.

Expected numbers: `symllm count --json` (in Python: `symllm.params` and `symllm.workload`, which it
prints) of the same config and workload; the sweep derives its points and defaults on its own path
(per-point derivation, compiled kernels), so any divergence (a default, a derivation rule, a dtype)
shows up here.
"""
import contextlib
import csv
import io
import json
import tempfile
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.costs import finetune
from symllm.cli import main
from symllm.arch.config import ModelConfig
from symllm.errors import SymllmError
from symllm.studies.grids import CONFIG_FIELDS, WORKLOAD_AXES, quantity_names
from symllm.studies.sweeps import Sweep
from symllm.costs.workloads import options as workload_options

from .strategies import checked_cases, runnable, sweep_bases, workload_options as workloads

#: sweep quantity -> (section, key) of `symllm count --json`
#: (count --json's `time` group, given --gpu, is no sweep quantity: its seconds are floats of a max() and
#: max_batch a search over the closed form, not one compiled expression; tests/test_hardware.py checks it)
COUNTED = {
    "params": ("params", "total"),
    "prefill_flops": ("flops", "prefill"),
    "decode_flops": ("flops", "decode_token"),
    "generation_flops": ("flops", "generation"),
    "training_flops": ("flops", "training_step"),
    "prefill_elementwise": ("flops", "elementwise"),
    **{kind: ("memory", kind) for kind in ("weights", "kv_cache", "training_states", "activations",
                                           "inference_peak", "training_peak")},
    # a parallel layout (symllm.costs.parallel): params.per_gpu, memory_per_gpu.*, comm.*
    "params_per_gpu": ("params", "per_gpu"),
    **{f"{kind}_per_gpu": ("memory_per_gpu", kind) for kind in ("weights", "kv_cache", "training_states",
                                                                  "activations", "inference_peak", "training_peak")},
    **{f"comm_{kind}": ("comm", kind) for kind in ("tp", "pp", "dp")},
}
#: count --json's params keys that are not breakdown terms (each a COUNTED or LORA_COUNTED quantity)
_NOT_TERMS = ("total", "block", "active", "per_gpu", "trainable")
#: LoRA (symllm.costs.finetune): count --json shows params.trainable and memory.lora_* only with --lora-rank, so
#: they are compared only for a workload that gives one (a sweep of them without a rank is an error)
LORA_COUNTED = {"trainable_params": ("params", "trainable"), **{k: ("memory", k) for k in finetune.MEMORY_KEYS}}


def test_every_count_number_has_a_sweep_quantity():
    """The table above covers every FLOPs and memory number count --json prints."""
    assert set(COUNTED) <= set(quantity_names())
    counted = symllm.workload("llama3.2-1b")
    for group in ("flops", "memory", "memory_per_gpu", "comm"):
        assert {key for section, key in COUNTED.values() if section == group} == set(counted[group]), group
    assert set(counted["params"]) <= {key for section, key in COUNTED.values() if section == "params"}


def _quantities(cfg) -> list[str]:
    terms = [f"params:{k}" for k in symllm.params(cfg) if k not in _NOT_TERMS]
    return list(COUNTED) + terms


def _expected(counted: dict, quantity: str):
    """What count --json says for a sweep quantity (``counted``: its params, flops and memory)."""
    section, key = COUNTED.get(quantity) or LORA_COUNTED.get(quantity) or ("params", quantity.partition(":")[2])
    return counted[section][key]


def _assert_same(quantity: str, got, expected) -> None:
    """Exact equality: a byte count that is not an integer is a Fraction in a sweep column ("p/q" in its
    CSV) and in Python's count; count --json gives the double nearest it (docs/json.md), which the exact
    sweep value must round to."""
    if isinstance(expected, float):  # count --json's number for a byte count that is not whole
        assert isinstance(got, Fraction) and float(got) == expected, (quantity, got, expected)
        return
    assert got == expected and not isinstance(got, float), (quantity, got, expected)


# --- the Python API -------------------------------------------------------------------------------

@given(sweep_bases(), workloads(), st.data())
def test_sweep_rows_equal_count(cfg, options, data):
    """A one-point grid or table built from the config's own fields (some of them, so the rest is
    derived per point) and the workload (its axis fields in the grid or fixed) gives count's numbers;
    with a weight format (priced per tensor of one model) only workload axes vary, and with a KV-cache
    format its bytes per element are count's too."""
    options = runnable(cfg, options)  # a layout count accepts: stages <= blocks, tp splitting whole heads
    work = symllm.workload(cfg, **options)
    counted = {**work, "params": {**symllm.params(cfg), **work["params"]}}
    stated = [k for k in CONFIG_FIELDS if getattr(cfg, k) is not None and k != "dim"]
    fields = ["dim"] + data.draw(st.lists(st.sampled_from(stated), unique=True), label="config fields varied")
    if "weight_format" in options:  # the sweep refuses to vary the model under a weight format
        fields = []
    axes = [k for k in WORKLOAD_AXES if k in options and data.draw(st.booleans(), label=f"vary {k}")]
    points = {k: [getattr(cfg, k)] for k in fields} | {k: [options[k]] for k in axes}
    fixed = {k: v for k, v in options.items() if k not in axes}
    quantities = _quantities(cfg)
    if data.draw(st.booleans(), label="as a table") and points:  # a table of no columns has no rows
        sw = Sweep(cfg, table=[{k: v[0] for k, v in points.items()}], quantities=quantities, workload=fixed)
    else:
        sw = Sweep(cfg, points, quantities=quantities, workload=fixed)
    result = sw.run()
    assert (result.points, result.invalid, result.rows) == (1, 0, 1)
    row = result.records()[0]
    assert (row["head_dim"], row["hidden_dim"]) == (cfg.head_dim, symllm.hidden_dim(cfg))
    for q in quantities:
        _assert_same(q, row[q], _expected(counted, q))


#: Llama 3.1 8B's decode step after a 4096-token prompt, by hand from its params.json (d 4096, 32 layers,
#: 32 heads and 8 KV heads of 128, d_ff 14336, V 128256): every weight matmul of one token, QK^T and A·V
#: over the 4096 cached keys and its own, and the lm_head (a context of 0 would attend to 1 key:
#: 15,009,841,152)
DECODE_8B_AT_4096 = 32 * 2 * (4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 32 * 128 * 4096 + 3 * 4096 * 14336) \
    + 32 * 2 * 2 * 32 * 128 * 4097 + 2 * 4096 * 128256


def test_decode_flops_at_seq_4096_equal_count():
    """The sweep decodes after the same context as count: llama3.1-8b at seq 4096 decodes a token for
    17,157,324,800 FLOPs, counted by hand."""
    assert DECODE_8B_AT_4096 == 17_157_324_800
    counted = symllm.workload("llama3.1-8b", seq=4096)["flops"]["decode_token"]
    assert counted == DECODE_8B_AT_4096
    assert Sweep("llama3.1-8b", quantities=["decode_flops"], workload={"seq": 4096}).run() \
        .columns["decode_flops"].tolist() == [counted]
    swept = Sweep("llama3.1-8b", {"seq": [1024, 4096]}, quantities=["decode_flops"]).run()
    assert swept.columns["decode_flops"].tolist() == \
        [symllm.workload("llama3.1-8b", seq=s)["flops"]["decode_token"] for s in (1024, 4096)]


@pytest.mark.parametrize("head_dim, expected", [(None, [32, 16, 8]), (16, [16, 16, 16])])
def test_a_stated_head_dim_stays_stated(head_dim, expected):
    """Per point the sweep derives head_dim only where the config derives it (ModelConfig.replace)."""
    cfg = ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4, head_dim=head_dim)
    res = Sweep(cfg, {"n_heads": [2, 4, 8]}, quantities=["params"]).run()
    assert res.columns["head_dim"].tolist() == expected
    assert res.columns["n_kv_heads"].tolist() == [2, 4, 8]  # derived: follows n_heads
    assert res.columns["params"].tolist() == [symllm.params(cfg.replace(n_heads=h))["total"] for h in (2, 4, 8)]


# --- the command line -----------------------------------------------------------------------------

def _run(argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([str(a) for a in argv]) == 0, argv
    return out.getvalue()


def _flags(options: dict) -> list[str]:
    """Command-line options for a workload, spelled as the CLI generates them from Workload."""
    argv = []
    for name, value in options.items():
        opt = workload_options()[name][1]
        flag = opt.flag or "--" + name.replace("_", "-")
        argv += [flag] if value is True else [] if value is False else [flag, str(value)]
    return argv


def _config_file(cfg: ModelConfig, folder: Path) -> Path:
    """The config as a file: a Meta params.json where that can say it (d_ff by Meta's rounding,
    head_dim derived, no biases), else a HF config.json (d_ff stated as the config resolves it)."""
    if cfg.hidden_dim is None and "head_dim" in cfg.derived and not (cfg.attention_bias or cfg.mlp_bias):
        raw = {"dim": cfg.dim, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads, "vocab_size": cfg.vocab_size,
               "multiple_of": cfg.multiple_of, "tie_word_embeddings": cfg.tie_embeddings}
        raw |= {"ffn_dim_multiplier": cfg.ffn_dim_multiplier} if cfg.ffn_dim_multiplier is not None else {}
        raw |= {"n_kv_heads": cfg.n_kv_heads} if "n_kv_heads" not in cfg.derived else {}
    else:
        raw = {"hidden_size": cfg.dim, "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
               "intermediate_size": symllm.hidden_dim(cfg), "vocab_size": cfg.vocab_size,
               "tie_word_embeddings": cfg.tie_embeddings, "attention_bias": cfg.attention_bias,
               "mlp_bias": cfg.mlp_bias}
        raw |= {"num_key_value_heads": cfg.n_kv_heads} if "n_kv_heads" not in cfg.derived else {}
        raw |= {"head_dim": cfg.head_dim} if "head_dim" not in cfg.derived else {}
    path = folder / "config.json"
    path.write_text(json.dumps(raw))
    return path


def _number(text: str):
    if "/" in text:  # an exact non-integral byte count
        return Fraction(text)
    return int(text) if text.lstrip("-").isdigit() else float(text)


def _count_vs_sweep(model, options: dict, folder: Path, grid=()) -> None:
    """count --json and a one-point sweep to a CSV file, with the same workload options."""
    counted = json.loads(_run(["count", model, "--json", *_flags(options)]))
    quantities = list(COUNTED) + [f"params:{k}" for k in counted["params"] if k not in _NOT_TERMS]
    quantities += list(LORA_COUNTED) if options.get("lora_rank") else []
    out = folder / "row.csv"
    _run(["sweep", "--base", model, *grid, "--quantity", ",".join(quantities), *_flags(options), "-o", out])
    with open(out, newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert _number(row["hidden_dim"]) == counted["config"]["hidden_dim"]
    for q in quantities:
        _assert_same(q, _number(row[q]), _expected(counted, q))


@given(sweep_bases(), workloads())
def test_cli_sweep_rows_equal_count_json(cfg, options):
    """`symllm count FILE --json` and `symllm sweep --base FILE --dim D -o row.csv` agree, for random
    config files and workload options."""
    options = runnable(cfg, options)  # a layout count accepts: stages <= blocks, tp splitting whole heads
    with tempfile.TemporaryDirectory() as tmp:
        path = _config_file(cfg, Path(tmp))
        assert symllm.params(symllm.resolve(path)) == symllm.params(cfg)
        # under a weight format the sweep varies no model field (its bytes are per tensor of one model)
        _count_vs_sweep(path, options, Path(tmp), grid=["--dim", cfg.dim] if "weight_format" not in options else [])


#: the presets whose structure the random config files above never have (experts, windows, the Llama 4 mix)
#: and the LoRA options workload_options() does not draw; dense presets under the workload options it
#: does draw (dtypes, int4 groups, ZeRO, recomputation, causal attention) are its cases already
@pytest.mark.parametrize("model, options", [
    ("llama3.1-8b", {"seq": 4096}),
    ("mixtral-8x7b", {"batch": 3, "seq": 1024, "gen": 16, "recompute": True}),
    ("llama4-maverick-17b-128e", {"seq": 4096, "zero_stage": 1, "dp": 8}),
    ("mistral-7b-v0.1", {"seq": 4000, "gen": 96}),
    ("llama2-7b", {"seq": 512, "lora_rank": 8, "lora_targets": "q_proj,v_proj"}),
    ("llama3.2-1b", {"batch": 2, "seq": 256, "lora_rank": 16, "lora_targets": "wq,wk,wv,wo,w1,w2,w3", "qlora": True,
                     "recompute": True, "act_dtype": "fp32"}),
    # Phi-3's fused projections under LoRA and tensor parallelism; Gemma 2's local and global layers past
    # the window, soft-capping and sandwich norms, with ZeRO
    ("phi-3-mini-4k", {"seq": 1024, "gen": 8, "lora_rank": 8, "lora_targets": "qkv_proj,gate_up_proj", "tp": 4}),
    ("gemma-2-2b", {"batch": 2, "seq": 8192, "gen": 64, "zero_stage": 2, "dp": 4, "recompute": True}),
    # Qwen3-Next's Gated DeltaNet layers (chunked prefill, recurrent decode, the state cache) under tensor
    # parallelism and LoRA on the DeltaNet's projections
    ("qwen3-next-80b-a3b", {"batch": 2, "seq": 1000, "gen": 8, "tp": 2, "lora_rank": 8,
                            "lora_targets": "in_proj_qkvz,out_proj,q_proj"}),
])
def test_cli_presets(model, options, tmp_path):
    """The same round trip for presets; for llama3.1-8b at --seq 4096 the CLI sweep's decode_flops is
    the 17,157,324,800 counted by hand."""
    _count_vs_sweep(model, options, tmp_path)
    if options == {"seq": 4096}:
        assert _run(["sweep", "--base", model, "--seq", "4096", "--quantity", "decode_flops"]) \
            .splitlines()[1].endswith(f",{DECODE_8B_AT_4096}")


# --- what count refuses, the sweep refuses or drops (symllm.costs.checks) ---------------------------

def _refusal(run) -> str | None:
    """The one-line error ``run()`` raises, or None."""
    try:
        run()
    except SymllmError as e:
        return str(e)
    return None


@given(checked_cases(), st.booleans())
def test_sweep_refuses_exactly_what_count_refuses(case, as_grid):
    """For a config and workload, a sweep refuses (what no point varies) or drops its point exactly when
    count refuses the workload, and says count's line; a point count accepts is kept."""
    cfg, options = case
    counted = _refusal(lambda: symllm.workload(cfg, **options))
    axes = {"n_layers": [cfg.n_layers], "seq": [options["seq"]]} if as_grid else None
    fixed = {k: v for k, v in options.items() if k not in (axes or {})}
    try:
        result, refused = Sweep(cfg, axes, quantities=["params"], workload=fixed).run(), None
    except SymllmError as e:
        result, refused = None, str(e)
    if counted is None:
        assert refused is None and (result.rows, result.invalid) == (1, 0)
    else:  # refused at once (the check reads nothing the grid varies), or its one point dropped: no point left
        assert refused in (counted, f"sweep: every point is invalid: {counted}")


def test_cli_sweep_refuses_experts_ep_does_not_divide(capsys):
    """The issue's case: 3 expert-parallel ranks do not divide Mixtral's 8 experts (8 = 2·2·2), so count
    and the sweep both exit 2 with the same line, and the sweep prints no row."""
    assert main(["count", "mixtral-8x7b", "--dp", "6", "--ep", "3"]) == 2
    counted = capsys.readouterr()
    assert main(["sweep", "--base", "mixtral-8x7b", "--seq", "1024", "--dp", "6", "--ep", "3",
                 "--quantity", "params_per_gpu,comm_ep"]) == 2
    swept = capsys.readouterr()
    assert swept.out == "" and swept.err.splitlines()[0] == counted.err.splitlines()[0] == (
        "symllm: error: ep: 3 expert-parallel ranks do not divide the 8 experts of mixtral-8x7b")


def test_sweep_drops_points_with_too_few_blocks_for_the_stages():
    """pp 3 over n_layers 2, 3, 4: the 2-block point is dropped with count's own line, the others kept."""
    result = Sweep("llama3.2-1b", {"n_layers": [2, 3, 4]}, workload={"pp": 3, "dp": 1}).run()
    line = _refusal(lambda: symllm.workload(symllm.load("llama3.2-1b").replace(n_layers=2), pp=3))
    assert line == "pp: 3 pipeline stages for the 2 blocks of llama3.2-1b: too many"
    assert (result.rows, result.invalid, result.reasons) == (2, 1, {"pp": (1, line)})


@pytest.mark.parametrize("bad, shown", [(True, "True"), (1.0, "1.0"), ("1", "'1'"), (0, "0")])
def test_a_workload_kept_for_its_options_still_refuses_a_lookalike_value(bad, shown):
    """Workload.of keeps the workload made from a set of options (a warm symllm.workload validates once): a value
    equal to a kept one but of another type (True == 1 == 1.0 in Python) is still checked, and refused in the
    same one line every time (a refusal is never kept)."""
    from symllm.costs.workloads import Workload

    ok = Workload.of(batch=1, seq=64)
    assert Workload.of(batch=1, seq=64) == ok and ok.batch == 1 and type(ok.batch) is int
    for _ in range(2):
        with pytest.raises(SymllmError) as err:
            symllm.workload("llama3.2-1b", batch=bad, seq=64)
        assert str(err.value) == f"batch: expected a positive integer, got {shown}"
