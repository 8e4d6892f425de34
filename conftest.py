"""Hooks for the whole pytest run: the doctests in symllm/ as well as tests/ (tests/conftest.py holds the
tests' own fixtures and the Hypothesis profiles).

* **Hermetic cache.** The suite gets a fresh, empty ``SYMLLM_CACHE_DIR`` before anything is collected,
  removed at the end, so nothing reads or writes the user's ``~/.cache/symllm`` and no result or timing
  depends on what an earlier run left there. The xdist workers share it (what one compiled, the other reads
  back: symllm's cache is written by atomic renames, so two processes may fill it at once). Subprocesses
  the tests start inherit it. The ``symllm_cache`` fixture (tests/conftest.py) gives its path.
* **Fewer full garbage collections.** Python collects its oldest generation whenever a quarter more
  objects have survived since the last time; each such collection walks every live object, and a test
  process holds torch, transformers and thousands of composed closed forms (about 30 such, half a second
  each, were 6% of a one-process run). The test processes run one after a thousand collections of the
  middle generation instead (about once per run); the two younger generations keep Python's thresholds, and
  the peak memory and timings the suite checks are measured in subprocesses, which keep Python's defaults.
* **A larger SymPy cache.** SymPy memoises its constructors and assumption queries in an LRU of 1,000
  entries (``SYMPY_CACHE_SIZE``); composing one large model's closed forms overflows it, so the same
  ``ceiling`` or ``Max`` was evaluated again and again. The test processes (and the subprocesses they
  start) get 100,000, set here before anything imports SymPy: a memo, so no result changes (the 91
  reports and derivations of the cold-path benchmark are byte-identical), 8% less CPU on cold reports.
* **One torch thread.** torch runs its CPU kernels on one OpenMP thread per core, and those threads keep
  spinning a while after each parallel region, waiting for more work: on the 2-core machine that spin was
  about 5% of the one-process run's CPU time (and two xdist workers each had two threads on two cores). The
  suite's models are a few layers wide, and the oracles it reads from torch (FlopCounterMode, MemTracker,
  saved tensors, numel) count; they do not depend on threads. ``OMP_NUM_THREADS`` is set to 1 here, before
  anything imports torch, unless the environment sets it; subprocesses inherit it.
* **One full collection at the end, none at exit.** After the last test pytest collects garbage twice, so
  that an exception raised in a ``__del__`` is reported, and the interpreter, shutting down, collects again
  several times while it tears modules down: each walks the 1.6 million objects a test process holds, 3-4
  CPU-seconds for nothing. Here one collection at the end of the session does what pytest's do (its hook
  for such exceptions is still in place), then every object is moved to the permanent generation
  (``gc.freeze``), which all those later collections skip; the objects are still freed by reference
  counting, and the process's memory goes back to the system anyway. The objects alive once the tests are
  collected (torch's, transformers', SymPy's modules) are frozen too: every full collection of the run
  skips them.
* **Doctests of modules that need an optional package** (symllm/reference.py needs torch): without
  the package, and only outside CI, their collection is reported as skipped, naming the package; under
  ``CI=true`` a module that cannot be imported is an error, as every other one is (no doctest is dropped
  silently: pyproject.toml no longer passes ``--doctest-ignore-import-errors``).
"""
from __future__ import annotations

import gc
import importlib
import os
import shutil
import tempfile

import pytest
from _pytest.doctest import DoctestModule

#: CI=true (any non-empty value): every optional dependency is installed, so a missing one is a failure
CI = bool(os.environ.get("CI"))

#: library modules whose doctests need an optional package: file name -> the package
NEEDS = {"reference.py": "torch"}

_ENV = "SYMLLM_CACHE_DIR"

#: SymPy's memo size for the suite (see the module docstring); read once, when SymPy is first imported
os.environ.setdefault("SYMPY_CACHE_SIZE", "100000")
#: torch's CPU threads for the suite (see the module docstring); read when torch is first imported
os.environ.setdefault("OMP_NUM_THREADS", "1")


#: set by the pytest process that starts the xdist workers: the suite's cache folder, which they share
_SUITE = "SYMLLM_SUITE_CACHE_DIR"
#: entries the suite's cache keeps (symllm.numbers.cache trims the least recently used half past this): the
#: whole suite's kernels and tables, so that no worker compiles again what it or the other one has stored
_SUITE_ENTRIES = 16384
#: middle-generation collections between two full ones in a test process (Python's default: 10)
_FULL_GC_EVERY = 1000


def pytest_configure(config):
    """Give the suite its own empty kernel / count / report cache (see the module docstring): the first
    pytest process makes it; xdist's workers, started after this hook, inherit its path and share it. And
    collect the oldest generation of garbage rarely (see the module docstring)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _FULL_GC_EVERY)
    from symllm.numbers import cache
    cache.CACHE_ENTRIES = _SUITE_ENTRIES
    shared = os.environ.get(_SUITE)
    if shared and os.environ.get("PYTEST_XDIST_WORKER") and os.path.isdir(shared):
        config._symllm_cache = (None, None)  # the controller's folder: it removes it
        os.environ[_ENV] = shared
        return
    config._symllm_cache = (os.environ.get(_ENV), tempfile.mkdtemp(prefix="symllm-cache-"))
    os.environ[_ENV] = os.environ[_SUITE] = config._symllm_cache[1]


def pytest_collection_finish(session):
    """Freeze what collection left alive (see the module docstring)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """The run's last full collection, then a frozen heap (see the module docstring)."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config):
    before, folder = getattr(config, "_symllm_cache", (None, None))
    if folder is None:
        return
    shutil.rmtree(folder, ignore_errors=True)
    os.environ.pop(_SUITE, None)
    if before is None:
        os.environ.pop(_ENV, None)
    else:
        os.environ[_ENV] = before


def _missing(package: str) -> bool:
    try:
        importlib.import_module(package)
    except ImportError:
        return True
    return False


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """A doctest module that failed to import for want of its optional package: skipped locally."""
    report = yield
    package = NEEDS.get(collector.path.name)
    if (report.failed and package and isinstance(collector, DoctestModule) and not CI and _missing(package)):
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), None,
                           f"{collector.path.name}'s doctests need {package}, which is not installed "
                           "(a failure under CI=true)")
    return report
