"""Every Hypothesis strategy the tests use, in one place."""
from __future__ import annotations

import math

from hypothesis import strategies as st

from symllm.arch.config import ModelConfig
from symllm.arch.widths import swiglu_width
from symllm.arch.layers import LayerKind, runs
from symllm.arch.part_options import OPTIONS as PART_OPTIONS, option


@st.composite
def meta_style(draw, *, bias=None, tied=None, stated_hidden=None) -> dict:
    """Raw ModelConfig fields of a valid LLaMA config, small and odd sizes included: n_kv any divisor
    of n_heads, head_dim explicit or dim // n_heads, d_ff explicit or Meta's rounding with
    multiple_of from 1 up and ffn_dim_multiplier absent or a float in [0.5, 2], tied or untied.
    head_dim is even: RoPE rotates pairs (Meta's and HF's code reject an odd one, and so does ModelConfig).
    ``bias`` (attention_bias and mlp_bias), ``tied`` and ``stated_hidden`` (d_ff stated rather than
    Meta's rounding): None draws, True or False pins."""
    n_kv = draw(st.integers(1, 6))
    n_heads = n_kv * draw(st.integers(1, 4))
    if draw(st.booleans()):
        head_dim = 2 * draw(st.integers(1, 12))
        dim = draw(st.integers(1, 160))
    else:
        head_dim = None
        dim = n_heads * 2 * draw(st.integers(1, 12))
    pick = lambda pinned: draw(st.booleans()) if pinned is None else pinned  # noqa: E731
    fields = dict(
        vocab_size=draw(st.integers(1, 400)),
        dim=dim,
        n_layers=draw(st.integers(1, 3)),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        tie_embeddings=pick(tied),
        attention_bias=pick(bias),
        mlp_bias=pick(bias),
    )
    if stated_hidden if stated_hidden is not None else draw(st.integers(0, 3)) == 0:
        fields["hidden_dim"] = draw(st.integers(1, 300))
    else:
        fields["multiple_of"] = draw(st.one_of(st.integers(1, 8), st.integers(1, 512)))
        fields["ffn_dim_multiplier"] = draw(st.one_of(
            st.none(), st.floats(0.5, 2.0, allow_nan=False, allow_infinity=False)))
    return fields


def option_draws(axis: str) -> dict:
    """ModelConfig field -> a strategy, for every part option of ``axis`` in the registry
    (:data:`symllm.arch.part_options.OPTIONS`) beside GQA: its default or one of its test choices
    (``Option.choices``); a field of which the option reads only whether it is set (``Option.value`` given,
    default None: a soft-cap, a logit scale) draws None or a positive number. A new option is drawn here
    without an edit."""
    out = {}
    for o in PART_OPTIONS:
        if o.axis != axis or o.models not in ("gqa", "both"):
            continue
        if o.value is None:
            out[o.config[0]] = st.sampled_from((o.default[0], *o.choices))
        elif o.default == (None,):
            out[o.config[0]] = st.one_of(st.none(), st.floats(0.01, 100.0))
    return out


def configs(*, bias=None, qkv_bias=None, qk_norm=None, tied=None, stated_hidden=None,
            name=None, variant=False) -> st.SearchStrategy[ModelConfig]:
    """Valid ModelConfigs: the one config strategy every property draws from (attrs' style: each keyword
    None draws, a value pins it). Fields as meta_style draws them (``bias``, ``tied``, ``stated_hidden``),
    plus Qwen2's q/k/v-only biases (``qkv_bias``), Qwen3's QK-norm (``qk_norm``: an RMSNorm of width
    head_dim on every query and key head; ``"rmsnorm"`` or False) and the model's ``name`` (True: a name
    awkward for LaTeX and Markdown, False: the default). ``variant``: what Phi-3, OLMo 2, Gemma and Command-R
    change of LLaMA's block, every variant option of the registry (:func:`option_draws`), with every QK-norm
    the registry's qk_norm option switches to, drawn only when None (False, the default: LLaMA's block,
    which every other property is about). Mixtures of experts and windows are drawn as HF config.json
    (moe_configs, windowed)."""
    norms = [None, *option("qk_norm").choices] if variant is None else [None, "rmsnorm"]
    extra = {
        "qkv_bias": st.booleans() if qkv_bias is None else st.just(qkv_bias),
        "qk_norm": (st.sampled_from(norms) if qk_norm is None
                    else st.just(qk_norm or None)),
    }
    if variant is None:
        extra.update(option_draws("variant"))
    if name is None:
        extra["name"] = st.one_of(st.just("custom"), report_names())
    elif name:
        extra["name"] = report_names()
    return st.builds(lambda fields, more: ModelConfig(**fields, **more),
                     meta_style(bias=bias, tied=tied, stated_hidden=stated_hidden), st.fixed_dictionaries(extra))


_HF_NAMES = {"vocab_size": "vocab_size", "dim": "hidden_size", "n_layers": "num_hidden_layers",
             "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
             "hidden_dim": "intermediate_size"}

_bad_values = st.one_of(
    st.integers(max_value=0),
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not (x == x and x > 0 and float(x).is_integer())),
    st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2),
)


@st.composite
def bad_configs(draw) -> tuple[dict, str, str]:
    """A config.json / params.json dict with one bad field: (raw, format, the field the error must name)."""
    fields = draw(meta_style())
    fmt = draw(st.sampled_from(["hf", "meta"]))
    fields["hidden_dim"] = fields.get("hidden_dim") or 4 * fields["dim"]
    if fmt == "hf":
        raw = {_HF_NAMES[k]: fields[k] for k in _HF_NAMES}
        if fields["head_dim"] is not None:
            raw["head_dim"] = fields["head_dim"]
        names = {v: k for k, v in _HF_NAMES.items()}
    else:
        raw = {"dim": fields["dim"], "n_layers": fields["n_layers"], "n_heads": fields["n_heads"],
               "n_kv_heads": fields["n_kv_heads"], "vocab_size": fields["vocab_size"], "multiple_of": 256}
        if fields["head_dim"] is not None:  # Meta derives head_dim from dim: make it consistent
            raw["dim"] = fields["n_heads"] * fields["head_dim"]
        names = {k: k for k in raw}
    kind = draw(st.sampled_from(["value", "missing", "heads", "kv_heads"]))
    if kind == "value":
        key = draw(st.sampled_from(sorted(k for k in raw if k != "head_dim")))
        raw[key] = draw(_bad_values)
        return raw, fmt, key
    if kind == "missing":
        key = draw(st.sampled_from(sorted(k for k in raw if names.get(k) in ("vocab_size", "dim", "n_layers", "n_heads"))))
        del raw[key]
        return raw, fmt, key
    heads_key = "num_attention_heads" if fmt == "hf" else "n_heads"
    kv_key = "num_key_value_heads" if fmt == "hf" else "n_kv_heads"
    dim_key = "hidden_size" if fmt == "hf" else "dim"
    raw.pop("head_dim", None)
    if kind == "heads":  # heads that do not divide dim
        raw[heads_key] = raw[kv_key] = draw(st.integers(2, 9))
        raw[dim_key] = raw[heads_key] * draw(st.integers(1, 20)) + draw(st.integers(1, raw[heads_key] - 1))
        return raw, fmt, heads_key
    raw[heads_key] = draw(st.integers(2, 9)) * 2
    raw[dim_key] = raw[heads_key] * 2 * draw(st.integers(1, 8))
    raw[kv_key] = draw(st.integers(1, 3 * raw[heads_key]).filter(lambda k: raw[heads_key] % k))
    return raw, fmt, kv_key


# --- compiled kernels and sweeps (tests/test_kernels.py, tests/test_sweep.py) ---

def workloads(big: bool = False) -> st.SearchStrategy[dict]:
    """A forward-pass workload by code name: batch, seq (new tokens), context (cached tokens);
    ``big`` reaches 10**9 each, so FLOPs of the small generated configs pass int64's 9.2e18."""
    top = 10**9 if big else 64
    return st.fixed_dictionaries({
        "batch": st.integers(1, top), "seq": st.integers(1, top), "context": st.integers(0, top)})


def sweep_axes() -> st.SearchStrategy[dict]:
    """A small sweep grid (code name -> distinct values) over the fields a sweep may vary, invalid
    combinations included: heads not dividing dim, n_kv not dividing n_heads, odd head_dim. Every axis
    but dim is optional, so n_kv following n_heads (an MHA base, no n_kv_heads axis), head_dim derived
    or swept, d_ff rounded or swept (hidden_dim) and the workload axes all occur."""
    axis = lambda lo, hi: st.lists(st.integers(lo, hi), min_size=1, max_size=3, unique=True)  # noqa: E731

    def small(axes: dict) -> dict:  # at most 256 points: the test builds each row's config in Python
        axes = dict(axes)
        while math.prod(map(len, axes.values())) > 256:
            longest = max(axes, key=lambda k: len(axes[k]))
            axes[longest] = axes[longest][:1]
        return axes
    return st.fixed_dictionaries({"dim": axis(1, 96)}, optional={
        "n_heads": axis(1, 8), "n_kv_heads": axis(1, 8), "head_dim": axis(1, 24), "hidden_dim": axis(1, 300),
        "n_layers": axis(1, 4), "vocab_size": axis(1, 300), "multiple_of": axis(1, 64),
        "ffn_dim_multiplier": st.lists(st.floats(0.5, 2.0), min_size=1, max_size=2, unique=True),
        "batch": axis(1, 4), "seq": axis(1, 64), "context": axis(0, 64), "gen": axis(0, 8),
    }).map(small)


# --- one model, one workload: sweep rows against count (tests/test_one_workload.py) ---

def sweep_bases() -> st.SearchStrategy[ModelConfig]:
    """Valid ModelConfigs (see meta_style) where an MHA config sometimes leaves n_kv_heads unstated
    (derived: it then follows n_heads), as a Meta params.json without n_kv_heads does."""
    def maybe_derive_kv(pair):
        cfg, drop = pair
        return cfg.replace(n_kv_heads=None) if drop and cfg.n_kv_heads == cfg.n_heads else cfg
    return st.tuples(configs(qkv_bias=False, qk_norm=False, name=False), st.booleans()).map(maybe_derive_kv)


def workload_options() -> st.SearchStrategy[dict]:
    """Options of a symllm.Workload by name, each present or left to its default: batch, seq, gen,
    context (small, or up to 10**6 so that FLOPs pass int64), every dtype for weights, KV cache and
    activations (int4 with its group size), dense or causal attention, ZeRO stage, data-parallel
    ranks, full recomputation, the optimizer, tensor/pipeline-parallel degrees and sequence parallelism, a
    KV-cache and a weight format."""
    from symllm.arch.dtypes import DTYPES, OPTIMIZERS
    from symllm.costs.workloads import ATTENTION
    size = lambda lo: st.one_of(st.integers(lo, 64), st.integers(lo, 10**6))  # noqa: E731
    dtypes = st.sampled_from(list(DTYPES))
    return st.fixed_dictionaries({}, optional={
        "batch": st.one_of(st.integers(1, 4), st.integers(1, 10**4)), "seq": size(1), "gen": st.integers(0, 40),
        "context": size(0), "dtype": dtypes, "kv_dtype": dtypes, "act_dtype": dtypes,
        "attention": st.sampled_from(ATTENTION), "zero_stage": st.integers(0, 3), "dp": st.integers(1, 12),
        "recompute": st.booleans(), "group_size": st.sampled_from([32, 64, 100, 128]),
        "optimizer": st.sampled_from(OPTIMIZERS),  # symllm.costs.zero
        "tp": st.integers(1, 8), "pp": st.integers(1, 5), "sp": st.booleans(),  # symllm.costs.parallel
        "stack": st.sampled_from(["fused", "eager", "hf-eager", "hf-sdpa"]),  # symllm.costs.stacks
        # symllm.costs.formats: KV-cache formats, and weight formats any shape takes (AWQ, GPTQ and GGUF need
        # rows of whole groups or blocks)
        "kv_format": st.sampled_from(["fp8", "q8_0", "q4_0", "fp16", "nvfp4"]),
        "weight_format": st.sampled_from(["bf16", "fp32", "nf4", "nf4-nodq", "int8", "fp8", "fp8-channel", "fp8-block",
                                          "fp4", "w8a8", "w8a8-fp8", "w8a8-fp8-tensor", "w8a8-fp8-block"]),
    }).map(_one_memory_model)


def runnable(cfg, options: dict) -> dict:
    """``options`` (from :func:`workloads`, drawn without the config) made a layout ``cfg`` can run, as
    count requires (symllm.costs.checks): at most ``n_layers`` pipeline stages, and ``tp`` the largest
    number of ranks up to the drawn one that divides both the query and the key/value heads (a split head
    cannot run: docs/parallel.md); sp dropped where tp became 1."""
    options = dict(options)
    if options.get("pp", 1) > cfg.n_layers:
        options["pp"] = cfg.n_layers
    if options.get("tp", 1) > 1:
        n_kv = cfg.n_kv_heads or cfg.n_heads  # unstated: MHA
        options["tp"] = max(t for t in range(1, options["tp"] + 1) if cfg.n_heads % t == 0 and n_kv % t == 0)
    return _one_memory_model(options)


def _one_memory_model(options: dict) -> dict:
    """An HF stack is not modelled with a parallel layout (Workload refuses it): such draws keep the layout
    and drop the HF stack. Sequence parallelism needs tensor parallelism (Workload refuses sp with tp 1):
    such draws drop sp."""
    if (options.get("tp", 1) > 1 or options.get("pp", 1) > 1) and options.get("stack", "").startswith("hf-"):
        options.pop("stack", None)
    if options.get("tp", 1) == 1:
        options.pop("sp", None)
    if "kv_format" in options:  # a KV-cache format replaces --kv-dtype (Workload refuses both)
        options.pop("kv_dtype", None)
    return options


@st.composite
def checked_cases(draw) -> tuple[ModelConfig, dict]:
    """A config and workload options around each workload-vs-model check (symllm.costs.checks): dense or
    a mixture of experts (1 to 8), a sliding window in some layers or none, pipeline stages up to twice
    the blocks, tensor-parallel ranks dividing the heads or not, expert-parallel ranks dividing the
    data-parallel ones (Workload's own rule) but not always the experts, prompts, generated tokens and contexts on either side of the window."""
    fields = draw(meta_style())
    n_layers = fields["n_layers"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        n_experts = draw(st.integers(1, 8))
        fields.update(n_experts=n_experts, experts_per_token=draw(st.integers(1, n_experts)))
    if draw(st.booleans()):  # the window in some layers (Qwen's max_window_layers) or all
        fields["sliding_window"] = draw(st.integers(1, 16))
        sliding = set(draw(st.lists(st.integers(0, n_layers - 1), min_size=1, max_size=n_layers, unique=True)))
        ffn = "dense" if fields.get("n_experts") is None else "moe"
        fields["layers"] = runs([LayerKind(ffn=ffn, window="sliding" if i in sliding else None)
                                   for i in range(n_layers)])
    ep = draw(st.integers(1, 4))
    options = {"pp": draw(st.integers(1, 2 * n_layers)), "ep": ep, "dp": ep * draw(st.integers(1, 2)),
               "tp": draw(st.integers(1, 4)),  # dividing the heads or not (docs/parallel.md)
               "seq": draw(st.integers(1, 24)), "gen": draw(st.integers(0, 8))}
    if draw(st.booleans()):
        options["context"] = draw(st.integers(0, 24))
    return ModelConfig(**fields), options


# --- FLOPs and memory against the torch reference (tests/test_flops.py, tests/test_memory.py) ---

def generation_workloads() -> st.SearchStrategy[dict]:
    """A small generation workload for real CPU tensors: batch, prompt length seq, decode steps gen,
    the torch dtype the reference runs in (activations / KV cache), and the attention convention."""
    return st.fixed_dictionaries({
        "batch": st.integers(1, 3), "seq": st.integers(1, 9), "gen": st.integers(0, 4),
        "dtype": st.sampled_from(["fp64", "fp32", "bf16", "fp16"]),
        "attention": st.sampled_from(["dense", "causal"])})


# --- reports (tests/test_render.py) ---

#: characters a model name may carry that LaTeX and Markdown must escape
_AWKWARD = "_%&#$\\{}~^|*`[]<>"


def report_names() -> st.SearchStrategy[str]:
    """A model name for a report: letters, digits and the characters LaTeX/Markdown treat specially."""
    return st.text(alphabet="abcXYZ019.-" + _AWKWARD, min_size=1, max_size=16)


# --- the LLaMA family: biases, QK-norm, HF model types (tests/test_family.py) ---

@st.composite
def hf_configs(draw, kind: str | None = None) -> dict:
    """A small HF config.json as transformers writes it for model_type llama, mistral, qwen2 or qwen3 (``kind``
    pins one):
    GQA/MQA/MHA, head_dim stated (any even width; hidden_size a multiple of the heads, as transformers 5
    checks) or left to the class's default (qwen3's is 128), tied or untied, the
    bias keys each class reads (llama: attention_bias, mlp_bias; qwen3: attention_bias), and the
    sliding-window keys in their disabled form (mistral null; qwen use_sliding_window false)."""
    kind = draw(st.sampled_from(["llama", "mistral", "qwen2", "qwen3"])) if kind is None else kind
    n_kv = draw(st.integers(1, 4))
    n_heads = n_kv * draw(st.integers(1, 3))
    hd = 2 * draw(st.integers(1, 8))
    raw = {"model_type": kind, "architectures": [f"{kind.capitalize()}ForCausalLM"],
           "vocab_size": draw(st.integers(1, 300)), "num_hidden_layers": draw(st.integers(1, 3)),
           "num_attention_heads": n_heads, "num_key_value_heads": n_kv,
           "intermediate_size": draw(st.integers(1, 200)), "tie_word_embeddings": draw(st.booleans()),
           "hidden_act": "silu", "rms_norm_eps": 1e-6}
    if draw(st.booleans()) and kind != "qwen3":
        raw["hidden_size"] = n_heads * hd  # head_dim derived: hidden_size // num_attention_heads
    else:
        raw["hidden_size"] = n_heads * draw(st.integers(1, 12))  # transformers 5 requires divisibility anyway
        if kind != "qwen3" or draw(st.booleans()):  # qwen3 without head_dim: its class's 128
            raw["head_dim"] = hd
    if kind in ("llama", "qwen3"):
        raw["attention_bias"] = draw(st.booleans())
    if kind == "llama":
        raw["mlp_bias"] = draw(st.booleans())
    if kind == "mistral":
        raw["sliding_window"] = None
    if kind in ("qwen2", "qwen3"):
        raw.update(use_sliding_window=False, sliding_window=draw(st.sampled_from([None, 4096])), max_window_layers=1)
    return raw


def _hf_head_widths(draw, heads: int) -> dict:
    """``hidden_size`` with ``head_dim`` stated (any even width, not d / n_h), or ``hidden_size`` alone
    (``head_dim`` derived: hidden_size // num_attention_heads), as a config.json may say them."""
    hd = 2 * draw(st.integers(1, 6))
    if draw(st.booleans()):
        return {"hidden_size": heads * draw(st.integers(1, 6)), "head_dim": hd}
    return {"hidden_size": heads * hd}


@st.composite
def qwen3_moe_configs(draw) -> dict:
    """A small Qwen3-MoE config.json (model_type qwen3_moe) as transformers writes it: experts with Qwen3's
    QK-norm, top-k of E, a MoE layer every decoder_sparse_step-th except mlp_only_layers (the others dense of
    intermediate_size; possibly none MoE), head_dim stated or derived, norm_topk_prob either way, attention
    biases, tied or untied."""
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    L, E = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    raw = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": n_kv, "intermediate_size": draw(st.integers(1, 48)),
           "moe_intermediate_size": draw(st.integers(1, 48)), "num_experts": E,
           "num_experts_per_tok": draw(st.integers(1, E)), "decoder_sparse_step": draw(st.integers(1, L)),
           "mlp_only_layers": draw(st.lists(st.integers(0, L - 1), unique=True, max_size=L)),
           "norm_topk_prob": draw(st.booleans()), "attention_bias": draw(st.booleans()),
           "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-6}
    return raw | _hf_head_widths(draw, heads)


@st.composite
def minimax_m2_configs(draw) -> dict:
    """A small MiniMax-M2 config.json (model_type minimax_m2) as MiniMax publishes it: every layer a mixture of
    num_local_experts SwiGLU experts of intermediate_size, top-k, the QK-norm over the whole q and k width,
    RoPE on rotary_dim of each head (any even part, the whole head included), tied or untied; the keys of
    MiniMax's own code the class never reads (attn_type_list, use_qk_norm, qk_norm_type, scoring_func,
    use_routing_bias, shared_intermediate_size, the MTP ones) present at what it builds, or absent."""
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    L, E = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    head_dim = 2 * draw(st.integers(1, 6))
    raw = {"model_type": "minimax_m2", "architectures": ["MiniMaxM2ForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": n_kv, "head_dim": head_dim, "hidden_size": draw(st.integers(1, 24)),
           "intermediate_size": draw(st.integers(1, 48)), "num_local_experts": E,
           "num_experts_per_tok": draw(st.integers(1, E)), "rotary_dim": 2 * draw(st.integers(1, head_dim // 2)),
           "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-6}
    extras = {"attn_type_list": [1] * L, "use_qk_norm": True, "qk_norm_type": "per_layer", "scoring_func": "sigmoid",
              "use_routing_bias": True, "shared_intermediate_size": 0, "use_mtp": True, "num_mtp_modules": 3,
              "mtp_transformer_layers": 1}
    return raw | {k: v for k, v in extras.items() if draw(st.booleans())}


@st.composite
def cohere_configs(draw) -> dict:
    """A small Command-R config.json (model_type cohere) as Cohere publishes them: MHA, GQA or MQA, head_dim
    derived or stated, attention biases or none, Command-R+'s per-head LayerNorm QK-norm (use_qk_norm) or
    none, logit_scale stated or the class's default, tied (the default) or untied."""
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    raw = {"model_type": "cohere", "architectures": ["CohereForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": draw(st.integers(1, 3)),
           "num_attention_heads": heads, "num_key_value_heads": n_kv, "intermediate_size": draw(st.integers(1, 48)),
           "attention_bias": draw(st.booleans()), "use_qk_norm": draw(st.booleans()), "layer_norm_eps": 1e-5}
    if draw(st.booleans()):
        raw["logit_scale"] = draw(st.sampled_from([0.0625, 0.125, 0.8333333333333334]))
    if draw(st.booleans()):
        raw["tie_word_embeddings"] = draw(st.booleans())
    return raw | _hf_head_widths(draw, heads)


@st.composite
def mpt_configs(draw) -> dict:
    """A small MPT config.json (model_type mpt) as MosaicML publishes them: its own key names (d_model, n_heads,
    n_layers; transformers' attribute_map), multi-head attention of an even head width, tied (the default) or
    untied, an attn_config with some of MptAttentionConfig's keys that count nothing (attn_impl, softmax_scale,
    alibi_bias_max, attn_pdrop) or state what transformers builds (alibi true, qk_ln and prefix_lm false), the
    keys transformers ignores at the values that state what it builds (expansion_ratio 4, no_bias true) or
    absent; learned_pos_emb either way (nothing built beside ALiBi). max_seq_len at least 16 (transformers
    builds the ALiBi table that long, and a longer generation would outgrow it)."""
    heads = draw(st.integers(1, 4))
    raw = {"model_type": "mpt", "architectures": ["MPTForCausalLM"], "vocab_size": draw(st.integers(2, 100)),
           "d_model": heads * 2 * draw(st.integers(1, 6)), "n_heads": heads, "n_layers": draw(st.integers(1, 3)),
           "max_seq_len": draw(st.integers(16, 64)), "learned_pos_emb": draw(st.booleans()),
           "norm_type": draw(st.sampled_from(["low_precision_layernorm", "layernorm"])), "layer_norm_epsilon": 1e-5}
    attn = {"attn_impl": st.sampled_from(["torch", "flash", "triton"]), "softmax_scale": st.sampled_from([None, 0.25]),
            "alibi_bias_max": st.integers(1, 16), "attn_pdrop": st.just(0), "alibi": st.just(True),
            "qk_ln": st.just(False), "prefix_lm": st.just(False),
            "clip_qkv": st.sampled_from([None, 0.0, 0.25, 8.0]),  # 0.0 and null clamp nothing
            "attn_type": st.just("multihead_attention")}
    if draw(st.booleans()):
        raw["attn_config"] = {k: draw(v) for k, v in attn.items() if draw(st.booleans())}
    extras = {"expansion_ratio": 4, "no_bias": True, "logit_scale": None,
              "tie_word_embeddings": draw(st.booleans())}
    return raw | {k: v for k, v in extras.items() if draw(st.booleans())}


@st.composite
def qwen2_moe_configs(draw) -> dict:
    """A small Qwen2-MoE config.json (model_type qwen2_moe) as transformers writes it: top-k of E experts
    (E may be 0: every layer dense), a gated shared expert of its own width, a MoE layer every
    decoder_sparse_step-th except mlp_only_layers (the others dense of intermediate_size), q/k/v biases
    (qkv_bias) on or off, head_dim stated or derived, norm_topk_prob either way, tied or untied; the sliding
    window off (use_sliding_window false), or on in the even layers below max_window_layers (a window of 2 to
    12: prompts and decode steps on either side of it)."""
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    L, E = draw(st.integers(1, 4)), draw(st.integers(0, 6))
    raw = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": n_kv, "intermediate_size": draw(st.integers(1, 48)),
           "moe_intermediate_size": draw(st.integers(1, 48)),
           "shared_expert_intermediate_size": draw(st.integers(1, 48)), "num_experts": E,
           "num_experts_per_tok": draw(st.integers(1, max(E, 1))), "decoder_sparse_step": draw(st.integers(1, L)),
           "mlp_only_layers": draw(st.lists(st.integers(0, L - 1), unique=True, max_size=L)),
           "norm_topk_prob": draw(st.booleans()), "qkv_bias": draw(st.booleans()),
           "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-6,
           "use_sliding_window": draw(st.booleans()), "sliding_window": draw(st.integers(2, 12)),
           "max_window_layers": draw(st.integers(0, L))}
    return raw | _hf_head_widths(draw, heads)


@st.composite
def gated_deltanet_configs(draw, kind: str | None = None) -> dict:
    """A small config.json of a Gated DeltaNet hybrid (model_type qwen3_next, qwen3_5_text or
    qwen3_5_moe_text) as transformers writes it: each layer linear or full attention (layer_types drawn, or
    derived from full_attention_interval), value heads a multiple of the key heads, head widths and the
    convolution's kernel drawn, RoPE on an even part of each head (partial_rotary_factor), Qwen3-Next's MoE
    (E may be 0: every layer dense) with mlp_only_layers / decoder_sparse_step, tied or untied."""
    kind = kind or draw(st.sampled_from(("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")))
    L = draw(st.integers(1, 5))
    n_kv = draw(st.integers(1, 2))
    n_gk = draw(st.integers(1, 3))
    head = 8 * draw(st.integers(1, 2))  # RoPE on an even part of it at each drawn factor
    raw = {"model_type": kind, "vocab_size": draw(st.integers(1, 100)), "hidden_size": draw(st.integers(4, 48)),
           "num_hidden_layers": L, "num_attention_heads": n_kv * draw(st.integers(1, 3)), "num_key_value_heads": n_kv,
           "head_dim": head, "partial_rotary_factor": draw(st.sampled_from((0.25, 0.5, 1.0))),
           "intermediate_size": draw(st.integers(1, 48)),
           "linear_num_key_heads": n_gk, "linear_num_value_heads": n_gk * draw(st.integers(1, 3)),
           "linear_key_head_dim": draw(st.integers(1, 12)), "linear_value_head_dim": draw(st.integers(1, 12)),
           "linear_conv_kernel_dim": draw(st.integers(1, 4)), "tie_word_embeddings": draw(st.booleans()),
           "rms_norm_eps": 1e-6}
    if draw(st.booleans()):
        raw["layer_types"] = draw(st.lists(st.sampled_from(("linear_attention", "full_attention")), min_size=L,
                                           max_size=L))
    else:
        raw["full_attention_interval"] = draw(st.integers(1, 4))
    if kind != "qwen3_5_text":
        E = draw(st.integers(0 if kind == "qwen3_next" else 1, 5))
        raw.update(num_experts=E, num_experts_per_tok=draw(st.integers(1, max(E, 1))),
                   moe_intermediate_size=draw(st.integers(1, 24)),
                   shared_expert_intermediate_size=draw(st.integers(1, 24)))
    if kind == "qwen3_next":
        raw.update(decoder_sparse_step=draw(st.integers(1, L)),
                   mlp_only_layers=draw(st.lists(st.integers(0, L - 1), unique=True, max_size=L)))
    return raw


@st.composite
def nemotron_h_configs(draw) -> dict:
    """A small Nemotron-H config.json (model_type nemotron_h) as transformers writes it: a pattern of Mamba-2
    (M), attention (*), squared-ReLU MLP (-) and mixture-of-experts (E: routed and shared relu2 experts, the
    routed experts' count a multiple, at least twice, of the router's n_group, topk_group of them kept; their
    latent width moe_latent_size, Nemotron-3 Super's, drawn or absent) layers, as hybrid_override_pattern or
    layers_block_type;
    Mamba heads a multiple of the groups, head width, state, kernel and chunk drawn (state and chunk at least 2:
    torch.einsum turns a contraction over one element into an element-wise product, which FlopCounterMode does
    not count, where symllm counts the scan's einsum); the convolution's bias,
    the Mamba projections' biases and the MLP's biases on or off; GQA with an even head_dim stated (symllm's
    one head rule asks an even width of every attention, though Nemotron-H's rotates nothing)."""
    L = draw(st.integers(1, 5))
    pattern = "".join(draw(st.lists(st.sampled_from("M*-E"), min_size=L, max_size=L)))
    n_kv, groups = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    raw = {"model_type": "nemotron_h", "vocab_size": draw(st.integers(1, 100)), "hidden_size": draw(st.integers(4, 48)),
           "num_hidden_layers": L, "num_attention_heads": n_kv * draw(st.integers(1, 3)), "num_key_value_heads": n_kv,
           "head_dim": 2 * draw(st.integers(1, 6)), "intermediate_size": draw(st.integers(1, 48)),
           "mamba_num_heads": groups * draw(st.integers(1, 3)), "mamba_head_dim": draw(st.integers(1, 12)),
           "ssm_state_size": draw(st.integers(2, 12)), "n_groups": groups, "conv_kernel": draw(st.integers(1, 4)),
           "chunk_size": draw(st.integers(2, 16)), "use_conv_bias": draw(st.booleans()),
           "use_bias": draw(st.booleans()), "mlp_bias": draw(st.booleans()), "layer_norm_epsilon": 1e-5}
    n_group = draw(st.integers(1, 2))
    experts = n_group * draw(st.integers(2, 3))  # the router sums each group's top 2 scores
    raw.update(n_routed_experts=experts, num_experts_per_tok=draw(st.integers(1, experts)), n_group=n_group,
               topk_group=draw(st.integers(1, n_group)), moe_intermediate_size=draw(st.integers(1, 24)),
               moe_shared_expert_intermediate_size=draw(st.integers(1, 24)))
    if draw(st.booleans()):  # Nemotron-3 Super's latent experts (fc1_latent_proj, fc2_latent_proj)
        raw["moe_latent_size"] = draw(st.integers(1, 24))
    if draw(st.booleans()):
        raw["hybrid_override_pattern"] = pattern
    else:
        raw["layers_block_type"] = [{"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}[c]
                                    for c in pattern]
    return raw


@st.composite
def gpt_oss_configs(draw) -> dict:
    """A small gpt-oss config.json (model_type gpt_oss) as transformers writes it: top-k of E experts with
    biases and the clamped SwiGLU in every layer, attention sinks, attention biases on or off, GQA with
    head_dim stated, layer_types drawn or derived (sliding in the even layers), a window of 2 to 12 (prompts
    and decode steps on either side of it), tied or untied."""
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    L, E = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    raw = {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": n_kv, "head_dim": 2 * draw(st.integers(1, 6)),
           "hidden_size": heads * draw(st.integers(1, 6)), "intermediate_size": draw(st.integers(1, 48)),
           "num_local_experts": E, "num_experts_per_tok": draw(st.integers(1, E)),
           "attention_bias": draw(st.booleans()), "sliding_window": draw(st.integers(2, 12)),
           "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-5}
    if draw(st.booleans()):
        raw["layer_types"] = draw(st.lists(st.sampled_from(["sliding_attention", "full_attention"]),
                                           min_size=L, max_size=L))
    return raw


@st.composite
def _partial_rope(draw, head_dim: int, per_kind: bool = False) -> dict:
    """rope_parameters per layer type (full and sliding) with one partial_rotary_factor drawn, rotating an even
    part of at least 2 of each head of ``head_dim`` (MiMo-V2-Flash's configs); ``per_kind``: each layer type's
    factor drawn apart, that one or 1.0, the whole head (Laguna's, whose published configs rotate half of each
    head in the full layers and all of it in the sliding ones)."""
    factor = draw(st.sampled_from([f for f in (0.25, 0.5, 1.0)
                                   if int(head_dim * f) >= 2 and int(head_dim * f) % 2 == 0]))
    return {kind: {"rope_type": "default", "rope_theta": 10000.0,
                   "partial_rotary_factor": draw(st.sampled_from([factor, 1.0])) if per_kind else factor}
            for kind in ("full_attention", "sliding_attention")}


@st.composite
def mimo_configs(draw) -> dict:
    """A small MiMo-V2-Flash config.json (model_type mimo_v2_flash) as transformers writes it: values of their
    own width (v_head_dim) beside queries and keys of head_dim, sliding layers with twice the key/value heads and
    attention sinks (layer_types drawn or the class's default), dense and MoE layers (mlp_layer_types drawn or
    the first dense), RoPE on an even part of each head (rope_parameters per layer type), q/k/v biases or
    none, a window of 2 to 8, tied or untied."""
    n_kv = draw(st.integers(1, 2))
    heads = 2 * n_kv * draw(st.integers(1, 2))  # the sliding layers' 2 * n_kv key/value heads divide them
    # at least 2 experts: the router's group scores take the top 2 of each group (topk(2))
    L, E, hd = draw(st.integers(1, 4)), draw(st.integers(2, 5)), 2 * draw(st.integers(1, 6))
    rope = draw(_partial_rope(hd))
    raw = {"model_type": "mimo_v2_flash", "vocab_size": draw(st.integers(2, 100)), "num_hidden_layers": L,
           "num_attention_heads": heads, "num_key_value_heads": n_kv, "head_dim": hd,
           "v_head_dim": draw(st.integers(1, 8)), "hidden_size": draw(st.integers(2, 40)),
           "intermediate_size": draw(st.integers(1, 48)), "moe_intermediate_size": draw(st.integers(1, 24)),
           "n_routed_experts": E, "num_experts_per_tok": draw(st.integers(1, E)),
           "attention_bias": draw(st.booleans()), "sliding_window": draw(st.integers(2, 8)),
           "tie_word_embeddings": draw(st.booleans()), "rope_parameters": rope, "rms_norm_eps": 1e-5,
           "pad_token_id": 0}
    for key, names in (("layer_types", ["sliding_attention", "full_attention"]), ("mlp_layer_types", ["dense", "sparse"])):
        if draw(st.booleans()):
            raw[key] = draw(st.lists(st.sampled_from(names), min_size=L, max_size=L))
    return raw


@st.composite
def laguna_configs(draw) -> dict:
    """A small Laguna config.json (model_type laguna) as transformers writes it: query heads per layer from two
    counts (num_attention_heads_per_layer drawn or absent), a softplus output gate per head or per element,
    sliding and full layers (layer_types drawn or absent), dense and MoE layers (mlp_layer_types drawn or the
    first dense), a shared expert a whole multiple of the routed width, RoPE on an even part of each head (a
    factor per layer type: one drawn, or 1.0), attention biases or none, tied or untied."""
    n_kv = draw(st.integers(1, 2))
    heads, other = (n_kv * draw(st.integers(1, 3)) for _ in range(2))
    L, E, hd = draw(st.integers(1, 4)), draw(st.integers(1, 5)), 2 * draw(st.integers(1, 6))
    width = draw(st.integers(1, 12))
    rope = draw(_partial_rope(hd, per_kind=True))
    raw = {"model_type": "laguna", "vocab_size": draw(st.integers(2, 100)), "num_hidden_layers": L,
           "num_attention_heads": heads, "num_key_value_heads": n_kv, "head_dim": hd,
           "hidden_size": draw(st.integers(2, 40)), "intermediate_size": draw(st.integers(1, 48)),
           "moe_intermediate_size": width, "shared_expert_intermediate_size": width * draw(st.integers(1, 2)),
           "num_experts": E, "num_experts_per_tok": draw(st.integers(1, E)),
           "gating": draw(st.sampled_from([True, "per-head", "per-element"])),
           "attention_bias": draw(st.booleans()), "sliding_window": draw(st.integers(2, 8)),
           "tie_word_embeddings": draw(st.booleans()), "rope_parameters": rope, "rms_norm_eps": 1e-5,
           "pad_token_id": 0}
    if draw(st.booleans()):
        raw["num_attention_heads_per_layer"] = draw(st.lists(st.sampled_from([heads, other]), min_size=L, max_size=L))
    for key, names in (("layer_types", ["sliding_attention", "full_attention"]), ("mlp_layer_types", ["dense", "sparse"])):
        if draw(st.booleans()):
            raw[key] = draw(st.lists(st.sampled_from(names), min_size=L, max_size=L))
    return raw


# --- hostile command-line input (tests/test_fuzz.py) ---

import json  # noqa: E402  (this section's own import, kept with it)

#: config keys symllm reads (Meta's params.json and HF's config.json names) and a few it does not
HOSTILE_CONFIG_KEYS = ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of",
                       "ffn_dim_multiplier", "hidden_dim", "head_dim", "norm_eps", "rope_theta", "hidden_size",
                       "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
                       "tie_word_embeddings", "attention_bias", "mlp_bias", "model_type", "architectures",
                       "n_kv_head", "name", "")


def hostile_numbers() -> st.SearchStrategy:
    """Numbers a config or a flag may carry: small and huge ints of either sign, 4,000-digit ints,
    floats (integral, fractional, 1e30, 1e308), and the special floats JSON writers emit."""
    return st.one_of(
        st.integers(-3, 300), st.integers(-(2**70), 2**70), st.sampled_from([0, 1, 2, 10**4000, -(10**4000)]),
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e30, 1e308, 0.5, 4096.0, -1.0]))


def hostile_json_values(max_leaves: int = 12) -> st.SearchStrategy:
    """Any JSON value (nested lists and objects) with hostile numbers and strings as leaves."""
    leaves = st.one_of(st.none(), st.booleans(), hostile_numbers(), st.text(max_size=12))
    return st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                        max_leaves=max_leaves)


#: a compressed-tensors block of the shape llm-compressor writes (W4A16), for quantization_configs()
_CT_BLOCK = {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
             "ignore": ["lm_head"], "kv_cache_scheme": None,
             "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None, "output_activations": None,
                                           "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                       "strategy": "group", "group_size": 128, "dynamic": False}}}}


@st.composite
def quantization_configs(draw, blocks) -> dict:
    """A ``quantization_config``: one of ``blocks`` (published ones) or a compressed-tensors block, with up to
    three keys (its own, its weights' or another block's) set to hostile JSON values or dropped; or any JSON
    value."""
    if draw(st.integers(0, 9)) == 0:
        return draw(hostile_json_values())
    q = json.loads(json.dumps(draw(st.sampled_from([*blocks, _CT_BLOCK]))))
    keys = sorted({k for b in [*blocks, _CT_BLOCK] for k in b} | {"bits", "group_size", "weight_block_size"})
    for _ in range(draw(st.integers(0, 3))):
        target, groups = q, q.get("config_groups")
        group = groups.get("group_0") if isinstance(groups, dict) else None
        if isinstance(group, dict) and isinstance(group.get("weights"), dict) and draw(st.booleans()):
            target = group["weights"]
        key = draw(st.sampled_from(keys + ["num_bits", "strategy", "type", "symmetric"]))
        if draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(hostile_json_values(4))
    return q


@st.composite
def hostile_config_texts(draw) -> str:
    """The text of a config file: mostly a JSON object over the keys symllm reads (or misspells) with
    hostile values, sometimes a valid config with one field changed, any JSON value, nesting 5,000
    deep, a 5,000-digit integer, invalid JSON or arbitrary text."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.text(max_size=40))
    if kind == 1:
        depth = draw(st.sampled_from([10, 1000, 5000]))
        return "[" * depth + "]" * depth if draw(st.booleans()) else '{"dim": ' + "[" * depth + "]" * depth + "}"
    if kind == 2:
        return '{"dim": ' + "9" * draw(st.sampled_from([4000, 4301, 5000])) + ', "n_layers": 2, "n_heads": 1}'
    if kind == 3:
        return json.dumps(draw(hostile_json_values()))
    base = {"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100, "multiple_of": 16}
    if kind <= 6:
        base[draw(st.sampled_from(HOSTILE_CONFIG_KEYS))] = draw(hostile_json_values(max_leaves=3))
        return json.dumps(base)
    return json.dumps(draw(st.dictionaries(st.sampled_from(HOSTILE_CONFIG_KEYS),
                                           hostile_json_values(max_leaves=3), max_size=8)))


def hostile_flag_values() -> st.SearchStrategy[str]:
    """The text after a workload flag: numbers in every spelling, names, empty, and junk."""
    return st.one_of(
        st.integers(-5, 10**6).map(str), st.integers(-(10**30), 10**30).map(str),
        st.sampled_from(["0", "-1", "1e3", "1.5", "0x10", "nan", "inf", "", " ", "9" * 4000, "9" * 5000,
                         "bf16", "fp8", "int4", "fp64", "dense", "causal", "BF16", "none", "--seq"]),
        st.text(max_size=10))


@st.composite
def hostile_workload_argv(draw) -> list[str]:
    """Workload flags of count, derive and report, each with a hostile value (flags only where the
    option is a switch)."""
    from symllm.costs.workloads import options
    argv = []
    for name, (_, opt) in draw(st.lists(st.sampled_from(sorted(options().items())), max_size=4, unique_by=lambda x: x[0])):
        flag = opt.flag or "--" + name.replace("_", "-")
        argv += [flag] if opt.const is not None else [flag, draw(hostile_flag_values())]
        for other, _values, _help in opt.also:  # the field's other flags (--selective-ac op), each hostile too
            if draw(st.booleans()):
                argv += [other, draw(hostile_flag_values())]
    return argv


#: LaTeX a notation value is built from: harmless pieces and ones that read files or break documents
_NOTATION_TOKENS = ["x", "d", "V", "7", "_", "^", "'", "{", "}", " ", "(", ")", "+", ",", r"\alpha", r"\ell",
                    r"\mathrm", r"\mathcal", r"\hat", r"\text{ff}", r"\text", r"\lvert", r"\rvert", r"\cdot", r"\,",
                    r"\{", r"\}", r"\operatorname", r"\boldsymbol", "\\\\", "$", "&", "%", "#", "~", r"\input",
                    r"\write", r"\openin", r"\catcode", r"\csname", r"\endcsname", r"\def", r"\left", r"\right",
                    "/etc/passwd", "\n", "\u03b1", "`", "|"]


def hostile_notations() -> st.SearchStrategy[dict]:
    """A notation mapping: symbol or code names (and unknown keys) to LaTeX made of harmless and hostile
    tokens, or to values that are not strings."""
    keys = st.sampled_from(["d", "n_h", "n_heads", "V", "vocab_size", "d_ff", "beta_w", "zeta", ""])
    latex = st.lists(st.sampled_from(_NOTATION_TOKENS), min_size=0, max_size=8).map("".join)
    values = st.one_of(latex, latex, st.text(max_size=12), hostile_json_values(max_leaves=2))
    return st.dictionaries(keys, values, min_size=1, max_size=3)


#: pieces of a user template: Jinja syntax, symllm's variables and filters, and runtime failures
_TEMPLATE_TOKENS = ["{{ ", " }}", "{% ", " %}", "{# ", " #}", "component", "value", "terms", "symbols", "model",
                    "|num", "|grouped", "|human", "|tex", "|text", "|esc", "|length", "|join(', ')", "1/0",
                    "10 ** 10000000", "'x' * 10 ** 12", "none + 1", "range(10 ** 9)|list", "for t in terms",
                    "endfor", "if value", "endif", "macro f(x)", "f(x)", "endmacro", "f(1)", ".__class__",
                    "cycler.__init__.__globals__", "lipsum", "[", "]", "(", ")", "'", "\"", "\n", "x", "0",
                    "include 'derive.txt.j2'", "import 'derive.txt.j2' as d", "extends 'derive.txt.j2'",
                    "'x'.ljust(10 ** 9)", "|center(10 ** 9)", " ~ ", "'%0999999999d' % 1", "namespace(x='x')",
                    "range(100000)", "|attr('__class__')"]


def hostile_templates() -> st.SearchStrategy[str]:
    """The text of a user template: Jinja fragments in any order (syntax errors, undefined names,
    sandbox escapes, runtime errors, recursion, arithmetic that would not end) and plain text."""
    fragments = st.lists(st.sampled_from(_TEMPLATE_TOKENS), max_size=12).map("".join)
    recursive = st.just("{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}")
    return st.one_of(fragments, fragments, recursive, st.text(max_size=30))


#: what stands at the path given to -o (tests/test_fuzz.py builds it in a fresh folder)
OUTPUT_TARGETS = ("new", "existing", "read-only", "symlink", "dangling-symlink", "symlink-loop", "directory",
                  "missing-folder", "file-as-folder", "long-name", "dev-null", "dev-full", "hard-link",
                  "trailing-slash")


def output_targets() -> st.SearchStrategy[str]:
    """One kind of -o target (see OUTPUT_TARGETS)."""
    return st.sampled_from(OUTPUT_TARGETS)


def output_names() -> st.SearchStrategy[str]:
    """A file name for -o: any characters a name may hold (spaces, newlines, dots, non-ASCII), or
    ASCII names of 243-255 bytes (the longest a Linux file system takes)."""
    chars = st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",))
    short = st.text(chars, min_size=1, max_size=40).filter(
        lambda n: n not in (".", "..") and not n.startswith(".symllm-") and len(n.encode()) <= 255)
    return st.one_of(short, st.integers(243, 255).map(lambda k: "n" * k))


# --- mixtures of experts and windows, as HF config.json (tests/test_moe.py, tests/test_windows.py) ---

@st.composite
def moe_configs(draw, kind: str | None = None) -> dict:
    """A small Mixtral or Llama 4 text config.json (``kind`` pins one) as transformers writes it: experts, top-k,
    GQA; for Llama 4 MoE in every layer or every step-th (the others dense of intermediate_size_mlp), layers
    without RoPE among either, the L2 QK-norm on or off, attention biases, tied or untied."""
    kind = draw(st.sampled_from(["mixtral", "llama4_text"])) if kind is None else kind
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    hd = 2 * draw(st.integers(1, 6))
    L = draw(st.integers(1, 4))
    E = draw(st.integers(1, 6))
    raw = {"model_type": kind, "hidden_act": "silu", "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L,
           "num_attention_heads": heads, "num_key_value_heads": n_kv, "head_dim": hd,
           "hidden_size": heads * draw(st.integers(1, 6)), "intermediate_size": draw(st.integers(1, 48)),
           "num_local_experts": E, "num_experts_per_tok": draw(st.integers(1, E)),
           "tie_word_embeddings": draw(st.booleans())}
    if kind == "llama4_text":
        step = draw(st.integers(1, L))
        ropes = draw(st.lists(st.sampled_from([0, 1]), min_size=L, max_size=L))  # dense or MoE layers without RoPE
        raw.update(interleave_moe_layer_step=step, no_rope_layers=ropes, use_qk_norm=draw(st.booleans()),
                   intermediate_size_mlp=draw(st.integers(1, 48)), attention_bias=draw(st.booleans()),
                   attention_chunk_size=64)
    return raw


MISTRAL = {"model_type": "mistral", "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 40, "sliding_window": 5}


def llama4(chunk: int, ropes: list) -> dict:
    """A small Llama 4 text model with one expert (transformers runs every expert on every token, so with
    one expert, k = 1, what it computes is the model's FLOPs)."""
    return {"model_type": "llama4_text", "hidden_size": 16, "intermediate_size": 24, "intermediate_size_mlp": 20,
            "num_hidden_layers": len(ropes), "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4,
            "vocab_size": 40, "attention_chunk_size": chunk, "num_local_experts": 1, "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 1, "no_rope_layers": ropes}


@st.composite
def windowed(draw):
    """A small Mistral (sliding window), Qwen2 / Qwen3 (a sliding window from ``max_window_layers`` on) or
    Llama 4 (attention chunks in its RoPE layers), a window between 2 and 8, and a workload that may pass it
    many times over. (A window of 1 is left out: transformers' cache keeps ``keys[:, :, -W + 1:]``, which for
    W = 1 is every key.)"""
    window = draw(st.integers(2, 8))
    family = draw(st.sampled_from(["mistral", "qwen", "llama4"]))
    if family == "mistral":
        raw = dict(MISTRAL, sliding_window=window, num_hidden_layers=draw(st.integers(1, 3)))
    elif family == "qwen":
        layers = draw(st.integers(1, 4))
        raw = dict(MISTRAL, model_type=draw(st.sampled_from(["qwen2", "qwen3"])), head_dim=4, num_hidden_layers=layers,
                   use_sliding_window=True, sliding_window=window, max_window_layers=draw(st.integers(0, layers)))
    else:
        raw = llama4(window, draw(st.lists(st.sampled_from([0, 1]), min_size=1, max_size=4)))
    return raw, draw(st.integers(1, 2)), draw(st.integers(1, 20)), draw(st.integers(0, 6))


# --- transformers' LlamaForCausalLM on the CPU (tests/test_stacks.py, tests/test_training_peak.py) ---

@st.composite
def small(draw, min_layers=1):
    """A small LLaMA (GQA/MHA/MQA, tied or not) and a batch b × s, each forward well under a second."""
    n_kv = draw(st.integers(1, 3))
    n_h = n_kv * draw(st.integers(1, 3))
    cfg = dict(vocab_size=draw(st.integers(16, 300)), dim=n_h * draw(st.integers(2, 16)),  # HF: n_h divides d
               n_layers=draw(st.integers(min_layers, 3)), n_heads=n_h, n_kv_heads=n_kv,
               head_dim=draw(st.sampled_from([8, 12, 16, 20])), hidden_dim=draw(st.integers(8, 200)),
               tie_embeddings=draw(st.booleans()))
    return cfg, draw(st.integers(1, 3)), draw(st.integers(2, 40))


# --- expert parallelism (tests/test_expert_parallel.py) ---

@st.composite
def moe_layouts(draw):
    """A small MoE config (every layer MoE, or every step-th with dense layers between and a shared
    expert, Llama 4's or Qwen2-MoE's gated one of its own width), gpt-oss's parts drawn (attention sinks,
    router and expert biases, the clamped SwiGLU), and degrees: N_e dividing n_e, N_d a multiple of N_e,
    N_t, N_p <= L, a ZeRO stage."""
    n_kv = draw(st.integers(1, 2))
    heads = n_kv * draw(st.integers(1, 2))
    interleaved = draw(st.booleans())
    step, periods = draw(st.integers(2, 3)), draw(st.integers(1, 2))
    layers = step * periods if interleaved else draw(st.integers(1, 4))
    n_e = draw(st.integers(1, 8))
    ep = draw(st.sampled_from([e for e in range(1, n_e + 1) if n_e % e == 0]))
    fields = dict(vocab_size=draw(st.integers(1, 60)), dim=heads * draw(st.integers(1, 4)) * 2, n_layers=layers,
                  n_heads=heads, n_kv_heads=n_kv, hidden_dim=draw(st.integers(1, 24)), n_experts=n_e,
                  experts_per_token=draw(st.integers(1, n_e)), tie_embeddings=draw(st.booleans()),
                  attention_sinks=draw(st.booleans()), moe_bias=draw(st.booleans()), clamped_swiglu=draw(st.booleans()))
    if interleaved:  # Llama 4-like: MoE every step-th layer, dense ones of their own width between
        fields.update(layers=runs([LayerKind(ffn="moe" if (i + 1) % step == 0 else "dense") for i in range(layers)]),
                      dense_hidden_dim=draw(st.integers(1, 24)), shared_expert=draw(st.booleans()))
        if fields["shared_expert"] and draw(st.booleans()):  # Qwen2-MoE's: gated, of its own width
            fields["shared_hidden_dim"] = draw(st.integers(1, 24))
    # stages of blocks of several kinds are exact when every stage has the same mix (symllm.costs.parallel)
    stages = st.sampled_from([p for p in (1, 2) if periods % p == 0]) if interleaved else st.integers(1, layers)
    degrees = dict(ep=ep, dp=ep * draw(st.integers(1, 2)), tp=draw(st.sampled_from([1, n_kv])), pp=draw(stages),
                   zero_stage=draw(st.integers(0, 3)))
    return ModelConfig(**fields), degrees


# --- DeepSeek (latent attention, shared experts) and GLM-4.5 (tests/test_mla.py) ---

@st.composite
def deepseek_configs(draw, kind: str | None = None) -> dict:
    """A small DeepSeek-V2 or V3 config.json (model_type deepseek_v2 / deepseek_v3) as transformers reads it:
    multi-head latent attention with or without query compression (q_lora_rank null), any RoPE/no-RoPE/value
    head widths, attention biases, V2's mlp_bias, the first first_k_dense_replace layers dense (possibly all),
    routed and shared experts, tied or untied, V3's multi-token-prediction modules (num_nextn_predict_layers).
    One routing group (V3's router takes the top 2 scores of a group: at least 2 experts); kv_lora_rank and
    qk_nope_head_dim even (transformers' V2 rotates through a complex view of its slices)."""
    kind = kind or draw(st.sampled_from(["deepseek_v2", "deepseek_v3"]))
    heads, L, E = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(2, 6))
    raw = {"model_type": kind, "architectures": ["DeepseekV2ForCausalLM" if kind == "deepseek_v2"
                                                 else "DeepseekV3ForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": heads, "hidden_size": heads * draw(st.integers(1, 8)),
           "intermediate_size": draw(st.integers(1, 40)), "moe_intermediate_size": draw(st.integers(1, 24)),
           # even: V2's complex-view RoPE needs its slices at even offsets (real checkpoints: 512 and 128)
           "kv_lora_rank": 2 * draw(st.integers(1, 6)), "q_lora_rank": draw(st.one_of(st.none(), st.integers(1, 12))),
           "qk_rope_head_dim": 2 * draw(st.integers(1, 4)), "qk_nope_head_dim": 2 * draw(st.integers(1, 4)),
           "v_head_dim": draw(st.integers(1, 8)), "n_routed_experts": E, "num_experts_per_tok": draw(st.integers(1, E)),
           "n_shared_experts": draw(st.integers(1, 2)), "first_k_dense_replace": draw(st.integers(0, L)),
           "n_group": 1, "topk_group": 1, "attention_bias": draw(st.booleans()),
           "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-6}
    if kind == "deepseek_v2":
        raw.update(mlp_bias=draw(st.booleans()), topk_method="greedy")
    else:
        raw["num_nextn_predict_layers"] = draw(st.integers(0, 1))
    return raw


@st.composite
def dsa_configs(draw, kind: str | None = None) -> dict:
    """A small DeepSeek-V3.2 or GLM-5 config.json (model_type deepseek_v32 / glm_moe_dsa) as transformers reads
    it: a DeepSeek-V3 config (deepseek_configs) with a query latent (the classes' q_lora_rank is an integer) and
    DeepSeek Sparse Attention's indexer: index_n_heads, index_head_dim (at least the RoPE part it rotates),
    index_topk (from 1, below or above the contexts the properties run). GLM-5's indexer layers: all full
    (index_topk_freq 1, its default, or absent), or some reusing the previous layer's top-k ('shared') as
    index_topk_freq 2-3 after index_skip_topk_offset 1-3 derive them, or as an indexer_types list whose first
    layer is full (transformers needs a previous top-k); multi-token prediction is its checkpoint's
    (transformers' classes have no key for it: drawn absent)."""
    kind = kind or draw(st.sampled_from(["deepseek_v32", "glm_moe_dsa"]))
    raw = draw(deepseek_configs("deepseek_v3"))
    raw.pop("num_nextn_predict_layers", None)
    raw.update(model_type=kind, architectures=["DeepseekV32ForCausalLM" if kind == "deepseek_v32"
                                               else "GlmMoeDsaForCausalLM"],
               q_lora_rank=draw(st.integers(1, 12)), index_n_heads=draw(st.integers(1, 4)),
               index_head_dim=raw["qk_rope_head_dim"] + draw(st.integers(0, 6)), index_topk=draw(st.integers(1, 8)))
    if kind == "glm_moe_dsa":
        how = draw(st.sampled_from(["absent", "one", "freq", "types"]))
        if how == "one":
            raw["index_topk_freq"] = 1
        elif how == "freq":
            raw.update(index_topk_freq=draw(st.integers(2, 3)), index_skip_topk_offset=draw(st.integers(1, 3)))
        elif how == "types":
            raw["indexer_types"] = ["full"] + draw(st.lists(st.sampled_from(["full", "shared"]),
                                                            min_size=raw["num_hidden_layers"] - 1,
                                                            max_size=raw["num_hidden_layers"] - 1))
    return raw


@st.composite
def dsv4_configs(draw) -> dict:
    """A small DeepSeek-V4 config.json (model_type deepseek_v4) as transformers reads it: one shared key-value head
    (num_key_value_heads 1), queries through q_lora_rank, the grouped output projection (o_groups dividing
    num_attention_heads x head_dim, o_lora_rank), hc_mult residual streams, every layer's attention type drawn
    (layer_types, the legacy compress_ratios, or absent: the class's default pattern) with its compression rates
    (compress_rates, or the legacy compress_rate_csa / compress_rate_hca), the indexer's sizes, routed experts
    with one shared expert (n_shared_experts 1 or absent), hash or learned routing per layer (mlp_layer_types or
    absent), tied or untied, multi-token prediction stated or not, hc_sinkhorn_iters stated or not. RoPE rotates an even part of each head and of
    each indexer head (qk_rope_head_dim), so that a forward runs; the window is at least 2 (1 is refused)."""
    heads, L, E = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    rope = 2 * draw(st.integers(1, 2))
    head_dim = rope + 2 * draw(st.integers(0, 3))
    o_groups = draw(st.sampled_from([g for g in range(1, 5) if heads * head_dim % g == 0]))
    types = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
    raw = {"model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": 1, "head_dim": head_dim, "qk_rope_head_dim": rope,
           "hidden_size": draw(st.integers(1, 24)), "moe_intermediate_size": draw(st.integers(1, 24)),
           "q_lora_rank": draw(st.integers(1, 12)), "o_groups": o_groups, "o_lora_rank": draw(st.integers(1, 8)),
           "hc_mult": draw(st.integers(1, 4)), "sliding_window": draw(st.integers(2, 8)),
           "n_routed_experts": E, "num_experts_per_tok": draw(st.integers(1, E)),
           "index_n_heads": draw(st.integers(1, 3)), "index_head_dim": rope + 2 * draw(st.integers(0, 2)),
           "index_topk": draw(st.integers(1, 8)), "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-6}
    how = draw(st.sampled_from(["layer_types", "compress_ratios", "default"]))
    if how == "layer_types":
        raw["layer_types"] = draw(st.lists(st.sampled_from(types), min_size=L, max_size=L))
    elif how == "compress_ratios":
        raw["compress_ratios"] = draw(st.lists(st.sampled_from([0, 4, 128]), min_size=L, max_size=L))
    csa, hca = draw(st.integers(1, 4)), draw(st.integers(1, 8))
    if draw(st.booleans()):
        raw["compress_rates"] = {"compressed_sparse_attention": csa, "heavily_compressed_attention": hca}
    else:
        raw.update(compress_rate_csa=csa, compress_rate_hca=hca)
    if draw(st.booleans()):
        raw["mlp_layer_types"] = draw(st.lists(st.sampled_from(["hash_moe", "moe"]), min_size=L, max_size=L))
    for key, values in (("n_shared_experts", [1]), ("num_nextn_predict_layers", [0, 1]),
                        ("hc_sinkhorn_iters", [1, 2, 3, 20])):
        if draw(st.booleans()):
            raw[key] = draw(st.sampled_from(values))
    return raw


def dsv4_prompts(raw: dict) -> st.SearchStrategy[int]:
    """A prompt length (1 to 9 tokens) for ``raw`` (:func:`dsv4_configs`), drawn at will or one below, at or above
    one of its compression rates: where a compressor closes its first window in a training step."""
    rates = raw.get("compress_rates", {}).values() or (raw["compress_rate_csa"], raw["compress_rate_hca"])
    edges = sorted({m + k for m in rates for k in (-1, 0, 1) if 1 <= m + k <= 9})
    return st.one_of(st.sampled_from(edges), st.integers(1, 9))


@st.composite
def kimi_configs(draw) -> dict:
    """A small Kimi config.json as Moonshot publishes them: Kimi-K2's own (a DeepSeek-V3 config whose
    model_type is kimi_k2, with its auto_map), or Kimi-K2.5's multimodal wrapper (model_type kimi_k25) around
    a DeepSeek-V3 text_config saying kimi_k2 or deepseek_v3, the wrapper's tie_word_embeddings true, false
    or absent (its class's default: true), the text_config's drawn apart."""
    text = draw(deepseek_configs("deepseek_v3"))
    if draw(st.booleans()):
        return {**text, "model_type": "kimi_k2", "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}}
    raw = {"model_type": "kimi_k25", "architectures": ["KimiK25ForConditionalGeneration"],
           "text_config": {**text, "model_type": draw(st.sampled_from(["kimi_k2", "deepseek_v3"]))}}
    tie = draw(st.sampled_from([True, False, None]))
    return raw if tie is None else {**raw, "tie_word_embeddings": tie}


@st.composite
def glm4_moe_configs(draw) -> dict:
    """A small GLM-4.5 config.json (model_type glm4_moe): GQA/MQA/MHA with q/k/v biases or none, QK-norm or
    none, RoPE on half or all of each head (partial_rotary_factor in rope_parameters or at the top level),
    DeepSeek's experts from first_k_dense_replace on, one routing group, tied or untied."""
    n_kv = draw(st.integers(1, 3))
    heads, L, E = n_kv * draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(2, 6))
    factor = draw(st.sampled_from([0.5, 1.0]))
    raw = {"model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"], "hidden_act": "silu",
           "vocab_size": draw(st.integers(1, 100)), "num_hidden_layers": L, "num_attention_heads": heads,
           "num_key_value_heads": n_kv, "hidden_size": heads * draw(st.integers(1, 6)),
           "head_dim": 4 * draw(st.integers(1, 4)), "intermediate_size": draw(st.integers(1, 40)),
           "moe_intermediate_size": draw(st.integers(1, 24)), "n_routed_experts": E,
           "num_experts_per_tok": draw(st.integers(1, E)), "n_shared_experts": draw(st.integers(1, 2)),
           "first_k_dense_replace": draw(st.integers(0, L)), "n_group": 1, "topk_group": 1,
           "attention_bias": draw(st.booleans()), "use_qk_norm": draw(st.booleans()),
           "num_nextn_predict_layers": draw(st.integers(0, 1)), "tie_word_embeddings": draw(st.booleans()),
           "rms_norm_eps": 1e-5}
    if draw(st.booleans()):
        raw["partial_rotary_factor"] = factor
    else:
        raw["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": factor}
    return raw


# --- checkpoint files (tests/test_checkpoints.py) ---

@st.composite
def checkpoint_headers(draw) -> tuple[str, bytes]:
    """(suffix, file bytes) of a damaged checkpoint header: a safetensors file whose length field, JSON,
    dtype, shape or data offsets are drawn around the valid ones, or a GGUF file whose version, counts,
    string lengths, value types, dimensions or tensor types are drawn; sometimes cut short."""
    import struct
    if draw(st.booleans()):
        shape = draw(st.lists(st.integers(-2, 5), max_size=3))
        n = math.prod(shape) if shape else 1
        end = draw(st.one_of(st.just(2 * max(n, 0)), st.integers(-4, 64)))
        entry = {"dtype": draw(st.sampled_from(["BF16", "F32", "I8", "Q4", 7])), "shape": shape,
                 "data_offsets": draw(st.sampled_from([[0, end], [end, 0], [0], "x"]))}
        header = json.dumps(draw(st.sampled_from([{"w": entry}, {"w": entry, "__metadata__": {"a": "b"}}, [entry],
                                                  {"w": 3}]))).encode()
        if draw(st.booleans()):
            header = header[:draw(st.integers(0, len(header)))]
        length = draw(st.one_of(st.just(len(header)), st.integers(0, 2**64 - 1)))
        data = struct.pack("<Q", length) + header + bytes(draw(st.integers(0, 64)))
        return ".safetensors", data[:draw(st.integers(0, len(data)))] if draw(st.booleans()) else data
    out = b"GGUF" + struct.pack("<I", draw(st.sampled_from([1, 2, 3, 4])))
    out += struct.pack("<QQ", draw(st.sampled_from([0, 1, 2**40])), draw(st.sampled_from([0, 1, 2**40])))
    key = draw(st.text(max_size=8)).encode()
    out += struct.pack("<Q", draw(st.sampled_from([len(key), 2**62]))) + key
    out += struct.pack("<I", draw(st.integers(0, 13))) + draw(st.binary(max_size=24))
    name = b"blk.0.attn_q.weight"
    out += struct.pack("<Q", len(name)) + name + struct.pack("<I", draw(st.integers(0, 6)))
    out += b"".join(struct.pack("<Q", draw(st.integers(0, 2**40))) for _ in range(draw(st.integers(0, 3))))
    out += struct.pack("<IQ", draw(st.integers(0, 45)), draw(st.integers(0, 2**20))) + draw(st.binary(max_size=64))
    return ".gguf", out[:draw(st.integers(0, len(out)))] if draw(st.booleans()) else out


# --- Phi-3, OLMo 2, Gemma 1-3 as HF config.json (tests/test_dense_families.py) ---

#: the dense families beyond LLaMA's block (symllm.arch.families.phi3, olmo2, gemma)
DENSE_FAMILIES = ("phi3", "olmo2", "gemma", "gemma2", "gemma3_text", "exaone4", "gemma4_text")
#: the dense families symllm's torch reference (symllm/reference.py) builds: not Gemma 4, whose layers with a
#: head shape of their own it refuses in one line (transformers' own class checks those: tests/test_gemma4.py)
REFERENCE_DENSE_FAMILIES = tuple(f for f in DENSE_FAMILIES if f != "gemma4_text")


@st.composite
def dense_family_configs(draw, family: str | None = None, window: int | None = None) -> dict:
    """A small config.json of Phi-3, OLMo 2 or Gemma 1, 2, 3 (``family`` pins one) as transformers writes it:
    GQA/MQA/MHA (Gemma 4's full layers with a head width and key/value heads of their own, keys as values or
    not, its last layer full whatever ``layer_types`` says, its last layers sharing keys and values or not, their
    MLP doubled or not, per-layer embeddings or none, its MoE block beside the dense MLP or none); Phi-3 and OLMo 2 with ``head_dim`` derived, Gemma's stated (any even width, not d / n_h);
    Phi-3's partial rotary (``partial_rotary_factor``, Phi-4-mini's 0.75, or 1);
    OLMo 2's and Gemma's attention biases; tied or untied; Phi-3's sliding window off or in every layer;
    Gemma 1's activation spelled either way; Gemma 2 and 3 with soft-capping on or off (Gemma 3's final logits
    only: its class never caps the scores, and symllm refuses a value there), their local layers
    from ``layer_types`` or the class's pattern (Gemma 3: ``sliding_window_pattern``); EXAONE 4 with
    ``head_dim`` stated or derived, its local layers (RoPE, a window) and global ones (no RoPE) from
    ``layer_types`` or ``sliding_window_pattern``, or no window and every layer LLaMA's. Windows (Phi-3's,
    Gemma's and EXAONE 4's local layers') of ``window`` tokens, or from 2 to 8 (None; a window of 1 is left out:
    transformers' cache keeps ``keys[:, :, -W + 1:]``, every key for W = 1). ``pad_token_id`` 0, as a small
    vocabulary needs."""
    kind = draw(st.sampled_from(DENSE_FAMILIES)) if family is None else family
    n_kv = draw(st.integers(1, 3))
    heads = n_kv * draw(st.integers(1, 3))
    hd = 2 * draw(st.integers(1, 6))
    L = draw(st.integers(1, 4))
    raw = {"model_type": kind, "vocab_size": draw(st.integers(2, 100)), "num_hidden_layers": L,
           "num_attention_heads": heads, "num_key_value_heads": n_kv, "intermediate_size": draw(st.integers(1, 48)),
           "tie_word_embeddings": draw(st.booleans()), "rms_norm_eps": 1e-6, "pad_token_id": 0}
    if kind in ("phi3", "olmo2") or (kind == "exaone4" and draw(st.booleans())):
        raw["hidden_size"] = heads * hd  # head_dim derived: hidden_size // num_attention_heads
    else:
        raw.update(hidden_size=heads * draw(st.integers(1, 6)), head_dim=hd)  # Gemma 2, 3 check n_h divides d
    window = draw(st.integers(2, 8)) if window is None else window
    if kind == "phi3":
        raw["sliding_window"] = draw(st.sampled_from([None, window]))
        # Phi-4-mini's partial rotary (0.75), at the top level or in rope_parameters: a whole, even part of a head
        factor = draw(st.sampled_from([f for f in (0.25, 0.5, 0.75, 1.0) if int(hd * f) >= 2 and int(hd * f) % 2 == 0]))
        if draw(st.booleans()):
            raw["partial_rotary_factor"] = factor
        else:
            raw["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": factor}
    if kind not in ("phi3", "exaone4"):
        raw["attention_bias"] = draw(st.booleans())
    if kind == "gemma":
        raw["hidden_act"] = draw(st.sampled_from(["gelu", "gelu_pytorch_tanh"]))
    if kind in ("gemma2", "gemma3_text"):
        caps = st.one_of(st.none(), st.floats(1.0, 100.0))
        raw.update(sliding_window=window, attn_logit_softcapping=draw(caps) if kind == "gemma2" else None,
                   final_logit_softcapping=draw(caps), query_pre_attn_scalar=draw(st.integers(1, 300)))
        if draw(st.booleans()):
            raw["layer_types"] = draw(st.lists(st.sampled_from(["sliding_attention", "full_attention"]),
                                               min_size=L, max_size=L))
        elif kind == "gemma3_text":
            raw["sliding_window_pattern"] = draw(st.integers(1, 4))
    if kind == "gemma4_text":  # per-layer embeddings or none (0); full layers of their own shape
        raw.update(sliding_window=window, final_logit_softcapping=draw(st.one_of(st.none(), st.floats(1.0, 100.0))),
                   hidden_size_per_layer_input=draw(st.sampled_from([0, 1, 2, 5])),
                   vocab_size_per_layer_input=draw(st.integers(1, 100)), attention_k_eq_v=draw(st.booleans()),
                   global_head_dim=2 * draw(st.integers(1, 6)),
                   num_global_key_value_heads=draw(st.sampled_from(
                       [None] + [x for x in range(1, heads + 1) if heads % x == 0])))
        if draw(st.booleans()):
            raw["layer_types"] = draw(st.lists(st.sampled_from(["sliding_attention", "full_attention"]),
                                               min_size=L, max_size=L))
        # the last layers reuse the keys and values of an earlier layer of their type (one of each type must stay
        # before them: Gemma4TextConfig.kv_sharing_modes), their MLP doubled or not
        types = list(raw.get("layer_types") or ["sliding_attention" if (i + 1) % 6 else "full_attention"
                                                for i in range(L)])
        types[-1] = "full_attention"
        raw.update(num_kv_shared_layers=draw(st.sampled_from([k for k in range(L) if set(types[:L - k]) == set(types)])),
                   use_double_wide_mlp=draw(st.booleans()))
        if draw(st.booleans()):  # 26B-A4B's MoE block: router and experts beside the dense MLP in every layer
            experts = draw(st.integers(1, 4))
            raw.update(enable_moe_block=True, num_experts=experts, top_k_experts=draw(st.integers(1, experts)),
                       moe_intermediate_size=draw(st.integers(1, 24)))
    if kind == "exaone4":
        types = st.lists(st.sampled_from(["sliding_attention", "full_attention"]), min_size=L, max_size=L)
        # no window: every layer full (transformers' cache cannot hold a sliding layer without a window)
        raw.update(draw(st.one_of(st.fixed_dictionaries({"sliding_window": st.just(window),
                                                         "sliding_window_pattern": st.integers(1, 4)}),
                                  st.fixed_dictionaries({"sliding_window": st.just(window), "layer_types": types}),
                                  st.just({"sliding_window": None, "layer_types": ["full_attention"] * L}))))
    return raw


# --- every family, one at a time (the transformers properties: tests/test_elementwise.py and the params ones) ---

def family_configs() -> dict[str, st.SearchStrategy[dict]]:
    """Every HF ``model_type`` these strategies draw -> the strategy of its small config.json as transformers
    writes it (each family's strategy above, pinned to that type), so that a property parametrized by family
    draws each one under every profile (CI's few examples of a strategy over several families reach only some).
    tests/test_elementwise.py checks that every family symllm reads is here."""
    out = {kind: hf_configs(kind) for kind in ("llama", "mistral", "qwen2", "qwen3")}
    out.update({kind: moe_configs(kind) for kind in ("mixtral", "llama4_text")})
    out.update(qwen3_moe=qwen3_moe_configs(), qwen2_moe=qwen2_moe_configs(), gpt_oss=gpt_oss_configs(),
               glm4_moe=glm4_moe_configs(), minimax_m2=minimax_m2_configs(), cohere=cohere_configs(),
               mimo_v2_flash=mimo_configs(), laguna=laguna_configs())
    out.update({kind: gated_deltanet_configs(kind) for kind in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")})
    out.update(nemotron_h=nemotron_h_configs(), mpt=mpt_configs())
    out.update({kind: deepseek_configs(kind) for kind in ("deepseek_v2", "deepseek_v3")})
    out.update({kind: dsa_configs(kind) for kind in ("deepseek_v32", "glm_moe_dsa")})
    out.update(deepseek_v4=dsv4_configs())
    out.update({kind: dense_family_configs(kind) for kind in DENSE_FAMILIES})
    return out


# --- every kind of config, for round trips (tests/test_config.py) ---

def any_configs() -> st.SearchStrategy[ModelConfig]:
    """Every kind of config symllm reads: configs() (Meta's rounding or a stated d_ff, biases, QK-norm,
    awkward names), HF config.json of each dense model type, Qwen3-MoE (dense layers between) and MoE
    layouts (Llama 4-like interleaving with a shared expert), Phi-3, OLMo 2 and Gemma 1-3, DeepSeek-V2/V3 and
    GLM-4.5."""
    from symllm.arch.config import from_hf
    return st.one_of(configs(), hf_configs().map(from_hf), qwen3_moe_configs().map(from_hf),
                     moe_layouts().map(lambda pair: pair[0]), dense_family_configs().map(from_hf),
                     deepseek_configs().map(from_hf), glm4_moe_configs().map(from_hf), dsa_configs().map(from_hf))


def layered_configs() -> st.SearchStrategy[ModelConfig]:
    """Small configs whose layers are of several kinds, as each family states them: dense and MoE layers
    (Llama 4, Qwen2/3-MoE, DeepSeek, GLM-4.5, moe_layouts' interleaving), layers without RoPE (Llama 4),
    windowed and full ones (Mistral, Qwen2/3, gpt-oss, Gemma 2/3), latent attention (DeepSeek); the families
    the torch reference builds (:data:`REFERENCE_DENSE_FAMILIES`), which the tests drawing these compare with."""
    from symllm.arch.config import from_hf
    raws = st.one_of(moe_configs(), qwen3_moe_configs(), qwen2_moe_configs(), gpt_oss_configs(), deepseek_configs(),
                     glm4_moe_configs(), windowed().map(lambda drawn: drawn[0]),
                     st.sampled_from(REFERENCE_DENSE_FAMILIES).flatmap(lambda family: dense_family_configs(family)))
    return st.one_of(raws.map(from_hf), moe_layouts().map(lambda pair: pair[0]))


@st.composite
def edited_widths(draw) -> tuple[ModelConfig, int]:
    """A config whose d_ff Meta's rounding derives (a preset whose params.json has no hidden_dim, or a drawn
    config) and another width for it, as a user edits count --json's "hidden_dim" (tests/test_config.py)."""
    from symllm.arch.config import load, preset_info, preset_names
    meta = [n for n in preset_names()
            if preset_info(n)["format"] == "meta" and "hidden_dim" not in preset_info(n)["config"]]
    cfg = draw(st.one_of(st.sampled_from(meta).map(load), configs(stated_hidden=False)))
    return cfg, draw(st.integers(1, 3 * swiglu_width(cfg.dim) + 600))


#: the count symbols (positive integers) and a dtype width (positive) the closed forms are made of
_POSITIVE = ("b", "s", "n", "d", "d_ff", "V", "n_h", "L", "W", "beta_a")


@st.composite
def closed_form_terms(draw, *, signed: bool = True):
    """A sum of products of symllm's positive symbols, as the closed forms hold them: a few monomials with
    small rational coefficients, at times a constant, at times times one more symbol (a product of a sum);
    ``signed`` allows negative coefficients and constants (differences such as ``W - 1``)."""
    from sympy import Add, Integer, Mul, Rational
    from symllm.arch import symbols as S
    names = st.lists(st.sampled_from(_POSITIVE), max_size=3)
    coeff = st.sampled_from([Integer(1), Integer(2), Integer(3), Rational(1, 2)] + ([Integer(-1)] if signed else []))
    terms = [draw(coeff) * Mul(*(getattr(S, n) for n in draw(names))) for _ in range(draw(st.integers(1, 4)))]
    e = Add(*terms, draw(st.integers(-2 if signed else 0, 6)))
    return getattr(S, draw(st.sampled_from(_POSITIVE))) * e if draw(st.booleans()) else e


def positive_points() -> st.SearchStrategy[dict]:
    """Values for every symbol of :func:`closed_form_terms`: positive integers, a dtype width 1 to 8."""
    from symllm.arch import symbols as S
    return st.fixed_dictionaries({getattr(S, n): st.integers(1, 8 if n == "beta_a" else 5000) for n in _POSITIVE})


# --- expected times (tests/test_efficiency.py) ---

#: the accelerators the timing properties draw from
TIMED_GPUS = ["h100-sxm", "h200", "l40s", "rtx4090", "b200"]


def engine_runs(options: dict) -> dict:
    """``options`` made a workload its engine can run (symllm.costs.checks): tensor rank 1 under an engine that
    splits a model by layers (llama.cpp: its ``--pp``), no fp8 weights or activations under an inference engine
    without FP8 GEMMs, no KV cache it cannot hold (efficiency.json ``engines``' ``gpu_split``, ``fp8_gemm`` and
    ``kv_formats``; not known: the model's fp32, fp16 or bf16), and no KV format some engine holds on some cards and
    models only (``kv_format_sm``: nvfp4), with or without an engine; no weight format the engine (or, without one, no
    engine declaring it) runs on the card (``weight_formats``: symllm.costs.weight_formats.route)."""
    from symllm.costs import accelerators, figures
    from symllm.costs.weight_formats import route
    engines = [figures.engine(n) for n in figures.data()["engines"] if n != "about"]
    card_bound = {v for e in engines for v in e.get("kv_format_sm") or {}}  # (held on some cards and models only)
    options = {k: v for k, v in options.items() if not (k in ("kv_format", "kv_dtype") and v in card_bound)}
    if options.get("gpu") is not None and route(options.get("weight_format"), options.get("engine"),
                                                accelerators.gpu(options["gpu"]).sm) == "none":
        options = {k: v for k, v in options.items() if k != "weight_format"}
    if options.get("engine") is None:
        return options
    entry, out = figures.engine(options["engine"]), dict(options)
    if entry.get("gpu_split") == "layer" and out.get("tp", 1) > 1:
        out["tp"] = 1
        out.pop("sp", None)
    if entry["kind"] == "inference" and entry.get("fp8_gemm") is not True:
        out = {k: v for k, v in out.items() if not (k in ("dtype", "act_dtype", "compute_dtype") and v == "fp8")}
    if entry["kind"] == "inference":
        held = entry["kv_formats"] or dict.fromkeys(("kv_format", "kv_dtype"), ("fp32", "fp16", "bf16"))
        out = {k: v for k, v in out.items() if k not in held or v in held[k]}
    return out


def timed_workloads() -> st.SearchStrategy[dict]:
    """:func:`workload_options` on an accelerator (``gpu``; fp8 matmuls only where it has them), with the
    expected times' own options: an engine (a layout and dtypes it runs: :func:`engine_runs`), the matmul dtype,
    micro-batches and the pipeline schedule."""
    from symllm.costs import efficiency, schedules

    def on_gpu(pair):
        options, extra = pair
        if options.get("dtype") in ("fp32", "fp64") or options.get("act_dtype") in ("fp32", "fp64"):
            options = {k: v for k, v in options.items() if k not in ("dtype", "act_dtype")}
        return engine_runs({**options, **extra})
    return st.tuples(workload_options(), st.fixed_dictionaries(
        {"gpu": st.sampled_from(TIMED_GPUS)},
        optional={"engine": st.sampled_from(list(efficiency.ENGINES)),
                  "compute_dtype": st.sampled_from(["bf16", "fp16"]), "micro_batches": st.integers(1, 16),
                  "schedule": st.sampled_from(list(schedules.SCHEDULES))})).map(on_gpu)


@st.composite
def timed_cases(draw, sparse: bool = True) -> tuple[ModelConfig, dict]:
    """``(config, options)``: a small config of several kinds of layers (:func:`layered_configs`: windows,
    mixtures, latent attention) or, with ``sparse``, DeepSeek Sparse Attention's (an indexer that runs forward
    only), and :func:`timed_workloads` made a layout it can run (:func:`runnable`)."""
    from symllm.arch.config import from_hf
    cfg = draw(st.one_of(layered_configs(), dsa_configs().map(from_hf)) if sparse else layered_configs())
    return cfg, runnable(cfg, draw(timed_workloads()))


def attention_grids() -> st.SearchStrategy[tuple[int, int, int, tuple[int, int]]]:
    """``(s, t, W, tile)``: a pass of ``s`` queries after ``t`` cached keys, a window or chunk of ``W`` keys and a
    kernel tile ``(block_m, block_n)``, small enough to count the score matrix pair by pair
    (tests/test_efficiency.py's tile counts)."""
    return st.tuples(st.integers(1, 300), st.integers(0, 300), st.integers(1, 400),
                     st.sampled_from([(128, 64), (128, 128), (64, 64), (64, 32), (16, 16), (32, 48)]))


def serving_loads(steps: tuple[str, ...] | None = None, every: bool = False) -> st.SearchStrategy[dict]:
    """:func:`symllm.costs.traffic.under_load`'s options: an accelerator, a serving engine (each way a step runs a
    joining prompt: chunked, whole, separate, static), the tensor ranks, prompt and output lengths, a concurrency or
    a request rate, and now and then the engine's own limits. ``steps``: always an engine, one that runs a joining
    prompt so (:func:`symllm.costs.batching.prefill_step` at the longest context drawn, 8,192 + 2,048); ``every``:
    always an engine, any of them."""
    from symllm.costs import batching, efficiency, figures
    engines = [e for e in efficiency.ENGINES if figures.engine(e).get("kind") == "inference"
               and (steps is None or batching.prefill_step(e, 8192 + 2048) in steps)]
    steps = steps or every  # an engine always drawn
    load = st.one_of(st.fixed_dictionaries({"concurrency": st.integers(1, 2000)}),
                     st.fixed_dictionaries({"request_rate": st.floats(0.01, 1000.0)}))
    engine = {"engine": st.sampled_from(engines)}
    return st.tuples(load, st.fixed_dictionaries(
        {"gpu": st.sampled_from(TIMED_GPUS), "seq": st.integers(1, 8192), "gen": st.integers(1, 2048),
         **(engine if steps else {})},
        optional={**({} if steps else engine),
                  "tp": st.sampled_from([1, 2, 4]), "max_num_batched_tokens": st.integers(256, 16384),
                  "max_num_seqs": st.integers(1, 512)})).map(lambda pair: engine_runs({**pair[0], **pair[1]}))
