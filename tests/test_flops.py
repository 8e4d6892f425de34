"""FLOPs: symllm's closed forms against torch's own FlopCounterMode on the reference model.

Every expected number here is measured by torch (``torch.utils.flop_counter.FlopCounterMode``) on the
independent reference model, or is a plain-Python formula written from a published config.
"""
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.costs import phases as costs, utilisation
from symllm.arch import symbols as S
from symllm.numbers.kernels import evaluate

from .conftest import requires
from .strategies import configs, generation_workloads

torch = requires("torch")  # every test here measures with torch: skipped without it, a failure under CI=true
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from symllm import reference  # noqa: E402  (needs torch)


def measured(model, tokens, *, start_pos=0, use_cache=False, backward=False, logits_to_keep=0) -> int:
    """FLOPs torch counts for one forward (and backward) of the reference model; ``logits_to_keep`` 1: the
    last position's logits only (transformers' ``LlamaForCausalLM`` argument: what generate computes)."""
    with FlopCounterMode(display=False) as counter:
        if backward:
            model(tokens, start_pos=start_pos, use_cache=use_cache, logits_to_keep=logits_to_keep).sum().backward()
        else:
            with torch.no_grad():
                model(tokens, start_pos=start_pos, use_cache=use_cache, logits_to_keep=logits_to_keep)
    return counter.get_total_flops()


def tokens(batch, seq, device="meta"):
    return torch.zeros(batch, seq, dtype=torch.long, device=device)


def measured_by_layers(name: str, seq: int, *, backward=False, logits_to_keep=0) -> int:
    """FlopCounterMode's count for a preset's whole reference model (bf16, meta device, batch 1), from builds
    of 1 and 2 of its layers: the reference builds every layer of a one-kind model alike and FLOPs add up
    over layers, so the whole model's count is ``one + (L - 1) · (two - one)``, torch's own arithmetic as
    much as a full build's (conftest.numel_by_layers does the same for numel; a 405B build of 126 layers and
    its forward took seconds). Llama 3.2 1B is measured whole (test_mfu_from_measured_training_flops)."""
    cfg = symllm.load(name)
    assert len(cfg.groups) == 1, name  # one kind of layer
    one, two = (measured(reference.build(cfg.replace(n_layers=k), device="meta", dtype=torch.bfloat16),
                         tokens(1, seq), backward=backward, logits_to_keep=logits_to_keep) for k in (1, 2))
    return one + (cfg.n_layers - 1) * (two - one)


@given(configs(variant=None), generation_workloads())
def test_prefill_and_training_flops_equal_flopcountermode(cfg, w):
    """Dense prefill FLOPs equal FlopCounterMode's count of the reference forward with the last position's
    logits (the default, ``logits_to_keep=1``) or every position's (``--logits all``), and the training step's
    its forward (every position's logits: the loss reads them) plus backward (biases and QK-norm, drawn too,
    add no matmul FLOPs)."""
    model = reference.build(cfg, device="meta")
    work = costs.workload(cfg, batch=w["batch"], seq=w["seq"], attention="dense")["flops"]
    every = costs.workload(cfg, batch=w["batch"], seq=w["seq"], attention="dense", logits="all")["flops"]
    with FlopCounterMode(display=False) as forward:  # one forward counted, then its backward
        loss = model(tokens(w["batch"], w["seq"]), start_pos=0, use_cache=False).sum()
    with FlopCounterMode(display=False) as backward:
        loss.backward()
    assert work["prefill"] == measured(model, tokens(w["batch"], w["seq"]), logits_to_keep=1)
    assert every["prefill"] == forward.get_total_flops()
    assert work["training_step"] == every["training_step"] == forward.get_total_flops() + backward.get_total_flops()


@given(configs(variant=None), generation_workloads())
def test_decode_steps_and_generation_equal_flopcountermode(cfg, w):
    """Each cached decode step, and prefill + n steps, equal FlopCounterMode's counts with the KV cache."""
    b, s, n = w["batch"], w["seq"], w["gen"]
    model = reference.build(cfg, device="meta")
    mdl = symllm.model_for(cfg)
    vals = symllm.values(cfg, batch=b, seq=s, gen=n)
    vals[S.d_ff] = symllm.hidden_dim(cfg)
    prefill = measured(model, tokens(b, s), use_cache=True, logits_to_keep=1)  # generate's prefill: the last logits
    steps = [measured(model, tokens(b, 1), start_pos=s + i, use_cache=True) for i in range(max(n, 1))]
    for i, step in enumerate(steps):
        assert step == evaluate(costs.flops(mdl, "decode"), {**vals, S.t: s + i})
    work = costs.workload(cfg, batch=b, seq=s, gen=n)["flops"]
    assert work["decode_token"] == steps[0]  # the step with s tokens already cached
    assert work["generation"] == prefill + sum(steps[:n])


@given(configs(), generation_workloads())
def test_causal_counts_only_the_unmasked_pairs(cfg, w):
    """Causal prefill = dense prefill minus 2·2·b·n_h·d_h FLOPs per layer for each key the mask hides."""
    b, s = w["batch"], w["seq"]
    mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)  # the reference model's mask
    hidden = int(torch.isinf(mask).sum())
    work = lambda a: costs.workload(cfg, batch=b, seq=s, attention=a)["flops"]  # noqa: E731
    dense, causal = work("dense"), work("causal")
    per_pair = 2 * 2 * b * cfg.n_heads * cfg.head_dim * cfg.n_layers  # QK^T and A·V, 2 FLOPs per MAC
    assert dense["prefill"] - causal["prefill"] == per_pair * hidden
    assert dense["decode_token"] == causal["decode_token"]  # one query sees every cached key


def test_one_token_llama2_13b_is_about_2n():
    """One token through Llama-2-13B costs about 2N FLOPs (2.57e10), as torch measures; 2N × 4096
    ≈ 1.07e14 is a whole 4096-token prefill, not one token; its MACs are the multiply-adds counted by hand."""
    cfg = symllm.load("llama2-13b")
    # Llama-2-13B's config.json: d=5120, L=40, MHA 40 heads of 128, d_ff=13824, V=32000; b = s = 1.
    d, L, d_ff, V = 5120, 40, 13824, 32000
    per_layer = 2 * (4 * d * d + 3 * d * d_ff) + 2 * 2 * d * 1  # wq wk wv wo w1 w2 w3, QK^T and A·V over 1 key
    expected = L * per_layer + 2 * d * V  # + lm_head
    assert expected == 25_704_038_400
    ours = costs.workload(cfg, batch=1, seq=1)["flops"]
    assert ours["prefill"] == expected
    assert ours["prefill"] == measured_by_layers("llama2-13b", 1)
    # about 2N: 2 FLOPs per weight of every matmul (all but the embedding table) + the tiny attention core
    n_params = symllm.params(cfg)["total"]
    assert ours["prefill"] == 2 * (n_params - V * d - (2 * L + 1) * d) + 4 * L * d
    assert abs(ours["prefill"] / (2 * n_params) - 1) < 0.02
    assert ours["prefill"] < 1.07e14 / 4000
    # MACs on request: the multiply-adds counted by hand (each weight once per token, d_h per head and key)
    macs_by_hand = L * (4 * d * d + 3 * d * d_ff + 2 * d * 1) + d * V
    vals = {**symllm.values(cfg, batch=1, seq=1), S.d_ff: symllm.hidden_dim(cfg)}
    assert evaluate(costs.flops(symllm.model_for(cfg), "prefill", macs=True), vals) == macs_by_hand
    with pytest.raises(symllm.SymllmError, match="macs"):  # element-wise work has no multiply-adds
        costs.flops("model", "prefill", bucket="elementwise", macs=True)


@pytest.mark.parametrize("name,seq,backward", [
    ("llama3.2-1b", 8192, True), ("llama2-70b", 4096, False), ("mistral-7b", 32768, False),
])
def test_presets_on_meta_at_long_sequences(name, seq, backward):
    """Large presets on the meta device: dense prefill (the last position's logits) and training FLOPs equal
    FlopCounterMode's (``measured_by_layers``)."""
    cfg = symllm.load(name)
    flops = costs.workload(cfg, batch=1, seq=seq)["flops"]
    key = "training_step" if backward else "prefill"
    assert flops[key] == measured_by_layers(name, seq, backward=backward, logits_to_keep=0 if backward else 1)


def test_405b_at_131072_tokens(cli):
    """`count llama3.1-405b --seq 131072 ... --json`: exact KV cache, prefill = FlopCounterMode on meta
    (``measured_by_layers``, the last position's logits); ``--logits all`` adds the lm_head over the other
    131,071 positions by hand: 2 × 131,071 × d 16,384 × V 128,256 FLOPs."""
    r = cli(["count", "llama3.1-405b", "--seq", "131072", "--batch", "1", "--dtype", "bf16",
             "--kv-dtype", "bf16", "--attention", "dense", "--json"])
    assert r.code == 0
    out = json.loads(r.out)
    assert out["memory"]["kv_cache"] == 2 * 126 * 8 * 128 * 2 * 131072
    assert out["flops"]["prefill"] == measured_by_layers("llama3.1-405b", 131072, logits_to_keep=1)
    assert set(out) >= {"params", "config", "flops", "memory"}
    every = json.loads(cli(["count", "llama3.1-405b", "--seq", "131072", "--logits", "all", "--json"]).out)
    assert every["flops"]["prefill"] - out["flops"]["prefill"] == 2 * 131071 * 16384 * 128256


def test_mfu_from_measured_training_flops(meta_model):
    """MFU = tokens/s × model FLOPs per token / peak FLOP/s: FlopCounterMode's forward+backward FLOPs, which
    count SDPA's whole s × s rectangle, less the masked pairs MFU does not count (docs/conventions.md, "MFU": the
    causal pairs), s(s-1)/2 a sequence x 2 matmuls x 2 FLOPs x 32 heads x 64 x 3 passes x 16 layers."""
    cfg = symllm.load("llama3.2-1b")
    seq = 1024
    dense = measured(meta_model("llama3.2-1b", "bfloat16"), tokens(1, seq), backward=True)
    per_token = Fraction(dense - seq * (seq - 1) // 2 * 2 * 2 * 32 * 64 * 3 * 16, seq)
    assert utilisation.mfu(cfg, 12_000, 312e12, seq=seq) == pytest.approx(float(per_token * 12_000 / Fraction(312e12)))


@given(configs(), st.integers(1, 64), st.integers(1, 64))
def test_generation_closed_form_is_the_sum_of_its_steps(cfg, s, n):
    """The closed-form generation total equals prefill + the n decode steps summed one by one."""
    mdl = symllm.model_for(cfg)
    vals = symllm.values(cfg, batch=1, seq=s, gen=n)
    vals[S.d_ff] = symllm.hidden_dim(cfg)
    steps = sum(evaluate(costs.flops(mdl, "decode"), {**vals, S.t: s + i}) for i in range(n))
    assert evaluate(costs.flops(mdl, "generation"), vals) == evaluate(costs.flops(mdl, "prefill"), vals) + steps
