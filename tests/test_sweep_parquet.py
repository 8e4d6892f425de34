"""`Sweep.write_parquet` / `symllm sweep --format parquet`: pandas and pyarrow read back exactly the
integers of `Sweep.run()` (the exact in-process path), Python ints past int64 included (decimal128)."""
import os
import sys

import pytest

from symllm.errors import SymllmError
from symllm.studies.sweeps import Sweep

from .conftest import requires


def _grid(**options) -> Sweep:
    # 405B training FLOPs at seq 2**24 pass int64: run() gives Python ints for that column
    return Sweep("llama3.1-405b", {"n_layers": [1, 2, 126], "seq": [2048, 2**24], "dim": [16384, 16400]},
                 quantities=["params", "training_flops", "kv_cache"], chunk_size=4, **options)


def test_parquet_reads_back_run_exactly(tmp_path):
    """pyarrow and pandas read the file's rows as run()'s, int64 columns as int64, the wide one as
    decimals whose int() is the exact Python int; invalid points are dropped as in run()."""
    pq = requires("pyarrow.parquet")
    pd = requires("pandas")
    sw = _grid(where="params > 1e10")
    expected = sw.run()
    assert expected.columns["training_flops"].dtype == object and max(expected.columns["training_flops"]) >= 2**63
    assert expected.invalid > 0 and expected.filtered > 0
    result = sw.write(tmp_path / "g.parquet")
    assert (result.points, result.invalid, result.filtered) == (expected.points, expected.invalid, expected.filtered)
    table = pq.read_table(tmp_path / "g.parquet")
    assert table.column_names == sw.columns
    assert str(table.schema.field("params").type) == "int64"
    assert str(table.schema.field("training_flops").type) == "decimal128(38, 0)"
    for c in sw.columns:
        assert [int(v) for v in table.column(c).to_pylist()] == expected.columns[c].tolist()
    frame = pd.read_parquet(tmp_path / "g.parquet")
    assert str(frame["params"].dtype) == "int64"
    for c in sw.columns:
        assert [int(v) for v in frame[c]] == expected.columns[c].tolist()
    assert os.listdir(tmp_path) == ["g.parquet"]


def test_parquet_empty_and_float_column(tmp_path):
    """No rows gives a readable file with the schema; ffn_dim_multiplier stays the exact float."""
    pq = requires("pyarrow.parquet")
    sw = Sweep("llama3-8b", {"n_layers": [1, 2]}, where="params < 0")
    sw.write(tmp_path / "e.parquet")
    table = pq.read_table(tmp_path / "e.parquet")
    assert table.num_rows == 0 and table.column_names == sw.columns
    sw = Sweep("llama3-8b", {"ffn_dim_multiplier": [1.3, 0.7, 1.0 / 3]})
    sw.write(tmp_path / "f.pq")
    table = pq.read_table(tmp_path / "f.pq")
    for c in sw.columns:
        assert table.column(c).to_pylist() == sw.run().columns[c].tolist()


def test_cli_format_parquet(tmp_path, cli):
    """`symllm sweep --format parquet -o FILE` writes what run() computes; on stdout it is refused."""
    pq = requires("pyarrow.parquet")
    out = tmp_path / "grid.out"
    r = cli(["sweep", "--base", "llama3-8b", "--dim", "2048:4096:512", "--n-layers", "16,32",
             "--quantity", "params,training_flops", "--format", "parquet", "-o", out])
    assert r.code == 0, r.err
    expected = Sweep("llama3-8b", {"dim": range(2048, 4097, 512), "n_layers": [16, 32]},
                     quantities=["params", "training_flops"]).run()
    table = pq.read_table(out)
    for c in expected.columns:
        assert [int(v) for v in table.column(c).to_pylist()] == expected.columns[c].tolist()
    r = cli(["sweep", "--base", "llama3-8b", "--dim", "2048", "--format", "parquet"])
    assert r.code != 0 and r.out == ""
    assert "parquet needs a file (-o FILE)" in r.err and len(r.err.strip().splitlines()) == 1


def test_parquet_refusals_leave_no_file(tmp_path, monkeypatch):
    """Without pyarrow, and for non-whole byte counts (int4), one line and the target untouched."""
    requires("pyarrow")
    target = tmp_path / "keep.parquet"
    target.write_bytes(b"old")
    sw = Sweep("llama2-7b", {"n_layers": [1, 2]}, quantities=["weights"],
               workload={"dtype": "int4", "group_size": 100})
    assert any(v.denominator != 1 for v in sw.run().columns["weights"])  # the exact path has fractions
    with pytest.raises(SymllmError, match="^parquet: weights has values that are not whole"):
        sw.write(target)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(SymllmError) as e:
        Sweep("llama2-7b", {"n_layers": [1]}).write(target)
    assert str(e.value) == "parquet: pyarrow is not installed (pip install 'symllm[parquet]')"
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["keep.parquet"]


def test_parquet_refuses_more_than_38_digits(tmp_path):
    """A value past decimal128(38, 0) is refused with one line (run() still has it exactly)."""
    requires("pyarrow")
    sw = Sweep("llama2-7b", {"dim": [2**44], "seq": [2**30]}, quantities=["training_flops"])
    assert len(str(sw.run().columns["training_flops"][0])) > 38
    with pytest.raises(SymllmError, match="^parquet: training_flops has a value of more than 38 digits"):
        sw.write(tmp_path / "big.parquet")
    assert os.listdir(tmp_path) == []


def test_parquet_tables_read_back(tmp_path, cli, monkeypatch):
    """read_table (a sweep's --table, plot sweep) reads Parquet as pyarrow does: a sweep's own file (the
    wide column's decimals as the exact ints), and a table of configs written by pyarrow itself (int64,
    decimal128, float64, a string base column) as the same numbers as the CSV written by hand, which the
    sweep then runs alike. Bytes that are not Parquet, an empty cell and a missing pyarrow are one line
    each, a NaN as in CSV. (A .parquet file was read as UTF-8 text: symllm wrote Parquet it could not read back.)"""
    import decimal

    from symllm.studies.tables import read_table
    pa = requires("pyarrow")
    pq = requires("pyarrow.parquet")
    sw = _grid()
    sw.write(tmp_path / "g.parquet")
    theirs = [{k: int(v) for k, v in row.items()} for row in pq.read_table(tmp_path / "g.parquet").to_pylist()]
    assert max(row["training_flops"] for row in theirs) >= 2**63
    ours = read_table(tmp_path / "g.parquet")
    assert ours == theirs and all(type(v) is int for row in ours for v in row.values())
    assert {k: v.tolist() for k, v in read_table(tmp_path / "g.parquet", columns=True).items()} == {
        c: [row[c] for row in theirs] for c in sw.columns}
    configs = pa.table({"base": ["llama3-8b", "llama3-8b"], "dim": pa.array([2048, 4096], pa.int64()),
                        "n_layers": pa.array([decimal.Decimal(16), decimal.Decimal(32)], pa.decimal128(38, 0)),
                        "ffn_dim_multiplier": pa.array([1.3, 1.5], pa.float64())})
    pq.write_table(configs, tmp_path / "configs.pq")
    (tmp_path / "configs.csv").write_text("base,dim,n_layers,ffn_dim_multiplier\n"
                                          "llama3-8b,2048,16,1.3\nllama3-8b,4096,32,1.5\n")
    expected = [{"base": "llama3-8b", "dim": 2048, "n_layers": 16, "ffn_dim_multiplier": 1.3},
                {"base": "llama3-8b", "dim": 4096, "n_layers": 32, "ffn_dim_multiplier": 1.5}]
    assert read_table(tmp_path / "configs.pq") == expected == read_table(tmp_path / "configs.csv")
    assert type(read_table(tmp_path / "configs.pq")[0]["n_layers"]) is int
    runs = [cli(["sweep", "--table", tmp_path / name, "--quantity", "params"]) for name in ("configs.pq", "configs.csv")]
    assert runs[0].code == 0 and runs[0].out == runs[1].out and runs[0].out.count("\n") == 3
    (tmp_path / "text.parquet").write_text("dim\n2048\n")
    pq.write_table(pa.table({"dim": pa.array([2048, None], pa.int64())}), tmp_path / "hole.parquet")
    with pytest.raises(SymllmError, match=r"^table: '.*text\.parquet' is not a Parquet file symllm can read \(.+\)$"):
        read_table(tmp_path / "text.parquet")
    with pytest.raises(SymllmError, match=r"^dim: expected a number in every table row, got an empty cell$"):
        read_table(tmp_path / "hole.parquet")
    pq.write_table(pa.table({"dim": pa.array([2048.0, float("nan")], pa.float64())}), tmp_path / "nan.parquet")
    with pytest.raises(SymllmError, match=r"^dim: expected a finite number, got nan$"):  # as CSV's 'nan'
        read_table(tmp_path / "nan.parquet")
    r = cli(["sweep", "--base", "llama3-8b", "--table", tmp_path / "text.parquet"])
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and "is not a Parquet file" in r.err
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(SymllmError, match=r"^parquet: pyarrow is not installed \(pip install 'symllm\[parquet\]'\)$"):
        read_table(tmp_path / "g.parquet")
