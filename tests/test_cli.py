"""Every command: --help, a valid call, the default, an invalid input."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from symllm.arch import symbols as S

from .conftest import CI

COMMANDS = ["count", "derive", "report", "sweep", "presets", "verify"]


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help_has_examples(command, cli):
    """--help, of the program and of each command, exits 0 and shows examples of that command."""
    r = cli(([command] if command else []) + ["--help"])
    assert r.code == 0 and "examples:" in r.out and f"symllm {command or ''}" in r.out


def test_every_choice_is_read_from_the_module_that_checks_it(cli):
    """No option spells its choices: each is read (on use) from the table the code behind it validates
    against, so the command line cannot accept what the API refuses, nor refuse what it accepts (--quantity,
    the sweep's, plot's, report's and count's --format were literal copies). A choice the API refuses is one
    line from both."""
    import argparse
    import importlib

    from symllm.cli import parser as command_line
    from symllm.errors import SymllmError
    from symllm.present import reports
    from symllm.present.format import side_by_side
    parsers = [command_line.build_parser()]
    with_choices = []
    while parsers:
        for action in parsers.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif action.choices is not None:
                with_choices.append(action)
    assert len(with_choices) >= 10
    for action in with_choices:
        assert isinstance(action.choices, command_line._Choices), action.option_strings
        table = getattr(importlib.import_module(f"symllm.{action.choices.module}"), action.choices.name)
        assert tuple(action.choices) == tuple(table) and table, action.option_strings
    with pytest.raises(SymllmError, match=r"^format: unknown 'docx' \(known: latex, markdown\)$"):
        reports.report("llama3.2-1b").render("docx")
    with pytest.raises(SymllmError, match=r"^format: unknown 'tsv' \(known: text, csv, markdown, latex\)$"):
        side_by_side([("params", "parameters", "count")], ["a"], {"a": {"params": 1}}, "tsv")
    for argv in (["report", "llama3.2-1b", "--format", "docx"], ["count", "llama3.2-1b", "--format", "tsv"]):
        r = cli(argv)
        assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
        assert re.search(rf"format: unknown {argv[-1]!r}", r.err), r.err


def test_count_table_shows_exact_and_human_total(cli):
    """The total row shows the exact count with thousands separators and a rounded one."""
    r = cli(["count", "llama2-13b"])
    assert r.code == 0 and r.err == ""
    total = [line for line in r.out.splitlines() if line.startswith("total")][0]
    assert "13,015,864,320" in total and "13.02B" in total


def test_count_json(cli):
    """--json holds the exact total as an int, the derived d_ff and every component."""
    r = cli(["count", "llama3.1-8b", "--json"])
    data = json.loads(r.out)
    assert r.code == 0
    assert data["params"]["total"] == 8_030_261_248 and isinstance(data["params"]["total"], int)
    assert data["config"]["hidden_dim"] == 14336
    for key in ("embedding", "block/attention/wq", "block/feed_forward/w1", "norm", "lm_head"):
        assert key in data["params"]


def test_count_unknown_model(cli):
    """An unknown model name: exit 2, nothing on stdout, one stderr line naming it."""
    r = cli(["count", "no-such-model"])
    assert (r.code, r.out) == (2, "") and r.err.count("\n") == 1 and "no-such-model" in r.err


def test_count_requires_a_model(cli):
    """count without a model is a usage error: exit 2 and one stderr line."""
    r = cli(["count"])
    assert r.code == 2 and r.err.count("\n") == 1


@pytest.mark.parametrize("flag,expected", [
    ("--gqa", 2 * S.d * S.d_h * (S.n_h + S.n_kv)),
    ("--mha", 4 * S.d * S.d_h * S.n_h),
    ("--mqa", 2 * S.d * S.d_h * (S.n_h + 1)),
])
def test_derive_attention_text_parses_back(flag, expected, cli):
    """The text derivation ends with a closed form that SymPy parses back to the attention count."""
    r = cli(["derive", "--component", "attention", flag, "--format", "text"])
    assert r.code == 0
    names = {sym.name: sym for sym in S.SYMBOLS}
    closed = r.out.strip().splitlines()[-1].split("=", 1)[1]  # the derivation ends with the closed form
    assert sp.expand(sp.sympify(closed, locals=names) - expected) == 0


def test_derive_latex(cli):
    """The LaTeX derivation writes the symbols as LaTeX."""
    r = cli(["derive", "--component", "attention", "--gqa", "--format", "latex"])
    assert r.code == 0 and "n_{kv}" in r.out and "d_h" in r.out


def _measured_component(m: dict, component: str, layers: int) -> int:
    """A component's parameters from the reference model's numel per breakdown key (one block's share
    for the parts every block has)."""
    per_block = lambda prefix: sum(v for k, v in m.items() if k.startswith(prefix)) // layers  # noqa: E731
    return {"embedding": m["embedding"], "lm_head": m["lm_head"], "model": m["total"], "rmsnorm": m["norm"],
            "attention": per_block("block/attention/"), "feed_forward": per_block("block/feed_forward/"),
            "swiglu": per_block("block/feed_forward/"), "rope": per_block("block/attention/rope"),
            "block": per_block("block/")}[component]


@pytest.mark.parametrize("component", ["embedding", "attention", "feed_forward", "swiglu", "rmsnorm",
                                       "rope", "lm_head", "block", "model"])
def test_derive_every_component(component, cli, preset_numel):
    """Every component has a derivation, which ends with the number of parameters the reference model
    holds for it (Llama-2-7B, built on the meta device), in lines of at most 100 columns."""
    r = cli(["derive", "--component", component, "--model", "llama2-7b"])
    assert r.code == 0 and r.err == "" and max(map(len, r.out.splitlines())) <= 100
    last = re.search(r"= ([\d,]+) \(", r.out.strip().splitlines()[-1])
    assert int(last.group(1).replace(",", "")) == _measured_component(preset_numel("llama2-7b"), component, 32)


def test_derive_unknown_component(cli):
    """An unknown component is a usage error: exit 2 and one stderr line naming it."""
    r = cli(["derive", "--component", "nope"])
    assert r.code == 2 and r.err.count("\n") == 1 and "nope" in r.err


def test_presets_lists_every_preset_with_total(cli):
    """presets lists the presets with their exact totals."""
    r = cli(["presets"])
    assert r.code == 0 and "8,030,261,248" in r.out and "405,853,388,800" in r.out


def test_verify_agrees(cli, torch):
    """verify builds the torch reference model and finds every component count equal."""
    r = cli(["verify", "llama3.2-1b"])
    assert r.code == 0 and "DIFFERS" not in r.out and "all components agree" in r.out


def test_verify_without_torch_says_so():
    """Without torch, verify exits 2 with one stderr line that names torch."""
    code = ("import sys; sys.modules['torch'] = None\n"  # import torch now raises ImportError
            "from symllm.cli import main; sys.exit(main(['verify', 'llama3.2-1b']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2 and "torch" in proc.stderr and proc.stderr.count("\n") == 1


def test_python_dash_m():
    """python -m symllm runs the same command line."""
    out = subprocess.run([sys.executable, "-m", "symllm", "count", "llama3.1-8b", "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["params"]["total"] == 8_030_261_248


def test_console_script_when_installed():
    """The installed symllm console command reports an error as one line, never a traceback."""
    exe = shutil.which("symllm")
    if exe is None:
        if CI:
            pytest.fail("CI=true but the symllm console command is not installed")
        pytest.skip("symllm is not installed as a console command (pip install .)")
    proc = subprocess.run([exe, "count", "no-such-model"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


# The command line does not import torch (only verify needs it): tests/test_startup.py's
# test_warm_count_builds_no_formula runs `symllm count` in fresh processes and finds no torch in either.


# --- what a reader sees in a terminal -------------------------------------------------------------------

WIDE = [["count", "llama3.1-8b"], ["count", "llama3.1-8b", "--seq", "131072"],
        ["count", "llama3.1-405b", "--seq", "131072", "--batch", "64", "--gen", "131072", "--dtype", "int4",
         "--recompute", "--zero", "3", "--dp", "1024"],
        ["presets"], ["derive", "--quantity", "memory", "--model", "llama3.1-8b"],
        ["derive", "--quantity", "memory", "--model", "llama3.1-405b", "--memory", "inference_peak"],
        ["derive", "--quantity", "flops", "--model", "llama3.1-405b", "--phase", "generation", "--gen", "1000",
         "--seq", "131072"],
        ["derive", "--component", "block", "--quantity", "flops", "--model", "llama3.1-405b"]]


PRETTY = [argv + ["--format", "pretty"] for argv in WIDE if argv[0] == "derive"]


def _arguments() -> list:
    """``(subcommand, action)`` for every argument of every subcommand, argparse's parsers walked (its own
    ``-h`` left out)."""
    import argparse

    from symllm.cli import parser as command_line
    (sub,) = [a for a in command_line.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return [(name, action) for name, p in sub.choices.items() for action in p._actions
            if not isinstance(action, argparse._HelpAction)]


def test_every_option_has_help_and_a_stated_default(cli):
    """Every argument of every subcommand has a help line, and every option that takes a value and may be left
    out says what leaving it out means ("default"; a flag's is off, a required one has none): sweep's grid
    options (--dim, --n-layers, ...) had no help at all, and --gpu, --tokens, --table, --vocab-size, ... said
    nothing of their absence. Sweep's grid options say what they vary from the one table of meanings
    (symllm.arch.glossary, which the symbols' descriptions are too): --dim is the model width d, --n-kv-heads the
    key/value heads n_kv, as a report's symbol table says."""
    arguments = _arguments()
    assert {n for n, _ in arguments} == {"count", "derive", "report", "presets", "verify", "plan", "sweep", "plot"}
    assert len(arguments) > 200
    silent = [(name, action.dest) for name, action in arguments if not (action.help or "").strip()]
    assert not silent, silent
    no_default = [(name, action.option_strings[0]) for name, action in arguments
                  if action.option_strings and action.nargs != 0 and not action.required
                  and "default" not in action.help]
    assert not no_default, no_default
    sweep = {action.dest: action.help for name, action in arguments if name == "sweep"}
    assert sweep["dim"].startswith("model width (hidden size), d (default: ")
    assert sweep["n_kv_heads"].startswith(S.describe(S.n_kv) + ", n_kv (default: ")
    assert sweep["chunk_size"].endswith("(memory stays flat; default %(default)s)")
    text = cli(["sweep", "--help"]).out
    assert "(memory stays flat; default 262144)" in " ".join(text.split())
    for field in ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim", "multiple_of",
                  "ffn_dim_multiplier"):
        assert S.describe(S.CODE_NAMES[field]) in " ".join(text.split()), field


@pytest.mark.parametrize("argv", WIDE + PRETTY + [[c, "--help"] for c in ["count", "derive", "report", "presets",
                                                                          "verify", "sweep"]] + [["--help"]])
def test_help_and_text_fit_100_columns_on_a_wide_terminal(argv, cli, monkeypatch):
    """count, presets, derive (text and pretty) and every --help fit 100 columns, even on a wider
    terminal (they printed 103-273)."""
    monkeypatch.setenv("COLUMNS", "250")
    r = cli(argv)
    assert r.code == 0, r.err
    widest = max(r.out.splitlines(), key=len)
    assert len(widest) <= 100, widest


def test_derive_memory_shows_bytes_in_byte_units(cli):
    """derive --quantity memory ends with the bytes in GiB, as count shows them (it said "16.06B")."""
    r = cli(["derive", "--quantity", "memory", "--model", "llama3.1-8b"])
    total = 16_060_522_496 + 2 * 32 * 8 * 128 * 2 * 2048  # weights (count's) + bf16 KV cache of 2,048 tokens
    assert r.out.rstrip().endswith(f"= {total:,} ({total / 2**30:.2f} GiB)")


@pytest.mark.parametrize("argv", [["--component", "attention", "--mha"], ["--component", "feed_forward"],
                                  ["--component", "attention", "--mqa"], ["--component", "rmsnorm"]])
def test_derive_prints_no_line_twice(argv, cli):
    """No derivation repeats a line (`= 4*d*d_h*n_h` twice for MHA, `= 3*d*d_ff` for the feed-forward)."""
    lines = [line.strip() for line in cli(["derive", *argv]).out.splitlines() if line.strip()]
    assert len(lines) == len(set(lines)), lines


@pytest.mark.parametrize("argv", [["--component", "rope"], ["--component", "rope", "--model", "llama2-7b"],
                                  ["--component", "embedding"]])
def test_derive_prints_no_empty_heading(argv, cli):
    """Every heading (an unindented line) is followed by an indented line: rope printed "symbols" alone."""
    lines = cli(["derive", *argv]).out.splitlines()
    for i, line in enumerate(lines[1:-1], 1):
        if line and not line.startswith(" ") and ":" not in line:
            assert lines[i + 1].startswith("  "), (line, lines)


def test_presets_sort_naturally(cli):
    """codellama-7b before codellama-13b, llama3-8b before llama3.1-8b before llama3.1-70b before llama3.1-405b."""
    names = [line.split()[0] for line in cli(["presets"]).out.splitlines()[2:] if line[:1].strip()]
    for first, second in [("codellama-7b", "codellama-13b"), ("llama1-7b", "llama1-65b"), ("llama3-8b", "llama3.1-8b"),
                          ("llama3.1-8b", "llama3.1-70b"), ("llama3.1-70b", "llama3.1-405b"), ("llama2-70b", "llama3-8b")]:
        assert names.index(first) < names.index(second)


@pytest.mark.parametrize("argv,flags", [
    (["--quantity", "memory", "--phase", "decode"], "--phase"),
    (["--quantity", "flops", "--zero", "2", "--dtype", "int8"], "--dtype, --zero"),
    (["--quantity", "params", "--seq", "512"], "--seq"),
])
def test_derive_says_which_flags_do_not_apply(argv, flags, cli):
    """A flag the quantity does not use is named on stderr (one line) instead of silently ignored."""
    r = cli(["derive", "--model", "llama3.2-1b", *argv])
    assert r.code == 0 and r.err.count("\n") == 1
    assert r.err.startswith("symllm: warning: ") and flags in r.err and "ignored" in r.err
    assert cli(["derive", "--model", "llama3.2-1b", "--quantity", "flops", "--phase", "decode"]).err == ""


def test_example_plots_are_not_left_in_the_working_tree():
    """Running the sweep notebook by hand writes sweep_*.png into examples/: git ignores them."""
    root = Path(__file__).parent.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        if CI:  # CI runs in its clone of the repository
            pytest.fail("CI=true but this is not a git checkout with git installed")
        pytest.skip("not a git checkout")
    for name in ("sweep_params.png", "sweep_chinchilla.png"):
        assert subprocess.run(["git", "check-ignore", "-q", f"examples/{name}"], cwd=root).returncode == 0


def test_model_name_with_blank_lines_makes_a_latex_document(cli, tmp_path):
    """A config file named with two line breaks: the standalone LaTeX report keeps the name on one line (a
    blank line inside \\title ended it with a paragraph; the rest of the "% symllm report:" comment's name
    stood on its own uncommented line), and pdflatex compiles it when installed."""
    import shutil
    import subprocess
    config = json.loads((Path(__file__).parent.parent / "symllm/presets/llama3.2-1b.json").read_text())["config"]
    path = tmp_path / "a\n\nb.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "r.tex"
    r = cli(["report", path, "--format", "latex", "--standalone", "-o", out])
    assert r.code == 0, r.err
    tex = out.read_text()
    assert "\\title{a b: " in tex and "% symllm report: a b" in tex and "\n\n\n" not in tex.split("\\begin{document}")[0]
    if shutil.which("pdflatex"):
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "r.tex"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-2000:]


def test_roofline_times_of_any_size_print(cli):
    """count --gpu with --tokens of 400 digits on a training step that fits (llama3.2-1b at seq 128): the
    days print (float() of the exact time raised OverflowError); in JSON a time past a float is the exact
    "p/q". A 300-digit --seq fits nowhere, so it has no time at all (nothing is timed that does not fit),
    and its peaks print in scientific notation."""
    tokens = "9" * 400  # 1e400 tokens: days past a float's range
    r = cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--seq", "128", "--tokens", tokens])
    assert r.code == 0, r.err
    assert "e+" in next(line for line in r.out.splitlines() if line.startswith("1.000e+400 tokens"))
    r = cli(["count", "llama3.2-1b", "--json", "--gpu", "h100-sxm", "--seq", "128", "--tokens", tokens])
    assert r.code == 0, r.err
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        time = json.loads(r.out)["time"]
    finally:
        sys.set_int_max_str_digits(limit)
    assert time["training_fits"]
    assert time["training_s"] is None  # 1e400 tokens at under 1e10 tokens/s: past a float's range, null (docs/json.md)
    r = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "9" * 300])
    assert r.code == 0, r.err
    lines = {line.split("  ")[0]: line for line in r.out.splitlines()}
    assert "e+" in lines["inference peak"] and lines["prefill"].endswith("does not fit")


@pytest.mark.parametrize("stack", ["hf-sdpa", "hf-eager"])
def test_per_gpu_memory_on_one_gpu_is_the_stacks(cli, stack):
    """count --json --stack hf-sdpa on one GPU: memory_per_gpu is memory's, the asked-for stack's (it was the
    ideal stack's activations, 275,960,430,592 beside 257,266,679,812)."""
    r = cli(["count", "llama2-7b", "--json", "--stack", stack, "--batch", "16", "--context", "512"])
    assert r.code == 0, r.err
    data = json.loads(r.out)
    for kind, value in data["memory_per_gpu"].items():
        assert value == data["memory"][kind], (kind, value, data["memory"][kind])


# --- side by side, round trips, 100 columns (issue 24 items 3-5) ---

def test_count_several_models_side_by_side(cli):
    """count A B C prints one table with a column per model; csv has the exact numbers: the published
    totals, and the KV cache per token by hand (2·L·n_kv·d_h·2 bytes of bf16; Mixtral holds it per
    token like a dense model); json, markdown and latex show the same; with --gpu the fit rows."""
    from .conftest import PUBLISHED
    models = ["llama3.1-8b", "mistral-7b", "mixtral-8x7b"]
    r = cli(["count", *models, "--format", "csv"])
    assert r.code == 0, r.err
    rows = {line.split(",")[0]: line.split(",")[1:] for line in r.out.splitlines()}
    assert rows["quantity"] == models
    assert rows["params"] == [str(PUBLISHED[m]["total"]) for m in models]
    assert rows["kv_cache_per_token"] == [str(2 * 32 * 8 * 128 * 2)] * 3
    assert int(rows["active"][2]) < int(rows["params"][2]) and rows["active"][0] == rows["params"][0]
    data = json.loads(cli(["count", *models, "--json"]).out)
    assert [data["models"][m]["params"] for m in models] == [PUBLISHED[m]["total"] for m in models]
    md = cli(["count", *models, "--format", "markdown"]).out
    assert md.splitlines()[0] == "| quantity | " + " | ".join(models) + " |" and "| 8,030,261,248 |" in md
    tex = cli(["count", *models, "--format", "latex"]).out
    assert tex.startswith("\\begin{tabular}{@{}lrrr@{}}") and "8.03B" in tex
    text = cli(["count", *models, "--gpu", "h100-sxm"]).out
    assert "inference peak fits" in text and "training peak fits" in text
    assert all(len(line) <= 100 for line in text.splitlines())
    assert cli(["count", "llama3.1-8b", "llama3.1-8b"]).err.strip() == "symllm: error: model: llama3.1-8b is given twice"


@pytest.mark.parametrize("name", ["llama3-8b", "llama4-scout-17b-16e"])
def test_count_json_config_reads_back(name, cli, tmp_path):
    """Save count --json's "config", count the file: the same parameters, FLOPs and memory (Meta's
    rounding; an MoE with chunked attention and layers without RoPE)."""
    first = json.loads(cli(["count", name, "--json"]).out)
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(first["config"]))
    r = cli(["count", str(saved), "--json"])
    assert r.code == 0, r.err
    again = json.loads(r.out)
    for key in ("params", "flops", "memory", "config"):
        assert again[key] == first[key], key


CLI_LINES = [["count", "llama3.2-1b", "--gpu", "l40s"],
             ["derive", "--quantity", "decode_batch", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--context", "390"],
             ["derive", "--component", "model", "--model", "llama4-maverick-17b-128e"],
             ["derive", "--quantity", "decode_batch", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--context",
              "100000"],
             ["count", "llama3.1-8b", "tinyllama-1.1b", "llama3.2-1b", "llama2-7b", "codellama-7b", "llama3-8b"]]


#: the other terminal outputs (text, not a file format): derive of each component and quantity, a report's
#: plain-text counterpart (count --gpu --serve), plan, the sweep's summary, presets, every --help, and errors
#: whose lists of known names or paths were long
TEXT_LINES = [*(["derive", "--component", c, "--model", m] for c, m in (  # the dense ones: test_derive_every_component
                  ("moe", "mixtral-8x7b"), ("router", "mixtral-8x7b"), ("experts", "mixtral-8x7b"),
                  ("sinks", "gpt-oss-20b"))),
              *(["derive", "--quantity", q, "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "2"]
                for q in ("params", "flops", "memory", "comm", "ridge")),
              ["count", "llama3.1-70b", "--serve", "--gpu", "h100-sxm", "--tp", "4", "--seq", "131072"],
              ["plan", "llama3.1-70b", "--gpus", "8xh100-sxm", "--train"], ["plan", "llama3.1-8b", "--gpus", "2xh100-sxm"],
              ["sweep", "--base", "llama3.1-8b", "--seq", "1024,2048", "--quantity", "params", "--n-layers", "0,2"],
              ["presets"], ["--help"], *([cmd, "--help"] for cmd in ("count", "derive", "report", "presets", "verify",
                                                                    "plan", "sweep", "plot")),
              ["derive", "--component", "nope"], ["count", "llama3.1-8b", "--gpu", "h100"],
              ["count", "llama3.1-8b", "--weight-format", "Q4_K_L"], ["count", "llama3.1-8b", "--gpu-memory", "24"],
              ["count", "llama3.1-8b", "--gpu", "a100-80gb", "--dtype", "fp8"], ["count", "llama3.1-8"],
              ["count", "/no/such/folder/with/a/rather/long/name/below/the/working/directory/config.json"],
              ["derive", "--notation", "n.toml", "--model", "llama3.1-8b"]]


#: --format markdown, read in a terminal too: derive of each component and quantity (display math and the
#: 100-column prose of its list and notes), a comparison of six models (156 columns: split into tables); the
#: reports' Markdown and LaTeX: tests/test_render.py's papers test (tests/outputs.py renders them once, for the
#: papers they are \input into and for a terminal)
MARKDOWN_LINES = [*(["derive", "--component", c] for c in ("embedding", "attention", "feed_forward", "swiglu",
                                                           "rmsnorm", "rope", "lm_head", "block", "model")),
                  *(["derive", "--component", c, "--model", "mixtral-8x7b"] for c in ("moe", "router", "experts")),
                  ["derive", "--component", "sinks", "--model", "gpt-oss-20b"],
                  ["derive", "--model", "deepseek-v3"],
                  *(["derive", "--quantity", q, "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "2"]
                    for q in ("flops", "memory", "ridge")),  # comm: in the layout report
                  ["derive", "--quantity", "memory", "--model", "llama3.1-405b", "--memory", "inference_peak"],
                  ["count", "llama3.1-8b", "tinyllama-1.1b", "llama3.2-1b", "llama2-7b", "codellama-7b", "llama3-8b"]]


def test_terminal_output_fits_100_columns(cli):
    """No line of count (every preset), of the long derivations and error lines the issue names, of a
    comparison, of any other text output (TEXT_LINES) or of a --format markdown or latex output
    (MARKDOWN_LINES; the reports': tests/test_render.py) is over 100 columns; bytes per second are in bytes
    units (it said 864.00BB/s), and no output says BB."""
    from symllm.arch.config import preset_names
    outputs = [cli(["count", name]) for name in preset_names()] + [cli(argv) for argv in CLI_LINES]
    markdown = [cli([*argv, "--format", "markdown"]) for argv in MARKDOWN_LINES]
    latex = [cli([*argv, "--format", "latex"]) for argv in MARKDOWN_LINES]  # LaTeX source, printed, too
    assert all(r.code == 0 and r.out.count("\n") > 5 for r in latex)
    for r in outputs + [cli(argv) for argv in TEXT_LINES] + markdown + latex:
        long = [line for line in (r.out + r.err).splitlines() if len(line) > 100]
        assert not long, long
        assert not re.search(r"\dBB\b|BB/s", r.out + r.err)
    assert all(r.code == 0 and r.out.count("\n") > 5 for r in markdown)
    assert markdown[-1].out.count("| quantity |") == 2  # six models: two tables, each within 100 columns
    l40s = outputs[len(preset_names())].out
    assert "BB/s" not in l40s and "864 GB/s" in l40s  # NVIDIA's L40S datasheet, in bytes units
    assert outputs[-2].code == 0 and "memory-bound at any batch on h100-sxm" in " ".join(outputs[-2].out.split())
    assert outputs[-1].out.strip().count("\n\n") == 1  # six models: two tables, each within 100 columns


def test_sweep_over_several_bases_and_a_table_with_a_name_column(cli, tmp_path):
    """sweep --base a,b writes one table with a base column (KV cache by hand: 2·L·n_kv·d_h·2 bytes per
    token); a --table whose model column names each row's base is read as strings, each row swept on its
    own base (the published totals); a column only one base has is empty for the other."""
    r = cli(["sweep", "--base", "llama3.1-8b,llama2-7b", "--seq", "1024,8192", "--quantity", "params,kv_cache"])
    assert r.code == 0, r.err
    header, *rows = [line.split(",") for line in r.out.splitlines()]
    got = [dict(zip(header, row)) for row in rows]
    assert header[0] == "base" and [g["base"] for g in got] == ["llama3.1-8b"] * 2 + ["llama2-7b"] * 2
    per_token = {"llama3.1-8b": 2 * 32 * 8 * 128 * 2, "llama2-7b": 2 * 32 * 32 * 128 * 2}
    assert [int(g["kv_cache"]) for g in got] == [per_token[g["base"]] * int(g["seq"]) for g in got]
    assert {g["n_kv_heads"] for g in got if g["base"] == "llama3.1-8b"} == {""}  # stated there, not swept
    table = tmp_path / "t.csv"
    table.write_text("model,n_layers\nllama2-7b,32\nllama3-8b,32\nllama2-7b,1\n")
    r = cli(["sweep", "--table", str(table), "--format", "jsonl"])
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    from .conftest import PUBLISHED
    assert [(x["base"], x["n_layers"]) for x in rows] == [("llama2-7b", 32), ("llama2-7b", 1), ("llama3-8b", 32)]
    assert rows[0]["params"] == PUBLISHED["llama2-7b"]["total"] and rows[2]["params"] == PUBLISHED["llama3-8b"]["total"]
    assert cli(["sweep", "--table", str(table), "--base", "llama2-7b"]).err.startswith("symllm: error: base:")
    table.write_text("n_layers,dim\n2,x\n")
    assert cli(["sweep", "--base", "llama2-7b", "--table", str(table)]).err.startswith(
        "symllm: error: dim: expected a number")


# --- spellings people type, and messages shown whole (issue 41, item 4) -------------------------------------

@pytest.mark.parametrize("spelling, name", [
    ("Q4_K_M", "Q4_K_M"), ("q4_k_m", "Q4_K_M"), ("gguf:Q4_K_M", "Q4_K_M"), ("GGUF:q4_k_m", "Q4_K_M"),
    ("awq", "awq"), ("AWQ", "awq"), ("gguf:iq4_xs", "gguf:IQ4_XS"), ("gguf:IQ4_XS", "gguf:IQ4_XS"),
])
def test_weight_formats_in_any_case_and_with_the_gguf_prefix(cli, spelling, name):
    """--weight-format in any case, a llama.cpp file type also with gguf: (llama-quantize and Ollama take any
    case): read as the one name, so the bytes are that format's (Q4_K_M for Llama-3.1-8B: llama-bench's
    published 4.58 GiB)."""
    r = cli(["count", "llama3.1-8b", "--json", "--weight-format", spelling])
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["workload"]["weight_format"] == name and data["weight_format"]["format"] == name
    if name == "Q4_K_M":
        assert round(data["weight_format"]["bytes"] / 2 ** 30, 2) == 4.58
    r = cli(["count", "llama3.1-8b", "--weight-format", "q4_k_l"])
    assert r.code == 2 and r.err.count("\n") == 1 and "see docs/formats.md" in r.err and "..." not in r.err


@pytest.mark.parametrize("flag, text, expected", [
    ("--seq", "128k", 128 * 1024),            # a context window: binary, 131,072
    ("--seq", "128K", 131072),
    ("--seq", "1M", 1024 * 1024),
    ("--context", "1.5k", 1536),              # 1.5 x 1024, whole
    ("--seq", "4096", 4096),
    ("--gen", "2k", 2048),
    ("--tokens", "15T", 15 * 10 ** 12),       # a token budget: decimal, 15,000,000,000,000
    ("--tokens", "1e12", 10 ** 12),
    ("--tokens", "2.5M", 2500000),
    ("--tokens", "300B", None),               # B is not a suffix (billion or bytes?): refused
    ("--batch", "1k", 1000),                  # a batch of sequences: decimal, 1,000
    ("--batch", "2K", 2000),
])
def test_token_counts_take_suffixes(cli, flag, text, expected):
    """k/M/G/T and exponents: lengths in binary (128k = 131,072, as a model's window is meant), token budgets
    in decimal (15T = 15·10^12); the workload says the integer, and the KV cache at --seq 128k is the hand
    count 2 · 32 layers · 8 KV heads · 128 · 2 bytes a token."""
    r = cli(["count", "llama3.1-8b", "--json", "--gpu", "h100-sxm", flag, text])
    if expected is None:
        assert r.code == 2 and r.err.startswith("symllm: error: tokens: ") and r.err.count("\n") == 1, r.err
        return
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["workload"][flag[2:]] == expected
    if (flag, text) == ("--seq", "128k"):
        assert data["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 2 * 131072
        assert data["workload"]["context"] == 131072


@pytest.mark.parametrize("flag, text, message", [
    ("--seq", "1.3k", "seq: '1.3k' is 1331.2 tokens, not a whole number"),
    ("--seq", "-1k", "seq: expected a positive integer, got -1024"),
    ("--seq", "0k", "seq: expected a positive integer, got 0"),
    ("--context", "abc", "context: expected a whole number of tokens"),
    ("--tokens", "1e-3", "tokens: '1e-3' is 0.001 tokens, not a whole number"),
    ("--gen", "-1", "gen: expected a non-negative integer, got -1"),
    ("--batch", "1.5", "batch: '1.5' is 1.5 sequences, not a whole number"),
    ("--batch", "0k", "batch: expected a positive integer, got 0"),
])
def test_bad_token_counts_are_one_line_naming_the_field(cli, flag, text, message):
    """A count that is not whole, negative or not a number: one line naming the field, exit 2."""
    r = cli(["count", "llama3.1-8b", f"{flag}={text}"])
    assert r.code == 2 and r.err.startswith(f"symllm: error: {message}") and r.err.count("\n") == 1, r.err


def test_batch_takes_suffixes_in_a_sweep_too(cli):
    """A sweep's --batch values take the suffix as count's --batch does: 1k and 2k are 1,000 and 2,000."""
    r = cli(["sweep", "--base", "llama3.1-8b", "--batch", "1k,2k", "--quantity", "kv_cache"])
    assert r.code == 0, r.err
    rows = [line.split(",") for line in r.out.splitlines()[1:]]
    header = r.out.splitlines()[0].split(",")
    assert [int(row[header.index("batch")]) for row in rows] == [1000, 2000]
    kv = [int(row[header.index("kv_cache")]) for row in rows]
    assert kv == [2 * 32 * 8 * 128 * 2 * 2048 * b for b in (1000, 2000)]  # K,V x L x n_kv x d_h x bf16 x s x b


@pytest.mark.parametrize("flags", [("--dtype", "FP8"), ("--dtype", "Fp8"), ("--kv-dtype", "FP8"),
                                   ("--act-dtype", "BF16"), ("--compute-dtype", "FP8")])
def test_dtypes_are_read_in_any_case(cli, flags):
    """--dtype FP8 is fp8, as --weight-format AWQ is awq: the JSON's workload names the lower-case dtype, and
    fp8 weights are one byte each: 8,030,261,248 parameters (Meta's published 8B total), one byte each."""
    r = cli(["count", "llama3.1-8b", "--json", *flags])
    assert r.code == 0, r.err
    data = json.loads(r.out)
    field = flags[0][2:].replace("-", "_")
    assert data["workload"][field] == flags[1].lower()
    if flags[0] == "--dtype":
        assert data["memory"]["weights"] == 8030261248 * 1
    if flags[0] == "--kv-dtype":
        assert data["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 1 * 2048  # fp8: one byte an element
    r = cli(["count", "llama3.1-8b", flags[0], "FP9"])
    assert r.code == 2 and r.err.count("\n") == 1 and "'FP9'" in r.err, r.err


def test_lists_of_choices_are_whole_or_pointed_to(cli, tmp_path):
    """A list of known names in an error is the whole list where it fits (dtype's seven), else the names
    closest to the one typed and where the whole list is: never cut short ("...") and never mid-word."""
    from symllm.arch.families.hf import registry
    r = cli(["count", "llama3.1-8b", "--dtype", "nope"])
    assert r.err.rstrip().endswith("(known: fp64, fp32, bf16, fp16, fp8, int8, int4)"), r.err
    config = tmp_path / "config.json"
    for model_type, near in (("lama", "llama"), ("gpt2", None)):
        config.write_text(json.dumps({"model_type": model_type, "hidden_size": 64}))
        r = cli(["count", config])
        assert r.code == 2 and f"all {len(registry())}: see docs/families.md)" in r.err, r.err
        assert near is None or f"(known: {near};" in r.err, r.err
    for argv in (["sweep", "--base", "llama2-7b", "--quantity", "kv_cache_elementz"],
                 ["sweep", "--base", "llama2-7b", "--quantity", "params:block/attention/wz"],
                 ["count", "llama3.1-8b", "--gpu", "h100x"],  # (h100 starts 4 cards' names: it lists them)
                 ["count", "llama3.1-8b", "--lora-rank", "8", "--lora-targets", "qkv"],
                 ["derive", "--component", "attn"]):
        r = cli(argv)
        assert r.code == 2 and r.err.count("\n") == 1, r.err
        assert "..." not in r.err and re.search(r"see \S+", r.err), r.err
    r = cli(["sweep", "--base", "llama2-7b", "--quantity", "flopz"])
    assert "(known: flops" in r.err and "see docs/sweeps.md)" in r.err, r.err


def test_listed_never_cuts_a_list():
    """validate.listed: the whole list, or only whole names of it and a pointer to the rest."""
    from symllm.validate import listed
    names = [f"name{i}" for i in range(30)]
    assert listed(names[:3]) == "name0, name1, name2"
    for near in (None, "name1", "nothing"):
        text = listed(names, 40, see="symllm presets", near=near)
        shown, _, pointer = text.rpartition("; ") if ";" in text else ("", "", text)
        assert pointer.endswith("see symllm presets") and len(text) <= 40, text
        assert all(n in names for n in shown.split(", ") if n), text



def _refusals():
    from symllm.arch import layers, part_options
    from symllm.costs import scaling
    family = scaling.Family(aspect=128, head_dim=128, gqa=4)
    # (what is refused, the line expected, written out: validate.choice's "FIELD: unknown 'VALUE' (known: ...)")
    return [
        (lambda: layers.Structure(qk_norm="l3"),
         r"qk_norm: unknown 'l3' \(known: None, rmsnorm, l2, full, layernorm\)"),
        (lambda: layers.Structure(hidden="metaa"), r"hidden: unknown 'metaa' \(known: explicit, meta, meta_plain\)"),
        (lambda: scaling.size_for(1e9, family, solve_for="breadth"),
         r"solve_for: unknown 'breadth' \(known: width, depth\)"),
        (lambda: scaling.size_for(1e9, family, quantity="flops"),
         r"quantity: unknown 'flops' \(known: params, weight_bytes, training\)"),
        (lambda: scaling.approximate(1, drop=("lower", "bias")), r"drop: unknown 'bias' \(known: lower, vocab\)"),
        (lambda: scaling.convention("kaplan"), r"convention: unknown 'kaplan' \(known: .*kaplan2020.*\)"),
        # a list too long for the line: the names nearest the value, and where the whole list is
        (lambda: part_options.option("bias"),
         r"option: unknown 'bias' \(known: qkv_bias[a-z_, ]*; all \d+: see part_options.OPTIONS\)"),
    ]


@pytest.mark.parametrize("case", range(7))
def test_unknown_names_are_validate_choice_lines(case):
    """What was refused by a message written by hand ("unknown 'x' (a, b)", "(known: rmsnorm, l2, ...)") is
    validate.choice's line: the field, the value quoted, "known:" and the names, whole or pointed to."""
    from symllm.errors import SymllmError
    refuse, line = _refusals()[case]
    with pytest.raises(SymllmError) as e:
        refuse()
    assert re.fullmatch(line, str(e.value)), str(e.value)

def test_a_hub_id_not_cached_says_nothing_is_downloaded(cli, tmp_path, monkeypatch):
    """A Hub id not in the local cache: one line saying nothing is downloaded, naming the preset read from
    that repository (in any case) where there is one; none for an unknown repository."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    for model, preset in (("meta-llama/Llama-3.1-8B", "llama3.1-8b"), ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"),
                          ("qwen/qwen3-8b", "qwen3-8b"), ("org/absent", None)):
        r = cli(["count", model])
        assert r.code == 2 and r.err.count("\n") == 1, r.err
        assert "downloads nothing" in r.err or "nothing is downloaded" in r.err, r.err
        assert (f"preset {preset}" in r.err) if preset else ("not a preset" in r.err), r.err


def test_sweep_axes_take_token_suffixes(cli):
    """sweep --seq 2k:8k:2k,128k: the suffixes in ranges too (binary lengths), each row's KV cache the hand
    count of 131,072 bytes a token (2 · 32 layers · 8 KV heads · 128 · 2 bytes) for Llama-3.1-8B."""
    r = cli(["sweep", "--base", "llama3.1-8b", "--seq", "2k:8k:2k,128k", "--quantity", "kv_cache"])
    assert r.code == 0, r.err
    header, *rows = [line.split(",") for line in r.out.splitlines()]
    got = [dict(zip(header, row)) for row in rows]
    assert [int(g["seq"]) for g in got] == [2048, 4096, 6144, 8192, 131072]
    assert [int(g["kv_cache"]) for g in got] == [2 * 32 * 8 * 128 * 2 * int(g["seq"]) for g in got]


def test_a_training_peak_that_does_not_fit_says_what_would(cli):
    """Where not one micro-batch of the asked seq fits, count says how long a sequence batch 1 could train on
    (it printed "up to batch 0, seq 0" whatever the case): Llama-3.1-8B under ZeRO-3 over 8 H100s at 131,072
    tokens holds 592.80 GiB a GPU; the library's own search gives the longest seq at batch 1, and that seq's
    training peak fits the card's 80 GiB while one token more does not. 405B on one RTX 4090: nothing fits."""
    import symllm
    r = cli(["count", "llama3.1-8b", "--seq", "131072", "--gpu", "h100-sxm", "--zero", "3", "--dp", "8"])
    seq = symllm.workload("llama3.1-8b", seq=131072, gpu="h100-sxm", zero_stage=3, dp=8)["time"]["training_max_seq"]
    assert 0 < seq < 131072 and f"does not fit (batch 1 fits up to seq {seq:,})" in r.out
    peak = lambda n: symllm.workload("llama3.1-8b", seq=n, zero_stage=3, dp=8)["memory"]["training_peak"]  # noqa: E731
    assert peak(seq) <= 80 * 2 ** 30 < peak(seq + 1)
    r = cli(["count", "llama3.1-405b", "--gpu", "rtx4090"])
    assert "does not fit (not even batch 1)" in r.out and "does not fit (not even batch 1, seq 1)" in r.out


def test_count_says_what_mfu_is_a_share_of(cli):
    """count's training step names MFU's denominator: the GPUs times the dense peak of the matmuls' dtype (NVIDIA's
    H100 SXM datasheet: 1,979 TFLOP/s of bf16 with 2:4 sparsity, 3,958 of fp8; dense, half: 989.4 and 1,978.9 in
    the catalogue's digits), and the expected HFU where it is not the MFU: full recomputation runs the forward
    again, 4 passes of the forward's FLOPs where the model's are 3, so HFU = 4/3 x MFU (22.3% x 4/3 = 29.8%)."""
    base = ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--zero", "3", "--dp", "8", "--seq", "8192"]

    def note(argv):
        out = cli(base + argv).out.splitlines()
        i = next(i for i, line in enumerate(out) if line.startswith("training step "))
        return " ".join(" ".join(out[i:i + 3]).split()[4:]).split(" training tokens/s")[0]

    plain = note([])
    assert plain.endswith(" of 8 x 989.4 TFLOP/s dense bf16") and "HFU" not in plain
    assert note(["--compute-dtype", "fp8"]).endswith(" of 8 x 1,978.9 TFLOP/s dense fp8")
    mfu, hfu = (float(x) for x in re.findall(r"([0-9.]+)% expected", note(["--recompute"])))
    assert hfu == pytest.approx(mfu * 4 / 3, abs=0.06)


def test_a_token_budget_with_nothing_to_time_it_is_said(cli):
    """--tokens prints days only where a training step is timed (count and report: --gpu; plan: --train) and
    --price only beside --tokens' GPU-hours: given where they print nothing, a warning says so (they were dropped
    without a word), and the answer is the same as without them (a workload given: count shows one either way)."""
    for argv, lines in ((["count", "llama3.2-1b", "--seq", "2048", "--tokens", "1T"],
                         ["--tokens does not apply without --gpu"]),
                        (["count", "llama3.2-1b", "--gpu", "h100-sxm", "--price", "2"],
                         ["--price does not apply without --tokens"]),
                        (["report", "llama3.2-1b", "--tokens", "1T", "--price", "2"],
                         ["--tokens does not apply without --gpu", "--price does not apply without --gpu"]),
                        (["plan", "llama3.2-1b", "--gpus", "2xl4", "--tokens", "1T", "--top", "1"],
                         ["--tokens does not apply without --train"])):
        r = cli(argv)
        assert r.code == 0 and r.err.splitlines() == [f"symllm: warning: {x} (ignored)" for x in lines], r.err
        assert r.out == cli([a for a in argv if a not in ("--tokens", "1T", "--price", "2")]).out
    assert cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", "--tokens", "1T", "--price", "2"]).err == ""


@pytest.mark.parametrize("flag, value", [("--micro-batches", "8"), ("--compute-dtype", "fp8"),
                                         ("--schedule", "interleaved"), ("--virtual-stages", "4"),
                                         ("--network", "eth-100g")])
def test_an_option_only_a_time_reads_is_named_where_nothing_is_timed(cli, flag, value):
    """sweep and derive time nothing: an option that only changes a time (the bubble, the fp8 peak, the link) moves
    none of their numbers, so it is named as ignored, as --gpu is, rather than taken silently."""
    sweep = ["sweep", "--base", "llama3.2-1b", "--seq", "128", "--pp", "2", "--quantity", "training_flops,comm_pp"]
    plain, given = cli(sweep), cli([*sweep, flag, value])
    assert given.code == 0 and given.out == plain.out
    assert f"symllm: warning: {flag} does not apply to a sweep" in given.err and "warning" not in plain.err
    derive = ["derive", "--component", "model", "--quantity", "flops", "--model", "llama3.2-1b"]
    plain, given = cli(derive), cli([*derive, flag, value])
    assert given.code == 0 and given.out == plain.out
    assert f"symllm: warning: {flag} does not apply to --quantity flops" in given.err


def test_the_flops_row_of_a_training_step_says_it_is_one_micro_batch(cli):
    """With --micro-batches 4 the time's training step runs four micro-batches (its MFU divides four micro-batches'
    FLOPs), while flops.training_step stays one micro-batch's: 6 N per token, by hand at least 6 x 1.235e9 x 1024 =
    7.59e12 and below twice that, not four times it. The table's row says so."""
    out = cli(["count", "llama3.2-1b", "--seq", "1024", "--micro-batches", "4"]).out
    row = next(line for line in out.splitlines() if line.startswith("training_step"))
    assert row.startswith("training_step (1 of 4 micro-batches)")
    flops = int(row.split()[-2].replace(",", ""))
    assert 6 * 1.235e9 * 1024 < flops < 2 * 6 * 1.235e9 * 1024
    assert "training_step (" not in cli(["count", "llama3.2-1b", "--seq", "1024"]).out


@pytest.mark.parametrize("argv", [
    ["count", "gpt-oss-20b", "--tp", "2", "--engine", "hf"],
    ["count", "llama2-70b", "--tp", "4", "--gpu", "a100-80gb", "--engine", "mlc"],
    ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", "lmdeploy"],
    ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", "llama.cpp"],
    ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", "sglang", "--concurrency", "64", "--seq",
     "1000", "--gen", "100"],
    ["plan", "llama3.1-70b", "--gpus", "8xh100-sxm", "--engine", "sglang", "--top", "3"],
], ids=["hf-gpt-oss-tp2", "mlc-tp4", "lmdeploy", "llama.cpp", "sglang-load", "plan-sglang"])
def test_the_new_engine_doors_print_within_100_columns(cli, argv):
    """Every line the engines' doors print fits the terminal's 100 columns (symllm.cli.lines.WIDTH): the per-GPU
    table's title ("...; transformers' plan; routed experts split; a training step)") was its first column's header
    and widened gpt-oss's table to 114."""
    out = cli(argv)
    assert out.code == 0, out.err
    assert [line for line in out.out.splitlines() if len(line) > 100] == []


@pytest.mark.parametrize("argv, engine", [
    (["--engine", "sglang"], "sglang"), ([], "vllm"),
    (["--train", "--engine", "mlc"], "megatron"), (["--train", "--engine", "torchtitan"], "torchtitan"),
])
def test_plan_names_the_engine_of_its_expected_times(cli, argv, engine):
    """plan's expected column is an engine's (count says "sglang (training megatron) conventions"); its note and
    --json name the same engine count's time.expected names for that kind of work. (A serving plan under a training
    engine is refused, as count --serve refuses it: tests/test_plan_ranks.py.)"""
    base = ["plan", "llama3.2-1b", "--gpus", "2xh100-sxm", "--top", "1", *argv]
    assert f"measured efficiencies, {engine} conventions" in " ".join(cli(base).out.split())
    assert json.loads(cli([*base, "--json"]).out)["engine"] == engine
    kind = "training_engine" if "--train" in argv else "engine"
    given = argv[argv.index("--engine"):] if "--engine" in argv else []
    counted = json.loads(cli(["count", "llama3.2-1b", "--gpu", "h100-sxm", *given, "--json"]).out)
    assert counted["time"]["expected"][kind] == engine


@pytest.mark.parametrize("engine, words", [("llama.cpp", "a forward of 512 tokens"), ("hf", "a forward of"),
                                           ("mlc", "a forward of"), ("gpt-fast", "a forward of"),
                                           ("vllm", "profile: 8,192 tokens"), ("sglang", "profile run of")])
def test_only_a_pool_engine_s_activation_peak_is_called_its_profile_run(cli, engine, words):
    """vLLM, SGLang, TensorRT-LLM, lmdeploy and TGI size a pool from what a profile forward leaves; llama.cpp, MLC,
    gpt-fast and transformers allocate their cache by the context and run no profile run (docs/serving.md), so their
    row names the estimate a forward, not the engine's profile run (llama.cpp's: its server's n_batch, 2048 tokens,
    batching.SCHEDULER)."""
    out = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--serve", "--engine", engine]).out
    row = " ".join(next(line for line in out.splitlines() if "activation peak" in line).split())
    assert words in row and ("profile" in row) == words.startswith("profile"), row


def test_plan_given_count_s_serve_flag_says_it_serves_by_default(cli):
    """A new user who ran `count --serve` types `plan --serve`: refused (plan has no such flag: it ranks serving
    layouts unless --train), in one line that says so; another unknown flag keeps argparse's plain line."""
    out = cli(["plan", "llama3.2-1b", "--gpus", "2xh100-sxm", "--serve"])
    assert out.code == 2
    assert out.err.strip() == "symllm: error: unrecognized arguments: --serve (plan ranks serving layouts unless --train)"
    assert cli(["plan", "llama3.2-1b", "--gpus", "2xh100-sxm", "--serves"]).err.strip() == \
        "symllm: error: unrecognized arguments: --serves"
    assert cli(["count", "llama3.2-1b", "--bogus"]).err.strip() == "symllm: error: unrecognized arguments: --bogus"
