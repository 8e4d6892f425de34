"""A config.json's ``quantization_config`` read whole: the weight format it states (a name of
:mod:`symllm.costs.formats`), or one line naming the key and value symllm has no format for.

Every published scheme goes through one table, :data:`SCHEMES`: ``(quant_method, scheme) -> format``, where
the scheme is what decides the stored bytes, read from the method's own keys by :func:`scheme_of`:

* ``awq`` (AutoAWQ GEMM: ``bits`` 4, ``zero_point`` true, ``version`` gemm) -> ``awq``;
* ``gptq`` (AutoGPTQ / GPTQModel / optimum: ``bits`` 4 or 8; ``desc_act`` and ``sym`` do not change the
  bytes: ``g_idx`` and ``qzeros`` are stored either way; ``lm_head`` false, no ``dynamic`` overrides) ->
  ``gptq``, ``gptq-8bit``;
* their ``group_size`` names the format (:func:`grouped`): 128 ``awq``, 32 ``awq-g32``, -1 ``gptq-channel``;
* ``fp8`` (transformers' FineGrainedFP8 / DeepSeek-V3, Qwen3-FP8: ``weight_block_size`` [128, 128]) ->
  ``fp8-block``; without ``weight_block_size`` (AutoFP8: one fp32 scale per tensor) -> ``fp8``;
* ``compressed-tensors`` (llm-compressor; one config group on ``Linear``): ``pack-quantized`` int 4/8 bits,
  group (or ``strategy: channel``) -> ``w4a16``, ``w8a16`` (``-asym`` with zero points; named for the group);
  ``int-quantized`` int8 per channel (W8A8) -> ``w8a8``; ``float-quantized`` fp8 per channel, per tensor or in 128×128
  blocks -> ``w8a8-fp8``, ``w8a8-fp8-tensor``, ``w8a8-fp8-block``; ``nvfp4-pack-quantized`` (tensor_group 16) ->
  ``nvfp4``;
* ``modelopt`` (NVIDIA ModelOpt: ``quant_algo`` NVFP4, group 16; FP8 per tensor) -> ``nvfp4``, ``fp8``;
* ``bitsandbytes``: 4-bit ``bnb_4bit_quant_type`` nf4 / fp4, with or without ``bnb_4bit_use_double_quant``
  -> ``nf4``, ``nf4-nodq``, ``fp4``, ``fp4-nodq``; 8-bit -> ``int8``;
* ``mxfp4`` (gpt-oss) -> ``mxfp4``.

Activation scales (``input_scale``, static or dynamic activations) are not weights: the activation scheme does
not change the format. **Modules kept unquantized** (``modules_to_not_convert``, ``llm_int8_skip_modules``,
compressed-tensors' ``ignore``, ModelOpt's ``ignore`` / ``exclude_modules``) are listed in :func:`read`'s
``source``. An entry naming a module the format keeps in bf16 anyway (:data:`KEPT`: the lm_head, the
embeddings, norms, the MoE router, and for MXFP4 the attention) or a part symllm does not count (a vision
tower, a projector, multi-token prediction) changes nothing; any other entry (unsloth's dynamic 4-bit keeps
``model.layers.1.mlp``) is **priced**: the projections it matches keep two bytes a weight, the rest the format's
bytes (:func:`kept_patterns`, matched as the loader matches them: transformers' ``should_convert_module`` for
``modules_to_not_convert`` and ``llm_int8_skip_modules``, compressed-tensors' exact names and ``re:`` patterns
for ``ignore``; :func:`symllm.costs.formats.weight_bytes`). **The KV cache** a checkpoint states
(compressed-tensors' ``kv_cache_scheme``, ModelOpt's ``kv_cache_quant_algo``) is read by :func:`kv_dtype`:
the KV cache dtype unless the workload gives one.

>>> read({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"})[0]
'awq'
>>> read({"quant_method": "gptq", "bits": 3, "group_size": 128})
Traceback (most recent call last):
...
symllm.errors.SymllmError: quantization_config.bits: 3 (gptq: symllm prices 4, 8)
>>> read({"quant_method": "hqq"})
Traceback (most recent call last):
...
symllm.errors.SymllmError: quantization_config.quant_method: 'hqq' (symllm prices 7 methods: docs/formats.md)
"""
from __future__ import annotations

import re

from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["SCHEMES", "KEPT", "GROUPED", "GROUPS", "grouped", "split_group", "scheme_of", "read", "kept_patterns",
           "HF_PARENTS", "hf_modules", "kept_layers",
           "kv_dtype", "fields"]

#: the weight formats stored with one scale (and zero point) per group of inputs: 128 by name, ``FORMAT-gN``
#: another group of :data:`GROUPS`, ``FORMAT-channel`` one group per row (GPTQ's ``group_size: -1``,
#: compressed-tensors' ``strategy: channel``)
GROUPED = ("awq", "gptq", "gptq-8bit", "w4a16", "w4a16-asym", "w8a16", "w8a16-asym")
#: the group sizes a grouped format takes (the packers': AutoAWQ, GPTQModel, llm-compressor)
GROUPS = (16, 32, 64, 128, 256, 512, 1024)


def grouped(base: str, group: int) -> str:
    """The name of a grouped format (:data:`GROUPED`) with ``group`` inputs per scale (-1: a row).

    >>> grouped("gptq", 128), grouped("gptq", 32), grouped("w4a16", -1)
    ('gptq', 'gptq-g32', 'w4a16-channel')
    """
    return base if group == 128 else f"{base}-channel" if group == -1 else f"{base}-g{group}"


def split_group(fmt: str) -> tuple[str, int]:
    """``(base format, group)`` of a format name: a grouped format's inputs per scale (-1: a whole row);
    128 for every other format (its name as is).

    >>> split_group("gptq-8bit-g32"), split_group("awq-channel"), split_group("nf4")
    (('gptq-8bit', 32), ('awq', -1), ('nf4', 128))
    """
    base, _, tail = fmt.rpartition("-")
    if base in GROUPED and tail == "channel":
        return base, -1
    if base in GROUPED and tail[:1] == "g" and tail[1:].isdigit() and int(tail[1:]) in GROUPS:
        return base, int(tail[1:])
    return fmt, 128

#: (quant_method, scheme) -> weight format (:data:`symllm.costs.formats.FORMATS`): the one table; a grouped
#: format (:data:`GROUPED`) is named for its group by :func:`grouped`
SCHEMES = {
    ("awq", "int4"): "awq",
    ("gptq", "int4"): "gptq", ("gptq", "int8"): "gptq-8bit",
    ("fp8", "fp8 block128"): "fp8-block", ("fp8", "fp8 tensor"): "fp8",
    ("compressed-tensors", "pack int4"): "w4a16", ("compressed-tensors", "pack int4 asym"): "w4a16-asym",
    ("compressed-tensors", "pack int8"): "w8a16", ("compressed-tensors", "pack int8 asym"): "w8a16-asym",
    ("compressed-tensors", "int8 channel"): "w8a8",
    ("compressed-tensors", "fp8 channel"): "w8a8-fp8", ("compressed-tensors", "fp8 tensor"): "w8a8-fp8-tensor",
    ("compressed-tensors", "fp8 block128"): "w8a8-fp8-block",
    ("compressed-tensors", "nvfp4 g16"): "nvfp4",
    ("modelopt", "nvfp4 g16"): "nvfp4", ("modelopt", "fp8 tensor"): "fp8",
    ("bitsandbytes", "nf4 dq"): "nf4", ("bitsandbytes", "nf4"): "nf4-nodq",
    ("bitsandbytes", "fp4 dq"): "fp4", ("bitsandbytes", "fp4"): "fp4-nodq", ("bitsandbytes", "int8"): "int8",
    ("mxfp4", "mxfp4"): "mxfp4",
}
_METHODS = tuple(dict.fromkeys(m for m, _ in SCHEMES))

#: the last part of a module name every format keeps in bf16 (a regular expression); ``mxfp4`` also keeps the
#: attention (gpt-oss quantizes only the experts)
KEPT = r"lm_head|embed_tokens|wte|norm|\w*layernorm|gate|router|shared_expert_gate"
#: parts of a checkpoint symllm does not count (a vision tower, a projector, multi-token prediction)
_UNCOUNTED = r"vision|visual|multi_modal|mm_projector|projector|merger|modality_projection|audio|mtp"


def _fail(key: str, value, why: str):
    """One line of at most 85 columns (``symllm: error: `` makes 100) naming the key and the value."""
    head = f"quantization_config.{key}: "
    for reason in (why, "docs/formats.md"):
        for room in (40, 24, 12, 8):
            line = f"{head}{short(value, room)} ({reason})"
            if len(line) <= 85:
                raise SymllmError(line)
    raise SymllmError(f"{head}{short(value, 8)} (not modelled)")


def _want(q: dict, key: str, allowed, method: str, default=None, *, where: str = ""):
    value = q.get(key, default)
    if value not in allowed:
        _fail(where + key, value, f"{method}: symllm prices {', '.join(str(a) for a in allowed)}")
    return value


def _ct_scheme(q: dict) -> tuple[str, int | None]:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1:
        _fail("config_groups", groups, "one config group is modelled")
    (name, g), = groups.items()
    where = f"config_groups.{name}."
    if not isinstance(g, dict) or not isinstance(g.get("weights"), dict):
        _fail(f"config_groups.{name}", g, "a group with weights")
    if g.get("targets") != ["Linear"]:
        _fail(where + "targets", g.get("targets"), "every Linear is modelled")
    w, m = g["weights"], "compressed-tensors"
    fmt = q.get("format", g.get("format"))
    if q.get("quantization_status", "compressed") != "compressed":
        _fail("quantization_status", q.get("quantization_status"), "a compressed checkpoint")
    if q.get("sparsity_config") not in (None, {}):
        _fail("sparsity_config", q.get("sparsity_config"), "sparse weights are not modelled")
    if q.get("transform_config") not in (None, {}):
        _fail("transform_config", q.get("transform_config"), "transforms are not modelled")
    where += "weights."
    if fmt == "pack-quantized":
        _want(w, "type", ("int",), m, where=where)
        bits = _want(w, "num_bits", (4, 8), m, where=where)
        strategy = _want(w, "strategy", ("group", "channel"), m, where=where)
        group = _want(w, "group_size", GROUPS, m, where=where) if strategy == "group" else -1
        sym = _want(w, "symmetric", (True, False), m, True, where=where)
        return f"pack int{bits}" + ("" if sym else " asym"), group
    if fmt == "int-quantized":
        _want(w, "type", ("int",), m, where=where)
        _want(w, "num_bits", (8,), m, where=where)
        _want(w, "strategy", ("channel",), m, where=where)
        _want(w, "symmetric", (True,), m, True, where=where)
        return "int8 channel", None
    if fmt == "float-quantized":
        _want(w, "type", ("float",), m, where=where)
        _want(w, "num_bits", (8,), m, where=where)
        strategy = _want(w, "strategy", ("channel", "tensor", "block"), m, where=where)
        if strategy == "block":
            _want(w, "block_structure", ([128, 128],), m, where=where)
            return "fp8 block128", None
        return f"fp8 {strategy}", None
    if fmt == "nvfp4-pack-quantized":
        _want(w, "type", ("float",), m, where=where)
        _want(w, "num_bits", (4,), m, where=where)
        _want(w, "strategy", ("tensor_group",), m, where=where)
        _want(w, "group_size", (16,), m, where=where)
        return "nvfp4 g16", None
    _fail("format", fmt, "compressed-tensors: symllm has formats for pack-quantized, int-quantized, "
                         "float-quantized, nvfp4-pack-quantized")


def scheme_of(q: dict) -> tuple[str, str, int | None]:
    """``(quant_method, scheme, group)``: the key of :data:`SCHEMES` a ``quantization_config`` states and, for
    a grouped format, its inputs per scale (-1: a row; else None); every key that decides the bytes is
    checked, and one symllm has no format for is refused naming it.

    >>> scheme_of({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})
    ('fp8', 'fp8 block128', None)
    >>> scheme_of({"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False})
    ('gptq', 'int4', -1)
    """
    if not isinstance(q, dict):
        raise SymllmError(f"quantization_config: expected an object, got {short(q, 30)}")
    method = q.get("quant_method")
    if method not in _METHODS:
        _fail("quant_method", method, f"symllm prices {len(_METHODS)} methods: docs/formats.md")
    if method == "awq":
        _want(q, "bits", (4,), method, q.get("w_bit"))
        group = _want(q, "group_size", GROUPS + (-1,), method, q.get("q_group_size"))
        _want(q, "zero_point", (True,), method, True)
        version = q.get("version", "gemm")
        if not (isinstance(version, str) and version.lower() == "gemm"):
            _fail("version", version, "awq: symllm prices the GEMM layout")
        return method, "int4", group
    if method == "gptq":
        bits = _want(q, "bits", (4, 8), method)
        group = _want(q, "group_size", GROUPS + (-1,), method)
        _want(q, "lm_head", (False,), method, False)
        _want(q, "checkpoint_format", ("gptq", "gptq_v2"), method, "gptq")
        _want(q, "is_marlin_format", (False,), method, False)
        if q.get("dynamic") not in (None, {}):
            _fail("dynamic", q.get("dynamic"), "per-module overrides are not modelled")
        for key in ("desc_act", "sym"):
            _want(q, key, (True, False), method, True)
        return method, f"int{bits}", group
    if method == "fp8":
        if q.get("weight_block_size") is None:
            return method, "fp8 tensor", None
        _want(q, "weight_block_size", ([128, 128],), method)
        return method, "fp8 block128", None
    if method == "compressed-tensors":
        return (method, *_ct_scheme(q))
    if method == "modelopt":
        algo = _want(q, "quant_algo", ("NVFP4", "FP8"), method)
        if algo == "NVFP4":
            _want(q, "group_size", (16,), method, 16)
            return method, "nvfp4 g16", None
        return method, "fp8 tensor", None
    if method == "bitsandbytes":
        four, eight = q.get("load_in_4bit", False), q.get("load_in_8bit", False)
        if four is eight:
            _fail("load_in_4bit", four, "bitsandbytes: one of load_in_4bit and load_in_8bit is true")
        if eight:
            _want(q, "llm_int8_has_fp16_weight", (False,), method, False)
            return method, "int8", None
        kind = _want(q, "bnb_4bit_quant_type", ("nf4", "fp4"), method, "fp4")
        _want(q, "bnb_4bit_quant_storage", ("uint8",), method, "uint8")
        dq = _want(q, "bnb_4bit_use_double_quant", (True, False), method, False)
        return method, kind + (" dq" if dq else ""), None
    return method, "mxfp4", None


#: the keys that list the modules a method keeps unquantized
_KEEP_KEYS = ("modules_to_not_convert", "llm_int8_skip_modules", "ignore", "exclude_modules")


def _kept(q: dict, fmt: str) -> tuple[list[str], list[str]]:
    """``(entries, patterns)``: every module the block keeps unquantized, as written, and the patterns
    (:func:`re.match` on a module's full name) of those the format would quantize (priced at two bytes)."""
    out, priced = [], []
    for key in _KEEP_KEYS:
        entries = q.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            _fail(key, entries, "a list of module names")
        for entry in entries:
            plain = re.sub(r"^re:|[\\^$*]|\.\*|\[.*?\]|\(.*?\)|\{.*?\}", "", entry).strip(".")
            last = plain.split(".")[-1]
            kept = KEPT + (r"|self_attn" if fmt == "mxfp4" else "")
            if not (re.fullmatch(kept, last) or re.search(_UNCOUNTED, plain)):
                priced.append(_pattern(key, entry, q.get("quant_method")))
            out.append(entry)
    return list(dict.fromkeys(out)), list(dict.fromkeys(priced))


def _pattern(key: str, entry: str, method) -> str:
    """A module exemption as a regular expression for :func:`re.match` on a module's full name, as its loader
    matches it: compressed-tensors' ``ignore`` an exact name or a ``re:`` pattern (``match_name``); ModelOpt's
    lists shell wildcards (``fnmatch``); transformers' ``should_convert_module`` for the others (from the start to a
    module boundary, as a regular expression with that boundary, or as a suffix)."""
    if key == "ignore" and method == "compressed-tensors":
        pattern = entry[3:] if entry.startswith("re:") else re.escape(entry) + "$"
    elif method == "modelopt":
        import fnmatch
        pattern = fnmatch.translate(entry)
    else:
        pattern = rf"(?:(?:{entry})(?:(?<=\.)|(?=\.|$))|.*{re.escape(entry)}$)"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        _fail(key, entry, "not a regular expression")
    return pattern


def kept_patterns(q: dict) -> tuple[str, ...]:
    """The modules a ``quantization_config`` keeps unquantized that its format would quantize, as patterns for
    :func:`re.match` on a module's full name (``model.layers.1.mlp.down_proj``): what
    :func:`symllm.costs.formats.weight_bytes` prices at two bytes a weight.

    >>> p, = kept_patterns({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
    ...                     "llm_int8_skip_modules": ["lm_head", "model.layers.1.mlp"]})
    >>> [bool(re.match(p, m)) for m in ("model.layers.1.mlp.up_proj", "model.layers.11.mlp.up_proj")]
    [True, False]
    """
    method, scheme, group = scheme_of(q)
    fmt = SCHEMES[(method, scheme)]
    return tuple(_kept(q, grouped(fmt, group) if group is not None else fmt)[1])


#: compressed-tensors' KV cache schemes symllm prices: (type, num_bits) -> the KV cache dtype
_KV_SCHEMES = {("float", 8): "fp8", ("int", 8): "int8"}


def kv_dtype(q: dict) -> tuple[str, str] | None:
    """``(dtype, source)``: the KV cache dtype a ``quantization_config`` states (compressed-tensors'
    ``kv_cache_scheme``, an llm-compressor FP8 KV cache; ModelOpt's ``kv_cache_quant_algo``), or None; a scheme
    symllm has no dtype for is refused in one line. The cache's per-tensor (or per-head) scales are weights of
    the checkpoint, not cache.

    >>> kv_dtype({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float",
    ...           "strategy": "tensor", "dynamic": False, "symmetric": True}})
    ('fp8', 'quantization_config.kv_cache_scheme: float 8 bits')
    """
    if not isinstance(q, dict):
        return None
    scheme = q.get("kv_cache_scheme")
    if scheme is not None:
        if not isinstance(scheme, dict):
            _fail("kv_cache_scheme", scheme, "an object (compressed-tensors' QuantizationArgs)")
        kind, bits = scheme.get("type"), scheme.get("num_bits")
        if (kind, bits) not in _KV_SCHEMES:
            _fail("kv_cache_scheme", {"type": kind, "num_bits": bits}, "symllm prices float or int, 8 bits")
        if scheme.get("dynamic") not in (None, False):
            _fail("kv_cache_scheme.dynamic", scheme.get("dynamic"), "static scales are modelled")
        return _KV_SCHEMES[(kind, bits)], f"quantization_config.kv_cache_scheme: {kind} {bits} bits"
    algo = q.get("kv_cache_quant_algo")
    if algo is not None:
        if algo != "FP8":
            _fail("kv_cache_quant_algo", algo, "symllm prices FP8")
        return "fp8", "quantization_config.kv_cache_quant_algo: FP8"
    return None


def fields(q: dict) -> dict:
    """The config fields a ``quantization_config`` sets (:class:`symllm.arch.config.ModelConfig`):
    ``weight_format`` and ``weight_format_source`` (:func:`read`), ``weight_format_kept`` where it keeps
    modules the format quantizes (:func:`kept_patterns`), ``kv_dtype`` and ``kv_dtype_source`` where it states
    the KV cache (:func:`kv_dtype`).

    >>> sorted(fields({"quant_method": "fp8", "weight_block_size": [128, 128]}))
    ['weight_format', 'weight_format_source']
    """
    fmt, said = read(q)
    out = {"weight_format": fmt, "weight_format_source": said}
    kept = kept_patterns(q)
    if kept:
        out["weight_format_kept"] = kept
    kv = kv_dtype(q)
    if kv is not None:
        out["kv_dtype"], out["kv_dtype_source"] = kv
    return out


def read(q: dict) -> tuple[str, str]:
    """``(format, source)``: the weight format a config.json's ``quantization_config`` states (:data:`SCHEMES`)
    and a line saying what was read, with the modules it keeps unquantized.

    >>> read({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]})
    ('mxfp4', "quantization_config: quant_method mxfp4 (kept unquantized: 'model.layers.*.self_attn', 'lm_head')")
    """
    method, scheme, group = scheme_of(q)
    fmt = SCHEMES[(method, scheme)]
    if group is not None:
        fmt = grouped(fmt, group)
        scheme += f" {'per channel' if group == -1 else f'g{group}'}"
    kept, priced = _kept(q, fmt)
    said = f"quantization_config: quant_method {method}" + (f", {scheme}" if scheme != method else "")
    if kept:
        said += f" (kept unquantized: {', '.join(repr(k) for k in kept)}" + (
            "; the projections they match priced in bf16)" if priced else ")")
    return fmt, said


#: the HF module holding a projection, by the part of symllm's tree holding it (transformers' LlamaDecoderLayer)
HF_PARENTS = {"attention": "self_attn", "feed_forward": "mlp"}


def hf_modules(t: dict) -> list[str] | None:
    """The full HF module names (``model.layers.3.self_attn.q_proj``) of a tensor of
    :func:`symllm.costs.formats.tensors`, one per layer of its group, where symllm names it (a projection of the
    attention or the MLP, transformers' LLaMA names); None otherwise.

    >>> hf_modules({"path": "block/attention/wq", "layer": 0, "names": ("wq", "q_proj"), "positions": (0, 1)})
    ['model.layers.0.self_attn.q_proj', 'model.layers.1.self_attn.q_proj']
    """
    parts = t["path"].split("/")
    if t["layer"] is None or len(t["names"]) != 2 or len(parts) < 2 or parts[-2] not in HF_PARENTS:
        return None
    return [f"model.layers.{i}.{HF_PARENTS[parts[-2]]}.{t['names'][1]}" for i in t["positions"]]


def kept_layers(t: dict, patterns, matched: set) -> int:
    """How many layers of tensor ``t`` (:func:`symllm.costs.formats.tensors`) a pattern of ``patterns``
    (:func:`kept_patterns`) keeps unquantized (0 where symllm has no HF name for it); each pattern that matches is
    added to ``matched``.

    >>> t = {"path": "block/feed_forward/w2", "layer": 0, "names": ("w2", "down_proj"), "positions": (0, 1, 11)}
    >>> matched = set()
    >>> kept_layers(t, ("model[.]layers[.]1[.]", "lm_head"), matched), matched
    (1, {'model[.]layers[.]1[.]'})
    """
    import re
    names = hf_modules(t)
    if names is None:
        return 0
    held = 0
    for name in names:
        hits = [p for p in patterns if re.match(p, name)]
        matched.update(hits)
        held += bool(hits)
    return held
