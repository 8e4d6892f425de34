"""Element-wise FLOPs against an independent count, and every family symllm reads checked against transformers.

The expected numbers come from transformers' own model classes (tiny configs, CPU, float32, eager attention
and experts) run under tests/elementwise_oracle.py's ``TorchDispatchMode``, which counts each aten op's
element-wise FLOPs under the convention written there (docs/conventions.md's, in aten terms) and reads
nothing of symllm; and from hand arithmetic written out here. symllm's torch reference (symllm/reference.py)
reads the same ``LayerKind`` as the closed forms, so a shared misreading is invisible to it: a layer given
work it never does (issue 38: a layer without RoPE given Llama 4's query temperature) is not.

Where transformers' code and symllm's convention cannot match op for op, :func:`_convention` says how the
oracle's count is mapped and why; everything else is compared as counted.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch.config import from_hf
from symllm.costs import phases as costs

from .conftest import requires
from .strategies import family_configs

FAMILIES = family_configs()


def _model(raw: dict):
    """transformers' model for the config.json ``raw`` on the CPU, float32, eager attention and experts."""
    transformers, torch = requires("transformers"), requires("torch")
    config = transformers.AutoConfig.for_model(**raw, attn_implementation="eager", experts_implementation="eager")
    torch.manual_seed(0)
    with torch.device("cpu"):
        return transformers.AutoModelForCausalLM.from_config(config).eval()


def _count(model, b: int, s: int):
    """The oracle over a prefill of ``b`` prompts of ``s`` tokens, the last position's logits (symllm's
    default prefill; ``logits_to_keep=1`` is what ``generate`` asks for), no cache."""
    torch = requires("torch")
    from .elementwise_oracle import count
    # Gemma 4 with layers sharing keys and values: generate's prefill runs only the kept position through them
    # (Gemma4TextModel._maybe_slice_kv_shared_inputs; a TypeError without per-layer embeddings), symllm's
    # convention every position, as a forward does; output_hidden_states turns that slicing off (it records
    # tensors, no element-wise op), the logits still the last position's
    shared = getattr(model.config, "num_kv_shared_layers", 0)
    return count(model, torch.zeros(b, s, dtype=torch.long), use_cache=False, logits_to_keep=1,
                 **({"output_hidden_states": True} if shared else {}))


def _convention(counter, model, raw: dict, b: int, s: int, t: int = 0) -> int:
    """The oracle's count of transformers' prefill, mapped to symllm's convention where the two cannot match
    op for op (each mapping with its reason):

    - **routers**: symllm counts a router's probabilities as a softmax's 5 FLOPs per logit (b·s·n_e a layer,
      ``components.router``), whatever the router computes: Mixtral's and Qwen's softmax and top-k
      renormalisation, Llama 4's sigmoid of the top k, DeepSeek-V3's and GLM's sigmoid, correction bias,
      group selection, renormalisation and scaling, gpt-oss's softmax over the top k. The oracle's count
      inside each router module (every class whose name ends in ``Router``) is replaced by 5 per logit
      (transformers' router weight: ``n_e`` rows; Gemma 4's ``proj``, its weightless norm, ``scale``,
      renormalisation and ``per_expert_scale`` inside the router), its bias add (gpt-oss's, 1 per logit) kept;
    - **gpt-oss's and MiMo-V2-Flash's attention** subtract each row's max themselves before ``F.softmax`` (which
      subtracts it again): the same subtraction twice, which the convention counts once (in the softmax's 4):
      the explicit subtraction is left out;
    - **Llama 4's experts**: transformers runs every expert on every token (scaling each token's input by its
      routing weight, zero for the experts it does not choose, and summing the ``n_e`` outputs), so its
      routed work is ``n_e / k`` times the model's (as the matmul test of tests/test_moe.py adds): ``k / n_e``
      of it is compared;
    - **a one-token prompt through a Gated DeltaNet** (Qwen3-Next, Qwen3.5): transformers runs a prompt of one
      token, with no state yet, through the chunked rule (one chunk of 64 positions, 63 of them padding);
      symllm counts every one-token pass as the recurrent step it is in generation (docs/conventions.md,
      "Linear attention"). For ``s = 1`` the oracle's count of ``torch_chunk_gated_delta_rule`` in each DeltaNet
      layer is replaced by its count of ``torch_recurrent_gated_delta_rule`` over inputs of the same shapes
      (:func:`_rule_count`; both are transformers' functions from the layer's own module);
    - **Cohere's LayerNorm** computes ``hidden_states - mean`` twice (once for the variance, once for the
      output): the same subtraction, which the convention (6 an element) counts once: half of its subtractions
      are left out;
    - **a one-token prompt through a Mamba-2 mixer** (Nemotron-H), as through a Gated DeltaNet: transformers runs
      it, with no state yet, through the chunked scan (one chunk of ``chunk_size`` positions); symllm counts
      the recurrent step. For ``s = 1`` the oracle's count of ``mamba2_chunk_scan`` in each Mamba-2 layer is
      replaced by its count of ``mamba2_selective_state_update`` over inputs of the shapes the layer gives each
      (:func:`_scan_count`; both are transformers' functions from the layer's own module);
    - **DeepSeek Sparse Attention** (DeepSeek-V3.2, GLM-5): transformers' eager attention scales and softmaxes
      (1 + 4 per score) every one of the ``s`` keys of each query and masks those its indexer did not select;
      symllm counts the ``min(index_topk, s)`` keys each query attends (a sparse kernel's work,
      docs/conventions.md): the other ``s - min(index_topk, s)`` scores of each query and head are left out;
      and the mask that hides them, built from the indexer's top-k (an activation to the oracle), is added to
      every score, ``b·n_h·s·s`` a layer: a mask, which a kernel applies by skipping (as the causal mask), left out.
    """
    total = counter.total
    routers = [m for m in model.modules() if type(m).__name__.endswith("Router")]
    names = {type(m).__name__ for m in routers}
    if routers:
        # Gemma 4's router holds its projection as proj (its norm, scale and per-expert scale inside the router)
        total += (5 * b * s * sum(m.weight.shape[0] if hasattr(m, "weight") else
                                  m.proj.weight.shape[0] for m in routers)
                  - counter.within(*names) + counter.within(*names, ops=("addmm",)))
    total -= counter.within("GptOssAttention", "MiMoV2FlashAttention", "DeepseekV4Attention", ops=("sub",),
                            statistic=True)
    twice = counter.within("CohereLayerNorm", ops=("sub",))
    assert twice % 2 == 0
    total -= twice // 2
    if "index_topk" in raw and raw["model_type"] != "deepseek_v4":
        unselected = s - min(raw["index_topk"], s)
        total -= b * raw["num_attention_heads"] * s * (5 * unselected + s) * raw["num_hidden_layers"]
    deltanets = [m for m in model.modules() if type(m).__name__.endswith("GatedDeltaNet")]
    if deltanets and s == 1:
        layer = deltanets[0]  # every DeltaNet layer of a model has the same sizes
        total += len(deltanets) * (_rule_count(layer, "recurrent", b) - _rule_count(layer, "chunk", b))
    mambas = [m for m in model.modules() if type(m).__name__.endswith("Mamba2Mixer")]
    if mambas and s == 1:
        layer = mambas[0]  # every Mamba-2 layer of a model has the same sizes
        total += len(mambas) * (_scan_count(layer, "recurrent", b) - _scan_count(layer, "chunk", b))
    for attention in (m for m in model.modules() if type(m).__name__ == "DeepseekV4Attention"):
        total -= _dsv4_unattended(attention, b, s, t)
    if raw["model_type"] == "llama4_text":
        E, k = raw["num_local_experts"], raw["num_experts_per_tok"]
        routed = counter.within("Llama4TextExperts") + counter.within("Llama4TextMoe", ops=("mul", "sum"), direct=True)
        assert routed * k % E == 0
        total += routed * k // E - routed
    return total


def _dsv4_unattended(attention, b: int, s: int, t: int = 0) -> int:
    """What the oracle counts in a DeepSeek-V4 attention layer that symllm's convention leaves out, for ``s`` new
    tokens after ``t`` cached (``t = 0``: no cache), when the layer holds ``E = ⌊(t + s)/m⌋`` compressed entries
    after the pass and its queries see ``min(t, W - 1) + s`` window keys: the mask over the compressed entries,
    ``block_bias``, built from the compressed keys (an activation to the oracle) and added to every score, window
    keys and entries, of each query and head, when the layer concatenates it (``E > 0``; an HCA layer only for
    ``s > 1``); and in a CSA layer the scale and softmax (1 + 4) of each query's ``E - min(index_topk, E)`` entries
    its indexer did not select (transformers' eager core scores all of them and masks the rest; symllm counts what
    a sparse kernel attends, as its matmul FLOPs do)."""
    compressor = attention.compressor
    if compressor is None:
        return 0
    entries = (t + s) // compressor.compress_rate
    keys = min(t, attention.sliding_window - 1) + s
    csa = type(compressor).__name__ == "DeepseekV4CSACompressor"
    mask = entries > 0 and (csa or s > 1)
    unselected = entries - min(compressor.indexer.index_topk, entries) if csa else 0
    return b * attention.num_heads * s * ((keys + entries if mask else 0) + 5 * unselected)


def _rule_count(layer, form: str, b: int, s: int = 1) -> int:
    """The oracle's count of transformers' ``torch_{form}_gated_delta_rule`` (``chunk`` or ``recurrent``, from the
    module of the Gated DeltaNet ``layer``) over ``b`` sequences of ``s`` tokens of that layer's heads, as the
    layer calls it (q and k l2-normalised inside the rule, no state yet)."""
    import sys
    torch = requires("torch")
    from .elementwise_oracle import ElementwiseCount
    rule = getattr(sys.modules[type(layer).__module__], f"torch_{form}_gated_delta_rule")
    torch.manual_seed(0)
    q, k = (torch.randn(b, s, layer.num_k_heads, layer.head_k_dim) for _ in range(2))
    v = torch.randn(b, s, layer.num_v_heads, layer.head_v_dim)
    g, beta = -torch.rand(b, s, layer.num_v_heads), torch.rand(b, s, layer.num_v_heads)
    with torch.no_grad(), ElementwiseCount(torch.nn.Module(), q, k, v, g, beta) as counter:
        rule(q, k, v, g=g, beta=beta, initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=True)
    return counter.total


def _scan_count(layer, form: str, b: int) -> int:
    """The oracle's count of transformers' Mamba-2 scan over ``b`` sequences of one token of the mixer ``layer``'s
    heads, as the layer calls it (``form``: ``chunk``, ``mamba2_chunk_scan``, or ``recurrent``,
    ``mamba2_selective_state_update`` with every head's dt, A, D and dt_bias broadcast over its elements)."""
    import sys
    torch = requires("torch")
    from .elementwise_oracle import ElementwiseCount
    module = sys.modules[type(layer).__module__]
    H, P, G, N = layer.num_heads, layer.head_dim, layer.n_groups, layer.ssm_state_size
    torch.manual_seed(0)
    x, dt = torch.randn(b, 1, H, P), torch.randn(b, 1, H)
    B, C = torch.randn(b, 1, G, N), torch.randn(b, 1, G, N)
    A, D, bias = -torch.rand(H), torch.rand(H), torch.rand(H)
    with torch.no_grad(), ElementwiseCount(torch.nn.Module(), x, dt, B, C) as counter:
        if form == "chunk":
            module.mamba2_chunk_scan(x, dt, A, B, C, chunk_size=layer.chunk_size, D=D, dt_bias=bias,
                                     dt_softplus=True, dt_limit=layer.time_step_limit)
        else:
            module.mamba2_selective_state_update(
                torch.zeros(b, H, P, N), x[:, 0], dt[:, 0, :, None].expand(-1, -1, P),
                A[:, None, None].expand(-1, P, N), B[:, 0], C[:, 0], D[:, None].expand(-1, P),
                dt_bias=bias[:, None].expand(-1, P), dt_softplus=True)
    return counter.total


def _symllm(raw: dict, b: int, s: int) -> int:
    if raw["model_type"] == "deepseek_v4":  # its workloads are refused until its activations are modelled: the
        config = from_hf(raw)              # prefill's closed form (the last position's logits), evaluated
        form = costs.logit_rows(costs.flops(symllm.model_for(config), "prefill", bucket="elementwise"))
        return int(form.subs(symllm.values(config, batch=b, seq=s)))
    return costs.workload(from_hf(raw), batch=b, seq=s)["flops"]["elementwise"]


# --- the oracle itself, by hand ------------------------------------------------------------------------

def test_oracle_counts_a_llama_by_hand():
    """On a LLaMA of L = 2 blocks (d = 8, n_h = 2, n_kv = 1, d_h = 4, d_ff = 6), b = 2, s = 3, the oracle counts
    what the convention says, written out: each RMSNorm (2 a block and the final one) 4 per element of b·s·d
    (square, mean, scale by 1/rms, weight; the per-row ``+ eps`` and rsqrt left out); RoPE 3 per element of
    the query and key heads (2 multiplies, 1 add; rotate_half's cat and sign flip none); the scores'
    1/√d_h scale 1 and softmax 4 over the dense s × s rectangle of each head (the causal mask's add none);
    SiLU 4 and the gating product 1 per element of d_ff; two residual adds per element of d a block. The
    cos/sin tables and the mask are built from positions alone: none."""
    raw = {"model_type": "llama", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 6}
    b, s, L, d, n_h, n_kv, d_h, d_ff = 2, 3, 2, 8, 2, 1, 4, 6
    T = b * s
    per_block = (2 * 4 * T * d + 3 * T * (n_h + n_kv) * d_h + 5 * b * n_h * s * s + 5 * T * d_ff + 2 * T * d)
    counter = _count(_model(raw), b, s)
    assert counter.total == L * per_block + 4 * T * d
    assert counter.by_op["_softmax"] == L * 4 * b * n_h * s * s and counter.by_op["silu"] == L * 4 * T * d_ff


def test_oracle_sees_the_temperature_only_where_transformers_computes_it():
    """Llama 4's layers without RoPE (no_rope_layers 0) multiply their queries by a per-position temperature
    (1 per query element, the factor itself built from positions: none); its RoPE layers rotate q and k
    instead (a complex multiply, 6 per pair of elements: 3 an element). The oracle tells them apart from
    transformers' code alone: the difference between a model whose one layer has RoPE and one whose layer has
    none is RoPE's 3·b·s·(n_h + n_kv)·d_h less the temperature's b·s·n_h·d_h, by hand. (A family that read a
    layer without RoPE as symllm's Llama 4 kind, as EXAONE 4's first draft did, gains that temperature in
    symllm's count and not in this one.)"""
    base = {"model_type": "llama4_text", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 6,
            "intermediate_size_mlp": 6, "num_local_experts": 1, "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 1, "use_qk_norm": False, "attention_chunk_size": 64}
    b, s, n_h, n_kv, d_h = 1, 5, 2, 1, 4
    rope = _count(_model(dict(base, no_rope_layers=[1])), b, s).total
    nope = _count(_model(dict(base, no_rope_layers=[0])), b, s).total
    assert rope - nope == 3 * b * s * (n_h + n_kv) * d_h - b * s * n_h * d_h
    for ropes in ([1], [0]):
        raw = dict(base, no_rope_layers=ropes)
        model = _model(raw)
        assert _symllm(raw, b, s) == _convention(_count(model, b, s), model, raw, b, s)


def test_shared_experts_add_their_output_into_the_routed_sum():
    """A shared expert's output is added to the routed experts' sum, 1 FLOP per element of b·s·d in every MoE
    layer (Qwen2-MoE's ``shared_expert_output + routed``, DeepSeek's ``hidden_states + shared_experts(...)``):
    the oracle finds exactly that add in the MoE block's own code, and symllm counts it (it did not before the
    oracle: issue 38 item 6)."""
    raw = {"model_type": "qwen2_moe", "vocab_size": 16, "hidden_size": 6, "num_hidden_layers": 2,
           "num_attention_heads": 3, "num_key_value_heads": 1, "intermediate_size": 8, "moe_intermediate_size": 5,
           "shared_expert_intermediate_size": 7, "num_experts": 3, "num_experts_per_tok": 2,
           "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": False, "qkv_bias": False}
    b, s, d, L = 2, 3, 6, 2
    model = _model(raw)
    counter = _count(model, b, s)
    # the MoE block's own adds: the sigmoid gate's product is a mul, so its one add is the shared output's
    assert counter.within("Qwen2MoeSparseMoeBlock", ops=("add",), direct=True) == L * b * s * d
    assert _symllm(raw, b, s) == _convention(counter, model, raw, b, s)


def test_sinks_cost_a_softmax_entry_without_the_scale():
    """gpt-oss's sink is one more entry of each softmax row, a learned logit never scaled by 1/√d_h: 4 FLOPs
    per row (subtract the max, exp, accumulate, divide), so per head and query the row costs 5·s + 4 against
    a plain attention's 5·s, by hand: the oracle's softmax counts s + 1 entries a row, and its scale s."""
    raw = {"model_type": "gpt_oss", "vocab_size": 16, "hidden_size": 4, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 2, "intermediate_size": 3,
           "num_local_experts": 2, "num_experts_per_tok": 1, "sliding_window": 8,
           "layer_types": ["full_attention"]}
    b, s, n_h = 2, 3, 2
    model = _model(raw)
    counter = _count(model, b, s)
    assert counter.within("GptOssAttention", ops=("_softmax",)) == 4 * b * n_h * s * (s + 1)
    assert counter.within("GptOssAttention", ops=("sub",), statistic=True) == b * n_h * s * (s + 1)  # the twice
    assert _symllm(raw, b, s) == _convention(counter, model, raw, b, s)


def test_oracle_counts_gemma2_over_llama_by_hand():
    """Gemma 2's element-wise work over a LLaMA of the same sizes, by hand (as tests/test_dense_families.py
    writes it for symllm): GeGLU's gelu_pytorch_tanh 9 per element of d_ff against SiLU's 4; soft-capping 3 per
    score of the dense s × s rectangle and per last-position logit (÷c, tanh, ×c); √d on every embedded element;
    two more RMSNorms a block (4 per element); every norm's (1 + weight) once per call, d each (a weight-only
    add, counted). The oracle's count of transformers' two models differs by exactly that."""
    sizes = {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4}
    b, s = 2, 5
    T, d, V, L, d_ff, n_h = b * s, 16, 40, 2, 24, 4
    per_block = T * d_ff * (9 - 4) + 3 * b * n_h * s * s + 2 * 4 * T * d + 4 * d
    extra = L * per_block + 3 * b * V + T * d + d
    gemma2 = _count(_model(dict(sizes, model_type="gemma2", sliding_window=64)), b, s).total
    llama = _count(_model(dict(sizes, model_type="llama")), b, s).total
    assert gemma2 - llama == extra


def test_oracle_counts_mimo_v2_flash_over_its_own_llama_by_hand():
    """MiMo-V2-Flash's attention over LLaMA's, by hand from transformers' modeling_mimo_v2_flash.py, in one
    full layer (n_kv = 1) and one sliding layer (twice the key/value heads, n_kv = 2, and a sink per head):
    the values, of their own width d_hv = 3, multiplied by ``attention_value_scale`` (``* self.v_scale``, done
    even when the scale is 1.0), 1 per value element: b·s·(1 + 2)·3; and each score row's max subtracted
    before ``F.softmax`` over the s keys (and the sink's one more entry in the sliding layer), which
    ``F.softmax`` subtracts again: b·n_h·s·(s + s + 1). The oracle finds exactly those two in the attention's
    own code; symllm counts the first, and the second is the convention's twice (:func:`_convention`)."""
    raw = {"model_type": "mimo_v2_flash", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 4, "v_head_dim": 3,
           "intermediate_size": 6, "moe_intermediate_size": 5, "n_routed_experts": 2, "num_experts_per_tok": 1,
           "layer_types": ["full_attention", "sliding_attention"], "mlp_layer_types": ["dense", "dense"],
           "sliding_window": 8, "partial_rotary_factor": 0.5}
    b, s, n_h, d_hv = 2, 3, 4, 3
    for scale in (0.707, 1.0):
        model = _model(dict(raw, attention_value_scale=scale))
        counter = _count(model, b, s)
        # its multiplies: the value scale; the scores' 1/√d_h, s × s a head in both layers; RoPE's two per
        # rotated element (2 of each head's 4) of the query and key heads, 4 + 1 and 4 + 2
        values, scores, rope = b * s * (1 + 2) * d_hv, 2 * b * n_h * s * s, 2 * b * s * 2 * ((4 + 1) + (4 + 2))
        assert counter.within("MiMoV2FlashAttention", ops=("mul",)) == values + scores + rope == 54 + 144 + 264
        assert counter.within("MiMoV2FlashAttention", ops=("sub",), statistic=True) == b * n_h * s * (2 * s + 1)
        assert _symllm(raw, b, s) == _convention(counter, model, raw, b, s)


def test_oracle_counts_a_mamba2_scan_by_hand():
    """Nemotron-H's Mamba-2 scan (n_m = 2 heads of d_m = 3, d_s = 4, one group, chunks of Q_c = 4) over one
    prompt of s = 5 tokens: c = 2 chunks, S = 8 padded positions. By hand from transformers'
    modeling_nemotron_h.py (``mamba2_chunk_scan``), per op: ``A = -exp(A_log)`` 2 (once a pass); per token and
    head dt + dt_bias, softplus (3), the clamp (2), A·dt: 7·5·2 = 70; x·dt 5·6 = 30; per padded position and
    element of a head the D skip (multiply, add), Y_off's decay, Y_diag + Y_off: 4·8·6 = 192; per padded position
    and head cumsum(A), last − cum, its exp, exp(cum): 4·8·2 = 64; B's decay 8·2·4 = 64; per chunk and head the
    segment sum's cumsum, exp and G·L over 4 × 4: 3·2·2·16 = 192; the chunk decays over 3 × 3 (cumsum, exp) per
    head: 2·2·9 = 36. In all 650. A decode step (``mamba2_selective_state_update``) per sequence: per element of a
    head dt + dt_bias, softplus, the D skip (6·6), per state element dt·A, exp, dt·B, ·x, the decay and update
    (6·24), and A's exp 2: 182. symllm counts both, and the whole prefill equals the oracle's."""
    raw = {"model_type": "nemotron_h", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 1,
           "hybrid_override_pattern": "M", "mamba_num_heads": 2, "mamba_head_dim": 3, "ssm_state_size": 4,
           "n_groups": 1, "conv_kernel": 2, "chunk_size": 4, "mamba_hidden_act": "silu", "intermediate_size": 6,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4}
    b, s = 1, 5
    model = _model(raw)
    counter = _count(model, b, s)
    scan = 2 + 70 + 30 + 192 + 64 + 64 + 192 + 36
    assert scan == 650 and counter.by_op["softplus"] == 3 * 5 * 2 and counter.by_op["cumsum"] == 16 + 64 + 18
    # the rest of the mixer: the convolution's SiLU over W = 6 + 2·4 = 14 channels, the gated norm (SiLU of the
    # gate, the product, square, mean, ·rsqrt, ·weight) over d_i = 6
    assert counter.within("NemotronHMamba2Mixer") == scan + 4 * 5 * 14 + 9 * 5 * 6
    assert _symllm(raw, b, s) == _convention(counter, model, raw, b, s)
    layer = model.model.layers[0].mixer
    assert _scan_count(layer, "recurrent", b) == 6 * 6 + 6 * 24 == 180  # A's exp is the mixer's, outside
    from symllm.costs.phases import flops
    config = from_hf(raw)
    component = next(c for c in symllm.model_for(config).walk() if c.name == "ssd_scan")
    values = symllm.values(config, batch=b, seq=s)
    assert flops(component, "decode", bucket="elementwise").subs(values) == 182
    assert flops(component, "prefill", bucket="elementwise").subs(values) == 650


def test_a_mamba2_decode_step_equals_the_oracle_by_hand():
    """One decode step of b = 2 sequences after a prompt of s = 5 through transformers' cache (an attention
    layer beside the Mamba-2 one, without which the cache takes no step): the mixer (n_m = 2, d_m = 3, d_s = 4,
    W = 6 + 2·4 = 14 channels) runs the recurrent step, by hand: A's exp 2 once, and per sequence the scan's
    6·6 + 6·24 = 180 (as :func:`test_oracle_counts_a_mamba2_scan_by_hand`), the convolution's SiLU 4·14 and the
    gated norm 9·6: 2 + 2·(180 + 56 + 54) = 582. The oracle over transformers' step and symllm's decode step
    of the mixer both say so."""
    from symllm.costs.phases import flops
    raw = {"model_type": "nemotron_h", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 2,
           "hybrid_override_pattern": "M*", "mamba_num_heads": 2, "mamba_head_dim": 3, "ssm_state_size": 4,
           "n_groups": 1, "conv_kernel": 2, "chunk_size": 4, "mamba_hidden_act": "silu", "intermediate_size": 6,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4}
    b, s = 2, 5
    _, counter = _counted_step(raw, b, s)
    assert 2 + 2 * (180 + 4 * 14 + 9 * 6) == 582
    assert counter.within("NemotronHMamba2Mixer") == 582
    config = from_hf(raw)
    mixer = next(c for c in symllm.model_for(config).walk() if c.name == "mamba")
    assert flops(mixer, "decode", bucket="elementwise").subs(symllm.values(config, batch=b, seq=s)) == 582


def _counted_step(raw: dict, b: int, s: int):
    """``(model, counter)``: transformers' model of ``raw`` and the oracle's count of one decode step of ``b``
    sequences after a prefill of ``s`` tokens through its cache."""
    torch = requires("torch")
    from .elementwise_oracle import ElementwiseCount
    model = _model(raw)
    ids = torch.zeros(b, s, dtype=torch.long)
    step = ids[:, -1:].clone()
    with torch.no_grad():
        cache = model(ids, use_cache=True, logits_to_keep=1).past_key_values
        with ElementwiseCount(model, step) as counter:
            model(step, past_key_values=cache, use_cache=True)
    return model, counter


def _deltanet_classes(model) -> tuple[str, ...]:
    """The class names of transformers' Gated DeltaNet layers in ``model``."""
    return tuple({type(m).__name__ for m in model.modules() if type(m).__name__.endswith("GatedDeltaNet")})


def _deltanet_decode(raw: dict, b: int, s: int) -> tuple[int, int]:
    """``(the oracle's, symllm's)`` element-wise count of the Gated DeltaNet layers in one decode step of ``b``
    sequences after a prefill of ``s`` tokens through transformers' cache (the recurrent rule; ``raw`` holds a
    full-attention layer, without which transformers' cache takes no step). symllm's: the linear_attention
    component's decode step, once per DeltaNet layer."""
    from symllm.costs.phases import flops
    model, counter = _counted_step(raw, b, s)
    classes = _deltanet_classes(model)
    layers = sum(type(m).__name__ in classes for m in model.modules())
    config = from_hf(raw)
    component = next(c for c in symllm.model_for(config).walk() if c.name == "linear_attention")
    ours = layers * flops(component, "decode", bucket="elementwise").subs(symllm.values(config, batch=b, seq=s))
    return counter.within(*classes), int(ours)


def test_oracle_counts_a_gated_deltanet_by_hand():
    """Qwen3-Next's Gated DeltaNet (d = 8; 1 key head and 2 value heads, d_gk = 4, d_gv = 3; a kernel of 2 over
    W = 2·4 + 2·3 = 14 channels) over one prompt of s = 65 tokens: two chunks of C = 64, S = 128 padded
    positions. By hand from transformers' modeling_qwen3_next.py, per op:

    - SiLU on the convolution's output, 4 per element: 4·65·14 = 3640;
    - beta = sigmoid(b), 4 per token and value head: 4·65·2 = 520; g = -exp(A_log)·softplus(a + dt_bias): the add,
      softplus's 3 and the multiply per token and head, exp(A_log) once per head: 5·65·2 + 2 = 652;
    - the chunked rule per value head: the l2 norms of q and k (x·x, the sum, x·(1/norm): 3 each per element)
      and q's scale, 7·65·4 = 1820; per padded position β·v and β·k (3 + 4), the cumulative decay (1), the
      pairwise decays' subtraction and exp and their products with k_β·kᵀ and q·kᵀ (4·64), exp(cum) twice,
      the keys' (last − cum) and its exp (4), the decayed k_β, q and k (3·4), the scan's v_new and output
      (2·3): 128·(256 + 16 + 9 + 5) = 36608; per chunk its decay's exp and the state's decay and update
      (1 + 2·4·3): 2·25 = 50; two heads: 2·(1820 + 36608 + 50) = 76956;
    - the gated RMSNorm per element of 65·2 rows of 3: square, mean, ·rsqrt, ·weight, SiLU(z), the product:
      9·65·2·3 = 3510.

    A decode step (the recurrent rule) per value head: the l2 norms and scale 7·4, the decay's exp 1, the
    state's decay, read (multiply, sum), update (multiply, add) and output (multiply, sum) 7·4·3, the delta
    (v − read)·β 2·3: 119; with SiLU 4·14, sigmoid 4·2, the decay 5·2 + 2 and the norm 9·2·3: 368. symllm
    counts both, and the whole prefill equals the oracle's."""
    raw = {"model_type": "qwen3_next", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 4,
           "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 4,
           "linear_value_head_dim": 3, "linear_conv_kernel_dim": 2, "num_experts": 0,
           "layer_types": ["linear_attention", "full_attention"]}
    b, s = 1, 65
    model = _model(raw)
    counter = _count(model, b, s)
    rule = 2 * (7 * 65 * 4 + 128 * (4 * 64 + 4 * 4 + 3 * 3 + 5) + 2 * (1 + 2 * 4 * 3))
    assert rule == 76956
    assert counter.within("Qwen3NextGatedDeltaNet") == 3640 + 520 + 652 + rule + 3510
    assert _symllm(raw, b, s) == _convention(counter, model, raw, b, s)
    assert _rule_count(model.model.layers[0].linear_attn, "recurrent", b) == 2 * (7 * 4 + 1 + 7 * 4 * 3 + 2 * 3)
    assert _deltanet_decode(raw, b, s) == (368, 368)
    assert 4 * 14 + 4 * 2 + 5 * 2 + 2 + 2 * 119 + 9 * 2 * 3 == 368


@pytest.mark.parametrize("kind", ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"))
@given(data=st.data(), b=st.integers(1, 2), s=st.sampled_from((2, 5, 64, 70, 128, 130)))
def test_deltanet_elementwise_over_chunks_and_steps_equals_the_oracle(kind, data, b, s):
    """For a random config of each Gated DeltaNet family (a full-attention layer kept), symllm's element-wise
    prefill equals the oracle's over one chunk, whole chunks and a padded last chunk (the family property
    above draws prompts of one chunk only), and a decode step's Gated DeltaNet layers (the recurrent rule)
    count symllm's."""
    raw = data.draw(FAMILIES[kind])
    L = raw["num_hidden_layers"]
    types = raw.get("layer_types") or ["linear_attention" if (i + 1) % raw["full_attention_interval"] else
                                       "full_attention" for i in range(L)]
    if set(types) != {"linear_attention", "full_attention"}:  # a DeltaNet layer, and an attention layer
        types = ["linear_attention", *types[1:-1], "full_attention"] if L > 1 else [
            "linear_attention", "full_attention"]
        raw = {k: v for k, v in raw.items() if k != "full_attention_interval"} | {
            "layer_types": types, "num_hidden_layers": len(types)}
    model = _model(raw)
    assert _symllm(raw, b, s) == _convention(_count(model, b, s), model, raw, b, s)
    oracle, ours = _deltanet_decode(raw, b, s)
    assert oracle == ours


def test_oracle_counts_deepseek_v4_streams_and_sliding_attention_by_hand():
    """DeepSeek-V4 (transformers' modeling_deepseek_v4.py) with n_hc = 2 streams of d = 6, hc_sinkhorn_iters I = 3,
    one sliding-window layer (n_h = 2 heads of d_h = 4, RoPE on r = 2 of each, q_lora_rank 3), b = 1, s = 3
    (T = 3 tokens). By hand, per op:

    - each hyper-connection (attn_hc, ffn_hc) per token: the weightless RMSNorm of the n_hc·d flattened streams
      (square, mean, scale: 3·12); pre = sigmoid(w·scale + base) + eps (1 + 1 + 4 + 1 per stream: 7·2) and
      post = 2·sigmoid(w·scale + base) (7·2); comb = softmax(w·scale + base) + eps (1 + 1 + 4 + 1 per entry:
      7·4); Sinkhorn: a column sum and a divide (2·4), then I - 1 rounds of a row and a column sum and divide
      (4·4 each: 32); the collapse (pre·streams, summed over the streams: 2·12): 36 + 28 + 28 + 8 + 32 + 24 =
      156, so 2·3·156 = 936 (the collapse's sum over the streams is the block's input, an activation: a
      reduction that drops its dimension is no per-row statistic);
    - the block's two stream updates, post·output + comb.T @ streams (the mix a matmul): a multiply and an add
      per stream element, 2·2·12·3 = 144;
    - hc_head per token: the norm 3·12, its sigmoid weights 7·2, the collapse 2·12: 74, so 222;
    - the sliding layer's attention per token: q_a_norm 4·3, the weightless q_b_norm 3·8, kv_norm 4·4, RoPE's
      3 per rotated element on the queries, the one key-value head and the output's un-rotation 3·2·(2 + 1 + 2):
      82, so 246; per query and head, the 1/√d_h scale of its s = 3 scores, the sink's logit appended, the max
      subtracted from the 4 logits and the softmax's 4 each: 3 + 4 + 16 = 23, so 23·2·3 = 138; 384 in all."""
    torch = requires("torch")
    raw = {"model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"], "hidden_act": "silu",
           "vocab_size": 10, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
           "head_dim": 4, "qk_rope_head_dim": 2, "hidden_size": 6, "moe_intermediate_size": 3, "q_lora_rank": 3,
           "o_groups": 2, "o_lora_rank": 2, "hc_mult": 2, "hc_sinkhorn_iters": 3, "sliding_window": 4,
           "n_routed_experts": 2, "num_experts_per_tok": 1, "layer_types": ["sliding_attention"]}
    from .elementwise_oracle import count
    counter = count(_model(raw), torch.zeros(1, 3, dtype=torch.long), use_cache=False, logits_to_keep=1)
    assert counter.within("DeepseekV4HyperConnection") == 936
    assert counter.within("DeepseekV4DecoderLayer", direct=True) == 144
    assert counter.within("DeepseekV4HyperHead") == 222
    assert counter.within("DeepseekV4Attention") == 384


def test_oracle_refuses_an_op_it_has_no_weight_for():
    """An op on activations that the convention does not name (a bare erf) is an error naming it,
    never counted as nothing; the same op on a constant (positions) is not counted at all."""
    torch = requires("torch")
    from .elementwise_oracle import ElementwiseCount
    layer = torch.nn.Linear(3, 3)
    x = torch.ones(2, 3)
    with pytest.raises(AssertionError, match="aten.erf"), torch.no_grad(), ElementwiseCount(layer, x):
        torch.erf(layer(x))
    with torch.no_grad(), ElementwiseCount(layer, x) as counter:
        torch.erf(torch.arange(4.0))
        torch.nn.functional.silu(layer(x))
    assert dict(counter.by_op) == {"addmm": 6, "silu": 24}


# --- every family: symllm's element-wise prefill against the oracle ---------------------------------------

#: families whose element-wise count is known to fall short of the oracle's, each with the reason: the property
#: is expected to fail for them (strict: it fails the day they agree, so the entry is then removed)
KNOWN_SHORT: dict[str, str] = {}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.xfail(reason=KNOWN_SHORT[k], strict=True))
                                  if k in KNOWN_SHORT else k for k in sorted(FAMILIES)])
@given(data=st.data(), b=st.integers(1, 2), s=st.integers(1, 6))
def test_elementwise_prefill_equals_the_oracle(kind, data, b, s):
    """For a random config.json of each family transformers builds (tiny, CPU), symllm's element-wise prefill
    of b × s tokens equals the oracle's count of transformers' forward (mapped by :func:`_convention`), and
    the model's parameters are symllm's total (each kind of parameter: the family's own property)."""
    raw = data.draw(FAMILIES[kind])
    model = _model(raw)
    assert symllm.params(from_hf(raw))["total"] == sum(p.numel() for p in model.parameters())
    assert _symllm(raw, b, s) == _convention(_count(model, b, s), model, raw, b, s)


@given(data=st.data(), b=st.integers(1, 2), t=st.integers(1, 9))
def test_deepseek_v4_decode_step_equals_the_oracle(data, b, t):
    """DeepSeek-V4 through transformers' cache (the sliding window's keys, the compressors' buffers, entries and
    CSA's overlap state): after a prompt of ``t`` tokens, the oracle's count of one decode step (mapped by
    :func:`_convention`) equals symllm's element-wise decode step at context ``t``."""
    torch = requires("torch")
    from .elementwise_oracle import ElementwiseCount
    raw = data.draw(FAMILIES["deepseek_v4"])
    model = _model(raw)
    with torch.no_grad():
        cache = model(torch.zeros(b, t, dtype=torch.long), use_cache=True).past_key_values
        step = torch.zeros(b, 1, dtype=torch.long)
        with ElementwiseCount(model, step) as counter:
            model(step, past_key_values=cache, use_cache=True, logits_to_keep=1)
    config = from_hf(raw)
    form = costs.logit_rows(costs.flops(symllm.model_for(config), "decode", bucket="elementwise"))
    assert int(form.subs(symllm.values(config, batch=b, seq=1, context=t))) == _convention(counter, model, raw, b, 1, t)


# --- every family registered is tested against transformers ---------------------------------------------

#: registered model types without a transformers class in the installed transformers -> why they are exempt
#: from the transformers tests (each must really be missing from transformers' CONFIG_MAPPING)
EXEMPT: dict[str, str] = {}


def _params_properties() -> set[str]:
    """The families the per-kind parameter properties draw (each parametrized by family)."""
    from . import (test_dense_families, test_dsv4, test_family, test_linear_attention, test_mamba, test_mla, test_moe,
                   test_mpt, test_real_configs)
    return {*test_family.KINDS, *test_moe.KINDS, *test_mla.KINDS, *test_dense_families.KINDS,
            *test_real_configs.KINDS, *test_linear_attention.KINDS, *test_mamba.KINDS, *test_mpt.KINDS, *test_dsv4.KINDS}


def test_every_registered_family_has_transformers_tests():
    """Every model type symllm reads (the family registry: symllm/arch/families/, a family added later
    included) is drawn by a parameter property against transformers' class (per kind of parameter) and by the
    element-wise property above, or is in :data:`EXEMPT` with its reason because the installed transformers has
    no class for it. A wrapper (``llama4``, ``gemma3``: a multimodal config whose ``text_config`` symllm reads)
    is its family's text model, covered with it."""
    from symllm.arch.families.hf import registry
    families = {family.model_type for family in registry().values()}
    params, elementwise = _params_properties(), set(FAMILIES)
    missing = {kind: [what for what, covered in (("params", params), ("element-wise", elementwise))
                      if kind not in covered] for kind in sorted(families - set(EXEMPT))}
    gaps = {kind: tests for kind, tests in missing.items() if tests}
    assert not gaps, f"registered families without a transformers test (model type: what is missing): {gaps}"
    assert params <= families and elementwise <= families  # nothing tested that symllm does not read
    if EXEMPT:
        transformers = requires("transformers")
        assert not set(EXEMPT) & set(transformers.CONFIG_MAPPING), "exempt, yet transformers has the class"
