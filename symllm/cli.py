"""The ``symllm`` command line: a thin layer over the public API (no formulas here).

Bad input prints one line, ``symllm: error: <field>: <what is wrong>``, on stderr and exits 2.
"""
from __future__ import annotations

import argparse
import json
import sys
import typing
from fractions import Fraction

from . import api, config as cfgmod, costs, derivation, render
from .components import COMPONENTS
from .errors import SymllmError
from .files import write_atomic
from .format import grouped, human, human_bytes
from .workload import Workload, options as workload_options

EXAMPLES = {
    "count": "examples:\n  symllm count llama3.1-8b\n  symllm count llama3.1-8b --json\n"
             "  symllm count path/to/params.json --vocab-size 32000",
    "derive": "examples:\n  symllm derive --component attention --gqa --format latex\n"
              "  symllm derive --component attention --mqa --format pretty\n"
              "  symllm derive --component feed_forward --model llama3.1-8b\n"
              "  symllm derive --component model --quantity flops --model llama2-7b --seq 512 --format markdown",
    "report": "examples:\n  symllm report llama3.1-8b\n"
              "  symllm report llama3.1-8b --format latex --standalone -o r.tex\n"
              "  symllm report llama2-7b --notation paper.toml --template-dir my_templates",
    "presets": "examples:\n  symllm presets",
    "verify": "examples:\n  symllm verify llama3.1-405b\n  symllm verify path/to/config.json",
    "sweep": "examples:\n  symllm sweep --base llama3-8b --dim 2048:8192:256 --n-layers 16:64:4 "
             "--quantity params,kv_cache --seq 8192 -o grid.csv\n"
             "  symllm sweep --base llama3-8b --dim 2048:8192:256 --n-layers 16:64:4 --where \"params < 9e9\" -o grid.jsonl\n"
             "  symllm sweep --base llama2-7b --table configs.csv --quantity params,training_flops --seq 4096",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"symllm: error: {message}\n")


def _model_arg(p):
    p.add_argument("model", metavar="MODEL", help="a preset name (symllm presets) or a config.json / params.json")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="vocabulary size, for Meta params.json files that say -1")


def _load(args):
    return api.resolve(args.model, vocab_size=args.vocab_size)


def _table(rows, header, text_columns=()) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(  # noqa: E731
        str(c).ljust(w) if i == 0 or i in text_columns else str(c).rjust(w)
        for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def _json_number(value):
    """JSON for an exact number: ints stay ints (a whole Fraction too); a non-integral Fraction (int4
    bytes) is the exact string "p/q" (README "FLOPs and memory")."""
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    raise TypeError(f"not JSON serialisable: {value!r}")


def _given(args, names=Workload.names()) -> dict:
    """The options among ``names`` the user gave (absent ones are ``None``; ``0`` is given)."""
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def add_workload_options(group, *, axes_as_values: bool = False) -> None:
    """Add one option per :class:`~symllm.workload.Workload` field to ``group``, generated from the
    field's metadata: its flag, its help with the default appended, its type (an int, a string, a
    flag for a bool). Absent options are ``None`` (:meth:`Workload.of`: not given). With
    ``axes_as_values`` the fields a sweep may vary (``axis``) take VALUES: comma lists and ranges.

    >>> p = argparse.ArgumentParser()
    >>> add_workload_options(p)
    >>> a = p.parse_args(["--seq", "512", "--zero", "2", "--recompute"])
    >>> Workload.of(**_given(a)).to_dict()["zero_stage"], a.seq, a.batch
    (2, 512, None)
    """
    hints = typing.get_type_hints(Workload)
    for name, (fld, opt) in workload_options().items():
        flag = opt.flag or "--" + name.replace("_", "-")
        kind = (set(typing.get_args(hints[name])) or {hints[name]}) - {type(None)}
        help_ = opt.help if fld.default is None or kind == {bool} else f"{opt.help} (default {fld.default})"
        if axes_as_values and opt.axis:
            group.add_argument(flag, dest=name, metavar="VALUES", help=help_)
        elif kind == {bool}:
            group.add_argument(flag, dest=name, action="store_true", default=None, help=help_)
        else:
            group.add_argument(flag, dest=name, type=kind.pop(), metavar=name.upper(), help=help_)


def cmd_count(args) -> int:
    config = _load(args)
    given = _given(args)
    work = costs.workload(config, **given) if given or args.json else {}  # only what is shown (start-up)
    counts = api.params(config)
    resolved = api.resolved_config(config)
    if args.json:
        print(json.dumps({"model": config.name, "params": counts, "config": resolved, **work}, indent=2,
                         default=_json_number))
        return 0
    rows = [(k, grouped(v), human(v)) for k, v in counts.items() if k not in ("total", "block")]
    rows.append(("total", grouped(counts["total"]), human(counts["total"])))
    print(f"{config.name}: {config.attention_kind}, V={config.vocab_size}, d={config.dim}, "
          f"L={config.n_layers}, n_h={config.n_heads}, n_kv={config.n_kv_heads}, d_h={config.head_dim}, "
          f"d_ff={resolved['hidden_dim']} ({config.hidden_rule}), "
          f"{'tied' if config.tie_embeddings else 'untied'} embeddings")
    print(f"(block/* rows are summed over all {config.n_layers} blocks; one block has "
          f"{grouped(counts['block'])} parameters)\n")
    print(_table(rows, ("component", "parameters", "")))
    if given:
        w = work["workload"]
        print(f"\nworkload: b={w['batch']}, s={w['seq']}, n={w['gen']}, t={w['context']}; weights {w['dtype']}, "
              f"KV cache {w['kv_dtype']}, activations {w['act_dtype']}; {w['attention']} attention; "
              f"ZeRO {w['zero_stage']} over {w['dp']} rank(s){'; full recomputation' if w['recompute'] else ''}\n")
        rows = [(k, grouped(v), human(v, flops=True)) for k, v in work["flops"].items()]
        print(_table(rows, ("FLOPs (matmuls; elementwise: prefill)", "FLOPs", "")) + "\n")
        rows = [(k, grouped(v), human_bytes(v)) for k, v in work["memory"].items()]
        print(_table(rows, ("memory", "bytes", "")))
    return 0


def _render_opts(args) -> dict:
    return {"template_dir": args.template_dir, "template": args.template}


def _emit(text: str, args) -> None:
    """Print ``text``, or write it atomically to ``-o FILE`` (a failed render never reaches here)."""
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _workload(args) -> dict:
    """The workload options given to derive or report (derive's ``phase`` and ``memory`` too)."""
    return _given(args, ("phase", "memory") + Workload.names())


def cmd_derive(args) -> int:
    kind = "mha" if args.mha else "mqa" if args.mqa else "gqa" if args.gqa else None
    dv = derivation.derive(args.component, args.quantity, kind=kind, config=args.model, notation=args.notation,
                           vocab_size=args.vocab_size, **_workload(args))
    _emit(dv.render(args.format, standalone=args.standalone, **_render_opts(args)), args)
    return 0


def cmd_report(args) -> int:
    rep = derivation.report(args.model, notation=args.notation, vocab_size=args.vocab_size, **_workload(args))
    _emit(rep.render(args.format, standalone=args.standalone, **_render_opts(args)), args)
    return 0


def cmd_presets(args) -> int:
    rows = []
    for name in cfgmod.preset_names():
        total = api.params(name)["total"]
        rows.append((name, grouped(total), human(total), cfgmod.preset_info(name)["description"]))
    print(_table(rows, ("preset", "parameters", "", "description"), text_columns=(3,)))
    return 0


def cmd_verify(args) -> int:
    config = _load(args)
    try:
        from . import reference
    except ImportError:
        raise SymllmError("verify: needs torch (pip install 'symllm[torch]')") from None
    measured = reference.count(reference.build(config, device="meta"))
    ours = api.params(config)
    rows, bad = [], 0
    for key, value in measured.items():
        mine = ours.get(key)
        ok = mine == value
        bad += not ok
        rows.append((key, grouped(mine) if mine is not None else "-", grouped(value), "ok" if ok else "DIFFERS"))
    print(_table(rows, ("component", "symllm", "torch numel", "")))
    print(f"\n{config.name}: {'all components agree' if not bad else f'{bad} component(s) differ'}")
    return 1 if bad else 0


def _workload_args(p, *, derive: bool) -> None:
    """The workload options; derive also chooses the phase and the memory kind (a report shows every
    phase and memory kind)."""
    w = p.add_argument_group("workload (FLOPs and memory)")
    if derive:
        w.add_argument("--phase", choices=costs.PHASES,
                       help="FLOPs of the prefill (default), a forward pass at --context, one decode step, "
                            "prefill + --gen steps, or a training step")
        w.add_argument("--memory", choices=costs.MEMORY_KINDS,
                       help="which memory (default inference: weights + KV cache)")
    add_workload_options(w)


def _output_args(p, default_format: str) -> None:
    o = p.add_argument_group("output")
    if default_format == "markdown":
        o.add_argument("--format", choices=("latex", "markdown"), default="markdown",
                       help="GitHub Markdown (default) or LaTeX (booktabs tables, amsmath)")
    o.add_argument("--standalone", action="store_true", help="LaTeX: a complete document (default: a fragment to \\input)")
    o.add_argument("-o", "--output", metavar="FILE", help="write FILE atomically instead of printing")
    o.add_argument("--notation", metavar="FILE", help="TOML or JSON mapping symbol -> LaTeX, e.g. d = 'd_\\mathrm{model}'")
    o.add_argument("--template-dir", metavar="DIR", help="user templates (sandboxed) that override or add to symllm's")
    o.add_argument("--template", metavar="NAME", help="render this template (e.g. one from --template-dir)")


def _progress_bar(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)


def cmd_sweep(args) -> int:
    from . import sweep as sw
    grid, workload = {}, _given(args, tuple(k for k in Workload.names() if k not in sw.WORKLOAD_AXES))
    for name in sw.CONFIG_FIELDS + sw.WORKLOAD_AXES:
        text = getattr(args, name)
        if text is None:
            continue
        values = sw.parse_axis(text, name)
        if name in sw.WORKLOAD_AXES and len(values) == 1:
            workload[name] = values[0]
        else:
            grid[name] = values
    if args.table is not None:
        if grid:
            raise SymllmError(f"table: give the fields in the table, not as --{next(iter(grid)).replace('_', '-')}")
        grid, table = None, sw.read_table(args.table)
    else:
        table = None
    sweep = sw.Sweep(args.base, grid, table=table, quantities=args.quantity.split(","), workload=workload,
                     where=args.where, chunk_size=args.chunk_size)
    progress = _progress_bar if sys.stderr.isatty() and sweep.size > sweep.chunk_size else None
    if args.output:
        result = sweep.write(args.output, args.format, progress=progress)
    else:
        sweep.write_to(sys.stdout, args.format or "csv", progress=progress)
        result = sweep.stats
    rows = result.points - result.invalid - result.filtered
    print(f"symllm: sweep: {result.points:,} points, {result.invalid:,} invalid dropped, "
          f"{result.filtered:,} filtered out, {rows:,} rows -> {args.output or 'stdout'}", file=sys.stderr)
    return 0


def _sweep_parser(p) -> None:
    p.add_argument("--base", required=True, metavar="MODEL", help="preset or config file the sweep varies")
    g = p.add_argument_group("what varies: comma lists and inclusive start:stop[:step] ranges, e.g. 2048:8192:256")
    for name in ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim",
                 "multiple_of", "ffn_dim_multiplier"):  # sweep.CONFIG_FIELDS (numpy loads only for a sweep)
        g.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="VALUES")
    add_workload_options(p.add_argument_group("workload (VALUES: comma lists and ranges, as above)"),
                         axes_as_values=True)
    p.add_argument("--table", metavar="FILE", help="one point per row of a CSV or JSON-lines file instead of a grid")
    p.add_argument("--quantity", default="params", metavar="Q[,Q...]",
                   help="params (default), flops, kv_cache, training_flops, weights, ... or params:block/attention/wq")
    p.add_argument("--where", metavar="COND", help='keep rows that pass, e.g. "params < 9e9 and dim >= 4096"')
    p.add_argument("-o", "--output", metavar="FILE", help="write FILE atomically (default: CSV on stdout)")
    p.add_argument("--format", choices=("csv", "jsonl"), help="default: from the file suffix (.jsonl), else csv")
    p.add_argument("--chunk-size", type=int, default=1 << 18, help="points evaluated at once (memory stays flat)")
    p.set_defaults(func=cmd_sweep)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="symllm", description="Closed-form parameters, FLOPs and memory of LLaMA-family models.",
                     epilog="examples:\n  symllm count llama3.1-8b\n  symllm derive --component attention --gqa\n"
                            "  symllm presets", formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def add(name, help_):
        return sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES[name],
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    p = add("count", "exact parameter counts of a preset or a config file")
    _model_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_workload_options(p.add_argument_group("workload (FLOPs and memory; shown when any is given, always in --json)"))
    p.set_defaults(func=cmd_count)

    p = add("derive", "the derivation of a component's closed form (and its numbers with --model)")
    p.add_argument("--component", choices=list(COMPONENTS), default="model", help="which component (default: model)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--gqa", action="store_true", help="n_kv key/value heads (the general form; default)")
    kind.add_argument("--mha", action="store_true", help="n_kv = n_h")
    kind.add_argument("--mqa", action="store_true", help="n_kv = 1")
    p.add_argument("--format", choices=render.FORMATS, default="text",
                   help="text (default), pretty (Unicode), latex (an align environment) or markdown")
    p.add_argument("--quantity", choices=("params", "flops", "memory"), default="params",
                   help="parameters (default), prefill matmul FLOPs, or memory in bytes (weights + KV cache)")
    p.add_argument("--model", metavar="NAME|CONFIG", default=None,
                   help="substitute a preset's or a config file's numbers and evaluate")
    p.add_argument("--vocab-size", type=int, default=None, help="vocabulary size, for Meta params.json files that say -1")
    _workload_args(p, derive=True)
    _output_args(p, "text")
    p.set_defaults(func=cmd_derive)

    p = add("report", "a whole report: configuration, each component's formula and value, totals, FLOPs, memory")
    _model_arg(p)
    _workload_args(p, derive=False)
    _output_args(p, "markdown")
    p.set_defaults(func=cmd_report)

    p = add("presets", "list the shipped presets with their totals")
    p.set_defaults(func=cmd_presets)

    p = add("verify", "count the torch reference model on the meta device and compare (needs torch)")
    _model_arg(p)
    p.set_defaults(func=cmd_verify)

    _sweep_parser(add("sweep", "quantities over a grid or a table of configs, to CSV or JSON lines"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SymllmError as e:
        print(f"symllm: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
