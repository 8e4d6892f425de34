"""A training step's attention core at its kernel's rates: forward, backward and recomputed forwards.

The expected time (:mod:`symllm.costs.efficiency`) runs a training step's GEMMs at the GEMM table's rate times
the engine's ``train_factor``; the attention core is not a GEMM, and a FlashAttention kernel's backward runs below
its forward. Its time here: the forward's FLOPs at the kernel's forward rate, the backward's ``backward_flops``
(2.5) times the forward's (the kernel recomputes the scores; the papers' TFLOP/s count it so) at its backward
rate, and each forward recomputed under checkpointing at the forward rate (``attention_prefill.training`` in
efficiency.json). The rates, by kernel (:func:`training_kernel`):

* ``fa2``, ``cudnn``, ``fa3`` (an engine's kernel on a Hopper card): the FlashAttention-3 paper's H100 figures
  for FlashAttention-2, cuDNN and FlashAttention-3, causal forward over the H100 SXM's dense bf16 peak, the
  backward that times the kernel's backward over forward TFLOP/s (published without the causal mask), both read
  as fractions of any Hopper card's own peak;
* ``fa2_a100`` (FlashAttention-2 on an A100 card): the FlashAttention-2 paper's A100 forward + backward figure,
  causal, over the A100's dense bf16 peak, for the forward, the backward and any recomputed forward alike (the bar
  counts a forward and its backward as 3.5 forwards' FLOPs, so its time is kept);
* ``torch`` (any other card or engine): torch's flash forward as measured (``attention_prefill``, on its tiles),
  its backward at that times FlashAttention-2's backward over forward ratio.
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data, fraction, interpolate
from symllm.costs.tiles import attention_prefill, causal_tiles, hopper, tile

__all__ = ["training_kernel", "backward_ratio", "core_rates", "core_training_s"]


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


def backward_ratio(s, kernel: str = "fa2") -> Fraction:
    """The kernel's backward TFLOP/s over its forward's at sequence length ``s``, both without the causal mask as
    published (each read linearly in log2(s) between the figures' lengths, flat beyond them).

    >>> backward_ratio(4096), backward_ratio(8192, "cudnn")    # 310/368 and 518/600 (FA3 paper, H100)
    (Fraction(155, 184), Fraction(259, 300))
    >>> backward_ratio(100) == Fraction(214, 309)
    True
    """
    t = data()["attention_prefill"]["training"]
    return interpolate(t["bwd"][kernel], s) / interpolate(t["fwd"][kernel], s)


def core_rates(s, head_dim: int = 128, kernel: str = "torch") -> tuple[Fraction, Fraction]:
    """The forward's and the backward's fractions of the bf16 peak for a causal core of ``s`` tokens, read on
    FlashAttention-2's tiles (the FLOPs the expected time counts: :func:`symllm.costs.tiles.causal_tiles`).
    A paper kernel's causal figure counts ``s²/2`` pairs; on the tiles' pairs the same time is a higher rate.

    >>> fwd, bwd = core_rates(8192, kernel="fa2")   # 333 TFLOP/s of 989.4 on s²/2 pairs, read on s²/2 + 64 s
    >>> pairs = Fraction(8192 ** 2 // 2 + 64 * 8192, 8192 ** 2 // 2)
    >>> fwd == Fraction(3330, 9894) * pairs, bwd == fwd * Fraction(318, 370)
    (True, True)
    >>> core_rates(4096)[0] == attention_prefill(4096, tiles=True)   # torch's measured forward
    True
    >>> a100 = Fraction(173, 312) * Fraction(4096 ** 2 // 2 + 64 * 4096, 4096 ** 2 // 2)  # 173 TFLOP/s of 312
    >>> core_rates(4096, kernel="fa2_a100") == (a100, a100)   # forward and backward alike
    True
    """
    if kernel == "torch":
        fwd = attention_prefill(s, head_dim, tiles=True)
        return fwd, fwd * backward_ratio(s, "fa2")
    from symllm.costs.accelerators import gpu
    t = data()["attention_prefill"]["training"]
    pairs = Fraction(causal_tiles(s, tile=tile(head_dim)), Fraction(s * s, 2))
    if kernel == "fa2_a100":
        rate = interpolate(t["a100"]["fwd_bwd_causal"], s) * 10 ** 12 / gpu(t["a100"]["card"]).bf16 * pairs
        return rate, rate
    fwd = interpolate(t["fwd_causal"][kernel], s) * 10 ** 12 / gpu(t["card"]).bf16 * pairs
    return fwd, fwd * backward_ratio(s, kernel)


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
