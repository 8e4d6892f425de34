"""The suite is hermetic: it runs with a cache folder of its own (conftest.py), and what that cache holds
never changes an output: a cold and a warm cache give byte-identical count, derive, report and sweep."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from symllm.numbers import cache

ROOT = Path(__file__).resolve().parent.parent

#: one command of each kind that reads the cache when warm (count: stored counts, report: stored texts,
#: derive and sweep: stored kernels), each with a workload, so that FLOPs and memory kernels are used
COMMANDS = {
    "count": ["count", "llama3.1-8b", "--seq", "4096", "--gen", "128", "--json"],
    "count-text": ["count", "mixtral-8x7b", "--batch", "2"],
    "derive": ["derive", "--component", "model", "--quantity", "flops", "--phase", "generation",
               "--model", "llama3.2-1b", "--gen", "64"],
    "report": ["report", "llama3.2-1b", "--seq", "1024", "--format", "latex"],
    "sweep": ["sweep", "--base", "llama3.2-1b", "--seq", "512,4096", "--batch", "1,8",
              "--quantity", "params,prefill_flops,kv_cache,training_peak"],
}

_SCRIPT = """
import contextlib, io, sys
from pathlib import Path
from symllm.cli import main
out = Path(sys.argv[1])
for name, argv in {commands!r}.items():
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    assert code == 0, (name, code)
    (out / name).write_bytes(stdout.getvalue().encode("utf-8"))
"""


def test_the_suite_has_its_own_cache(symllm_cache):
    """Tests (and the subprocesses they start) read and write a fresh folder, never ~/.cache/symllm."""
    assert cache.cache_dir() == symllm_cache
    assert os.environ["SYMLLM_CACHE_DIR"] == str(symllm_cache)
    assert not symllm_cache.is_relative_to(Path.home() / ".cache")


def test_cold_and_warm_cache_give_identical_bytes(tmp_path):
    """Every command, run in a fresh process on an empty cache and again on the cache the first run
    filled, prints the same bytes (and the first run did fill it: the second one read entries)."""
    cache = tmp_path / "cache"
    env = {**os.environ, "SYMLLM_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    outputs = {}
    for run in ("cold", "warm"):
        folder = tmp_path / run
        folder.mkdir()
        before = sorted(p.name for p in cache.glob("*.json")) if cache.exists() else []
        done = subprocess.run([sys.executable, "-c", _SCRIPT.format(commands=COMMANDS), str(folder)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        outputs[run] = {name: (folder / name).read_bytes() for name in COMMANDS}
        entries = sorted(p.name for p in cache.glob("*.json"))
        if run == "cold":
            assert before == []
            assert entries  # the cold run stored what the warm one reads
        else:
            assert entries == before  # every lookup was a hit: nothing new was stored
    for name in COMMANDS:
        assert outputs["cold"][name], name
        assert outputs["warm"][name] == outputs["cold"][name], name
