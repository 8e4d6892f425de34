"""Causal attention on its kernel's tiles: the query-key pairs a causal FlashAttention-2 kernel computes.

A causal flash-attention kernel skips the blocks of the score rectangle that the mask hides whole and runs the
blocks the diagonal crosses whole: about half the ``s × s`` rectangle plus the diagonal's tiles. The FLOP counts
keep their convention (``--attention dense``: the whole rectangle; ``causal``: the ``s(s+1)/2`` unmasked pairs);
the expected time (:mod:`symllm.costs.efficiency`) runs these tiles' pairs. Block sizes and their source:
``attention_tiles`` in efficiency.json (FlashAttention-2's ``flash_fwd_launch_template.h``).
"""
from __future__ import annotations

from fractions import Fraction

__all__ = ["causal_tiles", "on_tiles"]


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
