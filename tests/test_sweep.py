"""symllm.studies.sweeps and `symllm sweep`: rows equal the counts of each row's own config.

Expected numbers: `symllm.api.params` / `symllm count` of a ModelConfig built for the row by
ModelConfig's own derivation rules, the torch reference's numel on the meta device, and Meta's
FeedForward arithmetic as plain Python.
"""
import csv
import io
import itertools
import json
import os
import sys
from pathlib import Path
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given

import symllm
from symllm.cli import main
from symllm.arch.config import ModelConfig
from symllm.errors import SymllmError
from symllm.studies.sweeps import Sweep, sweep
from symllm.studies.tables import parse_axis, parse_where

from .conftest import requires
from .strategies import configs, sweep_axes


def _row_config(base: ModelConfig, fields: dict) -> ModelConfig:
    """The config a user would write for a row: the base with the row's fields, what the base derived
    (head_dim from dim / n_heads, n_kv following n_heads) derived again by ModelConfig.replace itself; a
    stated head_dim stays stated. Workload fields (batch, seq, context, gen) are not config fields."""
    return base.replace(**{k: v for k, v in fields.items() if k not in ("batch", "seq", "context", "gen")})


@given(configs(), sweep_axes())
def test_every_row_equals_params_of_its_config(base, axes):
    """Each kept row's params and derived fields equal api.params of the row's config; the points
    dropped are exactly those ModelConfig rejects; a grid of no valid point is refused in one line."""
    expected_rows, invalid = [], 0
    for combo in itertools.product(*axes.values()):
        fields = dict(zip(axes, combo))
        try:
            cfg = _row_config(base, fields)
        except SymllmError:
            invalid += 1
            continue
        counts = symllm.params(cfg)
        expected_rows.append({**fields, "n_kv_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
                              "hidden_dim": symllm.hidden_dim(cfg), "params": counts["total"],
                              "params:block/attention/wk": counts["block/attention/wk"]})
    if not expected_rows:  # every point invalid
        with pytest.raises(SymllmError, match=r"^sweep: every point is invalid: "):
            sweep(base, axes, quantities=["params", "params:block/attention/wk"])
        return
    result = sweep(base, axes, quantities=["params", "params:block/attention/wk"])
    assert result.invalid == invalid
    got = result.records()
    assert len(got) == len(expected_rows)
    follows = "n_kv_heads" not in axes and "n_kv_heads" in base.derived
    assert ("n_kv_heads" in result.columns) == ("n_kv_heads" in axes or follows)
    for row, exp in zip(got, expected_rows):
        assert {k: row[k] for k in exp if k in row} == {k: v for k, v in exp.items() if k in row}
        assert set(exp) - set(row) <= {"n_kv_heads"}


def test_rows_equal_torch_numel_on_meta_device():
    """A few rows of a Llama-3-8B sweep equal the torch reference model's numel sums."""
    requires("torch")  # skipped without torch, a failure under CI=true
    from symllm import reference
    base = symllm.resolve("llama3-8b")
    rows = sweep(base, {"dim": [1024, 3072, 4100], "n_layers": [2, 5]}).records()
    assert len(rows) == 4  # 4100 is not a multiple of 32 heads
    for row in rows:
        cfg = base.replace(dim=row["dim"], n_layers=row["n_layers"], head_dim=None)
        assert row["params"] == reference.count(reference.build(cfg, device="meta"))["total"]


def test_meta_float_truncation_in_a_sweep():
    """dim 34, ffn_dim_multiplier 0.7, multiple_of 1 gives Meta's 62 in a sweep (exact rationals: 63)."""
    base = ModelConfig(vocab_size=10, dim=34, n_layers=1, n_heads=1, multiple_of=1, ffn_dim_multiplier=0.7)
    res = sweep(base, {"dim": [34, 90, 1000]})
    meta = [int(0.7 * int(2 * (4 * d) / 3)) for d in (34, 90, 1000)]  # Meta's FeedForward, multiple_of 1
    assert meta[0] == 62
    assert res.columns["hidden_dim"].tolist() == meta


def test_where_filter_and_chunking():
    """--where keeps exactly the rows that pass; tiny chunks give the same rows as one chunk."""
    grid = {"dim": list(range(2048, 8193, 256)), "n_layers": list(range(16, 65, 4))}
    full = sweep("llama3-8b", grid)
    kept = sweep("llama3-8b", grid, where="params < 9e9 and dim >= 4096", chunk_size=7)
    mask = (full.columns["params"] < 9_000_000_000) & (full.columns["dim"] >= 4096)
    for c in full.columns:
        assert kept.columns[c].tolist() == full.columns[c][mask].tolist()
    assert kept.filtered == int((~mask).sum()) and kept.rows == int(mask.sum())


def test_heads_not_dividing_dim_are_dropped_and_counted():
    """n_heads not dividing dim, n_kv not dividing n_heads: dropped, counted, never raised."""
    res = sweep("llama3.1-8b", {"dim": [4096, 4100], "n_kv_heads": [3, 8]})
    assert (res.points, res.invalid, res.rows) == (4, 3, 1)


def test_bad_single_values_raise():
    """A value wrong on its own is a one-line SymllmError naming the field."""
    with pytest.raises(SymllmError, match="^dim: expected integers >= 1, got 0"):
        Sweep("llama3-8b", {"dim": [0, 4096]})
    with pytest.raises(SymllmError, match="^sweep: cannot vary 'norm_eps'"):
        Sweep("llama3-8b", {"norm_eps": [1e-5]})
    with pytest.raises(SymllmError, match="^quantity: unknown 'nope'"):
        Sweep("llama3-8b", {"dim": [4096]}, quantities=["nope"])
    with pytest.raises(SymllmError, match="^seq: expected a positive integer, got 0"):  # Workload's check
        Sweep("llama3-8b", {"seq": [0, 4096]})
    with pytest.raises(SymllmError, match="^where: unknown column"):
        Sweep("llama3-8b", {"dim": [4096]}, where="flops < 1")


def test_where_grammar_runs_no_code():
    """The filter grammar accepts only COLUMN OP NUMBER; anything else is refused, not evaluated."""
    assert [(c.column, c.op, c.value) for c in parse_where("params<=1e3, dim != 5")] == \
        [("params", "<=", 1000), ("dim", "!=", 5)]
    for bad in ("__import__('os').system('true')", "params < dim", "params < 1; x", "lambda: 1"):
        with pytest.raises(SymllmError, match="^where:"):
            parse_where(bad)


def test_parse_axis():
    """Ranges are inclusive; lists mix with ranges; bad text names the field."""
    assert parse_axis("16:64:16,7", "n_layers") == [16, 32, 48, 64, 7]
    assert parse_axis("4096", "dim") == [4096]
    with pytest.raises(SymllmError, match="^dim: expected a number"):
        parse_axis("4k", "dim")
    with pytest.raises(SymllmError, match="^dim: step must be positive"):
        parse_axis("1:8:0", "dim")


def test_huge_grid_streams_in_chunks():
    """A 10**12-point grid is planned without materialising it; each chunk has at most chunk_size rows."""
    sw = Sweep("llama3-8b", {"dim": list(range(1, 10**6 + 1)), "n_layers": list(range(1, 10**6 + 1))},
               chunk_size=1000)
    assert sw.size == 10**12
    first = next(sw.chunks())
    assert len(first["params"]) <= 1000


def test_overflowing_quantities_stay_exact():
    """Training FLOPs past int64 come back as exact Python ints, equal to the scalar workload()."""
    from symllm.costs import phases as costs
    res = sweep("llama3.1-405b", {"seq": [4096, 10**8], "batch": [1, 10**6]}, quantities=["training_flops"])
    assert res.columns["training_flops"].dtype == object
    for row in res.records():
        exact = costs.workload("llama3.1-405b", batch=row["batch"], seq=row["seq"])["flops"]["training_step"]
        assert row["training_flops"] == exact


def test_written_csv_and_jsonl_round_trip(tmp_path):
    """CSV and JSON lines hold the same rows as run(); the file appears only when complete."""
    sw = Sweep("llama2-7b", {"dim": [2048, 4096, 4100], "n_layers": [2, 4]}, quantities=["params", "flops"],
               workload={"seq": 128})
    expected = sw.run().records()
    sw.write(tmp_path / "g.csv")
    with open(tmp_path / "g.csv", newline="") as fh:
        assert [{k: int(v) for k, v in r.items()} for r in csv.DictReader(fh)] == expected
    sw.write(tmp_path / "g.jsonl")
    assert [json.loads(line) for line in (tmp_path / "g.jsonl").read_text().splitlines()] == expected

    (tmp_path / "keep.csv").write_text("old\n")

    def boom(done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        sw.write(tmp_path / "keep.csv", progress=boom)
    assert (tmp_path / "keep.csv").read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["g.csv", "g.jsonl", "keep.csv"]


def test_file_endings_choose_the_format_and_a_bad_format_is_one_line(tmp_path, cli):
    """A sweep (one base or several) writes JSON lines to .json/.ndjson/.jsonl and CSV to any other ending, and
    reads its tables back by the same rule; an unknown --format is one line naming it, from the API and the
    command line alike, and writes nothing."""
    from symllm.studies.sweeps import Sweeps
    from symllm.studies.tables import read_table
    sw = Sweep("llama2-7b", {"n_layers": [1, 2]})
    expected = sw.run().records()
    for name in ("g.json", "g.ndjson", "g.jsonl"):
        sw.write(tmp_path / name)
        assert [json.loads(line) for line in (tmp_path / name).read_text().splitlines()] == expected
        assert read_table(tmp_path / name) == expected
    sw.write(tmp_path / "g.txt")
    with open(tmp_path / "g.txt", newline="") as fh:
        assert [{k: int(v) for k, v in r.items()} for r in csv.DictReader(fh)] == expected
    assert read_table(tmp_path / "g.txt") == expected
    several = Sweeps(["llama2-7b", "llama3-8b"], {"n_layers": [1]})
    several.write(tmp_path / "s.ndjson")
    assert [json.loads(line)["base"] for line in (tmp_path / "s.ndjson").read_text().splitlines()] == [
        "llama2-7b", "llama3-8b"]
    with pytest.raises(SymllmError, match=r"^format: unknown 'xlsx' \(known: csv, jsonl, parquet\)$"):
        sw.write(tmp_path / "g.xlsx", "xlsx")
    r = cli(["sweep", "--base", "llama2-7b", "--format", "xlsx", "-o", str(tmp_path / "c.xlsx")])
    assert r.code == 2 and r.err == "symllm: error: format: unknown 'xlsx' (known: csv, jsonl, parquet)\n", r.err
    assert not (tmp_path / "g.xlsx").exists() and not (tmp_path / "c.xlsx").exists()


def test_dask_blocks_equal_numpy():
    """The same kernels on dask.array blocks (local synchronous scheduler) give the numpy rows."""
    requires("dask.array")  # skipped without dask, a failure under CI=true
    import dask
    sw = Sweep("llama3-8b", {"dim": list(range(1024, 8193, 512)), "n_layers": [8, 16, 32]},
               where="params < 2e10", chunk_size=10)
    expected = sw.run()
    cols = sw.to_dask(chunk_size=8)
    got = dask.compute(cols, scheduler="synchronous")[0]
    for c in expected.columns:
        assert np.asarray(got[c]).tolist() == expected.columns[c].tolist()



def _counting(monkeypatch) -> list:
    """Record every Sweep._evaluate(start, stop) call (the block evaluations) in the returned list."""
    calls, original = [], Sweep._evaluate

    def counted(self, start, stop):
        calls.append((start, stop))
        return original(self, start, stop)
    monkeypatch.setattr(Sweep, "_evaluate", counted)
    return calls


def test_dask_evaluates_each_block_once(monkeypatch):
    """Computing all columns of to_dask() evaluates each block exactly once (not once per column), and
    the blocks cover the grid in order; an object column (Python ints past int64) survives."""
    requires("dask.array")
    import dask
    sw = Sweep("llama3.1-405b", {"n_layers": [1, 2, 126], "seq": [2048, 4096, 2**24]},
               quantities=["params", "training_flops", "kv_cache"], where="params < 2e11")
    expected = sw.run()
    assert len(sw.columns) >= 5 and expected.columns["training_flops"].dtype == object
    assert max(expected.columns["training_flops"]) >= 2**63  # the exact path needs Python ints here
    calls = _counting(monkeypatch)
    cols = sw.to_dask(chunk_size=4)
    assert calls == []  # lazy
    got = dask.compute(cols, scheduler="threads")[0]
    assert sorted(calls) == [(0, 4), (4, 8), (8, 9)]  # 9 points, 3 blocks, one evaluation each
    assert list(got) == sw.columns
    for c in sw.columns:
        assert [int(v) for v in got[c].tolist()] == expected.columns[c].tolist()
    assert type(got["training_flops"][-1]) is int


def test_dask_empty_and_all_filtered():
    """An empty grid and a where that keeps nothing give empty columns, as run() does."""
    requires("dask.array")
    import dask
    sw = Sweep("llama2-7b", {"n_layers": [1, 2, 3]}, where="params < 0")
    got = dask.compute(sw.to_dask(chunk_size=2), scheduler="synchronous")[0]
    assert sw.run().rows == 0
    assert {c: len(v) for c, v in got.items()} == {c: 0 for c in sw.columns}
    empty = Sweep("llama2-7b", table=[])
    assert empty.size == 0 and empty.run().rows == 0
    got = dask.compute(empty.to_dask(), scheduler="synchronous")[0]
    assert {c: len(v) for c, v in got.items()} == {c: 0 for c in empty.columns}


def test_dask_distributed_local_cluster(monkeypatch):
    """The block tasks run on a dask.distributed cluster (a LocalCluster in this process, as a real
    scheduler would run them) and give exactly Sweep.run()'s rows, one evaluation per block."""
    distributed = requires("dask.distributed")  # skipped without distributed, a failure under CI=true
    sw = Sweep("llama3.1-405b", {"dim": list(range(4096, 16385, 2048)), "n_layers": [32, 126],
                                 "seq": [2048, 2**24]},
               quantities=["params", "training_flops"], where="params > 1e10")
    expected = sw.run()
    assert expected.invalid == 0 and 0 < expected.rows < sw.size  # the where filters some rows out
    calls = _counting(monkeypatch)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        cols = sw.to_dask(chunk_size=5)
        got = client.compute(cols, sync=True)
    assert sorted(calls) == [(s, min(s + 5, sw.size)) for s in range(0, sw.size, 5)]
    for c in sw.columns:
        assert [int(v) for v in np.asarray(got[c]).tolist()] == expected.columns[c].tolist()


# ---------------------------------------------------------------- CLI

def test_cli_grid_rows_equal_symllm_count(tmp_path, capsys):
    """`sweep --dim 2048:8192:256 --n-layers 16:64:4 -o grid.csv` writes the grid atomically; sampled rows
    equal `symllm count --json` of a config file with that row's fields; the dropped count is on stderr."""
    out = tmp_path / "grid.csv"
    assert main(["sweep", "--base", "llama3-8b", "--dim", "2048:8192:256", "--n-layers", "16:64:4",
                 "--quantity", "params,kv_cache_elements", "--seq", "8192", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "325 points, 0 invalid dropped" in err and "325 rows" in err
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 25 * 13
    raw = json.loads(json.dumps(symllm.arch.config.preset_info("llama3-8b")["config"]))
    for row in (rows[0], rows[137], rows[-1]):
        raw.update(dim=int(row["dim"]), n_layers=int(row["n_layers"]))
        path = tmp_path / "row.json"
        path.write_text(json.dumps(raw))
        assert main(["count", str(path), "--json"]) == 0
        counted = json.loads(capsys.readouterr().out)
        assert int(row["params"]) == counted["params"]["total"]
        assert int(row["hidden_dim"]) == counted["config"]["hidden_dim"]
        # KV cache elements after a forward of 8192 new tokens on 8192 cached (context defaults to seq):
        # 2 (K and V) * L * n_kv * head_dim per token
        assert int(row["kv_cache_elements"]) == 2 * int(row["n_layers"]) * 8 * (int(row["dim"]) // 32) * 16384


def test_cli_where_invalid_and_stdout(capsys):
    """Invalid combinations are dropped and counted; --where filters; no -o prints CSV."""
    assert main(["sweep", "--base", "llama3-8b", "--dim", "4096,4100", "--n-layers", "32,40",
                 "--where", "params < 9e9"]) == 0
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert lines[0] == "dim,n_layers,head_dim,hidden_dim,params"
    assert lines[1:] == ["4096,32,128,14336,8030261248"]
    assert "4 points, 2 invalid dropped, 1 filtered out, 1 rows -> stdout" in cap.err


@pytest.mark.parametrize("argv, message", [
    (["--dim", "0"], "dim: expected integers >= 1, got 0"),
    (["--dim", "4096", "--where", "__import__('os')"], "where: cannot read"),
    (["--dim", "4096", "--quantity", "nope"], "quantity: unknown 'nope'"),
    (["--dim", "2048:1024"], "dim: empty range '2048:1024'"),
])
def test_cli_bad_input_one_line_exit_2(argv, message, capsys):
    """Bad input: one stderr line naming the field, exit 2, no output file."""
    assert main(["sweep", "--base", "llama3-8b", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symllm: error: {message}") and err.count("\n") == 1


def test_cli_table(tmp_path, capsys):
    """--table evaluates one point per row of a CSV file."""
    table = tmp_path / "t.csv"
    table.write_text("dim,n_layers\n4096,32\n2048,16\n")
    assert main(["sweep", "--base", "llama3-8b", "--table", str(table)]) == 0
    out = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [int(r["params"]) for r in out] == [
        symllm.params(symllm.resolve("llama3-8b").replace(dim=d, n_layers=n, head_dim=None))["total"]
        for d, n in ((4096, 32), (2048, 16))]


def _llama_params(V, d, L, n_h, n_kv, d_h, d_ff):
    """Untied LLaMA parameters written out by hand (no biases)."""
    return 2 * V * d + L * (2 * d * d_h * (n_h + n_kv) + 3 * d * d_ff + 2 * d) + d


def test_a_huge_point_leaves_the_other_rows_exact(capsys):
    """A point past int64 in the same chunk is computed with Python ints; the other rows stay int64
    and print exactly (not through float64)."""
    assert main(["sweep", "--base", "llama2-7b", "--n-heads", "1", "--dim", "160000002,3000000000000000",
                 "--vocab-size", "32001", "--n-layers", "1"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for row, d in zip(rows, (160000002, 3000000000000000)):
        d_ff = 256 * -(-(8 * d // 3) // 256)  # Meta's rounding, multiple_of 256, no multiplier
        assert int(row["hidden_dim"]) == d_ff
        assert row["params"] == str(_llama_params(32001, d, 1, 1, 1, d, d_ff))
    assert rows[0]["params"] == "307210286880128538"


def test_blocks_of_a_chunk_widen_alone():
    """Kernel.vector evaluates in blocks; one block past int64 widens to Python ints, exactly."""
    from symllm.numbers.kernels import BLOCK, compile_expr
    from symllm.arch import symbols as S
    d = np.arange(1, 3 * BLOCK + 1, dtype=np.int64)
    d[BLOCK + 5] = 3 * 10**6
    out = compile_expr(S.d ** 3 + S.d).vector(d=d)
    assert out.dtype == object and out.tolist() == [x ** 3 + x for x in d.tolist()]


def test_int4_bytes_are_exact_fractions(capsys):
    """int4 weights are N·(1/2 + 2/128) bytes: the exact "p/q" in CSV, a JSON number in JSON lines (as every
    JSON output: docs/json.md), an exact Fraction in Python."""
    args = ["sweep", "--base", "llama2-7b", "--vocab-size", "3", "--dim", "2", "--n-heads", "1", "--n-layers", "1",
            "--quantity", "params,weights", "--dtype", "int4"]
    n = _llama_params(3, 2, 1, 1, 1, 2, 256)  # d_ff: 8·2/3 rounded up to 256
    assert main(args) == 0
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert int(row["params"]) == n and row["weights"] == "25905/32" == str(Fraction(n * 33, 64))
    assert main(args + ["--format", "jsonl"]) == 0
    assert json.loads(capsys.readouterr().out)["weights"] == 809.53125  # 25905 / 32, exact in binary
    got = sweep("llama2-7b", {"dim": [2], "vocab_size": [3], "n_heads": [1]}, quantities=["weights"],
                workload={"dtype": "int4"}).columns["weights"].tolist()[0]
    assert got == Fraction(_llama_params(3, 2, 32, 1, 1, 2, 256) * 33, 64) and type(got) is Fraction


def test_a_multiplier_count_rejects_is_dropped(capsys):
    """ModelConfig refuses f·⌊8d/3⌋ >= 2**53; so does the sweep (one invalid point, one row)."""
    with pytest.raises(SymllmError):
        symllm.resolve("llama3-8b").replace(ffn_dim_multiplier=1e12)
    assert main(["sweep", "--base", "llama3-8b", "--ffn-dim-multiplier", "1e12,1.3"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == ["1.3,128,14336,8030261248"] and "1 invalid dropped" in err


@pytest.mark.parametrize("value, message", [("1e400", None), ("1e9999999", "more than 4,300 digits")])
def test_enormous_dims_give_one_line(value, message, capsys):
    code = main(["sweep", "--base", "llama3-8b", "--dim", value])
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and code == 2 and out == ""  # one line, no table
    # 1e400: 1.3·⌊8d/3⌋ is past a double, so the config is refused and the grid's one point is invalid
    assert (message or "sweep: every point is invalid: ffn_dim_multiplier: 1.3 makes hidden_dim") in err


def test_dropped_points_say_why_as_count_would(cli):
    """Every dropped point is counted under the check it fails, and the first one's line is the error
    ModelConfig itself raises for that config (what `symllm count` would print)."""
    base = symllm.api.resolve("llama3-8b")
    grid = {"dim": [4096, 4100], "n_heads": [32, 31], "n_kv_heads": [8, 3]}
    res = Sweep("llama3-8b", grid).run()
    expected: dict[str, list[str]] = {}
    for dim, n_h, n_kv in itertools.product(*grid.values()):
        try:
            base.replace(dim=dim, n_heads=n_h, n_kv_heads=n_kv)
        except SymllmError as e:
            expected.setdefault(str(e).split(":")[0], []).append(str(e))
    assert res.invalid == sum(map(len, expected.values())) > 0
    assert {k: n for k, (n, _) in res.reasons.items()} == {k: len(v) for k, v in expected.items()}
    assert all(line in expected[k] for k, (_, line) in res.reasons.items())
    r = cli(["sweep", "--base", "llama3-8b", "--dim", "4096,4100", "--n-heads", "32,31", "--n-kv-heads", "8,3"])
    assert r.code == 0 and r.err.count("\n") == 1 + len(res.reasons)  # the summary, then a line per check
    assert all(f"\n  {n} dropped, the first: {line}\n" in r.err for n, line in res.reasons.values())


def test_a_range_axis_is_streamed_not_built():
    """An axis of 10**9 values costs no memory: the first chunk equals the sweep of the same values
    given as a list, and building the sweep and its first chunk stays far below the 8 GB the values
    would take."""
    import tracemalloc
    axis = range(128, 128 * 10**9 + 1, 128)
    tracemalloc.start()
    sw = Sweep("llama3-8b", {"dim": axis}, quantities=["params"], chunk_size=1000)
    first = next(sw.chunks())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sw.size == 10**9 and peak < 64 << 20
    same = Sweep("llama3-8b", {"dim": list(axis[:1000])}, quantities=["params"]).run()
    assert first["dim"].tolist() == same.columns["dim"].tolist()
    assert first["params"].tolist() == same.columns["params"].tolist()


def test_cli_range_axis_stays_lazy():
    """`--dim A:B:C` alone is parsed as a lazy range of integers (any length), with the same values."""
    r = parse_axis("2:200000000:2", "dim")
    assert len(r) == 10**8 and list(r[:3]) == [2, 4, 6] and r[-1] == 200000000


@pytest.mark.parametrize("name, text", [
    ("t.jsonl", '{"dim": ' + "9" * 5000 + "}\n"),
    ("t.json", "[" * 100000),
    ("t.jsonl", '{"dim": 4096}\n' + "[" * 100000 + "\n"),
])
def test_hostile_json_tables_are_one_line(tmp_path, cli, name, text):
    """A JSON table with an integer past Python's 4,300 digits or nested too deep is one line, exit 2
    (it was a ValueError traceback), naming the file."""
    path = tmp_path / name
    path.write_text(text)
    r = cli(["sweep", "--base", "llama3-8b", "--table", str(path)])
    assert (r.code, r.out) == (2, "") and r.err.count("\n") == 1 and name in r.err and "Traceback" not in r.err


# --------------------------------------------------------------------------- hostile tables and bounds (issue 25)

def _peak_kib(argv, tmp_path) -> tuple[int, str]:
    """The peak resident memory (KiB) of ``symllm ARGV`` in a fresh process, and its stderr."""
    import resource
    import subprocess
    import sys
    code = ("import resource, sys; from symllm.cli import main; c = main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(c)")
    root = Path(__file__).parent.parent
    proc = subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    *lines, peak = proc.stderr.splitlines()
    return int(peak), "\n".join(lines)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB")
def test_table_memory_is_a_small_multiple_of_its_size(tmp_path):
    """A table of 200,000 rows (about 2.5 MB of CSV) adds less than 6 times its size to the peak memory
    of a sweep over it (the rows as dicts took 36 times the file, 90 MB; the ratio was about 3.7 at 100,000,
    200,000 and 400,000 rows, and is 0 since: the sweep's peak, about 88 MB, is the one-row table's, and the
    rows of 400,000 still fit under it)."""
    big = tmp_path / "big.csv"
    with big.open("w") as fh:
        fh.write("dim,n_layers,seq\n")
        fh.writelines(f"4096,{i % 64 + 1},{i % 4096 + 1}\n" for i in range(200_000))
    (tmp_path / "small.csv").write_text("dim,n_layers,seq\n4096,1,1\n")
    argv = ["sweep", "--base", "llama3-8b", "--chunk-size", "4096", "-o", "/dev/null", "--table"]
    small, _ = _peak_kib(argv + ["small.csv"], tmp_path)
    large, err = _peak_kib(argv + ["big.csv"], tmp_path)
    assert "200,000 rows" in err, err
    assert (large - small) * 1024 < 6 * big.stat().st_size, (large, small, big.stat().st_size)


def test_where_is_exact_on_integers_of_any_size(cli):
    """--where compares exactly (through float64, 3879943431782399999.5 was 3879943431782400000: the row at
    3,879,943,431,782,400,000 was kept); bounds past int64 and between integers too."""
    argv = ["sweep", "--base", "llama3.1-405b", "--n-layers", "1000", "--seq", "100000", "--quantity",
            "training_flops"]
    r = cli(argv)
    assert r.code == 0 and r.out.splitlines()[1].endswith(",3879943431782400000"), r.out
    for where, rows in [("training_flops <= 3879943431782399999.5", 0), ("training_flops < 3879943431782400000.5", 1),
                        ("training_flops == 3879943431782400000", 1), ("training_flops != 3879943431782400000", 0),
                        ("training_flops > 3879943431782399999.999", 1), ("training_flops >= 3879943431782400000.001", 0),
                        ("training_flops < 1e30", 1), ("training_flops > 1e30", 0), ("n_layers == 1000.5", 0)]:
        r = cli(argv + ["--where", where])
        assert r.code == 0 and len(r.out.splitlines()) == 1 + rows, (where, r.out, r.err)


@pytest.mark.parametrize("argv", [["--context", "1:1e19"],
                                  ["--n-layers", "1:1e30", "--dim", "1:1e30"],
                                  ["--base", "llama2-7b", "--gen", "١٢٨", "--dim", "1e2200", "--quantity", "flops"]])
def test_sweep_bounds_are_one_line_or_exact(cli, argv):
    """A range past sys.maxsize (OverflowError), a grid of 10**60 points, and numbers of 4,400 digits from a
    Unicode-digit --gen and a 2,201-digit --dim (ValueError on output): one line, or exact rows."""
    if "--base" not in argv:
        argv = ["--base", "llama3-8b"] + argv
    r = cli(["sweep"] + argv)
    assert "Traceback" not in r.err
    if r.code == 2:
        assert r.err.startswith("symllm: error: ") and r.err.count("\n") == 1, r.err
    else:
        assert r.code == 0 and len(r.out.splitlines()[1].split(",")[-1]) > 4300, r.err


def test_huge_chunk_size_under_a_memory_limit_is_one_line(tmp_path):
    """--chunk-size 10**10 over a grid that large, in a process limited to 2 GiB: one line, exit 2 (numpy's
    ArrayMemoryError)."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    proc = subprocess.run([sys.executable, "-m", "symllm", "sweep", "--base", "llama3-8b", "--n-layers",
                           "1:100000000000", "--chunk-size", "10000000000", "-o", "/dev/null"], capture_output=True,
                          text=True, timeout=300, preexec_fn=limit, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert proc.returncode == 2 and proc.stderr.startswith("symllm: error: ") and proc.stderr.count("\n") == 1, \
        proc.stderr[-3000:]


@pytest.mark.parametrize("text, suffix", [('{"n_layers": 1e30}\n', ".jsonl"), ('[{"n_layers": 1e30}]', ".json"),
                                          ("n_layers\n1e30\n", ".csv")])
def test_table_numbers_are_exact_and_warn_nothing(cli, tmp_path, text, suffix):
    """A table row with "n_layers": 1e30 is the integer 10**30 in every format, with no numpy RuntimeWarning
    (the float cast to int64 wrapped around and warned)."""
    import warnings
    path = tmp_path / f"t{suffix}"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = cli(["sweep", "--base", "llama3-8b", "--table", path])
    assert r.code == 0 and r.out.splitlines()[1].startswith("1" + "0" * 30 + ","), (r.out, r.err)
