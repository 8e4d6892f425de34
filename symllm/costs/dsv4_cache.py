"""DeepSeek-V4's serving cache as vLLM lays it out (:func:`deepseek_v4_blocks`; docs/serving.md, "DeepSeek-V4"):
its window keys, compressed entries, indexer keys and compressor states in FlashMLA-aligned pages, grouped into
blocks as released vLLM's allocator groups them. :func:`symllm.costs.serving.capacity` reads it for a DeepSeek-V4
model; numbers only, no SymPy.
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch.catalogue import resolve
from symllm.errors import SymllmError

__all__ = ["DSV4_LAYOUTS", "DSV4_RELEASES", "check", "deepseek_v4_blocks", "INDEXER_KEY_BYTES", "INDEXER_QUANT_BLOCK",
           "indexer", "layout"]

#: vLLM's indexer cache: FP8 keys with one fp32 scale per this many elements (``Indexer.quant_block_size``, 128,
#: vllm/model_executor/models/deepseek_v2.py; 4 bytes a scale)
INDEXER_QUANT_BLOCK = 128


#: vLLM's DeepSeek-V4 cache layout (vLLM 0.20.0; docs/serving.md, "DeepSeek-V4"): an fp8_ds_mla entry's bytes (448
#: FP8 NoPE values, 64 bf16 RoPE values, 7 UE8M0 scales and a pad byte), FlashMLA's page alignment, the compressed
#: attention's block (tokens) and the window cache's block
DSV4_ENTRY_BYTES, DSV4_ALIGNMENT, DSV4_BLOCK, DSV4_SWA_BLOCK = 584, 576, 256, 64
#: the compressors' state blocks (CompressorStateCache: 4 tokens for ratio 4, 8 for ratio 128), by ratio
DSV4_STATE_BLOCK = {4: 4, 128: 8}

#: vLLM 0.33.0's DeepSeek-V4 cache layouts (vllm/models/deepseek_v4/attention.py, ``_resolve_dsv4_kv_cache_dtype``
#: and each cache's ``get_kv_cache_spec``): a compressed or window entry's bytes and every page's alignment (the
#: attention's, the indexer's, the window keys', the compressor states'). "fp8_ds_mla": FlashMLA's (the default
#: backend; ``auto`` and any fp8 resolve to it), 584 bytes, 576; "bf16": FlashInfer's plain rows
#: (``FLASHINFER_MLA_SPARSE_DSV4``), ``(head_size + head_size_v) · 2`` = (512 + 0) · 2 = 1,024 bytes, 512
DSV4_LAYOUTS = {"fp8_ds_mla": (DSV4_ENTRY_BYTES, DSV4_ALIGNMENT), "bf16": (1024, 512)}

#: the catalogue's cards of compute capability 10.x (NVIDIA's table, developer.nvidia.com/cuda-gpus: B200 and
#: GB200 10.0), the only ones where vLLM 0.33.0 serves DeepSeek-V4's bf16 cache: its FlashInfer backend
#: (``DeepseekV4FlashInferMLASparseBackend.supports_combination``, vllm/models/deepseek_v4/nvidia/
#: flashinfer_sparse.py) takes bf16 on SM10x, fp8 only on SM12x and nothing on SM90 (an H100, an H200)
FLASHINFER_BF16_CARDS = ("b200", "gb200")


#: the indexer's key bytes by vLLM 0.33.0's ``indexer_kv_dtype`` (``AttentionConfig.indexer_kv_dtype``,
#: vllm/config/attention.py, set by ``--attention-config '{"indexer_kv_dtype": "mxfp4"}'``; "auto" is the FP8 one,
#: ``dsa_indexer_uses_fp4``, vllm/v1/attention/backends/mla/indexer.py): ``DeepseekV4Indexer.__init__``
#: (vllm/models/deepseek_v4/attention.py) caches 128 FP8 values and an fp32 scale, ``head_dim + head_dim // 128 ·
#: 4``, or MXFP4's two values a byte and a UE8M0 scale a 32 (``MXFP4_BLOCK_SIZE``), ``head_dim // 2 + head_dim //
#: 32``, both uint8 in the same spec (its alignment the layout's)
INDEXER_KEY_BYTES = {"fp8": 128 + 128 // INDEXER_QUANT_BLOCK * 4, "mxfp4": 128 // 2 + 128 // 32}


def indexer(kv: str | None, gpu: str) -> str:
    """The indexer cache vLLM 0.33.0 keeps DeepSeek-V4's indexer keys in (:data:`INDEXER_KEY_BYTES`) for its
    ``indexer_kv_dtype`` ``kv`` (None: "auto", the FP8 one) on the card named ``gpu``: MXFP4 needs an SM10x card
    (``dsa_indexer_uses_fp4``: "requires Blackwell datacenter GPUs (sm_10x, e.g. B200/GB200)"); else refused.

    >>> indexer(None, "h200"), indexer("mxfp4", "b200")
    ('fp8', 'mxfp4')
    """
    if kv is None or kv == "fp8":
        return "fp8"
    if kv != "mxfp4":
        raise SymllmError(f"indexer_kv_dtype: {kv}; vLLM's DeepSeek-V4 indexer cache is fp8 or mxfp4")
    if gpu not in FLASHINFER_BF16_CARDS:
        raise SymllmError(f"indexer_kv_dtype: mxfp4; needs b200 or gb200 (vLLM's sm_10x), not {gpu}")
    return "mxfp4"


def layout(kv: str, given: bool, gpu: str) -> str:
    """The layout vLLM 0.33.0 caches DeepSeek-V4 in (:data:`DSV4_LAYOUTS`) for a KV cache dtype ``kv`` (``given``:
    the user chose it; else vLLM's ``auto``) on the card named ``gpu``: fp8, or none given, is FlashMLA's
    ``fp8_ds_mla`` (``auto`` resolves to it on the default backend); bf16 FlashInfer's rows, on an SM10x card
    only (:data:`FLASHINFER_BF16_CARDS`, with ``--attention-backend FLASHINFER_MLA_SPARSE_DSV4``); any other
    cache is refused in one line.

    >>> layout("bf16", False, "h200"), layout("fp8", True, "h200"), layout("bf16", True, "b200")
    ('fp8_ds_mla', 'fp8_ds_mla', 'bf16')
    """
    if not given or str(kv).startswith("fp8"):
        return "fp8_ds_mla"
    if kv != "bf16":
        raise SymllmError(f"kv_dtype: {kv}; vLLM caches DeepSeek-V4 in fp8 (FlashMLA's fp8_ds_mla) or bf16 only")
    if gpu not in FLASHINFER_BF16_CARDS:
        raise SymllmError(f"kv_dtype: bf16; on {gpu} vLLM caches DeepSeek-V4 in fp8 only (bf16: b200, gb200)")
    return "bf16"


def _pad(size: int, alignment: int = DSV4_ALIGNMENT) -> int:
    """A page rounded up to its spec's alignment (``_apply_alignment_padding``; FlashMLA's 576 by default)."""
    return -(-size // alignment) * alignment


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM's ``_approximate_gcd``: the number of layer tuples, from ``lower_bound`` to the largest value, that pads
    the groups' tuple counts least (ties: the larger)."""
    best, best_pad = lower_bound, None
    for d in range(lower_bound, max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


#: the vLLM releases whose DeepSeek-V4 layouts :func:`deepseek_v4_blocks` follows (docs/serving.md, "DeepSeek-V4"),
#: the newest first (the default)
DSV4_RELEASES = ("0.33", "0.20")


def check(config, release: str = "0.33", layout: str = "fp8_ds_mla", indexer: str = "fp8") -> tuple[int, int, int]:
    """The refusals of :func:`deepseek_v4_blocks` that depend on the config and the release alone (no numbers
    computed; :func:`symllm.costs.serving.check` calls it before any workload): the release, the layout
    (:data:`DSV4_LAYOUTS`; vLLM 0.20.0 caches fp8_ds_mla only), the indexer cache (:data:`INDEXER_KEY_BYTES`;
    0.20.0's: fp8), widths vLLM's DeepSeek-V4 kernels do not take, a
    model without a compressed sparse attention layer under 0.20.0, or without any compressed layer. Returns the CSA,
    HCA and all layers' counts.

    >>> cfg = {"model_type": "deepseek_v4", "vocab_size": 100, "hidden_size": 32, "moe_intermediate_size": 16,
    ...        "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 512, "q_lora_rank": 8,
    ...        "qk_rope_head_dim": 64, "num_experts_per_tok": 2, "n_routed_experts": 4, "hc_mult": 2,
    ...        "sliding_window": 128, "o_groups": 2, "o_lora_rank": 6, "index_n_heads": 2, "index_head_dim": 128,
    ...        "index_topk": 2, "compress_ratios": [4, 128, 4]}
    >>> check(cfg)
    (2, 1, 3)
    """
    if release not in DSV4_RELEASES:
        raise SymllmError(f"release: {release!r}; expected one of {', '.join(DSV4_RELEASES)}")
    if layout not in DSV4_LAYOUTS:
        raise SymllmError(f"layout: {layout!r}; expected one of {', '.join(DSV4_LAYOUTS)}")
    if release == "0.20" and layout != "fp8_ds_mla":  # "DeepseekV4 only supports fp8 kv-cache format for now"
        raise SymllmError(f"kv_dtype: {layout}; vLLM 0.20.0 caches DeepSeek-V4 in fp8 only (release 0.20)")
    if indexer not in INDEXER_KEY_BYTES:
        raise SymllmError(f"indexer_kv_dtype: {indexer!r}; expected one of {', '.join(INDEXER_KEY_BYTES)}")
    if release == "0.20" and indexer != "fp8":  # (0.20's use_fp4_indexer_cache allocates the FP8 bytes)
        raise SymllmError(f"indexer_kv_dtype: {indexer}; modelled for vLLM 0.33.0 only (release 0.20)")
    cfg = resolve(config)
    counts = {"shared_kv": 0, "compressed_sparse": 0, "heavily_compressed": 0}
    for kind, n in cfg.layers:
        counts[kind.mixer] = counts.get(kind.mixer, 0) + n
    csa, hca, every = counts["compressed_sparse"], counts["heavily_compressed"], sum(counts.values())
    if every != cfg.n_layers:
        raise SymllmError("serve: vLLM's DeepSeek-V4 serves DeepSeek-V4's attention in every layer")
    for field, value, want in (("head_dim", cfg.head_dim, 512), ("qk_rope_head_dim", cfg.rope_dim, 64),
                               ("index_head_dim", cfg.index_head_dim if csa else 128, 128),
                               ("compress_ratios", cfg.compress_csa if csa else 4, 4),
                               ("compress_ratios", cfg.compress_hca if hca else 128, 128)):
        if value != want:  # FlashMLA's fp8_ds_mla entry, the fused compressor kernels, CompressorStateCache
            raise SymllmError(f"{field}: {value}; vLLM's DeepSeek-V4 kernels take {want} only (serve)")
    if not csa and (release == "0.20" or not hca):  # 0.20 asserts its window pages fit a full group's page (none
        # without a CSA layer's); with no compressed layer at all 0.33's specs take its uniform path (not modelled)
        raise SymllmError("serve: vLLM's DeepSeek-V4 cache layout is modelled with a compressed sparse attention "
                          "layer, or a heavily compressed one under vLLM 0.33")
    return csa, hca, every


def deepseek_v4_blocks(config, kv_cache_bytes, context: int, max_num_batched_tokens: int,
                       release: str = "0.33", layout: str = "fp8_ds_mla", indexer: str = "fp8") -> dict:
    """vLLM's blocks for DeepSeek-V4 as released vLLM lays them out (``release``: "0.33", vLLM 0.33.0's, the
    default, or "0.20", vLLM 0.20.0's; docs/serving.md, "DeepSeek-V4"): the full group (each CSA layer's compressed
    entries and indexer keys, each HCA layer's entries, 256 tokens a block) and the window groups (every layer's
    window keys, the CSA compressors' and the HCA compressors' states).

    0.20.0 (``kv_cache_utils``: ``_get_kv_cache_groups_uniform_groups``, ``_get_kv_cache_config_deepseek_v4``)
    splits the window groups into groups of at most ``layer_tuples`` layers, pads every window page to the nearest
    full-group page, and makes a block ``layer_tuples`` tuples of the full group's distinct pages
    (``layer_tuple_bytes``); vLLM logs ``kv_tokens`` = blocks // groups · the smallest block, and
    ``logged_concurrency`` (``get_max_concurrency_for_kv_cache_config``) = blocks over ⌈Σ each group's pages · its
    layers' padded page bytes / the full group's page bytes⌉. A window's request holds its window and one
    ``max_num_batched_tokens`` step.

    0.33.0 (``kv_cache_planning``: ``_get_packed_kv_cache_groups``, ``get_kv_cache_config_from_groups``) splits a
    bucket only where each of its page sizes holds as many layers, in groups of ``repeats`` pattern repeats, pads no
    page, and makes a block the largest group's bytes (``block_bytes``); vLLM logs ``logged_concurrency`` = blocks /
    ``blocks_per_request`` and ``kv_tokens`` = ⌊that · ``context``⌋ (``update_kv_cache_capacity``). A window's
    request holds its window and two steps in flight (async scheduling, on by default: ``max_in_flight_tokens``).
    Without a CSA layer no balanced bucket mixes page sizes: no repeats (``repeats`` None), and each window bucket
    is a state bucket, split into groups of as many layers as fit the anchor (the widest whole bucket, or one state
    page); 0.20.0 refuses such a model (its window pages exceed the full group's) and so does a model with no
    compressed layer (0.33.0's uniform path, not modelled).

    ``layout`` (:data:`DSV4_LAYOUTS`): FlashMLA's ``fp8_ds_mla`` (both releases), or FlashInfer's ``bf16`` rows
    (0.33.0 only: 1,024-byte entries, every page aligned to 512 bytes; the indexer's keys stay 132-byte FP8 entries
    and the compressors' states fp32, only their alignment changes). ``indexer`` (:data:`INDEXER_KEY_BYTES`): the
    indexer's keys in FP8 (132 bytes) or, 0.33.0's ``indexer_kv_dtype`` mxfp4, 68.

    Either way ``blocks`` = KV bytes // ``block_bytes``, one request of ``context`` tokens takes
    ``blocks_per_request`` (each group's ``max_memory_usage`` in pages, ``_max_memory_usage_bytes_from_groups``),
    ``requests`` whole ones fit, ``max_concurrency`` is their ratio.

    >>> cfg = {"model_type": "deepseek_v4", "vocab_size": 100, "hidden_size": 32, "moe_intermediate_size": 16,
    ...        "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 512, "q_lora_rank": 8,
    ...        "qk_rope_head_dim": 64, "num_experts_per_tok": 2, "n_routed_experts": 4, "hc_mult": 2,
    ...        "sliding_window": 128, "o_groups": 2, "o_lora_rank": 6, "index_n_heads": 2, "index_head_dim": 128,
    ...        "index_topk": 2, "compress_ratios": [4, 128, 4]}
    >>> r = deepseek_v4_blocks(cfg, 10 ** 9, 4096, 2048, release="0.20")
    >>> r["layer_tuple_bytes"], r["layer_tuples"], r["groups"], r["blocks"]
    (47808, 2, 5, 10458)
    >>> r = deepseek_v4_blocks(cfg, 10 ** 9, 4096, 2048)
    >>> r["block_bytes"], r["groups"], r["blocks"]
    (93888, 5, 10650)
    >>> deepseek_v4_blocks(cfg, 10 ** 9, 4096, 2048, layout="bf16")["block_bytes"]
    150528
    >>> deepseek_v4_blocks(cfg, 10 ** 9, 4096, 2048, indexer="mxfp4")["block_bytes"]
    85824
    """
    csa, hca, every = check(config, release, layout, indexer)
    cfg = resolve(config)
    window = cfg.sliding_window
    entry, align = DSV4_LAYOUTS[layout]
    pad = lambda size: _pad(size, align)  # noqa: E731
    entry_csa, entry_hca = pad(DSV4_BLOCK // 4 * entry), pad(DSV4_BLOCK // 128 * entry)
    index = pad(DSV4_BLOCK // 4 * INDEXER_KEY_BYTES[indexer])  # DeepseekV4IndexerCache, uint8
    full = {**({entry_csa: csa, index: csa} if csa else {}), **({entry_hca: hca} if hca else {})}  # page -> layers
    # the window groups, keyed as vLLM keys them (block size, window): their layers' pages before padding and the
    # blocks one request takes (SlidingWindowSpec.max_memory_usage_bytes) (fp32 states: 2 · coff · head_dim a
    # token, coff 2 with CSA's overlap)
    state = lambda ratio, coff, width: pad(DSV4_STATE_BLOCK[ratio] * 2 * coff * width * 4)  # noqa: E731
    windows = [(DSV4_SWA_BLOCK, window, {pad(DSV4_SWA_BLOCK * entry): every})]
    if csa:
        windows.append((DSV4_STATE_BLOCK[4], 2 * 4, {state(4, 2, 512): csa, state(4, 2, 128): csa}))
    if hca:
        windows.append((DSV4_STATE_BLOCK[128], 128, {state(128, 1, 512): hca}))
    in_flight = max_num_batched_tokens * (2 if release == "0.33" else 1)  # 0.33: VllmConfig.max_in_flight_tokens
    held = lambda block, win: -(-min(win - 1 + in_flight, context) // block) + 1  # noqa: E731
    full_pages = -(-context // DSV4_BLOCK)
    if release == "0.20":
        return _dsv4_blocks_020(full, windows, full_pages, held, kv_cache_bytes)
    # 0.33.0: buckets of uniform specs (the full group, then each window group); a bucket is split only when each
    # of its page sizes holds as many layers ("balanced"), into groups of `repeats` pattern repeats
    buckets = [full] + [pages for _, _, pages in windows]
    balanced = [len(set(b.values())) == 1 for b in buckets]
    floor = max((max(b.values()) for b, ok in zip(buckets, balanced) if ok and len(b) > 1), default=0)
    # no balanced bucket mixing page sizes (no CSA layer: its states'): no repeats, and each window bucket is a
    # state bucket, split only into as many groups as keep each within the widest whole bucket (anchor_bytes)
    repeats = _approximate_gcd([max(b.values()) for b, ok in zip(buckets, balanced) if ok],
                               lower_bound=floor) if floor else None
    anchor = None if repeats else max(sum(page * n for page, n in full.items()), *(max(p) for _, _, p in windows))
    group_bytes, per_request = [], 0
    requested = [full_pages] + [held(block, win) for block, win, _ in windows]
    for index_, (b, ok, pages) in enumerate(zip(buckets, balanced, requested)):  # the full bucket first, then windows
        if repeats:
            split = -(-max(b.values()) // repeats) if ok else 1
        else:  # a state bucket's layers (one page size each), at most as many a group as one anchor holds
            split = -(-max(b.values()) // max(anchor // max(b), 1)) if index_ else 1
        for i in range(split):  # layers [i::split] of the pattern's repeats: one of each page a repeat
            group_bytes.append(sum(page * len(range(i, n, split)) for page, n in b.items()))
            per_request += pages
    block_bytes = max(group_bytes)
    blocks = max(int(Fraction(kv_cache_bytes) // block_bytes), 0)
    concurrency = Fraction(blocks, per_request)
    return {"layout": layout, "indexer": indexer, "block_bytes": block_bytes, "repeats": repeats,
            "groups": len(group_bytes),
            "blocks": blocks,
            "blocks_per_request": per_request, "kv_tokens": int(concurrency * context),
            "requests": blocks // per_request, "max_concurrency": concurrency, "logged_concurrency": concurrency}


def _dsv4_blocks_020(full, windows, full_pages, held, kv_cache_bytes) -> dict:
    """:func:`deepseek_v4_blocks` as vLLM 0.20.0 lays DeepSeek-V4 out (``_get_kv_cache_groups_uniform_groups``,
    ``_get_kv_cache_config_deepseek_v4``, ``_report_kv_cache_config``, ``get_max_concurrency_for_kv_cache_config``)."""
    tuples = _approximate_gcd([max(full.values())] + [max(p.values()) for _, _, p in windows],
                              lower_bound=max(full.values()))
    groups, sizes, per_request = 1, [max(full.values())], full_pages
    full_bytes = sum(page * n for page, n in full.items())  # the full group's pages, every layer's
    weighted = per_request * full_bytes  # each group's max_memory_usage_bytes, summed (the logged concurrency)
    for block, win, pages in windows:
        if max(pages) > max(full):
            raise SymllmError("serve: vLLM's DeepSeek-V4 window pages exceed its full group's (not served)")
        layers = max(pages.values())  # every page of the group holds as many layers (vLLM asserts it)
        split = -(-layers // tuples)
        groups += split
        pages_held = held(block, win)
        padded = sum(min(f for f in full if f >= page) for page in pages)  # a layer of each page, padded
        for i in range(split):
            sizes.append(len(range(i, layers, split)))
            weighted += pages_held * sizes[-1] * padded
        per_request += split * pages_held
    layer_tuple_bytes = sum(full)
    layer_tuples = max(sizes)
    block_bytes = layer_tuple_bytes * layer_tuples
    blocks = max(int(Fraction(kv_cache_bytes) // block_bytes), 0)
    smallest = min(DSV4_BLOCK, *(block for block, _, _ in windows))
    return {"layout": "fp8_ds_mla", "layer_tuple_bytes": layer_tuple_bytes, "layer_tuples": layer_tuples,
            "block_bytes": block_bytes,
            "groups": groups, "blocks": blocks, "blocks_per_request": per_request,
            "kv_tokens": blocks // groups * smallest, "requests": blocks // per_request,
            "max_concurrency": Fraction(blocks, per_request),
            "logged_concurrency": Fraction(blocks, -(-weighted // full_bytes))}
