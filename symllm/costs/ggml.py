"""llama.cpp's GGML types and named file types: bytes per block (:data:`GGML_TYPES`) and the type
``llama_tensor_get_type`` picks for each tensor of a file type (:data:`FILE_TYPES`, :func:`file_type_choice`).

The rules are :mod:`symllm.costs.formats`' (its docstring, "llama.cpp's named file types"), which prices a
model's GGUF tensors with them; this module holds the tables and the per-tensor choice, which need no model,
what llama.cpp's CUDA backend moves beside a prompt's GEMMs (:func:`prompt_passes`, for
:func:`symllm.costs.efficiency.expected`), and what its compute buffer holds at a micro-batch's attention scores
(:func:`scores_moment`, for :func:`symllm.costs.serving.capacity`).

>>> ggml_bytes("Q6_K", 256), file_type_choice("Q4_K_M", "ffn_down.weight", 4096, 0, 32)
(210, 'Q6_K')
"""
from __future__ import annotations

from symllm.errors import SymllmError
from symllm.validate import short, with_list

__all__ = ["GGML_TYPES", "FILE_TYPES", "ggml_bytes", "fallback", "file_type_choice", "prompt_passes",
           "PROMPT_F32_OPS", "KQ_MASK_PAD", "scores_moment", "ATTN_V_LIKE"]

#: GGML type -> (values per block, bytes per block) (ggml/src/ggml.c ``type_traits``; gguf-py's
#: ``GGML_QUANT_SIZES``)
GGML_TYPES = {
    "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2),
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34),
    "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
    "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74), "IQ2_S": (256, 82), "IQ3_XXS": (256, 98), "IQ3_S": (256, 110),
    "IQ1_S": (256, 50), "IQ1_M": (256, 56), "IQ4_NL": (32, 18), "IQ4_XS": (256, 136),
    "TQ1_0": (256, 54), "TQ2_0": (256, 66), "MXFP4": (32, 17),
}

#: llama.cpp file type -> its base type (``llama_model_quantize_impl``'s switch on ``ftype``)
FILE_TYPES = {"Q4_K_M": "Q4_K", "Q4_K_S": "Q4_K", "Q5_K_M": "Q5_K", "Q5_K_S": "Q5_K", "Q6_K": "Q6_K",
              "Q8_0": "Q8_0", "Q4_0": "Q4_0", "F16": "F16", "BF16": "BF16"}

#: ``tensor_type_fallback``'s switch (src/llama-quant.cpp lines 385-406 at ggml-org/llama.cpp 007dbbf3, read
#: 2026-11-29): the type a tensor is stored in when its rows do not hold whole blocks of the one chosen for it
#: (file type or ``--pure``); :func:`fallback` reads it
_FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0",
             **dict.fromkeys(("Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
             **dict.fromkeys(("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL")}


def fallback(ggml_type: str, row: int) -> str:
    """The GGML type llama.cpp stores a tensor in whose rows are ``row`` long when ``ggml_type`` was chosen for it
    (``tensor_type_fallback``, src/llama-quant.cpp lines 374-421 at llama.cpp 007dbbf3): the type itself where a row
    holds whole blocks of it, else :data:`_FALLBACK`'s, else F16 (lines 407-417: the fallback's block does not fit
    either); a type with no fallback (``default:``, lines 403-405: Q8_0, Q4_0, MXFP4, ...) stops llama-quantize,
    so it is refused.

    >>> fallback("Q4_K", 4096), fallback("Q4_K", 2880), fallback("Q3_K", 2880), fallback("IQ2_XS", 1408)
    ('Q4_K', 'Q5_0', 'Q4_0', 'IQ4_NL')
    >>> fallback("Q6_K", 72), fallback("Q8_0", 4096)
    ('F16', 'Q8_0')
    """
    block = GGML_TYPES[ggml_type][0]
    if row % block == 0:
        return ggml_type
    if ggml_type not in _FALLBACK:
        raise SymllmError(f"weight_format: rows of {row} do not hold whole {ggml_type} blocks of {block}, and "
                          f"llama.cpp defines no fallback for {ggml_type} (llama-quantize stops)")
    new = _FALLBACK[ggml_type]
    return new if row % GGML_TYPES[new][0] == 0 else "F16"


def ggml_bytes(ggml_type: str, n: int, row: int | None = None) -> int:
    """Bytes of ``n`` values in the GGML type (:data:`GGML_TYPES`), in rows of ``row`` (default ``n``).

    >>> ggml_bytes("Q4_K", 4096 * 4096), ggml_bytes("Q8_0", 64)
    (9437184, 68)
    """
    if ggml_type not in GGML_TYPES:
        raise SymllmError(with_list(f"weight_format: unknown GGML type {short(ggml_type, 20)} (known: ", GGML_TYPES,
                                    see="docs/formats.md", near=ggml_type))
    block, size = GGML_TYPES[ggml_type]
    if (row or n) % block or n % (row or n):
        raise SymllmError(f"weight_format: rows of {row or n} do not hold whole {ggml_type} blocks of {block}")
    return n // block * size


#: the tensors llama.cpp's quantizer treats as ``attn_v`` (``category_is_attn_v``, src/llama-quant.cpp 154-158 at
#: 007dbbf3: MPT's, Phi-3's and Qwen3.5's Gated DeltaNet's ``attn_qkv``), counted together (``n_attention_wv``); its
#: third, MLA's ``attn_kv_b``, is never written (llama.cpp's converter stores ``kv_b_proj`` as ``attn_k_b`` and
#: ``attn_v_b``, neither of them attn_v-like: :func:`symllm.costs.formats.gguf_tensors`)
ATTN_V_LIKE = ("attn_v.weight", "attn_qkv.weight")


def _use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def file_type_choice(ftype: str, name: str, row: int, layer: int | None, n_layers: int, *,
                     has_output: bool = True, is_70b: bool = False, n_expert: int = 0) -> str:
    """The GGML type llama.cpp's ``llama_tensor_get_type`` picks for the tensor ``name`` (a GGUF name,
    ``blk.{layer}.`` stripped) in the file type ``ftype`` (:mod:`symllm.costs.formats`' docstring).
    ``layer`` and ``n_layers`` are the position and count its rule reads: for ``attn_v`` (and ``attn_qkv``:
    :data:`ATTN_V_LIKE`), the tensor's place among the model's such tensors and their number (``i_attention_wv``,
    ``n_attention_wv``); for the
    ``ffn_down`` tensors the block index and the number of blocks. ``n_expert`` is the GGUF's
    ``expert_count`` (0 dense): with exactly 8 (Mixtral), ``attn_v`` and ``attn_k`` are Q8_0 and, in Q4_K_S and
    Q4_K_M, ``attn_output`` Q5_K.

    >>> [file_type_choice("Q4_K_M", "attn_v.weight", 4096, i, 32) for i in (0, 4, 6, 31)]
    ['Q6_K', 'Q4_K', 'Q6_K', 'Q6_K']
    >>> (file_type_choice("Q4_K_M", "output.weight", 4096, None, 32),
    ...  file_type_choice("Q8_0", "output.weight", 4096, None, 32))
    ('Q6_K', 'Q8_0')
    >>> [file_type_choice("Q4_K_M", n, 4096, 4, 32, n_expert=8) for n in ("attn_v.weight", "attn_k.weight",
    ...                                                                  "attn_output.weight", "ffn_down_exps.weight")]
    ['Q8_0', 'Q8_0', 'Q5_K', 'Q4_K']
    """
    if ftype not in FILE_TYPES:
        raise SymllmError(with_list(f"weight_format: unknown file type {short(ftype, 20)} (known: ", FILE_TYPES,
                                    see="docs/formats.md", near=ftype))
    new = FILE_TYPES[ftype]
    if new in ("F16", "BF16"):
        return new
    if name == "output.weight" or (not has_output and name == "token_embd.weight"):
        if row % GGML_TYPES[new][0]:
            new = "Q8_0"
        elif new != "Q8_0":
            new = "Q6_K"
    elif name == "token_embd.weight":
        pass
    elif name in ATTN_V_LIKE:
        if ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(layer, n_layers):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and layer < 4:
            new = "Q5_K"
        if is_70b and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"
        if n_expert == 8:
            new = "Q8_0"
    elif name == "attn_k.weight":
        if n_expert == 8:
            new = "Q8_0"
    elif name == "attn_output.weight":
        if n_expert == 8 and ftype in ("Q4_K_S", "Q4_K_M"):
            new = "Q5_K"
    elif name.startswith("ffn_down"):  # the dense ffn_down, the experts' ffn_down_exps, a shared ffn_down_shexp
        if ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(layer, n_layers):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and layer < n_layers // 8:
            new = "Q5_K"
    return fallback(new, row)


#: llama.cpp's graph of a LLaMA layer (llm_build_llama: llm_build_norm, llm_build_kv, llm_build_ffn) run by the 2024
#: CUDA backend one kernel a node, no two fused: its passes in fp32 beside the GEMMs, as (what, bytes a token and
#: layer in d, q, kv and d_ff) -- 4 bytes an fp32 value read or written, 2 an fp16 one; a norm's or a broadcast
#: weight's few values are not counted (read once a micro-batch)
PROMPT_F32_OPS = (
    ("rms_norm then mul by its weight, before attention and before the FFN: read 4 and write 4, twice",
     lambda d, q, kv, ff: 2 * (8 * d + 8 * d)),
    ("rope of Q and K: read 4, write 4", lambda d, q, kv, ff: 8 * q + 8 * kv),
    ("K and V copied into the fp16 cache (cpy f32 -> f16): read 4, write 2", lambda d, q, kv, ff: 6 * kv + 6 * kv),
    ("KQ's Q to fp16 and KQV's fp16 product to fp32 (ggml_cuda_mul_mat_batched_cublas): 4 + 2 each",
     lambda d, q, kv, ff: 6 * q + 6 * q),
    ("the merged heads made contiguous (cont of the permuted KQV): read 4, write 4", lambda d, q, kv, ff: 8 * q),
    ("two residual adds: read 4 + 4, write 4", lambda d, q, kv, ff: 2 * 12 * d),
    ("silu of the gate (read 4, write 4), then mul by up (read 4 + 4, write 4)", lambda d, q, kv, ff: 20 * ff),
)


def prompt_passes(*, seq: int, ubatch: int, layers: int, d: int, d_ff: int, n_h: int, q: int, kv: int,
                  convert: bool = True) -> tuple[int, int, int]:
    """Element counts of llama.cpp's 2024 CUDA prompt path beside its GEMMs, for one sequence of ``seq``
    tokens in micro-batches of ``ubatch`` (``engines."llama.cpp".cuda_prompt`` in efficiency.json):
    ``(converted, scores, f32_bytes)``. ``converted``: the fp32-to-fp16 inputs and fp16-to-fp32 outputs of its fp16
    weight GEMMs (wq, wk, wv each convert the normed input: ``3d``; wo ``q``; gate and up ``2d``; down
    ``d_ff``; outputs ``q + 2kv + d + 2d_ff + d``), 0 where ``convert`` is False; ``scores``: the attention
    scores each micro-batch materialises against every key cached so far, over ``n_h`` heads and ``layers``;
    ``f32_bytes``: the bytes its element-wise graph nodes read and write, whatever the weights
    (:data:`PROMPT_F32_OPS`: ``56d + 28q + 20kv + 20d_ff`` a token and layer).

    >>> # two micro-batches of 2 over 4 tokens, one layer, d 8, d_ff 16, 2 heads, q 8, kv 4:
    >>> # converted 4 tokens x (inputs 24 + 8 + 16 + 16, outputs 8 + 8 + 8 + 32 + 8) = 4 x 128 = 512;
    >>> # scores 2 heads x (2 queries x 2 keys + 2 queries x 4 keys) = 24;
    >>> # f32 bytes 4 tokens x (56·8 + 28·8 + 20·4 + 20·16) = 4 x 1,072 = 4,288
    >>> prompt_passes(seq=4, ubatch=2, layers=1, d=8, d_ff=16, n_h=2, q=8, kv=4)
    (512, 24, 4288)
    """
    inputs, outputs = 3 * d + q + 2 * d + d_ff, q + 2 * kv + d + 2 * d_ff + d
    converted = seq * layers * (inputs + outputs) if convert else 0
    pairs = sum(min(ubatch, seq - start) * min(start + ubatch, seq) for start in range(0, seq, ubatch))
    f32 = seq * layers * sum(each(d, q, kv, d_ff) for _, each in PROMPT_F32_OPS)
    return converted, layers * n_h * pairs, f32


#: the rows of llama.cpp's attention mask: a micro-batch's tokens padded to a multiple of this (ggml.h
#: ``GGML_KQ_MASK_PAD``, 64 in llama.cpp 4227c9be)
KQ_MASK_PAD = 64


def scores_moment(*, context: int, ubatch: int, n_h: int, d: int, q: int) -> int:
    """Bytes llama.cpp's compute buffer holds at a micro-batch's attention scores without FlashAttention
    (``build_attn_mha``'s ``ggml_mul_mat(k, q)`` then ``ggml_soft_max_ext`` in place, llama-graph.cpp at
    llama.cpp 4227c9be): the scores of ``ubatch`` queries against the ``context`` cells of a sequence's cache over
    ``n_h`` heads, the mask (``context`` x ``ubatch`` padded to :data:`KQ_MASK_PAD`), the layer's input (``d``)
    and its queries (``q``, or the product of the scores with V), all fp32 (ggml's matmul results are F32).

    >>> # 2048 cells, 512 queries, 32 heads, d = q = 4096: 4 x (2048·512·32 + 2048·512 + 512·8192) bytes
    >>> scores_moment(context=2048, ubatch=512, n_h=32, d=4096, q=4096) == 4 * (33554432 + 1048576 + 4194304)
    True
    """
    rows = -(-ubatch // KQ_MASK_PAD) * KQ_MASK_PAD
    return 4 * (context * ubatch * n_h + context * rows + ubatch * (d + q))
