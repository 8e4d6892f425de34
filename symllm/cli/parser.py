"""The command line's parser: every subcommand's options (the workload's generated from
:class:`~symllm.costs.workloads.Workload`'s fields), their help and examples, and one-line refusals of bad
values (:class:`_Parser`). :func:`build_parser` builds it; :mod:`symllm.cli.commands` runs what it parses.
"""
from __future__ import annotations

import os
import re
import sys
import argparse
from fractions import Fraction
from functools import lru_cache

from symllm.errors import SymllmError
from symllm import validate
from symllm.arch import glossary
from symllm.costs.workloads import options as workload_options
from symllm.cli.commands import (PLAN_ENUMERATES, cmd_count, cmd_derive, cmd_plan, cmd_plot, cmd_presets, cmd_report,
                                 cmd_sweep, cmd_verify)
from symllm.cli.lines import WIDTH, fit_line


EXAMPLES = {
    "count": "examples:\n  symllm count llama3.1-8b\n  symllm count llama3.1-8b --json\n"
             "  symllm count path/to/params.json --vocab-size 32000\n"
             "  symllm count meta-llama/Llama-3.1-8B   (from the local Hugging Face cache)\n"
             "  symllm count llama3.1-8b --weight-format Q4_K_M --kv-format q8_0 --gpu rtx4090 --seq 32768\n"
             "  symllm count llama3.1-70b --serve --gpu h100-sxm --tp 4 --seq 131072 --kv-format fp8\n"
             "  symllm count llama3.1-8b mistral-7b mixtral-8x7b --gpu h100-sxm\n"
             "  symllm count llama3.1-8b mistral-7b --format markdown",
    "derive": "examples:\n  symllm derive --component attention --gqa --format latex\n"
              "  symllm derive --component attention --mqa --format pretty\n"
              "  symllm derive --component feed_forward --model llama3.1-8b\n"
              "  symllm derive --component model --quantity flops --model llama2-7b --seq 512 --format markdown",
    "report": "examples:\n  symllm report llama3.1-8b\n"
              "  symllm report llama3.1-8b --format latex --standalone -o r.tex\n"
              "  symllm report llama2-7b --notation paper.toml --template-dir my_templates",
    "presets": "examples:\n  symllm presets",
    "verify": "examples:\n  symllm verify llama3.1-405b\n  symllm verify path/to/config.json\n"
              "  symllm verify path/to/checkpoint_folder\n  symllm verify meta-llama/Llama-3.1-8B\n"
              "  symllm verify model-Q4_K_M.gguf",
    "plan": "examples:\n  symllm plan llama3.1-70b --gpus 16xh100-sxm --seq 4096\n"
            "  symllm plan llama3.1-70b --gpus 64xh100-sxm --train --global-batch 512 --seq 8192 --tokens 1e12\n"
            "  symllm plan mixtral-8x7b --gpus 32xh100-sxm --train --top 5 --json",
    "plot": "examples:\n  symllm plot memory llama3.1-8b --seq 8192 --gpu h100-sxm -o memory.png\n"
            "  symllm plot context llama3.1-8b mistral-7b-v0.1 --gpu h100-sxm -o context.svg\n"
            "  symllm plot flops llama3.1-8b llama3.1-70b --contexts 1024:131072:1024 -o flops.pdf\n"
            "  symllm plot roofline llama3.1-8b --gpu h100-sxm --batch 8 -o roofline.tex\n"
            "  symllm plot sweep grid.csv --x dim --y params -o sweep.png",
    "sweep": "examples:\n  symllm sweep --base llama3-8b --dim 2048:8192:256 --n-layers 16:64:4 \\\n"
             "      --quantity params,kv_cache --seq 8192 -o grid.csv\n"
             "  symllm sweep --base llama3-8b --dim 2048:8192:256 --n-layers 16:64:4 \\\n"
             "      --where \"params < 9e9\" -o grid.jsonl\n"
             "  symllm sweep --base llama2-7b --table configs.csv --quantity params,training_flops --seq 4096\n"
             "  symllm sweep --base llama3.1-8b,mistral-7b --seq 1024,8192 --quantity kv_cache",
}


class _Choices:
    """argparse ``choices`` read from a module on first use (a check or the help), so that building the
    parser imports neither the formulas nor jinja2: ``symllm count`` starts without them."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def _get(self):
        import importlib
        return tuple(getattr(importlib.import_module(f"symllm.{self.module}"), self.name))

    def __contains__(self, value):
        return value in self._get()

    def __iter__(self):
        return iter(self._get())


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it ($COLUMNS, then standard output, then
    80), without importing shutil (bz2, lzma): argparse makes a formatter for every option it adds."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help at most :data:`WIDTH` columns wide (argparse takes the whole terminal), examples as written."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        width = min(width or _columns() - 2, WIDTH)
        super().__init__(prog, indent_increment, max_help_position, width)


#: a flag of one command typed to another (command, flag): what this command takes or writes instead
_OTHER_COMMANDS_FLAG = {
    ("plan", "--serve"): "plan ranks serving layouts unless --train",  # count's flag, read as plan's default
    ("plan", "--gpu"): "plan takes --gpus NxGPU, e.g. 8xh100-sxm",  # count's flag, a prefix of plan's
    ("count", "--gpus"): "count takes --gpu; plan takes --gpus",
    ("count", "--train"): "count times training always; plan takes --train",
    # --json is count's, plan's and presets': the others write their own formats
    ("report", "--json"): "report writes --format markdown or latex",
    ("derive", "--json"): "derive writes --format text, pretty, latex, markdown",
    ("sweep", "--json"): "sweep writes JSON lines: --format jsonl"}


def _gpus_words(argv, stray: list[str]) -> str | None:
    """plan's ``--gpus`` typed as two or three words (``--gpus 8 h100-sxm``, ``8x h100-sxm``, ``8 x h100-sxm``),
    the words after its value being the ``stray`` arguments argparse did not take: the one word it takes; else None.

    >>> _gpus_words(["plan", "m", "--gpus", "8", "x", "h100-sxm"], ["x", "h100-sxm"]), _gpus_words(["plan", "m",
    ...             "n", "--gpus", "8xh100-sxm"], ["n"])
    ('8xh100-sxm', None)
    """
    argv = list(argv or ())
    for i, a in enumerate(argv[:-2]):
        counted = re.fullmatch(r"\d+[x×*]?", argv[i + 1], re.IGNORECASE)  # the value a count alone (8, 8x)
        if a == "--gpus" and counted and stray and argv[i + 2] == stray[0]:  # the first word argparse left after it
            words = argv[i + 1:i + 4 if argv[i + 2].lower() in ("x", "×", "*") else i + 3]  # 8 x h100-sxm: three
            one = re.fullmatch(r"(\d+)\s*[x×*]?\s*([a-z][^\s]+)", " ".join(words), re.IGNORECASE)
            return f"{one[1]}x{one[2]}" if one else None
    return None


def _hint(parser: argparse.ArgumentParser, command: str | None, message: str, argv=None) -> str:
    """``message`` (argparse's unrecognized or ambiguous option) with what the user may have meant: the flag
    of another command or the format it writes (:data:`_OTHER_COMMANDS_FLAG`), ``--gpus`` as one word (``argv``: the
    arguments given; :func:`_gpus_words`), derive's model as ``--model``, else the nearest of ``command``'s flags.

    >>> _hint(build_parser("count"), "count", "unrecognized arguments: --tpp 8")
    'unrecognized arguments: --tpp 8 (did you mean --tp?)'
    """
    import difflib
    unknown = re.fullmatch(r"unrecognized arguments: (.*)", message)
    ambiguous = re.fullmatch(r"ambiguous option: (--[^\s=]+)\S* could match .*", message)
    typed = ([a.split("=")[0] for a in unknown[1].split() if a.startswith("--")] if unknown
             else [ambiguous[1]] if ambiguous else [])
    hint = next((_OTHER_COMMANDS_FLAG[command, f] for f in typed if (command, f) in _OTHER_COMMANDS_FLAG), None)
    one = _gpus_words(argv, unknown[1].split()) if unknown and hint is None else None
    if one:
        hint = f"--gpus is one word, N x GPU: --gpus {one}"
    elif unknown and hint is None and command == "derive" and unknown[1].split() and not unknown[1].startswith("-"):
        hint = f"derive takes a model as --model {unknown[1].split()[0]}"  # the others' first word
    if hint is None and unknown and typed:
        sub = next((a.choices.get(command) for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                   None)
        near = difflib.get_close_matches(typed[0], [f for f in (sub or parser)._option_string_actions
                                                    if f.startswith("--")], n=1, cutoff=0.75)  # not --serves: --seq
        hint = f"did you mean {near[0]}?" if near else None
    if hint and ambiguous:
        return f"ambiguous option: {ambiguous[1]} ({hint})"
    return f"{message} ({hint})" if hint else message


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message):
        """One line within :data:`WIDTH` columns: a long list of choices is never cut short but pointed to
        (``--help`` has it whole: :func:`symllm.validate.listed`); an option reader's refusal (``--seq 1.3k``)
        is its own line, naming the field."""
        room = WIDTH - len("symllm: error: ")
        own = re.fullmatch(r"argument \S+: ([a-z_]+: .*)", message)  # a SymllmError of an option's reader
        if own:
            message = own[1]
        command = getattr(self, "command", None) or self.prog.split()[-1]  # the main parser's, or a subcommand's
        message = _hint(self, command, message, getattr(self, "given", None))
        choices = re.fullmatch(r"argument (?:\S+/)?-*(\S+): invalid choice: (.*) \(choose from (.*)\)", message)
        if choices:  # the house style of validate.choice: whole, or pointed to
            # a positional's metavar (COMMAND, KIND) in the lower case of every other field's name
            field, value = choices[1].replace("-", "_").lower(), (choices[2] if len(choices[2]) <= 22
                                                          else choices[2][:19] + "...")
            start = f"{field}: unknown {value} (known: "
            names = [n.strip("'") for n in choices[3].split(", ")]
            message = f"{start}{validate.listed(names, room - len(start) - 1, near=choices[2].strip(chr(39)))})"
        self.exit(2, f"symllm: error: {fit_line(message, room)}\n")

    def parse_args(self, args=None, namespace=None):
        self.given = sys.argv[1:] if args is None else list(args)  # what error()'s hint reads (_gpus_words)
        return super().parse_args(args, namespace)

    def add_argument(self, *args, **kwargs):
        choices = kwargs.get("choices")
        if not isinstance(choices, _Choices):
            return super().add_argument(*args, **kwargs)
        del kwargs["choices"]  # argparse formats an argument when adding it: would read the choices now
        action = super().add_argument(*args, **kwargs)
        action.choices = choices
        return action


def _model_arg(p):
    p.add_argument("model", metavar="MODEL", help="a preset name (symllm presets), a config.json / params.json, a "
                   "checkpoint folder or .gguf file, or a Hub id (org/name) in the local Hugging Face cache")
    _vocab_arg(p)


def _vocab_arg(p):
    p.add_argument("--vocab-size", type=int, default=None,
                   help="vocabulary size, for Meta params.json files that say -1 (default: the config's)")


_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "Fraction": Fraction, "None": type(None)}


@lru_cache(maxsize=1)
def _workload_types() -> dict[str, set]:
    """Each Workload option's types but ``None``, from its annotation (``"int | None"`` -> ``{int}``).

    >>> _workload_types()["seq"], _workload_types()["sp"]
    ({<class 'int'>}, {<class 'bool'>})
    """
    out = {}
    for name, (fld, _) in workload_options().items():
        names = [t.strip() for t in str(fld.type).split("|")]
        if not set(names) <= _TYPES.keys():
            raise TypeError(f"Workload.{name}: annotation {fld.type!r} names a type the CLI does not know")
        out[name] = {_TYPES[t] for t in names} - {type(None)}
    return out


def add_workload_options(group, *, axes_as_values: bool = False, exclude=()) -> None:
    """Add one option per :class:`~symllm.costs.workloads.Workload` field to ``group``, generated from the
    field's metadata: its flag, its help with the default appended, its type (an int, a string, a
    flag for a bool). Absent options are ``None`` (:meth:`Workload.of`: not given). With
    ``axes_as_values`` the fields a sweep may vary (``axis``) take VALUES: comma lists and ranges.

    >>> from symllm.costs.workloads import Workload
    >>> p = argparse.ArgumentParser()
    >>> add_workload_options(p)
    >>> a = p.parse_args(["--seq", "512", "--zero", "2", "--recompute"])
    >>> Workload.of(**{k: getattr(a, k) for k in Workload.names()}).to_dict()["zero_stage"], a.seq, a.batch
    (2, 512, None)
    """
    types = _workload_types()
    for name, (fld, opt) in workload_options().items():
        if name in exclude:
            continue
        flag = opt.flag or "--" + name.replace("_", "-")
        kind = set(types[name])
        help_ = (opt.help if fld.default is None or kind == {bool} or opt.const
                 else f"{opt.help} (default {fld.default})")
        if opt.const is not None or opt.also:  # several flags set the field (--recompute, --selective-ac op)
            spellings = [flag] if opt.const is not None else []
            spellings += [f"{f} {'|'.join(v)}" for f, v, _ in opt.also]
            if opt.const is not None:
                group.add_argument(flag, dest=name, action=_Spelling, nargs=0, value=opt.const, spellings=spellings,
                                   help=help_)
            for other, values, text in opt.also:
                group.add_argument(other, dest=name, action=_Spelling, allowed=values, spellings=spellings,
                                   metavar=other.lstrip("-").replace("-", "_").upper(),
                                   help=f"{text} (default {fld.default})")
        elif axes_as_values and opt.axis:
            group.add_argument(flag, dest=name, metavar="VALUES", help=help_)
        elif kind == {bool}:
            group.add_argument(flag, dest=name, action="store_true", default=None, help=help_)
        elif opt.suffixes is not None:  # 128k, 15T, 1e12 (symllm.validate.token_count)
            group.add_argument(flag, dest=name, type=_token_reader(name, opt.suffixes), metavar=name.upper(),
                               help=help_)
        else:
            group.add_argument(flag, dest=name, type=kind.pop(), metavar=name.upper(), help=help_)


class _Spelling(argparse.Action):
    """One of the flags that set a workload field (:attr:`~symllm.costs.workloads.Option.const` and
    :attr:`~symllm.costs.workloads.Option.also`: ``--recompute`` sets ``recompute`` to ``full``, ``--selective-ac op``
    to ``op``): a value outside the flag's is refused naming the flag, and a second flag that sets the field
    otherwise is refused, each in one line (``_Parser.error``).

    >>> p = _Parser(prog="symllm")
    >>> add_workload_options(p)
    >>> p.parse_args(["--selective-ac", "op"]).recompute, p.parse_args(["--recompute"]).recompute
    ('op', 'full')
    """

    def __init__(self, option_strings, dest, *, value=None, allowed=(), spellings=(), **kwargs):
        self.value, self.allowed, self.spellings = value, tuple(allowed), tuple(spellings)
        super().__init__(option_strings, dest, default=None, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        name = option_string.lstrip("-").replace("-", "_")
        value = self.value
        if value is None:
            try:
                value = validate.choice(name, values, self.allowed)
            except SymllmError as e:
                raise argparse.ArgumentError(self, str(e)) from None
        given = getattr(namespace, self.dest, None)
        if given is not None and given != value:
            raise argparse.ArgumentError(self, f"{name}: give {' or '.join(self.spellings)}, not both")
        setattr(namespace, self.dest, value)


def _token_reader(name: str, suffixes: str):
    """argparse's reader of a count with a suffix (:func:`symllm.validate.suffixed_count`): ``"length"`` in
    binary (``--seq 128k`` = 131,072), ``"tokens"`` and ``"sequences"`` in decimal (``--tokens 15T``, ``--batch
    1k``); a refusal is one line naming the field (``_Parser.error``).

    >>> _token_reader("seq", "length")("128k"), _token_reader("tokens", "tokens")("1e12")
    (131072, 1000000000000)
    >>> _token_reader("batch", "sequences")("2k")
    2000
    """
    def read(text: str) -> int:
        try:
            return validate.suffixed_count(name, text, suffixes)  # the range: Workload's
        except SymllmError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    read.__name__ = name
    return read


def _workload_args(p, *, derive: bool) -> None:
    """The workload options; derive also chooses the phase and the memory kind (a report shows every
    phase and memory kind)."""
    w = p.add_argument_group("workload (FLOPs and memory)")
    if derive:
        w.add_argument("--phase", choices=_Choices("costs.workloads", "PHASES"), metavar="PHASE",
                       help="FLOPs of the prefill (default), a forward pass at --context, one decode step, "
                            "prefill + --gen steps, or a training step: %(choices)s")
        w.add_argument("--memory", choices=_Choices("costs.workloads", "MEMORY_KINDS"), metavar="KIND",
                       help="which memory (default inference: weights + KV cache): %(choices)s")
    add_workload_options(w)


def _output_args(p, default_format: str) -> None:
    o = p.add_argument_group("output")
    if default_format == "markdown":
        o.add_argument("--format", choices=_Choices("present.format", "REPORT_FORMATS"), default="markdown",
                       help="GitHub Markdown (default) or LaTeX (booktabs tables, amsmath)")
    o.add_argument("--standalone", action="store_true",
                   help="LaTeX: a complete document (default: a fragment to \\input)")
    o.add_argument("-o", "--output", metavar="FILE",
                   help="write FILE (atomically when new; - is stdout) instead of printing (default: print)")
    o.add_argument("--notation", metavar="FILE",
                   help="TOML or JSON mapping symbol -> LaTeX, e.g. d = 'd_\\mathrm{model}' (default: symllm's)")
    o.add_argument("--template-dir", metavar="DIR",
                   help="user templates (sandboxed) that override or add to symllm's (default: symllm's alone)")
    o.add_argument("--template", metavar="NAME",
                   help="render this template (e.g. one from --template-dir; default: the command's own)")
    o.add_argument("--label-prefix", metavar="PREFIX", help="LaTeX: each numbered equation's \\label is "
                   "PREFIX:<model>:<component>:<quantity>[:<phase or kind>] (default eq:symllm)")


def _plot_parser(p) -> None:
    p.add_argument("kind", choices=_Choices("present.plots", "KINDS"), metavar="KIND",
                   help="memory (by kind and by component), context (KV cache and inference peak against "
                        "context), flops (per token against context), roofline (on --gpu), sweep (a sweep's "
                        "columns)")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="presets or config files (context and flops take several); for sweep, the file "
                        "symllm sweep wrote (CSV, JSON lines or Parquet)")
    _vocab_arg(p)
    p.add_argument("--contexts", metavar="VALUES", help="context lengths for context and flops: a comma list "
                                                        "and start:stop[:step] ranges (default 1024 to 131072, "
                                                        "doubling)")
    p.add_argument("--x", metavar="COLUMN", help="sweep: the column along the x axis (e.g. dim; no default: "
                                                   "plot sweep needs it)")
    p.add_argument("--y", metavar="COLUMN[,COLUMN...]", help="sweep: the columns drawn (default: all others)")
    p.add_argument("-o", "--output", metavar="FILE", required=True,
                   help="FILE.png, .svg, .pdf, or .tex (pgfplots to \\input), written atomically")
    p.add_argument("--format", choices=_Choices("present.plots", "FORMATS"),
                   help="default: from the file's ending (needed with -o -)")
    add_workload_options(p.add_argument_group("workload (FLOPs and memory; context and flops vary --seq)"))
    p.set_defaults(func=cmd_plot)


def _sweep_parser(p) -> None:
    p.add_argument("--base", metavar="MODEL[,MODEL...]",
                   help="preset(s) or config file(s) the sweep varies; several: one table with a base column "
                        "(or a --table whose base, model or name column names each row's; no default: one or the "
                        "other)")
    g = p.add_argument_group("what varies: comma lists and inclusive start:stop[:step] ranges, e.g. 2048:8192:256")
    for e in glossary.ENTRIES:  # symllm.studies.grids.CONFIG_FIELDS (it loads numpy and SymPy; the glossary neither)
        if e.axis:
            g.add_argument(f"--{e.code.replace('_', '-')}", dest=e.code, metavar="VALUES",
                           help=f"{e.description}, {e.name} (default: as the --base states or derives it)")
    add_workload_options(p.add_argument_group("workload (VALUES: comma lists and ranges, as above)"),
                         axes_as_values=True)
    p.add_argument("--table", metavar="FILE",
                   help="one point per row of a CSV, JSON-lines or Parquet file instead of a grid (default: the "
                        "grid)")
    p.add_argument("--quantity", default="params", metavar="Q[,Q...]",
                   help="params (default), flops (one forward of --seq new tokens after --context cached, --seq "
                        "unless given; count's prefill: prefill_flops), kv_cache, training_flops, weights, ... or "
                        "params:block/attention/wq")
    p.add_argument("--where", metavar="COND",
                   help='keep rows that pass, e.g. "params < 9e9 and dim >= 4096" (default: every row)')
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write FILE (atomically when new; default or -: CSV on stdout)")
    p.add_argument("--format", choices=_Choices("files", "TABLE_FORMATS"),
                   help="default: from the file suffix (.jsonl, .parquet), else csv; parquet needs -o FILE and pyarrow")
    p.add_argument("--chunk-size", type=int, default=1 << 18,
                   help="points evaluated at once (memory stays flat; default %(default)s)")
    p.set_defaults(func=cmd_sweep)


def _serving_options(s) -> None:
    """The serving engine's options (symllm.costs.serving.capacity's keywords, cli.lines.SERVE), on ``s``: declared
    once, for count --serve and plan's serving rows."""
    s.add_argument("--gpu-memory-utilization", type=float, default=None, metavar="F",
                   help="the --engine's memory fraction, by its own rule (symllm.costs.engine_memory): vllm's "
                        "gpu_memory_utilization, of the card less weights, activations, non-torch (default 0.9); "
                        "sglang's mem_fraction_static, of the card less non-torch, weights inside it (default by "
                        "card and --tp: 0.874 on one H100); trtllm's free_gpu_memory_fraction, of what weights, "
                        "activations and non-torch leave (0.9); lmdeploy's cache_max_entry_count, of what weights "
                        "and non-torch leave (0.8, below 1); tgi's --cuda-memory-fraction, x 0.90, as vllm's (1); "
                        "none for llama.cpp, mlc, gpt-fast, hf, torch (a cache sized by the context x --batch)")
    s.add_argument("--max-num-batched-tokens", type=int, default=None, metavar="N",
                   help="tokens of the engine's profile run (its activation peak) and of a step's chunked prefill "
                        "under load (default: the --engine's for the card: vLLM's 8192 at 70 GiB or more but an "
                        "A100, else 2048; SGLang's chunked_prefill_size by memory, 8192 on an H100; docs/serving.md)")
    s.add_argument("--max-num-seqs", type=int, default=None, metavar="N",
                   help="the most sequences the engine runs at once (vLLM's max_num_seqs, SGLang's "
                        "max_running_requests, TensorRT-LLM's max_batch_size; default: the --engine's)")
    s.add_argument("--block-size", type=int, default=None, metavar="N",
                   help="tokens per KV block (default: the --engine's: vllm 16, sglang 1, trtllm 32, lmdeploy 64, "
                        "tgi 1)")
    s.add_argument("--non-torch-memory", dest="non_torch", type=float, default=None, metavar="GIB",
                   help="CUDA context, NCCL buffers (vLLM logs non_torch_memory; default: the --engine's, vLLM's "
                        "0.35)")
    s.add_argument("--indexer-kv-dtype", choices=_Choices("costs.dsv4_cache", "INDEXER_KEY_BYTES"), default=None,
                   help="DeepSeek-V4's indexer key cache (vLLM 0.33.0's indexer_kv_dtype; default fp8; mxfp4: "
                        "b200, gb200)")


def _count_args(p) -> None:
    p.add_argument("model", metavar="MODEL", nargs="+",
                   help="a preset name (symllm presets) or a config.json / params.json; several are compared")
    _vocab_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--format", choices=_Choices("present.format", "COMPARISON_FORMATS"), default=None,
                   help="a comparison table (a column per model) as text (default), csv, markdown or latex")
    add_workload_options(p.add_argument_group("workload (FLOPs and memory; shown when any is given, always in --json)"))
    s = p.add_argument_group("serving: the --engine's KV cache (symllm.costs.serving; needs --gpu; context --seq + "
                             "--gen)")
    s.add_argument("--serve", action="store_true",
                   help="KV cache tokens and maximum concurrency as the --engine allocates them (vLLM by default; "
                        "an inference engine: a training one is refused)")
    _serving_options(s)
    s.add_argument("--concurrency", type=int, default=None, metavar="C",
                   help="with --serve, under load: C requests at a time of --seq prompt and --gen output tokens: "
                        "TTFT, ITL, output tokens/s (symllm.costs.traffic; default: none, no load)")
    s.add_argument("--request-rate", type=float, default=None, metavar="R",
                   help="with --serve, under load: R requests a second (instead of --concurrency; the output "
                        "tokens/s are R x --gen until it saturates; default: none, no load)")
    p.set_defaults(func=cmd_count)


def _derive_args(p) -> None:
    p.add_argument("--component", choices=_Choices("arch.layers", "COMPONENTS"), default="model", metavar="NAME",
                   help="which component (default: model): %(choices)s")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--gqa", action="store_true", help="n_kv key/value heads (the general form; default)")
    kind.add_argument("--mha", action="store_true", help="n_kv = n_h")
    kind.add_argument("--mqa", action="store_true", help="n_kv = 1")
    p.add_argument("--format", choices=_Choices("present.format", "FORMATS"), default="text",
                   help="text (default), pretty (Unicode), latex (an align environment) or markdown")
    p.add_argument("--quantity", choices=_Choices("present.format", "QUANTITIES"), default="params",
                   help="parameters (default), prefill matmul FLOPs, memory in bytes (weights + KV cache), "
                        "bytes one GPU sends per training step of one micro-batch under --tp/--pp/--dp/--ep/--sp "
                        "(comm), "
                        "the ridge point FLOP/byte or the batch at which a decode step turns compute-bound "
                        "(numbers with --gpu)")
    p.add_argument("--model", metavar="NAME|CONFIG", default=None,
                   help="substitute a preset's or a config file's numbers and evaluate (default: symbols only)")
    _vocab_arg(p)
    _workload_args(p, derive=True)
    _output_args(p, "text")
    p.set_defaults(func=cmd_derive)


def _report_args(p) -> None:
    _model_arg(p)
    _workload_args(p, derive=False)
    _output_args(p, "markdown")
    p.set_defaults(func=cmd_report)


def _presets_args(p) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON array (name, params, active, description, "
                                                       "source, hub)")
    p.set_defaults(func=cmd_presets)


def _verify_args(p) -> None:
    _model_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (agrees, and each component's "
                                                       "counts or the checkpoint's bytes)")
    p.set_defaults(func=cmd_verify)


def _plan_args(p) -> None:
    _model_arg(p)
    p.add_argument("--gpus", required=True, metavar="NxGPU",
                   help="how many of which accelerator, e.g. 16xh100-sxm (nodes as the catalogue says, "
                        "--network between them)")
    p.add_argument("--train", action="store_true", help="training layouts (ZeRO, recomputation); default: serving")
    p.add_argument("--global-batch", type=int, default=None,
                   help="training: sequences per optimizer step (default: one per GPU)")
    p.add_argument("--concurrency", type=int, default=None,
                   help="serving: the most sequences per replica tried (every batch 1, 2, 3, ... up to it; "
                        "default 256)")
    _serving_options(p.add_argument_group("serving: the --engine's KV cache, as count --serve's (not with --train)"))
    p.add_argument("--top", type=int, default=None, help="layouts shown (default 10; --json: all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_workload_options(p.add_argument_group("workload shared by every layout"), exclude=PLAN_ENUMERATES)
    p.set_defaults(func=cmd_plan)


#: the subcommands: name, one line of help, what adds their arguments (in the order ``symllm -h`` lists them)
COMMANDS = (
    ("count", "exact parameter counts of a preset or a config file; several: side by side", _count_args),
    ("derive", "the derivation of a component's closed form (and its numbers with --model)", _derive_args),
    ("report",
     "a whole report: configuration, each component's formula and value, totals, FLOPs, memory",
     _report_args),
    ("presets", "list the shipped presets with their totals", _presets_args),
    ("verify",
     "a checkpoint's tensor headers, or a config's torch meta model, against the component tree",
     _verify_args),
    ("plan", "rank every layout of N GPUs for training or serving: what fits, and how fast", _plan_args),
    ("sweep", "quantities over a grid or a table of configs, to CSV, JSON lines or Parquet", _sweep_parser),
    ("plot", "plots (PNG, SVG, PDF, pgfplots): memory, context, flops, roofline, sweep (needs matplotlib)",
     _plot_parser),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (a subcommand's name), that subcommand's alone: what
    ``main`` parses a command with (every parser argparse builds costs a warm count about a millisecond).

    >>> build_parser("count").parse_args(["count", "llama3.1-8b", "--seq", "512"]).seq
    512
    """
    parser = _Parser(prog="symllm", description="Closed-form parameters, FLOPs and memory of LLaMA-family models.",
                     epilog="examples:\n  symllm count llama3.1-8b\n  symllm derive --component attention --gqa\n"
                            "  symllm presets", formatter_class=_Formatter)
    parser.command = only  # the subcommand main parses with (its name in an unrecognized-argument error's hint)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, help_, fill in COMMANDS:
        if only is None or name == only:
            fill(sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES[name], formatter_class=_Formatter))
    return parser
