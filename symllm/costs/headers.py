"""Checkpoints on disk, read: every tensor's name, dtype, shape and bytes from the safetensors or GGUF headers
(no weight is loaded); :mod:`symllm.costs.checkpoints` compares them with the component tree.

A safetensors file is an 8-byte little-endian header length ``n``, ``n`` bytes of JSON
(``name -> {"dtype", "shape", "data_offsets"}``, and ``__metadata__``), then the data; a sharded
checkpoint lists its files in ``model.safetensors.index.json`` (``weight_map``). A GGUF file (v2, v3) is
its magic, version, tensor and key-value counts, the key-values, then per tensor its name, dimensions
(``ne[0]``, the row, first), GGML type and offset; :func:`read_gguf` is a minimal parser of that header
(the ``gguf`` package's reader is not needed). Every length is checked against the file before it is
trusted: a header longer than the file or than 100 MB (safetensors' own limit), data offsets out of the
file or not matching the dtype and shape, a string or array longer than what is left, more than 4
dimensions, an unknown dtype or GGML type: each is one :class:`~symllm.errors.SymllmError` line. In a
folder, a file that links out of it (a cache snapshot: out of its repository) is refused.

>>> has_weights("llama3.1-8b")  # a preset: no weights on disk
False
"""
from __future__ import annotations

import json
import os
import struct
from math import prod
from pathlib import Path

from symllm.errors import SymllmError
from symllm.files import parse_json, read_json
from symllm.validate import short, shown_path

__all__ = ["SAFETENSORS_DTYPES", "GGML_IDS", "read_safetensors", "read_gguf", "read", "has_weights"]

#: safetensors dtype -> bytes per element (the safetensors crate's ``Dtype``)
SAFETENSORS_DTYPES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8,
                      "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}
#: GGML type id -> name (ggml.h ``enum ggml_type``; gguf-py ``GGMLQuantizationType``)
GGML_IDS = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
            11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
            19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
            27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4"}
#: GGML storage types that are not weight formats (:data:`symllm.costs.ggml.GGML_TYPES` holds those):
#: values per block, bytes per block
_GGML_OTHER = {"Q8_1": (32, 40), "Q8_K": (256, 292), "I8": (1, 1), "I16": (1, 2), "I32": (1, 4), "I64": (1, 8),
               "F64": (1, 8)}

_MAX_HEADER = 100_000_000  # safetensors refuses longer headers (MAX_HEADER_SIZE)
_MAX_STRING = 1 << 24


def _fail(path, what: str):
    raise SymllmError(f"checkpoint: {shown_path(path, 24)}: {what}")


def read_safetensors(path) -> dict[str, dict]:
    """``name -> {"dtype", "shape", "bytes"}`` of a safetensors file, from its header alone (module
    docstring: every length checked).

    >>> import pathlib, tempfile, json, struct
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.safetensors"
    >>> h = json.dumps({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}}).encode()
    >>> _ = p.write_bytes(struct.pack("<Q", len(h)) + h + bytes(12))
    >>> read_safetensors(p)
    {'w': {'dtype': 'BF16', 'shape': [2, 3], 'bytes': 12}}
    >>> _ = p.write_bytes(struct.pack("<Q", 2**40) + h)
    >>> read_safetensors(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: checkpoint: '...m.safetensors': header length ... is past the file's end
    """
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                _fail(path, f"{len(head)} bytes: not a safetensors file (no header length)")
            (n,) = struct.unpack("<Q", head)
            if n > size - 8:
                _fail(path, f"header length {short(n, 10)} is past the file's end")
            if n > _MAX_HEADER:
                _fail(path, f"header length {n} is more than safetensors' {_MAX_HEADER:,} bytes")
            raw = fh.read(n)
    except OSError as e:
        raise SymllmError(f"checkpoint: cannot read {shown_path(path)}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        _fail(path, f"the header is not UTF-8 (byte {e.start})")
    header = parse_json(text, "checkpoint", shown_path(path))
    if not isinstance(header, dict):
        _fail(path, "the header is not a JSON object")
    data = size - 8 - n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or set(info) - {"dtype", "shape", "data_offsets"} or len(info) != 3:
            _fail(path, f"tensor {name[:80]!r}: expected dtype, shape and data_offsets")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in SAFETENSORS_DTYPES:
            _fail(path, f"tensor {name[:80]!r}: unknown dtype {str(dtype)[:20]!r}")
        if (not isinstance(shape, list) or len(shape) > 8
                or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**53 for x in shape)):
            _fail(path, f"tensor {name[:80]!r}: shape {str(shape)[:40]} is not a list of sizes")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(
                isinstance(x, int) and not isinstance(x, bool) for x in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= data):
            _fail(path, f"tensor {short(name, 12)}: offsets {str(offsets)[:16]} outside the file ({data} B)")
        nbytes = prod(shape) * SAFETENSORS_DTYPES[dtype]
        if offsets[1] - offsets[0] != nbytes:
            _fail(path, f"tensor {name[:80]!r}: {offsets[1] - offsets[0]} data bytes for {dtype} {shape} "
                        f"({nbytes} bytes)")
        out[name] = {"dtype": dtype, "shape": shape, "bytes": nbytes}
    return out


class _Reader:
    """Little-endian reads of a GGUF header, each checked against the bytes left in the file."""

    def __init__(self, fh, size: int, path):
        self.fh, self.size, self.path, self.pos = fh, size, path, 0

    def take(self, n: int) -> bytes:
        if n > self.size - self.pos:
            _fail(self.path, f"length {short(n, 12)} at byte {self.pos:,} is past the end of the file")
        data = self.fh.read(n)
        if len(data) != n:
            _fail(self.path, f"file ended at byte {self.pos + len(data)}")
        self.pos += n
        return data

    def num(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, limit: int = _MAX_STRING) -> str:
        n = self.num("Q")
        if n > limit:
            _fail(self.path, f"a string of {short(n, 14)} B is longer than {limit:,} B")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            _fail(self.path, f"a string before byte {self.pos} is not UTF-8")


_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _gguf_value(r: _Reader, vtype: int, depth: int = 0):
    if vtype in _GGUF_SCALARS:
        return r.num(_GGUF_SCALARS[vtype])
    if vtype == 8:
        return r.string()
    if vtype == 9 and depth < 2:
        inner, count = r.num("I"), r.num("Q")
        if count > r.size - r.pos:
            _fail(r.path, f"an array of {short(count, 14)} values at byte {r.pos:,} is longer than the file")
        values = [_gguf_value(r, inner, depth + 1) for _ in range(count)]
        return values if count <= 64 else ("array", count)
    _fail(r.path, f"unknown GGUF value type {vtype} before byte {r.pos}")


def read_gguf(path) -> tuple[dict, dict[str, dict]]:
    """``(metadata, tensors)`` of a GGUF file from its header: metadata keys and values (arrays of more
    than 64 values as ``("array", count)``), ``name -> {"dtype" (GGML type), "shape" (ne: row first),
    "bytes"}``; every length checked (module docstring).

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.gguf"
    >>> _ = p.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (2**60).to_bytes(8, "little") + bytes(8))
    >>> read_gguf(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: checkpoint: '...m.gguf': 1152921504606846976 tensors cannot fit in a file of 24 bytes
    """
    from symllm.costs.ggml import GGML_TYPES
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise SymllmError(f"checkpoint: cannot read {shown_path(path)}: {e.strerror or e}") from None
    with fh:
        r = _Reader(fh, os.fstat(fh.fileno()).st_size, path)
        if r.size < 24 or r.take(4) != b"GGUF":
            _fail(path, "not a GGUF file (no GGUF magic)")
        version = r.num("I")
        if version not in (2, 3):
            _fail(path, f"GGUF version {version} is not read (2 and 3 are)")
        n_tensors, n_kv = r.num("Q"), r.num("Q")
        for n, what, least in ((n_tensors, "tensors", 24), (n_kv, "key-values", 12)):
            if n * least > r.size:
                _fail(path, f"{n} {what} cannot fit in a file of {r.size} bytes")
        meta = {}
        for _ in range(n_kv):
            key = r.string(1 << 16)
            meta[key] = _gguf_value(r, r.num("I"))
        infos = []
        for _ in range(n_tensors):
            name = r.string(1 << 16)
            n_dims = r.num("I")
            if not 1 <= n_dims <= 4:
                _fail(path, f"tensor {name[:80]!r} has {n_dims} dimensions (GGML has 1 to 4)")
            shape = [r.num("Q") for _ in range(n_dims)]
            type_id, offset = r.num("I"), r.num("Q")
            if type_id not in GGML_IDS:
                _fail(path, f"tensor {name[:80]!r}: unknown GGML type {type_id}")
            infos.append((name, shape, GGML_IDS[type_id], offset))
        align = meta.get("general.alignment", 32)
        if not isinstance(align, int) or align < 1 or align > 1 << 20:
            _fail(path, f"general.alignment {str(align)[:20]} is not a small positive integer")
        start = -(-r.pos // align) * align
    tensors = {}
    for name, shape, kind, offset in infos:
        block, size = GGML_TYPES.get(kind) or _GGML_OTHER[kind]
        n = prod(shape)
        if shape[0] % block:
            _fail(path, f"tensor {name[:80]!r}: rows of {shape[0]} do not hold whole {kind} blocks of {block}")
        nbytes = n // block * size
        if start + offset + nbytes > r.size:
            _fail(path, f"tensor {name[:80]!r}: its {nbytes} bytes at offset {offset} are past the end of the file")
        if name in tensors:
            _fail(path, f"tensor {name[:80]!r} is listed twice")
        tensors[name] = {"dtype": kind, "shape": shape, "bytes": nbytes}
    return meta, tensors


def _weights_of(folder: Path) -> tuple[str, list[str]]:
    """("safetensors" | "gguf" | "", the weight files of a folder)."""
    from symllm.arch import hub
    if os.path.lexists(folder / "model.safetensors.index.json"):
        index = read_json(hub.member(folder, "model.safetensors.index.json"), "checkpoint")
        wm = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            _fail(folder / "model.safetensors.index.json", "no weight_map of tensor -> file names")
        return "safetensors", sorted(set(wm.values()))
    names = sorted(os.listdir(folder))
    for kind in ("safetensors", "gguf"):
        found = [n for n in names if n.endswith("." + kind)]
        if found:
            if kind == "gguf" and len(found) > 1:
                _fail(folder, f"{len(found)} GGUF files ({', '.join(found[:3])}): give one of them")
            return kind, found
    return "", []


def _weights_file(path: Path) -> str:
    """The format of the weights file ``path`` (``safetensors``, ``gguf``), or "" when it is no such file
    (a folder, a Hub id, a config)."""
    kind = path.suffix[1:]
    return kind if kind in ("gguf", "safetensors") and path.is_file() else ""


def has_weights(model) -> bool:
    """Whether ``model`` (a path, or a Hub id in the local cache) is a checkpoint with weights: a
    ``.safetensors`` or ``.gguf`` file, or a folder holding them.

    >>> has_weights("llama3.1-8b")
    False
    """
    from symllm.arch import hub
    if _weights_file(Path(str(model))):
        return True
    try:
        folder = hub.model_folder(model)
    except SymllmError:
        return False
    return folder is not None and bool(_weights_of(folder)[1])


def read(model) -> dict:
    """A checkpoint's tensors from its headers: ``{"path", "format" ("safetensors" | "gguf"), "files",
    "tensors": {name: {"dtype", "shape", "bytes"}}, "bytes" (their sum), "config" (config.json, or
    None), "metadata" (GGUF's key-values, or {})}``. ``model`` is a ``.safetensors`` / ``.gguf`` file, a
    folder (a sharded checkpoint through its index), or a Hub id in the local cache."""
    from symllm.arch import hub
    path = Path(str(model))
    config, meta = None, {}
    single = _weights_file(path)
    if single:
        folder, kind, files = path.parent, single, [path.name]
        if kind == "gguf":
            folder = None  # a GGUF file stands alone: its header holds the config
    else:
        folder = hub.model_folder(model)
        if folder is None:
            raise SymllmError(f"checkpoint: {shown_path(model, 30)} is no folder, .safetensors, .gguf or cached "
                              "Hub id")
        kind, files = _weights_of(folder)
        if not files:
            _fail(folder, "holds no weights (model.safetensors.index.json, *.safetensors or *.gguf)")
    tensors = {}
    if kind == "gguf":
        meta, tensors = read_gguf(path if folder is None else hub.member(folder, files[0]))
    else:
        wm = None
        if not single and os.path.lexists(folder / "model.safetensors.index.json"):
            wm = read_json(hub.member(folder, "model.safetensors.index.json"), "checkpoint")["weight_map"]
        for name in files:
            part = read_safetensors(path if single else hub.member(folder, name))
            for t in part:
                if t in tensors:
                    _fail(folder / name, f"tensor {t[:80]!r} is also in another file")
                if wm is not None and wm.get(t) != name:
                    _fail(folder / name, f"tensor {t[:80]!r} is not where model.safetensors.index.json says "
                                         f"({wm.get(t)!r})")
            tensors.update(part)
        if wm is not None:
            lost = [t for t in wm if t not in tensors]
            if lost:
                _fail(folder / "model.safetensors.index.json", f"lists {lost[0][:80]!r}, which {wm[lost[0]]} does "
                                                               "not hold")
        if os.path.lexists(folder / "config.json"):
            config = read_json(hub.member(folder, "config.json", "config"), "config")
    return {"path": str(model), "format": kind, "files": files, "tensors": tensors,
            "bytes": sum(t["bytes"] for t in tensors.values()), "config": config, "metadata": meta}
