"""Mamba-2 mixers (Nemotron-H) under tensor parallelism, against the engines that shard them.

Expected numbers come from vLLM's and Megatron-Core's code, written out here, never from symllm:

* vLLM (``vllm/model_executor/layers/mamba/mamba_mixer2.py``, ``MambaMixer2.__init__``): ``assert num_heads %
  tp_size == 0``; ``assert (n_groups % tp_size) == 0 or n_groups == 1``; where the ranks do not divide the groups
  (``n_groups == 1``) ``extra_groups_for_head_shards`` adds ``tp_size - n_groups`` groups, so that every rank holds
  the one group (``mamba_v2_sharded_weight_loader`` with ``duplicate_groups``: every rank loads rank 0's slice);
  ``in_proj`` holds ``[intermediate, intermediate, G·state, G·state, heads]`` output rows over the ranks,
  ``conv1d`` ``intermediate + 2·G·state`` channels over the ranks, ``A``, ``D``, ``dt_bias``
  ``num_heads // tp_size`` each, the gated norm ``intermediate // tp_size``, ``out_proj`` row-parallel
  (``RowParallelLinear``, its bias whole);
* vLLM's state shapes (``MambaStateShapeCalculator.mamba2_state_shape``): the convolution state
  ``divide(conv_dim, tp)`` channels of the extended ``conv_dim``, the SSM state ``(divide(num_heads, tp),
  head_dim, state_size)``; the convolution state ``conv_kernel - 1`` columns long (vllm-project/vllm
  ``mamba_utils.py`` at 02d710837549a368073552333f66d714477415d2), where transformers' cache keeps
  ``conv_kernel`` (``memory.state_cache``'s convention: docs/conventions.md; ``count --serve`` under vLLM takes
  vLLM's);
* Megatron-Core (``megatron/core/ssm/mamba_mixer.py``): ``in_proj`` a column-parallel linear
  (``gather_output=False``: its input gradient all-reduced in backward), ``out_proj`` row-parallel (its output
  all-reduced in forward), everything between them local to the rank's heads and groups: two all-reduces of
  the residual stream a layer and step.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.costs import checks, serving
from symllm.costs.workloads import Workload
from symllm.errors import SymllmError
from tests.strategies import nemotron_h_configs


def _vllm_loader(shard_spec, tp_size, tp_rank, loaded_rows):
    """vLLM's ``mamba_v2_sharded_weight_loader`` transcribed on row indices: the rows of a parameter of
    ``sum(full_dim // tp_size)`` rows rank ``tp_rank`` fills from the checkpoint's (``loaded_rows``) and which
    checkpoint row each gets (None: never written)."""
    param = [None] * sum(full_dim // tp_size for full_dim, _, _ in shard_spec)
    boundary, loaded_boundary = 0, 0
    for full_dim, extra, duplicate_groups in shard_spec:
        shard_size = full_dim // tp_size
        rank = 0 if duplicate_groups else tp_rank
        loaded_skip = rank * shard_size
        loaded_start_idx = loaded_boundary + loaded_skip
        take = min(shard_size, full_dim - extra - loaded_skip)
        param[boundary:boundary + take] = loaded_rows[loaded_start_idx:loaded_start_idx + take]
        boundary += shard_size
        loaded_boundary += full_dim - extra
    return param


def _vllm_mixer(hidden, heads, head_dim, groups, state, kernel, conv_bias, bias, tp):
    """Rank 0's parameters and per-sequence state elements of one vLLM ``MambaMixer2`` (module docstring);
    None where vLLM's asserts refuse ``tp``."""
    if heads % tp or (groups % tp and groups != 1):
        return None
    inter = heads * head_dim
    G = groups + (0 if groups % tp == 0 else tp - groups % tp)  # extra_groups_for_head_shards
    conv_dim = inter + 2 * G * state
    if groups % tp == 0:  # MergedColumnParallelLinear: each output split evenly
        in_rows = sum(size // tp for size in (inter, inter, G * state, G * state, heads))
        conv_rows = sum(size // tp for size in (inter, G * state, G * state))
    else:  # ColumnParallelLinear of the extended width, filled by the sharded loader: every row written
        group = (G * state, (G - groups) * state, groups == 1)
        spec_in = [(inter, 0, False), (inter, 0, False), group, group, (heads, 0, False)]
        spec_conv = [(inter, 0, False), group, group]
        loaded_in = list(range(2 * inter + 2 * groups * state + heads))
        loaded_conv = list(range(inter + 2 * groups * state))
        for r in range(tp):
            assert None not in _vllm_loader(spec_in, tp, r, loaded_in)
            assert None not in _vllm_loader(spec_conv, tp, r, loaded_conv)
        in_rows = len(_vllm_loader(spec_in, tp, 0, loaded_in))
        conv_rows = len(_vllm_loader(spec_conv, tp, 0, loaded_conv))
    assert in_rows == (inter + conv_dim + heads) // tp and conv_rows == conv_dim // tp
    params = (hidden * in_rows + (in_rows if bias else 0)  # in_proj
              + conv_rows * kernel + (conv_rows if conv_bias else 0)  # conv1d (an unsqueezed linear of kernel)
              + 3 * (heads // tp)  # A, D, dt_bias
              + inter // tp  # the gated norm
              + (inter // tp) * hidden + (hidden if bias else 0))  # out_proj, row-parallel, its bias whole
    ssm = (heads // tp) * head_dim * state
    return params, ssm, conv_dim // tp


def _symllm_mixer(cfg, tp):
    """symllm's rank-0 parameters of one Mamba-2 mixer, and its per-sequence state bytes, at ``tp``."""
    from symllm.arch import symbols as S
    from symllm.arch.resolved import spec
    from symllm.costs.parallel import shard
    spc = spec(cfg)
    values = {**spc.values(), S.N_t: tp, S.b: 1, S.beta_a: 2}
    mixer = next(c for c in shard(spc.model()).walk() if c.name == "mamba")
    return int(mixer.total("params").subs(values)), int(mixer.total("state_cache").subs(values))


def _with_a_mamba_layer(raw: dict) -> dict:
    raw = dict(raw)
    if "hybrid_override_pattern" in raw:
        raw["hybrid_override_pattern"] = "M" + raw["hybrid_override_pattern"][1:]
    else:
        raw["layers_block_type"] = ["linear_attention", *raw["layers_block_type"][1:]]
    return raw


@given(data=st.data())
def test_mixer_shards_equal_vllms_and_it_refuses_what_vllm_refuses(data):
    """Per drawn Nemotron-H config and tensor-parallel size: symllm refuses the size (its tp check on the Mamba
    heads and groups) exactly where vLLM's MambaMixer2 asserts; where it accepts, rank 0's parameters of a
    Mamba-2 mixer equal vLLM's (the sharded weight loader run on row indices, every rank's rows all written)
    and its state is vLLM's per-rank SSM state (fp32) and convolution channels (bf16, transformers' kernel
    length)."""
    raw = _with_a_mamba_layer(data.draw(nemotron_h_configs()))
    tp = data.draw(st.integers(1, 8))
    cfg = from_hf(raw)
    fields = {**checks.model_fields(cfg), **checks.workload_fields(Workload(tp=tp))}
    refused = [c for c in checks.failures(fields) if "mamba_heads" in c.uses]
    want = _vllm_mixer(raw["hidden_size"], raw["mamba_num_heads"], raw["mamba_head_dim"], raw["n_groups"],
                       raw["ssm_state_size"], raw["conv_kernel"], raw["use_conv_bias"], raw["use_bias"], tp)
    assert bool(refused) == (want is None), (refused, want)
    if want is None:
        line = refused[0].line(fields)
        assert line.startswith(f"tp: {tp} ranks do not divide the ") and "Mamba-2" in line
        return
    params, ssm, channels = want
    ours_params, ours_state = _symllm_mixer(cfg, tp)
    assert ours_params == params
    assert ours_state == 4 * ssm + 2 * raw["conv_kernel"] * channels
    # what count --serve gives a sequence under vLLM: a column fewer of every mixer's convolution channels
    mixers = cfg.count_layers(lambda kind: kind.mixer == "mamba")
    vllm = mixers * ours_state - serving.conv_column_bytes(cfg, tp)
    assert vllm == mixers * (4 * ssm + 2 * (raw["conv_kernel"] - 1) * channels)


def test_nemotron_h_56b_on_8_gpus_by_hand():
    """nemotron-h-56b (54 Mamba-2 mixers of 256 heads of 64, 8 groups, state 256, kernel 4 with its bias; 54
    squared-ReLU MLPs of 32768; 10 attention layers of 64 query and 8 KV heads of 128; d 8192, V 131072,
    untied) at tp 8, as vLLM shards it (module docstring): each rank 32 heads and 1 group."""
    d, V = 8192, 131072
    inter, tp = 256 * 64, 8
    mamba = (d * (2 * inter // tp + 2 * (8 // tp) * 256 + 256 // tp)  # in_proj: gate, x, B, C, dt
             + (inter + 2 * 8 * 256) // tp * (4 + 1)  # conv1d: 2560 channels, kernel 4 and a bias
             + 3 * 256 // tp + inter // tp  # A, D, dt_bias; the gated norm
             + inter // tp * d)  # out_proj
    mlp = 2 * d * 32768 // tp
    attention = d * (64 * 128 // tp + 2 * 128 * 8 // tp) + 64 * 128 // tp * d
    norms = 118 * d + d
    expected = 54 * mamba + 54 * mlp + 10 * attention + norms + 2 * V // tp * d
    out = symllm.workload("nemotron-h-56b", tp=tp)
    assert out["params"]["per_gpu"] == expected == 7_041_396_800
    # per sequence: 32 heads' 64 x 256 fp32 states and 4 x 2560 bf16 convolution inputs in each of the 54 mixers
    assert out["memory_per_gpu"]["state_cache"] == 54 * (4 * 32 * 64 * 256 + 2 * 4 * 2560)
    assert out["memory"]["state_cache"] == 54 * (4 * 256 * 64 * 256 + 2 * 4 * (inter + 2 * 8 * 256))


def test_nemotron_h_56b_serving_state_by_hand():
    """count --serve of nemotron-h-56b (54 mixers of 256 heads of 64 and 8 groups, state 256, kernel 4; its
    config's mamba_ssm_cache_dtype float32): a sequence's state as vLLM shapes it at tp 8 (module docstring): 32
    heads' 64 x 256 fp32 SSM states and 4 - 1 = 3 columns of (16384 + 2·8·256)/8 = 2,560 bf16 channels a mixer;
    under --engine hf (transformers' cache) the 4 columns memory.state_cache counts, of every head and channel:
    NemotronHConfig.base_model_tp_plan (transformers 5.23) leaves the mixers out, whole on every rank."""
    from symllm.costs import serving
    budget = 100 * 2**30
    vllm = serving.capacity("nemotron-h-56b", gpu="h200", seq=8192, tp=8, kv_cache_bytes=budget)
    assert vllm["state_bytes_per_sequence"] == 54 * (4 * 32 * 64 * 256 + 2 * 3 * 2560) == 114_075_648
    hf = serving.capacity("nemotron-h-56b", gpu="h200", seq=8192, tp=8, kv_cache_bytes=budget, engine="hf")
    assert hf["state_bytes_per_sequence"] == 54 * (4 * 256 * 64 * 256 + 2 * 4 * 20480) == 914_817_024


def test_a_mamba_layer_sends_two_all_reduces_under_megatron_tp():
    """Megatron-Core's MambaMixer: in_proj column-parallel (its input gradient all-reduced in backward) and
    out_proj row-parallel (its output all-reduced in forward); the convolution, A_log, D, dt_bias and the
    gated norm act on the rank's own heads and groups, no collective. So L Mamba-only blocks send L times two
    all-reduces of the residual stream, each 2·(B - B//T) bytes of B = β_a·b·s·d (ring), beside the vocabulary-split
    embedding's forward all-reduce, the head's input gradient's and the parallel loss's three all-reduces of
    b·s fp32 statistics (tests/test_parallel.py checks those against DTensor's collectives)."""
    from symllm.arch import symbols as S
    from symllm.arch.components import LayerKind, model
    from symllm.costs.parallel import comm
    mamba = model(kinds=(LayerKind(mixer="mamba", ffn="none"),))
    T, L, B, stats = 4, 3, 2 * 10 * 7, 4 * 10

    def ring(n):
        return n - n // T
    sent = comm(mamba)["tp"].subs({S.b: 1, S.s: 10, S.d: 7, S.beta_a: 2, S.N_t: T, S.N_p: 1, S.L: L, S.V: 12})
    assert sent == L * 2 * 2 * ring(B) + 2 * ring(B) + 2 * ring(B) + 3 * 2 * ring(stats)


@pytest.mark.parametrize("tp, line", [
    (3, "tp: 3 ranks do not divide the 64 query and 8 KV heads (a split head cannot run)"),
    (16, "tp: 16 ranks do not divide the 8 Mamba-2 groups of nemotron-h-56b"),
])
def test_refused_in_one_line(tp, line, capsys):
    """What vLLM asserts (the Mamba-2 groups: 8 over 16 ranks) is refused in one line, exit 2, before anything is
    counted; the attention's heads are refused as for any model."""
    from symllm.cli import main
    assert main(["count", "nemotron-h-56b", "--tp", str(tp)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"symllm: error: {line}"]
    with pytest.raises(SymllmError, match=line.split(" (")[0]):
        symllm.workload("nemotron-h-56b", tp=tp)


def test_plan_tries_only_what_vllm_accepts():
    """plan's tensor-parallel choices for nemotron-h-56b: the divisors of its 64 query heads that split its 8 KV
    heads (or are a multiple of them) and that vLLM's Mamba-2 mixer accepts (divide 256 heads and 8 groups)."""
    from symllm.arch.resolved import spec
    from symllm.studies.plans import _tp_choices
    assert _tp_choices(spec("nemotron-h-56b")) == [1, 2, 4, 8]


@pytest.mark.parametrize("split, projections", [(False, 2), (True, 4)])
def test_a_gated_deltanet_layer_sends_one_all_reduce_per_projection(split, projections):
    """A Gated DeltaNet layer under tensor parallelism (vLLM's Qwen3NextGatedDeltaNet, Megatron-Core's
    GatedDeltaNet): its input projections column-parallel (each input gradient all-reduced in backward, one per
    linear as DTensor runs them unfused: Qwen3-Next's in_proj_qkvz and in_proj_ba, Qwen3.5's four), out_proj
    row-parallel (forward); the convolution, A_log and dt_bias act on the rank's own heads, no collective (they
    were counted as column linears before). Beside them the embedding's, the head's and the loss's collectives
    as in the Mamba test above."""
    from symllm.arch import symbols as S
    from symllm.arch.components import LayerKind, model
    from symllm.arch.layers import Structure
    from symllm.costs.parallel import comm
    kinds = (LayerKind(mixer="linear_attention", ffn="none"),)
    deltanet = model(structure=Structure(kinds=kinds, delta_split=split))
    T, L, B, stats = 4, 3, 2 * 10 * 7, 4 * 10

    def ring(n):
        return n - n // T
    sent = comm(deltanet)["tp"].subs({S.b: 1, S.s: 10, S.d: 7, S.beta_a: 2, S.N_t: T, S.N_p: 1, S.L: L, S.V: 12})
    assert sent == L * (projections + 1) * 2 * ring(B) + 2 * ring(B) + 2 * ring(B) + 3 * 2 * ring(stats)


def _stage_tp(raw: dict, tp: int, b: int, s: int) -> dict:
    """symllm's per-step tensor-parallel bytes (rank 0, the whole model as one stage) and the spanning norms of
    the model of ``raw`` at ``tp``, batch ``b`` and prompt ``s``."""
    from symllm.arch import symbols as S
    from symllm.arch.resolved import spec
    from symllm.costs import hardware
    from symllm.costs.phases import flops
    spc = spec(from_hf(raw))
    terms = hardware.stage_times(spc.model(), True, phase_flops=flops)["stages"][0]
    values = {**spc.values(), S.N_t: tp, S.N_p: 1, S.b: b, S.s: s, S.s_o: 1, S.beta_a: 2}
    return {k: terms[k].subs(values) for k in ("prefill_tp", "decode_tp", "spanning_norms")}


def test_vllm_all_reduces_a_spanning_gated_norm_by_hand():
    """vLLM's Mixer2RMSNormGated (vllm/model_executor/layers/mamba/mamba2/mamba_mixer2.py at 2e0714a): with
    n_groups == 1 and tp_size > 1 each rank sums its tokens' squares over its d_i/tp columns and all-reduces the
    (tokens, 1) fp32 sums; with n_groups a multiple of tp no collective. Two Mamba layers (pattern MM, 4 heads of
    8) at tp 2, batch 3, a 5-token prompt: n_groups 1 sends 2 layers x 2·(2-1)/2 (a ring all-reduce) x 4 bytes
    x 3·5 tokens = 120 bytes more in the prefill, x 3 tokens = 24 in a decode step, than n_groups 2 (the same
    model but its B and C widths: the residual stream's all-reduces are the same), and counts 2 calls more."""
    raw = {"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 16, "num_hidden_layers": 2,
           "hybrid_override_pattern": "MM", "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
           "intermediate_size": 8, "mamba_num_heads": 4, "mamba_head_dim": 8, "ssm_state_size": 4,
           "conv_kernel": 4, "chunk_size": 8, "layer_norm_epsilon": 1e-5}
    one = _stage_tp({**raw, "n_groups": 1}, 2, 3, 5)
    two = _stage_tp({**raw, "n_groups": 2}, 2, 3, 5)
    assert (one["spanning_norms"], two["spanning_norms"]) == (2, 0)
    assert one["prefill_tp"] - two["prefill_tp"] == 2 * 2 * (2 - 1) * 4 * 3 * 5 // 2 == 120
    assert one["decode_tp"] - two["decode_tp"] == 2 * 2 * (2 - 1) * 4 * 3 // 2 == 24
    alone = _stage_tp({**raw, "n_groups": 1}, 1, 3, 5)  # one rank: the local mean, nothing sent
    assert alone["prefill_tp"] == alone["decode_tp"] == 0
    # the expected decode step (vLLM, H100s over NVLink) pays the 2 more calls' latency, each vLLM's one-shot
    # all-reduce's (efficiency.json's custom_allreduce_s, read here: what is checked is the count of calls)
    from symllm.costs.figures import engine
    steps = [symllm.workload(from_hf({**raw, "n_groups": g}), tp=2, gpu="h100-sxm")["time"]["expected"]["decode_token_s"]
             for g in (1, 2)]
    latency = float(engine("vllm")["custom_allreduce_s"])
    assert steps[0] - steps[1] == pytest.approx(2 * latency, rel=1e-3)
