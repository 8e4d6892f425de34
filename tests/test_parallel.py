"""Parallel training (symllm.costs.parallel): per-GPU parameters, memory and communication against torch.

Expected numbers come from torch itself, run in the test:

* parameters: torch's DTensor tensor-parallel plan (``parallelize_module`` with ``ColwiseParallel`` /
  ``RowwiseParallel``, the embedding ``RowwiseParallel`` over the vocabulary) applied to the torch
  reference model (and to transformers' ``LlamaForCausalLM``) on the meta device under a fake process
  group, summing rank 0's local shards (``p.to_local().numel()``), over contiguous pipeline stages;
* tensor-parallel communication: the collectives ``CommDebugMode`` counts in a real forward/backward of
  a tiny CPU model with that plan (and ``loss_parallel``), with the sizes of their tensors, turned into
  bytes sent per GPU by the ring formulas (NCCL's performance notes: an all-reduce sends
  ``2(n-1)/n`` of the buffer, an all-gather and a reduce-scatter ``(n-1)/n``), in whole bytes: the
  busiest rank sends ``n-1`` of the ``n`` chunks, all but the smallest, ``B - B//n`` of ``B`` bytes;
* pipeline point-to-point: the bytes of the hidden-state tensor crossing a stage boundary in a real
  forward pass;
* data parallel: the ZeRO paper's (Rajbhandari et al. 2020, section 7) volumes, ``2Ψ`` per GPU for
  data parallelism and ZeRO-1/2 and ``3Ψ`` for ZeRO-3, with the published parameter count.
"""
import contextlib
import functools
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from tests.conftest import engine_peak
from symllm.cli import main

from .conftest import PUBLISHED, requires
from .strategies import configs, runnable

torch = requires("torch")
dist = requires("torch.distributed")
from symllm import reference  # noqa: E402  (needs torch)
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop  # noqa: E402

#: whole bytes the busiest of n ranks sends in a collective of a full tensor of B bytes (ring algorithms:
#: n - 1 of the n chunks, all but the smallest, B // n; an all-reduce is a reduce-scatter and an all-gather)
RING = {"all_reduce": lambda n, B: 2 * (B - B // n),
        "all_gather_into_tensor": lambda n, B: B - B // n,
        "reduce_scatter_tensor": lambda n, B: B - B // n}


@contextlib.contextmanager
def fake_group(ranks: int):
    """A fake process group of ``ranks`` ranks (this process is rank 0) and its 1-D CPU device mesh."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=ranks)
    try:
        yield init_device_mesh("cpu", (ranks,))
    finally:
        dist.destroy_process_group()


def tp_plan(n_layers: int, sp: bool = False, names: dict | None = None, loss_parallel: bool = True) -> dict:
    """torch's tensor-parallel plan for LLaMA (the torch TP tutorial's): module path -> style.
    ``names`` renames Meta's modules (transformers' q_proj ...); ``sp`` adds sequence parallelism."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)
    n = {"tok_embeddings": "tok_embeddings", "layers": "layers", "attention": "attention", "wq": "wq",
         "wk": "wk", "wv": "wv", "wo": "wo", "feed_forward": "feed_forward", "w1": "w1", "w2": "w2",
         "w3": "w3", "attention_norm": "attention_norm", "ffn_norm": "ffn_norm", "norm": "norm",
         "output": "output", **(names or {})}
    seq = Shard(1) if sp else Replicate()
    head = dict(output_layouts=Shard(-1), use_local_output=False) if loss_parallel else {}
    plan = {n["tok_embeddings"]: RowwiseParallel(input_layouts=Replicate(), output_layouts=seq),
            n["output"]: ColwiseParallel(input_layouts=seq, **head)}
    if sp:
        plan[n["norm"]] = SequenceParallel()
    for i in range(n_layers):
        p = f"{n['layers']}.{i}."
        for name in ("wq", "wk", "wv"):
            plan[p + f"{n['attention']}.{n[name]}"] = ColwiseParallel()
        plan[p + f"{n['attention']}.{n['wo']}"] = RowwiseParallel(output_layouts=seq)
        for name in ("w1", "w3"):
            plan[p + f"{n['feed_forward']}.{n[name]}"] = ColwiseParallel()
        plan[p + f"{n['feed_forward']}.{n['w2']}"] = RowwiseParallel(output_layouts=seq)
        if sp:
            plan[p + n["attention_norm"]] = SequenceParallel()
            plan[p + n["ffn_norm"]] = SequenceParallel()
            plan[p + n["attention"]] = PrepareModuleInput(input_layouts=(Shard(1),) + (None,) * 5,
                                                          desired_input_layouts=(Replicate(),) + (None,) * 5)
            plan[p + n["feed_forward"]] = PrepareModuleInput(input_layouts=(Shard(1),),
                                                             desired_input_layouts=(Replicate(),))
    return plan


def _local(p) -> int:
    return p.to_local().numel() if hasattr(p, "to_local") else p.numel()


def _parallel_reference(cfg, ranks: int, mesh, device="meta", sp=False, loss_parallel=True):
    """The reference model with torch's plan applied (a tied head tied again to the split embedding:
    parallelize_module gives each its own DTensor; both split the vocabulary rows, so one matrix)."""
    from torch.distributed.tensor.parallel import parallelize_module
    torch.manual_seed(0)
    model = reference.build(cfg, device=device)
    tied = model.output.weight is model.tok_embeddings.weight
    parallelize_module(model, mesh, tp_plan(cfg.n_layers, sp, loss_parallel=loss_parallel))
    if tied:
        model.output.weight = model.tok_embeddings.weight
    return model


def _stage_params(model, layers: range, first: bool, last: bool) -> int:
    """Rank 0's local parameters of one pipeline stage: its layers, the embedding on the first stage,
    the final norm and the head on the last (a tied head's matrix too, when the embedding is elsewhere)."""
    mods = [model.layers[i] for i in layers]
    if first:
        mods.append(model.tok_embeddings)
    if last:
        mods += [model.norm, model.output]
    seen = {}
    for mod in mods:
        for p in mod.parameters():
            seen[id(p)] = _local(p)
    return sum(seen.values())  # a tied head on a later stage than the embedding: its own copy counts


def _stages(n_layers: int, stages: int) -> list[range]:
    """Contiguous layers per stage, the first ``L mod P`` stages one layer more (torch.chunk-like)."""
    q, r = divmod(n_layers, stages)
    out, start = [], 0
    for i in range(stages):
        size = q + (i < r)
        out.append(range(start, start + size))
        start += size
    return out


def _dense(cfg) -> bool:
    return getattr(cfg, "n_experts", None) is None


# --- parameters -------------------------------------------------------------------------------------

@given(configs().filter(_dense), st.integers(1, 8), st.integers(1, 4))
def test_per_gpu_params_equal_dtensor_shards_of_the_largest_stage(cfg, ranks, stages):
    """params.per_gpu is the largest, over every pipeline stage, of what tensor rank 0 holds after
    torch's parallelize_module (rank 0 holds the ceiling of an uneven split, as DTensor chunks)."""
    stages = min(stages, cfg.n_layers)  # a stage holds at least one block (more stages are refused)
    ranks = runnable(cfg, {"tp": ranks})["tp"]  # whole heads a rank (a split head is refused)
    with fake_group(ranks) as mesh:
        model = _parallel_reference(cfg, ranks, mesh)
        split = _stages(cfg.n_layers, stages)
        largest = max(_stage_params(model, layers, i == 0, i == stages - 1) for i, layers in enumerate(split))
        if stages == 1:
            assert largest == sum(_local(p) for p in model.parameters())
    assert symllm.workload(cfg, tp=ranks, pp=stages)["params"]["per_gpu"] == largest


@pytest.mark.parametrize("name, ranks", [("llama3.1-8b", 8), ("llama3.2-1b", 2), ("llama2-7b", 4)])
def test_per_gpu_params_equal_transformers_llama_under_dtensor(name, ranks):
    """The same plan, with transformers' module names, on LlamaForCausalLM built on the meta device."""
    transformers = requires("transformers")
    cfg = symllm.resolve(name)
    hf = transformers.LlamaConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.dim, num_hidden_layers=2,
                                  num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
                                  intermediate_size=symllm.hidden_dim(cfg), head_dim=cfg.head_dim,
                                  tie_word_embeddings=cfg.tie_embeddings)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(hf)
    names = {"tok_embeddings": "model.embed_tokens", "layers": "model.layers", "attention": "self_attn",
             "wq": "q_proj", "wk": "k_proj", "wv": "v_proj", "wo": "o_proj", "feed_forward": "mlp",
             "w1": "gate_proj", "w3": "up_proj", "w2": "down_proj", "output": "lm_head"}
    from torch.distributed.tensor.parallel import parallelize_module
    with fake_group(ranks) as mesh:
        parallelize_module(model, mesh, tp_plan(2, names=names))
        if cfg.tie_embeddings:
            model.lm_head.weight = model.model.embed_tokens.weight
        local = sum(_local(p) for p in model.parameters())
    assert symllm.workload(cfg.replace(n_layers=2), tp=ranks)["params"]["per_gpu"] == local


def test_llama3_70b_on_8_gpus_by_hand():
    """Llama-3-70B, TP=8, PP=4 (20 layers a stage): the last stage holds 20 blocks of
    (8192·(8192+1024+1024+8192) + 3·8192·28672)/8 + 2·8192 norm weights, the final norm and the head
    128256·8192/8 (the embedding on the first stage is the same size, without the norm)."""
    block = (8192 * (8192 + 1024 + 1024 + 8192) + 3 * 8192 * 28672) // 8 + 2 * 8192
    expected = 20 * block + 8192 + 128256 * 8192 // 8
    assert symllm.workload("llama3-70b", tp=8, pp=4)["params"]["per_gpu"] == expected


# --- tensor-parallel communication ------------------------------------------------------------------

def _collectives(model, tokens, ranks: int):
    """Count (CommDebugMode) and size (a dispatch mode that sees every functional collective) what a
    forward, a loss_parallel cross-entropy and a backward communicate; bytes one GPU sends, ring."""
    import torch.nn.functional as F
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import loss_parallel
    from torch.utils._python_dispatch import TorchDispatchMode

    class Sizes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.sent = Fraction(0)
            self.calls = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kind = func._overloadpacket.__name__
            if func.namespace == "_c10d_functional" and kind in RING:
                t = args[0]
                full = t.numel() * t.element_size() * (ranks if kind == "all_gather_into_tensor" else 1)
                self.sent += RING[kind](ranks, full)
                self.calls[kind] = self.calls.get(kind, 0) + 1
            return func(*args, **(kwargs or {}))

    sizes = Sizes()
    with sizes, CommDebugMode() as comm:  # CommDebugMode on top: the dispatch mode sees what it issues
        logits = model(tokens)
        with loss_parallel():
            F.cross_entropy(logits.flatten(0, 1), tokens.flatten()).backward()
    counted = {k.__name__: v for k, v in comm.get_comm_counts().items()}
    assert counted == sizes.calls  # the dispatch mode saw every collective CommDebugMode counted
    return sizes.sent, counted


@given(st.sampled_from([2, 3, 4]), st.integers(1, 2), st.integers(1, 2), st.integers(1, 3), st.integers(1, 2),
       st.booleans(), st.integers(1, 2), st.integers(1, 3), st.integers(1, 5), st.booleans())
def test_tp_comm_equals_comm_debug_mode(ranks, kv, group, half_head, layers, seq_parallel, batch, seq_mult, vocab,
                                        recompute):
    """comm.tp under torchtitan (it runs DTensor's collectives) is the bytes one GPU sends in the collectives DTensor
    runs for a real training step (fp32) of a tiny CPU model under torch's plan, with and without sequence
    parallelism, and with every block checkpointed (torch.utils.checkpoint, early stop off: the whole forward of a
    block runs again). (No engine counts the default training engine's, Megatron-Core's fused linears:
    tests/test_tp_reductions.py.)"""
    n_kv = kv * ranks
    n_heads = n_kv * group
    head_dim = 2 * half_head
    cfg = symllm.ModelConfig(vocab_size=ranks * vocab, dim=n_heads * head_dim + 2, n_layers=layers,  # split
                             n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim, hidden_dim=3 * ranks)  # evenly
    seq = ranks * seq_mult  # sequence parallelism splits the sequence evenly
    with fake_group(ranks) as mesh:
        model = _parallel_reference(cfg, ranks, mesh, device="cpu", sp=seq_parallel)
        for layer in model.layers:  # each rank attends with its own heads
            layer.attention.n_heads //= ranks
            layer.attention.n_kv_heads //= ranks
            if recompute:
                layer.forward = functools.partial(checkpoint, layer.forward, use_reentrant=False)
        with set_checkpoint_early_stop(False):
            sent, counted = _collectives(model, torch.randint(0, cfg.vocab_size, (batch, seq)), ranks)
    if not seq_parallel:  # per layer 2 forward + 5 backward all-reduces; embedding, head, loss: 1 + 1 + 3
        assert counted == {"all_reduce": (9 if recompute else 7) * layers + 5}
    else:  # per layer 2 all-gathers and 2 reduce-scatters each way; embedding, head 1 + 1 of each; loss 3
        runs = 2 if recompute else 1  # the recomputed forward gathers and scatters again
        assert counted == {"all_gather_into_tensor": (2 + 2 * runs) * layers + 2,
                           "reduce_scatter_tensor": (2 + 2 * runs) * layers + 2, "all_reduce": 3}
    from symllm.arch import symbols as S
    from symllm.arch.resolved import spec
    from symllm.costs import collectives, parallel
    count = collectives.training_collectives(parallel.stages(spec(cfg).model(), seq_parallel)[0], seq_parallel,
                                             recompute)
    count = {k: int(v.subs({S.L: layers, S.N_p: 1})) for k, v in count.items()}  # symllm's calls, by kind
    kinds = {"all_reduce": count["all_reduce"] + count["loss"], "all_gather_into_tensor": count["all_gather"],
             "reduce_scatter_tensor": count["reduce_scatter"]}
    assert counted == {k: n for k, n in kinds.items() if n}
    ours = symllm.workload(cfg, batch=batch, seq=seq, dtype="fp32", tp=ranks, sp=seq_parallel,
                           recompute=recompute, engine="torchtitan")["comm"]["tp"]
    assert ours == sent


def test_tp_comm_in_whole_bytes_when_the_ranks_do_not_divide_a_collective():
    """tp 3 over a 7-token sequence: no collective's bytes divide by 3, and comm.tp is whole bytes, the
    busiest rank's n - 1 chunks of each (B - B//3), as CommDebugMode's collectives and hand arithmetic give
    (torchtitan's: DTensor's collectives)."""
    ranks, layers, seq = 3, 2, 7
    cfg = symllm.ModelConfig(vocab_size=6, dim=8, n_layers=layers, n_heads=3, n_kv_heads=3, head_dim=2,
                             hidden_dim=9)
    with fake_group(ranks) as mesh:
        model = _parallel_reference(cfg, ranks, mesh, device="cpu")
        for layer in model.layers:
            layer.attention.n_heads //= ranks
            layer.attention.n_kv_heads //= ranks
        sent, counted = _collectives(model, torch.randint(0, cfg.vocab_size, (1, seq)), ranks)
    assert counted == {"all_reduce": 7 * layers + 5}
    residual, stats = 4 * seq * 8, 4 * seq  # fp32: the b·s×d residual stream, the loss's b·s statistics
    assert residual % ranks and stats % ranks
    expected = (7 * layers + 2) * 2 * (224 - 224 // 3) + 3 * 2 * (28 - 28 // 3)  # 16·2·150 + 6·19 = 4,914
    assert expected == 4914 and sent == expected
    got = symllm.workload(cfg, batch=1, seq=seq, dtype="fp32", tp=ranks, engine="torchtitan")["comm"]["tp"]
    assert got == expected and isinstance(got, int)
    # no engine: the default training engine's, Megatron-Core's fused linears (tests/test_tp_reductions.py cites its
    # code): 2 forward and 2 backward all-reduces a block, the embedding's, the head's input gradient, the loss's 3
    megatron = (4 * layers + 2) * 2 * (224 - 224 // 3) + 3 * 2 * (28 - 28 // 3)  # 10·2·150 + 6·19 = 3,114
    assert symllm.workload(cfg, batch=1, seq=seq, dtype="fp32", tp=ranks)["comm"]["tp"] == megatron == 3114


# --- pipeline and data-parallel communication ------------------------------------------------------

@pytest.fixture(scope="module")
def boundary():
    """A tiny bf16 model of 8 blocks and the bytes of the hidden state its first block hands on in a real
    forward of 3 sequences of 7 tokens (measured once for the module)."""
    cfg = symllm.ModelConfig(vocab_size=50, dim=24, n_layers=8, n_heads=4, hidden_dim=40)
    model = reference.build(cfg, device="cpu", dtype=torch.bfloat16)
    seen = []
    model.layers[0].register_forward_hook(lambda mod, args, out: seen.append(out.numel() * out.element_size()))
    with torch.no_grad():
        model(torch.randint(0, 50, (3, 7)))
    return cfg, seen[0]


@pytest.mark.parametrize("stages, expected_messages", [(1, 0), (2, 1), (3, 2), (8, 2)])
def test_pp_comm_is_the_boundary_activation(boundary, stages, expected_messages):
    """A stage sends the hidden state it hands on (forward) and the gradient of the one it received
    (backward, the same size): the busiest GPU sends min(2, P - 1) of them."""
    cfg, hidden = boundary
    assert symllm.workload(cfg, batch=3, seq=7, pp=stages)["comm"]["pp"] == expected_messages * hidden


@pytest.mark.parametrize("zero, passes", [(0, 2), (1, 2), (2, 2), (3, 3)])
def test_dp_comm_follows_the_zero_paper(zero, passes):
    """ZeRO (section 7): data parallelism and ZeRO-1/2 move 2Ψ per GPU per step, ZeRO-3 3Ψ (Ψ the
    fp16/bf16 model, 2 bytes a parameter; ring factor (N_d - 1)/N_d); Llama-2-7B's published total."""
    psi = 2 * PUBLISHED["llama2-7b"]["total"]
    for dp in (2, 8, 64):
        got = symllm.workload("llama2-7b", dp=dp, zero_stage=zero)["comm"]["dp"]
        assert got == Fraction(passes * (dp - 1), dp) * psi


@pytest.mark.parametrize("zero, passes", [(0, 2), (3, 3)])
def test_dp_comm_in_whole_bytes_when_the_ranks_do_not_divide_the_model(zero, passes):
    """dp 3 and 7 do not divide Llama-2-7B's 2Ψ gradient bytes: each pass (a reduce-scatter or an
    all-gather) sends the busiest rank's n - 1 ring chunks, 2Ψ - 2Ψ//n whole bytes."""
    psi2 = 2 * PUBLISHED["llama2-7b"]["total"]  # 13,476,831,232 bytes of bf16 gradients
    for dp, per_pass in ((3, 13476831232 - 4492277077), (7, 13476831232 - 1925261604)):
        assert psi2 % dp and psi2 // dp == 13476831232 - per_pass  # hand arithmetic: 3 and 7 do not divide
        got = symllm.workload("llama2-7b", dp=dp, zero_stage=zero)["comm"]["dp"]
        assert got == passes * per_pass and isinstance(got, int)


def test_uneven_layout_counts_whole_bytes_everywhere():
    """count --json under tp 3 (on 48 query and 24 key/value heads, the rest of the model as it is), dp 7,
    pp 3 (no int4): every params, memory_per_gpu and comm figure is an int; Mixtral's routed experts kept
    whole, and split over the ranks at a width of 3·4779 (14336 columns do not split over 3: refused)."""
    for name, put, experts in (("llama3.1-8b", {}, "split"), ("mixtral-8x7b", {}, "whole"),
                               ("mixtral-8x7b", {"hidden_dim": 3 * 4779}, "split")):
        cfg = symllm.resolve(name).replace(n_heads=48, n_kv_heads=24, head_dim=128, **put)
        for zero in range(4):
            out = symllm.workload(cfg, tp=3, dp=7, pp=3, zero_stage=zero, sp=zero % 2 == 1, expert_tp=experts)
            for group in ("params", "memory_per_gpu", "comm"):
                assert all(isinstance(v, int) for v in out[group].values()), (name, zero, group, out[group])


def test_single_gpu_has_no_communication_and_the_whole_model():
    """tp = pp = dp = 1: params.per_gpu is the total, per-GPU memory is the whole model's, no comm."""
    w = symllm.workload("llama3.1-8b")
    assert w["params"]["per_gpu"] == symllm.params("llama3.1-8b")["total"]
    assert w["memory_per_gpu"] == {k: w["memory"][k] for k in w["memory_per_gpu"]}
    assert w["comm"] == {"tp": 0, "pp": 0, "dp": 0}


# --- the command line --------------------------------------------------------------------------------

def test_count_json_gives_per_gpu_numbers(capsys):
    """count --json with --tp/--pp/--dp/--sp: params.per_gpu, memory_per_gpu.* and comm.* in bytes."""
    assert main(["count", "llama3.1-70b", "--tp", "8", "--pp", "4", "--dp", "2", "--zero", "1", "--sp",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["workload"]["tp"] == 8 and out["workload"]["sp"] is True
    api = symllm.workload("llama3.1-70b", tp=8, pp=4, dp=2, zero_stage=1, sp=True)
    assert out["params"]["per_gpu"] == api["params"]["per_gpu"] and out["comm"] == api["comm"]
    assert out["memory_per_gpu"]["weights"] == 2 * out["params"]["per_gpu"]  # bf16
    assert set(out["comm"]) == {"tp", "pp", "dp"}


@pytest.mark.parametrize("flag, value", [("--tp", "0"), ("--pp", "-1")])
def test_bad_degrees_are_one_line_errors(capsys, flag, value):
    """A degree below 1 is a one-line error naming the field (exit 2)."""
    assert main(["count", "llama3.1-8b", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag.strip("-") in err and value in err


@pytest.mark.parametrize("engine, linears", [(None, "megatron"), ("torchtitan", "dtensor")])
def test_derive_shows_the_comm_terms(capsys, engine, linears):
    """derive --quantity comm: one sub-term per kind (tp, pp, dp), evaluated to count's numbers under the same
    engine, and saying whose column-parallel linears its tp counts: no engine's, the default training engine's
    (Megatron-Core's fused linears), torchtitan's DTensor's; the two differ under sequence parallelism (Megatron
    gathers a column-parallel input again in backward: tests/test_tp_reductions.py)."""
    dv = symllm.derive("model", "comm", config="llama3.1-8b", tp=8, pp=2, dp=4, sp=True, engine=engine)
    counted = symllm.workload("llama3.1-8b", tp=8, pp=2, dp=4, sp=True, engine=engine)["comm"]
    assert [name for name, _ in dv.terms] == ["tp", "pp", "dp"]
    assert list(dv.term_values) == list(counted.values()) and dv.value == sum(counted.values())
    titled = f"bytes one GPU sends per training step of one micro-batch, {linears}'s tp"
    assert all(titled in " ".join(dv.render(fmt).split()) for fmt in ("text", "markdown", "latex"))
    other = symllm.workload("llama3.1-8b", tp=8, pp=2, dp=4, sp=True, engine="torchtitan" if engine is None else None)
    assert other["comm"]["tp"] != counted["tp"]
    assert main(["derive", "--quantity", "comm", "--component", "attention"]) == 2
    assert "comm is the whole model's" in capsys.readouterr().err


def test_more_stages_than_blocks_are_refused(cli):
    """A pipeline stage holds at least one block: --pp past n_layers is one line (exit 2) for count, and a
    sweep drops those points saying why."""
    r = cli(["count", "llama3.1-8b", "--pp", "33"])
    assert r.code == 2 and r.out == "" and r.err.startswith("symllm: error: pp: 33 pipeline stages for the 32 blocks")
    assert cli(["count", "llama3.1-8b", "--pp", "32"]).code == 0
    r = cli(["sweep", "--base", "llama3.1-8b", "--n-layers", "8,16", "--pp", "12", "--quantity", "params_per_gpu"])
    assert [row.split(",")[0] for row in r.out.splitlines()[1:]] == ["16"] and "\n  1 dropped, the first: pp: 12" in r.err


@pytest.mark.parametrize("option", [["--lora-rank", "8"], ["--tp", "2"], ["--pp", "2"]])
def test_hf_stacks_are_not_mixed_with_layouts_or_lora(cli, option):
    """Per-GPU and LoRA memory use the component tree's tensors (fused or eager): an HF stack with them is
    refused, not mixed."""
    r = cli(["count", "llama3.1-8b", "--stack", "hf-eager", *option])
    assert r.code == 2 and r.err.startswith("symllm: error: stack: hf-eager is not modelled with LoRA")


# --- reports -----------------------------------------------------------------------------------------

def test_report_has_the_layout_section_only_for_a_layout():
    """symllm report with --tp/--pp/--dp/--sp adds a "parallel training" section showing count's per-GPU
    numbers and bytes sent; with --gpu whether a step's peak (states + activations + the logits' gradient) fits,
    80 GB read as 80 GiB for an H100 SXM (the vendor's binary-sized HBM stacks); without an option, none."""
    from symllm.present import rendered  # the text test_hardware's verdict test reads too: rendered once
    options = dict(tp=8, pp=4, dp=2, sp=True, zero_stage=1, seq=4096, gpu="h100-sxm")
    md = rendered.report("llama3.1-70b", fmt="markdown", **options)
    counted = symllm.workload("llama3.1-70b", **options)
    assert "## llama3.1-70b: parallel training" in md and "64 GPUs" in md
    assert f"| parameters | {counted['params']['per_gpu']:,} |" in md
    for value in (*counted["memory_per_gpu"].values(), *counted["comm"].values()):
        assert f"{value:,}" in md
    step = counted["memory_per_gpu"]["training_peak"]  # states + activations + the logits' gradient
    assert step > counted["memory_per_gpu"]["training_states"] + counted["memory_per_gpu"]["activations"]
    assert f"**{step:,}**" in md and ("**fits**" in md) == (step <= 80 * 2**30)
    assert "C_{\\mathrm{tp}}" in md  # the derivation of comm
    plain = symllm.report("llama3.1-70b").render("markdown")
    assert "parallel training" not in plain and "fine-tuning" not in plain


def test_report_has_the_lora_section_only_with_a_rank():
    """--lora-rank adds a LoRA section: params.trainable (PEFT prints 4,194,304 for Llama-2-7B, r=8 on
    q_proj and v_proj) and count's memory.lora_* lines."""
    md = symllm.report("llama2-7b", lora_rank=8, lora_targets="q_proj,v_proj").render("markdown")
    assert "## llama2-7b: LoRA fine-tuning" in md and "train **4,194,304** parameters" in md
    tuned = symllm.costs.finetune.lora("llama2-7b", lora_rank=8, lora_targets="q_proj,v_proj")
    for value in tuned["memory"].values():
        assert f"| {value:,} |" in md
    assert "QLoRA fine-tuning" in symllm.report("llama2-7b", lora_rank=8, qlora=True).render("markdown")


@pytest.mark.parametrize("argv", [
    ["report", "llama3.1-70b", "--tp", "8", "--pp", "4", "--dp", "2", "--sp", "--zero", "1", "--gpu", "h100-sxm",
     "--seq", "4096"],  # test_report_has_the_layout_section_only_for_a_layout's workload: its formulas built once
    ["report", "mixtral-8x7b", "--tp", "2", "--pp", "2", "--dp", "8", "--ep", "4", "--recompute"],
    ["report", "llama2-7b", "--lora-rank", "16", "--qlora", "--lora-targets", "wq,wk,wv,wo"],
    ["derive", "--quantity", "comm", "--model", "llama3.1-70b", "--tp", "8", "--pp", "4", "--dp", "2", "--sp"],
], ids=["dense layout", "moe layout", "qlora", "derive comm"])
def test_layout_and_lora_reports_compile_and_fit_the_page(argv, tmp_path, monkeypatch):
    """The LaTeX of the new sections compiles with pdflatex in one pass, no line runs into the margin (the
    long quotients of comm break after their 1/N), and the PDF shows the per-GPU or trainable number."""
    from .test_render import _pdf_text, _run_pdflatex
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--format", "latex", "--standalone", "-o", "doc.tex"]) == 0
    log = _run_pdflatex((tmp_path / "doc.tex").read_text(), tmp_path, "doc")
    assert "Overfull" not in log
    text = _pdf_text(tmp_path / "doc.pdf")
    if argv[0] == "report" and "--lora-rank" in argv:
        assert "16,777,216" in text  # 32 layers x 4 matrices x 16 x (4096 + 4096)
    elif argv[0] == "report":
        options = {"mixtral-8x7b": dict(tp=2, pp=2, dp=8, ep=4, recompute=True),
                   "llama3.1-70b": dict(tp=8, pp=4, dp=2, sp=True, zero_stage=1, seq=4096)}[argv[1]]
        assert f"{symllm.workload(argv[1], **options)['params']['per_gpu']:,}" in text


# --- KV heads replicated where tp is a multiple of them (vLLM's QKVParallelLinear) ---

def _vllm_kv_heads(tp_size: int, total_num_kv_heads: int) -> tuple[int, int]:
    """vLLM's rule, as QKVParallelLinear.__init__ states it (vllm/model_executor/layers/linear.py):
    ``if tp_size >= total_num_kv_heads: num_kv_heads = 1; num_kv_head_replicas = divide(tp_size,
    total_num_kv_heads)`` else ``num_kv_heads = divide(total_num_kv_heads, tp_size); num_kv_head_replicas = 1``
    (``divide`` asserts the division is exact): the KV heads one rank holds, and on how many ranks each is."""
    if tp_size >= total_num_kv_heads:
        assert tp_size % total_num_kv_heads == 0
        return 1, tp_size // total_num_kv_heads
    assert total_num_kv_heads % tp_size == 0
    return total_num_kv_heads // tp_size, 1


def test_kv_heads_replicated_when_tp_is_a_multiple_of_them(capsys):
    """llama3.1-8b (V 128,256, d 4,096, L 32, 32 query and 8 KV heads of 128, d_ff 14,336, untied) at tp 16: each
    rank holds 2 query heads and, by vLLM's rule, 1 KV head (replicated on 2 ranks). Hand count of rank 0's
    parameters: embedding and head 128,256/16 x 4,096 each; per layer wq and wo 4,096 x 2 x 128, wk and wv
    4,096 x 1 x 128 (the one KV head, whole), w1 w2 w3 4,096 x 14,336/16, two norms of 4,096; a final norm.
    The same number through count, the API, a sweep and plan; vLLM's KV cache a token per rank is one head's,
    2 (K, V) x 32 layers x 128 x 2 bytes; the whole model's parameters and KV cache stay the model's own."""
    heads, replicas = _vllm_kv_heads(16, 8)
    assert (heads, replicas) == (1, 2)
    per_layer = 2 * 4096 * 2 * 128 + 2 * 4096 * heads * 128 + 3 * 4096 * (14336 // 16) + 2 * 4096
    per_gpu = 2 * (128256 // 16) * 4096 + 32 * per_layer + 4096
    assert per_gpu == 518_918_144
    api = symllm.workload("llama3.1-8b", tp=16, seq=1000)
    assert api["params"]["per_gpu"] == per_gpu
    assert api["memory_per_gpu"]["weights"] == 2 * per_gpu  # bf16
    assert api["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 2 * 1000  # the model's 8 heads, whole
    assert symllm.params("llama3.1-8b")["total"] == 8_030_261_248
    assert main(["count", "llama3.1-8b", "--tp", "16", "--seq", "1000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["per_gpu"] == per_gpu
    assert main(["count", "llama3.1-8b", "--tp", "16", "--serve", "--gpu", "h100-sxm", "--json"]) == 0
    served = json.loads(capsys.readouterr().out)["serving"]
    assert served["kv_bytes_per_token"] == 2 * 32 * heads * 128 * 2
    assert served["weights"] == 2 * per_gpu
    sweep = symllm.Sweep("llama3.1-8b", {"seq": [1000]}, quantities=["params_per_gpu"], workload={"tp": 16}).run()
    assert sweep.records()[0]["params_per_gpu"] == per_gpu
    # plan's serving rows hold what vLLM's KV cache holds on that layout (count --serve's engine peak)
    rows = [r for r in symllm.plan("llama3.1-8b", 16, "h100-sxm", seq=1000).to_dict()["rows"] if r["tp"] == 16]
    assert rows and all(r["peak"] == engine_peak("llama3.1-8b", r["batch"], {"tp": 16, "seq": 1000}, served)
                        for r in rows[:3])
    # MQA (one KV head) at tp 4 on 8 query heads: that head on every rank; at tp 2 of 8 KV heads, 4 a rank
    mqa = symllm.resolve("llama3.1-8b").replace(dim=1024, n_heads=8, n_kv_heads=1, head_dim=128, n_layers=2)
    one = symllm.workload(mqa, tp=4)["params"]["per_gpu"] - symllm.workload(mqa.replace(n_kv_heads=4), tp=4)["params"]["per_gpu"]
    assert one == 0  # one KV head a rank either way: 1 replicated on 4, or 4 split over 4
