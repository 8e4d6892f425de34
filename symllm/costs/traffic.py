"""Serving under load: time to first token, inter-token latency and output tokens/s at a concurrency or a
request rate, as an engine with continuous batching and chunked prefill schedules it.

Requests of ``s`` prompt tokens (``seq``) that generate ``n`` tokens each (``gen``) run ``C`` at a time
(``concurrency``; a closed loop: each finished request is replaced at once). Every engine step decodes one
token of each running sequence; the prompts of the requests that joined run as the engine's scheduler runs them
(:func:`symllm.costs.batching.prefill_step`, declared once an engine in :data:`symllm.costs.batching.SCHEDULER`),
up to ``B = max_num_batched_tokens`` tokens a step. In the steady state ``C/n`` requests finish a step, so
``C/n`` prompts join a step:

    step time  T(C) = decode step at batch C and the mean context s + n/2  +  (C/n) · p,

where ``p`` is what one prompt adds to the steps it runs in, at the expected efficiencies
(:mod:`symllm.costs.efficiency`):

* ``separate`` (SGLang without ``--enable-mixed-chunk``, vLLM V0 without chunked prefill, an engine not read):
  the decodes wait while the ``k = max(1, C/n)`` prompts waiting run together in forwards of their own
  (:func:`_admitted`), each of ``T`` tokens up to the budget (:func:`symllm.costs.batching.prefill_forward_tokens`:
  SGLang cuts its last prompt to fill ``B``, ``T = min(k·s, B)``, within its ``max_prefill_tokens``; V0 takes whole
  prompts: ``T = min(k, max(1, ⌊B/s⌋))·s``), ``k·s/T`` of them, each one GEMM reading the weights once at the
  efficiency of its ``T`` rows, the head on each prompt's last; ``p = (k·s/T · G(T) + k·A) / k``, which for one
  prompt alone is ``prefill_compute_s`` (its GEMMs at ``s`` rows and its attention core);
* ``chunked`` (vLLM V1, TGI v3, llama.cpp's server, TurboMind) and ``whole`` (TensorRT-LLM without chunked context):
  in the decode step's own forward, in chunks of ``q = min(s, B − C)`` tokens (``whole``: ``q = s``, once ``C + s ≤
  B``, which caps ``C`` at ``B − s``), one GEMM of ``C + q`` rows reading the weights once: ``p = Σ_chunks (G(C + q)
  − G(C)) + A``, ``G(M)`` the GEMMs of ``M`` rows (``prefill_gemm_s``: the linear layers at the efficiency of ``M``
  rows, the head on ``C`` decode rows and the chunk's last; never under the decode step's own ``decode_gemm_s``; a
  chunk adds no more than ``G(q)``, its GEMMs as a forward of its own), ``G(C)`` the decode step's (the bound's less
  the decodes' attention core its stream hid, ``decode_core_s``, which a forward with a prompt's rows does not
  hide), ``A`` the prompt's attention core. That is a chunk alone in its step, which holds while the prompts joining
  a step bring at most one chunk (``C/n · ⌈s/q⌉ ≤ 1``); past it the step runs its decodes and all ``C·s/n`` prompt rows
  together (:func:`_together`): ``f = ⌈(C + C·s/n) / B⌉`` forwards of equal rows, ``C/n · p = f · G((C + C·s/n) / f)
  − G(C) + C/n · A``, at most ``C/n`` forwards of their own (``prefill_compute_s`` each);
* ``static`` (transformers' ``generate``, gpt-fast): no prompt joins a running batch: ``C`` prompts run in one
  forward (count's prefill at batch ``C``, ``prefill_compute_s``: the first token), then their decodes to the
  end, the next batch after them: ``T(C)`` the decode step alone, ``TTFT`` that prefill;

then

* inter-token latency ``ITL = T(C)``, None where a request generates one token (``n = 1``: there is no gap between
  tokens, :func:`inter_token_s`);
* time to first token ``TTFT = ⌈s / chunk⌉ · T(C) + p`` (the prompt's chunks, one a step: ``chunk = q``), or in
  forwards of its own ``T(C) + k·p`` (the step it waited out, then the forwards of all ``k`` prompts admitted
  with it), plus the wait in the queue when more requests are sent than run;
* end-to-end ``E2E = TTFT + (n − 1) · ITL``; output tokens/s ``= C · n / E2E``.

At most ``R = ⌊KV tokens / (s + n)⌋`` sequences run (:func:`symllm.costs.serving.capacity`: the engine's
KV cache; where the engine sizes its cache by the context, not from a pool, the engine is started for the sequences
it serves, ``C`` of ``s + n`` tokens each, whatever ``batch`` says: ``R`` is then the most whose cache fits beside
the weights, the activation peak and non-torch memory, ``most_sequences``, and a concurrency past it is refused, as
the engine would fail to start; at a request rate past it the queue grows, as below), and no more than the
engine's own limit (vLLM's ``max_num_seqs``, SGLang's ``max_running_requests``, TensorRT-LLM's ``max_batch_size``:
:data:`symllm.costs.batching.SCHEDULER`) nor, where a prompt runs whole in the decode step, ``B − s``; requests
beyond them wait, and ``running_limit`` names the limit that binds. At a request rate ``λ``
the concurrency is Little's ``C = λ · E2E(C)``, solved over ``C`` (the fewest whole sequences running that serve
``λ``: TTFT and ITL at them), and ``λ`` requests finish a second (``λ · n`` output tokens/s: what arrives leaves); past
``R / E2E(R)`` the queue, and with it the time to a first token, grows without bound (``saturated``; ``ttft_s`` and
``e2e_s`` None, the throughput that of ``R`` running). The **saturation concurrency** is the smallest ``C`` whose
output tokens/s reach 95% of those at ``R``.

The **bound** (``bound`` in the result) is the same schedule, one function (:func:`_schedule`) run again, with
each step at its roofline time in place of its expected one: the decode step at count's bound
(:func:`symllm.costs.hardware.roofline`: its FLOPs at the dense peak or its bytes at the datasheet bandwidth, the
longer, plus its collectives as the bound counts them) and ``p`` from the bound's own ``prefill_compute_s``,
``prefill_gemm_s`` and ``decode_gemm_s`` (GEMMs at the peak, a decode step's at least its bytes at the bandwidth:
a roofline step overlaps all it does; the attention core at its causal pairs); no efficiencies, no fixed costs.
It is never slower than the expected figures.

>>> r = under_load("llama3.1-8b", gpu="h100-sxm", seq=1000, gen=1000, concurrency=64)
>>> r["running"], r["itl_s"] > 0, r["ttft_s"] < r["e2e_s"], r["bound"]["itl_s"] < r["itl_s"]
(64, True, True, True)
"""
from __future__ import annotations

from fractions import Fraction
from functools import partial
from math import ceil

from symllm.errors import SymllmError
from symllm.validate import integer, positive_number

__all__ = ["under_load", "SATURATION", "inter_token_s", "NO_INTER_TOKEN"]

#: the share of the largest throughput that counts as saturated
SATURATION = Fraction(95, 100)


def under_load(config, work=None, *, concurrency: int | None = None, request_rate=None, evaluate=None,
               **options) -> dict:
    """``config`` served under load (module docstring): ``concurrency`` sequences at a time, or
    ``request_rate`` requests a second; ``options`` are workload options (``seq``: the prompt, ``gen``: the
    output, ``gpu``, ``tp``, ``engine``, dtypes and formats) and :func:`symllm.costs.serving.capacity`'s
    (``gpu_memory_utilization``, ``max_num_batched_tokens``, ``block_size``, ``non_torch``; ``max_num_seqs``: the most
    sequences the engine runs, None: its default, :data:`symllm.costs.batching.SCHEDULER`). Returns
    ``{"concurrency", "running", "queued", "ttft_s", "itl_s", "step_s", "e2e_s", "output_tokens_per_s",
    "requests_per_s", "kv_sequences", "max_running", "running_limit", "saturation_concurrency", "saturated",
    "engine", "prefill_step", "max_num_seqs", "request_rate", "bound"}`` (``ttft_s`` and ``e2e_s`` None at a rate
    past saturation: the queue grows without bound; ``itl_s`` None with one output token, ``step_s`` the scheduler
    step's time, ``T(C)``, whatever the output): the expected figures, and in ``bound`` the roofline's of the
    same schedule (``concurrency`` to ``saturated``: module docstring); ``kv_sequences`` the requests whose whole
    context the KV cache holds, ``max_running`` the most that run, ``running_limit`` what sets it (``kv_cache``,
    ``max_num_seqs``: the engine's limit, or ``max_num_batched_tokens``: the room a step's budget leaves a whole
    prompt), ``prefill_step`` where the engine runs a joining prompt (:func:`symllm.costs.batching.prefill_step`).
    ``evaluate``: as :func:`~symllm.costs.serving.capacity`'s (the workload at each point by other means; None:
    the formulas); each point laid out as the engine (its default where none is given) lays the model out, as the
    capacity is (:func:`symllm.costs.parallel.layout`).

    >>> r = under_load("llama3.1-8b", gpu="h100-sxm", seq=512, gen=128, request_rate=2)
    >>> r["running"], r["requests_per_s"], r["saturated"]  # the fewest running that serve 2 a second serve 2
    (3, 2.0, False)
    """
    from symllm.costs import batching, serving
    from symllm.costs.workloads import Workload

    keys = ("gpu_memory_utilization", "max_num_batched_tokens", "block_size", "non_torch", "kv_cache_bytes",
            "max_num_seqs", "indexer_kv_dtype")
    serve = {k: options.pop(k) for k in keys if options.get(k) is not None}
    work = Workload.of(work, **options)
    if work.gen < 1:
        raise SymllmError("gen: serving under load needs the tokens each request generates (--gen 1 or more)")
    if (concurrency is None) == (request_rate is None):
        raise SymllmError("concurrency: give the concurrency or the request rate (one of them)")
    rate = None
    if concurrency is not None:
        integer("concurrency", concurrency)
    else:
        rate = Fraction(str(positive_number("request_rate", request_rate)))
    if evaluate is None:  # the formulas (SymPy)
        from symllm.arch import resolved
        from symllm.costs import phases
        config = resolved.spec(config)
        evaluate = lambda w: phases.workload(config, w)  # noqa: E731
    cap = serving.capacity(config, work, evaluate=evaluate, **serve)
    from symllm.costs.figures import engine
    laid = work.replace(engine=engine(work.engine, "inference")["name"])  # the engine's layout, as the capacity's
    s, n = work.seq, work.gen
    most = serving.most_sequences(cap)
    if cap["kv_sized_by"] == "context":  # an engine started for the sequences it serves (module docstring)
        if most < 1:
            raise SymllmError(f"seq: one request of {s + n:,} tokens does not fit {cap['gpu']} beside the weights "
                              f"({cap['engine']} sizes its KV cache by the context)")
        if concurrency is not None and concurrency > most:
            raise SymllmError(f"concurrency: {concurrency:,} sequences of {s + n:,} tokens; {cap['engine']}'s cache "
                              f"holds {most:,} on {cap['gpu']}")
    elif most < 1:  # sequences whose whole context the KV cache holds (DeepSeek-V4: the requests its blocks hold)
        raise SymllmError(f"seq: one request of {s + n:,} tokens does not fit the KV cache "
                          f"({cap['kv_tokens']:,} tokens on {cap['gpu']})")
    # what may bind the sequences running: the KV cache, the engine's own limit (batching.SCHEDULER), and for an
    # engine that runs a prompt whole in the decode step the room its token budget leaves (below)
    limits = {"kv_cache": most}
    ceiling = cap.get("max_num_seqs")
    if ceiling is not None:
        limits["max_num_seqs"] = ceiling
    budget = cap["max_num_batched_tokens"]
    times = {}

    def time(batch: int, seq: int, context: int | None = None) -> dict:
        """The ``time`` group at a point (the bound and ``expected`` alike), each point evaluated once."""
        if (batch, seq, context) not in times:
            times[batch, seq, context] = evaluate(laid.replace(batch=batch, seq=seq, gen=0, context=context))["time"]
        return times[batch, seq, context]

    whole = time(1, s)["expected"]
    if whole["prefill_compute_s"] is None:  # one prompt's prefill does not fit the GPU (count says why)
        raise SymllmError(f"seq: one prompt of {s:,} tokens does not fit on {cap['gpu']} (symllm count says why)")
    mode = batching.prefill_step(work.engine, s + n)
    if mode == "whole":  # the decodes must leave room for the whole prompt in the step's token budget
        if s >= budget:
            raise SymllmError(f"seq: a prompt of {s:,} tokens does not fit a step of {budget:,} tokens "
                              "(max_num_batched_tokens), which runs it whole (no chunked context)")
        limits["max_num_batched_tokens"] = budget - s
    binding = min(limits, key=limits.get)  # the first named of equals
    most = limits[binding]
    fill = partial(batching.prefill_forward_tokens, work.engine, seq=s, budget=budget)  # a forward of its own
    # the most tokens a forward runs, decodes and chunks together (TurboMind's more than its prefill budget)
    from symllm.arch.catalogue import resolve
    forward = partial(batching.forward_budget, work.engine, budget, seqs=ceiling, tp=work.tp,
                      session=resolve(config).max_positions)
    load = dict(s=s, n=n, mode=mode, fill=fill, forward=forward, most=most, concurrency=concurrency, rate=rate)
    expected = _schedule(lambda t: t["expected"], time, **load)
    # the same schedule with each step at the roofline's (hardware.roofline: its own prefill_compute_s,
    # prefill_gemm_s, decode_gemm_s and decode_token_s)
    bound = _schedule(lambda t: t, time, **load)
    return {**expected, "kv_sequences": limits["kv_cache"], "max_running": most, "running_limit": binding,
            "engine": whole["engine"], "seq": s, "gen": n, "max_num_batched_tokens": budget, "prefill_step": mode,
            **({"max_num_seqs": ceiling} if ceiling is not None else {}),
            **({"request_rate": float(rate)} if rate is not None else {}), "bound": bound}


def _schedule(clock, time, *, s: int, n: int, mode: str, fill, forward, most: int, concurrency,
              rate) -> dict:
    """The figures under load (module docstring) with each step timed by ``clock`` (the ``time`` group -> the
    group of times it reads: ``time.expected``, or the roofline's own); ``time(batch, seq, context)`` the
    ``time`` group at a point; ``most`` the most sequences that run; ``fill``: the tokens a forward of prompts of
    its own takes of the prompts waiting (:func:`symllm.costs.batching.prefill_forward_tokens`);
    ``forward(running, prompts, tokens)``: the most tokens a forward runs
    (:func:`symllm.costs.batching.forward_budget`); ``concurrency``, or
    ``rate``
    requests a second. The one schedule both :func:`under_load`'s expected figures and its bound run."""
    one = clock(time(1, s))
    prompt = Fraction(one["prefill_compute_s"])
    attention = prompt - Fraction(one["prefill_gemm_s"])  # its attention core, whatever the chunks
    cache, rows = {}, {}

    def gemms(m: int, decodes: int) -> Fraction | None:
        """One forward's GEMMs over ``m`` token rows, the head on ``decodes + 1`` of them (a share of one below
        zero: a prompt's chunk), at the efficiency of ``m`` rows: a prompt of ``m`` tokens' GEMMs (its head on the
        last) and, where ``decodes``, ``m`` one-token prompts' (the head on each: their difference, the head's time a
        row); None where those prompts are not timed (count times nothing that does not fit: a card the weights
        nearly fill)."""
        for b in (1, m) if decodes and m > 1 else (1,):
            if (m, b) not in rows:
                x = clock(time(b, m // b))["prefill_gemm_s"]
                rows[m, b] = None if x is None else Fraction(x)
            if rows[m, b] is None:
                return None
        last = rows[m, 1]
        return last + ((rows[m, m] - last) * decodes / (m - 1) if decodes and m > 1 else 0)

    def at(c: int) -> dict:
        """The steady state with ``c`` sequences running (``c <= most``)."""
        if c not in cache:
            # a decode step alone (its memory is the KV cache's, which the capacity already holds)
            decode = clock(time(c, 1, s + n // 2))
            if decode["decode_token_s"] is None:  # count's peak at batch c is over the card (it times nothing)
                raise SymllmError(f"concurrency: {c:,} sequences running do not fit count's inference peak")
            joins = Fraction(c, n)  # the prompts that join a step
            chunk, extra, admitted = s, prompt, 1  # untimed: a forward a prompt, its GEMMs at its own s rows
            step = Fraction(decode["decode_token_s"])  # a decode step alone, the prompts' share added below
            if mode == "static":  # a batch at a time: its c prompts in one forward (count's prefill at batch c),
                # then its decodes to the end, the next batch after it
                batch = clock(time(c, s))["prefill_compute_s"]
                ttft = prompt * c if batch is None else Fraction(batch)
            else:
                if mode == "separate":
                    # the decodes wait while the prompts waiting (at least one: where fewer than one join a step,
                    # one every n/c steps) run in forwards of their own, all in one where they fit the budget; their
                    # first tokens come a step (the one they waited out) after those forwards
                    admitted = max(Fraction(1), joins)
                    together = _admitted(gemms, admitted, s, fill, attention)
                    extra = extra if together is None else together / admitted
                else:  # its chunks in the decode step's forward, one GEMM of c + q rows
                    chunk = s if mode == "whole" else min(s, max(1, forward(c, 1, s) - c))
                    # the decode step's GEMMs, less the bound's decodes' attention core, which a decode step alone hides
                    # under its stream and a step with a prompt's rows (compute-bound) does not
                    alone = Fraction(decode["decode_gemm_s"])
                    alone -= max(Fraction(0), Fraction(decode.get("decode_core_s") or 0) - Fraction(
                        decode["decode_token_s"]) + Fraction(decode.get("decode_token_comm_s") or 0) + alone)
                    sizes = {chunk: s // chunk, s % chunk: 1} if s % chunk else {chunk: s // chunk}
                    # at most one chunk a step (not only a chunk's tokens: a prompt cut in two brings two chunks, and
                    # at 1,876 tokens cut 1,870 + 6 one joining a step puts two chunks in most steps, its 6 rows not
                    # hidden under a decode step alone): each chunk in a step of its own
                    if joins * sum(sizes.values()) <= 1:
                        # each chunk's rows added to the decode step's GEMM, never more than the chunk's own GEMMs as a
                        # forward of its own (the decode and prompt tables can disagree: a one-token chunk, llama.cpp)
                        mixed = [(k, gemms(c + q, c), gemms(q, 0)) for q, k in sizes.items()]
                        if all(None not in m for m in mixed):  # else: as a forward of its own (no saving counted)
                            extra = attention + sum(k * max(Fraction(0), min(g - alone, own)) for k, g, own in mixed)
                    else:  # the step runs its decodes and every chunk that joins together: f forwards of <= B rows
                        # no more than a forward of its own a prompt (the tables can disagree: one-token prompts)
                        extra = min(_together(gemms, c, joins * s, joins, forward(c, joins, joins * s), alone,
                                               attention) or extra, prompt)
                step += joins * extra
                ttft = ceil(s / chunk) * step + admitted * extra
            e2e = ttft + (n - 1) * step
            cache[c] = {"itl": step, "ttft": ttft, "e2e": e2e, "rate": Fraction(c) / e2e}
        return cache[c]

    top = at(most)
    if concurrency is None:  # Little's law: the concurrency whose request rate is the one asked for
        saturated = rate > top["rate"]
        c = most if saturated else _smallest(lambda k: at(k)["rate"] >= rate, 1, most)
        point = at(c)
        sent = c
    else:
        saturated = concurrency > most
        c = min(concurrency, most)
        point = at(c)
        sent = concurrency
    queued = max(0, sent - most)
    wait = Fraction(queued) / point["rate"] if queued else Fraction(0)  # the queue ahead, at the running rate
    knee = _smallest(lambda k: at(k)["rate"] >= SATURATION * top["rate"], 1, most)
    # what finishes a second: at a rate it serves, what arrives (what comes in goes out; ``c`` running could
    # serve more); past it, the most it serves while the queue, and so the time to a first token, grows
    served = rate if concurrency is None and not saturated else point["rate"]
    unbounded = concurrency is None and saturated
    return {"concurrency": sent, "running": c, "queued": queued,
            "ttft_s": None if unbounded else float(point["ttft"] + wait),
            "itl_s": inter_token_s(n, point["itl"]), "step_s": float(point["itl"]),
            "e2e_s": None if unbounded else float(point["e2e"] + wait),
            "output_tokens_per_s": float(served * n), "requests_per_s": float(served),
            "saturation_concurrency": knee, "saturated": saturated}


#: what text prints for an inter-token latency :func:`inter_token_s` gives as None (JSON: null)
NO_INTER_TOKEN = "n/a (one output token)"


def inter_token_s(n: int, step) -> float | None:
    """The inter-token latency, in seconds, of requests of ``n`` output tokens whose decode step takes ``step``
    seconds; None for one output token, which has no gap after a first: vLLM's serving benchmark
    (vllm-project/vllm, vllm/benchmarks/serve.py ``calculate_metrics``, once benchmarks/benchmark_serving.py; the
    code index's def9ce8, read 2026-11-29) counts a request's TPOT only where ``output_len > 1`` and its ITLs are
    the gaps between successive tokens, none for one token.

    >>> inter_token_s(2, Fraction(1, 40)), inter_token_s(1, Fraction(1, 40))
    (0.025, None)
    """
    return None if n == 1 else float(step)


def _together(gemms, decodes: int, tokens: Fraction, joins: Fraction, budget: int, alone: Fraction,
              attention: Fraction) -> Fraction | None:
    """What one of ``joins`` prompts adds to a step that runs ``decodes`` decode rows and ``tokens`` prompt rows
    together (more than one chunk a step): the step's rows in ``f = ⌈(decodes + tokens) / budget⌉`` forwards of
    equal rows, each one GEMM reading the weights once (``gemms(rows, heads − 1)``, the head on the decode rows and
    each prompt's last; the steady state's fractions of a row and a head rounded up), less the decode step's own
    GEMMs, plus each prompt's attention core; shared out over the prompts. None where those GEMMs are not timed."""
    total = decodes + tokens
    forwards = ceil(total / budget)
    rows = ceil(total / forwards)
    g = gemms(rows, min(rows - 1, ceil((decodes + joins) / forwards) - 1))
    if g is None:
        return None
    return attention + max(Fraction(0), forwards * g - alone) / joins


def _admitted(gemms, prompts: Fraction, s: int, fill, attention: Fraction) -> Fraction | None:
    """What ``prompts`` prompts of ``s`` tokens admitted together take in forwards of their own (a ``separate``
    engine's prefill step, the decodes waiting), in the steady state: forwards of ``T = fill(prompts)`` tokens each
    (:func:`symllm.costs.batching.prefill_forward_tokens`: SGLang's cut to the budget and under max_prefill_tokens,
    vLLM V0's whole prompts), as many as the prompts'
    ``prompts·s`` tokens fill; each forward one GEMM reading the weights once at the efficiency of its ``⌈T⌉`` rows
    (``gemms``, the head on each prompt's last: ``⌈T⌉/s`` of them a forward), plus each prompt's own attention core.
    None where those GEMMs are not timed."""
    tokens = fill(prompts)
    rows = ceil(tokens)
    g = gemms(rows, Fraction(rows, s) - 1)
    return None if g is None else prompts * s / rows * g + prompts * attention


def _smallest(holds, low: int, high: int) -> int:
    """The smallest ``k`` in ``[low, high]`` where ``holds(k)`` (monotone; ``high`` if none before it),
    by bisection.

    >>> _smallest(lambda k: k * k >= 50, 1, 100)
    8
    """
    while low < high:
        mid = (low + high) // 2
        if holds(mid):
            high = mid
        else:
            low = mid + 1
    return low
