"""torchtitan's selective op activation checkpointing (``--selective-ac op``, symllm.costs.selective): the
FLOPs it recomputes and the bytes it keeps, against hand arithmetic and against torch's own selective
checkpointing run with torchtitan's policy on transformers' ``LlamaDecoderLayer``."""
from __future__ import annotations

import json
from collections import defaultdict
from functools import partial

import pytest
from hypothesis import given

import symllm
from symllm.errors import SymllmError

from .conftest import requires
from .strategies import hf_configs

torch = requires("torch")
transformers = requires("transformers")


def test_recomputed_flops_and_saved_bytes_by_hand():
    """Llama 3.1 8B (d 4096, 32 heads of 128, 8 KV heads, d_ff 14336, 32 layers), 2 x 8192 tokens, bf16.
    op recomputes wk, wo and w3 a layer: 2·T·d·(n_kv·d_h + n_h·d_h + d_ff) = 2·16384·4096·(1024 + 4096 +
    14336) = 2,611,340,115,968 FLOPs, x 32 layers = 83,562,883,710,976 on top of no recomputation. Each block
    keeps, beyond full recomputation's input, wq's, wv's, w1's and w2's outputs and SDPA's output in bf16,
    2·16384·(4096 + 1024 + 14336 + 4096 + 4096) = 905,969,664 bytes, and SDPA's fp32 log-sum-exp, 4·2·32·8192
    = 2,097,152: 908,066,816 a layer, 29,058,138,112 for 32."""
    opts = dict(batch=2, seq=8192)
    none = symllm.workload("llama3.1-8b", **opts)
    op = symllm.workload("llama3.1-8b", recompute="op", **opts)
    full = symllm.workload("llama3.1-8b", recompute=True, **opts)
    assert op["flops"]["training_step"] - none["flops"]["training_step"] == 83_562_883_710_976
    assert op["memory"]["activations"] - full["memory"]["activations"] == 29_058_138_112
    # HFU counts the recomputed linears, MFU does not: its model FLOPs are the step's without recomputation
    # (attention over the causal pairs, as MFU counts it)
    gpu = dict(gpu="h100-sxm", dp=8, zero_stage=3, engine="torchtitan", attention="causal", **opts)
    model = symllm.workload("llama3.1-8b", attention="causal", **opts)["flops"]["training_step"]
    t_op = symllm.workload("llama3.1-8b", recompute="op", **gpu)["time"]["expected"]
    assert t_op["hfu"] / t_op["mfu"] == pytest.approx((model + 83_562_883_710_976) / model, rel=1e-12)


@pytest.mark.parametrize("opts,field", [({"stack": "hf-sdpa"}, "stack"), ({"stack": "eager"}, "stack")])
def test_op_is_refused_where_it_is_not_modelled(opts, field):
    """One line naming the field: op under a stack other than fused (SDPA)."""
    with pytest.raises(SymllmError, match=f"^{field}: "):
        symllm.workload("llama3.1-8b", recompute="op", **opts)


def test_recomputation_is_one_field():
    """The policy is one workload field, none, full or op (what the JSON echoes), whichever flag set it; the
    flag's old Python spelling reads True as full and False as none; anything else is refused naming it."""
    assert [symllm.Workload(recompute=v).recompute for v in (True, False, "none", "full", "op")] == [
        "full", "none", "none", "full", "op"]
    assert symllm.Workload(recompute=True) == symllm.Workload(recompute="full")
    for bad in ("layer", 1, None, "selective"):
        with pytest.raises(SymllmError, match="^recompute: "):
            symllm.Workload(recompute=bad)
    with pytest.raises(SymllmError, match="^workload: unknown option 'selective_ac'"):
        symllm.Workload.of(selective_ac="op")


@pytest.mark.parametrize("argv,policy", [([], "none"), (["--recompute"], "full"), (["--selective-ac", "op"], "op"),
                                         (["--recompute", "--recompute"], "full")])
def test_each_flag_sets_the_one_field(cli, argv, policy):
    """--recompute and --selective-ac op, as users give them, set the one field the JSON echoes."""
    r = cli(["count", "llama3.2-1b", "--json", *argv])
    assert r.code == 0 and json.loads(r.out)["workload"]["recompute"] == policy
    assert "selective_ac" not in json.loads(r.out)["workload"]


@pytest.mark.parametrize("argv,field", [(["count", "llama3.1-8b", "--selective-ac", "op", "--recompute"], "recompute"),
                                        (["count", "llama3.1-8b", "--recompute", "--selective-ac", "op"], "selective_ac"),
                                        (["count", "llama3.1-8b", "--selective-ac", "layer"], "selective_ac"),
                                        (["count", "mixtral-8x7b", "--selective-ac", "op"], "recompute"),
                                        (["plan", "llama3.1-8b", "--gpus", "8xh100-sxm", "--train", "--selective-ac",
                                          "op"], "--selective-ac")])
def test_the_command_line_refuses_op_in_one_line(cli, argv, field):
    """Exit 2 and one line naming the field or the flag: both flags, an unknown policy, a mixture's blocks,
    and plan (which enumerates no and full recomputation itself and takes neither flag)."""
    r = cli(argv)
    assert r.code == 2 and r.out == ""
    assert len(r.err.strip().splitlines()) == 1
    assert (f"{field}: " if field != "--selective-ac" else "unrecognized arguments: --selective-ac op") in r.err


def test_memory_by_component_refuses_op():
    """Activations per component are those saved without recomputation: refused under op, naming it."""
    from symllm.costs.shares import memory_by_component
    with pytest.raises(SymllmError, match="^recompute: "):
        memory_by_component("llama3.1-8b", kinds=("activations",), recompute="op")


def test_op_is_refused_for_blocks_that_are_not_llamas():
    """A mixture's block has other matmuls than torchtitan's Llama block: refused, naming the field."""
    with pytest.raises(SymllmError, match="^recompute: op is modelled for Llama blocks"):
        symllm.workload("mixtral-8x7b", recompute="op")


# --- torch's own selective checkpointing, torchtitan's policy --------------------------------------------

def _torchtitan_policy():
    """torchtitan 9dec370's ``_custom_policy`` (parallelize_llama.py): save the ops of ``_save_list`` except
    every second ``aten.mm``; on CPU SDPA runs ``_scaled_dot_product_flash_attention_for_cpu``, added to the
    list as the CUDA kernels are in it."""
    from torch.utils.checkpoint import CheckpointPolicy
    ops = torch.ops.aten
    save = {ops.mm.default, ops._scaled_dot_product_efficient_attention.default,
            ops._scaled_dot_product_flash_attention.default, ops._scaled_dot_product_flash_attention_for_cpu.default,
            ops.abs.default, ops.max.default}
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
        if func == ops.mm.default:
            meta[key] += 1
        keep = func in save and not (func == ops.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def _layer(raw: dict, b: int, s: int):
    config = transformers.LlamaConfig(**{k: v for k, v in raw.items() if k not in ("model_type", "architectures")},
                                      attn_implementation="sdpa")
    torch.manual_seed(0)
    layer = transformers.models.llama.modeling_llama.LlamaDecoderLayer(config, 0).to(torch.bfloat16)
    rope = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
    x = torch.randn(b, s, config.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    positions = torch.arange(s).unsqueeze(0).expand(b, s)
    cos, sin = rope(x, positions)
    return layer, x, (cos.to(torch.bfloat16), sin.to(torch.bfloat16))


def _step_flops(layer, x, pe, context_fn=None) -> int:
    """Matmul FLOPs of one forward and backward of ``layer`` (checkpointed with ``context_fn``)."""
    from torch.utils.checkpoint import checkpoint
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter:
        if context_fn is None:
            out = layer(x, position_embeddings=pe)
        else:
            out = checkpoint(lambda h: layer(h, position_embeddings=pe), x, use_reentrant=False, context_fn=context_fn)
        out.float().sum().backward()
    return counter.get_total_flops()


def _stored_bytes(layer, x, pe) -> int:
    """Bytes torch's selective checkpoint stores for the block's backward under torchtitan's policy: the
    outputs its caching mode keeps after the forward (the private storage create_selective_checkpoint_contexts
    builds, here built the same way to be read)."""
    from torch.utils.checkpoint import _CachedTorchDispatchMode, _CachingTorchDispatchMode, checkpoint
    storage = defaultdict(dict)
    policy = _torchtitan_policy()
    out = checkpoint(lambda h: layer(h, position_embeddings=pe), x, use_reentrant=False,
                     context_fn=lambda: (_CachingTorchDispatchMode(policy, storage),
                                         _CachedTorchDispatchMode(None, storage, False)))
    seen, total = set(), 0
    for calls in storage.values():
        for result in calls.values():
            for leaf in torch.utils._pytree.tree_leaves(result):
                leaf = getattr(leaf, "val", leaf)  # each kept output is wrapped with its version
                if isinstance(leaf, torch.Tensor) and leaf.data_ptr() not in seen:
                    seen.add(leaf.data_ptr())
                    total += leaf.numel() * leaf.element_size()
    out.float().sum().backward()  # the stored outputs serve the recomputation
    return total


@given(raw=hf_configs(kind="llama").map(lambda r: {**r, "attention_bias": False, "mlp_bias": False}))
def test_op_agrees_with_torch_selective_checkpointing(raw):
    """Any small Llama block (GQA/MQA/MHA, head widths stated or derived, no biases: torchtitan's Llama has
    none): torch's own selective checkpointing with torchtitan's policy on transformers' LlamaDecoderLayer
    recomputes, under FlopCounterMode, exactly the FLOPs symllm adds a layer for op checkpointing, and its
    checkpoint stores exactly the bytes symllm keeps a layer beyond full recomputation's input (bf16
    activations, fp32 log-sum-exp)."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    b, s = 2, 8
    layer, x, pe = _layer(raw, b, s)
    plain = _step_flops(layer, x, pe)
    sac = _step_flops(layer, x, pe, context_fn=partial(create_selective_checkpoint_contexts, _torchtitan_policy()))
    stored = _stored_bytes(layer, x, pe)
    from symllm.arch.config import from_dict
    config = from_dict(raw)
    layers = raw["num_hidden_layers"]
    opts = dict(batch=b, seq=s, dtype="bf16")
    none, op, full = (symllm.workload(config, **opts, **extra)
                      for extra in ({}, {"recompute": "op"}, {"recompute": True}))
    assert (op["flops"]["training_step"] - none["flops"]["training_step"]) == layers * (sac - plain)
    assert op["memory"]["activations"] - full["memory"]["activations"] == layers * stored


def test_torchtitan_fp8_runs_the_linears_only_at_the_fp8_peak():
    """torchtitan's Float8 converter swaps every nn.Linear but the output head (torchtitan 9dec370
    float8.py: module_filter_fn fqn != "output"): on one H100 SXM (memory widened so the step fits, nothing
    sent) a Llama 3.1 8B step of 8,192 tokens runs its blocks' linears, 3 x 2·8192·32·(4096·(4096 + 2·1024) +
    4096·4096 + 3·4096·14336) FLOPs, at the fp8 GEMM table and peak (1,978.9 TFLOP/s), and the head
    (3 x 2·8192·4096·128256) at bf16's (989.4), each at torchtitan's train_factor 0.75. DeepSpeed's engine (no
    such filter, no FP8 recipe's cast passes) runs its linears and head at fp8, at its train_factor 0.7. Both run
    the attention core as FlashAttention-2 on an H100 in bf16 (the FA3 paper's convention: a forward of
    4·32·128·(8192²/2)·32 FLOPs at its causal 333 TFLOP/s, the backward 2.5 times those in what is left of the FA2
    paper's causal forward + backward bar, 3.5 forwards at 308 TFLOP/s: 3.5 forwards at 308 in all). Each
    factor is read on the rest of the step (x 0.9645, attention_tiles.train_basis) and on the H100 SXM's memory:
    its time beyond the
    GEMMs has 0.43 streaming 4,800/3,350 times as long as on the H200 (train_bandwidth). torchtitan's AdamW and
    clip then pass over its 8,030,261,248 fp32 parameters, 92 bytes each at 0.88 of 3.35 TB/s (optimizer_bytes:
    tests/test_step_passes.py), and its Float8Linear casts (torchao's roofline, tests/test_fp8_quantize_time.py)
    each linear's input and output gradient, 8192 x 32 x ((4096 + 4096) + (4096 + 14336) + (4096 + 2·1024 + 4096) +
    (2·14336 + 4096)) elements, and its weights, 32 x (4096·(4096 + 2·1024) + 4096·4096 + 3·4096·14336), at 6 bytes
    an element and the same 0.88 of 3.35 TB/s."""
    from fractions import Fraction
    from symllm.costs.efficiency import gemm
    t, layers = 8192, 32
    linears = 3 * 2 * t * layers * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336)
    head = 3 * 2 * t * 4096 * 128256
    basis = Fraction("0.9645")
    paper = Fraction(4 * 32 * 128 * (t * t // 2) * layers)  # one forward on s²/2 pairs, as the figures count
    attention = Fraction(7, 2) * paper / 308 / 10 ** 12
    fp8, bf16 = gemm("fp8", 16384, "h100-sxm") * 1_978_900_000_000_000, gemm("bf16", 16384, "h100-sxm") * 989_400_000_000_000
    opts = dict(gpu="h100-sxm", gpu_memory=1000, batch=1, seq=t, compute_dtype="fp8")
    titan = symllm.workload("llama3.1-8b", engine="torchtitan", **opts)["time"]["expected"]["training_step_s"]
    other = symllm.workload("llama3.1-8b", engine="deepspeed", **opts)["time"]["expected"]["training_step_s"]
    memory = 1 - Fraction(43, 100) + Fraction(43, 100) * Fraction(4800, 3350)
    f_titan, f_other = (1 / (1 + (1 / (f * basis) - 1) * memory) for f in (Fraction(3, 4), Fraction(7, 10)))
    adamw = Fraction(92 * 8_030_261_248) / (Fraction(88, 100) * 3350 * 10 ** 9)
    casts = Fraction(6 * (t * layers * (8192 + 18432 + 10240 + 32768) + 32 * 218_103_808)) / (
        Fraction(88, 100) * 3350 * 10 ** 9)
    assert titan == pytest.approx(float(Fraction(linears) / (fp8 * f_titan)
                                        + Fraction(head) / (bf16 * f_titan) + attention + adamw + casts), rel=1e-12)
    assert other == pytest.approx(float(Fraction(linears + head) / (fp8 * f_other) + attention), rel=1e-12)


def test_op_flops_of_a_blocks_parts():
    """Per part (what `derive` sums): a block's attention adds its wk and wo once more, its feed-forward its
    w3, a part outside the blocks (the head) nothing."""
    import sympy as sp
    from symllm.arch import symbols as S
    from symllm.costs.phases import flops
    attention = sp.expand(flops("attention", "training", recompute="op") - flops("attention", "training"))
    ffn = sp.expand(flops("feed_forward", "training", recompute="op") - flops("feed_forward", "training"))
    assert attention == sp.expand(2 * S.b * S.s * S.d * (S.n_kv * S.d_h + S.n_h * S.d_h))  # wk and wo: 2·T·d·(n_kv·d_h + n_h·d_h)
    assert ffn == 2 * S.b * S.s * S.d * S.d_ff                                    # w3: 2·T·d·d_ff
    assert flops("lm_head", "training", recompute="op") == flops("lm_head", "training")


def test_op_checkpointing_runs_again_the_collectives_it_does_not_save():
    """torchtitan's op policy saves ``reduce_scatter_tensor`` (its ``_save_list``, 9dec370) and nothing else of
    a block's collectives: recomputing a block runs its all-gathers (sequence parallel: one before wq/wk/wv,
    one before w1/w3) or its row linears' all-reduces (without: wo, w2, two ring passes each) again, where
    full recomputation runs every forward collective again. By hand at b = 1, s = 8, d = 16, 2-byte
    activations, 4 ranks, 3 layers, one stage: a ring pass of the 256-byte residual sends 256 - 256/4 = 192."""
    from symllm.arch import symbols as S
    from symllm.arch.components import model
    from symllm.costs import parallel

    at = {S.b: 1, S.s: 8, S.d: 16, S.beta_a: 2, S.N_t: 4, S.L: 3, S.N_p: 1}

    def tp(seq, recompute):
        return parallel.comm(model(), seq, recompute)["tp"].subs(at)

    assert tp(True, "op") - tp(True, "none") == 2 * 3 * 192     # the two all-gathers a layer
    assert tp(True, "full") - tp(True, "none") == 4 * 3 * 192   # and the two reduce-scatters
    assert tp(False, "op") - tp(False, "none") == 2 * 2 * 3 * 192 == tp(False, "full") - tp(False, "none")


def test_op_checkpointing_casts_and_reruns_only_the_recomputed_linears_by_hand():
    """The one policy's other readers (wk, wo and w3 recomputed; wq, wv, w1 and w2 saved):
    FP8 current scaling casts again the inputs of the recomputed linears only: one layer of 1,000 rows, d 1024,
    q 1024, kv 256, d_ff 4096: the forward casts 1000·((1024 + 1024) + (1024 + 4096)) elements, op 1000·(1024 +
    1024 + 1024) more (wk's d, wo's q, w3's d), full recomputation 7,168,000 more; backward 1000·((1536 + 1024) +
    (8192 + 1024)); 6 bytes an element (Hopper) at 0.88 of 1 TB/s.
    LoRA of rank 8 on all seven linears of llama3.2-1b (16 layers), one sequence of 4,096 bf16 tokens: under op
    each block keeps the r-wide intermediate of the four saved linears' adapters, 4·2·4096·8 = 262,144 bytes a
    layer, 16 layers 4,194,304, beyond what op keeps without LoRA; the one block recomputed in backward holds all
    seven, 7·65,536 = 458,752 (full recomputation: that one block's alone)."""
    from fractions import Fraction
    from symllm.costs import fp8_casts
    args = dict(rows=1000, layers=1, d=1024, d_ff=4096, q=1024, kv=256, rate=Fraction(88, 100) * 10 ** 12)
    forward, backward = 1000 * ((1024 + 1024) + (1024 + 4096)), 1000 * ((1536 + 1024) + (8192 + 1024))
    per = Fraction(6) / (Fraction(88, 100) * 10 ** 12)
    assert fp8_casts.fp8_quantize_s(**args, recompute="op") == (forward + 1000 * 3 * 1024 + backward) * per
    assert fp8_casts.fp8_quantize_s(**args, recompute=True) == (2 * forward + backward) * per
    lora = dict(lora_rank=8, lora_targets="wq,wk,wv,wo,w1,w2,w3", batch=1, seq=4096)
    op = symllm.workload("llama3.2-1b", recompute="op", **lora)["memory"]
    full = symllm.workload("llama3.2-1b", recompute="full", **lora)["memory"]
    adapter = 2 * 4096 * 8
    assert op["lora_activations"] - op["activations"] == 16 * 4 * adapter + 7 * adapter == 4_653_056
    assert full["lora_activations"] - full["activations"] == 7 * adapter


def test_op_checkpointing_reruns_a_recomputed_linears_lora_branch():
    """A recomputed linear's LoRA branch runs its forward again: wk's adapter on a block (d -> n_kv·d_h through r)
    adds 2·T·r·(d + n_kv·d_h) recomputed FLOPs, wq's (saved) none."""
    import sympy as sp
    from symllm.arch import symbols as S
    from symllm.arch.components import block
    from symllm.costs import finetune, selective
    base = selective.recomputed_flops(block())
    T, r = S.b * S.s, S.r_lora
    assert sp.expand(selective.recomputed_flops(finetune.adapt(block(), "wk")) - base) == \
        sp.expand(2 * T * r * (S.d + S.n_kv * S.d_h))
    assert sp.expand(selective.recomputed_flops(finetune.adapt(block(), "wq")) - base) == 0
