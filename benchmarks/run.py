"""Benchmarks of symllm's numeric evaluation against what users would use instead; prints a table of ratios.

    python benchmarks/run.py            # the full run (about a minute)
    python benchmarks/run.py --quick    # a smoke run: small sizes, few repeats, ratios not meaningful

1. compiled kernel vs a hand-written numpy expression of the same formula (Llama-3 parameter count with
   Meta's d_ff rounding), over 10**6 configs: goal <= 1.5x;
2. one config, exact scalar evaluation (the cached kernel) vs SymPy ``subs`` + ``evalf``: goal >= 100x faster;
3. one config vs building the torch model on the meta device and summing ``numel`` (llama3.1-405b):
   goal >= 10,000x faster (needs torch; skipped without it);
4. CLI start-up, ``symllm count llama3.1-405b`` vs ``python -c "import sympy"``: goal <= 1.6x;
5. a warm ``symllm.params(cfg)`` (the whole breakdown of a config seen before) vs a hand-written Python
   function returning the same dict: goal <= 10x.

Each timing is the best (the minimum) of several repeats, the usual estimate of a cost unperturbed by
other load; the start-up comparison takes the median of interleaved runs.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402

import symllm  # noqa: E402
from symllm import symbols as S  # noqa: E402
from symllm.api import values  # noqa: E402
from symllm.evaluate import compile_expr, evaluate  # noqa: E402


def best(fn, repeat: int, number: int = 1) -> float:
    """The fastest of ``repeat`` timings of ``number`` calls, per call (seconds); like ``timeit``, with the
    garbage collector off while timing (collected before), so one side's garbage is not the other's cost."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        out = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - t0) / number)
    finally:
        if was_enabled:
            gc.enable()
    return min(out)


def hand_written(V, d, L, n_h, n_kv, d_h, m, f):
    """Llama-3 parameters as one would write them in numpy (Meta's FeedForward rounding inline)."""
    hidden = (8 * d) // 3
    hidden = np.floor(f * hidden).astype(np.int64)
    d_ff = m * (-(-hidden // m))
    return 2 * V * d + L * (2 * d * d_h * (n_h + n_kv) + 3 * d * d_ff + 2 * d) + d


def bench_vector(n: int, repeat: int) -> dict:
    cfg = symllm.resolve("llama3-8b")
    closed = symllm.model_for(cfg).closed_form("params")
    kernel = compile_expr(closed)
    rng = np.random.default_rng(0)
    n_h = np.full(n, 32)
    d = rng.integers(16, 128, n) * 64
    arrays = dict(V=np.full(n, 128256), d=d, L=rng.integers(8, 128, n), n_h=n_h, n_kv=np.full(n, 8),
                  d_h=d // n_h, m=np.full(n, 1024), f=np.full(n, 1.3))
    ours = kernel.vector(**arrays)
    theirs = hand_written(**arrays)
    assert ours.dtype == np.int64 and np.array_equal(ours, theirs), "kernel and hand-written numpy disagree"
    t_kernel = best(lambda: kernel.vector(**arrays), repeat)
    t_hand = best(lambda: hand_written(**arrays), repeat)
    return {"name": f"vector: kernel / hand-written numpy ({n:,} configs)", "ratio": t_kernel / t_hand,
            "goal": "<= 1.5x", "ok": t_kernel / t_hand <= 1.5,
            "detail": f"{t_kernel * 1e3:.1f} ms vs {t_hand * 1e3:.1f} ms"}


def _configs_405b(k: int):
    """k variants of Llama 3.1 405B (n_layers 126, 127, ...): distinct inputs, so neither SymPy's cache
    nor ours can answer from memory."""
    base = symllm.resolve("llama3.1-405b")
    return [base.replace(n_layers=base.n_layers + i) for i in range(k)]


def bench_scalar(repeat: int) -> dict:
    cfgs = _configs_405b(20)
    closed = symllm.model_for(cfgs[0]).closed_form("params")
    vals = [values(c) for c in cfgs]
    subs = [{k: (sp.Float(v, 53) if isinstance(v, float) else v) for k, v in vs.items()} for vs in vals]
    exact = [evaluate(closed, vs) for vs in vals]
    assert [int(closed.subs(su).evalf(30)) for su in subs] == exact

    def ours():
        for vs in vals:
            evaluate(closed, vs)

    def sympy_subs():
        for su in subs:
            closed.subs(su).evalf(30)

    cache_clear = getattr(sp.core.cache, "clear_cache", lambda: None)
    t_ours = best(ours, repeat, number=20) / len(vals)
    t_sympy = []
    for _ in range(max(2, repeat // 2)):
        cache_clear()  # each repeat starts as a fresh process would
        t_sympy.append(best(sympy_subs, 1) / len(vals))
    t_sympy = min(t_sympy)
    return {"name": "scalar: SymPy subs+evalf / exact kernel (one config)", "ratio": t_sympy / t_ours,
            "goal": ">= 100x", "ok": t_sympy / t_ours >= 100,
            "detail": f"{t_sympy * 1e6:.0f} us vs {t_ours * 1e6:.1f} us per config"}


def bench_torch(repeat: int) -> dict | None:
    try:
        import torch  # noqa: F401
        from symllm import reference
    except ImportError:
        return None
    cfgs = _configs_405b(20)
    closed = symllm.model_for(cfgs[0]).closed_form("params")
    vals = [values(c) for c in cfgs]

    def torch_count(cfg):
        model = reference.build(cfg, device="meta")
        return sum(p.numel() for p in model.parameters())

    assert evaluate(closed, vals[0]) == torch_count(cfgs[0])

    def ours():
        for vs in vals:
            evaluate(closed, vs)

    t_ours = best(ours, repeat, number=20) / len(vals)
    t_torch = min(best(lambda: torch_count(c), 1) for c in cfgs[:max(2, repeat // 2)])
    return {"name": "405B: torch meta build + numel / exact kernel", "ratio": t_torch / t_ours,
            "goal": ">= 10,000x", "ok": t_torch / t_ours >= 10_000,
            "detail": f"{t_torch * 1e3:.0f} ms vs {t_ours * 1e6:.1f} us"}


def bench_startup(runs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    ours_cmd = [sys.executable, "-m", "symllm", "count", "llama3.1-405b"]
    base_cmd = [sys.executable, "-c", "import sympy"]

    def run(cmd):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        return time.perf_counter() - t0

    run(ours_cmd), run(base_cmd)  # warm the file cache and the bytecode
    ours, base = [], []
    for _ in range(runs):  # interleaved, so both see the same load
        ours.append(run(ours_cmd))
        base.append(run(base_cmd))
    t_ours, t_base = statistics.median(ours), statistics.median(base)
    return {"name": "start-up: symllm count llama3.1-405b / import sympy", "ratio": t_ours / t_base,
            "goal": "<= 1.6x", "ok": t_ours / t_base <= 1.6,
            "detail": f"{t_ours * 1e3:.0f} ms vs {t_base * 1e3:.0f} ms (median of {runs})"}


def hand_written_params(cfg, d_ff: int) -> dict:
    """What ``symllm.params`` returns, written out by hand for a LLaMA config (no biases)."""
    V, d, L, n_h, n_kv, d_h = cfg.vocab_size, cfg.dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    attn = (d * n_h * d_h, d * n_kv * d_h, d * n_kv * d_h, n_h * d_h * d)
    block = sum(attn) + 3 * d * d_ff + 2 * d
    head = 0 if cfg.tie_embeddings else V * d
    return {"embedding": V * d, "block/attention_norm": L * d, "block/attention/wq": L * attn[0],
            "block/attention/wk": L * attn[1], "block/attention/wv": L * attn[2], "block/attention/wo": L * attn[3],
            "block/attention/rope": 0, "block/attention/scores": 0, "block/attention/context": 0,
            "block/ffn_norm": L * d, "block/feed_forward/w1": L * d * d_ff, "block/feed_forward/w2": L * d_ff * d,
            "block/feed_forward/w3": L * d * d_ff, "norm": d, "lm_head": head, "block": block,
            "total": V * d + L * block + d + head}


def bench_params(repeat: int) -> dict:
    cfgs = _configs_405b(20)
    d_ff = [symllm.hidden_dim(c) for c in cfgs]
    assert all(symllm.params(c) == hand_written_params(c, h) for c, h in zip(cfgs, d_ff))

    def ours():
        for c in cfgs:
            symllm.params(c)

    def theirs():
        for c, h in zip(cfgs, d_ff):
            hand_written_params(c, h)

    t_ours = best(ours, repeat, number=50) / len(cfgs)
    t_hand = best(theirs, repeat, number=50) / len(cfgs)
    return {"name": "params: warm symllm.params(cfg) / hand-written Python", "ratio": t_ours / t_hand,
            "goal": "<= 10x", "ok": t_ours / t_hand <= 10,
            "detail": f"{t_ours * 1e6:.1f} us vs {t_hand * 1e6:.1f} us per config"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke test)")
    args = parser.parse_args(argv)
    n, repeat, runs = (10**4, 2, 2) if args.quick else (10**6, 7, 9)
    rows = [bench_vector(n, repeat), bench_scalar(repeat)]
    torch_row = bench_torch(repeat)
    rows.append(torch_row or {"name": "405B: torch meta build + numel / exact kernel", "ratio": float("nan"),
                              "goal": ">= 10,000x", "ok": None, "detail": "skipped: torch not installed"})
    rows.append(bench_startup(runs))
    rows.append(bench_params(repeat))
    print(f"symllm benchmarks, {time.strftime('%Y-%m-%d')}, {platform.machine()} {platform.processor() or ''}"
          f" ({os.cpu_count()} CPUs), Python {platform.python_version()}, numpy {np.__version__}, "
          f"sympy {sp.__version__}{' (quick: sizes too small to judge)' if args.quick else ''}\n")
    width = max(len(r["name"]) for r in rows)
    print(f"{'benchmark':<{width}}  {'ratio':>10}  {'goal':>10}  {'met':>4}  detail")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 10}  {'-' * 4}  {'-' * 6}")
    for r in rows:
        met = {True: "yes", False: "NO", None: "-"}[r["ok"]]
        print(f"{r['name']:<{width}}  {r['ratio']:>9.4g}x  {r['goal']:>10}  {met:>4}  {r['detail']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
