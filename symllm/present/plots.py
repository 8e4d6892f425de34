"""Plots of symllm's numbers as matplotlib Figures (``pip install "symllm[plot]"``): each function takes
its numbers from the public API (:func:`symllm.workload`, :func:`symllm.costs.shares.memory_by_component`,
a :class:`~symllm.studies.sweeps.Sweep`'s columns) and only draws them. Bytes are drawn in GiB
(2**30 bytes), FLOPs in GFLOP / TFLOP/s, context lengths on a log2 axis.

* :func:`memory` -- the memory kinds of a workload, and each component's share of them;
* :func:`context` -- KV cache and inference peak against context length, one or more models, a GPU's
  capacity as a line;
* :func:`flops` -- FLOPs per token against context (a prefill's average and one decode step's);
* :func:`roofline` -- a workload's prefill and decode step on one GPU's roofline;
* :func:`sweep` -- columns of a sweep against one of its axes.

:func:`save` writes a Figure as PNG, SVG or PDF, or as pgfplots (``.tex``, :func:`pgfplots`) to
``\\input`` into a LaTeX report. matplotlib is imported on first use: ``import symllm`` and
``symllm count`` never load it.

>>> fig = context(["llama3.2-1b"], contexts=[1024, 4096])
>>> [line.get_label() for line in fig.axes[0].lines]
['llama3.2-1b inference peak', 'llama3.2-1b KV cache']
>>> float(fig.axes[0].lines[1].get_ydata()[0] * 2**30) == 2 * 16 * 8 * 64 * 1024 * 2
True
"""
from __future__ import annotations

import io
import math
import re
from fractions import Fraction
from pathlib import Path

from symllm.errors import SymllmError
from symllm.present.format import layout_words
from symllm.validate import choice, short, shown_path, with_list

__all__ = ["KINDS", "FORMATS", "CONTEXTS", "memory", "context", "flops", "roofline", "sweep", "save", "pgfplots"]

#: what ``symllm plot KIND`` draws -> the function drawing it
KINDS = ("memory", "context", "flops", "roofline", "sweep")
#: the formats a plot is written in (``tex``: pgfplots) -> the file ending that chooses it
FORMATS = {"png": ".png", "svg": ".svg", "pdf": ".pdf", "tex": ".tex"}
#: bytes per GiB, the unit every byte axis is drawn in
GIB = 2 ** 30
#: default context lengths: 1K to 128K tokens
CONTEXTS = tuple(2 ** k for k in range(10, 18))
#: the colours of matplotlib's default cycle, named once (lines, bars and pgfplots share them)
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _figure(rows: int = 1, cols: int = 1, size=(7.0, 4.2)):
    """A Figure with its own canvas (no pyplot: no global state, no display needed)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SymllmError("plot: needs matplotlib (pip install 'symllm[plot]')") from None
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _float(value) -> float:
    """An exact number (int, Fraction) as a float for drawing."""
    return float(Fraction(value))


def _gib(value) -> float:
    return float(Fraction(value) / GIB)


def _log2_contexts(ax, contexts) -> None:
    """A log2 context axis with tick labels 1K, 2K, ..., 128K."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([float(c) for c in contexts]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))


def _plain(axis) -> None:
    """Tick labels of a log2 axis as plain numbers (0.25, 1, 4, 2048) instead of powers of two."""
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _pos=None: f"{v:g}"))


def _tokens(x, _pos=None) -> str:
    """A token count as people write it: 1K for 1024, 128K, 1M, else the number.

    >>> _tokens(1024), _tokens(131072), _tokens(2 ** 20), _tokens(3000)
    ('1K', '128K', '1M', '3000')
    """
    x = int(round(x))
    for unit, name in ((2 ** 20, "M"), (2 ** 10, "K")):
        if x >= unit and x % unit == 0:
            return f"{x // unit}{name}"
    return str(x)


def _workload_options(options: dict, varied: tuple) -> dict:
    """The workload options a curve plot passes on: the ones it varies are refused (one line)."""
    for name in varied:
        if options.get(name) is not None:
            raise SymllmError(f"{name}: the plot varies it (give contexts, --contexts)")
    for name, count in (("lora_rank", "--lora-rank"), ("weight_format", "--weight-format")):
        if options.get(name) is not None:  # count adds these beside workload()'s memory; a plot would drop them
            raise SymllmError(f"{name}: not drawn by the plots yet (symllm count {count} shows it)")
    return {k: v for k, v in options.items() if v is not None}


def _capacity(gpu, options: dict):
    """(title, bytes) of the GPU a curve plot draws as a line: a catalogue name or a
    :class:`~symllm.costs.accelerators.GPU`, with ``gpu_memory`` etc. applied; None without one."""
    from symllm.costs import accelerators
    from symllm.costs.workloads import Workload
    hw = {k: options.pop(k) for k in ("gpu", "gpu_memory", "gpu_bandwidth", "gpu_flops") if k in options}
    if gpu is not None:
        hw["gpu"] = gpu
    if not any(v is not None for v in hw.values()):
        return None
    g = accelerators.of(Workload.of(**hw))
    return g.title, g.memory


def memory(config, *, gpu=None, **workload):
    """The memory of one workload: left, each memory kind of :func:`symllm.workload` (``memory``; per GPU,
    ``memory_per_gpu``, under a parallel layout);
    right, each component's weights, KV cache, saved activations and training states
    (:func:`symllm.costs.shares.memory_by_component`; not for an HF stack, whose terms are the whole
    model's: the left panel only). With ``gpu`` its capacity is a line on the left.

    >>> fig = memory("llama3.2-1b", seq=1024)
    >>> kinds, parts = fig.axes
    >>> [t.get_text() for t in kinds.get_yticklabels()][:2]
    ['weights', 'KV cache']
    """
    from symllm.costs import phases, shares, workloads
    options = _workload_options(workload, ())
    cap = _capacity(gpu, options)
    work = phases.workload(config, **options)
    name = _name(config)
    recomputed = work["workload"]["recompute"] != "none"
    kinds = shares.KINDS if not recomputed else tuple(k for k in shares.KINDS if k != "activations")
    by_part = work["workload"]["stack"] in workloads.COMPONENT_STACKS  # an HF stack's terms are the model's
    parts = shares.memory_by_component(config, kinds=kinds, **options) if by_part else {}
    fig, axes = _figure(1, 2 if by_part else 1, size=(11.0 if by_part else 6.0, 4.2))
    left = axes[0]
    labels = {"weights": "weights", "kv_cache": "KV cache", "inference": "inference (weights + KV)",
              "training_states": "training states", "activations": "activations (saved)",
              "inference_peak": "inference peak", "training_peak": "training peak"}
    w = work["workload"]
    layout = w["tp"] * w["pp"] * w["dp"] > 1 or w["sp"]  # per GPU of the layout (memory_per_gpu), as count
    mem = [(k, v) for k, v in work["memory_per_gpu" if layout else "memory"].items()
           if k in labels and v is not None]  # (none of training's in an engine's own EP layout: it serves only)
    ys = list(range(len(mem)))
    left.barh(ys, [_gib(v) for _, v in mem], color=COLOURS[0])
    left.set_yticks(ys, [labels[k] for k, _ in mem])
    left.invert_yaxis()
    left.set_xlabel("GiB")
    laid = (f"; {layout_words(work['tp_layout'], work.get('training_tp_layout'))}" if work.get("tp_layout")
            else "")  # (DeepSeek-V4, the vocabulary under MLC: whose split; each kind's)
    left.set_title(f"{name}: memory per GPU (tp {w['tp']}, pp {w['pp']}, dp {w['dp']}{laid})" if layout
                   else f"{name}: memory by kind")
    if cap is not None:
        left.axvline(_gib(cap[1]), color=COLOURS[3], linestyle="--", label=f"{cap[0]} ({_gib(cap[1]):.0f} GiB)")
        left.legend(loc="lower right", fontsize="small")
    if by_part:
        _by_component(axes[1], parts, kinds, labels, whole=bool(layout))
    fig.suptitle(f"b={w['batch']}, s={w['seq']}, n={w['gen']}; weights {w['dtype']}, KV {w['kv_dtype']}, "
                 f"activations {w['act_dtype']}; ZeRO {w['zero_stage']} over {w['dp']}; {w['stack']} stack",
                 fontsize="small")
    return fig


def _by_component(right, parts: dict, kinds, labels: dict, whole: bool) -> None:
    """Grouped horizontal bars: each part's bytes of each kind, in GiB."""
    names = list(parts)
    height = 0.8 / len(kinds)
    for i, kind in enumerate(kinds):
        right.barh([j + (i - (len(kinds) - 1) / 2) * height for j in range(len(names))],
                   [_gib(parts[n][kind]) for n in names], height=height, color=COLOURS[i], label=labels[kind])
    right.set_yticks(range(len(names)), names)
    right.invert_yaxis()
    right.set_xlabel("GiB")
    right.set_title("the whole model, by component" if whole else "by component (summed over the blocks)")
    right.legend(loc="lower right", fontsize="small")


def _models(models) -> list:
    models = [models] if isinstance(models, str) or not hasattr(models, "__iter__") else list(models)
    if not models:
        raise SymllmError("model: give at least one model")
    return models


def _name(config) -> str:
    """The name a model is drawn under: a preset's, or the name its config file resolves to."""
    from symllm.arch.catalogue import resolve
    return resolve(config).name


def _at_contexts(config, contexts, options: dict) -> list[dict]:
    """:func:`symllm.workload` of ``config`` at each of ``contexts`` (its ``seq``); a context past the positions
    the model was trained for warned once, for the longest (as a sweep warns), not once a context."""
    import warnings
    from symllm.costs import checks, phases
    from symllm.errors import ContextWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContextWarning)
        runs = [phases.workload(config, seq=c, **options) for c in contexts]
    checks.warn_past_window(config, max(contexts) + runs[0]["workload"]["gen"])
    return runs


def context(models, *, contexts=CONTEXTS, gpu=None, **workload):
    """KV cache (dashed) and inference peak (solid) against the context length ``s`` (the prompt's
    tokens, ``gen`` 0 unless given: the cache holds ``s + n``) for each of ``models``, from
    :func:`symllm.workload` at each length; with ``gpu`` its capacity is a horizontal line.

    >>> fig = context(["llama3.2-1b", "llama3.2-3b"], contexts=[1024, 2048], gpu="l4")
    >>> len(fig.axes[0].lines), fig.axes[0].get_ylabel()
    (5, 'GiB')
    """
    options = _workload_options(workload, ("seq", "context"))
    cap = _capacity(gpu, options)
    contexts = [int(c) for c in contexts]
    fig, (ax,) = _figure()
    for i, config in enumerate(_models(models)):
        runs = [r["memory"] for r in _at_contexts(config, contexts, options)]
        colour = COLOURS[i % len(COLOURS)]
        ax.plot(contexts, [_gib(r["inference_peak"]) for r in runs], color=colour, marker="o", markersize=3,
                label=f"{_name(config)} inference peak")
        ax.plot(contexts, [_gib(r["kv_cache"]) for r in runs], color=colour, linestyle="--", marker="o",
                markersize=3, label=f"{_name(config)} KV cache")
    if cap is not None:
        ax.axhline(_gib(cap[1]), color="black", linestyle=":", label=f"{cap[0]} ({_gib(cap[1]):.0f} GiB)")
    _log2_contexts(ax, contexts)
    ax.set_xlabel("context length s (tokens)")
    ax.set_ylabel("GiB")
    ax.set_yscale("log", base=2)
    _plain(ax.yaxis)
    ax.set_title("KV cache and inference peak against context")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def flops(models, *, contexts=CONTEXTS, **workload):
    """FLOPs per token (matmuls) against the context: a prefill of ``s`` tokens per token (solid:
    ``prefill / (b·s)``) and one decode step with ``s`` tokens cached (dashed: ``decode_token / b``),
    for each of ``models``, from :func:`symllm.workload`.

    >>> fig = flops("llama3.2-1b", contexts=[1024, 2048])
    >>> fig.axes[0].get_ylabel()
    'GFLOP per token'
    """
    options = _workload_options(workload, ("seq", "context"))
    options.pop("gpu", None)
    contexts = [int(c) for c in contexts]
    fig, (ax,) = _figure()
    for i, config in enumerate(_models(models)):
        runs = _at_contexts(config, contexts, options)
        b = runs[0]["workload"]["batch"]
        colour = COLOURS[i % len(COLOURS)]
        ax.plot(contexts, [_float(Fraction(r["flops"]["prefill"], b * c)) / 1e9 for r, c in zip(runs, contexts)],
                color=colour, linewidth=4, alpha=0.4, label=f"{_name(config)} prefill (average per token)")
        ax.plot(contexts, [_float(Fraction(r["flops"]["decode_token"], b)) / 1e9 for r in runs], color=colour,
                linestyle="--", marker="o", markersize=3, label=f"{_name(config)} decode step (per token)")
        attention = runs[0]["workload"]["attention"]
    _log2_contexts(ax, contexts)
    ax.set_xlabel("context length s (tokens)")
    ax.set_ylabel("GFLOP per token")
    ax.set_title(f"matmul FLOPs per token against context ({attention} attention)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def roofline(config, gpu=None, **workload):
    """A workload's prefill and decode step on one GPU's roofline: attainable FLOP/s
    ``min(P, I·B_mem)`` against arithmetic intensity ``I`` (FLOPs per byte moved), and each phase at its
    intensity and its roofline rate (FLOPs / time), from :func:`symllm.workload`'s ``time`` group, each
    also at its expected time (hollow: :mod:`symllm.costs.efficiency`, ``--engine``).
    One GPU only (the multi-GPU times add communication: ``symllm count --gpu``).

    >>> fig = roofline("llama3.2-1b", "h100-sxm", batch=8)
    >>> [line.get_label() for line in fig.axes[0].lines][1:5]
    ['prefill, bound', 'decode step, bound', 'prefill, expected (vllm)', 'decode step, expected (vllm)']
    """
    from symllm.costs import phases
    options = _workload_options(workload, ())
    if gpu is not None:
        options["gpu"] = gpu
    work = phases.workload(config, **options)
    t = work.get("time")
    if t is None:
        raise SymllmError("gpu: a roofline needs a GPU (--gpu NAME, or --gpu-memory, -bandwidth, -flops)")
    if t["gpus"] > 1:
        raise SymllmError(f"gpu: a roofline is for one GPU, not {t['gpus']} (no --tp, --pp, --dp, --ep)")
    peak, bandwidth = _float(t["peak_flops"]), _float(t["bandwidth"])
    points = [("prefill", work["flops"]["prefill"], t["prefill_bytes"]),
              ("decode step", work["flops"]["decode_token"], t["decode_token_bytes"])]
    intensities = [_float(Fraction(f, m)) for _, f, m in points]
    ridge = _float(t["ridge"])
    low = 2 ** math.floor(math.log2(min(intensities + [ridge]) / 4))
    high = 2 ** math.ceil(math.log2(max(intensities + [ridge]) * 4))
    xs = [low, ridge, high]
    fig, (ax,) = _figure()
    ax.plot(xs, [min(peak, x * bandwidth) / 1e12 for x in xs], color="black",
            label=f"{t['title']}: {peak / 1e12:,g} TFLOP/s {t['peak_dtype']}, {bandwidth / 1e9:,g} GB/s")
    e = t["expected"]  # the expected times (symllm.costs.efficiency): hollow, below each bound
    for i, ((label, f, _), x) in enumerate(zip(points, intensities)):  # on one GPU: FLOPs / max(F/P, M/B)
        ax.plot([x], [min(peak, x * bandwidth) / 1e12], linestyle="none", marker="o", markersize=7,
                color=COLOURS[i + 1], label=f"{label}, bound")
    for i, ((label, f, _), x) in enumerate(zip(points, intensities)):
        expected = e["prefill_s" if label == "prefill" else "decode_token_s"]
        if expected is None:  # does not fit: not timed (symllm.costs.hardware.blank_unfit)
            continue
        ax.plot([x], [_float(f) / _float(expected) / 1e12], linestyle="none", marker="o", markersize=7,
                markerfacecolor="none", color=COLOURS[i + 1], label=f"{label}, expected ({e['engine']})")
    ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    _plain(ax.xaxis)
    ax.set_yscale("log", base=10)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("TFLOP/s")
    w = work["workload"]
    ax.set_title(f"{_name(config)} on {t['gpu']}: b={w['batch']}, s={w['seq']}, {w['dtype']} weights "
                 f"(ridge {ridge:.0f} FLOP/byte)", fontsize="medium")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def _columns(data) -> dict:
    """Column name -> list of numbers, from a :class:`~symllm.studies.grids.SweepResult`, a dict of
    columns, or the path of a table file ``symllm sweep`` wrote (CSV, JSON lines or Parquet, read by
    :func:`symllm.studies.tables.read_table`: ``p/q`` exactly)."""
    if hasattr(data, "columns") and isinstance(data.columns, dict):
        return {k: list(v.tolist() if hasattr(v, "tolist") else v) for k, v in data.columns.items()}
    if isinstance(data, dict):
        return {k: list(v.tolist() if hasattr(v, "tolist") else v) for k, v in data.items()}
    from symllm.studies.tables import read_table
    cols = read_table(data, columns=True, quotients=True)
    if not cols or not len(next(iter(cols.values()))):
        raise SymllmError(f"table: {shown_path(data)} has no rows")
    return {k: v.tolist() for k, v in cols.items()}


def _bytes_column(name: str) -> bool:
    """Whether a sweep quantity is a byte count (drawn in GiB)."""
    from symllm.costs import finetune, workloads
    base = name[:-len("_per_gpu")] if name.endswith("_per_gpu") else name
    return base in workloads.MEMORY_KINDS or name.startswith("comm_") or name in finetune.MEMORY_KEYS


def sweep(data, x: str, y=None, *, log: bool = True):
    """Columns ``y`` (default: every column but ``x``) of a sweep against its column ``x``: ``data`` is
    a :class:`~symllm.studies.grids.SweepResult` (``Sweep(...).run()``), a dict of columns, or a file
    ``symllm sweep`` wrote (CSV, JSON lines, Parquet; a column naming the model is not drawn). Byte columns
    are drawn in GiB (all of ``y`` must then be bytes, or none), points sorted by ``x``; ``log`` puts both
    axes on log scales.

    >>> fig = sweep({"dim": [2048, 4096], "params": [1.4e9, 5.1e9]}, "dim")
    >>> fig.axes[0].lines[0].get_label(), fig.axes[0].get_ylabel()
    ('params', 'count')
    """
    from symllm.studies.tables import NAME_COLUMNS
    cols = _columns(data)
    if x not in cols:
        raise SymllmError(with_list(f"x: no column {short(x, 20)} (columns: ", cols, near=x, see="the table's header"))
    named = [c for c in cols if c in NAME_COLUMNS]  # Sweeps: the model of each row
    for c in named:
        if len(set(cols[c])) > 1:
            raise SymllmError(f"table: its {c} column names several models; plot one model's sweep at a time")
    ys = [c for c in cols if c != x and c not in named] if y is None else ([y] if isinstance(y, str) else list(y))
    for c in ys:
        if c not in cols:
            raise SymllmError(with_list(f"y: no column {short(c, 20)} (columns: ", cols, near=c,
                                        see="the table's header"))
    for axis, c in (("x", x), *(("y", c) for c in ys)):
        if c in named:
            raise SymllmError(f"{axis}: {c} names the model, not a number")
    if not ys or not cols[x]:
        raise SymllmError("y: nothing to plot")
    in_bytes = {_bytes_column(c) for c in ys}
    if len(in_bytes) > 1:
        raise SymllmError("y: plot byte columns and other columns separately (one unit per axis)")
    in_bytes = in_bytes.pop()
    order = sorted(range(len(cols[x])), key=lambda i: cols[x][i])
    xs = [_float(cols[x][i]) for i in order]
    fig, (ax,) = _figure()
    for i, c in enumerate(ys):
        ax.plot(xs, [(_gib if in_bytes else _float)(cols[c][j]) for j in order], color=COLOURS[i % len(COLOURS)],
                marker="o", markersize=3, label=c)
    if log:
        ax.set_xscale("log", base=2)
        _plain(ax.xaxis)
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel("GiB" if in_bytes else "count")
    ax.set_title(f"sweep: {', '.join(ys)} against {x}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    return fig


# --------------------------------------------------------------------------- output

def _format(path, fmt: str | None) -> str:
    if fmt is not None:
        return choice("format", fmt, FORMATS)
    suffix = Path(str(path)).suffix.lower()
    for fmt, ending in FORMATS.items():
        if suffix == ending:
            return fmt
    raise SymllmError(f"output: {shown_path(path)}: name a .png, .svg, .pdf or .tex (pgfplots) file")


def save(fig, path, fmt: str | None = None):
    """Write ``fig`` to ``path`` (format from its ending, or ``fmt``: png, svg, pdf, tex) as
    :func:`symllm.files.write_atomic` writes: complete or not at all. Metadata carry no date, so the
    same figure gives the same SVG and PDF bytes. Returns the path.

    >>> import pathlib, tempfile
    >>> p = save(sweep({"dim": [1, 2], "params": [3, 4]}, "dim"), pathlib.Path(tempfile.mkdtemp()) / "s.svg")
    >>> p.read_text()[:5]
    '<?xml'
    """
    from symllm.files import write_atomic
    fmt = _format(path, fmt)
    if fmt == "tex":
        return write_atomic(path, pgfplots(fig))
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}[fmt]
    buf = io.BytesIO()
    import matplotlib
    with matplotlib.rc_context({"svg.hashsalt": "symllm"}):
        fig.savefig(buf, format=fmt, dpi=150, metadata=metadata)
    return write_atomic(path, buf.getvalue(), binary=True)


def _tex_number(value: float) -> str:
    return f"{value:.6g}"


def _tick_tex(text: str) -> str:
    r"""A matplotlib tick label in LaTeX: its mathtext powers (``$\mathdefault{10^{3}}$``) as math, any other
    text escaped (its Unicode minus a hyphen).

    >>> _tick_tex(r"$\mathdefault{10^{3}}$"), _tick_tex(r"$\mathdefault{3\times10^{-2}}$"), _tick_tex("128K")
    ('$10^{3}$', '$3\\times10^{-2}$', '128K')
    """
    from symllm.present.format import escape_latex
    inner = re.fullmatch(r"\$\\mathdefault\{(.*)\}\$", text)
    if inner and re.fullmatch(r"[0-9.^{}\-]*(\\times[0-9.^{}\-]*)?", inner.group(1)):
        return f"${inner.group(1)}$"
    return escape_latex(text.replace("\u2212", "-"))


def _colour_name(colour) -> str:
    from matplotlib.colors import to_hex
    return "c" + to_hex(colour)[1:].upper()


def pgfplots(fig) -> str:
    """``fig`` as pgfplots code: one ``tikzpicture`` per axes, scaled to the line's width (one or two
    columns), each line as ``\\addplot coordinates``
    (its data points, in data coordinates), each bar as a filled rectangle, the axes' labels, scales,
    limits, tick labels and legend. ``\\input`` it into a document that loads ``pgfplots``.

    >>> tex = pgfplots(sweep({"dim": [1, 2], "params": [3, 4]}, "dim", log=False))
    >>> "\\\\addplot" in tex and "(1, 3) (2, 4)" in tex
    True
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from symllm.present.format import escape_latex
    colours: dict[str, str] = {}

    def colour(c) -> str:
        name = _colour_name(c)
        colours[name] = name[1:]
        return name

    pictures = []
    for ax in fig.axes:
        opts = ["width=12cm", "height=7cm", "enlargelimits=false", "legend cell align=left",
                "legend style={font=\\footnotesize, at={(0.5,-0.2)}, anchor=north, legend columns=2}",
                "title style={font=\\small}", "label style={font=\\small}", "tick label style={font=\\footnotesize}"]
        if ax.get_title():
            opts.append(f"title={{{escape_latex(ax.get_title())}}}")
        for axis in ("x", "y"):
            label = getattr(ax, f"get_{axis}label")()
            if label:
                opts.append(f"{axis}label={{{escape_latex(label)}}}")
            scale = getattr(ax, f"get_{axis}scale")()
            if scale == "log":
                base = getattr(ax, f"{axis}axis")._scale.base
                opts.append(f"{axis}mode=log, log basis {axis}={base:g}")
            low, high = getattr(ax, f"get_{axis}lim")()
            low, high = min(low, high), max(low, high)
            opts.append(f"{axis}min={_tex_number(low)}, {axis}max={_tex_number(high)}")
            ticks = [t for t in getattr(ax, f"get_{axis}ticklabels")() if t.get_text()]
            if ticks:
                pos = [t.get_position()[0 if axis == "x" else 1] for t in ticks]
                inside = [(p, t) for p, t in zip(pos, ticks) if low <= p <= high]
                opts.append(f"{axis}tick={{{', '.join(_tex_number(p) for p, _ in inside)}}}")
                opts.append(f"{axis}ticklabels={{{', '.join('{' + _tick_tex(t.get_text()) + '}' for _, t in inside)}}}")
        if ax.yaxis_inverted():
            opts.append("y dir=reverse")
        body = []
        to_data = ax.transData.inverted()
        for line in ax.lines:
            if not isinstance(line, Line2D):
                continue
            xy = to_data.transform(line.get_transform().transform(line.get_xydata()))
            style = [f"color={colour(line.get_color())}"]
            style.append({"--": "dashed", ":": "dotted", "-.": "dashdotted"}.get(line.get_linestyle(), "solid"))
            if line.get_linestyle() in ("None", "none", ""):
                style.append("only marks")
            style.append("mark=*" if line.get_marker() not in (None, "None", "none", "") else "mark=none")
            label = line.get_label()
            shown = ax.get_legend() is not None and label and not label.startswith("_")
            if not shown:
                style.append("forget plot")
            coords = " ".join(f"({_tex_number(a)}, {_tex_number(b)})" for a, b in xy)
            body.append(f"\\addplot[{', '.join(style)}] coordinates {{{coords}}};")
            if shown:
                body.append(f"\\addlegendentry{{{escape_latex(label)}}}")
        legend = ax.get_legend()
        bar_labels = {}
        if legend is not None:
            for handle, text in zip(legend.legend_handles, legend.get_texts()):
                if isinstance(handle, Rectangle):
                    bar_labels[_colour_name(handle.get_facecolor())] = text.get_text()
        for name, text in bar_labels.items():
            body.append(f"\\addlegendimage{{area legend, fill={name}, draw={name}}}")
            body.append(f"\\addlegendentry{{{escape_latex(text)}}}")
        for patch in ax.patches:
            if not isinstance(patch, Rectangle):
                continue
            (x0, y0), (x1, y1) = to_data.transform(patch.get_transform().transform([(0, 0), (1, 1)]))
            fill = colour(patch.get_facecolor())
            body.append(f"\\fill[{fill}] (axis cs:{_tex_number(x0)},{_tex_number(y0)}) "
                        f"rectangle (axis cs:{_tex_number(x1)},{_tex_number(y1)});")
        pictures.append("\\noindent\\resizebox{\\linewidth}{!}{%\n\\begin{tikzpicture}\n\\begin{axis}[\n  "
                        + ",\n  ".join(opts) + "]\n" + "\n".join(body)
                        + "\n\\end{axis}\n\\end{tikzpicture}}\\par")
    head = ["% symllm plot, pgfplots: \\input this into a document with \\usepackage{pgfplots}"]
    head += [f"\\definecolor{{{name}}}{{HTML}}{{{hexa}}}" for name, hexa in sorted(colours.items())]
    return "\n".join(head) + "\n" + "\n\n".join(pictures) + "\n"
