"""A training step's data-parallel traffic and optimizer pass for parameters that get no gradient (issue 40;
``Rules.no_grad``: DeepSeek Sparse Attention's indexer, whose one output, top-k indices, carries no gradient).

What torch 2.13.0 does with such a parameter, checked here on a small module whose ``idx`` branch only picks
indices (``topk(...).indices``), as the indexer does:

* FSDP2 (``fully_shard``, ZeRO 3) all-gathers every parameter, forward and backward, and reduce-scatters only
  the gradients that exist (``FSDPParamGroup.post_backward``'s ``fsdp_params_with_grad``;
  ``reduce_scatter_unused_params`` False by default);
* DDP (ZeRO 0) with ``find_unused_parameters=True`` (without it the second step stops: "Expected to have finished
  reduction in the prior iteration") all-reduces whole buckets, the unused parameter's slot included;
* both leave that parameter's ``.grad`` None, which ``torch.optim.AdamW`` (``Adam._init_group``: ``if p.grad is not
  None``, for the foreach, fused and single-tensor paths alike) and ``clip_grad_norm_`` skip.

Hand arithmetic for DeepSeek-V3.2 (deepseek-ai/DeepSeek-V3.2-Exp config.json and inference/model.py's
``Indexer``): each of the 61 layers' indexer holds ``wq_b`` (q_lora_rank 1536 -> index_n_heads 64 x
index_head_dim 128), ``wk`` (hidden 7168 -> 128), ``k_norm`` (a LayerNorm of 128: weight and bias) and
``weights_proj`` (7168 -> 64), no biases elsewhere: 12,582,912 + 917,504 + 256 + 458,752 = 13,959,424 a layer,
851,524,864 in all.
"""
from __future__ import annotations

import pytest

import symllm
from symllm.costs.figures import data
from symllm.costs.numbered import values
from symllm.costs.rings import dp_bytes

from .conftest import requires

INDEXER = 61 * (1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64)


def test_the_indexer_is_what_gets_no_gradient():
    assert INDEXER == 851_524_864
    mdl = symllm.spec("deepseek-v3.2").model()
    assert (mdl.total("params") - mdl.trained().total("params")).subs(values("deepseek-v3.2")) == INDEXER


def test_zero_3_reduce_scatters_the_trained_gradients_and_zero_0_all_reduces_every_bucket():
    """Over 8 ranks, no tensor or pipeline split, one expert group: ZeRO 0 all-reduces the bf16 gradients of every
    parameter (2 ring shares of each of the two rings, the dense parameters' and the experts'); ZeRO 3 gathers the
    bf16 weights twice and reduce-scatters once, 3/2 of that, less the indexer's gradients' ring share: 2I bytes, of
    which a ring over 8 sends 7/8 (8 divides 2I = 1,703,049,728, so the whole chunks change by exactly that)."""
    zero_0 = symllm.workload("deepseek-v3.2", dp=8, zero_stage=0)["comm"]["dp"]
    zero_3 = symllm.workload("deepseek-v3.2", dp=8, zero_stage=3)["comm"]["dp"]
    assert (2 * INDEXER) % 8 == 0 and zero_0 % 2 == 0
    assert zero_3 == 3 * zero_0 // 2 - 7 * (2 * INDEXER) // 8
    assert 7 * (2 * INDEXER) // 8 == 1_490_168_512


def test_the_optimizer_updates_the_trained_parameters_and_fsdp_copies_out_all(monkeypatch):
    """torchtitan at ZeRO 3 over 256 H200s, no expert split: a rank's update pass runs over its shard of the
    parameters that get a gradient, ``(P - I)/256`` at the engine's ``optimizer_bytes`` (92), while FSDP2's two
    copy-outs a micro-batch (forward, backward) write every gathered parameter, ``2P`` at ``fsdp_copy_out_bytes``
    (4). Both run at the same memory rate, so their added seconds stand in the ratio 92(P - I)/256 : 8P."""
    work = dict(gpu="h200", engine="torchtitan", dp=256, zero_stage=3, seq=4096, batch=1, recompute=True)
    engine = data()["engines"]["torchtitan"]

    def step(optimizer_bytes, copy_out_bytes):
        monkeypatch.setitem(engine, "optimizer_bytes", optimizer_bytes)
        monkeypatch.setitem(engine, "fsdp_copy_out_bytes", copy_out_bytes)
        return symllm.workload("deepseek-v3.2", **work)["time"]["expected"]["training_step_s"]

    P = symllm.workload("deepseek-v3.2", **work)["params"]["per_gpu"]
    none = step(0, 0)
    update, copies = step(92, 0) - none, step(0, 4) - none
    assert update > 0 and copies > 0
    assert update / copies == pytest.approx(92 * (P - INDEXER) / 256 / (8 * P), rel=1e-6)
    assert update / copies != pytest.approx(92 * P / 256 / (8 * P), rel=1e-6)  # not every parameter's


def test_lora_updates_the_adapters_that_get_a_gradient(monkeypatch):
    """LoRA under torchtitan on a 4-layer DeepSeek-V3.2 (1 dense, 3 MoE layers): adapting the indexer's
    ``weights_proj`` beside ``wq_b`` adds adapters PEFT counts trainable, 4 layers x 16 x (7168 + 64) = 462,848, that
    never get a gradient; the optimizer's update pass (its seconds: the step at ``optimizer_bytes`` 92 less at 0)
    is the same with or without them."""
    spec = symllm.resolve("deepseek-v3.2")
    tiny = spec.replace(n_layers=4, layers=((spec.layers[0][0], 1), (spec.layers[-1][0], 3)))
    engine = data()["engines"]["torchtitan"]

    def run(targets, optimizer_bytes):
        monkeypatch.setitem(engine, "optimizer_bytes", optimizer_bytes)
        return symllm.workload(tiny, gpu="h200", engine="torchtitan", lora_rank=16, lora_targets=targets, seq=2048,
                               batch=1)

    both, alone = run("wq_b,weights_proj", 92), run("wq_b", 92)
    assert both["params"]["trainable"] - alone["params"]["trainable"] == 4 * 16 * (7168 + 64) == 462_848
    update = [run(t, 92)["time"]["expected"]["training_step_s"] - run(t, 0)["time"]["expected"]["training_step_s"]
              for t in ("wq_b,weights_proj", "wq_b")]
    assert update[0] > 0 and update[0] == pytest.approx(update[1], rel=1e-9)


RANKS = 4
WIDTH, PICKED = 16, 8  # each block: main 16 x 16 (trained), idx 16 -> 8 (only picks indices)


def _blocks(torch):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.main = torch.nn.Linear(WIDTH, WIDTH, bias=False)
            self.idx = torch.nn.Linear(WIDTH, PICKED, bias=False)

        def forward(self, x):  # idx's output reaches the loss only as indices: no gradient flows into it
            top = self.idx(x).topk(4, dim=-1).indices
            return x + self.main(x).gather(-1, top).sum(-1, keepdim=True)

    torch.manual_seed(0)
    return torch.nn.Sequential(Block(), Block())


ALL = 2 * (WIDTH * WIDTH + WIDTH * PICKED)  # 768 parameters
TRAINED = 2 * WIDTH * WIDTH                 # 512 get a gradient


def _fake_group(dist):
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=RANKS)


def test_fsdp2_reduce_scatters_only_the_gradients_that_exist():
    """Each block and the root ``fully_shard``-ed over a fake group of 4, bf16 parameters, fp32 reduce: the
    all-gathers carry every parameter twice (forward, backward), the reduce-scatters the 512 trained ones only;
    rank 0 sends 3 of 4 chunks of each: 2 x 3/4 x 2 x 768 + 3/4 x 4 x 512 = 2,304 + 1,536 = 3,840 bytes, the
    ZeRO 3 form at 4 gradient bytes, one round."""
    torch = requires("torch")
    dist = requires("torch.distributed")
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.utils._python_dispatch import TorchDispatchMode

    class Collectives(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.gathered = self.scattered = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = str(func)
            if name.startswith("c10d._allgather_base_"):  # (output, input): n - 1 chunks of the input sent
                self.gathered += (RANKS - 1) * args[1].numel() * args[1].element_size()
            elif name.startswith("c10d._reduce_scatter_base_"):  # (output, input): n - 1 chunks of the output
                self.scattered += (RANKS - 1) * args[0].numel() * args[0].element_size()
            return func(*args, **(kwargs or {}))

    _fake_group(dist)
    try:
        model = _blocks(torch)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for block in model:
            fully_shard(block, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        with Collectives() as seen:
            model(torch.randn(2, WIDTH)).sum().backward()
        assert [p.grad is None for p in model.parameters()] == [False, True, False, True]
    finally:
        dist.destroy_process_group()
    assert (seen.gathered, seen.scattered) == (2 * 3 * 2 * ALL // 4, 3 * 4 * TRAINED // 4) == (2304, 1536)
    assert seen.gathered + seen.scattered == dp_bytes(ALL, RANKS, 3, 4, 1, trained=TRAINED) == 3840


def test_ddp_all_reduces_every_bucket_with_the_unused_parameters():
    """DDP over a fake group of 4 with ``find_unused_parameters=True``: a comm hook sees each step's bucket hold all
    768 parameters (the unused ones' slots too), and their ``.grad`` stays None; ZeRO 0's form ignores ``trained``:
    an all-reduce of 4 x 768 bytes sends 2 x 3/4 of them, 4,608."""
    torch = requires("torch")
    dist = requires("torch.distributed")
    from torch.nn.parallel import DistributedDataParallel

    _fake_group(dist)
    try:
        ddp = DistributedDataParallel(_blocks(torch), find_unused_parameters=True)
        buckets = []

        def hook(state, bucket):  # records the bucket and hands it back as reduced (the fake group sends nothing)
            buckets.append(bucket.buffer().numel())
            done = torch.futures.Future()
            done.set_result(bucket.buffer())
            return done

        ddp.register_comm_hook(None, hook)
        for _ in range(2):  # the second step runs only where the first step's reduction finished
            ddp(torch.randn(2, WIDTH)).sum().backward()
        assert ddp.module[0].idx.weight.grad is None and ddp.module[0].main.weight.grad is not None
    finally:
        dist.destroy_process_group()
    assert buckets == [ALL, ALL]
    assert dp_bytes(ALL, RANKS, 0, 4, 1, trained=TRAINED) == 2 * (3 * 4 * ALL // 4) == 4608
