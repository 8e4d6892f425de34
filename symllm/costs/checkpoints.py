"""Checkpoints on disk: every tensor's name, dtype, shape and bytes read from the safetensors or GGUF
headers (no weight is loaded), compared with the component tree, and their actual bytes beside the
formula's (:mod:`symllm.costs.formats`).

**Reading** (the safetensors and GGUF headers, every length checked) is :mod:`symllm.costs.headers`'.

**Expected tensors.** :func:`expected` names each stored tensor of the component tree
(:func:`symllm.costs.formats.tensors`) as the format does. Hugging Face names: ``model.embed_tokens``,
``model.layers.{i}.`` + the module path (:data:`HF_NAMES`, and for a linear the HF name it declares
for LoRA, ``q_proj``; ``i`` the layer's index in the model, whichever group of layers holds it), ``model.norm``,
``lm_head`` (absent when tied), each ``.weight`` or ``.bias`` (a parameter bare on its module, the Gated
DeltaNet's ``A_log`` and ``dt_bias``, by its own name: ``Rules.hf_params``);
shapes as torch stores them (``(fan_out, fan_in)``); the dtype the config.json names (``torch_dtype`` /
``dtype``; none named: not checked). A quantized checkpoint (``quantization_config``) stores each
tensor its format quantizes (:data:`symllm.costs.formats.QUANTIZES`) as that format's tensors
(:data:`QUANTIZED`): AWQ ``qweight`` int32 ``(fan_in, fan_out/8)``, ``qzeros`` int32 ``(fan_in/g,
fan_out/8)``, ``scales`` fp16 ``(fan_in/g, fan_out)``; GPTQ ``qweight`` int32 ``(fan_in·b/32, fan_out)``,
``qzeros`` ``(fan_in/g, fan_out·b/32)``, ``scales`` fp16, ``g_idx`` int32 ``(fan_in,)``; FP8 with block
scales (``quant_method: fp8``, ``weight_block_size``) ``weight`` F8_E4M3 and ``weight_scale_inv`` fp32
``(⌈fan_out/128⌉, ⌈fan_in/128⌉)``. GGUF names: :data:`symllm.costs.formats.GGUF_NAMES`, shapes
``ne = (row, rows)`` (a mixture of experts: ``ffn_gate_inp`` F32, ``ffn_{gate,up,down}_exps``
``(row, rows, n_e)``), and the GGML type llama.cpp's file type (``general.file_type``) chooses (for a
mixture of experts only F16, BF16: other file types' names and shapes are checked, not their types);
``rope_freqs.weight`` (Llama 3.1's RoPE scaling factors, not a parameter) is allowed, and so is DeepSeek-V3's and
GLM-4.5's router ``e_score_correction_bias`` (a buffer the checkpoint stores). Laguna's is a parameter of its
router, saved (transformers' conversion mapping) as ``mlp.experts.e_score_correction_bias``: the
``router_score_bias`` option's names rule (:attr:`symllm.arch.part_options.Option.names`).

>>> expected("llama3.2-1b")["model.layers.0.self_attn.k_proj.weight"]
{'dtype': 'BF16', 'shape': [512, 2048]}
"""
from __future__ import annotations

from math import ceil
from pathlib import Path

from symllm.arch.dtypes import SAFETENSORS_NAMES, canonical
from symllm.costs.headers import read
from symllm.errors import SymllmError
from symllm.validate import short, with_list

__all__ = ["HF_NAMES", "QUANTIZED", "config_of", "expected", "difference", "weight_format", "check"]

#: GGUF ``general.architecture`` -> the HF ``model_type`` its metadata is read as (llama.cpp's LLM_ARCH names)
_GGUF_ARCHS = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3moe": "qwen3_moe"}
#: llama.cpp's ``general.file_type`` (``enum llama_ftype``) -> the file types symllm models
_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 7: "Q8_0", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
               18: "Q6_K", 32: "BF16"}

#: component name -> the Hugging Face module name (LlamaForCausalLM's ``named_parameters``): each component
#: declares its own where it is defined (``Rules.hf``; a linear's is the HF name it declares for LoRA,
#: ``rules.lora``), and this table is read from them (:func:`symllm.costs.formats.declared_names`); per
#: ``model_type`` overrides below
HF_NAMES: dict[str, str]  # built on first use (it walks component trees: SymPy)
_MIXTRAL_LAYOUT = {"moe": "block_sparse_moe", "gate": "w1", "up": "w3", "down": "w2"}
#: Llama 4's decoder layer holds its MLP or MoE as ``feed_forward`` (Llama4TextMoe's router as ``router``)
_LLAMA4_LAYOUT = {"moe": "feed_forward", "feed_forward": "feed_forward", "router": "router"}
#: MiniMax-M2's checkpoints (and transformers' save_pretrained of it) keep Mixtral's layout; gpt-oss's router
#: is ``mlp.router`` (GptOssTopKRouter)
_HF_OVERRIDES = {"mixtral": _MIXTRAL_LAYOUT, "minimax_m2": _MIXTRAL_LAYOUT, "llama4_text": _LLAMA4_LAYOUT,
                 "llama4": _LLAMA4_LAYOUT, "gpt_oss": {"router": "router"},
                 # MiMo-V2-Flash's sinks, as its weight-conversion mapping writes them
                 "mimo_v2_flash": {"sinks": "attention_sink_bias"},
                 # Laguna's shared experts, as its weight-conversion mapping saves them (mlp.shared_expert.)
                 "laguna": {"shared_experts": "shared_expert"}}
#: the routed experts' tensors (one per expert), which are not components: their HF names
_HF_EXPERTS = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}

#: the weight formats (read from a quantization_config by :mod:`symllm.arch.quantization`, the one table) whose
#: tensors :func:`expected` lays out (compressed-tensors' NVFP4 and per-tensor FP8 as its compressors write them);
#: a checkpoint in another (mxfp4: gpt-oss's fused experts; ModelOpt's and AutoFP8's, whose tensors symllm has no
#: packer to check against) is refused in one line
QUANTIZED = ("awq", "gptq", "gptq-8bit", "fp8-block", "nf4", "nf4-nodq", "fp4", "fp4-nodq", "int8", "w4a16",
             "w4a16-asym", "w8a16", "w8a16-asym", "w8a8", "w8a8-fp8", "w8a8-fp8-block", "w8a8-fp8-tensor", "nvfp4")
#: the methods whose layout of a format :func:`expected` is (ModelOpt's nvfp4 and fp8 name their tensors otherwise)
_LAID_OUT_BY = {"nvfp4": ("compressed-tensors",)}
#: bitsandbytes' per-linear tensors that are not in symllm's bytes formula: the quant state serialised as
#: JSON bytes (4-bit; its length varies) and the 8-bit layout's format byte
_BNB_EXTRA = ("quant_state.bitsandbytes__nf4", "quant_state.bitsandbytes__fp4", "weight_format")



def config_of(ckpt: dict):
    """The :class:`~symllm.arch.config.ModelConfig` of a checkpoint read by :func:`read`: its
    config.json, or a GGUF's own metadata (architectures llama, qwen2, qwen3, qwen3moe:
    ``{arch}.embedding_length``, ``block_count``, ``attention.head_count``/``head_count_kv``/``key_length``,
    ``feed_forward_length``, the vocabulary from ``token_embd.weight``; tied when there is no ``output.weight``; with
    ``llama.expert_count`` a Mixtral, and qwen3moe, read ``expert_count`` routed experts, ``expert_used_count``
    per token and qwen3moe's ``expert_feed_forward_length``)."""
    from symllm.arch.config import from_dict
    name = Path(ckpt["path"]).name.split("--")[-1].removesuffix(".gguf")
    if ckpt["format"] != "gguf":
        if ckpt["config"] is None:
            raise SymllmError(f"checkpoint: {ckpt['path']!r} has no config.json beside its weights")
        return from_dict(ckpt["config"], name=name)
    meta, tensors = ckpt["metadata"], ckpt["tensors"]
    arch = meta.get("general.architecture")
    if arch not in _GGUF_ARCHS:
        raise SymllmError(with_list(f"checkpoint: GGUF architecture {short(arch, 30)} is not read yet (known: ",
                                    _GGUF_ARCHS, near=arch, see="docs/checkpoints.md"))

    def key(k, default=None):
        v = meta.get(f"{arch}.{k}", default)
        if v is None or isinstance(v, (bool, float, str, list, tuple)):
            raise SymllmError(f"checkpoint: {ckpt['path']!r}: {arch}.{k} is {str(v)[:20]}, not an integer")
        return v
    if "token_embd.weight" not in tensors:
        raise SymllmError(f"checkpoint: {ckpt['path']!r} has no token_embd.weight")
    raw = {"model_type": _GGUF_ARCHS[arch], "hidden_size": key("embedding_length"),
           "num_hidden_layers": key("block_count"), "num_attention_heads": key("attention.head_count"),
           "num_key_value_heads": key("attention.head_count_kv", meta.get(f"{arch}.attention.head_count")),
           "vocab_size": tensors["token_embd.weight"]["shape"][1],
           "tie_word_embeddings": "output.weight" not in tensors}
    if f"{arch}.feed_forward_length" in meta or arch != "qwen3moe":
        raw["intermediate_size"] = key("feed_forward_length")
    if f"{arch}.attention.key_length" in meta:
        raw["head_dim"] = key("attention.key_length")
    if arch == "qwen3moe":  # every layer routed (decoder_sparse_step 1, no mlp_only_layers)
        raw.update(num_experts=key("expert_count"), num_experts_per_tok=key("expert_used_count"),
                   moe_intermediate_size=key("expert_feed_forward_length"))
    elif meta.get("llama.expert_count"):  # Mixtral as llama.cpp converts it: the llama architecture with experts
        raw.update(model_type="mixtral", num_local_experts=key("expert_count"),
                   num_experts_per_tok=key("expert_used_count"), sliding_window=None)
    return from_dict(raw, name=name)


def weight_format(ckpt: dict) -> str | None:
    """The weight format (:mod:`symllm.costs.formats`) of a checkpoint: a GGUF's llama.cpp file type,
    the one its quantization_config states (:func:`symllm.arch.quantization.read`), else its tensors' float
    dtype (``bf16``, ``fp16``, ``fp32``); None when symllm has no formula for it (:func:`unmodelled` says why)."""
    if ckpt["format"] == "gguf":
        return _FILE_TYPES.get(ckpt["metadata"].get("general.file_type"))
    q = (ckpt["config"] or {}).get("quantization_config")
    if q is not None:
        from symllm.arch import quantization
        return quantization.read(q)[0]
    dtype = _dtype(ckpt["config"])
    return dtype if dtype != "fp64" else None


def unmodelled(q: dict) -> str | None:
    """Why :func:`expected` cannot lay out a checkpoint with this ``quantization_config``: the key and value
    symllm has no format for (:mod:`symllm.arch.quantization`), or the format whose tensors are not laid out
    (:data:`QUANTIZED`); None when it can.

    >>> unmodelled({"quant_method": "awq", "bits": 3}), unmodelled({"quant_method": "mxfp4"})
    ('quantization_config.bits: 3 (awq: symllm prices 4)', "mxfp4's tensors are not laid out")
    """
    from symllm.arch import quantization
    from symllm.arch.quantization import split_group
    try:
        fmt = quantization.read(q)[0]
    except SymllmError as e:
        return str(e)
    base = split_group(fmt)[0]
    if base in QUANTIZED and q.get("quant_method") in _LAID_OUT_BY.get(base, (q.get("quant_method"),)):
        return None
    return f"{fmt}'s tensors are not laid out" + (f" ({q.get('quant_method')}'s)" if base in QUANTIZED else "")


def static_inputs(q: dict | None) -> bool:
    """Whether a compressed-tensors ``quantization_config`` stores activation scales (``input_scale``,
    ``input_global_scale``): a config group whose ``input_activations`` are not dynamic (static FP8; NVFP4's
    ``local`` global scale).

    >>> static_inputs({"config_groups": {"g": {"input_activations": {"dynamic": False}}}})
    True
    """
    groups = (q or {}).get("config_groups")
    return isinstance(groups, dict) and any(
        isinstance(g, dict) and isinstance(g.get("input_activations"), dict)
        and g["input_activations"].get("dynamic") is not True for g in groups.values())


def _dtype(raw) -> str | None:
    """The float dtype a config.json's ``torch_dtype`` (``dtype``) states, symllm's name (transformers saves the
    tensors in it: symllm.arch.dtypes.SAFETENSORS_NAMES); None where it states none of them."""
    raw = raw or {}
    name = canonical(raw.get("torch_dtype") or raw.get("dtype"))
    return name if isinstance(name, str) and name in SAFETENSORS_NAMES else None


def _hf_name(t: dict, layer: int | None, expert: int | None, model_type: str, param: str | None = None,
             module: bool = False) -> str:
    """A tensor's Hugging Face name, from the names the components on its path declare (``t["hf"]``:
    :func:`symllm.costs.formats.tensors`), a ``model_type``'s overrides, and the experts' own tensors;
    ``param``: one of the parameters the component declares bare on its parent's module (``Rules.hf_params``),
    named by it after the parent's name; a part declaring ``"."`` has no module of its own (Gemma 4's MoE block:
    its router and experts sit on the decoder layer). ``module``: the routed experts' module name
    (``model.layers.3.mlp.experts``), where fused experts store their tensors."""
    overrides = _HF_OVERRIDES.get(model_type, {})
    parts = t["path"].split("/")
    leaf = parts[-1]
    suffix = "bias" if leaf.endswith(".bias") else "weight"
    parts[-1] = leaf.removesuffix(".bias")
    declared = t["hf"]
    if param is not None:  # no module of its own: its parent's, then the parameter's name
        parts, declared, suffix = parts[:-1], declared[:-1], overrides.get(param, param)
    if layer is None:
        if not declared[0]:
            raise SymllmError(f"checkpoint: no Hugging Face name for {t['path']!r}")
        return f"{declared[0]}.{suffix}"
    out = [f"{declared[0] or 'model.layers'}.{layer}"]  # the group's own (LlamaModel's layers, MptModel's blocks)
    for i, p in enumerate(parts[1:], 1):
        name = overrides.get(p) or (declared[i] if i < len(declared) else _HF_EXPERTS.get(p, ""))
        if not name:
            raise SymllmError(f"checkpoint: no Hugging Face name for {t['path']!r} ({model_type})")
        if name == ".":  # no module of its own: its children sit on its parent's
            continue
        if p == "experts" and module:
            return ".".join((*out, name))
        out.append(name if p != "experts" else f"{name}.{expert}")
    return ".".join(out) + f".{suffix}"


def __getattr__(name: str):
    if name == "HF_NAMES":  # built on first use: the components' own names, and the experts' tensors
        from symllm.costs.formats import declared_names
        globals()[name] = value = {**declared_names("hf"), **_HF_EXPERTS}
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _quantized(fmt: str, name: str, row: int, rows: int, group: int = 128, dtype: str | None = None,
               inputs: bool = False) -> dict[str, dict]:
    """The tensors a format stores for the weight ``name`` (``rows × row``, torch's ``(fan_out, fan_in)``);
    ``dtype``: the checkpoint's float dtype (compressed-tensors' scales); ``inputs``: static activation scales
    stored too (:func:`static_inputs`)."""
    base = name.removesuffix(".weight")
    from symllm.arch.quantization import split_group
    plain, named = split_group(fmt)
    if plain != fmt:  # a grouped format named for its group (gptq-g32; w4a16-channel: one group per row)
        fmt, group = plain, row if named == -1 else named
    if fmt == "nvfp4":  # compressed-tensors' NVFP4PackedCompressor: two values a byte, an E4M3 scale per 16
        out = {f"{base}.weight_packed": {"dtype": "U8", "shape": [rows, ceil(row / 2)]},
               f"{base}.weight_scale": {"dtype": "F8_E4M3", "shape": [rows, ceil(row / 16)]},
               f"{base}.weight_global_scale": {"dtype": "F32", "shape": [1]}}
        if inputs:
            out[f"{base}.input_global_scale"] = {"dtype": "F32", "shape": [1]}
        return out
    if fmt == "w8a8-fp8-tensor":  # compressed-tensors float-quantized, one scale per tensor
        out = {name: {"dtype": "F8_E4M3", "shape": [rows, row]}, f"{base}.weight_scale": {"dtype": dtype, "shape": [1]}}
        if inputs:
            out[f"{base}.input_scale"] = {"dtype": dtype, "shape": [1]}
        return out
    if fmt in ("w8a8", "w8a8-fp8", "w8a8-fp8-block"):  # compressed-tensors int-/float-quantized: scales in dtype
        scales = [ceil(rows / 128), ceil(row / 128)] if fmt.endswith("-block") else [rows, 1]
        return {name: {"dtype": "I8" if fmt == "w8a8" else "F8_E4M3", "shape": [rows, row]},
                f"{base}.weight_scale": {"dtype": dtype, "shape": scales}}
    if fmt in ("w4a16", "w4a16-asym", "w8a16", "w8a16-asym"):  # compressed-tensors pack-quantized
        bits = 8 if fmt.startswith("w8") else 4
        out = {f"{base}.weight_packed": {"dtype": "I32", "shape": [rows, ceil(row * bits / 32)]},
               f"{base}.weight_scale": {"dtype": dtype, "shape": [rows, row // group]},
               f"{base}.weight_shape": {"dtype": "I64", "shape": [2]}}
        if fmt.endswith("-asym"):
            out[f"{base}.weight_zero_point"] = {"dtype": "I32", "shape": [ceil(rows * bits / 32), row // group]}
        return out
    if fmt == "awq":
        return {f"{base}.qweight": {"dtype": "I32", "shape": [row, rows // 8]},
                f"{base}.qzeros": {"dtype": "I32", "shape": [row // group, rows // 8]},
                f"{base}.scales": {"dtype": "F16", "shape": [row // group, rows]}}
    if fmt in ("gptq", "gptq-8bit"):
        bits = 8 if fmt == "gptq-8bit" else 4
        return {f"{base}.qweight": {"dtype": "I32", "shape": [row * bits // 32, rows]},
                f"{base}.qzeros": {"dtype": "I32", "shape": [row // group, rows * bits // 32]},
                f"{base}.scales": {"dtype": "F16", "shape": [row // group, rows]},
                f"{base}.g_idx": {"dtype": "I32", "shape": [row]}}
    if fmt == "int8":  # bitsandbytes' Int8Params: int8 rows, an fp32 scale per row (SCB), a format byte
        return {name: {"dtype": "I8", "shape": [rows, row]}, f"{base}.SCB": {"dtype": "F32", "shape": [rows]},
                f"{base}.weight_format": {"dtype": "U8", "shape": []}}
    # bitsandbytes' Params4bit: packed bytes, absmax per 64, the code, the state
    if fmt in ("nf4", "nf4-nodq", "fp4", "fp4-nodq"):
        n = row * rows
        blocks = ceil(n / 64)
        out = {name: {"dtype": "U8", "shape": [ceil(n / 2), 1]}}
        if not fmt.endswith("-nodq"):
            out.update({f"{name}.absmax": {"dtype": "U8", "shape": [blocks]},
                        f"{name}.nested_absmax": {"dtype": "F32", "shape": [ceil(blocks / 256)]},
                        f"{name}.nested_quant_map": {"dtype": "F32", "shape": [256]}})
        else:
            out[f"{name}.absmax"] = {"dtype": "F32", "shape": [blocks]}
        out[f"{name}.quant_map"] = {"dtype": "F32", "shape": [16]}
        out[f"{name}.quant_state.bitsandbytes__{fmt[:3]}"] = {"dtype": "U8", "shape": None}  # JSON: any length
        return out
    return {name: {"dtype": "F8_E4M3", "shape": [rows, row]},
            f"{base}.weight_scale_inv": {"dtype": "F32", "shape": [ceil(rows / 128), ceil(row / 128)]}}


#: ModelConfig field -> the one-element buffer each layer of such a model holds and save_pretrained writes
#: (``nn.Buffer``, persistent): Gemma 4's ``layer_scalar`` (``Gemma4TextDecoderLayer``); not a parameter, so
#: not in the formula's bytes
_BUFFERS = {"layer_scalar": "layer_scalar"}


def expected(config, model_type: str = "llama", dtype: str | None = "BF16", fmt: str | None = None,
             gguf: str | None = None, inputs: bool = False) -> dict[str, dict]:
    """``name -> {"dtype", "shape"}`` of every tensor a checkpoint of ``config`` stores, in model order:
    Hugging Face names and ``dtype`` (None: unchecked) with the layout of the quantized format ``fmt``
    (:data:`QUANTIZED`'s values), or with ``gguf`` (a llama.cpp file type, or ``""`` when it is not
    known: types unchecked) GGUF names and types (module docstring).

    >>> e = expected("llama3.2-1b", gguf="Q4_K_M")
    >>> e["blk.0.attn_v.weight"], e["output_norm.weight"]
    ({'dtype': 'Q6_K', 'shape': [2048, 512]}, {'dtype': 'F32', 'shape': [2048]})
    """
    from symllm.costs import formats
    spec = formats.spec_for(config)
    if any(k.mixer in ("mamba", "none") or k.ffn == "none" for k in spec.structure.kinds):
        raise SymllmError("checkpoint: Nemotron-H (Mamba-2) tensors are not modelled")
    if spec.structure.hyper_connections:
        raise SymllmError("checkpoint: DeepSeek-V4 tensors are not modelled")
    ts = formats.tensors(spec)
    out: dict[str, dict] = {}
    if gguf is not None:
        types = formats.weight_bytes(spec, gguf)["tensors"] if gguf else None
        for t in formats.gguf_tensors(spec):
            out[t["name"]] = {"dtype": types[t["name"]]["type"] if types else None, "shape": t["shape"]}
        return out
    from symllm.arch.quantization import split_group
    quantizes = formats.QUANTIZES.get(split_group(fmt)[0], ()) if fmt else ()
    n_e = spec.config.n_experts or 1
    from symllm.arch.part_options import option
    fused = dict(option("fused_experts").names).get(spec.structure.fused_experts)  # the option's names rule
    if fused and "experts" in quantizes:
        raise SymllmError(f"checkpoint: {fmt}'s fused experts ({spec.structure.fused_experts}) are not laid out")
    kept = spec.config.weight_format_kept if fmt and fmt == spec.config.weight_format else None
    if kept:  # modules the quantization_config keeps unquantized (symllm.arch.quantization.kept_patterns)
        import re
    values = spec.values()
    # Laguna's router e_score_correction_bias: a parameter of the router, saved under the option's name
    score = dict(option("router_score_bias").names).get(spec.structure.router_score_bias, ((None,),))[0][0]
    laid = set()  # the fused experts laid out (their component's path)
    for t in ts:
        experts = t.get("experts") is not None  # a routed expert's tensor (gpt-oss's biases too)
        if fused and experts:  # two 3-D tensors a layer (and their biases), laid out once a group of layers
            if t["experts"] not in laid:
                laid.add(t["experts"])
                for i in t["positions"]:
                    out.update(_fused_experts(fused, ts, t, i, model_type, values, dtype))
            continue
        if t["layer"] is not None and len(t["positions"]) != (t["count"] // n_e if experts else t["count"]):
            raise SymllmError(f"checkpoint: {t['path']!r} is not one tensor a layer")  # pragma: no cover
        for i in ([None] if t["layer"] is None else t["positions"]):
            for e in (range(n_e) if experts else [None]):
                if t["hf_params"]:  # parameters bare on the parent's module, an equal share each
                    for param in t["hf_params"]:
                        out[_hf_name(t, i, e, model_type, param)] = {
                            "dtype": dtype, "shape": [t["row"] // len(t["hf_params"])]}
                    continue
                name = _hf_name(t, i, e, model_type)
                if score and t["path"].endswith("moe/router.bias"):  # the option's name, beside the router's module
                    name = f"{name.rsplit('.', 2)[0]}.{score}"
                shape = _stored_shape(t, values)
                held = kept and any(re.match(p, name.removesuffix(".weight")) for p in kept)
                if t["ndim"] == 2 and t["kind"] in quantizes and not held:
                    out.update(_quantized(fmt, name, t["row"], t["rows"], dtype=dtype, inputs=inputs))
                else:
                    out[name] = {"dtype": dtype, "shape": shape}
    for field, buffer in _BUFFERS.items():  # per-layer buffers transformers saves beside the parameters
        if getattr(spec.config, field):
            out.update({f"model.layers.{i}.{buffer}": {"dtype": dtype, "shape": [1]}
                        for i in range(spec.config.n_layers)})
    return out


def _fused_experts(layout: tuple, ts: list[dict], first: dict, layer: int, model_type: str, values: dict,
                   dtype: str | None) -> dict[str, dict]:
    """The fused experts' tensors of one layer, named and shaped by the ``fused_experts`` option's names rule
    (``layout``: :attr:`symllm.arch.part_options.Option.names`), its ``_bias`` tensors where the experts have
    biases; their elements checked against the experts' per-expert tensors (:func:`symllm.costs.formats.tensors`)."""
    from math import prod

    from symllm.arch import symbols

    def size(text: str) -> int:
        n = 1
        for factor in text.split("*"):
            n *= int(factor) if factor.isdigit() else int(values[getattr(symbols, factor)])
        return n
    group = first["experts"]
    own = [u for u in ts if u.get("experts") == group]  # gate, up, down, and gpt-oss's biases
    biased = any(u["kind"] == "bias" for u in own)
    module = _hf_name(first, layer, None, model_type, module=True)
    out = {f"{module}.{name}": {"dtype": dtype, "shape": [size(x) for x in shape]}
           for name, shape in layout if biased or not name.endswith("_bias")}
    n_e = int(values[symbols.n_e])
    if sum(prod(v["shape"]) for v in out.values()) != n_e * sum(u["row"] * u["rows"] for u in own):
        raise SymllmError(f"checkpoint: the fused layout of {group!r} does not hold its parameters")  # pragma: no cover
    return out


def _stored_shape(t: dict, values: dict) -> list[int]:
    """The shape torch stores a tensor of :func:`symllm.costs.formats.tensors` in: ``(fan_out, fan_in)`` for a
    matrix, a depthwise convolution's ``(channels, 1, K_c)`` (``nn.Conv1d(groups=channels)``: the Gated
    DeltaNet's ``conv1d``), else its elements."""
    if t["ndim"] == 2:
        return [t["rows"], t["row"]]
    if t["kind"] == "conv":
        from symllm.arch.symbols import K_c
        kernel = int(values[K_c])
        return [t["row"] // kernel, 1, kernel]
    return [t["row"]]


#: a multimodal wrapper (config.json's ``model_type``) -> the layouts transformers 5 reads its language model from, each
#: (the prefix standing for the text model's ``model.``, the one for its ``lm_head.``): its modules' own names
#: (Qwen3.5's and Kimi-K2.5's ``model.language_model.`` and ``lm_head.``, Llama 4's ``language_model.model.`` and
#: ``language_model.lm_head.``), and those its ``conversion_mapping`` renames to them on loading (Gemma 3's llava
#: mapping and Kimi-K2.5's: ``language_model.model.``, ``language_model.lm_head.``, what save_pretrained writes
#: back and the published checkpoints hold). The rest of such a checkpoint (vision encoder, projector, Qwen3.5's
#: multi-token-prediction ``mtp.``) is not counted.
_WRAPPED = {"gemma3": (("model.language_model.", "lm_head."), ("language_model.model.", "language_model.lm_head.")),
            "kimi_k25": (("model.language_model.", "lm_head."), ("language_model.model.", "language_model.lm_head.")),
            "gemma4": (("model.language_model.", "lm_head."),),
            "llama4": (("language_model.model.", "language_model.lm_head."),),
            "qwen3_5": (("model.language_model.", "lm_head."),),
            "qwen3_5_moe": (("model.language_model.", "lm_head."),)}


#: model type -> the prefixes of tensors its checkpoints hold that transformers' class does not build and skips
#: on loading (``_keys_to_ignore_on_load_unexpected``): the multi-token-prediction layers of Qwen3-Next's and
#: Qwen3.5's published checkpoints; not counted, as a wrapper's vision tower is not
_UNBUILT = {"qwen3_next": ("mtp.",), "qwen3_5_text": ("mtp.",), "qwen3_5_moe_text": ("mtp.",)}


def _language_model(model_type: str, want: dict, found: dict) -> tuple[dict, dict, dict]:
    """``(want, found, outside)``: for a multimodal wrapper (:data:`_WRAPPED`), the expected tensors renamed to
    the layout the checkpoint uses (the first whose embedding it holds, else the first), the tensors under it,
    and those outside its language model (not counted); for a model type of :data:`_UNBUILT`, the tensors
    transformers does not build outside; for any other model, as given and nothing outside.

    >>> w, f, out = _language_model("llama4", {"model.norm.weight": 1, "lm_head.weight": 2},
    ...                             {"language_model.model.norm.weight": 1, "vision_model.x": 3})
    >>> w, out
    ({'language_model.model.norm.weight': 1, 'language_model.lm_head.weight': 2}, {'vision_model.x': 3})
    """
    layouts = _WRAPPED.get(model_type)
    if layouts is None:
        unbuilt = _UNBUILT.get(model_type, ())
        return want, {k: v for k, v in found.items() if not k.startswith(unbuilt)}, {
            k: v for k, v in found.items() if unbuilt and k.startswith(unbuilt)}
    text, head = next((x for x in layouts if f"{x[0]}embed_tokens.weight" in found), layouts[0])
    renamed = {(text + k.removeprefix("model.") if k.startswith("model.") else head + k.removeprefix("lm_head.")): v
               for k, v in want.items()}
    inside = {k: v for k, v in found.items() if k.startswith((text, head))}
    return renamed, inside, {k: v for k, v in found.items() if k not in inside}


#: tensors a file may hold that are no parameter of the tree: GGUF's rope_freqs (Llama 3.1's RoPE factors);
#: and by the end of their names: DeepSeek-V3's, GLM-4.5's and MiniMax-M2's router score-correction bias (a
#: buffer)
_EXTRA = ("rope_freqs.weight",)
_EXTRA_ENDS = (".mlp.gate.e_score_correction_bias", ".block_sparse_moe.e_score_correction_bias")


def difference(want: dict[str, dict], found: dict[str, dict]) -> str | None:
    """The first difference between expected and found tensors, in one line (expected order; then what
    is unexpected): ``missing``, ``wrong shape``, ``wrong dtype``, ``unexpected``; None when they agree.

    >>> difference({"a": {"dtype": "F32", "shape": [2]}}, {"a": {"dtype": "F16", "shape": [2], "bytes": 4}})
    'wrong dtype: a is F16, the config says F32'
    """
    for name, w in want.items():
        f = found.get(name)
        if f is None:
            return f"missing: {name} ({w['dtype'] or 'any dtype'} {w['shape']})"
        if w["shape"] is not None and list(f["shape"]) != w["shape"]:
            return f"wrong shape: {name} is {list(f['shape'])}, the config says {w['shape']}"
        if w["dtype"] is not None and f["dtype"] != w["dtype"]:
            return f"wrong dtype: {name} is {f['dtype']}, the config says {w['dtype']}"
    for name in found:
        if name not in want and name not in _EXTRA and not name.endswith(_EXTRA_ENDS):
            return f"unexpected: {name} ({found[name]['dtype']} {list(found[name]['shape'])})"
    return None


def check(model) -> dict:
    """Read a checkpoint (:func:`read`) and compare it with its config's component tree: ``{"path",
    "format", "files", "tensors" (count), "bytes" (actual), "weight_format", "formula_bytes" (of that
    format, or None), "difference" (:func:`difference`, or None), "not_counted" (the tensors outside the
    language model transformers builds: a multimodal wrapper's vision tower and projector, multi-token
    prediction layers; ``{"tensors", "bytes"}``, or None)}``."""
    from symllm.costs import formats
    ckpt = read(model)
    config = config_of(ckpt)
    fmt = weight_format(ckpt)
    typed = True
    if ckpt["format"] == "gguf":
        typed = fmt is not None and formats.gguf_types_modelled(fmt)
        want = expected(config, gguf=fmt if typed else "")
    else:
        raw = ckpt["config"] or {}
        q = raw.get("quantization_config")
        dtype = SAFETENSORS_NAMES.get(_dtype(raw))
        if q is not None and unmodelled(q) is not None:
            raise SymllmError(f"checkpoint: {unmodelled(q)} (docs: checkpoints)")
        from symllm.arch.quantization import split_group
        base = split_group(fmt)[0] if fmt is not None else None
        want = expected(config, str(raw.get("model_type", "llama")),
                        "F16" if base in ("awq", "gptq", "gptq-8bit") else dtype,
                        fmt if base in formats.QUANTIZES else None,
                        inputs=base in ("nvfp4", "w8a8-fp8-tensor") and static_inputs(q))
    found, outside = ckpt["tensors"], {}
    if ckpt["format"] != "gguf":
        want, found, outside = _language_model(str((ckpt["config"] or {}).get("model_type")), want, found)
    formula = formats.weight_bytes(config, fmt)["total"] if fmt is not None and typed else None
    return {"path": ckpt["path"], "format": ckpt["format"], "files": len(ckpt["files"]),
            "tensors": len(ckpt["tensors"]), "bytes": ckpt["bytes"], "weight_format": fmt,
            "formula_bytes": formula, "difference": difference(want, found), "config": config,
            "dtypes_checked": typed,
            "not_counted": {"tensors": len(outside), "bytes": sum(t["bytes"] for t in outside.values())}
            if outside else None}
