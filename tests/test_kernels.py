"""Compiled kernels against exact SymPy evaluation: scalars, numpy vectors, the int64 overflow guard.

Expected numbers come from SymPy's exact ``sympy_value`` (the ground truth the kernels must match),
Meta's FeedForward arithmetic run as plain Python, and published parameter totals.
"""
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.arch import symbols as S
from symllm.arch.components import QUANTITIES, meta_hidden_dim
from symllm.errors import SymllmError
from symllm.api import values
from symllm.numbers.kernels import INT64_SAFE, compile_expr
from symllm.numbers.exact import sympy_value

from .meta_formulas import meta_hidden_dim as meta_hidden_py
from .strategies import configs, workloads


def _closed_forms(cfg, causal):
    """Every quantity's closed form and every params breakdown term of the config's model."""
    mdl = symllm.model_for(cfg, causal=causal)
    defs = dict(mdl.definitions)
    out = {q: mdl.closed_form(q) for q in QUANTITIES}
    out.update({f"params:{k}": v.subs(defs) for k, v in mdl.breakdown("params").items()})
    out.update({f"flops:{k}": v.subs(defs) for k, v in mdl.breakdown("flops").items()})
    return out


@given(configs(), workloads(big=True), st.booleans())
def test_scalar_kernel_equals_sympy(cfg, work, causal):
    """For any config and workload, each compiled quantity (params, FLOPs, element-wise, KV cache and
    every breakdown term) is an exact Python int equal to SymPy's exact evaluation."""
    vals = values(cfg, **work)
    for name, expr in _closed_forms(cfg, causal).items():
        exact = sympy_value(expr, vals)
        got = compile_expr(expr)(**{k.name: v for k, v in vals.items()})
        assert got == exact and type(got) is type(exact), name


def _stack(cfgs, works):
    """Symbol name -> numpy array over configs (f = 1.0 where absent, d_ff as derived)."""
    cols = {}
    for cfg, work in zip(cfgs, works):
        vals = values(cfg, **work)
        vals.setdefault(S.f, 1.0)
        vals[S.d_ff] = symllm.hidden_dim(cfg)
        for k, v in vals.items():
            cols.setdefault(k, []).append(v)
    return {k: np.array(v) for k, v in cols.items()}


@given(st.lists(configs(), min_size=1, max_size=12), st.data(), st.booleans())
def test_vector_kernel_equals_sympy_pointwise(cfgs, data, big):
    """Over numpy arrays of configs and workloads, each kernel equals SymPy's exact value at every
    point, never wrapping around: int64 when every point is safe, Python ints where one is not."""
    works = [data.draw(workloads(big=big)) for _ in cfgs]
    cols = _stack(cfgs, works)
    exprs = {"meta_hidden_dim": meta_hidden_dim(True), "meta_plain": meta_hidden_dim(False)}
    exprs.update(_closed_forms(cfgs[0], causal=big))
    for name, expr in exprs.items():
        kernel = compile_expr(expr)
        if not kernel.args:  # a constant (e.g. RoPE's 0 parameters): nothing to vectorise
            continue
        got = kernel.vector(**{a.name: cols[a] for a in kernel.args})
        assert got.shape == (len(cfgs),)
        for i in range(len(cfgs)):
            point = {k: v[i].item() for k, v in cols.items()}
            assert got[i] == sympy_value(expr, point), (name, i)
        if got.dtype != object:
            assert got.dtype == np.int64 and max(abs(int(x)) for x in got) < INT64_SAFE


def test_meta_float_truncation_vectorised():
    """The vectorised d_ff truncates the IEEE double f*hidden like Meta's int(): dim 34, f 0.7, m 1 -> 62."""
    dims, fs, ms = [34, 4096, 16384, 8192], [0.7, 1.3, 1.2, 1.3], [1, 1024, 4096, 4096]
    expected = [meta_hidden_py(d, m, f) for d, f, m in zip(dims, fs, ms)]
    assert expected[0] == 62  # exact rationals would give 63
    kernel = compile_expr(meta_hidden_dim())
    got = kernel.vector(d=np.array(dims), f=np.array(fs), m=np.array(ms))
    assert got.dtype == np.int64 and got.tolist() == expected
    assert [kernel(d=d, f=f, m=m) for d, f, m in zip(dims, fs, ms)] == expected


@pytest.mark.parametrize("n", [90, 3, 1000, 10**6 + 1])
def test_rational_floor_is_integer_division(n):
    """floor(7n/10) compiles to integer arithmetic: 90 gives 63, where math.floor((7/10)*90) gives 62."""
    kernel = compile_expr(sp.floor(sp.Rational(7, 10) * S.d))
    assert kernel(d=n) == 7 * n // 10
    assert kernel.vector(d=np.array([n])).tolist() == [7 * n // 10]


def test_training_flops_of_405b_never_wrap(published):
    """6·N·D for Llama 3.1 405B on 15.6T tokens (~3.8e25) is exact in the vector path, where int64 wraps."""
    n_total = published["llama3.1-405b"]["total"]
    tokens = 15_600_000_000_000
    expected = 6 * n_total * tokens
    cfg = symllm.resolve("llama3.1-405b")
    vals = values(cfg)
    expr = 6 * symllm.model_for(cfg).closed_form("params") * S.b * S.s
    kernel = compile_expr(expr)
    assert kernel(**{k.name: v for k, v in vals.items()}, b=1, s=tokens) == expected
    arrays = {k.name: np.array([v, v]) for k, v in vals.items()}
    got = kernel.vector(**arrays, b=np.array([1, 2]), s=np.array([tokens, tokens]))
    assert got.dtype == object and got.tolist() == [expected, 2 * expected]
    with np.errstate(over="ignore"):
        wrapped = np.int64(6) * np.int64(n_total) * np.int64(tokens)
    assert int(wrapped) != expected  # what an unguarded int64 kernel would have returned
    with pytest.raises(SymllmError, match="overflow"):
        kernel.vector(overflow="raise", **arrays, b=np.array([1, 2]), s=np.array([tokens, tokens]))


def test_mixed_safe_and_unsafe_points():
    """Only the points that could overflow are widened; every point is exact."""
    kernel = compile_expr(2 * S.b * S.s * S.d ** 2)
    b = np.array([1, 10**9, 3, 10**12])
    got = kernel.vector(b=b, s=np.array([7, 10**9, 5, 10**6]), d=np.array([4096] * 4))
    assert got.tolist() == [2 * bi * si * 4096**2 for bi, si in zip([1, 10**9, 3, 10**12], [7, 10**9, 5, 10**6])]


def test_narrow_integer_inputs_are_widened_to_int64():
    """int32 inputs do not overflow at 2**31: they are computed in int64."""
    got = compile_expr(S.d * S.L)(d=np.array([2**20], dtype=np.int32), L=np.array([2**20], dtype=np.int32))
    assert got.tolist() == [2**40]


def test_scalar_inputs_broadcast_and_numpy_scalars_are_exact():
    """A constant quantity broadcasts to the array's shape; numpy integer scalars do not wrap."""
    kernel = compile_expr(S.V * S.d)
    assert kernel.vector(V=32000, d=np.array([1, 2, 3])).tolist() == [32000, 64000, 96000]
    assert compile_expr(S.d ** 3)(d=np.int64(3 * 10**6)) == 27 * 10**18


def test_fraction_inputs_stay_exact_over_arrays():
    """A Fraction scalar or object array (a weight format's bytes per weight) gives exact values, whole ones
    as ints, never float64 (symllm plan --weight-format): each point is the rational arithmetic by hand."""
    from fractions import Fraction
    kernel = compile_expr(S.beta_w * S.N + sp.ceiling(S.b / S.N_t))
    for beta in (Fraction(1, 3), np.array([Fraction(1, 3)] * 3, dtype=object)):
        got = kernel.vector(beta_w=beta, N=np.array([3, 4, 10 ** 30]), b=np.array([1, 3, 5]), N_t=2)
        assert got.tolist() == [2, Fraction(4, 3) + 2, Fraction(10 ** 30, 3) + 3]
        assert [type(v) for v in got.tolist()] == [int, Fraction, Fraction]


def test_bad_inputs():
    """Missing symbols, unknown overflow modes and non-numeric arrays are SymllmErrors."""
    kernel = compile_expr(S.V * S.d)
    with pytest.raises(SymllmError, match="unset: d"):
        kernel.vector(V=np.array([1]))
    with pytest.raises(SymllmError, match="overflow"):
        kernel.vector(V=np.array([1]), d=1, overflow="wrap")
    with pytest.raises(SymllmError, match="^d:"):
        kernel.vector(V=np.array([1]), d=np.array(["x"]))


def test_benchmarks_run_in_quick_mode():
    """benchmarks/run.py --quick runs end to end. Each benchmark first asserts that what it times agrees (the
    kernel with hand-written numpy and SymPy, with torch's meta-device numel, a report read back with a
    rendered one, the sweep's CSV with np.savetxt, params with hand-written Python), so a wrong number
    exits non-zero; and every row reports a finite, positive ratio (torch's too: not skipped). (A process
    of its own: the benchmarks clear SymPy's cache and time garbage-collector-free loops.)"""
    import math
    import re
    import subprocess
    import sys
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
    done = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name in ("vector:", "scalar:", "405B:", "start-up:", "report:", "params:", "sweep to CSV",
                 "start-up: warm symllm count", "warm symllm.workload", "plan:", "plan per layout"):
        row = next((line for line in lines if line.startswith(name)), None)
        assert row is not None, (name, done.stdout)
        ratio = float(re.findall(r"\s(\S+)x\s{2}", row)[0])  # the ratio column (the goal's "x" comes after)
        assert math.isfinite(ratio) and ratio > 0, row


def test_min_and_max_kernels_are_elementwise_on_arrays():
    """Min/Max in an expression compile to element-wise minimum/maximum on arrays, plain min/max on ints."""
    k = compile_expr(sp.Min(S.d, S.s) + sp.Max(S.d, S.s))
    assert k.vector(d=np.array([1, 5, 3]), s=np.array([3, 2, 3])).tolist() == [4, 7, 6]
    assert k(d=4, s=9) == 13


def _meta_params(V, d, L, n_h, n_kv, d_h, m, f):
    """Llama parameters (untied, no biases) with Meta's FeedForward rounding, as plain Python."""
    return 2 * V * d + L * (2 * d * d_h * (n_h + n_kv) + 3 * d * meta_hidden_py(d, m, f) + 2 * d) + d


def test_evaluate_fast_path_gives_the_general_paths_numbers():
    """evaluate() reads a dict of a layout it has seen (keys in one order, the same value types) with a
    reader compiled for it; a dict of another order, other value types (numpy ints that would wrap in
    int64, Fractions, floats where ints were), extra or missing keys, or another expression takes the
    general path, and every number equals Meta's formula as plain Python (or SymPy's exact value)."""
    from fractions import Fraction

    from symllm.numbers.kernels import evaluate

    cfg = symllm.resolve("llama3.1-405b")
    closed = symllm.model_for(cfg).closed_form("params")
    base = values(cfg)
    want = lambda v: _meta_params(*(v[s] for s in (S.V, S.d, S.L, S.n_h, S.n_kv, S.d_h, S.m, S.f)))  # noqa: E731
    for L in range(1, 6):  # one layout again and again: the fast path
        vals = {**base, S.L: L}
        assert evaluate(closed, vals) == want(vals)
    import sys
    assert sys.modules["symllm.numbers.kernels"]._FAST[id(closed)][0] is closed  # the reader was made and used
    big = {**base, S.L: np.int64(2**40), S.d: np.int64(2**20)}  # int64 would wrap: exact Python ints
    assert evaluate(closed, big) == want({k: int(v) if isinstance(v, np.integer) else v for k, v in big.items()})
    items = list({**base, S.L: 7}.items())
    items[0], items[1] = items[1], items[0]  # d before V: both ints, so only the keys tell
    reordered = dict(items)
    assert list(reordered)[:2] == [S.d, S.V]
    assert evaluate(closed, reordered) == want(reordered)
    assert evaluate(closed, {**base, S.L: 7, S.s: 3}) == want({**base, S.L: 7})  # an extra key
    assert evaluate(closed, {**base, S.f: 1}) == sympy_value(closed, {**base, S.f: 1})  # an int where a float was
    assert evaluate(closed, {**base, S.L: True}) == want({**base, S.L: 1})
    with pytest.raises(SymllmError, match="unset: L"):
        evaluate(closed, {k: v for k, v in base.items() if k != S.L})
    half = S.d / 2  # a rational result: a Fraction when odd, whatever the path
    for d in (4, 5, Fraction(7, 3), 6, 7):
        assert evaluate(half, {S.d: d}) == Fraction(d) / 2 and type(evaluate(half, {S.d: d})) is (
            int if (Fraction(d) / 2).denominator == 1 else Fraction)
    for _ in range(3):  # two expressions in turn
        assert evaluate(closed, {**base, S.L: 3}) == want({**base, S.L: 3})
        assert evaluate(half, {S.d: 9}) == Fraction(9, 2)
    assert evaluate(closed, {**base, S.m: np.array([4096, 1024])}).tolist() == [
        want(base), want({**base, S.m: 1024})]  # an array: the vector path


def test_evaluate_fast_path_with_odd_symbol_names():
    """Symbols whose names could clash with the reader's own (``_k0``, ``_v``, ``type``) still evaluate."""
    from symllm.numbers.kernels import evaluate

    a, b, c = sp.symbols("_k0 _v type", positive=True, integer=True)
    for expr, want in ((a * b + c, lambda i: 3 * i + 10 + i), (c * c + b, lambda i: 3 + (10 + i) ** 2)):
        for i in range(4):
            assert evaluate(expr, {a: i, b: 3, c: 10 + i}) == want(i)
