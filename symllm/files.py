"""Reading input files and writing output files: the one place that does each.

:func:`read_text` reads a config, notation or table file as UTF-8 text, turning every failure into one
:class:`~symllm.errors.SymllmError` line that names what was being read and the path.

:func:`write_atomic` writes reports, derivations and sweeps atomically.

A temporary file in the target's folder is written completely, then ``os.replace``-d onto the
target, so a reader never sees half a file and a failure leaves an existing file untouched. The
file gets the mode a plain ``open(path, "w")`` would give it (an existing file's mode, else
``0o666`` minus the umask), not ``mkstemp``'s private ``0o600``. Any ``OSError`` becomes one
:class:`~symllm.errors.SymllmError` line naming the path.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, TextIO, Union

from .errors import SymllmError

__all__ = ["read_text", "write_atomic"]

#: the largest input file :func:`read_text` reads by default (configs and notations are a few kB)
MAX_INPUT_BYTES = 64 << 20


def read_text(path, what: str, *, limit: int | None = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file at ``path``; ``what`` (``config``, ``notation``, ``table``) starts
    the one-line error. Line endings are kept as they are. At most ``limit`` bytes are read: a larger
    file (or an endless one, such as ``/dev/zero``) is refused rather than read into memory.

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
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read() if limit is None else fh.read(limit + 1)
    except OSError as e:
        raise SymllmError(f"{what}: cannot read {str(path)!r}: {e.strerror or e}") from None
    if limit is not None and len(data) > limit:
        raise SymllmError(f"{what}: {str(path)!r} is larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SymllmError(f"{what}: {str(path)!r} is not UTF-8 text (byte {e.start})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path, content: Union[str, Callable[[TextIO], None]], *, newline: str = "\n") -> Path:
    """Write ``content`` (a string, or a function that writes to the open text file) to ``path``
    atomically. On any failure the temporary file is removed and an existing ``path`` is untouched.

    >>> import pathlib, tempfile
    >>> p = write_atomic(pathlib.Path(tempfile.mkdtemp()) / "r.tex", "x")
    >>> p.read_text()
    'x'
    >>> write_atomic(p.parent, "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: output: '...' is a directory
    """
    path = Path(path)
    if path.is_dir():
        raise SymllmError(f"output: {str(path)!r} is a directory")
    folder = path.parent
    if not folder.is_dir():
        raise SymllmError(f"output: directory {str(folder)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise SymllmError(f"output: cannot write in {str(folder)!r}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise SymllmError(f"output: cannot write {str(path)!r}: {e.strerror or e}") from None
        raise
    return path
