"""Hostile command-line input, fuzzed (strategies in tests/strategies.py): config files, workload flags,
notations, user templates and -o targets.

Whatever the input, the command line either succeeds or prints ONE line ``symllm: error: ...`` on stderr
and exits 2: never a traceback, never another status, never a file left behind (no partial output, no
``.symllm-*.tmp``), and the numbers of ``count --json`` are JSON numbers (exact ints, or floats; never strings).

Examples per test come from the Hypothesis profile (tests/conftest.py): few and derandomised under
CI=true, as many drawn at random locally, and 1,000 per test (5,000 cases) with ``SYMLLM_PROFILE=long``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symllm.files import TEMP_PREFIX

from .strategies import (hostile_config_texts, hostile_notations, hostile_templates, hostile_workload_argv,
                         output_names, output_targets)

#: the CLI runs in-process through the ``cli`` fixture, which drains capsys per call: safe to share
#: between examples
fuzz = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def assert_clean(r) -> None:
    """Success (stderr empty or warnings), or exactly one error line and exit 2; no traceback."""
    assert "Traceback" not in r.err and "Exception" not in r.err, r.err
    assert r.code in (0, 2), (r.code, r.err)
    if r.code == 2:
        assert r.err.startswith("symllm: error: ") and r.err.endswith("\n") and r.err.count("\n") == 1, r.err
    else:
        assert all(line.startswith("symllm: warning: ") for line in r.err.splitlines()), r.err


def assert_exact(value) -> None:
    """Every number of count --json's params, flops and memory is a JSON number: an int, or a finite float
    where the value is not whole (docs/json.md), never a string."""
    if isinstance(value, dict):
        for v in value.values():
            assert_exact(v)
    else:
        assert isinstance(value, int) and not isinstance(value, bool) or \
            isinstance(value, float) and math.isfinite(value), value


def left_behind(folder: Path, expected: set[str]) -> set[str]:
    return {p.name for p in folder.iterdir()} - expected


# --------------------------------------------------------------------------- config files

@fuzz
@given(text=hostile_config_texts(), json_out=st.booleans(), workload=st.booleans())
def test_hostile_config_files(cli, text, json_out, workload):
    """count CONFIG (text or --json, with or without a workload) of a hostile config file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(text, encoding="utf-8")
        r = cli(["count", path] + (["--json"] if json_out else []) + (["--seq", "3"] if workload else []))
        assert_clean(r)
        if r.code == 0 and json_out:
            limit = sys.get_int_max_str_digits()
            sys.set_int_max_str_digits(0)
            try:
                data = json.loads(r.out)
            finally:
                sys.set_int_max_str_digits(limit)
            for key in ("params", "flops", "memory"):
                assert_exact(data.get(key, {}))
        assert left_behind(Path(tmp), {"config.json"}) == set()


# --------------------------------------------------------------------------- workload flags

@fuzz
@given(argv=hostile_workload_argv(),
       command=st.sampled_from([["count", "llama3.2-1b"], ["count", "llama3.2-1b", "--json"],
                                ["derive", "--component", "attention", "--quantity", "flops"],
                                ["derive", "--quantity", "memory", "--model", "llama3.2-1b"],
                                ["derive", "--component", "rmsnorm", "--format", "latex"]]))
def test_hostile_workload_flags(cli, argv, command):
    """count and derive with hostile workload flags (--seq 9999..., --dtype junk, --batch -1, ...)."""
    assert_clean(cli(command + argv))


# --------------------------------------------------------------------------- notation

@fuzz
@given(mapping=hostile_notations(), fmt=st.sampled_from(["latex", "markdown", "text"]),
       suffix=st.sampled_from([".json", ".toml"]))
def test_hostile_notation(cli, mapping, fmt, suffix):
    """derive --notation FILE with hostile LaTeX (\\input, \\write, unbalanced braces, ...) in JSON or
    TOML; what is accepted renders (tests/test_render.py compiles what the check accepts)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"n{suffix}"
        if suffix == ".json":
            path.write_text(json.dumps(mapping), encoding="utf-8")
        else:
            path.write_text("".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in mapping.items()
                                    if isinstance(v, str)), encoding="utf-8")
        r = cli(["derive", "--component", "attention", "--format", fmt, "--notation", path])
        assert_clean(r)
        if r.code == 0:
            assert "\\input" not in r.out and "\\write" not in r.out and "\\openin" not in r.out


# --------------------------------------------------------------------------- templates

@fuzz
@given(template=hostile_templates(), fmt=st.sampled_from(["text", "latex", "markdown"]))
def test_hostile_templates(cli, template, fmt):
    """derive --template-dir with a hostile user template: syntax errors, undefined names, sandbox
    escapes, 1/0, recursion, 10 ** 10000000; an -o file is written only when the render succeeds."""
    ext = {"text": "txt", "latex": "tex", "markdown": "md"}[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / f"derive.{ext}.j2").write_text(template, encoding="utf-8")
        r = cli(["derive", "--component", "rmsnorm", "--format", fmt, "--template-dir", folder,
                 "-o", folder / "out"])
        assert_clean(r)
        assert left_behind(folder, {f"derive.{ext}.j2"} | ({"out"} if r.code == 0 else set())) == set()


# --------------------------------------------------------------------------- -o targets

def _make_target(folder: Path, kind: str, name: str) -> tuple[Path, set[str], Path | None]:
    """Build the -o target (``name``: the file's name); returns the path to give, the names now in
    folder, and the file a successful write must update (None: nothing to check)."""
    if kind == "new":
        return folder / name, set(), folder / name
    if kind in ("existing", "read-only"):
        (folder / name).write_text("old")
        if kind == "read-only":
            os.chmod(folder / name, 0o444)
        return folder / name, {name}, folder / name
    if kind == "symlink":
        real = "real.md" if name != "real.md" else "other.md"
        (folder / real).write_text("old")
        (folder / name).symlink_to(real)
        return folder / name, {real, name}, folder / real
    if kind == "dangling-symlink":
        real = "real.md" if name != "real.md" else "other.md"
        (folder / name).symlink_to(real)
        return folder / name, {name}, folder / real
    if kind == "symlink-loop":
        (folder / "a").symlink_to("b")
        (folder / "b").symlink_to("a")
        return folder / "a", {"a", "b"}, None
    if kind == "directory":
        (folder / "sub").mkdir()
        return folder / "sub", {"sub"}, None
    if kind == "missing-folder":
        return folder / "nope" / "out.md", set(), None
    if kind == "file-as-folder":
        (folder / "file").write_text("x")
        return folder / "file" / "out.md", {"file"}, None
    if kind == "long-name":
        return folder / ("n" * 252 + ".md"), set(), folder / ("n" * 252 + ".md")
    if kind == "hard-link":  # both names must show the new text (a rename broke the link)
        (folder / name).write_text("old")
        other = "other.md" if name != "other.md" else "another.md"
        os.link(folder / name, folder / other)
        return folder / name, {name, other}, folder / other
    if kind == "trailing-slash":  # "NAME/": a plain write fails (Is a directory), it wrote NAME
        return f"{folder / name}/", set(), None  # a str: Path() would drop the slash
    # a symlink to the device: a writer that replaced what stands at the path (the bug this suite guards
    # against) then replaces the link, never the machine's /dev/null (tests/test_files.py writes the
    # device paths themselves, guarded)
    (folder / name).symlink_to("/dev/null" if kind == "dev-null" else "/dev/full")
    return folder / name, {name}, None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="symlinks, /dev/null and /dev/full")
@fuzz
@given(kind=output_targets(), name=output_names(), command=st.sampled_from([["derive", "--component", "rmsnorm"],
                                                       ["derive", "--component", "rmsnorm", "--format", "latex"],
                                                       ["report", "llama3.2-1b"],
                                                       ["sweep", "--base", "llama3.2-1b", "--dim", "2048,4096",
                                                        "--format", "csv"]]))
def test_hostile_output_targets(cli, kind, name, command):
    """-o at a new name (any characters, up to 255 bytes), an existing, read-only or 252-character file, a symlink (also dangling or a
    loop), a directory, a missing folder, a path under a file, /dev/null and /dev/full: a plain write's
    outcome, one line when it fails, and no temporary file left; for derive, report and sweep alike (the
    sweep wrote 'out.txt' for -o out.txt/)."""
    if command[0] == "report" and kind not in ("symlink", "read-only", "dev-full"):
        command = command[:2]  # reports are slower: only where they add something
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        target, made, updated = _make_target(folder, kind, name)
        r = cli([*command, "-o", target])
        if command[0] == "sweep" and r.code == 0:  # its summary line on stderr
            assert r.err.startswith("symllm: sweep: 2 points, 0 invalid dropped"), r.err
            r = dataclasses.replace(r, err="")
        assert_clean(r)
        expected_code = 2 if kind in ("read-only", "symlink-loop", "directory", "missing-folder",
                                      "file-as-folder", "dev-full", "trailing-slash") else 0
        assert r.code == expected_code, (kind, r.err)
        if kind.startswith("dev-"):
            assert (folder / name).is_symlink() and stat.S_ISCHR((folder / name).stat().st_mode)
        if updated is not None and r.code == 0:
            assert updated.read_text() != "old" and updated.is_file() and not updated.is_symlink()
        if kind == "read-only":
            os.chmod(target, 0o644)
            assert target.read_text() == "old"
        new = {updated.name} if updated is not None and updated.parent == folder and r.code == 0 else set()
        assert left_behind(folder, made | new) == set()
        assert not any(p.name.startswith(TEMP_PREFIX) for p in folder.iterdir())


# --------------------------------------------------------------------------- templates: escapes and budgets

#: ways out of Jinja's sandbox that have worked somewhere (attributes, format strings, the attr filter,
#: globals' __globals__, the template reference's context)
ESCAPES = ["cycler.__init__.__globals__.os", "lipsum.__globals__['os']", "joiner.__init__.__globals__",
           "namespace.__init__.__globals__", "''.__class__.__mro__[1].__subclasses__()",
           "self._TemplateReference__context", "(1)|attr('__class__')", "'{0.__class__}'.format(1)",
           "'{0.__globals__}'.format_map({'0': lipsum})", "''|attr('format')('{0.__class__}', 1)",
           "range.__self__", "cycler.__init__.__globals__.__builtins__.__import__('os')"]
#: how a user template reaches the payload: directly, and through include, import, extends and macros of
#: its own and of symllm's built-in templates (which must run in the same sandbox)
WAYS = {
    "plain": {"t.txt.j2": "{{ P }}"},
    "include-builtin": {"t.txt.j2": "{% include 'derive.txt.j2' %}{{ P }}"},
    "include-own": {"t.txt.j2": "{% include 'inc.txt.j2' %}", "inc.txt.j2": "{{ P }}"},
    "import": {"t.txt.j2": "{% import 'lib.txt.j2' as lib %}{{ lib.f() }}",
               "lib.txt.j2": "{% macro f() %}{{ P }}{% endmacro %}"},
    "from-import": {"t.txt.j2": "{% from 'lib.txt.j2' import f %}{{ f() }}",
                    "lib.txt.j2": "{% macro f() %}{{ P }}{% endmacro %}"},
    "extends": {"t.txt.j2": "{% extends 'base.txt.j2' %}{% block b %}{{ P }}{% endblock %}",
                "base.txt.j2": "[{% block b %}{% endblock %}]"},
    "extends-builtin": {"t.txt.j2": "{% extends 'derive.txt.j2' %}{% set x = P %}"},
    "macro": {"t.txt.j2": "{% macro f() %}{{ P }}{% endmacro %}{{ f() }}"},
    "call": {"t.txt.j2": "{% macro f() %}{{ caller() }}{% endmacro %}{% call f() %}{{ P }}{% endcall %}"},
    "set-block": {"t.txt.j2": "{% set x %}{{ P }}{% endset %}{{ x }}"},
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("escape", ESCAPES)
def test_template_escapes_are_refused(cli, tmp_path, way, escape):
    """A user template reaches no Python internals, directly or through include, import, extends, macros and
    call blocks (its own templates and symllm's, one sandbox for all): one line and exit 2, or output that
    shows no module, class or function (an attribute Jinja cannot see is empty)."""
    for name, text in WAYS[way].items():
        (tmp_path / name).write_text(text.replace("P", escape), encoding="utf-8")
    r = cli(["derive", "--component", "rmsnorm", "--template-dir", tmp_path, "--template", "t.txt.j2"])
    assert_clean(r)
    for internal in ("<module", "<class", "<function", "<built-in", "<bound", "<method", "os.system"):
        assert internal not in r.out + r.err, (r.out, r.err)


#: runaway user templates, each with the words its error line must have (before the budgets, each grew
#: memory without bound or never finished)
RUNAWAY = {
    "output": ("{% set x = 'x' * 100000 %}{% for i in range(100000) %}{{ x }}{% endfor %}", "exceed"),
    "macro output": ("{% set x = 'x' * 100000 %}{% macro m() %}{% for i in range(100000) %}{{ x }}{% endfor %}"
                     "{% endmacro %}{{ m()|length }}", "exceed"),
    "set block": ("{% set x = 'x' * 100000 %}{% set y %}{% for i in range(100000) %}{{ x }}{% endfor %}"
                  "{% endset %}{{ y|length }}", "exceed"),
    "doubling ~": ("{% set ns = namespace(x='x') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}"
                   "{% endfor %}{{ ns.x|length }}", "exceed"),
    "doubling +": ("{% set ns = namespace(x='x') %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}"
                   "{% endfor %}{{ ns.x|length }}", "exceed"),
    "ljust": ("{{ 'x'.ljust(10 ** 10)|length }}", "over"),
    "center": ("{{ 'x'|center(10 ** 10)|length }}", "over"),
    "percent": ("{{ ('%09999999999d' % 1)|length }}", "exceed"),
    "format": ("{{ '{:>9999999999}'.format(1)|length }}", "width"),
    "replace": ("{{ (('x' * 2 ** 20)|replace('x', 'x' * 2 ** 20))|length }}", "exceed"),
    "to_bytes": ("{{ (1).to_bytes(10 ** 10, 'big')|length }}", "over"),
    "nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     "longer than"),
    "growing list": ("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% for j in range(100000) %}"
                     "{% set _ = ns.x.append('x' * 100000 ~ j) %}{% endfor %}{% endfor %}", "memory"),
}


#: the render's time budget in the child for the case that must stop on time (it burns all of it); every other
#: case must stop on its own check (output, width, memory) and gets the default budget (render.TIME_LIMIT), so
#: that a loaded machine (the suite runs two workers on two cores) cannot let the clock stop it first: the
#: growing list once reached 1.5 s of wall time before 128 MiB and said "longer than", not "memory"
RUNAWAY_TIME_LIMIT = 1.5

#: the child that runs every runaway case in turn (one import of symllm, not one per case): each case's
#: exit status, stderr, stdout and seconds, as JSON on its stdout
_RUNAWAY_CHILD = """
import contextlib, io, json, sys, time
import symllm.present.render as r
r.MEMORY_LIMIT = 128 << 20
default = r.TIME_LIMIT
from symllm.cli import main
out = {}
for case, (folder, limit) in json.loads(sys.argv[1]).items():
    r.TIME_LIMIT = default if limit is None else limit
    err, std = io.StringIO(), io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        try:
            code = main(["derive", "--component", "rmsnorm", "--template-dir", folder])
        except SystemExit as e:
            code = e.code
    out[case] = [code, err.getvalue(), std.getvalue(), time.monotonic() - start]
sys.__stdout__.write(json.dumps(out))
"""


@pytest.fixture(scope="module")
def runaway_outcomes(tmp_path_factory) -> dict:
    """Every RUNAWAY template rendered by ``symllm derive --template-dir`` in one child process limited to
    3 GiB of address space (budgets here 128 MiB, and 1.5 s for the time-bound case, which burns its whole
    budget; the others stop on their own check, in a fraction of a second when the machine is idle)."""
    import resource
    import subprocess
    if not sys.platform.startswith("linux"):
        pytest.skip("memory limits and /proc")
    folders = {}
    for case, (text, _) in RUNAWAY.items():
        folder = tmp_path_factory.mktemp("runaway")
        (folder / "derive.txt.j2").write_text(text, encoding="utf-8")
        folders[case] = (str(folder), RUNAWAY_TIME_LIMIT if RUNAWAY[case][1] == "longer than" else None)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    root = Path(__file__).parent.parent
    try:
        proc = subprocess.run([sys.executable, "-c", _RUNAWAY_CHILD, json.dumps(folders)], capture_output=True,
                              text=True, timeout=600, preexec_fn=limit, env={**os.environ, "PYTHONPATH": str(root)})
    except subprocess.TimeoutExpired:
        pytest.fail("the runaway templates still run after 600 s")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("case", RUNAWAY)
def test_runaway_templates_stop_with_one_line(runaway_outcomes, case):
    """A user template that would print gigabytes, grow memory without bound or never end stops within
    its budget with one line and exit 2, and the process goes on (the next case renders in it)."""
    code, err, out, took = runaway_outcomes[case]
    words = RUNAWAY[case][1]
    assert code == 2 and out == "", (code, err[-2000:])
    assert err.startswith("symllm: error: template: ") and err.count("\n") == 1, err[-2000:]
    assert words in err, err
    assert took < 60, took
