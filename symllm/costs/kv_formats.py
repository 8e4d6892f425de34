"""KV-cache formats as exact bytes per cached element, each declared once with the engine source it is read from;
which engine holds which is its entry's ``kv_formats`` in efficiency.json (refused otherwise:
:mod:`symllm.costs.checks`).

Two kinds of format:

* a format whose bytes are the same whatever the head width (:data:`KV_FORMATS`): the plain dtypes, fp8 (E4M3 or
  E5M2, one fp32 scale a layer for K and one for V, not counted), llama.cpp's ``--cache-type-k/-v`` q8_0 and q4_0
  (blocks of 32 along a token's row: 34 and 18 bytes) and NVFP4 (blocks of 16 along a head's row);
* a format with a scale (and zero) for each head of each token (:data:`KV_HEAD_FORMATS`), whose bytes an element
  depend on the head width ``d_h``: ``bits/8 + s/d_h``, ``s`` the bytes of the head's scale and zero for its K (or
  V); named once a model's head width is known (``int8/128``: :func:`kv_format_for`).

>>> kv_bytes_per_element("nvfp4"), kv_bytes_per_element("int8_per_token_head", 128)
(Fraction(9, 16), Fraction(33, 32))
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch.dtypes import BYTES
from symllm.errors import SymllmError
from symllm.validate import choice, short

__all__ = ["KV_FORMATS", "KV_HEAD_FORMATS", "check_kv_format", "kv_bytes_per_element", "kv_format_for", "scale_width"]

#: KV-cache format -> bytes per cached element: fp16/bf16, fp8 (E4M3/E5M2; a per-layer fp32 scale is not counted),
#: llama.cpp's ``--cache-type-k/v`` q8_0 and q4_0 (block of 32: 34 and 18 bytes), and nvfp4: 16 E2M1 values (8
#: bytes) and one E4M3 scale byte a block of 16 along a head's row, 1/2 + 1/16, with one fp32 scale a layer for K and
#: one for V not counted (as fp8's): vLLM 0.33.0's ``--kv-cache-dtype nvfp4`` (vllm/utils/torch_utils.py
#: ``nvfp4_kv_cache_full_dim`` = head_size // 2 + head_size // 16 bytes a head and token, K and V each,
#: FlashInferBackend.customize_spec; ``nvfp4_4over6`` stores the same) and TensorRT-LLM's NVFP4 cache
#: (``kv_cache_quant_algo`` NVFP4: KVCacheManager.get_cache_bytes_per_token, n / 2 bytes and an FP8 scale a
#: ``quant_vector_size`` of 16, tensorrt_llm/_torch/pyexecutor/resource_manager.py)
KV_FORMATS = {**{d: Fraction(BYTES[d]) for d in ("fp32", "fp16", "bf16", "fp8")},
              "q8_0": Fraction(34, 32), "q4_0": Fraction(18, 32), "nvfp4": Fraction(1, 2) + Fraction(1, 16)}

#: KV-cache format -> (bits of an element, bytes of its scale and zero point a head and token, for K and for V):
#: lmdeploy TurboMind's ``--quant-policy`` 8 and 4 (``int8``, ``int4``; InternLM/lmdeploy v0.6.0 to v0.10.0,
#: src/turbomind/kernels/attention/block.h: ``token_data_size`` = q_bits x head_dim / 8, ``token_param_size`` =
#: t_bits x 2 / 8, t_bits the activations' fp16/bf16: a scale and a zero of 2 bytes each); vLLM's per-token-head caches
#: (``--kv-cache-dtype int8_per_token_head``, ``fp8_per_token_head``, ``int4_per_token_head``; vLLM 0.33.0,
#: vllm/v1/attention/backends/triton_attn.py TritonAttentionBackend.customize_spec: a head's K (and V) data, head_size
#: bytes, head_size / 2 for int4, then one fp32 scale; int4's 4-bit zero point rides in the scale's low mantissa bits,
#: vllm/v1/attention/ops/int4_per_token_head.py)
KV_HEAD_FORMATS = {"int8": (8, 4), "int4": (4, 4),
                   "int8_per_token_head": (8, 4), "fp8_per_token_head": (8, 4), "int4_per_token_head": (4, 4)}


def check_kv_format(fmt: str) -> tuple:
    """``(name, head width or None)`` of the KV-cache format ``fmt``: a name of :data:`KV_FORMATS` or of
    :data:`KV_HEAD_FORMATS`, the latter with a head width where named after one (``int8/128``); refused in one line.

    >>> check_kv_format("int4/64"), check_kv_format("q8_0"), check_kv_format("fp8_per_token_head/128")
    (('int4', 64), ('q8_0', None), ('fp8_per_token_head', 128))
    """
    name, _, width = fmt.partition("/") if isinstance(fmt, str) else (fmt, "", "")
    if width and (name not in KV_HEAD_FORMATS or not width.isdigit() or int(width) < 1):
        raise SymllmError(f"kv_format: got {short(fmt, 30)}; only {', '.join(KV_HEAD_FORMATS)} take a head width "
                          "(int8/128)")
    known = (*KV_FORMATS, *KV_HEAD_FORMATS)
    return choice("kv_format", name, known, see="docs/formats.md"), int(width) if width else None


def kv_bytes_per_element(fmt: str, head_dim: int | None = None) -> Fraction:
    """Bytes per cached K or V element in the KV-cache format ``fmt`` (:data:`KV_FORMATS`); a format whose scales are
    a head's and a token's (:data:`KV_HEAD_FORMATS`) spreads them over the ``head_dim`` elements of a head, given or
    named after it (``int8/128``, as :func:`symllm.costs.workloads.with_stated` names it for a model; without a width
    its bytes are refused).

    >>> kv_bytes_per_element("q8_0"), kv_bytes_per_element("q4_0")
    (Fraction(17, 16), Fraction(9, 16))
    >>> kv_bytes_per_element("int8", 128), kv_bytes_per_element("int4/64")  # (128 + 4) / 128, (32 + 4) / 64
    (Fraction(33, 32), Fraction(9, 16))
    """
    name, width = check_kv_format(fmt)
    if name not in KV_HEAD_FORMATS:
        return KV_FORMATS[name]
    head_dim = width or head_dim
    if head_dim is None:
        raise SymllmError(f"kv_format: {name}'s scales are a head's and a token's: its bytes need the model's head "
                          "width")
    bits, params = KV_HEAD_FORMATS[name]
    return Fraction(bits, 8) + Fraction(params, head_dim)


def kv_format_for(fmt: str | None, head_dim: int) -> str | None:
    """``fmt`` as the model's KV cache holds it: a format of :data:`KV_HEAD_FORMATS` named with the model's head
    width (``int8`` -> ``int8/128``), any other as given.

    >>> kv_format_for("int8", 128), kv_format_for("int8/64", 128), kv_format_for("q8_0", 128)
    ('int8/128', 'int8/64', 'q8_0')
    """
    if isinstance(fmt, str) and fmt in KV_HEAD_FORMATS and head_dim:
        return f"{fmt}/{head_dim}"
    return fmt


def scale_width(config) -> int | None:
    """The elements of a token's cache row one scale of a :data:`KV_HEAD_FORMATS` format covers in ``config``'s model:
    its head width, or, where it caches an MLA latent (``kv_lora_rank`` + ``qk_rope_head_dim`` a token, one row for
    K and V both), half the latent, as vLLM 0.33.0 stores both fp32 scales after the one row
    (MLACommonBackend.customize_spec, vllm/model_executor/layers/attention/mla_attention.py: head_size bytes, half
    for int4, + 2 x 4); lmdeploy's layout on a latent was not read and is priced so too.

    >>> from symllm.arch.resolved import spec
    >>> scale_width(spec("llama3.1-8b").config), scale_width(spec("deepseek-v2-lite").config)  # 576 / 2
    (128, 288)
    """
    latent = getattr(config, "kv_lora_rank", None)
    if latent is not None and (latent + (config.qk_rope_head_dim or 0)) % 2 == 0:
        return (latent + (config.qk_rope_head_dim or 0)) // 2
    return getattr(config, "head_dim", None)
