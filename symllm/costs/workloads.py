"""The workload: what a model is asked to do (batch, prompt, generated tokens, dtypes, training
options), as one frozen, validated :class:`Workload`.

Its fields and defaults are declared once, here; the command-line options of ``count``, ``derive``,
``report`` and ``sweep`` are generated from them (each field's ``metadata["option"]``), and every
command resolves the same defaults the same way (``context`` follows ``seq``; ``act_dtype`` follows ``dtype``,
bf16 for fp8/int8/int4 weights, and so does ``kv_dtype``: the cache holds activations, not weights).

>>> w = Workload(seq=512, dtype="int8")
>>> w.context, w.kv_dtype, w.act_dtype, w.weight_bytes
(512, 'bf16', 'bf16', 1)
>>> Workload(seq=-5)
Traceback (most recent call last):
...
symllm.errors.SymllmError: seq: expected a positive integer, got -5
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

from symllm.costs import accelerators
from symllm.costs.peft_targets import DEFAULT_LORA_TARGETS, lora_targets
from symllm.arch.layers import LAYOUT_ENGINES, layout_engine
from symllm.costs.collectives import engine_shape
from symllm.costs.engine_memory import FLASH_ATTN, rule as engine_rule
from symllm.costs import expert_layout, tp_overlap, weight_formats
from symllm.arch.dtypes import COMPUTE_DTYPES, DTYPES, OPTIMIZERS, dtype_bytes, named  # (the one table)
from symllm.errors import OptionWarning, SymllmError
from symllm.validate import boolean, choice, integer, positive_number, short, with_list, zero_stage

__all__ = ["Workload", "Option", "RECOMPUTE", "ATTENTION", "LOGITS", "STACKS", "options",
           "PHASES", "MEMORY_KINDS", "TRAINING_MEMORY", "with_stated", "symbol_codes", "tp_layout"]

#: the FLOP phases :func:`symllm.costs.phases.flops` knows (here, without SymPy: the command line checks them)
PHASES = ("forward", "prefill", "decode", "generation", "training")
#: the memory kinds :func:`symllm.costs.phases.memory` knows
MEMORY_KINDS = ("weights", "kv_cache", "inference", "training_states", "activations", "inference_peak",
                "training_peak", "state_cache")
#: the per-GPU memory kinds of a training step: in the training engine's layout (symllm.costs.phases.quantities),
#: the others (weights, the state cache, the inference peak) in the inference engine's
TRAINING_MEMORY = ("training_states", "activations", "training_peak")

#: the recomputation policies (Workload.recompute): every activation saved, each block keeping its input (full;
#: --recompute) or torchtitan's selective op checkpointing (--selective-ac op; symllm.costs.selective)
RECOMPUTE = ("none", "full", "op")
#: the attention-core conventions
ATTENTION = ("dense", "causal")
#: the positions whose logits an inference forward computes (Workload.logits): the last of each sequence, or all
LOGITS = ("last", "all")
#: how the routed experts lie over the tensor-parallel ranks (symllm.costs.parallel's docstring says why): each
#: expert's width split over them (the engines' default), or every expert whole on each rank
EXPERT_TP = ("split", "whole", "tp_x_dp")
#: the stacks whose memory is the component tree's own (symllm.costs.phases); ``fused`` is the default
COMPONENT_STACKS = ("fused", "eager")
#: the stacks symllm knows
STACKS = (*COMPONENT_STACKS, "hf-eager", "hf-sdpa")
#: names no longer taken, and what to say instead
_RENAMED = {"ideal": "renamed: 'fused' (SDPA, default) or 'eager' (as 'ideal' was)"}
_FLOAT_DTYPES = ("fp64", "fp32", "bf16", "fp16")


def check_stack(stack) -> None:
    """Refuse a stack symllm does not know, in one line (a renamed one says what it is called now).

    >>> check_stack("fused")
    >>> check_stack("ideal")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: stack: 'ideal' was renamed: 'fused' (SDPA, default) or 'eager' (as 'ideal' was)
    """
    if stack in _RENAMED:
        raise SymllmError(f"stack: {stack!r} was {_RENAMED[stack]}")
    choice("stack", stack, STACKS)


@dataclass(frozen=True)
class Option:
    """How a workload field appears on the command line."""

    #: one line of help (the default is appended)
    help: str
    #: the flag, default ``--field-name``
    flag: str | None = None
    #: a sweep may vary it (``--seq 512,1024``)
    axis: bool = False
    #: what ``symllm derive/report`` need not show (training-only options)
    training: bool = False
    #: what of the field shapes the closed forms (:meth:`Workload.shape`, the key of every cache of
    #: formulas): nothing (False), its value (True), or a function of it (a layout's ranks: above 1 or not)
    shapes: object = False
    #: how the command line reads a count of tokens with a suffix (:func:`symllm.validate.token_count`):
    #: ``"length"`` in binary (a context window: ``128k`` = 131,072), ``"tokens"`` in decimal (a token budget:
    #: ``15T`` = 15·10^12), ``"sequences"`` in decimal (a batch: ``1k`` = 1,000); None: a plain integer
    suffixes: str | None = None
    #: the value the flag sets, taking none (``--recompute``: ``"full"``); None: the flag takes a value
    const: str | None = None
    #: the field's other flags, ``(flag, the values it takes, help)`` each (``--selective-ac op``): each sets the
    #: field, and two that disagree are refused (symllm.cli.parser)
    also: tuple = ()

    def flags(self, name: str) -> tuple[str, ...]:
        """Every flag of the field ``name``: its own (``--field-name`` unless given), then :attr:`also`'s."""
        return (self.flag or "--" + name.replace("_", "-"), *(flag for flag, *_ in self.also))


def _above_one(ranks: int) -> bool:
    """What of a rank count shapes the per-GPU closed forms: whether it splits anything (they hold ``N_t``,
    ``N_p``, ``N_d``, ``N_e`` as symbols)."""
    return ranks > 1


def tp_layout(engine: str | None, declares: bool) -> str | None:
    """The tensor-parallel layout a workload's per-GPU figures are in, as its output names it (``tp_layout``):
    None where the workload names none (``declares``: :func:`symllm.costs.parallel.declares_split`: no part declares
    this engine's own split, nor any engine's split of a part the plan keeps whole), else ``engine`` where it lays
    parts out (:func:`symllm.arch.layers.layout_engine`), else "transformers" (transformers' tp plan: ``hf``, whose
    plan for the family it is, no engine, or one whose split of those parts symllm does not hold).

    >>> tp_layout("vllm", True), tp_layout(None, True), tp_layout("sglang", True), tp_layout("vllm", False)
    ('vllm', 'transformers', 'transformers', None)
    >>> tp_layout("hf", True)
    'transformers'
    """
    name = layout_engine(engine)
    return ("transformers" if name in (None, "hf") else name) if declares else None


def _opt(default, help_: str, **kw):
    return field(default=default, metadata={"option": Option(help_, **kw)})


_DTYPE_HELP = (f"weights dtype: {', '.join(DTYPES)} (or torch's names, as config.json's torch_dtype: bfloat16, "
               "float16, ...); int4 adds one fp16 scale per --group-size weights")


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A workload, checked on creation; ``None`` fields are derived (and derived again by
    :meth:`replace`).

    >>> Workload().replace(seq=4096).context
    4096
    """

    #: sequences in a batch, b
    batch: int = _opt(1, "sequences b (1k = 1000)", axis=True, suffixes="sequences")
    #: new tokens per sequence in a forward pass (the prompt), s
    seq: int = _opt(2048, "prompt length s in tokens (128k = 131072)", axis=True, suffixes="length")
    #: tokens generated per sequence, n
    gen: int = _opt(0, "tokens generated n per sequence (1k = 1024)", axis=True, suffixes="length")
    #: tokens already cached when one decode step runs, t (None: seq, the step after the prompt)
    context: int | None = _opt(None, "cached tokens t of a decode step (default: the prompt length; 32k = 32768)",
                               axis=True, suffixes="length")
    #: weights dtype (activations too when they are floating point)
    dtype: str = _opt("bf16", _DTYPE_HELP)
    #: KV-cache dtype (None: a config's kv_cache_scheme, else the activations' default)
    kv_dtype: str | None = _opt(None, "KV-cache dtype (default: the config's kv_cache_scheme, else the "
                                "activations' default: --dtype; bf16 for 8- and 4-bit weights)")
    #: activations dtype (None: dtype, or bf16 for fp8/int8/int4 weights)
    act_dtype: str | None = _opt(None, "activations dtype (default: --dtype; bf16 for 8- and 4-bit weights)")
    #: attention-core FLOPs: every score of the rectangle (dense) or only the unmasked pairs (causal)
    attention: str = _opt("dense", "attention-core FLOPs: every score (dense) or only the unmasked pairs (causal)",
                          shapes=True)
    #: the positions whose logits an inference forward computes: the last of each sequence (what serving
    #: engines and HF generate compute), or all of them (a plain forward's; training always computes all)
    logits: str = _opt("last", "logits an inference forward computes: last (one position a sequence, as vLLM, "
                       "SGLang, TensorRT-LLM and HF generate) or all (every position, a plain forward)", shapes=True)
    #: ZeRO stage 0-3 for the training states
    zero_stage: int = _opt(0, "ZeRO stage 0-3 of the training states", flag="--zero", training=True, shapes=True)
    #: data-parallel ranks the ZeRO stage shards over, N_d
    dp: int = _opt(1, "data-parallel ranks the ZeRO stage shards over", training=True, shapes=_above_one)
    #: tensor-parallel ranks, N_t (symllm.costs.parallel: the standard LLaMA plan, per-GPU numbers)
    tp: int = _opt(1, "tensor-parallel ranks (per-GPU params, memory and comm)", training=True, shapes=_above_one)
    #: pipeline-parallel stages of contiguous layers, N_p
    pp: int = _opt(1, "pipeline-parallel stages of contiguous layers", training=True, shapes=_above_one)
    #: expert-parallel ranks sharing each MoE layer's routed experts, N_e, carved out of the dp ranks (an inference
    #: engine's own layout where it declares one: symllm.costs.expert_layout)
    ep: int = _opt(1, "expert-parallel ranks dividing the routed experts (MoE; carved out of --dp; under --engine "
                   "vllm, --tp x --dp: its --enable-expert-parallel)", training=True,
                   shapes=_above_one)
    #: the routed experts under tensor parallelism (EXPERT_TP; symllm.costs.parallel): each expert's width split over
    #: the tp ranks (vLLM's and SGLang's FusedMoE, Megatron's default expert_tensor_parallel_size), or its weights over
    #: tp x dp ranks (vLLM's at dp > 1 without EP: symllm.costs.expert_layout), or whole on each
    expert_tp: str | None = _opt(None, "routed experts under --tp: split (each expert's gate/up/down over the "
                                 "tensor ranks, as vLLM, SGLang and Megatron do by default) or whole (each rank holds "
                                 "them whole: expert parallelism, Megatron's --expert-tensor-parallel-size 1) or "
                                 "tp_x_dp (their weights over --tp x --dp ranks: vLLM without --enable-expert-parallel "
                                 "at --dp above 1, its default there) (default split; under --engine hf the model "
                                 "family's plan: gpt-oss whole)",
                                 training=True, shapes=True)
    #: sequence parallelism: norms and residual activations split over the tensor-parallel ranks
    sp: bool = _opt(False, "sequence parallelism over the --tp ranks (norm/residual activations)", training=True,
                    shapes=True)
    #: the training engine's tensor-parallel collectives overlapped with GEMMs (symllm.costs.tp_overlap: Megatron-Core's
    #: tp_comm_overlap, torchtitan's async TP); None: the engine's default (its tp_overlap in efficiency.json)
    tp_overlap: bool | None = _opt(None, "overlap the all-gathers and reduce-scatters of --sp with their GEMMs as the "
                                   "training engine runs it (megatron: tp_comm_overlap, Transformer Engine's "
                                   "userbuffers; torchtitan: async TP); expected time only (default: the engine's, "
                                   "off in both)", training=True)
    #: the optimizer: its states (symllm.costs.zero) and its step's temporary (the HF stacks' training peak)
    optimizer: str = _opt("adamw", f"optimizer: {', '.join(OPTIMIZERS)} (adamw: torch's foreach AdamW; "
                          "states and training peak)", training=True, shapes=True)
    #: the recomputation policy (RECOMPUTE): none, full (each block keeps its input) or torchtitan's selective op
    #: checkpointing (symllm.costs.selective); True and False are read as full and none
    recompute: str = _opt("none", "full activation recomputation (training FLOPs, activations)", training=True,
                          shapes=True, const="full", also=(("--selective-ac", ("op",), "selective activation "
                          "checkpointing: op (torchtitan's: each block saves SDPA's and every other matmul's output; "
                          "training FLOPs, activations)"),))
    #: int4 weights per fp16 scale
    group_size: int = _opt(128, "int4 weights per fp16 group scale")
    #: rank r of every LoRA adapter (symllm.costs.finetune); None: no LoRA
    lora_rank: int | None = _opt(None, "LoRA rank r: adapters on --lora-targets (params.trainable, memory.lora_*; the "
                                 "training peak is then LoRA's; default: none, no LoRA)", training=True, shapes=True)
    #: the linears LoRA adapts (symllm or HF names), stored as symllm names; PEFT's Llama default
    lora_targets: str = _opt(DEFAULT_LORA_TARGETS, "linears LoRA adapts, by symllm or HF name (wq,wv or q_proj,v_proj; "
                             "an unknown name lists them)", training=True, shapes=True)
    #: QLoRA: the blocks' linear layers frozen in 4-bit NF4, bf16 adapters (symllm.costs.finetune)
    qlora: bool = _opt(False, "QLoRA: NF4 base linears (4.127 bits a weight), bf16 adapters; needs --lora-rank",
                       training=True, shapes=True)
    #: the accelerator of the roofline time (symllm.costs.accelerators); None: no time is computed
    gpu: str | None = _opt(None, "fit and roofline time on this accelerator, a name from symllm/costs/gpus.json "
                           "(h100-sxm, a100-80gb, l4, rtx4090, mi300x, ...; any case, dashes or not, or nvidia-smi's "
                           "name: RTX-4090; default: none, no fit or time)")
    #: an accelerator outside the catalogue, or a catalogue one changed: memory GiB, bandwidth GB/s, dense TFLOPS
    gpu_memory: float | None = _opt(None, "accelerator memory in GB (read as GiB): changes --gpu's, or with --gpu-"
                                    "bandwidth and --gpu-flops describes one outside the catalogue (default: --gpu's)")
    gpu_bandwidth: float | None = _opt(None, "accelerator memory bandwidth in GB/s (10^9 bytes/s; default: --gpu's)")
    gpu_flops: float | None = _opt(None, "accelerator peak dense TFLOPS of the matmuls' dtype (default: --gpu's)")
    #: the board power limit the accelerator runs at, W (symllm.costs.power.power_fraction); None: the card's own
    power_cap: float | None = _opt(None, "board power limit in W --gpu runs at: below its rated power its GEMMs and "
                                   "attention slow in the expected times (default: the card's own limit)")
    #: the network between nodes (symllm.costs.accelerators: its bandwidth per GPU)
    network: str = _opt("ib-ndr", "network between nodes: ib-ndr, ib-hdr, eth-400g, eth-100g (per GPU)")
    #: tokens D a training run sees (time and GPU-hours for them); None: none asked
    tokens: int | None = _opt(None, "training tokens D: time, GPU-hours (and cost with --price) for them "
                              "(decimal: 15T = 15e12; default: none asked)", training=True, suffixes="tokens")
    #: price of one GPU-hour (any currency), for the cost of D tokens
    price: float | None = _opt(None, "price of one GPU-hour, for the cost of --tokens (default: none, no cost)",
                               training=True)
    #: the software stack whose saved activations and inference peak memory reports (symllm.costs.stacks)
    stack: str = _opt("fused", f"memory of this stack: {', '.join(STACKS)} (fused: FlashAttention/SDPA, no s² "
                      "scores; eager: the s² scores kept; both all in --act-dtype)", shapes=True)
    #: a quantized weight format (symllm.costs.formats: GGUF file types, awq, gptq, nf4, fp8, ...); None: the one a
    #: config.json's quantization_config states (symllm.arch.quantization), else --dtype only
    weight_format: str | None = _opt(None, "weights in this format too: exact bytes and bits per weight "
                                     "(Q4_K_M, Q8_0, gguf:IQ4_XS, awq, gptq, gptq-g32, nf4, int8, fp8-block, w8a8, "
                                     "nvfp4, mxfp4, ...); overrides a config.json's quantization_config (default: "
                                     "that, else --dtype alone)")
    #: a KV-cache format (symllm.costs.kv_formats.KV_FORMATS: block scales included); None: --kv-dtype
    kv_format: str | None = _opt(None, "KV cache in this format: fp8, q8_0, q4_0, int8, int4, nvfp4, "
                                 "int8_per_token_head, ... (bytes per element with block scales, as vLLM's "
                                 "kv_cache_dtype and llama.cpp's --cache-type-k/v store it; int8/int4: lmdeploy's "
                                 "--quant-policy, a scale and zero a head; default: --kv-dtype)")
    #: the matmuls' dtype (None: the weights', bf16 under 8- and 4-bit weight-only formats): fp8 runs bf16
    #: weights' GEMMs in fp8 (TransformerEngine, torchao), against the fp8 peak
    compute_dtype: str | None = _opt(None, "matmul dtype: bf16, fp16 or fp8 (fp8 training of bf16 weights, as "
                                     "TransformerEngine and torchao run it; default: the weights')")
    #: the engine whose conventions the expected times use (symllm.costs.efficiency); None: the defaults
    engine: str | None = _opt(None, "engine of the expected times: vllm, sglang, trtllm, lmdeploy, llama.cpp, hf, "
                              "megatron, torchtitan, ... (default: vllm for inference, llama.cpp on an Apple GPU, "
                              "megatron for training); "
                              f"{', '.join(LAYOUT_ENGINES)} also lay out the parts they split otherwise than "
                              "the default (Llama's transformers tp plan; hf: its plan for the model's family)",
                              shapes=engine_shape)
    #: llama.cpp's micro-batch (-ub) and FlashAttention (-fa): its serving memory and its prompt's expected time,
    #: resolved once with the engine's defaults (symllm.costs.engine_memory.micro_batch); None: the engine's
    ubatch: int | None = _opt(None, "llama.cpp's -ub (n_ubatch): tokens a micro-batch, at most its n_batch "
                              "(--max-num-batched-tokens) and the context (default 512)")
    flash_attn: str | None = _opt(None, f"llama.cpp's -fa: {' or '.join(FLASH_ATTN)} (default off, as llama.cpp "
                                  "4227c9be; on for a q8_0 or q4_0 --kv-format, which it runs only so)")
    #: micro-batches of ``batch`` sequences each data-parallel rank runs through the pipeline per step
    micro_batches: int = _opt(1, "micro-batches of --batch sequences per training step (pipeline bubble, "
                              "tokens per step)", training=True)
    #: the pipeline schedule (symllm.costs.schedules.bubble)
    schedule: str = _opt("1f1b", "pipeline schedule: 1f1b or interleaved (--virtual-stages chunks a stage)",
                         training=True)
    #: model chunks a pipeline stage runs under the interleaved schedule (Megatron's virtual pipeline size)
    virtual_stages: int = _opt(2, "model chunks a pipeline stage runs under --schedule interleaved (Megatron's "
                               "virtual pipeline size)", training=True)
    #: the fields that were derived rather than given
    derived: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self):
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen)
        put("derived", frozenset(k for k in ("context", "kv_dtype", "act_dtype", "expert_tp")
                                 if getattr(self, k) is None))
        if self.expert_tp is None:  # split unless a family's plan says otherwise (with_stated)
            put("expert_tp", "split")
        for key in ("batch", "seq", "dp", "tp", "pp", "ep", "group_size"):
            integer(key, getattr(self, key))
        integer("gen", self.gen, low=0)
        put("context", self.seq if self.context is None else integer("context", self.context, low=0))
        choice("attention", self.attention, ATTENTION)
        choice("logits", self.logits, LOGITS)
        zero_stage(self.zero_stage)
        if type(self.recompute) is bool:  # the flag's old spelling: True is full recomputation
            put("recompute", "full" if self.recompute else "none")
        choice("recompute", self.recompute, RECOMPUTE)
        choice("optimizer", self.optimizer, OPTIMIZERS)
        choice("expert_tp", self.expert_tp, EXPERT_TP)
        boolean("sp", self.sp)
        if self.sp and self.tp == 1:
            raise SymllmError("sp: sequence parallelism splits over the tensor-parallel ranks; give --tp > 1")
        if self.tp_overlap is not None and boolean("tp_overlap", self.tp_overlap):
            tp_overlap.check(self.engine)
        put("expert_tp", expert_layout.check(self))  # the engine's expert-parallel layout, or its refusal
        for key in ("dtype", "kv_dtype", "act_dtype", "compute_dtype"):  # any spelling: bfloat16, BF16 are bf16
            if getattr(self, key) is not None or key == "dtype":
                put(key, named(key, getattr(self, key), COMPUTE_DTYPES if key == "compute_dtype" else DTYPES))
        # one default for the activations and the KV cache that holds them: the model's dtype, whatever the weights'
        # quantization (vLLM's CacheConfig.cache_dtype "auto": "will use model data type", vllm/config/cache.py at
        # 002f10e, read 2026-11-29; llama.cpp's f16 cache, TensorRT-LLM's and lmdeploy's unless a KV dtype is set)
        natural = self.dtype if self.dtype in _FLOAT_DTYPES else "bf16"
        put("kv_dtype", natural if self.kv_dtype is None else self.kv_dtype)
        put("act_dtype", natural if self.act_dtype is None else self.act_dtype)
        if self.lora_rank is not None:
            integer("lora_rank", self.lora_rank)
        put("lora_targets", lora_targets(self.lora_targets))
        boolean("qlora", self.qlora)
        if self.qlora and self.lora_rank is None:
            raise SymllmError("qlora: QLoRA trains LoRA adapters; give lora_rank (--lora-rank) too")
        integer("micro_batches", self.micro_batches)
        from symllm.costs import figures, schedules  # read on first use (no SymPy)
        choice("schedule", self.schedule, schedules.SCHEDULES)
        integer("virtual_stages", self.virtual_stages)
        if self.engine is not None:
            put("engine", figures.engine(self.engine)["name"])
        if self.power_cap is not None:
            positive_number("power_cap", self.power_cap)
            if not isinstance(self.gpu, str):
                raise SymllmError("power_cap: a power limit applies to a catalogue card; give --gpu")
            if self.gpu_flops is not None:
                raise SymllmError("power_cap: --gpu-flops gives the peak the card runs at; give one or the other")
        if isinstance(self.gpu, str):  # any spelling of one card (accelerators.gpu): its catalogue name
            put("gpu", accelerators.gpu(self.gpu).name)
        if self.weight_format is not None:  # before matmul_dtype below: weight_formats reads the one spelling
            from symllm.costs.formats import check_format
            put("weight_format", check_format(self.weight_format))  # any case, gguf: prefix: the one spelling
        accelerator = accelerators.of(self)  # a known name (or figures) with a peak for the matmuls' dtype
        if accelerator is not None:  # an Apple GPU's engines: llama.cpp by default, vLLM refused (no Metal backend)
            if self.engine is None and accelerator.backend is not None:  # derived: another card derives it again
                put("derived", self.derived | {"engine"})
            put("engine", figures.on_backend(self.engine, accelerator.backend, accelerator.name))
            accelerator.peak(self.matmul_dtype, "compute_dtype" if self.compute_dtype else "dtype")
            if self.power_cap is not None and accelerator.power_w is None:
                raise SymllmError(f"power_cap: no rated board power for {self.gpu} (gpus.json power_w)")
            if self.power_cap is not None and self.power_cap > accelerator.power_w:  # symllm.costs.power: no faster
                warnings.warn(f"power_cap: {self.power_cap:g} W is above {self.gpu}'s rated {accelerator.power_w} W "
                              "(it runs at its rated speed)", OptionWarning, stacklevel=2)
        accelerators.network(self.network)
        if self.tokens is not None:
            integer("tokens", self.tokens)
        if self.price is not None and (isinstance(self.price, bool) or not isinstance(self.price, (int, float))
                                       or not 0 <= self.price < math.inf):  # inf: a cost of no number
            raise SymllmError(f"price: expected a non-negative number, got {self.price!r}")
        check_stack(self.stack)
        if self.kv_format is not None:
            if isinstance(self.kv_format, str):  # any case: Q8_0 is llama.cpp's q8_0
                put("kv_format", self.kv_format.strip().casefold())
            from symllm.costs.kv_formats import check_kv_format
            check_kv_format(self.kv_format)
            if "kv_dtype" not in self.derived and self.kv_dtype != natural:
                raise SymllmError(f"kv_format: give --kv-format or --kv-dtype, not both (got {self.kv_format!r} "
                                  f"and {self.kv_dtype!r})")
        if self.ubatch is not None or self.flash_attn is not None:  # refused where no micro-batch runs them
            engine_rule(figures.engine_for(self.engine, "inference"), self.ubatch, self.flash_attn, self.kv_format)
        if self.stack not in COMPONENT_STACKS and (self.lora_rank is not None or self.tp > 1 or self.pp > 1
                                                   or self.ep > 1):
            # LoRA's and the per-GPU memory use the component tree's tensors: refused rather than mixed
            raise SymllmError(f"stack: {self.stack} is not modelled with LoRA, --tp, --pp or --ep (fused and "
                              "eager are)")

    @classmethod
    def of(cls, workload: Workload | None = None, **options) -> Workload:
        """A workload from options where ``None`` means "not given" (the command line's way), on top
        of ``workload``; an unknown option is an error naming it.

        >>> Workload.of(seq=None, batch=4).seq, Workload.of(Workload(seq=8), batch=2).seq
        (2048, 8)
        >>> Workload.of(sequence=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        symllm.errors.SymllmError: workload: unknown option 'sequence' (known: seq; all ...: see --help)
        """
        names = cls.names()
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise SymllmError(with_list(f"workload: unknown option {short(unknown[0], 20)} (known: ", names,
                                        near=unknown[0]))
        given = {k: v for k, v in options.items() if v is not None}
        if workload is not None and not given:
            return workload  # frozen: the same workload (a copy validated it all again)
        if workload is not None:
            return workload.replace(**given)
        if cls is not Workload or not all(type(v) in _PLAIN for v in given.values()):
            return cls(**given)
        # frozen and validated from these options alone: the same options give the same workload (the key holds
        # each value's type, so True, 1 and 1.0 stay apart; a bad value raises and is never kept)
        key = tuple((k, type(v), v) for k, v in given.items())
        hit = _OF.get(key)
        if hit is None:
            if len(_OF) >= 1024:
                _OF.clear()
            hit = _OF[key] = cls(**given)
        return hit

    def shape(self) -> tuple:
        """What of this workload shapes the closed forms, read off the fields marked ``shapes`` (and the float8
        all-gathers its engine, dtype and layout decide: :func:`symllm.costs.tp_overlap.fp8_gathers`): the key of
        the composed quantities in memory (:func:`symllm.costs.phases.quantities`) and of every cache entry
        of formulas on disk. Workloads of one shape share their closed forms; only their numbers differ.

        >>> Workload(seq=8, tp=2).shape() == Workload(seq=4096, tp=8).shape() != Workload().shape()
        True
        """
        kept = self.__dict__.get("_shape")
        if kept is not None:
            return kept
        out = []
        for name, mark in _marks():
            value = getattr(self, name)
            out.append((name, value if mark is True else mark(value)))
        # and what several fields decide together: the all-gathers the training engine runs in float8 (comm.tp's)
        out.append(("float8_gathers", tp_overlap.fp8_gathers(self) if self.sp else ()))  # (none without --sp)
        object.__setattr__(self, "_shape", tuple(out))  # frozen: computed once (each workload() asks twice)
        return self._shape

    @staticmethod
    def names() -> tuple[str, ...]:
        """The option names, in declaration order."""
        return _names()

    def replace(self, **changes) -> Workload:
        """A copy with some fields changed, validated again; what was derived is derived again."""
        again = {k: None for k in self.derived if k not in changes}
        return dataclasses.replace(self, **again, **changes)

    @property
    def weight_bytes(self):
        """Bytes per weight, exact (int, or Fraction for int4)."""
        return dtype_bytes(self.dtype, self.group_size)

    @property
    def matmul_dtype(self) -> str:
        """The dtype the matmuls run in: ``compute_dtype``, else :func:`symllm.costs.weight_formats.matmul_dtype`.

        >>> Workload(dtype="int4").matmul_dtype, Workload(compute_dtype="fp8").matmul_dtype
        ('bf16', 'fp8')
        """
        return self.compute_dtype or weight_formats.matmul_dtype(self)

    @property
    def tp_overlapped(self) -> bool:
        """Whether the training engine overlaps its tensor-parallel collectives with GEMMs here (``--tp-overlap``, or
        the engine's default, under ``--sp``: :func:`symllm.costs.tp_overlap.overlapping`).

        >>> Workload(tp=4, sp=True, engine="torchtitan", tp_overlap=True).tp_overlapped, Workload(tp=4).tp_overlapped
        (True, False)
        """
        return tp_overlap.overlapping(self) is not None

    @property
    def kv_bytes(self):
        """Bytes per KV-cache element: the ``kv_format``'s (block scales included) when one is given.

        >>> Workload(kv_format="q8_0").kv_bytes, Workload(kv_dtype="fp8").kv_bytes
        (Fraction(17, 16), 1)
        """
        if self.kv_format is not None:
            from symllm.costs.kv_formats import kv_bytes_per_element
            return kv_bytes_per_element(self.kv_format)
        return dtype_bytes(self.kv_dtype, self.group_size, field="kv_dtype")

    @property
    def activation_bytes(self):
        """Bytes per activation element."""
        return dtype_bytes(self.act_dtype, self.group_size, field="act_dtype")

    @property
    def logit_positions(self) -> int:
        """``s_o``: the positions per sequence whose logits an inference forward computes (``logits``).

        >>> Workload(seq=512).logit_positions, Workload(seq=512, logits="all").logit_positions
        (1, 512)
        """
        return 1 if self.logits == "last" else self.seq

    @property
    def causal(self) -> bool:
        """Whether attention-core FLOPs count only the unmasked pairs."""
        return self.attention == "causal"

    def values(self) -> dict:
        """Symbol -> number for every workload and bytes symbol (the symbols table's ``code`` names).

        >>> from symllm.arch import symbols as S
        >>> v = Workload(batch=2, seq=8, dtype="fp32").values()
        >>> v[S.b], v[S.s], v[S.t], v[S.beta_w], v[S.N_d]
        (2, 8, 8, 4, 1)
        """
        out = {symbol: getattr(self, code) for symbol, code in _symbols()}
        accelerator = accelerators.of(self)
        if accelerator is not None:  # P and B_mem (symllm.costs.accelerators)
            out.update(accelerators.values(accelerator, self.matmul_dtype))
        return out

    def to_dict(self) -> dict:
        """The resolved fields, JSON-ready (``group_size`` as ``int4_group_size``)."""
        out = {name: getattr(self, name) for name in _names()}
        out["int4_group_size"] = out.pop("group_size")
        return out


@lru_cache(maxsize=1)
def _symbols() -> tuple:
    """(symbol, the workload's attribute it binds) of every workload and bytes symbol (the symbols table's
    ``code`` names): what :meth:`Workload.values` reads."""
    from symllm.arch import symbols as S  # SymPy: a workload is made (``symllm count``) without it

    return tuple((info.symbol, info.code) for info in S.SYMBOLS.values() if info.kind in ("workload", "bytes"))


@lru_cache(maxsize=1)
def symbol_codes() -> tuple:
    """(symbol name, the workload's attribute it binds) of every workload and bytes symbol: what
    :func:`symllm.costs.numbered.named_values` reads (a count read back from stored kernels keeps this table with
    them)."""
    return tuple((symbol.name, code) for symbol, code in _symbols())


@lru_cache(maxsize=1)
def _names() -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(Workload) if f.init)


@lru_cache(maxsize=1)
def _marks() -> tuple:
    """(field, its ``shapes`` mark) of the fields that shape the closed forms (:meth:`Workload.shape`)."""
    return tuple((f.name, f.metadata["option"].shapes) for f in dataclasses.fields(Workload)
                 if "option" in f.metadata and f.metadata["option"].shapes is not False)


def options() -> dict[str, tuple[dataclasses.Field, Option]]:
    """Field name -> (the dataclass field, its :class:`Option`): what the CLI generates flags from."""
    return {f.name: (f, f.metadata["option"]) for f in dataclasses.fields(Workload) if f.init}


#: the value types :meth:`Workload.of` keeps a workload for (immutable, compared by value)
_PLAIN = frozenset((int, float, str, bool))
#: ((option, type, value), ...) -> the :class:`Workload` :meth:`Workload.of` made from those options alone
_OF: dict[tuple, Workload] = {}


def with_stated(work: Workload, config) -> Workload:
    """``work`` with what a config.json states for the workload where ``work`` does not say it: the weight format
    of its ``quantization_config`` (``ModelConfig.weight_format``, :mod:`symllm.arch.quantization`) unless a
    ``weight_format`` is given, the KV cache dtype it states (``ModelConfig.kv_dtype``) unless a
    ``kv_dtype`` or a ``kv_format`` is given, a KV format whose scales are a head's named with the model's head
    width (lmdeploy's ``int8`` -> ``int8/128``: :func:`symllm.costs.kv_formats.kv_format_for`), and under
    ``--engine hf`` the routed experts as transformers' plan for
    the family holds them (``experts`` in :attr:`symllm.arch.families.hf.Family.tp_plan`: gpt-oss's whole on every
    rank) unless ``expert_tp`` is given: what the workload names, for the layout keeps them so whatever it says
    (:func:`symllm.arch.specs.hf_plan`), and :mod:`symllm.costs.checks` refuses another given; a model without
    routed experts keeps ``split`` where an engine would spread them over ``tp × dp``
    (:func:`symllm.costs.expert_layout.stated`).

    >>> from symllm.arch.config import ModelConfig
    >>> cfg = ModelConfig(vocab_size=8, dim=8, n_layers=1, n_heads=1, hidden_dim=8, weight_format="awq", kv_dtype="fp8")
    >>> with_stated(Workload(), cfg).weight_format, with_stated(Workload(weight_format="nf4"), cfg).weight_format
    ('awq', 'nf4')
    >>> with_stated(Workload(), cfg).kv_dtype, with_stated(Workload(kv_dtype="bf16"), cfg).kv_dtype
    ('fp8', 'bf16')
    >>> oss = dataclasses.replace(cfg, tp_plan="gpt_oss")
    >>> with_stated(Workload(tp=2), oss).expert_tp, with_stated(Workload(tp=2, engine="hf"), oss).expert_tp
    ('split', 'whole')
    """
    stated = getattr(config, "weight_format", None)
    if stated is not None and work.weight_format is None:
        work = work.replace(weight_format=stated)
    from symllm.costs.kv_formats import kv_format_for, scale_width
    named = kv_format_for(work.kv_format, scale_width(config))  # lmdeploy's int8: a head's scales
    if named != work.kv_format:
        work = work.replace(kv_format=named)
    kv = getattr(config, "kv_dtype", None)  # a checkpoint's KV cache (compressed-tensors' kv_cache_scheme)
    if kv is not None and "kv_dtype" in work.derived and work.kv_format is None and work.kv_dtype != kv:
        work = work.replace(kv_dtype=kv)
    return expert_layout.stated(work, config)
