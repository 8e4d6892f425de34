"""Causal attention on its kernel's tiles: the query-key pairs a causal FlashAttention-2 kernel computes.

A causal flash-attention kernel skips the blocks of the score rectangle that the mask hides whole and runs the
blocks the diagonal crosses whole: about half the ``s × s`` rectangle plus the diagonal's tiles. The FLOP counts
keep their convention (``--attention dense``: the whole rectangle; ``causal``: the ``s(s+1)/2`` unmasked pairs);
the expected time (:mod:`symllm.costs.efficiency`) runs these tiles' pairs. Block sizes and their source:
``attention_tiles`` in efficiency.json (FlashAttention-2's ``flash_fwd_launch_template.h``).

Sliding-window and chunked layers (a query sees at most ``W`` keys, itself included: ``ModelConfig.window``) run
fewer tiles: FlashAttention-2's local attention (``flash_fwd_kernel.h``, ``compute_attn_1rowblock``) runs, for
query block ``m``, the key blocks from ``n_block_min = max(0, (m·block_m + t - window_size_left) / block_n)`` to
the causal ``n_block_max``, with ``window_size_left = W - 1`` (:func:`window_tiles`); a chunked layer's query block
starts at the chunk of its first query (:func:`chunk_tiles`).
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch.layers import window_pairs
from symllm.costs.figures import data, interpolate

__all__ = ["hopper", "attention_kernel", "attention_prefill", "tile", "causal_tiles", "chunk_tiles", "core_on_tiles",
           "on_tiles", "window_tiles"]


def causal_tiles(s: int, t: int = 0, tile: tuple[int, int] = (128, 64)) -> int:
    """Query-key pairs a causal FlashAttention-2 forward computes for ``s`` queries after ``t`` cached keys, one
    head of one sequence: its tiles of ``block_m × block_n`` pairs (``tile``), each whole; query block ``m``
    runs the key blocks below ``⌈((m+1)·block_m + t)/block_n⌉`` (those right of the diagonal are masked whole
    and skipped).

    >>> causal_tiles(256)            # 128 x 64 tiles: query block 0 runs key blocks 0-1, block 1 runs 0-3
    49152
    >>> causal_tiles(8192), 8192 * 8193 // 2, 8192 ** 2 // 2 + 64 * 8192   # s^2/2 + 64 s at 128 x 64
    (34078720, 33558528, 34078720)
    >>> causal_tiles(200, tile=(128, 128))  # 1 + 2 tiles (the last ones padded)
    49152
    """
    bm, bn = tile
    keys, rows = -(-(t + s) // bn), -(-s // bm)  # key blocks in all, query blocks
    # block m runs ⌈((m+1)·bm + t)/bn⌉ key blocks, rising with m, while that is at most all of them: the first
    # j blocks run their own count (a sum of ceilings: a floor sum), the rest all keys. Exact at any size, any tile
    j = min(rows, max(0, (keys * bn - t) // bm))
    return (_floor_sum(j, bn, bm, bm + t + bn - 1) + (rows - j) * keys) * bm * bn


def _banded(s: int, t: int, tile: tuple[int, int], first) -> int:
    """Pairs of the tiles query block ``m`` runs from key block ``first(m·block_m + t) // block_n`` (the lowest key
    its first query sees) to the causal diagonal's, block by block (exact integers)."""
    bm, bn = tile
    keys = -(-(t + s) // bn)
    return sum(min(keys, -(-((m + 1) * bm + t) // bn)) - first(m * bm + t) // bn
               for m in range(-(-s // bm))) * bm * bn


def window_tiles(s: int, w: int, t: int = 0, tile: tuple[int, int] = (128, 64)) -> int:
    """Query-key pairs a sliding-window FlashAttention-2 forward computes (:func:`causal_tiles`' tiles) when each
    query sees the last ``w`` keys, itself included (``window_size_left = w - 1``): query block ``m`` runs key
    blocks ``max(0, ⌊(m·block_m + t - w + 1)/block_n⌋)`` up to the diagonal's (FlashAttention-2's
    ``n_block_min``/``n_block_max`` in ``flash_fwd_kernel.h``).

    >>> window_tiles(512, 128)   # query blocks (128 rows) run key blocks (64 wide) 0-1, 0-3, 2-5, 4-7
    114688
    >>> (2 + 4 + 4 + 4) * 128 * 64, window_tiles(512, 10 ** 6) == causal_tiles(512)
    (114688, True)
    """
    return _banded(s, t, tile, lambda first: max(0, first - w + 1))


def chunk_tiles(s: int, c: int, t: int = 0, tile: tuple[int, int] = (128, 64)) -> int:
    """Query-key pairs a chunked-attention forward computes on FlashAttention-2's tiles when each query sees the
    keys of its own chunk of ``c`` positions up to itself (Llama 4's ``attention_chunk_size``): the score matrix
    is block-diagonal, and query block ``m`` runs the key blocks from its first query's chunk start to the
    diagonal's.

    >>> chunk_tiles(512, 256)    # two causal 256-blocks: query blocks run key blocks 0-1, 0-3, 4-5, 4-7
    98304
    >>> (2 + 4 + 2 + 4) * 128 * 64, 2 * causal_tiles(256)
    (98304, 98304)
    """
    return _banded(s, t, tile, lambda first: first // c * c)


def core_on_tiles(parts: dict, s: int, tile: tuple[int, int] = (128, 64)) -> Fraction:
    """The pairs of a prefill's attention core on its kernel's tiles over the pairs the workload's convention
    counts (``parts["core_pairs"]``: ``s²`` dense, ``s(s+1)/2`` causal, ``t = 0``): full layers on
    :func:`causal_tiles`, the cores of sliding and chunked layers (``prefill_{sliding,chunked}_core_flops``, window
    ``parts["window"]``) on :func:`window_tiles` and :func:`chunk_tiles` over their own convention's pairs
    (dense: transformers' ``s²``; causal: the window's unmasked pairs).

    >>> full = {"prefill_core_flops": 10, "core_pairs": 512 ** 2, "window": None}
    >>> core_on_tiles(full, 512) == Fraction(causal_tiles(512), 512 ** 2)
    True
    >>> half = {"prefill_core_flops": 2, "prefill_sliding_core_flops": 1, "window": 128, "core_pairs": 512 ** 2}
    >>> core_on_tiles(half, 512) == Fraction(20 + 14, 2) * 128 * 64 / 512 ** 2   # 20 causal tiles, 14 windowed
    True
    """
    core, pairs, w = Fraction(parts["prefill_core_flops"]), parts["core_pairs"], parts["window"]
    full = Fraction(causal_tiles(s, 0, tile), pairs)
    work = core * full
    for kind, count in (("sliding", window_tiles), ("chunked", chunk_tiles)):
        # a stage without layers of this kind has no such core (hardware.stage_times states none)
        windowed = Fraction(parts.get(f"prefill_{kind}_core_flops", 0))
        if windowed and w:
            kept = s * s if pairs == s * s else window_pairs(kind, s, w)
            work += windowed * (count(s, w, 0, tile) / Fraction(kept) - full)
    return work / core


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """``Σ_{i<n} ⌊(a·i + b)/m⌋`` for ``n, a, b ≥ 0``, ``m ≥ 1``, in O(log) steps (the Euclid-like reduction).

    >>> _floor_sum(5, 3, 2, 1), sum((2 * i + 1) // 3 for i in range(5))
    (7, 7)
    """
    total = 0
    while n:
        total += (a // m) * n * (n - 1) // 2 + (b // m) * n
        a, b = a % m, b % m
        top = a * n + b
        if top < m:
            break
        n, b, m, a = top // m, top % m, a, m
    return total


def on_tiles(table, tile: tuple[int, int] = (128, 64)) -> list[tuple[int, Fraction]]:
    """A table of ``(s, fraction of the peak on the s(s+1)/2 unmasked pairs)`` read on the pairs of the tiles:
    each fraction times its tiles' pairs over ``s(s+1)/2``, so that each measured ``s`` keeps its measured time.

    >>> on_tiles([(8192, Fraction(588, 1000))]) == [(8192, Fraction(588, 1000) * 34078720 / 33558528)]
    True
    """
    return [(int(s), Fraction(str(eta)) * causal_tiles(int(s), 0, tile) / (int(s) * (int(s) + 1) // 2))
            for s, eta in table]


def hopper(named: str | None) -> bool:
    """Whether the catalogue card ``named`` is a Hopper (sm90) one, whose FlashAttention-3 figures apply
    (``attention_tiles.fa3_sm90.cards``).

    >>> hopper("h100-sxm"), hopper("a100-80gb"), hopper(None)
    (True, False, False)
    """
    return named in data()["attention_tiles"]["fa3_sm90"]["cards"]


def attention_kernel(serve: dict, named: str | None) -> str:
    """The prefill attention kernel an engine runs on a card: ``fa3`` where its ``attention_kernel`` is FA3 and
    the card is a Hopper one (``attention_tiles.fa3_sm90.cards``), else ``fa2``.

    >>> from symllm.costs.figures import engine
    >>> attention_kernel(engine("vllm"), "h100-sxm"), attention_kernel(engine("vllm"), "a100-80gb")
    ('fa3', 'fa2')
    >>> attention_kernel(engine("trtllm"), "h100-sxm"), attention_kernel(engine("sglang"), "h200")
    ('fa2', 'fa3')
    """
    return "fa3" if serve.get("attention_kernel") == "fa3" and hopper(named) else "fa2"


def attention_prefill(s, head_dim: int = 128, tiles: bool = False) -> Fraction:
    """``η_attn``: the fraction of the bf16 dense peak the causal attention core of a prefill of ``s``
    tokens reaches (the measured head width nearest ``head_dim``), on its unmasked pairs; ``tiles``: on the
    pairs of the kernel's tiles (:func:`on_tiles`, ``attention_tiles``' blocks).

    >>> (float(attention_prefill(8192)), float(attention_prefill(8192, 64)),
    ...  round(float(attention_prefill(8192, tiles=True)), 4))
    (0.588, 0.392, 0.5971)
    """
    t = data()["attention_prefill"]
    width = 64 if head_dim <= 96 else 128
    table = t[f"d{width}"]
    return interpolate(on_tiles(table, tile(width)) if tiles else table, max(1, s))


def tile(head_dim: int, kernel: str = "fa2", dtype: str = "bf16") -> tuple[int, int]:
    """A causal forward's tile (block_m, block_n) at ``head_dim``: FlashAttention-2's (``attention_tiles``), or
    FlashAttention-3's on Hopper (``kernel="fa3"``: ``attention_tiles.fa3_sm90``, by head width bucket and
    ``dtype``, bf16 or fp8).

    >>> tile(128), tile(64)
    ((128, 64), (128, 128))
    >>> tile(64, "fa3"), tile(128, "fa3"), tile(128, "fa3", "fp8"), tile(256, "fa3")
    ((192, 128), (128, 128), (128, 224), (128, 80))
    """
    t = data()["attention_tiles"]
    if kernel == "fa3":
        table = t["fa3_sm90"]["fp8" if dtype == "fp8" else "bf16"]
        return tuple(table[next(str(w) for w in (64, 96, 128, 192, 256) if head_dim <= w or w == 256)])
    return tuple(t["d64" if head_dim <= 64 else "d128"])
