"""Reports and derivations: every LaTeX output is compiled by a real pdflatex, Markdown math is
balanced and compiles, golden files pin whole reports, and the numbers a report prints are the
torch reference model's own counts.

pdflatex: skipped when missing locally, a failure when CI=true (CI installs texlive). All LaTeX
snippets of a test go into ONE document (one pdflatex run) to keep the suite fast.

Golden files live in tests/golden/; after an intended change of the output regenerate them with

    SYMLLM_REGEN_GOLDEN=1 python -m pytest tests/test_render.py -k golden

and review the diff (the published totals each golden must show are checked independently).
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given

import symllm
from symllm import cli
from symllm.present import derivation, reports
from symllm.present import render
from symllm.present import notations, printers
from symllm.arch.components import COMPONENTS, attention, model
from symllm.errors import SymllmError
from symllm.files import write_atomic

from . import outputs
from .conftest import PUBLISHED, PUBLISHED_ABOUT
from .strategies import closed_form_terms, positive_points

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
QUANTITIES = ("params", "flops", "memory")
#: reports compiled whole (test_every_latex_output_compiles): Meta's rounding (untied, MHA, tied), a config.json
#: that states d_ff (Mistral; TinyLlama's is tests/outputs.py's, in int4), an MoE
PRESETS = ("llama3.1-8b", "llama2-7b", "llama3.2-1b", "mistral-7b", "mixtral-8x7b")
PAPER = {"d": r"d_\mathrm{model}", "n_h": "h", "n_kv": "g", "d_ff": r"d_\mathrm{ff}", "V": r"\lvert\mathcal{V}\rvert"}
PREAMBLE = "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n\\usepackage{amsmath}\n\\usepackage{booktabs}\n"


# --------------------------------------------------------------------------- pdflatex

def _pdflatex() -> str:
    exe = shutil.which("pdflatex")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("pdflatex is required in CI (apt-get install texlive-latex-base texlive-latex-recommended)")
        pytest.skip("pdflatex is not installed")
    return exe


def _run_pdflatex(source: str, workdir: Path, name: str = "doc") -> str:
    """Compile ``source``; returns the log. Fails the test with the first error and its context."""
    exe = _pdflatex()
    tex = workdir / f"{name}.tex"
    tex.write_text(source, encoding="utf-8")
    proc = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name],
                          cwd=workdir, capture_output=True, text=True, timeout=240)
    log = (workdir / f"{name}.log").read_text(encoding="latin-1") if (workdir / f"{name}.log").exists() else ""
    if proc.returncode != 0 or not (workdir / f"{name}.pdf").exists():
        markers = re.findall(r"SNIPPET: (.*)", log[: log.find("\n!") if "\n!" in log else len(log)])
        error = log[log.find("\n!"):][:1200] if "\n!" in log else proc.stdout[-1500:]
        pytest.fail(f"pdflatex failed in snippet {markers[-1] if markers else '?'}:\n{error}")
    return log


def compile_snippets(snippets: dict[str, str], tmp_path: Path) -> str:
    """Compile many LaTeX fragments as sections of one document (one pdflatex run)."""
    parts = [PREAMBLE, "\\begin{document}\n"]
    for name, body in snippets.items():
        parts.append(f"\\clearpage\n\\typeout{{SNIPPET: {name}}}\n% ---- {name}\n{body}\n")
    parts.append("\\end{document}\n")
    return _run_pdflatex("".join(parts), tmp_path)


def markdown_math(md: str) -> list[tuple[str, str]]:
    """The math of a GitHub Markdown text: (``display``|``inline``, LaTeX); asserts it is balanced."""
    out = []
    fences = re.findall(r"^```math\n(.*?)^```$", md, flags=re.S | re.M)
    assert md.count("```math") == len(fences), "an unclosed ```math block"
    out += [("display", f) for f in fences]
    rest = re.sub(r"^```math\n.*?^```$", "", md, flags=re.S | re.M)
    for line in rest.splitlines():
        spans = re.findall(r"\$`(.*?)`\$", line)
        out += [("inline", s) for s in spans]
        left = re.sub(r"\$`.*?`\$", "", line)
        assert not re.search(r"(?<!\\)\$", left), f"an unbalanced math span in: {line}"
    return out


def markdown_as_latex(md: str) -> str:
    """The math of a Markdown text as LaTeX to compile."""
    return "\n".join(f"\\[{tex}\\]" if kind == "display" else f"${tex}$\\par"
                     for kind, tex in markdown_math(md))


# --------------------------------------------------------------------------- compiled LaTeX

def _derive_outputs():
    out = {}
    for comp in COMPONENTS:
        for quantity in QUANTITIES:
            if quantity == "memory" and comp in ("rope",):
                continue
            for config in (None, "llama3.1-8b"):
                try:
                    dv = derivation.derive(comp, quantity, config=config)
                except SymllmError:
                    continue
                out[f"derive {comp} {quantity} {config}"] = dv.render("latex")
    out["derive attention mha"] = derivation.derive("attention", kind="mha").render("latex")
    out["derive attention mqa"] = derivation.derive("attention", kind="mqa").render("latex")
    out["derive model notation"] = derivation.derive("model", config="llama2-7b", notation=PAPER).render("latex")
    out["derive flops decode"] = derivation.derive("model", "flops", config="llama3.1-8b",
                                                   phase="decode").render("latex")
    out["derive flops generation causal"] = derivation.derive(
        "block", "flops", config="llama3.2-1b", phase="generation", attention="causal", gen=16).render("latex")
    for kind in ("training_states", "activations", "inference_peak", "training_peak"):
        out[f"derive memory {kind}"] = derivation.derive("model", "memory", config="llama2-7b",
                                                         memory=kind).render("latex")
    return out


def test_every_latex_output_compiles(tmp_path):
    """derive (each component and quantity, with and without numbers, MHA/MQA, a custom notation),
    report fragments for several presets (and with a custom notation), notebook reprs and the math of
    the Markdown outputs all compile with pdflatex in one document."""
    snippets = _derive_outputs()
    assert any(k.startswith("derive attention params") for k in snippets)
    assert sum(k.startswith("derive ") and " flops " in k for k in snippets) >= 10
    for name in PRESETS:  # through the command line, as tests/outputs.py renders them: each text once
        snippets[f"report {name}"] = outputs.run("report", name, "--format", "latex").out
        snippets[f"report {name} markdown math"] = markdown_as_latex(outputs.run("report", name, "--format",
                                                                                 "markdown").out)
    odd = symllm.resolve("llama3.2-1b").replace(name="my_model 100% & #1 {x} ~^$\\", attention_bias=True)
    snippets["report awkward name"] = reports.report(odd).render("latex")
    snippets["report notation"] = reports.report("llama3.1-8b", notation=PAPER).render("latex")
    snippets["derive markdown math"] = markdown_as_latex(
        derivation.derive("model", "flops", config="llama3.1-8b").render("markdown"))
    snippets["repr attention"] = attention()._repr_latex_().replace("$$", "\\[", 1).replace("$$", "\\]", 1)
    snippets["repr derivation"] = derivation.derive("model", config="llama2-7b")._repr_latex_() \
        .replace("$$", "\\[", 1).replace("$$", "\\]", 1)
    log = compile_snippets(snippets, tmp_path)
    assert log.count("SNIPPET:") == len(snippets)


@pytest.mark.parametrize("name", ["llama3.1-8b"])  # the tied llama3.2-1b: test_report_peaks_compile_and_show_the_numbers
def test_standalone_report_compiles_through_the_cli(name, tmp_path, monkeypatch):
    """symllm report NAME --format latex --standalone -o r.tex writes a document pdflatex compiles, and
    it prints the published total with thousands separators."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", name, "--format", "latex", "--standalone", "-o", "r.tex"]) == 0
    source = (tmp_path / "r.tex").read_text()
    assert source.startswith("\\documentclass") and "\\end{document}" in source
    total = PUBLISHED[name]["total"] if name in PUBLISHED else symllm.params(name)["total"]
    assert f"{total:,}" in source and f"{total:,}".replace(",", "{,}") in source
    _run_pdflatex(source, tmp_path, "r")
    assert f"{total:,}" in _pdf_text(tmp_path / "r.pdf")  # the PDF itself shows it, as a reader sees it


def _pdf_text(pdf: Path) -> str:
    """The text of a PDF (poppler's pdftotext), whitespace collapsed."""
    exe = shutil.which("pdftotext")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("pdftotext is required in CI (apt-get install poppler-utils)")
        pytest.skip("pdftotext is not installed")
    text = subprocess.run([exe, str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return " ".join(text.split())


@pytest.mark.parametrize("options", [[], ["--stack", "hf-sdpa", "--recompute", "--gpu", "h100-sxm"]],
                         ids=["fused", "hf-sdpa-recompute-gpu"])
def test_report_peaks_compile_and_show_the_numbers(options, tmp_path, monkeypatch):
    """A standalone report shows the inference and the training peak of the workload's stack with their
    derivations (and, for an HF stack, the moments of the step; with --gpu the roofline time); pdflatex
    compiles it and the PDF shows count's training_peak; the Markdown report shows it too.

    One report per path of the templates: the fused stack, and an HF stack (with recompute and a GPU): a report
    of a new stack and recompute setting is a cold derivation of its peaks (seconds of SymPy); the templates
    name the stack and show its moments alike for every HF stack (hf-eager's numbers are torch's in
    tests/test_training_peak.py), and the roofline section is the same for any stack, so it rides along with
    hf-sdpa rather than costing a report of its own."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", "llama3.2-1b", "--format", "latex", "--standalone", "-o", "r.tex", *options]) == 0
    source = (tmp_path / "r.tex").read_text()
    given = {o: options[i + 1] for i, o in enumerate(options) if o in ("--stack", "--gpu")}
    stack, gpu, recompute = given.get("--stack", "fused"), given.get("--gpu"), "--recompute" in options
    counted = symllm.workload("llama3.2-1b", stack=stack, recompute=recompute, gpu=gpu)
    memory = counted["memory"]
    assert f"Training peak ({stack} stack)" in source and f"Inference peak ({stack} stack)" in source
    assert ("Moments of one steady-state training step" in source) == stack.startswith("hf-")
    assert ("Roofline time on" in source) == (gpu is not None)
    _run_pdflatex(source, tmp_path, "r")
    assert f"{memory['training_peak']:,}" in _pdf_text(tmp_path / "r.pdf")
    if not options:  # the document test_standalone_report_compiles_through_the_cli would compile for llama3.2-1b
        total = PUBLISHED["llama3.2-1b"]["total"]
        assert source.startswith("\\documentclass") and "\\end{document}" in source
        assert f"{total:,}" in source and f"{total:,}".replace(",", "{,}") in source
        assert f"{total:,}" in _pdf_text(tmp_path / "r.pdf")
    md = reports.report("llama3.2-1b", stack=stack, recompute=recompute, gpu=gpu).render("markdown")
    assert f"{memory['training_peak']:,}" in md and f"{memory['inference_peak']:,}" in md
    assert "README" not in md and md.count("### Notation") == 1
    if gpu is not None:
        assert f"| inference peak fits | yes | up to batch {counted['time']['max_batch']:,} |" in md
        assert f"| one decode step | {counted['time']['decode_token_s']:.4g} s |" in md


def test_standalone_with_notation_file_compiles(tmp_path):
    """A TOML notation file renames symbols in a standalone report, which still compiles."""
    toml = tmp_path / "paper.toml"
    toml.write_text("d = 'd_\\mathrm{model}'\nn_h = 'h'\nn_kv_heads = 'g'\n")
    out = tmp_path / "n.tex"
    assert cli.main(["report", "llama3.1-8b", "--format", "latex", "--standalone", "--notation", str(toml),
                     "-o", str(out)]) == 0
    source = out.read_text()
    assert r"d_\mathrm{model}" in source and "n_{kv}" not in source and "n_h" not in source
    _run_pdflatex(source, tmp_path, "n")


# --------------------------------------------------------------------------- derive

def test_derive_attention_gqa_latex_is_an_align_environment(capsys):
    """`derive --component attention --gqa --format latex`: an align environment with one equation per
    projection and the closed form."""
    assert cli.main(["derive", "--component", "attention", "--gqa", "--format", "latex"]) == 0
    out = capsys.readouterr().out
    assert "\\begin{align}" in out and "\\end{align}" in out
    body = out[out.index("\\begin{align}"):out.index("\\end{align}")]
    for proj in ("wq", "wk", "wv", "wo"):
        assert f"&N_{{\\mathrm{{{proj}}}}} = " in body
    assert "2 \\, d \\, d_h \\, \\left(n_h + n_{kv}\\right)" in body
    assert "n_{kv}$: key/value heads" in out  # the symbols with their meaning


def test_derive_text_shows_terms_sum_and_numbers(capsys):
    """Text derivation with --model: each sub-term, the sum, the substituted numbers and Meta's d_ff."""
    assert cli.main(["derive", "--component", "feed_forward", "--model", "llama3.1-8b"]) == 0
    out = capsys.readouterr().out
    assert "w1 = d*d_ff" in out and "w3 = d*d_ff" in out
    assert "= 3*4096*14336" in out
    assert f"{3 * 4096 * 14336:,}" in out  # Meta's rounding gives d_ff = 14336 for Llama 3.1 8B
    assert "d_ff = m*ceiling(floor(f*floor(8*d/3))/m)" in out


def test_derive_formats_and_variants(capsys):
    """--mqa substitutes n_kv = 1; pretty and markdown formats work; an MHA flag on a GQA model is an error."""
    assert cli.main(["derive", "--component", "attention", "--mqa", "--format", "latex"]) == 0
    assert "2 \\, d \\, d_h \\, \\left(n_h + 1\\right)" in capsys.readouterr().out
    assert cli.main(["derive", "--component", "attention", "--format", "pretty"]) == 0
    assert "2⋅d⋅dₕ⋅(nₕ + nₖᵥ)" in capsys.readouterr().out
    assert cli.main(["derive", "--component", "model", "--format", "markdown", "--model", "llama2-7b"]) == 0
    md = capsys.readouterr().out
    assert "```math" in md and markdown_math(md)
    assert cli.main(["derive", "--component", "attention", "--mha", "--model", "llama3.1-8b"]) == 2
    assert "GQA" in capsys.readouterr().err


@pytest.mark.parametrize("quantity", ["active", "elementwise", "kv_cache", "Params"])
def test_derive_refuses_a_quantity_it_cannot_show(quantity, cli):
    """derive() takes only the quantities a derivation can render (the command line's choices): ``active``
    gave a value, then a KeyError traceback when rendered; a params derivation carries the active total.
    The known names are the whole list where the line has room (85 columns after "symllm: error: "), else
    pointed to, never cut short."""
    with pytest.raises(SymllmError) as info:
        derivation.derive("model", quantity, config="mixtral-8x7b")
    whole = f"quantity: unknown {quantity!r} (known: params, flops, memory, comm, ridge, decode_batch)"
    assert str(info.value) == whole if len(whole) <= 85 else \
        str(info.value) == f"quantity: unknown {quantity!r} (known: all 6: see --help)"
    r = cli(["derive", "--quantity", quantity])
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and f"quantity: unknown '{quantity}'" in r.err
    about = PUBLISHED_ABOUT[("mixtral-8x7b", "active")]  # "12.9B parameters per token"
    active = derivation.derive("model", config="mixtral-8x7b").active_value
    assert abs(active - about["value"]) <= about["within"] * about["value"]


def test_derive_numbers_equal_the_torch_reference(reference):
    """Each sub-term and total a derivation evaluates equals the reference model's numel: Llama 3.1 8B
    (untied) and Llama 3.2 1B (tied) at every published width, cut to two layers (L is a symbol of the
    derivation, so two layers check the same terms as 32 or 16, without building them on the meta
    device: tests/test_hypothesis.py measures every preset whole)."""
    for name in ("llama3.1-8b", "llama3.2-1b"):
        cfg = symllm.resolve(name).replace(n_layers=2)
        measured = reference.count(reference.build(cfg, device="meta"))
        dv = derivation.derive("model", config=cfg)
        ctx = dv.context()
        assert dv.value == measured["total"]
        for term in ctx["terms"]:
            assert term["value"] == measured[term["name"]]


def test_derive_flops_and_memory_equal_costs_workload():
    """derive's FLOPs and memory totals are the numbers symllm.costs.phases.workload reports."""
    from symllm.costs import phases as costs
    w = costs.workload("llama3.1-8b", batch=2, seq=128, gen=16)
    opts = dict(config="llama3.1-8b", batch=2, seq=128, gen=16)
    assert derivation.derive("model", "flops", **opts).value == w["flops"]["prefill"]
    assert derivation.derive("model", "flops", phase="generation", **opts).value == w["flops"]["generation"]
    assert derivation.derive("model", "flops", phase="decode", **opts).value == w["flops"]["decode_token"]
    assert derivation.derive("model", "memory", memory="kv_cache", **opts).value == w["memory"]["kv_cache"]
    assert derivation.derive("model", "memory", memory="weights", **opts).value == w["memory"]["weights"]
    dv = derivation.derive("model", "flops", **opts)
    assert sum(v for _, v in dv.terms).expand() == dv.total.expand()


# --------------------------------------------------------------------------- reports

def _markdown_rows(md: str) -> dict[str, int]:
    rows = {}
    for line in md.splitlines():
        m = re.match(r"^\| `([^`]+)` \| ([\d,]+) \| [\d.]+ \|$", line)
        if m:
            rows[m.group(1)] = int(m.group(2).replace(",", ""))
    total = re.search(r"^\| \*\*total\*\* \| \*\*([\d,]+)\*\* \|", md, flags=re.M)
    rows["total"] = int(total.group(1).replace(",", ""))
    return rows


def test_report_markdown_is_github_markdown():
    """The Markdown report: a heading, GitHub tables, ```math blocks and $`…`$ spans, the published total;
    the table holds names and numbers, one block's closed form follows as display math (by hand:
    d (3 d_ff + 2 d_h n_h + 2 d_h n_kv + 2) = 4,096 · 53,250)."""
    md = reports.report("llama3.1-8b").render("markdown")
    assert md.startswith("## llama3.1-8b")
    assert "| component | parameters | share (%) |" in md
    assert "**8,030,261,248**" in md
    math = markdown_math(md)
    block = next(tex for kind, tex in math if kind == "display" and "N_{\\mathrm{block}}" in tex)
    assert f"{4096 * 53250:,}".replace(",", "{,}") in block and "d_{ff}" in block


def test_wrapped_markdown_reads_the_same():
    """Prose wrapped at 100 columns is the same paragraph (its lines joined give the line back), never
    broken inside inline math or a code span, no line starts a list or heading; a list item's lines
    continue under its text; tables, headings and fenced blocks stay as they are."""
    prose = ("Workload: $`b = 1`$ sequences of $`s = 2{,}048`$ prompt tokens " + "and more words " * 3
             + "+ activations - gradients # 1. $`s \\times (t + s)`$ `a code span` \\$5 escaped " * 2)
    item = "- " + prose
    table = "| " + "x | " * 60
    fence = "```math\n" + "y " * 80 + "\n```"
    out = printers.wrap_markdown("\n\n".join([prose, item, table, fence]))
    paragraphs = out.split("\n\n")
    assert paragraphs[2:] == [table, fence]
    for original, wrapped in zip((prose, item), paragraphs):
        lines = wrapped.splitlines()
        assert len(lines) > 1 and all(len(line) <= 100 for line in lines)
        assert " ".join(line.strip() for line in lines) == original.strip()
        assert not any(re.match(r"\s*([-+*#>]|\d+[.)]) ", line) for line in lines[1:])
        assert all(line.startswith("  ") for line in lines[1:]) == (original is item)
        assert markdown_math(wrapped) == markdown_math(original)  # every $`…`$ whole, on one line
        assert all(line.count("`") % 2 == 0 for line in lines)


def test_report_escapes_user_text():
    """A model name with LaTeX/Markdown specials is escaped in both formats."""
    cfg = symllm.resolve("llama2-7b").replace(name="a_b%c&d#e")
    assert "a\\_b\\%c\\&d\\#e" in reports.report(cfg).render("latex")
    assert "a\\_b%c\\&d\\#e" in reports.report(cfg).render("markdown")


def _cost_rows(md: str, header: str) -> list[tuple[str, int]]:
    """(title, number) of each row of the Markdown cost table that starts with ``header``."""
    lines = md[md.index(header):].split("\n\n")[0].splitlines()[2:]
    return [(name.strip(), int(value.replace(",", ""))) for name, value, _ in
            (line.strip("|").split(" | ") for line in lines)]


def test_report_numbers_equal_count_json(capsys):
    """Every number of a report's tables is what `symllm count --json` prints for the same workload
    options (the context among them: the decode-step row says which one it used)."""
    argv = ["llama3.2-1b", "--batch", "2", "--seq", "512", "--gen", "64", "--context", "4096", "--dtype", "fp8",
            "--kv-dtype", "int8", "--zero", "2", "--dp", "4", "--recompute", "--attention", "causal"]
    assert cli.main(["count", *argv, "--json"]) == 0
    counted = json.loads(capsys.readouterr().out)
    assert cli.main(["report", *argv]) == 0
    md = capsys.readouterr().out
    params = counted["params"]
    # the table's rows: the breakdown and the total (not the one block, the active or per-GPU counts)
    assert _markdown_rows(md) == {k: v for k, v in params.items()
                                  if k not in ("block", "active", "per_gpu") and (v or k == "total")}
    assert re.search(rf"^\| one block \| {params['block']:,} \| \|$", md, flags=re.M)
    flops = _cost_rows(md, "| FLOPs (a multiply-add is 2 FLOPs) |")
    assert [v for _, v in flops] == list(counted["flops"].values())
    assert flops[1][0] == "one decode step at context t = 4,096 (matmuls)"
    memory = _cost_rows(md, "| memory | bytes |")
    assert [v for _, v in memory] == list(counted["memory"].values())
    rep = symllm.report("llama3.2-1b", context=4096, batch=2)
    assert rep.workload == symllm.Workload(context=4096, batch=2)
    assert rep.context("markdown")["flops_rows"][1]["value"] == \
        symllm.workload("llama3.2-1b", rep.workload)["flops"]["decode_token"]


# --------------------------------------------------------------------------- golden files

_GOLDEN_CASES = {
    "report-llama3.1-8b.md": lambda: reports.report("llama3.1-8b").render("markdown"),
    "report-llama3.1-8b.tex": lambda: reports.report("llama3.1-8b").render("latex", standalone=True),
    "report-llama2-13b.md": lambda: reports.report("llama2-13b").render("markdown"),
    "report-llama3.2-1b.tex": lambda: reports.report("llama3.2-1b").render("latex"),
    "derive-attention-gqa.tex": lambda: derivation.derive("attention").render("latex"),
    "derive-model-llama2-7b.txt": lambda: derivation.derive("model", config="llama2-7b").render("text"),
}
#: the published total each golden report must show (tests/data/published_params.json)
_GOLDEN_TOTALS = {"report-llama3.1-8b.md": "llama3.1-8b", "report-llama3.1-8b.tex": "llama3.1-8b",
                  "report-llama2-13b.md": "llama2-13b", "report-llama3.2-1b.tex": "llama3.2-1b",
                  "derive-model-llama2-7b.txt": "llama2-7b"}


@pytest.mark.parametrize("name", sorted(_GOLDEN_CASES))
def test_golden(name):
    """The output equals its golden file (regenerate: SYMLLM_REGEN_GOLDEN=1, see the module docstring),
    and the golden file shows the published parameter total."""
    path = GOLDEN / name
    text = _GOLDEN_CASES[name]()
    if os.environ.get("SYMLLM_REGEN_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    golden = path.read_text(encoding="utf-8")
    if name in _GOLDEN_TOTALS:
        assert f"{PUBLISHED[_GOLDEN_TOTALS[name]]['total']:,}" in golden
    assert text == golden


# --------------------------------------------------------------------------- notation

def test_notation_renames_symbols_everywhere():
    """A notation dict renames symbols in derive and report outputs, by symbol name or code name."""
    tex = derivation.derive("attention", notation={"d": r"d_\mathrm{model}", "n_heads": "h"}).render("latex")
    assert r"2 \, d_\mathrm{model} \, d_h \, \left(h + n_{kv}\right)" in tex
    md = reports.report("llama2-7b", notation={"n_h": "h"}).render("markdown")
    assert "$`h`$" in md and "n_h`$" not in md


def test_notation_json_and_bad_files(tmp_path, capsys):
    """--notation reads JSON; an unknown symbol or unbalanced braces is one error line and exit 2."""
    good = tmp_path / "n.json"
    good.write_text(json.dumps({"d": r"d_\mathrm{model}"}))
    assert cli.main(["derive", "--component", "embedding", "--format", "latex", "--notation", str(good)]) == 0
    assert r"V \, d_\mathrm{model}" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"zeta": "z"}))
    assert cli.main(["derive", "--notation", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("symllm: error: notation: unknown symbol 'zeta'")
    bad.write_text(json.dumps({"d": "d_{x"}))
    assert cli.main(["report", "llama2-7b", "--notation", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symllm: error: notation: d: 'd_{x'") and "unbalanced '{'" in err


# --------------------------------------------------------------------------- templates, sandbox

def test_user_template_overrides_and_adds(tmp_path, capsys):
    """--template-dir: a user report.md.j2 overrides the built-in one; a new template can extend data."""
    (tmp_path / "report.md.j2").write_text("# {{ model }} has {{ total|grouped }} parameters\n")
    assert cli.main(["report", "llama3.1-8b", "--format", "markdown", "--template-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "# llama3.1-8b has 8,030,261,248 parameters"
    (tmp_path / "short.tex.j2").write_text("<< model >>: $<< total|num >>$ with $<< params.closed|tex >>$\n")
    assert cli.main(["report", "llama3.1-8b", "--format", "latex", "--template-dir", str(tmp_path),
                     "--template", "short.tex.j2"]) == 0
    assert capsys.readouterr().out.startswith("llama3.1-8b: $8{,}030{,}261{,}248$ with $d \\, \\left(")


def test_user_templates_are_sandboxed_and_strict(tmp_path, capsys):
    """User templates run in Jinja's sandbox (no Python internals) and a missing variable is an error."""
    (tmp_path / "report.md.j2").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    assert cli.main(["report", "llama2-7b", "--format", "markdown", "--template-dir", str(tmp_path)]) == 2
    assert "template" in capsys.readouterr().err
    (tmp_path / "report.md.j2").write_text("{{ params.closed._expr }}\n")
    assert cli.main(["report", "llama2-7b", "--format", "markdown", "--template-dir", str(tmp_path)]) == 2
    capsys.readouterr()
    (tmp_path / "report.md.j2").write_text("{{ no_such_variable }}\n")
    assert cli.main(["report", "llama2-7b", "--format", "markdown", "--template-dir", str(tmp_path)]) == 2
    assert "'no_such_variable' is undefined" in capsys.readouterr().err


def test_builtin_templates_hold_no_formulas():
    """Templates lay out; the formulas come from Python (no SymPy names or arithmetic on symbols)."""
    for path in render.template_dir().glob("*.j2"):
        text = path.read_text()
        assert "sympy" not in text and "subs(" not in text and "2 *" not in text, path.name


# --------------------------------------------------------------------------- atomic output

def test_failed_render_leaves_existing_file_untouched(tmp_path):
    """-o: a render that fails does not clobber the existing file, nor leave a temporary file behind."""
    out = tmp_path / "r.md"
    out.write_text("keep me")
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "report.md.j2").write_text("partial {{ undefined_thing }}\n")
    assert cli.main(["report", "llama2-7b", "--format", "markdown", "--template-dir", str(tpl), "-o", str(out)]) == 2
    assert out.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md", "tpl"]
    assert cli.main(["report", "llama2-7b", "--format", "markdown", "-o", str(tmp_path / "new.md")]) == 0
    assert (tmp_path / "new.md").read_text().startswith("## llama2-7b")


def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    """If the final rename fails, the old file is intact and the temporary file is removed."""
    out = tmp_path / "r.tex"
    out.write_text("old")

    def broken(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(SymllmError, match="output: cannot write .*disk full"):
        write_atomic(out, "new text")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.tex"]


def test_output_into_missing_directory_is_an_error(tmp_path, capsys):
    """-o into a directory that does not exist: one error line, exit 2."""
    assert cli.main(["report", "llama2-7b", "-o", str(tmp_path / "nope" / "r.md")]) == 2
    assert capsys.readouterr().err.startswith("symllm: error: output:")


# --------------------------------------------------------------------------- notebooks

def test_notebook_reprs():
    """Components and derivations display as math in Jupyter; print stays plain text."""
    comp = attention()
    assert comp._repr_latex_().startswith("$$\\begin{aligned}")
    assert "2 d d_h \\left(n_h + n_{kv}\\right)" in comp._repr_latex_()
    assert "$$" in comp._repr_markdown_()
    dv = derivation.derive("model", config="llama3.1-8b")
    assert "8{,}030{,}261{,}248" in dv._repr_latex_()
    assert "8,030,261,248" in str(dv) and "\\" not in str(dv)
    assert "8,030,261,248" in reports.report("llama3.1-8b")._repr_markdown_()
    assert "$$" in model()._repr_markdown_()


# --------------------------------------------------------------------------- CLI basics

def test_bad_report_input(capsys):
    """An unknown preset and an unknown format are one error line and exit 2."""
    assert cli.main(["report", "no-such-model"]) == 2
    assert capsys.readouterr().err.startswith("symllm: error: model:")
    with pytest.raises(SystemExit) as e:
        cli.main(["report", "llama2-7b", "--format", "docx"])
    assert e.value.code == 2


# --------------------------------------------------------------------------- the wheel

def test_wheel_ships_templates_and_report_runs_from_anywhere(tmp_path):
    """A non-editable install of the built wheel, run from another folder, finds its templates."""
    root = HERE.parent
    src = tmp_path / "src"
    src.mkdir()
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(root / item, src / item)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / "symllm", src / "symllm", ignore=ignore)
    shutil.copytree(root / "templates", src / "templates", ignore=ignore)
    pip = [os.environ.get("PYTHON", __import__("sys").executable), "-m", "pip"]
    subprocess.run(pip + ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                          str(src)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("symllm-*.whl"))
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    for template in ("report.tex.j2", "report.md.j2", "derive.tex.j2", "standalone.tex.j2"):
        assert f"symllm/templates/{template}" in names
    # a fresh venv (no pip inside: fast, offline); dependencies come from this environment's
    # site-packages through a .pth line, appended after the venv's own site-packages
    import site
    import sys
    import venv
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    py = env / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = [p for p in site.getsitepackages() + [site.getusersitepackages()] if Path(p).is_dir()]
    Path(purelib, "_outer_deps.pth").write_text("\n".join(deps) + "\n")
    # --ignore-installed: the outer environment may hold an installed symllm of the same version (CI's
    # `pip install .`); pip would then skip this wheel, or with --force-reinstall uninstall the outer copy
    subprocess.run(pip + ["--python", str(py), "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                          str(wheel)],
                   check=True, capture_output=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    where = subprocess.run([str(py), "-c", "import symllm, sys; print(symllm.__file__)"], cwd=elsewhere,
                           check=True, capture_output=True, text=True, env=run_env).stdout
    assert str(env) in where  # the installed copy, not the checkout
    exe = env / "bin" / "symllm"
    # one run of the installed command finds the templates: report.tex.j2 inside standalone.tex.j2 (both read
    # from the one folder render.template_dir() finds; the wheel's list above holds the Markdown one too)
    proc = subprocess.run([str(exe), "report", "llama2-7b", "--format", "latex", "--standalone", "-o", "r.tex"],
                          cwd=elsewhere, capture_output=True, text=True, env=run_env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    tex = (elsewhere / "r.tex").read_text()
    assert "\\begin{document}" in tex and "6,738,415,616" in tex


# --------------------------------------------------------------------------- hostile notation and templates

HOSTILE_NOTATION = [
    r"\input{/etc/passwd}", r"\include{x}", r"\write18{ls}", r"\immediate\write18{ls}", r"\openin5=/etc/passwd",
    r"\openout5=x.tex", r"\read5 to\x", r"\catcode`\@=11", r"\csname input\endcsname{/etc/passwd}",
    r"\def\x{y}", r"\let\x\y", r"\expandafter x", r"\newcommand{\x}{y}", r"\mathrm{\input{/etc/passwd}}",
    r"\text{\input{x}}", "d\\\\}", "d\\\\", "d_{x", "}{", "x$", "a&b", "a%b", "#1", "x~y", "a_b_c", "x^2'",
    "x^", "_x", r"\left(x", r"\end{align}", "\u03b1", "x\ny", r"\hat", r"\text{a_b}", "a" * 101, "{" * 9 + "}" * 9,
]


@pytest.mark.parametrize("value", HOSTILE_NOTATION)
def test_hostile_notation_is_refused(value, cli, tmp_path):
    """A notation value that could read or write files, or would not compile (``d\\\\}`` passed the old
    brace check), is one error line naming the symbol, exit 2, and no output file."""
    (tmp_path / "n.json").write_text(json.dumps({"d": value}))
    r = cli(["report", "llama3.2-1b", "--format", "latex", "--notation", tmp_path / "n.json",
             "-o", tmp_path / "r.tex"])
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("symllm: error: notation: d: ") and r.err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.json"]
    with pytest.raises(SymllmError, match="notation: d:"):
        notations.notation({"d": value})


def _notation_candidates(count: int, seed: int = 14) -> list[str]:
    """Random strings over LaTeX tokens, harmless and hostile, for the accept-only-what-compiles test."""
    import random
    rng = random.Random(seed)
    tokens = ["x", "d", "V", "7", "_", "^", "'", "{", "}", " ", "(", ")", "+", ",", r"\alpha", r"\ell", r"\mathrm",
              r"\mathcal", r"\hat", r"\bar", r"\text{ff}", r"\text", r"\lvert", r"\rvert", r"\cdot", r"\,", r"\|",
              r"\{", r"\}", r"\operatorname", r"\boldsymbol", r"\widetilde", r"\prime", "\\\\", "$", "&", "%", "#",
              "~", r"\input", r"\left", r"\frac", "[", "]", "=", r"\_", r"\quad"]
    out = []
    for _ in range(count):
        out.append("".join(rng.choice(tokens) for _ in range(rng.randint(1, 9))))
    return out


def test_accepted_notation_compiles(tmp_path):
    """Every notation value the check accepts compiles with pdflatex, alone, as the base of a power
    SymPy prints (``d^{2}``), in a product and a sum, and in a report's align environment; the random
    candidates include values it refuses (so both sides of the check are exercised)."""
    import sympy as sp

    from symllm.arch import symbols as S
    candidates = [v for seed in (14, 15, 16, 17) for v in _notation_candidates(3000, seed)]
    accepted = [v.strip() for v in candidates if notations.tex_refusal(v) is None]  # notation() strips
    refused = [v for v in candidates if notations.tex_refusal(v) is not None]
    assert len(set(accepted)) >= 600 and len(refused) >= 4000
    accepted = sorted(set(accepted)) + [r"d_\mathrm{model}", r"\lvert\mathcal{V}\rvert", "h'", "x'^2",
                                              r"\text{d model}", r"\hat x_1", r"x^{2}_{i}"]
    exprs = [S.d ** 2 * S.n_h, sp.sqrt(S.d) + S.d ** 3 / S.n_h, sp.floor(S.d / 3) * S.d_h]
    snippets = {}
    for i, value in enumerate(accepted):
        names = {**S.LATEX, S.d: value}
        body = " \\quad ".join(f"${sp.latex(e, symbol_names=names)}$" for e in exprs)
        snippets[f"notation {i}: {value!r}"] = f"${value}$ \\quad {body}\n\\begin{{align}}{value} &= 1\\end{{align}}"
    snippets["report with notation"] = reports.report(
        "llama3.2-1b", notation={"d": "x'^2", "n_h": r"\text{heads}", "V": r"\hat{\mathcal{V}}_1"}).render("latex")
    log = compile_snippets({k.replace("\\", "/").replace("{", "(").replace("}", ")").replace("%", "pct")
                            .replace("#", "hash").replace("$", "dollar").replace("~", "tilde")
                            .replace("&", "amp").replace("^", "hat").replace("_", "-"): v
                            for k, v in snippets.items()}, tmp_path)
    assert log.count("SNIPPET:") == len(snippets)


@pytest.mark.parametrize("template,message", [
    ("{{ 1/0 }}", "ZeroDivisionError"),
    ("{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}", "recursion"),
    ("{{ none + 1 }}", "TypeError"),
    ("{{ 10 ** 10000000 }}", "would exceed"),
    ("{{ 'x' * 10 ** 12 }}", "would exceed"),
    ("{{ [0] * 10 ** 12 }}", "would exceed"),
    ("{{ 10 ** 5000 }}", "4300"),
    ("{{ range(10 ** 9)|list }}", "Range too big"),
    ("{{ {}['missing'] }}", "missing"),
    ("{{ ''.join }}", ""),
])
def test_template_runtime_errors_are_one_line(template, message, cli, tmp_path):
    """A user template that fails while it renders (an exception, a recursive macro, arithmetic that
    would not end) is one error line naming the template, exit 2, and leaves no output file."""
    (tmp_path / "report.md.j2").write_text(template + "\n")
    r = cli(["report", "llama2-7b", "--template-dir", tmp_path, "-o", tmp_path / "r.md"])
    if r.code == 0:  # only a harmless template may succeed
        assert message == "" and (tmp_path / "r.md").exists()
        return
    assert r.code == 2 and r.err.startswith("symllm: error: template: report.md.j2") and r.err.count("\n") == 1
    assert message in r.err
    assert not (tmp_path / "r.md").exists() and len(list(tmp_path.iterdir())) == 1


# --------------------------------------------------------------------------- what a reader sees

#: standalone documents of each command: the reports and derivations whose lines once ran into the margin are
#: PAPER_REPORTS / PAPER_DERIVATIONS (tests/outputs.py), \input into narrower columns than a standalone page's
#: (test_outputs_input_into_papers_compile_without_overfull_boxes); these are what only a standalone document
#: has (its title, one pass to the finished PDF), for a report and for a derivation
FIT_THE_PAGE = [
    ["report", "llama3.1-8b"],
    ["derive", "--component", "model", "--quantity", "flops", "--phase", "generation", "--model", "llama3.1-405b",
     "--seq", "131072", "--gen", "4096", "--attention", "causal"],
]


@pytest.mark.parametrize("argv", FIT_THE_PAGE, ids=lambda a: " ".join(a)[:60])
def test_standalone_output_fits_the_page_after_one_pass(argv, tmp_path, monkeypatch):
    """One pdflatex pass on a fresh folder gives the finished PDF: no overfull box (the substituted
    FLOP and memory lines ran 130-1,000pt into the margin), no undefined reference or "Rerun" request
    but LaTeX's note that the labels it wrote may have changed (they are for the paper's \\eqref: the
    output refers to none of them), and no "??" where a table number should be."""
    monkeypatch.chdir(tmp_path)
    assert cli.main([*argv, "--format", "latex", "--standalone", "-o", "doc.tex"]) == 0
    log = _run_pdflatex((tmp_path / "doc.tex").read_text(), tmp_path, "doc")
    assert "Overfull" not in log, re.findall(r"Overfull.*", log)
    assert "undefined" not in log and not _reruns(log)
    assert "??" not in _pdf_text(tmp_path / "doc.pdf")


def test_latex_lines_break_between_terms_and_keep_the_formula():
    """Long sums and products break into lines of bounded width, and the lines put together are the same
    formula (reading the pieces back with SymPy gives the original expression)."""
    import sympy as sp
    from sympy.parsing.sympy_parser import parse_expr

    from symllm.arch import symbols as S
    dv = derivation.derive("model", "memory", config="llama3.1-405b", memory="inference_peak", batch=64)
    for name, expr in dv.terms + (("closed", dv.closed),):
        formula = printers.Formula(expr)
        lines = formula.text_lines(60)
        assert all(len(line) <= 60 for line in lines) or len(lines) == 1
        names = {sym.name: sym for sym in S.SYMBOLS}
        # doit(): the components keep some Max unevaluated (STAT_BYTES), which parse_expr evaluates
        assert sp.expand((parse_expr(" ".join(lines), local_dict=names) - expr).doit()) == 0
        assert all(printers.tex_width(line) <= printers.LATEX_WIDTH for line in formula.latex_lines())


def _breakable_forms(a, b, c):
    """Sums, products, a Max, a ceiling and quotients of three closed-form terms: every kind of node the
    line breaker splits."""
    import sympy as sp

    from symllm.arch import symbols as S
    return [a * b + c, sp.Max(a, b * c) + c, sp.ceiling(a / (b + 1)) * c, (a + c) / (b * S.N_d), a ** 2 * b * c]


def _printers(numbers: dict):
    """(doprint, measure) pairs as reports use them: LaTeX measured by tex_width and by characters
    (Markdown's display math), LaTeX with numbers in place of some symbols, and plain text."""
    from symllm.arch import symbols as S
    names = dict(S.LATEX)
    with_numbers = {**names, **{k: printers.num_latex(v) for k, v in numbers.items()}}
    text = printers._NamedStrPrinter({k: printers.num_text(v) for k, v in numbers.items()}).doprint
    return [(lambda e: printers._latex(e, symbol_names=names), printers.tex_width),
            (lambda e: printers._latex(e, symbol_names=names), len),
            (lambda e: printers._latex(e, symbol_names=with_numbers, mul_symbol="dot"), printers.tex_width),
            (text, len)]


@given(closed_form_terms(), closed_form_terms(signed=False), closed_form_terms(), positive_points())
def test_line_breaking_skips_only_prints_that_cannot_fit(a, b, c, point):
    """The line breaker's lower bound of a printed width (printers._narrowest, which spares printing a sum
    that cannot fit) is at most the width of the print, for every node of the forms, in every printer; and
    the lines broken with it are the lines broken with every node printed (a bound of 0), at several widths."""
    import sympy as sp
    numbers = dict(list(point.items())[:3])
    for doprint, measure in _printers(numbers):
        narrowest = printers._narrowest(doprint, measure)
        for form in _breakable_forms(a, b, c):
            for node in sp.preorder_traversal(form):
                assert narrowest(node) <= measure(doprint(node)), (node, doprint(node))
    formulas = [printers.Formula(form, numbers) for form in _breakable_forms(a, b, c)]
    widths = (40.0, 120.0, printers.LATEX_WIDTH)
    skipping = [[f.latex_lines(width=w) for w in widths] + [f.text_lines(30)] for f in formulas]
    with pytest.MonkeyPatch.context() as printing_all:
        printing_all.setattr(printers, "_narrowest", lambda doprint, measure: lambda e: 0.0)
        assert skipping == [[f.latex_lines(width=w) for w in widths] + [f.text_lines(30)] for f in formulas]


def test_where_line_typesets_symbol_names_as_math():
    """The LaTeX "where" line writes the n_h and d_ff of the descriptions as math ($n_h$, $d_{ff}$), not as
    escaped text (n\\_h)."""
    tex = derivation.derive("model", config="llama3.1-8b").render("latex")
    lines = tex.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("where "))
    rest = [line.strip() for line in itertools.takewhile(lambda line: line.startswith("  "), lines[first + 1:])]
    where = " ".join([lines[first], *rest])  # the line, with its continuation lines (source within 100 columns)
    assert "($n_h$: MHA" in where and "granule for $d_{ff}$" in where
    assert "n\\_h" not in where and "d\\_ff" not in where
    tex = derivation.derive("model", config="llama3.1-8b", notation={"n_h": "h"}).render("latex")
    assert "($h$: MHA" in tex


# --------------------------------------------------------------------------- LaTeX inside papers

#: the document classes a report or derivation is \input into: article in one and two columns (default
#: margins), and three conference classes of TeX Live (Debian's texlive-publishers: IEEEtran, llncs, and
#: acmart's sigconf, which needs a \title for its running heads; without texlive-fonts-extra it sets
#: Computer Modern in place of Libertine and newtxmath, in its own column width)
PAPER_CLASSES = {"article": r"\documentclass{article}", "article-twocolumn": r"\documentclass[twocolumn]{article}",
                 "IEEEtran": r"\documentclass[conference]{IEEEtran}", "llncs": r"\documentclass{llncs}",
                 "acmart": "\\documentclass[sigconf]{acmart}\n\\title{symllm}"}
def _paper_outputs(folder: Path) -> dict[str, str]:
    """The LaTeX outputs a paper \\inputs (tests/outputs.py: reports of each kind of model and workload whose
    lines once ran into the margin, derivations of each component and quantity, of the roofline quantities and
    of the longest sums), written into ``folder``."""
    texts = outputs.latex_outputs()
    for name, text in texts.items():
        (folder / f"{name}.tex").write_text(text, encoding="utf-8")
    return texts


def _paper_log(cls: str, folder: Path, names) -> str | None:
    """One document of class ``cls`` \\inputting every output, compiled in one pass; None where the class
    is not installed (locally; CI installs texlive-publishers)."""
    if subprocess.run(["kpsewhich", f"{cls.split('-')[0]}.cls"], capture_output=True, text=True).stdout.strip() == "":
        if os.environ.get("CI"):
            pytest.fail(f"{cls}.cls is required in CI (apt-get install texlive-publishers)")
        return None
    doc = (PAPER_CLASSES[cls] + "\n\\usepackage{amsmath}\n\\usepackage{booktabs}\n\\begin{document}\n"
           + "".join(f"\\typeout{{SNIPPET: {n}}}\n\\input{{{n}}}\n" for n in names) + "\\end{document}\n")
    return _run_pdflatex(doc, folder, f"paper-{cls}")


#: LaTeX's note at the end of a first pass over a document that defines \label s: the equations' labels
#: symllm writes for a paper to \eqref (tests/test_findings.py); symllm's own output refers to none of them,
#: so its first pass is already the finished document
LABELS_CHANGED = "LaTeX Warning: Label(s) may have changed. Rerun to get cross-references right."


def _reruns(log: str) -> set[str]:
    """The warnings of a pdflatex log that ask for another pass (acmart's hyperref and its own labels ask
    for one in an empty document too: only those the outputs add count; :data:`LABELS_CHANGED` does not)."""
    return {line for line in log.splitlines()
            if "Rerun" in line and not line.startswith("Package:") and line != LABELS_CHANGED}


def _empty_paper_log(cls: str, folder: Path, log: str) -> str:
    """The log of a document of class ``cls`` holding one word (its own folder), where ``log`` asks for a
    rerun."""
    if not _reruns(log):
        return ""
    (folder / "empty").mkdir(exist_ok=True)
    doc = PAPER_CLASSES[cls] + "\n\\usepackage{amsmath}\n\\usepackage{booktabs}\n\\begin{document}\nx\n\\end{document}\n"
    return _run_pdflatex(doc, folder / "empty", f"paper-{cls}")


#: reports of models with many kinds of layers (latent attention, 384 experts, interleaved MoE, sinks and windows)
#: and with the layout, roofline and LoRA sections: their Markdown printed 22-63 lines over 100 columns, up to 2,993
TERMINAL_REPORTS = ("deepseek-v3", "kimi-k2", "llama4-maverick-17b-128e", "gpt-oss-120b", "qwen3-235b-a22b", "layout")


def test_outputs_input_into_papers_compile_without_overfull_boxes(tmp_path):
    """Every report and derivation \\input into article (one and two columns), IEEEtran, llncs and acmart
    (sigconf) compiles in one pass with no overfull box and no float taller than the page (long equations are
    broken, tables fit the column: Kimi-K2's parameter table was 327pt too tall in two columns); in a
    report the glossary and Meta's d_ff rounding appear once, each result is named for its quantity,
    products of symbols are spaced, and nothing refers to the README. Read in a terminal, no line of these
    LaTeX sources nor of the Markdown of TERMINAL_REPORTS is over 100 columns, and none says BB (bytes units: it
    said 864.00BB/s; tests/test_cli.py's width test reads every other output). (One test, so that one xdist
    worker renders the outputs, once: tests/outputs.py; each class's document is compiled once.)"""
    _pdflatex()
    texts = _paper_outputs(tmp_path)
    terminal = {f"{name} markdown": outputs.run(*outputs.report_argv(name), "--format", "markdown")
                for name in TERMINAL_REPORTS}
    assert all(r.code == 0 and r.err == "" and r.out.count("\n") > 5 for r in terminal.values())
    for name, text in {**texts, **{name: r.out for name, r in terminal.items()}}.items():
        long = [line for line in text.splitlines() if len(line) > 100]
        assert not long, (name, long)
        assert not re.search(r"\dBB\b|BB/s", text), name
    compiled = []
    for cls in PAPER_CLASSES:
        log = _paper_log(cls, tmp_path, texts)
        if log is None:
            continue
        compiled.append(cls)
        assert log.count("SNIPPET:") == len(texts)
        overfull, snippet = [], "?"
        for line in log.splitlines():
            snippet = line[len("SNIPPET: "):] if line.startswith("SNIPPET: ") else snippet
            if line.startswith("Overfull") or "Float too large" in line:  # a table taller than a column
                overfull.append(f"{cls}, {snippet}: {line}")
        assert not overfull, "\n".join(overfull)
        assert "undefined" not in log and not _reruns(log) - _reruns(_empty_paper_log(cls, tmp_path, log))
    assert compiled[:2] == ["article", "article-twocolumn"]
    tex = texts["report-qwen2.5-72b"]
    assert tex.count("\\subsection*{Notation}") == 1 and "\nwhere " not in tex
    assert texts["report-layout"].count("&d_{ff} = ") == 1  # the worked rounding (Meta's), once
    for name in ("prefill", "inference", "inference\\ peak", "training\\ peak"):
        assert f"&{'F' if name == 'prefill' else 'M'}_{{\\mathrm{{{name}}}}} = " in tex, name
    assert "M_{\\mathrm{model}}" not in tex and "F_{\\mathrm{model}}" not in tex
    assert r"d \, d_h \, n_h" in tex and "d d_h n_h" not in tex
    assert "R_{\\mathrm{ridge}} = \\frac{P}{B_{\\mathrm{mem}}}" in texts["derive-ridge"]
    for name, text in texts.items():
        assert "README" not in text, name


def test_substituted_numbers_leave_out_zero_terms():
    """A sum's terms that are zero at the config's numbers are not shown substituted (Llama 4's layer
    groups and n = 0 generated tokens gave 2·32·1·2·128·0·8), and the value is unchanged."""
    dv = derivation.derive("model", "memory", config="llama4-scout-17b-16e", memory="inference_peak")
    text = dv.render("text")
    subst = text[text.index("total"):]
    assert not re.search(r"(?<![\d,.])0\*|\*0(?![\d,.])|\+ 0\b", subst), subst
    from symllm.costs import phases
    assert dv.value == phases.workload("llama4-scout-17b-16e")["memory"]["inference_peak"]
