"""symllm's public face, defined here once: every name ``symllm`` offers (:data:`FACE`, which is
``symllm.__all__`` and ``symllm.api.__all__``), the module each lives in, and the modules offered as
attributes (:data:`MODULES`), and the modules whose own ``__all__`` is public too (:data:`DOCUMENTED`).
Nothing is defined here and nothing is imported until a name is used
(``import symllm`` loads neither SymPy nor numpy): SymPy comes with the formulas, jinja2 with
derive/report, numpy with a sweep or an array. Each name is one meaning (``symllm.arch.algebra.substitute``
replaces symbols in an expression; ``sympy_value`` is a number).

>>> import symllm
>>> symllm.api.params("llama3.1-8b")["total"] == symllm.params("llama3.1-8b")["total"] == 8030261248
True
>>> symllm.hidden_dim("llama3.1-8b")
14336
"""
from symllm._lazy import attributes

#: public name -> (module below symllm, attribute): the whole face, each loaded on first use
FACE = {
    # the headline: counts, workloads, derivations and reports, sweeps, configs
    "params": ("arch.resolved", "params"), "workload": ("costs.phases", "workload"),
    "derive": ("present.derivation", "derive"), "report": ("present.reports", "report"),
    "Sweep": ("studies.sweeps", "Sweep"), "spec": ("arch.resolved", "spec"), "load": ("arch.catalogue", "load"),
    "resolve": ("arch.catalogue", "resolve"),
    "Workload": ("costs.workloads", "Workload"), "ModelConfig": ("arch.config", "ModelConfig"),
    "SymllmError": ("errors", "SymllmError"),
    # configs and specs resolved, their symbol values and parameter counts by kind
    **{name: ("arch.resolved", name) for name in ("hidden_dim", "model_for", "resolved_config",
                                                   "by_kind")},
    "values": ("costs.numbered", "values"),
    **{name: ("arch.readers", name) for name in ("from_hf", "from_meta")},
    "preset_names": ("arch.catalogue", "preset_names"),
    # the components by their short names
    **{name: ("arch.components", name) for name in (
        "Component", "attention", "block", "component", "embedding", "feed_forward", "linear", "lm_head",
        "meta_hidden_dim", "model", "rmsnorm", "rope", "swiglu")},
    # numbers from a closed form
    **{name: ("numbers.kernels", name) for name in ("compile_expr", "evaluate")},
    "sympy_value": ("numbers.exact", "sympy_value"),
    # decisions: symllm.plan(...) is symllm plan (docs/plan.md)
    **{name: ("studies.plans", name) for name in ("plan", "max_batch", "max_context", "fewest_gpus")},
}

#: the modules ``symllm`` offers as attributes (name -> module below symllm): the layers and the foundation
#: by their own names, and two headline modules by short ones (``symllm.scaling``; ``symllm.plot.memory(...)``,
#: ``.context``, ``.flops``, ``.roofline``, ``.sweep``)
MODULES = {
    **{name: name for name in ("api", "arch", "costs", "numbers", "studies", "present", "errors", "files",
                               "validate", "cli")},
    "scaling": "costs.scaling", "plot": "present.plots",
}

#: the modules whose ``__all__`` is public beside the face (docs/api.md, "Modules"): what the command line
#: (symllm/cli/) imports besides the face, each name from its module's ``__all__`` (tests/test_architecture.py)
DOCUMENTED = ("errors", "files", "validate", "arch.config", "arch.glossary", "arch.part_options", "costs.workloads",
              "costs.phases", "costs.checkpoints", "costs.headers", "costs.comparison", "costs.formats",
              "costs.accelerators",
              "costs.serving", "costs.traffic",
              "numbers.cache", "studies.quick", "studies.plans", "studies.sweeps", "studies.grids", "studies.tables",
              "present.format",
              "present.derivation", "present.reports", "present.rendered", "present.plots", "reference")

__all__ = list(FACE)

__getattr__, __dir__ = attributes(__name__, FACE, base="symllm")
