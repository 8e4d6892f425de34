"""Every Hypothesis strategy the tests use, in one place."""
from __future__ import annotations

import math

from hypothesis import strategies as st

from symllm.arch.config import ModelConfig


@st.composite
def meta_style(draw) -> dict:
    """Raw ModelConfig fields of a valid LLaMA config, small and odd sizes included: n_kv any divisor
    of n_heads, head_dim explicit or dim // n_heads, d_ff explicit or Meta's rounding with
    multiple_of from 1 up and ffn_dim_multiplier absent or a float in [0.5, 2], tied or untied.
    head_dim is even: RoPE rotates pairs (Meta's and HF's code reject an odd one, and so does ModelConfig)."""
    n_kv = draw(st.integers(1, 6))
    n_heads = n_kv * draw(st.integers(1, 4))
    if draw(st.booleans()):
        head_dim = 2 * draw(st.integers(1, 12))
        dim = draw(st.integers(1, 160))
    else:
        head_dim = None
        dim = n_heads * 2 * draw(st.integers(1, 12))
    fields = dict(
        vocab_size=draw(st.integers(1, 400)),
        dim=dim,
        n_layers=draw(st.integers(1, 3)),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        tie_embeddings=draw(st.booleans()),
        attention_bias=draw(st.booleans()),
        mlp_bias=draw(st.booleans()),
    )
    if draw(st.integers(0, 3)) == 0:
        fields["hidden_dim"] = draw(st.integers(1, 300))
    else:
        fields["multiple_of"] = draw(st.one_of(st.integers(1, 8), st.integers(1, 512)))
        fields["ffn_dim_multiplier"] = draw(st.one_of(
            st.none(), st.floats(0.5, 2.0, allow_nan=False, allow_infinity=False)))
    return fields


def configs() -> st.SearchStrategy[ModelConfig]:
    """Valid ModelConfigs (see meta_style)."""
    return meta_style().map(lambda f: ModelConfig(**f))


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
    return st.tuples(configs(), st.booleans()).map(maybe_derive_kv)


def workload_options() -> st.SearchStrategy[dict]:
    """Options of a symllm.Workload by name, each present or left to its default: batch, seq, gen,
    context (small, or up to 10**6 so that FLOPs pass int64), every dtype for weights, KV cache and
    activations (int4 with its group size), dense or causal attention, ZeRO stage, data-parallel
    ranks, full recomputation, tensor/pipeline-parallel degrees and sequence parallelism."""
    from symllm.costs.workloads import ATTENTION, DTYPES
    size = lambda lo: st.one_of(st.integers(lo, 64), st.integers(lo, 10**6))  # noqa: E731
    dtypes = st.sampled_from(list(DTYPES))
    return st.fixed_dictionaries({}, optional={
        "batch": st.one_of(st.integers(1, 4), st.integers(1, 10**4)), "seq": size(1), "gen": st.integers(0, 40),
        "context": size(0), "dtype": dtypes, "kv_dtype": dtypes, "act_dtype": dtypes,
        "attention": st.sampled_from(ATTENTION), "zero_stage": st.integers(0, 3), "dp": st.integers(1, 12),
        "recompute": st.booleans(), "group_size": st.sampled_from([32, 64, 100, 128]),
        "tp": st.integers(1, 8), "pp": st.integers(1, 5), "sp": st.booleans(),  # symllm.costs.parallel
        "stack": st.sampled_from(["ideal", "hf-eager", "hf-sdpa"]),  # symllm.costs.stacks
    }).map(_one_memory_model)


def _one_memory_model(options: dict) -> dict:
    """An HF stack is not modelled with a parallel layout (Workload refuses it): such draws keep the layout.
    Sequence parallelism needs tensor parallelism (Workload refuses sp with tp 1): such draws drop sp."""
    if options.get("tp", 1) > 1 or options.get("pp", 1) > 1:
        options.pop("stack", None)
    if options.get("tp", 1) == 1:
        options.pop("sp", None)
    return options


@st.composite
def checked_cases(draw) -> tuple[ModelConfig, dict]:
    """A config and workload options around each workload-vs-model check (symllm.costs.checks): dense or
    a mixture of experts (1 to 8), a sliding window in some layers or none, pipeline stages up to twice
    the blocks, expert-parallel ranks dividing the data-parallel ones (Workload's own rule) but not always
    the experts, prompts, generated tokens and contexts on either side of the window."""
    fields = draw(meta_style())
    n_layers = fields["n_layers"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        n_experts = draw(st.integers(1, 8))
        fields.update(n_experts=n_experts, experts_per_token=draw(st.integers(1, n_experts)))
    if draw(st.booleans()):
        fields["sliding_window"] = draw(st.integers(1, 16))
        fields["window_layers"] = draw(st.lists(st.integers(0, n_layers - 1), min_size=1, max_size=n_layers,
                                                unique=True))
    ep = draw(st.integers(1, 4))
    options = {"pp": draw(st.integers(1, 2 * n_layers)), "ep": ep, "dp": ep * draw(st.integers(1, 2)),
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


def report_configs() -> st.SearchStrategy[ModelConfig]:
    """Valid ModelConfigs (see meta_style) whose name is awkward for LaTeX and Markdown."""
    return st.tuples(configs(), report_names()).map(lambda p: p[0].replace(name=p[1]))


# --- the LLaMA family: biases, QK-norm, HF model types (tests/test_family.py) ---

def family_configs() -> st.SearchStrategy[ModelConfig]:
    """Valid ModelConfigs (see meta_style) that may also carry Qwen2's q/k/v-only biases and Qwen3's
    QK-norm (an RMSNorm of width head_dim on every query and key head)."""
    return st.tuples(meta_style(), st.booleans(), st.sampled_from([None, "rmsnorm"])).map(
        lambda p: ModelConfig(**p[0], qkv_bias=p[1], qk_norm=p[2]))


@st.composite
def hf_configs(draw) -> dict:
    """A small HF config.json as transformers writes it for model_type llama, mistral, qwen2 or qwen3:
    GQA/MQA/MHA, head_dim stated (any even width; hidden_size a multiple of the heads, as transformers 5
    checks) or left to the class's default (qwen3's is 128), tied or untied, the
    bias keys each class reads (llama: attention_bias, mlp_bias; qwen3: attention_bias), and the
    sliding-window keys in their disabled form (mistral null; qwen use_sliding_window false)."""
    kind = draw(st.sampled_from(["llama", "mistral", "qwen2", "qwen3"]))
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
        argv += [flag] if name == "recompute" else [flag, draw(hostile_flag_values())]
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
