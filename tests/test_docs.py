"""The documentation runs: the MkDocs site (docs/, mkdocs.yml) builds with warnings as errors, and every
example in README.md and docs/*.md is executed -- Python (``>>>``) through doctest, shell examples of
``symllm ...`` in ```` ```console ```` blocks through the command line in-process, their printed output
compared where the page shows it. Terminal output shown in the docs fits 100 columns.

How a console block is read: ``$ `` starts a command (a trailing ``\\`` continues it on the next line; a
``# comment`` after it is dropped); the lines up to the next ``$ `` are its output (none shown: it only has to succeed). Shown in full, the
output must be what the command prints (stdout, then stderr), line for line. Where it is shortened --
a line ``...`` or ``…`` stands for lines left out, and a command commented ``# excerpt`` or ``trimmed``
shows pieces -- each shown piece (lines, split at ``...``, braces and commas: a JSON excerpt's
``"key": value`` pairs) must appear in that order in what it prints, whitespace ignored. Besides ``symllm``, a block may run ``head -N FILE`` and ``tail -N FILE``, and pipe
a command into ``| head -N``, ``| tail -N`` or ``| grep WORD``. Other fences (```` ```text ````,
```` ```sh ````) are not run.
"""
import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import requires

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
WIDTH = 100
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


def _blocks(path: Path, language: str) -> list[tuple[int, str]]:
    """(line number, body) of each fenced block in ``language``."""
    text = path.read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == language]


def _commands(body: str) -> list[tuple[str, str, list[str]]]:
    """(command, its comment, its shown output lines) of a console block."""
    out, lines = [], body.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise AssertionError(f"console block: output before any command: {lines[i]!r}")
        command = lines[i][2:]
        while command.rstrip().endswith("\\"):
            i += 1
            command = command.rstrip()[:-1] + " " + lines[i].strip()
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        code, _, comment = command.partition("  #")
        out.append((code.strip(), comment.strip(), shown))
    return out


def _run(command: str, cli) -> str:
    """What ``command`` prints: ``symllm ...`` in-process (stdout then stderr), head/tail of a file, and
    pipes into head, tail or grep."""
    first, *pipes = [p.strip() for p in command.split(" | ")]
    argv = shlex.split(first)
    if argv[0] == "symllm":
        r = cli(argv[1:])
        assert r.code == 0, f"{command}: exit {r.code}: {r.err}"
        text = r.out + r.err
    elif argv[0] in ("head", "tail") and len(argv) == 3:
        lines = Path(argv[2]).read_text().splitlines(keepends=True)
        n = int(argv[1].lstrip("-n"))
        text = "".join(lines[:n] if argv[0] == "head" else lines[-n:])
    else:
        raise AssertionError(f"docs example runs {argv[0]!r}: only symllm, head and tail run here")
    for pipe in pipes:
        name, arg = shlex.split(pipe)
        lines = text.splitlines(keepends=True)
        n = int(arg.lstrip("-n")) if name in ("head", "tail") else 0
        text = "".join({"head": lambda: lines[:n], "tail": lambda: lines[-n:],
                        "grep": lambda: [line for line in lines if arg in line]}[name]())
    return text


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _check(command: str, comment: str, shown: list[str], printed: str) -> None:
    if not shown:  # no output shown: the command only has to succeed
        return
    shortened = any(line.strip() in ("...", "…") for line in shown) or "excerpt" in comment or "trimmed" in comment
    if not shortened:
        assert printed.rstrip("\n").splitlines() == shown, f"$ {command}\n--- printed:\n{printed}"
        return
    at, flat = 0, _squash(printed)
    for piece in (p for line in shown for p in re.split(r"\.\.\.|…|[{},]", line)):
        piece = _squash(piece)
        if not piece:
            continue
        found = flat.find(piece, at)
        assert found >= 0, f"$ {command}\n--- not printed (in this order): {piece}\n--- printed:\n{printed}"
        at = found + len(piece)


def _console_cases():
    return [pytest.param(path, line, body, id=f"{path.name}:{line}")
            for path in PAGES for line, body in _blocks(path, "console")]


@pytest.mark.parametrize("path,line,body", _console_cases())
def test_console_examples_print_what_the_docs_show(path, line, body, cli, tmp_path, monkeypatch):
    """Each ``$ symllm ...`` runs (exit 0) and prints the output shown under it."""
    monkeypatch.chdir(tmp_path)
    for command, comment, shown in _commands(body):
        _check(command, comment, shown, _run(command, cli))


@pytest.mark.parametrize("path", [p for p in PAGES if _blocks(p, "python")], ids=lambda p: p.name)
def test_python_examples_run(path, tmp_path, monkeypatch):
    """The ``>>>`` examples of a page's ```python blocks, as doctest runs them (one namespace per page)."""
    monkeypatch.chdir(tmp_path)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs: dict = {}
    examples, report = 0, []
    for line, body in _blocks(path, "python"):
        test = parser.get_doctest(body, globs, f"{path.name}:{line}", str(path), line)
        examples += len(test.examples)
        runner.run(test, out=report.append, clear_globs=False)
    assert examples, f"{path.name}: a ```python block without >>> examples"
    assert runner.failures == 0, "".join(report)[:3000]


SECTION_NAMED = re.compile(r'(README|\]\(([a-z_]+)\.md(?:#[a-z0-9-]+)?\)|\b([a-z_]+)\.md)[:,]? "([^"\n]{3,60})"')


def test_sections_the_docs_name_by_title_exist():
    """A section named by its title after its page (`README "Install"`, `[serving](serving.md), "DeepSeek-V4"`,
    `conventions.md "Logits"`) is a heading or a bold term of that page. mkdocs checks links and anchors, not
    these: three of them (optimizers.md, plan.md) named README sections that had moved to docs/ (found 2026-11-29)."""
    missing = []
    for page in PAGES:
        for m in SECTION_NAMED.finditer(page.read_text(encoding="utf-8")):
            name = m.group(2) or m.group(3)
            target = ROOT / "README.md" if m.group(1) == "README" else ROOT / "docs" / f"{name}.md"
            text = target.read_text(encoding="utf-8") if target.exists() else ""
            titles = re.findall(r"^#+\s+(.*)$", text, re.M) + re.findall(r"\*\*([^*\n]+)\*\*", text)
            if not any(m.group(4).lower() in title.lower() for title in titles):
                missing.append((page.name, m.group(0)))
    assert not missing, missing


def test_terminal_output_in_the_docs_fits_100_columns():
    """No line of a console or text block (terminal output as the docs show it) is over 100 columns."""
    long = [(p.name, line) for p in PAGES for lang in ("console", "text", "")
            for _, body in _blocks(p, lang) for line in body.splitlines() if len(line) > WIDTH]
    assert not long, long


def test_readme_is_short_and_keeps_the_test_command():
    """README.md is at most 250 lines, and the test command .ci/run runs is one line after its marker."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    after = text.split("<!-- test-command -->", 1)[1].splitlines()[:4]
    commands = [line for line in after if re.match(r"^(pip|python)", line)]
    assert commands and "pytest" in commands[0] and "&&" in commands[0]


def test_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` (warnings are errors: a broken link, a missing page, an API name
    mkdocstrings cannot find) succeeds, and every page of docs/ is in the navigation."""
    requires("mkdocs")
    requires("mkdocstrings")
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    for page in (ROOT / "docs").glob("*.md"):
        name = "" if page.stem == "index" else page.stem + "/"
        assert (site / name / "index.html").exists(), page.name
    assert "memory_by_component" in (site / "api" / "index.html").read_text(encoding="utf-8")


def test_commands_page_lists_every_workload_option():
    """docs/commands.md names every workload option (the list after its marker), and no other."""
    from symllm.costs.workloads import options
    flags = {flag for name, (_, opt) in options().items() for flag in opt.flags(name)}
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    listed = text.split("<!-- workload-options -->", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"--[a-z][a-z0-9-]*", listed)) == flags


def test_terminal_output_fits_100_columns_and_speaks_in_units(cli):
    """A long closed form (the decode batch's quotient), Llama 4's list of zero terms and a long symbol
    meaning break within 100 columns; a GPU's line says bandwidth in GB/s and peaks in TFLOP/s (the
    L40S datasheet: 864 GB/s, 362.05 dense bf16 TFLOPS), never "864.00BB/s"."""
    for argv in (["derive", "--quantity", "decode_batch", "--model", "llama3.1-8b", "--gpu", "h100-sxm",
                  "--context", "390"], ["derive", "--model", "llama4-scout-17b-16e"]):
        r = cli(argv)
        assert r.code == 0 and max(map(len, r.out.splitlines())) <= WIDTH, argv
    out = cli(["count", "llama3.2-1b", "--gpu", "l40s"]).out
    assert "362.05 TFLOP/s dense bf16, 864 GB/s," in " ".join(out.split()) and "BB/s" not in out
    assert max(map(len, out.splitlines())) <= WIDTH


def test_readme_family_table_lists_every_family_and_preset():
    """README's family table (issue 39: "the README's family table lists them") names every ``model_type``
    symllm registers (a family added without a row fails) and every shipped preset, by name or by a row's
    pattern (``gemma-2-*``) or range (``llama1-7b ... llama3.3-70b``)."""
    from symllm.arch.families.hf import registry
    import symllm

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line.split("|")[1]]
    kinds = set()
    for row in rows:  # a row's "(and `_text`)": each of its types' text-model variant too
        named = {k for k in re.findall(r"`(\w+)`", row.split("|")[1]) if k != "_text"}
        kinds |= named | ({k + "_text" for k in named} if "(and `_text`)" in row else set())
    assert set(registry()) - kinds == set()
    names = [n for row in rows for n in re.findall(r"`([\w.*-]+)`", row.split("|")[4])]
    ranges = [m.groups() for row in rows for m in re.finditer(r"`([\w.-]+)` \.\.\. `([\w.-]+)`", row.split("|")[4])]
    llama = [r for r in ranges if r == ("llama1-7b", "llama3.3-70b")]
    missing = [p for p in symllm.preset_names() if p not in names
               and not any(re.fullmatch(n.replace(".", r"\.").replace("*", ".*"), p) for n in names if "*" in n)
               and not (llama and re.fullmatch(r"llama[123](\.[0-9])?-[0-9]+b", p))]
    assert missing == []
