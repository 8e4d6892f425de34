"""symllm.arch.algebra: Max, Min and subs without SymPy's pairwise search, checked against SymPy's own."""
from __future__ import annotations

import json
import subprocess
import sys

import sympy as sp
from hypothesis import given, strategies as st

from symllm.arch import algebra, symbols as S
from tests.strategies import closed_form_terms, positive_points


@given(st.lists(closed_form_terms(), min_size=1, max_size=5), positive_points())
def test_maximum_and_minimum_have_the_value_of_max_and_min(args, point):
    """At any point, the value is Python's max/min of the arguments' values: an argument is dropped only
    when another provably bounds it."""
    values = [a.xreplace(point) for a in args]
    assert algebra.maximum(*args).xreplace(point) == max(values)
    assert algebra.minimum(*args).xreplace(point) == min(values)


def test_the_drops_max_finds_in_symllms_forms():
    """The drops SymPy's ``Max`` and ``Min`` make on the forms symllm builds (found by comparing both on every
    call while composing 8 presets under 6 stacks and layouts), each written out by hand."""
    big = S.b * S.d * S.s + 3 * S.b * S.d_ff * S.s
    assert algebra.maximum(3 * S.b * S.d_ff * S.s, big, S.V * S.b * S.s) == sp.Max(big, S.V * S.b * S.s)
    assert algebra.maximum(2 * S.b * S.d * S.s, 0) == 2 * S.b * S.d * S.s  # b, d, s positive
    assert algebra.minimum(S.W, 1) == 1  # a window of at least one position
    assert algebra.maximum(S.d_h, 2 * S.d_h * S.s) == 2 * S.d_h * S.s  # d_h (2s - 1) >= 0 for s >= 1
    assert algebra.maximum(4, S.beta_a) == sp.Max(4, S.beta_a)  # neither bounds the other: both stay


@given(closed_form_terms(), closed_form_terms(signed=False), closed_form_terms(), positive_points())
def test_substitute_is_subs(a, b, value, point):
    """substitute(e, m) == e.subs(m) for symbols as keys (several keys: applied in subs' order), also
    through Max and Min (there: the same value at any point)."""
    plain = a * b + a
    mapping = {S.d: value, S.s: S.n + 1}
    assert algebra.substitute(plain, mapping) == plain.subs(mapping)
    peaked = a + sp.Max(b, 2 * S.d * S.s) * sp.Min(S.W, S.n + S.s)
    ours, theirs = algebra.substitute(peaked, mapping), peaked.subs(mapping)
    assert ours.xreplace(point) == theirs.xreplace(point)


_SYMPY_OWN = r"""
import json, sys, sympy as sp
from symllm.arch import algebra
algebra._extreme = lambda cls, args: cls(*args)  # SymPy's own Max/Min (and subs, rebuilt through them)
algebra.factored = sp.factor  # and its own factor (before the modules that import it by name)
from symllm.arch import resolved
from symllm.costs import phases
from symllm.costs.workloads import Workload
q = phases.quantities(resolved.model_for("llama3.2-1b"), Workload(**json.loads(sys.argv[1])))
print(json.dumps({f"{g}.{k}": sp.srepr(v) for g, d in q.items() for k, v in d.items()}))
"""


def test_closed_forms_are_sympys_own(tmp_path):
    """Every composed quantity of a preset under an HF stack (the most Max of any: every training moment's
    peak) and data parallelism is the same expression (srepr) as when SymPy's own Max, Min, subs and factor
    build it (those in a fresh process with its own empty cache; 8 presets under 6 stacks and layouts were
    compared so once)."""
    from symllm.arch import resolved
    from symllm.costs import phases
    from symllm.costs.workloads import Workload
    opts = {"stack": "hf-eager", "dp": 2}
    q = phases.quantities(resolved.model_for("llama3.2-1b"), Workload(**opts))
    ours = {f"{g}.{k}": sp.srepr(v) for g, d in q.items() for k, v in d.items()}
    theirs = json.loads(subprocess.run(
        [sys.executable, "-c", _SYMPY_OWN, json.dumps(opts)], check=True, capture_output=True, text=True,
        env={"SYMLLM_CACHE_DIR": str(tmp_path / "cache"), "PATH": "", "PYTHONPATH": ":".join(sys.path)}).stdout)
    assert "memory.training_peak" in ours and ours == theirs


@given(closed_form_terms(), closed_form_terms())
def test_summed_decode_steps_are_sympys_factored_sum(const, slope):
    """The n decode steps' sum of a step linear in the context t, ``const + slope·t``, is the expression
    SymPy's ``factor(summation(...))`` gives (its normal form: the same factors, the same signs)."""
    from symllm.costs import decoding
    step = sp.expand(const + slope * S.t)
    theirs = sp.factor(sp.summation(step.subs(S.t, S.s + decoding._i), (decoding._i, 0, S.n - 1)))
    assert decoding._summed_steps(step) == theirs


@given(closed_form_terms(), closed_form_terms(), closed_form_terms(signed=False), closed_form_terms(),
       positive_points())
def test_factored_and_expanded_are_sympys_factor_and_expand(a, b, c, e, point):
    """Polynomials (products of closed-form sums, repeated factors, over a denominator): factored/expanded
    are SymPy's own factor/expand (srepr). Through a Max or Min the value is theirs at any point (the
    argument maximum() drops where SymPy cannot prove it bounded, ``Max(2, s·(b + 1))``, is the one
    difference; symllm's own forms are SymPy's, as the next test and the commit's 265 forms show)."""
    for expr in (a * b, a * b * c + a * b * e, a * a * b, (a * b + c) / 2):
        assert sp.srepr(algebra.factored(expr)) == sp.srepr(sp.factor(expr)), expr
        assert sp.srepr(algebra.expanded(expr)) == sp.srepr(sp.expand(expr)), expr
    for expr in (a * c * sp.Max(b, 2 * S.d * S.s) + c * e * sp.Min(S.W, S.n + S.s), c * (sp.Max(a * c, b * c) + e)):
        assert algebra.factored(expr).xreplace(point) == expr.xreplace(point)
        assert algebra.expanded(expr).xreplace(point) == expr.xreplace(point)


def test_a_reports_collected_forms_are_sympys():
    """A report's training peak (a Max of sums in a dozen symbols, where SymPy's factor took seconds)
    factored and expanded as SymPy's factor and expand write it."""
    from symllm.arch import resolved
    from symllm.costs.workloads import Workload
    from symllm.present.derivation import OPTIONS, _symbolic
    _, total, _, _ = _symbolic("model", "memory", "gqa", resolved.spec("llama3.2-1b"), Workload(),
                               {**OPTIONS, "memory": "training_peak"})
    assert total.has(sp.Max)
    assert sp.srepr(algebra.factored(total)) == sp.srepr(sp.factor(total))
    assert sp.srepr(algebra.expanded(total)) == sp.srepr(sp.expand(total))
