"""Which options a command's answer uses, and one warning line for those it does not: a derived quantity's
(derive), a sweep's, a plot's; options that print nothing without another (``--price`` without ``--tokens``).
"""
from __future__ import annotations

import sys

from symllm.cli.lines import wrap_text

__all__ = ["HARDWARE", "TIME_ONLY", "TIMED_HARDWARE", "TIMED_TRAINING", "APPLIES_TO", "ROOFLINE_USES", "warn_untimed",
           "warn_ignored", "not_applying", "uses"]


#: derive's options that change one quantity only (every workload option is moot for parameters)
#: workload options only count and report use (fit and time on an accelerator): derive shows none of them
HARDWARE = ("gpu", "gpu_memory", "gpu_bandwidth", "gpu_flops", "network", "tokens", "price")
#: the options only a time reads (its efficiencies, bubble, power): no count, memory or bytes sent moves with them
#: (llama.cpp's -ub and -fa: its expected prompt, and its serving memory under count --serve alone)
TIME_ONLY = ("power_cap", "compute_dtype", "micro_batches", "schedule", "virtual_stages", "tp_overlap", "ubatch",
             "flash_attn")
#: of HARDWARE, those only a time reads (a plot's --gpu and --gpu-memory draw the card's capacity)
TIMED_HARDWARE = ("network", "tokens", "price")
#: the options only a training step's time or a network's reads (not one GPU's prefill and decode)
TIMED_TRAINING = ("micro_batches", "schedule", "virtual_stages", "tp_overlap", *TIMED_HARDWARE)
APPLIES_TO = {"phase": "flops", "attention": "flops", "memory": "memory", "dtype": "memory", "kv_dtype": "memory",
               "act_dtype": "memory", "group_size": "memory", "zero_stage": ("memory", "comm"),
               "dp": ("memory", "comm"), "recompute": ("flops", "memory", "comm"), "tp": "comm", "pp": "comm",
               "ep": "comm", "sp": "comm",  # (per-GPU numbers: count's and the sweep's too)
               # LoRA (symllm.costs.finetune): derive shows its training peak (--memory training_peak)
               "lora_rank": "memory", "lora_targets": "memory", "qlora": "memory",
               "weight_format": "memory", "kv_format": "memory"}  # β_w, β_kv of a format (symllm.costs.formats)


#: the options derive's roofline quantities use (symllm.costs.hardware); --gpu applies to nothing else
ROOFLINE_USES = {"ridge": {"gpu", "gpu_bandwidth", "gpu_flops", "dtype", "act_dtype"},
                  "decode_batch": {"gpu", "gpu_bandwidth", "gpu_flops", "dtype", "kv_dtype", "act_dtype",
                                   "group_size", "seq", "context", "attention"}}


def not_applying(quantity: str, given) -> list[str]:
    """The flags given to derive (``given``: the workload options' names) that its ``quantity`` does not use.

    >>> not_applying("memory", ["phase", "dtype", "gpu"]), not_applying("ridge", ["gpu", "tp"])
    (['--phase', '--gpu'], ['--tp'])
    """
    from symllm.costs.workloads import options as workload_options
    flags = {name: opt.flag or "--" + name.replace("_", "-") for name, (_, opt) in workload_options().items()}
    flags.update(phase="--phase", memory="--memory")
    if quantity in ROOFLINE_USES:
        return [flags[k] for k in given if k not in ROOFLINE_USES[quantity]]
    return [flags[k] for k in given
            if quantity == "params" or k in HARDWARE + TIME_ONLY or quantity not in uses(APPLIES_TO.get(k, quantity))]


def uses(quantities) -> tuple:
    """The quantities an option applies to, as a tuple (``APPLIES_TO`` names one or several).

    >>> uses(APPLIES_TO["recompute"]), uses(APPLIES_TO["tp"])
    (('flops', 'memory', 'comm'), ('comm',))
    """
    return (quantities,) if isinstance(quantities, str) else quantities


def warn_untimed(given: dict, timed: bool, needs: str = "--gpu") -> None:
    """A warning for what prints nothing: ``--tokens`` where no training step is timed (``timed``: without
    ``needs``), ``--price`` without the ``--tokens`` whose GPU-hours it prices, and ``--tp-overlap`` without
    the ``--sp`` collectives it overlaps (Megatron-LM refuses ``--tp-comm-overlap`` without
    ``--sequence-parallel``; a plan enumerates sp itself).

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     warn_untimed({"price": 2}, timed=True)
    >>> err.getvalue().strip()
    'symllm: warning: --price does not apply without --tokens (ignored)'
    """
    lacks = {"tokens": [] if timed else [needs],
             "price": ([] if "tokens" in given else ["--tokens"]) + ([] if timed else [needs]),
             "tp_overlap": ([] if timed else [needs]) + ([] if given.get("sp") or needs == "--train" else ["--sp"])}
    for k, missing in lacks.items():
        if k in given and given[k] is not False and missing:
            print(f"symllm: warning: --{k.replace('_', '-')} does not apply without {' and '.join(missing)} "
                  "(ignored)", file=sys.stderr)


def warn_ignored(flags, where: str, then: str = "") -> None:
    """One warning line for the options given that a command's answer does not use, once for every door
    (derive's quantity, a sweep, a plot): ``flags`` as typed, ``where`` what they do not apply to, ``then`` where
    they do.

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     warn_ignored(["--tokens"], "to plot memory")
    >>> err.getvalue().strip()
    'symllm: warning: --tokens does not apply to plot memory (ignored)'
    """
    if flags:
        print(wrap_text(f"symllm: warning: {', '.join(flags)} {'does' if len(flags) == 1 else 'do'} not apply "
                        f"{where} (ignored{'; ' + then if then else ''})"), file=sys.stderr)
