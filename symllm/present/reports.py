"""Reports: a whole model (configuration, parameters by component, FLOPs and memory of one
:class:`~symllm.costs.workloads.Workload`, with their derivations) assembled and evaluated here, laid out by
:mod:`symllm.present.render`. The report's tables come from :func:`symllm.arch.resolved.params` and
:func:`symllm.costs.phases.workload` with its one workload, so a report shows the numbers ``symllm count
--json`` prints; each formula is a :class:`~symllm.present.derivation.Derivation`.

>>> "6,738,415,616" in report("llama2-7b").render("markdown")
True
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import sympy as sp

from symllm.arch import resolved
from symllm.costs import numbered
from symllm.costs import phases as costs
from symllm.costs import accelerators, expert_layout, hardware
from symllm.costs import parallel
from symllm.arch import symbols as S
from symllm.errors import SymllmError
from symllm.validate import choice, plural
from symllm.numbers.kernels import evaluate
from symllm.present.format import REPORT_FORMATS, figure, grouped, layout_words, overlap_words
from symllm.present.notations import notation as notation_of
from symllm.present.printers import Formula, Safe
from symllm.present.render import EXTENSIONS, label, math_delimiters
from symllm.costs.workloads import Workload
from symllm.present.derivation import OPTIONS, Derivation, derive_resolved, templated, number_formula
from symllm.present.forms import workload_numbers

__all__ = ["Report", "report"]


# --------------------------------------------------------------------------- reports

@dataclass(frozen=True)
class Report:
    """A whole-model report: configuration, each component's formula and value, the totals, FLOPs and
    memory of one workload, and the conventions. Render with :meth:`render` (``latex`` fragment or
    standalone, ``markdown``).

    >>> r = report("llama3.1-8b")
    >>> r.total
    8030261248
    >>> "8{,}030{,}261{,}248" in r.render("latex")
    True
    """

    #: the resolved ModelConfig
    config: object
    #: the whole-model parameter derivation (with the config's numbers)
    params: Derivation
    #: notation, symbol -> LaTeX
    names: tuple = ()
    #: the workload of the FLOPs and memory sections
    workload: Workload = field(default_factory=Workload)

    @property
    def spec(self):
        """The config's resolved :class:`~symllm.arch.specs.Spec`."""
        return resolved.spec(self.config)

    @property
    def total(self) -> int:
        """The model's parameter count."""
        return resolved.params(self.spec)["total"]

    def rows(self) -> list[dict]:
        """One row per non-zero leaf of the parameter breakdown, with its formula and value."""
        counts = resolved.params(self.spec)
        return [{"name": name, "formula": Formula(e), "value": counts[name]} for name, e in self.params.terms]

    def context(self, fmt: str = "latex", flavor: str = "github", template_dir=None,
                label_prefix: str | None = None) -> dict:
        """What the report templates are handed."""
        spec, names = self.spec, dict(self.names)
        counts = resolved.params(spec)
        dv = self.params.context(fmt, flavor)
        shown = []  # the derivations the FLOPs, memory and layout sections render (for the glossary)
        costs_part = self._costs(fmt, flavor, template_dir, shown, label_prefix)
        block = derive_resolved("block", "params", None, spec, names, self.workload, OPTIONS)
        config_rows = [
            ("vocabulary size", S.V, spec.vocab_size), ("model width", S.d, spec.dim),
            ("blocks", S.L, spec.n_layers), ("query heads", S.n_h, spec.n_heads),
            ("key/value heads", S.n_kv, spec.n_kv_heads), ("head width", S.d_h, spec.head_dim),
            ("SwiGLU width", S.d_ff, spec.hidden_dim),
        ]
        if spec.shared_hidden_dim is not None:
            config_rows.append(("shared expert width", S.d_se, spec.shared_hidden_dim))
        if spec.hidden_rule != "explicit":
            config_rows.append(("rounding granule", S.m, spec.multiple_of))
        if spec.hidden_rule == "meta":
            config_rows.append(("width multiplier", S.f, spec.ffn_dim_multiplier))
        rule = {"explicit": "stated in the config (never re-rounded)",
                "meta": "Meta's rounding with the multiplier f",
                "meta_plain": "Meta's rounding without a multiplier"}[spec.hidden_rule]
        return {
            "model": spec.name, "kind": spec.attention_kind, "tied": spec.structure.tied,
            "attention_bias": spec.structure.attention_bias, "mlp_bias": spec.structure.mlp_bias,
            "qkv_bias": spec.structure.qkv_bias, "qk_norm": spec.structure.qk_norm,
            "hidden_rule": rule,
            "config": [{"field": f, "symbol": Formula(sym), "code": S.SYMBOLS[sym].code, "value": v}
                       for f, sym, v in config_rows],
            "params": dv, "rows": [{**t, "value": counts[t["name"]]} for t in dv["terms"]],
            "total": counts["total"], "block_value": counts["block"],
            "active": counts["active"] if counts["active"] != counts["total"] else None,
            "experts": spec.n_experts, "experts_per_token": spec.experts_per_token,
            "grouped": len(spec.structure.kinds) > 1,
            # a narrower table where the block's formula is long (OLMo 2's six terms ran into the margin)
            "compact": len(sp.Add.make_args(sp.expand(block.closed))) > 5,
            "block_closed": Formula(block.closed), "block_label": label("N", "block"),
            "block_subst": number_formula(block.closed, block.values),
            "label": re.sub(r"[^A-Za-z0-9.-]", "-", spec.name), "n_layers": spec.n_layers,
            "blocks": Formula(S.L), "width": Formula(S.d), "d_ff": Formula(S.d_ff),
            "derivation": Safe(self.params.render(fmt, template_dir=template_dir, flavor=flavor, glossary=False,
                                                  label_prefix=label_prefix)),
            "math": math_delimiters(flavor), "format": fmt, **costs_part,
            "glossary": self._glossary([self.params, block, *shown]),
        }

    @staticmethod
    def _glossary(derivations) -> list[dict]:
        """The symbols every derivation of the report uses, in symllm's table order, each once with its
        meaning and value (the derivations inside a report print no "where" list of their own)."""
        values, used, meanings = {}, set(), {}
        for dv in derivations:
            used.update(dv.symbols())
            values.update(dv.values or {})
            meanings.update({sym: dv.meaning(sym) for sym in dv.symbols() if sym == S.beta_w and dv.weights})
        return [{"symbol": Formula(sym), "name": sym.name, "code": S.SYMBOLS[sym].code,
                 "meaning": meanings.get(sym, S.SYMBOLS[sym].description), "value": values.get(sym)}
                for sym in S.SYMBOLS if sym in used]

    def _costs(self, fmt, flavor, template_dir, shown: list, label_prefix: str | None = None) -> dict:
        """The FLOPs and memory sections: symllm.costs.phases.workload's numbers and two derivations (each
        derivation rendered is appended to ``shown``; none repeats the glossary or the definitions)."""
        spec, work, names = self.spec, self.workload, dict(self.names)
        numbers = workload_numbers(spec, work)
        fl = derive_resolved("model", "flops", None, spec, names, work, {**OPTIONS, "phase": "prefill"})
        mem = derive_resolved("model", "memory", None, spec, names, work, {**OPTIONS, "memory": "inference"})
        shown += [fl, mem]
        once = {"template_dir": template_dir, "flavor": flavor, "glossary": False, "definitions": False,
                "label_prefix": label_prefix}
        context = "s" if "context" in work.derived else f"t = {grouped(work.context)}"
        flops_titles = {"prefill": "prefill (matmuls)",
                        "decode_token": f"one decode step at context {context} (matmuls)",
                        "generation": "prefill + n decode steps (matmuls)",
                        "training_step": "training step, forward + backward (matmuls)",
                        "elementwise": "prefill, element-wise work"}
        memory_titles = {"weights": "weights", "kv_cache": "KV cache after s + n tokens",
                         "training_states": "training states per rank (mixed-precision Adam)",
                         "activations": "activations saved for backward", "inference_peak": "inference peak",
                         "training_peak": "training peak (one step's highest point)",
                         "full_finetune_peak": "full fine-tuning's training peak",
                         "state_cache": "recurrent and convolution states (Gated DeltaNet)"}
        if work.lora_rank is not None:  # LoRA's training peak (its parts: the LoRA section)
            memory_titles["training_peak"] = "training peak (LoRA)"
        memory = {k: v for k, v in numbers["memory"].items() if not k.startswith("lora_")}
        return {
            "costs": True, "workload": numbers["workload"],
            "flops_rows": [{"name": flops_titles.get(k, k), "value": v} for k, v in numbers["flops"].items()],
            "memory_rows": [{"name": memory_titles.get(k, k), "value": v} for k, v in memory.items()],
            "flops_derivation": Safe(fl.render(fmt, **once)),
            "memory_derivation": Safe(mem.render(fmt, **once)),
            "flops_value": numbers["flops"]["prefill"], "memory_value": memory["weights"] + memory["kv_cache"],
            **self._training(numbers, fmt, flavor, template_dir, shown, label_prefix),
            **self._peaks(fmt, flavor, template_dir, shown, label_prefix),
        }

    def _peaks(self, fmt, flavor, template_dir, shown: list, label_prefix: str | None = None) -> dict:
        """The peak-memory section: the derivations of ``inference_peak`` and ``training_peak`` under the
        workload's stack, and for an HF stack each moment of the training step with its bytes
        (:func:`symllm.costs.stacks.moments`)."""
        from symllm.costs import stacks
        from symllm.costs.workloads import COMPONENT_STACKS

        spec, work, names = self.spec, self.workload, dict(self.names)
        out = []
        for kind, title in (("inference_peak", "Inference peak"), ("training_peak", "Training peak")):
            dv = derive_resolved("model", "memory", None, spec, names, work, {**OPTIONS, "memory": kind})
            shown.append(dv)
            out.append({"title": title, "derivation": Safe(dv.render(fmt, template_dir=template_dir, flavor=flavor,
                                                                     label_prefix=label_prefix,
                                                                     glossary=False, definitions=False))})
        rows = []
        if work.stack not in COMPONENT_STACKS:
            vals = numbered.values(spec, work)
            mdl = costs.model_of(spec, work)
            rows = [{"name": t.component, "value": evaluate(e.subs(dict(mdl.definitions)), vals)}
                    for t, e in stacks.moments(mdl, work.stack, work.recompute == "full", work.zero_stage)]
        return {"peak_derivations": out, "training_moments": rows, "stack": work.stack, "roofline": self._roofline()}

    def _time(self) -> dict | None:
        """count's ``time`` group (:func:`symllm.costs.hardware.roofline`), once per report; None without an
        accelerator."""
        spec, work = self.spec, self.workload
        if accelerators.of(work) is None:
            return None
        if getattr(self, "_time_group", None) is None:
            mdl = costs.model_of(spec, work)
            vals = {**spec.values(), **work.values()}
            group = hardware.roofline(mdl, work, vals, costs.quantities(mdl, work), costs.flops, spec=spec,
                                      window=spec.config.max_positions)
            object.__setattr__(self, "_time_group", group)
        return self._time_group

    def _roofline(self) -> dict | None:
        """With an accelerator: count's ``time`` group as table rows (:func:`symllm.costs.hardware.roofline`),
        its fit verdicts per GPU of the layout included (the parallel section shows the same ones)."""
        t, work = self._time(), self.workload
        if t is None:
            return None
        first = t["compute_bound_batch"]
        per = f" (per GPU of {t['gpus']})" if t["gpus"] > 1 else ""
        e = t["expected"]  # the expected time beside each bound (symllm.costs.efficiency)
        unfit = ("does not fit", "")  # nothing is timed that does not fit (hardware.blank_unfit)
        rows = [("prefill", f"{t['prefill_s']:.4g} s", f"{t['prefill_bound']}-bound; expected {e['prefill_s']:.4g} s"),
                ("one decode step", f"{t['decode_token_s']:.4g} s",
                 f"{t['decode_token_bound']}-bound; expected {e['decode_token_s']:.4g} s ({e['engine']})"),
                ("decode tokens/s", f"{t['tokens_per_s']:,.1f}",
                 f"at batch {work.batch:,} x {plural(work.dp, 'replica')}; expected {e['tokens_per_s']:,.1f}")
                ] if t["fits"] else [("prefill", *unfit), ("one decode step", *unfit), ("decode tokens/s", *unfit)]
        rows += [("inference peak fits" + per, "yes" if t["fits"] else "no", f"up to batch {t['max_batch']:,}"),
                 ("training peak fits" + per, "yes" if t["training_fits"] else "no", f"{work.stack} stack")]
        rows += [("training step", f"{t['training_step_s']:.4g} s",
                  f"MFU {t['mfu']:.1%}; expected {e['training_step_s']:.4g} s, MFU {e['mfu']:.1%} "
                  + (f"and HFU {e['hfu']:.1%} " if e["hfu"] != e["mfu"] else "") + f"({e['training_engine']}"
                  + (", " + overlap_words(e) if work.tp_overlapped else "") + ")"),
                 ("training tokens/s", f"{t['training_tokens_per_s']:,.0f}",
                  f"{plural(t['gpus'], 'GPU')}; expected {e['training_tokens_per_s_per_gpu'] * t['gpus']:,.0f}")
                 ] if t["training_fits"] else [("training step", *unfit), ("training tokens/s", *unfit)]
        if t["training_fits"] and "training_s" in t:
            rows.append((f"{figure(work.tokens, ',')} training tokens",
                         f"{figure(t['training_s'] / 86400, ',.2f')} days",
                         f"{figure(t['gpu_hours'], ',.0f')} GPU-hours"
                         + (f", cost {figure(t['cost'], ',.2f')}" if "cost" in t else "")
                         + f"; expected {figure(e['training_s'] / 86400, ',.2f')} days, "
                         f"{figure(e['gpu_hours'], ',.0f')} GPU-hours"
                         + (f", cost {figure(e['cost'], ',.2f')}" if "cost" in e else "")))
        if t["gpus"] == 1:
            rows.append(("decode compute-bound", f"from batch {first:,}" if first else "never",
                         f"at context {work.context:,}"))
        lora = t["assumes"].get("training_step")  # what a LoRA step counts (hardware.LORA_STEP)
        return {"title": t["title"], "ridge": f"{t['ridge']:.1f}", "peak_dtype": t["peak_dtype"],
                "rows": [{"name": a, "value": b, "note": c} for a, b, c in rows],
                "assumes": {"inference": t["assumes"]["fits"],
                            "training": t["assumes"]["training_fits"] + (f"; a LoRA step counts {lora}"
                                                                         if lora else "")}}

    def _training(self, numbers: dict, fmt, flavor, template_dir, shown: list, label_prefix: str | None = None) -> dict:
        """The parallel-layout section (only for a layout: :func:`symllm.costs.parallel.laid_out`): count's
        ``params.per_gpu``, ``memory_per_gpu`` and ``comm`` with the derivation of the communication, and
        whether a training step fits on ``--gpu``; the LoRA section (only with ``lora_rank``): count's
        ``params.trainable`` and ``memory.lora_*`` (:func:`symllm.costs.finetune.lora`)."""
        spec, work = self.spec, self.workload
        out = {"layout": None, "lora": None}
        if parallel.laid_out(work):
            mem = {k: v for k, v in numbers["memory_per_gpu"].items() if k != "training_peak"}
            step = numbers["memory_per_gpu"]["training_peak"]
            titles = {"weights": "weights (part of the training states)",
                      "training_states": "training states (mixed-precision Adam, ZeRO)",
                      "activations": "activations saved for backward (one micro-batch)",
                      "inference_peak": "inference peak (serving on this layout)",
                      "state_cache": "per-sequence state cache (recurrent, convolution or compressor states)",
                      "kv_cache": "KV cache (this rank's keys and values)"}
            fits = None
            t = self._time()
            if t is not None:  # the accelerator's memory: the time group's verdict (one per question)
                fits = {"gpu": t["title"], "capacity": t["capacity"], "fits": t["training_fits"]}
            comm = derive_resolved("model", "comm", None, spec, dict(self.names), work, OPTIONS)
            shown.append(comm)
            comm_titles = {"tp": "tensor parallel (all-reduce, or reduce-scatter and all-gather)",
                           "pp": "pipeline parallel (point-to-point)",
                           "dp": "data parallel (gradients; ZeRO's all-gathers)",
                           "ep": "expert parallel (all-to-all)"}
            laid = costs.layout_of(spec, work)
            out["layout"] = {
                "tp": work.tp, "pp": work.pp, "dp": work.dp, "ep": work.ep, "sp": work.sp,
                "tp_layout": layout_words(laid, costs.layout_of(spec, work, "training")) if laid else None,
                "zero": work.zero_stage, "gpus": work.tp * work.pp * work.dp,
                "params": numbers["params"]["per_gpu"],
                "rows": [{"name": titles[k], "value": v} for k, v in mem.items()], "step": step, "fits": fits,
                "comm_rows": [{"name": comm_titles.get(k, k), "key": k, "value": v}
                              for k, v in numbers["comm"].items()],
                "comm_total": sum(numbers["comm"].values()),
                "comm_derivation": Safe(comm.render(fmt, template_dir=template_dir, flavor=flavor, glossary=False,
                                                    label_prefix=label_prefix,
                                                    definitions=False)),
            }
        if work.lora_rank is not None:
            from symllm.costs import finetune  # (builds the adapted tree: only for a LoRA report)
            tuned = finetune.lora(spec, work)
            titles = {"lora_base_weights": "frozen base weights" + (" (NF4 linears)" if work.qlora else ""),
                      "lora_adapter_weights": "adapter weights", "lora_adapter_gradients": "adapter gradients",
                      "lora_optimizer_states": "adapter optimizer states (Adam)",
                      "lora_activations": "activations saved for backward", "lora_total": "total"}
            out["lora"] = {"rank": work.lora_rank, "targets": work.lora_targets.replace(",", ", "),
                           "qlora": work.qlora, "trainable": tuned["params"]["trainable"],
                           "rows": [{"name": titles.get(k, k), "value": v} for k, v in tuned["memory"].items()]}
        return out

    def render(self, fmt: str = "latex", *, standalone: bool = False, template_dir=None,
               template: str | None = None, flavor: str = "github", label_prefix: str | None = None) -> str:
        """The report as a LaTeX fragment (``standalone``: a whole document) or GitHub Markdown; each
        derivation's numbered equation carries a ``\\label`` (``label_prefix``: :func:`equation_label`)."""
        choice("format", fmt, REPORT_FORMATS)
        return templated(f"report.{EXTENSIONS[fmt]}.j2", self.context(fmt, flavor, template_dir, label_prefix),
                         self.names, fmt,
                         standalone, f"{self.config.name}: parameters, FLOPs and memory", template, template_dir)

    def __str__(self):
        return self.render("markdown", flavor="jupyter")

    def _repr_latex_(self):
        return None  # a report is a document: notebooks show its Markdown

    def _repr_markdown_(self):
        return self.render("markdown", flavor="jupyter")


def report(config, *, notation=None, vocab_size: int | None = None, **workload) -> Report:
    """The report of a preset name, a config path, a :class:`~symllm.arch.config.ModelConfig` or a
    :class:`~symllm.arch.specs.Spec`; ``workload`` (the :class:`~symllm.costs.workloads.Workload` fields: ``batch``,
    ``seq``, ``gen``, ``context``, ``dtype``, ``kv_dtype``, ``attention``, …) sets what the FLOPs and
    memory sections count. A report shows every phase and memory kind, so derive()'s :data:`OPTIONS`
    (``phase``, ``memory``, …) are not options here.

    >>> report("llama2-7b").total
    6738415616
    >>> "one decode step at context t = 4,096" in report("llama2-7b", context=4096).render("markdown")
    True
    >>> report("llama2-7b", phase="decode")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: workload: a report shows every phase and memory kind; 'phase' is an option of derive
    """
    for key in sorted(workload):
        if key in OPTIONS:
            raise SymllmError(f"workload: a report shows every phase and memory kind; {key!r} is an option of derive")
    work = Workload.of(**workload)
    spec = resolved.spec(config, vocab_size=vocab_size)
    if expert_layout.serves_only(work, bool(spec.n_experts)):  # its training sections: Megatron's forms in a layout
        raise SymllmError(f"ep: {work.ep}; report derives training, not in {work.engine}'s expert-parallel layout "
                          "(use count)" if work.ep > 1 else f"dp: {work.dp}; report derives training, not in "
                          f"{work.engine}'s layout of the experts over --tp x --dp ranks (use count)")
    names = notation_of(notation)
    return Report(config=spec.config, params=derive_resolved("model", "params", None, spec, names, work, OPTIONS),
                  names=tuple(names.items()), workload=work)
