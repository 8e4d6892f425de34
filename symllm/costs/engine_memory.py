"""The memory each serving engine gives its KV cache: its own rule, read in its code and declared once, with the
source, in its ``kv_memory`` entry of efficiency.json (``engines``); :func:`symllm.costs.serving.capacity` applies it.

A pool engine sizes its cache from a fraction ``f`` of memory (its own option, ``--gpu-memory-utilization`` on the
command line):

    KV cache bytes = f · s · (GPU memory − Σ of) − Σ less

``of``: the parts counted inside the fraction, ``less``: the parts subtracted after it (``weights``, the profile's
``activation`` peak, ``non_torch`` memory), ``s`` a fixed scale where the engine has one (TGI's wiggle room):

* vllm (and its older engines): ``gpu_memory_utilization`` (0.9) of the card, less weights, activation peak and
  non-torch memory; blocks of 16 tokens;
* sglang: ``mem_fraction_static`` (by card and ranks) of the card less non-torch memory, less the weights; pages of 1;
* trtllm: ``free_gpu_memory_fraction`` (0.9) of what weights, activation peak and non-torch memory leave; blocks of
  32;
* lmdeploy (TurboMind, v0.2.2 on): ``cache_max_entry_count`` (0.8) of what weights and non-torch memory leave;
  blocks of 64;
* tgi (v3.3.6): ``cuda_memory_fraction`` (1) x 0.90 of the card, less weights, activation peak and non-torch memory, the
  activation its warm-up's (:func:`warmup_tokens`).

An engine whose cache is sized by the context, not a pool (``sized_by: context``: llama.cpp's ``n_ctx`` cells,
gpt-fast's static cache, MLC's chat window, transformers' growing cache), holds ``batch`` sequences of the context
and takes no fraction. An engine that states no rule is refused in one line, never given vLLM's.

The activation peak beside the cache is a forward of the engine's profile tokens (``max_num_batched_tokens``)
unless the rule states its own working set (``working_set``): llama.cpp reserves its compute buffer for one
micro-batch, ``min(n_ctx, n_batch, n_ubatch)`` tokens (``--ubatch``, its ``-ub``), with every position's logits, in
fp32, and without FlashAttention (``--flash-attn``, its ``-fa``, off by default: :func:`micro_batch`) the
micro-batch's scores against a sequence's whole cache (:func:`symllm.costs.ggml.scores_moment`); gpt-fast's
prefill is one forward of the whole prompt, every position's logits (:func:`working_set`); TGI's warm-up, where
no budget is given, is its launcher's default ``max_batch_prefill_tokens`` (:func:`warmup_tokens`).

>>> rule("sglang")["fraction"], rule("vllm-v0")["fraction"], rule("llama.cpp")["sized_by"]
('mem_fraction_static', 'gpu_memory_utilization', 'context')
"""
from __future__ import annotations

from fractions import Fraction
from math import floor

from symllm.arch.dtypes import BYTES
from symllm.errors import SymllmError
from symllm.validate import choice, integer

__all__ = ["PARTS", "FLASH_ATTN", "rule", "micro_batch", "prompt_micro_batch", "fraction", "default_fraction",
           "kv_bytes", "context_tokens", "working_set", "warmup_tokens"]

#: the parts of memory a rule names, in the order they are listed
PARTS = ("non_torch", "weights", "activation")

#: the values of ``flash_attn`` (llama.cpp's ``-fa``), as :func:`micro_batch` takes them beside a bool
FLASH_ATTN = ("on", "off")


def rule(engine, ubatch=None, flash_attn=None, kv_format=None) -> dict:
    """The KV-memory rule of ``engine`` (a name, or its conventions, :func:`symllm.costs.figures.engine`): its
    ``kv_memory`` entry, or the entry of the engine it names there (vLLM's older engines name ``vllm``), with
    ``name`` the engine whose rule it is and ``sized_by`` ``"memory"`` or ``"context"``; refused where the engine
    states none. Where its working set is a micro-batch (llama.cpp: :func:`micro_batch`), ``ubatch`` and
    ``flash_attn`` the options given (None: the engine's) and the workload's ``kv_format``, resolved into the rule.

    >>> r = rule("trtllm")
    >>> r["of"], r["less"], r["sized_by"]
    (['weights', 'activation', 'non_torch'], [], 'memory')
    """
    from symllm.costs.figures import engine as conventions
    table = conventions(engine) if isinstance(engine, str) or engine is None else engine
    name, entry = table["name"], table.get("kv_memory")
    if isinstance(entry, str):  # another engine's rule (one place)
        name, entry = entry, conventions(entry).get("kv_memory")
    if not isinstance(entry, dict) and table.get("kind") == "training":
        raise SymllmError(f"engine: {table['name']} trains only; serving takes an inference engine (docs/serving.md)")
    if not isinstance(entry, dict):
        raise SymllmError(f"engine: {table['name']} states no KV-cache memory rule (efficiency.json kv_memory)")
    return micro_batch({"name": name, "sized_by": "memory", "of": [], "less": [], **entry}, table, ubatch, flash_attn,
                       kv_format)


def micro_batch(r: dict, conventions: dict, ubatch=None, flash_attn=None, kv_format=None) -> dict:
    """``r`` with the micro-batch options of an engine whose working set is one (its ``working_set`` names the
    convention holding its size: llama.cpp's ``ubatch``, n_ubatch, 512) resolved: ``ubatch`` the tokens of that
    micro-batch (its ``-ub``), ``flash_attn`` whether FlashAttention runs (``-fa``, ``"on"``/``"off"`` or a bool;
    llama.cpp 4227c9be's default off: no scores held, ``working_set``) and ``round_to`` the cells each sequence's
    cache is padded to (``cells_pad``: 32, or 256 under FlashAttention). A block-quantized ``kv_format`` (q8_0, q4_0:
    no dtype of its own) takes FlashAttention where the engine's V cache needs it (``quantized_v_needs_flash_attn``),
    and refuses it off. Either option given to an engine without a micro-batch is refused in one line.

    >>> from symllm.costs.figures import engine
    >>> r = micro_batch(rule("llama.cpp"), engine("llama.cpp"), ubatch=1024, flash_attn="on")
    >>> r["ubatch"], r["flash_attn"], r["round_to"]
    (1024, True, 256)
    >>> micro_batch(rule("llama.cpp"), engine("llama.cpp"), kv_format="q8_0")["flash_attn"]
    True
    >>> micro_batch(rule("vllm"), engine("vllm"), ubatch=256)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: ubatch: got 256; vllm has no micro-batch option (llama.cpp's -ub, n_ubatch)
    """
    own = r.get("working_set") or {}
    if own.get("tokens") in (None, "prompt"):  # no micro-batch: the options do not apply
        for key, value in (("ubatch", ubatch), ("flash_attn", flash_attn)):
            if value is not None:
                what = "micro-batch option (llama.cpp's -ub, n_ubatch" if key == "ubatch" else \
                    "FlashAttention option (llama.cpp's -fa, flash_attn"
                raise SymllmError(f"{key}: got {value!r}; {r['name']} has no {what})")
        return r
    size = int(conventions[own["tokens"]]) if ubatch is None else integer("ubatch", ubatch)
    needs = bool(own.get("quantized_v_needs_flash_attn")) and kv_format is not None and kv_format not in BYTES
    if flash_attn is None:
        on = needs or bool(own.get("flash_attn"))
    elif isinstance(flash_attn, bool):
        on = flash_attn
    else:
        on = choice("flash_attn", flash_attn, FLASH_ATTN) == "on"
    if needs and not on:
        raise SymllmError(f"flash_attn: got {flash_attn!r}; {r['name']}'s quantized V cache ({kv_format}) needs "
                          "FlashAttention (-fa)")
    out = {**r, "ubatch": size, "flash_attn": on}
    if "cells_pad" in r:
        out["round_to"] = int(r["cells_pad"]["on" if on else "off"])
    return out


def prompt_micro_batch(conventions: dict, work) -> tuple[int, bool] | None:
    """The micro-batch a prompt of ``work`` (``batch`` x ``seq`` tokens) runs in under its inference engine
    (``conventions``, :func:`symllm.costs.figures.engine_for`) where the engine runs one (llama.cpp; None
    otherwise): ``(tokens, flash_attn)``, the tokens :func:`working_set`'s of the ``b·s`` prompt tokens,
    ``min(b·s, n_ubatch)``; ``n_ubatch`` and FlashAttention the workload's ``ubatch``, ``flash_attn`` and
    ``kv_format`` as :func:`rule` resolves them: one resolution for the engine's memory and its expected prompt.
    (llama.cpp also caps ``n_ubatch`` at ``n_batch``, 2048 by default: a step's budget, not the workload's, so a
    ``ubatch`` above it is taken as given here.)

    >>> from symllm.costs.figures import engine
    >>> from symllm.costs.workloads import Workload
    >>> llama = engine("llama.cpp")
    >>> prompt_micro_batch(llama, Workload(seq=4096, ubatch=1024, flash_attn="on", engine="llama.cpp"))
    (1024, True)
    >>> prompt_micro_batch(llama, Workload(seq=300)), prompt_micro_batch(llama, Workload(seq=300, batch=4))
    ((300, False), (512, False))
    >>> prompt_micro_batch(engine("vllm"), Workload()) is None
    True
    """
    r = rule(conventions, work.ubatch, work.flash_attn, work.kv_format)
    if "ubatch" not in r:
        return None
    rows = work.batch * work.seq
    return working_set(r, conventions, work.seq, rows, rows)["tokens"], r["flash_attn"]


def default_fraction(r: dict, gpu, tp: int = 1) -> Fraction:
    """The engine's fraction where none is given: a number, or SGLang's by card and ranks (``reserved_gib``:
    ``[below GiB, base, per rank]`` tiers, ``round((memory − reserved) / memory, digits)`` in MiB; ``gpu`` a
    :class:`symllm.costs.accelerators.GPU`, its ``usable`` bytes).

    >>> from symllm.costs import accelerators
    >>> default_fraction(rule("sglang"), accelerators.gpu("h100-sxm")), default_fraction(rule("vllm"), None)
    (Fraction(437, 500), Fraction(9, 10))
    """
    given = r["default"]
    if not isinstance(given, dict):
        return Fraction(given)
    mib = Fraction(gpu.usable, 2 ** 20)
    for below, base, per_rank in given["reserved_gib"]:
        if below is None or mib < below * 1024:
            reserved = (Fraction(base) + Fraction(per_rank) * tp) * 1024
            return Fraction(str(round(float((mib - reserved) / mib), given["digits"])))
    raise AssertionError("reserved_gib ends with an open tier")  # pragma: no cover


def fraction(r: dict, value, gpu, tp: int = 1) -> Fraction | None:
    """The fraction ``r``'s engine applies: ``value`` (``--gpu-memory-utilization``), checked against the engine's
    range (above 0, at most 1; below 1 where the engine asserts it, ``below``), or the engine's default; None for a
    cache sized by the context, which refuses a given fraction.

    >>> fraction(rule("lmdeploy"), None, None), fraction(rule("vllm"), "0.5", None)
    (Fraction(4, 5), Fraction(1, 2))
    >>> fraction(rule("lmdeploy"), 1, None)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpu_memory_utilization: got 1; lmdeploy's cache_max_entry_count is in (0, 1)
    """
    if r["sized_by"] == "context":
        if value is not None:
            raise SymllmError(f"gpu_memory_utilization: got {value!r}; {r['name']} sizes its KV cache by the context "
                              "(--seq + --gen, x --batch), not by a share of memory")
        return None
    if value is None:
        return default_fraction(r, gpu, tp)
    bound = "(0, 1)" if r.get("below") else "(0, 1]"
    try:
        out = value if isinstance(value, Fraction) else Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        out = None
    if isinstance(value, bool) or out is None or not (0 < out < 1 or (out == 1 and not r.get("below"))):
        raise SymllmError(f"gpu_memory_utilization: got {value!r}; {r['name']}'s {r['fraction']} is in {bound}")
    return out


def kv_bytes(r: dict, f: Fraction, memory, parts: dict) -> tuple:
    """``(budget, KV cache bytes)`` by ``r``'s rule, whole bytes: ``budget = ⌊f · scale · (memory − Σ of)⌋``, the KV
    cache ``⌊budget − Σ less⌋``; ``parts`` the bytes of ``weights``, ``activation`` and ``non_torch``. Rounded down
    as vLLM does (``Worker.determine_available_memory`` returns ``int(requested_memory − non-KV memory)``,
    ``requested_memory = total × gpu_memory_utilization``); an engine's whole blocks or tokens, ``⌊bytes / b⌋`` for
    a whole ``b``, are the same of the exact bytes or of these.

    >>> kv_bytes(rule("sglang"), Fraction(1, 2), 101, {"weights": 20, "activation": 5, "non_torch": 2})
    (49, 29)
    """
    budget = floor(f * Fraction(r.get("scale", 1)) * (memory - sum(parts[p] for p in r["of"])))
    return budget, floor(budget - sum(parts[p] for p in r["less"]))


def context_tokens(r: dict, context: int, batch: int = 1) -> int:
    """The tokens a context-sized cache holds: ``batch`` sequences of ``context`` tokens, each rounded up to the
    engine's ``round_to`` (gpt-fast's multiple of 8; llama.cpp's cells, 32 or under FlashAttention 256:
    :func:`micro_batch`).

    >>> context_tokens(rule("gpt-fast"), 1001), context_tokens(rule("llama.cpp"), 1001, batch=4)
    (1008, 4096)
    >>> context_tokens(rule("llama.cpp", flash_attn="on"), 1001)
    1024
    """
    step = r.get("round_to", 1)
    return -(-context // step) * step * batch


def working_set(r: dict, conventions: dict, seq: int, context: int, batched: int) -> dict:
    """The forward whose working set the engine holds beside its KV cache: ``{"tokens", "options", "scores"}``,
    ``options`` the workload's (its activations' dtype) and ``scores`` whether the attention scores against a
    sequence's cache of ``context`` tokens are held too. By default ``batched`` tokens (the profile's
    ``max_num_batched_tokens``), the workload's dtypes; where ``r`` states a ``working_set``, its ``tokens``:
    ``"prompt"``, one forward of the whole ``seq``-token prompt (gpt-fast's prefill), or the name of the engine's
    convention holding its micro-batch, at most ``context`` (llama.cpp's ``ubatch``, n_ubatch 512: its worst-case
    reserve, ``n_tokens = min(n_ctx, n_ubatch)``), in its ``dtype``.

    >>> from symllm.costs.figures import engine
    >>> working_set(rule("llama.cpp"), engine("llama.cpp"), 4000, 4096, 8192)
    {'tokens': 512, 'options': {'act_dtype': 'fp32'}, 'scores': True}
    >>> [working_set(rule(e), engine(e), 300, 320, 8192)["tokens"] for e in ("llama.cpp", "gpt-fast", "hf")]
    [320, 300, 8192]
    """
    own = r.get("working_set")
    if not own:
        return {"tokens": batched, "options": {}, "scores": False}
    if own["tokens"] == "prompt":
        tokens = seq
    else:  # n_ubatch = min(n_batch, n_ubatch), n_batch = min(n_ctx, n_batch): llama_context's constructor
        tokens = min(context, batched, r.get("ubatch") or int(conventions[own["tokens"]]))
    return {"tokens": tokens, "options": {"act_dtype": own["dtype"]} if "dtype" in own else {},
            "scores": bool(own.get("scores")) and not r.get("flash_attn")}


def warmup_tokens(r: dict, config, gpu, tp: int = 1, fraction=1, quantized: bool = False) -> int | None:
    """The tokens of the engine's warm-up forward where the user gives none, by its rule's ``warmup`` (None where
    it has none): TGI's launcher (v3.3.6, launcher/src/main.rs) defaults ``max_batch_prefill_tokens`` to
    ``compute_optimal``, the card's fp16 FLOP/s (its own table by nvidia-smi's name, ``card_f16_tflops``) times the
    shards over its count of a token's FLOPs (``Config::flop``: ``L·(6·h·d_h·d + 4·kv·d_h·d + 6·d·d_ff·(k +
    shared))``), where above ``minimum`` (100), else ``default`` (4096); at most ``max_position_embeddings``;
    unquantized, at most ``vram_maximum``: ``(memory · shards · fraction · 0.95 − model_vram) // token_vram`` with
    ``model_vram = 2·(L·((h + 2kv)·d_h + h·d_h·d + 3·d_ff·E·d) + 2·d·V)`` (its attention term has no ``d``, as
    written) and ``token_vram = 4·kv·d_h·L + 6·E·(d_ff + d_ff // 2)``. Each size is config.json's own key as the
    launcher reads it (``ModelConfig.stated``; the model's where a config states none): ``d_ff`` its
    ``intermediate_size``, a mixture's dense width where it names its experts' otherwise (Qwen3-MoE, DeepSeek), ``k``
    ``num_experts_per_tok`` (1), ``shared`` ``n_shared_experts`` (0), ``E`` ``num_local_experts`` (1): no case for
    a mixture.
    ``gpu`` a :class:`symllm.costs.accelerators.GPU` (its ``usable`` memory read as nvidia-smi's total);
    ``quantized``: the config states a quantization (config.json's ``quantization_config``: no ``vram_maximum``).
    A config.json stating no ``head_dim`` whose ``hidden_size`` the heads do not divide has no head width in the
    launcher's ``Config`` (``From<RawConfig>`` divides only where the remainder is 0, where transformers rounds
    down), so neither ``compute_optimal`` nor a bound: ``default``, at most ``max_position_embeddings``.
    A multimodal config.json (``wrapper``: the language model is its ``text_config``) has no ``compute_optimal``
    (``Config::flop`` is None beside a ``vision_config``) and no bound (its sizes and positions are not at its top
    level, where the launcher reads them): ``wrapper_default`` by its ``model_type`` (``gemma3`` 8000), else 4096.

    >>> from symllm.costs import accelerators
    >>> h100, h200 = accelerators.gpu("h100-sxm"), accelerators.gpu("h200")
    >>> warmup_tokens(rule("tgi"), "llama3.1-8b", h100), warmup_tokens(rule("tgi"), "llama3.1-8b", h200)
    (59870, 65791)
    >>> warmup_tokens(rule("tgi"), "gemma-3-27b", h100), warmup_tokens(rule("tgi"), "llama4-scout-17b-16e", h100)
    (8000, 4096)
    """
    own = r.get("warmup")
    if not own:
        return None
    from symllm.arch.catalogue import resolve
    cfg = resolve(config)
    if cfg.wrapper is not None:
        return own["wrapper_default"].get(cfg.wrapper, own["default"])
    # config.json's keys as RawConfig reads them (the sizes a preset leaves to their defaults: the model's)
    stated = dict(cfg.stated or ())
    d, layers = stated.get("hidden_size", cfg.dim), stated.get("num_hidden_layers", cfg.n_layers)
    h = stated.get("num_attention_heads", cfg.n_heads)
    kv = stated.get("num_key_value_heads", h if cfg.stated is not None else cfg.n_kv_heads)
    d_h = stated.get("head_dim") if cfg.stated is not None else cfg.head_dim
    if d_h is None and d % h == 0:  # From<RawConfig>: hidden_size / num_attention_heads only where it divides
        d_h = d // h
    if d_h is None:  # Config::get_head_dim None: no flop (compute_optimal) and no model_vram (vram_maximum)
        return own["default"] if cfg.max_positions is None else min(own["default"], cfg.max_positions)
    if "intermediate_size" in stated:  # the dense layers' width where a family states its experts' elsewhere
        d_ff = stated["intermediate_size"]
    elif cfg.hidden_dim is not None:
        d_ff = cfg.hidden_dim
    else:  # Meta's rounding (SymPy): only where the config states no width
        from symllm.arch.resolved import hidden_dim
        d_ff = hidden_dim(config)
    if cfg.stated is not None:  # its own keys only (DeepSeek's n_routed_experts is not num_local_experts: 1)
        active = stated.get("num_experts_per_tok", 1) + stated.get("n_shared_experts", 0)
    else:
        active = (cfg.experts_per_token or 1) + (cfg.n_shared_experts or 0)
    flop = layers * (6 * h * d_h * d + 4 * kv * d_h * d + 6 * d * d_ff * active)
    card = own["card_f16_tflops"].get(gpu.name)
    optimal = int(card) * 10 ** 12 * tp // flop if card is not None else None
    tokens = optimal if optimal is not None and optimal > own["minimum"] else own["default"]
    if cfg.max_positions is not None:
        tokens = min(tokens, cfg.max_positions)
    if not quantized:
        experts = stated.get("num_local_experts", 1) if cfg.stated is not None else cfg.n_experts or 1
        model = 2 * (layers * ((h + 2 * kv) * d_h + h * d_h * d + 3 * d_ff * experts * d) + 2 * d * cfg.vocab_size)
        room = int(gpu.usable * tp * fraction * Fraction(own["wiggle"])) - model
        if room >= 0:
            tokens = min(tokens, room // (4 * kv * d_h * layers + 6 * experts * (d_ff + d_ff // 2)))
    return tokens
