"""Real artifacts, offline (symllm.arch.hub, symllm.costs.checkpoints), against files the real tools write:

* tiny ``LlamaForCausalLM``, ``Qwen2ForCausalLM`` (q/k/v biases), ``MixtralForCausalLM`` (per-expert
  ``w1/w2/w3``), ``Qwen3MoeForCausalLM`` and ``Qwen2MoeForCausalLM`` (a gated shared expert; its
  ``sliding_window`` 0 without ``use_sliding_window``), the Gated DeltaNet hybrids (``Qwen3NextForCausalLM``,
  ``Qwen3_5ForCausalLM``, ``Qwen3_5MoeForCausalLM``) saved by transformers' ``save_pretrained`` as sharded
  safetensors (a small ``max_shard_size``), laid out as a Hugging Face cache (``models--org--name/refs/main``, ``snapshots/<commit>``
  with links into ``blobs/``) under ``tmp_path`` with ``HF_HUB_CACHE`` / ``HF_HOME`` pointed at it;
  expected names, shapes and bytes are torch's own ``state_dict()``;
* a GGUF file written by ``gguf.GGUFWriter`` (Q8_0 tensors by ``gguf.quants.quantize``), read back with
  ``gguf.GGUFReader``; Mixtral, Qwen3-MoE, Qwen2 and Qwen3 GGUFs from transformers' classes, named by
  gguf-py's ``TensorNameMap`` (the experts merged per layer, as llama.cpp's converter stores them);
* bitsandbytes (NF4, LLM.int8) and compressed-tensors (W4A16, W8A16) checkpoints their own CPU packers write;
* AWQ, GPTQ and FP8 (128x128 block scales) checkpoints' tensors by hand from their packers' layouts
  (:data:`QUANTIZED_LAYOUTS`): no packer runs on this CPU;
* malformed headers, lengths past the file, links out of the folder: one line, exit 2.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given

from .conftest import gguf_name, requires
from .tiny_models import DELTANET, EXPERTS, TINY, TINY_MLA
from .strategies import (checkpoint_headers, dense_family_configs, gated_deltanet_configs, gpt_oss_configs, hf_configs,
                         moe_configs)

torch = requires("torch")
transformers = requires("transformers")
gguf = requires("gguf")


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
    """The families (DeepSeek-V3's query compression too), saved once per module."""
    out = {}
    for name, cls, cfg in (
            ("llama", transformers.LlamaForCausalLM, transformers.LlamaConfig(**TINY)),
            ("qwen2", transformers.Qwen2ForCausalLM, transformers.Qwen2Config(**TINY)),
            ("mixtral", transformers.MixtralForCausalLM,
             transformers.MixtralConfig(**TINY, num_local_experts=3, num_experts_per_tok=2)),
            ("qwen3_moe", transformers.Qwen3MoeForCausalLM,  # q/k norms, every layer routed
             transformers.Qwen3MoeConfig(**TINY, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                                         head_dim=8)),
            ("qwen2_moe", transformers.Qwen2MoeForCausalLM,  # a gated shared expert, q/k/v biases
             transformers.Qwen2MoeConfig(**TINY, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                                         shared_expert_intermediate_size=24)),
            ("deepseek_v2", transformers.DeepseekV2ForCausalLM,
             transformers.DeepseekV2Config(**TINY_MLA, topk_method="greedy")),
            ("deepseek_v3", transformers.DeepseekV3ForCausalLM, transformers.DeepseekV3Config(
                **dict(TINY_MLA, q_lora_rank=8))),
            # DeepSeek Sparse Attention: every layer's indexer (wq_b, wk, k_norm's weight and bias, weights_proj)
            ("deepseek_v32", transformers.DeepseekV32ForCausalLM, transformers.DeepseekV32Config(
                **dict(TINY_MLA, q_lora_rank=8), index_n_heads=2, index_head_dim=6, index_topk=4)),
            ("glm_moe_dsa", transformers.GlmMoeDsaForCausalLM, transformers.GlmMoeDsaConfig(
                **dict(TINY_MLA, q_lora_rank=8), index_n_heads=2, index_head_dim=6, index_topk=4)),
            # norms after attention and feed-forward (post_attention_layernorm, post_feedforward_layernorm),
            # OLMo 2's q/k norms over the whole width; Gemma 2's four norms a block (pre_feedforward_layernorm)
            ("olmo2", transformers.Olmo2ForCausalLM, transformers.Olmo2Config(**TINY)),
            ("gemma2", transformers.Gemma2ForCausalLM, transformers.Gemma2Config(**TINY, head_dim=8)),
            # EXAONE 4: OLMo 2's post-norms with Qwen3's per-head q/k norms, local and global layers
            ("exaone4", transformers.Exaone4ForCausalLM, transformers.Exaone4Config(**TINY, sliding_window=4,
                                                                                   sliding_window_pattern=2)),
            # Gated DeltaNet hybrids: conv1d (channels, 1, K_c), A_log and dt_bias bare on linear_attn, the
            # gated q_proj of the attention layer; Qwen3-Next's and Qwen3.5-MoE's experts, Qwen3.5's four
            # input projections
            ("qwen3_next", transformers.Qwen3NextForCausalLM, transformers.Qwen3NextConfig(**TINY, **DELTANET, **EXPERTS)),
            ("qwen3_5_text", transformers.Qwen3_5ForCausalLM, transformers.Qwen3_5TextConfig(**TINY, **DELTANET)),
            ("qwen3_5_moe_text", transformers.Qwen3_5MoeForCausalLM,
             transformers.Qwen3_5MoeTextConfig(**TINY, **DELTANET, **EXPERTS))):
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


@pytest.mark.parametrize("family", ["llama", "qwen2", "mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v2", "olmo2",
                                    "gemma2", "exaone4", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"])
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


def test_verify_a_saved_deepseek_v3_checkpoint(saved, cli):
    """DeepSeek-V3's layout (q_a_proj, q_a_layernorm, q_b_proj; kv_a_layernorm): verify finds every tensor;
    the router's e_score_correction_bias, a buffer transformers saves (and DeepSeek's checkpoints hold), is
    no parameter: the file's bytes are the parameters' plus those n_e bf16 values per MoE layer."""
    folder, torch_tensors = saved["deepseek_v3"]
    r = cli(["verify", folder])
    assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
    ck = json.loads(cli(["count", folder, "--json"]).out)["checkpoint"]
    assert ck["bytes"] == sum(b for _, _, b in torch_tensors.values()) == ck["formula_bytes"] + 1 * 4 * 2


def test_verify_a_saved_laguna_checkpoint(tmp_path, cli):
    """Laguna (LagunaForCausalLM, a dense first layer then a routed one with shared experts): its router's
    e_score_correction_bias is an nn.Parameter (mlp.gate's, n_e numbers) that transformers' conversion mapping
    saves as ``mlp.experts.e_score_correction_bias``, and its shared experts as ``mlp.shared_expert.``: verify
    agrees on every tensor the file holds (the names are the file's, as save_pretrained wrote them); the file's
    bytes, the formula's and torch's (numel × 2 over the state dict) are equal, the bias counted as a parameter.
    One tensor's shape changed in the file: one line names it."""
    from safetensors.torch import load_file, save_file
    torch.manual_seed(0)
    cfg = transformers.LagunaConfig(**TINY, moe_intermediate_size=8, num_experts=4, num_experts_per_tok=2,
                                    shared_expert_intermediate_size=16)
    model = transformers.LagunaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    stored = load_file(tmp_path / "model.safetensors")
    assert stored["model.layers.1.mlp.experts.e_score_correction_bias"].shape == (4,)
    assert "model.layers.1.mlp.shared_expert.up_proj.weight" in stored
    r = cli(["verify", tmp_path])
    assert r.code == 0 and f"{len(stored)} tensors" in r.out and "agrees with the component tree" in r.out, r.out + r.err
    ck = json.loads(cli(["count", tmp_path, "--json"]).out)["checkpoint"]
    total = sum(v.numel() * v.element_size() for v in model.state_dict().values())
    assert ck["bytes"] == ck["formula_bytes"] == total
    wrong = "model.layers.1.mlp.experts.e_score_correction_bias"
    stored[wrong] = torch.zeros(5, dtype=torch.bfloat16)
    save_file(stored, tmp_path / "model.safetensors", metadata={"format": "pt"})
    r = cli(["verify", tmp_path])
    said = " ".join(r.out.split())  # the terminal's width wraps the lines
    assert r.code == 1 and said.count("wrong shape") == 1 and "missing" not in said and "unexpected" not in said
    assert said.endswith(f"wrong shape: {wrong} is [5], the config says [4]"), r.out + r.err


@pytest.mark.parametrize("family", ["deepseek_v32", "glm_moe_dsa"])
def test_verify_a_saved_sparse_attention_checkpoint(saved, family, cli):
    """DeepSeek-V3.2's and GLM-5's layout: DeepSeek-V3's, and in each layer the indexer's self_attn.indexer.wq_b,
    wk, k_norm (a LayerNorm: its weight and its bias, 6 each) and weights_proj: verify finds every tensor with
    its shape; the file's bytes are the parameters' plus the router's e_score_correction_bias (4 bf16 values in
    the one MoE layer), as for DeepSeek-V3."""
    folder, torch_tensors = saved[family]
    assert "model.layers.1.self_attn.indexer.k_norm.bias" in torch_tensors
    r = cli(["verify", folder])
    assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
    ck = json.loads(cli(["count", folder, "--json"]).out)["checkpoint"]
    assert ck["bytes"] == sum(b for _, _, b in torch_tensors.values()) == ck["formula_bytes"] + 1 * 4 * 2


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
    assert "not a preset nor in the local HF cache (nothing is downloaded)" in r.err


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


#: the GGUFs written: transformers' class and config, gguf-py's architecture, its extra metadata
GGUF_MODELS = {
    "mixtral": ("MixtralForCausalLM", dict(num_local_experts=3, num_experts_per_tok=2), "LLAMA", {}),
    "qwen3_moe": ("Qwen3MoeForCausalLM", dict(num_experts=3, num_experts_per_tok=2, moe_intermediate_size=16,
                                              head_dim=8), "QWEN3MOE",
                  {"add_key_length": 8, "add_value_length": 8, "add_expert_feed_forward_length": 16}),
    "qwen2": ("Qwen2ForCausalLM", {}, "QWEN2", {}),  # q/k/v biases (attn_q.bias ..., F32)
    "qwen3": ("Qwen3ForCausalLM", dict(head_dim=8), "QWEN3", {"add_key_length": 8, "add_value_length": 8}),
}
GGUF_MOES = ["mixtral", "qwen3_moe"]


def _gguf_moe(path: Path, family: str = "mixtral", *, file_type=None, router=None) -> tuple[Path, int]:
    """A tiny mixture of experts as llama.cpp's converter writes it: transformers' class's state dict (meta
    device), each tensor named by gguf-py's TensorNameMap of the architecture (the experts merged:
    ``mlp.experts.gate_proj`` -> ``ffn_gate_exps``, stored ``(n_e, rows, row)``), F32 for vectors and the
    router (convert_hf_to_gguf's rule; ``router`` overrides), F16 for the rest. Returns the file and torch's
    parameter count."""
    np = __import__("numpy")
    cls, extra, arch, meta = GGUF_MODELS[family]
    cls = getattr(transformers, cls)
    cfg = cls.config_class(**TINY, **extra)
    with torch.device("meta"):
        sd = cls(cfg).state_dict()
    names = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch), cfg.num_hidden_layers)
    w = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[getattr(gguf.MODEL_ARCH, arch)])
    w.add_embedding_length(32), w.add_block_count(2), w.add_head_count(4), w.add_head_count_kv(2)
    w.add_feed_forward_length(48), w.add_context_length(64)
    if family in GGUF_MOES:
        w.add_expert_count(3), w.add_expert_used_count(2)
    for method, value in meta.items():
        getattr(w, method)(value)
    w.add_file_type(file_type or gguf.LlamaFileType.MOSTLY_F16)
    w.add_token_list([f"t{i}" for i in range(64)])
    parts = {}
    for k, v in sd.items():
        if k.endswith("experts.gate_up_proj"):  # transformers 5 fuses gate and up: the converter splits them
            half = v.shape[1] // 2
            parts[k.replace("gate_up_proj", "gate_proj")] = (v.shape[0], half, v.shape[2])
            parts[k.replace("gate_up_proj", "up_proj")] = (v.shape[0], half, v.shape[2])
        else:
            parts[k] = tuple(v.shape)
    for k, shape in parts.items():
        name = gguf_name(names, k)
        assert name is not None, k
        f32 = len(shape) == 1 or name.endswith("ffn_gate_inp.weight")
        dtype = router if router is not None and "ffn_gate_inp" in name else ("float32" if f32 else "float16")
        w.add_tensor(name, np.zeros(shape, dtype=dtype))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    return path, sum(int(np.prod(s)) for s in parts.values())


@pytest.mark.parametrize("family", GGUF_MOES)
def test_gguf_mixture_of_experts_verified_and_counted(tmp_path, cli, family):
    """A Mixtral GGUF (the llama architecture with experts) and a Qwen3-MoE one (qwen3moe: q/k norms), F16,
    the experts merged per layer: verify agrees, exit 0; the config comes from the metadata (expert_count,
    expert_used_count: torch's parameter count); count's bytes are GGUFReader's and the formula's; a router
    stored F16 is named; a Q4_K_M-labelled MoE file has its types checked too (llama.cpp's per-tensor choice
    for a mixture of experts is modelled): its F16 token_embd is named, since rows of 32 hold no Q4_K block of
    256 and llama_tensor_get_type falls back to Q5_0 (blocks of 32), by hand."""
    path, numel = _gguf_moe(tmp_path / "tiny-moe-F16.gguf", family)
    r = cli(["verify", path])
    assert r.code == 0 and "name, shape and dtype agrees" in " ".join(r.out.split()), r.out + r.err
    reader = gguf.GGUFReader(str(path))
    got = json.loads(cli(["count", path, "--json"]).out)
    ck = got["checkpoint"]
    assert ck["bytes"] == ck["formula_bytes"] == sum(int(t.n_bytes) for t in reader.tensors)
    per_layer = 10 + (2 if family == "qwen3_moe" else 0)  # 2 norms, 4 attention, router, 3 experts (+ q/k norms)
    assert ck["weight_format"] == "F16" and ck["tensors"] == len(reader.tensors) == 2 * per_layer + 3
    assert got["params"]["total"] == numel
    bad, _ = _gguf_moe(tmp_path / "bad.gguf", family, router="float16")
    r = cli(["verify", bad])
    assert r.code == 1 and "wrong dtype: blk.0.ffn_gate_inp.weight is F16, the config says F32" in r.out
    q4, _ = _gguf_moe(tmp_path / "q4.gguf", family, file_type=gguf.LlamaFileType.MOSTLY_Q4_K_M)
    r = cli(["verify", q4])
    assert r.code == 1 and "wrong dtype: token_embd.weight is F16, the config says Q5_0" in r.out, r.out
    assert json.loads(cli(["count", q4, "--json"]).out)["checkpoint"]["formula_bytes"] is not None


@pytest.mark.parametrize("family", ["qwen2", "qwen3"])
def test_gguf_of_other_architectures(tmp_path, cli, family):
    """GGUF files of the qwen2 (q/k/v biases, F32) and qwen3 (q/k norms) architectures, F16: the config is
    read from their own metadata keys, every tensor agrees, the bytes are GGUFReader's, the parameters
    torch's."""
    path, numel = _gguf_moe(tmp_path / f"tiny-{family}.gguf", family)
    r = cli(["verify", path])
    assert r.code == 0 and "name, shape and dtype agrees" in " ".join(r.out.split()), r.out + r.err
    got = json.loads(cli(["count", path, "--json"]).out)
    assert got["checkpoint"]["bytes"] == got["checkpoint"]["formula_bytes"] == sum(
        int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors)
    assert got["params"]["total"] == numel


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


@pytest.fixture(scope="module")
def bf16_llama(tmp_path_factory):
    """A tiny bf16 Llama whose linears hold whole NF4 blocks (d 128, d_ff 256), saved once per module."""
    folder = tmp_path_factory.mktemp("bf16")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=256, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(folder)
    return folder


BNB_CONFIGS = {"nf4": dict(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True),
               "nf4-nodq": dict(load_in_4bit=True, bnb_4bit_quant_type="nf4"), "int8": dict(load_in_8bit=True)}


@pytest.mark.parametrize("kind", list(BNB_CONFIGS))
def test_bitsandbytes_checkpoint_read(bf16_llama, tmp_path, cli, kind):
    """A checkpoint bitsandbytes' own CPU packer wrote (transformers' from_pretrained with a
    BitsAndBytesConfig, then save_pretrained): verify agrees (packed uint8 or int8 weights, absmax, codes,
    SCB), count's bytes are the safetensors' (torch's numel × element size) and the formula's bytes differ
    by what it leaves out: the JSON quant state bitsandbytes serialises per linear (4-bit; NF4 with double
    quantization keeps its fp32 offset, which the formula counts, in it) and int8's format byte. A quant
    type symllm has no formula for is one line naming the key, exit 2."""
    requires("bitsandbytes")
    from safetensors import safe_open
    q = transformers.BitsAndBytesConfig(**BNB_CONFIGS[kind])
    model = transformers.AutoModelForCausalLM.from_pretrained(bf16_llama, quantization_config=q, device_map="cpu",
                                                              dtype=torch.bfloat16)
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        sizes = {k: f.get_slice(k).get_shape() for k in f.keys()}
        found = {k: (f.get_tensor(k).numel() * f.get_tensor(k).element_size()) for k in f.keys()}
    r = cli(["verify", tmp_path])
    assert r.code == 0, r.out + r.err
    ck = json.loads(cli(["count", tmp_path, "--json"]).out)["checkpoint"]
    assert ck["weight_format"] == kind and ck["bytes"] == sum(found.values()) and ck["tensors"] == len(sizes)
    extra = sum(b for k, b in found.items() if k.endswith(("quant_state.bitsandbytes__nf4", ".weight_format")))
    linears = 7
    assert ck["formula_bytes"] == ck["bytes"] - extra + (4 * linears if kind == "nf4" else 0)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["quantization_config"]["bnb_4bit_quant_storage" if kind != "int8" else "llm_int8_has_fp16_weight"] = (
        "bfloat16" if kind != "int8" else True)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli(["verify", tmp_path])
    _one_line_refusal(r)
    assert ("quantization_config.bnb_4bit_quant_storage: 'bfloat16'" if kind != "int8" else
            "quantization_config.llm_int8_has_fp16_weight: True") in r.err


#: llm-compressor's preset schemes -> the weight format symllm names them
CT_SCHEMES = {"W4A16": "w4a16", "W4A16_ASYM": "w4a16-asym", "W8A16": "w8a16", "W8A8": "w8a8",
              "FP8_DYNAMIC": "w8a8-fp8", "FP8_BLOCK": "w8a8-fp8-block", "NVFP4": "nvfp4", "NVFP4A16": "nvfp4",
              "FP8": "w8a8-fp8-tensor", "W4A16 group 32": "w4a16-g32", "W8A16 per channel": "w8a16-channel"}
#: the activation scales a scheme's checkpoint stores (not weights: the weight formula leaves them out)
_INPUT_SCALES = (".input_scale", ".input_global_scale")


@pytest.mark.parametrize("scheme", list(CT_SCHEMES))
def test_compressed_tensors_checkpoint_read(bf16_llama, tmp_path, cli, scheme):
    """A checkpoint compressed-tensors' own packer wrote on the CPU (its preset scheme on every Linear but the
    lm_head, ModelCompressor.compress_model, save_pretrained, update_config): verify agrees (weight_packed
    int32, weight_scale, weight_shape, zero points when asymmetric) and count's bytes are the safetensors'
    and the formula's (but the activation scales static schemes store: NVFP4's input_global_scale, FP8's
    input_scale), and count reads the format from the config the packer wrote (its bf16 scales: W8A8 int8 and
    FP8 per tensor, per channel or in 128×128 blocks; NVFP4's packed bytes, E4M3 scales per 16 and fp32 global
    scales, with and without activations); a file missing an activation scale is named."""
    requires("compressed_tensors")
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config, preset_name_to_scheme
    from safetensors import safe_open
    model = transformers.AutoModelForCausalLM.from_pretrained(bf16_llama, dtype=torch.bfloat16)
    if " " in scheme:  # W4A16 with another group, W8A16 per channel: the scheme's weights by hand
        from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
        bits, group = (4, 32) if "group" in scheme else (8, None)
        scheme_of = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(
            num_bits=bits, type="int", symmetric=True, strategy="group" if group else "channel", group_size=group))
    else:
        scheme_of = preset_name_to_scheme(scheme, ["Linear"])
    apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme_of}, ignore=["lm_head"]))
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    model.save_pretrained(tmp_path)
    compressor.update_config(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        found = sum(f.get_tensor(k).numel() * f.get_tensor(k).element_size() for k in f.keys())
        inputs = sum(f.get_tensor(k).numel() * f.get_tensor(k).element_size() for k in f.keys()
                     if k.endswith(_INPUT_SCALES))
    assert bool(inputs) == (scheme in ("NVFP4", "FP8"))  # static activation scales: NVFP4's global, FP8's
    r = cli(["verify", tmp_path])
    assert r.code == 0, r.out + r.err
    out = json.loads(cli(["count", tmp_path, "--json"]).out)
    ck = out["checkpoint"]
    assert ck["weight_format"] == CT_SCHEMES[scheme] and ck["bytes"] == found
    assert ck["formula_bytes"] == found - inputs
    assert out["weight_format"]["format"] == CT_SCHEMES[scheme] and out["weight_format"]["bytes"] == found - inputs
    if inputs:  # a checkpoint without an activation scale its config states: that tensor is the difference
        from safetensors.torch import load_file, save_file
        tensors = load_file(tmp_path / "model.safetensors")
        gone = sorted(k for k in tensors if k.endswith(_INPUT_SCALES))[0]
        del tensors[gone]
        save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
        r = cli(["verify", tmp_path])
        assert r.code == 1 and f"missing: {gone}" in r.out, r.out + r.err


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


@given(raw=gated_deltanet_configs())
def test_expected_deltanet_names_and_shapes_are_transformers_state_dict(raw):
    """Every generated Gated DeltaNet hybrid (qwen3_next, qwen3_5_text, qwen3_5_moe_text): the tensors verify
    expects are the state dict transformers builds on the meta device, name for name and shape for shape (a
    tied lm_head is not saved), but for the routed experts, which transformers 5 holds fused
    (``experts.gate_up_proj``, ``experts.down_proj``) and save_pretrained writes one by one (the saved
    checkpoints above): there the elements of each layer's experts agree."""
    from symllm.arch.config import from_dict
    from symllm.costs import checkpoints
    options = {k: v for k, v in raw.items() if k != "partial_rotary_factor"}
    config = transformers.AutoConfig.for_model(**options)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    sd = {k: list(v.shape) for k, v in model.state_dict().items()
          if not (k == "lm_head.weight" and raw["tie_word_embeddings"])}
    mine = {k: v["shape"] for k, v in checkpoints.expected(from_dict(raw), raw["model_type"], dtype=None).items()}
    experts = lambda shapes: {k.split(".experts.")[0]: 0 for k in shapes if ".experts." in k}  # noqa: E731
    fused, ours = experts(sd), experts(mine)
    for table, sums in ((sd, fused), (mine, ours)):
        for k, shape in table.items():
            if ".experts." in k:
                sums[k.split(".experts.")[0]] += math.prod(shape)
    assert fused == ours
    assert {k: v for k, v in mine.items() if ".experts." not in k} == {k: v for k, v in sd.items()
                                                                       if ".experts." not in k}


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


def test_bitsandbytes_checkpoint_with_kept_modules(bf16_llama, tmp_path, cli):
    """unsloth's dynamic 4-bit shape, written by bitsandbytes' own packer (llm_int8_skip_modules keeps layer
    0's down_proj in bf16): verify expects that projection as a plain bf16 weight and agrees, and the
    formula's bytes are the file's but the JSON quant states (one per packed linear, six of seven)."""
    requires("bitsandbytes")
    from safetensors import safe_open
    q = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                        llm_int8_skip_modules=["lm_head", "model.layers.0.mlp.down_proj"])
    model = transformers.AutoModelForCausalLM.from_pretrained(bf16_llama, quantization_config=q, device_map="cpu",
                                                              dtype=torch.bfloat16)
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        found = {k: (f.get_tensor(k).numel() * f.get_tensor(k).element_size(), str(f.get_tensor(k).dtype))
                 for k in f.keys()}
    assert found["model.layers.0.mlp.down_proj.weight"][1] == "torch.bfloat16"
    r = cli(["verify", tmp_path])
    assert r.code == 0, r.out + r.err
    ck = json.loads(cli(["count", tmp_path, "--json"]).out)["checkpoint"]
    states = sum(b for k, (b, _) in found.items() if k.endswith("quant_state.bitsandbytes__nf4"))
    assert sum(k.endswith("quant_state.bitsandbytes__nf4") for k in found) == 6
    assert ck["weight_format"] == "nf4" and ck["bytes"] == sum(b for b, _ in found.values())
    assert ck["formula_bytes"] == ck["bytes"] - states + 4 * 6  # the formula's fp32 offset per packed linear


# --- multimodal wrappers: the language model under a prefix ------------------------------------------------

_WRAP_TEXT = dict(vocab_size=64, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=8)
_QWEN_VISION = dict(depth=1, hidden_size=16, intermediate_size=24, num_heads=2, out_hidden_size=16)


def _wrapper(kind: str):
    """A tiny multimodal wrapper of transformers (bf16) and the prefixes of its language model's modules."""
    torch.manual_seed(0)
    if kind == "gemma3":
        model = transformers.Gemma3ForConditionalGeneration(transformers.Gemma3Config(
            text_config=dict(_WRAP_TEXT, model_type="gemma3_text"), mm_tokens_per_image=4,
            vision_config=dict(hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                               image_size=28, patch_size=14)))
    elif kind == "qwen3_5":
        model = transformers.Qwen3_5ForConditionalGeneration(transformers.Qwen3_5Config(
            text_config=dict(_WRAP_TEXT, **{k: v for k, v in DELTANET.items() if k != "head_dim"}),
            vision_config=_QWEN_VISION))
    else:
        model = transformers.Qwen3_5MoeForConditionalGeneration(transformers.Qwen3_5MoeConfig(
            text_config=dict(_WRAP_TEXT, **{k: v for k, v in DELTANET.items() if k != "head_dim"}, **EXPERTS),
            vision_config=_QWEN_VISION))
    return model.to(torch.bfloat16)


@pytest.mark.parametrize("kind", ["gemma3", "qwen3_5", "qwen3_5_moe"])
def test_verify_a_wrapper_reads_its_language_model_under_its_prefix(kind, tmp_path, cli):
    """save_pretrained of a multimodal wrapper (Gemma 3: ``language_model.model.``, its llava mapping reverted;
    Qwen3.5: ``model.language_model.``): verify agrees on the language model and says how many tensors, of how
    many bytes, lie outside it (vision tower, projector): those of transformers' own state dict outside
    ``model.language_model.`` and ``lm_head``; count --json's formula bytes are the language model's."""
    model = _wrapper(kind)
    model.save_pretrained(tmp_path)
    sd = model.state_dict()
    outside = {k: v for k, v in sd.items() if not k.startswith(("model.language_model.", "lm_head."))}
    inside_bytes = sum(v.numel() * v.element_size() for k, v in sd.items() if k not in outside
                       and not (k == "lm_head.weight" and model.config.tie_word_embeddings))
    r = cli(["verify", tmp_path])
    assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
    text = r.out.replace("\n  ", " ")
    assert f"{len(outside)} tensors ({sum(v.numel() * 2 for v in outside.values()):,} bytes)" in text
    assert "not counted" in text
    ck = json.loads(cli(["count", tmp_path, "--json"]).out)["checkpoint"]
    assert ck["not_counted"] == {"tensors": len(outside), "bytes": sum(v.numel() * 2 for v in outside.values())}
    assert ck["formula_bytes"] == inside_bytes == ck["bytes"] - ck["not_counted"]["bytes"]


def test_verify_kimi_k25_in_its_published_layout(tmp_path, cli):
    """Kimi-K2.5's checkpoints hold the language model as ``language_model.model.`` and
    ``language_model.lm_head.`` (transformers 5.23's save_pretrained of the wrapper writes another, broken
    layout, so this one is written here: the wrapper's vision tower and projector from its state dict, the
    language model as save_pretrained writes DeepseekV3ForCausalLM of its text_config, experts one by one,
    under that prefix): the names transformers' own conversion mapping for kimi_k25 renames to its modules'
    (``model.language_model.``, ``lm_head.``); verify agrees, the vision tower and projector not counted.
    Under the modules' own names, it agrees too."""
    import re
    from safetensors.torch import save_file
    from transformers.conversion_mapping import get_checkpoint_conversion_mapping
    text = dict(_WRAP_TEXT, num_key_value_heads=2, q_lora_rank=None, kv_lora_rank=6, qk_rope_head_dim=4,
                qk_nope_head_dim=4, v_head_dim=2, moe_intermediate_size=8, n_routed_experts=4,
                num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
                model_type="deepseek_v3")
    text.pop("head_dim")
    config = transformers.Kimi_K25Config(text_config=text, tie_word_embeddings=False, vision_config=dict(
        hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2, pos_emb_height=4,
        pos_emb_width=4))
    torch.manual_seed(0)
    model = transformers.Kimi_K25ForConditionalGeneration(config).to(torch.bfloat16)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    outside = {k: v for k, v in sd.items() if not k.startswith(("model.language_model.", "lm_head."))}
    transformers.DeepseekV3ForCausalLM(config.text_config).to(torch.bfloat16).save_pretrained(tmp_path / "text")
    from safetensors.torch import load_file
    lm = load_file(tmp_path / "text" / "model.safetensors")
    published = {**outside, **{re.sub(r"^model\.", "language_model.model.",
                                      re.sub(r"^lm_head\.", "language_model.lm_head.", k)): v for k, v in lm.items()}}
    own = {**outside, **{re.sub(r"^model\.", "model.language_model.", k): v for k, v in lm.items()}}
    renames = [(m.source_patterns[0], m.target_patterns[0]) for m in get_checkpoint_conversion_mapping("kimi_k25")[:2]]
    loaded = set()
    for name in published:
        for source, target in renames:
            name = re.sub(source, target, name)
        loaded.add(name)
    assert loaded == set(own)  # transformers reads the published layout onto its modules' names
    for layout in (published, own):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        save_file(layout, folder / "model.safetensors")
        config.save_pretrained(folder)
        r = cli(["verify", folder])
        assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
        assert f"{len(outside)} tensors" in r.out.replace("\n  ", " ")


def test_verify_leaves_out_the_multi_token_prediction_layers_transformers_skips(saved, tmp_path, cli):
    """Qwen3-Next's published checkpoints hold multi-token-prediction layers (``mtp.``) that
    Qwen3NextForCausalLM does not build and skips on loading (its ``_keys_to_ignore_on_load_unexpected``):
    verify agrees and says the one ``mtp.`` tensor added here (2 bf16 values) is not counted; in a Llama the
    same tensor is unexpected."""
    assert any(p.startswith("^mtp") for p in transformers.Qwen3NextForCausalLM._keys_to_ignore_on_load_unexpected)
    folder, _ = saved["qwen3_next"]
    extra = _rewrite(folder, tmp_path / "mtp", lambda f: None)
    _shard_with(extra, "model.norm.weight", add="mtp.fc.weight")
    r = cli(["verify", extra])
    assert r.code == 0 and "agrees with the component tree" in r.out, r.out + r.err
    assert "1 tensors (4 bytes) are outside the language model" in r.out.replace("\n  ", " ")
    llama = _rewrite(saved["llama"][0], tmp_path / "llama", lambda f: None)
    _shard_with(llama, "model.norm.weight", add="mtp.fc.weight")
    r = cli(["verify", llama])
    assert r.code == 1 and "unexpected: mtp.fc.weight (BF16 [2])" in r.out


# --- fused experts: the checkpoints transformers' save_pretrained writes with 3-D expert tensors -------------------

#: the families whose transformers 5 class stores the routed experts fused and whose save_pretrained writes them so
#: (no weight-conversion mapping splits them per expert), each with a tiny config; Llama 4 with a dense layer (its
#: feed_forward, intermediate_size_mlp) beside a MoE layer (feed_forward.router, experts, shared_expert)
FUSED = {
    "llama4_text": (lambda: transformers.Llama4ForCausalLM, lambda: transformers.Llama4TextConfig(
        **TINY, intermediate_size_mlp=40, num_local_experts=3, num_experts_per_tok=1, head_dim=8,
        interleave_moe_layer_step=2, no_rope_layers=[1, 0], attention_chunk_size=8)),
    "gpt_oss": (lambda: transformers.GptOssForCausalLM, lambda: transformers.GptOssConfig(
        **TINY, num_local_experts=3, num_experts_per_tok=2, head_dim=8, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"])),
}


@pytest.mark.parametrize("family", sorted(FUSED))
def test_verify_a_saved_fused_experts_checkpoint(family, tmp_path, cli):
    """save_pretrained of a tiny Llama 4 / gpt-oss (bf16, sharded) writes each MoE layer's experts as two 3-D
    tensors, ``gate_up_proj [E, d, 2·d_ff]`` and ``down_proj [E, d_ff, d]`` (gpt-oss: their biases ``[E, 2·d_ff]``,
    ``[E, d]``): verify finds every tensor with torch's shape, exit 0; the file's bytes are the state dict's and
    the bf16 formula's; and a file holding gate_up_proj transposed (the same elements in [E, 2·d_ff, d]) is named
    in one line, exit 1."""
    cls, config = FUSED[family]
    folder, torch_tensors = _save(tmp_path / "saved", cls(), config())
    written = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    moe = "feed_forward" if family == "llama4_text" else "mlp"
    fused = f"model.layers.1.{moe}.experts.gate_up_proj"
    assert torch_tensors[fused][1] == [3, 32, 96] and torch_tensors[f"model.layers.1.{moe}.experts.down_proj"][1] == [3, 48, 32]
    assert not any(".experts.0." in name for name in written)  # fused as the class holds them
    r = cli(["verify", folder])
    assert r.code == 0 and f"{len(written)} tensors" in r.out and "agrees with the component tree" in r.out, r.out + r.err
    ck = json.loads(cli(["count", folder, "--json"]).out)["checkpoint"]
    assert ck["bytes"] == ck["formula_bytes"] == sum(b for _, _, b in torch_tensors.values())
    safetensors = requires("safetensors.torch")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((folder / "config.json").read_text())
    state = {}
    for f in folder.glob("*.safetensors"):
        state.update(safetensors.load_file(f))
    state[fused] = state[fused].transpose(1, 2).contiguous()
    safetensors.save_file(state, bad / "model.safetensors")
    r = cli(["verify", bad, "--json"])
    assert r.code == 1 and json.loads(r.out)["checkpoint"]["difference"] == (
        f"wrong shape: {fused} is [3, 96, 32], the config says [3, 32, 96]"), r.out


def _fused_state_dict(raw: dict) -> dict:
    """transformers' state dict on the meta device, name -> shape (a tied lm_head is not saved)."""
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    tied = getattr(config, "tie_word_embeddings", False)
    return {k: list(v.shape) for k, v in model.state_dict().items() if not (k == "lm_head.weight" and tied)}


@given(raw=gpt_oss_configs() | moe_configs("llama4_text") | dense_family_configs("gemma4_text"))
def test_expected_fused_names_and_shapes_are_transformers_state_dict(raw):
    """Every drawn Llama 4 text, gpt-oss and Gemma 4 (its MoE block or none) config: the tensors verify expects are
    the state dict transformers' class builds on the meta device, which save_pretrained writes as it is (the
    fused experts too: no conversion mapping splits them), name for name and shape for shape."""
    from symllm.arch.config import from_dict
    from symllm.costs import checkpoints
    mine = checkpoints.expected(from_dict(raw), raw["model_type"], dtype=None)
    assert {k: v["shape"] for k, v in mine.items()} == _fused_state_dict(raw)


def test_verify_a_saved_llama4_wrapper_reads_its_fused_experts(tmp_path, cli):
    """save_pretrained of Llama4ForConditionalGeneration (a tiny vision tower beside FUSED's Llama 4 text model):
    its language model under ``language_model.model.`` with the fused experts agrees, exit 0; the vision tower's
    and projector's tensors are not counted, their number and bytes torch's."""
    text = FUSED["llama4_text"][1]().to_dict()
    config = transformers.Llama4Config(text_config=text, vision_config=dict(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14,
        vision_output_dim=32, projector_input_dim=32, projector_output_dim=32))
    model = transformers.Llama4ForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    state = model.state_dict()
    assert "language_model.model.layers.1.feed_forward.experts.gate_up_proj" in state
    r = cli(["verify", tmp_path, "--json"])
    ck = json.loads(r.out)["checkpoint"]
    assert r.code == 0 and ck["difference"] is None, r.out + r.err
    outside = {k: v for k, v in state.items() if not k.startswith("language_model.")}
    assert ck["not_counted"] == {"tensors": len(outside),
                                 "bytes": sum(v.numel() * v.element_size() for v in outside.values())}
