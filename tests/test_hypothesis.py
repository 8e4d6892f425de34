"""Property tests: symllm's closed forms against the independent torch reference model and Meta's
FeedForward arithmetic. Tests that take the ``reference`` fixture need torch (skipped without it,
a failure under CI=true); the others run anywhere."""
import pytest
from hypothesis import example, given, strategies as st

import symllm
from symllm.arch.config import ModelConfig
from symllm.present import reports
from symllm.api import by_kind as kinds
from symllm.api import values
from symllm.numbers.exact import sympy_value
from symllm.arch import symbols as S

from .conftest import numel_by_layers
from .strategies import configs, layered_configs
from .test_render import _markdown_rows, markdown_math
from .meta_formulas import meta_hidden_dim as meta_hidden_py


@given(cfg=configs(variant=None))
def test_every_component_equals_torch_numel(reference, cfg):
    """For any valid config (biases, q/k/v-only biases, QK-norm and an awkward name included), each component
    count, the total, the active count (dense: the total) and Meta's d_ff equal the reference model's numel
    sums."""
    measured = reference.count(reference.build(cfg, device="meta"))
    ours = symllm.params(cfg)
    assert {k: ours[k] for k in measured} == measured
    assert measured["active"] == measured["total"]
    assert symllm.hidden_dim(cfg) == (cfg.hidden_dim or meta_hidden_py(cfg.dim, cfg.multiple_of, cfg.ffn_dim_multiplier))


#: one config per kind of row a report's parameter table prints, between them every structure option the
#: property above draws: untied with attention and MLP biases, QK-norm, head_dim not d / n_h and Meta's d_ff
#: with its multiplier; tied MQA with q/k/v-only biases and a stated d_ff; both names awkward for LaTeX and
#: Markdown. (A report is the costly part, seconds of cold rendering per config: rendering one per drawn
#: example repeated these paths with other numbers.)
_REPORTED = [
    ModelConfig(vocab_size=37, dim=24, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, multiple_of=16,
                ffn_dim_multiplier=1.3, tie_embeddings=False, attention_bias=True, mlp_bias=True,
                qk_norm="rmsnorm", name="a_b%c&d#e$f"),
    ModelConfig(vocab_size=53, dim=20, n_layers=3, n_heads=2, n_kv_heads=1, hidden_dim=44, tie_embeddings=True,
                qkv_bias=True, name="x{y}~^|*`[]<>\\"),
]


@pytest.mark.parametrize("cfg", _REPORTED, ids=["untied-biases-qknorm", "tied-qkv-bias"])
def test_every_report_row_equals_torch_numel(reference, cfg):
    """Every number the Markdown report's parameter table prints equals the reference model's numel sums (no
    "active" line for a dense model), its math is balanced, and the LaTeX report shows the total."""
    measured = reference.count(reference.build(cfg, device="meta"))
    md = reports.report(cfg).render("markdown")
    assert _markdown_rows(md) == {k: v for k, v in measured.items() if (v or k == "total") and k != "active"}
    assert measured["active"] == measured["total"] and "active" not in md  # dense: no "active" line
    markdown_math(md)
    assert f"{measured['total']:,}" in reports.report(cfg).render("latex")


@given(configs(variant=None))
def test_closed_form_through_sympy_equals_compiled(cfg):
    """The model's closed form (Meta rounding included) gives the same total through SymPy and the kernel."""
    closed = symllm.model_for(cfg).closed_form("params")
    assert sympy_value(closed, values(cfg)) == symllm.params(cfg)["total"]


@given(cfg=configs(variant=None))
def test_reference_runs_a_real_forward_pass(torch, reference, cfg):
    """The reference model is a real model: a forward pass on CPU gives finite logits of the right shape."""
    model = reference.build(cfg, device="cpu")
    tokens = torch.randint(0, cfg.vocab_size, (2, 3))
    with torch.no_grad():
        logits = model(tokens)
    assert logits.shape == (2, 3, cfg.vocab_size)
    assert torch.isfinite(logits).all()


def _unbuilt(cfg) -> bool:
    """Whether ``cfg`` has layers the torch reference does not build: Gated DeltaNet or Mamba-2 layers (it refuses
    them), Gemma 4's (own head shapes, keys as values, shared keys and values, a doubled MLP, per-layer inputs:
    refused too), DeepSeek Sparse Attention's indexer (not modelled by it)."""
    return bool(cfg.index_heads or getattr(cfg, "per_layer_dim", None)
                or any(k.mixer != "attention" or k.heads != "model" or k.k_eq_v or k.kv_shared or k.wide_ffn
                       for k, _ in cfg.groups))


#: presets with layers the torch reference does not build (:func:`_unbuilt`): transformers' own classes check
#: them (tests/test_linear_attention.py on the meta device and on CPU, tests/test_new_family_presets.py on the
#: meta device)
_LINEAR_PRESETS = {n for n in symllm.preset_names() if _unbuilt(symllm.load(n))}


@pytest.mark.parametrize("name", [n for n in symllm.preset_names() if n not in _LINEAR_PRESETS])
def test_every_preset_builds_on_meta_and_agrees(preset_numel, name):
    """Every preset's reference model on the meta device has numel sums equal to the counts, at full depth
    (but those with layers the reference does not build: :data:`_LINEAR_PRESETS`).

    ``preset_numel`` builds one layer of each kind and one more of each repeated kind, and scales torch's
    own per-layer numel to the preset's layer counts (conftest.numel_by_layers; a DeepSeek/Kimi build of 60
    MoE layers took 10-20 s). Still a full check: the reference builds every layer of a kind alike, and
    test_numel_by_layers_equals_a_full_build checks the scaling against whole builds."""
    cfg = symllm.load(name)
    measured = preset_numel(name)
    if cfg.n_experts is None and len(cfg.groups) == 1:
        assert measured == {k: v for k, v in symllm.params(cfg).items() if k in measured}
    else:  # blocks of several kinds (MoE, dense, without RoPE): compared kind by kind, and the active count
        assert kinds(measured) == kinds(symllm.params(cfg))
    assert measured["total"] == symllm.params(cfg)["total"]


@given(cfg=layered_configs())
def test_numel_by_layers_equals_a_full_build(reference, cfg):
    """torch's count scaled up from a few layers (what preset_numel measures the presets with) equals the
    count of the whole model built, for small models whose layers are of one or several kinds."""
    assert numel_by_layers(reference, cfg) == reference.count(reference.build(cfg, device="meta"))


@example(4096, 1024, 1.3)  # Llama 3.1 8B: 14336 (rounding first, then multiplying, gives 14643)
@example(8192, 4096, 1.3)  # Llama 3.1 70B
@example(16384, 4096, 1.2)  # Llama 3.1 405B
@example(2048, 256, 1.5)  # Llama 3.2 1B
@example(5120, 256, None)  # Llama 2 13B
@example(30, 1, 1.9)  # SymPy's Float(1.9) * 80 keeps extra bits: 151.99…, where the double product is 152.0
@example(34, 1, 0.7)  # the double product 0.7 * 90 is 62.99…, where exact rationals give 63
@given(st.integers(1, 65536), st.integers(1, 4096),
       st.one_of(st.none(), st.floats(0.5, 2.0, allow_nan=False, allow_infinity=False)))
def test_meta_rounding_at_real_widths(dim, multiple_of, multiplier):
    """At real model widths too, Meta's d_ff through the kernel and through SymPy equals Meta's code."""
    from symllm.arch.components import meta_hidden_dim
    from symllm.numbers.kernels import evaluate
    expr = meta_hidden_dim(multiplier is not None)
    vals = {S.d: dim, S.m: multiple_of} | ({S.f: multiplier} if multiplier is not None else {})
    expected = meta_hidden_py(dim, multiple_of, multiplier)
    assert evaluate(expr, vals) == expected
    assert sympy_value(expr, vals) == expected
