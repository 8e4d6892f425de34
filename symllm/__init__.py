"""symllm: closed-form parameters, FLOPs and memory of LLaMA-family transformers, in SymPy.

The headline functions: :func:`params` (exact counts), :func:`workload` (FLOPs and bytes of a
:class:`Workload`), :func:`derive` and :func:`report` (derivations and reports), :class:`Sweep`
(quantities over grids of configs) and :mod:`symllm.scaling` (scaling-law tools).

>>> import symllm
>>> symllm.params("llama3.1-8b")["total"]
8030261248
>>> symllm.workload("llama2-13b", batch=1, seq=1)["flops"]["prefill"]
25704038400
>>> symllm.attention().total("params")
2*d*d_h*n_h + 2*d*d_h*n_kv
"""
import importlib
import sys
import types

#: public name -> (module, attribute; None for the module itself). Everything loads on first use, so
#: ``import symllm`` (and the ``symllm`` command, which imports its submodules) pays only for what it
#: touches: SymPy with the formulas, jinja2 with derive/report, numpy with a sweep or an array.
_LAZY = {
    **{name: ("api", name) for name in ("hidden_dim", "model_for", "params", "resolve", "resolved_config",
                                        "values")},
    **{name: ("components", name) for name in ("Component", "attention", "block", "component", "embedding",
                                               "feed_forward", "linear", "lm_head", "meta_hidden_dim", "model",
                                               "rmsnorm", "rope", "swiglu")},
    **{name: ("config", name) for name in ("ModelConfig", "from_hf", "from_meta", "load", "preset_names")},
    **{name: ("evaluate", name) for name in ("compile_expr", "substitute")},
    "SymllmError": ("errors", "SymllmError"), "Spec": ("spec", "Spec"),
    "Workload": ("workload", "Workload"),
    "derive": ("derivation", "derive"), "report": ("derivation", "report"), "Sweep": ("sweep", "Sweep"),
    **{name: (name, None) for name in ("api", "components", "config", "costs", "derivation", "finetune", "render",
                                       "scaling", "sweep", "symbols")},
}


def _function(module: str, name: str) -> property:
    def get(self):
        return getattr(importlib.import_module(f".{module}", __name__), name)

    def set_(self, value):  # the import system binding the submodule of that name: the function keeps it
        pass

    return property(get, set_, doc=f"symllm.{module}.{name}")


class _Package(types.ModuleType):
    """symllm's module type: ``symllm.workload``, ``symllm.evaluate`` and ``symllm.spec`` are always the
    functions (:func:`symllm.costs.workload`, :func:`symllm.evaluate.evaluate`, :func:`symllm.api.spec`),
    though importing the submodules of those names (loaded on first use) binds the names to them."""

    workload = _function("costs", "workload")
    evaluate = _function("evaluate", "evaluate")
    spec = _function("api", "spec")


sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    """Every public name on first use (``symllm.params``, ``symllm.Sweep``, ``symllm.scaling``, ...)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = importlib.import_module(f".{module}", __name__)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | {"workload", "evaluate", "spec"})


__version__ = "0.1.0"

__all__ = [
    # the headline functions
    "params", "workload", "derive", "report", "Sweep", "scaling",
    # configs and what they resolve to
    "ModelConfig", "Spec", "Workload", "SymllmError", "load", "from_hf", "from_meta", "preset_names",
    "resolve", "spec", "model_for", "hidden_dim", "resolved_config", "values",
    # the components and evaluation
    "Component", "embedding", "attention", "feed_forward", "swiglu", "rmsnorm", "rope", "lm_head", "block",
    "model", "linear", "component", "meta_hidden_dim", "substitute", "evaluate", "compile_expr",
]
