"""The sizes of the mixers that are not attention in a :class:`~symllm.arch.config.ModelConfig` (the Gated
DeltaNet's, :mod:`symllm.arch.components.deltanet`; Mamba-2's, :mod:`symllm.arch.components.mamba`), checked as
the other mixers' are: each size given exactly where a layer uses it. This module loads no SymPy (config files
are read with it).

>>> from symllm.arch.config import ModelConfig
>>> from symllm.arch.layers import LayerKind
>>> ModelConfig(vocab_size=9, dim=8, n_layers=1, n_heads=2, linear_key_heads=2, linear_value_heads=3,
...             linear_key_dim=4, linear_value_dim=4, conv_kernel=4, layers=((LayerKind(mixer="linear_attention"), 1),))
Traceback (most recent call last):
...
symllm.errors.SymllmError: linear_value_heads: 3 is not a multiple of the 2 key heads
"""
from __future__ import annotations

from symllm.errors import SymllmError
from symllm.validate import boolean, positive_int

__all__ = ["check_recurrent"]


def check_recurrent(config, put) -> None:
    """The Gated DeltaNet's sizes: all five with a linear-attention layer, none without; its value heads a
    whole multiple of its key heads (transformers' grouped value attention repeats each key head); then
    Mamba-2's (:func:`_check_mamba`). ``put`` sets a field of the frozen ``config``."""
    sizes = ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim", "conv_kernel")
    for field in sizes:
        put(field, positive_int(field, getattr(config, field), optional=True, floats=True))
    for field in ("output_gate", "delta_split", "conv_bias", "mamba_bias"):
        boolean(field, getattr(config, field))
    linear = any(kind.mixer == "linear_attention" for kind, _ in config.layers)
    mamba = any(kind.mixer == "mamba" for kind, _ in config.layers)
    for field in sizes[:-1]:
        if linear and getattr(config, field) is None:
            raise SymllmError(f"{field}: missing (a layer is a Gated DeltaNet)")
        if not linear and getattr(config, field) is not None:
            raise SymllmError(f"{field}: {getattr(config, field)} given but no layer is a Gated DeltaNet")
    if (linear or mamba) and config.conv_kernel is None:
        raise SymllmError("conv_kernel: missing (a layer is a Gated DeltaNet or a Mamba-2 mixer)")
    if not (linear or mamba) and config.conv_kernel is not None:
        raise SymllmError(f"conv_kernel: {config.conv_kernel} given but no layer has a short convolution")
    _check_mamba(config, put, mamba)
    if linear and config.linear_value_heads % config.linear_key_heads:
        raise SymllmError(f"linear_value_heads: {config.linear_value_heads} is not a multiple of the "
                          f"{config.linear_key_heads} key heads")
    if linear and config.latent is not None:
        raise SymllmError("layers: Gated DeltaNet layers are not modelled with a latent attention")


def _check_mamba(config, put, mamba: bool) -> None:
    """The Mamba-2 mixer's sizes: all five with a Mamba layer, none without (its biases off); its heads a
    whole multiple of its groups (transformers repeats each group's B and C over its heads)."""
    sizes = ("mamba_heads", "mamba_head_dim", "ssm_state", "mamba_groups", "ssm_chunk")
    for field in sizes:
        put(field, positive_int(field, getattr(config, field), optional=True, floats=True))
        if mamba and getattr(config, field) is None:
            raise SymllmError(f"{field}: missing (a layer is a Mamba-2 mixer)")
        if not mamba and getattr(config, field) is not None:
            raise SymllmError(f"{field}: {getattr(config, field)} given but no layer is a Mamba-2 mixer")
    for field in ("conv_bias", "mamba_bias"):
        if not mamba and getattr(config, field):
            raise SymllmError(f"{field}: true but no layer is a Mamba-2 mixer")
    if mamba and config.mamba_heads % config.mamba_groups:
        raise SymllmError(f"mamba_heads: {config.mamba_heads} is not a multiple of the {config.mamba_groups} groups")
    if mamba and config.latent is not None:
        raise SymllmError("layers: Mamba-2 layers are not modelled with a latent attention")
