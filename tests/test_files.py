"""Output files (-o) behave as a plain write would, atomically where they can, and the command line
turns faults (a full device, Ctrl-C, SIGTERM, numbers of any size) into one line.

Each test names the fault it reproduces; see symllm/files.py for the rules."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from symllm import files
from symllm.errors import SymllmError

LINUX = sys.platform.startswith("linux")
ROOT = Path(__file__).parent.parent


def _one_line(r, code=2, prefix="symllm: error: "):
    assert r.code == code, r
    assert r.err.startswith(prefix) and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err


# --------------------------------------------------------------------------- -o: what a plain write does

def test_symlink_is_written_through_to_its_target(cli, tmp_path):
    """-o LINK updates the link's target (atomically: a new inode) and the link stays a link."""
    target = tmp_path / "real.md"
    target.write_text("old")
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    (tmp_path / "link.md").symlink_to("real.md")
    r = cli(["report", "llama2-7b", "-o", tmp_path / "link.md"])
    assert r.code == 0, r.err
    assert (tmp_path / "link.md").is_symlink() and os.readlink(tmp_path / "link.md") == "real.md"
    assert target.read_text().startswith("## llama2-7b")
    assert target.stat().st_ino != inode  # replaced by a rename, not truncated in place
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the mode a plain write keeps
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.md", "real.md"]


def test_dangling_symlink_creates_its_target(tmp_path):
    """A symlink to a file that does not exist yet: the target is created, as open(path, "w") does."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "link").symlink_to(sub / "new.txt")
    files.write_atomic(tmp_path / "link", "x")
    assert (sub / "new.txt").read_text() == "x" and (tmp_path / "link").is_symlink()


def test_symlink_loop_is_one_line(tmp_path):
    """A symlink loop is an error line, not a traceback."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(SymllmError, match="output: cannot write"):
        files.write_atomic(tmp_path / "a", "x")


@contextlib.contextmanager
def _fd_on(fd: int, target: int):
    """Descriptor ``fd`` (1 or 2) of this process is ``target`` (a pipe's write end, an open file) while the
    block runs, as a process started with its standard stream there sees it: ``/dev/stdout`` (``/dev/stderr``)
    is ``/proc/self/fd/1`` (``2``), a link to the pipe or file. Restored afterwards."""
    saved = os.dup(fd)
    try:
        os.dup2(target, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


@pytest.mark.skipif(not LINUX, reason="/dev/stdout, /dev/stderr and pipes")
@pytest.mark.parametrize("argv", [["derive", "--component", "rmsnorm"],
                                  ["sweep", "--base", "llama3-8b", "--n-layers", "1:3"]])
@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/stderr", "-"])
def test_standard_streams_are_written_to_the_stream(cli, argv, target):
    """`symllm derive --component rmsnorm -o /dev/stdout | cat` prints the derivation (it failed: "cannot
    write in '/proc/NNN/fd'"); /dev/stderr and - too, as a plain write or printing would. (In-process: the
    standard stream's descriptor is a pipe while the -o run writes, as in `| cat`; `-` is sys.stdout.)"""
    plain = cli(argv)
    assert plain.code == 0 and plain.out
    read, write = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(read, encoding="utf-8").read()))
    reader.start()
    try:
        with _fd_on(1 if target == "/dev/stdout" else 2, write):
            os.close(write)
            r = cli([*argv, "-o", target])
    finally:
        reader.join(60)
    assert r.code == 0, r.err
    got = r.out if target == "-" else got[0]
    assert plain.out in got, (got, r.err)


@pytest.mark.skipif(not LINUX, reason="/dev/stdout")
def test_dev_stdout_redirected_to_a_file(cli, tmp_path):
    """`symllm derive ... -o /dev/stdout > out.txt` writes out.txt (through /proc/self/fd/1), as a plain
    write would, and leaves no temporary file. (In-process: descriptor 1 is out.txt while it runs.)"""
    with open(tmp_path / "out.txt", "w") as out, _fd_on(1, out.fileno()):
        r = cli(["derive", "--component", "rmsnorm", "-o", "/dev/stdout"])
    assert r.code == 0, r.err
    assert (tmp_path / "out.txt").read_text().startswith("rmsnorm: parameters")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_replacing_a_file_keeps_its_hard_links_and_mode(cli, tmp_path):
    """-o over a file with a second hard link updates both names (the rename broke the link: the other name
    kept the old text) and keeps the file's mode; a failed render leaves both untouched."""
    out, other = tmp_path / "r.md", tmp_path / "other.md"
    out.write_text("old")
    os.chmod(out, 0o604)
    os.link(out, other)
    inode = out.stat().st_ino
    r = cli(["report", "llama2-7b", "-o", out])
    assert r.code == 0, r.err
    assert other.read_text().startswith("## llama2-7b") and other.read_text() == out.read_text()
    assert out.stat().st_ino == inode and out.stat().st_nlink == 2 and stat.S_IMODE(out.stat().st_mode) == 0o604
    before = out.read_text()

    def fails(fh):
        fh.write("partial")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        files.write_atomic(out, fails)
    assert out.read_text() == before == other.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.md", "r.md"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_replacing_another_users_file_keeps_its_owner_and_group(cli, tmp_path):
    """root writing -o over a user's file: the file still belongs to the user and the group (the rename
    gave it to root), with its mode."""
    out = tmp_path / "r.md"
    out.write_text("old")
    os.chown(out, 4321, 8765)
    os.chmod(out, 0o660)
    r = cli(["report", "llama2-7b", "-o", out])
    assert r.code == 0, r.err
    st = out.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 8765, 0o660)
    assert out.read_text().startswith("## llama2-7b")


@pytest.mark.parametrize("exists, why", [(True, "Not a directory"), (False, "Is a directory")])
def test_trailing_slash_fails_like_a_plain_write(cli, tmp_path, exists, why):
    """-o out.txt/ fails as open("out.txt/", "w") does, one line, exit 2 (it wrote out.txt)."""
    out = tmp_path / "out.txt"
    if exists:
        out.write_text("old")
    r = cli(["derive", "--component", "rmsnorm", "-o", f"{out}/"])
    _one_line(r)
    assert why in r.err
    assert [p.name for p in tmp_path.iterdir()] == (["out.txt"] if exists else [])
    if exists:
        assert out.read_text() == "old"


@pytest.fixture
def devices_guarded():
    """Fails the test, and restores the nodes when it can (root), if /dev/null or /dev/full stopped being
    character devices: a writer that renames over its target (the bug) would replace them for the whole
    machine."""
    yield
    broken = [(path, minor) for path, minor in (("/dev/null", 3), ("/dev/full", 7))
              if not stat.S_ISCHR(os.stat(path).st_mode)]
    for path, minor in broken:
        if os.geteuid() == 0:
            os.unlink(path)
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
            os.chmod(path, 0o666)
    assert not broken, f"{[p for p, _ in broken]} were replaced by a regular file (restored: {os.geteuid() == 0})"


@pytest.mark.skipif(not LINUX, reason="/dev/null and /dev/full are Linux devices")
def test_devices_are_written_directly(cli, devices_guarded):
    """-o /dev/null succeeds and leaves the device a device; -o /dev/full (no space) is one line, exit 2
    (the rename wrote a regular file over the device node, or exited 0)."""
    r = cli(["report", "llama2-7b", "-o", "/dev/null"])
    assert r.code == 0 and r.err == ""
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    r = cli(["report", "llama2-7b", "-o", "/dev/full"])
    _one_line(r)
    assert "No space left" in r.err and stat.S_ISCHR(os.stat("/dev/full").st_mode)
    r = cli(["sweep", "--base", "llama3-8b", "--n-layers", "1:2000", "-o", "/dev/full"])
    _one_line(r)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_written_directly(cli, tmp_path):
    """-o FIFO writes into the FIFO (a reader gets the report), and the FIFO stays a FIFO."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    r = cli(["report", "llama2-7b", "-o", fifo])
    reader.join(30)
    assert r.code == 0, r.err
    assert got and got[0].startswith("## llama2-7b")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o000])
def test_read_only_file_is_refused(cli, tmp_path, mode):
    """A file without write permission is not replaced (the rename did), even for root: one line, exit 2,
    the file unchanged."""
    out = tmp_path / "r.md"
    out.write_text("keep")
    os.chmod(out, mode)
    try:
        r = cli(["report", "llama2-7b", "-o", out])
        _one_line(r)
        assert "read-only" in r.err
        os.chmod(out, 0o600)
        assert out.read_text() == "keep"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]
    finally:
        os.chmod(out, 0o600)


@pytest.mark.parametrize("length", [243, 250, 255])
def test_long_file_names(cli, tmp_path, length):
    """Names of 243-255 characters work: the temporary name is short (".NAME.xxxx.tmp" passed 255)."""
    out = tmp_path / ("r" * (length - 3) + ".md")
    r = cli(["report", "llama2-7b", "-o", out])
    assert r.code == 0, r.err
    assert out.read_text().startswith("## llama2-7b") and len(list(tmp_path.iterdir())) == 1


def test_temporary_name_is_short_and_recognisable(tmp_path, monkeypatch):
    """While a file is written its temporary file is .symllm-XXXXXXXX.tmp in the target's folder."""
    seen = []

    def content(fh):
        seen.extend(p.name for p in tmp_path.iterdir())
        fh.write("x")
    files.write_atomic(tmp_path / ("y" * 255), content)
    assert len(seen) == 1 and seen[0].startswith(files.TEMP_PREFIX) and seen[0].endswith(files.TEMP_SUFFIX)
    assert len(seen[0]) <= 20


def test_interrupted_write_leaves_nothing(tmp_path):
    """KeyboardInterrupt (and the CLI's SIGTERM exception) in the middle of writing removes the temporary
    file and leaves the old file as it was."""
    out = tmp_path / "r.csv"
    out.write_text("old")

    def content(fh):
        fh.write("partial")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        files.write_atomic(out, content)
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.csv"]


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_sigterm_mid_write_removes_the_temporary_file(tmp_path):
    """SIGTERM while a large sweep is being written: exit 143 with one line, no temporary file, no output
    (the .NAME.*.tmp file of hundreds of MB stayed)."""
    out = tmp_path / "big.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "symllm", "sweep", "--base", "llama3-8b", "--dim", "64:640000000:64",
                             "--quantity", "params,flops", "-o", str(out)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(files.TEMP_PREFIX) for p in tmp_path.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err == "symllm: terminated\n", err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- input files

def test_read_json_turns_every_parse_failure_into_one_line(tmp_path):
    """read_json: invalid JSON, an integer over 4,300 digits and nesting 5,000 deep are SymllmErrors."""
    p = tmp_path / "c.json"
    for text, why in [("{", "not valid JSON"), ('{"dim": ' + "9" * 5000 + "}", "too long"),
                      ("[" * 5000 + "]" * 5000, "nested too deeply")]:
        p.write_text(text)
        with pytest.raises(SymllmError, match=why):
            files.read_json(p, "notation")


@pytest.mark.parametrize("text", ['{"d": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000, '{"d": ' + "[" * 5000],
                         ids=["5000-digits", "nested-5000", "unclosed-5000"])
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_hostile_notation_files_are_one_line(cli, tmp_path, text, suffix):
    """A notation file with a 5,000-digit integer or nested 5,000 deep: one line, exit 2."""
    p = tmp_path / f"n{suffix}"
    p.write_text(text if suffix == ".json" else "d = " + text.split(": ", 1)[-1].rstrip("}"))
    _one_line(cli(["derive", "--notation", p]))


@pytest.mark.parametrize("text", ['{"dim": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000],
                         ids=["5000-digits", "nested-5000"])
def test_hostile_config_files_are_one_line(cli, tmp_path, text):
    """A config with a 5,000-digit integer or nested 5,000 deep: one line, exit 2."""
    p = tmp_path / "c.json"
    p.write_text(text)
    _one_line(cli(["count", p]))


# --------------------------------------------------------------------------- faults of the command line

@pytest.mark.skipif(not LINUX, reason="/dev/full is a Linux device")
@pytest.mark.parametrize("argv", [["count", "llama3.1-8b"], ["presets"], ["count", "llama3.1-8b", "--json"]])
def test_stdout_on_a_full_device(argv):
    """`symllm count llama3.1-8b > /dev/full`: one line, exit 2, no "Exception ignored" noise."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "symllm", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "symllm: error: output: cannot write to stdout: No space left on device\n"


@pytest.mark.skipif(not LINUX, reason="POSIX pipes")
def test_closed_pipe_is_quiet():
    """`symllm presets | head -1`: exit 0, nothing on stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(f"{sys.executable} -m symllm count llama3.1-8b --seq 9 | head -c 1", shell=True, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout == "l" and proc.stderr == ""


def test_ctrl_c_is_one_line_and_exit_130(cli, monkeypatch):
    """KeyboardInterrupt during a command: `symllm: interrupted`, exit 130 (a 27-line traceback)."""
    from symllm.cli import parser as cli_parser  # binds each subcommand to its cmd_NAME

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli_parser, "cmd_count", interrupted)
    r = cli(["count", "llama3.1-8b"])
    assert r.code == 130 and r.err == "symllm: interrupted\n"


#: a sitecustomize for the processes below: holds one step until the test lets it go (the file MARK.go,
#: or 30 s) and says when it starts, so that a signal lands exactly there (SYMLLM_TEST_SLOW: "import" the
#: import of symllm.costs.workloads, which symllm.cli makes; "unlink" the removal of a .symllm-*.tmp file;
#: "close" the closing of one; "write" each os.write to a file out.csv, once done; "exit" an atexit handler
#: after main() returned)
_SLOW_STEP = """
import atexit, os, sys, time
_mark, _step = os.environ["SYMLLM_TEST_MARK"], os.environ["SYMLLM_TEST_SLOW"]

def _slow():
    open(_mark, "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(_mark + ".go") and time.monotonic() < deadline:
        time.sleep(0.01)

class _SlowImport:
    def find_spec(self, name, path=None, target=None):
        if _step == "import" and name == "symllm.costs.workloads":
            _slow()
        return None

sys.meta_path.insert(0, _SlowImport())
_unlink = os.unlink

def _slow_unlink(path, *a, **k):
    if _step == "unlink" and os.path.basename(str(path)).startswith(".symllm-"):
        _slow()
    return _unlink(path, *a, **k)

os.unlink = _slow_unlink
_close = os.close

def _slow_close(fd):
    if _step == "close" and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".symllm-"):
        _slow()
    return _close(fd)

os.close = _slow_close
_write = os.write

def _slow_write(fd, data):
    done = _write(fd, data)
    if _step == "write" and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == "out.csv":
        _slow()
    return done

os.write = _slow_write
if _step == "exit":
    atexit.register(lambda: os.path.exists(_mark + ".armed") and _slow())
"""


def _slowed(tmp_path, step: str, argv: list) -> tuple[subprocess.Popen, Path]:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_SLOW_STEP)
    mark = tmp_path / "hooks" / "mark"
    env = {**os.environ, "PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}", "SYMLLM_TEST_MARK": str(mark),
           "SYMLLM_TEST_SLOW": step}
    proc = subprocess.Popen([sys.executable, "-m", "symllm", *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, mark


def _let_go(mark: Path) -> None:
    """Let the held step finish, once the signal just sent has surely reached the process (the kernel marks
    it pending at once; it is handled before the process runs on, and the held step only polls a file)."""
    time.sleep(0.05)
    Path(str(mark) + ".go").touch()


def _wait_for(proc, condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert proc.poll() is None and time.monotonic() < deadline, (what, proc.communicate())
        time.sleep(0.01)


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
@pytest.mark.parametrize("sig, code, line", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signal_while_importing_is_one_line(tmp_path, sig, code, line):
    """Ctrl-C (or SIGTERM) while symllm.cli imports the package (the first ~0.2 s): one line and 130 (143)
    (a 30-line KeyboardInterrupt traceback)."""
    proc, mark = _slowed(tmp_path, "import", ["count", "llama3.1-8b"])
    _wait_for(proc, mark.exists, "the import")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err, out) == (code, f"symllm: {line}\n", "")


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
@pytest.mark.parametrize("first, second, code, line", [(signal.SIGINT, signal.SIGTERM, 130, "interrupted"),
                                                       (signal.SIGTERM, signal.SIGTERM, 143, "terminated"),
                                                       (signal.SIGTERM, signal.SIGINT, 143, "terminated")])
def test_second_signal_during_cleanup(tmp_path, first, second, code, line):
    """A second signal while the first one's cleanup removes the temporary file: the cleanup finishes, the
    exit status is the first signal's, one line, nothing left (the second signal killed the process with
    the .symllm-*.tmp file still there)."""
    out = tmp_path / "big.csv"
    proc, mark = _slowed(tmp_path, "unlink", ["sweep", "--base", "llama3-8b", "--dim", "64:640000000:64",
                                              "--quantity", "params", "-o", str(out)])
    _wait_for(proc, lambda: any(p.name.startswith(files.TEMP_PREFIX) for p in tmp_path.iterdir()), "the write")
    proc.send_signal(first)
    _wait_for(proc, mark.exists, "the cleanup")
    proc.send_signal(second)
    _let_go(mark)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (code, f"symllm: {line}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hooks"]


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_first_signal_during_another_failures_cleanup(tmp_path):
    """SIGTERM while write_atomic cleans up after another failure (every point of the sweep invalid, found
    after its last chunk): exit 143, one line, no temporary file (the signal raised as the temporary file's
    descriptor closed, before its name was removed, and the .symllm-*.tmp file stayed)."""
    proc, mark = _slowed(tmp_path, "close", ["sweep", "--base", "llama3-8b", "--dim", "1:3", "--quantity", "params",
                                             "-o", str(tmp_path / "out.csv")])
    _wait_for(proc, mark.exists, "the cleanup")
    proc.send_signal(signal.SIGTERM)
    _let_go(mark)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (143, "symllm: terminated\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hooks"]


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_sigterm_while_an_existing_file_is_updated_in_place(tmp_path):
    """SIGTERM while the complete temporary file is copied into an existing file with a second hard link:
    the copy finishes, then exit 143 with one line; the file holds every row, as the link does (the copy
    stopped after its first MiB: the new rows' start, then bytes that were never written)."""
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    os.link(out, tmp_path / "link.csv")
    proc, mark = _slowed(tmp_path, "write", ["sweep", "--base", "llama3-8b", "--dim", "128:65536:128",
                                             "--n-layers", "1:128", "--quantity", "params", "-o", str(out)])
    _wait_for(proc, mark.exists, "the copy")
    proc.send_signal(signal.SIGTERM)
    _let_go(mark)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (143, "symllm: terminated\n")
    lines = (tmp_path / "link.csv").read_text().splitlines()
    assert lines[0].startswith("dim,n_layers,") and len(lines) == 1 + 512 * 128, len(lines)  # header, dim x n_layers
    assert lines[-1].startswith("65536,128,") and "\0" not in lines[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hooks", "link.csv", "out.csv"]


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_second_signal_while_exiting(tmp_path):
    """SIGINT, then SIGTERM while the interpreter shuts down after main() returned 130: still 130 and one
    line (the restored default SIGTERM handler killed the process: status -15)."""
    proc, mark = _slowed(tmp_path, "exit", ["sweep", "--base", "llama3-8b", "--dim", "64:640000000:64",
                                            "--quantity", "params", "-o", str(tmp_path / "big.csv")])
    _wait_for(proc, lambda: any(p.name.startswith(files.TEMP_PREFIX) for p in tmp_path.iterdir()), "the write")
    Path(str(mark) + ".armed").touch()
    proc.send_signal(signal.SIGINT)
    _wait_for(proc, mark.exists, "the exit")
    proc.send_signal(signal.SIGTERM)
    _let_go(mark)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "symllm: interrupted\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hooks"]


def test_sigterm_handler_is_restored(cli):
    """main() installs its SIGTERM handler for the command only (in-process callers keep theirs)."""
    before = signal.getsignal(signal.SIGTERM)
    assert cli(["presets"]).code == 0
    assert signal.getsignal(signal.SIGTERM) is before


HUGE = "9" * 4000  # argparse reads it (under 4,300 digits); products of two are over 4,300 digits


def test_json_output_of_numbers_over_4300_digits(cli):
    """--json with FLOPs of 8,000 digits prints exact JSON integers (json.dumps raised ValueError)."""
    r = cli(["count", "llama3.1-8b", "--batch", HUGE, "--seq", HUGE, "--json"])
    assert r.code == 0, r.err[-300:]
    sys.set_int_max_str_digits(0)
    try:
        data = json.loads(r.out)
        b = int(HUGE)
        assert data["flops"]["prefill"] > 10**7990 and data["flops"]["prefill"] % b == 0
        assert data["workload"]["batch"] == b
    finally:
        sys.set_int_max_str_digits(4300)


@pytest.mark.parametrize("argv", [
    ["count", "llama3.1-8b", "--batch", HUGE, "--seq", HUGE],
    ["report", "llama3.1-8b", "--batch", HUGE, "--seq", HUGE],
    ["report", "llama3.1-8b", "--batch", "10" + "0" * 310, "--format", "latex"],
    ["derive", "--model", "llama3.1-8b", "--quantity", "flops", "--batch", HUGE, "--seq", HUGE],
    ["derive", "--model", "llama3.1-8b", "--quantity", "memory", "--batch", HUGE, "--format", "pretty"],
])
def test_text_output_of_numbers_past_float(cli, argv):
    """count, report and derive print numbers above 1e308 (float() raised OverflowError) exactly."""
    r = cli(argv)
    assert r.code == 0, r.err[-300:]
    b = int(argv[argv.index("--batch") + 1])
    assert f"{b:,}"[:40] in r.out or f"{b:,}".replace(",", "{,}")[:40] in r.out
    assert "e+" in r.out  # the human column switches to scientific notation, exactly rounded


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_nobody_writes_is_read_as_empty_not_waited_on(tmp_path, cli):
    """A config FIFO that no process writes gives one line at once (it reads as empty), not a hang;
    one that a writer fills is read."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    r = cli(["count", str(fifo)])
    assert (r.code, r.out) == (2, "") and r.err.count("\n") == 1 and "not valid JSON" in r.err

    def write():
        with open(fifo, "w") as fh:
            fh.write('{"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100}')
    writer = threading.Thread(target=write)
    writer.start()
    try:
        time.sleep(0.2)  # the writer is waiting in open() for a reader
        r = cli(["count", str(fifo), "--json"])
    finally:
        writer.join(5)
    # 2 blocks of (4·64² attention + 3·64·d_ff + 2·64 norms), d_ff = Meta's rounding of 64 (multiple_of 256)
    d_ff = 256 * ((int(2 * 4 * 64 / 3) + 255) // 256)
    assert r.code == 0 and json.loads(r.out)["params"]["total"] == 2 * 100 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * d_ff + 2 * 64) + 64
