"""MPT (``mpt``: transformers' ``MptForCausalLM``): the mpt-7b preset and random MPT configs against transformers.

Expected numbers come from transformers' own ``MptForCausalLM`` (built from the same config.json on the meta
device for parameters per kind; run on small CPU models under FlopCounterMode through its own cache for FLOPs
and the cache it holds; its ``build_mpt_alibi_tensor`` for the slopes), the published figure of
tests/data/published_params.json (the mpt-7b model card's 6.7B) and hand arithmetic written here.
"""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf, preset_info
from symllm.costs import phases as costs

from .conftest import requires, training_step_flops
from .strategies import mpt_configs
from .test_mla import _hf_model
from .test_windows import generation_agrees

#: mosaicml/mpt-7b config.json (the mpt-7b preset ships it)
MPT_7B = preset_info("mpt-7b")["config"]
#: the model types whose per-kind parameter property against transformers lives here (tests/test_elementwise.py)
KINDS = ("mpt",)
#: transformers' MptForCausalLM module names -> symllm's kinds
_MPT = {"wte": "embedding", "norm_1": "attention_norm", "Wqkv": "attention/wqkv", "out_proj": "attention/wo",
        "norm_2": "ffn_norm", "up_proj": "feed_forward/w3", "down_proj": "feed_forward/w2", "norm_f": "norm",
        "lm_head": "lm_head"}


def _mpt_kinds(raw: dict) -> dict:
    """numel per symllm kind of MptForCausalLM for ``raw`` on the meta device (a tied matrix once), the total,
    and the active count (dense: the total)."""
    model = _hf_model(raw)
    out = {"total": sum(p.numel() for p in model.parameters())}
    for name, p in model.named_parameters():
        kind = _MPT[name.split(".")[-2]]
        out[kind] = out.get(kind, 0) + p.numel()
    out["active"] = out["total"]
    return out


def test_mpt_7b_equals_transformers_and_its_published_size():
    """mosaicml/mpt-7b as published: each kind of parameter (a weight-only LayerNorm before attention and before
    the MLP, one Wqkv, no bias anywhere, no position embedding), the total and the active count equal
    MptForCausalLM on the meta device; the total is the model card's 6.7B within 1% (tests/data/published_params.json:
    6,649,286,656 is 0.76% under it; the card's figure is not the rounding of this count, which is 6.6B)."""
    assert by_kind(symllm.params("mpt-7b")) == _mpt_kinds(MPT_7B)
    assert abs(symllm.params("mpt-7b")["total"] / 6.7e9 - 1) <= 0.01


def test_mpt_7b_block_by_hand():
    """One MPT-7B block by hand (d 4096, MHA): Wqkv 3d², out_proj d², the MLP's up and down 2·4d·d, two
    LayerNorm weights of d; the model: 32 blocks, the tied embedding V·d (V 50432) and norm_f's d, 6,649,286,656."""
    d, V, L = 4096, 50432, 32
    counts = symllm.params("mpt-7b")
    assert counts["block"] == 3 * d * d + d * d + 2 * 4 * d * d + 2 * d
    assert counts["total"] == L * (12 * d * d + 2 * d) + V * d + d == 6_649_286_656


@given(mpt_configs(), st.integers(1, 2), st.integers(1, 6), st.integers(0, 3))
def test_random_mpt_equals_transformers(raw, b, s, n):
    """Random MPT configs (MosaicML's key names, tied or not, attn_config keys that count nothing): parameters
    per kind equal MptForCausalLM's on the meta device; a prefill of s tokens and n decode steps through its own
    cache have symllm's matmul FLOPs (ALiBi, the LayerNorms and the GELU add none), and the cache holds what
    symllm counts."""
    cfg = from_hf(raw)
    assert by_kind(symllm.params(cfg)) == _mpt_kinds(raw)
    generation_agrees(raw, b, s, n)


@given(mpt_configs(), st.integers(1, 2), st.integers(1, 5))
def test_random_mpt_training_flops_equal_transformers(torch, raw, b, s):
    """A training step of MptForCausalLM (forward with every position's logits, then backward) on CPU has
    symllm's training matmul FLOPs under FlopCounterMode."""
    flops = training_step_flops(_hf_model(raw, "cpu"), raw["vocab_size"], b, s)
    assert costs.workload(from_hf(raw), batch=b, seq=s, logits="all")["flops"]["training_step"] == flops


@pytest.mark.parametrize("heads", [1, 3, 4, 6, 32])
def test_reference_alibi_slopes_are_transformers(torch, heads):
    """symllm's torch reference adds transformers' own ALiBi: its slopes equal those of
    ``build_mpt_alibi_tensor`` (the bias at distance -1 of each head), for head counts a power of 2 or not."""
    transformers = requires("transformers")
    from symllm.reference import _alibi_slopes
    table = transformers.models.mpt.modeling_mpt.build_mpt_alibi_tensor(heads, 4)  # (heads, 1, 4): slope·(j - 3)
    assert torch.allclose(_alibi_slopes(heads), -table[:, 0, 2])


def test_elementwise_of_alibi_and_the_exact_gelu_by_hand():
    """MPT's element-wise prefill over a model with the same sizes without ALiBi (d_model 8, 2 heads, 1 layer,
    b 1, s 3, every position's scores a dense s x s rectangle as transformers' eager attention computes them):
    ALiBi adds 1 per score, b·n_h·s·s = 18 (the LayerNorms and the GELU are the same in both)."""
    raw = {"model_type": "mpt", "d_model": 8, "n_heads": 2, "n_layers": 1, "vocab_size": 10}
    cfg = from_hf(raw)
    plain = cfg.replace(alibi=False)
    work = lambda c: costs.workload(c, batch=1, seq=3, attention="dense")["flops"]["elementwise"]  # noqa: E731
    assert work(cfg) - work(plain) == 1 * 2 * 3 * 3
    gelu, relu2 = cfg, cfg.replace(activation="relu2")
    assert work(gelu) - work(relu2) == (5 - 2) * 3 * 32  # the exact GELU 5, relu² 2, per element of 4·d = 32


@pytest.mark.parametrize("clip, clamped", [(8.0, True), (0.5, True), (0.0, False), (None, False)])
def test_clip_qkv_is_a_clamp_of_wqkvs_output(clip, clamped, cli, tmp_path):
    """attn_config.clip_qkv: MptAttention clamps Wqkv's output to [-c, c] when c is truthy (0.0 and null clamp
    nothing; transformers' MptAttentionConfig takes a float, and refuses an int): no parameter and no matmul FLOP changes; the element-wise prefill gains 2 (one compare a bound) per
    element of Wqkv's 3·d outputs, by hand over d_model 8, 1 layer, b 1, s 3: 2·1·3·24 = 144; count says so."""
    base = {"model_type": "mpt", "d_model": 8, "n_heads": 2, "n_layers": 1, "vocab_size": 10}
    raw = {**base, "attn_config": {"clip_qkv": clip}}
    work = lambda r: costs.workload(from_hf(r), batch=1, seq=3, attention="dense")["flops"]  # noqa: E731
    assert symllm.params(from_hf(raw)) == symllm.params(from_hf(base))
    assert all(work(raw)[k] == work(base)[k] for k in ("prefill", "decode_token", "training_step"))  # matmuls
    assert work(raw)["elementwise"] - work(base)["elementwise"] == (2 * 1 * 3 * 24 if clamped else 0)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = cli(["count", str(path)])
    assert r.code == 0 and ("q, k and v clamped to" in r.out) == clamped, r.err
    assert not clamped or f"q, k and v clamped to [-{clip:g}, {clip:g}]" in " ".join(r.out.split())


@pytest.mark.parametrize("attn, key", [
    ({"clip_qkv": 8}, "attn_config.clip_qkv: 8 is not a float (MptAttentionConfig refuses it)"),
    ({"clip_qkv": -1.0}, "attn_config.clip_qkv: expected a non-negative number or null, got -1.0"),
    ({"qk_ln": True}, "attn_config.qk_ln: True is ignored by transformers' mpt"),
    ({"alibi": False}, "attn_config.alibi: False is ignored by transformers' mpt"),
    ({"attn_type": "multiquery_attention"}, "attn_config.attn_type: 'multiquery_attention' is ignored"),
    ({"prefix_lm": True}, "attn_config.prefix_lm: True is ignored"),
    ({"kv_n_heads": 8}, "attn_config.kv_n_heads: not a key of transformers' MptAttentionConfig"),
    ({"attn_impl": "xformers"}, "attn_config.attn_impl: 'xformers' is not one of torch, flash, triton"),
])
def test_attn_config_keys_are_read_or_refused_in_one_line(cli, tmp_path, attn, key):
    """Each attn_config key transformers' MptAttention does not act as it says (or symllm does not model) is
    refused in one line naming it, exit 2, nothing on stdout."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MPT_7B, "attn_config": {**MPT_7B["attn_config"], **attn}}))
    r = cli(["count", str(path)])
    assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {key}") and r.err.count("\n") == 1


@pytest.mark.parametrize("change, key", [
    ({"expansion_ratio": 8}, "expansion_ratio: 8 is ignored by transformers' mpt"),
    ({"no_bias": False}, "no_bias: False is ignored by transformers' mpt"),
    ({"d_model": 4096, "hidden_size": 2048}, "d_model: 4096 differs from hidden_size 2048"),
    ({"n_layers": 2.0}, "n_layers: expected a positive integer, got 2.0"),
    ({"norm_type": "rmsnorm"}, "norm_type: 'rmsnorm' is ignored by transformers' mpt"),
])
def test_ignored_and_bad_keys_are_refused_naming_the_key(cli, tmp_path, change, key):
    """transformers' MptMLP is 4·d_model whatever expansion_ratio says and no linear has a bias whatever no_bias
    says: another value is refused as ignored; d_model and hidden_size are one attribute (attribute_map); an error
    names MosaicML's key as the file has it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MPT_7B, **change}))
    r = cli(["count", str(path)])
    assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {key}") and r.err.count("\n") == 1


def test_verify_a_saved_mpt_checkpoint_reads_its_config(tmp_path, cli):
    """transformers' save_pretrained of a tiny MPT writes attn_config with PreTrainedConfig's own keys beside
    MptAttentionConfig's (_name_or_path, id2label, ...): symllm reads that config.json, and its count equals the
    saved model's parameters (numel of MptForCausalLM, the tied matrix once)."""
    transformers, torch = requires("transformers"), requires("torch")
    model = transformers.MptForCausalLM(transformers.MptConfig(d_model=32, n_heads=4, n_layers=2, vocab_size=64))
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert "_name_or_path" in saved["attn_config"]  # what this test is about
    r = cli(["count", str(tmp_path / "config.json"), "--json"])
    assert r.code == 0, r.err
    assert json.loads(r.out)["params"]["total"] == sum(p.numel() for p in model.parameters())


def test_verify_a_saved_mpt_checkpoint_names_every_tensor_as_transformers(tmp_path, cli):
    """verify of MptForCausalLM's save_pretrained (bf16, sharded): MptModel's names (transformer.wte,
    transformer.blocks.{i}.norm_1, attn.Wqkv, attn.out_proj, norm_2, ffn.up_proj, ffn.down_proj,
    transformer.norm_f; the tied lm_head not saved) and shapes agree, exit 0, its tensor count the index's; a
    file whose Wqkv has one row too few is named in one line (the shape torch gave it, the config's), exit 1."""
    transformers, torch = requires("transformers"), requires("torch")
    safetensors = requires("safetensors.torch")
    torch.manual_seed(0)
    model = transformers.MptForCausalLM(transformers.MptConfig(d_model=32, n_heads=4, n_layers=2, vocab_size=64))
    model.to(torch.bfloat16).save_pretrained(tmp_path, max_shard_size="20KB")
    written = json.loads((tmp_path / "model.safetensors.index.json").read_text())["weight_map"]
    assert "transformer.blocks.1.attn.Wqkv.weight" in written and "lm_head.weight" not in written
    r = cli(["verify", tmp_path])
    assert r.code == 0 and f"{len(written)} tensors" in r.out and "agrees with the component tree" in r.out, r.out + r.err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((tmp_path / "config.json").read_text())
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    state["transformer.blocks.1.attn.Wqkv.weight"] = torch.zeros(95, 32, dtype=torch.bfloat16)
    safetensors.save_file(state, bad / "model.safetensors")
    r = cli(["verify", bad])
    lines = r.out.strip().splitlines()
    assert r.code == 1 and lines[-1] == ("bad: wrong shape: transformer.blocks.1.attn.Wqkv.weight is [95, 32], the "
                                         "config says [96, 32]"), r.out


@given(raw=mpt_configs())
def test_expected_names_and_shapes_are_transformers_state_dict(raw):
    """Every drawn MPT config: the tensors verify expects are MptForCausalLM's state dict on the meta device,
    name for name and shape for shape (a tied lm_head is not saved)."""
    from symllm.costs import checkpoints
    model = _hf_model(raw)
    tied = raw.get("tie_word_embeddings", True)
    sd = {k: list(v.shape) for k, v in model.state_dict().items() if not (k == "lm_head.weight" and tied)}
    mine = checkpoints.expected(from_hf(raw), "mpt", dtype=None)
    assert {k: v["shape"] for k, v in mine.items()} == sd


#: the linears PEFT finds in MptForCausalLM, by their module names
_MPT_LINEARS = ["Wqkv", "out_proj", "up_proj", "down_proj"]


@given(raw=mpt_configs(), rank=st.integers(1, 16),
       targets=st.none() | st.lists(st.sampled_from(_MPT_LINEARS), min_size=1, unique=True))
def test_lora_targets_equal_pefts_on_mpt(raw, rank, targets):
    """PEFT's get_peft_model on MptForCausalLM (meta device): its trainable count for any set of MPT's linears
    (Wqkv, out_proj, up_proj, down_proj, by their module names) equals symllm's; with no target_modules PEFT
    adapts Wqkv (its default for mpt), and symllm's default targets (wq, wv) adapt the one linear that holds
    them: the same count."""
    peft = requires("peft")
    from symllm.costs import finetune
    model = peft.get_peft_model(_hf_model(raw), peft.LoraConfig(r=rank, target_modules=targets))
    theirs = model.get_nb_trainable_parameters()[0]
    options = {"lora_rank": rank} | ({"lora_targets": ",".join(targets)} if targets else {})
    assert finetune.lora(from_hf(raw), **options)["params"]["trainable"] == theirs


def test_lora_of_mpt_7b_by_hand(cli):
    """mpt-7b (32 blocks, d = 4096, 4·d = 16384) at rank 16: Wqkv alone (the default) is 32·16·(4096 + 12288)
    = 8,388,608; the four linears 32·16·((4096 + 12288) + (4096 + 4096) + 2·(4096 + 16384)) = 33,554,432."""
    for targets, want in ((None, 8_388_608), ("Wqkv,out_proj,up_proj,down_proj", 33_554_432)):
        r = cli(["count", "mpt-7b", "--lora-rank", "16", "--json", *(["--lora-targets", targets] if targets else [])])
        assert r.code == 0 and json.loads(r.out)["params"]["trainable"] == want, r.err
