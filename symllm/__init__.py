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

from .api import hidden_dim, model_for, params, resolve, resolved_config, spec, values
from .components import (Component, attention, block, component, embedding, feed_forward,
                         linear, lm_head, meta_hidden_dim, model, rmsnorm, rope, swiglu)
from .config import ModelConfig, from_hf, from_meta, load, preset_names
from .costs import workload
from .errors import SymllmError
from .evaluate import compile_expr, evaluate, substitute
from .spec import Spec
from .workload import Workload
from . import costs  # noqa: F401  (symllm.costs: FLOPs and memory closed forms)

#: loaded on first use: derive/report need jinja2, Sweep needs numpy; ``import symllm`` stays light
_LAZY = {"derive": ("derivation", "derive"), "report": ("derivation", "report"), "Sweep": ("sweep", "Sweep"),
         "derivation": ("derivation", None), "render": ("render", None), "sweep": ("sweep", None),
         "scaling": ("scaling", None)}


def __getattr__(name):
    """``symllm.derive``, ``report``, ``Sweep`` and the modules ``render``, ``derivation``, ``sweep``,
    ``scaling`` on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = importlib.import_module(f".{module}", __name__)
    return mod if attr is None else getattr(mod, attr)


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
