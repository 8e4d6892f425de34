"""The subcommands: each ``cmd_NAME(args)`` reads its parsed options, asks the public API (or a module
docs/api.md documents) and prints the answer through :mod:`symllm.cli.lines`. Bad input raises
:class:`~symllm.errors.SymllmError`, which :func:`symllm.cli.main` prints as one line.
"""
from __future__ import annotations

import os
import sys
import contextlib
import io
import warnings
from fractions import Fraction

from symllm.arch import config as cfgmod
from symllm.errors import OptionWarning, SymllmError
from symllm.files import json_text, write_atomic
from symllm import validate
from symllm.present.format import grouped, grouped_bytes, human, human_bytes, layout_words, overlap_words
from symllm.costs.workloads import Workload, options as workload_options
from symllm.cli.ignored import (HARDWARE, TIME_ONLY, TIMED_HARDWARE, TIMED_TRAINING, not_applying, warn_ignored,
                                 warn_untimed)
from symllm.cli import nofit
from symllm.cli.lines import (MEMORY_LABELS, SERVE, WIDTH, aligned_table, checkpoint_lines, natural_order, plan_lines,
                              serve_lines, time_lines, weight_table, wrap_text)

#: a mixture's routed experts under tensor parallelism (Workload.expert_tp) as count's per-GPU title says it
EXPERT_WORDS = {"split": "split", "whole": "whole", "tp_x_dp": "split over tp x dp"}


def _load(args):
    folder = args.model if os.path.isdir(args.model) else None
    if str(args.model).endswith(".gguf") or folder is not None and not any(
            os.path.lexists(os.path.join(folder, n)) for n in ("config.json", "params.json")) and any(
            n.endswith(".gguf") for n in os.listdir(folder)):  # a GGUF file holds its own config (costs.checkpoints)
        from symllm.costs import checkpoints, headers
        config = checkpoints.config_of(headers.read(args.model))
        return config.replace(vocab_size=args.vocab_size) if args.vocab_size is not None else config
    return cfgmod.load(args.model, vocab_size=args.vocab_size)  # what api.resolve does with a name or a path


def _checkpoint(args) -> dict | None:
    """A checkpoint's actual bytes beside the formula's, when the model argument holds weights (a folder,
    a Hub id in the local cache, a .safetensors or .gguf file): symllm.costs.checkpoints, headers only."""
    from symllm.costs import checkpoints, headers
    if not headers.has_weights(args.model):
        return None
    c = checkpoints.check(args.model)
    return {k: c[k] for k in ("format", "files", "tensors", "bytes", "weight_format", "formula_bytes", "difference",
                              "not_counted")}


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


def cmd_compare(args) -> int:
    """count of several models (or one with --format): one table, a column per model."""
    from symllm.costs import comparison
    from symllm.present.format import side_by_side
    given = _given(args)
    # what its rows (comparison.ROWS) do not show: the serving capacity and load of --serve, a token budget's cost
    unshown = [k for k in ("serve", "concurrency", "request_rate", *SERVE, "tokens", "price")
               if getattr(args, k, None) not in (None, False)]
    warn_ignored(["--" + ("non-torch-memory" if k == "non_torch" else k.replace("_", "-")) for k in unshown],
                 "to a comparison", "count of one model, without --format, shows them")
    out = comparison.compare(args.model, vocab_size=args.vocab_size, **given)
    if args.json:
        with _any_int_digits():
            print(json_text(out))
        return 0
    names = list(out["models"])
    with _any_int_digits():
        print(side_by_side(comparison.ROWS, names, out["models"], args.format or "text", WIDTH))
    return 0


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



def _stated_kv(config, given: dict) -> str:
    """The line saying which KV cache dtype a config.json's ``quantization_config`` states, and whether
    ``--kv-dtype`` or ``--kv-format`` overrides it (symllm.arch.quantization.kv_dtype)."""
    over = given.get("kv_format") or given.get("kv_dtype")
    if over is not None and over != config.kv_dtype:
        return f"KV cache: --kv-{'format' if given.get('kv_format') else 'dtype'} {over} overrides the config's " \
               f"{config.kv_dtype} ({config.kv_dtype_source})"
    return f"KV cache in {config.kv_dtype}, read from the config's {config.kv_dtype_source}; --kv-dtype overrides it"

def cmd_count(args) -> int:
    if len(args.model) > 1 or args.format is not None:
        return cmd_compare(args)
    args.model = args.model[0]
    config = _load(args)
    given = _given(args)
    warn_untimed(given, bool({"gpu", "gpu_memory"} & set(given)))
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


def _serve_options(args) -> dict:
    """The serving options given (cli.lines.SERVE: count --serve's and plan's), as serving.capacity takes them:
    ``--non-torch-memory`` in GiB as bytes."""
    serve = {k: getattr(args, k) for k in SERVE if getattr(args, k) is not None}
    if "non_torch" in serve:  # GiB: nan and inf have no Fraction, and below 0 the bytes' refusal read "above -1"
        gib = serve["non_torch"]
        if not 0 <= gib < float("inf"):
            raise SymllmError(f"non_torch_memory: expected GiB, 0 or more, got {gib:g}")
        serve["non_torch"] = Fraction(str(gib)) * 2**30
    return serve


def _own_working_set(serving: dict, given: int, held: int) -> str:
    """What ``--max-num-batched-tokens`` does under an engine that holds its own working set (``held`` tokens, the
    capacity's ``profile_tokens``): a micro-batch engine's step of that many tokens (llama.cpp's ``n_batch``: under
    load, and the most its micro-batch takes: the capacity's ``ubatch``), else nothing."""
    engine = serving["engine"]
    if "ubatch" in serving:  # a micro-batch of n_ubatch = min(n_ctx, n_batch, -ub) tokens
        return f"--max-num-batched-tokens {given:,} is {engine}'s n_batch: micro-batches of {held:,}"
    return f"--max-num-batched-tokens ignored: {engine} holds its own working set ({held:,} tokens)"


def _count(args, config, given: dict, ckpt: dict | None) -> int:
    """``count`` of one model (``config``, the workload options ``given``, a checkpoint's bytes ``ckpt``),
    printed."""
    serve = _serve_options(args)
    if serve and not args.serve:
        raise SymllmError(f"{next(iter(serve))}: applies to --serve (the --engine's KV cache) only")
    if not args.serve and (args.concurrency is not None or args.request_rate is not None):
        load = "concurrency" if args.concurrency is not None else "request_rate"
        raise SymllmError(f"{load}: serving under load applies to --serve (got {getattr(args, load):g} without it)")
    if args.serve:  # what serving refuses from the options alone, refused before any workload is computed
        from symllm.costs import serving
        serving.check(config, **given, **serve)
    if given or args.json:  # kernels an earlier process kept for this workload's shape: a new point without SymPy
        from symllm.studies import quick
        work, resolved = quick.workload(config, given)
        counts = quick.params(config)[0]
        if "trainable" in work["params"]:  # LoRA: params.trainable and memory.lora_* (symllm.costs.finetune)
            counts = {**counts, "trainable": work["params"].pop("trainable")}
    else:  # only the parameters: kernels an earlier process compiled, no formula built (start-up)
        from symllm.studies import quick
        work, (counts, d_ff) = {}, quick.params(config)
        resolved = {"hidden_dim": d_ff}
    if args.serve:  # vLLM's paged KV cache (symllm.costs.serving), each point through the kept kernels
        from symllm.studies import quick
        evaluate = quick.evaluator(config)
        work["serving"] = serving.capacity(config, **given, **serve, evaluate=evaluate)
        profiled = work["serving"].get("profile_tokens", serve.get("max_num_batched_tokens"))
        if "max_num_batched_tokens" in serve and profiled != serve["max_num_batched_tokens"]:  # the engine's rule
            warnings.warn(_own_working_set(work["serving"], serve["max_num_batched_tokens"], profiled),
                          OptionWarning)
        if args.concurrency is not None or args.request_rate is not None:  # under load (symllm.costs.traffic)
            from symllm.costs import traffic
            held = work["serving"].get("most_sequences")  # a cache sized by the context: the engine under load is
            if held:  # started for the sequences it runs (traffic's docstring), its table so
                work["serving"] = serving.capacity(config, **{**given, "batch": min(args.concurrency or held, held)},
                                                   **serve, evaluate=evaluate)
            work["serving"]["load"] = traffic.under_load(config, concurrency=args.concurrency,
                                                      request_rate=args.request_rate, **given, **serve,
                                                      evaluate=evaluate)
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
    print(wrap_text(f"{config.name}: {config.attention_kind}, V={config.vocab_size}, d={config.dim}, "
                    f"L={config.n_layers}, n_h={config.n_heads}, n_kv={config.n_kv_heads}, d_h={config.head_dim}, "
                    f"d_ff={resolved['hidden_dim']} ({config.hidden_rule}), "
                    f"{'tied' if config.tie_embeddings else 'untied'} embeddings"))
    from symllm.arch.part_options import described  # what each part option adds to LLaMA's block, declared once
    variants = [*described(config), *(text for on, text in ((config.note, config.note),
                                                            (config.weight_format, _stated_format(config, given)),
                                                            (config.kv_dtype, _stated_kv(config, given)))
                                      if on)]
    if variants:
        print(wrap_text(f"({'; '.join(variants)})"))
    if config.n_experts is None and len(config.groups) == 1:
        print(f"(block/* rows are summed over all {config.n_layers} blocks; one block has "
              f"{grouped(counts['block'])} parameters)\n")
    else:
        print("(*block/* rows are summed over every block of that kind)\n")
    print(aligned_table(rows, ("component", "parameters", "rounded")))
    if config.weight_format is not None and not given:  # a quantized config.json: its weights' bytes too
        from symllm.costs import formats
        f = formats.weight_bytes(config, config.weight_format)
        print("\n" + weight_table(f["format"], f["total"], f["bits_per_weight"]))
    if ckpt:
        print("\n" + checkpoint_lines(ckpt))
    if given:
        w = work["workload"]
        print("\n" + wrap_text(f"workload: b={w['batch']}, s={w['seq']}, n={w['gen']}, t={w['context']}; weights "
                               f"{w['weight_format'] or w['dtype']}, KV cache {w['kv_format'] or w['kv_dtype']}, "
                               f"activations {w['act_dtype']}; {w['attention']} "
                               f"attention; ZeRO {w['zero_stage']} over {validate.plural(w['dp'], 'rank')}"
                               f"{'; full recomputation' if w['recompute'] == 'full' else ''}"
                               f"{'; op checkpointing (torchtitan)' if w['recompute'] == 'op' else ''}") + "\n")
        labels = {"elementwise": "elementwise (prefill)"}
        if w.get("micro_batches", 1) > 1:  # the times' step runs them all; the FLOPs row is one (docs/json.md)
            labels["training_step"] = f"training_step (1 of {w['micro_batches']} micro-batches)"
        rows = [(labels.get(k, k), grouped(v), human(v, flops=True)) for k, v in work["flops"].items()]
        print(aligned_table(rows, ("FLOPs (matmuls)", "FLOPs", "rounded")) + "\n")
        rows = [(MEMORY_LABELS.get(k, k) if "full_finetune_peak" in work["memory"] else k, grouped(v),
                 human_bytes(v)) for k, v in work["memory"].items()]
        print(aligned_table(rows, ("memory", "bytes", "rounded")))
        if "weight_format" in work:
            f = work["weight_format"]
            print("\n" + weight_table(f["format"], f["bytes"], f["bits_per_weight"]))
        if {"tp", "pp", "dp", "ep", "sp"} & set(given):  # a parallel layout (symllm.costs.parallel)
            rows = [("parameters", grouped(work["params"]["per_gpu"]), human(work["params"]["per_gpu"]))]
            # none of the training rows (null) in an engine's own expert-parallel layout: it serves only
            unanswered = work.get("training", {}).get("reason")
            rows += [(k, grouped_bytes(v), human_bytes(v)) for k, v in work["memory_per_gpu"].items() if v is not None]
            rows += [(f"sent: {k}", grouped_bytes(v), human_bytes(v)) for k, v in work["comm"].items() if v is not None]
            moe_tp = w["tp"] > 1 and "ep" in work["comm"]  # a mixture's routed experts under tp: split or whole
            laid, trained = work.get("tp_layout"), work.get("training_tp_layout")
            both = laid and trained not in (None, laid)  # each kind's rows in its own engine's layout: said below
            # the TP overlap it turns on, what of a block it covers in the model (time.expected.tp_overlap)
            overlap = ", " + overlap_words((work.get("time") or {}).get("expected")) if _overlapped(w) else ""
            title = (f"per GPU (tp {w['tp']}, pp {w['pp']}, dp {w['dp']}{', ep ' + str(w['ep']) if w['ep'] > 1 else ''}"
                     f"{', sp' if w['sp'] else ''}{overlap}"
                     f"{'; ' + layout_words(laid) if laid and not both else ''}"
                     f"{'; routed experts ' + EXPERT_WORDS[w['expert_tp']] if moe_tp else ''}"
                     f"{'' if unanswered else '; a training step'})")
            # the title on a line of its own: as the first column's header it widened the table past 100 columns
            print("\n" + wrap_text(title) + "\n" + aligned_table(rows, ("", "", "")).split("\n", 1)[1])
            if unanswered:
                print(unanswered)
            elif both:
                print(wrap_text(f"training_states, activations, training_peak and the bytes sent in "
                            f"{layout_words(trained)} (the training engine's); the other rows in {layout_words(laid)} "
                            "(the inference engine's)"))
        if "time" in work:  # --gpu: fit and roofline time per GPU of the layout (symllm.costs.hardware)
            print("\n" + "\n".join(time_lines(work["time"], w, work.get("tp_layout"), work.get("training_tp_layout"),
                                                          work.get("serving"))))
        if "serving" in work:
            print("\n" + serve_lines(work["serving"]))
    return 0


#: count's memory rows under LoRA: the training peak is LoRA's, full fine-tuning's a line of its own


def _overlapped(w: dict) -> bool:
    """Whether a count's workload ``w`` overlaps its tensor-parallel collectives with GEMMs (Workload.tp_overlapped),
    as its layout line says.

    >>> _overlapped({"tp": 8, "sp": True, "engine": "torchtitan", "tp_overlap": True}), _overlapped({"tp": 8,
    ...             "sp": False, "engine": "torchtitan", "tp_overlap": True})
    (True, False)
    """
    return Workload(**{k: w.get(k) for k in ("tp", "sp", "engine", "tp_overlap")}).tp_overlapped


#: the workload options ``plan`` enumerates (or takes from --gpus) rather than reads
PLAN_ENUMERATES = ("batch", "tp", "pp", "dp", "ep", "sp", "zero_stage", "recompute", "gpu")


def cmd_plan(args) -> int:
    from symllm.costs import accelerators
    from symllm.studies import plans

    config = _load(args)
    count, gpu = accelerators.parse_gpus(args.gpus)
    given = _given(args, [n for n in Workload.names() if n not in PLAN_ENUMERATES])
    if args.top is not None and args.top < 1:
        raise SymllmError(f"top: expected a positive integer, got {args.top}")
    warn_untimed(given, args.train, "--train")  # serving plans time no token budget
    result = plans.plan(config, count, gpu, training=args.train, global_batch=args.global_batch,
                        concurrency=args.concurrency, serve=_serve_options(args), **given)
    if args.json:
        with _any_int_digits():  # exact numbers of any length
            print(json_text(result.to_dict(args.top)))
        return 0
    # the training engine's TP overlap, as a layout under --sp runs it (plan enumerates tp and sp), in the words
    # count uses for what of a block it covers in this model (a timed sp row's time.expected.tp_overlap)
    overlap = ""
    if result.training and any(r.get("sp") and "expected" in r for r in result.rows) and _overlapped(
            {**result.workload, "tp": 2, "sp": True}):
        overlap = overlap_words({"tp_overlap": result.tp_overlap})
    for line in plan_lines(result, args.top or 10, overlap):
        print(line)
    if not result.rows:  # nothing fits: how many of the card would (serving: or in what weight format)
        print(wrap_text(_fewest_words(config, count, gpu, given) if result.training
                        else nofit.serving_words(result, config, given, _serve_options(args))))
    if config.weight_format is not None:  # a quantized config.json's format (symllm.arch.quantization)
        print(wrap_text(f"({_stated_format(config, given)})"))
    if config.kv_dtype is not None:  # its KV cache (kv_cache_scheme)
        print(wrap_text(f"({_stated_kv(config, given)})"))
    return 0


def _fewest_words(config, count: int, gpu: str, given: dict) -> str:
    """The line under a training plan none of whose layouts fits: the fewest of the card whose training peak fits
    under ZeRO 3 and full recomputation (symllm.studies.plans.fewest_gpus over tp, pp and dp), or that none does."""
    from symllm.studies import plans
    least = plans.fewest_gpus(config, gpu=gpu, ranks=("tp", "pp", "dp"), zero_stage=3, recompute=True, **given)
    if least is None:
        return f"No layout of up to 65,536 x {gpu} fits either (ZeRO 3, full recomputation)."
    return (f"No layout of {count:,} fits; the fewest {gpu} whose training peak fits: {least['gpus']:,} (tp "
            f"{least['tp']}, pp {least['pp']}, dp {least['dp']}, ZeRO 3, full recomputation; "
            "symllm.studies.plans.fewest_gpus).")


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
    warn_ignored(not_applying(args.quantity, _workload(args)), f"to --quantity {args.quantity}")
    return 0


def cmd_report(args) -> int:
    from symllm.present import rendered  # a report rendered before is read back: no formula built, no jinja2 (start-up)
    given = _workload(args)
    warn_untimed(given, bool({"gpu", "gpu_memory"} & set(given)))
    _emit(rendered.report(args.model, fmt=args.format, standalone=args.standalone, notation=args.notation,
                          vocab_size=args.vocab_size, **_render_opts(args), **given), args)
    return 0


def cmd_presets(args) -> int:
    from symllm.studies import quick  # kernels an earlier process compiled: no formula built (start-up)
    rows, data = [], []
    for name in sorted(cfgmod.preset_names(), key=natural_order):
        counts = quick.params(cfgmod.load(name))[0]
        info = cfgmod.preset_info(name)
        rows.append((name, grouped(counts["total"]), human(counts["total"]), info["description"]))
        data.append({"name": name, "params": counts["total"], "active": counts["active"],
                     "description": info["description"], "source": info.get("source"),
                     "hub": cfgmod.preset_hub(name)})
    if args.json:  # docs/json.md, symllm/output.schema.json ($defs/presets)
        print(json_text(data))
        return 0
    print(aligned_table(rows, ("preset", "parameters", "rounded", "description"), text_columns=(3,), wrap=3))
    return 0


def cmd_verify(args) -> int:
    from symllm.costs import checkpoints, headers
    if headers.has_weights(args.model):  # a checkpoint: its headers against the component tree
        c = checkpoints.check(args.model)
        if args.json:  # docs/json.md, symllm/output.schema.json ($defs/verify)
            keys = ("format", "files", "tensors", "bytes", "weight_format", "formula_bytes", "difference",
                    "not_counted")
            print(json_text({"model": c["config"].name, "agrees": not c["difference"],
                             "checkpoint": {k: c[k] for k in keys}}))
            return 1 if c["difference"] else 0
        where = (f"{c['path']}: {c['tensors']:,} tensors in {validate.plural(c['files'], c['format'] + ' file')}, "
                 f"{grouped(c['bytes'])} bytes")
        if c["formula_bytes"] is not None:
            where += f" (formula for {c['weight_format']}: {grouped(c['formula_bytes'])})"
        print(wrap_text(where))
        if c["not_counted"]:
            print(wrap_text(f"{c['not_counted']['tensors']:,} tensors ({grouped(c['not_counted']['bytes'])} bytes) are "
                            "outside the language model transformers builds (vision encoder, projector, multi-token "
                            "prediction layers): not counted"))
        print(wrap_text(f"{c['config'].name}: " + (c["difference"] if c["difference"] else
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
    print(aligned_table(rows, ("component", "symllm", "torch numel", "")))
    differ = validate.plural(bad, "component differs", "components differ")
    print(f"\n{config.name}: {'all components agree' if not bad else differ}")
    return 1 if bad else 0


def _progress_bar(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)


def cmd_sweep(args) -> int:
    from symllm.studies import grids, sweeps as sw, tables
    grid, workload = {}, _given(args, tuple(k for k in Workload.names() if k not in grids.WORKLOAD_AXES))
    for name in grids.CONFIG_FIELDS + grids.WORKLOAD_AXES:
        text = getattr(args, name)
        if text is None:
            continue
        suffixes = workload_options()[name][1].suffixes if name in grids.WORKLOAD_AXES else None
        values = tables.parse_axis(text, name, None if suffixes is None else (  # --seq 2k:8k:2k (validate.token_count)
            lambda part, field: validate.suffixed_count(field, part, suffixes)))
        if name in grids.WORKLOAD_AXES and (values.stop - values.start <= values.step if isinstance(values, range)
                                         else len(values) == 1):  # len() of a range refuses > sys.maxsize
            workload[name] = values[0]
        else:
            grid[name] = values
    if args.table is not None:
        if grid:
            raise SymllmError(f"table: give the fields in the table, not as --{next(iter(grid)).replace('_', '-')}")
        grid, table = None, tables.read_table(args.table, columns=True)
    else:
        table = None
    bases = [b.strip() for b in args.base.split(",")] if args.base else []
    options = dict(quantities=args.quantity.split(","), workload=workload, where=args.where,
                   chunk_size=args.chunk_size)
    named = table is not None and any(k in tables.NAME_COLUMNS for k in table)
    if named and bases:
        raise SymllmError("base: the table names each row's base (its name column); give no --base")
    if len(bases) > 1 or named:  # one table, a base column first (symllm.studies.sweeps.Sweeps)
        sweep = sw.Sweeps(bases, grid, table=table, **options)
    elif bases:
        sweep = sw.Sweep(bases[0], grid, table=table, **options)
    else:
        raise SymllmError("base: give --base MODEL[,MODEL...] or a --table with a base column")
    # roofline time is count's (floats of a max, a search): no column
    warn_ignored(["--" + k.replace("_", "-") for k in HARDWARE + TIME_ONLY if workload.get(k) is not None],
                  "to a sweep", "fit and time: symllm count --gpu")
    progress = _progress_bar if sys.stderr.isatty() and sweep.size > sweep.chunk_size else None
    with _any_int_digits():  # exact numbers of any length (a --dim of 2,200 digits makes FLOPs of 4,400)
        if args.output and args.output != "-":  # -o -: standard output, as without -o
            result = sweep.write(args.output, args.format, progress=progress)
        else:
            sweep.write_to(sys.stdout, args.format or "csv", progress=progress)
            result = sweep.stats
    rows = result.points - result.invalid - result.filtered
    why = "".join(f"\n  {line}" for line in grids.dropped_text(result.reasons).splitlines())
    where = validate.shown_path(args.output, 24).strip("'") if args.output not in (None, "-") else "stdout"
    print(f"symllm: sweep: {result.points:,} points, {result.invalid:,} invalid dropped, "
          f"{result.filtered:,} filtered out, {rows:,} rows -> {where}{why}", file=sys.stderr)
    each = sweep.sweeps if hasattr(sweep, "sweeps") else [sweep]
    configs = [s.base for s in each]
    for s in (s for s in each if s.tp_layout):  # the layouts its per-GPU quantities are in (DeepSeek-V4, MLC's)
        if s.training_tp_layout in (None, s.tp_layout):
            print(f"symllm: sweep: {s.base.name}: per-GPU quantities in {layout_words(s.tp_layout)}", file=sys.stderr)
        else:  # each kind's in its own engine's layout
            for kind, laid in (("inference", s.tp_layout), ("training", s.training_tp_layout)):
                print(f"symllm: sweep: {s.base.name}: {kind} per GPU in {layout_words(laid)}", file=sys.stderr)
    stated = [b for b in configs if b.weight_format]
    for base in stated:  # a quantized config.json's format prices the weights (symllm.arch.quantization)
        print(wrap_text(f"symllm: sweep: {base.name}: {_stated_format(base, workload)}"), file=sys.stderr)
    for base in (b for b in configs if b.kv_dtype):  # and its KV cache (kv_cache_scheme)
        print(wrap_text(f"symllm: sweep: {base.name}: {_stated_kv(base, workload)}"), file=sys.stderr)
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
        # memory, context and flops draw no time, roofline one GPU's prefill and decode: no training step, no network
        drawn = (*TIME_ONLY, *TIMED_HARDWARE) if args.kind != "roofline" else TIMED_TRAINING
        warn_ignored(["--" + k.replace("_", "-") for k in drawn if k in given], f"to plot {args.kind}",
                      "it draws no time" if args.kind != "roofline" else "it draws no training step")
        if args.kind in ("context", "flops"):
            from symllm.studies import tables
            contexts = tables.parse_axis(args.contexts, "contexts") if args.contexts else plots.CONTEXTS
            fig = getattr(plots, args.kind)(models, contexts=contexts, **given)
        else:
            fig = getattr(plots, args.kind)(models[0], **given)
    plots.save(fig, args.output, args.format)
    return 0
