"""Training through DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5): transformers runs it under
``torch.no_grad`` (``@torch.no_grad()`` on ``DeepseekV32Indexer.forward`` and ``GlmMoeDsaIndexer.forward``,
transformers 5.23), so a training step runs its forward and no backward, saves nothing for it, and its LoRA
adapters (which PEFT adds all the same) get no gradient.

Expected numbers come from transformers' own classes on small CPU models: FlopCounterMode over a forward and a
backward (with and without its gradient checkpointing), saved_tensors_hooks over a training forward
(tests/conftest.py), PEFT's get_peft_model and the gradients a backward leaves; and hand arithmetic of the
indexer's linears and scores from ``DeepseekV32Indexer.__init__`` and ``forward``."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.costs import numbered, phases as costs

from .conftest import held_for_backward, requires, saved_and_eager
from .strategies import dsa_configs
from .test_mla import _DSA_SPELLED, _hf_latent_extras, _hf_model

#: PEFT target_modules naming the latent attention's linears (they get gradients) and the indexer's (they do not)
_ATTENTION = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
_INDEXER = ("wq_b", "wk", "weights_proj")


def _indexers(model) -> int:
    """How many layers of transformers' model run an indexer of their own (GLM-5's 'shared' layers do not)."""
    return sum(getattr(layer.self_attn, "indexer", None) is not None for layer in model.model.layers)


def _indexer_forward(raw: dict, b: int, s: int) -> int:
    """One indexer's forward matmul FLOPs over a prefill of b × s tokens, by hand from DeepseekV32Indexer:
    wq_b (q_lora_rank -> index_n_heads·index_head_dim), wk (hidden -> index_head_dim), weights_proj (hidden ->
    index_n_heads) a token; per query and key, q·k for each head (2·n_I·d_I) and the head-weighted sum (2·n_I)."""
    d, r_q, n_I, d_I = raw["hidden_size"], raw["q_lora_rank"], raw["index_n_heads"], raw["index_head_dim"]
    rows = b * s
    return 2 * rows * (r_q * n_I * d_I + d * d_I + d * n_I) + b * s * s * (2 * n_I * d_I + 2 * n_I)


def _unselected(raw: dict, b: int, s: int) -> int:
    """The eager core's FLOPs a forward spends beyond the top-k symllm counts (tests/test_mla.py's sparse test):
    QKᵀ and A·V, 2·n_h·(d_hn + d_hr + d_hv) per query-key pair the indexer did not select, all layers."""
    per_pair = 2 * raw["num_attention_heads"] * (raw["qk_nope_head_dim"] + raw["qk_rope_head_dim"] + raw["v_head_dim"])
    return raw["num_hidden_layers"] * per_pair * b * s * (s - min(raw["index_topk"], s))


def _train_flops(model, ids) -> int:
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter:
        model(ids).logits.float().sum().backward()
    return counter.get_total_flops()


@given(dsa_configs(), st.integers(1, 2), st.integers(1, 5))
def test_training_flops_leave_out_the_indexers_backward(raw, b, s):
    """FlopCounterMode over a forward and a backward of transformers' eager DeepSeek-V3.2 / GLM-5 is symllm's
    training FLOPs plus the eager core's unselected pairs, three passes of them (forward and backward: its
    masked scores and weighted values run over every key); and symllm's training is three forwards less two
    of each indexer's (hand arithmetic): its forward runs once, its backward never."""
    torch = requires("torch")
    torch.manual_seed(0)
    model = _hf_model(raw, "cpu").train()
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    values = symllm.values(cfg, batch=b, seq=s, logits="all")
    training = costs.flops(mdl, "training").subs(values)
    ids = torch.randint(0, raw["vocab_size"], (b, s))
    assert _train_flops(model, ids) == training + 3 * _unselected(raw, b, s)
    assert training == 3 * costs.flops(mdl, "prefill").subs(values) - 2 * _indexers(model) * _indexer_forward(raw, b, s)


@given(dsa_configs("deepseek_v32"), st.integers(1, 2), st.integers(1, 5))
def test_full_recomputation_runs_the_indexers_forward_again(raw, b, s):
    """transformers' gradient checkpointing reruns each decoder layer's forward in the backward, the indexer's
    (under torch.no_grad) included: what it adds to a DeepSeek-V3.2 step, less what it adds to the DeepSeek-V3
    of the same sizes (no indexer; both eager cores score every pair), is each layer's indexer forward once more
    (hand arithmetic); symllm's full recomputation adds the same indexer forward, less the pairs beyond the
    top-k that its sparse core does not count."""
    torch = requires("torch")
    v3 = {k: v for k, v in raw.items() if not k.startswith("index_")}
    v3.update(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"])
    ids = torch.randint(0, raw["vocab_size"], (b, s))
    added = {}
    for name, config in (("v32", raw), ("v3", v3)):
        torch.manual_seed(0)
        model = _hf_model(config, "cpu").train()
        plain = _train_flops(model, ids)
        model.gradient_checkpointing_enable()
        added[name] = _train_flops(model, ids) - plain
        cfg = from_hf(config)
        mdl = symllm.model_for(cfg)
        values = symllm.values(cfg, batch=b, seq=s)
        added[f"symllm {name}"] = (costs.flops(mdl, "training", recompute=True) - costs.flops(mdl, "training")).subs(values)
    indexers = raw["num_hidden_layers"] * _indexer_forward(raw, b, s)
    assert added["v32"] - added["v3"] == indexers
    # symllm's sparse core counts the top-k alone where DeepSeek-V3's counts every pair
    assert added["symllm v32"] - added["symllm v3"] == indexers - _unselected(raw, b, s)


@given(dsa_configs(), st.integers(1, 2), st.integers(1, 5))
def test_saved_activations_hold_nothing_of_the_indexer(raw, b, s):
    """What transformers' eager DeepSeek-V3.2 / GLM-5 saves for backward (fp32, every layer dense;
    saved_tensors_hooks) is DeepSeek-V3's terms (tests/test_mla.py: symllm's eager stack plus the named extras,
    the RoPE tables as cos and sin): the indexer under torch.no_grad saves nothing, as symllm counts."""
    torch = requires("torch")
    raw = {**raw, "first_k_dense_replace": raw["num_hidden_layers"]}
    torch.manual_seed(0)
    measured, ours = saved_and_eager(_hf_model(raw, "cpu").train(), raw, b, s)
    assert measured == ours + _hf_latent_extras({**raw, "model_type": "deepseek_v3"}, b, s)


@given(dsa_configs(), st.integers(1, 2), st.integers(1, 4), st.integers(1, 8),
       st.lists(st.sampled_from(_ATTENTION), min_size=1, max_size=3, unique=True),
       st.lists(st.sampled_from(_INDEXER), min_size=1, max_size=3, unique=True))
def test_indexer_adapters_save_nothing_and_get_no_gradient(raw, b, s, rank, attention, indexer):
    """PEFT's get_peft_model on transformers' DeepSeek-V3.2 / GLM-5 adapts the indexer's wq_b, wk and
    weights_proj (their adapters are trainable parameters) but a training forward holds for backward exactly what
    it holds without them (saved_tensors_hooks, the storages still alive once the forward has returned), and after a backward their gradients are None while the attention's
    adapters have theirs: symllm's lora_activations are the same with and without the indexer's targets, and
    its trainable count grows by what PEFT's does."""
    torch, peft = requires("torch"), requires("peft")
    ids = torch.randint(0, raw["vocab_size"], (b, s))
    cfg = from_hf(raw)
    measured, ours = {}, {}
    for name, targets in (("attention", attention), ("both", attention + indexer)):
        torch.manual_seed(0)
        model = peft.get_peft_model(_hf_model(raw, "cpu").train(), peft.LoraConfig(r=rank, target_modules=targets))
        saved = held_for_backward(model, ids)
        model(input_ids=ids).logits.float().sum().backward()
        grads = {n: p.grad is not None for n, p in model.named_parameters() if p.requires_grad}
        assert all(has != (".indexer." in n) for n, has in grads.items()), grads
        spelled = ",".join(_DSA_SPELLED.get(t, t) for t in targets)
        lora = symllm.workload(cfg, batch=b, seq=s, dtype="fp32", lora_rank=rank, lora_targets=spelled)
        measured[name] = (saved, len(grads), sum(p.numel() for p in model.parameters() if p.requires_grad))
        ours[name] = (lora["memory"]["lora_activations"], lora["params"]["trainable"])
    assert measured["both"][0] == measured["attention"][0]
    assert ours["both"][0] == ours["attention"][0]
    assert measured["both"][1] > measured["attention"][1]  # the indexer's adapters are there, trainable
    assert ours["both"][1] - ours["attention"][1] == measured["both"][2] - measured["attention"][2] > 0


def test_deepseek_v32_training_by_hand():
    """deepseek-v3.2 at one sequence of 4,096 tokens: its 61 indexers' forward (wq_b 1536 -> 64·128, wk 7168 ->
    128, weights_proj 7168 -> 64 a token; 2·64·(128 + 1) per query and key) is counted once in a training
    step, not three times: the step is DeepSeek-V3's plus the indexers' forward, less the attention pairs
    beyond the top 2,048 keys, three passes of 2·128·(192 + 128) each (hand arithmetic)."""
    s, layers = 4096, 61
    indexer = 2 * s * (1536 * 64 * 128 + 7168 * 128 + 7168 * 64) + s * s * 2 * 64 * 129
    unselected = s * (s - 2048)  # the dense convention: every query holds all s keys, attends 2,048
    ours = symllm.workload("deepseek-v3.2", batch=1, seq=s)["flops"]["training_step"]
    v3 = symllm.workload("deepseek-v3", batch=1, seq=s)["flops"]["training_step"]
    assert ours == v3 + layers * indexer - 3 * layers * unselected * 2 * 128 * (192 + 128)


def test_deepseek_v32_mfu_under_full_recomputation_counts_the_indexer_once(monkeypatch):
    """Model FLOPs (MFU's numerator: the forward and backward of what has a backward) do not change with the
    recomputation policy: under full recomputation deepseek-v3.2's step at 4,096 tokens runs each indexer's
    forward twice and its backward never (4 passes of the rest, 2 of the indexer), so 3/4 of it would count
    half an indexer forward too many. MFU counts the attention over its causal pairs (docs/conventions.md,
    "MFU"; this test pinned the dense count before the bound's MFU and the expected one took one numerator):
    DeepSeek-V3's step as counted above (the dense rectangle, s² pairs a layer), less the pairs the top 2,048
    keep out of the causal ones, sum over queries j of min(2,048, j) = 2,048·2,049/2 + 2,048·2,048 of the s²
    (3 passes x 2 FLOPs x 128 heads x (192 + 128)), plus its 61 indexers' forward once, their scores over
    the s(s+1)/2 causal pairs."""
    from fractions import Fraction

    import symllm.costs.hardware as hardware
    monkeypatch.setattr(hardware, "blank_unfit", lambda time: time)  # one H100 cannot hold it: time it anyway
    s, layers, top = 4096, 61, 2048
    projections = 2 * s * (1536 * 64 * 128 + 7168 * 128 + 7168 * 64)
    selected = top * (top + 1) // 2 + (s - top) * top  # causal: the query at position j keeps min(2048, j) keys
    assert selected == 6_292_480
    v3 = symllm.workload("deepseek-v3", batch=1, seq=s)["flops"]["training_step"]
    by_hand = (v3 + layers * (projections + s * (s + 1) // 2 * 2 * 64 * 129)
               - 3 * layers * (s * s - selected) * 2 * 128 * (192 + 128))
    w = symllm.workload("deepseek-v3.2", batch=1, seq=s, gpu="h100-sxm", recompute="full")
    t = w["time"]
    assert t["gpus"] == 1
    assert t["mfu"] * t["training_step_s"] * t["peak_flops"] == pytest.approx(by_hand, rel=1e-12)
    assert t["expected"]["mfu"] * t["expected"]["training_step_s"] * t["peak_flops"] == pytest.approx(by_hand,
                                                                                                      rel=1e-12)
    # the old rule, 3/4 of the step as run (the dense count), is over by half of the 61 indexers' forward
    dense = v3 + layers * (projections + s * s * 2 * 64 * 129) - 3 * layers * s * (s - top) * 2 * 128 * (192 + 128)
    assert Fraction(3, 4) * w["flops"]["training_step"] - dense == Fraction(layers * (projections + s * s * 2 * 64
                                                                                       * 129), 2)


@pytest.mark.parametrize("recompute, passes", [(False, 3), (True, 4)])
def test_deepseek_v32_training_core_runs_the_indexer_scores_forward_only(recompute, passes):
    """The attention core a training step runs at the attention kernel's efficiency (the expected time's
    ``training_core_flops``): 3 forwards' worth of the prefill core (4 under full recomputation) less the
    backward the indexer's scores never run: per layer, query and key, 2·64·128 for q·k and 2·64 for the
    head-weighted sum (hand arithmetic, deepseek-v3.2 at one sequence of 4,096 tokens, 61 layers)."""
    from symllm.costs import hardware

    s, layers = 4096, 61
    (stage,) = hardware.stage_times(symllm.model_for("deepseek-v3.2"), False, recompute=recompute,
                                    phase_flops=costs.flops)["stages"]
    values = numbered.values("deepseek-v3.2", batch=1, seq=s)
    core, training = (stage[k].subs(values) for k in ("prefill_core_flops", "training_core_flops"))
    assert training == passes * core - 2 * layers * s * s * 2 * 64 * (128 + 1)
