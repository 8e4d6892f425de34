"""symllm.costs.scaling against independent values: hand algebra, published formulas run as plain Python,
published parameter totals and Chinchilla's own tables, and the torch reference model."""
import math

import pytest
import sympy as sp

import symllm
from symllm.costs import scaling as sc
from symllm.arch import symbols as S
from symllm.arch.components import model
from symllm.errors import SymllmError

L, d, V, s, n_h, d_h, n_kv, d_ff, f = S.L, S.d, S.V, S.s, S.n_h, S.d_h, S.n_kv, S.d_ff, S.f


# ------------------------------------------------------------------------------------ approximations
def test_untied_mha_reduces_to_the_textbook_form():
    """Untied MHA with the unrounded d_ff = 8d/3: exactly 12 L d² + 2 V d + (2L + 1) d."""
    textbook = 12 * L * d ** 2 + 2 * V * d + (2 * L + 1) * d
    # Meta's rounding without a multiplier, rounding dropped
    a = sc.approximate(model(hidden="meta_plain").closed_form(), g=1)
    assert sp.expand(a.smooth - textbook) == 0
    # a stated d_ff, replaced by 8d/3 (f = 1)
    b = sc.approximate(model().total("params"), g=1, subs={f: 1})
    assert sp.expand(b.smooth - textbook) == 0


def test_dropped_terms_are_kept_apart():
    """approx + dropped is the smooth form; 'lower' drops O(d), 'vocab' drops V terms."""
    a = sc.approximate(model(hidden="meta_plain").closed_form(), g=1, drop=("lower",))
    assert sp.expand(a.approx - (12 * L * d ** 2 + 2 * V * d)) == 0
    assert sp.expand(a.dropped - (2 * L + 1) * d) == 0
    both = sc.approximate(model(hidden="meta_plain").closed_form(), g=1, drop=("lower", "vocab"))
    assert both.approx == 12 * L * d ** 2
    assert sp.expand(both.approx + both.dropped - both.smooth) == 0


def test_gqa_approximation_by_hand():
    """GQA attention with d_h = d/n_h, n_kv = n_h/g: 2 d² (1 + 1/g) per layer (hand algebra)."""
    a = sc.approximate(symllm.attention().total("params"))
    assert sp.expand(a.smooth - 2 * d ** 2 * (1 + 1 / sc.g)) == 0


def test_relative_error_on_llama2_7b_by_hand(published):
    """Llama-2-7B (MHA, d_ff rounded to 256): relative error of 12Ld² + 2Vd + (2L+1)d vs the published total."""
    exact = published["llama2-7b"]["total"]
    dim, layers, vocab = 4096, 32, 32000
    approx = 12 * layers * dim ** 2 + 2 * vocab * dim + (2 * layers + 1) * dim
    a = sc.approximate(model(hidden="meta_plain").closed_form(), g=1)
    got = a.numbers("llama2-7b")
    assert got["exact"] == exact
    assert got["approx"] == approx
    assert got["relative_error"] == pytest.approx((exact - approx) / exact, rel=1e-12)
    # its d_ff is 11008 = 256 * ceil(10922 / 256): the only difference is 3 L d (11008 - 8d/3)
    assert exact - approx == pytest.approx(3 * layers * dim * (11008 - 8 * dim / 3))


def test_relative_error_of_the_dropped_terms_on_a_tied_preset(published):
    """Llama-3.2-1B: the dropped O(d) terms are the norms, (2L + 1) d = 33 · 2048 parameters."""
    a = sc.approximate(symllm.model_for("llama3.2-1b").closed_form(), drop=("lower",))
    got = a.numbers("llama3.2-1b")
    assert got["dropped"] == 33 * 2048
    assert got["exact"] == published["llama3.2-1b"]["total"]


def test_unknown_drop_is_an_error():
    """An unknown kind of term to drop is a SymllmError naming `drop`."""
    with pytest.raises(SymllmError, match="drop"):
        sc.approximate(d, drop=("cubic",))


# --------------------------------------------------------------------------------------- conventions
def test_kaplan_vs_exact_on_llama32_1b(published):
    """12 L d² vs the published Llama-3.2-1B total: (12·16·2048²) / 1,235,814,400 − 1."""
    c = sc.compare("kaplan2020", "symllm", quantity="params", configs=["llama3.2-1b"])
    total = published["llama3.2-1b"]["total"]
    assert c["llama3.2-1b"]["first"] == 12 * 16 * 2048 ** 2
    assert c["llama3.2-1b"]["second"] == total
    assert c["llama3.2-1b"]["relative"] == pytest.approx(12 * 16 * 2048 ** 2 / total - 1)


def test_megatron_2022_equals_symllm_for_mha_with_8d_over_3():
    """Korthikanti et al.'s 72 L h²(1 + s/6h + V/12Lh) per token is symllm's exact training count for
    untied MHA with d_ff = 8d/3 (SwiGLU's 3 matrices of 8d/3 cost GPT's 2 of 4d)."""
    exact = sc.training_flops_per_token().subs({d_ff: sp.Rational(8, 3) * d, n_kv: n_h, d_h: d / n_h})
    megatron = 72 * L * d ** 2 * (1 + s / (6 * d) + V / (12 * L * d))
    assert sp.expand(exact - megatron) == 0
    assert sp.expand(sc.convention("megatron2022").training - megatron) == 0


def test_megatron_2021_recomputation_differs_only_in_the_logits():
    """Narayanan et al.'s 96 L h²(1 + s/6h + V/16Lh) recomputes the layers (4 passes) but not the logits (3):
    symllm's 4-pass count for untied MHA with d_ff = 8d/3 is it plus one more logits pass, 2 V d."""
    mha = {d_ff: sp.Rational(8, 3) * d, n_kv: n_h, d_h: d / n_h}
    exact = sc.training_flops_per_token(passes=4).subs(mha)
    megatron = 96 * L * d ** 2 * (1 + s / (6 * d) + V / (16 * L * d))
    assert sp.expand(exact - megatron - 2 * V * d) == 0


def test_megatron_2021_as_plain_python():
    """Narayanan et al. Eq. 3 per iteration, run as plain Python, over B·s equals the convention per token."""
    batch, seq, layers, hidden, vocab = 8, 2048, 24, 2048, 51200
    per_iter = 96 * batch * seq * layers * hidden ** 2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    expr = sc.convention("megatron2021").training
    got = expr.subs({L: layers, d: hidden, V: vocab, s: seq})
    assert float(got) == pytest.approx(per_iter / (batch * seq), rel=1e-12)


def test_palm_vs_symllm_difference():
    """PaLM's 6N counts the embedding and norms; symllm's FLOPs count the lm_head matmul (untied: N has 2Vd)."""
    c = sc.compare("palm2022", "symllm")
    assert sp.expand(c["difference"] - 6 * d * (2 * L + V + 1)) == 0


def test_chinchilla_appendix_f_by_hand():
    """Appendix F for Chinchilla-70B's shape, written out as plain Python, equals the convention."""
    seq, vocab, dm, kv, heads, ffw, layers = 2048, 32000, 8192, 128, 64, 32768, 80
    attention = (2 * 3 * seq * dm * kv * heads + 2 * seq * seq * kv * heads + 3 * heads * seq * seq
                 + 2 * seq * seq * kv * heads + 2 * seq * kv * heads * dm)
    dense = 2 * seq * (dm * ffw + dm * ffw)
    forward = 2 * seq * vocab * dm + layers * (attention + dense) + 2 * seq * dm * vocab
    expr = sc.convention("chinchilla2022").training
    vals = {s: seq, V: vocab, d: dm, d_h: kv, n_h: heads, d_ff: ffw, L: layers}
    assert (3 * forward) % seq == 0
    assert expr.subs(vals) == 3 * forward // seq


def test_unknown_convention():
    """An unknown convention name is a SymllmError."""
    with pytest.raises(SymllmError, match="convention"):
        sc.convention("gpt5")


# ----------------------------------------------------------------------------------- compute-optimal
def test_optimum_satisfies_first_order_conditions_symbolically():
    """At N_opt(C), D_opt(C): αA N^-α = βB D^-β (∇L parallel to ∇(6ND)) and 6 N D = C, for symbolic constants."""
    o = sc.chinchilla_optimum()
    n_opt, d_opt = o["N_full"], o["D_full"]
    A, B, al, be, C = sc.A, sc.B, sc.alpha, sc.beta, sc.C
    # Lagrange: dL/dN · d(6ND)/dD − dL/dD · d(6ND)/dN = 0
    loss = sc.loss()
    lagrange = (sp.diff(loss, sc.N) * sp.diff(6 * sc.N * sc.D, sc.D)
                - sp.diff(loss, sc.D) * sp.diff(6 * sc.N * sc.D, sc.N))
    at = lagrange.subs({sc.N: n_opt, sc.D: d_opt})
    # both halves are positive: compare their logarithms
    lhs, rhs = al * A * n_opt ** -al, be * B * d_opt ** -be
    assert sp.simplify(sp.expand_log(sp.log(lhs) - sp.log(rhs), force=True)) == 0
    assert sp.simplify(sp.expand_log(sp.log(6 * n_opt * d_opt) - sp.log(C), force=True)) == 0
    assert sp.simplify(sp.powsimp(sp.expand_power_base(at, force=True), force=True)) == 0
    # and with the published constants substituted
    assert sp.simplify(at.subs(sc.CHINCHILLA.constants())) == 0
    # SymPy's own solution is the short form
    for key in ("N", "D"):
        solved, short = o["solution"][key], o[f"{key}_full"]
        assert sp.simplify(sp.expand_log(sp.log(solved) - sp.log(short), force=True)) == 0


def test_optimum_with_published_constants_is_a_minimum():
    """With the published constants the closed form is the constrained minimum (plain-Python loss nearby is higher)."""
    budget = 5.76e23
    o = sc.optimal_allocation(budget)
    loss = lambda n: 1.69 + 406.4 / n ** 0.34 + 410.7 / (budget / (6 * n)) ** 0.28  # noqa: E731
    assert o["loss"] == pytest.approx(loss(o["N"]))
    for factor in (0.9, 0.99, 1.01, 1.1):
        assert loss(o["N"] * factor) > loss(o["N"])
    assert 6 * o["N"] * o["D"] == pytest.approx(budget)


def test_closed_form_is_hoffmann_eq_4():
    """The closed form equals Hoffmann et al.'s Eq. 4 (G (C/6)^a, G^-1 (C/6)^b) run as plain Python."""
    al, be, A, B = 0.34, 0.28, 406.4, 410.7
    G = (al * A / (be * B)) ** (1 / (al + be))
    for budget in (1e21, 5.76e23, 1e25):
        o = sc.optimal_allocation(budget)
        assert o["N"] == pytest.approx(G * (budget / 6) ** (be / (al + be)))
        assert o["D"] == pytest.approx((budget / 6) ** (al / (al + be)) / G)
    # numerically the symbolic closed form agrees
    expr = sc.chinchilla_optimum()["N_full"].subs(sc.CHINCHILLA.constants()).subs(sc.C, 5.76e23)
    assert float(expr) == pytest.approx(sc.optimal_allocation(5.76e23)["N"])


# Hoffmann et al. 2022, Table A3 (approach 3): (FLOPs, parameters, tokens). The 175B row's FLOPs
# (1.26e+24) is a typo for 1.26e+25 (6 N D), so it is left out.
TABLE_A3 = [(2.21e19, 400e6, 9.2e9), (1.62e20, 1e9, 27.1e9), (2.46e22, 10e9, 410.1e9),
            (1.71e24, 67e9, 4.1e12), (3.52e25, 280e9, 20.1e12), (1.36e26, 520e9, 43.5e12),
            (5.65e26, 1e12, 94.1e12)]


@pytest.mark.parametrize("budget,n_paper,d_paper", TABLE_A3)
def test_allocation_near_the_papers_table_a3(budget, n_paper, d_paper):
    """The published two-digit constants land within 30% (N) and 45% (D) of the paper's approach-3 table
    over seven decades of compute: the table was computed from the unrounded fit (its rows imply
    N ∝ C^0.458; the rounded constants give 0.28/0.62 = 0.452), so closer agreement is not available."""
    o = sc.optimal_allocation(budget)
    assert o["N"] == pytest.approx(n_paper, rel=0.3)
    assert o["D"] == pytest.approx(d_paper, rel=0.45)


def test_gopher_budget_near_the_papers_table():
    """At Gopher's 5.76e23 FLOPs the table (log-interpolated between its 10B and 67B rows) gives about 41B;
    the rounded constants give 32B, within the tolerance above."""
    (c0, n0, _), (c1, n1, _) = TABLE_A3[2], TABLE_A3[3]
    n_table = n0 * (5.76e23 / c0) ** (math.log(n1 / n0) / math.log(c1 / c0))
    assert n_table == pytest.approx(41e9, rel=0.02)
    assert sc.optimal_allocation(5.76e23)["N"] == pytest.approx(n_table, rel=0.3)


def test_exponents_near_the_papers():
    """a = β/(α+β) ≈ 0.46 and b ≈ 0.54 as the paper states (to its rounding)."""
    o = sc.chinchilla_optimum()
    a = float(o["a"].subs(sc.CHINCHILLA.constants()))
    assert abs(a - 0.46) < 0.01 and abs(1 - a - 0.54) < 0.01


def test_exact_flops_optimum_is_a_minimum():
    """Under the family's own FLOPs per token, the returned width minimises the loss along C = D·F(d)."""
    fam = sc.Family(aspect=128, head_dim=128, gqa=4, ffn_dim_multiplier=1.3, multiple_of=1024)
    budget = 1e23
    o = sc.compute_optimal_exact(budget, fam)
    n_d = sp.lambdify(d, fam.smooth("params"))
    f_d = sp.lambdify(d, fam.smooth("training"))
    loss = lambda w: 1.69 + 406.4 / n_d(w) ** 0.34 + 410.7 / (budget / f_d(w)) ** 0.28  # noqa: E731
    assert o["loss"] == pytest.approx(loss(o["d"]))
    for factor in (0.95, 0.995, 1.005, 1.05):
        assert loss(o["d"] * factor) > loss(o["d"])
    assert o["D"] * o["flops_per_token"] == pytest.approx(budget)


# ------------------------------------------------------------------------------------ inverse sizing
LLAMA3_FAMILY = sc.Family(aspect=128, head_dim=128, gqa=4, ffn_dim_multiplier=1.3, multiple_of=1024)


def test_inverse_sizing_finds_llama31_8b(published):
    """8.03e9 parameters in Llama 3's family (d/L = 128, d_h = 128, g = 4): d = 4096, L = 32, the published total."""
    sizing = sc.size_for(8.03e9, LLAMA3_FAMILY)
    cfg, count = sizing.candidates[0]
    assert (cfg.dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads) == (4096, 32, 32, 8)
    assert count == published["llama3.1-8b"]["total"]
    # the closed-form root solves the smooth equation
    root = sizing.closed_form.subs(sizing.budget_symbol, 8.03e9)
    assert float(sp.re(sp.N(LLAMA3_FAMILY.smooth().subs(d, root)))) == pytest.approx(8.03e9, rel=1e-9)


def test_inverse_sizing_counts_match_the_torch_reference(reference):
    """Candidates' exact counts equal the torch reference model's numel on the meta device."""
    sizing = sc.size_for(1.2e9, sc.Family(aspect=64, head_dim=64, gqa=4, ffn_dim_multiplier=1.5,
                                          tie_embeddings=True))
    for cfg, count in sizing.candidates[:2]:
        assert count == reference.count(reference.build(cfg, device="meta"))["total"]
        assert count == symllm.params(cfg)["total"]


def test_depth_for_a_budget_is_linear():
    """At fixed width the count is linear in L: L = (budget − 2Vd − d) / (per-block count), by hand."""
    per_block = 2 * 4096 * 128 * (32 + 8) + 3 * 4096 * 14336 + 2 * 4096
    sizing = sc.size_for(8.03e9, LLAMA3_FAMILY, solve_for="depth", width=4096)
    assert sizing.continuous == pytest.approx((8.03e9 - 2 * 128256 * 4096 - 4096) / per_block)
    assert sizing.candidates[0][0].n_layers == 32


def test_weight_bytes_budget(published):
    """16 GB of bf16 weights is about 8e9 parameters: Llama-3.1-8B's shape again."""
    sizing = sc.size_for(16.06e9, LLAMA3_FAMILY, quantity="weight_bytes", bytes_per_param=2)
    assert sizing.candidates[0][1] == 2 * published["llama3.1-8b"]["total"]


def test_sizing_bad_input():
    """An unknown quantity, depth sizing without a width, a family without an aspect: SymllmErrors."""
    with pytest.raises(SymllmError, match="quantity"):
        sc.size_for(1e9, LLAMA3_FAMILY, quantity="joules")
    with pytest.raises(SymllmError, match="width"):
        sc.size_for(1e9, LLAMA3_FAMILY, solve_for="depth")
    with pytest.raises(SymllmError, match="family"):
        sc.Family(aspect=None)


# --------------------------------------------------------------------------------------- crossovers
def test_attention_ffn_crossover_by_hand():
    """Dense prefill: 4 n_h d_h s² = 6 s d d_ff gives s = 3 d d_ff / (2 n_h d_h); Llama-3.1-8B: 1.5 · 14336."""
    assert sp.simplify(sc.attention_ffn_crossover() - 3 * d * d_ff / (2 * n_h * d_h)) == 0
    # causal: 2 n_h d_h s (s + 1) = 6 s d d_ff
    assert sp.simplify(sc.attention_ffn_crossover(causal=True) - (3 * d * d_ff / (n_h * d_h) - 1)) == 0
    got = sc.crossovers("llama3.1-8b")
    assert got["attention_ffn_prefill"] == 3 * 4096 * 14336 // (2 * 4096)
    assert got["attention_ffn_decode"] == got["attention_ffn_prefill"] - 1


def test_kv_cache_outweighs_weights_by_hand(published):
    """bf16 both: T = N / (2 L n_kv d_h) per sequence; Llama-3.1-8B's published N."""
    total = published["llama3.1-8b"]["total"]
    got = sc.crossovers("llama3.1-8b", batch=1)["kv_outweighs_weights"]
    assert got == pytest.approx(total / (2 * 32 * 8 * 128))
    got4 = sc.crossovers("llama3.1-8b", batch=4, weight_bytes=2, kv_bytes=1)["kv_outweighs_weights"]
    assert got4 == pytest.approx(2 * total / (4 * 2 * 32 * 8 * 128))
