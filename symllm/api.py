"""The public functions that join a config to the closed forms, gathered for the façade: its spec, its
model, its derived ``hidden_dim``, the symbol values and its exact parameter counts. Nothing is defined
here: each lives in its layer (:mod:`symllm.arch.resolved`, :mod:`symllm.costs.phases`), which the layers
below import directly.

>>> params("llama3.1-8b")["total"]
8030261248
>>> hidden_dim("llama3.1-8b")
14336
"""
from symllm.arch.resolved import (Config, by_kind, hidden_dim, model_for, params, resolve, resolved_config,
                                  spec)
from symllm.costs.phases import values

__all__ = ["resolve", "spec", "model_for", "hidden_dim", "params", "by_kind", "resolved_config", "values", "Config"]
