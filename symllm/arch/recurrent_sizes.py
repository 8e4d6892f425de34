"""The sizes of the mixers that are not attention in a :class:`~symllm.arch.config.ModelConfig` (the Gated
DeltaNet's, :mod:`symllm.arch.components.deltanet`; Mamba-2's, :mod:`symllm.arch.components.mamba`), checked as
the other mixers' are: each size given exactly where a layer uses it; and the widths of their short
convolutions' states, declared once for the closed forms (SymPy symbols) and the serving capacity (numbers). This
module loads no SymPy (config files are read with it).

>>> from symllm.arch.config import ModelConfig
>>> from symllm.arch.layers import LayerKind
>>> ModelConfig(vocab_size=9, dim=8, n_layers=1, n_heads=2, linear_key_heads=2, linear_value_heads=3,
...             linear_key_dim=4, linear_value_dim=4, conv_kernel=4, layers=((LayerKind(mixer="linear_attention"), 1),))
Traceback (most recent call last):
...
symllm.errors.SymllmError: linear_value_heads: 3 is not a multiple of the 2 key heads
"""
from __future__ import annotations

from symllm.arch.dtypes import TORCH_NAMES, canonical
from symllm.errors import SymllmError
from symllm.validate import positive_int, short, stated_with

__all__ = ["check_recurrent", "CONV_STATE_DROPS", "conv_state_columns", "conv_state_bytes", "mamba_conv_channels",
           "deltanet_conv_channels", "SSM_STATE_DTYPES", "STATE_DTYPES", "stated_state_dtype", "ssm_state_dtype"]

#: The columns of a short causal convolution's input that one sequence's cache keeps, fewer than the kernel's
#: ``conv_kernel`` (``K_c``), by whose cache keeps them:
#:
#: * ``transformers``: none fewer, ``K_c``: ``cache_utils.LinearAttentionLayer.lazy_initialization`` allocates
#:   ``conv_states`` of ``(..., conv_kernel_size)`` and ``update_conv_state`` keeps the last ``conv_kernel_size``
#:   inputs (transformers 5.23; the Qwen3-Next / Qwen3.5 Gated DeltaNet and the Nemotron-H Mamba-2 mixer pass
#:   their ``conv_kernel_size``): what ``memory.state_cache`` counts;
#: * ``vllm``: one fewer, ``K_c - 1``: ``MambaStateShapeCalculator.mamba2_state_shape`` and
#:   ``gated_delta_net_state_shape`` (vllm/model_executor/layers/mamba/mamba_utils.py, vllm-project/vllm commit
#:   02d710837549a368073552333f66d714477415d2, read 2026-11-29) shape the conv state ``conv_kernel - 1 + num_spec``
#:   columns of the rank's channels (``num_spec`` 0 without speculative decoding): what ``count --serve``
#:   allocates a sequence under a vLLM engine (:mod:`symllm.costs.serving`).
CONV_STATE_DROPS = {"transformers": 0, "vllm": 1}


#: The dtype one sequence's cache keeps a recurrent (SSM) state in -- a Gated DeltaNet's ``n_gv·d_gk·d_gv``, a
#: Mamba-2 mixer's ``n_m·d_m·d_s`` -- by whose cache keeps it:
#:
#: * ``transformers``: ``fp32``: the torch paths compute the state in float32 and transformers' cache keeps the
#:   tensor they return: what ``memory.state_cache`` counts (:mod:`symllm.arch.components.deltanet`, ``mamba``);
#: * ``vllm``: None, the dtype the config states for it (``ModelConfig.ssm_dtype``) or else the model's (the
#:   activations'): ``MambaStateDtypeCalculator._mamba_state_dtype`` (vllm/model_executor/layers/mamba/mamba_utils.py
#:   at 02d710837549a368073552333f66d714477415d2) takes the conv state's dtype, the model's, while
#:   ``cache_config.mamba_ssm_cache_dtype`` is ``"auto"`` (its default), and a model's config hook
#:   (vllm/model_executor/models/config.py, https://docs.vllm.ai/en/latest/api/vllm/model_executor/models/config/,
#:   read 2026-11-29) sets it from the config: ``NemotronHForCausalLMConfig`` from ``mamba_ssm_cache_dtype``
#:   (``DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"`` where absent, transformers' NemotronHConfig default too),
#:   ``Qwen3_5ForConditionalGenerationConfig`` (Qwen3.5 and Qwen3.5-MoE) from ``mamba_ssm_dtype``; Qwen3-Next has
#:   no hook (``Qwen3NextForCausalLM.get_mamba_state_dtype_from_config`` passes ``"auto"``): the model's dtype.
#:   What ``count --serve`` allocates a sequence under a vLLM engine (:mod:`symllm.costs.serving`).
SSM_STATE_DTYPES = {"transformers": "fp32", "vllm": None}
#: the dtypes a config.json may state a recurrent state in (``mamba_ssm_cache_dtype``, ``mamba_ssm_dtype``: torch's
#: names, symllm.arch.dtypes.TORCH_NAMES)
STATE_DTYPES = ("fp32", "bf16", "fp16")


def stated_state_dtype(raw: dict, key: str, default: str | None = None) -> str | None:
    """The recurrent state's dtype a config.json states under ``key`` (:data:`STATE_DTYPES`), or ``default``
    where absent; another value refused in one line.

    >>> stated_state_dtype({"mamba_ssm_dtype": "float32"}, "mamba_ssm_dtype"), stated_state_dtype({}, "k", "float32")
    ('fp32', 'fp32')
    >>> stated_state_dtype({"mamba_ssm_dtype": "int8"}, "mamba_ssm_dtype")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: mamba_ssm_dtype: 'int8' is not modelled (known: float32, bfloat16, float16)
    """
    value = raw.get(key, default)
    if value is None:
        return None
    name = canonical(value)
    if name not in STATE_DTYPES:
        known = ", ".join(TORCH_NAMES[k] for k in STATE_DTYPES)
        raise SymllmError(f"{key}: {short(value)} is not modelled (known: {known})")
    return name


def ssm_state_dtype(cache: str, stated: str | None, activations: str) -> str:
    """The dtype ``cache`` keeps a recurrent state in (:data:`SSM_STATE_DTYPES`): transformers' fp32; vLLM's the
    config's ``stated`` dtype, else the model's ``activations`` dtype.

    >>> [ssm_state_dtype(c, s, "bf16") for c, s in (("transformers", None), ("vllm", None), ("vllm", "fp32"))]
    ['fp32', 'bf16', 'fp32']
    """
    return SSM_STATE_DTYPES[cache] or stated or activations


def conv_state_columns(kernel, cache: str = "transformers"):
    """The columns of the convolution's input ``cache`` keeps a sequence (:data:`CONV_STATE_DROPS`), for a
    kernel of ``kernel`` (a number, or the symbol ``K_c``).

    >>> conv_state_columns(4), conv_state_columns(4, "vllm")
    (4, 3)
    """
    return kernel - CONV_STATE_DROPS[cache]


def conv_state_bytes(channels, kernel, act_bytes, cache: str = "transformers"):
    """Bytes of one sequence's convolution state in one layer: the last :func:`conv_state_columns` inputs of
    every one of its ``channels``, in the activations' dtype (``act_bytes``), as ``cache`` keeps them: a Gated
    DeltaNet's and a Mamba-2 mixer's alike (numbers, or symbols).

    >>> conv_state_bytes(24, 4, 2), conv_state_bytes(24, 4, 2, "vllm")
    (192, 144)
    """
    return act_bytes * conv_state_columns(kernel, cache) * channels


def mamba_conv_channels(heads, head_dim, groups, state):
    """A Mamba-2 mixer's convolution channels, x, B and C side by side: ``heads·head_dim + 2·groups·state``
    (numbers, or symbols).

    >>> mamba_conv_channels(2, 4, 1, 8)
    24
    """
    return heads * head_dim + 2 * groups * state


def deltanet_conv_channels(key_heads, key_dim, value_heads, value_dim):
    """A Gated DeltaNet's convolution channels, q, k and v side by side: ``2·key_heads·key_dim +
    value_heads·value_dim`` (numbers, or symbols).

    >>> deltanet_conv_channels(16, 128, 32, 128)
    8192
    """
    return 2 * key_heads * key_dim + value_heads * value_dim


def check_recurrent(config, put) -> None:
    """The Gated DeltaNet's sizes: all five with a linear-attention layer, none without; its value heads a
    whole multiple of its key heads (transformers' grouped value attention repeats each key head); then
    Mamba-2's (:func:`_check_mamba`). ``put`` sets a field of the frozen ``config``."""
    sizes = ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim", "conv_kernel")
    for field in sizes:
        put(field, positive_int(field, getattr(config, field), optional=True, floats=True))
    linear = any(kind.mixer == "linear_attention" for kind, _ in config.layers)
    mamba = any(kind.mixer == "mamba" for kind, _ in config.layers)
    stated_with(config, sizes[:-1], linear, "is a Gated DeltaNet")
    stated_with(config, ("conv_kernel",), linear or mamba, "is a Gated DeltaNet or a Mamba-2 mixer",
                "has a short convolution")
    _check_mamba(config, put, mamba)
    if config.ssm_dtype is not None:  # the state's dtype a config states (SSM_STATE_DTYPES)
        if not isinstance(config.ssm_dtype, str) or config.ssm_dtype not in STATE_DTYPES:
            raise SymllmError(f"ssm_dtype: unknown {short(config.ssm_dtype)} (known: {', '.join(STATE_DTYPES)})")
        if not (linear or mamba):
            raise SymllmError(f"ssm_dtype: {config.ssm_dtype} given but no layer has a recurrent state")
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
        stated_with(config, (field,), mamba, "is a Mamba-2 mixer")
    for field in ("conv_bias", "mamba_bias"):
        if not mamba and getattr(config, field):
            raise SymllmError(f"{field}: true but no layer is a Mamba-2 mixer")
    if mamba and config.mamba_heads % config.mamba_groups:
        raise SymllmError(f"mamba_heads: {config.mamba_heads} is not a multiple of the {config.mamba_groups} groups")
    if mamba and config.latent is not None:
        raise SymllmError("layers: Mamba-2 layers are not modelled with a latent attention")
