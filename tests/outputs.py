"""Outputs that several test modules check, each rendered once per test process.

A report of a new model or workload is seconds of cold SymPy, and rendering the same text again is most of a
second of LaTeX printing; the same text is checked several ways: read in a terminal for its width
(tests/test_cli.py), ``\\input`` into papers and compiled by pdflatex with no overfull box
(tests/test_render.py). :func:`run` runs the command line once per argument list and process (a report
through ``symllm.studies.quick``, so the other xdist worker reads the text back from the suite's cache), and
:data:`PAPER_REPORTS` / :data:`PAPER_DERIVATIONS` are the one agreed set of LaTeX outputs: each kind of model
and workload whose lines once ran into the margin.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import io
import json
import shutil
import tempfile
from pathlib import Path

from .conftest import CliResult

#: Qwen2.5-72B's config.json (Qwen/Qwen2.5-72B on the Hugging Face Hub): its Table 2 was 16pt too wide
QWEN25_72B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
              "intermediate_size": 29568, "num_attention_heads": 64, "num_hidden_layers": 80,
              "num_key_value_heads": 8, "vocab_size": 152064, "tie_word_embeddings": False,
              "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
              "hidden_act": "silu", "torch_dtype": "bfloat16"}


@functools.lru_cache(maxsize=None)
def qwen_config() -> str:
    """The path of QWEN25_72B written as ``qwen2.5-72b.json`` (a config file, not a preset), once per process."""
    folder = tempfile.mkdtemp(prefix="symllm-outputs-")
    atexit.register(shutil.rmtree, folder, True)  # removed when the test process ends
    path = Path(folder) / "qwen2.5-72b.json"
    path.write_text(json.dumps(QWEN25_72B))
    return str(path)


#: report name -> the ``symllm report`` arguments: MoE (Mixtral; Llama 4 Scout's chunked attention, layers
#: without RoPE; Maverick's interleaved MoE at 8,000 tokens), latent attention (DeepSeek-V3; Kimi-K2, whose
#: ``moe_block/moe/shared_experts/w1`` row ran 5pt past a two-column paper's first column, unbroken at ``_``),
#: sinks and windows (gpt-oss-120b), 128 experts (Qwen3-235B), a config file (Qwen2.5-72B), a window past the
#: prompt (Mistral 7B v0.1: Min in the sums), a long context on the 405B (the substituted FLOP and memory
#: lines ran 130-1,000pt into the margin), every workload number at once (TinyLlama in int4), and the layout,
#: roofline and LoRA sections (Llama 3.2 1B on two H100s)
PAPER_REPORTS = {
    "llama3.1-8b": ("llama3.1-8b",),
    "mixtral-8x7b": ("mixtral-8x7b",),
    "llama4-scout-17b-16e": ("llama4-scout-17b-16e",),
    "llama4-maverick-17b-128e": ("llama4-maverick-17b-128e", "--seq", "8000"),
    "deepseek-v3": ("deepseek-v3",),
    "kimi-k2": ("kimi-k2",),
    "gpt-oss-120b": ("gpt-oss-120b",),
    "qwen3-235b-a22b": ("qwen3-235b-a22b",),
    "qwen2.5-72b": None,  # qwen_config(): a file written when first asked for
    "mistral-7b-v0.1": ("mistral-7b-v0.1", "--seq", "32768", "--gen", "100"),
    "llama3.1-405b": ("llama3.1-405b", "--seq", "131072"),
    "tinyllama-1.1b": ("tinyllama-1.1b", "--dtype", "int4", "--batch", "1024", "--seq", "131072", "--gen", "131072",
                       "--zero", "3", "--dp", "1000", "--recompute"),
    "layout": ("llama3.2-1b", "--gpu", "h100-sxm", "--dp", "2", "--lora-rank", "16"),
}

#: derivation name -> the ``symllm derive`` arguments: each component and quantity (Llama 3.1 8B's numbers),
#: Mixtral's MoE, the roofline quantities, and the long sums the page once could not hold (the 405B's
#: generation FLOPs at 131,072 tokens, its inference peak at batch 64, Scout's chunks: floor)
PAPER_DERIVATIONS = {
    **{f"{comp}-{quantity}": ("--component", comp, "--quantity", quantity, "--model", "llama3.1-8b")
       for comp in ("attention", "feed_forward", "block", "model") for quantity in ("params", "flops", "memory")},
    "moe": ("--component", "moe", "--model", "mixtral-8x7b"),
    "maverick": ("--component", "model", "--model", "llama4-maverick-17b-128e"),
    "maverick-moe": ("--component", "moe", "--model", "llama4-maverick-17b-128e"),
    "decode-batch": ("--quantity", "decode_batch", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--context", "390"),
    "ridge": ("--quantity", "ridge", "--gpu", "h100-sxm"),
    "generation": ("--component", "model", "--quantity", "flops", "--phase", "generation"),
    "generation-405b": ("--component", "model", "--quantity", "flops", "--phase", "generation", "--model",
                        "llama3.1-405b", "--seq", "131072", "--gen", "4096", "--attention", "causal"),
    "inference-peak-405b": ("--component", "model", "--quantity", "memory", "--model", "llama3.1-405b", "--memory",
                            "inference_peak", "--batch", "64"),
    "generation-scout": ("--component", "model", "--quantity", "flops", "--phase", "generation", "--model",
                         "llama4-scout-17b-16e", "--seq", "131072", "--gen", "100", "--attention", "causal"),
}


def report_argv(name: str) -> tuple[str, ...]:
    """The ``symllm report`` argument list of PAPER_REPORTS[name] (without --format)."""
    args = PAPER_REPORTS[name]
    return ("report", *(args if args is not None else (qwen_config(),)))


@functools.lru_cache(maxsize=None)
def run(*argv: str) -> CliResult:
    """``symllm.cli.main(argv)`` run in-process once per argument list and process: its exit status and
    what it printed. Shared between tests: read it, never change it."""
    from symllm.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) or exc.code is None else 1  # sys.exit("text"): 1
    return CliResult(0 if code is None else code, out.getvalue(), err.getvalue())


def latex_outputs() -> dict[str, str]:
    """PAPER_REPORTS and PAPER_DERIVATIONS as LaTeX fragments: ``report-NAME`` / ``derive-NAME`` -> source."""
    out = {}
    for name in PAPER_REPORTS:
        r = run(*report_argv(name), "--format", "latex")
        assert (r.code, r.err) == (0, ""), name
        out[f"report-{name}"] = r.out
    for name, args in PAPER_DERIVATIONS.items():
        r = run("derive", *args, "--format", "latex")
        assert (r.code, r.err) == (0, ""), name
        out[f"derive-{name}"] = r.out
    return out
