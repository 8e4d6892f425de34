"""The package's shape: an acyclic module graph, presentation that computes nothing, one spec and one
workload that every command shares."""
import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import symllm

PACKAGE = Path(symllm.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    """The symllm modules ``path`` imports anywhere in it (module level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y / from . import x
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("symllm."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("symllm."))
    return out


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return {m: _imports(PACKAGE / f"{m}.py") & modules for m in sorted(modules)}


def test_module_graph_is_acyclic():
    """No symllm module imports, directly or through others, a module that imports it back."""
    try:
        order = list(TopologicalSorter(_graph()).static_order())
    except CycleError as e:
        pytest.fail(f"import cycle: {' -> '.join(e.args[1])}")
    assert set(order) == set(_graph())


def test_each_module_imports_alone_in_dependency_order():
    """Importing the modules one by one, dependencies first, works in a fresh interpreter."""
    order = list(TopologicalSorter(_graph()).static_order())
    optional = {"reference"}  # needs torch
    code = "import importlib\n" + "".join(
        f"importlib.import_module('symllm.{m}')\n" for m in order if m not in optional)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=PACKAGE.parent, timeout=120)
    assert done.returncode == 0, done.stderr


def test_presentation_computes_nothing():
    """render.py lays out what it is handed: it never imports the modules that compute."""
    computing = {"api", "costs", "components", "derivation", "evaluate", "spec", "workload", "sweep", "scaling"}
    assert _imports(PACKAGE / "render.py") & computing == set()


def test_evaluate_is_pure_maths():
    """evaluate.py knows expressions and numbers, not configs or components."""
    assert _imports(PACKAGE / "evaluate.py") <= {"errors", "symbols"}


def test_import_symllm_loads_neither_jinja_nor_numpy():
    """``import symllm`` (and so ``symllm count``) stays light: templates and arrays load on first use."""
    code = "import sys, symllm; print(sorted(m for m in ('jinja2', 'numpy', 'torch') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent,
                          timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_headline_api_is_exported():
    """symllm.__all__ names the headline functions, and each resolves (scaling as an attribute)."""
    for name in ("params", "workload", "derive", "report", "Sweep", "scaling", "Workload", "spec"):
        assert name in symllm.__all__
        assert getattr(symllm, name) is not None
    assert symllm.scaling.chinchilla_optimum()["N"].free_symbols
