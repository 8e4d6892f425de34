"""Each serving engine's continuous-batching scheduler where the user gives no setting: its prefill budget a step,
the most sequences it runs at once, and how a step runs the prompts that joined beside the running decodes (one
declaration an engine, :data:`SCHEDULER`, each read in the engine's source); TensorRT-LLM's trtllm-bench settings.
:mod:`symllm.costs.serving` (the KV cache) and :mod:`symllm.costs.traffic` (serving under load) read them.

>>> default_max_num_batched_tokens("h100-sxm", "vllm"), prefill_step("sglang")
(8192, 'separate')
"""
from __future__ import annotations

from fractions import Fraction
from math import ceil

from symllm.arch.catalogue import resolve

__all__ = ["SCHEDULER", "prefill_step", "forward_budget", "prefill_admits", "prefill_forward_tokens",
           "default_max_num_seqs", "default_max_num_batched_tokens", "trtllm_bench_settings"]

#: Each engine's scheduler defaults where the user gives none: its prefill budget a step (vLLM's
#: ``max_num_batched_tokens``, SGLang's ``chunked_prefill_size``, TensorRT-LLM's ``max_num_tokens``) and the most
#: sequences it runs at once (vLLM's ``max_num_seqs``, SGLang's ``max_running_requests``, TensorRT-LLM's and
#: TurboMind's ``max_batch_size``: ``by_name``, the first [chip, sequences] whose chip is in the card's device name,
#: else ``else``), one declaration an engine, with where each was read (2026-11-28 and -29; an engine whose
#: scheduler was not read says so in ``source`` and keeps the defaults of an engine without an entry).
#: ``large_card``: vLLM's "device_memory >= 70 * GiB_bytes and 'a100' not in device_name" (0.9 on), or 0.7.3's
#: "h100" or "h200" in the device name (``by_name``); ``tiers``: SGLang's [below GiB, tokens] by the card's memory
#: (the last, ``None``: any larger); TGI's budget where none is given is its launcher's warm-up default
#: (:func:`symllm.costs.engine_memory.warmup_tokens`, read by :func:`symllm.costs.serving.capacity`: one rule for both);
#: ``requests``: SGLang's ``min(max(int(kv_tokens / context_len * per_context), floor), ceiling)``. ``mixed``: how a
#: step runs the prompts that joined beside the running sequences' decodes (:func:`prefill_step`,
#: ``mixed_source``): ``chunked``, in the same forward, each cut to the token budget the decodes leave; ``whole``,
#: in the same forward, uncut, once the decodes leave room for the whole prompt; ``static``, no joining: a batch's
#: prompts in one forward, then its decodes to the end, and the next batch after it; ``separate`` (and an engine
#: without an entry), in a forward of their own (``chunked_past``: ``chunked`` past that context, as
#: ``batched_tokens``' rule turns chunked prefill on), which takes every prompt waiting up to the budget
#: (:func:`prefill_admits`, :func:`prefill_forward_tokens`, ``admits``): ``whole`` (and an engine without an
#: entry), whole prompts while they fit; ``cut``, the first that does not fit cut to fill the budget, its rest in
#: the next such forward; ``prefill_tokens`` (SGLang's ``max_prefill_tokens``): past a forward's first prompt, no
#: whole prompt that would bring its tokens to it.
SCHEDULER = {
    "vllm": {"batched_tokens": {"large": 8192, "small": 2048}, "seqs": {"large": 1024, "small": 256},
             "large_card": {"gib": 70, "not": "a100"},
             "source": "vllm/engine/arg_utils.py, EngineArgs._set_default_args_v1, v0.9.0, v0.9.2 and v0.10.0 wheels: "
                       "for UsageContext.OPENAI_API_SERVER (vllm serve) max_num_batched_tokens 8192 and max_num_seqs "
                       "1024 where device_memory >= 70 GiB and 'a100' is not in the device name, else 2048 and 256 "
                       "(0.8.5 has no A100 exception; UsageContext.LLM_CLASS takes 16384 and 8192 in place of 8192 "
                       "and 2048)",
             "mixed": "chunked",
             "mixed_source": "vllm/v1/core/sched/scheduler.py, Scheduler.schedule (read at 00024d3, 2026-11-29; V1's "
                             "design since 0.6.x): 'There's no \"decoding phase\" nor \"prefill phase\" in the "
                             "scheduler': the RUNNING requests are scheduled first (a decode one token each), then the "
                             "WAITING ones while token_budget > 0 with num_new_tokens = min(num_new_tokens, "
                             "token_budget) (chunked prefill, always on in V1), all in one SchedulerOutput that "
                             "GPUModelRunner.execute_model runs as one forward over the flattened tokens"},
    "vllm-v1-0.7": {"batched_tokens": {"large": 8192, "small": 2048}, "seqs": {"large": 1024, "small": 256},
                    "large_card": {"by_name": ["h100", "h200"]},
                    "source": "vllm/engine/arg_utils.py, EngineArgs._override_v1_engine_args, v0.7.3 wheel: "
                              "max_num_batched_tokens 8192 where 'h100' or 'h200' is in the device name, else 2048 "
                              "(max_num_seqs as V1's: 1024 and 256)",
                    "mixed": "chunked", "mixed_source": "V1's scheduler, as vllm's (mixed_source there)"},
    "vllm-v0": {"batched_tokens": {"unchunked_floor": 2048, "chunked": 2048, "chunked_past": 32768},
                "seqs": {"large": 1024, "small": 256}, "large_card": {"gib": 70, "not": "a100"},
                "source": "vllm/config.py, SchedulerConfig.__post_init__, v0.8.5 wheel: max_num_batched_tokens "
                          "max(max_model_len, 2048) without chunked prefill, 2048 with it, which "
                          "EngineArgs._set_default_args_v0 turns on past a max_model_len of 32,768",
                "mixed": "separate", "mixed_chunked_past": 32768, "admits": "whole",
                "mixed_source": "vllm/core/scheduler.py (the V0 engine), v0.8.5 wheel (read 2026-11-29): "
                                "Scheduler._schedule takes _schedule_default without chunked prefill, which calls "
                                "_schedule_prefills(budget, enable_chunking=False): the waiting prompts, each whole, "
                                "while SchedulingBudget.can_schedule (num_batched_tokens + the prompt's <= "
                                "max_num_batched_tokens, num_curr_seqs + its <= max_num_seqs), all in one "
                                "SchedulerOutputs the model runner runs as one forward; 'Don't schedule decodes if "
                                "prefills are scheduled' (the decodes wait that step); _schedule_chunked_prefill, "
                                "taken where chunked prefill is on, schedules the running decodes and prefill chunks "
                                "in one batch"},
    "sglang": {"batched_tokens": {"tiers": [[35, 2048], [160, 8192], [None, 16384]]},
               "seqs": {"requests": {"per_context": 512, "floor": 2048, "ceiling": 4096}},
               "prefill_tokens": 16384,
               "source": "python/sglang/srt/server_args.py in the sglang 0.5.2 wheel (PyPI, version.py '0.5.2'; "
                         "read 2026-11-29), ServerArgs.__post_init__, lines 508-518: chunked_prefill_size None -> "
                         "2048 where gpu_mem < 35 * 1024 ('A10, L40, 4090'), 8192 under 160 * 1024 ('H100, H200, "
                         "A100, H20'), else 16384 ('B200, MI300'); 4096 only where gpu_mem is None (not known); "
                         "gpu_mem = get_device_memory_capacity(self.device) (line 449, MiB), read here as the "
                         "card's usable memory (the engine version symllm names for SGLang; 0.5.4's "
                         "_handle_gpu_memory_settings adds a 4096 tier under 60 GiB: not applied); "
                         "max_prefill_tokens 16384 (ServerArgs, "
                         "line 169, v0.4.6 to v0.5.4; TpModelWorker passes it on unchanged, managers/tp_worker.py "
                         "line 136 in v0.5.2); python/sglang/srt/model_executor/model_runner.py, init_memory_pool: "
                         "max_running_requests None -> min(max(int(max_total_num_tokens / context_len * 512), 2048), "
                         "4096), context_len the model's own (later versions also cap it at max_total_num_tokens // 2)",
               "mixed": "separate", "admits": "cut",
               "mixed_source": "python/sglang/srt/managers/scheduler.py, v0.5.2 wheel (v0.4.6 the same; read "
                               "2026-11-29): Scheduler.get_next_batch_to_run runs the new prefill batch ('Run prefill "
                               "first if possible'), the running decodes only in a step without one; "
                               "get_new_batch_prefill (lines 1634-1643) fills one batch from the waiting queue through "
                               "PrefillAdder(rem_input_tokens=max_prefill_tokens, "
                               "rem_chunk_tokens=chunked_prefill_size) (managers/schedule_policy.py, lines 271-291, "
                               "356-365 and 498-570: add_one_req takes a whole prompt while it fits rem_chunk_tokens "
                               "and, past the batch's first, is under rem_input_tokens (input_tokens >= "
                               "rem_input_tokens stops the batch), and cuts the first that does not fit "
                               "rem_chunk_tokens to the rest: new_chunked_req, which the next prefill batch carries "
                               "on before any decode; budget_state stops at either budget spent), run as one extend "
                               "forward; only with --enable-mixed-chunk (is_mixed_chunk; default off) does "
                               "new_batch.mix_with_running(self.running_batch) put the running decodes in the same "
                               "forward (ForwardMode.MIXED)"},
    "trtllm": {"batched_tokens": {"fixed": 8192}, "seqs": {"fixed": 2048},
               "source": "tensorrt_llm/llmapi/llm_args.py, BaseLlmArgs (the LLM API, trtllm-serve; 1.x): "
                         "max_batch_size Field(default=2048), max_num_tokens Field(default=8192); trtllm-bench sets "
                         "its own from the dataset (trtllm_bench_settings)",
               "mixed": "whole",
               "mixed_source": "the PyTorch backend (1.x; read 2026-11-29): cpp/tensorrt_llm/batch_manager/"
                               "microBatchScheduler.cpp (0a949d3), MicroBatchScheduler::operator(): one pass over the "
                               "active requests (the running ones first) takes each generation request's one token "
                               "and, without a ContextChunkingConfig, each context request's whole prompt while "
                               "batchNumTokens + its tokens <= max_num_tokens (else break), up to max_batch_size "
                               "requests; tensorrt_llm/_torch/pyexecutor/model_engine.py (001e670), "
                               "_prepare_tp_inputs: 'The order of requests in a batch: [context requests, generation "
                               "requests]', one input_ids of total_num_tokens <= max_num_tokens rows through one "
                               "forward; enable_chunked_prefill is off unless asked (LlmArgs; trtllm-bench's "
                               "--enable_chunked_context flag, default False: "
                               "tensorrt_llm/bench/benchmark/throughput.py at 000a01d); scheduler.py (034fffb): "
                               "ScheduledRequests.can_run_cuda_graph is 'not self.context_requests': a step with a "
                               "prompt runs without its CUDA graph (not modelled: its host launches stay under its "
                               "GPU time in the rows checked)"},
    "tgi": {"source": "launcher/src/main.rs at v3.3.6 (efb94e0, 2025-09-16; read 2026-11-29): max_batch_prefill_tokens "
                      "None -> compute_optimal (lines 28-46), the same default the warm-up runs: its budget here is "
                      "symllm.costs.engine_memory.warmup_tokens (efficiency.json tgi kv_memory warmup: v3.3.6's "
                      "f16_flop table, lines 1750-1781)",
            "mixed": "chunked",
            "mixed_source": "backends/v3/src/backend.rs at v3.3.6, batching_task (lines 129-294): with "
                            "support_chunking (a flash model's default: PREFILL_CHUNKING 1 in "
                            "server/text_generation_server/models/globals.py, prefix caching on under flashinfer) "
                            "the prefill budget is max_batch_prefill_tokens - current_tokens (the running batch's "
                            "tokens, one a decode) and prefill(client, new_batch, cached_batch) runs the new prompts"
                            " and the running decodes in one forward ('Generate one token for both the cached batch "
                            "and the new batch'); backends/v3/src/queue.rs, next_batch (lines 264-400): whole "
                            "prompts while prefill_tokens + postfix_len <= the budget, the first that does not fit "
                            "cut to the rest (chunk_len), then the batch closes; max_batch_total_tokens (the KV "
                            "cache's tokens, inferred) stops a prompt without blocks; waiting_served_ratio (0.3) and"
                            " max_waiting_tokens (20) apply only without chunking, where a new batch's prefill runs "
                            "in a forward of its own"},
    "llama.cpp": {"batched_tokens": {"fixed": 2048},
                  "source": "common/common.h at ggml-org/llama.cpp 4227c9b (as vendored by llama-cpp-python 0.3.16, "
                            "2025-08; read 2026-11-29), lines 272-273: n_batch 2048 ('logical batch size'), n_ubatch "
                            "512 ('physical batch size'); cont_batching true (line 372)",
                  "mixed": "chunked",
                  "mixed_source": "tools/server/server.cpp at 4227c9b, server_context::update_slots (lines 3017-3560): "
                                  "first a token of each generating slot (common_batch_add of slot.sampled), then the "
                                  "pending prompts' tokens, slot by slot, while batch.n_tokens < n_batch (a prompt cut "
                                  "where the batch fills, its rest in the next call), one llama_decode over the batch; "
                                  "src/llama-context.cpp, llama_context::decode (lines 946-1076) runs it in ubatches "
                                  "of n_ubatch tokens (efficiency.json's ubatch: the GEMMs at no more than 512 rows)"},
    "lmdeploy": {"batched_tokens": {"fixed": 8192},
                 "seqs": {"by_name": [["a100", 384], ["a800", 384], ["h100", 1024], ["h800", 1024], ["l20y", 1024],
                                      ["h200", 1024]], "else": 128},
                 "source": "lmdeploy/messages.py at v0.10.2 (f36aa71, 2025-10-28; read 2026-11-29), "
                           "TurbomindEngineConfig.max_prefill_token_num 8192 (line 255), num_tokens_per_iter 0 -> "
                           "max_prefill_token_num (lmdeploy/turbomind/turbomind.py, lines 251-255); max_batch_size "
                           "None (messages.py line 245) -> get_max_batch_size('cuda') (turbomind.py lines 138-139; "
                           "lmdeploy serve: cli/serve.py lines 192-193): lmdeploy/utils.py lines 361-378, the first "
                           "of 'a100' 384, 'a800' 384, 'h100' 1024, 'h800' 1024, 'l20y' 1024, 'h200' 1024 in "
                           "torch.cuda.get_device_name(0).lower(), else 128 (by the card's name, not its memory)",
                 "mixed": "chunked",
                 "mixed_source": "TurboMind at v0.10.2: src/turbomind/models/llama/LlamaBatch.cc, "
                                 "AdjustMaxInputCount (lines 452-482): an iteration's tokens max(pending / "
                                 "max_prefill_iters + batch_size, num_tokens_per_iter), at most max_forward_token_num "
                                 "(max_prefill_token_num + max_batch_size: LlamaTritonModel.cc lines 362-389); "
                                 "SequenceManager.cc, Transaction::Commit (lines 330-350): each active sequence takes "
                                 "min(its input, what is left), a decode one token, a prompt cut to the rest; "
                                 "LlamaBatch::Forward (lines 1480-1500): the decodes first, then the prefills, in one "
                                 "mini-batch while sum(Q) <= max_forward_token_num: one forward",
                 "forward": "turbomind",
                 "forward_source": "TurboMind at v0.10.2 (f36aa71): a forward's tokens, decodes and prompts' "
                                   "chunks together, are AdjustMaxInputCount's (LlamaBatch.cc lines 452-480): "
                                   "ceil((remaining inputs - batch) / max_prefill_iters) + batch (its "
                                   "window of the last max_prefill_iters such counts, constant in a steady "
                                   "state, not modelled), at least num_tokens_per_iter (line 477: "
                                   "max_prefill_token_num, turbomind.py lines 251-254), at most "
                                   "max_forward_token_num (line 479) = max_prefill_token_num + max_batch_size "
                                   "(LlamaTritonModel.cc lines 362-363) rounded up to the attention's tensor ranks "
                                   "(line 389); max_prefill_iters = ceil(session_len / max_prefill_token_num) "
                                   "(turbomind.py lines 255-256), session_len the config's max_position_embeddings "
                                   "(utils.py _get_and_verify_max_len, 2048 where it states none)"},
    "hf": {"mixed": "static",
           "mixed_source": "transformers 5.23.0, generation/utils.py, GenerationMixin._sample (lines 3122-3240; read "
                           "2026-11-29): self._prefill runs the batch's prompts in one forward (lines 4269-4320: "
                           "prefill_chunk_size None by default), then one token of every sequence a step while any is "
                           "unfinished; a new batch starts when generate returns: a static batch"},
    "gpt-fast": {"mixed": "static",
                 "mixed_source": "pytorch-labs/gpt-fast generate.py at 32971d3 (2024-09-15; read 2026-11-29), "
                                 "generate (lines 140-210): the prompt repeated batch_size times (--batch_size, "
                                 "default 1), one prefill forward over them, then decode_n_tokens max_new_tokens - 1 "
                                 "steps: a static batch"},
    "mlc": {"source": "not read: its figures are of the October 2023 chat runtime of llm-perf-bench (one "
                      "conversation at a time), whose scheduling was not read; MLC's later serve engine "
                      "(cpp/serve/engine_actions, prefill_chunk_size inferred from the compiled model in "
                      "cpp/serve/config.cc at v0.20.0) was not read through: an engine without mixed or admits"},
    "torch": {"source": "not read: symllm's own decode benchmark (benchmarks/gpu_efficiency.py), no scheduler: an "
                        "engine without mixed or admits"},
    "vllm-v0.2": {"source": "not read: vLLM before v0.2.6's scheduler (vllm/core/scheduler.py of 2023): an engine "
                            "without mixed or admits"},
}

#: the prefill budget of an engine that declares none
SERVE_BATCHED_TOKENS = 8192


def prefill_step(engine, context: int = 0) -> str:
    """How ``engine`` runs a joining prompt beside the running decodes (:data:`SCHEDULER`'s ``mixed``):
    ``chunked`` (the same forward, cut to the budget the decodes leave: vLLM V1, TGI v3, llama.cpp's server,
    TurboMind), ``whole`` (the same forward, uncut: TensorRT-LLM without chunked context), ``static`` (no joining:
    a batch at a time, transformers' generate, gpt-fast) or ``separate`` (a forward of its own: SGLang without
    ``--enable-mixed-chunk``, vLLM V0 up to a context of 32,768, any engine that declares none).

    >>> prefill_step("vllm"), prefill_step("trtllm"), prefill_step("sglang"), prefill_step("hf")
    ('chunked', 'whole', 'separate', 'static')
    >>> prefill_step("tgi"), prefill_step("llama.cpp"), prefill_step("lmdeploy"), prefill_step("mlc")
    ('chunked', 'chunked', 'chunked', 'separate')
    >>> prefill_step("vllm-v0", 20000), prefill_step("vllm-v0", 131072)
    ('separate', 'chunked')
    """
    rule = _scheduler(engine)[1]
    past = rule.get("mixed_chunked_past")
    if past is not None and context > past:
        return "chunked"
    return rule.get("mixed", "separate")


def forward_budget(engine, budget: int, running, prompts, tokens, *, seqs: int | None = None,
                   session: int | None = None, tp: int = 1) -> int:
    """The most tokens one forward of ``engine`` runs, decodes and prompts' chunks together, with ``running``
    decodes and ``prompts`` prompts of ``tokens`` tokens in all waiting, its prefill budget ``budget``
    (:data:`SCHEDULER`'s ``forward``): the budget, for an engine that declares no rule; ``turbomind`` (lmdeploy
    v0.10.2's ``AdjustMaxInputCount``): ``min(max(⌈(tokens − prompts) / iters⌉ + running + prompts, budget),
    ⌈(budget + seqs) / tp⌉·tp)``, ``iters = ⌈session / budget⌉`` (``session`` the model's positions, 2048 where
    none), ``seqs`` its ``max_batch_size``, ``tp`` the tensor ranks.

    >>> forward_budget("vllm", 8192, 100, 1, 40000, seqs=1024)
    8192
    >>> [forward_budget("lmdeploy", 8192, 1000, 4, 40000, seqs=1024, session=s) for s in (4096, 131072)]
    [9216, 8192]
    """
    if _scheduler(engine)[1].get("forward") != "turbomind":
        return budget
    iters = ceil(Fraction(session or 2048, budget))
    wanted = ceil(Fraction(tokens - prompts) / iters + running + prompts)
    return min(max(wanted, budget), ceil(Fraction(budget + (seqs or 0), tp)) * tp)


def prefill_admits(engine) -> str:
    """How a forward of its own (:func:`prefill_step` ``separate``) takes the prompts waiting, all of them up to the
    step's token budget (:data:`SCHEDULER`'s ``admits``): ``whole`` (vLLM V0's ``_schedule_prefills``: whole
    prompts while they fit; an engine that declares none) or ``cut`` (SGLang's ``PrefillAdder``: the first that
    does not fit cut to fill the budget, the rest of it in the next prefill forward).

    >>> prefill_admits("vllm-v0"), prefill_admits("sglang"), prefill_admits("mlc")
    ('whole', 'cut', 'whole')
    """
    return _scheduler(engine)[1].get("admits", "whole")


def prefill_forward_tokens(engine, prompts, seq: int, budget: int):
    """The tokens of one forward of its own (:func:`prefill_step` ``separate``) that ``prompts`` prompts of ``seq``
    tokens waiting fill, a step's ``budget`` of tokens at most, in the steady state (``prompts`` may be a fraction:
    the prompts that join a step on average): ``min(prompts·seq, F)``, ``F`` what one forward takes from a queue of
    such prompts. ``whole`` (:func:`prefill_admits`): ``F = max(1, ⌊budget/seq⌋)·seq``, whole prompts while they
    fit, at least one. ``cut``: ``w = ⌊budget/seq⌋`` whole prompts, then the next cut to fill the budget (``F =
    budget``; a prompt over the budget is cut to it); where the engine declares ``prefill_tokens`` P (SGLang's
    ``max_prefill_tokens``), a prompt past the first joins, whole or cut, only while the tokens before it and its
    own stay under P: ``w = min(⌊budget/seq⌋, max(1, ⌈P/seq⌉ − 1))`` and the cut one only where ``(w + 1)·seq < P``
    (else ``F = w·seq``).

    >>> prefill_forward_tokens("sglang", 3, 2000, 8192), prefill_forward_tokens("vllm-v0", 3, 2000, 4096)
    (6000, 4000)
    >>> prefill_forward_tokens("sglang", 20, 4000, 32768)  # past max_prefill_tokens 16,384: four whole prompts
    16000
    """
    if prefill_admits(engine) == "whole":
        return min(prompts, max(1, budget // seq)) * seq
    cap, whole = _scheduler(engine)[1].get("prefill_tokens"), budget // seq
    if cap is not None and whole:
        whole = min(whole, max(1, ceil(Fraction(cap, seq)) - 1))
        if (whole + 1) * seq >= cap:  # no cut prompt: the queue's next is not under what P leaves
            return min(prompts * seq, whole * seq)
    return min(prompts * seq, budget)


def _scheduler(engine) -> tuple[str, dict]:
    """The engine's name and its :data:`SCHEDULER` entry (empty for an engine that declares none)."""
    from symllm.costs.figures import engine as conventions
    name = conventions(engine, "inference")["name"]
    return name, SCHEDULER.get(name, {})


def _named(card, chip: str) -> bool:
    """Whether ``chip`` is in ``card``'s device name as torch reports it (lower-cased; :attr:`GPU.nvidia_smi`'s
    names where known, and symllm's own name), as engines pick defaults by ``torch.cuda.get_device_name``."""
    return any(chip in name.lower() for name in (*card.nvidia_smi, card.name))


def _large(card, rule: dict) -> bool:
    """Whether ``card`` gets an engine's large-card defaults (:data:`SCHEDULER`'s ``large_card``)."""
    if "by_name" in rule:
        return any(_named(card, chip) for chip in rule["by_name"])
    return card.usable >= rule["gib"] * 2 ** 30 and not _named(card, rule["not"])


def default_max_num_seqs(gpu, engine: str | None = None, kv_tokens: int | None = None,
                         context: int | None = None) -> int | None:
    """The most sequences ``engine`` runs at once where the user gives none (:data:`SCHEDULER`): vLLM's
    ``max_num_seqs`` (``vllm serve``: 1024 on a card of at least 70 GiB that is not an A100, an H100 or H200,
    256 on any other), TensorRT-LLM's ``max_batch_size`` (2048), TurboMind's (lmdeploy v0.10.2) by the card's name
    (384 on an A100, 1024 on an H100 or H200, 128 on any other), SGLang's ``max_running_requests``
    (``min(max(⌊kv_tokens / context · 512⌋, 2048), 4096)``, ``context`` the model's own; None without
    ``kv_tokens``); None for an engine that declares none. ``gpu`` a catalogue name or a
    :class:`symllm.costs.accelerators.GPU`.

    >>> default_max_num_seqs("h100-sxm"), default_max_num_seqs("a100-80gb"), default_max_num_seqs("rtx3090")
    (1024, 256, 256)
    >>> default_max_num_seqs("h100-sxm", "trtllm"), default_max_num_seqs("h100-sxm", "sglang", 1_000_000, 131072)
    (2048, 3906)
    >>> [default_max_num_seqs(g, "lmdeploy") for g in ("a100-80gb", "h100-pcie", "h200", "l40s")]
    [384, 1024, 1024, 128]
    """
    from symllm.costs import accelerators
    card, (name, rule) = accelerators.gpu(gpu), _scheduler(engine)
    seqs = rule.get("seqs")
    if seqs is None:
        return None
    if "fixed" in seqs:
        return seqs["fixed"]
    if "by_name" in seqs:
        return next((n for chip, n in seqs["by_name"] if _named(card, chip)), seqs["else"])
    if "requests" in seqs:
        if kv_tokens is None or not context:
            return None
        r = seqs["requests"]
        return min(max(int(Fraction(kv_tokens, context) * r["per_context"]), r["floor"]), r["ceiling"])
    return seqs["large"] if _large(card, rule["large_card"]) else seqs["small"]


def default_max_num_batched_tokens(gpu, engine: str | None = None, context: int = 0) -> int:
    """The engine's prefill budget a step where the user gives none (:data:`SCHEDULER`): ``vllm`` (V1, 0.9 on)
    8192 on a card of at least 70 GiB that is not an A100, else 2048; ``vllm-v1-0.7`` 8192 on an H100 or H200
    by name, else 2048; ``vllm-v0`` ``max(context, 2048)`` up to a context (vLLM's ``max_model_len``) of
    32,768, 2048 past it (chunked prefill); ``sglang`` (0.5.2) its ``chunked_prefill_size`` by the card's memory
    (2048 under 35 GiB, 8192 under 160, 16384 above); ``trtllm`` its LLM API's
    ``max_num_tokens``, 8192; ``llama.cpp`` its ``n_batch``, 2048; ``lmdeploy``
    TurboMind's ``max_prefill_token_num``, 8192; any other engine 8192. ``gpu`` a catalogue name or a
    :class:`symllm.costs.accelerators.GPU`.

    >>> [default_max_num_batched_tokens(g) for g in ("h100-sxm", "h200", "a100-80gb", "l40s", "rtx3090")]
    [8192, 8192, 2048, 2048, 2048]
    >>> (default_max_num_batched_tokens("a100-80gb", "vllm-v1-0.7"),
    ...  default_max_num_batched_tokens("mi300x", "vllm-v1-0.7"))
    (2048, 2048)
    >>> (default_max_num_batched_tokens("rtx3090", "vllm-v0", 20000),
    ...  default_max_num_batched_tokens("h100-sxm", "vllm-v0", 131072))
    (20000, 2048)
    >>> [default_max_num_batched_tokens(g, "sglang") for g in ("rtx3090", "l40s", "a100-80gb", "h200", "mi300x")]
    [2048, 8192, 8192, 8192, 16384]
    """
    from symllm.costs import accelerators
    card, (name, rule) = accelerators.gpu(gpu), _scheduler(engine)
    tokens = rule.get("batched_tokens", {"fixed": SERVE_BATCHED_TOKENS})
    if "fixed" in tokens:
        return tokens["fixed"]
    if "tiers" in tokens:
        gib = Fraction(card.usable, 2 ** 30)
        return next(t for below, t in tokens["tiers"] if below is None or gib < below)
    if "chunked_past" in tokens:
        return tokens["chunked"] if context > tokens["chunked_past"] else max(context, tokens["unchunked_floor"])
    return tokens["large"] if _large(card, rule["large_card"]) else tokens["small"]


def trtllm_bench_settings(config, gpu, *, tp: int = 1, pp: int = 1, seq: int, gen: int,
                          weight_bytes=1, kv_bytes=1, fraction=Fraction(95, 100)) -> dict:
    """The ``max_batch_size`` and ``max_num_tokens`` ``trtllm-bench`` sets for a dataset of ``seq``-token prompts
    and ``gen``-token outputs where none is given (tensorrt_llm/bench/build/tuning.py, ``calc_engine_setting``
    and ``finetune_setting``, at a7e572f; read 2026-11-29): the requests the KV cache holds,
    ``R = (tp·pp·memory − params·β_w) · fraction / (2·L·max(tp, n_kv)·d_h·β_kv · (seq + gen))`` in GiB
    (``memory`` the card's, ``fraction`` ``kv_cache_gpu_mem_fraction``, 0.95), then ``b = min(R, 4096) / pp``
    rounded up to 32 (at least 64) under 256, to 128 under 1024, else to 256; tokens ``min(b·(1 + seq/gen),
    32768)`` rounded up to 256 (at least 2048) under 4096, to 512 under 8192, else to 1024. ``params`` the
    model's parameter count, read from ``config`` (its closed form; trtllm-bench sums its safetensors'
    ``parameter_count``, ``ModelConfig.get_param_count`` in tensorrt_llm/bench/build/dataclasses.py: the same
    for a checkpoint without multi-token-prediction modules), ``weight_bytes`` and ``kv_bytes`` its
    ``BYTES_PER_ELEM`` (FP8 1, bf16 2); the card's memory as torch reports it (trtllm-bench reads NVML's total,
    0.6% more on an H100).

    >>> trtllm_bench_settings("llama3.3-70b", "h100-sxm", tp=2, seq=1000, gen=1000)
    {'requests': 288, 'max_batch_size': 384, 'max_num_tokens': 2048}
    """
    from symllm.arch import resolved
    from symllm.costs import accelerators, phases
    cfg, card = resolve(config), accelerators.gpu(gpu)
    params = phases.workload(resolved.spec(cfg))["params"]["per_gpu"]  # one rank holding the whole model
    gib = Fraction(2 ** 30)
    per_token = Fraction(2 * cfg.n_layers * max(tp, cfg.n_kv_heads) * cfg.head_dim) * Fraction(str(kv_bytes)) / gib
    available = tp * pp * Fraction(card.usable) / gib - params * Fraction(str(weight_bytes)) / gib
    requests = available * Fraction(str(fraction)) / (per_token * (seq + gen))
    raw_bs = min(requests, 4096) / pp
    raw_token = min(raw_bs * (1 + Fraction(seq, gen)), 32768)
    batch = (max(64, 32 * ceil(raw_bs / 32)) if raw_bs < 256 else 128 * ceil(raw_bs / 128) if raw_bs < 1024
             else 256 * ceil(raw_bs / 256))
    tokens = (max(2048, 256 * ceil(raw_token / 256)) if raw_token < 4096 else 512 * ceil(raw_token / 512)
              if raw_token < 8192 else 1024 * ceil(raw_token / 1024))
    return {"requests": int(requests), "max_batch_size": batch, "max_num_tokens": tokens}
