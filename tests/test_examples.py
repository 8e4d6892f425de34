"""Every example runs: notebooks executed with nbclient (one ipykernel in this interpreter, names reset
between notebooks), scripts
in-process as ``__main__``; plots land as PNG in a temporary folder (SYMLLM_EXAMPLES_OUT), never in the
repository."""
import json
import os
import sys
from pathlib import Path

import pytest

from .conftest import requires

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
SCRIPTS = sorted(EXAMPLES.glob("*.py"))
#: a hang guard only (speed is not a unit-test matter): far above what any example needs
BUDGET_SECONDS = 300


def _env(out: Path) -> dict:
    """The source tree first on the path (the code under test), a headless matplotlib, the output folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    env["SYMLLM_EXAMPLES_OUT"] = str(out)
    return env


def _kernel_manager(tmp: Path, out: Path):
    """A KernelManager whose only ``python3`` spec runs ipykernel in this very interpreter (so a fresh venv
    needs no ``jupyter kernelspec install``, and no other Python's kernel on the machine is picked up)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec_dir = tmp / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (symllm tests)", "language": "python",
        "env": {k: v for k, v in _env(out).items() if k in ("PYTHONPATH", "MPLBACKEND", "SYMLLM_EXAMPLES_OUT")},
    }))
    ksm = KernelSpecManager(kernel_dirs=[str(tmp / "kernels")], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=ksm)


def test_there_are_examples():
    """The examples folder holds the three notebooks and the scripts."""
    assert {p.name for p in NOTEBOOKS} >= {"scaling_laws.ipynb", "formulas_for_a_paper.ipynb", "sweep.ipynb"}
    assert len(SCRIPTS) >= 3


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One kernel for the module's notebooks (an ipykernel start-up imports IPython, SymPy, numpy and
    matplotlib: seconds of CPU each time); each notebook starts with every name of the one before it
    removed (``%reset -f``), in its own working and output folder."""
    requires("nbformat")
    requires("nbclient")
    requires("ipykernel")
    tmp = tmp_path_factory.mktemp("kernel")
    km = _kernel_manager(tmp, tmp)
    km.start_kernel(cwd=str(tmp))
    yield km
    km.shutdown_kernel(now=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, kernel):
    """The notebook executes top to bottom without an error; a plotting notebook writes its PNGs."""
    nbformat = requires("nbformat")
    nbclient = requires("nbclient")
    out = tmp_path / "out"
    out.mkdir()
    book = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in book.cells if c.cell_type == "code"), "commit notebooks without outputs"
    # no name of an earlier notebook (nor of this cell) is left for this one to use by mistake
    book.cells.insert(0, nbformat.v4.new_code_cell(
        f"%reset -f\n__import__('os').chdir({str(out)!r})\n"
        f"__import__('os').environ['SYMLLM_EXAMPLES_OUT'] = {str(out)!r}"))
    client = nbclient.NotebookClient(book, km=kernel, timeout=BUDGET_SECONDS)
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    if "savefig" in "".join(c.source for c in book.cells):
        pngs = list(out.glob("*.png"))
        assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_script_runs(path, tmp_path, monkeypatch, capsys):
    """The script runs as ``__main__`` without an error (or exits 0) and prints something. (In-process, as
    ``python path`` with no arguments would run it: the scripts are plain Python over the public API.)"""
    import runpy
    for key, value in _env(tmp_path).items():
        if key in ("MPLBACKEND", "SYMLLM_EXAMPLES_OUT"):
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(path)])
    monkeypatch.syspath_prepend(str(path.parent))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        assert e.code in (None, 0), e
    assert capsys.readouterr().out.strip()
