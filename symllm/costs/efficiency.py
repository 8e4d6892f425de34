"""Expected times: the roofline bound's closed forms, evaluated, then slowed by what GPUs and engines achieve.

The roofline (:func:`symllm.costs.hardware.roofline`) is a bound: every FLOP at the dense peak, every byte
at the datasheet bandwidth, nothing else. An expected time keeps its closed forms (FLOPs, bytes, bytes
sent: symbolic, exact) and puts a numeric layer on top, read from ``efficiency.json`` beside this module,
each figure with its source:

* **GEMMs** reach a fraction ``η_gemm(M)`` of the dtype's dense peak that grows with the token rows ``M``
  (bf16 and fp8 tables, measured on an H200), scaled on another card by its published Maximum Achievable
  Matmul FLOPS efficiency over the H200's (``gemm_cards``; 1 where it has none:
  :func:`symllm.costs.gemm_cards.card_scale`); below the
  table's first ``M`` a product is bound by its weights' bytes, which an engine's fp16 GEMMs of a few padded rows
  stream no faster than its library was measured to on the card (``gemm.small_m``:
  :func:`symllm.costs.gemm_cards.small_m_rate`).
* **The attention core** of a prefill runs the pairs of a causal FlashAttention-2 kernel's tiles
  (:func:`symllm.costs.tiles.causal_tiles`: the blocks the mask hides whole are skipped, the diagonal's run
  whole; whatever the workload's FLOP convention) at ``η_attn(s)`` of the bf16 peak, measured by head width on
  the unmasked pairs and read on the tiles (:func:`attention_prefill`'s ``tiles``); a training step's core runs its
  tiles too. Under the ``eager`` and ``hf-eager`` stacks the scores are materialised: the whole rectangle's FLOPs at
  GEMM efficiency, or its scores written, read and written by the softmax and read again (four passes) at ``η_mem``, the
  slower.
* **Memory streams** (weights, KV cache) reach ``η_mem`` of the bandwidth; a decode step runs each kernel at its
  own roofline: its GEMMs take the slower of their FLOPs and the weights' bytes, its attention reads the
  KV cache after them (``max(GEMMs, weights) + cache``, not ``max(GEMMs, weights + cache)``); weight-only ``--dtype
  int4`` and ``int8`` (torch's kernels) a further ``dequant`` fraction (they unpack what they read). A
  ``--weight-format`` streams its exact bytes at ``η_mem``: its engine's kernels (llama.cpp's, Marlin) are not measured
  apart, except the weight-only paths :mod:`symllm.costs.weight_formats` declares (Marlin's FP4 and FP8: the
  ``dequant`` of their bits).
* **Engine kernels** where sourced (``engines`` in efficiency.json): llama.cpp runs a prompt in micro-batches
  of ``ubatch`` tokens, its fp16 GEMMs at a GeForce card's fp16-accumulate peak (``fp16_accumulate``), and
  its 2024 batch-1 fp16 mat-vec streams at the rate its SMs issue the loads where the card's SMs and clock are
  known and that is slower (``f16_gemv_issue``: :func:`f16_gemv_factor`), else ``f16_gemv_hbm`` times slower on
  a card with HBM memory (:func:`memory_kind`: the memory its catalogue note names). On Apple's unified memory every
  stream runs at ``memory_kinds.stream`` and llama.cpp's Metal backend costs ``metal_layer_s`` a layer in place of its
  kernels' (no CUDA graph there).
* **Fixed costs**: every kernel costs ``kernel.graph_s`` when a step replays a CUDA graph; without one the
  host launches each op, each tensor-parallel all-reduce among them, and the step takes at least
  ``kernels × kernel.host_s + all-reduces × kernel.collective_host_s`` (torch.distributed's call from Python;
  the GPU's all-reduces run while the host launches what follows); each engine adds a fixed cost per step
  (sampling, scheduling), one that drives its ranks as Ray actors a round trip to them
  (:func:`symllm.costs.host_step.ray_step_s`), an eager one the host's work beyond its layers while the GPU
  waits (:func:`symllm.costs.host_step.step_host_s`). Each tensor-parallel all-reduce costs the link's latency at
  the ranks (:func:`symllm.costs.collectives.allreduce_latency_s`) plus the bytes each rank sends at the link's bus
  bandwidth (:func:`symllm.costs.collectives.collective`: nccl-tests tables by link), or the engine's own one-shot
  all-reduce's latency over NVLink.
* **Routed experts** (a mixture) see ``k/n_e`` of the tokens: their GEMMs run at the efficiency of that many
  rows; a decode step of ``b`` tokens reads the ``1 - (1 - k/n_e)^b`` of the experts they touch (uniform
  routing), not the ``k/n_e`` of the bound. In training an expert's GEMMs of reduction width ``K`` below the
  GEMM table's lose the time their output takes to write (:func:`grouped_gemm`); the rest of a mixture's
  training costs are :mod:`symllm.costs.moe_training`'s: each MoE layer's all-to-all dispatch and combine over
  the expert-parallel group's link (:func:`symllm.costs.collectives.alltoall_s`), its token permutation and
  unpermutation and its router's scores as memory-bound passes; a dropless layer under an engine that syncs
  (``moe_host_syncs``) waits a device-to-host round trip each forward (``moe.sync_s``), and its micro-batch
  takes at least the time the host needs to launch its layers' kernels one at a time and, a rank holding 16
  experts or more, a measured floor a layer (``moe.layer_floor``: BF16; under FP8 current scaling the host
  launches three quantization kernels more an expert's input and gradient, on top).
* **FP8 training** under an engine with an ``fp8_recipe`` (Transformer Engine's current scaling, torchao's tensorwise)
  adds the quantization of each linear's input in forward and of its output's gradient in backward, two reads and
  one or two FP8 writes an element at ``η_mem``, torchao's weights too (:func:`symllm.costs.fp8_casts.fp8_quantize_s`).
* **Training** keeps ``train_factor`` of the large-GEMM efficiency (norms, element-wise work: a forward and backward),
  an engine's figure at the width ``train_width.d`` where it was measured, read on the step less its attention core
  (``attention_tiles.train_basis``), which runs on its tiles at its kernel's forward and backward rates
  (:func:`symllm.costs.attention_training.core_training_s`); at width ``d`` the time beyond the
  GEMMs, relative to theirs, scales as ``train_width.d / d`` (memory-bound passes over ``d``-wide activations
  against GEMM FLOPs in ``d²``: :func:`train_factor`), and the share of it that streams memory
  (``train_bandwidth``, measured on an H100 and an H200) as the card's bf16 peak over its bandwidth against the
  H200's, where the factor was measured;
  an engine that sources them adds its optimizer's update and FSDP2's copy-outs, memory-bound passes on the
  compute stream (:func:`symllm.costs.step_passes.step_passes_s`); op checkpointing's recomputed linears run at
  the GEMMs' own rate and its rerun of a block's element-wise forward at ``η_mem``
  (:func:`symllm.costs.step_passes.op_recompute_s`);
  under ``--tp-overlap`` (default the engine's) the blocks' sequence-parallel collectives the engine pairs with a GEMM
  cost ``max(0, comm - GEMM)`` beyond it (:mod:`symllm.costs.tp_overlap`);
  data-parallel communication is hidden behind compute by the engine's ``overlap``; a pipeline idles for
  its bubble, ``(p-1)/(m+p-1)`` of 1F1B's ideal time over ``m`` micro-batches (``(p-1)/(v·m+p-1)``
  interleaved over ``v`` chunks).

Every expected time is at or above its bound: each efficiency is at most 1 and every fixed cost is
non-negative; a training step, whose bound adds its communication unoverlapped, is never expected faster
than that bound (``floor`` below). **MFU** is model FLOPs (3× the forward's matmul FLOPs, the attention core causal) per
second over ``gpus × the compute dtype's dense peak``; **HFU** counts the FLOPs the hardware runs (recomputation
included) over the same denominator: both numerators :func:`symllm.costs.utilisation.step_flops`, the bound's too.

>>> float(gemm("bf16", 4096)), float(gemm("bf16", 100))
(0.721, 0.401)
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch.dtypes import BF16
from symllm.costs import tiles as _tiles  # (its core_on_tiles read at call time)
from symllm.costs import tp_overlap, weight_formats
from symllm.costs.attention_training import core_training_s, training_kernel
from symllm.costs.collectives import allreduce_s, training_tp_s
from symllm.costs.dp_traffic import dp_collectives, p2p_s, training_dp_s
from symllm.costs.engine_memory import prompt_micro_batch
from symllm.costs.figures import KINDS, data, engine, engine_for, fraction as _x, interpolate
from symllm.costs.host_step import ray_step_s, step_host_s
from symllm.costs.fp8_casts import fp8_quantize_s
from symllm.costs.gemm_cards import card_scale, small_m_rate
from symllm.costs.moe_training import moe_host_launch_s, moe_layer_floor_s, moe_training_s
from symllm.costs.power import power_fraction
from symllm.costs.schedules import bubble, handoffs
from symllm.costs.step_passes import op_recompute_s, step_passes_s
from symllm.costs.tiles import attention_kernel, attention_prefill, tile
from symllm.costs.utilisation import of_peak

__all__ = ["ENGINES", "gemm", "grouped_gemm", "stream", "memory_kind", "fp16_accumulate_peak",
           "f16_gemv_factor", "train_factor", "step_factor", "expected", "seconds"]


def __getattr__(name):  # ENGINES: read on first use
    if name == "ENGINES":
        return tuple(k for k in data()["engines"] if k != "about")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def gemm(dtype: str, m, card: str | None = None) -> Fraction:
    """``η_gemm``: the fraction of ``dtype``'s dense peak a GEMM of ``m`` token rows reaches (fp8's table for
    fp8, int8 W8A8 and fp4, unmeasured: efficiency.json ``gemm.fp4``; bf16's otherwise), on ``card`` (a catalogue
    name: the measured curve times :func:`symllm.costs.gemm_cards.card_scale`; None: the curve as measured).

    >>> round(float(gemm("fp8", 16384)), 3), float(gemm("bf16", 10 ** 9))
    (0.625, 0.711)
    >>> round(float(gemm("bf16", 16384, "a100-80gb")), 4)
    0.7693
    """
    table = "fp8" if dtype in ("fp8", "int8", "fp4") else "bf16"
    return min(Fraction(1), interpolate(data()["gemm"][table], max(1, m)) * card_scale(table, card))


def grouped_gemm(dtype: str, m, ks, ridge, card: str | None = None) -> Fraction:
    """The fraction of ``dtype``'s dense peak a routed expert's GEMMs of ``m`` token rows reach, run once at
    each reduction width in ``ks`` (equal FLOPs each): :func:`gemm` at ``m``, less the time each product's
    bf16 output takes to write where its ``K`` is below the table's (``gemm.k`` in efficiency.json): a
    product of ``2MNK`` FLOPs writes ``2MN`` bytes, so ``1/(1 + k0/K)`` of its time is compute,
    ``k0 = ridge`` (the GPU's peak FLOP/s over its bandwidth), relative to the same at the table's ``K``
    (never above 1: the table holds at its own widths and above). The mean is of times, not of fractions.

    >>> ridge = Fraction(19789, 10) / Fraction(335, 100)  # H100 SXM fp8: 1978.9 TFLOP/s over 3.35 TB/s
    >>> (round(float(grouped_gemm("fp8", 4096, [4096], ridge)), 3),
    ...  round(float(grouped_gemm("fp8", 4096, [768], ridge)), 3))
    (0.594, 0.384)
    """
    base = gemm(dtype, m, card)
    k_ref = int(data()["gemm"]["k"])

    def loss(k) -> Fraction:  # the time at K over the time at the table's K (at least 1)
        return max(Fraction(1), (1 + Fraction(ridge) / max(1, k)) / (1 + Fraction(ridge) / k_ref))
    return base * len(ks) / sum(loss(k) for k in ks)


def stream(weight_dtype: str = "bf16", kind: str | None = None, dequant: dict | None = None) -> Fraction:
    """``η_mem``: the fraction of the memory bandwidth a stream of weights in ``weight_dtype`` reaches
    (weight-only int4/int8 unpack what they read: ``dequant``'s fraction, an engine's own where it has one,
    efficiency.json's otherwise) on memory of ``kind`` (:func:`memory_kind`: its own figure where
    ``memory_kinds.stream`` has one, memory_stream's otherwise).

    >>> stream(), stream("int4"), stream(kind="unified"), stream("int4", dequant=engine("mlc")["dequant"])
    (Fraction(22, 25), Fraction(33, 50), Fraction(17, 20), Fraction(22, 25))
    """
    own = data()["memory_kinds"]["stream"].get(kind)
    base = _x(own if own is not None else data()["memory_stream"]["value"])
    extra = (dequant if dequant is not None else data()["dequant"]).get(weight_dtype)
    return base * (_x(extra) if extra is not None and weight_dtype in ("int4", "int8") else 1)


def memory_kind(gpu) -> str | None:
    """A card's memory (``hbm``, ``gddr``, ``unified``) as the datasheet note of its catalogue entry names
    it (``memory_kinds`` in efficiency.json); None where the note names none. ``gpu``: a name or a GPU.

    >>> memory_kind("a100-80gb"), memory_kind("rtx4090"), memory_kind("apple-m2-ultra")
    ('hbm', 'gddr', 'unified')
    """
    from symllm.costs.accelerators import gpu as lookup
    g = lookup(gpu)
    text = f"{g.title} {g.note}"
    return next((kind for kind, word in data()["memory_kinds"]["patterns"] if word in text), None)


def fp16_accumulate_peak(gpu) -> int | None:
    """Dense fp16 FLOP/s with fp16 accumulation where the card's whitepaper lists it faster than the
    catalogue's fp16 peak (fp32 accumulation: GeForce cards), else None.

    >>> fp16_accumulate_peak("rtx4090"), fp16_accumulate_peak("a100-80gb")
    (330300000000000, None)
    """
    from symllm.costs.accelerators import gpu as lookup
    value = data()["fp16_accumulate"].get(lookup(gpu).name)
    return int(_x(value) * 10 ** 12) if value is not None else None


def f16_gemv_factor(serve: dict, card: str | None, mem) -> Fraction | None:
    """How many times slower than ``mem`` (bytes/s: the card's streaming rate) an engine's batch-1 fp16
    mat-vec reads its weights where the engine paces it by load issue (``f16_gemv_issue``: bytes a SM reads a
    clock, times the card's SMs and boost clock): the slower of the two, never faster than ``mem``; None where
    the engine or the card has no figure.

    >>> llama = engine("llama.cpp")
    >>> round(float(f16_gemv_factor(llama, "a100-80gb", Fraction(88, 100) * 2039 * 10 ** 9)), 4)  # 1.794 TB/s / 0.982
    1.8268
    >>> f16_gemv_factor(llama, "rtx4090", Fraction(88, 100) * 1008 * 10 ** 9), f16_gemv_factor(llama, "mi300x", 1)
    (Fraction(1, 1), None)
    """
    issue = serve.get("f16_gemv_issue")
    if not issue or card not in issue["cards"]:
        return None
    sms, mhz = issue["cards"][card][:2]
    rate = _x(issue["bytes_per_sm_clock"]) * sms * mhz * 10 ** 6
    return max(Fraction(1), Fraction(mem) / rate)


def train_factor(factor, d=None, ridge=None) -> Fraction:
    """The fraction of the large-GEMM efficiency a training step keeps at model width ``d`` on a card whose
    ``ridge`` is its bf16 dense peak over its memory bandwidth (FLOP a byte): an engine's ``factor`` holds at
    the width it was measured at (``train_width.d`` in efficiency.json) on the reference card
    (``train_bandwidth.reference``); its time beyond the GEMMs over theirs, ``x = 1/factor - 1``, scales as
    ``train_width.d / d`` (the non-GEMM passes read and write ``d``-wide activations, the GEMMs' FLOPs grow as
    ``d²``) and, of it, the share ``train_bandwidth.share`` that streams memory as ``ridge`` over the
    reference's (the same bytes at another bandwidth, beside GEMMs at another peak). ``d`` None: no width
    law; ``ridge`` None: the reference card's.

    >>> train_factor("0.75", 4096), train_factor("0.75", 8192), train_factor("0.75", 2048)
    (Fraction(3, 4), Fraction(6, 7), Fraction(3, 5))
    >>> # 989.4 TFLOP/s over 2.4 TB/s, twice the H200's ridge: x = 1/3 x (1 - 0.43 + 0.43 x 2) = 0.4767
    >>> round(float(train_factor("0.75", 4096, Fraction(9894, 24))), 4)
    0.6772
    """
    factor = _x(factor)
    x = 1 / factor - 1
    width = data().get("train_width")
    if width and d:
        x *= Fraction(int(width["d"])) / Fraction(d)
    memory = data().get("train_bandwidth")
    if memory and ridge:
        ref = memory["reference"]
        share = _x(memory["share"])
        ref_ridge = _x(ref["bf16_tflops"]) * 1000 / _x(ref["bandwidth_gb_s"])  # FLOP a byte
        x *= 1 - share + share * Fraction(ridge) / ref_ridge
    return 1 / (1 + x)


def step_factor(work, d=None, bf16_peak=None, peak=None, bandwidth=None) -> Fraction:
    """The fraction of the large-GEMM rate (:func:`gemm` at 16,384 rows) a training step's GEMMs keep, what
    :func:`expected` divides a step's GEMM FLOPs by: the workload's training engine's ``train_factor``, read on the
    step less its attention core (``attention_tiles.train_basis``), at width ``d`` on the card's ridge (its
    ``bf16_peak``, else ``peak``, over ``bandwidth``: :func:`train_factor`); under a power limit the GEMMs' share of
    the step slows, the rest (memory-bound passes) does not: ``1 / (1/capped + 1/factor - 1)``
    (:func:`symllm.costs.power.power_fraction`).

    >>> from symllm.costs.workloads import Workload
    >>> step_factor(Workload(gpu="h100-sxm"), 4096), round(float(step_factor(Workload(gpu="h100-sxm", power_cap=500),
    ...                                                                      4096)), 4)
    (Fraction(1929, 2500), 0.724)
    """
    train = engine_for(getattr(work, "engine", None), "training")
    capped = power_fraction(card(work, own_peak=True), getattr(work, "power_cap", None))
    tiled = "attention_tiles" in data()
    basis = _x(data()["attention_tiles"]["train_basis"]) if tiled else 1
    factor = train_factor(_x(train["train_factor"]) * basis, d,
                          Fraction(bf16_peak or peak) / bandwidth if bandwidth else None)
    return 1 / (1 / capped + 1 / factor - 1)


def card(work, *, own_peak: bool = False) -> str | None:
    """The catalogue card a workload runs on (``work.gpu``), whose figures the expected times read (its memory
    kind, its fp16-accumulate peak); None for an accelerator given by its figures alone. ``own_peak``: the card
    only where its own peaks hold (no ``--gpu-flops``): what is measured against them (:func:`gemm`'s
    :func:`symllm.costs.gemm_cards.card_scale`, fp8's transposes, the bf16 peak of fp8 training's bf16 GEMMs).

    >>> from symllm.costs.workloads import Workload
    >>> card(Workload(gpu="h100-sxm")), card(Workload(gpu="h100-sxm", gpu_flops=500), own_peak=True), card(Workload())
    ('h100-sxm', None, None)
    """
    from symllm.costs.accelerators import names
    name = getattr(work, "gpu", None)
    if not isinstance(name, str) or name not in names() or (own_peak and getattr(work, "gpu_flops", None) is not None):
        return None
    return name


def seconds(value):
    """A time (or rate) as a float, or the exact Fraction when it is past a float's range (a 300-digit
    ``--seq``: float() raised OverflowError); JSON prints that one as "p/q", the command line in scientific
    notation. Bounds and expected times alike.

    >>> seconds(Fraction(3, 2)), seconds(Fraction(10 ** 400, 3)) == Fraction(10 ** 400, 3)
    (1.5, True)
    """
    try:
        return float(value)
    except OverflowError:
        return Fraction(value)


def expected(parts: dict, work, peak: int, bandwidth: int, route: dict, floor: dict | None = None) -> dict:
    """The ``time.expected`` group of :func:`symllm.costs.hardware.roofline`: ``prefill_s``,
    ``prefill_compute_s`` (its GEMMs and attention core alone: what a prompt adds to a step it is chunked
    into; ``prefill_gemm_s`` its GEMMs alone, ``decode_gemm_s`` a decode step's, the weights' stream where
    slower), ``decode_token_s``, ``tokens_per_s``, ``training_step_s``, ``training_tokens_per_s_per_gpu``, ``mfu``,
    ``hfu`` and the engines used, from the busiest stage's evaluated closed forms in ``parts`` (keys
    ``{prefill,decode}_{flops,core_flops,bytes,tp_bytes}``, ``layers``, ``collectives``, ``training_tp_calls``,
    ``training_tp_gathers``,
    ``*_handoff``,
    ``training_flops``, ``training_model_flops``, ``comm``, ``dp_sent`` (comm's dp form at a reduce dtype's bytes and
    rounds a step:
    :func:`symllm.costs.parallel.comm`); a mixture's ``expert_layers``, ``d``, ``d_ff``, ``n_e``, ``k``,
    ``beta_a`` for :func:`symllm.costs.moe_training.moe_training_s`), the workload, the peak FLOP/s of the
    compute dtype, the bandwidth
    and the links (:func:`symllm.costs.hardware.links`); ``floor``: the bound's times. The card's figures are
    :func:`card`'s (its GEMM efficiency at its own peak only; None: the measured curve). Seconds as floats.
    """
    serve, train = (engine_for(getattr(work, "engine", None), kind) for kind in KINDS)  # each kind's own engine
    compute = parts["compute_dtype"]
    pp = work.pp
    tp_link = route.get("tp") if work.tp > 1 else None
    layers = parts["layers"]
    kernels = layers * serve["kernels_per_layer"]
    graph, host = _x(data()["kernel"]["graph_s"]), _x(data()["kernel"]["host_s"])
    host_call = _x(data()["kernel"]["collective_host_s"])  # a torch.distributed call's host time (eager)
    named, rated = card(work), card(work, own_peak=True)  # its memory and fp16; its GEMMs at its own peak
    kind = memory_kind(named) if named is not None else None
    mem = stream(weight_formats.stream_dtype(work), kind, serve.get("dequant")) * bandwidth  # (an engine's own)
    # an engine's fixed cost a layer on Apple's GPUs (no CUDA graph there), in place of its kernels'
    metal = _x(serve["metal_layer_s"]) if serve.get("metal_layer_s") and kind == "unified" else None
    plain_fp16 = work.dtype == "fp16" and getattr(work, "weight_format", None) is None and compute == "fp16"
    # llama.cpp's 2024 batch-1 fp16 mat-vec reads with scalar loads: paced by the load instructions its SMs
    # issue (bytes a SM a clock) where the card's SMs and clock are known, else 1.27x slower on HBM (PR #9816)
    gemv = f16_gemv_factor(serve, named, mem) if plain_fp16 and work.batch == 1 else 1
    if gemv is None:
        gemv = _x(serve["f16_gemv_hbm"]) if serve.get("f16_gemv_hbm") and kind == "hbm" else 1
    # fp16 prompt GEMMs accumulated in fp16 (cuBLAS CUBLAS_COMPUTE_16F) where the card runs that faster
    fast16 = fp16_accumulate_peak(named) if serve.get("fp16_accumulate") and plain_fp16 and named else None
    out = {"engine": serve["name"], "training_engine": train["name"]}

    def step(gpu_s: Fraction, kernels: int = kernels, calls: int = 0, reduce_s: Fraction = Fraction(0)) -> Fraction:
        """A stage's GPU time plus its kernels' fixed cost and its ``calls`` all-reduces (``reduce_s``), or
        without a CUDA graph the host's pace: it launches every kernel and every all-reduce
        (kernel.eager_collectives: each at collective_host_s), and the GPU's all-reduces run while it does."""
        if metal is not None:
            return gpu_s + layers * metal + reduce_s
        if serve["cuda_graphs"]:
            return gpu_s + kernels * graph + reduce_s
        return max(gpu_s + kernels * graph + reduce_s, kernels * host + calls * host_call)

    ranks = work.tp * work.pp
    control = ray_step_s(ranks) if serve.get("ray_workers") else Fraction(0)  # a Ray round trip a step
    control += step_host_s(serve, work.tp)  # an eager engine's inputs and sampler, the GPU waiting
    # a step's collectives (collectives.step_collectives: the residual stream's all-reduces, the embedding's among
    # them, the logits' gather, vLLM's spanning Mamba-2 norms'): each a latency on the GPU, a call from the host
    reduces = parts["collectives"]
    calls = reduces if tp_link else 0

    def tp_sent(phase: str, tokens: int):
        """The bytes a step's all-reduces send, an engine that pads its tokens (``pad_tokens``) paying the rows
        it adds in the residual stream's (the logits' gather keeps the real rows)."""
        pad = (-tokens) % serve["pad_tokens"] if serve.get("pad_tokens") else 0
        return parts[f"{phase}_tp_bytes"] + pad * parts[f"{phase}_tp_row_bytes"]

    rows = work.batch * work.seq
    # routed experts: each sees k/n_e of the tokens (share), a GEMM of that many rows
    share = Fraction(parts["expert_active"]) / parts["expert_params"] if parts["expert_params"] else Fraction(1)

    # a card held below its rated board power: its compute-bound kernels at this fraction of their speed
    capped = power_fraction(rated, getattr(work, "power_cap", None))

    def gemms(flops, experts, m, peak=peak) -> Fraction:
        """GEMMs of ``m`` token rows, of which the routed experts' see ``share`` of them."""
        return (Fraction(flops - experts) / (gemm(compute, m, rated) * capped * peak)
                + (Fraction(experts) / (gemm(compute, m * share, rated) * capped * peak) if experts else 0))
    # prefill: GEMMs at M = b·s rows (an engine's micro-batch at most: llama.cpp's n_ubatch and -fa as its memory
    # resolves the workload's, engine_memory.prompt_micro_batch), the attention core at its causal FLOPs, weights at
    # least once
    core = parts["prefill_core_flops"]
    ubatch, flash = prompt_micro_batch(serve, work) or (rows, False)
    gemm_s = gemms(parts["prefill_flops"] - core, parts["prefill_expert_flops"], ubatch, fast16 or peak)
    # the attention core: the pairs of the kernel's tiles (masked blocks skipped, diagonal blocks whole) at the
    # measured efficiency read on those pairs
    # (without attention_tiles in efficiency.json: the unmasked pairs at the table as measured)
    # (sliding and chunked layers: their band's tiles, symllm.costs.tiles.core_on_tiles)
    tiled, heads = "attention_tiles" in data(), parts["head_dim"]
    tiles = _tiles.core_on_tiles(parts, work.seq, tile(heads, attention_kernel(serve, named))) if core and tiled else 0
    # a training step's core on FlashAttention-2's tiles (the inference engine's kernel is not the trainer's)
    train_tiles = _tiles.core_on_tiles(parts, work.seq, tile(heads)) if core and tiled else 0
    attn_s = ((core * tiles / (attention_prefill(work.seq, heads, tiles=True) * capped * peak) if tiled else
               parts["prefill_causal_core_flops"] / (attention_prefill(work.seq, heads) * capped * peak)) if core
               else 0)
    if core and work.stack in ("eager", "hf-eager"):  # scores materialised: the whole rectangle, four passes
        scores = Fraction(core, 4 * parts["head_dim"])  # elements of QK^T (core = 4·b·n_h·d_h·s·s_kv·L)
        attn_s = max(Fraction(core) / (gemm(compute, work.seq, rated) * capped * peak),
                     4 * scores * Fraction(work.activation_bytes) / (stream(kind=kind) * bandwidth))
    # llama.cpp's CUDA prompt: its fp16 GEMMs' conversions, each micro-batch's scores against the cache so far in
    # memory, or under -fa its whole rectangle in ggml_flash_attn_ext (no tile skipped: it masks every cell) at the
    # measured attention kernels' efficiency on the tiles they run
    prompt = serve.get("cuda_prompt")
    if prompt and core and kind != "unified" and all(x in parts for x in ("d", "d_ff", "n_h", "n_kv")):
        from symllm.costs.ggml import prompt_passes
        converted, scores, f32_bytes = prompt_passes(
            seq=work.seq, ubatch=ubatch, layers=layers, d=parts["d"], d_ff=parts["d_ff"],
            n_h=Fraction(parts["n_h"], work.tp), q=Fraction(parts["n_h"] * heads, work.tp),
            kv=Fraction(parts["n_kv"] * heads, work.tp), convert=plain_fp16, flash_attn=flash)
        act = stream("fp16", kind) * bandwidth
        attn_s = (4 * heads * scores * work.batch / (attention_prefill(work.seq, heads, tiles=True) * capped * peak)
                  if flash else
                  max(4 * heads * scores * work.batch / (gemm(compute, ubatch, rated) * capped * peak),
                      scores * work.batch * _x(prompt["scores_bytes"]) / act))
        attn_s += converted * work.batch * _x(prompt["convert_bytes"]) / act
        attn_s += f32_bytes * work.batch * _x(prompt.get("f32_passes", "0")) / act  # its element-wise nodes
    # never below the bound's compute term (its attention convention may count more than causal pairs)
    gpu_s = max(gemm_s + attn_s, Fraction(parts["prefill_flops"]) / peak, parts["prefill_bytes"] / mem)
    prefill = (pp * step(gpu_s, layers * serve.get("prefill_kernels_per_layer", serve["kernels_per_layer"]), calls,
                         allreduce_s(reduces, tp_sent("prefill", rows), tp_link, serve, work.tp))
               + _handoff(parts, "prefill", route, pp) + _x(serve["step_s"]) + control)
    # decode: the weights and the cache streamed, GEMMs at M = b rows where they are slower; b tokens routed
    # uniformly touch 1 - (1 - k/n_e)^b of the experts, not the k/n_e the bound reads
    moved = Fraction(parts["decode_bytes"])
    if parts["expert_params"] and share < 1:
        touched = 1 - (1 - share) ** min(work.batch, 10 ** 6)
        moved += parts["beta_w"] * (parts["expert_params"] * touched - parts["expert_active"])
    # per kernel: the GEMMs stream the weights (the slower of their FLOPs and those bytes); attention reads
    # each sequence's cache in kernels of its own, after them (the slower of its FLOPs and the cache's bytes)
    weights = min(Fraction(parts["decode_weight_bytes"]), moved)
    weights += moved - Fraction(parts["decode_bytes"]) if parts["expert_params"] and share < 1 else 0
    core = Fraction(parts["decode_core_flops"])
    # an engine's fp16 GEMMs of a few (padded) rows on a library measured on the card (gemm.small_m): the weights'
    # stream at that rate where slower (the card's own memory only: not under --gpu-bandwidth)
    pad = serve.get("pad_tokens") or 1
    few = (small_m_rate(serve["name"], named, -(-work.batch // pad) * pad)
           if plain_fp16 and getattr(work, "gpu_bandwidth", None) is None else None)
    decode_gemm = max(gemms(parts["decode_flops"] - core, parts["decode_expert_flops"], work.batch),
                      weights * gemv / mem, weights / few if few else 0)
    gpu_s = decode_gemm + max(core / peak, (moved - weights) / mem)
    decode_tp = allreduce_s(reduces, tp_sent("decode", work.batch), tp_link, serve, work.tp)
    decode = (pp * step(gpu_s, kernels, calls, decode_tp)
              + _handoff(parts, "decode", route, pp) + _x(serve["step_s"]) + control)
    out["prefill_s"] = seconds(prefill)
    out["prefill_compute_s"] = seconds(gemm_s + attn_s)  # its GEMMs and attention alone (chunked prefill)
    # the GEMMs alone of a prompt and of a decode step: a step running both at once (traffic) reads them
    out["prefill_gemm_s"], out["decode_gemm_s"] = seconds(gemm_s), seconds(decode_gemm)
    out["decode_token_s"] = seconds(decode)
    out["tokens_per_s"] = seconds(work.dp * work.batch / decode)
    # training: one step of b sequences per data-parallel rank, as micro-batches through the pipeline
    # the engines' train_factor, read against the dense rectangle's FLOPs, on the kernel's tile work; its time
    # beyond the GEMMs on the card's bf16 peak over its bandwidth (the compute dtype's peak where no bf16 peak is known)
    # (d: where the model states a width; bf16_peak: None where no card's bf16 peak is known, the compute dtype's)
    factor = step_factor(work, parts.get("d"), parts["bf16_peak"], peak, bandwidth)
    # the attention core (all its FLOPs leave the GEMMs' terms) on its kernel's tiles at its forward and backward
    # rates, recomputed forwards at the forward rate (attention_training); eager stacks: the rectangle, as GEMMs
    removed = (Fraction(parts["training_core_flops"])
               if parts["prefill_core_flops"] and tiled and work.stack not in ("eager", "hf-eager") else Fraction(0))
    forward = Fraction(parts["training_model_core_flops"]) * train_tiles / 3 if removed else Fraction(0)
    core_s = core_training_s(forward, work.seq, heads, training_kernel(train, named), removed * train_tiles
                             - 3 * forward, (parts["bf16_peak"] or peak) * capped) if removed else Fraction(0)
    micro = getattr(work, "micro_batches", 1) or 1
    # every memory-bound pass of the step (MoE permutation and router, FP8 casts, op checkpointing's rerun, the
    # optimizer and FSDP copy-outs) streams the card's own memory: its kind's figure where it has one
    passes = stream(kind=kind) * bandwidth
    experts = parts["training_expert_flops"]
    comm = parts["comm"]  # tp, pp and dp always; ep for a mixture of experts only (parallel.comm_kinds)
    moe_layers = parts["expert_layers"]
    if experts and moe_layers and all(x in parts for x in ("d", "d_ff", "n_e", "k", "beta_a")):
        # an expert's GEMMs at its widths: K = d and d_ff (forward and input gradient), its rows (weight gradient)
        m = rows * share
        eta = grouped_gemm(compute, m, (parts["d"], parts["d_ff"], m), Fraction(peak, bandwidth), rated)
        moe = moe_training_s(layers=moe_layers, rows=rows, k=parts["k"], d=parts["d"], n_e=parts["n_e"],
                             act_bytes=parts["beta_a"], rate=passes, ep_bytes=comm["ep"],
                             link=route.get("ep") if work.ep > 1 else None, ep=work.ep,
                             recompute=work.recompute == "full",
                             syncs=int(train.get("moe_host_syncs", 0)))
        moe_s = sum(moe.values())
    else:
        eta, moe_s = (gemm(compute, rows * share, rated) if experts else 1), Fraction(0)
    # FP8's quantization passes under the engine's recipe (Transformer Engine's current scaling, torchao's tensorwise)
    cast_s = expert_cast = Fraction(0)  # the fp8 casts, and those of the routed experts' k copies of each token
    if compute == "fp8" and train.get("fp8_recipe") and all(
            x in parts for x in ("d", "d_ff", "n_h", "n_kv", "head_dim")):
        heads, common = parts["head_dim"], dict(rows=rows, d=parts["d"], d_ff=parts["d_ff"], rate=passes,
                                                moe_layers=moe_layers, tp=work.tp, card=rated, recompute=work.recompute,
                                                recipe=train["fp8_recipe"])
        cast_s = fp8_quantize_s(**common, layers=layers, q=parts["n_h"] * heads, kv=parts["n_kv"] * heads,
                                k=parts.get("k", 1))  # k: a mixture's experts a token (a dense model: once)
        expert_cast = (fp8_quantize_s(**common, layers=moe_layers, q=0, kv=0, k=parts.get("k", 1))
                       - fp8_quantize_s(**common, layers=moe_layers, q=0, kv=0, k=0))
    # fp8 linears only (an engine's fp8_linears_only): the attention core and the output head
    # (training_bf16_flops: the busiest stage's) run their bf16 GEMMs at the bf16 peak
    bf16 = (Fraction(parts["training_bf16_flops"]) - removed
            if compute == "fp8" and train.get("fp8_linears_only") and parts["bf16_peak"] else Fraction(0))

    def large(dtype: str) -> Fraction:  # the large-GEMM efficiency train_factor is a fraction of (M 16,384)
        return gemm(dtype, 16384, rated)
    compute_s = (Fraction(parts["training_flops"] - experts - removed - bf16) / (large(compute) * factor * peak)
                 + (bf16 / (large("bf16") * factor * parts["bf16_peak"]) if bf16 else 0)
                 + (Fraction(experts) / (eta * factor * peak) if experts else 0) + moe_s + cast_s + core_s) * micro
    if parts["op_flops"] and all(x in parts for x in ("d", "d_ff", "n_h", "n_kv")):
        # op checkpointing: its recomputed linears at the GEMMs' own rate (the step's factor holds element-wise
        # passes they do not bring), the block's element-wise forward it reruns as measured passes
        gemm_s = Fraction(parts["op_flops"]) / (large(compute) * peak)
        compute_s += micro * (gemm_s / capped - gemm_s / factor + op_recompute_s(
            rows=rows, layers=layers, d=parts["d"], d_ff=parts["d_ff"], q=parts["n_h"] * parts["head_dim"],
            kv=parts["n_kv"] * parts["head_dim"], rate=passes, tp=work.tp, sp=work.sp))
    if moe_s and train.get("moe_host_syncs") and work.ep > 1:  # dropless MoE layers under an engine that syncs
        # a dropless layer's measured floor (moe.layer_floor), FP8's quantization launches an expert on top
        gpu = Fraction(experts) / (eta * factor * peak) + moe_s + expert_cast
        host = dict(moe_layers=moe_layers, n_e=parts["n_e"], ep=work.ep,
                    fp8=compute == "fp8" and train.get("fp8_recipe") == "current")
        compute_s += micro * max(Fraction(0), moe_layer_floor_s(**host) - gpu)
        # the host launches their kernels one at a time (no CUDA graph holds them): the micro-batches take at
        # least the host's launches (moe.launches; a max: the host's time runs while the GPU's does)
        compute_s = max(compute_s, micro * moe_host_launch_s(**host))
    # the tensor-parallel collectives' calls a micro-batch (collectives.training_collectives: the bytes' own count),
    # the all-gathers and reduce-scatters among them at their own latency
    widths = all(x in parts for x in ("d", "d_ff", "n_h", "n_kv", "beta_a"))  # a block's (tp_overlap reads them)
    # the blocks' all-gathers an engine runs in float8, as comm's tp counts them at one byte (a dense model's)
    fp8 = tp_overlap.fp8_in_model(tp_overlap.fp8_gathers(work), bool(experts))
    tp_s = training_tp_s(parts["training_tp_calls"] * micro, parts["training_tp_gathers"] * micro,
                         comm["tp"] * micro, tp_link, work.tp) if work.tp > 1 else Fraction(0)
    # the engine's overlap of the blocks' collectives with their GEMMs: a mixture's expert blocks their attention
    # pairs only, its dense blocks all (tp_overlap.blocks)
    asked = tp_overlap.overlapping(work)
    groups = tp_overlap.blocks(asked, mixers=parts.get("mixers", ()), layers=layers,
                               moe_layers=moe_layers if experts else 0) if widths else []
    if asked:  # what of a block it covers here, as the outputs say it (tp_overlap.scope)
        out["tp_overlap"] = tp_overlap.scope(asked, groups)
    if groups and tp_s:
        slower = max(Fraction(1), gemm(compute, rows, rated) / gemm(compute, max(1, rows // work.tp), rated))
        tp_s -= micro * tp_overlap.model_saved_s(
            groups, d_ff=parts["d_ff"], d_fd=parts.get("d_fd"), recompute=work.recompute, rows=rows, d=parts["d"],
            q=parts["n_h"] * parts.get("d_hv", parts["head_dim"]), kv=parts["n_kv"] * parts["head_dim"],
            beta_a=parts["beta_a"], tp=work.tp, link=tp_link, gemm_rate=large(compute) * peak * capped,
            chunk_slowdown=slower, stream_rate=passes, fp8=fp8, card=rated, latent=tp_overlap.latent_widths(parts))
    # expert-parallel all-to-alls: in moe_s where the layers are known, else their bytes at the link's rate
    ep_s = Fraction(comm["ep"] * micro) / route["ep"][1] if comm.get("ep") and not moe_s else Fraction(0)
    # comm's dp form at the engine's reduce dtype and rounds a step: FSDP2 as an engine runs it at ZeRO 3 without a
    # pipeline (fsdp_per_micro_batch: gathered and reduce-scattered every micro-batch; grad_reduce_bytes)
    fsdp = work.zero_stage == 3 and pp == 1
    dp_calls = micro if fsdp and train.get("fsdp_per_micro_batch") else 1
    dp_bytes = parts["dp_sent"](int(train.get("grad_reduce_bytes", BF16)) if fsdp else BF16, dp_calls)
    # each all-gather and reduce-scatter (ZeRO's, FSDP's units under an engine's fsdp_units) at its own latency
    dp_calls_of = dp_collectives(work.zero_stage, dp_calls, layers, pp, train.get("fsdp_units"))
    dp_s = training_dp_s(dp_calls_of, dp_bytes, route.get("dp"), work.dp) if work.dp > 1 else Fraction(0)
    # the optimizer's update of the rank's share and FSDP2's copy-outs of each gathered layer (twice a round
    # where FSDP reshards after forward, once a step through a pipeline), on the compute stream
    gathers = (2 * dp_calls if fsdp else 1) if work.zero_stage == 3 and work.dp > 1 else 0
    # those it trains: the parameters (LoRA's adapters) that get a gradient where some do not (AdamW and the clip skip
    # a None .grad), else LoRA's adapters or every parameter
    owned = parts["trained"]
    if owned is None:
        owned = parts["trainable"] if parts["trainable"] is not None else parts["params"]
    # (ZeRO 1 and up shard the optimizer states over the data-parallel ranks: symllm.costs.zero.sharded)
    passes_s = step_passes_s(train, shard=owned / work.dp if work.zero_stage >= 1 else owned,
                             params=parts["params"], gathers=gathers, rate=passes)
    hidden = _x(train["overlap"])
    ideal = compute_s + tp_s + ep_s  # the busiest stage's m micro-batches, back to back
    schedule = getattr(work, "schedule", "1f1b") or "1f1b"
    exposed = max(dp_s * (1 - hidden), dp_s - ideal)  # what overlap cannot hide: at most the compute's length
    chunks = getattr(work, "virtual_stages", 2) or 2
    sends = handoffs(pp, micro, schedule)  # each micro-batch's activations and gradient at every boundary
    handoff_s = p2p_s(sends, Fraction(parts["training_handoff"] * sends, 2), route.get("pp")) if sends else 0
    training = ideal * (1 + bubble(pp, micro, schedule, chunks)) + handoff_s + exposed + passes_s
    if floor is not None:  # the bound adds data-parallel traffic unoverlapped: never expect less than it
        training = max(training, Fraction(floor["training_step_s"]))
    tokens = work.dp * work.batch * work.seq * micro
    gpus = work.tp * work.pp * work.dp
    out["training_step_s"] = seconds(training)
    out["training_tokens_per_s_per_gpu"] = seconds(Fraction(tokens) / training / gpus)
    out["mfu"] = seconds(of_peak(parts["training_model_flops"] * micro, training, gpus, peak))
    out["hfu"] = seconds(of_peak(parts["training_hardware_flops"] * micro, training, gpus, peak))
    if work.tokens is not None:  # a token budget: its time, GPU-hours and cost at the expected step
        run = Fraction(work.tokens) * training / tokens
        out["training_s"] = seconds(run)
        out["gpu_hours"] = seconds(run * gpus / 3600)
        if work.price is not None:
            out["cost"] = seconds(run * gpus / 3600 * Fraction(str(work.price)))
    return out


def _handoff(parts: dict, phase: str, route: dict, pp: int) -> Fraction:
    if pp == 1:
        return Fraction(0)
    return (pp - 1) * p2p_s(1, parts[f"{phase}_handoff"], route.get("pp"))  # one send a stage boundary
