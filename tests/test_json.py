"""Machine-readable output is numbers (docs/json.md): every JSON door's real output validates against the
shipped schema (symllm/output.schema.json), exact integers are JSON integers, every other number a JSON
number, a number past a double's range null; and a config printed by count --json reads back, edited or not."""
import json
import sys
from fractions import Fraction

import pytest

from symllm.files import JSON_SCHEMA

from .conftest import requires


def _strict(text: str):
    """JSON as a strict reader takes it: NaN and Infinity (Python's extensions) refused, integers of any
    length."""
    def refuse(name):
        raise AssertionError(f"{name} is not JSON")
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return json.loads(text, parse_constant=refuse)
    finally:
        sys.set_int_max_str_digits(limit)


@pytest.fixture(scope="module")
def validate():
    """``validate(instance, door)``: raises unless ``instance`` is valid against the schema's ``$defs/door``
    (jsonschema, which the test extra brings through nbformat)."""
    jsonschema = requires("jsonschema")
    schema = json.loads(JSON_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)

    def check(instance, door: str) -> None:
        jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{door}"}).validate(instance)
        jsonschema.Draft202012Validator(schema).validate(instance)  # the whole schema (anyOf the doors) too
    return check


def _no_strings_for_numbers(value, path="") -> None:
    """No number is written as text ("p/q", "1e10"): a string is a name, never something float() reads."""
    if isinstance(value, dict):
        for k, v in value.items():
            _no_strings_for_numbers(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_strings_for_numbers(v, f"{path}/{i}")
    elif isinstance(value, str) and not path.endswith(("/name", "/description", "/source", "/title", "/note")):
        try:
            Fraction(value)
        except ValueError:
            return
        pytest.fail(f"{path}: the number {value!r} written as a string")


COUNT_DOORS = [
    ["count", "llama3.1-8b", "--json"],
    ["count", "llama3.1-8b", "--json", "--gpu", "h100-sxm", "--serve", "--weight-format", "awq"],
    ["count", "llama3.1-70b", "--json", "--gpu", "h100-sxm", "--tp", "2", "--tokens", "1e9", "--price", "2",
     "--lora-rank", "8"],
    ["count", "gemma-2-2b", "--json", "--dtype", "int4", "--seq", "4k"],
    ["count", "mixtral-8x7b", "--json", "--gpu", "h100-sxm", "--serve", "--gpu-memory-utilization", "0.85"],
    ["count", "llama3.1-8b", "--json", "--gpu", "h100-sxm", "--seq", "2000", "--gen", "200", "--serve",
     "--concurrency", "16"],
    # a tp_layout at the top and in serving, beside DeepSeek-V4's cache layout and indexer names
    ["count", "deepseek-v4-flash-base", "--json", "--gpu", "h200", "--tp", "8", "--serve"],
]


@pytest.mark.parametrize("argv", COUNT_DOORS, ids=lambda a: " ".join(a[1:3]) + (" ..." if len(a) > 3 else ""))
def test_count_json_validates(cli, validate, argv):
    """count --json, plain, with --serve, a layout, LoRA, int4 and an MoE model: valid against $defs/count,
    integers for parameters and FLOPs, no number written as a string."""
    r = cli(argv)
    assert r.code == 0, r.err
    data = _strict(r.out)
    validate(data, "count")
    _no_strings_for_numbers(data)
    for group in ("params", "flops"):
        assert all(type(v) is int for v in data[group].values()), group


def test_serving_shares_are_numbers(cli):
    """The issue's three strings are numbers: gpu_memory_utilization 9/10 is 0.9, max_concurrency is the KV
    tokens over the context (Llama-3.1-8B, 131,072 KV bytes a token: 2 · 32 layers · 8 heads · 128 · 2 bytes),
    AWQ's weights the double nearest their exact bytes."""
    r = cli(["count", "llama3.1-8b", "--json", "--gpu", "h100-sxm", "--serve", "--weight-format", "awq"])
    data = _strict(r.out)
    s = data["serving"]
    assert s["gpu_memory_utilization"] == 0.9 and type(s["gpu_memory_utilization"]) is float
    assert s["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert s["kv_tokens"] == s["blocks"] * 16  # vLLM's blocks of 16 tokens
    assert type(s["max_concurrency"]) is float and s["max_concurrency"] == s["kv_tokens"] / 2048
    bits = data["weight_format"]["bits_per_weight"]
    assert type(bits) is float and bits == float(Fraction(8 * data["weight_format"]["bytes"], 8030261248))


def test_a_time_past_a_double_is_null(cli, validate):
    """--seq of 300 digits: the roofline prefill time (about 1e295 · 1e10 / 1e15 s) has no double: null, and
    the output still validates; the huge token counts stay exact integers."""
    seq = "9" * 300
    r = cli(["count", "llama3.1-8b", "--json", "--gpu", "h100-sxm", "--seq", seq])
    assert r.code == 0, r.err
    data = _strict(r.out)
    validate(data, "count")
    assert data["time"]["prefill_s"] is None
    assert data["workload"]["seq"] == int(seq) and type(data["flops"]["prefill"]) is int


def test_comparison_plan_presets_validate(cli, validate):
    """count A B --json, plan --json (serving and training) and presets --json: valid against their $defs."""
    r = cli(["count", "llama3.1-8b", "llama2-7b", "--json", "--dtype", "int4"])
    assert r.code == 0, r.err
    validate(_strict(r.out), "comparison")
    for extra in (["--gen", "64"], ["--train", "--tokens", "15T"]):  # serving with --gen: rows under load too
        r = cli(["plan", "llama3.1-8b", "--gpus", "2xh100-sxm", "--json", "--top", "3", *extra])
        assert r.code == 0, r.err
        data = _strict(r.out)
        validate(data, "plan")
        _no_strings_for_numbers(data)
        assert data["rows"] and all(type(row["peak"]) is int for row in data["rows"])
        assert all("load" in row for row in data["rows"]) != ("--train" in extra)
    r = cli(["presets", "--json"])
    assert r.code == 0, r.err
    presets = _strict(r.out)
    validate(presets, "presets")
    by_name = {p["name"]: p for p in presets}
    assert by_name["llama3.1-8b"]["params"] == 8030261248  # published (tests/data/published_params.json)
    assert by_name["llama3.1-8b"]["hub"] == "meta-llama/Llama-3.1-8B"
    assert by_name["llama1-7b"]["hub"] is None  # Meta's LLaMA release: no Hub repository


def test_verify_json_validates(cli, validate):
    """verify --json of a config: each component's count beside torch's numel, valid against $defs/verify."""
    requires("torch")
    r = cli(["verify", "llama3.2-1b", "--json"])
    assert r.code == 0, r.err
    data = _strict(r.out)
    validate(data, "verify")
    assert data["agrees"] is True
    assert data["components"]["embedding"] == {"symllm": 128256 * 2048, "torch": 128256 * 2048}


def test_sweep_json_lines_validate(cli, validate, tmp_path):
    """A sweep's JSON lines, one base and several (a column one base lacks is null), with int4 bytes that are
    not whole: every line valid against $defs/sweep_row, the bytes a JSON number."""
    r = cli(["sweep", "--base", "llama2-7b", "--vocab-size", "3", "--dim", "2", "--n-heads", "1", "--n-layers",
             "1,2", "--quantity", "params,weights", "--dtype", "int4", "--format", "jsonl"])
    assert r.code == 0, r.err
    rows = [_strict(line) for line in r.out.splitlines()]
    for row in rows:
        validate(row, "sweep_row")
    assert rows[0]["weights"] == 25905 / 32  # 1570 · 33 / 64 (test_sweep.py's hand count): exact in binary
    out = tmp_path / "two.jsonl"
    r = cli(["sweep", "--base", "llama2-7b,llama3-8b", "--n-layers", "1", "--quantity", "params", "-o", out])
    assert r.code == 0, r.err
    rows = [_strict(line) for line in out.read_text().splitlines()]
    assert [row["base"] for row in rows] == ["llama2-7b", "llama3-8b"]
    for row in rows:
        validate(row, "sweep_row")


def test_the_schema_refuses_strings_and_allows_time_expected(cli, validate):
    """The schema has teeth: a "p/q" byte count, a float parameter count or a string share is invalid; and
    an expected-time group (time.expected, an object of numbers) is valid without a schema change."""
    jsonschema = requires("jsonschema")
    data = _strict(cli(["count", "llama3.1-8b", "--json", "--gpu", "h100-sxm", "--serve"]).out)
    for group, key, bad in (("memory", "weights", "44697547347904832/1230359"), ("params", "total", 8030261248.5),
                            ("serving", "max_concurrency", "15129/2048"), ("time", "mfu", "1")):
        broken = json.loads(json.dumps(data))
        broken[group][key] = bad
        with pytest.raises(jsonschema.ValidationError):
            validate(broken, "count")
    data["time"]["expected"] = {"prefill_s": 0.05, "decode_token_s": 0.0021, "efficiency": {"matmul": 0.7}}
    validate(data, "count")


@pytest.mark.parametrize("model, layers, expected", [
    # Llama-3.1-8B with 31 blocks: the published 8,030,261,248 less one block (attention 2·4096² + 2·4096·1024,
    # SwiGLU 3·4096·14336, two norms 2·4096: 218,112,000)
    ("llama3.1-8b", 31, 8030261248 - (2 * 4096 ** 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096)),
    # Mixtral-8x7B with 31 layers: the published 46,702,792,704 less one layer (attention as above, 8 experts
    # 8·3·4096·14336, router 4096·8, two norms)
    ("mixtral-8x7b", 31, 46702792704 - (2 * 4096 ** 2 + 2 * 4096 * 1024 + 8 * 3 * 4096 * 14336 + 4096 * 8
                                        + 2 * 4096)),
])
def test_printed_config_reads_back_edited(cli, tmp_path, model, layers, expected):
    """count --json's config, saved as a file, reads back as given (the same total), and with n_layers
    edited reads too, giving the hand count of the edited model."""
    data = _strict(cli(["count", model, "--json"]).out)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data["config"]))
    again = _strict(cli(["count", path, "--json"]).out)
    assert again["params"]["total"] == data["params"]["total"]
    path.write_text(json.dumps({**data["config"], "n_layers": layers}))
    r = cli(["count", path, "--json"])
    assert r.code == 0, r.err
    assert _strict(r.out)["params"]["total"] == expected


def test_layers_of_several_kinds_read_back(cli, tmp_path):
    """A model whose layers differ (Gemma 2: local and global layers alternating) prints its runs; saved,
    they read back as given (Gemma 2 2B: the published 2,024,517,888 non-embedding parameters, Gemma Team
    2024 Table 2, plus its tied 256,000 x 2,304 table), and an n_layers its runs do not hold is one line
    saying to edit them too."""
    data = _strict(cli(["count", "gemma-2-2b", "--json"]).out)
    runs = data["config"]["layers"]
    assert [run["window"] for run in runs[:2]] == ["sliding", None] and sum(run["count"] for run in runs) == 26
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data["config"]))
    assert _strict(cli(["count", path, "--json"]).out)["params"]["total"] == 2024517888 + 256000 * 2304
    path.write_text(json.dumps({**data["config"], "n_layers": 25}))
    r = cli(["count", path])
    assert r.code == 2 and r.err.count("\n") == 1 and "edit the groups' counts too" in r.err, r.err
