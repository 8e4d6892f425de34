"""Sweeps: chosen quantities over a grid (or a table) of configs and workloads, in compiled kernels.

A :class:`Sweep` varies some fields of a base config (``dim``, ``n_layers``, …) and of the workload
(``batch``, ``seq``, ``context``, ``gen``) and evaluates quantities (``params``, FLOPs, memory, a
breakdown term) at every point with the integer-safe kernels of :mod:`symllm.numbers.kernels`, chunk by chunk,
so memory stays flat however many points there are.

What it derives per point follows the config's own rule (:meth:`ModelConfig.replace
<symllm.arch.config.ModelConfig.replace>`, :func:`symllm.arch.config.derive_heads`):

* ``head_dim`` is ``dim // n_heads`` again at each point only when the base derived it (``"head_dim" in
  base.derived``) and the sweep does not set it; a stated ``head_dim`` stays stated.
* ``n_kv_heads`` follows ``n_heads`` only when the base derived it (no ``n_kv_heads`` stated) and the
  sweep does not set it.
* ``hidden_dim`` is Meta's ``multiple_of``/``ffn_dim_multiplier`` rounding of each point's ``dim``
  (:func:`symllm.arch.specs.hidden_dim_kernel`) unless the base states one (an HF ``intermediate_size``, used
  as is) or the sweep sets it.

The workload is a :class:`~symllm.costs.workloads.Workload` with its defaults (``seq`` 2048, ``context``
following ``seq`` at each point unless given or swept, bf16, …); the fields a sweep may vary are those
whose option says ``axis`` (``batch``, ``seq``, ``gen``, ``context``). Points whose combination
:func:`~symllm.arch.config.derive_heads` rejects (``n_heads`` not dividing ``dim``, ``n_kv_heads`` not
dividing ``n_heads``, an odd ``head_dim``) are dropped and counted, and so are the points whose workload
count refuses on that point's model (:mod:`symllm.costs.checks`: more pipeline stages than blocks, a
context past a window some layers have), each with count's line; a workload that fails a check reading
nothing the sweep varies (``ep`` ranks not dividing the experts) refuses the sweep, as it refuses count.
A value that is wrong on its own (``dim = 0``, ``seq = 0``) is a :class:`~symllm.errors.SymllmError`. So
every row equals ``symllm count --json`` (:func:`symllm.arch.resolved.params`,
:func:`symllm.costs.phases.workload`) of that row's config and workload, and a point count refuses is no row.

>>> sw = Sweep("llama3-8b", {"dim": [4096, 4100, 8192], "n_layers": [32, 80]}, quantities=["params"])
>>> res = sw.run()
>>> res.invalid, res.columns["params"].tolist()
(2, [8030261248, 18499637248, 30019166208, 71895883776])
>>> res.columns["hidden_dim"].tolist()
[14336, 14336, 28672, 28672]
"""
from __future__ import annotations

import csv
import dataclasses
import decimal
import io
import json
import math
import operator
import re
import uuid
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import sympy as sp

from symllm.arch.algebra import substitute
from symllm.arch import resolved
from symllm.costs import checks
from symllm.costs import phases as costs
from symllm.costs import finetune
from symllm.costs import parallel
from symllm.arch import symbols as S
from symllm.arch.config import derive_heads, meta_product_ok
from symllm.errors import SymllmError
from symllm.validate import choice, positive_int, short, shown_path, with_list
from symllm.numbers.kernels import compile_expr
from symllm.files import TABLE_FORMATS, json_value, parse_json, read_bytes, read_text, table_format, write_atomic
from symllm.arch.specs import hidden_dim_kernel
from symllm.costs.workloads import Workload, options as workload_options

__all__ = ["Sweep", "Sweeps", "SweepResult", "sweep", "check_some_valid", "parse_axis", "parse_where", "parse_number",
           "read_table",
           "quantity_names", "dropped_text", "CONFIG_FIELDS", "WORKLOAD_AXES", "NAME_COLUMNS"]

#: a table column with one of these names holds the base of its row (a preset name or a config path, a
#: string, never parsed as a number): :class:`Sweeps` sweeps each base's rows
NAME_COLUMNS = ("base", "model", "name")

#: config fields a sweep may vary (Meta's names)
CONFIG_FIELDS = ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim",
                 "multiple_of", "ffn_dim_multiplier")
#: workload fields a sweep may vary: those whose option says ``axis`` (batch, seq, gen, context)
WORKLOAD_AXES = tuple(name for name, (_, opt) in workload_options().items() if opt.axis)

_SYMBOL = {k: S.CODE_NAMES[k] for k in CONFIG_FIELDS + WORKLOAD_AXES}

#: the largest table file :func:`read_table` reads (its rows are held in memory)
TABLE_BYTES = 256 << 20

#: default points per chunk: a few MB per column
CHUNK = 1 << 18

#: the most digits a sweep value may have: Python's limit on integers read from text (config files)
MAX_DIGITS = 4300


# ---------------------------------------------------------------- quantities

#: the bucket of a ``PHASE_BUCKET`` quantity name -> symllm.costs.phases.flops's ``bucket``
_BUCKETS = {"flops": "matmul", "elementwise": "elementwise"}


def quantity_names() -> list[str]:
    """The quantity names a sweep knows: ``params``; one forward pass of ``s`` new tokens with
    ``context`` cached: ``flops`` (matmuls), ``elementwise``, ``kv_cache_elements``; from
    :mod:`symllm.costs.phases` ``PHASE_flops`` and ``PHASE_elementwise`` (``prefill``, ``decode`` at
    ``context``, ``generation``, ``training``…; ``training`` has matmul FLOPs only) and the memory kinds
    in bytes (``weights``, ``kv_cache``, ``training_states``…). ``NAME:path`` picks one breakdown term
    of ``params``, ``flops`` or ``elementwise`` (e.g. ``params:block/attention/wq``).

    >>> [q for q in quantity_names() if q.startswith("prefill")]
    ['prefill_flops', 'prefill_elementwise']
    """
    names = ["params", "flops", "elementwise", "kv_cache_elements"]
    for phase in costs.PHASES:
        names += [f"{phase}_flops"] + ([f"{phase}_elementwise"] if phase != "training" else [])
    return names + list(costs.MEMORY_KINDS) + list(_PARALLEL) + list(_LORA)


#: per-GPU quantities of a parallel layout (symllm.costs.parallel) -> their (group, key) in costs.quantities
_PARALLEL = {"params_per_gpu": ("params", "per_gpu"),
             **{f"{kind}_per_gpu": ("memory_per_gpu", kind)
                for kind in costs.PER_GPU_MEMORY + costs.PER_GPU_PEAKS},
             **{f"comm_{kind}": ("comm", kind) for kind in parallel.COMM_KINDS}}
#: LoRA quantities (symllm.costs.finetune; they need --lora-rank): count's params.trainable and memory.lora_*
#: and full fine-tuning's training peak (count's memory.full_finetune_peak; under LoRA, training_peak is LoRA's)
_LORA = ("trainable_params", *finetune.MEMORY_KEYS, "full_finetune_peak")


def _quantity_expr(name: str, mdl, work: Workload) -> sp.Expr:
    """The closed form of quantity ``name`` for the model component ``mdl`` (``d_ff`` a symbol) under
    ``work``'s training options, as :func:`symllm.costs.phases.quantities` builds it for ``count``: the logits'
    positions ``s_o`` set by ``work.logits`` (:func:`symllm.costs.phases.logit_rows`)."""
    return costs.logit_rows(_quantity_form(name, mdl, work), work.logits)


def _quantity_form(name: str, mdl, work: Workload) -> sp.Expr:
    base, _, path = name.partition(":")
    if base == "params" and path == "active":  # what one token uses (count's params.active)
        return mdl.total("active")
    if path and base in ("params", "flops", "elementwise"):
        terms = mdl.breakdown(base)
        if path not in terms:
            raise SymllmError(with_list(f"quantity: no term {short(path, 24)} in {base} (known: ", terms,
                                        see="count --json", near=path))
        return terms[path]
    if not path and name in quantity_names():
        if name in ("params", "flops", "elementwise"):
            return mdl.total(name)
        if name == "kv_cache_elements":
            return mdl.total("kv_cache")
        if name in _LORA or (name == "training_peak" and work.lora_rank is not None):
            # under LoRA the training peak is LoRA's, as count's (symllm.costs.phases.quantities)
            if work.lora_rank is None:
                finetune.closed_forms(mdl, work)  # refuses: LoRA needs a rank
            out = costs.quantities(mdl, work)
            return out["params"]["trainable"] if name == "trainable_params" else out["memory"][name]
        if name in _PARALLEL:
            group, key = _PARALLEL[name]
            out = costs.quantities(mdl, work)[group]
            if key not in out:  # comm_ep: expert parallelism sends nothing in a dense model
                raise SymllmError(f"quantity: {name} is for a mixture-of-experts model (known here: "
                                  f"{', '.join(f'comm_{k}' for k in out)})")
            return out[key]
        if name in costs.MEMORY_KINDS:
            return costs.memory(mdl, name, zero_stage=work.zero_stage, recompute=work.recompute, stack=work.stack,
                                optimizer=work.optimizer)
        phase, bucket = name.rsplit("_", 1)
        return costs.flops(mdl, phase, bucket=_BUCKETS[bucket], recompute=work.recompute)
    raise SymllmError(with_list(f"quantity: unknown {short(name, 20)} (known: ", quantity_names(),
                                see="docs/sweeps.md", near=name))


# ---------------------------------------------------------------- parsing

_NUMBER = r"[-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def parse_number(text: str, field: str):
    """A Python int when ``text`` is integral (``9e9`` -> 9000000000, exactly), else a float.

    >>> parse_number("9e9", "where"), parse_number("1.3", "ffn_dim_multiplier")
    (9000000000, 1.3)
    """
    if not isinstance(text, str):
        raise SymllmError(f"{field}: expected a number, got {text!r}")
    try:
        value = decimal.Decimal(text.replace("_", ""))
    except decimal.InvalidOperation:
        raise SymllmError(f"{field}: expected a number, got {text!r}") from None
    if not value.is_finite():
        raise SymllmError(f"{field}: expected a finite number, got {text!r}")
    if value and value.adjusted() >= MAX_DIGITS:  # 1e9999999 would be ten million digits: refused at once
        raise SymllmError(f"{field}: {text[:20]!r}{'...' if len(text) > 20 else ''} has more than "
                          f"{MAX_DIGITS:,} digits (a config file's most)")
    return int(value) if value == value.to_integral_value() else float(value)


def parse_axis(text: str, field: str, number=None) -> list:
    """The values of one sweep axis: numbers and inclusive ``start:stop[:step]`` ranges, by commas; each
    number read by ``number(text, field)`` (default :func:`parse_number`; the command line reads the
    token counts ``--seq`` and friends with their suffixes, ``2k:8k:2k``).

    >>> parse_axis("2048:8192:2048", "dim")  # one integer range stays a lazy range: streamed, never built
    range(2048, 8193, 2048)
    >>> parse_axis("1.3, 1.5,16:32:8", "ffn_dim_multiplier")
    [1.3, 1.5, 16, 24, 32]
    >>> parse_axis("8:1", "n_heads")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_heads: empty range '8:1'
    """
    parse_number_ = parse_number if number is None else number
    out: list = []
    parts = str(text).split(",")
    for part in parts:
        part = part.strip()
        if not part:
            raise SymllmError(f"{field}: empty value in {text!r}")
        if ":" not in part:
            out.append(parse_number_(part, field))
            continue
        bits = part.split(":")
        if len(bits) not in (2, 3):
            raise SymllmError(f"{field}: expected start:stop[:step], got {part!r}")
        start, stop = parse_number_(bits[0], field), parse_number_(bits[1], field)
        step = parse_number_(bits[2], field) if len(bits) == 3 else 1
        if step <= 0:
            raise SymllmError(f"{field}: step must be positive, got {part!r}")
        if stop < start:
            raise SymllmError(f"{field}: empty range {part!r}")
        if all(isinstance(x, int) for x in (start, stop, step)):
            if len(parts) == 1:
                return range(start, stop + 1, step)
            out.extend(range(start, stop + 1, step))
        else:
            count = int(math.floor((stop - start) / step + 1e-9)) + 1
            out.extend(round(start + i * step, 12) for i in range(count))
    return out


_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "=": operator.eq, "!=": operator.ne}
_CONDITION = re.compile(rf"^\s*([A-Za-z_][\w:/.]*)\s*(<=|>=|==|!=|<|>|=)\s*({_NUMBER})\s*$")


@dataclass(frozen=True)
class _Condition:
    """``COLUMN OP NUMBER``, compared exactly: ``exact`` is the number as written (a Decimal), never
    rounded to a float64 (``training_flops <= 3879943431782399999.5`` kept 3879943431782400000)."""
    column: str
    op: str
    value: int | float
    exact: decimal.Decimal | None = None

    def __call__(self, columns: dict) -> np.ndarray:
        col = columns[self.column]
        bound = self.exact if self.exact is not None else decimal.Decimal(self.value)
        if col.dtype.kind in "iu":  # integers: against the integer the bound amounts to, exactly
            return _int_compare(col, self.op, bound)
        if col.dtype == object:  # Python ints, Fractions (int4 bytes), floats: Python compares them exactly
            fn = _OPS[self.op]
            return np.fromiter((fn(x, bound) for x in col.tolist()), dtype=bool, count=len(col))
        return np.asarray(_OPS[self.op](col, float(bound)), dtype=bool)


def _int_compare(col: np.ndarray, op: str, bound: decimal.Decimal) -> np.ndarray:
    """``col OP bound`` for an integer array, exactly: the bound becomes the integer that decides it
    (``x < 2.5`` is ``x < 3``; ``x == 2.5`` is never), and a bound past the array's type decides alone."""
    floor = int(bound.to_integral_value(rounding=decimal.ROUND_FLOOR))
    ceil = int(bound.to_integral_value(rounding=decimal.ROUND_CEILING))
    whole = floor == ceil
    if op in ("==", "="):
        if not whole:
            return np.zeros(len(col), dtype=bool)
        op, n = "==", floor
    elif op == "!=":
        if not whole:
            return np.ones(len(col), dtype=bool)
        n = floor
    else:
        op, n = {"<": ("<", ceil), "<=": ("<=", floor), ">": (">", floor), ">=": (">=", ceil)}[op]
    info = np.iinfo(col.dtype)
    if n > info.max or n < info.min:  # every value is on one side of it
        above = n > info.max
        side = {"<": above, "<=": above, ">": not above, ">=": not above, "==": False, "!=": True}[op]
        return np.full(len(col), side, dtype=bool)
    return np.asarray(_OPS[op](col, col.dtype.type(n)), dtype=bool)


def parse_where(text: str | None) -> tuple[_Condition, ...]:
    """A filter: comparisons ``COLUMN OP NUMBER`` joined by ``and`` (or commas); no code is run.

    >>> [(c.column, c.op, c.value) for c in parse_where("params < 9e9 and dim>=4096")]
    [('params', '<', 9000000000), ('dim', '>=', 4096)]
    >>> parse_where("__import__('os')")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: where: cannot read "__import__('os')" (expected COLUMN OP NUMBER, e.g. params < 9e9)
    """
    if not text or not text.strip():
        return ()
    out = []
    for part in re.split(r"\s+and\s+|,", text.strip()):
        match = _CONDITION.match(part)
        if not match:
            raise SymllmError(f'where: cannot read "{part.strip()}" (expected COLUMN OP NUMBER, e.g. params < 9e9)')
        value = parse_number(match[3], "where")  # its checks (digits, finite); the exact bound below
        out.append(_Condition(match[1], match[2], value, decimal.Decimal(match[3].replace("_", ""))))
    return tuple(out)


def read_table(path, *, columns: bool = False, quotients: bool = False):
    r"""The rows of a table file, in any format a sweep writes (:data:`symllm.files.TABLE_FORMATS`, chosen by
    the file's ending): CSV with a header row, (``.jsonl``, ``.ndjson``, ``.json``) one JSON object per line
    or one JSON array of objects, or (``.parquet``, ``.pq``; needs pyarrow) Parquet. :class:`Sweep` reads its
    ``table=`` with it, and :func:`symllm.plot.sweep` the files a sweep wrote. Numbers are read exactly
    (:func:`parse_number`; a JSON ``1e30`` is the integer 10**30); ``quotients``: a ``p/q`` cell (a sweep's
    byte count that is not whole, int4) is the exact Fraction. With ``columns=True`` the table comes as
    column name -> array, read row by row into compact arrays (int64 while the values fit): memory a small
    multiple of the file's size, where a list of dicts takes some 36 times it.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("dim,n_layers\n4096,32\n")
    >>> read_table(p)
    [{'dim': 4096, 'n_layers': 32}]
    >>> {k: v.tolist() for k, v in read_table(p, columns=True).items()}
    {'dim': [4096], 'n_layers': [32]}
    """
    path = Path(path)
    fmt = table_format(path)
    text = None
    if fmt == "parquet":
        rows = _parquet_rows(read_bytes(path, "table", limit=TABLE_BYTES), path, quotients)
    else:
        text = read_text(path, "table", limit=TABLE_BYTES)
        rows = _json_rows(text, path, quotients) if fmt == "jsonl" else _csv_rows(text, path, quotients)
    if not columns:
        return [dict(row) for row in rows]
    built: dict[str, _Column] = {}
    for number, row in enumerate(rows):
        if number == 0:
            built = {k: _Column(k) for k in row}
        elif len(row) != len(built) or any(k not in built for k in row):
            odd = next((k for k in row if k not in built), None) or next(k for k in built if k not in row)
            raise SymllmError(f"table: column {odd!r} is missing from some rows")
        for k, v in row.items():
            built[k].add(v)
    del text
    return {k: c.array() for k, c in built.items()}


def _name_cell(field: str, value) -> None:
    """Refuses a cell of a column naming each row's model (:data:`NAME_COLUMNS`) that is not text."""
    if not isinstance(value, str):
        raise SymllmError(f"{field}: expected a preset name or a config path (a string), got {value!r:.40}")


def _cell(text: str, field: str, quotients: bool):
    """A number written as text in a table: :func:`parse_number`'s, or (``quotients``) the exact ``p/q``."""
    if quotients and isinstance(text, str) and "/" in text:
        try:
            return Fraction(text.strip())
        except (ValueError, ZeroDivisionError):
            raise SymllmError(f"{field}: expected a number, got {text!r}") from None
    return parse_number(text, field)


class _Column:
    """One table column being read: an int64 ``array`` while every value fits, else a list of numbers."""

    def __init__(self, name: str):
        import array
        self.name, self.ints, self.values = name, array.array("q"), None

    def add(self, v) -> None:
        if self.name in NAME_COLUMNS:
            if self.values is None:
                self.values, self.ints = [], None
            self.values.append(v)
            return
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
            raise SymllmError(f"{self.name}: expected a number in every table row, got {v!r}")
        if self.values is None:
            if type(v) is int and -2**63 <= v < 2**63:
                self.ints.append(v)
                return
            self.values, self.ints = self.ints.tolist(), None
        self.values.append(v)

    def array(self) -> np.ndarray:
        if self.name in NAME_COLUMNS:
            return np.asarray(self.values or [], dtype=object)
        if self.values is None:
            return np.frombuffer(self.ints, dtype=np.int64) if len(self.ints) else np.zeros(0, dtype=np.int64)
        return np.asarray(self.values) if any(type(v) is float for v in self.values) else \
            np.asarray(self.values, dtype=object)


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their endings, one at a time (no list of every line)."""
    start, end = 0, len(text)
    while start < end:
        stop = text.find("\n", start)
        stop = end if stop < 0 else stop + 1
        yield text[start:stop]
        start = stop


def _csv_rows(text: str, path: Path, quotients: bool = False) -> Iterator[dict]:
    try:
        reader = csv.reader(_lines(text))
        header = next(reader, None)
        if header is None:
            return
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise SymllmError(f"table: {shown_path(path)} line {reader.line_num} has "
                                  f"{'more' if len(row) > len(header) else 'fewer'} fields than the header")
            yield {k: v.strip() if k in NAME_COLUMNS else _cell(v, k, quotients) for k, v in zip(header, row)}
    except csv.Error as e:
        raise SymllmError(f"table: {shown_path(path)} is not valid CSV ({e})") from None


def _exact(value):
    """A JSON number read as a Decimal: an int when whole (1e30 is 10**30), else a float."""
    if isinstance(value, decimal.Decimal):
        return parse_number(str(value), "table")
    return value


def _json_rows(text: str, path: Path, quotients: bool = False) -> Iterator[dict]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = _json_array(stripped, path)
    else:
        items = ((parse_json(line, "table", f"{shown_path(path)} line {number}", parse_float=decimal.Decimal),
                  f"line {number}") for number, line in enumerate(_lines(text), 1) if line.strip())
    for row, at in items:
        if not isinstance(row, dict):
            raise SymllmError(f"table: {shown_path(path)} {at} is not a JSON object of fields, got {row!r:.40}")
        for k in NAME_COLUMNS:
            if k in row:
                _name_cell(k, row[k])
        yield {k: v if k in NAME_COLUMNS else _cell(v, k, True) if quotients and isinstance(v, str) else _exact(v)
               for k, v in row.items()}


def _parquet_rows(data: bytes, path: Path, quotients: bool = False) -> Iterator[dict]:
    """The rows of a Parquet file's bytes, a row group at a time: integers and floats as they are, decimals
    (a sweep's columns that may pass int64) exactly, text in a number column as a CSV cell."""
    pa, pq = _pyarrow()
    where = shown_path(path)
    try:
        batches = pq.ParquetFile(pa.BufferReader(data)).iter_batches()
        for batch in batches:
            for row in batch.to_pylist():
                for k, v in row.items():
                    if k in NAME_COLUMNS:
                        _name_cell(k, v)
                    elif v is None:
                        raise SymllmError(f"{k}: expected a number in every table row, got an empty cell")
                    elif isinstance(v, str):
                        row[k] = _cell(v, k, quotients)
                    elif isinstance(v, decimal.Decimal):
                        row[k] = _exact(v)
                    elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                        raise SymllmError(f"{k}: expected a finite number, got {short(v)}")
                yield row
    except (pa.ArrowException, OSError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        first = first if len(first) <= 60 else first[:57] + "..."
        raise SymllmError(f"table: {where} is not a Parquet file symllm can read ({first})") from None


def _pyarrow():
    """pyarrow and pyarrow.parquet (the optional ``parquet`` extra), or one line saying how to install it."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SymllmError("parquet: pyarrow is not installed (pip install 'symllm[parquet]')") from None
    return pa, pq


def _json_array(text: str, path: Path) -> Iterator[tuple]:
    """The items of the JSON array ``text``, one at a time (json.loads would build every row at once)."""
    decoder = json.JSONDecoder(parse_float=decimal.Decimal)
    where = shown_path(path)
    pos, number, end = 1, 0, len(text)
    ws = re.compile(r"[ \t\n\r]*")
    pos = ws.match(text, pos).end()
    if text.startswith("]", pos):
        return
    while True:
        number += 1
        try:
            item, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise SymllmError(f"table: {where} is not valid JSON (line {e.lineno}, column {e.colno})") from None
        except RecursionError:
            raise SymllmError(f"table: {where} is not valid JSON (nested too deeply)") from None
        except ValueError:  # an integer over sys.get_int_max_str_digits() digits
            raise SymllmError(f"table: {where} item {number}: a number is too long") from None
        yield item, f"item {number}"
        pos = ws.match(text, pos).end()
        if text.startswith(",", pos):
            pos = ws.match(text, pos + 1).end()
            continue
        if text.startswith("]", pos) and not text[pos + 1:].strip():
            return
        line = text.count("\n", 0, pos) + 1
        raise SymllmError(f"table: {where} is not valid JSON (line {line}: expected ',' or ']')")


# ---------------------------------------------------------------- the sweep

@dataclass
class SweepResult:
    """The rows of a finished sweep, column by column, and what was dropped."""

    #: column name -> values (int64, float64, or object arrays of Python ints past int64)
    columns: dict[str, np.ndarray]
    #: grid (or table) points before anything was dropped
    points: int
    #: points dropped as invalid configs
    invalid: int
    #: valid points the ``where`` filter removed
    filtered: int
    #: why points were dropped: the failed check's field -> (points, the first such point's error line)
    reasons: dict = dataclasses.field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Rows kept."""
        return self.points - self.invalid - self.filtered

    def records(self) -> list[dict]:
        """The rows as dicts of plain Python numbers."""
        names = list(self.columns)
        return [dict(zip(names, r)) for r in zip(*(c.tolist() for c in self.columns.values()))]


def dropped_text(reasons: dict) -> str:
    """Why points were dropped (:attr:`SweepResult.reasons`), most frequent check first, a line each: how
    many, and the first such point's error line (within 100 columns, as the error line is).

    >>> print(dropped_text({"head_dim": (1, "head_dim: 3 is odd"), "n_heads": (4, "n_heads: ...")}))
    4 dropped, the first: n_heads: ...
    1 dropped, the first: head_dim: 3 is odd
    """
    ranked = sorted(reasons.items(), key=lambda kv: -kv[1][0])
    return "\n".join(f"{n:,} dropped, the first: {line}" for k, (n, line) in ranked)


def check_some_valid(stats) -> None:
    """Refuse, in one line, a sweep whose every point was invalid (a grid of points ``symllm count``
    refuses, each for a reason of its own), with the most frequent reason's first line: a table of no
    rows for that is a mistake, not a result (a sweep whose rows ``where`` filters out is one).

    >>> check_some_valid(_Stats(points=2, invalid=2, reasons={"pp": (2, "pp: 9 pipeline stages ...")}))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: sweep: every point is invalid: pp: 9 pipeline stages ...
    """
    if stats.points and stats.invalid == stats.points:
        first = dropped_text(stats.reasons).splitlines()[0].split(", the first: ", 1)[1]
        raise SymllmError(f"sweep: every point is invalid: {first}")


@dataclass
class _Stats:
    points: int = 0
    invalid: int = 0
    filtered: int = 0
    reasons: dict = dataclasses.field(default_factory=dict)

    def drop(self, field_: str, bad: np.ndarray, example: Callable[[int], str]) -> None:
        """Count the points ``bad`` marks as dropped for ``field_``'s check; keep the first one's line."""
        count = int(np.count_nonzero(bad))
        if count:
            seen, line = self.reasons.get(field_, (0, None))
            self.reasons[field_] = (seen + count, line or example(int(np.argmax(bad))))



class _RangeAxis:
    """An integer axis ``range(start, stop, step)`` that is never built: indexing with an array of
    positions computes those values (int64 while they fit, Python ints past that), so an axis of any
    length costs no memory.

    >>> ax = _RangeAxis(range(2, 2 * 10**18, 2))
    >>> len(ax), ax[np.array([0, 1, 10**18 - 2])].tolist()
    (999999999999999999, [2, 4, 1999999999999999998])
    """

    def __init__(self, values: range):
        self.range = values
        #: how many values (len() of a range refuses more than sys.maxsize)
        self.count = _range_len(values)

    def __len__(self) -> int:
        return self.count

    def extreme(self) -> int:
        """The largest magnitude on the axis."""
        return max(abs(self.range[0]), abs(self.range[-1]))

    def __getitem__(self, idx):
        if isinstance(idx, slice):  # a table's rows start..stop
            idx = np.arange(*idx.indices(len(self.range)), dtype=np.int64)
        idx = np.asarray(idx)
        r = self.range
        if self.extreme() < 2**62 and self.count < 2**62:
            return r.start + idx.astype(np.int64) * r.step
        return idx.astype(object) * r.step + r.start


def _range_len(values: range) -> int:
    """How many values ``values`` has, however many (``len()`` raises OverflowError past sys.maxsize)."""
    start, stop, step = values.start, values.stop, values.step
    return max(0, (stop - start + step - (1 if step > 0 else -1)) // step)


def _extreme(values) -> int:
    """The largest magnitude among an axis's values."""
    if isinstance(values, _RangeAxis):
        return values.extreme()
    return max(abs(x) for x in values.tolist()) if len(values) else 0


def _as_values(field: str, raw, work: Workload):
    """One axis's values as an array (a lazy :class:`_RangeAxis` for a ``range`` of integers), each
    checked as its field is: a config field is a positive integer (``ffn_dim_multiplier`` a positive
    number); a workload field's smallest value is checked by :class:`Workload` itself."""
    if isinstance(raw, range) and raw.step > 0 and raw.stop > raw.start and field != "ffn_dim_multiplier":
        if field in WORKLOAD_AXES:
            work.replace(**{field: raw[0]})
        elif raw[0] < 1:
            raise SymllmError(f"{field}: expected integers >= 1, got {raw[0]!r}")
        return _RangeAxis(raw)
    arr = np.asarray(raw).reshape(-1)
    if arr.size == 0:
        raise SymllmError(f"{field}: no values")
    if field == "ffn_dim_multiplier":
        if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr.astype(np.float64))) or np.any(arr <= 0):
            raise SymllmError(f"{field}: expected positive numbers, got {raw!r}")
        return arr.astype(np.float64)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)):
        # 1e30 in a table: exact Python ints past int64 (astype would wrap around with a RuntimeWarning)
        arr = arr.astype(np.int64) if np.all(np.abs(arr) < 2**62) else np.array([int(x) for x in arr.tolist()],
                                                                              dtype=object)
    if arr.dtype.kind not in "iu" and arr.dtype != object:
        raise SymllmError(f"{field}: expected integers, got {raw!r}")
    if arr.dtype == object and not all(isinstance(v, int) and not isinstance(v, bool) for v in arr):
        raise SymllmError(f"{field}: expected integers, got {raw!r}")
    if field in WORKLOAD_AXES:
        work.replace(**{field: int(arr.min())})
    elif arr.min() < 1:
        raise SymllmError(f"{field}: expected integers >= 1, got {next(v for v in arr.tolist() if v < 1)!r}")
    return arr.astype(np.int64, copy=False) if arr.dtype != object and arr.max() < 2**62 else arr


class Sweep:
    """Quantities over a grid (every combination of ``grid``'s values) or a ``table`` (one point per
    row) of configs derived from ``base`` (see the module docstring) and workloads.

    ``grid`` and ``table`` map field names (:data:`CONFIG_FIELDS`, :data:`WORKLOAD_AXES`) to values;
    ``workload`` is the fixed rest of the workload: a :class:`~symllm.costs.workloads.Workload` or its options
    by name (``seq``, ``dtype``, ``zero_stage``, …; ``attention`` and ``options`` are more of them),
    validated by :class:`Workload`; its defaults are everyone's (``seq`` 2048, ``context`` following
    each point's ``seq``). ``quantities`` are names from :func:`quantity_names` (``NAME:path`` for one
    breakdown term); ``where`` filters rows (:func:`parse_where`). Kernels compile once per quantity.

    >>> Sweep("llama2-7b", {"n_layers": range(1, 5)}).size
    4
    >>> Sweep("llama3.1-8b", {"seq": [4096]}, quantities=["decode_flops"]).run().columns["decode_flops"].tolist()
    [17157324800]
    """

    def __init__(self, base, grid: dict | None = None, *, table: dict | list | None = None,
                 quantities=("params",), workload: Workload | dict | None = None, where=None,
                 attention: str | None = None, options: dict | None = None, chunk_size: int = CHUNK):
        self.base = base_cfg = resolved.resolve(base)
        if grid is not None and table is not None:
            raise SymllmError("sweep: give a grid or a table, not both")
        positive_int("chunk_size", chunk_size)
        self.chunk_size = chunk_size
        given = {} if isinstance(workload, Workload) else dict(workload or {})
        given.update(options or {})
        if attention is not None:
            given["attention"] = attention
        #: the fixed workload (its axis fields are the defaults of the points that do not vary them)
        self.workload = work = Workload.of(workload if isinstance(workload, Workload) else None, **given)
        if isinstance(table, list):
            if not all(isinstance(row, dict) for row in table):
                raise SymllmError("table: expected rows as dicts of field -> number")
            keys = list(dict.fromkeys(k for row in table for k in row))
            missing = [k for k in keys if any(k not in row for row in table)]
            if missing:
                raise SymllmError(f"table: column {missing[0]!r} is missing from some rows")
            for row in table:
                for k, v in row.items():
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        raise SymllmError(f"{k}: expected a number in every table row, got {v!r}")
            table = {k: [row[k] for row in table] for k in keys}
        axes = dict(grid if grid is not None else (table or {}))
        for name in axes:
            if name not in CONFIG_FIELDS + WORKLOAD_AXES:
                raise SymllmError(f"sweep: cannot vary {name!r} (fields: {', '.join(CONFIG_FIELDS + WORKLOAD_AXES)})")
        self.axes = {k: _as_values(k, v, work) for k, v in axes.items()}
        self.is_table = table is not None
        if self.is_table:
            lengths = {len(v) for v in self.axes.values()}
            if len(lengths) > 1:
                raise SymllmError(f"table: columns have different lengths {sorted(lengths)}")
            self.shape = (lengths.pop() if lengths else 0,)
        else:
            self.shape = tuple(len(v) if not isinstance(v, _RangeAxis) else v.count for v in self.axes.values())
        self.size = int(np.prod(self.shape, dtype=object)) if self.shape else 1
        if self.size >= 2**62:  # positions are int64 (np.unravel_index); no sweep that large could finish
            raise SymllmError(f"sweep: {self.size:.3g} points is more than a sweep can enumerate (2**62)")
        self.constants = {k: getattr(base_cfg, k) for k in CONFIG_FIELDS}
        self.constants.update({k: getattr(work, k) for k in WORKLOAD_AXES})

        # what is derived per point: what the base derived and the sweep does not set (ModelConfig.replace)
        self.derive_head_dim = "head_dim" not in self.axes and "head_dim" in base_cfg.derived
        self.kv_follows_heads = "n_kv_heads" not in self.axes and "n_kv_heads" in base_cfg.derived
        self.context_follows_seq = "context" not in self.axes and "context" in work.derived
        # ModelConfig's own rule, for the base with whichever of hidden_dim / ffn_dim_multiplier is swept
        probe = {k: 1 for k in ("hidden_dim", "ffn_dim_multiplier") if k in self.axes}
        self.hidden_rule = (base_cfg.replace(**probe) if probe else base_cfg).hidden_rule
        self.hidden_kernel = None if self.hidden_rule == "explicit" else hidden_dim_kernel(self.hidden_rule)

        # the model's structure (tying, biases); d_ff stays a symbol, evaluated once per point. The
        # workload's scalars (bytes per element, data-parallel ranks) are substituted; its axes stay symbols
        spec = resolved.spec(base_cfg)
        mdl = spec.model(work.attention).replace(definitions=())
        checks.check_structure(mdl, work)  # a stack that does not model a part: refused as count refuses it
        checks.warn_past_window(spec, sum(_extreme(self.axes[k]) if k in self.axes else getattr(work, k)
                                          for k in ("seq", "gen")))  # the grid's longest, once
        fixed = {sym: v for sym, v in work.values().items() if S.SYMBOLS[sym].code not in WORKLOAD_AXES}
        # every model number a sweep cannot vary (experts, the window, the groups of layers) stays the base's
        fixed.update({sym: v for sym, v in spec.values().items() if S.SYMBOLS[sym].code not in CONFIG_FIELDS})
        if work.weight_format is None and base_cfg.weight_format is not None:  # the config's quantization_config
            self.workload = work = work.replace(weight_format=base_cfg.weight_format)
        if work.weight_format is not None:  # β_w: the format's bytes over the weights of the one model it prices
            varied = [k for k in self.axes if k in CONFIG_FIELDS]
            if varied:
                raise SymllmError(f"weight_format: its bytes are per tensor of one model; a sweep cannot vary "
                                  f"--{varied[0].replace('_', '-')}")
            from symllm.costs import formats
            fixed[S.beta_w] = formats.bytes_per_weight(spec, work.weight_format)
        layers = self.axes.get("n_layers", [base_cfg.n_layers])  # the base's alone: nothing varies
        if len(spec.counts) > 1 and (isinstance(layers, _RangeAxis) or any(v != base_cfg.n_layers for v in layers)):
            raise SymllmError(f"n_layers: cannot vary the layers of {base_cfg.name}, whose layers are of "
                              f"{len(spec.counts)} kinds")
        tied_sizes = {"hidden_dim"} if base_cfg.n_shared_experts is not None else set()
        tied_sizes |= {"n_heads", "n_kv_heads", "head_dim"} if base_cfg.rope_dim is not None else set()
        for name in sorted(tied_sizes & set(self.axes)):  # d_se = n_shared·d_ff; MLA's heads; a partial rotary
            raise SymllmError(f"{name}: cannot vary it for {base_cfg.name}, whose other sizes follow it "
                              "(shared experts, latent attention or a partial rotary)")
        # the workload against the model (symllm.costs.checks, count's own checks): a failed check that
        # reads nothing the sweep varies refuses every point, so the sweep itself, with the line count gives
        # for its first point; the other checks drop points (_evaluate)
        self.model_fields = checks.model_fields(spec)
        varying = set(self.axes) | ({"context"} if self.context_follows_seq and "seq" in self.axes else set())
        fixed_fields = {**self.model_fields, **checks.workload_fields(work)}
        if any(not varying & set(c.uses) for c in checks.failures(fixed_fields)):
            first = self._points(0, 1) if self.size else dict(self.constants)
            if self.context_follows_seq:
                first["context"] = first["seq"]
            point = {**fixed_fields, **{k: _item(first[k], 0) for k in ("n_layers", "seq", "gen", "context")}}
            raise SymllmError(checks.failures(point)[0].line(point))
        self.quantities = [q.strip() for q in ([quantities] if isinstance(quantities, str) else quantities)]
        if not self.quantities or any(not q for q in self.quantities):
            raise SymllmError(f"quantity: expected names, got {quantities!r}")
        if len(set(self.quantities)) < len(self.quantities):
            raise SymllmError(f"quantity: a name is repeated in {', '.join(self.quantities)}")
        self.kernels = {q: compile_expr(substitute(_quantity_expr(q, mdl, work), fixed))
                        for q in self.quantities}
        unknown = {a for k in self.kernels.values() for a in k.args} - set(_SYMBOL.values())
        if unknown:
            raise SymllmError(f"quantity: needs {', '.join(sorted(map(str, unknown)))}, which a sweep does not set")

        derived = [c for c in ("n_kv_heads", "head_dim", "hidden_dim") if c not in self.axes]
        self.columns = list(self.axes) + derived + self.quantities
        if "n_kv_heads" in derived and not self.kv_follows_heads:
            self.columns.remove("n_kv_heads")
        self.where = parse_where(where) if isinstance(where, (str, type(None))) else tuple(where)
        for cond in self.where:
            if cond.column not in self.columns:
                raise SymllmError(f"where: unknown column {cond.column!r} (columns: {', '.join(self.columns)})")
        self.stats = _Stats()

    # -- evaluation

    def _points(self, start: int, stop: int) -> dict:
        """Field -> values of the points start..stop-1 (arrays) or a constant."""
        fields = dict(self.constants)
        if self.is_table:
            fields.update({k: v[start:stop] for k, v in self.axes.items()})
        elif self.axes:
            idx = np.unravel_index(np.arange(start, stop, dtype=np.int64), self.shape)
            fields.update({k: v[i] for (k, v), i in zip(self.axes.items(), idx)})
        n = stop - start
        for k, v in fields.items():  # everything as an array of the chunk's length
            if v is not None and not (isinstance(v, np.ndarray) and v.shape == (n,)):
                fields[k] = np.full(n, v, dtype=object if isinstance(v, int) and abs(v) >= 2**62 else None)
        return fields

    def _evaluate(self, start: int, stop: int) -> tuple[dict, np.ndarray, np.ndarray]:
        """All columns of points start..stop-1, with the valid mask and the where mask."""
        f = self._points(start, stop)
        swept = [k for k in CONFIG_FIELDS if k in self.axes]
        point_fields = {k: f[k] for k in swept}  # before anything is derived

        def error_line(i):  # the config's own error for point i (ModelConfig.replace, as count would)
            point = {k: (v[i].item() if isinstance(v[i], np.generic) else v[i]) for k, v in point_fields.items()}
            try:
                self.base.replace(**point)
            except SymllmError as e:
                return str(e)
            return ", ".join(f"{k}={v}" for k, v in point.items())

        heads, head_checks = derive_heads(f["dim"], f["n_heads"],
                                          None if self.kv_follows_heads else f["n_kv_heads"],
                                          None if self.derive_head_dim else f["head_dim"])
        f.update(heads)
        valid = np.ones(stop - start, dtype=bool)
        for name, ok, _ in head_checks:
            ok = np.broadcast_to(np.asarray(ok, dtype=bool), valid.shape)
            self.stats.drop(name, valid & ~ok, error_line)
            valid &= ok

        if self.hidden_rule == "meta":  # ModelConfig refuses a multiplier whose float product passes 2**53
            ok = meta_product_ok(f["dim"], f["ffn_dim_multiplier"])
            self.stats.drop("ffn_dim_multiplier", valid & ~ok, error_line)
            valid &= ok

        if self.context_follows_seq:
            f["context"] = f["seq"]
        fields = {**self.model_fields, **checks.workload_fields(self.workload),
                  **{k: f[k] for k in ("n_layers", "seq", "gen", "context", "n_heads", "n_kv_heads")}}
        for c in checks.CHECKS:  # what count refuses of the workload on this point's model (symllm.costs.checks)
            ok = np.broadcast_to(np.asarray(c.ok(fields), dtype=bool), valid.shape)
            self.stats.drop(c.field, valid & ~ok, lambda i: c.line({k: _item(v, i) for k, v in fields.items()}))
            valid &= ok
        if not valid.all():
            f = {k: (v[valid] if v is not None else None) for k, v in f.items()}
        if self.hidden_kernel is not None:
            args = {"d": f["dim"], "m": f["multiple_of"], "f": f["ffn_dim_multiplier"]}
            f["hidden_dim"] = self.hidden_kernel.vector(**{a.name: args[a.name] for a in self.hidden_kernel.args})
        rows = int(np.count_nonzero(valid))
        sym_values = {_SYMBOL[k].name: v for k, v in f.items() if v is not None}
        for q, kernel in self.kernels.items():
            out = kernel.vector(**{a.name: sym_values[a.name] for a in kernel.args})
            f[q] = out if out.shape == (rows,) else np.broadcast_to(out, (rows,))
        cols = {c: f[c] for c in self.columns}
        keep = np.ones(rows, dtype=bool)
        for cond in self.where:
            keep &= cond(cols)
        return cols, valid, keep

    def chunks(self, progress: Callable[[int, int], None] | None = None) -> Iterator[dict[str, np.ndarray]]:
        """The kept rows, one dict of column arrays per chunk of ``chunk_size`` points; counts go to
        :attr:`stats`. ``progress(done, total)`` is called after each chunk. A grid whose every point is
        invalid raises after the last chunk (:func:`check_some_valid`)."""
        yield from self._chunks(progress)
        check_some_valid(self.stats)

    def _chunks(self, progress=None) -> Iterator[dict[str, np.ndarray]]:
        self.stats = _Stats(points=self.size)
        for start in range(0, self.size, self.chunk_size):
            stop = min(start + self.chunk_size, self.size)
            try:
                cols, valid, keep = self._evaluate(start, stop)
            except MemoryError:  # numpy's ArrayMemoryError too
                raise SymllmError(f"chunk_size: {stop - start:,} points at once need more memory than there is") from None
            self.stats.invalid += int(np.count_nonzero(~valid))
            self.stats.filtered += int(np.count_nonzero(~keep))
            if progress is not None:
                progress(stop, self.size)
            yield cols if keep.all() else {k: v[keep] for k, v in cols.items()}

    def run(self, progress=None) -> SweepResult:
        """Every kept row in memory (for grids that fit; :meth:`write` streams instead).

        >>> Sweep("llama2-7b", {"n_layers": [1, 2]}).run().columns["params"].tolist()
        [464531456, 666914816]
        """
        parts = list(self.chunks(progress))
        cols = {c: (np.concatenate([p[c] for p in parts]) if parts else np.array([], dtype=np.int64))
                for c in self.columns}
        return SweepResult(cols, self.stats.points, self.stats.invalid, self.stats.filtered, self.stats.reasons)

    def write(self, path, fmt: str | None = None, progress=None) -> SweepResult:
        """Stream the rows to ``path`` as CSV, JSON lines or Parquet (``fmt``; by default from the
        suffix: ``.jsonl``/``.json`` JSON lines, ``.parquet``/``.pq`` Parquet, else CSV), atomically: a
        temporary file in the same folder replaces ``path`` only when complete. Returns the counts
        (``columns`` empty). Parquet needs pyarrow (:meth:`write_parquet`).

        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "g.csv"
        >>> Sweep("llama2-7b", {"n_layers": [1, 2]}).write(p).points, p.read_text().splitlines()[1]
        (2, '1,32,128,11008,464531456')
        """
        fmt = choice("format", fmt or table_format(path), TABLE_FORMATS)  # path as given: "out.csv/" is refused
        if fmt == "parquet":
            return self.write_parquet(path, progress)
        write_atomic(path, lambda out: self.write_to(out, fmt, progress), newline="")
        return SweepResult({}, self.stats.points, self.stats.invalid, self.stats.filtered, self.stats.reasons)

    def write_parquet(self, path, progress=None) -> SweepResult:
        """Stream the rows to a Parquet file at ``path`` (one row group per chunk), atomically as
        :meth:`write`. Needs the optional ``parquet`` extra (pyarrow). Numbers stay exact: int64
        columns, ``ffn_dim_multiplier`` as float64, and a column whose values may pass int64 anywhere
        on the grid (Python ints in :meth:`run`) as ``decimal128(38, 0)`` (pandas reads
        ``decimal.Decimal``; ``int()`` of it is exact). A value of more than 38 digits, or a byte count
        that is not whole (int4), is refused with one line (write CSV or JSON lines instead).

        >>> import pathlib, tempfile, pyarrow.parquet as pq
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "g.parquet"
        >>> _ = Sweep("llama2-7b", {"n_layers": [1, 2]}).write_parquet(p)
        >>> pq.read_table(p).column("params").to_pylist()
        [464531456, 666914816]
        """
        pa, pq = _pyarrow()
        wide = self._may_widen()
        types = {c: pa.decimal128(38, 0) if c in wide else pa.float64() if c == "ffn_dim_multiplier"
                 else pa.int64() for c in self.columns}
        schema = pa.schema([(c, types[c]) for c in self.columns])

        def column(name, values):
            if values.dtype.kind == "O" and any(type(v) is Fraction for v in values.tolist()):
                raise SymllmError(f"parquet: {name} has values that are not whole; write csv or jsonl")
            try:
                if values.dtype.kind in "iu" and name in wide:
                    return pa.array(values).cast(types[name])
                return pa.array(values.tolist() if values.dtype.kind == "O" else values, type=types[name])
            except (pa.ArrowInvalid, OverflowError):
                raise SymllmError(f"parquet: {name} has a value of more than "
                                  f"{38 if name in wide else 18} digits; write csv or jsonl") from None

        def write(out):
            with pq.ParquetWriter(out, schema) as writer:
                for cols in self.chunks(progress):
                    if len(cols[self.columns[0]]):
                        writer.write_table(pa.table([column(c, cols[c]) for c in self.columns], schema=schema))
        write_atomic(path, write, binary=True)
        return SweepResult({}, self.stats.points, self.stats.invalid, self.stats.filtered, self.stats.reasons)

    def write_to(self, out, fmt: str = "csv", progress=None) -> None:
        """Stream the rows to a text stream (CSV with a header, or JSON lines). Numbers are exact: ints
        as integers, ``ffn_dim_multiplier`` as Python's ``repr`` of the float, a byte count that is not
        whole (int4) as the exact ``p/q`` in CSV (``Fraction("p/q")`` reads it back) and a JSON number in JSON
        lines (``null`` past a double's range: docs/json.md)."""
        if fmt not in ("csv", "jsonl"):
            raise SymllmError(f"format: {fmt} needs a file (-o FILE); on a stream give csv or jsonl")
        names = self.columns
        header = ",".join(names) + "\n" if fmt == "csv" else ""  # written with the first row, or at the end:
        for cols in self.chunks(progress):                      # nothing at all for a grid refused there
            if len(cols[names[0]]):
                out.write(header + _format_rows([cols[c] for c in names], names, fmt))
                header = ""
        out.write(header)

    def _block(self, start: int, stop: int) -> dict:
        """The kept rows of points start..stop-1, every column at once (one :meth:`_evaluate`)."""
        cols, valid, keep = self._evaluate(start, stop)
        return cols if keep.all() else {k: v[keep] for k, v in cols.items()}

    def to_dask(self, chunk_size: int | None = None) -> dict:
        """The kept rows as a dict of column name -> lazy ``dask.array`` (1-d, blocks of unknown length).

        Needs the optional ``dask`` extra. Each block of ``chunk_size`` grid points is one task that
        evaluates every column at once (the same kernels as :meth:`run`); each column's block is an item
        of that task's result, so computing the columns together (``dask.compute(cols)``) evaluates each
        block once. Rows dropped as invalid or by ``where`` leave the blocks with unknown lengths, as
        boolean indexing does. The tasks run on any dask scheduler, also a ``dask.distributed`` cluster
        (create its ``Client`` before computing). Drop counts (:attr:`stats`) are not collected.

        >>> import dask
        >>> cols = Sweep("llama2-7b", {"n_layers": [1, 2, 3]}).to_dask(chunk_size=2)
        >>> got = dask.compute(cols, scheduler="synchronous")[0]
        >>> got["params"].tolist() == Sweep("llama2-7b", {"n_layers": [1, 2, 3]}).run().columns["params"].tolist()
        True
        """
        try:
            import dask.array as da
            from dask import delayed
        except ImportError:
            raise SymllmError("dask: not installed (pip install 'symllm[dask]')") from None
        step = chunk_size or self.chunk_size
        positive_int("chunk_size", step)
        wide = self._may_widen()
        dtypes = {c: object if c in wide else (np.float64 if c == "ffn_dim_multiplier" else np.int64)
                  for c in self.columns}
        if self.size == 0:
            return {c: da.from_array(np.array([], dtype=dtypes[c]), chunks=1) for c in self.columns}
        token = uuid.uuid4().hex  # unique per call: a sweep is not hashed
        # the sweep itself is one key of the graph, shared by the block tasks (sent once to a cluster)
        me = delayed(self, name=f"symllm-sweep-{token}", pure=True, traverse=False)
        out = {c: [] for c in self.columns}
        for i, start in enumerate(range(0, self.size, step)):
            stop = min(start + step, self.size)
            part = delayed(Sweep._block, name=f"symllm-sweep-block-{token}-{i}", pure=True)(me, start, stop)
            for c in self.columns:
                item = delayed(_column, name=f"symllm-sweep-{c}-{token}-{i}", pure=True)(part, c, dtypes[c])
                out[c].append(da.from_delayed(item, shape=(np.nan,), dtype=dtypes[c]))
        return {c: da.concatenate(blocks) if len(blocks) > 1 else blocks[0] for c, blocks in out.items()}

    def _may_widen(self) -> set:
        """Columns whose values may pass int64 somewhere on the grid (bound at the axes' maxima)."""
        top = {k: _extreme(v) for k, v in self.axes.items()}
        mags = {_SYMBOL[k].name: abs(v) for k, v in self.constants.items() if v is not None}
        mags.update({_SYMBOL[k].name: v for k, v in top.items()})
        if self.derive_head_dim:  # dim // n_heads <= dim
            mags["d_h"] = mags["d"]
        if self.kv_follows_heads:
            mags["n_kv"] = mags["n_h"]
        if self.context_follows_seq:
            mags["t"] = mags["s"]
        if self.hidden_kernel is not None:
            mags["d_ff"] = self.hidden_kernel.bound(**{a.name: mags[a.name] for a in self.hidden_kernel.args})
        return {q for q, k in self.kernels.items()
                if k.bound(**{a.name: mags[a.name] for a in k.args}) >= 2.0 ** 62}


def _column(block: dict, name: str, dtype) -> np.ndarray:
    """One column of a :meth:`Sweep._block` result (an empty one with the column's declared dtype)."""
    col = block[name]
    return col if len(col) else np.array([], dtype=dtype)


def _item(value, i):
    """Point ``i`` of a chunk's field (a plain Python number), or the field itself when it is fixed."""
    if isinstance(value, np.ndarray):
        value = value[i]
    return value.item() if isinstance(value, np.generic) else value


def _format_rows(columns: list, names: list, fmt: str) -> str:
    """The rows of one chunk as text, formatted in one ``%`` operation over all its cells (a C loop,
    not a Python call per cell): ``%d`` for integer columns, ``%r`` for floats, ``%s`` for exact
    objects (Python ints past int64, and Fractions: the exact ``p/q`` in CSV, a JSON number in JSON
    lines, as every JSON output writes it: :func:`symllm.files.json_value`, ``null`` past a double)."""
    rows = len(columns[0])
    specs, cells = [], []
    for col in columns:
        values = col.tolist()
        if col.dtype.kind in "iub":
            specs.append("%d")
        elif col.dtype.kind == "f" and (fmt == "csv" or np.isfinite(col).all()):
            specs.append("%r")
        else:
            specs.append("%s")
            if fmt != "csv" and any(type(v) in (Fraction, float) for v in values):
                values = [_json_cell(v) if type(v) in (Fraction, float) else v for v in values]
        cells.append(values)
    if fmt == "csv":
        row = ",".join(specs) + "\n"
    else:
        row = "{" + ", ".join(f"{json.dumps(c)}: {spec}" for c, spec in zip(names, specs)) + "}\n"
    return (row * rows) % tuple(chain.from_iterable(zip(*cells)))  # row by row, without an object array


def _json_cell(value) -> str:
    """A number that is not an integer as a JSON-lines cell: the float's ``repr``, or ``null`` where it
    has none (past a double's range, not finite)."""
    value = json_value(value)
    return "null" if value is None else repr(value)


def _text(value) -> str:
    """One cell as :meth:`Sweep.write_to` writes it."""
    return repr(value) if isinstance(value, float) else str(value)


def sweep(base, grid: dict | None = None, **options) -> SweepResult:
    """Run a :class:`Sweep` and return its rows in memory.

    >>> r = sweep("llama3.1-8b", {"n_kv_heads": [1, 3, 8]})
    >>> r.invalid, r.columns["params"].tolist()
    (1, [7795380224, 8030261248])
    """
    return Sweep(base, grid, **options).run()


class Sweeps:
    """The same sweep over several bases (``symllm sweep --base a,b``), or over a table whose name column
    (:data:`NAME_COLUMNS`) says each row's base: one :class:`Sweep` per base (a table's rows grouped by
    base, in the order the bases first appear), written as one table whose first column, ``base``, names
    each row's base. A column one base has and another lacks (``n_kv_heads`` derived from the heads in one
    of them) is empty in CSV and ``null`` in JSON lines for the other.

    >>> sw = Sweeps(["llama2-7b", "llama3-8b"], {"n_layers": [1, 2]})
    >>> [(r["base"], r["params"]) for r in sw.run().records()]  # doctest: +NORMALIZE_WHITESPACE
    [('llama2-7b', 464531456), ('llama2-7b', 666914816), ('llama3-8b', 1268789248), ('llama3-8b', 1486901248)]
    """

    def __init__(self, bases, grid: dict | None = None, *, table: dict | None = None, **options):
        bases = [bases] if isinstance(bases, str) else list(bases or [])
        names = [k for k in (table or {}) if k in NAME_COLUMNS]
        if len(names) > 1:
            raise SymllmError(f"table: one name column at most, got {', '.join(names)}")
        if names:
            column = [str(v) for v in table[names[0]]]
            rest = {k: v for k, v in table.items() if k != names[0]}
            order = list(dict.fromkeys(column))
            picks = {b: np.asarray([i for i, v in enumerate(column) if v == b], dtype=np.int64) for b in order}
            self.sweeps = [Sweep(b, table={k: np.asarray(v, dtype=object)[picks[b]] if not isinstance(v, np.ndarray)
                                           else v[picks[b]] for k, v in rest.items()}, **options)
                           for b in order]
        else:
            if not bases:
                raise SymllmError("base: give one or more bases, or a table with a name column")
            if len(set(bases)) < len(bases):
                raise SymllmError(f"base: a base is repeated in {', '.join(bases)}")
            self.sweeps = [Sweep(b, grid, table=table, **options) for b in bases]
        self.bases = [s.base.name if not names else b for s, b in
                      zip(self.sweeps, order if names else bases)]
        self.columns = ["base"] + list(dict.fromkeys(c for s in self.sweeps for c in s.columns))
        self.size = sum(s.size for s in self.sweeps)
        self.chunk_size = min(s.chunk_size for s in self.sweeps) if self.sweeps else CHUNK
        self.stats = _Stats()

    def _gather(self, sweep) -> None:
        self.stats.points += sweep.stats.points
        self.stats.invalid += sweep.stats.invalid
        self.stats.filtered += sweep.stats.filtered
        for k, (n, line) in sweep.stats.reasons.items():
            have = self.stats.reasons.get(k)
            self.stats.reasons[k] = (n + have[0], have[1]) if have else (n, line)

    def chunks(self, progress=None):
        """Each base's kept rows, chunk by chunk, with the ``base`` column (see :meth:`Sweep.chunks`)."""
        self.stats = _Stats()
        done = 0
        for base, sweep in zip(self.bases, self.sweeps):
            step = (lambda d, t, off=done: progress(off + d, self.size)) if progress is not None else None
            for cols in sweep._chunks(step):  # one base may be all invalid; the table may not
                n = len(next(iter(cols.values()))) if cols else 0
                yield {"base": np.asarray([base] * n, dtype=object), **cols}
            self._gather(sweep)
            done += sweep.size
        check_some_valid(self.stats)

    def run(self, progress=None) -> SweepResult:
        """Every kept row in memory; a column a base lacks holds ``None`` in its rows."""
        parts = list(self.chunks(progress))
        cols = {}
        for c in self.columns:
            pieces = [p[c] if c in p else np.asarray([None] * len(p["base"]), dtype=object) for p in parts]
            cols[c] = np.concatenate(pieces) if pieces else np.array([], dtype=object)
        return SweepResult(cols, self.stats.points, self.stats.invalid, self.stats.filtered, self.stats.reasons)

    def write_to(self, out, fmt: str = "csv", progress=None) -> None:
        """Stream the rows to a text stream as :meth:`Sweep.write_to` does, ``base`` first."""
        if fmt not in ("csv", "jsonl"):
            raise SymllmError(f"format: {fmt} is not written for several bases (csv or jsonl)")
        names = self.columns
        header = ",".join(names) + "\n" if fmt == "csv" else ""  # with the first row (Sweep.write_to)
        for cols in self.chunks(progress):
            n = len(cols["base"])
            if not n:
                continue
            filler = "" if fmt == "csv" else "null"
            base = [_csv_cell(b) if fmt == "csv" else json.dumps(b) for b in cols["base"].tolist()]
            columns = [np.asarray(base, dtype=object)] + [
                cols[c] if c in cols else np.asarray([filler] * n, dtype=object) for c in names[1:]]
            out.write(header + _format_rows(columns, names, fmt))
            header = ""
        out.write(header)

    def write(self, path, fmt: str | None = None, progress=None) -> SweepResult:
        """Stream the rows to ``path`` as CSV or JSON lines, atomically (as :meth:`Sweep.write`)."""
        fmt = fmt or table_format(path)
        if fmt not in ("csv", "jsonl"):
            raise SymllmError(f"format: {fmt} is not written for several bases (csv or jsonl)")
        write_atomic(path, lambda out: self.write_to(out, fmt, progress), newline="")
        return SweepResult({}, self.stats.points, self.stats.invalid, self.stats.filtered, self.stats.reasons)


def _csv_cell(text: str) -> str:
    """A CSV cell: quoted where it holds a comma, a quote or a line break."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text
