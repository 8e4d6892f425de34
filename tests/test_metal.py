"""Apple GPUs (gpus.json backend "metal"): the memory Metal lets the GPU wire by default, and the engines that
serve on it. Expected numbers: ggml-metal's start-up logs (MiB = 2**20 bytes; later builds print bytes / 10**6)."""
import json

import pytest

import symllm
import symllm.cli
from symllm.costs import accelerators, serving
from symllm.errors import SymllmError

GiB, MiB = 2 ** 30, 2 ** 20


@pytest.mark.parametrize("unified_gb, logged_mib, source", [
    # the two logs the rule is set from
    (16, "10922.67", "abetlen/llama-cpp-python issue #687, M1 Pro 16GB, 2023-09-14"),
    (96, "73728.00", "ggml-org/llama.cpp issue #3213, M2 Max 96GB, 2023-09-16"),
    # held out
    (32, "21845.34", "ollama/ollama issue #434, M2 Max 32GB, 2023-08-28"),
    (64, "49152.00", "ggml-org/llama.cpp issue #1870, M1 Max 64GB, 2023-11-25"),
    (36, str(28991.03e6 / MiB), "ollama/ollama issue #2370, M3 Pro 36GB, 2024-02-06, printed as bytes / 10**6"),
])
def test_the_working_set_is_what_metal_logs(unified_gb, logged_mib, source):
    """recommendedMaxWorkingSetSize as ggml_metal_init logged it, to the log's two decimals."""
    got = accelerators.metal_working_set(unified_gb * GiB) / MiB
    assert got == pytest.approx(float(logged_mib), abs=0.01), source


def test_the_m2_ultra_by_hand():
    """192 GB unified: 3/4 of 192 GiB = 144 GiB = 147,456 MiB, llama.cpp's 'recommendedMaxWorkingSetSize =
    147456.00 MB' on an M2 Ultra 192GB; --gpu-memory (after sudo sysctl iogpu.wired_limit_mb=...) replaces it."""
    g = accelerators.gpu("apple-m2-ultra")
    assert (g.unified, g.memory, g.backend) == (192 * GiB, 147456 * MiB, "metal")
    assert accelerators.custom("apple-m2-ultra", memory=180).memory == 180 * GiB
    assert accelerators.gpu("apple-m4-max").memory == 96 * GiB  # 3/4 of 128 GiB
    assert accelerators.gpu("h100-sxm").backend is None and accelerators.gpu("h100-sxm").unified is None


@pytest.mark.parametrize("door", ["count", "serving", "plan"])
def test_an_engine_without_metal_is_refused_at_every_door(door, capsys):
    """vLLM builds for macOS on the CPU only (its cpu.apple.inc.md): one line, exit 2, at each door."""
    if door == "serving":
        with pytest.raises(SymllmError, match=r"^engine: vllm has no metal backend for apple-m2-ultra; use llama"):
            serving.capacity(symllm.resolved_config("llama2-7b"), gpu="apple-m2-ultra", engine="vllm")
        return
    argv = (["count", "llama2-7b", "--gpu", "apple-m2-ultra", "--serve", "--engine", "vllm"] if door == "count" else
            ["plan", "llama2-7b", "--gpus", "1xapple-m2-ultra", "--engine", "sglang"])
    assert symllm.cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no metal backend for apple-m2-ultra" in err


def _json(argv, capsys):
    assert symllm.cli.main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_one_answer_on_a_mac(capsys):
    """count's fit, count --serve and plan read the same 144 GiB and the same engine, llama.cpp: plan's best batch
    is the sequences count --serve finds its cache holds."""
    c = _json(["count", "llama2-70b", "--gpu", "apple-m2-ultra", "--batch", "23", "--serve"], capsys)
    assert c["time"]["capacity"] == c["serving"]["memory"] == c["serving"]["usable"] == 144 * GiB
    assert c["serving"]["engine"] == "llama.cpp"
    p = _json(["plan", "llama2-70b", "--gpus", "1xapple-m2-ultra"], capsys)
    assert p["engine"] == "llama.cpp" and p["rows"][0]["batch"] == c["serving"]["most_sequences"]
    assert p["rows"][0]["peak"] <= 144 * GiB


def test_the_default_engine_follows_the_card():
    """llama.cpp is derived from the Apple card, so a copy on a CUDA card takes the default there (vLLM's
    conventions, engine None); an engine given stays given."""
    from symllm.costs.workloads import Workload
    mac = Workload(gpu="apple-m2-ultra")
    assert mac.engine == "llama.cpp" and mac.replace(gpu="h100-sxm").engine is None
    assert Workload(gpu="apple-m2-ultra", engine="mlc").replace(gpu="h100-sxm").engine == "mlc"
    assert Workload(gpu="h100-sxm").engine is None
