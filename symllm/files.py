"""Reading input files and writing output files: the one place that does each.

:func:`read_text` reads a config, notation or table file as UTF-8 text, turning every failure into one
:class:`~symllm.errors.SymllmError` line that names what was being read and the path; at most
:data:`MAX_INPUT_BYTES` (64 MiB) are read. :func:`read_json` parses such a file as JSON, with the same
one-line errors (also for integers over 4,300 digits and nesting too deep to parse).

:func:`write_atomic` writes reports, derivations and sweeps as a plain ``open(path, "w")`` would, but
atomically where it can; the content is always complete (in a temporary file) before the target is touched:

* ``"-"`` is standard output; a symlink is written through to its target (the link stays), also the
  ``/proc/self/fd`` links behind ``/dev/stdout`` and ``/dev/stderr``;
* a new name, or an existing regular file with one link, no extended attributes and an owner and group
  the new file can be given, is replaced atomically: a temporary file ``.symllm-XXXXXXXX.tmp`` in the
  target's folder is written completely, given the old file's mode (and owner and group), then
  ``os.replace``-d onto the target, so a reader never sees half a file and a failure (an exception,
  ``KeyboardInterrupt``, or SIGTERM, which the command line turns into an exception) removes it and
  leaves an existing file untouched. Only SIGKILL or a power cut can leave a ``.symllm-*.tmp`` file
  behind; the short name also leaves room for target names up to the 255-byte limit;
* any other existing regular file (hard links, another owner or group, ACLs, a folder we may not write
  in, ``/dev/stdout`` redirected to a file) is updated in place from the complete temporary file, as a
  plain write would: its inode, owner, group, mode and links stay; Ctrl-C or SIGTERM during that copy
  is handled once it is done, so the file is old or new, never half of each;
* a FIFO, a character or block device (``/dev/null``, ``/dev/full``, a terminal, a pipe) is written
  directly, as a plain write would; a write error (``/dev/full``: no space) is reported;
* an existing file a plain write may not overwrite (no write permission, or no ``w`` bit at all, even
  for root) is refused, and so is a name ending in ``/`` (``Is a directory`` / ``Not a directory``).

The new file gets the mode a plain ``open(path, "w")`` would give it (an existing file's mode, else
``0o666`` minus the umask), not ``mkstemp``'s private ``0o600``. Any ``OSError`` becomes one
:class:`~symllm.errors.SymllmError` line naming the path.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from symllm.errors import SymllmError
from symllm.validate import shown_path

__all__ = ["read_bytes", "read_text", "read_json", "parse_json", "check_output", "write_atomic", "TABLE_FORMATS",
           "table_format", "json_value", "json_text", "JSON_SCHEMA", "builtin_templates"]

#: the JSON Schema of every machine-readable output (``count --json``, ``plan --json``, ``presets --json``,
#: ``verify --json``, a sweep's JSON lines): shipped in the package, described in docs/json.md
JSON_SCHEMA = Path(__file__).resolve().parent / "output.schema.json"



def builtin_templates() -> Path | None:
    """The folder of symllm's built-in templates: ``symllm/templates`` in an installed wheel, ``templates/`` in a
    checkout (the one holding ``standalone.tex.j2``); None where neither does. Found without jinja2: what
    :func:`symllm.present.render.template_dir` renders from and :mod:`symllm.present.rendered` hashes.

    >>> (builtin_templates() / "report.tex.j2").is_file()
    True
    """
    here = Path(__file__).resolve().parent  # the symllm package
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "standalone.tex.j2").is_file():
            return candidate
    return None


#: the largest input file :func:`read_text` reads by default (configs and notations are a few kB)
MAX_INPUT_BYTES = 64 << 20

#: the formats of the tables a sweep writes and reads (:mod:`symllm.studies.sweeps`, ``symllm sweep
#: --format``), each with the file endings that choose it when no format is given (any other ending: csv)
TABLE_FORMATS = {"csv": (".csv",), "jsonl": (".jsonl", ".json", ".ndjson"), "parquet": (".parquet", ".pq")}


def table_format(path) -> str:
    """The format of the table file ``path`` when none is given: the one its ending chooses
    (:data:`TABLE_FORMATS`, in any case), else csv.

    >>> table_format("grid.ndjson"), table_format("GRID.PQ"), table_format("grid.txt")
    ('jsonl', 'parquet', 'csv')
    """
    suffix = Path(path).suffix.lower()
    return next((fmt for fmt, endings in TABLE_FORMATS.items() if suffix in endings), "csv")


def read_bytes(path, what: str, *, limit: int | None = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file at ``path``; ``what`` (``config``, ``notation``, ``table``) starts the one-line
    error. At most ``limit`` bytes are read: a larger file (or an endless one, such as ``/dev/zero``) is
    refused rather than read into memory. A FIFO that nobody has opened for writing reads as empty instead
    of waiting forever.

    >>> read_bytes("/dev/zero", "table", limit=1024)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: table: '/dev/zero' is larger than 1,024 bytes
    """
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (a blocking open waits for one);
        # reads are blocking again after that, and see end-of-file when no writer is there
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            os.set_blocking(fd, True)
        except OSError:
            pass
        with os.fdopen(fd, "rb") as fh:
            data = fh.read() if limit is None else fh.read(limit + 1)
    except OSError as e:
        raise SymllmError(f"{what}: cannot read {shown_path(path)}: {e.strerror or e}") from None
    if limit is not None and len(data) > limit:
        raise SymllmError(f"{what}: {shown_path(path)} is larger than {limit:,} bytes")
    return data


def read_text(path, what: str, *, limit: int | None = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file at ``path``, read with :func:`read_bytes` (its limits, its errors); line
    endings are kept as they are.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_bytes(b'{"dim": 4096}')
    >>> read_text(p, "config")
    '{"dim": 4096}'
    >>> _ = p.write_bytes(b"\\xff")
    >>> read_text(p, "config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: config: '...c.json' is not UTF-8 text (byte 0)
    """
    data = read_bytes(path, what, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SymllmError(f"{what}: {shown_path(path)} is not UTF-8 text (byte {e.start})") from None


def read_json(path, what: str, *, limit: int | None = MAX_INPUT_BYTES):
    """The JSON value of the file at ``path`` (read with :func:`read_text`); ``what`` starts the one-line
    error. Invalid JSON, an integer of more than 4,300 digits (Python's limit on converting text to
    an int) and nesting too deep to parse are each one :class:`~symllm.errors.SymllmError` line.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_text('{"dim": 4096}')
    >>> read_json(p, "config")
    {'dim': 4096}
    >>> _ = p.write_text("[" * 100000)
    >>> read_json(p, "config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: config: '...c.json' is not valid JSON (nested too deeply)
    """
    return parse_json(read_text(path, what, limit=limit), what, shown_path(path))


def parse_json(text: str, what: str, where: str, *, parse_float=None):
    """``text`` parsed as JSON; a failure is one :class:`~symllm.errors.SymllmError` line starting
    ``what: where`` (invalid JSON, an integer over 4,300 digits, nesting too deep to parse);
    ``parse_float`` is :func:`json.loads`'s (``decimal.Decimal``: numbers exactly as written).

    >>> parse_json("[1, 2]", "table", "'t.jsonl' line 1")
    [1, 2]
    >>> parse_json("9" * 5000, "table", "'t.jsonl' line 3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: table: 't.jsonl' line 3: a number is too long (over 4,300 digits)
    """
    try:
        return json.loads(text, parse_float=parse_float)
    except json.JSONDecodeError as e:
        raise SymllmError(f"{what}: {where} is not valid JSON (line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise SymllmError(f"{what}: {where} is not valid JSON (nested too deeply)") from None
    except ValueError:  # int('9' * 5000): Python refuses integers over sys.get_int_max_str_digits()
        raise SymllmError(f"{what}: {where}: a number is too long (over {_max_digits():,} digits)") from None


def json_value(value):
    """``value`` as symllm's JSON outputs write it (docs/json.md): an exact integer (an int, a whole
    Fraction) is a JSON integer of any length; every other number is a JSON number (a float: int4 bytes,
    times, shares); a number past a double's range (about 1.8e308, or not finite) is ``null``, never a
    string; dicts, lists and tuples are converted throughout. A bool stays a bool.

    >>> from fractions import Fraction
    >>> json_value({"w": Fraction(9, 10), "n": Fraction(8, 2), "t": (2 ** 64, Fraction(10 ** 400, 3)), "b": True})
    {'w': 0.9, 'n': 4, 't': [18446744073709551616, None], 'b': True}
    """
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if type(value).__name__ == "Fraction" and value.denominator == 1:  # fractions loads only where one is made
        return value.numerator
    if getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u", "b"):  # a numpy integer or bool scalar
        return value.item()
    try:
        out = float(value)
    except OverflowError:  # an exact number past a double's range
        return None
    except (TypeError, ValueError):
        raise TypeError(f"not JSON serialisable: {value!r}") from None
    return out if out - out == 0 else None  # inf and nan: not JSON


def json_text(value, *, indent: int | None = 2) -> str:
    """``value`` as JSON text (:func:`json_value`'s numbers; strict JSON: never ``NaN`` or ``Infinity``).

    >>> json_text({"ratio": float("inf"), "n": 3}, indent=None)
    '{"ratio": null, "n": 3}'
    """
    return json.dumps(json_value(value), indent=indent, allow_nan=False)


def _max_digits() -> int:
    """The most digits Python reads into an int (``sys.get_int_max_str_digits``; 4,300 by default)."""
    import sys
    return getattr(sys, "get_int_max_str_digits", lambda: 4300)()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: the temporary files write_atomic makes: ``.symllm-`` + 8 random characters + ``.tmp``
TEMP_PREFIX, TEMP_SUFFIX = ".symllm-", ".tmp"


def _oserror(path, e: OSError) -> SymllmError:
    return SymllmError(f"output: cannot write {shown_path(path)}: {e.strerror or e}")


def _target(path: Path) -> Path:
    """Where a plain ``open(path, "w")`` writes: through symlinks (also a dangling one) to the target."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=False))
    except (OSError, RuntimeError) as e:  # a symlink loop
        raise SymllmError(f"output: cannot write {shown_path(path)}: {getattr(e, 'strerror', None) or e}") from None


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _keeps_identity(tmp_fd: int, st: os.stat_result, target: Path) -> bool:
    """Whether a renamed temporary file can stand for the existing file ``st`` as a plain write keeps it:
    no other hard link, no extended attributes (ACLs), the same owner and group (given here when the
    user may: root, or a group the user is in)."""
    if st.st_nlink != 1:
        return False
    try:
        if os.listxattr(target):
            return False
    except (OSError, AttributeError):  # no xattr support: nothing to lose
        pass
    mine = os.fstat(tmp_fd)
    if (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(tmp_fd, st.st_uid, st.st_gid)
        except OSError:
            return False
    return True


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM received in the block are handled as it ends, by the handlers they had (Python runs
    them in the main thread only; a handler set outside Python is left alone)."""
    import signal
    import threading
    held, kinds = [], (signal.SIGINT, signal.SIGTERM)
    before = [signal.getsignal(sig) for sig in kinds]
    if threading.current_thread() is not threading.main_thread() or None in before:
        yield
        return
    try:
        for sig in kinds:
            signal.signal(sig, lambda signum, frame: held.append(signum))
        yield
    finally:
        try:  # each restored, even if a handler raises as the first is
            signal.signal(kinds[0], before[0])
        finally:
            signal.signal(kinds[1], before[1])
            if held:
                signal.raise_signal(held[0])


def _copy_in_place(src: int, path: Path, size: int) -> None:
    """Copy ``size`` bytes of the complete file ``src`` into the existing file at ``path`` (its inode,
    owner, mode and links stay): room is reserved first, so a full disk fails before anything changes, and
    a signal waits for the copy (:func:`_signals_held`; an interrupted one left the file half new)."""
    with _signals_held():
        _copy(src, path, size)


def _copy(src: int, path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode) and size > os.fstat(fd).st_size and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as e:
                if e.errno not in (getattr(os, "EOPNOTSUPP", None), errno.EINVAL, errno.ENOSYS):
                    raise
        os.lseek(src, 0, os.SEEK_SET)
        done = 0
        while done < size:
            chunk = os.read(src, 1 << 20)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            done += len(chunk)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.ftruncate(fd, size)
            os.fsync(fd)
    finally:
        os.close(fd)


def _open_args(binary: bool, newline: str) -> dict:
    return {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8", "newline": newline}


def _write_direct(path: Path, content, newline: str, binary: bool = False) -> Path:
    """Write to a FIFO or a device as a plain write would, reporting every error (also at close)."""
    try:
        with open(path, **_open_args(binary, newline)) as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(content)
    except OSError as e:
        raise _oserror(path, e) from None
    return path


def _anonymous() -> int:
    """A new file with no name (nothing to remove, even after SIGKILL), open for reading and writing."""
    import tempfile  # only when a file is written: a count writes none
    with tempfile.TemporaryFile() as fh:
        return os.dup(fh.fileno())


def _write_content(fd: int, content, newline: str, binary: bool) -> int:
    """Write ``content`` to the open file ``fd`` (left open), flushed to disk; returns its size in bytes."""
    with os.fdopen(fd, **_open_args(binary, newline), closefd=False) as fh:
        if callable(content):
            content(fh)
        else:
            fh.write(content)
        fh.flush()
    os.fsync(fd)
    return os.fstat(fd).st_size


def _to_stdout(content, newline: str, binary: bool) -> None:
    """``-o -``: the content on standard output, as printing it would."""
    import sys
    stream = sys.stdout.buffer if binary else sys.stdout
    if newline != "\n" and not binary and hasattr(stream, "reconfigure"):
        stream.flush()
        stream.reconfigure(newline=newline)
    if callable(content):
        content(stream)
    else:
        stream.write(content)
    stream.flush()


def _temporary_name(folder: Path) -> str:
    """A fresh name for write_atomic's temporary file in ``folder`` (created with ``O_EXCL``)."""
    return os.path.join(folder, f"{TEMP_PREFIX}{os.urandom(4).hex()}{TEMP_SUFFIX}")


def _preflight(raw) -> tuple[Path, os.stat_result | None]:
    """:func:`check_output`'s checks; returns where a plain write lands and the existing file's stat."""
    path = Path(raw)
    target = _target(path)
    try:
        st = os.stat(path)  # through every link, /proc/self/fd/N ones included (/dev/stdout)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise _oserror(raw, e) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise SymllmError(f"output: {shown_path(raw)} is a directory")
    if isinstance(raw, str) and raw.endswith(("/", os.sep)):  # "out.txt/": pathlib drops the slash, open does not
        code = errno.ENOTDIR if st is not None else errno.EISDIR
        raise SymllmError(f"output: cannot write {shown_path(raw)}: {os.strerror(code)}")
    if st is not None and stat.S_ISREG(st.st_mode) and (not st.st_mode & 0o222 or not os.access(path, os.W_OK)):
        raise SymllmError(f"output: cannot write {shown_path(raw)}: the file is read-only")
    if st is None and not target.parent.is_dir():
        raise SymllmError(f"output: directory {shown_path(target.parent)} does not exist")
    return target, st


def check_output(path) -> None:
    """Refuse, in one line, an output path that :func:`write_atomic` would refuse before writing anything
    (a directory, a name ending in ``/``, a read-only file, a missing folder); ``"-"`` (standard output)
    passes. The one rule every ``-o`` goes through: the command line asks it before computing anything,
    and :func:`write_atomic` asks it again (the Python door).

    >>> check_output("-")
    >>> check_output("out.txt/")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: output: cannot write 'out.txt/': Is a directory
    """
    if not (isinstance(path, str) and path == "-"):
        _preflight(os.fspath(path))


def write_atomic(path, content: str | bytes | Callable, *, newline: str = "\n",
                 binary: bool = False) -> Path:
    """Write ``content`` (a string, or a function that writes to the open text file) to ``path`` as a
    plain write would, atomically for new files: through a symlink to its target, directly to a FIFO
    or device (``/dev/stdout`` too), an existing file's owner, group, mode and hard links kept, never
    over a file a plain write may not overwrite (see the module docstring); the string ``"-"`` is
    standard output. On any failure an existing ``path`` is untouched and no temporary file stays.
    Returns ``path``. With ``binary=True`` the file is opened in binary mode (``content`` bytes, or a
    function that writes bytes; ``newline`` is ignored).

    >>> import os, pathlib, tempfile
    >>> p = write_atomic(pathlib.Path(tempfile.mkdtemp()) / "r.tex", "x")
    >>> p.read_text()
    'x'
    >>> link = p.with_name("link.tex")
    >>> link.symlink_to(p.name)
    >>> _ = write_atomic(link, "y")
    >>> p.read_text(), link.is_symlink()
    ('y', True)
    >>> os.link(p, p.with_name("hard.tex"))
    >>> _ = write_atomic(p, "z")
    >>> p.with_name("hard.tex").read_text()
    'z'
    >>> write_atomic(p, lambda fh: fh.write(b"\\x00\\x01"), binary=True).read_bytes()
    b'\\x00\\x01'
    >>> write_atomic(p.parent, "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: output: '...' is a directory
    >>> write_atomic(str(p) + "/", "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: output: cannot write '...r.tex/': Not a directory
    >>> os.chmod(p, 0o444)
    >>> write_atomic(p, "z")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: output: cannot write '...r.tex': the file is read-only
    """
    if isinstance(path, str) and path == "-":
        try:
            _to_stdout(content, newline, binary)
        except OSError as e:
            raise SymllmError(f"output: cannot write to stdout: {e.strerror or e}") from None
        return Path(path)
    raw = os.fspath(path)
    path = Path(path)
    target, st = _preflight(raw)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return _write_direct(path, content, newline, binary)  # a FIFO, a device, a socket (open refuses it)
    try:  # a regular file behind a link realpath cannot follow (/dev/stdout redirected to a file): in place
        through_proc = st is not None and not _same_file(os.stat(target), st)
    except OSError:
        through_proc = st is not None
    folder = target.parent
    fd, tmp = None, None
    try:
        try:
            if through_proc:
                raise PermissionError(errno.EACCES, "in place")
            while fd is None:  # the name is held before the file exists (mkstemp returns it only after):
                tmp = _temporary_name(folder)  # an interrupt in between leaves nothing the cleanup misses
                try:
                    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
                except FileExistsError:
                    continue
        except OSError as e:
            tmp = None
            if st is None:  # a new file needs its folder
                raise SymllmError(f"output: cannot write in {str(folder)!r}: {e.strerror or e}") from None
            # an existing file we may write in a folder we may not (or /dev/stdout): an unnamed
            # temporary file elsewhere, copied in place
            fd = _anonymous()
        size = _write_content(fd, content, newline, binary)
        if tmp is not None and (st is None or _keeps_identity(fd, st, target)):
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            os.replace(tmp, target)
            tmp = None
        else:  # hard links, another owner, ACLs, a /proc link: update the existing file in place
            _copy_in_place(fd, path if through_proc else target, size)
    except OSError as e:
        raise _oserror(raw, e) from None
    finally:  # also on KeyboardInterrupt and the CLI's SIGTERM exception
        try:
            if fd is not None:
                os.close(fd)
        finally:  # a signal's exception, raised as os.close returns, skipped the removal (Windows needs it closed)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
    return path
