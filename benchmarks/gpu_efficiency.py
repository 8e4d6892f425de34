"""Measure, on one CUDA GPU, the achieved fraction of peak that symllm's expected times use.

Run on a lent GPU machine (python3 with torch and transformers; nothing is downloaded: every model is built
from a config with random weights). Writes ``$OUT/gpu_measurements.json`` (or ``--out``) and prints a table.
What it measures, each with CUDA events, after a warm-up, the median of repeated runs:

* ``copy``: a device-to-device copy, bytes read + written over time, by size;
* ``gemm``: ``x @ W.T`` in bf16 (``F.linear``) and fp8 (``torch._scaled_mm``, per-tensor scales) by (M, N, K),
  rotating over enough weight copies that the L2 cache never holds the weights (as in a model: each layer's
  weights are read once a step);
* ``graph_gemm`` (``--graph-gemm``): the same products, ``copies`` different weights one after another
  replayed from one CUDA graph, so no host launch sits inside the timing: the eager ``gemm`` table times each
  call alone (start event, the Python call, end event), and at small M its time is mostly the host's (fp8
  4096 x 4096 at M = 16-256: 48-58 us where its kernel's roofline is 3.5-4.3 us);
* ``attention``: ``scaled_dot_product_attention`` (its flash backend where it runs) for a causal prefill and
  for a one-token decode over a cache, by context, batch and head width, GQA native;
* ``launch``: the cost of one small kernel launched eagerly and replayed from a CUDA graph;
* ``decode``: whole Llama decode steps (transformers' LlamaForCausalLM, eager, DynamicCache) at batch 1 and 8;
* ``graph_decode``: the same step written in plain torch and replayed from a CUDA graph (a static cache);
* ``train``: a forward and backward of transformers' LlamaForCausalLM (SDPA attention), no optimizer step.

Nothing here runs in the test suite (CI has no GPU); the figures it printed, with the date, card, driver and
versions, are copied into ``symllm/costs/efficiency.json`` and docs/efficiency.md.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

DEV = "cuda"


def bench(fn, warmup: int = 3, reps: int = 20) -> float:
    """Median seconds of ``fn()`` over ``reps`` runs, each timed by CUDA events, after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def env() -> dict:
    smi = ""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                              "power.limit", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - a report, not a failure
        smi = f"nvidia-smi failed: {e}"
    p = torch.cuda.get_device_properties(0)
    try:
        import transformers
        tv = transformers.__version__
    except Exception:  # noqa: BLE001
        tv = None
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": p.name,
            "sms": p.multi_processor_count, "memory_bytes": p.total_memory, "nvidia_smi": smi,
            "torch": torch.__version__, "cuda": torch.version.cuda, "transformers": tv,
            "python": platform.python_version()}


def copy(sizes) -> list:
    out = []
    for size in sizes:
        x = torch.empty(size, dtype=torch.uint8, device=DEV).random_(0, 255)
        y = torch.empty_like(x)
        reps = 50 if size < 2 ** 28 else 10
        t = bench(lambda: y.copy_(x), reps=reps)
        out.append({"bytes_each_way": size, "s": t, "bytes_per_s": 2 * size / t})
        del x, y
    torch.cuda.empty_cache()
    return out


def _weights(n, k, dtype, total_bytes=2 ** 28):
    """Enough copies of an (n, k) weight that together they exceed the L2 cache several times."""
    each = n * k * torch.finfo(dtype).bits // 8
    copies = max(2, min(16, math.ceil(total_bytes / each)))
    return [torch.randn(n, k, device=DEV, dtype=torch.bfloat16).to(dtype) for _ in range(copies)]


def gemm(ms, shapes, fp8: bool) -> list:
    out = []
    for n, k in shapes:
        dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
        ws = _weights(n, k, dtype)
        one = torch.tensor(1.0, device=DEV)
        for m in ms:
            if fp8 and m % 16:
                continue
            x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16).to(dtype)
            i = [0]

            if fp8:
                def fn():
                    w = ws[i[0] % len(ws)]
                    i[0] += 1
                    return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                def fn():
                    w = ws[i[0] % len(ws)]
                    i[0] += 1
                    return F.linear(x, w)
            flops = 2 * m * n * k
            reps = 30 if flops < 1e12 else 10
            try:
                t = bench(fn, reps=reps)
            except Exception as e:  # noqa: BLE001
                out.append({"m": m, "n": n, "k": k, "dtype": "fp8" if fp8 else "bf16", "error": repr(e)[:200]})
                continue
            moved = (n * k + m * k) * (1 if fp8 else 2) + m * n * 2
            out.append({"m": m, "n": n, "k": k, "dtype": "fp8" if fp8 else "bf16", "s": t,
                        "flops_per_s": flops / t, "bytes": moved, "bytes_per_s": moved / t})
        del ws
        torch.cuda.empty_cache()
    return out


def _sdpa(q, k, v, causal):
    try:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=k.shape[1] != q.shape[1])
    except TypeError:  # an older torch: no enable_gqa
        rep = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                              is_causal=causal)


def attention(prefill_cases, decode_cases) -> list:
    out = []
    for b, nh, nkv, dh, s in prefill_cases:
        q = torch.randn(b, nh, s, dh, device=DEV, dtype=torch.bfloat16)
        k = torch.randn(b, nkv, s, dh, device=DEV, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        flops_dense = 4 * b * nh * s * s * dh
        flops_causal = 4 * b * nh * dh * s * (s + 1) // 2
        try:
            t = bench(lambda: _sdpa(q, k, v, True), reps=10 if s >= 16384 else 20)
            out.append({"phase": "prefill", "b": b, "n_h": nh, "n_kv": nkv, "d_h": dh, "s": s, "s_kv": s, "s_": t,
                        "causal_flops_per_s": flops_causal / t, "dense_flops_per_s": flops_dense / t})
        except Exception as e:  # noqa: BLE001
            out.append({"phase": "prefill", "b": b, "n_h": nh, "n_kv": nkv, "d_h": dh, "s": s, "error": repr(e)[:200]})
        del q, k, v
    for b, nh, nkv, dh, t_ in decode_cases:
        q = torch.randn(b, nh, 1, dh, device=DEV, dtype=torch.bfloat16)
        ks = [torch.randn(b, nkv, t_, dh, device=DEV, dtype=torch.bfloat16) for _ in range(2)]
        vs = [torch.randn_like(ks[0]) for _ in range(2)]
        i = [0]

        def fn():
            j = i[0] % 2
            i[0] += 1
            return _sdpa(q, ks[j], vs[j], False)
        kv_bytes = 2 * b * nkv * t_ * dh * 2
        try:
            t = bench(fn, reps=30)
            out.append({"phase": "decode", "b": b, "n_h": nh, "n_kv": nkv, "d_h": dh, "s": 1, "s_kv": t_, "s_": t,
                        "kv_bytes": kv_bytes, "bytes_per_s": kv_bytes / t})
        except Exception as e:  # noqa: BLE001
            out.append({"phase": "decode", "b": b, "n_h": nh, "n_kv": nkv, "d_h": dh, "s_kv": t_, "error": repr(e)[:200]})
        del q, ks, vs
    torch.cuda.empty_cache()
    return out


def int4_gemm(ms, shapes, group: int = 128) -> list:
    """Weight-only int4 (torch's tinygemm kernel, ``_weight_int4pack_mm``, bf16 activations) against the same
    product in bf16: the bytes streamed are the packed weights plus their bf16 scales and zeros."""
    out = []
    for n, k in shapes:
        copies = 8
        packed, scales = [], []
        for _ in range(copies):
            q = torch.randint(0, 16, (n, k), dtype=torch.int32, device=DEV)
            q8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
            packed.append(torch._convert_weight_to_int4pack(q8, 8))
            scales.append(torch.rand(k // group, n, 2, device=DEV, dtype=torch.bfloat16))
        for m in ms:
            x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
            i = [0]

            def fn():
                j = i[0] % copies
                i[0] += 1
                return torch._weight_int4pack_mm(x, packed[j], group, scales[j])
            try:
                t = bench(fn, reps=30)
            except Exception as e:  # noqa: BLE001
                out.append({"m": m, "n": n, "k": k, "error": repr(e)[:300]})
                continue
            moved = n * k // 2 + (k // group) * n * 4 + m * k * 2 + m * n * 2
            out.append({"m": m, "n": n, "k": k, "dtype": "int4", "group": group, "s": t, "bytes": moved,
                        "bytes_per_s": moved / t, "flops_per_s": 2 * m * n * k / t})
        del packed, scales
        torch.cuda.empty_cache()
    return out


def graph_gemv(shapes, ms=(1, 8), group: int = 128, copies: int = 16) -> list:
    """Weight-only int4 (tinygemm) and bf16 products of a few token rows, ``copies`` different weights one
    after another replayed from one CUDA graph (no launch gaps, no L2 reuse): bytes streamed per second."""
    out = []
    for n, k in shapes:
        packed, scales, dense = [], [], []
        for _ in range(copies):
            q = torch.randint(0, 16, (n, k), dtype=torch.int32, device=DEV)
            packed.append(torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), 8))
            scales.append(torch.rand(k // group, n, 2, device=DEV, dtype=torch.bfloat16))
            dense.append(torch.randn(n, k, device=DEV, dtype=torch.bfloat16))
        for m in ms:
            x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
            for kind in ("int4", "bf16"):
                def run():
                    for j in range(copies):
                        if kind == "int4":
                            torch._weight_int4pack_mm(x, packed[j], group, scales[j])
                        else:
                            F.linear(x, dense[j])
                try:
                    t = graph_time(run, copies)
                except Exception as e:  # noqa: BLE001
                    out.append({"kind": kind, "m": m, "n": n, "k": k, "error": repr(e)[:300]})
                    continue
                moved = (n * k // 2 + (k // group) * n * 4) if kind == "int4" else n * k * 2
                out.append({"kind": kind, "m": m, "n": n, "k": k, "group": group, "s": t, "weight_bytes": moved,
                            "bytes_per_s": moved / t})
        del packed, scales, dense
        torch.cuda.empty_cache()
    return out


def graph_time(run, copies: int) -> float:
    """Seconds one of ``copies`` products takes when ``run`` (all of them) is replayed from one CUDA graph."""
    run()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    return bench(g.replay, warmup=3, reps=20) / copies


def graph_gemm(ms, shapes, fp8: bool, copies: int = 8) -> list:
    """``x @ W.T`` in bf16 or fp8 (per-tensor scales, bf16 out) over ``copies`` different weights one after
    another, replayed from one CUDA graph (as an engine's graph-replayed step runs them: no host launch in the
    timing, no L2 reuse): seconds a product, FLOP/s and bytes/s."""
    out = []
    dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
    one = torch.tensor(1.0, device=DEV)
    for n, k in shapes:
        ws = [torch.randn(n, k, device=DEV, dtype=torch.bfloat16).to(dtype) for _ in range(copies)]
        for m in ms:
            x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16).to(dtype)

            def run():
                for w in ws:
                    if fp8:
                        torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                    else:
                        F.linear(x, w)
            try:
                t = graph_time(run, copies)
            except Exception as e:  # noqa: BLE001
                out.append({"m": m, "n": n, "k": k, "dtype": "fp8" if fp8 else "bf16", "error": repr(e)[:300]})
                continue
            flops = 2 * m * n * k
            moved = (n * k + m * k) * (1 if fp8 else 2) + m * n * 2
            out.append({"m": m, "n": n, "k": k, "dtype": "fp8" if fp8 else "bf16", "s": t, "graph": True,
                        "flops_per_s": flops / t, "bytes": moved, "bytes_per_s": moved / t})
        del ws
        torch.cuda.empty_cache()
    return out


def graph_prefill(name, lengths) -> list:
    """A whole prefill (one forward of s tokens, batch 1) of transformers' LlamaForCausalLM with SDPA,
    logits for the last position only (what an engine computes), timed by CUDA events."""
    model = hf_model(name)
    out = []
    with torch.no_grad():
        for s_ in lengths:
            ids = torch.randint(0, 1000, (1, s_), device=DEV)
            t = bench(lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1), warmup=2, reps=5)
            out.append({"model": name, "engine": "hf-sdpa", "b": 1, "s": s_, "prefill_s": t})
    del model
    torch.cuda.empty_cache()
    return out


def launch() -> dict:
    x = torch.zeros(1, device=DEV)
    n = 2000

    def eager():
        for _ in range(n):
            x.add_(1)
    t_eager = bench(eager, warmup=2, reps=5) / n
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        eager()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(n):
            x.add_(1)
    t_graph = bench(g.replay, warmup=2, reps=5) / n
    return {"eager_launch_s": t_eager, "graph_kernel_s": t_graph}


# --------------------------------------------------------------------------- whole models

SHAPES = {  # name: (V, d, L, n_h, n_kv, d_ff, tied) as the presets give them
    "llama3.2-1b": (128256, 2048, 16, 32, 8, 8192, True),
    "llama3.2-3b": (128256, 3072, 28, 24, 8, 8192, True),
    "llama2-7b": (32000, 4096, 32, 32, 32, 11008, False),
    "llama3.1-8b": (128256, 4096, 32, 32, 8, 14336, False),
    "qwen2.5-7b": (152064, 3584, 28, 28, 4, 18944, False),
}


def hf_model(name):
    from transformers import LlamaConfig, LlamaForCausalLM
    V, d, L, nh, nkv, dff, tied = SHAPES[name]
    cfg = LlamaConfig(vocab_size=V, hidden_size=d, num_hidden_layers=L, num_attention_heads=nh,
                      num_key_value_heads=nkv, intermediate_size=dff, tie_word_embeddings=tied,
                      max_position_embeddings=131072, attn_implementation="sdpa")
    torch.manual_seed(0)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(DEV):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(prev)
    return model.eval()


def hf_decode(name, batches, context, steps=32) -> list:
    from transformers import DynamicCache
    model = hf_model(name)
    out = []
    for b in batches:
        ids = torch.randint(0, 1000, (b, context), device=DEV)
        with torch.no_grad():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            cache = DynamicCache()
            res = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
            torch.cuda.synchronize()
            prefill = time.perf_counter() - t0
            tok = res.logits[:, -1:].argmax(-1)
            times = []
            for i in range(steps):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                res = model(input_ids=tok, past_key_values=res.past_key_values, use_cache=True)
                tok = res.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
        out.append({"model": name, "engine": "hf-eager", "b": b, "context": context, "prefill_s": prefill,
                    "decode_token_s": statistics.median(times[4:])})
        del res
        torch.cuda.empty_cache()
    del model
    torch.cuda.empty_cache()
    return out


def graph_decode(name, batches, context) -> list:
    """A Llama decode step in plain torch over a static cache, captured as one CUDA graph."""
    V, d, L, nh, nkv, dff, tied = SHAPES[name]
    dh = d // nh
    bf = dict(device=DEV, dtype=torch.bfloat16)
    g0 = torch.Generator(device=DEV).manual_seed(0)

    def w(*shape):
        return torch.randn(*shape, generator=g0, **bf) * 0.02
    layers = [dict(wqkv=w((nh + 2 * nkv) * dh, d), wo=w(d, nh * dh), w13=w(2 * dff, d), w2=w(d, dff),
                   n1=torch.ones(d, **bf), n2=torch.ones(d, **bf)) for _ in range(L)]
    emb = w(V, d)
    head = emb if tied else w(V, d)
    norm = torch.ones(d, **bf)
    out = []
    for b in batches:
        total = context + 8
        kc = [torch.randn(b, nkv, total, dh, **bf) for _ in range(L)]
        vc = [torch.randn(b, nkv, total, dh, **bf) for _ in range(L)]
        tok = torch.zeros(b, 1, dtype=torch.long, device=DEV)
        pos = torch.tensor([context], device=DEV)
        cos = torch.randn(1, 1, 1, dh, **bf)
        sin = torch.randn(1, 1, 1, dh, **bf)

        def rms(x, wt):
            return F.rms_norm(x, (d,), wt, 1e-5)

        def rope(x):
            x1, x2 = x.chunk(2, -1)
            return x * cos + torch.cat((-x2, x1), -1) * sin

        def step():
            h = F.embedding(tok, emb)                       # [b, 1, d]
            for i, lw in enumerate(layers):
                x = rms(h, lw["n1"])
                qkv = F.linear(x, lw["wqkv"])
                q, k, v = qkv.split([nh * dh, nkv * dh, nkv * dh], -1)
                q = rope(q.view(b, 1, nh, dh).transpose(1, 2))
                k = rope(k.view(b, 1, nkv, dh).transpose(1, 2))
                kc[i].index_copy_(2, pos, k)
                vc[i].index_copy_(2, pos, v.view(b, 1, nkv, dh).transpose(1, 2))
                a = _sdpa(q, kc[i][:, :, :context + 1], vc[i][:, :, :context + 1], False)
                h = h + F.linear(a.transpose(1, 2).reshape(b, 1, nh * dh), lw["wo"])
                x = rms(h, lw["n2"])
                g, u = F.linear(x, lw["w13"]).chunk(2, -1)
                h = h + F.linear(F.silu(g) * u, lw["w2"])
            return F.linear(rms(h, norm), head)

        with torch.no_grad():
            eager = bench(step, warmup=3, reps=20)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            replay = bench(graph.replay, warmup=3, reps=30)
        out.append({"model": name, "engine": "torch", "b": b, "context": context, "eager_decode_token_s": eager,
                    "graph_decode_token_s": replay, "kernels_per_layer": 14})
        del kc, vc, graph
        torch.cuda.empty_cache()
    del layers, emb, head
    torch.cuda.empty_cache()
    return out


def train(name, b, s) -> dict:
    model = hf_model(name).train()
    ids = torch.randint(0, 1000, (b, s), device=DEV)

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
    torch.cuda.reset_peak_memory_stats()
    t = bench(step, warmup=2, reps=5)
    peak = torch.cuda.max_memory_allocated()
    del model
    torch.cuda.empty_cache()
    return {"model": name, "engine": "hf-sdpa", "b": b, "s": s, "fwd_bwd_s": t, "tokens_per_s": b * s / t,
            "peak_bytes": peak}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_measurements.json"))
    ap.add_argument("--quick", action="store_true", help="a few cases of each, to check the script")
    ap.add_argument("--second", action="store_true", help="the held-out runs (int4, other shapes, prefill)")
    ap.add_argument("--h100", action="store_true", help="another card's tables and predicted steps")
    ap.add_argument("--gemv", action="store_true", help="int4 and bf16 weight streams from a CUDA graph")
    ap.add_argument("--graph-gemm", action="store_true",
                    help="the bf16 and fp8 GEMM tables replayed from a CUDA graph (no host launch in the timing)")
    args = ap.parse_args(argv)
    q = args.quick
    result = {"env": env()}

    def save():
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)

    shapes = [(4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336), (8192, 8192)]  # the gemm tables'
    if args.graph_gemm:  # the GEMM tables without the host's launch in each timing (small M: launch-bound)
        ms = [64, 128, 256, 512, 1024, 2048, 4096, 16384]
        sections = [("graph_gemm_bf16", lambda: graph_gemm([64, 256] if q else ms, shapes, False)),
                    ("graph_gemm_fp8", lambda: graph_gemm([64, 256] if q else ms, shapes, True))]
    elif args.gemv:  # weight streams replayed from a graph: int4 tinygemm against bf16 (the dequant fraction)
        sections = [("graph_gemv", lambda: graph_gemv([(4096, 4096), (14336, 4096), (4096, 14336), (28672, 4096),
                                                        (8192, 8192)]))]
    elif args.h100:  # another card: the same tables, and whole steps predicted before the run
        sections = [
            ("launch", launch),
            ("copy", lambda: copy([2 ** p for p in range(24, 33, 2)])),
            ("gemm_bf16", lambda: gemm([256, 1024, 4096, 16384], [(4096, 4096), (28672, 4096), (4096, 14336),
                                                                  (8192, 8192)], False)),
            ("gemm_fp8", lambda: gemm([256, 1024, 4096, 16384], [(4096, 4096), (28672, 4096), (4096, 14336),
                                                                 (8192, 8192)], True)),
            ("graph_decode", lambda: graph_decode("llama3.2-1b", [1], 1024) + graph_decode("llama3.1-8b", [1, 16], 2048)),
            ("prefill", lambda: graph_prefill("llama3.1-8b", [2048, 8192])),
            ("train", lambda: [train("llama3.2-3b", 2, 4096)]),
        ]
    elif args.second:  # the held-out runs: shapes and kinds the first run's figures were not read from
        sections = [
            ("int4_gemm", lambda: int4_gemm([1, 16, 64, 256, 1024], [(4096, 4096), (28672, 4096), (4096, 14336),
                                                                     (8192, 8192)])),
            ("graph_decode", lambda: graph_decode("llama3.2-3b", [1, 16], 2048) + graph_decode("qwen2.5-7b", [1, 16], 4096)),
            ("prefill", lambda: graph_prefill("llama3.1-8b", [512, 2048, 8192]) + graph_prefill("llama3.2-3b", [2048])),
            ("train", lambda: [train("llama3.2-3b", 2, 4096), train("qwen2.5-7b", 1, 4096)]),
        ]
    else:
        sections = []
    sections = sections or [
        ("launch", launch),
        ("copy", lambda: copy([2 ** 20, 2 ** 24] if q else [2 ** p for p in range(20, 33, 2)])),
        ("gemm_bf16", lambda: gemm([1, 64] if q else [1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
                                   [(4096, 4096)] if q else [(4096, 4096), (6144, 4096), (28672, 4096),
                                                             (4096, 14336), (8192, 8192), (128256, 4096)], False)),
        ("gemm_fp8", lambda: gemm([16, 64] if q else [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
                                  [(4096, 4096)] if q else [(4096, 4096), (6144, 4096), (28672, 4096),
                                                            (4096, 14336), (8192, 8192)], True)),
        ("attention", lambda: attention(
            [(1, 32, 8, 128, 1024)] if q else
            [(1, 32, 8, 128, s) for s in (512, 1024, 2048, 4096, 8192, 16384, 32768)]
            + [(1, 32, 8, 64, s) for s in (2048, 8192)] + [(4, 64, 8, 128, 4096)],
            [(1, 32, 8, 128, 1024)] if q else
            [(b, 32, 8, 128, t) for b in (1, 8, 32) for t in (1024, 4096, 16384, 65536) if b * t <= 2 ** 20]
            + [(1, 32, 32, 128, 4096), (16, 64, 8, 128, 4096), (1, 32, 8, 64, 16384)])),
        ("decode", lambda: hf_decode("llama3.2-1b", [1], 512, 12) if q else
         hf_decode("llama3.2-1b", [1, 8], 1024) + hf_decode("llama3.1-8b", [1, 8], 1024)
         + hf_decode("llama2-7b", [1], 1024)),
        ("graph_decode", lambda: graph_decode("llama3.2-1b", [1], 512) if q else
         graph_decode("llama3.2-1b", [1, 8, 64], 1024) + graph_decode("llama3.1-8b", [1, 8, 64], 1024)
         + graph_decode("llama2-7b", [1], 1024) + graph_decode("llama3.1-8b", [1, 32], 8192)),
        ("train", lambda: [train("llama3.2-1b", 1, 1024)] if q else
         [train("llama3.2-1b", 4, 4096), train("llama3.1-8b", 1, 4096)]),
    ]
    for name, fn in sections:
        t0 = time.perf_counter()
        try:
            result[name] = fn()
        except Exception:  # noqa: BLE001 - keep the other sections
            result[name] = {"error": traceback.format_exc()[-1500:]}
        result.setdefault("section_s", {})[name] = round(time.perf_counter() - t0, 1)
        print(f"[{name}] {result['section_s'][name]} s", flush=True)
        save()
    summary(result)
    return 0


def summary(r) -> None:
    e = r["env"]
    print(f"{e['device']} | torch {e['torch']} cuda {e['cuda']} | transformers {e['transformers']} | {e['date']}")
    print("nvidia-smi:", e["nvidia_smi"])
    for key in ("launch",):
        print(key, r.get(key))
    for row in r.get("copy", []) if isinstance(r.get("copy"), list) else []:
        print(f"copy {row['bytes_each_way']:>12,d} B  {row['bytes_per_s'] / 1e12:6.2f} TB/s")
    for key in ("gemm_bf16", "gemm_fp8", "graph_gemm_bf16", "graph_gemm_fp8"):
        rows = r.get(key)
        if not isinstance(rows, list):
            print(key, rows)
            continue
        for row in rows:
            if "error" in row:
                print(key, row)
                continue
            print(f"{row['dtype']} M={row['m']:>6} N={row['n']:>6} K={row['k']:>6}  {row['s'] * 1e6:9.1f} us "
                  f"{row['flops_per_s'] / 1e12:7.1f} TF/s {row['bytes_per_s'] / 1e12:5.2f} TB/s")
    for key in ("int4_gemm", "graph_gemv", "attention", "decode", "graph_decode", "prefill", "train"):
        rows = r.get(key)
        if not isinstance(rows, list):
            print(key, rows)
            continue
        for row in rows:
            print(key, {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()})


if __name__ == "__main__":
    sys.exit(main())
