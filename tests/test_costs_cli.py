"""The workload options of count, derive, report and sweep, and their file handling, through
symllm.cli.main: bad input is one stderr line ``symllm: error: ...``, exit 2, and no output file."""
import json
import os
import stat
from fractions import Fraction

import pytest
import sympy as sp

import symllm
from symllm.costs import phases as costs, utilisation
from symllm.cli import main
from symllm.errors import SymllmError
from symllm.costs.workloads import Workload


def _fails(capsys, argv, field) -> str:
    """Run the CLI; it must exit 2 with exactly one stderr line naming ``field`` and print nothing."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own checks exit from the parser
        status = exc.code
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert status == 2, (argv, status, err)
    assert len(lines) == 1 and lines[0].startswith("symllm: error: ") and field in lines[0], (argv, err)
    assert out == ""
    return lines[0]


@pytest.mark.parametrize("argv,field", [
    (["--batch", "0"], "batch"), (["--batch", "-2"], "batch"), (["--seq", "0"], "seq"),
    (["--seq", "-1"], "seq"), (["--gen", "-1"], "gen"), (["--dp", "0"], "dp"),
    (["--dtype", "int3"], "dtype"), (["--kv-dtype", "float8_e8m0fnu"], "kv_dtype"),
    (["--attention", "sparse"], "attention"), (["--zero", "4"], "zero_stage"), (["--zero", "-1"], "zero_stage"),
    (["--batch", "x"], "batch"),  # one line naming the field, as --seq x (validate.suffixed_count)
])
def test_bad_workload_is_one_line_and_exit_2(capsys, argv, field):
    """Bad workload input: exit status 2 and one stderr line naming the field."""
    try:
        status = main(["count", "llama3.1-8b", *argv])
    except SystemExit as exc:  # argparse's own checks (choices, types) exit from the parser
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("symllm: error:") for line in lines)
    assert len(set(lines)) == 1 and field in lines[0]


def test_count_json_keeps_params_and_config_and_adds_workload(capsys):
    """--json keeps params and config, and adds flops and memory in FLOPs and bytes."""
    assert main(["count", "llama3.1-8b", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["params"]["total"] == 8030261248 and plain["config"]["hidden_dim"] == 14336
    assert set(plain["flops"]) == {"prefill", "decode_token", "generation", "training_step", "elementwise"}
    assert set(plain["memory"]) >= {"weights", "kv_cache", "training_states", "activations"}
    assert plain["memory"]["weights"] == 2 * 8030261248  # bf16 by default
    assert main(["count", "llama3.1-8b", "--json", "--seq", "100", "--gen", "10", "--zero", "3", "--dp", "8"]) == 0
    w = json.loads(capsys.readouterr().out)
    assert w["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 2 * 110
    assert w["memory"]["training_states"] == 16 * 8030261248 // 8


def test_count_text_shows_flops_and_memory_only_with_workload_options(capsys):
    """Plain count is unchanged; a workload option adds the FLOPs and memory tables."""
    main(["count", "llama3.1-8b"])
    assert "prefill" not in capsys.readouterr().out
    main(["count", "llama3.1-8b", "--seq", "4096", "--gen", "128"])
    out = capsys.readouterr().out
    assert "prefill" in out and "kv_cache" in out and "training_step" in out


def test_int4_json_is_exact(capsys, tmp_path):
    """int4 bytes in JSON: an int when integral (never a float); otherwise a JSON number, the double
    nearest the exact quotient (never a "p/q" string: docs/json.md)."""
    assert main(["count", "llama3.2-1b", "--json", "--dtype", "int4"]) == 0
    out = json.loads(capsys.readouterr().out)
    N = 1235814400  # Llama 3.2 1B, tied embeddings (published; tests/data/published_params.json)
    assert out["params"]["total"] == N
    weights = out["memory"]["weights"]
    assert type(weights) is int and weights == N // 2 + 2 * N // 128  # 4-bit weights + fp16 scale per 128
    # a small config whose N is not a multiple of 64: N·(1/2 + 2/128) is not an integer
    cfg = tmp_path / "params.json"
    cfg.write_text(json.dumps({"dim": 66, "n_layers": 1, "n_heads": 3, "n_kv_heads": 3, "vocab_size": 33,
                               "multiple_of": 1}))
    assert main(["count", str(cfg), "--json", "--dtype", "int4"]) == 0
    out = json.loads(capsys.readouterr().out)
    n = out["params"]["total"]
    weights = out["memory"]["weights"]
    assert n % 64 and type(weights) is float and weights == float(Fraction(33 * n, 64))


def test_int4_numbers_are_ints_when_whole():
    """workload() promises ints where a byte count is integral: never Fraction(x, 1)."""
    w = costs.workload("llama3.1-8b", dtype="int4", kv_dtype="int4")
    for kind, value in w["memory"].items():
        assert type(value) is int or (type(value) is Fraction and value.denominator != 1), (kind, value)
    assert type(w["memory"]["weights"]) is int


# --- one validator for every command ----------------------------------------------------------------

BAD_WORKLOADS = [
    (["--seq", "-5"], "seq"), (["--seq", "0"], "seq"), (["--batch", "0"], "batch"), (["--gen", "-3"], "gen"),
    (["--dtype", "int3"], "dtype"), (["--kv-dtype", "float8_e8m0fnu"], "kv_dtype"),
]


@pytest.mark.parametrize("argv,field", BAD_WORKLOADS + [(["--context", "-100"], "context")])
@pytest.mark.parametrize("model", [["--model", "llama3.1-8b"], []])
def test_derive_rejects_bad_workloads(capsys, argv, field, model):
    """derive checks the workload like count does (it printed negative FLOPs for --seq -5)."""
    _fails(capsys, ["derive", "--quantity", "flops", *model, *argv], field)


@pytest.mark.parametrize("argv,field", BAD_WORKLOADS)
def test_report_rejects_bad_workloads(capsys, argv, field):
    """report checks the workload with the same validator."""
    _fails(capsys, ["report", "llama3.1-8b", *argv], field)


@pytest.mark.parametrize("argv,field", [
    (["--dp", "-2", "--zero", "3"], "dp"), (["--dp", "0", "--zero", "3"], "dp"), (["--zero", "4"], "zero_stage"),
    (["--kv-dtype", "float8_e8m0fnu"], "kv_dtype"), (["--act-dtype", "x"], "act_dtype"),
])
def test_sweep_rejects_bad_cost_options(capsys, argv, field):
    """sweep --dp -2 gave negative training states and --dp 0 silently became 1."""
    _fails(capsys, ["sweep", "--base", "llama3-8b", "--n-layers", "1,2", "--quantity", "training_states", *argv],
           field)


def test_workload_names_every_bad_option():
    """The shared validator (Workload) refuses each bad value, naming the option."""
    for bad, field in [({"dp": 0}, "dp"), ({"dp": True}, "dp"), ({"group_size": 0}, "group_size"),
                       ({"context": -1}, "context"), ({"attention": "sparse"}, "attention"),
                       ({"recompute": "yes"}, "recompute"), ({"zero_stage": 1.0}, "zero_stage"),
                       ({"act_dtype": "fp7"}, "act_dtype"), ({"colour": 1}, "colour")]:
        with pytest.raises(SymllmError, match=f"^(workload: unknown option )?'?{field}"):
            Workload.of(**bad)
    with pytest.raises(SymllmError, match="^dp"):
        symllm.studies.sweeps.Sweep("llama3-8b", {"n_layers": [1]}, options={"dp": 0})


# --- report only takes what it uses --------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["--phase", "decode"], ["--memory", "weights"]])
def test_report_has_no_options_it_would_ignore(capsys, argv):
    """report shows every phase and memory kind: derive's --phase/--memory are refused."""
    _fails(capsys, ["report", "llama3.1-8b", *argv], argv[0])
    with pytest.raises(SymllmError, match="option of derive"):
        symllm.report("llama3.1-8b", **{argv[0][2:]: "decode" if argv[0] == "--phase" else 5})


# --- files: one line, never a traceback, never a partial file ------------------------------------------

@pytest.mark.parametrize("argv", [["report", "llama3.2-1b"], ["derive", "--component", "attention"],
                                  ["sweep", "--base", "llama3-8b", "--n-layers", "1,2"]])
def test_output_to_a_directory_is_one_line(capsys, tmp_path, argv):
    """-o DIR is refused before anything is written."""
    _fails(capsys, [*argv, "-o", str(tmp_path)], "is a directory")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc (a folder nothing can be created in)")
@pytest.mark.parametrize("argv", [["report", "llama3.2-1b"], ["sweep", "--base", "llama3-8b", "--n-layers", "1,2"]])
def test_unwritable_folder_is_one_line(capsys, argv):
    """-o into a folder where no file can be created: one line (sweep raised FileNotFoundError)."""
    _fails(capsys, [*argv, "-o", "/proc/symllm-test.csv"], "output:")


def test_outputs_get_a_plain_files_mode(tmp_path, capsys):
    """report and sweep -o files get 0666 minus the umask, as open() gives, not mkstemp's 0600."""
    old = os.umask(0o022)
    try:
        assert main(["sweep", "--base", "llama3-8b", "--n-layers", "1,2", "-o", str(tmp_path / "g.csv")]) == 0
        assert main(["report", "llama3.2-1b", "-o", str(tmp_path / "r.md")]) == 0
    finally:
        os.umask(old)
    for name in ("g.csv", "r.md"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644


def test_non_utf8_notation_and_table_are_one_line(capsys, tmp_path):
    """A notation or table file that is not UTF-8: one line, not UnicodeDecodeError."""
    bad = b"\xff\xfe{\"d\": \"D\"}"
    (tmp_path / "n.json").write_bytes(bad)
    (tmp_path / "t.csv").write_bytes(b"dim\n\xff\n")
    _fails(capsys, ["derive", "--notation", str(tmp_path / "n.json")], "notation:")
    _fails(capsys, ["sweep", "--base", "llama3-8b", "--table", str(tmp_path / "t.csv")], "table:")


@pytest.mark.parametrize("name,text,field", [
    ("t.json", "[1, 2]", "not a JSON object"),
    ("t.jsonl", '{"dim": 4096}\n[4096]\n', "line 2 is not a JSON object"),
    ("t.jsonl", '{"dim": 4096}\n{"dim": "4096"}\n', "dim"),
    ("t.jsonl", '{"dim": [4096, 1]}\n', "dim"),
    ("t.csv", "dim,n_layers\n4096,32\n4096\n", "line 3 has fewer fields"),
    ("t.csv", "dim,n_layers\n4096,32,7\n", "line 2 has more fields"),
    ("t.csv", "dim,n_layers\n4096,\n", "n_layers"),
])
def test_bad_tables_are_one_line(capsys, tmp_path, name, text, field):
    """Malformed --table files: one line naming the problem (they raised TypeError / AttributeError)."""
    (tmp_path / name).write_text(text)
    _fails(capsys, ["sweep", "--base", "llama3-8b", "--table", str(tmp_path / name)], field)


def test_json_array_table_equals_json_lines(capsys, tmp_path):
    """A .json table may be one array of row objects: the same rows as JSON lines."""
    rows = [{"dim": 4096, "n_layers": 32}, {"dim": 2048, "n_layers": 16}]
    (tmp_path / "a.json").write_text(json.dumps(rows))
    (tmp_path / "b.jsonl").write_text("\n".join(map(json.dumps, rows)))
    assert main(["sweep", "--base", "llama3-8b", "--table", str(tmp_path / "a.json")]) == 0
    first = capsys.readouterr().out
    assert main(["sweep", "--base", "llama3-8b", "--table", str(tmp_path / "b.jsonl")]) == 0
    assert capsys.readouterr().out == first and first.count("\n") == 3


def test_elementwise_macs_are_refused():
    """MACs are matmul FLOPs / 2; halving element-wise FLOPs means nothing, so it is an error."""
    with pytest.raises(SymllmError, match="^macs"):
        costs.flops("model", bucket="elementwise", macs=True)
    assert costs.flops("model", bucket="elementwise") != 0


def test_fp64_activations_keep_fp64_statistics():
    """RMSNorm saves its input (β_a per element) and one 1/rms per row, fp32 for narrower activations
    and fp64 for fp64 ones (the torch reference's promote_types(dtype, fp32)); test_memory measures it."""
    S = symllm.arch.symbols
    for beta, stat_bytes in ((1, 4), (2, 4), (4, 4), (8, 8)):
        vals = {S.b: 1, S.s: 1, S.d: 1, S.beta_a: beta}
        assert symllm.evaluate(costs.activations("rmsnorm"), vals) == beta + stat_bytes


@pytest.mark.parametrize("seq", [None, 0, -5, 2.5, "2048"])
def test_mfu_needs_a_real_sequence_length(seq):
    """mfu(seq=None) must not fall back to a default length (Fraction(x, None) is x / 1): every
    sequence length that is not a positive integer is one SymllmError naming seq."""
    with pytest.raises(SymllmError, match=r"^seq: "):
        utilisation.mfu("llama3.1-8b", 4000, 989e12, seq=seq)


@pytest.mark.parametrize("value", ["no", "", 0, 1, None])
def test_switches_must_be_booleans(value):
    """tied="no" is truthy: a non-bool switch is refused instead of silently counting as tied."""
    from symllm.arch import components
    with pytest.raises(SymllmError, match=r"^tied: expected True or False"):
        components.lm_head(tied=value)
    with pytest.raises(SymllmError, match=r"^tied: "):
        components.model(tied=value)
    with pytest.raises(SymllmError, match=r"^causal: "):
        components.block(causal=value)


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_every_switch_of_a_structure_must_be_a_boolean(value):
    """Every field of LayerKind, Variant and Structure whose default is True or False (read from the defaults,
    not from the annotations the check reads) refuses a non-bool in one line naming it; each is set alone."""
    from dataclasses import fields
    from symllm.arch.layers import LayerKind, Structure, Variant
    switches = [(cls, f.name) for cls in (LayerKind, Variant, Structure) for f in fields(cls)
                if isinstance(f.default, bool)]
    assert {"rotary", "shared_topk", "clip_qkv", "fused", "tied", "moe_beside_mlp"} <= {n for _, n in switches}
    assert len(switches) == 7 + 11 + 24  # LayerKind's, Variant's and Structure's flags, counted by hand
    for cls, name in switches:
        with pytest.raises(SymllmError, match=rf"^{name}: expected True or False, got "):
            cls(**{name: value})


#: Llama-3.1-8B's KV cache at s = 2048 in bf16, by hand: 2 (K and V) x 32 layers x 8 KV heads x 128 x 2048 x 2 bytes
KV_8B_2048 = 2 * 32 * 8 * 128 * 2048 * 2


@pytest.mark.parametrize("dtype", ["int4", "int8", "fp8"])
def test_quantized_weights_keep_the_kv_cache_in_the_activations_dtype(cli, tmp_path, dtype):
    """Issue 40: quantized weights do not quantize the KV cache. vLLM's kv_cache_dtype "auto" is the model's dtype
    whatever the checkpoint's weight quantization (vllm/config/cache.py at 002f10e: "will use model data type"),
    llama.cpp's cache is f16 unless --cache-type-k/v: under --dtype int4/int8/fp8 the cache is bf16, as the
    activations are, through count, the Python API, derive, sweep, plan and report. Llama-3.1-8B at s = 2048:
    2 x 32 x 8 x 128 x 2048 x 2 bytes = 268,435,456. A given --kv-dtype or --kv-format still wins."""
    assert KV_8B_2048 == 268_435_456
    args = ["llama3.1-8b", "--dtype", dtype, "--seq", "2048"]
    out = json.loads(cli(["count", *args, "--json"]).out)
    assert out["memory"]["kv_cache"] == KV_8B_2048
    assert (out["workload"]["kv_dtype"], out["workload"]["act_dtype"]) == ("bf16", "bf16")
    text = " ".join(cli(["count", *args]).out.split())
    assert f"weights {dtype}, KV cache bf16, activations bf16" in text
    assert symllm.workload("llama3.1-8b", dtype=dtype, seq=2048)["memory"]["kv_cache"] == KV_8B_2048
    assert Workload(dtype=dtype).kv_dtype == "bf16"
    derived = cli(["derive", "--model", "llama3.1-8b", "--dtype", dtype, "--quantity", "memory",
                   "--memory", "kv_cache"])
    assert derived.code == 0 and "= 268,435,456" in derived.out
    r = cli(["sweep", "--base", "llama3.1-8b", "--dtype", dtype, "--seq", "2048", "--quantity", "kv_cache",
             "--format", "jsonl"])
    assert r.code == 0 and json.loads(r.out)["kv_cache"] == KV_8B_2048, r.err
    plan = cli(["plan", *args, "--gpus", "1xh100-sxm", "--json"])
    assert plan.code == 0 and json.loads(plan.out)["workload"]["kv_dtype"] == "bf16", plan.err
    report = tmp_path / "report.md"
    assert cli(["report", *args, "-o", str(report)]).code == 0
    assert r"\beta_{kv} = 2`" in report.read_text(encoding="utf-8")
    # what is given still wins: fp8, one byte an element, half the bf16 cache
    for given in (["--kv-dtype", "fp8"], ["--kv-format", "fp8"]):
        assert json.loads(cli(["count", *args, *given, "--json"]).out)["memory"]["kv_cache"] == KV_8B_2048 // 2


def test_a_given_kv_dtype_beside_a_kv_format_is_refused_unless_it_is_the_default(capsys):
    """--kv-format with --kv-dtype is one line unless the dtype is the default the format replaces (the
    activations', bf16 under int4 weights), as before it was --dtype."""
    assert Workload(dtype="int4", kv_dtype="bf16", kv_format="q8_0").kv_format == "q8_0"
    with pytest.raises(SymllmError, match="^kv_format: give --kv-format or --kv-dtype, not both"):
        Workload(dtype="int4", kv_dtype="int4", kv_format="q8_0")
