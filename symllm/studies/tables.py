"""A sweep's tables, read and written: numbers and axes as a user writes them (:func:`parse_number`,
:func:`parse_axis`, ``--where`` conditions: :func:`parse_where`), tables of configs read back exactly
(:func:`read_table`: CSV, JSON lines, a JSON array, Parquet; integers past int64 and ``p/q`` fractions kept),
and the rows of a chunk formatted as CSV or JSON lines. What a sweep evaluates is :mod:`symllm.studies.sweeps`.

>>> list(parse_axis("1024:4096:1024", "dim"))
[1024, 2048, 3072, 4096]
"""
from __future__ import annotations

import csv
import decimal
import json
import math
import operator
import re
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain
from pathlib import Path
from typing import Iterator

import numpy as np

from symllm.errors import SymllmError
from symllm.validate import short, shown_path
from symllm.files import json_value, parse_json, read_bytes, read_text, table_format

__all__ = ["parse_number", "parse_axis", "parse_where", "read_table", "NAME_COLUMNS", "TABLE_BYTES", "MAX_DIGITS"]

#: a table column with one of these names holds the base of its row (a preset name or a config path, a
#: string, never parsed as a number): :class:`Sweeps` sweeps each base's rows
NAME_COLUMNS = ("base", "model", "name")

#: the largest table file :func:`read_table` reads (its rows are held in memory)
TABLE_BYTES = 256 << 20

#: the most digits a sweep value may have: Python's limit on integers read from text (config files)
MAX_DIGITS = 4300


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
    pa, pq = load_pyarrow()
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


def load_pyarrow():
    """pyarrow and pyarrow.parquet (the optional ``parquet`` extra), or one line saying how to install it.

    >>> import sys; saved = sys.modules.get("pyarrow"); sys.modules["pyarrow"] = None  # as if not installed
    >>> load_pyarrow()
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: parquet: pyarrow is not installed (pip install 'symllm[parquet]')
    >>> _ = sys.modules.pop("pyarrow") if saved is None else sys.modules.update(pyarrow=saved)
    """
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


def block_column(block: dict, name: str, dtype) -> np.ndarray:
    """One column of a :meth:`Sweep._block` result (an empty one with the column's declared dtype).

    >>> block_column({"dim": np.array([1, 2])}, "dim", np.int64).tolist(), block_column({"x": []}, "x", np.int64).dtype
    ([1, 2], dtype('int64'))
    """
    col = block[name]
    return col if len(col) else np.array([], dtype=dtype)


def point_item(value, i):
    """Point ``i`` of a chunk's field (a plain Python number), or the field itself when it is fixed.

    >>> point_item(np.array([5, 6]), 1), type(point_item(np.array([5, 6]), 1)).__name__, point_item(7, 3)
    (6, 'int', 7)
    """
    if isinstance(value, np.ndarray):
        value = value[i]
    return value.item() if isinstance(value, np.generic) else value


def format_rows(columns: list, names: list, fmt: str) -> str:
    """The rows of one chunk as text, formatted in one ``%`` operation over all its cells (a C loop,
    not a Python call per cell): ``%d`` for integer columns, ``%r`` for floats, ``%s`` for exact
    objects (Python ints past int64, and Fractions: the exact ``p/q`` in CSV, a JSON number in JSON
    lines, as every JSON output writes it: :func:`symllm.files.json_value`, ``null`` past a double).

    >>> cols = [np.array([1, 2]), np.array([0.5, 1.5])]
    >>> print(format_rows(cols, ["a", "b"], "csv"), end="")
    1,0.5
    2,1.5
    >>> print(format_rows(cols, ["a", "b"], "jsonl"), end="")
    {"a": 1, "b": 0.5}
    {"a": 2, "b": 1.5}
    """
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


def csv_cell(text: str) -> str:
    """A CSV cell: quoted where it holds a comma, a quote or a line break.

    >>> csv_cell("llama2-7b"), csv_cell("a,b"), csv_cell('a"b')
    ('llama2-7b', '"a,b"', '"a""b"')
    """
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text
