"""DeepSeek-V4's sizes in a :class:`~symllm.arch.config.ModelConfig` (its attention and residual streams:
:mod:`symllm.arch.components.compressed`), checked as the other mixers' are: each size given exactly where a
layer uses it. This module loads no SymPy (config files are read with it).

>>> from symllm.arch.config import ModelConfig
>>> from symllm.arch.layers import LayerKind
>>> ModelConfig(vocab_size=9, dim=8, n_layers=1, n_heads=2, n_kv_heads=1, head_dim=4, q_lora_rank=4, hc_mult=2,
...             o_groups=3, o_lora_rank=2, layers=((LayerKind(mixer="shared_kv"), 1),))
Traceback (most recent call last):
...
symllm.errors.SymllmError: o_groups: 3 does not divide the 8 query outputs (num_attention_heads x head_dim)
"""
from __future__ import annotations

from symllm.errors import SymllmError
from symllm.validate import positive_int

__all__ = ["check_compressed", "is_compressed", "SIZES"]

#: the ModelConfig fields of DeepSeek-V4's attention and streams
SIZES = ("hc_mult", "o_groups", "o_lora_rank", "compress_csa", "compress_hca", "hc_sinkhorn_iters")
#: DeepseekV4Config's hc_sinkhorn_iters, taken where a layer is DeepSeek-V4's attention and none is given
SINKHORN_ITERS = 20


def is_compressed(config) -> bool:
    """Whether some layer of ``config`` is DeepSeek-V4's attention (its kind's mixer one of
    :data:`symllm.arch.components.compressed.COMPRESSED_MIXERS`)."""
    return any(kind.mixer in ("shared_kv", "compressed_sparse", "heavily_compressed") for kind, _ in config.layers)


def check_compressed(config, put) -> None:
    """The sizes of DeepSeek-V4's attention: ``hc_mult``, ``o_groups``, ``o_lora_rank`` and ``q_lora_rank``
    with such a layer (``hc_sinkhorn_iters`` too, :data:`SINKHORN_ITERS` when not given), a compression rate (and
    the indexer's sizes, for CSA) with a layer that compresses; one shared key-value head; no latent attention
    beside it."""
    for field in SIZES:
        put(field, positive_int(field, getattr(config, field), optional=True, floats=True))
    mixers = {kind.mixer for kind, _ in config.layers}
    needed = {"hc_mult": bool(mixers & {"shared_kv", "compressed_sparse", "heavily_compressed"}),
              "compress_csa": "compressed_sparse" in mixers, "compress_hca": "heavily_compressed" in mixers}
    needed.update(o_groups=needed["hc_mult"], o_lora_rank=needed["hc_mult"], q_lora_rank=needed["hc_mult"],
                  index_topk="compressed_sparse" in mixers, hc_sinkhorn_iters=needed["hc_mult"])
    if needed["hc_mult"] and config.hc_sinkhorn_iters is None:
        put("hc_sinkhorn_iters", SINKHORN_ITERS)
    for field, used in needed.items():
        value = getattr(config, field)
        if used and value is None:
            raise SymllmError(f"{field}: missing (a layer is DeepSeek-V4's attention that reads it)")
        if not used and value is not None and (field in SIZES or field == "index_topk" and config.latent is None):
            raise SymllmError(f"{field}: {value} given but no layer of DeepSeek-V4's attention reads it")
    if not needed["hc_mult"]:
        return
    if config.kv_lora_rank is not None:
        raise SymllmError("kv_lora_rank: a latent attention beside DeepSeek-V4's attention is not modelled")
    if config.n_kv_heads != 1:
        raise SymllmError(f"num_key_value_heads: {config.n_kv_heads}; DeepSeek-V4's attention has one shared "
                          "key-value head")
    if config.n_heads * config.head_dim % config.o_groups:
        raise SymllmError(f"o_groups: {config.o_groups} does not divide the {config.n_heads * config.head_dim} "
                          "query outputs (num_attention_heads x head_dim)")
