"""Every example runs in-process: notebooks cell by cell in IPython (the shell a Jupyter kernel wraps; no
name of one notebook left for the next), scripts as ``__main__``; plots land as PNG in a temporary folder
(SYMLLM_EXAMPLES_OUT), never in the repository."""
import sys
from pathlib import Path

import pytest

from .conftest import requires

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def _env(out: Path) -> dict:
    """What an example reads from its environment: a headless matplotlib and the output folder."""
    return {"MPLBACKEND": "Agg", "SYMLLM_EXAMPLES_OUT": str(out)}


def test_there_are_examples():
    """The examples folder holds the three notebooks and the scripts."""
    assert {p.name for p in NOTEBOOKS} >= {"scaling_laws.ipynb", "formulas_for_a_paper.ipynb", "sweep.ipynb"}
    assert len(SCRIPTS) >= 3


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """One IPython shell for the module's notebooks (what a Jupyter kernel runs cells in: a kernel of its own
    took seconds of CPU to start and composed every closed form again, cold), its history and profile in a
    temporary folder, never the user's ``~/.ipython``; no output cache (no notebook reads ``Out``, and
    each reset would flush it with a full garbage collection of the suite's heap)."""
    requires("nbformat")
    requires("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    ipython_dir = tmp_path_factory.mktemp("ipython")
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.cache_size = 0  # no Out[] cache: its flush at each reset is a full gc.collect()
    sh = InteractiveShell.instance(config=config, ipython_dir=str(ipython_dir))
    yield sh
    sh.reset(new_session=False)
    InteractiveShell.clear_instance()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, shell, monkeypatch):
    """The notebook executes top to bottom without an error, in its own working and output folder with no name
    of an earlier notebook left; a plotting notebook writes its PNGs."""
    nbformat = requires("nbformat")
    out = tmp_path / "out"
    out.mkdir()
    for key, value in _env(out).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(out)
    book = nbformat.read(path, as_version=4)
    cells = [c for c in book.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") for c in cells), "commit notebooks without outputs"
    shell.reset(new_session=False)  # no name of an earlier notebook is left for this one to use by mistake
    for i, cell in enumerate(cells):
        result = shell.run_cell(cell.source, store_history=False)
        assert result.success, (f"{path.name}, code cell {i + 1}", result.error_before_exec or result.error_in_exec)
    if "savefig" in "".join(c.source for c in cells):
        pngs = list(out.glob("*.png"))
        assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_script_runs(path, tmp_path, monkeypatch, capsys):
    """The script runs as ``__main__`` without an error (or exits 0) and prints something. (In-process, as
    ``python path`` with no arguments would run it: the scripts are plain Python over the public API.)"""
    import runpy
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(path)])
    monkeypatch.syspath_prepend(str(path.parent))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        assert e.code in (None, 0), e
    assert capsys.readouterr().out.strip()
