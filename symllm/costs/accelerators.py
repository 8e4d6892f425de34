"""Accelerators by name: the catalogue of their peak FLOP/s, memory bandwidth, capacity and links, the
networks between nodes, and which peak a workload's matmuls run at; :mod:`symllm.costs.hardware` times a
workload on them (roofline bounds).

**The catalogue** (:data:`GPUS`, read from ``gpus.json`` beside this module on first use) gives each
accelerator's vendor-published peak *dense* (no 2:4 sparsity) tensor-core FLOP/s in bf16, fp16 and fp8 and
int8 OP/s, its memory bandwidth and capacity, the link between the GPUs of a node, and the source each number
is read from. Units, exactly: a TFLOPS is ``10**12`` FLOP/s; bandwidth in TB/s is ``10**12`` bytes/s (GB/s:
``10**9``); memory capacity, which vendors write "80GB", is built from binary-sized DRAM stacks, so it is
taken as GiB (``80 * 2**30`` bytes; ``nvidia-smi`` shows an H100 80GB as 81,559 MiB usable). Where a
datasheet prints only the with-sparsity figure, the dense one is half of it (NVIDIA's footnote: "shown with
sparsity; specifications 1/2 lower without sparsity"). A card without a dtype's tensor cores (fp8 on an A100,
bf16 on a T4) is refused for it. Links: the vendor's per-GPU figure counts both directions; a ring sends one
way, so half of it is used. Any other card: :func:`custom` (``--gpu-memory``, ``--gpu-bandwidth``,
``--gpu-flops``); networks between nodes: :data:`NETWORKS` (``--network``).

**Which peak**: the matmuls' dtype. bf16 and fp16 weights multiply in their own dtype; fp8 weights in fp8
(fp8 GEMMs, as TransformerEngine and vLLM run fp8 checkpoints); int8 and int4 weights are weight-only
quantisation, dequantised in the kernel and multiplied in the activations' dtype (``act_dtype``, bf16 by
default), so theirs is the ``act_dtype`` peak. A ``--weight-format`` an engine runs by its own kernels
(NVFP4 on FP4 tensor cores: the ``fp4`` peak; Marlin's weight-only FP4 and FP8: the ``act_dtype`` peak) is
:func:`symllm.costs.weight_formats.matmul_dtype`'s. fp32 and fp64 matmuls have no entry (the table holds tensor
core peaks): refused with one line.

>>> gpu("h100-sxm").bf16, gpu("h100-sxm").bandwidth
(989400000000000, 3350000000000)
>>> peak_flops("a100-80gb", "int4")   # weight-only int4: bf16 matmuls
312000000000000
>>> peak_flops("a100-80gb", "fp8")
Traceback (most recent call last):
...
symllm.errors.SymllmError: dtype: a100-80gb has no fp8 tensor cores; use bf16 or fp16
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from symllm._lazy import module
from symllm.errors import SymllmError
from symllm.validate import choice, positive_number, short, with_list

S = module("symllm.arch.symbols")  # SymPy's symbols, on first use: a workload reads the table without them

__all__ = ["GPU", "GPUS", "Network", "NETWORKS", "GiB", "gpu", "names", "network", "custom", "of", "compute_dtype",
           "peak_flops", "values", "parse_gpus", "sm_needed"]

#: bytes in a GiB: what a vendor's memory "GB" means (DRAM stacks are binary-sized)
GiB = 2 ** 30
_T = 10 ** 12  # tera: TFLOPS and TB/s
_G = 10 ** 9   # giga: GB/s

_CATALOGUE = "gpus.json"  # beside this module; read on first use


@dataclass(frozen=True)
class GPU:
    """One accelerator: peak dense FLOP/s per dtype, bandwidth (bytes/s), capacity (bytes), the link between
    GPUs of one node, its source.

    >>> g = gpu("mi300x")
    >>> g.bf16, g.fp8, g.bandwidth, g.memory == 192 * GiB
    (1307400000000000, 2614900000000000, 5300000000000, True)
    """

    #: the name ``--gpu`` takes
    name: str
    #: the product as the vendor names it
    title: str
    #: peak dense tensor-core FLOP/s in bf16, fp16 and fp8 (None: no such tensor cores)
    bf16: int | None
    fp16: int | None
    fp8: int | None
    #: peak memory bandwidth, bytes/s (10**12 per TB/s)
    bandwidth: int
    #: memory capacity, bytes (the vendor's "GB" read as GiB); an Apple GPU's: Metal's default working set of its
    #: unified memory (:func:`metal_working_set`), what fit, plan and serving read
    memory: int
    #: the datasheet's title and address
    source: str
    url: str
    #: how the numbers are read from it (the vendor's own words, dense vs sparse)
    note: str = ""
    #: peak dense int8 tensor-core OP/s (W8A8 kernels; weight-only int8 runs at the activations' peak)
    int8: int | None = None
    #: the link between the GPUs of one node (NVLink, Infinity Fabric, PCIe; None: a single device)
    link: str | None = None
    #: its bandwidth one way, bytes/s per GPU (the vendor's both-ways figure halved: a ring sends one way)
    link_bandwidth: int | None = None
    #: GPUs one such link joins (an NVLink domain; 8 cards of one PCIe server, assumed)
    node: int = 1
    #: the memory the driver reports to torch (``total_memory``), bytes, where measured: less than ``memory``
    #: (what engines such as vLLM take their share of); None: not measured, ``memory`` is used
    reported: int | None = None
    #: the board power its peaks are rated at, W (None: not given), and the power limit it runs at where that is
    #: lower (None: the rated power): a compute-bound kernel's clock under the limit (symllm.costs.power.power_fraction)
    power_w: int | None = None
    power_limit_w: int | None = None
    #: the names the driver gives it (nvidia-smi's, ``torch.cuda.get_device_name``), which :func:`gpu` takes too
    nvidia_smi: tuple[str, ...] = ()
    #: the CUDA compute capability, ``"major.minor"`` (``torch.cuda.get_device_capability``), what engines gate
    #: kernels on (efficiency.json ``kv_format_sm``); None: not a CUDA card (AMD, Apple) or not known (:func:`custom`)
    sm: str | None = None
    #: peak dense FP4 tensor-core FLOP/s (NVFP4 weights and activations: symllm.costs.weight_formats); None: no FP4
    #: tensor cores, or no datasheet figure read
    fp4: int | None = None
    #: the software stack its kernels run on where it is not CUDA or ROCm: "metal", an Apple GPU (gpus.json
    #: backend), where only the engines efficiency.json declares metal serve (symllm.costs.figures.on_backend)
    backend: str | None = None
    #: an Apple GPU's whole unified memory, bytes, of which :attr:`memory` is Metal's default working set
    #: (:func:`metal_working_set`); None: not a unified-memory card
    unified: int | None = None

    @property
    def usable(self) -> int:
        """The memory an engine sees: :attr:`reported` where measured, else the capacity.

        >>> gpu("h100-sxm").usable, gpu("a100-80gb").usable == gpu("a100-80gb").memory
        (85017493504, True)
        """
        return self.reported if self.reported is not None else self.memory

    def peak(self, dtype: str, field: str = "dtype") -> int:
        """Peak dense FLOP/s of matmuls in ``dtype`` (bf16, fp16, fp8; fp4 where NVFP4 weights choose it:
        :func:`symllm.costs.weight_formats.matmul_dtype`); a refusal names ``field``, the option that chose it
        (``compute_dtype`` where that was given).

        >>> gpu("a100-80gb").peak("fp8", "compute_dtype")
        Traceback (most recent call last):
        ...
        symllm.errors.SymllmError: compute_dtype: a100-80gb has no fp8 tensor cores; use bf16 or fp16
        """
        if dtype not in ("bf16", "fp16", "fp8", "fp4"):
            raise SymllmError(f"{field}: roofline time needs bf16, fp16 or fp8 matmuls (tensor-core peaks), "
                              f"got {short(dtype, 12)}")
        value = getattr(self, dtype)
        if value is None:
            other = "fp16" if self.fp16 is not None and dtype != "fp16" else "bf16"
            raise SymllmError(f"{field}: {self.name} has no {dtype} tensor cores; "
                              f"use {'bf16 or fp16' if self.bf16 and self.fp16 else other}")
        return value


@dataclass(frozen=True)
class Network:
    """A network between nodes: its name (``--network``), title, bandwidth one way per GPU (bytes/s), source."""

    name: str
    title: str
    bandwidth: int
    source: str
    url: str

    # why a ring's ranks in a node add their NICs together and an all-to-all does not,
    # read 2026-11-29 with the search tool: NCCL's maintainer (NVIDIA/nccl issue #530, 2021-07-02) "Ring and Tree
    # both use all NICs in parallel" and (issue #687, 2022-11-10) a ring enters and leaves the node once a
    # channel while an all-to-all has each GPU use its own NIC; NVIDIA/nccl-tests issue #267 (2024-11-19, the
    # maintainer): "Alltoall cannot aggregate the bandwidth of multiple NICs, so the performance you should see
    # is the performance of a single NIC", a ConnectX-7 at NDR reaching 48-49 GB/s (2025-01-23); measured:
    # all_gather_perf at 200 GB/s busbw a GPU on 32 nodes of 8 H100s with 8 NICs each (NVIDIA/nccl issue #1218,
    # 2024-03-12), four times one NIC's 48-49 GB/s; 2 x 8 H100s over 8 x 400 Gb/s RoCE all_reduce 216-231 GB/s
    # busbw and alltoall about 25 GB/s (NVIDIA/nccl issue #2409, 2026-09-14, below what its reporter expected)
    def ring(self, per_node: int, node_link: int | None) -> tuple[str, int]:
        """The link a ring collective (all-reduce, all-gather, reduce-scatter) crosses between nodes where
        ``per_node`` of its ranks share a node, ``(topology, bytes/s one way per GPU)``: NCCL runs one ring a
        channel and spreads the channels over the node's NICs, so the ring's ranks in a node drive their NICs
        together (sources above), ``per_node`` of this network's one-a-GPU ports; at most the node's own link
        (``node_link``), which every hop inside the node crosses. An all-to-all or a pipeline send keeps one
        NIC a GPU (:attr:`bandwidth`).

        >>> n = network("ib-ndr")
        >>> n.ring(8, 450 * 10 ** 9)
        ('InfiniBand NDR, 400 Gb/s per GPU, 8 NICs a ring', 400000000000)
        >>> n.ring(1, 450 * 10 ** 9), n.ring(4, 32 * 10 ** 9)[1]
        (('InfiniBand NDR, 400 Gb/s per GPU', 50000000000), 32000000000)
        """
        if per_node <= 1:
            return self.title, self.bandwidth
        both = per_node * self.bandwidth
        return f"{self.title}, {per_node} NICs a ring", both if node_link is None else min(both, node_link)


def _exact(text, unit: int) -> int | None:
    """A catalogue figure (a decimal string) times ``unit``, exactly; refused unless it is a whole number."""
    if text is None:
        return None
    value = Fraction(str(text)) * unit
    if value.denominator != 1 or value <= 0:
        raise SymllmError(f"gpu: catalogue figure {text!r} is not a positive whole number of units")
    return int(value)


def _reported(entry) -> int | None:
    """A catalogue entry's reported memory in bytes: exact ``bytes``, or ``gib`` as a log prints it."""
    if entry is None:
        return None
    if "bytes" in entry:
        return int(entry["bytes"])
    return int(Fraction(str(entry["gib"])) * GiB)


def metal_working_set(unified: int, rule=None) -> int:
    """The bytes macOS lets an Apple GPU wire of ``unified`` bytes by default (Metal's
    ``recommendedMaxWorkingSetSize``): gpus.json's ``metal.working_set`` fraction, the first row whose
    ``up_to_gib`` holds it (the rule's sources there); ``sysctl iogpu.wired_limit_mb`` raises it (``--gpu-memory``).

    >>> metal_working_set(192 * GiB) // 2 ** 20, metal_working_set(16 * GiB) // 2 ** 20
    (147456, 10922)
    """
    if rule is None:
        rule = json.loads((Path(__file__).parent / _CATALOGUE).read_text(encoding="utf-8"))["metal"]["working_set"]
    row = next(r for r in rule if r["up_to_gib"] is None or unified <= r["up_to_gib"] * GiB)
    return int(unified * Fraction(row["fraction"]))


@lru_cache(maxsize=1)
def _catalogue() -> tuple[dict, dict]:
    """The shipped catalogue (``gpus.json``): name -> :class:`GPU`, name -> :class:`Network`."""
    raw = json.loads((Path(__file__).parent / _CATALOGUE).read_text(encoding="utf-8"))
    gpus = {}
    for e in raw["gpus"]:
        link = e.get("interconnect")
        unified = e["memory"] * GiB if e.get("backend") == "metal" else None  # Metal wires part of it
        gpus[e["name"]] = GPU(
            e["name"], e["title"], bf16=_exact(e["bf16"], _T), fp16=_exact(e["fp16"], _T),
            fp8=_exact(e["fp8"], _T), int8=_exact(e.get("int8"), _T), bandwidth=_exact(e["bandwidth"], _G),
            memory=unified and metal_working_set(unified, raw["metal"]["working_set"]) or e["memory"] * GiB,
            backend=e.get("backend"), unified=unified, source=e["source"], url=e["url"], note=e.get("note", ""),
            link=link and link["name"], link_bandwidth=link and _exact(link["bandwidth"], _G) // 2,
            node=link["gpus"] if link else 1, reported=_reported(e.get("reported")),
            power_w=e.get("power_w"), power_limit_w=e.get("power_limit_w"), nvidia_smi=tuple(e.get("nvidia_smi", ())),
            sm=e.get("sm"), fp4=_exact(e.get("fp4"), _T))
    networks = {n["name"]: Network(n["name"], n["title"], _exact(n["bandwidth"], _G), n["source"], n["url"])
                for n in raw["networks"]}
    return gpus, networks


def __getattr__(name):  # GPUS, read on first use (symllm count starts without it)
    if name == "GPUS":
        return dict(_catalogue()[0])
    if name == "NETWORKS":
        return dict(_catalogue()[1])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def names() -> tuple[str, ...]:
    """The accelerator names ``--gpu`` takes, in catalogue order.

    >>> names()[:3]
    ('h100-sxm', 'h100-pcie', 'h100-nvl')
    """
    return tuple(_catalogue()[0])


def network(name: str) -> Network:
    """The network between nodes called ``name`` (``--network``).

    >>> network("ib-ndr").bandwidth
    50000000000
    """
    known = _catalogue()[1]
    return known[choice("network", name, known)]


def _key(name: str) -> str:
    """A GPU name as :func:`gpu` compares it: any case, without dashes, spaces and underscores.

    >>> _key("NVIDIA GeForce RTX 4090"), _key("H100_SXM")
    ('nvidiageforcertx4090', 'h100sxm')
    """
    return "".join(name.split()).casefold().replace("-", "").replace("_", "")


@lru_cache(maxsize=1)
def _spellings() -> dict[str, tuple[str, ...]]:
    """Each catalogue name and nvidia-smi name (:attr:`GPU.nvidia_smi`) as :func:`_key` writes it -> the cards
    it names (several: an ambiguous spelling, refused)."""
    out: dict[str, tuple[str, ...]] = {}
    for card in _catalogue()[0].values():
        for spelling in {_key(card.name), *map(_key, card.nvidia_smi)}:
            out[spelling] = (*out.get(spelling, ()), card.name)
    return out


def gpu(name, field: str = "gpu") -> GPU:
    """The :class:`GPU` called ``name`` (a GPU is returned as it is): a catalogue name or a name nvidia-smi prints
    (:attr:`GPU.nvidia_smi`), in any case, with or without dashes, spaces and underscores, where that names one card.
    Refused in one line, naming the nearest names: a name of none, or the start of several cards' names; the line
    names ``field``, the option the name was given in (``count --gpu``'s ``gpu``, ``plan --gpus``' ``gpus``).

    >>> gpu("l40s").memory // GiB, gpu("RTX-4090").name, gpu("NVIDIA A100-SXM4-80GB").name, gpu("Tesla T4").sm
    (48, 'rtx4090', 'a100-80gb', '7.5')
    >>> gpu("h100")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpu: 'h100' is ambiguous (one of: h100-sxm, h100-pcie, h100-nvl, h100-sxm-hbm2e)
    >>> gpu("rtx 4080")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpu: unknown 'rtx 4080' (known: rtx4090, rtx5090; all ...: see docs/hardware.md)
    >>> gpu("foo", field="gpus")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpus: unknown 'foo' (known: ...)
    """
    if isinstance(name, GPU):
        return name
    known, spellings = _catalogue()[0], _spellings()
    key = _key(name) if isinstance(name, str) else None
    cards = spellings.get(key, ()) if key else ()
    if len(cards) == 1:
        return known[cards[0]]
    starting = cards or (tuple(dict.fromkeys(c for k, v in spellings.items() if k.startswith(key) for c in v))
                         if key else ())
    if len(starting) > 1:
        ordered = sorted(starting, key=list(known).index)  # catalogue order
        raise SymllmError(with_list(f"{field}: {short(name, 20)} is ambiguous (one of: ", ordered, near=key,
                                    see="docs/hardware.md"))
    # the whole catalogue is listed in docs/hardware.md (--gpu's help names a few cards)
    raise SymllmError(with_list(f"{field}: unknown {short(name, 20)} (known: ", known, near=key or name,
                                see="docs/hardware.md"))


def custom(base: str | None = None, *, memory=None, bandwidth=None, flops=None) -> GPU:
    """An accelerator the catalogue lacks, or a catalogue one with some figures changed: ``memory`` in GiB,
    ``bandwidth`` in GB/s (10**9 bytes/s), ``flops`` dense TFLOPS for every matmul dtype it has (all three
    needed without ``base``). Decimal values are read exactly (``165.2`` is 165.2·10**12).

    >>> g = custom(memory=24, bandwidth=1008, flops=165.2)
    >>> g.name, g.bf16, g.memory == 24 * GiB, g.fp8
    ('custom', 165200000000000, True, None)
    >>> custom("rtx4090", memory=48).memory // GiB, custom("rtx4090", memory=48).bandwidth
    (48, 1008000000000)
    >>> custom("h100-sxm", memory=96).usable == 96 * GiB  # not the 79.18 GiB an 80 GB card reports
    True
    >>> custom(memory=24)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpu_bandwidth: a GPU outside the catalogue needs --gpu-memory, -bandwidth and -flops
    """
    given = (("gpu_memory", memory), ("gpu_bandwidth", bandwidth), ("gpu_flops", flops))
    for field_, value in given:  # a value given is judged before one missing is asked for (--gpu-memory -80)
        if value is not None:
            _given(field_, value, 1)
    if base is None:
        for field_, value in given:
            if value is None:
                raise SymllmError(f"{field_}: a GPU outside the catalogue needs --gpu-memory, -bandwidth and "
                                  "-flops")
        g = GPU("custom", "an accelerator given by --gpu-memory, --gpu-bandwidth, --gpu-flops", bf16=None,
                fp16=None, fp8=None, bandwidth=1, memory=1, source="the command line", url="")
    else:
        g = gpu(base)
    changes = {}
    if memory is not None:
        # the capacity given is what the engine sees: the driver's report was of the catalogue's capacity
        changes.update(memory=_given("gpu_memory", memory, GiB), reported=None)
    if bandwidth is not None:
        changes["bandwidth"] = _given("gpu_bandwidth", bandwidth, _G)
    if flops is not None:
        peak = _given("gpu_flops", flops, _T)
        changes.update({k: peak for k in ("bf16", "fp16") if base is None or getattr(g, k) is not None})
        changes.update({k: peak for k in ("fp8", "fp4") if base is not None and getattr(g, k) is not None})
    if base is not None and changes:
        changes["note"] = f"{g.note}; changed on the command line: {', '.join(sorted(set(changes) - {'reported'}))}"
    return dataclasses.replace(g, **changes)


def _given(field_: str, value, unit: int) -> int:
    """``value`` (a positive, finite number) times ``unit``, as an int; else one line naming ``field_``.

    >>> _given("gpu_memory", 80, 2**30) == 80 * 2**30
    True
    >>> _given("gpu_memory", float("inf"), 2**30)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpu_memory: expected a positive number, got inf
    """
    if not isinstance(value, Fraction):
        positive_number(field_, value)  # finite and above 0: inf and nan have no Fraction
    elif not value > 0:
        raise SymllmError(f"{field_}: expected a positive number, got {value}")
    return int(Fraction(str(value)) * unit)  # str: 165.2 is the decimal the user typed, not its binary double


def of(work) -> GPU:
    """The accelerator a :class:`~symllm.costs.workloads.Workload` names: ``gpu`` (a catalogue name) with
    ``gpu_memory``, ``gpu_bandwidth``, ``gpu_flops`` applied (:func:`custom`); None without any.

    >>> from symllm.costs.workloads import Workload
    >>> of(Workload(gpu="t4", dtype="fp16")).fp16, of(Workload()) is None
    (65000000000000, True)
    """
    extra = dict(memory=work.gpu_memory, bandwidth=work.gpu_bandwidth, flops=work.gpu_flops)
    if work.gpu is None and all(v is None for v in extra.values()):
        return None
    if all(v is None for v in extra.values()):
        return gpu(work.gpu)
    return custom(work.gpu, **extra)


def sm_needed(gpu: str, sm, needs) -> tuple[str, str]:
    """What a refusal of a format on the card ``gpu`` (compute capability ``sm``; None: none known) says of it, and
    the capabilities ``needs`` (in order) it would take, as one phrase each.

    >>> sm_needed("h100-sxm", "9.0", ["10.0", "12.0"]), sm_needed("mi300x", None, [10])
    (('is sm 9.0', '10.0 or 12.0'), ('is not a CUDA card', '10'))
    """
    card = f"is sm {sm}" if sm else "has no known sm" if gpu == "custom" else "is not a CUDA card"
    needs = [str(n) for n in needs]
    return card, ", ".join(needs[:-1]) + " or " + needs[-1] if len(needs) > 1 else needs[0]


def compute_dtype(dtype: str = "bf16", act_dtype: str | None = None) -> str:
    """The dtype the matmuls run in for weights in ``dtype`` (see the module docstring): the weights' own
    for bf16, fp16 and fp8; ``act_dtype`` (default bf16) for int8 and int4 (weight-only quantisation).

    >>> compute_dtype("fp8"), compute_dtype("int4"), compute_dtype("int8", "fp16")
    ('fp8', 'bf16', 'fp16')
    """
    if dtype in ("int8", "int4"):
        return act_dtype or "bf16"
    return dtype


def peak_flops(name, dtype: str = "bf16", act_dtype: str | None = None) -> int:
    """Peak dense FLOP/s of accelerator ``name`` for weights in ``dtype`` (:func:`compute_dtype` picks the
    matmuls' dtype).

    >>> peak_flops("h100-sxm"), peak_flops("h100-sxm", "fp8"), peak_flops("mi300x", "int8")
    (989400000000000, 1978900000000000, 1307400000000000)
    >>> peak_flops("h100-sxm", "fp32")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: dtype: roofline time needs bf16, fp16 or fp8 matmuls (tensor-core peaks), got 'fp32'
    """
    return gpu(name).peak(compute_dtype(dtype, act_dtype))


def values(name, dtype: str = "bf16", act_dtype: str | None = None) -> dict:
    """The hardware symbols bound: ``P`` (peak FLOP/s in the matmuls' dtype) and ``B_mem`` (bytes/s).

    >>> values("a100-40gb")
    {P: 312000000000000, B_mem: 1555000000000}
    """
    return {S.P: peak_flops(name, dtype, act_dtype), S.B_mem: gpu(name).bandwidth}


# --------------------------------------------------------------------------- closed forms


def parse_gpus(text: str) -> tuple[int, str]:
    """``N×GPU`` (or ``NxGPU``, ``N*GPU``) as ``(N, GPU)``.

    >>> parse_gpus("16xh100-sxm"), parse_gpus("8×a100-80gb")
    ((16, 'h100-sxm'), (8, 'a100-80gb'))
    >>> parse_gpus("h100")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpus: expected N×GPU, e.g. 16xh100-sxm, got 'h100'
    """
    for sep in ("×", "x", "*"):
        count, got, name = str(text).partition(sep)
        if got and count.strip().isdigit() and name.strip():
            n = int(count)
            if n < 1:
                break
            gpu(name.strip(), field="gpus")  # refused naming the option the card was given in
            return n, name.strip()
    raise SymllmError(f"gpus: expected N×GPU, e.g. 16xh100-sxm, got {text!r}")
