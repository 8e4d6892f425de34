"""Shared test helpers: the published parameter totals, a CLI runner, optional imports that skip
locally but fail under CI, and the Hypothesis profiles.

Test modules import the plain helpers with ``from .conftest import PUBLISHED, requires``; the
fixtures (``published``, ``cli``, ``torch``, ``reference``) are requested by name as usual.
"""
from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

#: CI=true (any non-empty value): optional dependencies are installed, so a missing one is a failure
CI = bool(os.environ.get("CI"))

DATA = Path(__file__).parent / "data"

#: Parameter totals published for the presets outside symllm (checkpoint metadata, papers, run logs):
#: preset name -> {"total": int, "source": str}. Loaded at import so that parametrize can use it.
PUBLISHED: dict[str, dict] = json.loads((DATA / "published_params.json").read_text(encoding="utf-8"))

# Deterministic in CI (a failure reproduces), exploring locally; no deadline (shared machines are noisy).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if CI else "dev")


def requires(name: str) -> ModuleType:
    """Import and return module ``name`` (dotted names too, e.g. ``"dask.array"``).

    When it cannot be imported the calling test is skipped, or, called at module level, the whole
    module is. Under CI=true the environment installs every optional dependency (torch, dask,
    nbclient, ...), so there a missing module is a hard failure, never a skip.
    """
    __tracebackhide__ = True  # report the skip at the caller, not here
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if CI:
            pytest.fail(f"CI=true and {name} cannot be imported: {e}", pytrace=False)
        pytest.skip(f"{name} is not installed ({e})", allow_module_level=True)


@pytest.fixture(scope="session")
def published() -> dict[str, dict]:
    """Published parameter totals: preset name -> {"total": int, "source": str} (see PUBLISHED)."""
    return PUBLISHED


@dataclass(frozen=True)
class CliResult:
    """What one ``symllm.cli.main(argv)`` call did: its exit status and everything it printed."""
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run the command line in-process: ``cli(["count", "llama3.1-8b"])`` returns a CliResult.

    Output printed before the call is discarded, so each result holds that call's output alone; an
    argparse exit (``--help``, a bad choice) is returned as its status rather than raised. Draining
    capsys around each call also makes the fixture safe to reuse across Hypothesis examples."""
    from symllm.cli import main

    def run(argv) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        if code is None:
            code = 0
        return CliResult(code, out, err)
    return run


@pytest.fixture(scope="session")
def torch() -> ModuleType:
    """The torch module (see requires: skipped when missing, a failure under CI=true)."""
    return requires("torch")


@pytest.fixture(scope="session")
def reference(torch) -> ModuleType:
    """symllm.reference, the independent torch model the closed forms are checked against."""
    from symllm import reference
    return reference


def saved_during(forward, model) -> int:
    """Bytes of the distinct storages autograd saves for backward while ``forward()`` runs (each storage
    once), ``model``'s parameters excluded: torch's own count of a forward's saved activations."""
    torch = requires("torch")
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())
