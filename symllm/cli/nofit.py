"""The line under a serving plan none of whose layouts serves a sequence (``symllm plan``): the weights against the
cards, the fewest of the card whose plan serves one, and a weight format that serves one on the cards given; the
training plan's line beside it (the fewest whose training peak fits, :func:`symllm.studies.plans.fewest_gpus`).
"""
from __future__ import annotations

from symllm.errors import SymllmError
from symllm.present.format import human_bytes

#: the weight formats tried where the weights alone exceed the cards, fewest bits last (8-bit FP8 with block
#: scales, 4-bit AWQ: formats vLLM, SGLang and TensorRT-LLM load; symllm.costs.weight_formats)
SMALLER_FORMATS = ("fp8-block", "awq")

#: how many times the fewest of the card whose inference peak fits plan tries, at most (the engine's reserve and
#: profiled prefill sit beside that peak)
MORE_TRIES = 2


def serving_words(result, config, given: dict, serve: dict | None = None) -> str:
    """Why no layout of a serving plan ``result`` (:func:`symllm.studies.plans.plan`'s, of ``config``) serves a
    sequence, and what would: the weights against the cards' memory, the fewest of the card whose serving plan keeps
    a row (from the fewest whose inference peak fits, :func:`symllm.studies.plans.fewest_gpus` over tp and pp, up to
    :data:`MORE_TRIES` times as many; the layout that holds the most sequences there), and the first of
    :data:`SMALLER_FORMATS` whose plan on as many keeps one. ``given``: plan's workload options, ``serve``: its
    serving options.

    >>> from symllm.studies import plans
    >>> print(serving_words(plans.plan("llama3.1-70b", 1, "h100-sxm"), "llama3.1-70b", {}))
    ... # doctest: +NORMALIZE_WHITESPACE
    No layout of 1 x h100-sxm serves a sequence: the weights alone, 131.42 GiB, exceed the cards' 1 x 80.00 GiB =
    80.00 GiB. The fewest h100-sxm that serve it: 3 (tp 1 pp 3 holds 96 sequences; symllm plan). On 1:
    --weight-format awq (37.04 GiB of weights).
    """
    from symllm.costs import accelerators
    from symllm.costs import phases
    from symllm.costs.workloads import Workload
    from symllm.studies import plans

    def weights(**extra) -> int:
        return phases.workload(config, Workload.of(None, gpu=gpu, **{**given, **extra}))["memory"]["weights"]

    def plan(n: int, **extra):
        try:
            return plans.plan(config, n, gpu, serve=serve, **{**given, **extra})
        except SymllmError:  # (a format the engine or the model refuses)
            return None

    count, gpu, context = result.gpus, result.gpu, result.workload["context"]
    memory = accelerators.of(Workload.of(None, gpu=gpu, **given)).memory
    held, cards = weights(), count * memory
    words = [f"No layout of {count:,} x {gpu} serves a sequence: "
             + (f"the weights alone, {human_bytes(held)}, exceed the cards' {count:,} x {human_bytes(memory)} = "
                f"{human_bytes(cards)}." if held > cards else
                f"the weights, {human_bytes(held)}, fit the cards' {human_bytes(cards)}, but no replica's KV cache "
                f"holds one sequence of {context:,} tokens beside them (count --serve).")]
    least = plans.fewest_gpus(config, gpu=gpu, ranks=("tp", "pp"), training=False, **given)
    start = max(count + 1, least["gpus"] if least else count + 1)
    for n in range(start, start * MORE_TRIES + 1):
        p = plan(n)
        if p is not None and p.rows:
            at, most = max(p.sequences.items(), key=lambda held: held[1])
            words.append(f"The fewest {gpu} that serve it: {n:,} ({at} holds {most:,} sequences; symllm plan).")
            break
    else:
        words.append(f"No plan of {start:,} to {start * MORE_TRIES:,} x {gpu} serves it either.")
    for name in SMALLER_FORMATS:
        smaller = weights(weight_format=name)
        p = plan(count, weight_format=name) if smaller < held else None
        if p is not None and p.rows:
            words.append(f"On {count:,}: --weight-format {name} ({human_bytes(smaller)} of weights).")
            break
    else:
        words.append(f"No weight format of {', '.join(SMALLER_FORMATS)} serves it on {count:,}.")
    return " ".join(words)
