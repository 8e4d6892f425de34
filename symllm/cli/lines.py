"""What the command line prints, laid out: the tables and lines of ``count``, ``plan`` and the serving and time
rows (:func:`plan_lines`, :func:`serve_lines`, :func:`time_lines`), fitted to :data:`WIDTH` columns. Nothing is
computed here: each takes the numbers a command was handed.
"""
from __future__ import annotations

import re
from fractions import Fraction

from symllm import validate
from symllm.present.format import figure, grouped, human_bytes, layout_words, sig4


def checkpoint_lines(c: dict) -> str:
    """count's table of a checkpoint's weights on disk (``c``: :func:`symllm.costs.checkpoints.check`'s
    summary) against the formula's, and what differs.

    >>> print(checkpoint_lines({"format": "safetensors", "files": 1, "tensors": 3, "bytes": 2048,
    ...                         "formula_bytes": None, "difference": None}))  # doctest: +NORMALIZE_WHITESPACE
    weights on disk (headers; symllm verify compares them)  bytes  ---...
    """
    files = validate.plural(c["files"], "file")
    rows = [(f"checkpoint ({c['format']}, {files}, {c['tensors']} tensors)", grouped(c["bytes"]),
             human_bytes(c["bytes"]))]
    if c["formula_bytes"] is not None:
        rows.append((f"formula ({c['weight_format']})", grouped(c["formula_bytes"]), human_bytes(c["formula_bytes"])))
    if c.get("not_counted"):
        rows.append((f"outside the language model ({c['not_counted']['tensors']} tensors): not counted",
                     grouped(c["not_counted"]["bytes"]), human_bytes(c["not_counted"]["bytes"])))
    out = aligned_table(rows, ("weights on disk (headers; symllm verify compares them)", "bytes", ""))
    if c["formula_bytes"] is None:
        out += "\n(no formula for this checkpoint's format)"
    if c["difference"] is not None:
        out += "\n" + wrap_text(f"differs from the component tree: {c['difference']}")
    return out


#: the columns terminal output fits (tables, wrapped lines, help, error lines: symllm.validate.WIDTH)
WIDTH = validate.WIDTH


def wrap_text(text: str, indent: str = "  ") -> str:
    """``text`` wrapped to :data:`WIDTH` columns, continuation lines indented.

    >>> print(wrap_text("word " * 30))  # doctest: +NORMALIZE_WHITESPACE
    word word word word word word word word word word word word word word word word word word word word
      word word word word word word word word word word
    """
    import textwrap
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)


def natural_order(name: str) -> tuple:
    """Sort key with numbers compared as numbers: codellama-7b before codellama-13b, llama3 before llama3.1.

    >>> sorted(["codellama-13b", "llama3.1-8b", "codellama-7b", "llama3-8b", "llama3.1-405b"], key=natural_order)
    ['codellama-7b', 'codellama-13b', 'llama3-8b', 'llama3.1-8b', 'llama3.1-405b']
    """
    parts = re.split(r"(\d+(?:\.\d+)*)", name)
    return tuple(tuple(int(x) for x in p.split(".")) if i % 2 else (p,) for i, p in enumerate(parts))


def aligned_table(rows, header, text_columns=(), wrap=None) -> str:
    """Rows in aligned columns; column ``wrap`` (text) is wrapped so that lines fit :data:`WIDTH`.

    >>> print(aligned_table([("a", 1), ("bcd", 22)], ("name", "n")))
    name   n
    ----  --
    a      1
    bcd   22
    """
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


def weight_table(fmt: str, total: int, bits) -> str:
    """count's table of a weight format's bytes and bits per weight.

    >>> print(weight_table("q8_0", 1088, 8.5).splitlines()[-1])
    bits per weight                       8.5000
    """
    return aligned_table([(f"weights in {fmt}", grouped(total), human_bytes(total)),
                          ("bits per weight", f"{float(bits):.4f}", "")],
                         ("weight format (symllm.costs.formats)", "bytes", "rounded"))


#: count's labels of the memory entries whose own names would mislead (a LoRA run's peak, a full fine-tuning's)
MEMORY_LABELS = {"training_peak": "training_peak (LoRA)", "full_finetune_peak": "training_peak (full fine-tuning)"}


def _overlap_words(overlap: str) -> str:
    """plan's words for its sp rows' TP overlap (``overlap``: count's, symllm.present.format.overlap_words)."""
    if not overlap:
        return ""
    if overlap.endswith("for this model"):  # nothing of a block overlapped in this model
        return f", {overlap}"
    return f", the sp rows' tensor-parallel collectives overlapped with their GEMMs ({overlap})"


def lora_step_line(counts: str) -> str:
    """The line under count's and plan's LoRA times: what its training step ``counts``
    (:data:`symllm.costs.hardware.LORA_STEP`).

    >>> lora_step_line("full fine-tuning's FLOPs")
    "LoRA: the training step counts full fine-tuning's FLOPs: its times and cost count that work too."
    """
    return wrap_text(f"LoRA: the training step counts {counts}: its times and cost count that work too.")


def plan_lines(p, top: int, overlap: str = "") -> list[str]:
    """``plan``'s table from a :class:`symllm.studies.plans.Plan`: the best ``top`` layouts, the drop
    counts, ``overlap`` the words for what of a block the sp rows' expected steps overlap (count's; "" where
    none is turned on); nothing computed here."""
    w = p.workload
    what = (f"training, global batch {w['global_batch']:,} x {w['seq']:,} tokens" if p.training
            else f"serving, prompt {w['seq']:,} + {w['gen']:,} generated, decode at context {w['context']:,}")
    kv = f", KV cache {w['kv_format']}" if w.get("kv_format") else ""
    capped = f" at {w['power_cap']:g} W" if w.get("power_cap") else ""  # --power-cap
    out = [wrap_text(f"{p.model} on {p.gpus} x {p.gpu}{capped} ({what}; {w['stack']} stack, "
                     f"{w.get('weight_format') or w['dtype']}"
                     f"{kv}{'; ' + layout_words(p.tp_layout) if p.tp_layout else ''}): {p.layouts:,} "
                     f"layouts and {'micro-batch splits' if p.training else 'batches'}, {p.fit:,} fit"
                     + (f", best {min(top, len(p.rows))} of {len(p.rows):,} layout{'s' * (len(p.rows) > 1)} below"
                        if p.rows else ""))]
    moe = any(r["ep"] > 1 for r in p.rows + p.drops)
    load = any("load" in r for r in p.rows[:top])
    if p.rows:
        rows = []
        for i, r in enumerate(p.rows[:top], 1):
            lay = [str(i), r["tp"], r["pp"], r["dp"]] + ([r["ep"]] if moe else [])
            e = r.get("expected")  # the best rows' expected times (ranks.EXPECTED_ROWS); "-" past them
            if p.training:
                rows.append(lay + ["yes" if r["sp"] else "no", r["zero"], "full" if r["recompute"] else "none",
                                   f"{r['batch']} x {r['accum']}", human_bytes(r["peak"]),
                                   sig4(r["step_s"]), sig4(e["training_step_s"]) if e else "-",
                                   figure(r["mfu"], ".1%"), figure(e["mfu"], ".1%") if e else "-"]
                            + ([f"{figure(r['training_s'] / 86400, ',.1f')}",
                                 figure(e["training_s"] / 86400, ",.1f") if e else "-"] if "training_s" in r else []))
            else:
                x = r.get("load")  # under load at the batch (traffic.under_load: count --serve --concurrency's)
                rows.append(lay + [r["batch"], human_bytes(r["peak"]), sig4(r["decode_token_s"] * 1000),
                                   sig4(e["decode_token_s"] * 1000) if e else "-", figure(r["tokens_per_s"], ",.0f"),
                                   figure(e["tokens_per_s"], ",.0f") if e else "-"]
                            + ([sig4(x["ttft_s"] * 1000), _itl_ms(x),
                                figure(x["output_tokens_per_s_all_replicas"], ",.0f")]
                               if x else ["-"] * 3 if load else []))
        head = ["#", "tp", "pp", "dp"] + (["ep"] if moe else [])
        head += (["sp", "zero", "recompute", "micro x acc", "peak/GPU", "step s", "exp. s", "MFU", "exp."]
                 + (["days", "exp."] if "training_s" in p.rows[0] else []) if p.training
                 else ["batch", "peak/GPU", "decode ms", "exp. ms", "tokens/s", "exp."]
                 + (["TTFT ms", "ITL ms", "out/s"] if load else []))
        text = tuple(head.index(k) for k in ("sp", "recompute", "micro x acc")) if p.training else ()
        out += ["", aligned_table(rows, tuple(head), text_columns=text)]
    if p.dropped:
        out += ["", wrap_text("dropped: " + "; ".join(f"{n:,} {why}" for why, n in
                                                      sorted(p.dropped.items(), key=lambda kv: -kv[1])))]
    refused = {}  # the replicas count --serve refuses, by its one reason
    for replica, why in p.unserved.items():
        refused.setdefault(why, []).append(replica)
    held = ", ".join([f"{replica}: {n:,}" for replica, n in p.sequences.items()]
                     + [f"{' and '.join(names)}: refused, {why}" for why, names in refused.items()])
    out.append(wrap_text(f"A layout fits when its per-GPU training peak does (it assumes {p.assumes}); nothing that "
                         "does not fit is timed." if p.training else
                         f"A replica holds the sequences {p.engine}'s KV cache holds at its layout (count --serve"
                         + "".join(f" --{k.replace('_', '-')} {v if isinstance(v, str) else format(v, 'g')}"
                                   for k, v in p.serve.items() if k != "non_torch")
                         + (f" --non-torch-memory {float(p.serve['non_torch'] / 2**30):g}"
                            if "non_torch" in p.serve else "")
                         + f"; {held}): its peak/GPU the weights and the cache of the batch's s + n tokens, the larger "
                         "of a decode step's working set and the engine's profiled prefill, and its non-torch "
                         "memory." + (f" A replica refused fits when its inference peak does (it assumes {p.assumes})."
                                      if p.unserved else "") + " Nothing that does not fit is timed; every decode step "
                         "is one token a sequence at the context above (s + n unless --context)."))
    if p.rows:
        out.append(wrap_text("Rows: each layout once, at its best " + (
            "micro x acc by the ranking (its other splits that fit folded into it)" if p.training else
            "batch, the largest that fits (tokens/s rise with the batch; the smaller ones folded into it)")
            + "; --json gives each row's batches, the least and most that fit."))
    out.append(wrap_text(f"Pipeline splits: {p.splits}."))
    out.append(wrap_text("Times: roofline per GPU plus communication, not overlapped (a bound), and expected (exp.: "
                         f"measured efficiencies, {p.engine} conventions"
                         + _overlap_words(overlap) + ", docs/efficiency.md) for the best rows, ranked by it ("
                         + ("the least expected step" if p.training else "the most expected tokens/s")
                         + "; ties and the rows past them by the bound); "
                         + ("each data-parallel rank runs its global/dp sequences as micro-batches one after "
                        "another (micro x acc), then reduces gradients once; MFU: model FLOPs (attention's causal "
                        "pairs) a second over the GPUs' dense peak of the matmuls' dtype"
                        + (", days: what --tokens take" if "training_s" in (p.rows or [{}])[0] else "") + "."
                        if p.training
                        else "tokens/s = replicas x batch / decode step" + (
                            "; TTFT, ITL and output tokens/s (out/s, all replicas) expected under load at the "
                            "batch, count --serve --concurrency's (symllm.costs.traffic)." if load else "."))))
    if p.training_step and p.rows:  # LoRA's FLOPs, as count says them
        out.append(lora_step_line(p.training_step))
    return out


#: count's options for --serve (symllm.costs.serving.capacity's keywords)
SERVE = ("gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs", "block_size", "non_torch",
         "indexer_kv_dtype")


def _running_limit(x: dict) -> str:
    """The most sequences that run under load, worded by what binds (``running_limit``: traffic.under_load)."""
    n = f"{x['max_running']:,}"
    return {"kv_cache": f"of the KV cache's {n}", "max_num_seqs": f"of the engine's limit of {n} sequences",
            "max_num_batched_tokens": f"of {n}: a step of {x['max_num_batched_tokens']:,} tokens less a prompt"}[
        x["running_limit"]]


def serve_lines(r: dict) -> str:
    """count's serving section from :func:`symllm.costs.serving.capacity` (nothing computed here): the memory
    the KV cache gets by the engine's rule (:mod:`symllm.costs.engine_memory`), row by row as the rule takes it:
    the parts inside the engine's fraction, the fraction, the parts subtracted after it (vLLM: the card x 0.9, less
    weights, activation peak and non-torch memory; TensorRT-LLM: 0.9 of what they leave; SGLang: its static
    fraction of the card less non-torch memory, less the weights), or, for a cache sized by the context, the
    sequences it holds."""
    per = ([f"{k} {r[k]}" for k in ("tp", "pp", "ep") if r[k] > 1]
           + ([layout_words(r["tp_layout"])] if r.get("tp_layout") else []))
    engine = r["engine"] + ("" if r.get("kv_rule", r["engine"]) == r["engine"] else f" ({r['kv_rule']}'s rule)")
    parts = {"weights": ("weights", r["weights"], "per GPU" + (f" ({', '.join(per)})" if per else "")),
             "activation": ("activation peak", r["activation_peak"],
                            f"profile: {r['max_num_batched_tokens']:,} tokens, sampler {r['sampler_rows']:,} rows "
                            "(estimate)" if r.get("sampler_rows")
                            # a cache sized by the context: no profile run (no pool is sized from what one leaves)
                            else f"{'profile run' if 'fraction_name' in r else 'a forward'} of "
                                 f"{r['profile_tokens']:,} tokens (estimate)"),
             "non_torch": ("non-torch memory", r["non_torch"], "the engine's" + (
                 f" (NCCL {human_bytes(r['nccl'])})" if r.get("nccl") else "") + ", or --non-torch-memory")}

    def part(name: str, sign: str = "- ") -> tuple:
        label, value, note = parts[name]
        return (sign + label, human_bytes(value), note)
    rows = [("GPU memory", human_bytes(r["memory"]), f"{r['gpu']}, {engine}")]
    if "fraction_name" in r:  # a pool: f x (memory - the parts inside it) - the parts after it
        share = f"{float(r['gpu_memory_utilization']):g}" + (f" x {float(r['fraction_scale']):g}"
                                                             if "fraction_scale" in r else "")
        rows += [part(p) for p in r["fraction_of"]]
        rows.append((f"x {share}", human_bytes(r["usable"]), f"{r['fraction_name']} (--gpu-memory-utilization)"))
        rows += [part(p) for p in r["fraction_less"]]
        rows += [part(p, "  ") for p in parts if p not in r["fraction_of"] + r["fraction_less"]]
        rows[-1:] = [(rows[-1][0], rows[-1][1], rows[-1][2] + "; outside the fraction, not subtracted")] \
            if len(rows[-1][0]) > 2 and rows[-1][0][:2] == "  " else rows[-1:]
    else:  # a cache sized by the context: what it holds beside the weights and activations
        rows += [part(p, "  ") for p in parts]
    rows += [*([("- state cache", human_bytes(r["state_cache_bytes"]),
                 f"{human_bytes(r['state_bytes_per_sequence'])} a sequence")] if "state_cache_bytes" in r else []),
             ("= KV cache", human_bytes(max(r["kv_cache_bytes"], 0)),
              f"{grouped(r['kv_bytes_per_token'])} bytes a token"
              + (f" ({grouped(r['indexer_bytes_per_token'])} of them indexer keys)" if "indexer_bytes_per_token" in r
                 else "") + (f", {r['layout']}" if "layout" in r else "")
              + (f", {r['indexer']} indexer" if r.get("indexer", "fp8") != "fp8" else "")
              + ("" if "fraction_name" in r else "; sized by the context (--seq + --gen) x the sequences held")),
             ("GPU KV cache size", f"{r['kv_tokens']:,} tokens", f"{r['blocks']:,} blocks of {r['block_size']}"
              if "fraction_name" in r else f"{r['batch']:,} x {r['kv_tokens'] // r['batch']:,} tokens"),
             (f"max concurrency at {r['context']:,}", f"{float(r['max_concurrency']):.2f}x",
              "fits" if r["fits"] else "one request does not fit" if "fraction_name" in r else "does not fit")]
    if "most_sequences" in r:  # a cache sized by the context: the most the card's room holds (count's verdict's)
        rows.append(("most sequences the card holds", f"{r['most_sequences']:,}",
                     f"of {r['context']:,} tokens each, in what the rows above leave (--batch or --concurrency up "
                     "to it)"))
    title = ("serving (vLLM paged KV cache)" if r.get("kv_rule", "vllm") == "vllm"
             else f"serving ({r['engine']}'s KV cache)")
    out = aligned_table(rows, (title, "", ""), text_columns=(1, 2), wrap=2)
    if "load" in r:  # the roofline bound and the expected figures, each of the same schedule (traffic.under_load)
        x, b = r["load"], r["load"]["bound"]

        def ttft(y: dict) -> str:
            return "unbounded" if y["ttft_s"] is None else f"{sig4(y['ttft_s'])} s"

        def running(y: dict) -> str:
            return f"{y['running']:,}" + (" saturated" if y["saturated"] else "")

        at = (f"at {figure(x['request_rate'], ',.3g')} requests/s" if "request_rate" in x
              else f"concurrency {x['concurrency']:,}" + (f", {x['queued']:,} queued" if x["queued"] else ""))
        rows = [("running", running(b), running(x), at),
                ("time to first token", ttft(b), ttft(x),
                 f"prompt {x['seq']:,} tokens" + ("; the queue grows" if x["ttft_s"] is None else "")),
                ("inter-token latency", _itl_ms(b, " ms"), _itl_ms(x, " ms"),
                 validate.plural(x['gen'], "token") + " generated"),
                ("output tokens/s", figure(b["output_tokens_per_s"], ",.0f"), figure(x["output_tokens_per_s"], ",.0f"),
                 f"{figure(x['requests_per_s'], ',.3g')} requests/s expected"),
                ("saturates at", f"{b['saturation_concurrency']:,}", f"{x['saturation_concurrency']:,}",
                 _running_limit(x))]
        out += "\n\n" + aligned_table(rows, ("under load", "bound", f"expected, {x['engine']}", ""), text_columns=(3,))
        out += "\n" + wrap_text("bound: the same schedule, each step at its roofline time (no efficiencies, no fixed "
                                "costs); expected: measured efficiencies (docs/efficiency.md).")
    return out


def _itl_ms(y: dict, unit: str = "") -> str:
    """An inter-token latency under load in ms (``y["itl_s"]``), or what one output token has in its place
    (:data:`symllm.costs.traffic.NO_INTER_TOKEN`)."""
    from symllm.costs.traffic import NO_INTER_TOKEN
    return NO_INTER_TOKEN if y["itl_s"] is None else f"{sig4(y['itl_s'] * 1000)}{unit}"


def time_lines(t: dict, w: dict, tp_layout: str | None = None, training_tp_layout: str | None = None,
               serving: dict | None = None) -> list[str]:
    """count's fit and time section from ``workload()["time"]`` (``t``) and its ``workload`` (``w``): the
    per-GPU verdicts, each time as its roofline bound and as expected (:mod:`symllm.costs.efficiency`), and the
    tensor-parallel layouts they are in where the workload names them (``tp_layout``, the training step's
    ``training_tp_layout``); with --serve (``serving``: :func:`symllm.costs.serving.capacity`) the inference
    peak's verdict points at the engine's own figure, another answer; nothing computed here."""
    per = f"per GPU of {t['gpus']}" if t["gpus"] > 1 else "one GPU"
    e = t["expected"]
    unfit = ("does not fit", "", "")  # nothing is timed that does not fit (symllm.costs.hardware.blank_unfit)
    serves_only = "training_fits" not in t  # an engine's own expert-parallel layout: no training row (count's note)
    if serves_only:
        pass
    elif t["training_fits"] or t["training_max_batch"]:
        training = f"up to batch {t['training_max_batch']:,}, seq {t['training_max_seq']:,}"
    else:  # not one micro-batch of this seq: say what does fit, if anything
        training = (f"batch 1 fits up to seq {t['training_max_seq']:,}" if t["training_max_seq"]
                    else "not even batch 1, seq 1")
    engine = ""
    if serving:  # the engine's own answer (count --serve's section below), not this peak's
        from symllm.costs.serving import most_sequences  # every door's one answer
        held = most_sequences(serving)
        engine = f"; {serving['engine']}'s KV cache holds {held:,} (serving, below)"
    rows = [("inference peak", human_bytes(t["inference_peak"]), "",
             f"{'fits' if t['fits'] else 'does not fit'} " + (
                 f"(up to batch {t['max_batch']:,})" if t["max_batch"] else "(not even batch 1)")
             + (" with no engine overhead" + engine if serving else "")),
            ("largest context", f"{t['max_context']:,} tokens", "", f"seq + gen at batch {w['batch']:,}" + (
                f"; past the {t['window']:,} positions trained" if t["max_context_past_window"] else ""))]
    if not serves_only:
        rows.append(("training peak (LoRA)" if w.get("lora_rank") else "training peak",
                     human_bytes(t["training_peak"]), "",
                     f"{'fits' if t['training_fits'] else 'does not fit'} ({training})"))
    if t["fits"]:
        rows += [("prefill", f"{sig4(t['prefill_s'])} s", f"{sig4(e['prefill_s'])} s", f"{t['prefill_bound']}-bound"),
                 ("decode step", f"{sig4(t['decode_token_s'])} s", f"{sig4(e['decode_token_s'])} s",
                  f"{t['decode_token_bound']}-bound"),
                 ("decode tokens/s", figure(t['tokens_per_s'], ",.1f"), figure(e['tokens_per_s'], ",.1f"),
                  f"batch {w['batch']} x {validate.plural(w['dp'], 'replica')}")]
    else:
        rows += [("prefill", *unfit), ("decode step", *unfit), ("decode tokens/s", *unfit)]
    if serves_only:
        pass
    elif t["training_fits"]:
        rows += [("training step", f"{sig4(t['training_step_s'])} s", f"{sig4(e['training_step_s'])} s",
                  f"MFU {figure(t['mfu'], '.1%')} bound, {figure(e['mfu'], '.1%')} expected"
                  + (f", HFU {figure(e['hfu'], '.1%')} expected," if e["hfu"] != e["mfu"] else "")
                  + f" of {t['gpus']} x {t['peak_flops'] / 10 ** 12:,g} TFLOP/s dense {t['peak_dtype']}"),
                 ("training tokens/s", figure(t['training_tokens_per_s'], ",.0f"),
                  figure(e['training_tokens_per_s_per_gpu'] * t['gpus'], ",.0f"),
                  f"{figure(e['training_tokens_per_s_per_gpu'], ',.0f')} expected per GPU")]
        if "training_s" in t:
            rows.append((f"{figure(w['tokens'], ',')} tokens", f"{figure(t['training_s'] / 86400, ',.2f')} days",
                         f"{figure(e['training_s'] / 86400, ',.2f')} days",
                         f"{figure(e['gpu_hours'], ',.0f')} GPU-hours expected"))
            if "cost" in t:
                rows.append(("cost", figure(t["cost"], ",.2f"), figure(e["cost"], ",.2f"),
                             f"at {w['price']:g} a GPU-hour"))
    else:
        rows += [("training step", *unfit), ("training tokens/s", *unfit)]
    capped = f" at {w['power_cap']:g} W" if w.get("power_cap") else ""  # --power-cap: the expected times' limit
    out = [aligned_table(rows, (f"on {t['gpu']}{capped} ({per})", "bound", "expected", ""), text_columns=(3,), wrap=3)]
    a = t["assumes"]
    trained = "" if serves_only else f"training peak: {a['training_fits']}; "
    out.append(wrap_text(f"Verdicts assume: inference peak: {a['fits']}; {trained}"
                         f"largest context: {a['max_context']}."))
    if "training_step" in a and not serves_only and t["training_fits"]:  # LoRA's FLOPs: not modelled yet
        out.append(lora_step_line(a["training_step"]))
    first = t["compute_bound_batch"]
    links = "; ".join(f"{k} over {v['topology']} ({v['bandwidth'] / 10 ** 9:g} GB/s one way)"
                      for k, v in t["links"].items())
    laid = f", times in {layout_words(tp_layout, training_tp_layout)}" if tp_layout else ""
    out.append(wrap_text(f"{t['title']}: {t['peak_flops'] / 10 ** 12:,g} TFLOP/s dense {t['peak_dtype']}, "
                     f"{t['bandwidth'] / 10 ** 9:,g} GB/s, ridge {t['ridge']:.1f} FLOP/byte, "
                     f"{human_bytes(t['capacity'])}"
                     + (f"; {links}" if links else "")
                     + ("" if t["gpus"] > 1 else "; a decode step " + (f"is compute-bound from batch {first}" if first
                                                                     else "is memory-bound at any batch"))
                     + f". bound: roofline plus communication; expected: measured efficiencies, {e['engine']} "
                     f"(training {e['training_engine']}) conventions{laid} (docs/efficiency.md)."))
    return out


def fit_line(message: str, room: int) -> str:
    """``message`` on one line of at most ``room`` columns: the messages are written to fit (a list whole or
    pointed to by :func:`symllm.validate.listed`, a path cut by :func:`~symllm.validate.shown_path`); one
    that does not (an odd value echoed back) is cut after its last whole word to "..." rather than run past
    the terminal's 100 columns.

    >>> fit_line("model: unknown preset 'abcdefgh'", 30)
    'model: unknown preset...'
    """
    message = " ".join(message.split())
    if len(message) <= room:
        return message
    cut = message.rfind(" ", 0, room - 2)  # the last whole word that leaves room for "..."
    return (message[:cut] if cut > room // 2 else message[:room - 3]) + "..."
