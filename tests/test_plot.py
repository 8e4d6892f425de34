"""Plots (symllm.present.plots, ``symllm plot``): the data in each Figure's artists equals the quantities
worked out by hand for a tiny config (Meta's formulas, the bytes per element), or symllm.workload()'s
where the plot only redraws them; the files are PNG, SVG, PDF and pgfplots that pdflatex compiles; -o
is atomic; ``symllm count`` never imports matplotlib (tests/test_startup.py)."""
import csv
import json
import os
import re
import shutil
import subprocess

import pytest

from .conftest import requires

requires("matplotlib")

from symllm.present import plots  # noqa: E402

GIB = 2 ** 30
# the tiny Meta config: V=100, d=64, L=2, n_h=4, n_kv=2, d_h=16, multiple_of 16 -> d_ff 16*ceil(170/16) = 176
V, D, L, NH, NKV, DH, DFF = 100, 64, 2, 4, 2, 16, 176
ATTN = D * NH * DH + 2 * D * NKV * DH + NH * DH * D          # wq, wk, wv, wo: 12,288
FFN = 3 * D * DFF                                           # w1, w2, w3: 33,792
N = V * D + L * (ATTN + FFN + 2 * D) + D + V * D            # untied: 105,280
MATMUL_WEIGHTS = N - V * D - (2 * L + 1) * D                # every weight a token multiplies: 98,560


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    """A Meta params.json of the tiny config."""
    path = tmp_path_factory.mktemp("tiny") / "params.json"
    path.write_text(json.dumps({"dim": D, "n_layers": L, "n_heads": NH, "n_kv_heads": NKV, "vocab_size": V,
                                "multiple_of": 16, "norm_eps": 1e-5}))
    return str(path)


def _gib(fig_value) -> float:
    return float(fig_value) * GIB


def _bars(ax) -> dict:
    """{(y tick label, colour): bar width} of a horizontal bar chart."""
    labels = {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
    return {(labels[round(p.get_y() + p.get_height() / 2)], p.get_facecolor()): p.get_width() for p in ax.patches}


def test_memory_breakdown_is_the_hand_count(tiny):
    """Per component: bf16 weights 2 bytes, training states 16 bytes a parameter (mixed-precision Adam),
    the KV cache 2·L·n_kv·d_h·s·2 bytes, all in the attention; per kind: workload()'s memory."""
    import symllm
    from matplotlib.colors import to_rgba
    fig = plots.memory(tiny, seq=64)
    kinds, parts = fig.axes
    by_kind = {t.get_text(): p.get_width() for t, p in zip(kinds.get_yticklabels(), kinds.patches)}
    memory = symllm.workload(tiny, seq=64)["memory"]
    assert _gib(by_kind["weights"]) == pytest.approx(2 * N, rel=1e-12) and memory["weights"] == 2 * N
    assert _gib(by_kind["KV cache"]) == pytest.approx(2 * L * NKV * DH * 64 * 2, rel=1e-12)
    assert _gib(by_kind["inference peak"]) == pytest.approx(memory["inference_peak"], rel=1e-12)
    bars = _bars(parts)
    colour = {k: to_rgba(plots.COLOURS[i]) for i, k in enumerate(("weights", "kv_cache", "activations",
                                                                    "training_states"))}
    hand = {"embedding": V * D, "block/attention": L * ATTN, "block/feed_forward": L * FFN,
            "block/attention_norm": L * D, "block/ffn_norm": L * D, "norm": D, "lm_head": V * D}
    for part, params in hand.items():
        assert _gib(bars[part, colour["weights"]]) == pytest.approx(2 * params, rel=1e-12), part
        assert _gib(bars[part, colour["training_states"]]) == pytest.approx(16 * params, rel=1e-12), part
        kv = 2 * L * NKV * DH * 64 * 2 if part == "block/attention" else 0
        assert _gib(bars[part, colour["kv_cache"]]) == pytest.approx(kv, rel=1e-12, abs=1e-9), part
    saved = sum(_gib(w) for (part, c), w in bars.items() if c == colour["activations"])
    assert saved == pytest.approx(memory["activations"], rel=1e-12)
    assert [t.get_text() for t in parts.get_legend().get_texts()] == [
        "weights", "KV cache", "activations (saved)", "training states"]


def test_memory_per_gpu_and_hf_stacks(tiny):
    """Under --tp 2 the kinds are one GPU's (torch's ColwiseParallel/RowwiseParallel plan by hand: every
    matrix halved, the vocabulary split, norms replicated); an HF stack's terms are the whole model's, so
    there is no per-component panel."""
    import symllm
    fig = plots.memory(tiny, seq=64, tp=2)
    by_kind = {t.get_text(): p.get_width() for t, p in zip(fig.axes[0].get_yticklabels(), fig.axes[0].patches)}
    per_gpu = V // 2 * D + L * (ATTN // 2 + FFN // 2 + 2 * D) + D + V // 2 * D
    assert _gib(by_kind["weights"]) == pytest.approx(2 * per_gpu, rel=1e-12)
    assert "per GPU (tp 2" in fig.axes[0].get_title() and len(fig.axes) == 2
    fig = plots.memory(tiny, seq=64, stack="hf-eager")
    assert len(fig.axes) == 1
    peak = symllm.workload(tiny, seq=64, stack="hf-eager")["memory"]["training_peak"]
    assert _gib(fig.axes[0].patches[-1].get_width()) == pytest.approx(peak, rel=1e-12)


def test_context_curves_and_capacity(tiny):
    """KV cache (2·L·n_kv·d_h·s bf16 bytes) and inference peak (workload()'s) at each context, in GiB on
    a log2 axis; the GPU's capacity (an H100 SXM5's 80 GiB) as a horizontal line."""
    import symllm
    contexts = [64, 256, 1024]
    ax = plots.context([tiny, "llama3.2-1b"], contexts=contexts, gpu="h100-sxm").axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    name = symllm.load(tiny).name
    kv = lines[f"{name} KV cache"]
    assert list(kv.get_xdata()) == contexts
    assert [_gib(y) for y in kv.get_ydata()] == pytest.approx([2 * L * NKV * DH * c * 2 for c in contexts], rel=1e-12)
    peak = lines["llama3.2-1b inference peak"]
    assert [_gib(y) for y in peak.get_ydata()] == pytest.approx(
        [symllm.workload("llama3.2-1b", seq=c)["memory"]["inference_peak"] for c in contexts], rel=1e-12)
    capacity = lines["NVIDIA H100 SXM5 80GB (80 GiB)"]
    assert set(capacity.get_ydata()) == {80.0}
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "GiB"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "256", "1K"]
    with pytest.raises(symllm.SymllmError, match="^seq: the plot varies it"):
        plots.context(tiny, seq=8)


def test_flops_per_token_is_the_hand_count(tiny):
    """One decode step with t cached: 2 FLOPs per weight multiplied plus 2·2·L·n_h·d_h per key (t + 1
    keys); a dense prefill of s tokens: the same weights but the lm_head's, plus s keys per query, per token,
    and the lm_head's 2·V·d once for the last position's logits (the default)."""
    contexts = [16, 128]
    ax = plots.flops(tiny, contexts=contexts).axes[0]
    prefill, decode = ax.lines
    assert [y * 1e9 for y in decode.get_ydata()] == pytest.approx(
        [2 * MATMUL_WEIGHTS + 4 * L * NH * DH * (t + 1) for t in contexts], rel=1e-12)
    assert [y * 1e9 for y in prefill.get_ydata()] == pytest.approx(
        [2 * (MATMUL_WEIGHTS - V * D) + 2 * V * D / s + 4 * L * NH * DH * s for s in contexts], rel=1e-12)
    assert "dense attention" in ax.get_title()


def test_roofline_points_lie_on_the_roof():
    """On one GPU a phase takes max(FLOPs / P, bytes / B): drawn at intensity I = FLOPs / bytes with rate
    FLOPs / time, it lies on min(P, I·B). P and B: the H100 SXM5 datasheet's 989.4 TFLOP/s bf16 dense and
    3.35 TB/s; the ridge is P / B."""
    import symllm
    ax = plots.roofline("llama3.2-1b", "h100-sxm", batch=4).axes[0]
    roof, prefill, decode, prefill_expected, decode_expected, ridge = ax.lines
    peak, bandwidth = 989.4e12, 3.35e12
    assert max(roof.get_ydata()) * 1e12 == pytest.approx(peak)
    assert ridge.get_xdata()[0] == pytest.approx(peak / bandwidth)
    for point in (prefill, decode):
        (x,), (y,) = point.get_xdata(), point.get_ydata()
        assert y * 1e12 == pytest.approx(min(peak, x * bandwidth), rel=1e-9)
    w = symllm.workload("llama3.2-1b", batch=4, gpu="h100-sxm")
    assert decode.get_xdata()[0] == pytest.approx(w["flops"]["decode_token"] / w["time"]["decode_token_bytes"])
    assert decode.get_xdata()[0] < peak / bandwidth < prefill.get_xdata()[0]  # memory- and compute-bound
    # the expected points: at the same intensity, at FLOPs / the expected time (under the roof)
    e = w["time"]["expected"]
    for bound, point, key, flops in ((prefill, prefill_expected, "prefill_s", w["flops"]["prefill"]),
                                     (decode, decode_expected, "decode_token_s", w["flops"]["decode_token"])):
        assert point.get_xdata()[0] == bound.get_xdata()[0]
        assert point.get_ydata()[0] * 1e12 == pytest.approx(flops / e[key], rel=1e-9)
        assert point.get_ydata()[0] < bound.get_ydata()[0]
        # each labelled as what it is (the bound's points said only "prefill" and "decode step")
        assert bound.get_label().endswith(", bound") and point.get_label().endswith(", expected (vllm)")
    with pytest.raises(symllm.SymllmError, match="^gpu: a roofline is for one GPU"):
        plots.roofline("llama3.2-1b", "h100-sxm", tp=2)


def test_sweep_columns_from_the_csv(tiny, cli, tmp_path):
    """`symllm sweep` to CSV, then `symllm plot sweep`: the drawn points are the file's rows (read here
    with the csv module), sorted along x; byte columns in GiB, counts as they are."""
    grid = tmp_path / "grid.csv"
    assert cli(["sweep", "--base", tiny, "--dim", "128,64,96", "--quantity", "params,kv_cache",
                "-o", grid]).code == 0
    rows = sorted(csv.DictReader(grid.open()), key=lambda r: int(r["dim"]))
    ax = plots.sweep(grid, "dim", ["params"]).axes[0]
    assert list(ax.lines[0].get_xdata()) == [64, 96, 128]
    assert list(ax.lines[0].get_ydata()) == [int(r["params"]) for r in rows]
    assert ax.lines[0].get_ydata()[0] == N
    ax = plots.sweep(grid, "dim", "kv_cache").axes[0]
    assert [_gib(y) for y in ax.lines[0].get_ydata()] == pytest.approx([int(r["kv_cache"]) for r in rows])
    out = tmp_path / "s.png"
    assert cli(["plot", "sweep", grid, "--x", "dim", "--y", "params", "-o", out]).code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = cli(["plot", "sweep", grid, "--x", "dim", "--y", "params,kv_cache", "-o", out])
    assert bad.code == 2 and bad.err == "symllm: error: y: plot byte columns and other columns separately " \
                                       "(one unit per axis)\n"


def test_files_and_pgfplots_compile(tiny, cli, tmp_path):
    """-o FILE.png/.svg/.pdf/.tex: each format's own header; SVG and PDF the same bytes twice (no date);
    the pgfplots of every plot compiles with pdflatex in two columns without an overfull box, and
    its coordinates are the Figure's data."""
    for ext, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")):
        out = tmp_path / f"c{ext}"
        assert cli(["plot", "context", tiny, "--contexts", "64,128", "-o", out]).code == 0
        first = out.read_bytes()
        assert first.startswith(magic)
        if ext != ".png":
            assert cli(["plot", "context", tiny, "--contexts", "64,128", "-o", out]).code == 0
            assert out.read_bytes() == first
    figs = {"memory": plots.memory(tiny, seq=64, gpu="l4"), "context": plots.context(tiny, contexts=[64, 128]),
            "flops": plots.flops(tiny, contexts=[64, 128]), "roofline": plots.roofline(tiny, "h100-sxm"),
            "sweep": plots.sweep({"dim": [64, 128], "params": [N, 4 * N]}, "dim")}
    for name, fig in figs.items():
        plots.save(fig, tmp_path / f"{name}.tex")
    tex = (tmp_path / "context.tex").read_text()
    line = figs["context"].axes[0].lines[1]
    coords = re.findall(r"\\addplot\[[^]]*dashed[^]]*\] coordinates \{([^}]*)\}", tex)[0]
    pairs = [tuple(map(float, p.split(","))) for p in re.findall(r"\(([^)]*)\)", coords)]
    assert [x for x, _ in pairs] == [64, 128]
    assert [y for _, y in pairs] == pytest.approx([float(y) for y in line.get_ydata()], rel=1e-5)
    exe = shutil.which("pdflatex")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("pdflatex is required in CI")
        pytest.skip("pdflatex is not installed")
    for layout in ("twocolumn",):  # each picture is scaled to \linewidth: the narrower column is the test
        doc = tmp_path / f"doc{layout}.tex"
        doc.write_text(f"\\documentclass[{layout}]{{article}}\n\\usepackage{{pgfplots}}\n\\pgfplotsset{{compat=1.16}}\n"
                       "\\begin{document}\n" + "".join(f"\\input{{{n}.tex}}\n\n" for n in figs) + "\\end{document}\n")
        done = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", doc.name],
                              cwd=tmp_path, capture_output=True, text=True, timeout=240)
        log = doc.with_suffix(".log").read_text(encoding="latin-1")
        assert done.returncode == 0, log[log.find("\n!"):][:1500]
        assert "Overfull" not in log and "Warning" not in log, layout


def test_cli_errors_are_one_line_and_leave_files_alone(tiny, cli, tmp_path):
    """Bad input is one line and exit 2; an existing -o file is untouched by a failed plot; --help fits
    100 columns."""
    out = tmp_path / "keep.png"
    out.write_bytes(b"old")
    cases = [(["plot", "memory", "nope-7b", "-o", out], "symllm: error: model:"),
             (["plot", "memory", tiny, tiny, "-o", out], "symllm: error: model: plot memory draws one model, not 2"),
             (["plot", "roofline", tiny, "-o", out], "symllm: error: gpu: a roofline needs a GPU"),
             (["plot", "context", tiny, "-o", tmp_path / "c.txt"], "symllm: error: output: "),
             (["plot", "context", tiny, "--contexts", "0", "-o", out], "symllm: error: seq:"),
             (["plot", "memory", tiny, "--contexts", "64", "-o", out], "symllm: error: contexts:"),
             (["plot", "memory", tiny, "--lora-rank", "8", "-o", out], "symllm: error: lora_rank: not drawn"),
             (["plot", "context", tiny, "-o", tmp_path / "missing" / "c.png"], "symllm: error: output:"),
             (["plot", "context", tiny, "--format", "gif", "-o", out],
              "symllm: error: format: unknown 'gif' (known: png, svg, pdf, tex)\n")]
    for argv, start in cases:
        r = cli(argv)
        assert r.code == 2 and r.err.startswith(start) and r.err.count("\n") == 1, (argv, r.err)
    from symllm.errors import SymllmError
    with pytest.raises(SymllmError, match=r"^format: unknown 'gif' \(known: png, svg, pdf, tex\)$"):
        plots.save(plots.sweep({"dim": [64, 128], "params": [N, 4 * N]}, "dim"), out, "gif")
    assert out.read_bytes() == b"old"
    assert not list(tmp_path.glob(".symllm-*"))
    r = cli(["plot", "--help"])
    assert r.code == 0 and "roofline" in r.out and max(map(len, r.out.splitlines())) <= 100


# `symllm count` never imports matplotlib: tests/test_startup.py's test_warm_count_builds_no_formula (its
# cold and its warm process)


def test_sweep_plots_every_format_a_sweep_writes(tiny, cli, tmp_path):
    """plot sweep reads a sweep's file in each format the sweep writes, with the sweep's own reader: JSON lines
    in a .json file (read as CSV and refused before), int4's byte counts that are not whole (``p/q``) exactly,
    and Parquet; a table of several models (its base column) is one line, a single model's base column is
    not drawn."""
    from fractions import Fraction

    import symllm
    pq = requires("pyarrow.parquet")
    int4 = ["--dim", "128,64,96", "--quantity", "weights", "--dtype", "int4", "--group-size", "100"]
    assert cli(["sweep", "--base", tiny, *int4, "-o", tmp_path / "w.csv"]).code == 0
    rows = sorted(csv.DictReader((tmp_path / "w.csv").open()), key=lambda r: int(r["dim"]))
    weights = [Fraction(r["weights"]) for r in rows]
    assert any(w.denominator != 1 for w in weights)
    assert cli(["sweep", "--base", tiny, *int4, "-o", tmp_path / "w.json"]).code == 0
    assert (tmp_path / "w.json").read_text().startswith("{")  # JSON lines
    for name in ("w.csv", "w.json"):
        line = plots.sweep(tmp_path / name, "dim", "weights").axes[0].lines[0]
        assert list(line.get_xdata()) == [64, 96, 128], name
        assert [_gib(y) for y in line.get_ydata()] == pytest.approx([float(w) for w in weights], rel=1e-12), name
    assert cli(["sweep", "--base", tiny, "--dim", "128,64", "-o", tmp_path / "p.parquet"]).code == 0
    theirs = sorted(pq.read_table(tmp_path / "p.parquet").to_pylist(), key=lambda r: r["dim"])
    line = plots.sweep(tmp_path / "p.parquet", "dim", "params").axes[0].lines[0]
    assert list(line.get_ydata()) == [r["params"] for r in theirs] and theirs[0]["params"] == N
    r = cli(["plot", "sweep", tmp_path / "p.parquet", "--x", "dim", "-o", tmp_path / "p.png"])
    assert r.code == 0 and (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    from symllm.studies.sweeps import Sweeps
    several = Sweeps(["llama2-7b", "llama3-8b"], {"n_layers": [1, 2]}).run()
    with pytest.raises(symllm.SymllmError, match="^table: its base column names several models"):
        plots.sweep(several, "n_layers")
    one = {"base": ["llama2-7b"] * 2, "n_layers": [1, 2], "params": [3, 4]}
    assert [ln.get_label() for ln in plots.sweep(one, "n_layers").axes[0].lines] == ["params"]
    with pytest.raises(symllm.SymllmError, match="^y: base names the model, not a number$"):
        plots.sweep(one, "n_layers", "base")
