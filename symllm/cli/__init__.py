"""The ``symllm`` command line: a thin layer over the public API (no formulas here).

Bad input prints one line, ``symllm: error: <field>: <what is wrong>``, on stderr and exits 2.

:func:`main` (the console entry point ``symllm.cli:main``) parses with :mod:`symllm.cli.parser`, runs a
subcommand of :mod:`symllm.cli.commands`, which prints through :mod:`symllm.cli.lines`.
"""
from __future__ import annotations

import os
import signal
import sys

from symllm import _is_program, _start_program

_start_program()  # (done already when importing symllm started the command: its Ctrl-C handler)

import warnings  # noqa: E402

from symllm.errors import SymllmError  # noqa: E402
from symllm.files import check_output  # noqa: E402
from symllm.cli.lines import WIDTH, fit_line  # noqa: E402
from symllm.cli.parser import EXAMPLES, build_parser  # noqa: E402


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C, raised where the command is: a KeyboardInterrupt to every ``except`` and ``finally`` on the
    way, yet not of that exact class, which CPython checks by identity where code that exec() or eval() runs
    from a string ends with one (a dataclass's methods, a namedtuple's: built by the command's lazy imports).
    There CPython 3.11 marks the exception unhandled even when main() catches it, and ``python -m symllm``
    then ends by killing itself with SIGINT (status -2 after the line ``symllm: interrupted``) instead of
    exiting 130 (Python/pythonrun.c run_eval_code_obj, Modules/main.c pymain_run_module and Py_RunMain;
    python/cpython#129975 sets the mark only for an exception no one caught)."""


class _Terminated(BaseException):
    """SIGTERM, raised where the command is so that ``finally`` clauses run (write_atomic removes its
    temporary file); main() turns it into one line and exit status 143."""


class _Signals:
    """The first SIGINT or SIGTERM main() received (None: none yet)."""
    first: int | None = None


def _on_signal(signum, frame):
    """The first Ctrl-C or SIGTERM raises where the command is (:class:`_Interrupted`, :class:`_Terminated`),
    so that ``finally`` clauses clean up; a second one while they run is ignored (it killed the process
    midway through removing a temporary file)."""
    if _Signals.first is not None:
        return
    _Signals.first = signum
    raise _Interrupted() if signum == signal.SIGINT else _Terminated()


def _unraisable(unraisable) -> None:
    """The signal's exception raised where Python cannot pass it on (a weakref callback of the import
    system, a ``__del__``) is not shown ("Exception ignored in ..." and a traceback): main() reports the
    signal when the command returns. Any other is shown as Python shows it."""
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, _Terminated)) and _Signals.first is not None:
        return
    sys.__unraisablehook__(unraisable)


def _fail(message: str, code: int = 2) -> int:
    try:
        print(f"symllm: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return code


def _silence_stdout() -> None:
    """After stdout failed (a full device, a closed pipe): point it at /dev/null so that the flush at
    exit does not print "Exception ignored ..." (the recipe of Python's signal documentation)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # pytest's capture, a StringIO: nothing to silence
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """symllm's own warnings (an untrusted cache, :class:`symllm.numbers.cache.CacheWarning`) as one line
    ``symllm: warning: ...`` on stderr; any other as Python shows it."""
    if category.__module__.startswith("symllm."):
        print(f"symllm: warning: {fit_line(str(message), WIDTH - len('symllm: warning: '))}", file=sys.stderr)
    else:
        warnings._showwarnmsg_impl(warnings.WarningMessage(message, category, filename, lineno, file, line))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status: 0, or 2 with one line ``symllm: error: ...`` on
    stderr for bad input or a failed write (also of stdout: ``> /dev/full``), 130 with ``symllm:
    interrupted`` for Ctrl-C, 143 with ``symllm: terminated`` for SIGTERM (an output file's temporary
    file is removed first; see :func:`symllm.files.write_atomic`); a second signal while that cleanup
    runs, and any signal once the ``symllm`` process only has to exit, is ignored.

    >>> main(["derive", "--component", "rmsnorm", "--format", "latex", "--seq", "0"])
    2
    """
    _Signals.first = None
    try:
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    except (ValueError, OSError):  # not the main thread: leave signals alone
        previous = None
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        given = sys.argv[1:] if argv is None else argv
        named = given[0] if given and given[0] in EXAMPLES else None  # a subcommand: only its parser
        args = build_parser(named).parse_args(given)
        if getattr(args, "output", None) is not None:  # every -o: one rule, before anything is computed
            check_output(args.output)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code = args.func(args)
        sys.stdout.flush()  # a full device fails here, not in the interpreter's flush at exit
        if _Signals.first is not None:  # raised where it could not be passed on (_unraisable): reported now
            raise _Interrupted() if _Signals.first == signal.SIGINT else _Terminated()
        return code
    except SymllmError as e:
        return _fail(f"error: {fit_line(str(e), WIDTH - len('symllm: error: '))}")
    except BrokenPipeError:  # `symllm ... | head`: the reader has all it wanted
        _silence_stdout()
        return 0
    except OSError as e:  # only stdout is written without write_atomic (which raises SymllmError)
        _silence_stdout()
        return _fail(f"error: output: cannot write to stdout: {e.strerror or e}")
    except RecursionError:
        return _fail("error: input: nested too deeply to process")
    except MemoryError:  # numpy's ArrayMemoryError too: what was asked for needs more memory than there is
        return _fail("error: out of memory (ask for less at once)")
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except _Terminated:
        return _fail("terminated", 143)
    except Exception:
        if _Signals.first is None:
            raise
        # the signal surfaced as another error: numpy's C import turns the KeyboardInterrupt raised inside it
        # into "ImportError: PyCapsule_Import could not import module ..."; it is still the signal
        return _fail("interrupted", 130) if _Signals.first == signal.SIGINT else _fail("terminated", 143)
    finally:
        sys.unraisablehook = hook
        if previous is not None and argv is None and _is_program():
            # only the exit is left: a signal now (a first one after the command finished, or a second one
            # after the first) has nothing to interrupt and must not kill the exit (status -2, no summary)
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
        elif previous is not None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
