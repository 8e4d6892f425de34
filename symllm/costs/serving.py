"""Serving capacity as vLLM allocates it: a paged KV cache in what the GPU has left (every other engine's by its
own memory rule, declared in its efficiency.json entry: :mod:`symllm.costs.engine_memory`; the terms below are
each engine's, the rule only decides which are subtracted inside its fraction and which after it).

At start-up vLLM (``gpu_worker.determine_available_memory``; ``kv_cache_utils``) measures, per GPU,

    KV cache bytes = ⌊gpu_memory_utilization × GPU memory⌋ − weights − activation peak − non-torch memory

and cuts that into blocks of ``block_size`` tokens (16) of every layer's K and V:

    KV tokens = ⌊KV cache bytes / (block_size · bytes per token)⌋ · block_size,
    bytes per token = 2 · L · n_kv · d_h · β_kv per tensor-parallel rank (⌈n_kv / N_t⌉ heads: vLLM
    replicates KV heads when there are more ranks than heads; a latent attention's ``L · (r_kv + d_hr) · β_kv``
    is whole on every rank: vLLM's MLA layers cache one latent a token, ``num_kv_heads=1``, on each),

read from the laid-out model, not written again here: one token's ``memory_per_gpu`` ``kv_cache`` in the engine's
layout (each layer's own key/value heads; under ``--engine hf`` every head of an attention transformers' plan
keeps whole: gpt-oss's, Nemotron-H's),

and a hybrid model (Qwen3-Next, Qwen3.5: ``memory.state_cache``) holds, per sequence, its layers' recurrent and
convolution states beside its KV blocks: its concurrency is ``KV cache bytes / (⌈context / block_size⌉ ·
block_size · bytes per token + state bytes per sequence)`` (``state_bytes_per_sequence``; ``state_cache_bytes``
what the whole sequences of it hold; vLLM V1 gives a request one state page beside ``cdiv(max_model_len,
block_size)`` pages of its attention layers: ``MambaSpec`` and ``FullAttentionSpec.max_memory_usage_bytes``,
vllm/v1/kv_cache_interface.py, summed by ``get_max_concurrency_for_kv_cache_config``, vllm/v1/core/kv_cache_utils.py;
vllm-project/vllm 001cabc, read 2026-11-29; the state is read at its own size, not padded to the attention's page),
its most sequences (:func:`most_sequences`) those whose states it holds, and ``kv_tokens`` the blocks left once
they hold their states; its
convolution states in the engine's layout (``conv_state`` in efficiency.json: :func:`conv_cache`), a vLLM engine's
``conv_kernel - 1`` columns, one fewer than ``memory.state_cache``'s (transformers' cache:
:data:`symllm.arch.recurrent_sizes.CONV_STATE_DROPS`, :func:`conv_column_bytes`),

A model with DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5: an indexer in every layer) pages, per token and
layer, its indexer's key beside the latent: vLLM's ``Indexer`` (vllm/model_executor/models/deepseek_v2.py) caches
it in a ``DeepseekV32IndexerCache`` of ``head_dim + head_dim // quant_block_size * 4`` bytes (``torch.uint8``,
``quant_block_size`` 128: the key in FP8 and one fp32 scale a block of 128, "fp8 naive cache"), whose
``get_kv_cache_spec`` is an ``MLAAttentionSpec`` with ``num_kv_heads=1`` (one key a token, on every tensor rank),
paged in the same blocks of ``block_size`` tokens as the KV cache: 132 bytes a token and layer for
``index_head_dim`` 128, whatever the KV cache's dtype (``indexer_bytes_per_token``; ``kv_bytes_per_token`` then
counts both, the latent's and the indexer's),

and logs "GPU KV cache size: N tokens" and "Maximum concurrency for C tokens per request: N / C x".

A replica laid out over ``pp`` pipeline stages and ``ep`` expert-parallel ranks (vLLM's
``--pipeline-parallel-size``, ``--enable-expert-parallel``; ``dp`` replicas each hold their own cache) is sized by the
same rule on each GPU, every term one GPU's in that layout: the weights of its stage and of its share of the experts,
the activation peak of its stage's profile, and a token's keys and values in its stage's layers only (``⌈L/N_p⌉`` on
the first), as ``count``'s per-GPU figures read them (the largest stage's: :func:`symllm.costs.parallel.stages`).
vLLM V1 then gives every rank the blocks of the rank with the fewest (``get_kv_cache_configs``,
vllm/v1/core/kv_cache_utils.py: "Change the num_blocks of each rank to the smallest among all ranks"), and a token
spans one block of every stage: where the stages split the layers evenly and the head is untied (the last stage
holds the most weights and the logits) that is the last stage's count exactly; otherwise each term is the largest
stage's, an estimate. NCCL's communicators are counted by group (:func:`nccl_bytes`: measured at ``tp``
above 1; a pipeline's, data-parallel or expert group's by the same rule, not measured). Under vLLM's expert
parallelism (``--enable-expert-parallel``: :mod:`symllm.costs.expert_layout`) the ``ep`` ranks are ``tp × dp``, each
holding its experts whole, the attention split over ``tp``. A model whose cache is read from its config's every
layer below (a hybrid's recurrent states, an indexer's keys, DeepSeek-V4's groups) is refused over ``pp`` stages.

DeepSeek-V4 is laid out as released vLLM's own allocator lays it out: its window keys, compressed entries, indexer
keys and compressor states in pages grouped as vLLM 0.33.0 groups them (or 0.20.0:
:func:`symllm.costs.dsv4_cache.deepseek_v4_blocks`; docs/serving.md, "DeepSeek-V4"), in FlashMLA's fp8_ds_mla
layout (576-byte-aligned pages; with fp8 or, as vLLM's ``auto``, no KV cache dtype given) or, with ``kv_dtype``
bf16 on an SM10x card, FlashInfer's bf16 rows (512-byte-aligned pages: :func:`symllm.costs.dsv4_cache.layout`).

Conventions (each an estimate of what vLLM measures, not derives):

* GPU memory: what the driver reports to torch where it was measured (:attr:`symllm.costs.accelerators.GPU.usable`:
  an H100 80GB 79.18 GiB, an H200 139.80 GiB, an RTX 3090 23.58 GiB), else the accelerator's capacity (the
  vendor's "GB" read as GiB; ``--gpu-memory`` sets it);
* weights: the workload's weights per GPU (``--dtype`` or ``--weight-format``, :mod:`symllm.costs.formats`);
* activation peak: what the profile run holds above weights and KV cache: one prefill of
  ``max_num_batched_tokens`` tokens (vLLM V1's profile run; where none is given the engine's default for the card:
  8192 on an H100, 2048 on an A100 or a card under 70 GiB, :func:`default_max_num_batched_tokens`) in the
  fused stack's working set (:func:`symllm.costs.phases.workload`'s ``inference_peak`` at batch 1 with the
  engine's ``profile_logits``, whatever the workload's ``--logits``: vLLM's forward computes no logits, its
  V0 engine each dummy prompt's last position's; every position's for an engine that names none; an engine's
  own ``working_set``, :func:`symllm.costs.engine_memory.working_set`: llama.cpp's compute buffer, one
  micro-batch of ``min(context, 512)`` tokens in fp32, or its scores against a sequence's cache where larger;
  gpt-fast's, its prefill of the whole prompt; ``profile_tokens`` the forward's tokens), or, where
  it is larger, what vLLM V1's dummy sampler run after the forward holds (the engine's
  ``profile_sampler_bytes``, efficiency.json; :func:`sampler_peak_bytes`): ``max_num_seqs`` rows (``vllm
  serve``'s: 1024 on a card of 70 GiB or more that is not an A100, else 256: :func:`default_max_num_seqs`)
  of the whole vocabulary, 38 bytes a logit since vLLM 0.8 (the bf16 logits, their fp32 copy, and PyTorch's
  sort for top-k/top-p: values, int64 indices, its reverse indices and cub's alternate buffers), 2 for V1
  before 0.8 (``vllm-v1-0.7``: the logits only), beside the forward's hidden states. A model
  with routed experts adds, where the engine's ``moe_workspace`` is set (vLLM's, V0 and V1: the Triton
  fused-MoE kernel), the workspace one MoE layer's call allocates on the profile's tokens
  (:func:`moe_workspace_bytes`) to the forward's working set without the logits (the larger of that and the
  peak above: the workspace is freed before the logits are computed);
* non-torch memory (the CUDA context, NCCL buffers, allocator fragmentation): ``non_torch`` bytes, the
  engine's (``--engine``; vLLM's 0.35 GiB, from a vLLM log: :mod:`symllm.costs.efficiency`) and, in groups of
  more than one rank, its NCCL communicators' (vLLM 0.33.0 at ``--tp`` above 1: 2 of 688 MiB, 3 for a mixture of
  experts, whose expert group has a communicator too: :func:`nccl_bytes`)
  unless given (vLLM logs it as ``non_torch_memory``; CUDA graphs are captured after the KV cache is allocated
  and are not subtracted).

>>> r = capacity("llama3.1-8b", gpu="h100-sxm", seq=131072)
>>> r["kv_bytes_per_token"], r["block_size"], r["kv_tokens"] % 16
(131072, 16, 0)
"""
from __future__ import annotations

from fractions import Fraction
from math import ceil, floor

from symllm.arch.catalogue import resolve
from symllm.arch.dtypes import BYTES, FP32
from symllm.costs.dsv4_cache import DSV4_BLOCK, INDEXER_QUANT_BLOCK, deepseek_v4_blocks
from symllm.arch.recurrent_sizes import (CONV_STATE_DROPS, deltanet_conv_channels, mamba_conv_channels,
                                         ssm_state_dtype)
from symllm.costs.batching import default_max_num_batched_tokens, default_max_num_seqs
from symllm.costs.dsv4_cache import check as dsv4_check, indexer as indexer_for, layout as layout_for
from symllm.costs.engine_memory import (context_tokens, fraction as memory_fraction, kv_bytes, rule as rule_of,
                                       warmup_tokens, working_set)
from symllm.costs.ggml import scores_moment
from symllm.errors import SymllmError
from symllm.validate import choice, integer

__all__ = ["DEFAULTS", "capacity", "check", "check_options", "indexer_bytes_per_token", "model_config",
           "moe_workspace_bytes", "most_sequences", "nccl_bytes", "sampler_peak_bytes"]

#: the options' defaults, each None: the engine's. ``gpu_memory_utilization``: its memory fraction
#: (:func:`symllm.costs.engine_memory.fraction`: vLLM's 0.9, SGLang's by card); ``max_num_batched_tokens``: its own
#: for the card and the context (:func:`default_max_num_batched_tokens`); ``block_size``: its rule's (vLLM's 16, where
#: a rule states none); ``non_torch``: its own (:func:`symllm.costs.figures.engine`, with its NCCL communicators in
#: groups of more than one rank: :func:`nccl_bytes`); ``max_num_seqs``: its own for the card
#: (:func:`default_max_num_seqs`)
DEFAULTS = {"gpu_memory_utilization": None, "max_num_batched_tokens": None, "block_size": None,
            "non_torch": None, "max_num_seqs": None}

#: the tokens a KV block holds where the engine's rule states none (vLLM's ``CacheConfig`` default on CUDA)
BLOCK_SIZE = 16

#: the :class:`~symllm.arch.config.ModelConfig` a serving figure reads (a Spec's, a ModelConfig itself, a preset's by
#: name, a JSON path's or a config dict's): the one reader, :func:`symllm.arch.catalogue.resolve` (no SymPy), kept
#: under this module's public name
model_config = resolve


def sampler_peak_bytes(config, rows: int, tokens: int, per_entry: int, act_bytes: int = 2) -> int:
    """What vLLM V1's dummy sampler run (``GPUModelRunner._dummy_sampler_run``, after the profile's forward of
    ``tokens`` tokens) holds at its peak on a rank: ``per_entry`` bytes for each of the ``rows`` x vocabulary
    logits (the engine's ``profile_sampler_bytes``, efficiency.json: 38 for the PyTorch top-k/top-p path, the
    bf16 logits, their fp32 copy and ``sort``'s values, indices and scratch), beside the forward's output hidden
    states (``tokens`` rows), the rows picked from them and their random stand-in (``rows`` each), in the
    activations' dtype.

    >>> from symllm.arch.config import ModelConfig
    >>> c = ModelConfig(name="x", dim=64, n_layers=2, n_heads=4, n_kv_heads=4, vocab_size=100, hidden_dim=64)
    >>> sampler_peak_bytes(c, rows=8, tokens=32, per_entry=38) == 8 * 100 * 38 + (32 + 2 * 8) * 64 * 2
    True
    """
    cfg = resolve(config)
    return rows * cfg.vocab_size * per_entry + (tokens + 2 * rows) * cfg.dim * act_bytes


def nccl_bytes(conventions: dict, tp: int, pp: int = 1, dp: int = 1, moe: bool = False) -> int:
    """The device memory the engine's NCCL communicators hold on a rank of a replica of ``tp`` tensor ranks, ``pp``
    stages and ``dp`` replicas: ``nccl_communicator_mib`` MiB for each communicator its ``nccl_groups``
    (efficiency.json, ``engines``) give a group of more than one rank, as vLLM 0.33.0 builds them
    (``initialize_model_parallel``: a PyNccl communicator each group of more than one rank, torch's NCCL group for
    the tensor ranks' all-gather of the logits beside it): the tensor group of ``tp`` ranks, the pipeline group of
    ``pp``; for a ``moe`` model the data-parallel group of ``dp`` and the expert group of ``tp × dp`` ranks, its
    replicas one engine with or without expert parallelism (``DPEngineCoreProc``; ``dp`` 1 for replicas served
    apart); a dense model's replicas are engines of their own (``reconfigure_for_independent_dp_rank``) and it has
    no expert group ("Don't create EP group for dense models").

    >>> vllm = {"nccl_groups": {"tp": 2, "pp": 1, "dp": 1, "ep": 1}, "nccl_communicator_mib": "688"}
    >>> [nccl_bytes(vllm, *layout) // (688 * 2 ** 20) for layout in ((1,), (4,), (4, 2), (1, 2), (2, 1, 4))]
    [0, 2, 3, 1, 2]
    >>> [nccl_bytes(vllm, *layout, moe=True) // (688 * 2 ** 20) for layout in ((1,), (4,), (2, 1, 4), (1, 1, 4))]
    [0, 3, 4, 2]
    """
    engine_dp = dp if moe else 1
    sizes = {"tp": tp, "pp": pp, "dp": engine_dp, "ep": tp * engine_dp if moe else 1}
    count = sum(n for group, n in conventions.get("nccl_groups", {}).items() if sizes[group] > 1)
    return int(count * Fraction(conventions.get("nccl_communicator_mib", "0")) * 2 ** 20)


def indexer_bytes_per_token(config) -> int:
    """The bytes vLLM pages per token for a sparse-attention model's indexer keys (module docstring): in each
    layer with an indexer ``index_head_dim`` FP8 values and ``index_head_dim // 128`` fp32 scales; 0 without one.

    >>> from symllm.arch.config import ModelConfig
    >>> indexer_bytes_per_token(ModelConfig(name="x", dim=64, n_layers=2, n_heads=4, n_kv_heads=4, vocab_size=8,
    ...                                     hidden_dim=64))
    0
    """
    cfg = resolve(config)
    if getattr(cfg, "index_topk", None) is None:
        return 0
    # the k_cache is built by vLLM's Indexer.__init__: counted in the layers that have an indexer (GLM-5's
    # shared layers, as transformers builds them, have none; vLLM's own GLM-5 code is not checked here)
    indexed = cfg.count_layers(lambda kind: not kind.shared_topk)
    return indexed * (cfg.index_head_dim + cfg.index_head_dim // INDEXER_QUANT_BLOCK * 4)


def conv_cache(engine) -> str:
    """Whose convolution-state layout ``engine`` (an engine's conventions, :func:`symllm.costs.figures.engine`, or
    its name) allocates a hybrid model's sequences in (:data:`symllm.arch.recurrent_sizes.CONV_STATE_DROPS`): the
    engine's ``conv_state`` in efficiency.json, with its source (vLLM's engines their own, ``K_c - 1`` columns);
    where it states none, transformers' ``K_c``, as ``memory.state_cache`` counts them.

    >>> conv_cache("vllm"), conv_cache("vllm-v0"), conv_cache("sglang")
    ('vllm', 'vllm', 'transformers')
    """
    from symllm.costs.figures import engine as conventions
    table = conventions(engine) if isinstance(engine, str) else engine
    return choice("conv_state", table.get("conv_state", "transformers"), tuple(CONV_STATE_DROPS))


def _recurrent_layers(config, tp: int):
    """The resolved config, its Mamba-2 and Gated DeltaNet layer counts, and tensor rank 0's share of ``n`` heads
    or groups (``⌈n/tp⌉``: vLLM's shards)."""
    cfg = resolve(config)
    mamba = cfg.count_layers(lambda kind: kind.mixer == "mamba")
    linear = cfg.count_layers(lambda kind: kind.mixer == "linear_attention")
    return cfg, mamba, linear, lambda n: -(-n // tp)


def ssm_state_elements(config, tp: int = 1) -> int:
    """The elements of every layer's recurrent state for one sequence on tensor rank 0: a Gated DeltaNet's
    ``⌈n_gv/tp⌉·d_gk·d_gv``, a Mamba-2 mixer's ``⌈n_m/tp⌉·d_m·d_s`` (vLLM's shapes,
    ``MambaStateShapeCalculator``); 0 without such a layer.

    >>> ssm_state_elements("qwen3-next-80b-a3b"), ssm_state_elements("qwen3-next-80b-a3b", tp=4)
    (18874368, 4718592)
    """
    cfg, mamba, linear, split = _recurrent_layers(config, tp)
    return ((mamba * split(cfg.mamba_heads) * cfg.mamba_head_dim * cfg.ssm_state if mamba else 0)
            + (linear * split(cfg.linear_value_heads) * cfg.linear_key_dim * cfg.linear_value_dim if linear else 0))


def conv_column_bytes(config, tp: int = 1, act_bytes=2) -> int:
    """The bytes of one column of every layer's convolution state (a Gated DeltaNet's, a Mamba-2 mixer's) for one
    sequence on tensor rank 0: each layer's convolution channels, with rank 0's ``⌈heads/tp⌉`` and ``⌈groups/tp⌉``
    (symllm.costs.parallel's split: vLLM's shards, one Mamba group replicated where there is one), in the
    activations' ``act_bytes``; 0 without such a layer.

    >>> conv_column_bytes("qwen3-next-80b-a3b"), conv_column_bytes("qwen3-next-80b-a3b", tp=4)
    (589824, 147456)
    """
    cfg, mamba, linear, split = _recurrent_layers(config, tp)
    width = 0
    if mamba:
        width += mamba * mamba_conv_channels(split(cfg.mamba_heads), cfg.mamba_head_dim, split(cfg.mamba_groups),
                                             cfg.ssm_state)
    if linear:
        width += linear * deltanet_conv_channels(split(cfg.linear_key_heads), cfg.linear_key_dim,
                                                 split(cfg.linear_value_heads), cfg.linear_value_dim)
    return width * act_bytes


#: vLLM's fused_moe chunk (``VLLM_FUSED_MOE_CHUNK_SIZE``: vllm/envs.py reads "32768" at run time)
FUSED_MOE_CHUNK = 32768


def moe_workspace_bytes(config, tokens: int, tp: int = 1, act_bytes: int = 2) -> int:
    """The workspace vLLM's Triton fused-MoE kernel (``fused_experts_impl``, vllm/model_executor/layers/fused_moe/
    fused_moe.py, since vllm PR #13625) allocates for one MoE layer's call on ``tokens`` tokens, per tensor rank:
    ``cache13`` of ``M · k · max(N, K)`` and ``intermediate_cache2`` of ``M · k · N / 2`` elements in the hidden
    states' dtype, ``M = min(tokens, 32768)`` (its chunk), ``k`` the experts per token, ``N = w13``'s rows on a rank
    (``2 · I / tp`` for a gated expert of width ``I``: the experts split over ``--tp``), ``K = w2``'s rows (the
    model width, or the latent width of a latent MoE); 0 without routed experts.

    >>> from symllm.arch.config import ModelConfig
    >>> moe_workspace_bytes(ModelConfig(name="x", dim=64, n_layers=2, n_heads=4, n_kv_heads=4, vocab_size=8,
    ...                                 hidden_dim=64), 8192)
    0
    """
    cfg = resolve(config)
    if not getattr(cfg, "n_experts", None):
        return 0
    m, k = min(tokens, FUSED_MOE_CHUNK), cfg.experts_per_token
    n = 2 * ceil(cfg.hidden_dim / tp)  # w13: gate and up of the rank's share of each expert
    width = cfg.moe_latent_size or cfg.dim
    return (m * k * max(n, width) + m * k * n // 2) * act_bytes


def _seqs(given, gpu, engine: str, kv_tokens, cfg) -> dict:
    """``{"max_num_seqs": n}``: the most sequences the engine runs at once, ``given`` (``--max-num-seqs``) or
    its default (:func:`default_max_num_seqs`, SGLang's from the cache's tokens and the model's context);
    empty for an engine that declares none."""
    seqs = given if given is not None else default_max_num_seqs(gpu, engine, kv_tokens, cfg.max_positions)
    return {} if seqs is None else {"max_num_seqs": seqs}


def _fraction(field: str, value, low=0, high=None) -> Fraction:
    try:
        out = Fraction(str(value)) if not isinstance(value, Fraction) else value
    except (ValueError, ZeroDivisionError):
        raise SymllmError(f"{field}: expected a number, got {value!r}") from None
    if isinstance(value, bool) or not out > low or (high is not None and out > high):
        raise SymllmError(f"{field}: expected a number above {low}" + (f" and at most {high}" if high else "")
                          + f", got {value!r}")
    return out


def dsv4_layout(config, work, gpu) -> str | None:
    """The layout vLLM 0.33.0 caches a DeepSeek-V4 model in under ``work`` on ``gpu``
    (:func:`symllm.costs.dsv4_cache.layout`: its KV cache dtype, or vLLM's ``auto`` where none is given); None for
    any other model."""
    if getattr(resolve(config), "hc_mult", None) is None:
        return None
    given = work.kv_format is not None or "kv_dtype" not in work.derived
    return layout_for(work.kv_format or work.kv_dtype, given, gpu.name)


def check(config, work=None, *, gpu_memory_utilization=DEFAULTS["gpu_memory_utilization"],
          max_num_batched_tokens: int | None = DEFAULTS["max_num_batched_tokens"],
          block_size: int | None = DEFAULTS["block_size"], non_torch=DEFAULTS["non_torch"], kv_cache_bytes=None,
          max_num_seqs=DEFAULTS["max_num_seqs"], indexer_kv_dtype=None, **options):
    """Every refusal of :func:`capacity` that depends on the options and the config alone, before any number is
    computed (the command line calls it before the workload): no GPU, pipeline stages of a model whose cache is read
    from its config's every layer (module docstring), a KV cache vLLM does not serve DeepSeek-V4 in, widths its
    kernels do not take (:func:`symllm.costs.dsv4_cache.check`), the engine, and each vLLM option's value
    (``indexer_kv_dtype``: vLLM 0.33.0's DeepSeek-V4 indexer cache, "fp8" or "mxfp4",
    :func:`symllm.costs.dsv4_cache.indexer`; None: vLLM's default), then what count refuses of the workload on this
    model and card (:func:`symllm.costs.checks.check_config`, from the config's numbers, no SymPy: a KV cache the
    engine cannot hold on the card, ranks that split a head), so that a call from Python refuses as the command does.
    Every layout is served (one replica of ``tp`` tensor ranks and ``pp`` stages, its experts over ``ep`` ranks:
    module docstring). Returns the workload, the GPU
    and the resolved config.

    >>> check("llama3.1-8b", pp=2)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: serve: give the GPU (--gpu NAME, or --gpu-memory, -bandwidth and -flops)
    """
    return _check(config, work, gpu_memory_utilization=gpu_memory_utilization,
                  max_num_batched_tokens=max_num_batched_tokens, block_size=block_size, non_torch=non_torch,
                  kv_cache_bytes=kv_cache_bytes, max_num_seqs=max_num_seqs, indexer_kv_dtype=indexer_kv_dtype,
                  **options)[:3]


def _check(config, work=None, *, gpu_memory_utilization, max_num_batched_tokens, block_size, non_torch,
           kv_cache_bytes, max_num_seqs, indexer_kv_dtype, **options) -> tuple:
    """:func:`check`, returning ``(work, gpu, cfg, kv_rule)``: the engine's KV-memory rule :func:`check_options`
    resolved too (llama.cpp's micro-batch options in it), which :func:`capacity` reads rather than resolving again."""
    from symllm.costs import accelerators
    from symllm.costs.workloads import Workload
    work = Workload.of(work, **options)
    gpu = accelerators.of(work)
    if gpu is None:
        raise SymllmError("serve: give the GPU (--gpu NAME, or --gpu-memory, -bandwidth and -flops)")
    cfg = resolve(config)
    whole = _whole_model_cache(cfg)
    if work.pp > 1 and whole:
        raise SymllmError(f"pp: {work.pp}; serving reads {whole} of every layer, not a stage's")
    kv_rule = check_options(cfg, work, gpu, gpu_memory_utilization=gpu_memory_utilization,
                            max_num_batched_tokens=max_num_batched_tokens, block_size=block_size, non_torch=non_torch,
                            kv_cache_bytes=kv_cache_bytes, max_num_seqs=max_num_seqs, indexer_kv_dtype=indexer_kv_dtype)
    if getattr(cfg, "hc_mult", None) is not None:  # DeepSeek-V4: vLLM's own layout (deepseek_v4_blocks)
        if kv_rule["sized_by"] == "context":
            raise SymllmError(f"engine: DeepSeek-V4's caches are laid out as vLLM's pool; {kv_rule['name']} sizes its "
                              "cache by the context (not modelled)")
        dsv4_check(cfg, layout=dsv4_layout(cfg, work, gpu), indexer=indexer_for(indexer_kv_dtype, gpu.name))
    from symllm.costs.checks import check_config  # count's refusals of the workload, from the config's numbers
    from symllm.costs.workloads import with_stated
    check_config(cfg, with_stated(work, cfg))
    return work, gpu, cfg, kv_rule


def _whole_model_cache(cfg) -> str | None:
    """What of ``cfg``'s cache :func:`capacity` reads from the config's every layer rather than from the laid-out
    model (so not a pipeline stage's share): DeepSeek-V4's groups, an indexer's keys, a hybrid's states; None."""
    if getattr(cfg, "hc_mult", None) is not None:
        return "DeepSeek-V4's caches"
    if getattr(cfg, "index_topk", None) is not None:
        return "the indexer keys"
    if cfg.count_layers(lambda kind: kind.mixer in ("mamba", "linear_attention")):
        return "the recurrent states"
    return None


def check_options(cfg, work, gpu, *, gpu_memory_utilization=None, max_num_batched_tokens=None, block_size=None,
                  non_torch=None, kv_cache_bytes=None, max_num_seqs=None, indexer_kv_dtype=None) -> dict:
    """The refusals of :func:`check` that read the engine and the options alone, not the layout: a training engine
    (no KV-cache memory rule: :func:`symllm.costs.engine_memory.rule`), ``indexer_kv_dtype`` on a model without
    DeepSeek-V4's indexer, each option's value; every door that serves calls it (``count --serve`` through
    :func:`check`, ``plan``'s serving rows directly). ``cfg`` a resolved config, ``work`` a Workload, ``gpu`` an
    :class:`symllm.costs.accelerators.GPU`. Returns the engine's KV-memory rule.

    >>> from symllm.costs import accelerators
    >>> from symllm.costs.workloads import Workload
    >>> check_options(resolve("llama3.1-8b"), Workload(engine="megatron"), accelerators.gpu("h100-sxm"))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: engine: megatron trains only; serving takes an inference engine (docs/serving.md)
    """
    from symllm.costs.figures import engine
    # its memory rule (engine_memory), refused where it has none; llama.cpp's micro-batch options (the workload's
    # ubatch and flash_attn) resolved in it
    kv_rule = rule_of(engine(work.engine, "inference"), work.ubatch, work.flash_attn, work.kv_format)
    if indexer_kv_dtype is not None and getattr(cfg, "hc_mult", None) is None:
        raise SymllmError("indexer_kv_dtype: applies to DeepSeek-V4's indexer cache (vLLM 0.33.0) only")
    memory_fraction(kv_rule, gpu_memory_utilization, gpu, work.tp)
    integer("block_size", block_size, optional=True)
    integer("max_num_batched_tokens", max_num_batched_tokens, optional=True)
    integer("max_num_seqs", max_num_seqs, optional=True)
    if non_torch:
        _fraction("non_torch", non_torch, -1)
    if kv_cache_bytes is not None:
        _fraction("kv_cache_bytes", kv_cache_bytes)
    return kv_rule


def capacity(config, work=None, *, gpu_memory_utilization=DEFAULTS["gpu_memory_utilization"],
             max_num_batched_tokens: int | None = DEFAULTS["max_num_batched_tokens"],
             block_size: int | None = DEFAULTS["block_size"],
             non_torch=DEFAULTS["non_torch"], kv_cache_bytes=None, evaluate=None,
             max_num_seqs=DEFAULTS["max_num_seqs"], indexer_kv_dtype=None, **options) -> dict:
    """The engine's KV cache for ``config`` under a workload (``gpu`` required; ``tp``, ``dtype``,
    ``kv_dtype`` / ``kv_format``, ``weight_format``, ``engine``: vLLM's paged cache by default; the context per
    request, vLLM's ``max_model_len``, is ``seq + gen``): ``{"memory", "usable", "weights", "activation_peak",
    "non_torch", "kv_cache_bytes", "kv_bytes_per_token", "block_size", "blocks", "kv_tokens", "context",
    "max_concurrency" (a Fraction), "fits", "sampler_rows", "sampler_peak", "nccl", "max_num_seqs", "engine",
    "kv_rule", "kv_sized_by"}``, bytes per GPU (module docstring; ``engine`` the one whose defaults are taken), the
    KV bytes by the engine's own memory rule (:mod:`symllm.costs.engine_memory`, ``kv_rule`` the engine it is
    declared by): for a pool (``kv_sized_by`` ``"memory"``) ``gpu_memory_utilization`` its fraction (None: the
    engine's default), ``fraction_name`` the engine's own name of it, ``usable`` the fraction's product
    ``f · (memory − Σ fraction_of)`` and ``kv_cache_bytes`` that less ``Σ fraction_less``; for a cache sized by the
    context (``"context"``: llama.cpp, gpt-fast, mlc, hf, torch) ``batch`` sequences of the context, no fraction (a
    given one is refused), ``fits`` whether weights, activation peak, non-torch memory and the cache fit, and
    ``most_sequences`` the largest batch whose cache fits so (what serving under load may run); and
    ``tp_layout`` where the model names one (:func:`symllm.costs.phases.workload`: the engine's);
    ``max_num_seqs``: the most sequences the engine runs at once, and the rows of vLLM V1's dummy sampler run
    (None: the engine's default, :func:`default_max_num_seqs`; echoed where the engine has a limit);
    ``indexer_kv_dtype``: DeepSeek-V4's indexer cache, "fp8" or "mxfp4" (vLLM 0.33.0; None: its default, fp8).
    The workload's ``ubatch`` and ``flash_attn``: llama.cpp's ``-ub`` and ``-fa`` (its compute buffer and cache
    padding: :func:`symllm.costs.engine_memory.micro_batch`; None: its own, 512 and off); ``ubatch`` and
    ``flash_attn`` in the result where the engine runs a micro-batch, as resolved.
    ``kv_cache_bytes`` replaces the estimate by a measured figure (vLLM's "Available KV cache memory").
    ``evaluate``: ``work -> symllm.costs.phases.workload(config, work)`` by other means (``config`` then a
    ``ModelConfig``: :func:`symllm.studies.quick.evaluator`, the kernels an earlier count kept); None: the formulas.

    >>> r = capacity("llama3.1-70b", gpu="h100-sxm", tp=4, seq=8192, kv_format="fp8")
    >>> r["kv_bytes_per_token"], r["fits"]
    (40960, True)
    """
    # the engine's own memory rule (symllm.costs.engine_memory), llama.cpp's -ub and -fa (the workload's) resolved in it
    work, gpu, cfg, kv_rule = _check(config, work, gpu_memory_utilization=gpu_memory_utilization,
                                     max_num_batched_tokens=max_num_batched_tokens, block_size=block_size,
                                     non_torch=non_torch, kv_cache_bytes=kv_cache_bytes, max_num_seqs=max_num_seqs,
                                     indexer_kv_dtype=indexer_kv_dtype, **options)
    compressed = getattr(cfg, "hc_mult", None) is not None  # DeepSeek-V4: vLLM's own layout (deepseek_v4_blocks)
    from symllm.costs.figures import engine
    conventions = engine(work.engine, "inference")
    util = memory_fraction(kv_rule, gpu_memory_utilization, gpu, work.tp)  # None: a cache sized by the context
    if block_size is None:
        block_size = kv_rule.get("block_size", kv_rule.get("round_to", 1) if util is None else BLOCK_SIZE)
    if max_num_batched_tokens is None:  # the engine's default for the card and the context; TGI's its launcher's
        # max_batch_prefill_tokens, which its warm-up forward runs too (engine_memory.warmup_tokens: one rule for both)
        quantized = getattr(cfg, "weight_format", None) is not None
        max_num_batched_tokens = (warmup_tokens(kv_rule, cfg, gpu, work.tp, util or 1, quantized)
                                  or default_max_num_batched_tokens(gpu, conventions["name"], work.seq + work.gen))
    integer("max_num_batched_tokens", max_num_batched_tokens)
    nccl, experts = 0, work.replace(engine=conventions["name"]).expert_tp  # as the engine lays them out (below)
    if non_torch is None:  # the engine's own (its CUDA context, NCCL and allocator: efficiency.json)
        one = work.ep > 1 or experts == "tp_x_dp"  # the replicas one engine (symllm.costs.expert_layout)
        nccl = nccl_bytes(conventions, work.tp, work.pp, work.dp if one else 1, bool(getattr(cfg, "n_experts", None)))
        non_torch = Fraction(conventions.get("non_torch_gib", "0")) * 2 ** 30 + nccl
    # whole bytes, rounded up (a GiB figure such as 0.35 is a fraction of a byte), as the engine measures it
    non_torch = ceil(_fraction("non_torch", non_torch, -1)) if non_torch else 0
    if evaluate is None:  # the formulas (SymPy)
        from symllm.arch import resolved
        from symllm.costs import phases
        config = resolved.spec(config)
        evaluate = lambda w: phases.workload(config, w)  # noqa: E731
    # the engine's own tensor-parallel layout (symllm.costs.parallel.layout: vLLM's DeepSeek-V4), its default's where
    # none is given
    bare = dict(gpu=None, gpu_memory=None, gpu_bandwidth=None, gpu_flops=None, tokens=None, price=None,
                engine=conventions["name"])
    logits = conventions.get("profile_logits", "all")  # vLLM V0's profile: each dummy prompt's last position
    # the forward whose working set the engine holds (llama.cpp: one micro-batch, fp32; engine_memory.working_set)
    context = work.seq + work.gen
    working = working_set(kv_rule, conventions, work.seq, context, max_num_batched_tokens)
    profile = evaluate(work.replace(batch=1, seq=working["tokens"], gen=0, context=None, logits=logits,
                                    **working["options"], **bare))
    laid = {"tp_layout": profile["tp_layout"]} if "tp_layout" in profile else {}  # the layout weights are in
    # a token's keys and values on tensor rank 0 as the layout holds them (memory_per_gpu's kv_cache of one token:
    # the key/value heads the rank holds, one a rank past them, replicated; a latent attention's whole on every
    # rank, as vLLM's MLA layers cache one latent "head" a token; a sublayer hf's plan keeps whole, every head)
    per_token = Fraction(evaluate(work.replace(batch=1, seq=1, gen=0, context=None, **bare))["memory_per_gpu"][
        "kv_cache"])
    per_token = int(per_token) if per_token.denominator == 1 else per_token
    weights = profile["memory_per_gpu"]["weights"]
    kv_profile = profile["memory_per_gpu"]["kv_cache"]
    # one sequence's state cache (a hybrid's recurrent and convolution states, constant in the context) on
    # tensor rank 0: the profile's batch is that one sequence
    state = profile["memory_per_gpu"].get("state_cache", 0)
    activation = profile["memory_per_gpu"]["inference_peak"] - weights - kv_profile - state
    if working["scores"]:  # the micro-batch's scores against a sequence's whole cache (no FlashAttention)
        activation = max(activation, scores_moment(context=context, ubatch=working["tokens"], n_h=cfg.n_heads,
                                                   d=cfg.dim, q=cfg.n_heads * cfg.head_dim))
    # each expert's width over the ranks (vLLM at dp > 1 without EP: of every replica), or whole (EP)
    split = {"split": work.tp, "tp_x_dp": work.tp * work.dp}.get(experts, 1)
    moe = moe_workspace_bytes(config, working["tokens"], split) if conventions.get("moe_workspace") else 0
    if moe:  # the fused-MoE workspace, live in an MoE layer beside the forward's working set (not the logits')
        forward = activation if logits == "last" else evaluate(work.replace(
            batch=1, seq=working["tokens"], gen=0, context=None, logits="last", **bare))["memory_per_gpu"][
            "inference_peak"] - weights - kv_profile - state
        activation = max(activation, forward + moe)
    rows = sampler = 0
    per_entry = conventions.get("profile_sampler_bytes")
    if per_entry:  # V1's dummy sampler run after the forward, on one row a dummy request (max_num_seqs of them)
        seqs = default_max_num_seqs(gpu, conventions["name"]) if max_num_seqs is None else max_num_seqs
        rows = min(seqs, max_num_batched_tokens)
        sampler = sampler_peak_bytes(config, rows, working["tokens"], int(per_entry))
        activation = max(activation, sampler)
    # vLLM keeps a column fewer of each convolution's input than transformers' cache, which the profile counts
    drop = CONV_STATE_DROPS[conv_cache(conventions)] - CONV_STATE_DROPS["transformers"]
    if state and drop:
        state -= drop * conv_column_bytes(cfg, work.tp, work.activation_bytes)
    # and each recurrent state in its own dtype (SSM_STATE_DTYPES: the config's, else the model's), not fp32
    held = BYTES[ssm_state_dtype(conv_cache(conventions), cfg.ssm_dtype, work.act_dtype)]
    if state and held != FP32:
        state -= (FP32 - held) * ssm_state_elements(cfg, work.tp)
    index = indexer_bytes_per_token(config)
    if index:  # the indexer's keys (the state cache's only part here) are paged per token beside the latent
        state, per_token = 0, per_token + index
    # the engine's rule (engine_memory.kv_bytes) on the memory the driver reports, where measured
    named = {"engine": conventions["name"], "kv_rule": kv_rule["name"], "kv_sized_by": kv_rule["sized_by"]}
    if util is not None:
        named.update(fraction_name=kv_rule["fraction"], fraction_of=list(kv_rule["of"]),
                     fraction_less=list(kv_rule["less"]), gpu_memory_utilization=util,
                     **({"fraction_scale": Fraction(kv_rule["scale"])} if "scale" in kv_rule else {}))
    # what every kind of cache reports alike: the card, the memory beside the cache, the profile behind it
    shared = {**named, "gpu": gpu.name, "memory": gpu.usable, "weights": weights, "activation_peak": activation,
              "non_torch": non_torch, "max_num_batched_tokens": max_num_batched_tokens,
              "profile_tokens": working["tokens"], "tp": work.tp, "pp": work.pp, "ep": work.ep,
              "moe_workspace": moe, "sampler_rows": rows, "sampler_peak": sampler, "nccl": nccl, **laid,
              **{k: kv_rule[k] for k in ("ubatch", "flash_attn") if k in kv_rule}}  # a micro-batch's, resolved
    if util is None and kv_cache_bytes is None:  # a cache sized by the context: batch sequences of it, no pool
        tokens = context_tokens(kv_rule, context, work.batch)
        held = tokens * per_token + work.batch * state
        extra = {"state_bytes_per_sequence": state, "state_cache_bytes": work.batch * state} if state else {}
        # the most sequences such a cache holds beside the weights, the activation peak and non-torch memory (an
        # engine started for them: what serving under load runs, symllm.costs.traffic)
        room = gpu.usable - weights - activation - non_torch
        extra["most_sequences"] = max(0, int(room // (context_tokens(kv_rule, context) * per_token + state)))
        return {**extra, **_seqs(max_num_seqs, gpu, conventions["name"], tokens, cfg), **shared,
                "usable": gpu.usable, "kv_cache_bytes": held, "kv_bytes_per_token": per_token,
                "block_size": block_size, "blocks": tokens // block_size, "kv_tokens": tokens, "context": context,
                "max_concurrency": Fraction(work.batch), "batch": work.batch,
                "fits": weights + activation + non_torch + held <= gpu.usable,
                **({"indexer_bytes_per_token": index} if index else {})}
    usable, kv = kv_bytes(kv_rule, util if util is not None else Fraction(1), gpu.usable,
                          {"weights": weights, "activation": activation, "non_torch": non_torch})
    if kv_cache_bytes is not None:  # a measured figure in place of the rule's
        kv = floor(_fraction("kv_cache_bytes", kv_cache_bytes))  # whole bytes, as kv_bytes rounds
    if compressed:  # vLLM's DeepSeek-V4 groups and blocks (docs/serving.md, "DeepSeek-V4")
        d = deepseek_v4_blocks(cfg, kv, context, max_num_batched_tokens, layout=dsv4_layout(cfg, work, gpu),
                               indexer=indexer_for(indexer_kv_dtype, gpu.name))
        return {**_seqs(max_num_seqs, gpu, conventions["name"], d.get("kv_tokens"), cfg), **shared,
                "gpu_memory_utilization": util, "usable": usable, "kv_cache_bytes": kv,
                "kv_bytes_per_token": Fraction(d["block_bytes"], DSV4_BLOCK),
                "block_size": DSV4_BLOCK, "context": context, "fits": d["requests"] >= 1, **d}
    if state:  # a hybrid model: each sequence holds its state beside its KV blocks (vLLM allocates it per sequence)
        sequences = max(int(kv // (ceil(context / block_size) * block_size * per_token + state)), 0)
        kv = kv - sequences * state
    blocks = max(int(kv // (block_size * per_token)), 0)
    tokens = blocks * block_size
    extra = {"state_bytes_per_sequence": state, "state_cache_bytes": sequences * state} if state else {}
    if index:
        extra["indexer_bytes_per_token"] = index
    concurrency = Fraction(tokens, context) if not state else max(Fraction(
        kv + sequences * state, ceil(context / block_size) * block_size * per_token + state), Fraction(0))
    return {**extra, **_seqs(max_num_seqs, gpu, conventions["name"], tokens, cfg), **shared,
            "gpu_memory_utilization": util, "usable": usable, "kv_cache_bytes": kv,
            "kv_bytes_per_token": per_token, "block_size": block_size, "blocks": blocks, "kv_tokens": tokens,
            "context": context, "max_concurrency": concurrency, "fits": concurrency >= 1 and tokens >= context}


def most_sequences(cap: dict) -> int:
    """The most sequences of the context (``s + n``) that :func:`capacity`'s cache ``cap`` holds, as every door reads
    it (``count --serve``'s line and ``--json``, plan's serving rows, serving under load:
    :func:`symllm.costs.traffic.under_load`): a cache sized by the context, its ``most_sequences``; vLLM's
    DeepSeek-V4 groups, their ``requests``; a pool, the whole of its ``max_concurrency`` (its KV bytes over a
    sequence's: a dense model's whole sequences of tokens, a hybrid's the sequences whose states it holds, each
    beside its blocks; vLLM's ``MambaSpec.max_memory_usage_bytes``, one state page a request: module docstring).

    >>> most_sequences({"kv_sized_by": "memory", "kv_tokens": 504_896, "context": 1100,
    ...                 "max_concurrency": Fraction(504_896, 1100)})
    458
    """
    if cap["kv_sized_by"] == "context":
        return cap["most_sequences"]
    return cap["requests"] if "requests" in cap else floor(cap["max_concurrency"])
