"""Expert parallelism (symllm.costs.parallel, ``--ep``): per-GPU parameters, training states and all-to-all
bytes against torch.

Expected numbers come from torch, run in the test, or from the convention written out here:

* parameters: the torch reference model with mixture-of-experts layers (Mixtral-like, or Llama 4-like with
  dense layers in between and a shared expert) on the meta device, under a fake process group of
  ``N_d·N_t`` ranks laid out as a ``(N_d/N_e, N_e, N_t)`` device mesh (the expert-parallel ranks carved out
  of the data-parallel ones, as DeepSpeed-MoE and Megatron-LM do): torch's DTensor tensor-parallel plan on
  the attention, the dense feed-forwards, the shared expert, the embedding and the head over the ``tp``
  dimension; every MoE layer's routed experts stacked into ``(n_e, ...)`` tensors (torchtitan's
  ``GroupedExperts`` layout) and distributed with ``Shard(0)`` over the ``ep`` dimension (torchtitan's
  ``ExpertParallel``) and, under ``expert_tp="split"`` (the default), each expert's width split over the
  ``tp`` dimension as vLLM's ``FusedMoE`` lays its weights out (``w13_weight`` ``(n_e, 2·d_ff/tp, d)``
  column-wise, ``w2_weight`` ``(n_e, d, d_ff/tp)`` row-wise; a down-projection bias whole on each rank):
  ``Shard(1)`` of the stacked gate/up weights and biases, ``Shard(2)`` of the stacked down weights, over
  ``tp`` (under ``"whole"`` replicated over ``tp``); rank 0's local shards summed over the largest
  pipeline stage;
* training states: mixed-precision Adam's 16 bytes a parameter (2 + 2 + 12), ZeRO stage ``z`` sharding the
  last of them over the data-parallel ranks that hold the same tensor: all ``N_d`` for the measured
  non-expert shards, the ``N_d/N_e`` of the ``edp`` mesh dimension for the measured expert shards;
* all-to-all: an expert-parallel dispatch and combine written here with torch's functional
  ``all_to_all_single_autograd`` over the ``ep`` group, one pair per MoE layer, run forward and backward
  (and with ``torch.utils.checkpoint`` around each layer); ``CommDebugMode`` counts the collectives, and
  the bytes a rank sends are read off each call's ``input_split_sizes`` (the rows for other ranks),
  with uniform routing: each rank sends ``b·s·k/N_e`` of its routed token rows to every rank, itself
  included.
"""
import contextlib
import dataclasses
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.cli import main

from .conftest import requires
from .strategies import moe_layouts

torch = requires("torch")
dist = requires("torch.distributed")
from symllm import reference  # noqa: E402  (needs torch)

from .test_parallel import _local, _stage_params, _stages  # noqa: E402


@contextlib.contextmanager
def fake_mesh(dp: int, ep: int, tp: int):
    """A fake process group of ``dp·tp`` ranks (this process is rank 0) and its (edp, ep, tp) CPU mesh."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=dp * tp)
    try:
        yield init_device_mesh("cpu", (dp // ep, ep, tp), mesh_dim_names=("edp", "ep", "tp"))
    finally:
        dist.destroy_process_group()


def _plan(model) -> dict:
    """torch's tensor-parallel plan for every linear symllm's PLAN splits (routed experts excluded)."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel
    plan = {"tok_embeddings": RowwiseParallel(input_layouts=Replicate()), "output": ColwiseParallel()}
    for i, layer in enumerate(model.layers):
        p = f"layers.{i}."
        plan.update({p + "attention.wq": ColwiseParallel(), p + "attention.wk": ColwiseParallel(),
                     p + "attention.wv": ColwiseParallel(), p + "attention.wo": RowwiseParallel()})
        ffn = layer.feed_forward
        dense = p + "feed_forward." if hasattr(ffn, "w1") else (
            p + "feed_forward.shared_expert." if getattr(ffn, "shared_expert", None) is not None else None)
        if dense:
            plan.update({dense + "w1": ColwiseParallel(), dense + "w3": ColwiseParallel(),
                         dense + "w2": RowwiseParallel()})
    return plan


def _expert_parallel(model, mesh, split: bool) -> None:
    """Each MoE layer's routed experts as three stacked (n_e, out, in) weights (and their (n_e, out) biases
    where gpt-oss has them), Shard(0) over ``ep``; ``split``: over ``tp`` too, w1 and w3 (and their biases)
    along their output features, w2 along its input features (its bias replicated)."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    def placements(name, kind):
        if not split:
            return mesh["ep"], [Shard(0)]
        over_tp = Shard(1) if name in ("w1", "w3") else Shard(2) if kind == "weight" else Replicate()
        return mesh["ep", "tp"], [Shard(0), over_tp]

    class GroupedExperts(torch.nn.Module):
        def __init__(self, experts):
            super().__init__()
            for name in ("w1", "w2", "w3"):
                for kind in ("weight", "bias"):
                    if getattr(getattr(experts[0], name), kind) is None:
                        continue
                    with torch.no_grad():  # a leaf, as a stacked checkpoint would load it
                        stacked = torch.stack([getattr(getattr(e, name), kind) for e in experts])
                    setattr(self, f"{name}_{kind}",
                            torch.nn.Parameter(distribute_tensor(stacked, *placements(name, kind))))

    for layer in model.layers:
        if hasattr(layer.feed_forward, "experts"):
            layer.feed_forward.experts = GroupedExperts(layer.feed_forward.experts)


def _sharded_reference(cfg, mesh, split: bool = False):
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.parallel import parallelize_module
    model = reference.build(cfg, device="meta")
    tied = model.output.weight is model.tok_embeddings.weight
    parallelize_module(model, mesh["tp"], _plan(model))
    if tied:  # parallelize_module gives each its own DTensor; both split the vocabulary rows
        model.output.weight = model.tok_embeddings.weight
    for layer in model.layers:  # gpt-oss's sinks, one per query head: Shard(0) (GptOssConfig's "local_rowwise")
        if layer.attention.sinks is not None:
            layer.attention.sinks = torch.nn.Parameter(distribute_tensor(layer.attention.sinks, mesh["tp"], [Shard(0)]))
    _expert_parallel(model, mesh, split)
    return model


def _is_expert(name: str) -> bool:
    return ".experts." in name


@given(moe_layouts(), st.sampled_from(["split", "whole"]))
def test_per_gpu_params_and_states_equal_torch_shards(layout, expert_tp):
    """params.per_gpu is rank 0's local DTensor shards of the largest stage (routed experts Shard(0) over
    the ep mesh dimension and, under expert_tp "split", each expert's width sharded over tp; the rest under
    the tensor-parallel plan); memory_per_gpu.training_states shards the expert states over the N_d/N_e
    ranks of the edp dimension, the others over N_d."""
    cfg, deg = layout
    if expert_tp == "split" and cfg.hidden_dim % deg["tp"]:  # the engines refuse it (test_refusals_are_one_line)
        cfg = dataclasses.replace(cfg, hidden_dim=cfg.hidden_dim * deg["tp"])
    with fake_mesh(deg["dp"], deg["ep"], deg["tp"]) as mesh:
        model = _sharded_reference(cfg, mesh, split=expert_tp == "split")
        assert mesh["edp"].size() * mesh["ep"].size() == deg["dp"]
        split = _stages(cfg.n_layers, deg["pp"])
        stages = []
        for i, layers in enumerate(split):
            first, last = i == 0, i == deg["pp"] - 1
            total = _stage_params(model, layers, first, last)
            experts = sum(_local(p) for j in layers for n, p in model.layers[j].named_parameters()
                          if _is_expert(n))
            stages.append((total, experts))
        edp = mesh["edp"].size()
    work = symllm.workload(cfg, seq=8, expert_tp=expert_tp, **deg)
    assert work["params"]["per_gpu"] == max(total for total, _ in stages)
    kept = {0: 16, 1: 4, 2: 2, 3: 0}[deg["zero_stage"]]  # bytes a parameter every rank keeps whole

    def states(total, experts):  # two ZeRO partitions, each padded to a whole share per rank (rank 0's ceiling)
        return kept * total + (16 - kept) * (-(-(total - experts) // deg["dp"]) + -(-experts // edp))

    assert work["memory_per_gpu"]["training_states"] == max(states(*s) for s in stages)
    assert work["memory_per_gpu"]["weights"] == 2 * work["params"]["per_gpu"]


def test_mixtral_by_hand():
    """Mixtral-8x7B, ep 8 (dp 8), tp 1: a GPU holds one expert of each of the 32 layers, 3·4096·14336 each,
    and everything else whole."""
    expert = 3 * 4096 * 14336
    total = symllm.params("mixtral-8x7b")["total"]
    got = symllm.workload("mixtral-8x7b", dp=8, ep=8)["params"]["per_gpu"]
    assert got == total - 32 * 7 * expert


# --- all-to-all ----------------------------------------------------------------------------------------

def _all_to_all_bytes(layers: int, tokens: int, k: int, d: int, ep: int, recompute: bool, dtype) -> tuple:
    """Run ``layers`` expert-parallel MoE layers (dispatch all-to-all, the experts, combine all-to-all) on
    ``tokens`` tokens routed to ``k`` experts each, uniformly over ``ep`` ranks, forward and backward;
    the collectives CommDebugMode counts, and the bytes this rank sends to the others."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop

    class Sent(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func._overloadpacket.__name__ == "all_to_all_single":
                x, _, input_splits = args[0], args[1], args[2]
                row = x[0].numel() * x.element_size()
                self.bytes += (sum(input_splits) - input_splits[0]) * row  # rank 0's own rows stay
            return func(*args, **(kwargs or {}))

    with fake_mesh(ep, ep, 1) as mesh:
        group = mesh["ep"].get_group()
        rows = tokens * k  # each token's k routed copies
        splits = [rows // ep] * ep  # uniform routing: as many rows to every rank
        weights = [torch.randn(d, d, dtype=dtype, requires_grad=True) for _ in range(layers)]

        def layer(x, w):
            routed = x.repeat_interleave(k, dim=0)  # (tokens·k, d)
            there = funcol.all_to_all_single_autograd(routed, splits, splits, group)  # dispatch
            back = funcol.all_to_all_single_autograd(there @ w, splits, splits, group)  # combine
            return x + back.view(tokens, k, d).sum(1)

        h = torch.randn(tokens, d, dtype=dtype, requires_grad=True)
        sent = Sent()
        with set_checkpoint_early_stop(False), sent, CommDebugMode() as comm:
            for w in weights:
                h = checkpoint(layer, h, w, use_reentrant=False) if recompute else layer(h, w)
            h.float().sum().backward()
    counts = {op.__name__: n for op, n in comm.get_comm_counts().items()}
    return counts, sent.bytes


@given(st.sampled_from([2, 4, 8]), st.integers(1, 3), st.integers(1, 2), st.integers(1, 3), st.booleans(),
       st.sampled_from(["bf16", "fp32"]), st.integers(1, 3))
def test_ep_comm_equals_comm_debug_mode(ep, layers, batch, seq_mult, recompute, dtype, pp):
    """comm.ep is the bytes rank 0 sends in the all-to-alls of a real expert-parallel forward and backward:
    4 per MoE layer (6 with recomputation), each (N_e-1)/N_e of the b·s·k routed rows, for the busiest
    pipeline stage's MoE layers."""
    n_e, k, d = 8, 2, 8
    pp = min(pp, layers)
    seq = ep * seq_mult  # b·s·k rows split evenly over the ranks
    busiest = max(len(r) for r in _stages(layers, pp))
    counts, sent = _all_to_all_bytes(busiest, batch * seq, k, d, ep, recompute,
                                     torch.bfloat16 if dtype == "bf16" else torch.float32)
    assert counts == {"all_to_all_single": (6 if recompute else 4) * busiest}
    cfg = symllm.ModelConfig(vocab_size=16, dim=d, n_layers=layers, n_heads=2, hidden_dim=8, n_experts=n_e,
                             experts_per_token=k)
    got = symllm.workload(cfg, batch=batch, seq=seq, dtype=dtype, dp=ep, ep=ep, pp=pp, recompute=recompute)
    assert got["comm"]["ep"] == sent


def test_ep_one_sends_nothing_and_dense_models_have_no_ep_term():
    """ep 1: nothing crosses (comm.ep 0, the experts whole); a dense model's comm has no ep key."""
    w = symllm.workload("mixtral-8x7b", dp=4)
    assert w["comm"]["ep"] == 0 and w["params"]["per_gpu"] == symllm.params("mixtral-8x7b")["total"]
    assert set(symllm.workload("llama3.1-8b", dp=4)["comm"]) == {"tp", "pp", "dp"}


def test_dp_comm_reduces_experts_over_their_group():
    """ZeRO 0 gradient all-reduce (ring, 2(n-1)/n of 2-byte gradients): the non-expert parameters over
    the N_d ranks, each GPU's experts over the N_d/N_e ranks holding the same ones (Mixtral, ep 8 of dp 16)."""
    total = symllm.params("mixtral-8x7b")["total"]
    experts = 32 * 8 * 3 * 4096 * 14336
    local = experts // 8
    expected = Fraction(2 * 15, 16) * 2 * (total - experts) + Fraction(2 * 1, 2) * 2 * local
    assert symllm.workload("mixtral-8x7b", dp=16, ep=8)["comm"]["dp"] == expected


# --- refusals and the command line -------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["llama3.1-8b", "--dp", "2", "--ep", "2"], "ep: 2 expert-parallel ranks need routed experts; llama3.1-8b "
                                               "has none"),
    (["mixtral-8x7b", "--dp", "6", "--ep", "3"], "ep: 3 expert-parallel ranks do not divide the 8 experts"),
    (["mixtral-8x7b", "--ep", "2"], "ep: 2 expert-parallel ranks must divide the 1 data-parallel ranks"),
    (["mixtral-8x7b", "--ep", "0"], "ep: expected a positive integer, got 0"),
    (["llama3.1-8b", "--sp"], "sp: sequence parallelism splits over the tensor-parallel ranks; give --tp > 1"),
])
def test_refusals_are_one_line(cli, argv, message):
    """ep on a dense model, ep not dividing the experts (DeepSpeed-MoE and Megatron-LM assert it) or the
    data-parallel ranks it is carved out of, and sp without tp: one line naming the field (exit 2)."""
    r = cli(["count", *argv])
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert r.err.startswith("symllm: error: " + message)


def test_count_json_gives_comm_ep(capsys):
    """count --json with --ep: params.per_gpu, memory_per_gpu.* and comm.ep, as the Python API gives them."""
    assert main(["count", "mixtral-8x7b", "--tp", "2", "--dp", "8", "--ep", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    api = symllm.workload("mixtral-8x7b", tp=2, dp=8, ep=4)
    assert out["workload"]["ep"] == 4 and set(out["comm"]) == {"tp", "pp", "dp", "ep"}
    assert out["comm"] == api["comm"] and out["params"]["per_gpu"] == api["params"]["per_gpu"]
    assert main(["count", "mixtral-8x7b", "--dp", "8", "--ep", "4"]) == 0
    text = capsys.readouterr().out
    assert "per GPU (tp 1, pp 1, dp 8, ep 4;" in text and "sent: ep" in text


def test_sweep_gives_comm_ep_as_count_does(capsys):
    """A sweep's comm_ep equals count --json's comm.ep at every point; on a dense model it is refused."""
    assert main(["sweep", "--base", "mixtral-8x7b", "--seq", "1024,4096", "--dp", "8", "--ep", "4",
                 "--quantity", "comm_ep"]) == 0
    rows = [row.split(",") for row in capsys.readouterr().out.splitlines()]
    for row in rows[1:]:
        seq = int(row[rows[0].index("seq")])
        count = symllm.workload("mixtral-8x7b", seq=seq, dp=8, ep=4)["comm"]["ep"]
        assert int(row[rows[0].index("comm_ep")]) == count > 0
    assert main(["sweep", "--base", "llama3.2-1b", "--seq", "1024", "--quantity", "comm_ep"]) == 2
    assert "comm_ep is for a mixture-of-experts model" in capsys.readouterr().err


def test_derive_shows_the_ep_term():
    """derive --quantity comm: an ep sub-term for a mixture-of-experts model, evaluated to count's number."""
    dv = symllm.derive("model", "comm", config="mixtral-8x7b", dp=8, ep=4)
    assert [name for name, _ in dv.terms][-1] == "ep"
    assert dict(zip([n for n, _ in dv.terms], dv.term_values))["ep"] == \
        symllm.workload("mixtral-8x7b", dp=8, ep=4)["comm"]["ep"]
