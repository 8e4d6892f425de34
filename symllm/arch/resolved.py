"""A config as the layers take it: any config (a :class:`ModelConfig`, a :class:`Spec`, a preset name or a
JSON path) resolved to its spec, its model, its derived ``hidden_dim`` and its exact parameter counts.
:mod:`symllm.api` re-exports these; every layer below it imports them from here (the config itself from
:func:`symllm.arch.catalogue.resolve`, which loads no SymPy).

>>> params("llama3.1-8b")["total"]
8030261248
>>> hidden_dim("llama3.1-8b")
14336
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from symllm.arch import symbols as S
from symllm.arch.components import Component
from symllm.arch.catalogue import resolve
from symllm.arch.config import ModelConfig
from symllm.arch.layers import Structure
from symllm.arch.specs import Spec, spec_of, structure_model
from symllm.numbers.cache import cache_get, cache_put, key as cache_key
from symllm.numbers.kernels import TableKernel

__all__ = ["spec", "model_for", "hidden_dim", "mtp_module", "params", "by_kind", "resolved_config", "Config"]

Config = ModelConfig | str | Path | Spec | dict


def spec(config: Config, *, vocab_size: int | None = None) -> Spec:
    """The resolved architecture of a config (see :mod:`symllm.arch.specs`).

    >>> spec("llama3.2-1b").hidden_dim, spec("llama3.2-1b").structure.tied
    (8192, True)
    """
    if vocab_size is None:
        if isinstance(config, Spec):
            return config
        if isinstance(config, ModelConfig):  # kept on the config: a warm params() hashed its 45 fields each call
            hit = config.__dict__.get("_spec")
            if hit is None:
                hit = spec_of(config)
                object.__setattr__(config, "_spec", hit)  # frozen; not a field (neither compared nor printed)
            return hit
    return spec_of(resolve(config, vocab_size=vocab_size))


def model_for(config: Config, *, causal: bool = False) -> Component:
    """The model component whose structure (tying, biases, where ``d_ff`` comes from) is the config's.

    >>> model_for("llama3.2-1b").child("lm_head").params
    0
    """
    return spec(config).model("causal" if causal else "dense")


def hidden_dim(config: Config) -> int:
    """The SwiGLU width ``d_ff``: as stated, or Meta's rounding evaluated for the config.

    >>> hidden_dim("llama3.1-405b")
    53248
    """
    return spec(config).hidden_dim


def mtp_module(structure: Structure, mdl: Component) -> Component:
    """The multi-token-prediction modules a checkpoint of ``structure`` stores beside its model ``mdl``
    (:func:`symllm.arch.components.mtp`): a DeepSeek-style module copies the block of the group
    ``structure.mtp_copy``, with its own indexer where the last layers reuse a top-k (SGLang's is_nextn layer:
    skip_topk = False); else the blocks of ``structure.mtp_blocks``.

    >>> mtp_module(spec("glm-4.5-air").structure, model_for("glm-4.5-air")).repeat
    L_mtp
    """
    from dataclasses import replace

    from symllm.arch.components import block, mtp
    from symllm.arch.layers import group_names
    names = group_names(structure.kinds)
    copy = structure.mtp_copy  # the group a DeepSeek-style module copies: the last layer's kind
    last = structure.kinds[copy]
    own = (block(structure, replace(last, shared_topk=False), name=names[copy])
           if last.shared_topk and not structure.mtp_blocks else None)
    return mtp(mdl, tuple(names[i] for i in structure.mtp_blocks), own, copy=names[copy])


@lru_cache(maxsize=None)
def params_table(structure: Structure) -> TableKernel:
    """One compiled function giving every breakdown term, one block and the total, per structure.

    Its generated code is kept in :func:`symllm.numbers.cache.cache_dir` by the structure and a hash of
    symllm's source files (as :mod:`symllm.studies.quick` keeps a count's), so a later process builds no
    component tree for it; a miss or a damaged entry builds the tree.

    >>> params_table(spec("llama3.2-1b").structure) is params_table(spec("llama3.2-1b").structure)
    True
    """
    key = cache_key(structure)
    hit = cache_get("params-table", key)
    if hit is not None and len(hit) == 3:
        try:
            by_name = {sym.name: sym for sym in S.SYMBOLS}
            return TableKernel.from_source([by_name[a] for a in json.loads(hit[0])], json.loads(hit[1]), hit[2])
        except Exception:  # noqa: BLE001 (a damaged entry: built again below)
            pass
    mdl = structure_model(structure)
    terms = mdl.breakdown("params")
    terms["block"] = mdl.child("block").replace(repeat=1).total("params")
    terms["total"] = mdl.total("params")
    terms["active"] = mdl.total("active")  # what one token uses: all of it, but for the k of n_e experts
    if structure.mtp:  # stored by the checkpoint, not built by transformers: its own part, not in the total
        terms["mtp"] = mtp_module(structure, mdl).total("params")
    table = TableKernel(terms)
    cache_put("params-table", key, (json.dumps([a.name for a in table.args]), json.dumps(table.names), table.source))
    return table


def params(config: Config) -> dict[str, int]:
    """Exact parameter counts: one entry per leaf of the breakdown, the per-block count (the first group
    of blocks), the ``total`` and the ``active`` parameters one token uses (the total but for the experts
    it is not routed to); where the checkpoint stores multi-token-prediction modules, ``mtp`` (their
    parameters, not in the total: :func:`symllm.arch.components.mtp`).

    >>> p = params("llama2-13b")
    >>> p["total"], p["block/attention/wq"], p["lm_head"]
    (13015864320, 1048576000, 163840000)
    >>> p = params("mixtral-8x7b")
    >>> p["total"], p["active"]
    (46702792704, 12879925248)
    """
    sp_ = spec(config)
    table = params_table(sp_.structure)
    args = sp_.__dict__.get("_params_args")  # the table's arguments, read off the spec's values once
    if args is None or args[0] is not table.args:
        counts = table(sp_._values)  # a symbol left unset is refused here
        object.__setattr__(sp_, "_params_args", (table.args, tuple(sp_._values[a] for a in table.args)))
        return counts
    return table.at(args[1])


def by_kind(counts: dict) -> dict:
    """Parameter counts by kind of weight: a breakdown (:func:`params`, or the torch reference's count)
    without its group of blocks (``block/``, ``moe_block/``, ``nope_block/`` summed: ``attention/wq``), a
    shared expert as one kind, zero entries, the one-block count and the multi-token-prediction modules left out.

    >>> by_kind(params("mixtral-8x7b"))["moe/experts"]
    45097156608
    """
    out = {}
    for key, value in counts.items():
        if key in ("block", "mtp") or not value:  # mtp: not part of the model (reported apart)
            continue
        group, _, rest = key.partition("/")
        kind = rest if group.endswith("block") and rest else key
        kind = "moe/shared_expert" if kind.startswith(("moe/shared_expert/", "moe/shared_experts/")) else kind
        out[kind] = out.get(kind, 0) + value
    return out


def resolved_config(config: Config) -> dict:
    """The config's fields with what symllm derives filled in (``hidden_dim``, ``attention``).

    >>> resolved_config("llama3.1-8b")["hidden_dim"]
    14336
    """
    sp_ = spec(config)
    out = sp_.config.to_dict()
    out["hidden_dim"] = sp_.hidden_dim
    out["hidden_dim_rule"] = sp_.hidden_rule
    out["attention"] = sp_.attention_kind
    return out

