"""Models by their Hugging Face Hub id, found in the local Hugging Face cache: no network, and no
``huggingface_hub`` import (``symllm count meta-llama/Llama-3.1-8B`` starts as fast as with a preset).

The cache is the folder ``huggingface_hub`` writes (its ``constants.HF_HUB_CACHE``): ``$HF_HUB_CACHE``
if set, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else
``~/.cache/huggingface/hub``. A repository ``org/name`` lives in ``models--org--name``; the commit a
branch points at is the text of ``refs/<branch>`` (``main``), and its files are in
``snapshots/<commit>/`` (links into ``blobs/``). Without a ``refs/main``, a repository with exactly
one snapshot is read from it (``hf download --revision`` of a commit writes no ref); several are an error
naming them.

>>> import os, pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> snap = root / "models--org--tiny" / "snapshots" / "abc123"
>>> snap.mkdir(parents=True)
>>> _ = (root / "models--org--tiny" / "refs").mkdir()
>>> _ = (root / "models--org--tiny" / "refs" / "main").write_text("abc123")
>>> os.environ["HF_HUB_CACHE"] = str(root)
>>> snapshot("org/tiny") == snap
True
>>> del os.environ["HF_HUB_CACHE"]
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from symllm.errors import SymllmError
from symllm.validate import fitting, short, shown_path

__all__ = ["cache_dir", "is_repo_id", "in_cache", "not_cached", "snapshot", "repo_root", "member", "model_folder"]

#: a Hub repository id as huggingface_hub validates it (``validate_repo_id``): ``name`` or ``org/name``
_REPO_ID = re.compile(r"^(?:[\w\-.]{1,96}/)?[\w\-.]{1,96}$")


def cache_dir() -> Path:
    """The local Hugging Face hub cache folder (module docstring: the same order as ``huggingface_hub``).

    >>> import os
    >>> os.environ["HF_HUB_CACHE"] = "/data/hub"
    >>> str(cache_dir())
    '/data/hub'
    >>> del os.environ["HF_HUB_CACHE"]
    """
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(xdg).expanduser() / "huggingface" / "hub"


def is_repo_id(name) -> bool:
    """Whether ``name`` reads as a Hub repository id ``org/name`` (one slash; no ``..``, no ``--``
    at either end: what ``huggingface_hub`` accepts).

    >>> is_repo_id("meta-llama/Llama-3.1-8B"), is_repo_id("llama3.1-8b"), is_repo_id("../x/y")
    (True, False, False)
    """
    return (isinstance(name, str) and name.count("/") == 1 and bool(_REPO_ID.match(name))
            and ".." not in name and "--" not in name and not name.startswith(("-", ".")))


def in_cache(repo_id: str) -> bool:
    """Whether the local cache holds snapshots of the Hub repository ``repo_id`` (nothing is downloaded).

    >>> in_cache("nobody/nothing")
    False
    """
    return is_repo_id(repo_id) and (cache_dir() / f"models--{repo_id.replace('/', '--')}" / "snapshots").is_dir()


def snapshot(repo_id: str, revision: str = "main") -> Path:
    """The snapshot folder of ``repo_id`` at ``revision`` (a branch name or a commit hash) in the local
    cache; one line naming where it looked when it is not there (nothing is downloaded).

    >>> snapshot("nobody/nothing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: model: 'nobody/nothing': not a preset, not in the HF cache (nothing is downloaded)
    """
    if not is_repo_id(repo_id):
        raise SymllmError(f"model: {repo_id!r} is not a Hub repository id (org/name)")
    repo = cache_dir() / f"models--{repo_id.replace('/', '--')}"
    if not (repo / "snapshots").is_dir():
        raise SymllmError(not_cached(repo_id))
    return _snapshot_in(repo, repo_id, revision)


def _snapshot_in(repo: Path, repo_id: str, revision: str = "main") -> Path:
    """:func:`snapshot` in the cache's repository folder ``repo`` (``models--org--name``, holding ``snapshots``)."""
    snaps = repo / "snapshots"
    ref = repo / "refs" / revision
    commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else None
    if ref.is_file():
        try:
            commit = ref.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise SymllmError(f"model: cannot read {shown_path(ref)}: {getattr(e, 'strerror', None) or e}") from None
    if commit is not None:
        if not re.fullmatch(r"[0-9A-Za-z._-]{1,96}", commit) or not (snaps / commit).is_dir():
            raise SymllmError(f"model: {shown_path(ref)} names {short(commit, 16)}, not a snapshot here")
        return snaps / commit
    found = sorted(p.name for p in snaps.iterdir() if p.is_dir())
    if len(found) == 1:
        return snaps / found[0]
    ref = f"refs/{revision}" if len(revision) <= 12 else short(f"refs/{revision}", 17)  # not "refs/'main'"
    raise SymllmError(fitting(f"model: {short(repo_id, 40)} has no {ref} in the local cache and {len(found)} "
                              "snapshots: give the snapshot folder",
                              f"model: {short(repo_id, 40)}: {len(found)} snapshots, no {ref}: give one's folder",
                              f"model: {short(repo_id, 30)}: {len(found)} snapshots, no {ref}: give one's folder"))


def not_cached(repo_id: str, preset: str | None = None) -> str:
    """The one line for a Hub id that is not in the local cache: symllm downloads nothing, and the shipped
    preset of that repository (``preset``: :func:`symllm.arch.config.preset_for_hub`) is named when there is
    one; the most explicit wording that fits the line (:func:`symllm.validate.fitting`).

    >>> not_cached("meta-llama/Llama-3.1-8B", "llama3.1-8b")
    'model: not in the local HF cache (symllm downloads nothing); use preset llama3.1-8b'
    >>> not_cached("org/absent")
    "model: 'org/absent': not a preset nor in the local HF cache (nothing is downloaded)"
    """
    name = short(repo_id, 30)
    if preset is not None:
        return fitting(f"model: {name} is not in the local HF cache (symllm downloads nothing); preset {preset}",
                       f"model: not in the local HF cache (symllm downloads nothing); use preset {preset}",
                       f"model: not in the local HF cache (nothing is downloaded); preset {preset}",
                       f"model: not in the HF cache (nothing is downloaded); preset {preset}")
    return fitting(f"model: {name}: not a preset, nor in the local HF cache (symllm downloads nothing)",
                   f"model: {name}: not a preset nor in the local HF cache (nothing is downloaded)",
                   f"model: {name}: not a preset, not in the HF cache (nothing is downloaded)",
                   f"model: {short(repo_id, 24)}: not a preset, not cached (symllm downloads nothing)")


def repo_root(folder: Path) -> Path:
    """The folder whose files a snapshot may link to: the ``models--org--name`` folder for a cache
    snapshot (its files are links into ``blobs/``), else the folder itself.

    >>> str(repo_root(Path("/c/models--a--b/snapshots/123"))), str(repo_root(Path("/ckpt")))
    ('/c/models--a--b', '/ckpt')
    """
    folder = Path(folder)
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent
    return folder


def member(folder, name: str, what: str = "checkpoint") -> Path:
    """The file ``name`` of a model folder, refused in one line when it (or a link on the way) leads out
    of the folder (a cache snapshot: out of its repository, :func:`repo_root`) or is not a regular file.

    >>> import pathlib, tempfile, os
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> os.symlink("/etc/passwd", d / "config.json")
    >>> member(d, "config.json", "config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: config: '...config.json' links out of its folder (to '/etc/passwd'): refused
    """
    folder = Path(folder)
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        raise SymllmError(f"{what}: {name!r} is not a file name inside {str(folder)!r}")
    path = folder / name
    root = os.path.realpath(repo_root(folder))
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        raise SymllmError(f"{what}: {shown_path(path)} links out of its folder (to {real!r}): refused")
    if not os.path.isfile(real):
        raise SymllmError(f"{what}: {shown_path(path)} is not a file" if os.path.lexists(path)
                          else f"{what}: {shown_path(folder)} has no {name}")
    return path


def model_folder(model) -> Path | None:
    """The folder a model argument names: a folder (a cache's ``models--org--name`` folder: the snapshot its Hub id
    reads), or a Hub id found in the local cache (None: neither; a preset name or a file)."""
    path = Path(model)
    if path.is_dir() and path.name.startswith("models--") and (path / "snapshots").is_dir():
        # a cache's repository folder (models--org--name): its refs/main snapshot, as the Hub id org/name reads
        return _snapshot_in(path, path.name.removeprefix("models--").replace("--", "/", 1))
    if path.is_dir():
        return path
    if not path.exists() and is_repo_id(str(model)):
        return snapshot(str(model))
    return None
