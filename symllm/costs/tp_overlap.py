"""Tensor-parallel collectives a training engine overlaps with GEMMs (``tp_overlap`` of a training engine in
efficiency.json; ``--tp-overlap``, default the engine's): Transformer Engine's userbuffers under Megatron-Core's
``tp_comm_overlap``, torch's micro-pipelined async TP under torchtitan's ``enable_async_tensor_parallel``.

Under sequence parallelism each block's all-gathers and reduce-scatters move the residual stream (``β_a·b·s·d``, a
rank its ring share: :func:`symllm.costs.collectives.training_tp_bytes`), each paired by the engine with one GEMM
of a block linear (``qkv``, ``proj``, ``fc1`` gate and up, ``fc2``), named as Transformer Engine names them: ``_fprop``
the forward product, ``_dgrad`` the input gradient's, ``_wgrad`` the weight gradient's (each the forward's FLOPs).
A pair ``ring`` splits the GEMM into one chunk a rank, each chunk's product run as its piece of the collective
arrives or leaves (Transformer Engine's ring exchange, ``num_splits`` the tensor-parallel size; torch's
``fused_all_gather_matmul`` and ``fused_matmul_reduce_scatter``); ``bulk`` runs the collective whole beside the whole
GEMM. Either way the collective costs ``max(0, comm - GEMM)`` beyond the GEMM it pairs with (:func:`exposed_s`); the
chunks' products run at the GEMM table's rate at their own rows (``b·s/N_t``, :func:`symllm.costs.efficiency.gemm`),
and the slower chunks are the ring's own cost, as are the copies an engine's source shows outside the overlap
(a ring's partials reduced after it, torch's shard copied before it: :func:`copies_bytes`). A forward pair runs
again where recomputation reruns its collective (:func:`symllm.costs.collectives.forward_runs`). An engine that
casts to float8 before it gathers (torchao's float8 tensor parallelism under torchtitan: ``fp8_tp_all_gathers``)
moves those all-gathers at one byte an element under ``--compute-dtype fp8``, overlapped or not (:func:`fp8_gathers`;
``comm.tp`` counts them so: :func:`symllm.costs.parallel.comm`).

In a mixture of experts the engines overlap the attention sublayer's pairs only in its expert blocks (:func:`in_model`):
its linears are the same modules as a dense block's (Megatron-Core's ``linear_qkv`` and ``linear_proj``, Transformer
Engine's ``LayerNormLinear`` and ``Linear`` with their userbuffers; torchtitan's ``apply_non_moe_tp`` on every block's
attention and the micro-pipeline pass over the whole compiled graph), while the routed experts' grouped GEMMs take
none (Transformer Engine's ``GroupedLinear`` asserts "GroupedLinear doesn't support Userbuffer overlap";
``torch._grouped_mm`` is not a matmul the pass fuses), and their collectives stay as counted. A mixture's dense blocks
(DeepSeek-V3's first three, GLM-4.5's first) are planned as a dense model's (Megatron-Core's dense layer spec in
``get_gpt_decoder_block_spec``, its MLP's ``linear_fc1`` and ``linear_fc2`` with the ``fc1`` and ``fc2`` buffers;
torchtitan's ``apply_non_moe_tp`` plans a block without experts' feed-forward as LLaMA's): every pair, at their own
feed-forward width ``d_fd`` (:func:`blocks`).

Multi-head latent attention (``r_kv``) keeps the pairs its engine declares ``latent`` (efficiency.json, with the
source): under torchtitan the attention's input gathered once, d wide, into ``wq_a``'s and ``wkv_a``'s whole products
(``qkv_fprop``, its GEMM those: :func:`linear_flops`' ``latent``), ``wo``'s two, and a dense block's feed-forward
ones; under Megatron-Core none (building
MLA's down-projection turns ``tp_comm_overlap`` off on the config every later module shares). Its ``wo`` reads
``n_h·d_hv``. Gated DeltaNet, Mamba-2 and DeepSeek-V4's attention (:data:`OTHER_MIXERS`) have linears the pairs do
not describe: not modelled. Where an engine states the SMs a pair's communication takes from its GEMM
(``sm_margin``: Transformer Engine's ``set_sm_margin`` runs the GEMM on the card's SMs less the pair's ``num_sm``), the
GEMM runs ``SMs/(SMs - taken)`` as long (:func:`margins`); other communication kernels' SMs are not counted.
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.collectives import forward_runs, training_tp_s
from symllm.costs.figures import engine, engine_for
from symllm.errors import SymllmError

__all__ = ["PAIRS", "ATTENTION", "LATENT", "OTHER_MIXERS", "declared", "in_model", "blocks", "scope", "check",
           "overlapping", "pairs", "linear_flops", "latent_widths", "margins", "exposed_s", "copies_bytes", "saved_s",
           "model_saved_s", "fp8_gathers", "fp8_in_model"]

#: every pair of a block's collective and its GEMM, with the collective's kind (a forward pair's reruns)
PAIRS = {"qkv_fprop": "all_gather", "fc1_fprop": "all_gather", "proj_fprop": "reduce_scatter",
         "fc2_fprop": "reduce_scatter", "proj_dgrad": "all_gather", "fc2_dgrad": "all_gather",
         "qkv_dgrad": "all_gather", "fc1_dgrad": "all_gather", "qkv_wgrad": "reduce_scatter",
         "fc1_wgrad": "reduce_scatter"}
#: the attention sublayer's linears among them: the pairs an engine overlaps in a mixture of experts (:func:`in_model`)
ATTENTION = ("qkv", "proj")
#: the symbol of multi-head latent attention: a model holding it keeps the pairs its engine declares ``latent``
LATENT = "r_kv"
#: the mixers besides q/k/v attention, by the symbol a model holding one has: their linears are not the widths the
#: pairs' GEMMs take (:func:`linear_flops`), so a model with one is not overlapped here (:func:`in_model`), but for
#: multi-head latent attention (:data:`LATENT`), which keeps its engine's ``latent`` pairs
OTHER_MIXERS = {"r_kv": "multi-head latent attention", "n_gk": "Gated DeltaNet", "n_m": "Mamba-2",
                "n_hc": "DeepSeek-V4's compressed attention"}


def declared(name: str | None) -> dict | None:
    """The ``tp_overlap`` the training engine of ``--engine name`` declares (its ``ring`` and ``bulk`` pairs, its
    ``default``), None where it overlaps none (:func:`symllm.costs.figures.engine_for`: the default's, Megatron's).

    >>> declared("torchtitan")["default"], declared(None)["default"], declared("deepspeed")
    (False, False, None)
    """
    spec = engine_for(name, "training").get("tp_overlap")
    return engine(spec)["tp_overlap"] if isinstance(spec, str) else spec  # another engine's (nemo's: megatron's)


def check(name: str | None) -> None:
    """Refuse ``tp_overlap`` on where the training engine overlaps no collective, in one line naming the field.
    Without ``--sp`` it has nothing to overlap (:func:`overlapping`: Megatron-Core asserts sequence parallelism with
    ``tp_comm_overlap``; torchtitan's tensor parallelism is sequence-parallel), so ``plan`` may try layouts without.

    >>> check("deepspeed")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tp_overlap: the training engine deepspeed overlaps no tensor-parallel collective ...
    """
    if declared(name) is None:
        raise SymllmError(f"tp_overlap: the training engine {engine_for(name, 'training')['name']} overlaps no "
                          "tensor-parallel collective with its GEMMs (megatron, nemo and torchtitan do)")


def overlapping(work) -> dict | None:
    """The pairs the workload ``work``'s training engine overlaps (:func:`declared`), where ``--tp-overlap`` (or,
    not given, the engine's default) turns them on under ``--sp`` over more than one rank; else None.

    >>> from symllm.costs.workloads import Workload
    >>> overlapping(Workload(tp=4, sp=True, engine="torchtitan", tp_overlap=True))["ring"][0]
    'qkv_fprop'
    >>> overlapping(Workload(tp=4, sp=True, engine="torchtitan")) is None
    True
    """
    spec = declared(getattr(work, "engine", None))
    on = getattr(work, "tp_overlap", None)
    if spec is None or not work.sp or work.tp < 2 or not (spec.get("default", False) if on is None else on):
        return None
    return spec


def in_model(spec: dict | None, experts: bool, mixers=()) -> dict | None:
    """The engine's ``spec`` (:func:`overlapping`) as it applies to a model's blocks: whole for a dense model; for a
    mixture of experts' expert blocks (``experts``) its attention pairs only (:data:`ATTENTION`: the experts' grouped
    GEMMs take no overlap); where the model holds multi-head latent attention (:data:`LATENT` among ``mixers``, the
    symbols it has) the pairs the engine declares ``latent`` only; None where none is left, or where it holds another
    mixer of :data:`OTHER_MIXERS` (their linears are not the pairs' widths, not modelled).

    >>> in_model({"ring": ["qkv_fprop", "fc1_fprop"], "bulk": ["fc1_wgrad"]}, experts=True)
    {'ring': ['qkv_fprop'], 'bulk': []}
    >>> in_model({"ring": ["fc2_fprop"]}, experts=True), in_model({"ring": ["qkv_fprop"]}, False, ("n_gk",))
    (None, None)
    >>> in_model({"ring": ["qkv_fprop", "proj_fprop", "fc1_fprop"], "latent": ["proj_fprop", "fc1_fprop"]}, True,
    ...          ("r_kv",))["ring"], in_model({"ring": ["proj_fprop"], "latent": []}, False, ("r_kv",))
    (['proj_fprop'], None)
    """
    if not spec or any(m != LATENT for m in mixers):
        return None
    keep = [lambda n: n in spec.get("latent", ())] if LATENT in mixers else []
    keep += [lambda n: n.split("_")[0] in ATTENTION] if experts else []
    if not keep:
        return spec
    kept = {method: [n for n in spec.get(method, ()) if all(k(n) for k in keep)] for method in ("ring", "bulk")}
    return {**spec, **kept} if any(kept.values()) else None


def blocks(spec: dict | None, *, mixers=(), layers: int, moe_layers: int) -> list:
    """The model's blocks the pairs run over, as ``(pairs, blocks, ffn)``: a dense model's ``layers`` blocks
    (``moe_layers`` 0) at its feed-forward width (``ffn`` ``"d_ff"``); a mixture's ``moe_layers`` expert blocks
    their attention's pairs and its ``layers - moe_layers`` dense blocks every pair at theirs (``"d_fd"``), each as
    :func:`in_model` leaves them (``mixers``); none where none is left.

    >>> spec = {"ring": ["qkv_fprop", "fc1_fprop"]}
    >>> blocks(spec, layers=61, moe_layers=58)
    [({'ring': ['qkv_fprop'], 'bulk': []}, 58, 'd_ff'), ({'ring': ['qkv_fprop', 'fc1_fprop']}, 3, 'd_fd')]
    >>> blocks(spec, layers=32, moe_layers=0), blocks(spec, mixers=("n_m",), layers=32, moe_layers=0)
    ([({'ring': ['qkv_fprop', 'fc1_fprop']}, 32, 'd_ff')], [])
    """
    if not moe_layers:
        return [(applied, layers, "d_ff")] if (applied := in_model(spec, False, mixers)) else []
    out = [(in_model(spec, True, mixers), moe_layers, "d_ff"),
           (in_model(spec, False, mixers), layers - moe_layers, "d_fd")]
    return [(applied, n, ffn) for applied, n, ffn in out if applied and n > 0]


def scope(spec: dict | None, groups: list) -> str | None:
    """What of a block the overlap the workload turns on (``spec``, :func:`overlapping`) covers in the model (its
    ``groups``, :func:`blocks`), as the outputs say it (:func:`symllm.present.format.overlap_words`): ``"all"`` of
    its pairs in every block, ``"attention"`` only (a mixture's expert blocks), ``"none"`` (none modelled for this
    model: the step is as without); None where it is off.

    >>> spec = {"ring": ["qkv_fprop", "fc1_fprop"]}
    >>> scope(spec, blocks(spec, layers=32, moe_layers=0)), scope(spec, blocks(spec, layers=61, moe_layers=58))
    ('all', 'attention')
    >>> scope(spec, []), scope(None, [])
    ('none', None)
    """
    if not spec:
        return None
    if not groups:
        return "none"
    return "all" if all(applied == spec for applied, _, _ in groups) else "attention"


def pairs(spec: dict, recompute=False) -> dict:
    """The pairs an engine's ``tp_overlap`` ``spec`` overlaps (its ``ring`` and ``bulk`` lists), each with how many
    times it runs a micro-batch (twice a forward pair whose collective recomputation reruns) and whether it is chunked.

    >>> spec = {"ring": ["qkv_fprop", "proj_dgrad"], "bulk": ["fc1_wgrad"]}
    >>> pairs(spec, "full")
    {'qkv_fprop': (2, True), 'proj_dgrad': (1, True), 'fc1_wgrad': (1, False)}
    """
    out = {}
    for method in ("ring", "bulk"):
        for name in spec.get(method, ()):
            runs = forward_runs(PAIRS[name], recompute) if name.endswith("_fprop") else 1
            out[name] = (runs, method == "ring")
    return out


def linear_flops(*, rows, d, d_ff, q, kv, tp: int, latent=None) -> dict:
    """One rank's FLOPs of one product (forward, input or weight gradient: the same) of each block linear over
    ``rows`` tokens under ``tp`` ranks: ``qkv`` (``d`` to ``q + 2kv``), ``proj`` (``q`` to ``d``), ``fc1`` (a gated
    MLP's gate and up, ``d`` to ``2·d_ff``), ``fc2`` (``d_ff`` to ``d``). Multi-head latent attention's ``qkv`` is
    the products its gathered input feeds (``latent``, ``(whole, split)`` output widths): ``wq_a`` and ``wkv_a``,
    ``r_q + r_kv + d_hr`` whole on every rank (torchtitan's ``NoParallel``), and, without a query latent, ``wq``'s
    ``n_h·(d_hn + d_hr)`` split over the ranks.

    >>> {k: int(v) for k, v in linear_flops(rows=8, d=4, d_ff=8, q=4, kv=2, tp=2).items()}  # qkv: 2·8·4·(4+4)/2
    {'qkv': 256, 'proj': 128, 'fc1': 512, 'fc2': 256}
    >>> int(linear_flops(rows=8, d=4, d_ff=8, q=4, kv=2, tp=2, latent=(3, 4))["qkv"])  # 2·8·4·(3 + 4/2)
    320
    """
    widths = {"qkv": d * (q + 2 * kv), "proj": q * d, "fc1": d * 2 * d_ff, "fc2": d_ff * d}
    out = {k: Fraction(2 * rows * w, tp) for k, w in widths.items()}
    if latent is not None:
        whole, split = latent
        out["qkv"] = 2 * rows * d * (whole + Fraction(split, tp))
    return out


def margins(spec: dict, card: str | None) -> dict:
    """How many times as long each pair's GEMM runs where the engine's ``spec`` states the SMs its communication takes
    from it (``sm_margin``: ``pairs``, SMs by pair; ``sms``, the card's): ``SMs/(SMs - taken)`` on a card it lists,
    the GEMM's rate times ``(SMs - taken)/SMs`` (Transformer Engine's ``set_sm_margin``); none elsewhere.

    >>> margins({"sm_margin": {"pairs": {"proj_fprop": 1}, "sms": {"h100-sxm": 132}}}, "h100-sxm")
    {'proj_fprop': Fraction(132, 131)}
    >>> margins({"sm_margin": {"pairs": {"proj_fprop": 1}, "sms": {"h100-sxm": 132}}}, "a100-80gb"), margins({}, None)
    ({}, {})
    """
    table = spec.get("sm_margin") or {}
    sms = (table.get("sms") or {}).get(card)
    return {name: Fraction(sms, sms - taken) for name, taken in table.get("pairs", {}).items()} if sms else {}


def exposed_s(overlapped: dict, comm_s, gemm_s: dict, chunk_slowdown=Fraction(1), margin=None) -> tuple[int, Fraction]:
    """The collectives ``overlapped`` (:func:`pairs`) a block runs and the seconds they add beyond their GEMMs: each
    ``max(0, comm_s - GEMM)`` (``comm_s`` one collective's seconds, or a dict of them by pair), ``gemm_s`` one
    product of each linear (:func:`linear_flops` at the step's GEMM rate); a chunked pair's GEMM takes
    ``chunk_slowdown`` times as long (its chunks' rows' rate against the whole's), and a pair's in ``margin``
    (:func:`margins`) that many times as long again, the difference counted too.

    >>> g = {"qkv": Fraction(3), "proj": Fraction(1), "fc1": Fraction(6), "fc2": Fraction(3)}
    >>> exposed_s({"qkv_fprop": (1, False), "proj_fprop": (2, False)}, 2, g)   # max(0, 2-3) + 2 max(0, 2-1)
    (3, Fraction(2, 1))
    >>> exposed_s({"proj_fprop": (1, True)}, 2, g, Fraction(3, 2))   # 0.5 slower chunks, then max(0, 2-1.5)
    (1, Fraction(1, 1))
    >>> exposed_s({"fc2_fprop": (1, False)}, 2, g, margin={"fc2_fprop": Fraction(4, 3)})   # 1 slower, 2 hides
    (1, Fraction(1, 1))
    """
    calls, extra = 0, Fraction(0)
    for name, (runs, chunked) in overlapped.items():
        gemm = gemm_s[name.split("_")[0]]
        slowed = gemm * (chunk_slowdown if chunked else 1) * (margin or {}).get(name, 1)
        comm = comm_s[name] if isinstance(comm_s, dict) else comm_s  # by pair where they differ (float8 gathers)
        calls += runs
        extra += runs * (slowed - gemm + max(Fraction(0), Fraction(comm) - slowed))
    return calls, extra


def copies_bytes(spec: dict, overlapped: dict, stream_bytes, tp: int) -> Fraction:
    """Bytes a block's ring pairs (:func:`pairs`) stream on the compute stream, outside the overlap, where the
    engine's ``spec`` states them (``copies``: by collective, ``[a, b]``, ``a + b/N_t`` times ``stream_bytes``, the
    residual stream's whole bytes, or a dict of them by pair): torch's symmetric memory copies a rank's shard into
    its buffer before the first chunk's product (an all-gather: ``[0, 2]``, a read and a write of the shard); it and
    Transformer Engine's ring exchange reduce the ``N_t`` partials after the last (a reduce-scatter: ``[1, 1]``, each
    partial read, the shard written). A bulk pair reduces inside its communication kernel: none.

    >>> float(copies_bytes({"copies": {"all_gather": ["0", "2"], "reduce_scatter": ["1", "1"]}},
    ...                    {"qkv_fprop": (2, True), "proj_fprop": (1, True), "qkv_wgrad": (1, False)}, 800, 8))
    1300.0
    """
    table = spec.get("copies") or {}
    total = Fraction(0)
    for name, (runs, chunked) in overlapped.items():  # 2 x 2/8 x 800 + (1 + 1/8) x 800
        a, b = table.get(PAIRS[name], ("0", "0")) if chunked else ("0", "0")
        size = stream_bytes[name] if isinstance(stream_bytes, dict) else stream_bytes
        total += runs * (Fraction(a) + Fraction(b) / tp) * size
    return total


def latent_widths(parts: dict) -> tuple | None:
    """An MLA block's products on its gathered input, ``(whole, split)`` output widths (:func:`linear_flops`'
    ``latent``) from a model's widths ``parts`` (its symbols' values by name): ``wq_a``'s ``r_q`` and ``wkv_a``'s
    ``r_kv + d_hr`` whole, or without a query latent (no ``r_q``) ``wkv_a``'s whole and ``wq``'s ``n_h·(d_hn + d_hr)``
    split; None for a model without one (no ``r_kv``).

    >>> latent_widths({"r_q": 1536, "r_kv": 512, "d_hr": 64, "n_h": 128, "d_hn": 128}), latent_widths({"d": 8})
    ((2112, 0), None)
    >>> latent_widths({"r_kv": 512, "d_hr": 64, "n_h": 16, "d_hn": 128})   # DeepSeek-V2-Lite: wq, 16 x 192
    (576, 3072)
    """
    if not parts.get("r_kv"):
        return None
    whole = parts["r_kv"] + parts["d_hr"]
    if parts.get("r_q"):
        return whole + parts["r_q"], 0
    return whole, parts["n_h"] * (parts["d_hn"] + parts["d_hr"])


def saved_s(spec: dict, *, recompute, layers: int, rows, d, d_ff, q, kv, beta_a, tp: int, link, gemm_rate,
            chunk_slowdown=Fraction(1), stream_rate=None, fp8=(), card=None, latent=None) -> Fraction:
    """Seconds the pairs of ``spec`` (:func:`pairs`) take off a micro-batch's tensor-parallel time over ``layers``
    blocks: each overlapped collective's own time (one all-gather or reduce-scatter of the residual stream, ``rows``
    tokens of width ``d`` at ``beta_a`` bytes over ``link``: :func:`symllm.costs.collectives.training_tp_s`) less what
    it still adds beyond its GEMM (:func:`exposed_s`, the GEMMs at ``gemm_rate`` FLOP/s) and its copies outside the
    overlap (:func:`copies_bytes`) at ``stream_rate`` bytes/s. The all-gathers of the pairs named in ``fp8``
    (:func:`fp8_gathers`) move, and copy, one byte an element; the GEMMs the engine narrows on ``card`` run longer
    (:func:`margins`); ``latent``, an MLA block's ``qkv`` products (:func:`linear_flops`).

    >>> link = ("NVLink 4", 450 * 10 ** 9)   # one gather: 8.235 us + 3/4 of 8 MiB at 0.82 x 450 GB/s = 25.29 us
    >>> shape = dict(layers=1, rows=1024, d=4096, d_ff=14336, q=4096, kv=1024, beta_a=2, tp=4, link=link)
    >>> # wo's product, 2 x 1024 x 4096 x 4096 / 4 FLOPs at 1 PFLOP/s = 8.59 us, hides as much of it
    >>> round(float(saved_s({"ring": ["proj_fprop"]}, recompute=False, gemm_rate=10 ** 15, **shape)) * 1e6, 2)
    8.59
    """
    def one(width):  # one all-gather or reduce-scatter of the residual stream at width bytes an element
        return training_tp_s(1, 1, -(-width * rows * d * (tp - 1) // tp), link, tp)
    flops = linear_flops(rows=rows, d=d, d_ff=d_ff, q=q, kv=kv, tp=tp, latent=latent)
    gemm_s = {k: Fraction(v) / gemm_rate for k, v in flops.items()}
    overlapped = pairs(spec, recompute)
    width = {name: 1 if name in fp8 else beta_a for name in overlapped}
    by_width = {w: one(w) for w in set(width.values())}  # (two widths at most: one collective timed each)
    comm = {name: by_width[w] for name, w in width.items()}
    calls, extra = exposed_s(overlapped, comm, gemm_s, chunk_slowdown, margins(spec, card))
    if stream_rate:
        extra += copies_bytes(spec, overlapped, {n: w * rows * d for n, w in width.items()}, tp) / stream_rate
    return layers * (sum(runs * comm[n] for n, (runs, _) in overlapped.items()) - extra)


def model_saved_s(groups: list, *, d_ff, d_fd=None, **shape) -> Fraction:
    """:func:`saved_s` over the model's block ``groups`` (:func:`blocks`): a dense model's, a mixture's expert blocks
    and its dense ones at their feed-forward width ``d_fd``; ``shape`` the rest of :func:`saved_s`'s arguments.

    >>> link = ("NVLink 4", 450 * 10 ** 9)
    >>> shape = dict(recompute=False, rows=1024, d=4096, q=4096, kv=1024, beta_a=2, tp=4, link=link, gemm_rate=10 ** 15)
    >>> groups = blocks({"ring": ["proj_fprop", "fc2_fprop"]}, layers=3, moe_layers=2)  # wo's and w2's: 8.59 us each
    >>> round(float(model_saved_s(groups, d_ff=768, d_fd=4096, **shape)) * 1e6, 2)  # 2 + 1 x 2
    34.36
    """
    widths = {"d_ff": d_ff, "d_fd": d_fd}
    return sum((saved_s(applied, layers=n, d_ff=widths[ffn], **shape) for applied, n, ffn in groups), Fraction(0))


def fp8_gathers(work) -> tuple:
    """The pairs (:data:`PAIRS`) whose block all-gathers the workload ``work``'s training engine runs in float8
    (``fp8_tp_all_gathers``: torchao's float8 tensor parallelism under torchtitan casts before it gathers) where its
    GEMMs run ``--compute-dtype fp8``; else none. They move where the blocks' all-gathers do (under ``--sp`` over
    more than one rank: their count, :func:`symllm.costs.collectives.training_tp_bytes`, and :func:`overlapping`
    gate that) and in a dense model only (:func:`fp8_in_model`).

    >>> from symllm.costs.workloads import Workload
    >>> fp8_gathers(Workload(tp=8, sp=True, engine="torchtitan", compute_dtype="fp8"))
    ('qkv_fprop', 'fc1_fprop', 'proj_dgrad', 'fc2_dgrad')
    >>> fp8_gathers(Workload(tp=8, sp=True, engine="torchtitan"))   # bf16 GEMMs
    ()
    >>> fp8_gathers(Workload(tp=8, sp=True, compute_dtype="fp8"))     # the default training engine's: none
    ()
    """
    if getattr(work, "matmul_dtype", None) != "fp8":  # the dtype the GEMMs run in
        return ()
    return tuple(engine_for(getattr(work, "engine", None), "training").get("fp8_tp_all_gathers", ()))


def fp8_in_model(gathers: tuple, experts: bool) -> tuple:
    """The float8 all-gathers ``gathers`` (:func:`fp8_gathers`) as they hold in a model: a dense model's; none in a
    mixture of experts (``experts``), whose gathers stay ``β_a`` wide (torchtitan's float8 tensor parallelism is read
    for dense blocks only). What ``comm.tp`` counts (:func:`symllm.costs.parallel.comm`) and the overlap times alike.

    >>> fp8_in_model(("qkv_fprop", "proj_dgrad"), False), fp8_in_model(("qkv_fprop", "proj_dgrad"), True)
    (('qkv_fprop', 'proj_dgrad'), ())
    """
    return () if experts else tuple(gathers)
