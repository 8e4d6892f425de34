"""Start-up: ``symllm count`` from kernels kept on disk, lazy imports, and a cache that can never change a
number (an entry is keyed by the formulas' source, a damaged entry is generated again)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import symllm
import symllm.numbers.kernels  # noqa: F401  (the module: symllm.numbers.kernels is the function)
from symllm.arch import config
from symllm.numbers import cache as disk
from symllm.studies import quick
from symllm.present import rendered
from symllm.arch import symbols as S

from .conftest import PUBLISHED

ROOT = Path(symllm.__file__).resolve().parent.parent
evaluate = sys.modules["symllm.numbers.kernels"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty kernel cache of this test's own."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(folder))
    quick._compiled.cache_clear()
    return folder


def _python(code: str, cache_dir) -> str:
    env = {**os.environ, "SYMLLM_CACHE_DIR": str(cache_dir),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_quick_counts_are_the_published_totals_cold_and_warm(name, cache):
    """A miss (computed by api, then stored) and a hit (the stored code) give the published total."""
    cfg = config.load(name)
    cold = quick.params(cfg)
    assert list(cache.glob("count-*.json")), "nothing stored"
    quick._compiled.cache_clear()
    warm = quick.params(cfg)
    assert cold == warm
    assert warm[0]["total"] == PUBLISHED[name]["total"]


def test_every_preset_is_read_back_warm(cache, monkeypatch):
    """Every preset's second count runs the kernels the first one stored, and gives its numbers (DeepSeek's
    shared experts, n_shared x d_ff wide, were bound to the config's own shared_hidden_dim, None: each count
    of an MLA model, and each `symllm presets`, built the formulas again)."""
    from symllm import api
    cold = {name: quick.params(config.load(name)) for name in config.preset_names()}
    quick._compiled.cache_clear()
    monkeypatch.setattr(quick, "_from_api", lambda cfg: pytest.fail(f"{cfg.name}: computed again"))
    for name, (counts, d_ff) in cold.items():
        assert quick.params(config.load(name)) == (counts, d_ff), name
        assert (counts, d_ff) == (api.params(name), api.hidden_dim(name)), name


def test_quick_key_separates_structures(cache):
    """Configs that differ only in what shapes the tree (tying, a stated d_ff, biases) never share an
    entry: each equals the count written out by hand."""
    base = dict(vocab_size=1000, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, multiple_of=16)
    V, d, L, d_h = 1000, 64, 2, 16
    attn = 2 * d * d_h * (4 + 2)
    meta_ff = 16 * -(-(8 * d // 3) // 16)  # Meta's rounding, no multiplier: 176
    cases = [
        (dict(), 2 * V * d + L * (attn + 3 * d * meta_ff + 2 * d) + d),
        (dict(tie_embeddings=True), V * d + L * (attn + 3 * d * meta_ff + 2 * d) + d),
        (dict(hidden_dim=100), 2 * V * d + L * (attn + 3 * d * 100 + 2 * d) + d),
        (dict(attention_bias=True), 2 * V * d + L * (attn + 4 * d_h + 2 * 2 * d_h + d + 3 * d * meta_ff + 2 * d) + d),
        (dict(mlp_bias=True), 2 * V * d + L * (attn + 3 * d * meta_ff + 2 * meta_ff + d + 2 * d) + d),
    ]
    for _ in range(2):  # cold, then warm
        quick._compiled.cache_clear()
        for extra, total in cases:
            counts, _ = quick.params(config.ModelConfig(**base, **extra))
            assert counts["total"] == total, extra


def test_damaged_entries_are_generated_again(cache):
    cfg = config.load("llama3.1-8b")
    quick.params(cfg)
    evaluate.compile_expr.cache_clear()
    evaluate.Kernel(S.d * (S.d + 1) / 2)
    entries = list(cache.glob("*.json"))
    assert {p.name.split("-")[0] for p in entries} >= {"count", "kernel"}
    for i, path in enumerate(entries):  # truncated JSON, a wrong key, a wrong shape
        path.write_text(['{"key": ', '{"key": "x", "sources": ["def kernel(d):\\n    return 0\\n"]}',
                         '{"key": 1, "sources": 5}'][i % 3])
    quick._compiled.cache_clear()
    assert quick.params(cfg)[0]["total"] == PUBLISHED["llama3.1-8b"]["total"]
    assert evaluate.Kernel(S.d * (S.d + 1) / 2)(d=10**20) == 10**20 * (10**20 + 1) // 2


def test_cache_off_and_unwritable(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLLM_CACHE_DIR", "")
    assert disk.cache_dir() is None
    assert evaluate.Kernel(S.d * 3)(d=7) == 21
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(blocker / "sub"))  # a file where a folder should be
    quick._compiled.cache_clear()
    assert quick.params(config.load("llama2-13b"))[0]["total"] == PUBLISHED["llama2-13b"]["total"]


def test_cache_is_trimmed(cache, monkeypatch):
    monkeypatch.setattr(disk, "CACHE_ENTRIES", 10)
    for i in range(25):
        disk.cache_put("kernel", f"expr {i}", ["x"])
    assert len(list(cache.glob("*.json"))) <= 10
    assert disk.cache_get("kernel", "expr 24") == ("x",)


def _cold_then_warm(argv: list, modules: tuple, tmp_path, never: tuple = ()) -> None:
    """Run ``symllm ARGV`` twice in fresh processes sharing a cache: the first imports some of ``modules``,
    the second none of them, neither imports any of ``never``, and both print the same (with the 405B's
    published total)."""
    code = ("import io, sys, contextlib\nfrom symllm.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()) as out:\n    assert main({argv!r}) == 0\n"
            f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
            f"print(sorted(m for m in {never!r} if m in sys.modules))\nprint(out.getvalue())")
    cold = _python(code, tmp_path)
    warm = _python(code, tmp_path)
    assert cold.splitlines()[0] != "[]"
    assert warm.splitlines()[0] == "[]"
    assert cold.splitlines()[1] == warm.splitlines()[1] == "[]"
    assert cold.splitlines()[2:] == warm.splitlines()[2:]
    assert f"{PUBLISHED['llama3.1-405b']['total']:,}" in warm


def test_warm_count_builds_no_formula(tmp_path):
    """The second ``symllm count`` of a structure imports neither the components, SymPy itself, jinja2
    nor numpy; the first stored what it needs. Nor the standard modules only a write, a help text or a
    misspelt name needs (the start-up benchmark's 3x of ``python -c pass`` has no room for them). Neither
    count, cold or warm, imports torch (only verify needs it) or matplotlib (plots import it on first use)."""
    _cold_then_warm(["count", "llama3.1-405b"], ("symllm.arch.components", "sympy", "jinja2", "numpy", "difflib",
                                                 "tempfile", "shutil", "pkgutil"), tmp_path,
                    never=("torch", "matplotlib"))


def test_import_symllm_is_lazy_and_complete(tmp_path):
    """``import symllm`` loads no SymPy; the headline names resolve, and the modules keep their own names
    (``symllm.workload`` is the function, ``symllm.costs.workloads`` the module: no module-type hack)."""
    out = _python("import sys, symllm; print('sympy' in sys.modules); print(symllm.params('llama2-7b')['total']);"
                  "from symllm import Workload, workload, scaling, Sweep; import symllm.costs.workloads as w;"
                  "print(w is symllm.costs.workloads, callable(workload), Workload.__name__, w.DTYPES['bf16']);"
                  "import symllm.numbers.kernels, symllm.arch.specs;"
                  "print(symllm.evaluate.__module__, symllm.spec.__module__, symllm.workload.__module__)",
                  tmp_path)
    assert out.split() == ["False", str(PUBLISHED["llama2-7b"]["total"]), "True", "True", "Workload", "2",
                           "symllm.numbers.kernels", "symllm.arch.resolved", "symllm.costs.phases"]
    assert set(symllm.__all__) <= set(dir(symllm))


#: reports, from an exit handler registered before symllm.cli is imported (so run after symllm's own), how
#: many objects the process's collector has been told to skip (gc.freeze) and whether gc still runs
_FREEZE_PROBE = ("import atexit, gc, sys; atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, "
                 "gc.isenabled(), file=sys.stderr))")


def test_only_the_symllm_process_skips_the_collections_at_exit(tmp_path):
    """The ``symllm`` process freezes its objects (``gc.freeze``) after its last exit handler, so that the
    interpreter's collections at exit skip them; a program that imports symllm.cli, or calls its main(),
    keeps its own collector as it was (freezing there would keep its garbage alive)."""
    env = {**os.environ, "SYMLLM_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    program = subprocess.run([sys.executable, "-c", _FREEZE_PROBE + "; import runpy; sys.argv = ['symllm', 'presets'];"
                              "runpy.run_module('symllm', run_name='__main__', alter_sys=True)"],
                             capture_output=True, text=True, env=env, timeout=120)
    imported = subprocess.run([sys.executable, "-c", _FREEZE_PROBE + "; import symllm.cli as c; c.main(['presets'])"],
                              capture_output=True, text=True, env=env, timeout=120)
    assert (program.returncode, program.stderr) == (0, "frozen True True\n")
    assert "llama3.1-405b" in program.stdout
    assert (imported.returncode, imported.stderr) == (0, "frozen False True\n")


def test_parser_choices_are_read_on_use(cli, tmp_path):
    """derive's choices are the ones the formulas accept (the same objects: no copy), read only when used,
    from modules that load neither SymPy nor jinja2: ``symllm derive --help`` and a misspelt choice answer
    in a fresh process without them (both took half a second importing SymPy)."""
    from symllm.arch import components, layers
    from symllm.costs import workloads
    from symllm.present import format as fmt
    assert components.COMPONENTS is layers.COMPONENTS
    assert cli(["derive", "--component", "nope"]).code == 2
    help_text = cli(["derive", "--help"]).out
    for name in list(components.COMPONENTS) + list(fmt.FORMATS) + list(workloads.PHASES) + list(fmt.QUANTITIES):
        assert name in help_text
    assert cli(["derive", "--component", "rmsnorm", "--phase", "decode", "--quantity", "flops"]).code == 0
    code = ("import contextlib, io, sys; from symllm.cli import main\n"
            "for argv in (['derive', '--help'], ['derive', '--component', 'nope'], ['derive', '--format', 'nope'],"
            " ['derive', '--phase', 'nope'], ['derive', '--memory', 'nope'], ['derive', '--quantity', 'nope']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "        try: code = main(argv)\n"
            "        except SystemExit as e: code = e.code\n"
            "    print(code, 'sympy' in sys.modules, 'jinja2' in sys.modules)")
    assert _python(code, tmp_path).split("\n")[:-1] == ["0 False False"] + ["2 False False"] * 5


def test_sweep_help_says_what_each_field_means_without_sympy(tmp_path):
    """``symllm sweep --help`` says what each config field it varies means (the description the symbols carry,
    from symllm.arch.glossary, read without SymPy) in a fresh process that imports neither SymPy nor numpy: the
    options are built from the light table, not from symllm.studies.grids, which needs both."""
    code = ("import contextlib, io, sys; from symllm.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try: code = main(['sweep', '--help'])\n"
            "    except SystemExit as e: code = e.code\n"
            "print(code, 'sympy' in sys.modules, 'numpy' in sys.modules)\nprint(' '.join(out.getvalue().split()))")
    status, text = _python(code, tmp_path).split("\n", 1)
    assert status == "0 False False"
    assert "--dim VALUES model width (hidden size), d (default: " in text
    assert "--n-layers VALUES number of transformer blocks, L (default: " in text
    assert f"--n-kv-heads VALUES {S.describe(S.n_kv)}, n_kv" in text


def _fresh_report(model, *, fmt="latex", standalone=False, notation=None, **workload) -> str:
    """The report rendered from the formulas, with the cache off."""
    from unittest import mock

    from symllm.present import reports
    with mock.patch.dict(os.environ, {"SYMLLM_CACHE_DIR": ""}):
        return reports.report(model, notation=notation, **workload).render(fmt, standalone=standalone)


def test_report_read_back_equals_a_fresh_render(cache, tmp_path, monkeypatch):
    """rendered.report stores a rendered report and reads it back (no formula built, no template run) for the
    same inputs; each read-back text equals a render from the formulas, and any input that changes the
    text (notation file, workload, format, vocabulary) is a different entry."""
    from symllm.present import reports
    paper = tmp_path / "paper.json"
    paper.write_text('{"d": "d_\\\\mathrm{model}"}')
    cases = [dict(model="llama2-7b"), dict(model="llama2-7b", fmt="markdown", seq=4096),  # one structure: built once
             dict(model="llama2-7b", standalone=True, notation=str(paper)),
             dict(model="llama2-7b", vocab_size=32001)]
    cold = [rendered.report(**case) for case in cases]
    assert len(set(cold)) == len(cases)
    assert len(list(cache.glob("report-*.json"))) == len(cases)

    def refuse(*args, **kwargs):
        raise AssertionError("rendered again")

    with monkeypatch.context() as patched:
        patched.setattr(reports, "report", refuse)
        warm = [rendered.report(**case) for case in cases]
    assert warm == cold
    assert f"{PUBLISHED['llama2-7b']['total']:,}" in cold[0]
    assert r"d_\mathrm{model}" in cold[2]
    for case, text in zip(cases, warm):
        case = dict(case)
        vocab = case.pop("vocab_size", None)
        model = case.pop("model")
        assert text == _fresh_report(model if vocab is None else config.load(model, vocab_size=vocab), **case)
    paper.write_text('{"d": "D"}')  # the same file name, new contents: rendered again
    assert rendered.report(**cases[2]) == _fresh_report("llama2-7b", standalone=True, notation=str(paper)) != cold[2]


def test_report_errors_and_user_templates_are_not_cached(cache, tmp_path):
    """A refused option raises the report's own error, and user templates are rendered every time."""
    with pytest.raises(symllm.SymllmError, match="'phase' is an option of derive"):
        rendered.report("llama2-7b", phase="decode")
    with pytest.raises(symllm.SymllmError, match="seq"):
        rendered.report("llama2-7b", seq=0)
    mine = tmp_path / "templates"
    mine.mkdir()
    (mine / "report.md.j2").write_text("{{ model }} has {{ total|grouped }} parameters\n")
    assert rendered.report("llama2-7b", fmt="markdown", template_dir=mine) == "llama2-7b has 6,738,415,616 parameters\n"
    (mine / "report.md.j2").write_text("{{ model }}!\n")
    assert rendered.report("llama2-7b", fmt="markdown", template_dir=mine) == "llama2-7b!\n"
    assert not list(cache.glob("report-*.json"))


def test_damaged_report_entry_is_rendered_again(cache):
    text = rendered.report("llama2-7b", fmt="markdown")
    (entry,) = cache.glob("report-*.json")
    entry.write_text('{"key": "x", "sources": ["forged"]}')
    assert rendered.report("llama2-7b", fmt="markdown") == text
    entry.write_text('{"key": ')
    assert rendered.report("llama2-7b", fmt="markdown") == text


def test_warm_report_renders_nothing(tmp_path):
    """The second ``symllm report`` of the same inputs loads neither jinja2 nor the derivations; its output
    is the first one's."""
    _cold_then_warm(["report", "llama3.1-405b", "--format", "latex"], ("jinja2", "symllm.present.derivation", "symllm.present.reports", "symllm.present.render"),
                    tmp_path)


def test_report_cache_finds_the_built_in_templates():
    """rendered hashes the folder render.template_dir() reads: both ask files.builtin_templates, which finds it
    without importing jinja2; the templates a report renders are there."""
    from symllm import files
    from symllm.present import render
    assert files.builtin_templates() == render.template_dir()
    assert {"standalone.tex.j2", "report.tex.j2"} <= {p.name for p in files.builtin_templates().iterdir()}


def test_report_cache_knows_a_given_context(tmp_path, monkeypatch):
    """`--context 2048` and no --context give the same numbers for a 2048-token prompt but not the same
    text (the decode row names t = 2,048 or s): the read-back report follows what was given."""
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(tmp_path))
    from symllm.present import rendered
    implied = rendered.report("llama2-7b", fmt="markdown")
    given = rendered.report("llama2-7b", fmt="markdown", context=2048)
    assert "one decode step at context s (matmuls)" in implied
    assert "one decode step at context t = 2,048 (matmuls)" in given


def test_a_hit_binds_group_counts_as_the_symbols_table_says(cache, monkeypatch):
    """A hit binds each kernel argument to what its symbol binds (symllm.arch.symbols.SymbolInfo.binds: a
    field, or the count of a group of layers), with nothing computed again: 3 dense + 1 MoE layers and
    1 dense + 3 MoE, each its total (hand arithmetic) cold and warm."""
    from symllm.arch.layers import LayerKind

    V, d, n_h, n_kv, d_h, d_ff, d_fd, n_e, k = 100, 16, 4, 2, 4, 8, 24, 4, 2
    def cfg(dense, sparse):
        return config.ModelConfig(vocab_size=V, dim=d, n_layers=dense + sparse, n_heads=n_h, n_kv_heads=n_kv,
                                  hidden_dim=d_ff, dense_hidden_dim=d_fd, n_experts=n_e, experts_per_token=k,
                                  layers=((LayerKind(), dense), (LayerKind(ffn="moe"), sparse)))
    attn_norms = 2 * d * d_h * (n_h + n_kv) + 2 * d
    dense, moe = attn_norms + 3 * d * d_fd, attn_norms + d * n_e + n_e * 3 * d * d_ff
    expected = lambda a, b: 2 * V * d + d + a * dense + b * moe  # noqa: E731  (untied table and head, final norm)
    pairs = ((3, 1), (1, 3))
    assert [quick.params(cfg(a, b))[0]["total"] for a, b in pairs] == [expected(a, b) for a, b in pairs]
    quick._compiled.cache_clear()
    monkeypatch.setattr(quick, "_from_api", lambda config: pytest.fail("a hit computed the counts again"))
    assert [quick.params(cfg(a, b))[0]["total"] for a, b in pairs] == [expected(a, b) for a, b in pairs]


#: counts with a workload, an accelerator, a layout, serving or JSON: several presets (dense, GQA, MoE, MLA),
#: accelerators and layouts (tp, pp, dp, ep)
ANSWERED = (["count", "llama3.1-8b", "--gpu", "h100-sxm"],
            ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "8"],
            ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--json"],
            ["count", "llama3.1-8b", "--json"],
            ["count", "llama2-7b", "--seq", "4096", "--batch", "4"],
            ["count", "llama3.1-70b", "--gpu", "a100-80gb", "--tp", "4", "--pp", "2", "--dp", "2", "--json"],
            ["count", "mixtral-8x7b", "--gpu", "h200", "--tp", "2", "--dp", "4", "--ep", "4"],
            ["count", "deepseek-v2-lite", "--gpu", "h100-sxm", "--seq", "8192", "--json"],
            ["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "8192"])

#: runs each of ANSWERED in one process: prints whether each succeeded, its output, and at the end whether
#: SymPy, the components, the workload's formulas, the fit searches or numpy were imported
_ANSWER_ALL = ("import contextlib, io, json, sys\nfrom symllm.cli import main\nouts = []\n"
               "for argv in ARGV:\n"
               "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:\n"
               "        code = main(argv)\n"
               "    outs.append([code, out.getvalue(), err.getvalue()])\n"
               "print(json.dumps([outs, sorted(m for m in ('sympy', 'symllm.arch.components', 'symllm.costs.phases',"
               " 'symllm.costs.inverse', 'numpy') if m in sys.modules)]))")


def test_warm_count_with_a_workload_imports_no_sympy(tmp_path):
    """A count with a workload, ``--gpu`` (with and without a layout), ``--serve`` or ``--json`` asked a second
    time, in a fresh process, prints the answer the first one printed (byte for byte) without importing SymPy,
    the formulas, the fit searches or numpy; and that answer is the one computed with the cache off (the formulas,
    built in that process). The 405B-independent check: llama3.1-8b's total is its published one."""
    code = _ANSWER_ALL.replace("ARGV", repr(ANSWERED))
    cold_outs, cold_modules = json.loads(_python(code, tmp_path / "cache"))
    warm_outs, warm_modules = json.loads(_python(code, tmp_path / "cache"))
    off_outs, _ = json.loads(_python(code, ""))  # SYMLLM_CACHE_DIR="": no cache at all
    assert "sympy" in cold_modules
    assert warm_modules == []
    assert [c for c, *_ in cold_outs] == [0] * len(ANSWERED)
    assert warm_outs == cold_outs == off_outs
    assert json.loads(warm_outs[2][1])["params"]["total"] == PUBLISHED["llama3.1-8b"]["total"]
    assert "on h100-sxm (per GPU of 8)" in warm_outs[1][1] and "on h100-sxm (one GPU)" in warm_outs[0][1]


def test_a_read_back_answer_follows_every_input(cli, tmp_path, monkeypatch):
    """The answer read back is the one of these very inputs: another --seq, another accelerator, another
    layout, a changed config file or --json each print what the formulas give (cache off), never a stored
    answer of other inputs; a damaged entry is computed again."""
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(tmp_path / "cache"))
    cfg = tmp_path / "config.json"
    data = {k: v for k, v in config.load("llama3.1-8b").to_dict().items() if k != "layers"}
    cfg.write_text(json.dumps(data))
    cases = [["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "2048"],
             ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "4096"],
             ["count", "llama3.1-8b", "--gpu", "h200", "--seq", "4096"],
             ["count", "llama3.1-8b", "--gpu", "h200", "--seq", "4096", "--tp", "2"],
             ["count", "llama3.1-8b", "--gpu", "h200", "--seq", "4096", "--tp", "2", "--json"],
             ["count", str(cfg), "--gpu", "h100-sxm", "--batch", "2"]]
    first = [cli(argv) for argv in cases]
    again = [cli(argv) for argv in cases]
    assert len(list((tmp_path / "cache").glob("answer-*.json"))) == len(cases)
    assert [r.out for r in again] == [r.out for r in first]
    assert len({r.out for r in first}) == len(cases)
    cfg.write_text(json.dumps({**data, "n_layers": 31}))  # the same path, another model
    changed = cli(cases[-1]).out
    for entry in (tmp_path / "cache").glob("answer-*.json"):
        entry.write_text(entry.read_text().replace("GiB", "TiB"))  # the digest no longer matches
    damaged = [cli(argv).out for argv in cases[:-1]]
    monkeypatch.setenv("SYMLLM_CACHE_DIR", "")
    assert damaged == [cli(argv).out for argv in cases[:-1]] == [r.out for r in first[:-1]]
    assert changed == cli(cases[-1]).out != first[-1].out


def test_warm_params_reads_what_it_kept_and_counts_the_same(monkeypatch):
    """A warm ``symllm.params(cfg)`` resolves no name through the lazy import, hashes no config (the spec is
    kept on the config) and looks up no symbol (the table's arguments are kept on the spec): with spec_of
    and the symbol look-up refused, the same config counts again, its total by hand arithmetic; a table
    compiled again (its cache cleared) reads the spec's values again rather than trusting the kept ones."""
    from symllm.arch import resolved, specs
    cfg = config.ModelConfig(vocab_size=1000, dim=64, n_layers=3, n_heads=4, n_kv_heads=2, hidden_dim=96)
    total = 2 * 1000 * 64 + 3 * (2 * 64 * 16 * (4 + 2) + 3 * 64 * 96 + 2 * 64) + 64  # untied, d_h = 16
    assert symllm.params(cfg)["total"] == total
    assert "params" in vars(symllm)  # found directly next time, not through symllm.__getattr__
    monkeypatch.setattr(resolved, "spec_of", lambda c: pytest.fail("the spec computed again"))
    monkeypatch.setattr(specs.Spec, "_values", property(lambda s: pytest.fail("a symbol looked up")))
    assert symllm.params(cfg)["total"] == total
    monkeypatch.undo()
    resolved.params_table.cache_clear()
    bigger = cfg.replace(n_layers=4)
    assert symllm.params(cfg)["total"] == total
    assert symllm.params(bigger)["total"] == total + (2 * 64 * 16 * 6 + 3 * 64 * 96 + 2 * 64)


#: counts of several workload shapes (one GPU, a layout, a pipeline, experts, LoRA, a weight format, JSON)...
SHAPES = (["count", "llama3.1-8b", "--seq", "4096", "--json"],
          ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "8"],
          ["count", "llama3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--pp", "2", "--dp", "2", "--json"],
          ["count", "mixtral-8x7b", "--gpu", "h200", "--tp", "2", "--dp", "4", "--ep", "4"],
          ["count", "llama2-7b", "--lora-rank", "16", "--qlora", "--gpu", "a100-80gb", "--json"],
          ["count", "mistral-7b-v0.1", "--gpu", "h100-sxm", "--weight-format", "awq", "--seq", "2048"])
#: ...and each at a point never asked before: another --seq, --batch, --tp, --pp, --dp, --ep, accelerator
NEW_POINTS = (["count", "llama3.1-8b", "--seq", "3000", "--batch", "3", "--json"],
              ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "2", "--seq", "5000", "--batch", "7"],
              ["count", "llama3.1-70b", "--gpu", "h200", "--tp", "2", "--pp", "4", "--dp", "3", "--json"],
              ["count", "mixtral-8x7b", "--gpu", "h200", "--tp", "4", "--dp", "2", "--ep", "2", "--seq", "999"],
              ["count", "llama2-7b", "--lora-rank", "16", "--qlora", "--gpu", "a100-80gb", "--json", "--seq", "512"],
              ["count", "mistral-7b-v0.1", "--gpu", "h100-sxm", "--weight-format", "awq", "--seq", "1000"],
              ["count", "llama3.1-8b", "--gpu", "h100-sxm", "--tp", "16", "--json"])  # KV heads replicated


def _warm_answers_as_cold(first: list, points: list, cache) -> list:
    """Answers ``first`` in a fresh process (it imports SymPy: the formulas are built and their kernels kept in
    ``cache``), then ``points`` in two more: with that cache, importing none of SymPy, the components, the
    formulas, the searches or numpy, and with the cache off (SymPy); both print the same, byte for byte, and
    every answer exits 0. The warm process's ``(code, stdout, stderr)`` for each point."""
    cold_outs, cold_modules = json.loads(_python(_ANSWER_ALL.replace("ARGV", repr(first)), cache))
    assert "sympy" in cold_modules and [c for c, *_ in cold_outs] == [0] * len(first)
    code = _ANSWER_ALL.replace("ARGV", repr(points))
    warm_outs, warm_modules = json.loads(_python(code, cache))
    off_outs, off_modules = json.loads(_python(code, ""))
    assert warm_modules == [] and "sympy" in off_modules
    assert warm_outs == off_outs
    assert [c for c, *_ in warm_outs] == [0] * len(points)
    return warm_outs


def test_a_count_at_a_new_workload_point_imports_no_sympy(tmp_path):
    """Issue 41 item 5: once a model was counted at a workload of some shape, a count at a point never asked
    before (another length, batch, layout or accelerator) evaluates the kept kernels: a fresh process imports
    neither SymPy, the formulas, the fit searches nor numpy, and prints what the formulas give with the cache
    off, byte for byte. Hand arithmetic: llama3.1-8b's KV cache at batch 3 and 3,000 tokens is
    2 (K and V) x 32 layers x 8 KV heads x 128 x 2 bytes x 3 x 3,000."""
    warm_outs = _warm_answers_as_cold(SHAPES, NEW_POINTS, tmp_path / "cache")
    first = json.loads(warm_outs[0][1])
    assert first["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 2 * 3 * 3000
    assert first["params"]["total"] == PUBLISHED["llama3.1-8b"]["total"]
    assert json.loads(warm_outs[2][1])["time"]["gpus"] == 2 * 4 * 3
    assert "on h100-sxm (per GPU of 2)" in warm_outs[1][1]
    # tp 16 on 8 KV heads: one a rank, replicated (tests/test_parallel.py's hand count of rank 0's parameters)
    assert json.loads(warm_outs[6][1])["params"]["per_gpu"] == 518_918_144


#: the doors issue 41 left computed at a new point: --serve (and under load), --lora-targets other than PEFT's
#: default, a named HF stack, a context past the model's window; each counted once...
DOORS = (["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "8192"],
         ["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "1000", "--gen", "1000",
          "--concurrency", "64", "--json"],
         ["count", "llama2-7b", "--lora-rank", "8", "--lora-targets", "q_proj,k_proj,v_proj,o_proj", "--seq", "1024",
          "--json"],
         ["count", "llama3.1-8b", "--stack", "hf-sdpa", "--seq", "8192", "--json"],
         ["count", "llama2-7b", "--gpu", "h100-sxm", "--seq", "8192"],
         ["count", "qwen3-next-80b-a3b", "--serve", "--gpu", "h200", "--tp", "4", "--seq", "8192"])
#: ...then each at a point never asked before
DOOR_POINTS = (["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "5000", "--gen", "100", "--json"],
               ["count", "llama3.1-8b", "--serve", "--gpu", "h100-sxm", "--seq", "1500", "--gen", "500",
                "--concurrency", "32", "--json"],
               ["count", "llama2-7b", "--lora-rank", "8", "--lora-targets", "q_proj,k_proj,v_proj,o_proj",
                "--seq", "3000", "--batch", "2", "--json"],
               ["count", "llama3.1-8b", "--stack", "hf-sdpa", "--seq", "4000", "--batch", "3", "--json"],
               ["count", "llama2-7b", "--gpu", "h100-sxm", "--seq", "9000", "--json"],
               ["count", "qwen3-next-80b-a3b", "--serve", "--gpu", "h200", "--tp", "4", "--seq", "3000", "--json"])


def test_every_door_at_a_new_point_imports_no_sympy(tmp_path):
    """Issue 41 item 5, the doors left: once a count of each shape kept its kernels, a fresh process counts
    ``--serve`` (with and without load, and a hybrid model's on several tensor ranks), ``--lora-targets`` other
    than the default, an HF stack and a context past the window at new points without importing SymPy, the components, the formulas, the searches or
    numpy, and prints what the formulas print with the cache off, byte for byte (the past-window warning on
    stderr too). Hand arithmetic: llama3.1-8b's KV bytes a token 2 x 32 x 8 x 128 x 2 (K and V, layers, KV heads,
    d_h, bf16); PEFT's LoRA of rank 8 on llama2-7b's q, k, v and o: 32 layers x 4 x 8 x (4096 + 4096)
    = 8,388,608 trainable parameters; the KV cache at batch 3 of 4,000 tokens; llama2-7b's 4,096 positions."""
    warm_outs = _warm_answers_as_cold(DOORS, DOOR_POINTS, tmp_path / "cache")
    serve, load, lora, hf, past, hybrid = (json.loads(out) for _, out, _ in warm_outs)
    assert serve["serving"]["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert serve["serving"]["context"] == 5100
    assert load["serving"]["load"]["concurrency"] == 32 and load["serving"]["context"] == 2000
    assert lora["params"]["trainable"] == 32 * 4 * 8 * (4096 + 4096)
    assert hf["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 2 * 3 * 4000
    assert past["memory"]["kv_cache"] == 2 * 32 * 32 * 128 * 2 * 9000
    assert warm_outs[-2][2] == "symllm: warning: seq + gen: 9,000 > 4,096 trained positions (counted: RoPE " \
                               "scaling can run it)\n"
    # a hybrid's state per sequence on one of 4 tensor ranks: Qwen3-Next's 36 Gated DeltaNet layers, each a
    # recurrent state of 32 value heads x 128 x 128 in the model's bf16 (vLLM's "auto" mamba_ssm_cache_dtype,
    # mamba_utils.gated_delta_net_state_dtype) and a convolution state of 4 - 1 positions (vLLM's
    # conv_kernel_size - 1, mamba_utils.gated_delta_net_state_shape) x (2 x 16 x 128 + 32 x 128) channels in bf16,
    # the heads split over the 4 ranks
    assert hybrid["serving"]["state_bytes_per_sequence"] == 36 * (32 * 128 * 128 * 2 + 3 * 8192 * 2) // 4


def _workload_entry(folder: Path) -> tuple[Path, dict]:
    (entry,) = folder.glob("workload-*.json")
    return entry, json.loads(json.loads(entry.read_text())["sources"][0])


def _replant(entry: Path, inner: dict) -> None:
    """``entry`` holding ``inner`` with a digest that matches, as an attacker would write it."""
    data = json.loads(entry.read_text())
    sources = [json.dumps(inner)]
    data.update(sources=sources, digest=disk.digest(data["key"], sources))
    entry.write_text(json.dumps(data))


def test_a_kept_workload_entry_is_data_its_code_never_run(cache, tmp_path):
    """The workload kernels a count keeps are read back only as generated arithmetic: the control (an
    arithmetic change with a consistent digest, the user's own edit in a trusted folder) changes the number,
    so the entry is what a new point evaluates; code that is not generated arithmetic is refused and the
    count computed again (the formulas' number); a damaged entry too."""
    cfg = config.load("llama3.1-8b")
    quick.workload(cfg, {"seq": 1024})
    entry, inner = _workload_entry(cache)
    kv = 2 * 32 * 8 * 128 * 2 * 2000  # K and V x layers x KV heads x d_h x bf16 bytes x tokens
    assert quick.workload(cfg, {"seq": 2000})[0]["memory"]["kv_cache"] == kv
    source, args = inner["forms"]["memory.kv_cache"]
    _replant(entry, {**inner, "forms": {**inner["forms"], "memory.kv_cache": [
        source.replace("return ", "return 3*", 1), args]}})
    assert quick.workload(cfg, {"seq": 2000})[0]["memory"]["kv_cache"] == 3 * kv  # the control
    marker = tmp_path / "ran"
    _replant(entry, {**inner, "forms": {**inner["forms"], "memory.kv_cache": [
        source.replace("return ", f"return __import__('os').mkdir({str(marker)!r}) or ", 1), args]}})
    assert quick.workload(cfg, {"seq": 2000})[0]["memory"]["kv_cache"] == kv
    assert not marker.exists()
    entry.write_text(entry.read_text().replace("kv_cache", "kv_cachf"))  # the digest no longer matches
    assert quick.workload(cfg, {"seq": 2000})[0]["memory"]["kv_cache"] == kv


def test_a_kept_lora_vocabulary_is_data(cache):
    """The LoRA target names a count keeps (so that ``--lora-targets`` needs no component built) are read back
    as names only: the control (q_proj mapped to wk, a consistent digest: the user's own edit) changes what
    q_proj means, so the entry is what is read; pairs that are not names are refused and the components walked
    again (PEFT's q_proj is symllm's wq, as the linears' rules say); a damaged entry too."""
    from symllm.arch.components import lora_names
    from symllm.costs import peft_targets
    assert peft_targets._lora_vocabulary() == lora_names()
    (entry,) = cache.glob("lora-*.json")
    pairs = json.loads(json.loads(entry.read_text())["sources"][0])

    def plant(new_pairs):
        data = json.loads(entry.read_text())
        sources = [json.dumps(new_pairs)]
        data.update(sources=sources, digest=disk.digest(data["key"], sources))
        entry.write_text(json.dumps(data))

    plant([[a, "wk" if a == "q_proj" else b] for a, b in pairs])
    assert peft_targets.lora_targets("q_proj") == "wk"  # the control
    plant([["__import__('os')", "wq"], *pairs])
    assert peft_targets.lora_targets("q_proj") == "wq"
    plant([[a, "nowhere" if a == "q_proj" else b] for a, b in pairs])  # a target that is not a name of its own
    assert peft_targets.lora_targets("q_proj") == "wq"
    entry.write_text(entry.read_text().replace("q_proj", "q_prok"))  # the digest no longer matches
    assert peft_targets.lora_targets("q_proj") == "wq"


def test_one_config_reader_loads_no_sympy(tmp_path):
    """Serving figures and the context check read a config through the one reader,
    :func:`symllm.arch.catalogue.resolve`, which loads no SymPy (the review note: ``past_window`` kept its own
    reader because the other ways loaded SymPy or made a cycle). LLaMA 3.1 8B's ``max_position_embeddings`` is
    131072 and its ``num_key_value_heads`` 8 (meta-llama/Llama-3.1-8B config.json)."""
    out = _python("import sys\nfrom symllm.costs import checks, serving\nfrom symllm.arch import catalogue\n"
                  "print(checks.past_window('llama3.1-8b', 131073), checks.past_window('llama3.1-8b', 131072),"
                  " serving.model_config('llama3.1-8b').n_kv_heads, serving.model_config is catalogue.resolve,"
                  " 'sympy' in sys.modules)", tmp_path)
    assert out.split() == ["131072", "None", "8", "True", "False"]
