"""The on-disk cache runs no one else's code and loses no one's files (issue 25 item 1).

Each attack plants a *working* entry: the count kernels of llama3.1-8b with ``3*d_ff`` changed to ``4*d_ff``
and a correct digest (what anyone able to write the folder could do). A control shows the plant works
where symllm trusts the folder (the total changes to 9,909,309,440, as the issue reports); every attack
must leave the published total, 8,030,261,248, with one warning. The tests run as root, so another user
is uid 65534 (``os.chown``, or a process that ``os.setuid``s to it).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import types
import warnings
from pathlib import Path

import pytest

import symllm
from symllm.arch import config
from symllm.numbers import cache
from symllm.studies import quick

from .conftest import PUBLISHED

ROOT = Path(symllm.__file__).resolve().parent.parent
TOTAL = PUBLISHED["llama3.1-8b"]["total"]   # 8,030,261,248
PLANTED = 9_909_309_440                     # the same count with 4*d_ff: what the planted entry gives
OTHER = 65534                               # another user: nobody

as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="needs root to make files of another user")


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Warnings once per process: forget earlier tests' folders; kernels read again from disk."""
    monkeypatch.setattr(cache, "_WARNED", set())
    quick._compiled.cache_clear()


def _count() -> int:
    quick._compiled.cache_clear()
    return quick.params(config.load("llama3.1-8b"))[0]["total"]


def _fill(folder: Path, monkeypatch) -> Path:
    """``folder`` as the cache, holding llama3.1-8b's count entry; returns the entry."""
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(folder))
    assert _count() == TOTAL
    (entry,) = folder.glob("count-*.json")
    return entry


#: the planted change: the SwiGLU's 3·d·d_ff weights become 4·d·d_ff (however the generated code writes the product)
_PLANTED = (re.compile(r"\b3\*(d\*)?d_ff"), r"4*\1d_ff")


def _plant(entry: Path, change=lambda src: _PLANTED[0].sub(_PLANTED[1], src)) -> None:
    """Rewrite ``entry``'s sources with ``change`` and a digest that matches, as an attacker would."""
    data = json.loads(entry.read_text())
    sources = [change(s) for s in data["sources"]]
    assert sources != data["sources"], "the plant changed nothing"
    data.update(sources=sources, digest=cache.digest(data["key"], sources))
    entry.write_text(json.dumps(data))


def _attacked(monkeypatch) -> tuple[int, list[str]]:
    """The count from the cache as it is now, and the warnings it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        total = _count()
        _count()  # a second read warns no more
    return total, [str(w.message) for w in seen if issubclass(w.category, cache.CacheWarning)]


def test_planted_entry_in_a_trusted_folder_would_change_the_number(tmp_path, monkeypatch):
    """The control: the plant is effective where symllm trusts the folder (the user's own edit)."""
    entry = _fill(tmp_path / "c", monkeypatch)
    _plant(entry)
    assert _attacked(monkeypatch) == (PLANTED, [])


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o707, 0o1777])
def test_folder_writable_by_others_is_ignored(tmp_path, monkeypatch, mode):
    folder = tmp_path / "shared"
    entry = _fill(folder, monkeypatch)
    _plant(entry)
    folder.chmod(mode)
    total, said = _attacked(monkeypatch)
    assert total == TOTAL
    assert len(said) == 1 and "writable by" in said[0]
    assert re.search(r"4\*(d\*)?d_ff", entry.read_text()), "symllm rewrote an entry in a folder it does not trust"


@as_root
def test_folder_of_another_user_is_ignored(tmp_path, monkeypatch):
    folder = tmp_path / "theirs"
    entry = _fill(folder, monkeypatch)
    _plant(entry)
    for path in (folder, entry):
        os.chown(path, OTHER, OTHER)
    total, said = _attacked(monkeypatch)
    assert total == TOTAL and len(said) == 1 and f"owned by uid {OTHER}" in said[0]


@as_root
def test_entry_of_another_user_is_ignored(tmp_path, monkeypatch):
    entry = _fill(tmp_path / "c", monkeypatch)
    _plant(entry)
    os.chown(entry, OTHER, OTHER)
    total, said = _attacked(monkeypatch)
    assert total == TOTAL and len(said) == 1 and "owned by uid" in said[0]


def test_folder_reached_through_a_symlink_is_ignored(tmp_path, monkeypatch):
    entry = _fill(tmp_path / "real", monkeypatch)
    _plant(entry)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(tmp_path / "link"))
    total, said = _attacked(monkeypatch)
    assert total == TOTAL and len(said) == 1 and "symbolic link" in said[0]


def test_entry_that_is_a_symlink_is_ignored(tmp_path, monkeypatch):
    entry = _fill(tmp_path / "c", monkeypatch)
    _plant(entry)
    elsewhere = tmp_path / "elsewhere.json"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    total, said = _attacked(monkeypatch)
    assert total == TOTAL and len(said) == 1 and "symbolic link" in said[0]


def test_code_in_an_entry_is_never_run(tmp_path, monkeypatch):
    """Even in a trusted folder an entry is data: code that is not generated arithmetic is refused."""
    entry = _fill(tmp_path / "c", monkeypatch)
    marker = tmp_path / "ran"
    _plant(entry, lambda src: src.replace("def table(L, V, d, d_ff, d_h, n_h, n_kv):\n    return (",
                                          f"def table(L, V, d, d_ff, d_h, n_h, n_kv):\n    return "
                                          f"(__import__('os').mkdir({str(marker)!r}), "))
    assert _count() == TOTAL
    assert not marker.exists()


def test_cli_says_one_warning_line(tmp_path, monkeypatch, cli):
    folder = tmp_path / "shared"
    _fill(folder, monkeypatch)
    folder.chmod(0o777)
    done = cli(["count", "llama3.1-8b"])
    assert done.code == 0 and f"{TOTAL:,}" in done.out
    assert done.err.splitlines() == [line for line in done.err.splitlines() if line.startswith("symllm: warning: cache:")]
    assert len(done.err.splitlines()) == 1


def _as_other(*argv: str) -> None:
    """Run the shell command ``argv`` (quoted here) as uid/gid 65534."""
    def drop():
        os.setgroups([])
        os.setgid(OTHER)
        os.setuid(OTHER)
    subprocess.run(["/bin/sh", "-c", " ".join(map(shlex.quote, argv))], check=True, preexec_fn=drop,  # noqa: PLW1509
                   env={"PATH": "/usr/bin:/bin"}, timeout=60, cwd="/")


@as_root
def test_xdg_cache_home_in_a_shared_tmp_pre_created_by_another_user(tmp_path, monkeypatch):
    """``XDG_CACHE_HOME=/tmp`` where another user made ``/tmp/symllm`` first (a sticky 1777 folder of the
    test's own stands for /tmp) and put a working entry in it."""
    good = _fill(tmp_path / "c", monkeypatch)
    _plant(good)
    shared = Path(tempfile.mkdtemp(prefix="symllm-shared-tmp-"))
    try:
        shared.chmod(0o1777)
        staged = shared / "staged.json"
        shutil.copy(good, staged)
        staged.chmod(0o644)
        _as_other("mkdir", "-m", "755", str(shared / "symllm"))
        _as_other("cp", str(staged), str(shared / "symllm" / good.name))
        assert (shared / "symllm").stat().st_uid == OTHER
        monkeypatch.delenv("SYMLLM_CACHE_DIR")
        monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
        assert cache.cache_dir() == shared / "symllm"
        total, said = _attacked(monkeypatch)
        assert total == TOTAL and len(said) == 1 and f"owned by uid {OTHER}" in said[0]
    finally:
        shutil.rmtree(shared)


@as_root
def test_root_uses_its_own_home_not_the_callers(tmp_path, monkeypatch):
    """``sudo -E``: HOME is another user's, with a working entry in their cache; root (euid 0) uses its
    own home's cache (the password database's) and writes nothing into theirs."""
    theirs = tmp_path / "home-of-other"
    entry = _fill(theirs / ".cache" / "symllm", monkeypatch)
    _plant(entry)
    for path in (theirs, theirs / ".cache", entry.parent, entry):
        os.chown(path, OTHER, OTHER)
    own = tmp_path / "root-home"
    own.mkdir()
    import pwd
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: types.SimpleNamespace(pw_dir=str(own)))
    monkeypatch.delenv("SYMLLM_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(theirs))
    assert cache.cache_dir() == own / ".cache" / "symllm"
    assert _attacked(monkeypatch) == (TOTAL, [])
    assert list((own / ".cache" / "symllm").glob("count-*.json"))
    assert sorted(p.name for p in entry.parent.iterdir()) == [entry.name]


def test_relative_xdg_cache_home_and_home_are_ignored(tmp_path, monkeypatch):
    """The XDG specification: a relative path is invalid and ignored; nothing is made in the working
    folder."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("SYMLLM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative-cache")
    monkeypatch.setenv("HOME", str(home))
    assert cache.cache_dir() == home / ".cache" / "symllm"
    import pwd
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: types.SimpleNamespace(pw_dir=str(home)))
    monkeypatch.setenv("HOME", "relative-home")
    assert cache.cache_dir() == home / ".cache" / "symllm"
    assert _count() == TOTAL
    assert list(work.iterdir()) == []
    assert list((home / ".cache" / "symllm").glob("count-*.json"))


def test_trimming_deletes_only_symllm_entries(tmp_path, monkeypatch):
    """``SYMLLM_CACHE_DIR=results`` with 2,100 files of the user's: trimming never deletes one, not even
    a file named like an entry but not written by symllm."""
    results = tmp_path / "results"
    results.mkdir()
    for i in range(2100):
        (results / f"run-{i}.json").write_text("{}")
    lookalike = results / f"kernel-{'0' * 32}.json"
    lookalike.write_text('{"mine": true}')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYMLLM_CACHE_DIR", "results")   # relative: the user's own folder, as in the issue
    monkeypatch.setattr(cache, "CACHE_ENTRIES", 8)
    assert _count() == TOTAL
    for i in range(30):
        cache.cache_put("kernel", f"expr {i}", [f"value {i}"])
    assert all((results / f"run-{i}.json").read_text() == "{}" for i in range(2100))
    assert lookalike.read_text() == '{"mine": true}'
    ours = [p for p in results.iterdir() if p.read_bytes().startswith(cache.HEADER)]
    assert 0 < len(ours) <= 8
    assert cache.cache_get("kernel", "expr 29") == ("value 29",)


# --------------------------------------------------------------------------- damaged entries

def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _change_digit(path: Path) -> None:
    """``3*d_ff`` made ``4*d_ff`` (the issue's ``sed``), else the last digit in the file (in its sources) changed."""
    text = path.read_text()
    if "3*d_ff" in text:
        path.write_text(text.replace("3*d_ff", "4*d_ff"))
        return
    at = max(i for i, c in enumerate(text) if c.isdigit())
    path.write_text(text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:])


def _rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    sources = change(data["sources"])
    data.update(sources=sources, digest=cache.digest(data["key"], sources))  # a consistent digest
    path.write_text(json.dumps(data))


DAMAGE = {
    "flipped byte": _flip,
    "changed digit": lambda p: _change_digit(p),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "invalid code": lambda p: _rewrite(p, lambda s: [x.replace("return", "return (", 1) for x in s]),
    "wrong length": lambda p: _rewrite(p, lambda s: s[:-1]),
    "a FIFO": lambda p: (p.unlink(), os.mkfifo(p)),
}

COMMANDS = {
    "count": ["count", "llama3.1-8b"],
    "derive": ["derive", "--model", "llama3.1-8b", "--quantity", "params", "--format", "text"],
    "sweep": ["sweep", "--base", "llama3.1-8b", "--seq", "1024", "--quantity", "params"],
}


def _symllm(argv, folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SYMLLM_CACHE_DIR": str(folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "symllm", *argv], capture_output=True, text=True, env=env,
                          timeout=300)


def _forget() -> None:
    """Drop what this process keeps in memory in front of the on-disk cache (the compiled count, params
    table, d_ff rounding and kernels, the kernels kept per expression object, the derivations' formulas and
    the warnings already given), so that the next command reads its entries from the folder as a fresh process would. The closed
    forms behind the cache stay in memory (building them again is not what is tested, and later tests of
    this process use them). The tests check that every damaged entry was read again (it is rewritten): a
    new memo in front of the disk makes them fail, naming the entry, rather than pass unread."""
    from symllm.arch import resolved, specs
    from symllm.numbers import kernels
    from symllm.present import derivation
    derivation._SYMBOLIC.clear()
    quick._compiled.cache_clear()
    resolved.params_table.cache_clear()
    specs.hidden_dim_kernel.cache_clear()
    kernels.compile_expr.cache_clear()
    kernels._BY_ID.clear()
    kernels._FAST.clear()
    cache._WARNED.clear()


def _entries(folder: Path) -> dict[str, bytes | str]:
    """The folder's entries: name -> bytes (a FIFO, which reading would wait on: "FIFO")."""
    return {p.name: "FIFO" if p.is_fifo() else p.read_bytes() for p in sorted(folder.glob("*.json"))}


def _assert_rewritten(now: dict, damaged: dict, whole: dict) -> None:
    """Each damaged entry was written again: not its damaged self, and what the first run wrote, or (where
    this process prints a kernel's terms in another order) a whole entry for the same key, same length. (An
    entry the damage left as it was, "invalid code" in an entry holding no code, stays as it was.)"""
    assert now.keys() == whole.keys()
    for name, data in now.items():
        assert data != damaged[name] or damaged[name] == whole[name], f"{name} was not read again"
        if data != whole[name]:
            got, first = json.loads(data), json.loads(whole[name])
            assert (got["key"], len(got["sources"])) == (first["key"], len(first["sources"])), name
            assert got["digest"] == cache.digest(got["key"], got["sources"]), name


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> dict:
    """Per command: a cache folder its first run filled, that run's output and the entries it wrote (run
    in-process with nothing in memory in front of the disk, :func:`_forget`, so that it writes every entry a
    fresh process writes)."""
    import contextlib
    import io

    from symllm.cli import main
    out = {}
    for name, argv in COMMANDS.items():
        folder = tmp_path_factory.mktemp(f"filled-{name}")
        printed, said = io.StringIO(), io.StringIO()
        with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed), contextlib.redirect_stderr(said):
            mp.setenv("SYMLLM_CACHE_DIR", str(folder))
            _forget()
            code = main(argv)
        assert code == 0, said.getvalue()
        assert f"{TOTAL:,}" in printed.getvalue() or str(TOTAL) in printed.getvalue()
        out[name] = (folder, printed.getvalue(), _entries(folder))
    return out


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("command", COMMANDS)
def test_damaged_entries_are_rebuilt(filled, tmp_path, monkeypatch, cli, within_a_minute, command, damage):
    """Every entry damaged one way: the command still prints the exact numbers (no traceback, no hang,
    no wrong number), and the entries are whole again afterwards: each written again (which also shows it
    was read from the folder, not from this process's memory), and read back without a warning.
    (In-process, with what sits in front of the disk forgotten; test_damaged_entry_in_a_fresh_process runs
    a fresh process on damaged entries.)"""
    source, expected, whole = filled[command]
    folder = tmp_path / "c"
    shutil.copytree(source, folder)
    entries = sorted(folder.glob("*.json"))
    assert entries
    for path in entries:
        DAMAGE[damage](path)
    damaged = _entries(folder)
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(folder))
    _forget()
    done = cli(COMMANDS[command])
    assert done.code == 0, done.err
    assert "Traceback" not in done.err
    assert done.out == expected
    _assert_rewritten(_entries(folder), damaged, whole)
    _forget()
    again = cli(COMMANDS[command])
    assert again.out == expected and "warning" not in again.err and "Traceback" not in again.err


def test_damaged_entry_in_a_fresh_process(filled, tmp_path):
    """The same in a fresh process (nothing in memory; its real standard streams): the count's entries
    flipped, then replaced by FIFOs, each time the exact output and no traceback, and the entries whole
    again."""
    source, expected, whole = filled["count"]
    folder = tmp_path / "c"
    shutil.copytree(source, folder)
    for damage in ("flipped byte", "a FIFO"):
        for path in sorted(folder.glob("*.json")):
            DAMAGE[damage](path)
        damaged = _entries(folder)
        done = _symllm(COMMANDS["count"], folder)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert done.stdout == expected
        _assert_rewritten(_entries(folder), damaged, whole)


def test_concurrent_writers(tmp_path, monkeypatch):
    """Two processes filling and trimming one folder at once: every read gives what was stored for that
    key or nothing, no temporary file is left, and every entry left is whole."""
    code = ("import sys\nfrom symllm.numbers import cache\ncache.CACHE_ENTRIES = 40\nwho = sys.argv[1]\n"
            "for i in range(300):\n"
            "    cache.cache_put('kernel', f'key {i % 70}', [f'value {i % 70}'] * (1 + i % 5) * 50)\n"
            "    got = cache.cache_get('kernel', f'key {(i * 7) % 70}')\n"
            "    assert got is None or set(got) == {f'value {(i * 7) % 70}'}, got\n")
    env = {**os.environ, "SYMLLM_CACHE_DIR": str(tmp_path / "c"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)], env=env, stderr=subprocess.PIPE, text=True)
             for n in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    left = list((tmp_path / "c").iterdir())
    assert left and not [p for p in left if p.name.startswith(".tmp-")]
    assert len(left) <= 2 * 40 + 2
    monkeypatch.setenv("SYMLLM_CACHE_DIR", str(tmp_path / "c"))
    for i in range(70):
        got = cache.cache_get("kernel", f"key {i}")
        assert got is None or set(got) == {f"value {i}"}


# --------------------------------------------------------------------------- keys from marked fields

def test_workload_shape_is_what_the_closed_forms_read():
    """The composed closed forms depend on a workload's fields marked ``shapes`` and on nothing else: an
    unmarked option changed leaves them as they are; each marked one has a value that changes them (but
    ``ep``, read by the layout test ``parallel.laid_out``: ``ep > 1`` needs ``dp > 1``, already a layout;
    ``expert_tp`` changes a mixture's per-GPU forms under ``tp``, checked on Mixtral; ``engine`` is marked by the
    engines a part declares a split for, ``sglang`` not one of them: vllm lays DeepSeek-V4 out otherwise,
    tests/test_dsv4_tp.py, hf Nemotron-H by transformers' plan for it, tests/test_hf_plans.py; and by the
    column-parallel linears a training engine runs under ``tp``: no engine's are the default training engine's,
    Megatron-Core's, torchtitan's and hf's DTensor's)."""
    import dataclasses

    from symllm.costs import phases
    from symllm.costs.workloads import Workload

    spec = symllm.spec("llama3.1-8b")
    base = phases._compose(spec.model(), Workload())
    unmarked = {"batch": 3, "seq": 77, "gen": 5, "context": 9, "dtype": "fp8", "kv_dtype": "int8",
                "act_dtype": "fp32", "group_size": 32,
                "gpu": "h100-sxm", "gpu_memory": 48.0, "gpu_bandwidth": 1000.0, "gpu_flops": 100.0,
                "network": "eth-100g", "tokens": 10**9, "price": 2.5, "weight_format": "Q4_K_M",
                    "kv_format": "q8_0",
                "compute_dtype": "fp8", "engine": "sglang", "micro_batches": 4, "schedule": "interleaved",
                "virtual_stages": 4, "power_cap": 500.0, "tp_overlap": True, "ubatch": 256, "flash_attn": "on"}
    #: what an option needs beside it to be valid on its own
    needs = {"gpu_memory": {"gpu": "h100-sxm"}, "gpu_bandwidth": {"gpu": "h100-sxm"},
             "gpu_flops": {"gpu": "h100-sxm"}, "network": {"gpu": "h100-sxm"}, "tokens": {"gpu": "h100-sxm"},
             "price": {"gpu": "h100-sxm", "tokens": 10**9}, "lora_targets": {"lora_rank": 4},
             "qlora": {"lora_rank": 4}, "power_cap": {"gpu": "h100-sxm"}, "ubatch": {"engine": "llama.cpp"},
             "flash_attn": {"engine": "llama.cpp"}}
    marked = {"attention": "causal", "zero_stage": 3, "dp": 2, "tp": 2, "pp": 2, "ep": 1, "sp": False,
              "recompute": "full", "stack": "hf-eager", "optimizer": "sgd", "lora_rank": 4, "lora_targets": "wo",
              "qlora": True, "logits": "all", "expert_tp": "whole"}
    fields = {f.name: f.metadata["option"].shapes for f in dataclasses.fields(Workload) if "option" in f.metadata}
    assert {k for k, v in fields.items() if v is not False} == {"attention", "zero_stage", "dp", "tp", "pp", "ep",
                                                               "sp", "recompute", "stack", "optimizer",
                                                               "lora_rank", "lora_targets", "qlora", "logits",
                                                               "expert_tp", "engine"}
    assert set(unmarked) | set(marked) == set(fields)
    for name, value in unmarked.items():
        work = Workload(**{name: value, **needs.get(name, {})})
        assert work.shape() == Workload().shape()
        assert phases._compose(spec.model(work.attention), work) == base, name
    changed = {"attention": {}, "zero_stage": {}, "dp": {}, "tp": {}, "pp": {}, "recompute": {}, "stack": {},
               "optimizer": {}, "lora_rank": {}, "logits": {},  # LoRA: its numbers in, and the training peak is LoRA's
               "sp": {"tp": 2, "sp": True}, "lora_targets": {"lora_rank": 4, "lora_targets": "wo"},
               "qlora": {"lora_rank": 4, "qlora": True}}
    for name, extra in changed.items():
        work = Workload(**{name: marked[name], **extra}) if not extra else Workload(**extra)
        assert work.shape() != Workload().shape()
        assert phases._compose(spec.model(work.attention), work) != base, name
    op, full = Workload(recompute="op"), Workload(recompute="full")  # each policy its own forms
    assert op.shape() != full.shape() and phases._compose(spec.model(), op) != phases._compose(spec.model(), full)
    moe, split = symllm.spec("mixtral-8x7b").model(), Workload(tp=2)
    whole = split.replace(expert_tp="whole")
    assert whole.shape() != split.shape() and phases._compose(moe, whole) != phases._compose(moe, split)
    titan = split.replace(engine="torchtitan")  # DTensor's column-parallel linears: its training collectives
    assert titan.shape() != split.shape()
    assert phases._compose(spec.model(), titan) != phases._compose(spec.model(), split)
    megatron = split.replace(engine="megatron")  # no engine trains as Megatron: the same forms (its shape also
    assert phases._compose(spec.model(), megatron) == phases._compose(spec.model(), split)  # names its MLA layout)
    vllm = split.replace(engine="vllm")  # a layout engine: its own shape, and DeepSeek-V4 its own parts' splits
    assert vllm.shape() != split.shape() == split.replace(engine="sglang").shape()
    dsv4 = symllm.spec("deepseek-v4-flash-base")
    assert phases.model_of(dsv4, vllm) != phases.model_of(dsv4, split) == dsv4.model()
    hf, nemotron = split.replace(engine="hf"), symllm.spec("nemotron-h-8b")  # a layout engine too: by the family
    assert hf.shape() != split.shape() and phases.model_of(nemotron, hf) != phases.model_of(nemotron, split)
    lora = Workload(lora_rank=4)  # the LoRA options beside a rank: each changes LoRA's forms
    for work in (lora.replace(lora_rank=8), lora.replace(lora_targets="wo"), lora.replace(qlora=True)):
        assert work.shape() != lora.shape()
        assert phases._compose(spec.model(), work) != phases._compose(spec.model(), lora)


def test_generated_kernel_source_passes_the_check_the_cache_applies():
    """A kernel's source is not checked when the process that printed it defines it; what the cache gives
    back always is. Every kernel of a dense and a mixture-of-experts workload (per GPU under a layout too)
    passes that check, so a read-back entry is used, not generated again."""
    from symllm.arch import resolved
    from symllm.costs import phases
    from symllm.costs.workloads import Workload
    from symllm.numbers import runtime
    from symllm.numbers.kernels import compile_expr

    seen = 0
    for name, work in (("llama3.2-1b", Workload(stack="hf-eager")), ("qwen3-30b-a3b", Workload(tp=2, pp=2, dp=2))):
        for group in phases.quantities(resolved.model_for(name), work).values():
            for expr in group.values():
                k = compile_expr(expr)
                assert runtime.define(k.source, "kernel")(*[2] * len(k.args)) == k(**{a.name: 2 for a in k.args})
                runtime.define(k.bound_source, "bound")
                seen += 1
    assert seen > 40


def test_data_files_are_part_of_every_key(tmp_path):
    """symllm reads its accelerator table (costs/gpus.json) and presets as data: every cache key hashes them
    with the source (their size and modification time), so an edited peak or bandwidth is not answered from a
    report or roofline stored before the edit. Other files (bytecode, notes) are not part of it."""
    (tmp_path / "costs" / "__pycache__").mkdir(parents=True)
    for rel in ("a.py", "costs/gpus.json", "costs/__pycache__/a.cpython-311.pyc", "notes.txt"):
        (tmp_path / rel).write_text("{}")
    assert [rel for rel, _ in cache._sources(str(tmp_path))] == ["a.py", "costs/gpus.json"]
    package = [rel for rel, _ in cache._sources(str(ROOT / "symllm"))]
    assert {"costs/gpus.json", "presets/llama3.1-8b.json", "numbers/cache.py"} <= set(package)
