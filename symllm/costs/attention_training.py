"""A training step's attention core at its kernel's rates: forward, backward and recomputed forwards.

The expected time (:mod:`symllm.costs.efficiency`) runs a training step's GEMMs at the GEMM table's rate times
the engine's ``train_factor``; the attention core is not a GEMM, and a FlashAttention kernel's backward runs below
its forward. Its time here: the forward's FLOPs at the kernel's forward rate, the backward's ``backward_flops``
(2.5) times the forward's (the kernel recomputes the scores; the papers' TFLOP/s count it so) at its backward
rate, and each forward recomputed under checkpointing at the forward rate (``attention_prefill.training`` in
efficiency.json: figures by card group, kernel, direction, mask, head width and length). The rates, by kernel
(:func:`training_kernel`), every core causal (a sliding window's band too: no windowed figure is published):

* ``fa2``, ``cudnn``, ``fa3`` (an engine's kernel on a Hopper card): the FlashAttention-3 paper's H100 causal
  forward at the head width nearest the model's (64, 128, 256) over the H100 SXM's dense bf16 peak, read as a
  fraction of any Hopper card's own; the backward FlashAttention-2's causal one (the FlashAttention-2 paper's H100
  forward + backward bar less the forward's time), cuDNN's and FlashAttention-3's the forward times their
  backward over forward without the mask (no causal backward is published), at the nearest head width (64, 128);
* ``fa2_a100`` (FlashAttention-2 on an A100 card): the FlashAttention-2 paper's A100 causal forward + backward
  figure (head width 64 or 128) for the forward, the backward and any recomputed forward alike (no forward-only
  A100 figure is recorded; the bar counts a forward and its backward as 3.5 forwards' FLOPs, so its time is kept);
* ``torch`` (any other card or engine): torch's flash forward as measured (``attention_prefill``, on its tiles),
  its backward at that times FlashAttention-2's H100 backward over forward at head width 128 without the mask
  (the ratio ``attention_tiles.train_basis`` was read on).
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data, fraction, interpolate
from symllm.costs.tiles import attention_prefill, causal_tiles, hopper, tile

__all__ = ["training_kernel", "figure", "backward_ratio", "core_rates", "core_training_s"]


def training_kernel(train: dict, named: str | None) -> str:
    """The attention kernel whose figures a training engine's core reads on a card: its ``attention_kernel``
    (``fa2``, ``cudnn``, ``fa3``: the FlashAttention-3 paper's H100 figures) on a Hopper card
    (``attention_tiles.fa3_sm90.cards``); ``fa2_a100`` for ``fa2`` on an A100 card (the FlashAttention-2 paper's
    figure, ``attention_prefill.training.a100.cards``); else ``torch`` (the measured torch flash forward).

    >>> from symllm.costs.figures import engine
    >>> megatron = engine("megatron", "training")
    >>> training_kernel(megatron, "h100-sxm"), training_kernel(megatron, "a100-80gb")
    ('cudnn', 'torch')
    >>> titan = engine("torchtitan", "training")
    >>> training_kernel(titan, "h100-sxm"), training_kernel(titan, "a100-40gb"), training_kernel(engine("hf"), "h200")
    ('fa2', 'fa2_a100', 'torch')
    """
    kernel = train.get("attention_kernel", "torch")
    if hopper(named):
        return kernel
    if kernel == "fa2" and named in data()["attention_prefill"]["training"]["a100"]["cards"]:
        return "fa2_a100"
    return "torch"


def _group(kernel: str) -> tuple[dict, str]:
    """The card group's figures a kernel reads (``a100`` for ``fa2_a100``, else ``h100``) and its name there."""
    t = data()["attention_prefill"]["training"]
    return (t["a100"], "fa2") if kernel == "fa2_a100" else (t["h100"], kernel)


def figure(kernel: str, direction: str, mask: str, head_dim: int) -> tuple[int, list] | None:
    """A kernel's recorded figure (``direction`` fwd, bwd or fwd_bwd; ``mask`` causal or full) at the head width
    nearest ``head_dim`` that has one (a tie takes the wider): that width and its ``[s, TFLOP/s]`` points, or None
    where the kernel has no such figure.

    >>> figure("fa3", "fwd", "causal", 80)[0], figure("fa2", "fwd", "causal", 96)[0]
    (64, 128)
    >>> figure("cudnn", "bwd", "full", 256)[0]
    128
    >>> figure("fa2_a100", "fwd_bwd", "causal", 128)[1][4], figure("fa3", "fwd_bwd", "causal", 128)
    ([8192, '182'], None)
    """
    table, name = _group(kernel)
    widths = table.get(name, {}).get(direction, {}).get(mask)
    if not widths:
        return None
    width = min(widths, key=lambda w: (abs(int(w) - head_dim), -int(w)))
    return int(width), widths[width]


def backward_ratio(s, kernel: str = "fa2", head_dim: int = 128, causal: bool = True) -> Fraction:
    """The kernel's backward TFLOP/s over its forward's at sequence length ``s`` (each figure read linearly in
    log2(s) between its lengths, flat beyond them), at the head width nearest ``head_dim`` that has a backward:
    causal, the remainder of its causal forward + backward bar (``backward_flops`` over its time less the
    forward's) where it has one (FlashAttention-2; 1 where the bar has no forward beside it: one rate for both);
    else, and with ``causal`` False, its backward over its forward without the mask.

    >>> backward_ratio(4096), backward_ratio(8192)   # H100: 2.5/(3.5/294 - 1/319) over 319; 8k 308 and 333
    (Fraction(42, 47), Fraction(44, 49))
    >>> backward_ratio(4096, causal=False), backward_ratio(8192, "cudnn", 64)   # 310/368; 432/412 (no mask)
    (Fraction(155, 184), Fraction(108, 103))
    >>> backward_ratio(4096, "fa2_a100"), backward_ratio(100, causal=False) == Fraction(214, 309)
    (Fraction(1, 1), True)
    """
    pair = figure(kernel, "fwd_bwd", "causal", head_dim) if causal else None
    if pair:
        forward = figure(kernel, "fwd", "causal", pair[0])
        if forward is None:
            return Fraction(1)
        n, fwd = fraction(data()["attention_prefill"]["training"]["backward_flops"]), interpolate(forward[1], s)
        return n / ((n + 1) / interpolate(pair[1], s) - 1 / fwd) / fwd
    width, bwd = figure(kernel, "bwd", "full", head_dim)
    return interpolate(bwd, s) / interpolate(figure(kernel, "fwd", "full", width)[1], s)


def core_rates(s, head_dim: int = 128, kernel: str = "torch") -> tuple[Fraction, Fraction]:
    """The forward's and the backward's fractions of the bf16 peak for a causal core of ``s`` tokens, read on
    FlashAttention-2's tiles (the FLOPs the expected time counts: :func:`symllm.costs.tiles.causal_tiles`).
    A paper kernel's causal figure counts ``s²/2`` pairs; on the tiles' pairs the same time is a higher rate.
    The forward is the kernel's causal forward at the nearest head width (its forward + backward bar where it
    has no forward), the backward that times :func:`backward_ratio`.

    >>> fwd, bwd = core_rates(8192, kernel="fa2")   # 333 TFLOP/s of 989.4 on s²/2 pairs, read on s²/2 + 64 s
    >>> pairs = Fraction(8192 ** 2 // 2 + 64 * 8192, 8192 ** 2 // 2)
    >>> fwd == Fraction(3330, 9894) * pairs, bwd == fwd * Fraction(44, 49)
    (True, True)
    >>> core_rates(8192, 256, "fa2")[0] == Fraction(2970, 9894) * Fraction(8192 ** 2 // 2 + 64 * 8192, 8192 ** 2 // 2)
    True
    >>> core_rates(4096)[0] == attention_prefill(4096, tiles=True)   # torch's measured forward
    True
    >>> a100 = Fraction(173, 312) * Fraction(4096 ** 2 // 2 + 64 * 4096, 4096 ** 2 // 2)  # 173 TFLOP/s of 312
    >>> core_rates(4096, kernel="fa2_a100") == (a100, a100)   # forward and backward alike
    True
    """
    if kernel == "torch":
        fwd = attention_prefill(s, head_dim, tiles=True)
        return fwd, fwd * backward_ratio(s, "fa2", 128, causal=False)
    from symllm.costs.accelerators import gpu
    table, _ = _group(kernel)
    pairs = Fraction(causal_tiles(s, tile=tile(head_dim)), Fraction(s * s, 2))
    forward = figure(kernel, "fwd", "causal", head_dim) or figure(kernel, "fwd_bwd", "causal", head_dim)
    fwd = interpolate(forward[1], s) * 10 ** 12 / gpu(table["card"]).bf16 * pairs
    return fwd, fwd * backward_ratio(s, kernel, head_dim)


def core_training_s(forward, s, head_dim: int = 128, kernel: str = "torch", recomputed=0, peak=1) -> Fraction:
    """Seconds of a training step's attention core: ``forward`` FLOPs (one forward, counted on the kernel's
    tiles) at :func:`core_rates`' forward rate, ``backward_flops`` times them at its backward rate, and
    ``recomputed`` FLOPs (forwards run again) at the forward rate, all of ``peak`` FLOP/s.

    >>> f, b = core_rates(4096)   # hand: 0.475 on 4096·4097/2 pairs, read on 4096²/2 + 64·4096; x 310/368
    >>> round(float(f), 4), round(float(b), 4)
    (0.4897, 0.4125)
    >>> round(float(core_training_s(10 ** 12, 4096, peak=10 ** 15)), 6)   # (1/0.4897 + 2.5/0.4125) ms
    0.008102
    """
    t = data()["attention_prefill"]["training"]
    fwd, bwd = core_rates(s, head_dim, kernel)
    forward, recomputed = Fraction(forward), Fraction(recomputed)
    return ((forward + recomputed) / fwd + fraction(t["backward_flops"]) * forward / bwd) / peak
