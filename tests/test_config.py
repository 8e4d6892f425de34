"""Config loading and bad input: a SymllmError in the API; one stderr line and exit 2 in the CLI."""
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import symllm
from symllm.arch.config import from_dict, from_hf, from_meta, load, preset_info
from symllm.arch.widths import meta_width

from .meta_formulas import meta_hidden_dim
from .strategies import any_configs, bad_configs, configs, edited_widths, hf_configs
from .test_family import _hf_counts

HF_8B = {  # meta-llama/Llama-3.1-8B config.json, the fields that matter
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False,
    "attention_bias": False, "mlp_bias": False, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "head_dim": 128,
}


def test_hf_and_meta_forms_of_llama31_8b_agree():
    """Llama 3.1 8B read from its HF config.json and from the preset (Meta's params.json form) agree."""
    assert symllm.params(from_hf(HF_8B))["total"] == symllm.params("llama3.1-8b")["total"] == 8_030_261_248


def test_hf_intermediate_size_is_never_rerounded():
    """An HF intermediate_size is d_ff as stated: Meta's multiple_of rounding is not applied to it."""
    raw = dict(HF_8B, intermediate_size=14000)  # not a multiple of anything Meta uses
    assert symllm.hidden_dim(from_hf(raw)) == 14000


def test_meta_vocab_minus_one_says_so_and_accepts_override(tmp_path, cli):
    """Meta's params.json with vocab_size -1 is an error that names the override (--vocab-size)."""
    raw = {"dim": 4096, "multiple_of": 256, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-06, "vocab_size": -1}
    with pytest.raises(symllm.SymllmError, match="vocab_size: -1"):
        from_meta(raw)
    assert symllm.params(from_meta(raw, vocab_size=32000))["total"] == 6_738_415_616
    path = tmp_path / "params.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", path])
    assert r.code == 2 and r.err.count("\n") == 1 and "--vocab-size" in r.err
    r = cli(["count", path, "--vocab-size", "32000", "--json"])
    assert r.code == 0 and json.loads(r.out)["params"]["total"] == 6_738_415_616


def test_unknown_preset_suggests_close_names():
    """A mistyped preset name suggests the close ones."""
    with pytest.raises(symllm.SymllmError, match="did you mean.*llama3.1-8b"):
        load("llama3.1-8")


@pytest.mark.parametrize("text", ["{", "[1, 2]", "", "null", '{"dim": }', '{"foo": 1}'])
def test_malformed_json(tmp_path, cli, text):
    """A file that is not a JSON object of config fields: a `config:` error, one CLI line and exit 2."""
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(symllm.SymllmError, match="^config: "):
        load(path)
    r = cli(["count", path])
    assert (r.code, r.out) == (2, "") and r.err.startswith("symllm: error: config: ") and r.err.count("\n") == 1


def test_odd_head_dim_is_rejected():
    """RoPE rotates pairs, so an odd head_dim is refused."""
    with pytest.raises(symllm.SymllmError, match="head_dim: 3 is odd"):
        symllm.ModelConfig(vocab_size=10, dim=6, n_layers=1, n_heads=2)


def test_missing_file(cli):
    """A config path that does not exist: one line saying it cannot be read, exit 2."""
    r = cli(["count", "/no/such/dir/config.json"])
    assert r.code == 2 and "cannot read" in r.err and r.err.count("\n") == 1


@given(bad_configs())
def test_bad_configs_raise_one_error_naming_the_field(case):
    """Any config with one bad field raises SymllmError naming that field, never another exception."""
    raw, fmt, field = case
    with pytest.raises(symllm.SymllmError) as info:
        from_dict(raw)
    assert str(info.value).startswith(f"{field}:"), (str(info.value), field)
    assert "\n" not in str(info.value)


# the cli fixture drains capsys around every call, so one instance serves every Hypothesis example
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=bad_configs())
def test_cli_bad_configs_one_line_exit_2(cli, case):
    """The CLI prints exactly one line on stderr naming the field, exits 2, and prints nothing on stdout."""
    raw, fmt, field = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("config.json" if fmt == "hf" else "params.json")
        path.write_text(json.dumps(raw))
        r = cli(["count", path])
    assert r.code == 2 and r.out == ""
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"symllm: error: {field}:"), lines


def test_replace_derives_again_what_was_derived():
    """Changing dim and n_heads re-derives head_dim and n_kv_heads unless they were given."""
    cfg = load("llama2-7b").replace(dim=8192, n_heads=64)
    assert (cfg.head_dim, cfg.n_kv_heads) == (128, 64)
    stated = symllm.ModelConfig(vocab_size=10, dim=64, n_layers=1, n_heads=4, n_kv_heads=2, head_dim=8)
    assert (stated.replace(dim=128).head_dim, stated.replace(n_heads=8).n_kv_heads) == (8, 2)


def test_non_utf8_config_file(tmp_path, cli):
    """A config file that is not UTF-8: one line saying so, exit 2."""
    path = tmp_path / "config.json"
    path.write_bytes(b'{"dim": \xff\xfe}')
    r = cli(["count", path])
    assert (r.code, r.out) == (2, "") and "not UTF-8" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize("field,value", [("ffn_dim_multiplier", 1e308), ("ffn_dim_multiplier", float("nan")),
                                         ("norm_eps", "x"), ("rope_theta", -1.0), ("rope_theta", True)])
def test_bad_float_fields(tmp_path, cli, field, value):
    """Float fields that overflow, are NaN, negative or not numbers: one line naming the field, exit 2."""
    raw = {"dim": 64, "n_layers": 1, "n_heads": 4, "vocab_size": 10, field: value}
    path = tmp_path / "params.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", path])
    assert (r.code, r.out) == (2, "") and r.err.startswith(f"symllm: error: {field}:") and r.err.count("\n") == 1


@given(st.one_of(st.binary(max_size=40), st.text(max_size=40).map(str.encode)))
def test_arbitrary_bytes_as_json(data):
    """Any bytes at all (JSON-ish text or not UTF-8) in a config file give a SymllmError or a valid config."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_bytes(data)
        try:
            load(path)
        except symllm.SymllmError as e:
            assert "\n" not in str(e)


# --- hardening (issue 14): nonsense that used to be accepted, overflow that used to be a traceback ---

def _write(tmp_path, raw, name="config.json"):
    path = tmp_path / name
    path.write_text(raw if isinstance(raw, str) else json.dumps(raw))
    return path


def test_intermediate_size_null_is_an_error(tmp_path, cli):
    """"intermediate_size": null is refused, not silently replaced by Meta's rounding."""
    with pytest.raises(symllm.SymllmError, match=r"^intermediate_size: expected a positive integer, got None$"):
        from_hf(dict(HF_8B, intermediate_size=None))
    r = cli(["count", _write(tmp_path, dict(HF_8B, intermediate_size=None))])
    assert (r.code, r.out) == (2, "") and r.err.startswith("symllm: error: intermediate_size:") and r.err.count("\n") == 1


@pytest.mark.parametrize("value", [1e30, 4096.5, 2.0**60, -4096.0, float("inf")])
def test_float_sizes_must_be_exact_reasonable_integers(tmp_path, cli, value):
    """A float where an integer belongs is refused unless exactly integral and at most 2**53: 1e30 is
    not read as 1000000000000000019884624838656."""
    with pytest.raises(symllm.SymllmError, match=r"^hidden_size: expected a positive integer"):
        from_hf(dict(HF_8B, hidden_size=value))
    r = cli(["count", _write(tmp_path, json.dumps(dict(HF_8B, hidden_size=value)))])
    assert r.code == 2 and r.err.startswith("symllm: error: hidden_size:") and r.err.count("\n") == 1


def test_integral_float_size_is_read_as_transformers_and_meta_read_it():
    """A config.json's 4096.0 is refused, as transformers 5's strict LlamaConfig refuses it; a Meta
    params.json's 4096.0 is the integer 4096 (ModelArgs takes it; some tools write integral floats)."""
    from .conftest import requires
    transformers = requires("transformers")
    with pytest.raises(Exception, match="expected int, got float"):
        transformers.LlamaConfig(**dict(HF_8B, hidden_size=4096.0))
    with pytest.raises(symllm.SymllmError, match=r"^hidden_size: expected a positive integer, got 4096.0$"):
        from_hf(dict(HF_8B, hidden_size=4096.0))
    meta = preset_info("llama3.1-8b")["config"]  # Meta's params.json
    assert symllm.params(from_meta(dict(meta, dim=4096.0)))["total"] == 8_030_261_248


@pytest.mark.parametrize("field", ["rope_theta", "ffn_dim_multiplier", "norm_eps"])
def test_huge_integers_in_float_fields_are_one_line(tmp_path, cli, field):
    """A float field holding an integer beyond a double's range is one error line, not OverflowError."""
    path = _write(tmp_path, '{"dim": 64, "n_layers": 1, "n_heads": 4, "vocab_size": 10, "%s": %s}' % (field, "9" * 400),
                  "params.json")
    r = cli(["count", path])
    assert (r.code, r.out) == (2, "") and r.err.startswith(f"symllm: error: {field}:") and r.err.count("\n") == 1
    assert len(r.err) < 200


@pytest.mark.parametrize("text", ['{"dim": %s}' % ("9" * 5000), "[" * 5000 + "]" * 5000])
def test_unreadable_json_numbers_and_nesting_are_one_line(tmp_path, cli, text):
    """A JSON integer over Python's 4,300 digits, or nesting 5,000 deep: one `config:` line, exit 2."""
    r = cli(["count", _write(tmp_path, text)])
    assert (r.code, r.out) == (2, "") and r.err.startswith("symllm: error: config: ") and r.err.count("\n") == 1


def test_meta_params_json_typo_is_refused_with_the_close_match(tmp_path, cli):
    """A misspelt key in a Meta params.json (n_kv_head) is refused naming it and the key it resembles,
    instead of being ignored (which silently gave MHA)."""
    raw = {"dim": 4096, "n_layers": 32, "n_heads": 32, "n_kv_head": 8, "vocab_size": 128256,
           "multiple_of": 1024, "ffn_dim_multiplier": 1.3}
    with pytest.raises(symllm.SymllmError, match=r"^n_kv_head: unknown key.*did you mean 'n_kv_heads'\?$"):
        from_meta(raw)
    r = cli(["count", _write(tmp_path, raw, "params.json")])
    assert (r.code, r.out) == (2, "") and "n_kv_heads" in r.err and r.err.count("\n") == 1


def test_meta_head_dim_and_hidden_dim_are_honoured(reference):
    """head_dim and hidden_dim stated in a Meta params.json are used, as the reference model built from
    the same fields (not through symllm's config reader) uses them."""
    from types import SimpleNamespace
    raw = {"dim": 256, "n_layers": 2, "n_heads": 8, "n_kv_heads": 2, "head_dim": 64, "hidden_dim": 1000,
           "vocab_size": 300, "multiple_of": 256}
    expected = reference.count(reference.build(SimpleNamespace(**raw), device="meta"))
    ours = symllm.params(from_meta(raw))
    assert {k: ours[k] for k in expected} == expected
    assert ours["block/feed_forward/w1"] == 2 * 256 * 1000 and ours["block/attention/wq"] == 2 * 256 * 8 * 64


# --- round trips: count --json's "config" reads back (issue 24 item 4) ---

def _read_back(cfg) -> "symllm.ModelConfig":
    """``cfg`` as ``symllm count --json`` prints its "config" (resolved_config), through JSON, read back."""
    return from_dict(json.loads(json.dumps(symllm.resolved_config(cfg))))


def _same_numbers(cfg, back) -> None:
    """Two configs give the same numbers: the same structure (every formula) and the same value of every
    symbol (every number of every formula), and, as a spot check, the same parameter counts."""
    a, b = symllm.spec(cfg), symllm.spec(back)
    assert b.shape() == a.shape() and b.values() == a.values()
    assert symllm.params(back) == symllm.params(cfg)


def test_every_preset_reads_back_from_count_json():
    """Each preset's count --json "config" read back as a config file is the same model."""
    for name in symllm.preset_names():
        back = _read_back(name)
        assert back.name == name
        _same_numbers(name, back)


@given(any_configs())
def test_any_config_reads_back_from_count_json(cfg):
    """Any config (Meta's rounding, a stated d_ff, biases, QK-norm, MoE layouts, HF model types) read
    back from its count --json "config" gives the same numbers."""
    _same_numbers(cfg, _read_back(cfg))


@given(hf_configs())
def test_read_back_config_equals_transformers_numel(raw):
    """Spot check: a drawn HF config.json, through count --json's "config" and back, counts what
    transformers' own class built from the original config.json holds (numel on the meta device)."""
    assert symllm.params(_read_back(from_hf(raw)))["total"] == _hf_counts(raw)["total"]


@given(configs(stated_hidden=False))
def test_meta_width_is_metas_code(cfg):
    """meta_width (what an edited hidden_dim is compared with) is Meta's FeedForward arithmetic
    (tests/meta_formulas.py) and the width the spec's closed form derives."""
    f = cfg.ffn_dim_multiplier
    width = meta_hidden_dim(cfg.dim, cfg.multiple_of, f)
    assert meta_width(cfg.dim, cfg.multiple_of, f) == width == symllm.spec(cfg).hidden_dim


@given(edited_widths())
def test_edited_hidden_dim_is_used_or_refused(pair):
    """An edited "hidden_dim" in count --json's config (Meta's rounding derived it) is never ignored: the
    width Meta's rounding gives reads back as before; another is refused in one line naming hidden_dim
    until hidden_dim_rule is dropped, and then counted: the feed-forward's w1, w2, w3 (and biases) grow by
    L·Δ·(3d + 2·bias) parameters, by hand."""
    cfg, width = pair
    saved = json.loads(json.dumps(symllm.resolved_config(cfg)))
    old = saved["hidden_dim"]
    edited = {**saved, "hidden_dim": width}
    if width == old:
        _same_numbers(cfg, from_dict(edited))
        return
    with pytest.raises(symllm.SymllmError) as info:
        from_dict(edited)
    assert str(info.value) == (f"hidden_dim: {width} is not Meta's rounding ({old}); "
                               "drop hidden_dim_rule to use it")
    back = from_dict({k: v for k, v in edited.items() if k != "hidden_dim_rule"})
    assert back.hidden_dim == symllm.spec(back).hidden_dim == width
    bias = 2 if cfg.mlp_bias else 0
    grow = cfg.n_layers * (width - old) * (3 * cfg.dim + bias)
    assert symllm.params(back)["total"] == symllm.params(cfg)["total"] + grow


def test_edited_hidden_dim_on_the_command_line(cli, tmp_path):
    """The same through symllm count: the refusal is one line on stderr, exit 2; without the rule the file
    counts Llama-3-8B with d_ff 16384 (2,048 more a layer than 14,336: 32·2048·3·4096 parameters more)."""
    saved = json.loads(cli(["count", "llama3-8b", "--json"]).out)["config"]
    path = tmp_path / "saved.json"
    path.write_text(json.dumps({**saved, "hidden_dim": 16384}))
    r = cli(["count", str(path)])
    assert (r.code, r.out) == (2, "")
    assert r.err == "symllm: error: hidden_dim: 16384 is not Meta's rounding (14336); drop hidden_dim_rule to use it\n"
    del saved["hidden_dim_rule"]
    path.write_text(json.dumps({**saved, "hidden_dim": 16384}))
    r = cli(["count", str(path), "--json"])
    assert r.code == 0, r.err
    from .conftest import PUBLISHED
    assert json.loads(r.out)["params"]["total"] == PUBLISHED["llama3-8b"]["total"] + 32 * 2048 * 3 * 4096


def test_symllm_config_refuses_unknown_keys_and_mismatches():
    """A key that is not a field, or a derived field contradicting the others, is one line naming it."""
    good = symllm.resolved_config("llama3.2-1b")
    with pytest.raises(symllm.SymllmError, match=r"^tie_embedding: unknown key in a symllm config; did you mean"):
        from_dict({**{k: v for k, v in good.items() if k != "tie_embeddings"}, "tie_embedding": True})
    with pytest.raises(symllm.SymllmError, match=r"^attention: 'MHA' does not match the heads"):
        from_dict({**good, "attention": "MHA"})
    with pytest.raises(symllm.SymllmError, match=r"^hidden_dim_rule: 'explicit' does not match"):
        from_dict({**good, "hidden_dim": None, "hidden_dim_rule": "explicit"})
    with pytest.raises(symllm.SymllmError, match=r"^n_heads: missing in a symllm config$"):
        from_dict({k: v for k, v in good.items() if k != "n_heads"})
    with pytest.raises(symllm.SymllmError, match=r"^name: expected a string, got 5$"):
        from_dict({**good, "name": 5})


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_every_flag_of_a_model_config_must_be_a_boolean(value):
    """Every field of ModelConfig whose default is True or False (read from the defaults, not from the
    annotations validate.booleans reads) refuses a non-bool in one line naming it, the MoE's and the recurrent
    layers' flags too; each is set alone on a small dense config."""
    from dataclasses import fields
    flags = [f.name for f in fields(symllm.ModelConfig) if isinstance(f.default, bool)]
    assert {"tie_embeddings", "moe_bias", "peft_fused_experts", "conv_bias", "delta_split"} <= set(flags)
    assert len(flags) == 22  # ModelConfig's flags, counted by hand
    for name in flags:
        with pytest.raises(symllm.SymllmError) as refused:
            symllm.ModelConfig(vocab_size=10, dim=64, n_layers=1, n_heads=4, **{name: value})
        assert str(refused.value) == f"{name}: expected True or False, got {value!r}"
