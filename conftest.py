"""Hooks for the whole pytest run: the doctests in symllm/ as well as tests/ (tests/conftest.py holds the
tests' own fixtures and the Hypothesis profiles).

* **Hermetic cache.** Each pytest process (each xdist worker too) gets a fresh, empty ``SYMLLM_CACHE_DIR``
  before anything is collected, removed at the end, so nothing reads or writes the user's
  ``~/.cache/symllm`` and no result or timing depends on what an earlier run left there. Subprocesses
  the tests start inherit it. The ``symllm_cache`` fixture (tests/conftest.py) gives its path.
* **Doctests of modules that need an optional package** (symllm/reference.py needs torch): without
  the package, and only outside CI, their collection is reported as skipped, naming the package; under
  ``CI=true`` a module that cannot be imported is an error, as every other one is (no doctest is dropped
  silently: pyproject.toml no longer passes ``--doctest-ignore-import-errors``).
"""
from __future__ import annotations

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


def pytest_configure(config):
    """Give this process its own empty kernel / count / report cache (see the module docstring)."""
    config._symllm_cache = (os.environ.get(_ENV), tempfile.mkdtemp(prefix="symllm-cache-"))
    os.environ[_ENV] = config._symllm_cache[1]


def pytest_unconfigure(config):
    before, folder = getattr(config, "_symllm_cache", (None, None))
    if folder is None:
        return
    shutil.rmtree(folder, ignore_errors=True)
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
