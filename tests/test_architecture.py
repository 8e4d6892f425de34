"""The package's shape: layers that import downwards only, an acyclic module graph, presentation that
computes nothing, one public face (symllm.__all__ is all dir(symllm) offers besides modules, each name with a
runnable example), and every documented submodule reachable as an attribute."""
import ast
import doctest
import functools
import io
import subprocess
import sys
import types
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import symllm

PACKAGE = Path(symllm.__file__).resolve().parent

#: the foundation modules, which every layer may import (they import only each other)
FOUNDATION = {"errors", "files", "_lazy", "validate"}
#: the layers, lowest first: each imports only the foundation, itself and the layers before it (no exceptions)
ORDER = ("numbers",    # compiled kernels and the on-disk cache: SymPy expressions and numbers, no model
         "arch",       # symbols, components, configs, specs (the specs compile Meta's d_ff rounding)
         "costs",      # phases, stacks, parallel layouts, hardware
         "studies",    # sweeps, plans, count's fast path: the costs over many points
         "present",    # derivations, reports, plots
         "api",        # the public face (symllm/api.py)
         "reference",  # the independent torch model (verify builds it)
         "cli")
LAYERS = {layer: set(ORDER[:i]) for i, layer in enumerate(ORDER)}


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py" and _name(p)}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed, once per test process (several tests walk every module)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path, known: set[str]) -> set[str]:
    """The symllm modules ``path`` imports anywhere in it (module level or inside functions)."""
    out = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "symllm":
            base = node.module[len("symllm."):] if node.module != "symllm" else ""
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                out.add(sub if sub in known else base)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import (symllm imports absolutely)")
        elif isinstance(node, ast.Import):
            out.update(a.name[len("symllm."):] for a in node.names if a.name.startswith("symllm."))
    return {m for m in out if m in known}


@functools.cache
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(p, set(mods)) - {m} for m, p in sorted(mods.items())}


def test_module_graph_is_acyclic():
    """No symllm module imports, directly or through others, a module that imports it back."""
    try:
        order = list(TopologicalSorter(_graph()).static_order())
    except CycleError as e:
        pytest.fail(f"import cycle: {' -> '.join(e.args[1])}")
    assert set(order) == set(_graph())


def test_layers_import_downwards():
    """numbers < arch < costs < studies < present < api < reference < cli: each module imports only the
    layers below its own (and the foundation), so a component never reaches for a cost rule or a printer,
    and what compiles and caches closed forms never reaches for a model. No exceptions."""
    wrong = set()
    for mod, deps in _graph().items():
        layer = mod.split(".")[0]
        if layer in FOUNDATION:
            continue
        assert layer in LAYERS, f"symllm.{mod}: in no layer of ORDER"
        for dep in deps:
            top = dep.split(".")[0]
            if top in FOUNDATION or top == layer or top in LAYERS[layer]:
                continue
            wrong.add((mod, dep))
    assert not wrong, sorted(wrong)
    # the foundation imports only the foundation (validate: only errors)
    assert all(_graph()[mod] <= FOUNDATION for mod in FOUNDATION), {m: _graph()[m] for m in FOUNDATION}
    assert _graph()["validate"] <= {"errors"}
    # what a warm `symllm count` runs from disk: the cache and the kernels' runtime stand on the foundation alone
    assert _graph()["numbers.cache"] <= FOUNDATION and _graph()["numbers.runtime"] <= FOUNDATION


def test_each_module_imports_alone_in_dependency_order():
    """Importing the modules one by one, dependencies first, works in a fresh interpreter."""
    order = list(TopologicalSorter(_graph()).static_order())
    optional = {"reference"}  # needs torch
    code = "import importlib\n" + "".join(
        f"importlib.import_module('symllm.{m}')\n" for m in order if m not in optional and m)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=PACKAGE.parent, timeout=120)
    assert done.returncode == 0, done.stderr


def test_presentation_computes_nothing():
    """present.render (and the printers and notation it lays out with) lays out what it is handed: it never
    imports the modules that compute."""
    computing = {m for m in _graph() if m.split(".")[0] in ("costs", "numbers", "api")} | {
        "arch.components", "arch.specs", "present.derivation"}
    for layout in ("present.render", "present.printers", "present.notations"):
        assert _graph()[layout] & computing == set(), layout


def test_import_symllm_loads_neither_jinja_nor_numpy():
    """``import symllm`` (and so ``symllm count``) stays light: templates and arrays load on first use."""
    code = "import sys, symllm; print(sorted(m for m in ('jinja2', 'numpy', 'torch', 'sympy') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent,
                          timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def _modules_offered() -> set[str]:
    """The names ``dir(symllm)`` gives that are modules (the layers and the foundation by their own names,
    ``scaling`` and ``plot`` by short ones)."""
    return {n for n in dir(symllm) if isinstance(getattr(symllm, n), types.ModuleType)}


def test_public_face_is_all_of_dir():
    """symllm.__all__ is everything dir(symllm) offers besides its modules and dunders, defined once
    (symllm.api.FACE: symllm.api offers the same names, each the same object); dir() shows no
    implementation detail (importlib, sys, types, the lazy-attribute helper)."""
    offered = {n for n in dir(symllm) if not n.startswith("__")} - _modules_offered()
    assert len(symllm.__all__) == len(set(symllm.__all__))
    assert set(symllm.__all__) == offered
    assert symllm.api.__all__ == symllm.__all__
    assert all(getattr(symllm.api, n) is getattr(symllm, n) for n in symllm.__all__)
    assert _modules_offered() == set(symllm.api.MODULES)
    assert not {"importlib", "sys", "types", "attributes"} & set(dir(symllm))
    assert callable(symllm.scaling.chinchilla_optimum)  # a lazy attribute of a lazy module (test_scaling calls it)


@pytest.mark.parametrize("name", sorted(symllm.__all__))
def test_every_public_name_has_a_runnable_example(name):
    """Each name of the face carries its own docstring with a ``>>>`` example, and the example runs (with
    its module's globals, as the doctests do) and prints what it shows."""
    obj = getattr(symllm, name)
    doc = obj.__doc__ if isinstance(obj, type) else getattr(obj, "__wrapped__", obj).__doc__
    assert doc and ">>>" in doc, f"symllm.{name}: no example in its docstring"
    module = sys.modules[getattr(obj, "__module__", None) or obj.__name__]
    test = doctest.DocTestParser().get_doctest(doc, dict(vars(module)), f"symllm.{name}", module.__file__, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    result = runner.run(test, out=out.write)
    assert result.attempted and not result.failed, out.getvalue()


#: the package's start-up hooks (symllm/__init__.py), which the command runs again (runpy imports the package
#: before it makes symllm.__main__ the main module)
STARTUP = {"_is_program", "_start_program"}


def _public(mod: str) -> set[str]:
    """The names module ``mod`` (below symllm) declares public: its literal ``__all__`` (read, not imported:
    symllm.reference needs torch)."""
    if mod == "api":
        return set(symllm.api.__all__)
    for node in _tree(_modules()[mod]).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            return set(ast.literal_eval(node.value))
    return set()


@pytest.mark.parametrize("mod", sorted(m for m in _modules() if m.split(".")[0] == "cli"))
def test_cli_uses_the_face_and_documented_modules_only(mod):
    """The command line (symllm/cli/) imports the face (``symllm``, ``symllm.api``), the modules
    symllm.api.DOCUMENTED names (listed in docs/api.md) or its own modules, and uses from each module only
    names in its ``__all__``."""
    known = set(_modules())
    tree = _tree(_modules()[mod])
    bound, wrong = {}, set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "symllm"):
            assert not (isinstance(node, ast.Import) and any(a.name.startswith("symllm") for a in node.names))
            continue
        base = node.module[len("symllm."):] if node.module != "symllm" else ""
        for alias in node.names:
            sub = f"{base}.{alias.name}" if base else alias.name
            if sub.split(".")[0] == "cli":  # its own modules
                continue
            if sub in known:  # a module: the names it is asked for are checked below
                if sub not in symllm.api.DOCUMENTED and sub != "api":
                    wrong.add(f"symllm.{sub}")
                bound[alias.asname or alias.name] = sub
            elif base == "":
                if alias.name not in set(symllm.__all__) | STARTUP:
                    wrong.add(f"symllm.{alias.name}")
            elif base not in symllm.api.DOCUMENTED or alias.name not in _public(base):
                wrong.add(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            if node.attr not in _public(bound[node.value.id]):
                wrong.add(f"symllm.{bound[node.value.id]}.{node.attr}")
    assert not wrong, sorted(wrong)
    documented = (PACKAGE.parent / "docs" / "api.md").read_text(encoding="utf-8")
    assert [m for m in symllm.api.DOCUMENTED if f"`symllm.{m}`" not in documented] == []


def test_no_module_imports_a_private_name_from_another():
    """No symllm module imports another's private name (``from symllm.x import _y``, or ``x._y`` of a module it
    imports): a name two modules share is public in its owner, with a docstring and an example, and imported by
    that name (issue 40's review found some 50, from the components' ``_rules`` to present's printers). The only
    exception is the package's start-up hooks (STARTUP), which dir(symllm) must not show."""
    known = set(_modules())
    wrong = set()
    for mod, path in _modules().items():
        modules_bound = {}
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "symllm":
                base = node.module[len("symllm."):] if node.module != "symllm" else ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}" if base else alias.name
                    if sub in known:
                        modules_bound[alias.asname or alias.name] = sub
                    elif alias.name.startswith("_") and not (base == "" and alias.name in STARTUP):
                        wrong.add(f"symllm.{mod}: from {node.module} import {alias.name}")
            elif isinstance(node, ast.Import):
                modules_bound.update({a.asname: a.name[len("symllm."):] for a in node.names
                                      if a.asname and a.name.startswith("symllm.")})
        for node in ast.walk(_tree(path)):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules_bound
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                wrong.add(f"symllm.{mod}: {node.value.id}.{node.attr} (symllm.{modules_bound[node.value.id]})")
    assert not wrong, sorted(wrong)


def test_every_submodule_is_an_attribute():
    """Every module below symllm is reachable as an attribute of its package (``symllm.costs.hardware``),
    without importing it by hand."""
    code = ("import functools, symllm\n"
            f"for m in {sorted(m for m in _modules() if m and not m.startswith('_') and m != 'reference')!r}:\n"
            "    functools.reduce(getattr, m.split('.'), symllm)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_no_module_is_named_like_a_function():
    """A module's name is never also the name of a public function or class of symllm (``symllm.workload``
    is the function; the module is ``symllm.costs.workloads``)."""
    names = set()
    for mod in _modules():
        tree = _tree(_modules()[mod])
        names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                  and not n.name.startswith("_")}
    leaves = {m.split(".")[-1] for m in _modules() if m}
    assert leaves & (names | set(symllm.__all__)) == set()


def test_library_never_prints():
    """Only the command line writes to stdout/stderr: no print() anywhere else in the library."""
    for mod, path in _modules().items():
        if mod.split(".")[0] == "cli":
            continue
        calls = [n for n in ast.walk(_tree(path))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]
        assert not calls, f"symllm.{mod} prints (line {calls[0].lineno})"


def test_no_invalid_escape_sequence():
    """Every module compiles without a warning: a docstring's ``\\label`` once read ``\\l`` as an invalid
    escape (a DeprecationWarning on 3.11, a SyntaxWarning from 3.12, an error later)."""
    import warnings
    for mod, path in _modules().items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_api_only_re_exports():
    """api.py is the façade: it defines nothing (each helper lives in its layer, which the layers below
    import directly), so nothing below it needs it."""
    tree = _tree(PACKAGE / "api.py")
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert defined == []
    assert not any(dep == "api" for mod, deps in _graph().items() if mod.split(".")[0] != "cli" for dep in deps)


def test_every_package_ships_in_the_wheel():
    """pyproject.toml lists its packages by hand: every folder of symllm with an ``__init__.py`` is among them
    (symllm.studies and symllm.cli were once left out, and the installed ``symllm`` failed to import)."""
    import tomllib
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["setuptools"]["packages"])
    folders = {".".join(("symllm",) + p.parent.relative_to(PACKAGE).parts) for p in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()


#: modules allowed over the 600-line limit, each with its reason (issue 38 item 5: a reader holds a module)
LONG_MODULES: dict[str, str] = {
}


def test_no_module_is_over_600_lines_but_the_named_ones():
    """Every module under symllm/ is at most 600 lines, except LONG_MODULES (each with its reason); an entry
    that is no longer long is removed, so the list stays the truth."""
    package = Path(__file__).resolve().parent.parent / "symllm"
    long = {p.relative_to(package).as_posix(): n for p in package.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert set(long) <= set(LONG_MODULES), f"over 600 lines, not named: {sorted(set(long) - set(LONG_MODULES))}"
    assert set(LONG_MODULES) <= set(long), f"named but no longer long: {sorted(set(LONG_MODULES) - set(long))}"


#: modules allowed lines over 120 characters, each with its reason; an entry with none left is removed
WIDE_MODULES: dict[str, str] = {
    "reference.py": "at the 600-line limit: wrapping its two long lines needs the module split first",
}


def test_no_line_is_over_120_characters():
    """Every line of every module under symllm/ is at most 120 characters (docstrings and doctests too), except
    WIDE_MODULES'. Only the package's own Python is held: its data (gpus.json, efficiency.json, presets) is not
    code, and the kernels it generates are written to the cache folder, outside the package."""
    package = Path(__file__).resolve().parent.parent / "symllm"
    wide = {}
    for p in sorted(package.rglob("*.py")):
        lines = [i for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 120]
        if lines:
            wide[p.relative_to(package).as_posix()] = lines
    assert set(wide) <= set(WIDE_MODULES), {k: v for k, v in wide.items() if k not in WIDE_MODULES}
    assert set(WIDE_MODULES) <= set(wide), f"no longer wide: {sorted(set(WIDE_MODULES) - set(wide))}"


def test_a_size_is_declared_once_on_the_config():
    """The sizes a config states under the spec's own name (DeepSeek-V4's hc_mult, o_groups, ...; the Mamba-2
    mixer's, the Gated DeltaNet's, ...) are declared on ModelConfig only: the Spec declares no such field and
    reads each off its config (duplicates found them declared in both)."""
    import dataclasses
    from symllm.arch.config import ModelConfig
    from symllm.arch.resolved import spec
    from symllm.arch.specs import CONFIG_SIZES, Spec
    assert "hc_mult" in CONFIG_SIZES and "mamba_heads" in CONFIG_SIZES
    assert not {f.name for f in dataclasses.fields(Spec)} & set(CONFIG_SIZES)
    assert set(CONFIG_SIZES) <= {f.name for f in dataclasses.fields(ModelConfig)}
    # Nemotron-H-56B: 256 Mamba heads of 64 (nvidia/Nemotron-H-56B-Base-8K config.json: mamba_num_heads,
    # mamba_head_dim); LLaMA 3.1 8B has no Mamba layer
    assert (spec("nemotron-h-56b").mamba_heads, spec("nemotron-h-56b").mamba_head_dim) == (256, 64)
    assert spec("llama3.1-8b").mamba_heads is None and spec("llama3.1-8b").hc_mult is None
