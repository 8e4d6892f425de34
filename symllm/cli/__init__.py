"""The ``symllm`` command line: a thin layer over the public API (no formulas here).

Bad input prints one line, ``symllm: error: <field>: <what is wrong>``, on stderr and exits 2.
"""
from __future__ import annotations

import os
import re
import signal
import sys

from symllm import _is_program, _start_program

_start_program()  # (done already when importing symllm started the command: its Ctrl-C handler)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import warnings  # noqa: E402
from fractions import Fraction  # noqa: E402
from functools import lru_cache  # noqa: E402

from symllm.arch import config as cfgmod  # noqa: E402
from symllm.errors import SymllmError  # noqa: E402
from symllm.files import check_output, json_text, write_atomic  # noqa: E402
from symllm import validate  # noqa: E402
from symllm.present.format import grouped, human, human_bytes  # noqa: E402
from symllm.costs.workloads import Workload, options as workload_options  # noqa: E402

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
        choices = re.fullmatch(r"argument (?:\S+/)?-*(\S+): invalid choice: (.*) \(choose from (.*)\)", message)
        if len(message) > room and choices:  # the house style of validate.choice: whole, or pointed to
            field, value = choices[1].replace("-", "_"), (choices[2] if len(choices[2]) <= 22 else choices[2][:19] + "...")
            start = f"{field}: unknown {value} (known: "
            names = [n.strip("'") for n in choices[3].split(", ")]
            message = f"{start}{validate.listed(names, room - len(start) - 1, near=choices[2].strip(chr(39)))})"
        self.exit(2, f"symllm: error: {_fit(message, room)}\n")

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
    p.add_argument("--vocab-size", type=int, default=None,
                   help="vocabulary size, for Meta params.json files that say -1")


def _load(args):
    folder = args.model if os.path.isdir(args.model) else None
    if str(args.model).endswith(".gguf") or folder is not None and not any(
            os.path.lexists(os.path.join(folder, n)) for n in ("config.json", "params.json")) and any(
            n.endswith(".gguf") for n in os.listdir(folder)):  # a GGUF file holds its own config (costs.checkpoints)
        from symllm.costs import checkpoints
        config = checkpoints.config_of(checkpoints.read(args.model))
        return config.replace(vocab_size=args.vocab_size) if args.vocab_size is not None else config
    return cfgmod.load(args.model, vocab_size=args.vocab_size)  # what api.resolve does with a name or a path


def _checkpoint(args) -> dict | None:
    """A checkpoint's actual bytes beside the formula's, when the model argument holds weights (a folder,
    a Hub id in the local cache, a .safetensors or .gguf file): symllm.costs.checkpoints, headers only."""
    from symllm.costs import checkpoints
    if not checkpoints.has_weights(args.model):
        return None
    c = checkpoints.check(args.model)
    return {k: c[k] for k in ("format", "files", "tensors", "bytes", "weight_format", "formula_bytes", "difference")}


def _checkpoint_lines(c: dict) -> str:
    rows = [(f"checkpoint ({c['format']}, {c['files']} file(s), {c['tensors']} tensors)", grouped(c["bytes"]),
             human_bytes(c["bytes"]))]
    if c["formula_bytes"] is not None:
        rows.append((f"formula ({c['weight_format']})", grouped(c["formula_bytes"]), human_bytes(c["formula_bytes"])))
    out = _table(rows, ("weights on disk (headers; symllm verify compares them)", "bytes", ""))
    if c["formula_bytes"] is None:
        out += "\n(no formula for this checkpoint's format)"
    if c["difference"] is not None:
        out += "\n" + _wrap(f"differs from the component tree: {c['difference']}")
    return out


#: the columns terminal output fits (tables, wrapped lines, help, error lines: symllm.validate.WIDTH)
WIDTH = validate.WIDTH


def _wrap(text: str, indent: str = "  ") -> str:
    """``text`` wrapped to :data:`WIDTH` columns, continuation lines indented."""
    import textwrap
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)


def _natural(name: str) -> tuple:
    """Sort key with numbers compared as numbers: codellama-7b before codellama-13b, llama3 before llama3.1.

    >>> sorted(["codellama-13b", "llama3.1-8b", "codellama-7b", "llama3-8b", "llama3.1-405b"], key=_natural)
    ['codellama-7b', 'codellama-13b', 'llama3-8b', 'llama3.1-8b', 'llama3.1-405b']
    """
    parts = re.split(r"(\d+(?:\.\d+)*)", name)
    return tuple(tuple(int(x) for x in p.split(".")) if i % 2 else (p,) for i, p in enumerate(parts))


def _table(rows, header, text_columns=(), wrap=None) -> str:
    """Rows in aligned columns; column ``wrap`` (text) is wrapped so that lines fit :data:`WIDTH`."""
    if wrap is not None:
        import textwrap
        others = sum(max(len(str(r[i])) for r in rows + [header]) + 2 for i in range(len(header)) if i != wrap)
        room = max(WIDTH - others, 20)
        wrapped = []
        for r in rows:
            for j, part in enumerate(textwrap.wrap(str(r[wrap]), room) or [""]):
                wrapped.append(tuple(part if i == wrap else (c if j == 0 else "") for i, c in enumerate(r)))
        rows = wrapped
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(  # noqa: E731
        str(c).ljust(w) if i == 0 or i in text_columns else str(c).rjust(w)
        for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


@contextlib.contextmanager
def _any_int_digits():
    """Lift Python's 4,300-digit limit on int -> str while writing output (inputs keep the limit)."""
    get = getattr(sys, "get_int_max_str_digits", None)
    if get is None:  # Python without the limit
        yield
        return
    old = get()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def _given(args, names=Workload.names()) -> dict:
    """The options among ``names`` the user gave (absent ones are ``None``; ``0`` is given)."""
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


#: the types a Workload field's annotation may name (its annotations are strings: ``from __future__ import
#: annotations``); resolving them here spares a count the import of ``typing``
_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "Fraction": Fraction, "None": type(None)}


@lru_cache(maxsize=1)
def _workload_types() -> dict[str, set]:
    """Each Workload option's types but ``None``, from its annotation (``"int | None"`` -> ``{int}``).

    >>> _workload_types()["seq"], _workload_types()["recompute"]
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

    >>> p = argparse.ArgumentParser()
    >>> add_workload_options(p)
    >>> a = p.parse_args(["--seq", "512", "--zero", "2", "--recompute"])
    >>> Workload.of(**_given(a)).to_dict()["zero_stage"], a.seq, a.batch
    (2, 512, None)
    """
    types = _workload_types()
    for name, (fld, opt) in workload_options().items():
        if name in exclude:
            continue
        flag = opt.flag or "--" + name.replace("_", "-")
        kind = set(types[name])
        help_ = opt.help if fld.default is None or kind == {bool} else f"{opt.help} (default {fld.default})"
        if axes_as_values and opt.axis:
            group.add_argument(flag, dest=name, metavar="VALUES", help=help_)
        elif kind == {bool}:
            group.add_argument(flag, dest=name, action="store_true", default=None, help=help_)
        elif opt.suffixes is not None:  # 128k, 15T, 1e12 (symllm.validate.token_count)
            group.add_argument(flag, dest=name, type=_token_reader(name, opt.suffixes), metavar=name.upper(),
                               help=help_)
        else:
            group.add_argument(flag, dest=name, type=kind.pop(), metavar=name.upper(), help=help_)


def _token_reader(name: str, suffixes: str):
    """argparse's reader of a count of tokens (:func:`symllm.validate.token_count`): ``"length"`` in binary
    (``--seq 128k`` = 131,072), ``"tokens"`` in decimal (``--tokens 15T``); a refusal is one line naming the
    field (``_Parser.error``).

    >>> _token_reader("seq", "length")("128k"), _token_reader("tokens", "tokens")("1e12")
    (131072, 1000000000000)
    """
    def read(text: str) -> int:
        try:
            return validate.token_count(name, text, binary=suffixes == "length", low=None)  # range: Workload's
        except SymllmError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    read.__name__ = name
    return read


def cmd_compare(args) -> int:
    """count of several models (or one with --format): one table, a column per model."""
    from symllm.costs import comparison
    from symllm.present.format import side_by_side
    given = _given(args)
    out = comparison.compare(args.model, vocab_size=args.vocab_size, **given)
    if args.json:
        with _any_int_digits():
            print(json_text(out))
        return 0
    names = list(out["models"])
    with _any_int_digits():
        print(side_by_side(comparison.ROWS, names, out["models"], args.format or "text", WIDTH))
    return 0


def _weight_table(fmt: str, total: int, bits) -> str:
    """count's table of a weight format's bytes and bits per weight."""
    return _table([(f"weights in {fmt}", grouped(total), human_bytes(total)),
                   ("bits per weight", f"{float(bits):.4f}", "")],
                  ("weight format (symllm.costs.formats)", "bytes", "rounded"))


def _stated_format(config, given: dict) -> str:
    """The line saying which weight format a quantized config.json states, and whether --weight-format
    overrides it (symllm.arch.quantization)."""
    if config.weight_format is None:
        return ""
    over = given.get("weight_format")
    if over is not None and over != config.weight_format:
        return f"--weight-format {over} overrides the config's {config.weight_format} ({config.weight_format_source})"
    return (f"weights in {config.weight_format}, read from the config's {config.weight_format_source}; "
            "--weight-format overrides it")


def cmd_count(args) -> int:
    if len(args.model) > 1 or args.format is not None:
        return cmd_compare(args)
    args.model = args.model[0]
    config = _load(args)
    given = _given(args)
    ckpt = _checkpoint(args)
    if not (given or args.json or args.serve):  # only the parameters: kernels read back (symllm.studies.quick)
        return _count(args, config, given, ckpt)
    # a workload, --json or --serve: the answer printed before for the same inputs is read back (no SymPy)
    from symllm.studies import quick
    key = quick.answer_key("count", config, _answer_options(args), ckpt)
    text = quick.answer(key)
    if text is None:
        with warnings.catch_warnings(record=True) as seen, contextlib.redirect_stdout(io.StringIO()) as out:
            _count(args, config, given, ckpt)
        text = out.getvalue()
        for w in seen:  # shown as they would have been; an answer that warned is computed again next time
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        if not seen:
            quick.keep_answer(key, text)
    sys.stdout.write(text)
    return 0


def _answer_options(args) -> list:
    """Every option of ``args`` but the subcommand's function, by name, and the bytes of the model's files
    where it is a local file or folder (its ``.json`` files: a ``config.json`` and whatever sits beside it):
    with the resolved config and a checkpoint's bytes, what ``count``'s output is made from (the key of
    :func:`symllm.studies.quick.answer`)."""
    from symllm.numbers.cache import bytes_digest

    files = []
    try:
        if os.path.isfile(args.model):
            paths = [args.model]
        elif os.path.isdir(args.model):
            paths = sorted(os.path.join(args.model, n) for n in os.listdir(args.model) if n.endswith(".json"))
        else:
            paths = []
        for path in paths:
            if os.path.getsize(path) <= 1 << 24:
                with open(path, "rb") as f:
                    files.append((os.path.basename(path), bytes_digest(f.read())))
            else:  # a weights file (.gguf, .safetensors): the checkpoint's own summary is in the key
                st = os.stat(path)
                files.append((os.path.basename(path), st.st_size, st.st_mtime_ns))
    except OSError:
        files.append(("unreadable", os.urandom(16).hex()))  # never read back
    return sorted((k, v) for k, v in vars(args).items() if k != "func") + [("files", files)]


def _count(args, config, given: dict, ckpt: dict | None) -> int:
    """``count`` of one model (``config``, the workload options ``given``, a checkpoint's bytes ``ckpt``),
    printed."""
    if given or args.json:
        from symllm import api
        from symllm.costs import phases as costs
        work = costs.workload(config, **given)
        counts, resolved = api.params(config), api.resolved_config(config)
        if "trainable" in work["params"]:  # LoRA: params.trainable and memory.lora_* (symllm.costs.finetune)
            counts = {**counts, "trainable": work["params"].pop("trainable")}
    else:  # only the parameters: kernels an earlier process compiled, no formula built (start-up)
        from symllm.studies import quick
        work, (counts, d_ff) = {}, quick.params(config)
        resolved = {"hidden_dim": d_ff}
    serve = {k: getattr(args, k) for k in _SERVE if getattr(args, k) is not None}
    if serve and not args.serve:
        raise SymllmError(f"{next(iter(serve))}: applies to --serve (vLLM's paged KV cache) only")
    if args.serve:  # vLLM's paged KV cache (symllm.costs.serving)
        from symllm.costs import serving
        if "non_torch" in serve:
            serve["non_torch"] = Fraction(str(serve["non_torch"])) * 2**30
        work["serving"] = serving.capacity(config, **given, **serve)
        if args.concurrency is not None or args.request_rate is not None:  # under load (symllm.costs.traffic)
            from symllm.costs import traffic
            work["serving"]["load"] = traffic.under_load(config, concurrency=args.concurrency,
                                                      request_rate=args.request_rate, **given, **serve)
    elif args.concurrency is not None or args.request_rate is not None:
        raise SymllmError("concurrency: serving under load applies to --serve")
    if args.json:
        with _any_int_digits():  # exact numbers of any length (a product of 4,300-digit inputs)
            extra = work.pop("params", {}) if work else {}  # params.per_gpu (symllm.costs.parallel)
            print(json_text({"model": config.name, "params": {**counts, **extra}, "config": resolved, **work,
                             **({"checkpoint": ckpt} if ckpt else {})}))
        return 0
    rows = [(k, grouped(v), human(v)) for k, v in counts.items()
            if k not in ("total", "block", "active", "trainable", "mtp")]
    rows.append(("total", grouped(counts["total"]), human(counts["total"])))
    if "mtp" in counts:  # stored by the checkpoint, not built by transformers: apart from the total
        rows.append(("multi-token prediction (apart)", grouped(counts["mtp"]), human(counts["mtp"])))
        rows.append(("total with it (checkpoint)", grouped(counts["total"] + counts["mtp"]),
                     human(counts["total"] + counts["mtp"])))
    if "trainable" in counts:
        rows.append(("trainable (LoRA adapters)", grouped(counts["trainable"]), human(counts["trainable"])))
    if counts["active"] != counts["total"]:
        rows.append(("active (per token)", grouped(counts["active"]), human(counts["active"])))
    print(_wrap(f"{config.name}: {config.attention_kind}, V={config.vocab_size}, d={config.dim}, "
                f"L={config.n_layers}, n_h={config.n_heads}, n_kv={config.n_kv_heads}, d_h={config.head_dim}, "
                f"d_ff={resolved['hidden_dim']} ({config.hidden_rule}), "
                f"{'tied' if config.tie_embeddings else 'untied'} embeddings"))
    windowed = sum(count for kind, count in config.groups if kind.window == "sliding")
    variants = [text for on, text in ((config.attention_bias, "biases on wq, wk, wv, wo"),
                                      (config.qkv_bias and not config.attention_bias, "biases on wq, wk, wv"),
                                      (config.mlp_bias, "biases on w1, w2, w3"),
                                      (config.qk_norm == "rmsnorm", "QK-norm (rmsnorm of width d_h)"),
                                      (config.qk_norm == "l2", "QK-norm (weightless L2, in the RoPE layers)"),
                                      (config.qk_norm == "full", "QK-norm over the whole q and k (rmsnorm of "
                                       "n_h*d_h and n_kv*d_h)"),
                                      (config.fused, "fused projections wqkv (qkv_proj) and w13 (gate_up_proj)"),
                                      (config.norms == "post", "norms after attention and feed-forward"),
                                      (config.norms == "sandwich", "norms before and after attention and "
                                       "feed-forward"),
                                      (config.activation == "gelu_tanh", "GeGLU (gelu_pytorch_tanh)"),
                                      (config.norm_offset, "RMSNorm by (1 + weight)"),
                                      (config.embed_scale, "embeddings scaled by sqrt(d)"),
                                      (config.attn_softcap, f"attention scores soft-capped at {config.attn_softcap:g}"
                                       if config.attn_softcap else ""),
                                      (config.final_softcap, f"final logits soft-capped at {config.final_softcap:g}"
                                       if config.final_softcap else ""),
                                      (config.n_experts, f"mixture of experts: {config.n_experts} experts, "
                                       f"{config.experts_per_token} per token, in {config.n_moe_layers} of "
                                       f"{config.n_layers} layers" + (
                                           f"; a gated shared expert of width {config.shared_hidden_dim}"
                                           if config.shared_hidden_dim else "; a shared expert"
                                           if config.shared_expert else "")),
                                      (config.n_shared_experts, f"{config.n_shared_experts} shared experts of width "
                                       f"{config.hidden_dim}"),
                                      (config.moe_bias, "biases on the router and the experts"),
                                      (config.clamped_swiglu, "clamped SwiGLU experts"),
                                      (config.attention_sinks, "attention sinks"),
                                      (config.dense_hidden_dim, f"dense layers of width {config.dense_hidden_dim}"),
                                      (config.kv_lora_rank, f"multi-head latent attention: kv_lora_rank "
                                       f"{config.kv_lora_rank}, q_lora_rank {config.q_lora_rank}, head widths "
                                       f"{config.qk_nope_head_dim} + {config.qk_rope_head_dim} (RoPE), values "
                                       f"{config.v_head_dim}; the KV cache holds the latent, "
                                       f"{(config.kv_lora_rank or 0) + (config.qk_rope_head_dim or 0)} a token and layer"),
                                      (config.partial_rotary_factor, f"RoPE on {config.rope_dim} of each head's "
                                       f"{config.head_dim}"),
                                      (config.n_mtp_layers, f"{config.n_mtp_layers} multi-token prediction "
                                       "module(s) in the checkpoint, counted apart (transformers does not build them)"),
                                      (config.n_nope_layers, f"{config.n_nope_layers} layers without RoPE"),
                                      (config.sliding_window, f"sliding window {config.sliding_window}" + (
                                          f" in {windowed} of {config.n_layers} layers"
                                          if 0 < windowed < config.n_layers else "")),
                                      (config.attention_chunk, f"attention chunks of {config.attention_chunk}"),
                                      (config.note, config.note),
                                      (config.weight_format, _stated_format(config, given))) if on]
    if variants:
        print(_wrap(f"({'; '.join(variants)})"))
    if config.n_experts is None and len(config.groups) == 1:
        print(f"(block/* rows are summed over all {config.n_layers} blocks; one block has "
              f"{grouped(counts['block'])} parameters)\n")
    else:
        print("(*block/* rows are summed over every block of that kind)\n")
    print(_table(rows, ("component", "parameters", "rounded")))
    if config.weight_format is not None and not given:  # a quantized config.json: its weights' bytes too
        from symllm.costs import formats
        f = formats.weight_bytes(config, config.weight_format)
        print("\n" + _weight_table(f["format"], f["total"], f["bits_per_weight"]))
    if ckpt:
        print("\n" + _checkpoint_lines(ckpt))
    if given:
        w = work["workload"]
        print("\n" + _wrap(f"workload: b={w['batch']}, s={w['seq']}, n={w['gen']}, t={w['context']}; weights "
                           f"{w['weight_format'] or w['dtype']}, KV cache {w['kv_format'] or w['kv_dtype']}, activations {w['act_dtype']}; {w['attention']} "
                           f"attention; ZeRO {w['zero_stage']} over {w['dp']} rank(s)"
                           f"{'; full recomputation' if w['recompute'] else ''}") + "\n")
        rows = [(k if k != "elementwise" else "elementwise (prefill)", grouped(v), human(v, flops=True))
                for k, v in work["flops"].items()]
        print(_table(rows, ("FLOPs (matmuls)", "FLOPs", "rounded")) + "\n")
        rows = [(_MEMORY_LABELS.get(k, k) if "full_finetune_peak" in work["memory"] else k, grouped(v),
                 human_bytes(v)) for k, v in work["memory"].items()]
        print(_table(rows, ("memory", "bytes", "rounded")))
        if "weight_format" in work:
            f = work["weight_format"]
            print("\n" + _weight_table(f["format"], f["bytes"], f["bits_per_weight"]))
        if {"tp", "pp", "dp", "ep", "sp"} & set(given):  # a parallel layout (symllm.costs.parallel)
            rows = [("parameters", grouped(work["params"]["per_gpu"]), human(work["params"]["per_gpu"]))]
            rows += [(k, grouped(v), human_bytes(v)) for k, v in work["memory_per_gpu"].items()]
            rows += [(f"sent: {k}", grouped(v), human_bytes(v)) for k, v in work["comm"].items()]
            print("\n" + _table(rows, (f"per GPU (tp {w['tp']}, pp {w['pp']}, dp {w['dp']}"
                                       f"{', ep ' + str(w['ep']) if w['ep'] > 1 else ''}"
                                       f"{', sp' if w['sp'] else ''}; a training step)", "", "")))
        if "time" in work:  # --gpu: fit and roofline time per GPU of the layout (symllm.costs.hardware)
            print("\n" + "\n".join(time_lines(work["time"], w)))
        if "serving" in work:
            print("\n" + serve_lines(work["serving"]))
    return 0


#: count's memory rows under LoRA: the training peak is LoRA's, full fine-tuning's a line of its own
_MEMORY_LABELS = {"training_peak": "training_peak (LoRA)", "full_finetune_peak": "training_peak (full fine-tuning)"}


#: the workload options ``plan`` enumerates (or takes from --gpus) rather than reads
PLAN_ENUMERATES = ("batch", "tp", "pp", "dp", "ep", "sp", "zero_stage", "recompute", "gpu")


def cmd_plan(args) -> int:
    from symllm.studies import plans

    config = _load(args)
    count, gpu = plans.parse_gpus(args.gpus)
    given = _given(args, [n for n in Workload.names() if n not in PLAN_ENUMERATES])
    if args.top is not None and args.top < 1:
        raise SymllmError(f"top: expected a positive integer, got {args.top}")
    result = plans.plan(config, count, gpu, training=args.train, global_batch=args.global_batch,
                        concurrency=args.concurrency, **given)
    if args.json:
        with _any_int_digits():  # exact numbers of any length
            print(json_text(result.to_dict(args.top)))
        return 0
    for line in plan_lines(result, args.top or 10):
        print(line)
    if config.weight_format is not None:  # a quantized config.json's format (symllm.arch.quantization)
        print(_wrap(f"({_stated_format(config, given)})"))
    return 0


def plan_lines(p, top: int) -> list[str]:
    """``plan``'s table from a :class:`symllm.studies.plans.Plan`: the best ``top`` layouts, the drop
    counts; nothing computed here."""
    w = p.workload
    what = (f"training, global batch {w['global_batch']:,} x {w['seq']:,} tokens" if p.training
            else f"serving, prompt {w['seq']:,} + {w['gen']:,} generated, decode at context {w['context']:,}")
    kv = f", KV cache {w['kv_format']}" if w.get("kv_format") else ""
    out = [_wrap(f"{p.model} on {p.gpus} x {p.gpu} ({what}; {w['stack']} stack, {w.get('weight_format') or w['dtype']}"
                 f"{kv}): {p.layouts:,} "
                 f"layouts, {len(p.rows):,} fit" + (f", best {min(top, len(p.rows))} below" if p.rows else ""))]
    moe = any(r["ep"] > 1 for r in p.rows + p.drops)
    if p.rows:
        rows = []
        for i, r in enumerate(p.rows[:top], 1):
            lay = [str(i), r["tp"], r["pp"], r["dp"]] + ([r["ep"]] if moe else [])
            e = r.get("expected")  # the best rows' expected times (plans.EXPECTED_ROWS); "-" past them
            if p.training:
                rows.append(lay + ["yes" if r["sp"] else "no", r["zero"], "full" if r["recompute"] else "none",
                                   f"{r['batch']} x {r['accum']}", human_bytes(r["peak"]),
                                   _g(r["step_s"]), _g(e["training_step_s"]) if e else "-",
                                   _f(r["mfu"], ".1%"), _f(e["mfu"], ".1%") if e else "-"]
                            + ([f"{_f(r['training_s'] / 86400, ',.1f')}"] if "training_s" in r else []))
            else:
                rows.append(lay + [r["batch"], human_bytes(r["peak"]), _g(r["decode_token_s"] * 1000),
                                   _g(e["decode_token_s"] * 1000) if e else "-", _f(r["tokens_per_s"], ",.0f"),
                                   _f(e["tokens_per_s"], ",.0f") if e else "-"])
        head = ["#", "tp", "pp", "dp"] + (["ep"] if moe else [])
        head += (["sp", "zero", "recompute", "micro x acc", "peak/GPU", "step s", "exp. s", "MFU", "exp."]
                 + (["days"] if "training_s" in p.rows[0] else []) if p.training
                 else ["batch", "peak/GPU", "decode ms", "exp. ms", "tokens/s", "exp."])
        text = tuple(head.index(k) for k in ("sp", "recompute", "micro x acc")) if p.training else ()
        out += ["", _table(rows, tuple(head), text_columns=text)]
    if p.dropped:
        out += ["", _wrap("dropped: " + "; ".join(f"{n:,} {why}" for why, n in
                                                  sorted(p.dropped.items(), key=lambda kv: -kv[1])))]
    out.append(_wrap(f"A layout fits when its per-GPU {'training' if p.training else 'inference'} peak does "
                     f"(it assumes {p.assumes}); nothing that does not fit is timed."))
    out.append(_wrap(f"Pipeline splits: {p.splits}."))
    out.append(_wrap("Times: roofline per GPU plus communication, not overlapped (a bound), and expected (exp.: "
                     "measured efficiencies, docs/efficiency.md) for the best rows; "
                     + ("each data-parallel rank runs its global/dp sequences as micro-batches one after "
                        "another (micro x acc), then reduces gradients once." if p.training
                        else "tokens/s = replicas x batch / decode step.")))
    return out


#: count's options for --serve (symllm.costs.serving.capacity's keywords)
_SERVE = ("gpu_memory_utilization", "max_num_batched_tokens", "block_size", "non_torch")


def serve_lines(r: dict) -> str:
    """count's serving section from :func:`symllm.costs.serving.capacity` (nothing computed here)."""
    rows = [(f"GPU memory x {float(r['gpu_memory_utilization']):g}", human_bytes(r["usable"]), f"{r['gpu']}"),
            ("- weights", human_bytes(r["weights"]), "per GPU" + (f" (tp {r['tp']})" if r["tp"] > 1 else "")),
            ("- activation peak", human_bytes(r["activation_peak"]),
             f"profile run of {r['max_num_batched_tokens']:,} tokens (estimate)"),
            ("- non-torch memory", human_bytes(r["non_torch"]), "the engine's, or --non-torch-memory"),
            ("= KV cache", human_bytes(max(r["kv_cache_bytes"], 0)), f"{grouped(r['kv_bytes_per_token'])} bytes a token"),
            ("GPU KV cache size", f"{r['kv_tokens']:,} tokens", f"{r['blocks']:,} blocks of {r['block_size']}"),
            (f"max concurrency at {r['context']:,}", f"{float(r['max_concurrency']):.2f}x",
             "fits" if r["fits"] else "one request does not fit")]
    out = _table(rows, ("serving (vLLM paged KV cache)", "", ""), text_columns=(1, 2))
    if "load" in r:
        x = r["load"]
        at = f"{x['running']:,} running" + (f", {x['queued']:,} queued" if x["queued"] else "")
        rows = [("concurrency", f"{x['concurrency']:,}", at + (" (saturated)" if x["saturated"] else "")),
                ("time to first token", f"{_g(x['ttft_s'])} s", f"prompt {x['seq']:,} tokens"),
                ("inter-token latency", f"{_g(x['itl_s'] * 1000)} ms", f"{x['gen']:,} tokens generated"),
                ("output tokens/s", _f(x["output_tokens_per_s"], ",.0f"), f"{_f(x['requests_per_s'], ',.3g')} requests/s"),
                ("saturates at", f"{x['saturation_concurrency']:,}", f"of {x['kv_sequences']:,} the KV cache holds")]
        out += "\n\n" + _table(rows, (f"under load (expected, {x['engine']})", "", ""), text_columns=(1, 2))
    return out


def time_lines(t: dict, w: dict) -> list[str]:
    """count's fit and time section from ``workload()["time"]`` (``t``) and its ``workload`` (``w``): the
    per-GPU verdicts, each time as its roofline bound and as expected (:mod:`symllm.costs.efficiency`);
    nothing computed here."""
    per = f"per GPU of {t['gpus']}" if t["gpus"] > 1 else "one GPU"
    e = t["expected"]
    unfit = ("does not fit", "", "")  # nothing is timed that does not fit (symllm.costs.hardware.blank_unfit)
    rows = [("inference peak", human_bytes(t["inference_peak"]), "",
             f"{'fits' if t['fits'] else 'does not fit'} (up to batch {t['max_batch']:,})"),
            ("largest context", f"{t['max_context']:,} tokens", "", f"seq + gen at batch {w['batch']:,}" + (
                f"; past the {t['window']:,} positions trained" if t["max_context_past_window"] else "")),
            ("training peak (LoRA)" if w.get("lora_rank") else "training peak", human_bytes(t["training_peak"]), "",
             f"{'fits' if t['training_fits'] else 'does not fit'} (up to batch {t['training_max_batch']:,}, "
             f"seq {t['training_max_seq']:,})")]
    if t["fits"]:
        rows += [("prefill", f"{_g(t['prefill_s'])} s", f"{_g(e['prefill_s'])} s", f"{t['prefill_bound']}-bound"),
                 ("decode step", f"{_g(t['decode_token_s'])} s", f"{_g(e['decode_token_s'])} s",
                  f"{t['decode_token_bound']}-bound"),
                 ("decode tokens/s", _f(t['tokens_per_s'], ",.1f"), _f(e['tokens_per_s'], ",.1f"),
                  f"batch {w['batch']} x {w['dp']} replica(s)")]
    else:
        rows += [("prefill", *unfit), ("decode step", *unfit), ("decode tokens/s", *unfit)]
    if t["training_fits"]:
        rows += [("training step", f"{_g(t['training_step_s'])} s", f"{_g(e['training_step_s'])} s",
                  f"MFU {_f(t['mfu'], '.1%')} bound, {_f(e['mfu'], '.1%')} expected"),
                 ("training tokens/s", _f(t['training_tokens_per_s'], ",.0f"),
                  _f(e['training_tokens_per_s_per_gpu'] * t['gpus'], ",.0f"),
                  f"{_f(e['training_tokens_per_s_per_gpu'], ',.0f')} expected per GPU")]
        if "training_s" in t:
            rows.append((f"{w['tokens']:,} tokens", f"{_f(t['training_s'] / 86400, ',.2f')} days",
                         f"{_f(e['training_s'] / 86400, ',.2f')} days",
                         f"{_f(e['gpu_hours'], ',.0f')} GPU-hours expected"))
            if "cost" in t:
                rows.append(("cost", _f(t["cost"], ",.2f"), _f(e["cost"], ",.2f"), f"at {w['price']:g} a GPU-hour"))
    else:
        rows += [("training step", *unfit), ("training tokens/s", *unfit)]
    out = [_table(rows, (f"on {t['gpu']} ({per})", "bound", "expected", ""), text_columns=(3,), wrap=3)]
    a = t["assumes"]
    out.append(_wrap(f"Verdicts assume: inference peak: {a['fits']}; training peak: {a['training_fits']}; "
                     f"largest context: {a['max_context']}."))
    first = t["compute_bound_batch"]
    links = "; ".join(f"{k} over {v['topology']} ({v['bandwidth'] / 10 ** 9:g} GB/s one way)"
                      for k, v in t["links"].items())
    out.append(_wrap(f"{t['title']}: {t['peak_flops'] / 10 ** 12:,g} TFLOP/s dense {t['peak_dtype']}, "
                     f"{t['bandwidth'] / 10 ** 9:,g} GB/s, ridge {t['ridge']:.1f} FLOP/byte, {human_bytes(t['capacity'])}"
                     + (f"; {links}" if links else "")
                     + ("" if t["gpus"] > 1 else "; a decode step " + (f"is compute-bound from batch {first}" if first
                                                                     else "is memory-bound at any batch"))
                     + f". bound: roofline plus communication; expected: measured efficiencies, {e['engine']} "
                     f"(training {e['training_engine']}) conventions (docs/efficiency.md)."))
    return out


def _g(value) -> str:
    """``value`` with 4 significant digits; an exact Fraction past a float's range too (roofline times of
    any size).

    >>> _g(0.000123456), _g(Fraction(10 ** 400, 3))
    ('0.0001235', '3.333e+399')
    """
    if isinstance(value, Fraction):
        import decimal
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin = 28, decimal.MAX_EMAX, decimal.MIN_EMIN
            return format(decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator), ".4g")
    return format(value, ".4g")


def _f(value, spec: str) -> str:
    """``value`` formatted by ``spec``; an exact Fraction past a float's range in :func:`_g`'s notation."""
    return _g(value) if isinstance(value, Fraction) else format(value, spec)


def _render_opts(args) -> dict:
    return {"template_dir": args.template_dir, "template": args.template, "label_prefix": args.label_prefix}


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
    from symllm.present import derivation  # jinja2 loads only for derive and report (start-up of count)
    kind = "mha" if args.mha else "mqa" if args.mqa else "gqa" if args.gqa else None
    dv = derivation.derive(args.component, args.quantity, kind=kind, config=args.model, notation=args.notation,
                           vocab_size=args.vocab_size, **_workload(args))
    _emit(dv.render(args.format, standalone=args.standalone, **_render_opts(args)), args)
    ignored = _not_applying(args)
    if ignored:
        print(f"symllm: warning: {', '.join(ignored)} {'does' if len(ignored) == 1 else 'do'} not apply to "
              f"--quantity {args.quantity} (ignored)", file=sys.stderr)
    return 0


#: derive's options that change one quantity only (every workload option is moot for parameters)
#: workload options only count and report use (fit and time on an accelerator): derive shows none of them
_HARDWARE = ("gpu", "gpu_memory", "gpu_bandwidth", "gpu_flops", "network", "tokens", "price")
_APPLIES_TO = {"phase": "flops", "attention": "flops", "memory": "memory", "dtype": "memory", "kv_dtype": "memory",
               "act_dtype": "memory", "group_size": "memory", "zero_stage": ("memory", "comm"),
               "dp": ("memory", "comm"), "recompute": ("flops", "memory", "comm"), "tp": "comm", "pp": "comm",
               "ep": "comm", "sp": "comm",  # (per-GPU numbers: count's and the sweep's too)
               # LoRA (symllm.costs.finetune): derive shows its training peak (--memory training_peak)
               "lora_rank": "memory", "lora_targets": "memory", "qlora": "memory",
               "weight_format": "memory", "kv_format": "memory"}  # β_w, β_kv of a format (symllm.costs.formats)


#: the options derive's roofline quantities use (symllm.costs.hardware); --gpu applies to nothing else
_ROOFLINE_USES = {"ridge": {"gpu", "gpu_bandwidth", "gpu_flops", "dtype", "act_dtype"},
                  "decode_batch": {"gpu", "gpu_bandwidth", "gpu_flops", "dtype", "kv_dtype", "act_dtype",
                                   "group_size", "seq", "context", "attention"}}


def _not_applying(args) -> list[str]:
    """The flags given to derive that its quantity does not use (``--phase`` with ``--quantity memory``)."""
    flags = {name: opt.flag or "--" + name.replace("_", "-") for name, (_, opt) in workload_options().items()}
    flags.update(phase="--phase", memory="--memory")
    if args.quantity in _ROOFLINE_USES:
        return [flags[k] for k in _workload(args) if k not in _ROOFLINE_USES[args.quantity]]
    return [flags[k] for k in _workload(args)
            if args.quantity == "params" or k in _HARDWARE
            or args.quantity not in _uses(_APPLIES_TO.get(k, args.quantity))]


def _uses(quantities) -> tuple:
    """The quantities an option applies to, as a tuple (``_APPLIES_TO`` names one or several)."""
    return (quantities,) if isinstance(quantities, str) else quantities


def cmd_report(args) -> int:
    from symllm.present import rendered  # a report rendered before is read back: no formula built, no jinja2 (start-up)
    _emit(rendered.report(args.model, fmt=args.format, standalone=args.standalone, notation=args.notation,
                          vocab_size=args.vocab_size, **_render_opts(args), **_workload(args)), args)
    return 0


def cmd_presets(args) -> int:
    from symllm.studies import quick  # kernels an earlier process compiled: no formula built (start-up)
    rows, data = [], []
    for name in sorted(cfgmod.preset_names(), key=_natural):
        counts = quick.params(cfgmod.load(name))[0]
        info = cfgmod.preset_info(name)
        rows.append((name, grouped(counts["total"]), human(counts["total"]), info["description"]))
        data.append({"name": name, "params": counts["total"], "active": counts["active"],
                     "description": info["description"], "source": info.get("source"),
                     "hub": cfgmod.preset_hub(name)})
    if args.json:  # docs/json.md, symllm/output.schema.json ($defs/presets)
        print(json_text(data))
        return 0
    print(_table(rows, ("preset", "parameters", "rounded", "description"), text_columns=(3,), wrap=3))
    return 0


def cmd_verify(args) -> int:
    from symllm.costs import checkpoints
    if checkpoints.has_weights(args.model):  # a checkpoint: its headers against the component tree
        c = checkpoints.check(args.model)
        if args.json:  # docs/json.md, symllm/output.schema.json ($defs/verify)
            keys = ("format", "files", "tensors", "bytes", "weight_format", "formula_bytes", "difference")
            print(json_text({"model": c["config"].name, "agrees": not c["difference"],
                             "checkpoint": {k: c[k] for k in keys}}))
            return 1 if c["difference"] else 0
        where = f"{c['path']}: {c['tensors']:,} tensors in {c['files']} {c['format']} file(s), {grouped(c['bytes'])} bytes"
        if c["formula_bytes"] is not None:
            where += f" (formula for {c['weight_format']}: {grouped(c['formula_bytes'])})"
        print(_wrap(where))
        print(_wrap(f"{c['config'].name}: " + (c["difference"] if c["difference"] else
                                                "every tensor's name, shape and dtype agrees with the component tree"
                                                if c["dtypes_checked"] else "every tensor's name and shape agrees "
                                                "with the component tree (its GGML types are not modelled: "
                                                "not checked)")))
        return 1 if c["difference"] else 0
    config = _load(args)
    try:
        from symllm import reference
    except ImportError:
        raise SymllmError("verify: needs torch (pip install 'symllm[torch]')") from None
    measured = reference.count(reference.build(config, device="meta"))
    from symllm import api
    ours = api.params(config)
    if config.n_experts is not None or len(config.groups) > 1:  # blocks of several kinds: kind by kind
        measured, ours = api.by_kind(measured), api.by_kind(ours)
    rows, bad = [], 0
    for key, value in measured.items():
        mine = ours.get(key)
        ok = mine == value
        bad += not ok
        rows.append((key, grouped(mine) if mine is not None else "-", grouped(value), "ok" if ok else "DIFFERS"))
    if args.json:  # docs/json.md, symllm/output.schema.json ($defs/verify)
        print(json_text({"model": config.name, "agrees": not bad,
                         "components": {k: {"symllm": ours.get(k), "torch": v} for k, v in measured.items()}}))
        return 1 if bad else 0
    print(_table(rows, ("component", "symllm", "torch numel", "")))
    print(f"\n{config.name}: {'all components agree' if not bad else f'{bad} component(s) differ'}")
    return 1 if bad else 0


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
    o.add_argument("--standalone", action="store_true", help="LaTeX: a complete document (default: a fragment to \\input)")
    o.add_argument("-o", "--output", metavar="FILE", help="write FILE (atomically when new; - is stdout) instead of printing")
    o.add_argument("--notation", metavar="FILE", help="TOML or JSON mapping symbol -> LaTeX, e.g. d = 'd_\\mathrm{model}'")
    o.add_argument("--template-dir", metavar="DIR", help="user templates (sandboxed) that override or add to symllm's")
    o.add_argument("--template", metavar="NAME", help="render this template (e.g. one from --template-dir)")
    o.add_argument("--label-prefix", metavar="PREFIX", help="LaTeX: each numbered equation's \\label is "
                   "PREFIX:<model>:<component>:<quantity>[:<phase or kind>] (default eq:symllm)")


def _progress_bar(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)


def cmd_sweep(args) -> int:
    from symllm.studies import sweeps as sw
    grid, workload = {}, _given(args, tuple(k for k in Workload.names() if k not in sw.WORKLOAD_AXES))
    for name in sw.CONFIG_FIELDS + sw.WORKLOAD_AXES:
        text = getattr(args, name)
        if text is None:
            continue
        suffixes = workload_options()[name][1].suffixes if name in sw.WORKLOAD_AXES else None
        values = sw.parse_axis(text, name, None if suffixes is None else (  # --seq 2k:8k:2k (validate.token_count)
            lambda part, field: validate.token_count(field, part, binary=suffixes == "length", low=None)))
        if name in sw.WORKLOAD_AXES and (values.stop - values.start <= values.step if isinstance(values, range)
                                         else len(values) == 1):  # len() of a range refuses > sys.maxsize
            workload[name] = values[0]
        else:
            grid[name] = values
    if args.table is not None:
        if grid:
            raise SymllmError(f"table: give the fields in the table, not as --{next(iter(grid)).replace('_', '-')}")
        grid, table = None, sw.read_table(args.table, columns=True)
    else:
        table = None
    bases = [b.strip() for b in args.base.split(",")] if args.base else []
    options = dict(quantities=args.quantity.split(","), workload=workload, where=args.where,
                   chunk_size=args.chunk_size)
    named = table is not None and any(k in sw.NAME_COLUMNS for k in table)
    if named and bases:
        raise SymllmError("base: the table names each row's base (its name column); give no --base")
    if len(bases) > 1 or named:  # one table, a base column first (symllm.studies.sweeps.Sweeps)
        sweep = sw.Sweeps(bases, grid, table=table, **options)
    elif bases:
        sweep = sw.Sweep(bases[0], grid, table=table, **options)
    else:
        raise SymllmError("base: give --base MODEL[,MODEL...] or a --table with a base column")
    given_hw = [k for k in _HARDWARE if workload.get(k) is not None and k != "network"]
    if given_hw:  # roofline time is count's (floats of a max, a search): no column
        flags = ", ".join("--" + k.replace("_", "-") for k in given_hw)
        print(f"symllm: warning: {flags} {'does' if len(given_hw) == 1 else 'do'} not apply to a sweep "
              "(ignored; fit and time: symllm count --gpu)", file=sys.stderr)
    progress = _progress_bar if sys.stderr.isatty() and sweep.size > sweep.chunk_size else None
    with _any_int_digits():  # exact numbers of any length (a --dim of 2,200 digits makes FLOPs of 4,400)
        if args.output and args.output != "-":  # -o -: standard output, as without -o
            result = sweep.write(args.output, args.format, progress=progress)
        else:
            sweep.write_to(sys.stdout, args.format or "csv", progress=progress)
            result = sweep.stats
    rows = result.points - result.invalid - result.filtered
    why = "".join(f"\n  {line}" for line in sw.dropped_text(result.reasons).splitlines())
    where = validate.shown_path(args.output, 24).strip("'") if args.output not in (None, "-") else "stdout"
    print(f"symllm: sweep: {result.points:,} points, {result.invalid:,} invalid dropped, "
          f"{result.filtered:,} filtered out, {rows:,} rows -> {where}{why}", file=sys.stderr)
    configs = [s.base for s in sweep.sweeps] if hasattr(sweep, "sweeps") else [sweep.base]
    stated = [b for b in configs if b.weight_format]
    for base in stated:  # a quantized config.json's format prices the weights (symllm.arch.quantization)
        print(_wrap(f"symllm: sweep: {base.name}: {_stated_format(base, workload)}"), file=sys.stderr)
    return 0


def cmd_plot(args) -> int:
    from symllm.present import plots  # matplotlib loads only here
    given = _given(args)
    if args.kind == "sweep":
        if len(args.models) != 1 or args.x is None:
            raise SymllmError("sweep: give one file symllm sweep wrote (CSV, JSON lines, Parquet), and --x COLUMN")
        if given:
            raise SymllmError(f"{next(iter(given))}: a sweep's plot draws its file's columns (no workload options)")
        fig = plots.sweep(args.models[0], args.x, args.y.split(",") if args.y else None)
    else:
        if args.x is not None or args.y is not None:
            raise SymllmError(f"x: --x and --y are for plot sweep, not plot {args.kind}")
        models = [cfgmod.load(m, vocab_size=args.vocab_size) for m in args.models]
        if args.kind in ("memory", "roofline") and len(models) != 1:
            raise SymllmError(f"model: plot {args.kind} draws one model, not {len(models)}")
        if args.contexts is not None and args.kind not in ("context", "flops"):
            raise SymllmError(f"contexts: for plot context and plot flops, not plot {args.kind}")
        if args.kind in ("context", "flops"):
            from symllm.studies import sweeps
            contexts = sweeps.parse_axis(args.contexts, "contexts") if args.contexts else plots.CONTEXTS
            fig = getattr(plots, args.kind)(models, contexts=contexts, **given)
        else:
            fig = getattr(plots, args.kind)(models[0], **given)
    plots.save(fig, args.output, args.format)
    return 0


def _plot_parser(p) -> None:
    p.add_argument("kind", choices=_Choices("present.plots", "KINDS"), metavar="KIND",
                   help="memory (by kind and by component), context (KV cache and inference peak against "
                        "context), flops (per token against context), roofline (on --gpu), sweep (a sweep's "
                        "columns)")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="presets or config files (context and flops take several); for sweep, the file "
                        "symllm sweep wrote (CSV, JSON lines or Parquet)")
    p.add_argument("--vocab-size", type=int, default=None, help="vocabulary size, for Meta params.json files "
                                                                "that say -1")
    p.add_argument("--contexts", metavar="VALUES", help="context lengths for context and flops: a comma list "
                                                        "and start:stop[:step] ranges (default 1024 to 131072, "
                                                        "doubling)")
    p.add_argument("--x", metavar="COLUMN", help="sweep: the column along the x axis (e.g. dim)")
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
                        "(or a --table whose base, model or name column names each row's)")
    g = p.add_argument_group("what varies: comma lists and inclusive start:stop[:step] ranges, e.g. 2048:8192:256")
    for name in ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim",
                 "multiple_of", "ffn_dim_multiplier"):  # sweep.CONFIG_FIELDS (numpy loads only for a sweep)
        g.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="VALUES")
    add_workload_options(p.add_argument_group("workload (VALUES: comma lists and ranges, as above)"),
                         axes_as_values=True)
    p.add_argument("--table", metavar="FILE",
                   help="one point per row of a CSV, JSON-lines or Parquet file instead of a grid")
    p.add_argument("--quantity", default="params", metavar="Q[,Q...]",
                   help="params (default), flops, kv_cache, training_flops, weights, ... or params:block/attention/wq")
    p.add_argument("--where", metavar="COND", help='keep rows that pass, e.g. "params < 9e9 and dim >= 4096"')
    p.add_argument("-o", "--output", metavar="FILE", help="write FILE (atomically when new; default or -: CSV on stdout)")
    p.add_argument("--format", choices=_Choices("files", "TABLE_FORMATS"),
                   help="default: from the file suffix (.jsonl, .parquet), else csv; parquet needs -o FILE and pyarrow")
    p.add_argument("--chunk-size", type=int, default=1 << 18, help="points evaluated at once (memory stays flat)")
    p.set_defaults(func=cmd_sweep)


def _count_args(p) -> None:
    p.add_argument("model", metavar="MODEL", nargs="+",
                   help="a preset name (symllm presets) or a config.json / params.json; several are compared")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="vocabulary size, for Meta params.json files that say -1")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--format", choices=_Choices("present.format", "COMPARISON_FORMATS"), default=None,
                   help="a comparison table (a column per model) as text (default), csv, markdown or latex")
    add_workload_options(p.add_argument_group("workload (FLOPs and memory; shown when any is given, always in --json)"))
    s = p.add_argument_group("serving: vLLM's paged KV cache (symllm.costs.serving; needs --gpu; context --seq + --gen)")
    s.add_argument("--serve", action="store_true", help="KV cache tokens and maximum concurrency as vLLM allocates them")
    s.add_argument("--gpu-memory-utilization", type=float, default=None, metavar="F",
                   help="share of GPU memory vLLM may use (default 0.9)")
    s.add_argument("--max-num-batched-tokens", type=int, default=None, metavar="N",
                   help="tokens of vLLM's profile run, whose activation peak is reserved (default 8192)")
    s.add_argument("--block-size", type=int, default=None, metavar="N", help="tokens per KV block (default 16)")
    s.add_argument("--non-torch-memory", dest="non_torch", type=float, default=None, metavar="GIB",
                   help="CUDA context, NCCL buffers (vLLM logs non_torch_memory; default: the --engine's, vLLM's "
                        "0.35)")
    s.add_argument("--concurrency", type=int, default=None, metavar="C",
                   help="under load: C requests at a time of --seq prompt and --gen output tokens: TTFT, ITL, "
                        "output tokens/s (symllm.costs.traffic)")
    s.add_argument("--request-rate", type=float, default=None, metavar="R",
                   help="under load: R requests a second (instead of --concurrency)")
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
                        "bytes one GPU sends per training step under --tp/--pp/--dp/--ep/--sp (comm), "
                        "the ridge point FLOP/byte or the batch at which a decode step turns compute-bound "
                        "(numbers with --gpu)")
    p.add_argument("--model", metavar="NAME|CONFIG", default=None,
                   help="substitute a preset's or a config file's numbers and evaluate")
    p.add_argument("--vocab-size", type=int, default=None, help="vocabulary size, for Meta params.json files that say -1")
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
    p.add_argument("--concurrency", type=int, default=256,
                   help="serving: the most sequences per replica tried (1, 2, 4, ... up to it; default 256)")
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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, help_, fill in COMMANDS:
        if only is None or name == only:
            fill(sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES[name], formatter_class=_Formatter))
    return parser


class _Terminated(BaseException):
    """SIGTERM, raised where the command is so that ``finally`` clauses run (write_atomic removes its
    temporary file); main() turns it into one line and exit status 143."""


class _Signals:
    """The first SIGINT or SIGTERM main() received (None: none yet)."""
    first: int | None = None


def _on_signal(signum, frame):
    """The first Ctrl-C or SIGTERM raises where the command is (KeyboardInterrupt, :class:`_Terminated`),
    so that ``finally`` clauses clean up; a second one while they run is ignored (it killed the process
    midway through removing a temporary file)."""
    if _Signals.first is not None:
        return
    _Signals.first = signum
    raise KeyboardInterrupt() if signum == signal.SIGINT else _Terminated()


def _unraisable(unraisable) -> None:
    """The signal's exception raised where Python cannot pass it on (a weakref callback of the import
    system, a ``__del__``) is not shown ("Exception ignored in ..." and a traceback): main() reports the
    signal when the command returns. Any other is shown as Python shows it."""
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, _Terminated)) and _Signals.first is not None:
        return
    sys.__unraisablehook__(unraisable)


def _fit(message: str, room: int) -> str:
    """``message`` on one line of at most ``room`` columns: the messages are written to fit (a list whole or
    pointed to by :func:`symllm.validate.listed`, a path cut by :func:`~symllm.validate.shown_path`); one
    that does not (an odd value echoed back) is cut after its last whole word to "..." rather than run past
    the terminal's 100 columns.

    >>> _fit("model: unknown preset 'abcdefgh'", 30)
    'model: unknown preset...'
    """
    message = " ".join(message.split())
    if len(message) <= room:
        return message
    cut = message.rfind(" ", 0, room - 2)  # the last whole word that leaves room for "..."
    return (message[:cut] if cut > room // 2 else message[:room - 3]) + "..."


def _fail(message: str, code: int = 2) -> int:
    try:
        print(f"symllm: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return code


def _silence_stdout() -> None:
    """After stdout failed (a full device, a closed pipe): point it at /dev/null so that the flush at
    exit does not print "Exception ignored ..." (the recipe of Python's signal documentation)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # pytest's capture, a StringIO: nothing to silence
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """symllm's own warnings (an untrusted cache, :class:`symllm.numbers.cache.CacheWarning`) as one line
    ``symllm: warning: ...`` on stderr; any other as Python shows it."""
    if category.__module__.startswith("symllm."):
        print(f"symllm: warning: {_fit(str(message), WIDTH - len('symllm: warning: '))}", file=sys.stderr)
    else:
        warnings._showwarnmsg_impl(warnings.WarningMessage(message, category, filename, lineno, file, line))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status: 0, or 2 with one line ``symllm: error: ...`` on
    stderr for bad input or a failed write (also of stdout: ``> /dev/full``), 130 with ``symllm:
    interrupted`` for Ctrl-C, 143 with ``symllm: terminated`` for SIGTERM (an output file's temporary
    file is removed first; see :func:`symllm.files.write_atomic`); a second signal while that cleanup
    runs, or while the ``symllm`` process exits, is ignored.

    >>> main(["derive", "--component", "rmsnorm", "--format", "latex", "--seq", "0"])
    2
    """
    _Signals.first = None
    try:
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    except (ValueError, OSError):  # not the main thread: leave signals alone
        previous = None
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        given = sys.argv[1:] if argv is None else argv
        named = given[0] if given and given[0] in EXAMPLES else None  # a subcommand: only its parser
        args = build_parser(named).parse_args(given)
        if getattr(args, "output", None) is not None:  # every -o: one rule, before anything is computed
            check_output(args.output)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code = args.func(args)
        sys.stdout.flush()  # a full device fails here, not in the interpreter's flush at exit
        if _Signals.first is not None:  # raised where it could not be passed on (_unraisable): reported now
            raise KeyboardInterrupt() if _Signals.first == signal.SIGINT else _Terminated()
        return code
    except SymllmError as e:
        return _fail(f"error: {_fit(str(e), WIDTH - len('symllm: error: '))}")
    except BrokenPipeError:  # `symllm ... | head`: the reader has all it wanted
        _silence_stdout()
        return 0
    except OSError as e:  # only stdout is written without write_atomic (which raises SymllmError)
        _silence_stdout()
        return _fail(f"error: output: cannot write to stdout: {e.strerror or e}")
    except RecursionError:
        return _fail("error: input: nested too deeply to process")
    except MemoryError:  # numpy's ArrayMemoryError too: what was asked for needs more memory than there is
        return _fail("error: out of memory (ask for less at once)")
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except _Terminated:
        return _fail("terminated", 143)
    except Exception:
        if _Signals.first is None:
            raise
        # the signal surfaced as another error: numpy's C import turns the KeyboardInterrupt raised inside it
        # into "ImportError: PyCapsule_Import could not import module ..."; it is still the signal
        return _fail("interrupted", 130) if _Signals.first == signal.SIGINT else _fail("terminated", 143)
    finally:
        sys.unraisablehook = hook
        if previous is not None and _Signals.first is not None and argv is None and _is_program():
            for sig in previous:  # exiting because of a signal: another one must not kill the exit
                signal.signal(sig, signal.SIG_IGN)
        elif previous is not None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
