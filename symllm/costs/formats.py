"""Weight formats as exact bytes per tensor: GGUF (llama.cpp), bitsandbytes, AWQ, GPTQ, FP8, MXFP4, NVFP4 (the
KV-cache formats: :mod:`symllm.costs.kv_formats`).

The tensors come from the component tree (:mod:`symllm.arch.components`): every component with a weight
(``rules.weight`` other than ``"none"``) and a non-zero parameter count is one stored tensor per repeat; a
linear is a ``fan_out × fan_in`` matrix whose rows are ``fan_in`` long (``shape``) plus a ``fan_out`` bias
when its parameters exceed ``fan_in·fan_out``; an embedding is ``V`` rows of ``d``; a norm is a vector;
fused routed experts (:func:`~symllm.arch.components.experts`) are per expert a gate and an up matrix
(``d_ff`` rows of ``d``) and a down matrix (``d`` rows of ``d_ff``); Nemotron-H's ungated relu2 experts an up
and a down matrix only, of ``d`` or, Nemotron-3 Super's latent experts, of ``d_lm``. Element counts are the
tree's closed forms evaluated at the spec's numbers; a tied lm_head (0 parameters) stores nothing.

**Which kinds of weight each format quantizes** (:data:`QUANTIZES`; every other tensor, biases included,
stays in ``bf16`` (2 bytes), except in GGUF where one-dimensional tensors stay ``F32``):

* ``nf4``, ``nf4-nodq``, ``int8`` (bitsandbytes through transformers): the ``"linear"`` projections; the
  lm_head is in ``modules_to_not_convert`` (transformers' ``get_keys_to_not_convert``), embeddings and
  norms are not ``nn.Linear``; the router and fused experts are kept (QLoRA's base weights,
  :data:`symllm.costs.finetune.FORMATS`, read this rule).
* ``fp4``, ``fp4-nodq`` (bitsandbytes' FP4): as ``nf4``.
* ``awq``, ``gptq``, ``fp8-*``, ``nvfp4``, ``w4a16``, ``w8a16`` (and ``-asym``), ``w8a8*``: the linear projections and
  the routed experts (AutoAWQ, GPTQModel, DeepSeek-V3's, ModelOpt's and llm-compressor's checkpoints quantize
  each expert's projections, keep the router ``gate``, the embeddings, the norms and the lm_head in bf16).
* ``mxfp4``: the routed experts only (gpt-oss: ``mlp1``/``mlp2`` experts in MXFP4, attention, router,
  embedding and unembedding in bf16); a dense model keeps every weight in bf16.
* GGUF: every weight of two or more dimensions (llama.cpp's ``llama_model_quantize_impl``: a tensor is
  quantized when its name ends in ``weight`` and ``ggml_n_dims >= 2``, never ``ffn_gate_inp``, the router),
  norms and biases ``F32``.

**Bytes per tensor of ``n`` elements in rows of ``r``** (``o = n / r`` rows, group ``g``):

* GGUF type ``T``: ``n / block(T) · size(T)`` (:data:`GGML_TYPES`, ggml's ``type_traits``: block size and
  bytes per block); a row must hold whole blocks.
* NF4 (bitsandbytes ``quantize_4bit``, blocksize 64): ``n/2`` packed bytes, an fp32 absmax per 64 values and
  the 16-entry fp32 code (64 bytes); with double quantization the absmax is one byte per block, plus an fp32
  absmax per 256 blocks, the nested 256-entry fp32 code (1024 bytes) and an fp32 offset (4 bytes).
  bitsandbytes' FP4 (``fp4``, ``fp4-nodq``) stores the same: only the 16 code values differ.
* LLM.int8 (``Linear8bitLt``): ``n`` int8 bytes and an fp32 scale per output row (``SCB``).
* AWQ (AutoAWQ GEMM, 4 bits, ``g`` = 128): ``qweight`` int32 ``(r, o/8)`` = ``n/2`` bytes, ``qzeros`` int32
  ``(r/g, o/8)``, ``scales`` fp16 ``(r/g, o)``.
* GPTQ (AutoGPTQ / GPTQModel, ``b`` bits, ``g`` = 128): ``qweight`` int32 ``(r·b/32, o)``, ``qzeros`` int32
  ``(r/g, o·b/32)``, ``scales`` fp16 ``(r/g, o)``, ``g_idx`` int32 ``(r,)``.
* compressed-tensors ``pack-quantized`` (llm-compressor's W4A16 / W8A16: ``b``-bit integers, group ``g`` =
  128): ``weight_packed`` int32 ``(o, r·b/32)``, ``weight_scale`` 2 bytes (the model's bf16/fp16)
  ``(o, r/g)``, ``weight_shape`` int64 ``(2,)``; ``-asym`` adds ``weight_zero_point`` int32
  ``(⌈o·b/32⌉, r/g)``.
* compressed-tensors ``int-quantized`` / ``float-quantized`` (llm-compressor's W8A8 int8 and FP8 schemes):
  ``n`` bytes (``weight`` int8 or F8_E4M3) and a ``weight_scale`` in the model's 2-byte dtype (compressed-tensors
  makes scales in the weight's dtype): one per output row (``w8a8``, ``w8a8-fp8``: ``(o, 1)``), one per tensor
  (``w8a8-fp8-tensor``) or one per 128×128 block (``w8a8-fp8-block``); symmetric, so no zero point is stored.
* FP8 E4M3: ``n`` bytes plus fp32 scales: one per tensor (``fp8``), one per output row (``fp8-channel``), or
  one per 128×128 block, ``ceil(o/128)·ceil(r/128)`` (``fp8-block``, DeepSeek-V3's ``weight_scale_inv``);
  static activation scales (``input_scale``, one fp32 per linear) are not weights and are not counted.
* MXFP4 (OCP MX spec): 32 four-bit values (16 bytes) and one E8M0 scale byte per block: 17 bytes per 32.
* NVFP4: 16 four-bit values (8 bytes) and one E4M3 scale byte per block: 9 bytes per 16, plus one fp32
  per-tensor scale (``weight_scale_2``).

**llama.cpp's named file types** (:data:`FILE_TYPES`; ``src/llama-quant.cpp``, ``llama_tensor_get_type``
at ggml-org/llama.cpp 007dbbf3, read 2026-11-29; no importance matrix, dense or mixture of experts): the base type
of the file type (Q4_K for Q4_K_M/Q4_K_S, Q5_K for Q5_K_M/Q5_K_S, Q6_K, Q8_0, Q4_0) for every quantized
tensor, the routed experts' 3-D ``ffn_*_exps`` included, except:

* ``output.weight`` (or, with tied embeddings, ``token_embd.weight``): Q8_0 if its rows are not a multiple
  of the base type's block, else Q6_K unless the base type is Q8_0;
* ``attn_v.weight`` (and ``attn_qkv``, MPT's, Phi-3's and Qwen3.5's DeltaNet's, which llama.cpp ranks with it:
  ``category_is_attn_v``):
  Q6_K in Q4_K_M and Q5_K_M for the ``attn_v`` tensors ``use_more_bits(i, n)`` picks
  (``i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2``, integer division; ``i`` counts the model's ``attn_v``
  tensors in block order and ``n`` is their number: a hybrid's attention layers only, Qwen3.5's ``attn_qkv``
  too), Q5_K in Q4_K_S for the
  first 4; then, for ``LLM_TYPE_70B`` (llama-model.cpp ``load_hparams``: a dense llama of 80 layers and
  ``n_head != n_head_kv``), Q3_K/Q4_K become Q5_K;
* with exactly 8 experts (``expert_count``, Mixtral): ``attn_v`` and ``attn_k`` Q8_0 in every file type, and
  ``attn_output`` Q5_K in Q4_K_S and Q4_K_M;
* ``ffn_down``, ``ffn_down_exps`` and a shared expert's ``ffn_down``: Q6_K in Q4_K_M and Q5_K_M where
  ``use_more_bits(i, n)``, Q5_K in Q4_K_S for ``i < n/8``, ``n`` the file's blocks (GLM-4.5's MTP layer too:
  ``n_layer_all``) and ``i`` the block (a
  mixture of experts: ``layer_info`` reads it from the name) or, dense, the count of ``ffn_down`` tensors
  before it (``i_ffn_down``); the gate and up experts keep the base type;
* a tensor whose rows are not a multiple of its type's block falls back (``tensor_type_fallback``,
  :func:`~symllm.costs.ggml.fallback`): Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, Q2_K/Q3_K/TQ types → Q4_0,
  IQ types → IQ4_NL, then F16 if that block does not fit either; other types have none (refused).

``gguf:T`` is ``llama-quantize --pure`` to type ``T``: every quantized tensor in ``T``, with the same
fallbacks (gpt-oss's rows of 2880 hold no Q4_K block: Q5_0). The ``size`` llama-bench reports is the sum of the
tensors' bytes; a GGUF file adds its metadata (the tokenizer) and up to 31 bytes of alignment per tensor; Llama 3.1's
``rope_freqs.weight`` (``d_h/2`` F32 values) is not a component and is not counted.

>>> r = weight_bytes("llama3.1-8b", "Q4_K_M")
>>> r["tensors"]["blk.0.attn_v.weight"]["type"], r["tensors"]["blk.4.attn_v.weight"]["type"]
('Q6_K', 'Q4_K')
>>> round(r["total"] / 2**30, 2)  # llama-bench: Llama-3.1-8B Q4_K_M, 4.58 GiB
4.58
"""
from __future__ import annotations

from fractions import Fraction
from math import ceil, prod

from symllm._lazy import module
from symllm.arch.dtypes import BYTES
from symllm.costs.ggml import ATTN_V_LIKE, FILE_TYPES, GGML_TYPES, fallback, file_type_choice, ggml_bytes
from symllm.errors import SymllmError
from symllm.validate import short, with_list

S = module("symllm.arch.symbols")  # SymPy's symbols, on first use: a workload names a format without them

__all__ = ["QUANTIZES", "FORMATS", "GGUF_NAMES", "GGUF_EXPERTS", "tensors",
           "gguf_tensors", "gguf_types_modelled",
           "check_format", "effective", "tensor_bytes", "spec_for", "declared_names", "weight_bytes",
           "bytes_per_weight"]

#: format -> the kinds of weight (``rules.weight``) it quantizes; the rest stays bf16 (module docstring)
QUANTIZES = {
    "nf4": ("linear",), "nf4-nodq": ("linear",), "int8": ("linear",),
    "awq": ("linear", "experts"), "gptq": ("linear", "experts"), "gptq-8bit": ("linear", "experts"),
    "fp8": ("linear", "experts"), "fp8-channel": ("linear", "experts"), "fp8-block": ("linear", "experts"),
    "nvfp4": ("linear", "experts"), "mxfp4": ("experts",),
    "w4a16": ("linear", "experts"), "w4a16-asym": ("linear", "experts"), "w8a16": ("linear", "experts"),
    "w8a16-asym": ("linear", "experts"), "w8a8": ("linear", "experts"), "w8a8-fp8": ("linear", "experts"),
    "w8a8-fp8-tensor": ("linear", "experts"), "w8a8-fp8-block": ("linear", "experts"),
    "fp4": ("linear",), "fp4-nodq": ("linear",),
    "gguf": ("embedding", "linear", "head", "experts"),  # every 2-D weight but the router
}

#: every format name weight_bytes() takes (besides ``gguf:TYPE``, and a grouped format named for another group:
#: ``gptq-g32``, ``awq-g64``, ``w4a16-channel``: :func:`symllm.arch.quantization.grouped`)
FORMATS = tuple(f for f in QUANTIZES if f != "gguf") + tuple(FILE_TYPES) + ("bf16", "fp16", "fp32")

#: symllm component name -> GGUF tensor name (gguf-py ``constants.py`` ``TENSOR_NAMES``; the format's own
#: vocabulary: llama.cpp chooses a type by this name): each component declares its own (``Rules.gguf``, where
#: the component is defined); this table is read from the components of every part (:func:`declared_names`)
GGUF_NAMES: dict[str, str]  # built on first use (it walks component trees: SymPy)
#: the routed experts' GGUF tensors (gguf-py ``FFN_GATE_EXP`` ...): one 3-D tensor per layer, ``ne = (row, rows,
#: n_e)``, as llama.cpp's converter merges them
GGUF_EXPERTS = {"gate": "ffn_gate_exps", "up": "ffn_up_exps", "down": "ffn_down_exps",
                "gate_up": "ffn_gate_exps ffn_up_exps"}  # (gpt-oss's fused bias: stored as the two, _stored)

_HIGH = BYTES["bf16"]  # bf16/fp16 bytes of a weight a format leaves alone


def spec_for(config):
    """The :class:`~symllm.arch.specs.Spec` of ``config`` (a Spec as given, a ModelConfig, or a preset name or
    path), the one reading formats and checkpoints share.

    >>> s = spec_for("llama2-7b")
    >>> type(s).__name__, spec_for(s) is s
    ('Spec', True)
    """
    from symllm.arch.config import ModelConfig, load
    from symllm.arch.specs import Spec, spec_of
    if isinstance(config, Spec):
        return config
    return spec_of(config if isinstance(config, ModelConfig) else load(config))


def _int(expr, values) -> int:
    from symllm.arch.algebra import substitute  # lazily (SymPy): the CLI's fast paths import this module without it
    v = substitute(expr, values)
    if not v.is_Integer:
        raise SymllmError(f"weight_format: {expr} is not a whole number for this config ({v})")
    return int(v)


def tensors(config, *, mtp: bool = False) -> list[dict]:
    """The stored tensors of a config's model, in model order (``mtp``: then its multi-token-prediction modules,
    :func:`symllm.arch.resolved.mtp_module`, as blocks after the model's layers): ``path`` (tree path,
    ``/``-joined), ``kind`` (the component's ``rules.weight``, or ``"bias"``), ``names`` (its LoRA names, symllm's
    and HF's, or ``()``), ``row`` (elements per row), ``rows`` per copy,
    ``count`` (copies: the repeats above it, times ``n_e`` for experts), ``layer`` (the block index of
    each copy's first layer, or None), ``layers`` (the layers of its group of blocks, or None), ``positions``
    (those layers' indices in the model, in order: a group's layers need not be consecutive, Qwen3-Next's
    Gated DeltaNet layers are three of every four; or None), ``ndim``,
    ``hf`` (the Hugging Face module name each component on its path declares, ``Rules.hf``, or a linear's LoRA HF
    name; "" where none), ``hf_params`` (``Rules.hf_params``: its parameters' own names where they sit bare on
    its parent's module) and ``gguf`` (``Rules.gguf``).

    >>> [(t["path"], t["rows"], t["row"], t["count"]) for t in tensors("llama3.2-1b")][:3]
    [('embedding', 128256, 2048, 1), ('block/attention_norm', 1, 2048, 16), ('block/attention/wq', 2048, 2048, 16)]
    """
    spec = spec_for(config)
    values = spec.values()
    out: list[dict] = []

    def visit(comp, path, count, layer, layers, hf, positions=None):
        hf = (*hf, comp.rules.hf or (comp.rules.lora[1] if comp.rules.lora else ""))  # its module's HF name
        if comp.rules.weight != "none" and _int(comp.params, values):
            out.extend(dict(t, layers=layers, positions=positions, hf=hf, hf_params=comp.rules.hf_params,
                            gguf=comp.rules.gguf)
                       for t in _own(comp, path, count, layer, values))
        for c in comp.children:
            visit(c, f"{path}/{c.name}", count * _int(c.repeat, values), layer, layers, hf, positions)

    mdl = spec.model("dense")
    kinds = spec.config.layer_kinds()  # one a layer, in model order
    group_kinds = iter(kind for kind, _ in spec.config.groups)  # the tree's groups of blocks, in its order
    first = 0  # the model's groups of blocks hold layers first .. first + repeat - 1, in order
    for c in mdl.children:
        rep = _int(c.repeat, values)
        if c.children:
            kind = next(group_kinds, None)
            positions = tuple(i for i, k in enumerate(kinds) if k == kind)
            visit(c, c.name, rep, first, rep, (),
                  positions if len(positions) == rep else tuple(range(first, first + rep)))
            first += rep
        else:
            visit(c, c.name, rep, None, None, ())
    if mtp and spec.structure.mtp:
        from symllm.arch.resolved import mtp_module
        module = mtp_module(spec.structure, mdl)
        rep = _int(module.repeat, values)
        visit(module, module.name, rep, first, rep, (), tuple(range(first, first + rep)))
    return out


def _own(comp, path, count, layer, values) -> list[dict]:
    n = _int(comp.params, values)
    kind = comp.rules.weight
    base = dict(path=path, kind=kind, count=count, layer=layer, names=comp.rules.lora or ())
    if comp.shape:
        fan_in, fan_out = (_int(x, values) for x in comp.shape)
        rows = [dict(base, row=fan_in, rows=fan_out, ndim=2)]
        if n > fan_in * fan_out:
            rows.append(dict(base, path=path + ".bias", kind="bias", row=n - fan_in * fan_out, rows=1, ndim=1))
        return rows
    if kind == "embedding":
        d = _int(S.d, values)
        return [dict(base, row=d, rows=n // d, ndim=2)]
    if kind == "head_norm":  # Command-R+'s per-head QK-norm: a (heads, head_dim) tensor
        d_h = _int(S.d_h, values)
        return [dict(base, row=d_h, rows=n // d_h, ndim=2)]
    if kind == "biased_norm":  # nn.LayerNorm with a bias: its weight and its bias, half the parameters each
        return [dict(base, row=n // 2, rows=1, ndim=1), dict(base, path=path + ".bias", kind="bias", row=n // 2,
                                                             rows=1, ndim=1)]
    if kind == "experts":  # per expert: gate and up (d_ff rows of d), down (d rows of d_ff)
        d, d_ff, n_e = (_int(x, values) for x in (S.d, S.d_ff, S.n_e))
        biases, parts = 0, None
        for width in (S.d, S.d_lm):  # Nemotron-H's ungated relu2 experts: up and down only, of d or latent d_lm
            if (comp.params - 2 * width * S.d_ff * S.n_e).expand() == 0:
                w = _int(width, values)
                parts = (("up", w, d_ff), ("down", d_ff, w))
                break
        if parts is None:
            biases = n - 3 * d * d_ff * n_e  # gpt-oss: 2·d_ff on gate/up and d on down, per expert
            if biases not in (0, (2 * d_ff + d) * n_e):
                raise SymllmError(f"weight_format: the routed experts ({path}) are neither SwiGLU (3·d·d_ff each) nor "
                                  "relu2 (2·d·d_ff each): no per-tensor layout for them")
            parts = (("gate", d, d_ff), ("up", d, d_ff), ("down", d_ff, d))
        # each marked with the experts' own path (``experts``): a checkpoint may store them fused, per layer
        out = [dict(base, path=f"{path}/{p}", row=r, rows=o, count=count * n_e, ndim=2, experts=path)
               for p, r, o in parts]
        return out + [dict(base, path=f"{path}/{p}.bias", kind="bias", row=r, rows=1, count=count * n_e, ndim=1,
                           experts=path) for p, r in (("gate_up", 2 * d_ff), ("down", d)) if biases]
    return [dict(base, row=n, rows=1, ndim=1)]


def _base(fmt: str) -> tuple[str, int]:
    """A format's base name and group (:func:`symllm.arch.quantization.split_group`: ``gptq-g32``)."""
    from symllm.arch.quantization import split_group
    return split_group(fmt)


def check_format(fmt, field: str = "weight_format") -> str:
    """``fmt`` as :func:`weight_bytes` names it, if it is a weight format it knows (:data:`FORMATS` or
    ``gguf:TYPE``), spelt in any case as llama-quantize and Ollama take them (``q4_k_m``, ``AWQ``), and a
    llama.cpp file type also with the ``gguf:`` prefix (``gguf:Q4_K_M`` is ``Q4_K_M``; ``gguf:`` and a
    GGML type, ``gguf:IQ4_XS``, is every matrix in that type: ``llama-quantize --pure``).

    >>> check_format("gguf:IQ4_XS"), check_format("gguf:iq4_xs"), check_format("q4_k_m"), check_format("AWQ")
    ('gguf:IQ4_XS', 'gguf:IQ4_XS', 'Q4_K_M', 'awq')
    >>> check_format("gguf:Q4_K_M"), check_format("gguf:Q8_0"), check_format("q8_0")
    ('Q4_K_M', 'gguf:Q8_0', 'Q8_0')
    >>> check_format("Q4_K_L")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: weight_format: unknown 'Q4_K_L' (known: Q4_K_S, Q4_K_M; all 34: see docs/formats.md)
    """
    if isinstance(fmt, str):
        if fmt in FORMATS or fmt.startswith("gguf:") and fmt[5:] in GGML_TYPES or _base(fmt)[0] != fmt:
            return fmt  # a grouped format (awq-g64) is its base's with another group size
        folded = fmt.strip().casefold()
        ggml = {t.casefold(): t for t in GGML_TYPES}
        if folded.startswith("gguf:") and folded[5:] in ggml:
            return "gguf:" + ggml[folded[5:]]
        names = {f.casefold(): f for f in FORMATS}
        if folded.startswith("gguf:") and folded[5:] in names and names[folded[5:]] in FILE_TYPES:
            return names[folded[5:]]
        if folded in names:
            return names[folded]
    raise SymllmError(with_list(f"{field}: unknown {short(fmt, 20)} (known: ", FORMATS + ("gguf:TYPE",),
                                see="docs/formats.md", near=fmt))


def effective(config, fmt: str | None = None) -> str | None:
    """The weight format that prices a config's weights: ``fmt`` (a workload's ``weight_format``, which
    overrides), else the one its config.json's ``quantization_config`` states (``ModelConfig.weight_format``,
    :mod:`symllm.arch.quantization`), else None (``--dtype``).

    >>> effective("llama3.1-8b"), effective("llama3.1-8b", "nf4")
    (None, 'nf4')
    """
    if fmt is not None:
        return fmt
    spec = spec_for(config)
    return spec.config.weight_format


def tensor_bytes(fmt: str, row: int, rows: int, group: int = 128) -> tuple[str, int]:
    """(stored type, bytes) of one ``rows × row`` weight matrix quantized in ``fmt`` (not a GGUF type;
    rules in the module docstring).

    >>> tensor_bytes("awq", 4096, 4096)  # n/2 + qzeros (r/g · o/8 int32) + scales (r/g · o fp16)
    ('awq-int4', 8716288)
    >>> tensor_bytes("nf4", 4096, 4096)[1] == 4096 * 4096 // 2 + 4096 * 4096 // 64 + 4 * 1024 + 64 + 1024 + 4
    True
    >>> tensor_bytes("gptq-channel", 4096, 4096)  # n/2 + qzeros (1 · o/8 int32) + scales (1 · o fp16) + g_idx
    ('gptq-int4', 8415232)
    """
    n = row * rows
    base, named = _base(fmt)
    if base != fmt:  # a grouped format named for its group (awq-g64; gptq-channel: one group per row)
        fmt, group = base, row if named == -1 else named
    if fmt in ("nf4", "nf4-nodq", "fp4", "fp4-nodq"):
        blocks = ceil(n / 64)
        extra = 4 * blocks if fmt.endswith("-nodq") else blocks + 4 * ceil(blocks / 256) + 1024 + 4
        return fmt[:3], ceil(n / 2) + extra + 64
    if fmt == "int8":
        return "int8", n + 4 * rows
    if fmt in ("awq", "gptq", "gptq-8bit"):
        bits = 8 if fmt == "gptq-8bit" else 4
        if row % group or (rows * bits) % 32 or (row * bits) % 32:
            raise SymllmError(f"weight_format: {fmt} needs rows of a multiple of {group}, sizes 32/{bits}-aligned")
        groups = row // group
        packed = n * bits // 8
        zeros = groups * rows * bits // 8
        scales = 2 * groups * rows
        g_idx = 4 * row if fmt != "awq" else 0
        return f"{fmt.split('-')[0]}-int{bits}", packed + zeros + scales + g_idx
    if fmt in ("w4a16", "w4a16-asym", "w8a16", "w8a16-asym"):  # compressed-tensors pack-quantized
        bits = 8 if fmt.startswith("w8") else 4
        if row % group:
            raise SymllmError(f"weight_format: {fmt} needs rows of a multiple of {group}, not {row}")
        groups = row // group
        zeros = 4 * ceil(rows * bits / 32) * groups if fmt.endswith("-asym") else 0
        return f"int{bits}", 4 * rows * ceil(row * bits / 32) + 2 * rows * groups + 16 + zeros
    if fmt == "fp8":
        return "fp8_e4m3", n + 4
    if fmt in ("w8a8", "w8a8-fp8", "w8a8-fp8-tensor", "w8a8-fp8-block"):  # compressed-tensors: 2-byte scales
        scales = {"w8a8-fp8-tensor": 1, "w8a8-fp8-block": ceil(rows / 128) * ceil(row / 128)}.get(fmt, rows)
        return "int8" if fmt == "w8a8" else "fp8_e4m3", n + 2 * scales
    if fmt == "fp8-channel":
        return "fp8_e4m3", n + 4 * rows
    if fmt == "fp8-block":
        return "fp8_e4m3", n + 4 * ceil(rows / 128) * ceil(row / 128)
    if fmt == "mxfp4":
        if row % 32:
            raise SymllmError(f"weight_format: mxfp4 needs rows of a multiple of 32, not {row}")
        return "mxfp4", n // 32 * 17
    if fmt == "nvfp4":
        if row % 16:
            raise SymllmError(f"weight_format: nvfp4 needs rows of a multiple of 16, not {row}")
        return "nvfp4", n // 16 * 9 + 4
    check_format(fmt)  # an unknown name: its one line
    raise SymllmError(f"weight_format: {fmt!r} has no per-tensor bytes (a file type: weight_bytes)")


def _gguf_name(t: dict, post_attention: bool) -> str:
    """A tensor's GGUF name, ``blk.N.`` left off: its component's (``Rules.gguf``; the routed experts'
    :data:`GGUF_EXPERTS`), ``.weight`` or ``.bias``; the norm before the feed-forward is ``post_attention_norm``
    where ``post_attention`` (:func:`gguf_tensors`)."""
    leaf = t["path"].split("/")[-1]
    suffix = "bias" if leaf.endswith(".bias") else "weight"
    leaf = leaf.removesuffix(".bias")
    own = GGUF_EXPERTS.get(leaf) if t.get("experts") else t["gguf"]  # a component's own (Rules.gguf)
    if not own:
        raise SymllmError(f"weight_format: GGUF has no name for {t['path']!r} (symllm names llama-like models, "
                          "MPT, Phi-3, DeepSeek-V2/V3, gpt-oss, Qwen2-MoE, Qwen3-Next, Qwen3.5 and Nemotron-H: "
                          "docs/formats.md)")
    own = "post_attention_norm" if post_attention and own == "ffn_norm" else own
    return f"{own}.{suffix}"


def _stored(t: dict, stem: str, shape: list[int], values) -> list[tuple[str, list[int]]]:
    """(name, ``ne``) of each GGUF tensor llama.cpp's converter (convert_hf_to_gguf) writes for tensor ``t`` of
    :func:`tensors`: one, but for gpt-oss's experts' gate_up bias (``ffn_gate_exps.bias`` and ``ffn_up_exps.bias``,
    ``d_ff`` each), MLA's ``kv_b_proj`` (split per head into ``attn_k_b``, transposed, ``ne = (d_hn, r_kv, n_h)``,
    and ``attn_v_b``, ``(r_kv, d_hv, n_h)``: DeepseekV2Model.modify_tensors), parameters bare on one module (the
    Gated DeltaNet's ``A_log`` and ``dt_bias``: ``ssm_a`` and ``ssm_dt.bias``, one name each in ``Rules.gguf``,
    equal shares) and Qwen2-MoE's ``shared_expert_gate`` (``d -> 1``: ``ffn_gate_inp_shexp``, a vector of ``ne = (d,)``
    as llama.cpp's loader reads it, F32)."""
    if stem == "attn_kv_b.weight":
        n_h, d_hn, d_hv, r_kv = (_int(x, values) for x in (S.n_h, S.d_hn, S.d_hv, S.r_kv))
        return [("attn_k_b.weight", [d_hn, r_kv, n_h]), ("attn_v_b.weight", [r_kv, d_hv, n_h])]
    suffix = ".bias" if stem.endswith(".bias") else ".weight"
    names = stem.removesuffix(suffix).split()
    if len(names) > 1:  # one name each (Rules.gguf, GGUF_EXPERTS), equal shares of the rows
        return [(n if n.endswith(".bias") else f"{n}{suffix}", [shape[0] // len(names), *shape[1:]]) for n in names]
    return [(stem, shape[:1] if stem == "ffn_gate_inp_shexp.weight" else shape)]


def gguf_tensors(config) -> list[dict]:
    """The tensors of a config's model as a GGUF file stores them, in model order: ``name``
    (``blk.3.attn_v.weight``), ``stem`` (the name without ``blk.N.``), ``shape`` (``ne``, the row first), ``row``,
    ``elements``, ``layer`` (or None) and ``kind`` (:func:`tensors`); the routed experts one 3-D tensor per layer
    (:data:`GGUF_EXPERTS`), tensors the converter splits split (:func:`_stored`). The norm before the feed-forward
    is ``post_attention_norm`` (gguf-py's MODEL_TENSORS list no ``ffn_norm``) in gpt-oss (attention sinks),
    Qwen3-Next and Qwen3.5 (Gated DeltaNet layers) and GLM-4.5 (shared experts without MLA), ``ffn_norm`` elsewhere.
    GLM-4.5's multi-token-prediction layer is written too (llama.cpp's Glm4MoeModel converts ``num_hidden_layers +
    num_nextn_predict_layers`` blocks): ``blk.{L}.``, its block's tensors and ``nextn.eh_proj``, ``nextn.enorm``,
    ``nextn.hnorm``, ``nextn.shared_head_norm``, ``nextn.embed_tokens`` and ``nextn.shared_head_head``; DeepSeek's
    is not (DeepseekV2Model.skip_mtp).

    >>> [(t["name"], t["shape"]) for t in gguf_tensors("mixtral-8x7b") if t["name"].startswith("blk.0.ffn_")][1:3]
    [('blk.0.ffn_gate_inp.weight', [4096, 8]), ('blk.0.ffn_gate_exps.weight', [4096, 14336, 8])]
    >>> [(t["name"], t["shape"]) for t in gguf_tensors("deepseek-v2-lite") if t["layer"] == 0][4:6]
    [('blk.0.attn_k_b.weight', [128, 512, 16]), ('blk.0.attn_v_b.weight', [512, 128, 16])]
    """
    spec = spec_for(config)
    cfg = spec.config
    if cfg.hc_mult is not None:  # (gguf-py's MODEL_ARCH_NAMES: deepseek, deepseek2, none for V4)
        raise SymllmError("weight_format: llama.cpp's GGUF has no DeepSeek-V4 architecture (no tensor names)")
    glm = cfg.tp_plan == "glm4_moe"  # GLM-4.5 (its config.json's model_type)
    post_attention = bool(cfg.attention_sinks or cfg.linear_key_heads or glm)
    n_e, values = cfg.n_experts or 1, spec.values()
    out = []
    for t in tensors(spec, mtp=glm and not spec.structure.mtp_blocks):
        experts = bool(t.get("experts"))  # a routed expert's matrix or bias: one tensor a layer
        copies = t["count"] // n_e if experts else t["count"]
        shape = [t["row"], t["rows"]] if t["ndim"] == 2 else [t["row"]]
        if experts:
            shape.append(n_e)
        blocks = t["positions"] if t["positions"] and len(t["positions"]) == copies else \
            range(t["layer"], t["layer"] + copies) if t["layer"] is not None else [None]
        stored = _stored(t, _gguf_name(t, post_attention), shape, values)
        for i in blocks:  # a hybrid's layers by their index in the model (GGUF's blk.N is HF's layers.N)
            out.extend(dict(name=stem if i is None else f"blk.{i}.{stem}", stem=stem, shape=list(ne), row=ne[0],
                            elements=prod(ne), layer=i, kind=t["kind"], ndim=min(len(ne), 2)) for stem, ne in stored)
    return out


def gguf_types_modelled(fmt: str) -> bool:
    """Whether :func:`weight_bytes` knows the GGML type of every tensor in the GGUF format ``fmt``: any llama.cpp
    file type (:data:`FILE_TYPES`) or ``gguf:TYPE``, for any model it names (dense or mixture of experts).

    >>> gguf_types_modelled("Q4_K_M"), gguf_types_modelled("gguf:Q8_0"), gguf_types_modelled("awq")
    (True, True, False)
    """
    return fmt in FILE_TYPES or fmt.startswith("gguf:")


def _counters(gts: list[dict], n_expert: int, n_layers: int) -> dict[str, tuple[int, int]]:
    """GGUF tensor name -> (the position, the count) llama.cpp's file-type rule reads for it, where that is not
    (its block, the number of blocks): ``attn_v`` counts the ``attn_v`` tensors in block order
    (``i_attention_wv`` of ``n_attention_wv``: a hybrid's attention layers only; with ``attn_qkv``,
    :data:`~symllm.costs.ggml.ATTN_V_LIKE`); a dense model's ``ffn_down``
    counts the ``ffn_down`` tensors (``i_ffn_down``) of the number of blocks; with experts (``n_expert > 1``) the
    block index is read from the name (``layer_info``), so nothing is listed."""
    out = {}
    v = sorted((t["layer"], t["name"]) for t in gts if t["layer"] is not None and t["stem"] in ATTN_V_LIKE)
    out.update({name: (k, len(v)) for k, (_, name) in enumerate(v)})
    if n_expert <= 1:
        down = sorted((t["layer"], t["name"]) for t in gts if t["layer"] is not None
                      and t["stem"].startswith("ffn_down") and t["stem"].endswith(".weight"))
        out.update({name: (k, n_layers) for k, (_, name) in enumerate(down)})
    return out


def weight_bytes(config, fmt: str = "Q4_K_M") -> dict:
    """The exact bytes of a config's weights in the format ``fmt``: ``{"total": int, "elements": int,
    "bits_per_weight": Fraction, "tensors": {name: {"type", "count", "elements", "bytes"}}}``.
    GGUF file types (:data:`FILE_TYPES`) and ``gguf:TYPE`` list one entry per GGUF tensor
    (``blk.3.attn_v.weight``); the other formats one per tree path, over all its copies.

    >>> r = weight_bytes("llama3.2-1b", "awq")
    >>> r["tensors"]["block/attention/wq"]["type"], r["tensors"]["embedding"]["type"]
    ('awq-int4', 'bf16')
    >>> weight_bytes("llama3.2-1b", "bf16")["total"] == 2 * 1235814400
    True
    """
    fmt = check_format(fmt)
    spec = spec_for(config)
    out: dict[str, dict] = {}
    gguf = gguf_types_modelled(fmt)
    if gguf:
        pure = fmt.removeprefix("gguf:") if fmt.startswith("gguf:") else None
        if pure is not None and pure not in GGML_TYPES:
            raise SymllmError(with_list(f"weight_format: unknown GGML type {short(pure, 20)} (known: ", GGML_TYPES,
                                        see="docs/formats.md", near=pure))
        cfg = spec.config
        n_expert = cfg.n_experts or 0
        is_70b = not n_expert and cfg.n_layers == 80 and cfg.n_heads != cfg.n_kv_heads  # (a MoE is LLM_TYPE_8x7B, ...)
        gts = gguf_tensors(spec)
        has_output = any(t["name"] == "output.weight" for t in gts)  # (llama.cpp's own test)
        # the file's block count (hparams.n_layer_all: GLM-4.5's MTP layer too), which its ffn_down rule reads
        n_layers = 1 + max(t["layer"] for t in gts if t["layer"] is not None)
        place = _counters(gts, n_expert, n_layers)
        for t in gts:
            name, i, n = t["name"], t["layer"], t["elements"]
            if t["ndim"] < 2 or t["kind"] not in QUANTIZES["gguf"]:
                kind = "F32"  # norms, biases, the router (convert_hf_to_gguf and llama-quantize keep them F32)
            elif pure is not None:
                kind = fallback(pure, t["row"])  # --pure still falls back (llama_tensor_get_type)
            else:
                at, of = place.get(name, (i, n_layers))
                kind = file_type_choice(fmt, t["stem"], t["row"], at, of, has_output=has_output, is_70b=is_70b,
                                        n_expert=n_expert)
            out[name] = dict(type=kind, count=1, elements=n, bytes=ggml_bytes(kind, n, t["row"]))
    else:
        plain = {d: BYTES[d] for d in ("bf16", "fp16", "fp32")}
        base = _base(fmt)[0]  # a grouped format's kinds are its base's (gptq-g32: gptq's)
        if base not in QUANTIZES and fmt not in plain:
            raise SymllmError(f"weight_format: {fmt!r} has no per-tensor bytes")
        cfg = spec.config
        kept = cfg.weight_format_kept if fmt == cfg.weight_format and cfg.weight_format_kept else ()
        from symllm.arch.quantization import kept_layers
        matched: set = set()
        for t in tensors(spec):
            n = t["row"] * t["rows"]
            if base in QUANTIZES and t["ndim"] == 2 and t["kind"] in QUANTIZES[base]:
                kind, each = tensor_bytes(fmt, t["row"], t["rows"])
                held = kept_layers(t, kept, matched) if kept else 0
                if held:  # the config's quantization_config keeps them unquantized (symllm.arch.quantization)
                    copies = t["count"] // t["layers"] * held
                    out[t["path"]] = dict(type=f"{kind} ({held} of {t['layers']} layers bf16)", count=t["count"],
                                          elements=n * t["count"],
                                          bytes=each * (t["count"] - copies) + _HIGH * n * copies)
                    continue
            else:
                kind, each = ("bf16", _HIGH * n) if base in QUANTIZES else (fmt, plain[fmt] * n)
            out[t["path"]] = dict(type=kind, count=t["count"], elements=n * t["count"], bytes=each * t["count"])
        for pattern in kept:
            if pattern not in matched:
                raise SymllmError(f"quantization_config: a module kept unquantized ({short(pattern, 40)}) matches "
                                  "no attention or MLP projection symllm names (model.layers.N.self_attn.q_proj, ...)")
    total = sum(v["bytes"] for v in out.values())
    elements = sum(v["elements"] for v in out.values())
    return {"format": fmt, "total": total, "elements": elements,
            "bits_per_weight": Fraction(8 * total, elements), "tensors": out}


def bytes_per_weight(config, fmt: str) -> Fraction:
    """The format's bytes over the model's weights, exact: what ``β_w`` is under ``--weight-format``
    (weights memory, inference peaks, fits, sweeps: :func:`symllm.costs.phases.workload`), so that
    ``β_w · N`` is the format's exact total; per GPU under a parallel layout it is spread evenly over the
    parameters each GPU holds (an average: per-tensor choices such as Q4_K_M's promoted ``attn_v`` are not
    placed on their pipeline stage).

    >>> bytes_per_weight("llama3.2-1b", "bf16")
    Fraction(2, 1)
    """
    r = weight_bytes(config, fmt)
    return Fraction(r["total"], r["elements"])


def declared_names(field: str) -> dict[str, str]:
    """symllm component name -> the name it declares (``Rules.hf`` or ``Rules.gguf``), read from LLaMA's model
    and then from the models with every part (:data:`symllm.arch.components.EVERY_PART`, ...): where a name
    depends on the structure (``ffn_norm`` is Gemma 2's ``pre_feedforward_layernorm``), LLaMA's is listed.

    >>> declared_names("gguf")["wq"], declared_names("hf")["post_ffn_norm"]
    ('attn_q', 'post_feedforward_layernorm')
    """
    from symllm.arch import components as C  # lazily (SymPy)
    out: dict[str, str] = {}
    for every in ({}, C.EVERY_PART, C.EVERY_FUSED, C.EVERY_LATENT_PART):
        for c in C.model(**every).walk():
            if getattr(c.rules, field) not in ("", "."):  # ".": no module of its own (Rules.hf)
                out.setdefault(c.name, getattr(c.rules, field))
    return out


def __getattr__(name: str):
    if name == "GGUF_NAMES":  # built on first use: the components' own names
        globals()[name] = value = declared_names("gguf")
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
