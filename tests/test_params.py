"""Exact parameter counts against published figures and Meta's formulas run as plain Python."""
import pytest
import sympy as sp

import symllm
from symllm.arch import symbols as S
from symllm.arch.components import attention, model

from .conftest import PUBLISHED, PUBLISHED_ABOUT, llama_blocks
from .meta_formulas import llama_params, meta_hidden_dim as meta_hidden_py


# published totals ------------------------------------------------------------------------------------

def test_llama2_13b_total():
    """Llama-2-13B: 13,015,864,320 parameters, as its checkpoint holds."""
    assert symllm.params("llama2-13b")["total"] == 13_015_864_320


def test_llama1_7b_with_and_without_lm_head():
    """LLaMA-7B: 6,738,415,616 with the output projection; 6,607,343,616 without it (HF's LlamaModel)."""
    p = symllm.params("llama1-7b")
    assert p["total"] == 6_738_415_616
    # the 6607.34M often quoted for LLaMA-7B is HF's LlamaModel, which has no lm_head
    assert p["total"] - p["lm_head"] == 6_607_343_616


def test_llama1_65b_without_lm_head():
    """LLaMA-65B without the output projection: 65,023,516,672."""
    p = symllm.params("llama1-65b")
    assert p["total"] - p["lm_head"] == 65_023_516_672


def test_llama31_8b_from_params_json_form():
    """Llama 3.1 8B as Meta's params.json states it: d_ff is derived (14336), not stated."""
    cfg = symllm.load("llama3.1-8b")
    assert cfg.hidden_dim is None and cfg.ffn_dim_multiplier == 1.3   # derived, not stated
    assert symllm.hidden_dim(cfg) == 14336
    assert symllm.params(cfg)["total"] == 8_030_261_248


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_totals(name, published):
    """Each preset's total equals the total published for that checkpoint."""
    assert symllm.params(name)["total"] == published[name]["total"]


#: quantities a figure is published as besides symllm.params' own keys: OpenAI's gpt-oss card counts the
#: active parameters without the embedding table; Hugging Face's page counts a checkpoint with its
#: multi-token-prediction layers
_PUBLISHED_AS = {"active_without_embedding": lambda p: p["active"] - p["embedding"],
                 "active_without_embeddings": lambda p: p["active"] - p["embedding"] - p["lm_head"],
                 "total_with_mtp": lambda p: p["total"] + p["mtp"]}


@pytest.mark.parametrize("name,quantity", sorted(PUBLISHED_ABOUT))
def test_rounded_published_figures(name, quantity):
    """Figures published rounded ("12.9B parameters per token", "17B active", "400B total") hold within
    the tolerance stated with each (the Llama 4 totals include a vision encoder symllm does not count)."""
    figure = PUBLISHED_ABOUT[(name, quantity)]
    counts = symllm.params(name)
    got = _PUBLISHED_AS[quantity](counts) if quantity in _PUBLISHED_AS else counts[quantity]
    assert abs(got / figure["value"] - 1) <= figure["within"]


def _plain_llama(name: str) -> bool:
    cfg = symllm.load(name)
    return not (cfg.attention_bias or cfg.mlp_bias or cfg.qkv_bias or cfg.qk_norm or cfg.n_experts) and llama_blocks(name)


@pytest.mark.parametrize("name", [n for n in symllm.preset_names() if _plain_llama(n)])
def test_presets_equal_metas_formula(name):
    """Each preset without biases, QK-norm or experts (Meta's LLaMA shapes) has the total of the weight shapes
    Meta's Transformer builds (the others: tests/test_family.py, against transformers' classes)."""
    cfg = symllm.load(name)
    hidden = cfg.hidden_dim or meta_hidden_py(cfg.dim, cfg.multiple_of, cfg.ffn_dim_multiplier)
    expected = llama_params(cfg.dim, cfg.n_layers, cfg.n_heads, cfg.vocab_size, hidden,
                            cfg.n_kv_heads, cfg.tie_embeddings)
    assert symllm.params(cfg)["total"] == expected


# common mistakes (Meta's d_ff rounding, with the seed's mistake of multiplying after rounding:
# tests/test_hypothesis.py::test_meta_rounding_at_real_widths) ---------------------------------------

def test_norms_are_thousands_not_millions():
    """An RMSNorm holds d weights: 8,192 per LLaMA-7B block (not 8.19M), plus the final norm's 4,096."""
    p = symllm.params("llama1-7b")
    assert p["block/attention_norm"] + p["block/ffn_norm"] == 32 * 2 * 4096  # 8,192 per block, not 8.19M
    assert p["norm"] == 4096  # the final norm, easily forgotten


def test_rmsnorm_has_no_bias():
    """RMSNorm has a weight and no bias: counting 2d per norm (4d per block) and no final norm, as
    LayerNorm would, overshoots Llama-2-13B by 40·4·5120 − (2·40 + 1)·5120 = 404,480."""
    with_bias = 2 * 32000 * 5120 + 40 * (4 * 5120 * 5120 + 3 * 5120 * 13824 + 4 * 5120)
    assert with_bias - symllm.params("llama2-13b")["total"] == 404_480


# GQA, MHA, MQA ---------------------------------------------------------------------------------------

def test_gqa_attention_closed_form():
    """GQA attention holds 2·d·d_h·(n_h + n_kv) parameters."""
    gqa = attention().total("params")
    assert sp.expand(gqa - 2 * S.d * S.d_h * (S.n_h + S.n_kv)) == 0
    assert sp.factor(gqa) == 2 * S.d * S.d_h * (S.n_h + S.n_kv)


def test_mha_and_mqa_are_special_cases():
    """MHA (n_kv = n_h) and MQA (n_kv = 1) are GQA's special cases; MHA is the textbook 4d²."""
    gqa = attention().total("params")
    assert sp.expand(gqa.subs(S.n_kv, S.n_h) - 4 * S.d * S.d_h * S.n_h) == 0
    assert sp.expand(gqa.subs(S.n_kv, 1) - 2 * S.d * S.d_h * (S.n_h + 1)) == 0
    # with d_h = d / n_h, MHA is the textbook 4 d^2
    assert sp.simplify(gqa.subs(S.n_kv, S.n_h).subs(S.d_h, S.d / S.n_h)) == 4 * S.d**2


def test_attention_bias_adds_one_per_output():
    """attention_bias adds one parameter per output feature of wq, wk, wv and wo."""
    diff = attention(attention_bias=True).total("params") - attention().total("params")
    assert sp.expand(diff - (2 * S.n_h * S.d_h + 2 * S.n_kv * S.d_h + S.d - S.n_h * S.d_h)) == 0


def test_tied_model_counts_the_shared_matrix_once():
    """Tied embeddings count the V×d matrix once."""
    diff = model(tied=False).total("params") - model(tied=True).total("params")
    assert sp.expand(diff) == S.V * S.d


def test_model_total_is_sum_of_breakdown():
    """The breakdown's terms sum to the model total."""
    m = model(hidden="meta")
    assert sp.expand(sum(m.breakdown().values()) - m.total()) == 0


def test_rope_has_no_parameters_but_is_a_component():
    """RoPE appears in the breakdown, with 0 parameters."""
    assert "block/attention/rope" in model().breakdown()
    assert model().breakdown()["block/attention/rope"] == 0


def test_symbols_have_assumptions():
    """Every symbol is positive or non-negative; model and workload sizes (but f) are integers."""
    for sym, info in S.SYMBOLS.items():
        assert sym.is_positive or sym.is_nonnegative, info.code
        if info.kind in ("model", "workload") and sym is not S.f:
            assert sym.is_integer, info.code
