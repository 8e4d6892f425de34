"""Every command: --help, a valid call, the default, an invalid input."""
import json
import shutil
import subprocess
import sys

import pytest
import sympy as sp

from symllm import symbols as S

from .conftest import CI

COMMANDS = ["count", "derive", "presets", "verify"]


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help_has_examples(command, cli):
    """--help, of the program and of each command, exits 0 and shows examples."""
    r = cli(([command] if command else []) + ["--help"])
    assert r.code == 0 and "examples:" in r.out and "symllm" in r.out


def test_count_table_shows_exact_and_human_total(cli):
    """The total row shows the exact count with thousands separators and a rounded one."""
    r = cli(["count", "llama2-13b"])
    assert r.code == 0 and r.err == ""
    total = [line for line in r.out.splitlines() if line.startswith("total")][0]
    assert "13,015,864,320" in total and "13.02B" in total


def test_count_json(cli):
    """--json holds the exact total as an int, the derived d_ff and every component."""
    r = cli(["count", "llama3.1-8b", "--json"])
    data = json.loads(r.out)
    assert r.code == 0
    assert data["params"]["total"] == 8_030_261_248 and isinstance(data["params"]["total"], int)
    assert data["config"]["hidden_dim"] == 14336
    for key in ("embedding", "block/attention/wq", "block/feed_forward/w1", "norm", "lm_head"):
        assert key in data["params"]


def test_count_unknown_model(cli):
    """An unknown model name: exit 2, nothing on stdout, one stderr line naming it."""
    r = cli(["count", "no-such-model"])
    assert (r.code, r.out) == (2, "") and r.err.count("\n") == 1 and "no-such-model" in r.err


def test_count_requires_a_model(cli):
    """count without a model is a usage error: exit 2 and one stderr line."""
    r = cli(["count"])
    assert r.code == 2 and r.err.count("\n") == 1


@pytest.mark.parametrize("flag,expected", [
    ("--gqa", 2 * S.d * S.d_h * (S.n_h + S.n_kv)),
    ("--mha", 4 * S.d * S.d_h * S.n_h),
    ("--mqa", 2 * S.d * S.d_h * (S.n_h + 1)),
])
def test_derive_attention_text_parses_back(flag, expected, cli):
    """The text derivation ends with a closed form that SymPy parses back to the attention count."""
    r = cli(["derive", "--component", "attention", flag, "--format", "text"])
    assert r.code == 0
    names = {sym.name: sym for sym in S.SYMBOLS}
    closed = r.out.strip().splitlines()[-1].split("=", 1)[1]  # the derivation ends with the closed form
    assert sp.expand(sp.sympify(closed, locals=names) - expected) == 0


def test_derive_latex(cli):
    """The LaTeX derivation writes the symbols as LaTeX."""
    r = cli(["derive", "--component", "attention", "--gqa", "--format", "latex"])
    assert r.code == 0 and "n_{kv}" in r.out and "d_h" in r.out


@pytest.mark.parametrize("component", ["embedding", "attention", "feed_forward", "swiglu", "rmsnorm",
                                       "rope", "lm_head", "block", "model"])
def test_derive_every_component(component, cli):
    """Every component has a derivation."""
    r = cli(["derive", "--component", component])
    assert r.code == 0 and r.out.strip()


def test_derive_unknown_component(cli):
    """An unknown component is a usage error: exit 2 and one stderr line naming it."""
    r = cli(["derive", "--component", "nope"])
    assert r.code == 2 and r.err.count("\n") == 1 and "nope" in r.err


def test_presets_lists_every_preset_with_total(cli):
    """presets lists the presets with their exact totals."""
    r = cli(["presets"])
    assert r.code == 0 and "8,030,261,248" in r.out and "405,853,388,800" in r.out


def test_verify_agrees(cli, torch):
    """verify builds the torch reference model and finds every component count equal."""
    r = cli(["verify", "llama3.2-1b"])
    assert r.code == 0 and "DIFFERS" not in r.out and "all components agree" in r.out


def test_verify_without_torch_says_so():
    """Without torch, verify exits 2 with one stderr line that names torch."""
    code = ("import sys; sys.modules['torch'] = None\n"  # import torch now raises ImportError
            "from symllm.cli import main; sys.exit(main(['verify', 'llama3.2-1b']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2 and "torch" in proc.stderr and proc.stderr.count("\n") == 1


def test_python_dash_m():
    """python -m symllm runs the same command line."""
    out = subprocess.run([sys.executable, "-m", "symllm", "count", "llama3.1-8b", "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["params"]["total"] == 8_030_261_248


def test_console_script_when_installed():
    """The installed symllm console command reports an error as one line, never a traceback."""
    exe = shutil.which("symllm")
    if exe is None:
        if CI:
            pytest.fail("CI=true but the symllm console command is not installed")
        pytest.skip("symllm is not installed as a console command (pip install .)")
    proc = subprocess.run([exe, "count", "no-such-model"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_cli_does_not_import_torch():
    """Importing the command line does not import torch (only verify needs it)."""
    code = "import sys, symllm.cli; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
