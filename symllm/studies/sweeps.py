"""Sweeps: chosen quantities over a grid (or a table) of configs and workloads, in compiled kernels.

A :class:`Sweep` varies some fields of a base config (``dim``, ``n_layers``, …) and of the workload
(``batch``, ``seq``, ``context``, ``gen``) and evaluates quantities (``params``, FLOPs, memory, a
breakdown term) at every point with the integer-safe kernels of :mod:`symllm.numbers.kernels`, chunk by chunk,
so memory stays flat however many points there are.

What it derives per point follows the config's own rule (:meth:`ModelConfig.replace
<symllm.arch.config.ModelConfig.replace>`, :func:`symllm.arch.widths.derive_heads`):

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
:func:`~symllm.arch.widths.derive_heads` rejects (``n_heads`` not dividing ``dim``, ``n_kv_heads`` not
dividing ``n_heads``, an odd ``head_dim``) are dropped and counted, and so are the points whose workload
count refuses on that point's model (:mod:`symllm.costs.checks`: more pipeline stages than blocks, a
context past a window some layers have), each with count's line; a workload that fails a check reading
nothing the sweep varies (``ep`` ranks not dividing the experts) refuses the sweep, as it refuses count.
A value that is wrong on its own (``dim = 0``, ``seq = 0``) is a :class:`~symllm.errors.SymllmError`. So
every row equals ``symllm count --json`` (:func:`symllm.arch.resolved.params`,
:func:`symllm.costs.phases.workload`) of that row's config and workload, and a point count refuses is no row.

The quantities a sweep knows and the fields it varies are :mod:`symllm.studies.grids`; the tables it reads
and writes, and the axes and conditions as a user writes them, :mod:`symllm.studies.tables` (their public
names are offered here too).

>>> sw = Sweep("llama3-8b", {"dim": [4096, 4100, 8192], "n_layers": [32, 80]}, quantities=["params"])
>>> res = sw.run()
>>> res.invalid, res.columns["params"].tolist()
(2, [8030261248, 18499637248, 30019166208, 71895883776])
>>> res.columns["hidden_dim"].tolist()
[14336, 14336, 28672, 28672]
"""
from __future__ import annotations

import json
import uuid
from fractions import Fraction
from typing import Callable, Iterator

import numpy as np

from symllm.arch.algebra import substitute
from symllm.arch import catalogue, resolved
from symllm.costs import checks, phases
from symllm.arch import symbols as S
from symllm.arch.widths import derive_heads, meta_product_ok
from symllm.errors import SymllmError
from symllm.validate import choice, positive_int, short, with_list
from symllm.numbers.kernels import compile_expr
from symllm.files import TABLE_FORMATS, table_format, write_atomic
from symllm.arch.specs import hidden_dim_kernel
from symllm.costs.replication import kv_heads_split
from symllm.costs.workloads import Workload, with_stated
from symllm.studies.grids import (PARALLEL, SYMBOL, CONFIG_FIELDS, WORKLOAD_AXES, SweepResult, axis_values,
                                   axis_extreme, quantity_expr, RangeAxis, Stats, check_some_valid)
from symllm.studies.tables import (NAME_COLUMNS, block_column, csv_cell, format_rows, point_item, load_pyarrow,
                                   parse_where)

__all__ = ["Sweep", "Sweeps", "sweep"]

#: default points per chunk: a few MB per column
CHUNK = 1 << 18


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
        self.base = base_cfg = catalogue.resolve(base)
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
                raise SymllmError(with_list(f"sweep: cannot vary {short(name, 20)} (fields: ",
                                            CONFIG_FIELDS + WORKLOAD_AXES, near=name))
        self.axes = {k: axis_values(k, v, work) for k, v in axes.items()}
        self.is_table = table is not None
        if self.is_table:
            lengths = {len(v) for v in self.axes.values()}
            if len(lengths) > 1:
                raise SymllmError(f"table: columns have different lengths {sorted(lengths)}")
            self.shape = (lengths.pop() if lengths else 0,)
        else:
            self.shape = tuple(len(v) if not isinstance(v, RangeAxis) else v.count for v in self.axes.values())
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
        mdl = phases.model_of(spec, work, definitions=False)  # laid out as its engines lay it out, as count
        #: the layouts the per-GPU quantities are in, the inference and the training ones', where a part declares an
        #: engine's split (None: none does, or no per-GPU quantity is asked)
        self.tp_layout, self.training_tp_layout = (phases.layout_of(spec, work, kind) for kind in ("inference",
                                                                                                  "training"))
        checks.check_structure(mdl, work)  # a stack that does not model a part: refused as count refuses it
        checks.warn_past_window(spec, sum(axis_extreme(self.axes[k]) if k in self.axes else getattr(work, k)
                                          for k in ("seq", "gen")))  # the grid's longest, once
        # the config's quantization_config: its weight format and KV cache, unless given (as count reads them)
        self.workload = work = with_stated(work, base_cfg)
        fixed = {sym: v for sym, v in work.values().items() if S.SYMBOLS[sym].code not in WORKLOAD_AXES}
        # every model number a sweep cannot vary (experts, the window, the groups of layers) stays the base's
        fixed.update({sym: v for sym, v in spec.values().items() if S.SYMBOLS[sym].code not in CONFIG_FIELDS})
        if work.weight_format is not None:  # β_w: the format's bytes over the weights of the one model it prices
            varied = [k for k in self.axes if k in CONFIG_FIELDS]
            if varied:
                raise SymllmError(f"weight_format: its bytes are per tensor of one model; a sweep cannot vary "
                                  f"--{varied[0].replace('_', '-')}")
            from symllm.costs import formats
            fixed[S.beta_w] = formats.bytes_per_weight(spec, work.weight_format)
        layers = self.axes.get("n_layers", [base_cfg.n_layers])  # the base's alone: nothing varies
        if len(spec.counts) > 1 and (isinstance(layers, RangeAxis) or any(v != base_cfg.n_layers for v in layers)):
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
            point = {**fixed_fields, **{k: point_item(first[k], 0) for k in ("n_layers", "seq", "gen", "context")}}
            raise SymllmError(checks.failures(point)[0].line(point))
        self.quantities = [q.strip() for q in ([quantities] if isinstance(quantities, str) else quantities)]
        if not self.quantities or any(not q for q in self.quantities):
            raise SymllmError(f"quantity: expected names, got {quantities!r}")
        if len(set(self.quantities)) < len(self.quantities):
            raise SymllmError(f"quantity: a name is repeated in {', '.join(self.quantities)}")
        if not any(q in PARALLEL for q in self.quantities):  # whole-model quantities only: no layout to name
            self.tp_layout = self.training_tp_layout = None
        self.kernels = {q: compile_expr(substitute(quantity_expr(q, mdl, work), fixed))
                        for q in self.quantities}
        unknown = {a for k in self.kernels.values() for a in k.args} - set(SYMBOL.values())
        if unknown:
            raise SymllmError(f"quantity: needs {', '.join(sorted(map(str, unknown)))}, which a sweep does not set")

        derived = [c for c in ("n_kv_heads", "head_dim", "hidden_dim") if c not in self.axes]
        self.columns = list(self.axes) + derived + self.quantities
        if "n_kv_heads" in derived and not self.kv_follows_heads:
            self.columns.remove("n_kv_heads")
        self.where = parse_where(where) if isinstance(where, (str, type(None))) else tuple(where)
        for cond in self.where:
            if cond.column not in self.columns:
                raise SymllmError(with_list(f"where: unknown column {short(cond.column, 20)} (columns: ", self.columns,
                                            near=cond.column, see="the sweep's columns"))
        self.stats = Stats()

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
            self.stats.drop(c.field, valid & ~ok, lambda i: c.line({k: point_item(v, i) for k, v in fields.items()}))
            valid &= ok
        if not valid.all():
            f = {k: (v[valid] if v is not None else None) for k, v in f.items()}
        if self.hidden_kernel is not None:
            args = {"d": f["dim"], "m": f["multiple_of"], "f": f["ffn_dim_multiplier"]}
            f["hidden_dim"] = self.hidden_kernel.vector(**{a.name: args[a.name] for a in self.hidden_kernel.args})
        rows = int(np.count_nonzero(valid))
        sym_values = {SYMBOL[k].name: v for k, v in f.items() if v is not None}
        per_gpu = sym_values
        if self.workload.tp > 1 and "n_kv" in sym_values:  # one GPU's quantities: one KV head a rank where tp
            per_gpu = {**sym_values, "n_kv": kv_heads_split(sym_values["n_kv"], self.workload.tp)}  # is a multiple
        for q, kernel in self.kernels.items():
            values = per_gpu if q in PARALLEL else sym_values
            out = kernel.vector(**{a.name: values[a.name] for a in kernel.args})
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
        self.stats = Stats(points=self.size)
        for start in range(0, self.size, self.chunk_size):
            stop = min(start + self.chunk_size, self.size)
            try:
                cols, valid, keep = self._evaluate(start, stop)
            except MemoryError:  # numpy's ArrayMemoryError too
                raise SymllmError(f"chunk_size: {stop - start:,} points at once need more memory than "
                                  "there is") from None
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
        pa, pq = load_pyarrow()
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
                out.write(header + format_rows([cols[c] for c in names], names, fmt))
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
                item = delayed(block_column, name=f"symllm-sweep-{c}-{token}-{i}", pure=True)(part, c, dtypes[c])
                out[c].append(da.from_delayed(item, shape=(np.nan,), dtype=dtypes[c]))
        return {c: da.concatenate(blocks) if len(blocks) > 1 else blocks[0] for c, blocks in out.items()}

    def _may_widen(self) -> set:
        """Columns whose values may pass int64 somewhere on the grid (bound at the axes' maxima)."""
        top = {k: axis_extreme(v) for k, v in self.axes.items()}
        mags = {SYMBOL[k].name: abs(v) for k, v in self.constants.items() if v is not None}
        mags.update({SYMBOL[k].name: v for k, v in top.items()})
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
        self.stats = Stats()

    def _gather(self, sweep) -> None:
        self.stats.points += sweep.stats.points
        self.stats.invalid += sweep.stats.invalid
        self.stats.filtered += sweep.stats.filtered
        for k, (n, line) in sweep.stats.reasons.items():
            have = self.stats.reasons.get(k)
            self.stats.reasons[k] = (n + have[0], have[1]) if have else (n, line)

    def chunks(self, progress=None):
        """Each base's kept rows, chunk by chunk, with the ``base`` column (see :meth:`Sweep.chunks`)."""
        self.stats = Stats()
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
            base = [csv_cell(b) if fmt == "csv" else json.dumps(b) for b in cols["base"].tolist()]
            columns = [np.asarray(base, dtype=object)] + [
                cols[c] if c in cols else np.asarray([filler] * n, dtype=object) for c in names[1:]]
            out.write(header + format_rows(columns, names, fmt))
            header = ""
        out.write(header)

    def write(self, path, fmt: str | None = None, progress=None) -> SweepResult:
        """Stream the rows to ``path`` as CSV or JSON lines, atomically (as :meth:`Sweep.write`)."""
        fmt = fmt or table_format(path)
        if fmt not in ("csv", "jsonl"):
            raise SymllmError(f"format: {fmt} is not written for several bases (csv or jsonl)")
        write_atomic(path, lambda out: self.write_to(out, fmt, progress), newline="")
        return SweepResult({}, self.stats.points, self.stats.invalid, self.stats.filtered, self.stats.reasons)


