"""`Sweep.write_parquet` / `symllm sweep --format parquet`: pandas and pyarrow read back exactly the
integers of `Sweep.run()` (the exact in-process path), Python ints past int64 included (decimal128)."""
import os
import sys

import pytest

from symllm.errors import SymllmError
from symllm.numbers.sweeps import Sweep

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
