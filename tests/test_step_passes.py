"""A training step's passes outside its forward and backward as torchtitan runs them (issue 40's torchtitan rows;
symllm.costs.step_passes): AdamW's foreach update and the gradient clip over a rank's fp32 shard, and FSDP2's copy
of each gathered layer out of its all-gather buffer, on the compute stream. The torchtitan engine's
``optimizer_bytes`` and ``fsdp_copy_out_bytes`` (efficiency.json, each with its source) are checked against torch
itself: the bytes each op reads and writes, counted under torch's dispatcher on the CPU (AdamW as torchtitan
9dec370 builds it; FSDP2's ``fully_shard`` on a tiny Llama over a fake process group). The step's time is then
checked by hand arithmetic.
"""
from __future__ import annotations

from fractions import Fraction

import pytest

import symllm
from symllm.costs.figures import data
from symllm.costs.step_passes import step_passes_s

from .conftest import requires

P = 8_030_261_248  # Llama 3.1 8B's parameters (Meta's model card: 8.03B), one rank gathering all of them
STREAM = Fraction(88, 100)  # memory_stream, measured on the H200
HBM2E = 2400 * 10 ** 9  # the H100 96GB HBM2e of torchtitan's rows: 2.4 TB/s (the benchmark page)


def _moved(torch, watch):
    """A dispatch mode summing, per op, the bytes of the distinct ``watch``-sized tensors it reads and writes (an
    in-place op writes its first argument; a tensor read twice, as addcmul's gradient, is read once)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Moved(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.by_op = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))

            def big(tree):
                return {id(t): t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor) and watch(t)}
            read, written = big((args, kwargs)), big(out)
            if func._schema.name.endswith("_") or func._schema.name.startswith("aten::_foreach") and out is None:
                written.update(big(args[0]))  # in place: the first argument is written too
            moved = sum(t.numel() * t.element_size() for t in [*read.values(), *written.values()])
            self.by_op[str(func)] = self.by_op.get(str(func), 0) + moved
            return out
    return Moved()


def test_adamw_and_the_clip_move_the_engines_bytes_a_parameter():
    """torchtitan 9dec370's AdamW (foreach, betas 0.9 and 0.95, weight decay 0.1) and its clip (get_total_norm,
    then clip_grads_with_norm_, foreach) over four fp32 parameters of 1,000 elements with fp32 gradients: from the
    second step on (the moments exist), 92 bytes a parameter: 80 the update's eight passes, 12 the clip's two."""
    torch = requires("torch")
    n = 1000
    params = [torch.nn.Parameter(torch.randn(n)) for _ in range(4)]
    opt = torch.optim.AdamW(params, lr=8e-4, betas=(0.9, 0.95), weight_decay=0.1, foreach=True)
    for p in params:
        p.grad = torch.randn(n)
    opt.step()
    seen = _moved(torch, lambda t: t.numel() == n)
    with seen:
        norm = torch.nn.utils.get_total_norm([p.grad for p in params], 2.0, False, True)
        torch.nn.utils.clip_grads_with_norm_(params, 1.0, norm, True)
        opt.step()
    clip = seen.by_op.pop("aten._foreach_norm.Scalar") + seen.by_op.pop("aten._foreach_mul_.Tensor")
    assert clip == 12 * 4 * n
    assert sum(seen.by_op.values()) == 80 * 4 * n
    assert data()["engines"]["torchtitan"]["optimizer_bytes"] == 92


def test_fsdp2_copies_each_gathered_parameter_out_at_four_bytes():
    """FSDP2 over 4 fake ranks, bf16 parameters, each of a tiny Llama's 3 layers and the root resharded after
    forward: a forward and backward gathers every unit twice, and each gather's copy-out
    (fsdp.split_with_sizes_copy) reads the gathered bf16 buffer and writes the unsharded parameters, 2 + 2 bytes a
    parameter: 2 x 4 x 27,360 bytes a micro-batch (27,360 parameters: every first dimension divisible by 4, so
    nothing is padded)."""
    torch = requires("torch")
    transformers = requires("transformers")
    dist = requires("torch.distributed")
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    hf = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                                  num_attention_heads=4, num_key_value_heads=2, head_dim=8, tie_word_embeddings=False)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    try:
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(hf)
        params = sum(p.numel() for p in model.parameters())
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
        fully_shard(model, mp_policy=mp, reshard_after_forward=True)
        ids = torch.randint(0, 64, (1, 8))
        seen = _moved(torch, lambda t: t.dtype == torch.bfloat16)
        with seen:
            model(input_ids=ids, labels=ids).loss.backward()
    finally:
        dist.destroy_process_group()
    assert params == 27_360
    copied = {op: b for op, b in seen.by_op.items() if "split_with_sizes_copy" in op}
    assert list(copied.values()) == [2 * 4 * params]
    assert data()["engines"]["torchtitan"]["fsdp_copy_out_bytes"] == 4


def _step(monkeypatch=None, plain=False, **over) -> Fraction:
    work = dict(gpu="h100-sxm-hbm2e", engine="torchtitan", dp=8, zero_stage=3, seq=8192, batch=2, recompute="op")
    if plain:
        engine = data()["engines"]["torchtitan"]
        monkeypatch.delitem(engine, "optimizer_bytes")
        monkeypatch.delitem(engine, "fsdp_copy_out_bytes")
    return symllm.workload("llama3.1-8b", **{**work, **over})["time"]["expected"]["training_step_s"]


@pytest.mark.parametrize("over, gathers, shard", [
    ({}, 2, Fraction(P, 8)),                         # FSDP: two gathers a micro-batch, the optimizer's eighth
    ({"micro_batches": 3}, 6, Fraction(P, 8)),       # every micro-batch gathers again (fsdp_per_micro_batch)
    ({"zero_stage": 1}, 0, Fraction(P, 8)),          # ZeRO 1: no gathers, the optimizer states still sharded
])
def test_the_step_adds_the_passes_by_hand(monkeypatch, over, gathers, shard):
    """torchtitan's Llama 3.1 8B on 8 H100 96GB HBM2e (torchtitan-llama3.1-8b-h100x8-fsdp-bf16's layout):
    92 bytes a parameter of the rank's optimizer shard and 4 a gathered parameter a gather, at 0.88 of 2.4 TB/s;
    at its layout (92 x P/8 + 4 x 2 x P) bytes = 74.14 ms a step."""
    with_passes = _step(**over)
    hand = (92 * shard + 4 * gathers * P) / (STREAM * HBM2E)
    assert with_passes - _step(monkeypatch, plain=True, **over) == pytest.approx(float(hand), rel=1e-9)
    if not over:
        assert float(hand) == pytest.approx(0.074143, abs=1e-6)


def test_an_engine_without_the_figures_adds_nothing():
    """Megatron's engine sources neither figure (its fused optimizer is not read here): nothing is added."""
    assert step_passes_s(data()["engines"]["megatron"], shard=10 ** 9, params=8 * 10 ** 9, gathers=2, rate=1) == 0


# --- op checkpointing's element-wise rerun (op_recompute_bytes, step_passes.op_recompute_s) ---------------

def _elementwise_bytes(raw: dict, s: int, checkpointed: bool) -> int:
    """Bytes every op but the matmuls and SDPA reads and writes (views excluded) in a forward and backward of
    transformers' LlamaDecoderLayer (bf16, one sequence of ``s`` tokens), checkpointed with torchtitan's op
    policy (tests/test_selective.py) or not."""
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    from .test_selective import _layer, _torchtitan_policy
    torch = requires("torch")

    class Moved(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func._schema.name
            if name in ("aten::mm", "aten::addmm", "aten::bmm") or "scaled_dot_product" in name:
                return out
            ins = {t.untyped_storage().data_ptr(): t for t in tree_flatten((args, kwargs))[0]
                   if isinstance(t, torch.Tensor)}
            outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            inplace = name.endswith("_")
            if not inplace and any(o.untyped_storage().data_ptr() in ins for o in outs):
                return out  # a view: nothing moved
            written = [*outs, *([args[0]] if inplace and isinstance(args[0], torch.Tensor) else [])]
            Moved.total += sum(t.numel() * t.element_size() for t in [*ins.values(), *written])
            return out

    layer, x, pe = _layer(raw, 1, s)
    with Moved():
        if checkpointed:
            out = checkpoint(lambda h: layer(h, position_embeddings=pe), x, use_reentrant=False,
                             context_fn=lambda: create_selective_checkpoint_contexts(_torchtitan_policy()))
        else:
            out = layer(x, position_embeddings=pe)
        out.backward(torch.ones_like(out))
    return Moved.total


@pytest.mark.parametrize("d, d_ff, heads, kv_heads", [(1024, 2816, 8, 2), (1536, 4096, 12, 4)])
def test_op_checkpointing_reruns_the_measured_elementwise_bytes(d, d_ff, heads, kv_heads):
    """A token's extra element-wise bytes under torchtitan's op policy (the difference of 64 and 32 tokens,
    checkpointed less plain) at two widths the figure was not solved from: 78 d + 10 d_ff + 20 (q + kv), plus
    the rotary tables' reads the form leaves out, the same 1,072 bytes at head width 128 in both."""
    requires("transformers")
    raw = dict(hidden_size=d, intermediate_size=d_ff, num_attention_heads=heads, num_key_value_heads=kv_heads,
               head_dim=128, num_hidden_layers=1, vocab_size=128, rms_norm_eps=1e-5)
    extra = [(_elementwise_bytes(raw, s, True) - _elementwise_bytes(raw, s, False)) for s in (32, 64)]
    token = Fraction(extra[1] - extra[0], 32)
    per = data()["op_recompute_bytes"]
    form = per["d"] * d + per["d_ff"] * d_ff + per["qkv"] * 128 * (heads + kv_heads)
    assert token - form == 1072


def test_op_runs_its_linears_at_the_gemm_rate_and_its_passes_by_hand(monkeypatch):
    """torchtitan-llama3.1-8b-h100x8-fsdp-bf16's layout: op checkpointing adds wk, wo and w3 again,
    2 x 16,384 tokens x 32 layers x 4,096 x (1,024 + 4,096 + 14,336) FLOPs, at the bf16 GEMM table's 0.711 of
    989.4 TFLOP/s under the 500 W limit's (500/700)^0.2428 (no training factor), and its element-wise rerun,
    16,384 x 32 x 565,248 bytes at 0.88 of 2.4 TB/s = 140.32 ms."""
    import math
    flops = 2 * 16384 * 32 * 4096 * (1024 + 4096 + 14336)
    gamma = math.log(252.9 / 271.2) / math.log(300 / 400)
    linears = flops / (0.711 * 989.4e12 * (500 / 700) ** gamma)
    passes = 16384 * 32 * (78 * 4096 + 10 * 14336 + 20 * 5120) / (0.88 * 2.4e12)
    assert passes == pytest.approx(0.14032, abs=1e-5)
    op, none = _step(), _step(recompute="none")
    assert op - none == pytest.approx(linears + passes, rel=1e-9)


# --- one rate for every memory-bound pass of a training step -------------------------------------------------

@pytest.mark.parametrize("card, rate, model, options", [
    # Apple's unified memory: 800 GB/s (Apple's M2 Ultra page) at 0.85 (llama.cpp's Metal decode, PR #2917)
    ("apple-m2-ultra", Fraction(85, 100) * 800 * 10 ** 9, "qwen1.5-moe-a2.7b", dict(seq=512, optimizer="sgd")),
    ("apple-m2-ultra", Fraction(85, 100) * 800 * 10 ** 9, "llama3.2-1b", dict(engine="torchtitan", recompute="op")),
    # HBM: 3.35 TB/s (H100 SXM datasheet) at 0.88 (the device-to-device copy measured on an H200)
    ("h100-sxm", Fraction(88, 100) * 3350 * 10 ** 9, "llama3.2-1b",
     dict(engine="torchtitan", recompute="op", compute_dtype="fp8")),
])
def test_every_memory_bound_pass_of_a_step_streams_the_cards_own_memory(monkeypatch, card, rate, model, options):
    """A MoE layer's permutation and router passes, FP8's casts, op checkpointing's element-wise rerun, the
    optimizer's update and FSDP's copy-outs all move their bytes at one rate: the card's bandwidth at its own
    memory's streaming fraction (a unified-memory card's permutations streamed at the HBM figure before)."""
    from symllm.costs import efficiency
    seen = {}

    def spy(name, real):
        def call(*args, **kwargs):
            seen.setdefault(name, set()).add(kwargs["rate"])
            return real(*args, **kwargs)
        return call
    for name in ("moe_training_s", "fp8_quantize_s", "op_recompute_s", "step_passes_s"):
        monkeypatch.setattr(efficiency, name, spy(name, getattr(efficiency, name)))
    assert symllm.workload(model, gpu=card, **options)["time"]["expected"]["training_step_s"] is not None
    assert seen and all(rates == {rate} for rates in seen.values()), seen
    wanted = {"step_passes_s"} | ({"moe_training_s"} if "moe" in model else {"op_recompute_s"})
    assert wanted | ({"fp8_quantize_s"} if "compute_dtype" in options else set()) == set(seen)
