"""symllm: closed-form parameters, FLOPs and memory of LLaMA-family transformers, in SymPy.

The headline: :func:`params` (exact counts), :func:`workload` (FLOPs, bytes and time of a
:class:`Workload`), :func:`derive` and :func:`report` (derivations and reports), :class:`Sweep`
(quantities over grids of configs), :func:`spec` and :func:`load` (a config resolved) and
:mod:`symllm.scaling` (scaling-law tools). ``symllm.__all__`` is every name symllm offers besides its
modules, defined once in :mod:`symllm.api`. The layers below are subpackages, each importing only those
before it: :mod:`symllm.numbers` (compiled kernels, the on-disk cache), :mod:`symllm.arch` (symbols,
components, configs, specs), :mod:`symllm.costs` (phases, stacks, parallel layouts, LoRA, hardware,
scaling), :mod:`symllm.studies` (sweeps, plans, ``count``'s fast path), :mod:`symllm.present`
(derivations, rendering).

>>> import symllm
>>> symllm.params("llama3.1-8b")["total"]
8030261248
>>> symllm.workload("llama2-13b", batch=1, seq=1)["flops"]["prefill"]
25704038400
>>> symllm.arch.components.attention().total("params")
2*d*d_h*n_h + 2*d*d_h*n_kv
"""
import os as _os
import sys as _sys


def _exit_at_once(signum, frame):  # pragma: no cover -- runs in a process being started
    """Ctrl-C or SIGTERM while the ``symllm`` command starts: nothing is written yet, so one line and the
    signal's exit status (130, 143) at once, never a traceback from an import (numpy's, SymPy's)."""
    try:
        _os.write(2, b"symllm: interrupted\n" if signum == 2 else b"symllm: terminated\n")  # 2: SIGINT
    finally:
        _os._exit(128 + signum)


def _is_program() -> bool:
    """Whether this process is the ``symllm`` command (the console script or ``python -m symllm``), not a
    program that imports symllm (whose signal handlers are left alone).

    >>> _is_program()
    False
    """
    main_module = _sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    script = _os.path.basename(getattr(main_module, "__file__", None) or "")
    if getattr(spec, "name", None) == "symllm.__main__" or script in (
            "symllm", "symllm.exe", "symllm-script.py", "symllm-script.pyw"):
        return True
    argv = getattr(_sys, "orig_argv", ())  # `python -m symllm` imports this package before __main__ is set
    return any(a == "-msymllm" or (a == "-m" and argv[i + 1:i + 2] == ["symllm"]) for i, a in enumerate(argv))


_started = []  # whether _start_program() ran


def _start_program() -> None:
    """In the ``symllm`` process only (:func:`_is_program`), once: the start-up's signal handlers and the
    freeze at exit. Called first thing below, before any other import of symllm's (the command's start-up
    imports numpy and SymPy), and again by symllm.cli (``runpy.run_module("symllm")`` imports this package
    before it makes symllm.__main__ the main module); symllm.cli.main() then installs its own handlers,
    which clean up an output file. What runs before this package (the interpreter's own start-up, ``site``)
    is Python's: a signal there ends the process as it ends any Python program."""
    if _started or not _is_program():
        return
    _started.append(True)
    import _signal  # built in: nothing to look for on disk
    try:
        _signal.signal(_signal.SIGINT, _exit_at_once)
        _signal.signal(_signal.SIGTERM, _exit_at_once)
    except (ValueError, OSError):  # not the main thread
        pass
    import atexit
    import gc
    # At exit the interpreter collects garbage over every object still alive, several times while it tears
    # the modules down: with SymPy's closed forms loaded, a quarter of a warm `symllm count --seq 9`. This
    # handler, the first registered and so the last to run, moves them all to the permanent generation,
    # which those collections skip; they are still freed by reference counting (symllm closes its files).
    atexit.register(gc.freeze)


_start_program()

from symllm._lazy import attributes  # noqa: E402

__version__ = "0.1.0"

from symllm.api import FACE as _FACE, MODULES as _MODULES  # noqa: E402  (the face, defined once: symllm/api.py)

#: every name symllm offers besides its modules (symllm.api.FACE), each loaded on first use
__all__ = list(_FACE)

__getattr__, _dir = attributes(__name__, {**_FACE, **{name: (module, None) for name, module in _MODULES.items()}})


def __dir__():
    return sorted(set(_dir()) | {"__version__", "__all__"})
