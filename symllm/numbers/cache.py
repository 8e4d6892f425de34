"""The on-disk cache: what one process generated (kernel source, formulas, reports), kept for the next.

Trust model (docs/development.md, "Start-up"). symllm trusts an entry only from a folder that the effective user owns,
that no group or other user may write, and that is not reached through a symbolic link (the folder and
every folder symllm creates on the way are opened with ``O_NOFOLLOW`` and checked on the open descriptor,
so nothing can be swapped in between), and only from an entry file with the same properties, opened
without following links and without blocking (a FIFO is not read). Anything else is ignored with one
warning (:class:`CacheWarning`; the command line prints ``symllm: warning: ...``) and symllm computes
what it needs instead (slower): it never reads, runs or deletes what another user could have written.

* Where: ``$SYMLLM_CACHE_DIR`` (empty: off), else ``$XDG_CACHE_HOME/symllm``, else ``$HOME/.cache/symllm``.
  A relative ``XDG_CACHE_HOME`` or ``HOME`` is ignored (the XDG specification); a ``HOME`` the effective
  user does not own (``sudo -E`` keeps the caller's) is replaced by the user's own home from the password
  database, so root never uses another user's cache.
* Entries: ``<kind>-<32 hex digits>.json``, named by a hash of what determines them (the caller's key, which
  includes :func:`source_digest`: symllm's source and data files, SymPy's version, Python's). Each holds a
  header, its full key and a digest of its contents, checked before use: a damaged entry (a flipped byte, a
  changed digit, a truncated file) is a miss, computed again and replaced. What symllm runs from an entry is
  checked again by its reader (kernel source by :func:`symllm.numbers.runtime.define`).
* Trimming: past :data:`CACHE_ENTRIES` entries the least recently used half is deleted, counting and
  deleting only files whose name and header are symllm's: other files in the folder are never touched.

>>> import os, tempfile
>>> from unittest import mock
>>> with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"SYMLLM_CACHE_DIR": tmp}):
...     cache_put("demo", "some key", ["one", "two"])
...     cache_get("demo", "some key")
('one', 'two')
"""
from __future__ import annotations

import json
import os
import re
import stat
import sys
import warnings
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

try:  # hashlib would load OpenSSL (3 ms of every start-up); BLAKE2 is built into CPython
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b as _blake2b

__all__ = ["cache_dir", "cache_get", "cache_put", "source_digest", "key", "digest", "bytes_digest", "hasher",
           "CacheWarning", "CACHE_ENTRIES"]

#: entries kept in :func:`cache_dir`; past this the least recently used half of symllm's entries is removed
CACHE_ENTRIES = 2048
#: the largest entry read (a rendered report is tens of kilobytes)
MAX_ENTRY_BYTES = 16 << 20
#: the first bytes of every entry: with the name, what marks a file as symllm's (trimming deletes no other)
HEADER = b'{"symllm-cache": 1, '
#: an entry's name
_NAME = re.compile(r"[a-z]+(?:-[a-z]+)*-[0-9a-f]{32}\.json")
_KIND = re.compile(r"[a-z]+(?:-[a-z]+)*")

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class CacheWarning(UserWarning):
    """A cache folder or entry symllm does not trust, ignored (symllm computes without it)."""


#: the folders already warned about in this process: one warning each
_WARNED: set[str] = set()


def _warn(where, what: str) -> None:
    where = str(where)
    if where in _WARNED:
        return
    _WARNED.add(where)
    warnings.warn(f"cache: ignoring {where}: {what}; symllm computes without it (slower)", CacheWarning,
                  stacklevel=4)


def _home() -> str | None:
    """The effective user's home: ``$HOME`` when it is absolute and theirs, else the password database's."""
    home = os.environ.get("HOME", "")
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if os.path.isabs(home):
        try:
            if euid is None or os.stat(home).st_uid == euid:
                return home
        except OSError:
            pass
    try:
        import pwd
        home = pwd.getpwuid(euid).pw_dir
    except (ImportError, KeyError, TypeError):
        return None
    return home if os.path.isabs(home) else None


def cache_dir() -> Path | None:
    """Where generated kernels, formulas and reports are kept between processes, or ``None`` when that is
    off: ``$SYMLLM_CACHE_DIR`` (empty: off), else ``$XDG_CACHE_HOME/symllm`` (an absolute one), else
    ``~/.cache/symllm`` of the effective user (see the module docstring). Whether symllm trusts the
    folder is decided when it is opened.

    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"SYMLLM_CACHE_DIR": "/tmp/k"}):
    ...     print(cache_dir())
    /tmp/k
    >>> with mock.patch.dict(os.environ, {"SYMLLM_CACHE_DIR": ""}):
    ...     print(cache_dir())
    None
    >>> with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": "relative/cache", "HOME": "/root"}):
    ...     os.environ.pop("SYMLLM_CACHE_DIR", None) and None
    ...     "relative" in str(cache_dir())
    False
    """
    env = os.environ.get("SYMLLM_CACHE_DIR")
    if env is not None:
        return Path(os.path.abspath(env)) if env else None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "symllm"
    home = _home()
    return Path(home) / ".cache" / "symllm" if home else None


def _euid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _untrusted(st: os.stat_result, folder: bool) -> str | None:
    """Why a folder or entry with status ``st`` is not trusted, or ``None``."""
    if folder and not stat.S_ISDIR(st.st_mode):
        return "not a folder"
    if not folder and not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    euid = _euid()
    if euid is not None and st.st_uid != euid:
        return f"owned by uid {st.st_uid}, not by the effective user (uid {euid})"
    if st.st_mode & 0o022:
        who = "group and others" if st.st_mode & 0o022 == 0o022 else "others" if st.st_mode & 0o002 else "group"
        return f"writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _is_link(path, dir_fd=None) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path, dir_fd=dir_fd).st_mode) if dir_fd is not None else os.path.islink(path)
    except OSError:
        return False


def _checked(fd: int, where, folder: bool = True) -> int | None:
    """``fd`` when what it is open on is trusted (else closed, with a warning)."""
    why = _untrusted(os.fstat(fd), folder)
    if why is None:
        return fd
    os.close(fd)
    _warn(where, why)
    return None


def _create(path: Path) -> int | None:
    """Create ``path``'s missing folders (mode 0700) below its nearest existing ancestor, each opened
    without following links and checked; the last one's descriptor, or ``None``."""
    missing = []
    top = path
    while not os.path.lexists(top):
        missing.append(top.name)
        if top.parent == top:
            return None
        top = top.parent
    try:
        fd = os.open(top, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    here = top
    for name in reversed(missing):
        here = here / name
        try:
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
            except FileExistsError:  # another process made it meanwhile: checked below like any folder
                pass
            new = os.open(name, _DIR, dir_fd=fd)
        except OSError:
            if _is_link(name, fd):
                _warn(here, "a symbolic link")
            os.close(fd)
            return None
        os.close(fd)
        fd = _checked(new, here)
        if fd is None:
            return None
    return fd


def _open_folder(create: bool) -> tuple[Path, int] | None:
    """The cache folder and a descriptor open on it, when there is one symllm trusts (and, with
    ``create``, after creating it); ``None`` otherwise."""
    path = cache_dir()
    if path is None:
        return None
    try:
        fd = os.open(path, _DIR)
    except FileNotFoundError:
        fd = _create(path) if create else None
        return None if fd is None else (path, fd)
    except OSError:
        if _is_link(path):
            _warn(path, "a symbolic link")
        return None
    fd = _checked(fd, path)
    return None if fd is None else (path, fd)


def _sources(root: str, prefix: str = ""):
    """Every ``.py`` and ``.json`` file under ``root`` (the code, and the data it reads: presets, the accelerator
    table): (its path relative to ``root``, with ``/``; its ``stat``), in sorted order; walked with
    ``os.scandir`` (``Path.rglob`` took a warm count 10 ms).

    >>> rels = [rel for rel, _ in _sources(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))]
    >>> "numbers/cache.py" in rels, rels == sorted(rels)
    (True, True)
    """
    with os.scandir(root) as it:
        entries = sorted(it, key=lambda e: e.name)
    out = []
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            out.extend(_sources(e.path, f"{prefix}{e.name}/"))
        elif e.name.endswith((".py", ".json")):
            out.append((prefix + e.name, e.stat()))
    return sorted(out)


@lru_cache(maxsize=1)
def source_digest() -> str:
    """A hash of what generated code and formulas depend on: symllm's source and data files (each one's path,
    size and modification time, what Python's own bytecode cache trusts, so a start-up reads none of them),
    SymPy's version (its ``release.py``, read without importing SymPy) and Python's. Part of every key.

    >>> len(source_digest())
    128
    """
    h = _blake2b()
    for rel, st in _sources(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))):
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    spec = find_spec("sympy")
    if spec is not None and spec.origin:
        release = Path(spec.origin).with_name("release.py")
        h.update(release.read_bytes() if release.is_file() else Path(spec.origin).read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()


def key(*parts) -> str:
    """The key of a cache entry computed from ``parts``: :func:`source_digest` and each part's ``repr``
    (a spec's and a workload's ``shape()``: what shapes the formulas, marked once on their fields).

    >>> key("a", (1, 2)) == key("a", (1, 2)) != key("a", (1, 3))
    True
    """
    return json.dumps([source_digest(), *map(repr, parts)])


def digest(key: str, sources) -> str:
    """The digest an entry carries: of its full key and its strings (their lengths included).

    >>> digest("k", ["a", "b"]) != digest("k", ["ab"])
    True
    """
    return _blake2b(json.dumps([key, list(sources)]).encode()).hexdigest()


def bytes_digest(data: bytes) -> str:
    """The hex digest the cache's keys hold for ``data`` (a file's bytes, where a key depends on a file).

    >>> bytes_digest(b"config") == bytes_digest(b"config") != bytes_digest(b"config ")
    True
    """
    return _blake2b(data).hexdigest()


def hasher():
    """A new BLAKE2b hash object, the cache's (without loading OpenSSL): fed piece by piece where a key depends on
    many files; its hex digest is :func:`bytes_digest`'s of all it was fed.

    >>> h = hasher(); h.update(b"con"); h.update(b"fig"); h.hexdigest() == bytes_digest(b"config")
    True
    """
    return _blake2b()


def _name(kind: str, key: str) -> str:
    if not _KIND.fullmatch(kind):
        raise ValueError(f"cache kind {kind!r}")
    return f"{kind}-{_blake2b(key.encode()).hexdigest()[:32]}.json"


def _read(fd: int, name: str, folder: Path) -> bytes | None:
    """The bytes of entry ``name`` in the folder ``fd``, when it is a trusted regular file (no link, no
    FIFO, not too large); ``None`` otherwise."""
    try:
        entry = os.open(name, _READ, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError:
        if _is_link(name, fd):
            _warn(folder, f"its entry {name} is a symbolic link")
        return None
    try:
        st = os.fstat(entry)
        why = _untrusted(st, folder=False)
        if why is not None:
            _warn(folder, f"its entry {name} is {why}")
            return None
        if st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, size = [], 0
        while size <= MAX_ENTRY_BYTES:
            chunk = os.read(entry, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_ENTRY_BYTES:
            return None
        try:
            os.utime(entry)  # recently used: kept when the cache is trimmed
        except OSError:
            pass
        return b"".join(chunks)
    finally:
        os.close(entry)


def cache_get(kind: str, key: str) -> tuple | None:
    """The strings :func:`cache_put` stored for ``kind`` and ``key``, or ``None``: no entry, the cache off,
    a folder or entry symllm does not trust (one :class:`CacheWarning`), or a damaged entry (its header,
    key or digest wrong: it is computed again and replaced)."""
    try:
        opened = _open_folder(create=False)
    except (OSError, NotImplementedError):  # no dir_fd support (not POSIX): no cache
        return None
    if opened is None:
        return None
    folder, fd = opened
    try:
        raw = _read(fd, _name(kind, key), folder)
        if raw is None or not raw.startswith(HEADER):
            return None
        data = json.loads(raw)
        sources = data["sources"]
        if (data["kind"] == kind and data["key"] == key and isinstance(sources, list)
                and all(type(x) is str for x in sources) and data["digest"] == digest(key, sources)):
            return tuple(sources)
    except (OSError, ValueError, KeyError, TypeError, RecursionError, NotImplementedError):
        pass
    finally:
        os.close(fd)
    return None


def cache_put(kind: str, key: str, sources) -> None:
    """Store ``sources`` (strings) for ``kind`` and ``key``, atomically (a full temporary file, then a
    rename); any failure is ignored (the cache only saves time). Past :data:`CACHE_ENTRIES` entries the
    least recently used half of symllm's entries goes."""
    sources = list(sources)
    try:
        opened = _open_folder(create=True)
    except (OSError, NotImplementedError):
        return
    if opened is None:
        return
    folder, fd = opened
    try:
        name = _name(kind, key)
        text = json.dumps({"symllm-cache": 1, "kind": kind, "key": key, "digest": digest(key, sources),
                           "sources": sources})
        tmp = f".tmp-{os.getpid()}-{os.urandom(8).hex()}.json"
        out = os.open(tmp, _WRITE, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        _trim(fd, str(folder))
    except (OSError, ValueError, NotImplementedError):
        pass
    finally:
        os.close(fd)


def _ours(fd: int, name: str) -> float | None:
    """The modification time of ``name`` when it is one of symllm's entries (a trusted regular file whose
    first bytes are :data:`HEADER`), else ``None``."""
    try:
        entry = os.open(name, _READ, dir_fd=fd)
    except OSError:
        return None
    try:
        st = os.fstat(entry)
        if _untrusted(st, folder=False) is not None or os.read(entry, len(HEADER)) != HEADER:
            return None
        return st.st_mtime
    except OSError:
        return None
    finally:
        os.close(entry)


#: folder -> (CACHE_ENTRIES, how many more writes of this process cannot pass it): a folder of n files
#: can take CACHE_ENTRIES - n more entries before it needs trimming, so it is listed again only then
#: (listing it on every write was quadratic in the entries written)
_ROOM: dict[str, tuple[int, int]] = {}


def _trim(fd: int, folder: str = "") -> None:
    """Past :data:`CACHE_ENTRIES` of symllm's entries in the folder ``fd`` (at ``folder``), delete the least
    recently used half of them; nothing else. Called after each write; lists the folder only when the
    writes since it was last listed may have filled it (other processes' writes can pass the limit until
    one of them lists it: at most one limit's worth each)."""
    limit, room = _ROOM.get(folder, (CACHE_ENTRIES, 0))
    if limit == CACHE_ENTRIES and room > 0:
        _ROOM[folder] = (limit, room - 1)
        return
    names = os.listdir(fd)
    if len(names) > CACHE_ENTRIES:
        names = [n for n in names if _NAME.fullmatch(n)]  # other files in the folder take no room
    kept = len(names)
    if kept > CACHE_ENTRIES:
        entries = sorted((t, n) for n in names if (t := _ours(fd, n)) is not None)
        if len(entries) > CACHE_ENTRIES:
            gone = entries[:len(entries) // 2]
            for _, name in gone:
                try:
                    os.unlink(name, dir_fd=fd)
                except OSError:
                    pass
            kept -= len(gone)
    _ROOM[folder] = (CACHE_ENTRIES, CACHE_ENTRIES - kept)
