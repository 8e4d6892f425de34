"""Real artifacts, offline (symllm.arch.hub, symllm.costs.checkpoints), against files the real tools write:

* tiny ``LlamaForCausalLM``, ``Qwen2ForCausalLM`` (q/k/v biases) and ``MixtralForCausalLM`` (per-expert
  ``w1/w2/w3``) saved by transformers' ``save_pretrained`` as sharded safetensors (a small
  ``max_shard_size``), laid out as a Hugging Face cache (``models--org--name/refs/main``, ``snapshots/<commit>``
  with links into ``blobs/``) under ``tmp_path`` with ``HF_HUB_CACHE`` / ``HF_HOME`` pointed at it;
  expected names, shapes and bytes are torch's own ``state_dict()``;
* a GGUF file written by ``gguf.GGUFWriter`` (Q8_0 tensors by ``gguf.quants.quantize``), read back with
  ``gguf.GGUFReader``;
* AWQ, GPTQ and FP8 (128x128 block scales) checkpoints' tensors by hand from their packers' layouts
  (:data:`QUANTIZED_LAYOUTS`): no packer runs on this CPU;
* malformed headers, lengths past the file, links out of the folder: one line, exit 2.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given

from .conftest import requires
from .strategies import checkpoint_headers, hf_configs

torch = requires("torch")
transformers = requires("transformers")
gguf = requires("gguf")

TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2)


def _save(tmp: Path, cls, config, **kw) -> tuple[Path, dict]:
    """save_pretrained of a tiny model (bf16, sharded); returns the folder and torch's name -> (dtype, shape, bytes)."""
    torch.manual_seed(0)
    model = cls(config).to(torch.bfloat16)
    model.save_pretrained(tmp, max_shard_size="20KB", **kw)
    sd = model.state_dict()
    if getattr(config, "tie_word_embeddings", False):
        sd.pop("lm_head.weight", None)
    return tmp, {k: ("BF16", list(v.shape), v.numel() * v.element_size()) for k, v in sd.items()}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The three families, saved once per module."""
    out = {}
    for name, cls, cfg in (
            ("llama", transformers.LlamaForCausalLM, transformers.LlamaConfig(**TINY)),
            ("qwen2", transformers.Qwen2ForCausalLM, transformers.Qwen2Config(**TINY)),
            ("mixtral", transformers.MixtralForCausalLM,
             transformers.MixtralConfig(**TINY, num_local_experts=3, num_experts_per_tok=2))):
        out[name] = _save(tmp_path_factory.mktemp(name), cls, cfg)
    return out


def _as_cache(root: Path, repo: str, folder: Path, commit: str = "0" * 40) -> Path:
    """``folder``'s files as the Hugging Face cache holds them: blobs, links from the snapshot, refs/main."""
    repo_dir = root / f"models--{repo.replace('/', '--')}"
    snap = repo_dir / "snapshots" / commit
    (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    for i, f in enumerate(sorted(folder.iterdir())):
        blob = repo_dir / "blobs" / f"blob{i}"
        shutil.copy(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    return snap


@pytest.mark.parametrize("family", ["llama", "qwen2", "mixtral"])
def test_verify_and_count_a_saved_checkpoint(saved, family, cli):
    """verify: every tensor of a save_pretrained checkpoint (sharded through its index, whose weight_map
    transformers wrote) agrees, exit 0; count --json: the checkpoint's bytes are torch's (numel × element
    size over the state dict; transformers 5 holds Mixtral's experts fused and saves them per expert) and
    equal the bf16 formula; the parameters are torch's numel."""
    folder, torch_tensors = saved[family]
    assert len(list(folder.glob("*.safetensors"))) > 1  # sharded
    written = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    r = cli(["verify", folder])
    assert r.code == 0, r.out + r.err
    assert f"{len(written)} tensors" in r.out and "agrees with the component tree" in r.out
    r = cli(["count", folder, "--json"])
    ck = json.loads(r.out)["checkpoint"]
    total = sum(b for _, _, b in torch_tensors.values())
    assert ck["bytes"] == ck["formula_bytes"] == total and ck["weight_format"] == "bf16"
    assert json.loads(r.out)["params"]["total"] == total // 2


def test_hub_id_found_in_the_local_cache(saved, tmp_path, monkeypatch, cli):
    """A Hub id resolves through HF_HUB_CACHE, through HF_HOME/hub and through ~/.cache/huggingface/hub
    (XDG_CACHE_HOME), following refs/main to the snapshot whose files link into blobs/; count and
    verify read it; an id not in the cache is one line naming where symllm looked, exit 2."""
    folder, torch_tensors = saved["llama"]
    for env in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(env, raising=False)
    for env, sub in (("HF_HUB_CACHE", ""), ("HF_HOME", "hub"), ("XDG_CACHE_HOME", "huggingface/hub")):
        base = tmp_path / env
        _as_cache(base / sub if sub else base, "org/tiny-llama", folder)
        monkeypatch.setenv(env, str(base))
        r = cli(["count", "org/tiny-llama", "--json"])
        assert r.code == 0, r.err
        assert json.loads(r.out)["params"]["total"] == sum(b for _, _, b in torch_tensors.values()) // 2
        assert json.loads(r.out)["model"] == "tiny-llama"
        assert cli(["verify", "org/tiny-llama"]).code == 0
        monkeypatch.delenv(env)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "HF_HUB_CACHE"))
    r = cli(["count", "org/absent"])
    assert r.code == 2 and len(r.err.splitlines()) == 1
    assert "nor in the HF cache" in r.err and "models--org--absent" in r.err


def test_hub_lookup_needs_no_network_module(saved, tmp_path):
    """`symllm count org/name` from the cache imports neither huggingface_hub nor transformers."""
    _as_cache(tmp_path, "org/tiny", saved["llama"][0])
    code = ("import sys; from symllm.cli import main; rc = main(['count', 'org/tiny']); "
            "print(rc, sorted(m for m in ('huggingface_hub', 'transformers', 'requests') if m in sys.modules))")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr


def _rewrite(folder: Path, dest: Path, change) -> Path:
    """A copy of a saved checkpoint with its config.json or one shard changed by ``change(name, data)``."""
    shutil.copytree(folder, dest)
    for f in sorted(dest.iterdir()):
        change(f)
    return dest


def _shard_with(dest: Path, name: str, drop: bool = False, add: str | None = None) -> None:
    """Rewrite the shard holding tensor ``name`` without it, or with an extra tensor ``add``, index too."""
    from safetensors.torch import load_file, save_file
    index_path = dest / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    shard = dest / index["weight_map"][name]
    tensors = load_file(shard)
    if drop:
        del tensors[name], index["weight_map"][name]
    if add:
        tensors[add] = torch.zeros(2, dtype=torch.bfloat16)
        index["weight_map"][add] = shard.name
    save_file(tensors, shard, metadata={"format": "pt"})
    index_path.write_text(json.dumps(index))


def test_verify_names_the_first_difference(saved, tmp_path, cli):
    """Each kind of difference is one line naming the tensor, exit 1: a tensor missing, one unexpected,
    a shape the config does not give (its intermediate_size changed), a dtype it does not name."""
    folder, _ = saved["llama"]

    def config(**changes):
        def change(f):
            if f.name == "config.json":
                f.write_text(json.dumps({**json.loads(f.read_text()), **changes}))
        return change

    cases = {
        "shape": (config(intermediate_size=40),
                  "wrong shape: model.layers.0.mlp.gate_proj.weight is [48, 32], the config says [40, 32]"),
        "dtype": (config(dtype="float16"),
                  "wrong dtype: model.embed_tokens.weight is BF16, the config says F16"),
    }
    for key, (change, line) in cases.items():
        r = cli(["verify", _rewrite(folder, tmp_path / key, change)])
        assert r.code == 1 and line in r.out.replace("\n  ", " "), (key, r.out)
    missing = _rewrite(folder, tmp_path / "missing", lambda f: None)
    _shard_with(missing, "model.layers.1.self_attn.v_proj.weight", drop=True)
    r = cli(["verify", missing])
    assert r.code == 1 and "missing: model.layers.1.self_attn.v_proj.weight (BF16 [16, 32])" in r.out
    extra = _rewrite(folder, tmp_path / "extra", lambda f: None)
    _shard_with(extra, "model.norm.weight", add="model.layers.0.extra.weight")
    r = cli(["verify", extra])
    assert r.code == 1 and "unexpected: model.layers.0.extra.weight (BF16 [2])" in r.out


def _gguf_file(path: Path, *, v_type=None) -> Path:
    """A tiny llama GGUF (file type Q8_0): 2-D weights Q8_0 (attn_v in ``v_type`` when given), norms F32."""
    q8 = gguf.GGMLQuantizationType.Q8_0
    w = gguf.GGUFWriter(str(path), "llama")
    d, layers, heads, kv, ff, vocab = 64, 2, 4, 2, 96, 32
    w.add_embedding_length(d), w.add_block_count(layers), w.add_head_count(heads), w.add_head_count_kv(kv)
    w.add_feed_forward_length(ff), w.add_context_length(64), w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_token_list([f"t{i}" for i in range(vocab)])
    rng = __import__("numpy").random.default_rng(0)

    def put(name, shape, kind=q8):
        data = rng.random(shape, dtype="float32")
        if kind == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, gguf.quants.quantize(data, kind), raw_dtype=kind)
    put("token_embd.weight", (vocab, d))
    for i in range(layers):
        put(f"blk.{i}.attn_norm.weight", (d,), gguf.GGMLQuantizationType.F32)
        for n, shape in (("attn_q", (d, d)), ("attn_k", (kv * 16, d)), ("attn_v", (kv * 16, d)),
                         ("attn_output", (d, d)), ("ffn_gate", (ff, d)), ("ffn_up", (ff, d)), ("ffn_down", (d, ff))):
            put(f"blk.{i}.{n}.weight", shape, v_type if n == "attn_v" and v_type is not None else q8)
        put(f"blk.{i}.ffn_norm.weight", (d,), gguf.GGMLQuantizationType.F32)
    put("output_norm.weight", (d,), gguf.GGMLQuantizationType.F32)
    put("output.weight", (vocab, d))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    return path


def test_gguf_file_verified_and_counted(tmp_path, cli):
    """A GGUFWriter file: its config is read from its metadata, every tensor's name, shape and type is
    what llama.cpp's Q8_0 file type stores, and count's bytes are GGUFReader's (n_bytes summed); a tensor
    of another type than the file type chooses is a wrong dtype, exit 1."""
    path = _gguf_file(tmp_path / "tiny-Q8_0.gguf")
    r = cli(["verify", path])
    assert r.code == 0, r.out + r.err
    reader = gguf.GGUFReader(str(path))
    ck = json.loads(cli(["count", path, "--json"]).out)["checkpoint"]
    assert ck["bytes"] == ck["formula_bytes"] == sum(int(t.n_bytes) for t in reader.tensors)
    assert ck["weight_format"] == "Q8_0" and ck["tensors"] == len(reader.tensors)
    assert json.loads(cli(["count", tmp_path, "--json"]).out)["checkpoint"] == ck  # a folder holding the file
    bad = _gguf_file(tmp_path / "bad.gguf", v_type=gguf.GGMLQuantizationType.F16)
    r = cli(["verify", bad])
    assert r.code == 1 and "wrong dtype: blk.0.attn_v.weight is F16, the config says Q8_0" in r.out


#: each method's tensors for one linear ``fan_in -> fan_out`` (torch dtype, shape), by hand from its packer:
#: AutoAWQ's WQLinear_GEMM buffers; GPTQModel's / AutoGPTQ's QuantLinear (4 bits: 8 per int32, along the
#: input for qweight, along the output for qzeros; g_idx one int32 per input); DeepSeek-V3's FP8 checkpoint
#: (an E4M3 weight and an fp32 weight_scale_inv per 128x128 block)
QUANTIZED_LAYOUTS = {
    "awq": lambda i, o: {"qweight": ("int32", (i, o // 8)), "qzeros": ("int32", (i // 128, o // 8)),
                         "scales": ("float16", (i // 128, o))},
    "gptq": lambda i, o: {"qweight": ("int32", (i // 8, o)), "qzeros": ("int32", (i // 128, o // 8)),
                          "scales": ("float16", (i // 128, o)), "g_idx": ("int32", (i,))},
    "fp8": lambda i, o: {"weight": ("float8_e4m3fn", (o, i)),
                         "weight_scale_inv": ("float32", (-(-o // 128), -(-i // 128)))},
}
QUANT_CONFIGS = {"awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"},
                 "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False},
                 "fp8": {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}}


@pytest.mark.parametrize("method", ["awq", "gptq", "fp8"])
def test_quantized_checkpoint_layout_and_bytes(tmp_path, cli, method):
    """A quantized checkpoint (its quantization_config) whose linears hold the method's tensors, shapes by
    hand (QUANTIZED_LAYOUTS; no packer runs on this CPU), the rest in the config's dtype: verify agrees,
    its bytes are the formula's (awq, gptq, fp8-block), and a wrong packing is named."""
    from safetensors.torch import save_file
    d, ff, vocab = 128, 320 if method == "fp8" else 384, 64  # fp8's blocks: a partial one at the edge
    dtype = torch.bfloat16 if method == "fp8" else torch.float16
    cfg = {"model_type": "llama", "hidden_size": d, "intermediate_size": ff, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": vocab,
           "torch_dtype": "bfloat16" if method == "fp8" else "float16", "quantization_config": QUANT_CONFIGS[method]}
    t = {"model.embed_tokens.weight": torch.zeros(vocab, d, dtype=dtype),
         "model.norm.weight": torch.zeros(d, dtype=dtype), "lm_head.weight": torch.zeros(vocab, d, dtype=dtype),
         "model.layers.0.input_layernorm.weight": torch.zeros(d, dtype=dtype),
         "model.layers.0.post_attention_layernorm.weight": torch.zeros(d, dtype=dtype)}
    for name, fan_in, fan_out in (("self_attn.q_proj", d, d), ("self_attn.k_proj", d, 64), ("self_attn.v_proj", d, 64),
                                  ("self_attn.o_proj", d, d), ("mlp.gate_proj", d, ff), ("mlp.up_proj", d, ff),
                                  ("mlp.down_proj", ff, d)):
        for part, (kind, shape) in QUANTIZED_LAYOUTS[method](fan_in, fan_out).items():
            t[f"model.layers.0.{name}.{part}"] = torch.zeros(shape, dtype=getattr(torch, kind))
    save_file(t, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli(["verify", tmp_path])
    assert r.code == 0, r.out + r.err
    ck = json.loads(cli(["count", tmp_path, "--json"]).out)["checkpoint"]
    assert ck["weight_format"] == {"awq": "awq", "gptq": "gptq", "fp8": "fp8-block"}[method]
    assert ck["bytes"] == ck["formula_bytes"] == sum(x.numel() * x.element_size() for x in t.values())
    wrong = "model.layers.0.mlp.down_proj." + next(iter(QUANTIZED_LAYOUTS[method](ff, d)))
    t[wrong] = torch.zeros(3, 3, dtype=t[wrong].dtype)
    save_file(t, tmp_path / "model.safetensors")
    r = cli(["verify", tmp_path])
    assert r.code == 1 and f"wrong shape: {wrong} is [3, 3]" in r.out


def _one_line_refusal(r):
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and r.err.startswith("symllm: error: "), r.err
    assert "Traceback" not in r.err


def test_malformed_files_are_refused_in_one_line(saved, tmp_path, cli):
    """A header length past the file or above 100 MB, a header that is not JSON, offsets outside the data,
    a GGUF without its magic, with a string or a tensor count longer than the file, and a link out of the
    folder: each one line, exit 2, never a traceback."""
    folder, _ = saved["llama"]
    cfg = (folder / "config.json").read_text()

    def st_file(name, raw: bytes):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(cfg)
        (d / "model.safetensors").write_bytes(raw)
        return d
    header = json.dumps({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 800]}}).encode()
    for name, raw, what in (
            ("huge", struct.pack("<Q", 2**63) + b"{}", "past the file's end"),
            ("notjson", struct.pack("<Q", 3) + b"{x]", "not valid JSON"),
            ("offsets", struct.pack("<Q", len(header)) + header + bytes(8), "outside the file"),
            ("short", b"\x01", "not a safetensors file")):
        r = cli(["verify", st_file(name, raw)])
        _one_line_refusal(r)
        assert what in r.err, (name, r.err)
    for name, raw, what in (
            ("magic.gguf", b"GGML" + bytes(40), "no GGUF magic"),
            ("string.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**40), "is longer than"),
            ("count.gguf", b"GGUF" + struct.pack("<IQQ", 3, 2**50, 0), "cannot fit")):
        (tmp_path / name).write_bytes(raw)
        r = cli(["verify", tmp_path / name])
        _one_line_refusal(r)
        assert what in r.err, (name, r.err)
    out = tmp_path / "linked"
    out.mkdir()
    (tmp_path / "outside.json").write_text(cfg)
    os.symlink(tmp_path / "outside.json", out / "config.json")
    shutil.copy(next(folder.glob("*.safetensors")), out / "model.safetensors")
    for command in ("count", "verify"):
        r = cli([command, out])
        _one_line_refusal(r)
        assert "links out of its folder" in r.err


@given(raw=hf_configs())
def test_expected_names_and_shapes_are_transformers_state_dict(raw):
    """Every generated HF config (llama, mistral, qwen2, qwen3): the tensors verify expects are the
    state dict transformers builds on the meta device, name for name and shape for shape (a tied
    lm_head is not saved)."""
    from symllm.arch.config import from_dict
    from symllm.costs import checkpoints
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    sd = {k: list(v.shape) for k, v in model.state_dict().items()
          if not (k == "lm_head.weight" and raw["tie_word_embeddings"])}
    mine = checkpoints.expected(from_dict(raw), raw["model_type"], dtype=None)
    assert {k: v["shape"] for k, v in mine.items()} == sd


@given(case=checkpoint_headers())
def test_damaged_headers_never_raise(case, tmp_path_factory):
    """Any damaged safetensors or GGUF header read by verify: one `symllm: error:` line and exit 2, or a
    verdict (0 or 1) — never a traceback (main() lets only SymllmError become a line: anything else fails)."""
    from symllm.cli import main
    suffix, data = case
    folder = tmp_path_factory.mktemp("damaged")
    path = folder / f"m{suffix}"
    path.write_bytes(data)
    if suffix == ".safetensors":
        (folder / "config.json").write_text(json.dumps({"model_type": "llama", **TINY}))
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["verify", str(path)])
    assert code in (0, 1, 2)
    if code == 2:
        assert err.getvalue().startswith("symllm: error: ") and len(err.getvalue().strip().splitlines()) == 1
