"""Exact parameter counts at start-up, from kernels an earlier process compiled: what ``symllm count`` runs.

:func:`symllm.api.params` builds the component tree and compiles its breakdown (and Meta's ``d_ff``
rounding) once per process; for one count that is most of the command's time after importing SymPy.
:func:`params` gives the same numbers from the same generated code, kept in
:func:`symllm.evaluate.cache_dir` (with the arguments' field names) and keyed by

* a hash of symllm's own source files (any change to a formula, the spec or the code generator is a
  miss), with the SymPy and Python versions (:mod:`symllm.evaluate`'s key), and
* the config's fields that are not sizes: every field but the name and the nine sizes a kernel takes
  (``vocab_size`` … ``ffn_dim_multiplier``), of which only whether each is given counts. What decides
  the tree's structure (tying, biases, where ``d_ff`` comes from, any field added later) is in the key.

On a miss the numbers come from :mod:`symllm.api` itself (the one source of truth), and the code it
compiled is stored for the next process. So the cache can make a start faster, never a number different.

>>> counts, d_ff = params(load("llama3.1-8b"))
>>> counts["total"], d_ff
(8030261248, 14336)
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache

from .config import ModelConfig, load  # noqa: F401  (load: the doctest)
from .evaluate import cache_get, cache_put, define, source_digest

__all__ = ["params", "SIZE_FIELDS"]

#: the config fields kernels take as numbers; the key holds only whether each is given
SIZE_FIELDS = ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim",
               "multiple_of", "ffn_dim_multiplier")


def _key(config: ModelConfig) -> str:
    fields = []
    for fld in dataclasses.fields(config):
        if fld.name in ("name", "derived"):
            continue
        value = getattr(config, fld.name)
        fields.append((fld.name, value is not None if fld.name in SIZE_FIELDS else repr(value)))
    return json.dumps([source_digest(), fields])


@lru_cache(maxsize=64)
def _compiled(key: str, sources: tuple):
    hidden_args, hidden_src, table_args, names, table_src = sources
    hidden = (json.loads(hidden_args), define(hidden_src, "kernel")) if hidden_src else None
    return hidden, json.loads(table_args), tuple(json.loads(names)), define(table_src, "table")


def _from_api(config: ModelConfig) -> tuple[dict, int, tuple]:
    """The counts by :mod:`symllm.api`, and the sources of the kernels that made them."""
    from . import api
    from . import symbols as S
    from .spec import hidden_dim_kernel

    spec = api.spec(config)
    table = api._params_table(spec.structure)
    code = lambda args: json.dumps([S.SYMBOLS[a].code for a in args])  # noqa: E731
    if spec.hidden_rule == "explicit":
        hidden = ("", "")
    else:
        kernel = hidden_dim_kernel(spec.hidden_rule)
        hidden = (code(kernel.args), kernel.source)
    return api.params(spec), spec.hidden_dim, (*hidden, code(table.args), json.dumps(table.names), table.source)


def params(config: ModelConfig) -> tuple[dict, int]:
    """``(symllm.api.params(config), symllm.api.hidden_dim(config))``, without building a formula when
    an earlier process compiled this config's structure (see the module docstring).

    >>> params(load("llama2-13b"))[0]["lm_head"]
    163840000
    """
    key = _key(config)
    sources = cache_get("count", key)
    if sources is None or len(sources) != 5:
        counts, d_ff, sources = _from_api(config)
        cache_put("count", key, sources)
        return counts, d_ff
    hidden, table_args, names, table = _compiled(key, sources)
    if hidden is None:
        d_ff = config.hidden_dim
    else:
        args, kernel = hidden
        d_ff = kernel(*(getattr(config, a) for a in args))
    values = [d_ff if a == "hidden_dim" else getattr(config, a) for a in table_args]
    return dict(zip(names, table(*values))), d_ff
