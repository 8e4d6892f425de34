"""symllm: closed-form parameters, FLOPs and memory of LLaMA-family transformers, in SymPy.

The headline: :func:`params` (exact counts), :func:`workload` (FLOPs, bytes and time of a
:class:`Workload`), :func:`derive` and :func:`report` (derivations and reports), :class:`Sweep`
(quantities over grids of configs), :func:`spec` and :func:`load` (a config resolved) and
:mod:`symllm.scaling` (scaling-law tools). The layers below are subpackages: :mod:`symllm.arch` (symbols,
components, configs, specs), :mod:`symllm.costs` (phases, stacks, parallel layouts, LoRA, hardware,
scaling), :mod:`symllm.numbers` (kernels, cache, sweeps), :mod:`symllm.present` (derivations, rendering).

>>> import symllm
>>> symllm.params("llama3.1-8b")["total"]
8030261248
>>> symllm.workload("llama2-13b", batch=1, seq=1)["flops"]["prefill"]
25704038400
>>> symllm.arch.components.attention().total("params")
2*d*d_h*n_h + 2*d*d_h*n_kv
"""
from symllm._lazy import attributes

__version__ = "0.1.0"

#: the headline surface
__all__ = ["params", "workload", "derive", "report", "Sweep", "spec", "load", "Workload", "ModelConfig",
           "SymllmError"]

#: public name -> (module below symllm, attribute; None for the module itself), each loaded on first use:
#: ``import symllm`` loads nothing, so SymPy comes with the formulas, jinja2 with derive/report, numpy with
#: a sweep or an array
_NAMES = {
    "params": ("api", "params"), "spec": ("api", "spec"), "workload": ("costs.phases", "workload"),
    "derive": ("present.derivation", "derive"), "report": ("present.derivation", "report"),
    "Sweep": ("numbers.sweeps", "Sweep"), "load": ("arch.config", "load"), "Workload": ("costs.workloads", "Workload"),
    "ModelConfig": ("arch.config", "ModelConfig"), "SymllmError": ("errors", "SymllmError"),
    # the layers, and scaling (a headline module) by its short name
    **{name: (name, None) for name in ("api", "arch", "costs", "numbers", "present", "errors", "files", "validate",
                                            "cli")},
    "scaling": ("costs.scaling", None),
    "plot": ("present.plots", None),  # symllm.plot.memory(...), .context, .flops, .roofline, .sweep
    # beyond the headline: configs, specs and the components by their short names
    **{name: ("api", name) for name in ("hidden_dim", "model_for", "resolve", "resolved_config", "values")},
    **{name: ("arch.config", name) for name in ("from_hf", "from_meta", "preset_names")},
    **{name: ("arch.components", name) for name in (
        "Component", "attention", "block", "component", "embedding", "feed_forward", "linear", "lm_head",
        "meta_hidden_dim", "model", "rmsnorm", "rope", "swiglu")},
    **{name: ("numbers.kernels", name) for name in ("compile_expr", "substitute", "evaluate")},
    # decisions: symllm.plan(...) is symllm plan (docs/plan.md)
    **{name: ("numbers.plans", name) for name in ("plan", "max_batch", "max_context", "fewest_gpus")},
}

__getattr__, _dir = attributes(__name__, _NAMES)


def __dir__():
    return sorted(set(_dir()) | {"__version__", "__all__"})
