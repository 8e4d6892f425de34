"""What a model costs under a workload: phases and memory kinds, software stacks, parallel layouts, LoRA,
accelerators and scaling laws.

Modules: :mod:`~symllm.costs.workloads` (``Workload``: every option, its default and its check;
:mod:`~symllm.costs.expert_layout`: how ``--ep`` lies under each engine, vLLM's ``tp × dp`` whole experts;
:mod:`~symllm.costs.peft_targets`: LoRA's target linears by PEFT's or symllm's names),
:mod:`~symllm.costs.phases` (FLOPs per phase, memory per kind, ``workload()``; :mod:`~symllm.costs.loss_memory`: the
training loss's logits and gradient, as the head lays them out;
:mod:`~symllm.costs.decoding`: one phase's FLOPs, decode steps summed in closed form; :mod:`~symllm.costs.numbered`:
its groups from evaluated forms, without SymPy), :mod:`~symllm.costs.stacks`,
:mod:`~symllm.costs.selective` (torchtitan's selective op checkpointing),
:mod:`~symllm.costs.parallel` (:mod:`~symllm.costs.layouts`: the layout each kind of quantity is in),
:mod:`~symllm.costs.finetune`, :mod:`~symllm.costs.formats` (weight formats as exact bytes;
:mod:`~symllm.costs.ggml`: llama.cpp's GGML types and file types; :mod:`~symllm.costs.kv_formats`: KV-cache formats;
:mod:`~symllm.costs.weight_formats`: the weight formats each engine runs, on which cards, at which peak),
:mod:`~symllm.costs.checkpoints` (a checkpoint's headers against the tree; :mod:`~symllm.costs.headers` reads
them),
:mod:`~symllm.costs.serving` (each engine's KV cache, vLLM's paged one by default: tokens and concurrency;
:mod:`~symllm.costs.engine_memory`: the memory each engine gives it, by its own rule; :mod:`~symllm.costs.dsv4_cache`:
DeepSeek-V4's compressed caches as vLLM lays them out; :mod:`~symllm.costs.batching`: each engine's scheduler
defaults), :mod:`~symllm.costs.hardware`
(fit and roofline bounds; :mod:`~symllm.costs.accelerators`: the accelerators and networks by name;
:mod:`~symllm.costs.roofline_bytes`: the bytes a phase must move, the roofline's memory term;
:mod:`~symllm.costs.stage_parts`: the parts of a pipeline stage the expected time runs at rates of their own;
:mod:`~symllm.costs.utilisation`: every MFU's and HFU's numerator and fraction of peak, a measured run's MFU),
:mod:`~symllm.costs.efficiency` (expected times: measured efficiencies, engines; :mod:`~symllm.costs.figures`: their
data file and engines by name; :mod:`~symllm.costs.gemm_cards`: a card's GEMMs against the reference card's;
:mod:`~symllm.costs.fp8_casts`: FP8 recipes' quantization passes; :mod:`~symllm.costs.step_passes`: a
step's optimizer and FSDP copy-out passes; :mod:`~symllm.costs.moe_training`: a mixture's training costs beyond
its GEMMs;
:mod:`~symllm.costs.collectives`: a step's collectives (one count, inference's and a training micro-batch's),
all-reduces and all-to-alls; :mod:`~symllm.costs.host_step`: Ray's round trip and an eager engine's host work a
step; :mod:`~symllm.costs.dp_traffic`: data-parallel and pipeline traffic's calls and seconds;
:mod:`~symllm.costs.rings`: ring collectives' bytes, a step's data-parallel ones under each ZeRO stage;
:mod:`~symllm.costs.tiles`: causal attention's kernel tiles; :mod:`~symllm.costs.attention_training`: a training step's
attention core at its kernel's rates; :mod:`~symllm.costs.power`: board power limits;
:mod:`~symllm.costs.schedules`: pipeline schedules' bubbles and hand-offs; :mod:`~symllm.costs.tp_overlap`: the
tensor-parallel collectives a training engine overlaps with GEMMs),
:mod:`~symllm.costs.traffic` (serving under load: TTFT, ITL, throughput at a concurrency or request rate),
:mod:`~symllm.costs.scaling` (over :mod:`~symllm.costs.approximation`, smooth forms and FLOP conventions, and
:mod:`~symllm.costs.optimal`, compute-optimal and inverse sizing), :mod:`~symllm.costs.checks` (whether a
workload fits a model),
:mod:`~symllm.costs.zero` (training states per optimizer and ZeRO sharding), :mod:`~symllm.costs.inverse`
(the largest batch or context that fits, in closed form; :mod:`~symllm.costs.search`: its numbers' half),
:mod:`~symllm.costs.comparison` (models side by side), :mod:`~symllm.costs.shares` (memory per component),
:mod:`~symllm.costs.replication` (key/value heads replicated over tensor-parallel ranks).
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in (
    "workloads", "peft_targets", "phases", "decoding", "stacks", "parallel", "layouts", "finetune", "formats", "ggml",
    "kv_formats", "weight_formats",
    "checkpoints", "headers", "serving", "engine_memory", "hardware", "accelerators", "roofline_bytes", "efficiency",
    "figures", "gemm_cards", "collectives", "dp_traffic", "tiles", "traffic",
    "power", "dsv4_cache", "stage_parts", "numbered", "selective", "search",
    "utilisation", "fp8_casts", "step_passes", "attention_training", "moe_training",
    "batching", "schedules", "rings", "tp_overlap", "host_step", "expert_layout",
    "scaling", "approximation", "optimal", "checks", "zero", "shares", "comparison", "inverse", "replication",
    "loss_memory")})
