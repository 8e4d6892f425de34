"""Serving under load (symllm.costs.traffic): the step, TTFT, ITL and throughput composed as its docstring says
(checked against count's own expected decode step and prefill), Little's law at a request rate, and the
published serving runs (tests/test_published_runs.py)."""
from __future__ import annotations

import pytest

import symllm
from symllm.costs.traffic import under_load
from symllm.errors import SymllmError

RUN = dict(gpu="h100-sxm", seq=2000, gen=200)


def _expected(**options) -> dict:
    return symllm.workload("llama3.1-8b", **options)["time"]["expected"]


def test_one_request_at_a_time_by_hand():
    """At concurrency 1 a step is count's decode step at the mean context 2,000 + 100 plus a 200th of the
    prompt's compute; the first token takes one step plus the prompt (2,000 tokens fit one chunk of 8,191)."""
    prompt = _expected(**{**RUN, "gen": 0})["prefill_compute_s"]
    step = _expected(**{**RUN, "seq": 1, "gen": 0}, context=2100)["decode_token_s"] + prompt / 200
    r = under_load("llama3.1-8b", **RUN, concurrency=1)
    assert r["itl_s"] == pytest.approx(step, rel=1e-9)
    assert r["ttft_s"] == pytest.approx(step + prompt, rel=1e-9)
    assert r["e2e_s"] == pytest.approx(step + prompt + 199 * step, rel=1e-9)
    assert r["output_tokens_per_s"] == pytest.approx(200 / r["e2e_s"], rel=1e-9)


def test_throughput_grows_then_saturates_at_the_kv_cache():
    """More concurrency, more output tokens/s and a longer ITL, up to the sequences the KV cache holds;
    beyond it requests queue (TTFT grows, throughput stays)."""
    rows = [under_load("llama3.1-8b", **RUN, concurrency=c) for c in (1, 8, 64)]
    assert rows[0]["output_tokens_per_s"] < rows[1]["output_tokens_per_s"] < rows[2]["output_tokens_per_s"]
    assert rows[0]["itl_s"] < rows[1]["itl_s"] < rows[2]["itl_s"]
    most = rows[0]["kv_sequences"]
    full, over = (under_load("llama3.1-8b", **RUN, concurrency=c) for c in (most, 3 * most))
    assert over["running"] == most and over["queued"] == 2 * most and over["saturated"]
    assert over["output_tokens_per_s"] == pytest.approx(full["output_tokens_per_s"], rel=1e-12)
    assert over["ttft_s"] > full["ttft_s"]
    assert 1 <= rows[0]["saturation_concurrency"] <= most


def test_request_rate_is_littles_law():
    """At a rate it can serve, the concurrency found serves at least that rate, and one fewer would not."""
    r = under_load("llama3.1-8b", **RUN, request_rate=3)
    assert not r["saturated"] and r["requests_per_s"] >= 3
    if r["running"] > 1:
        assert under_load("llama3.1-8b", **RUN, concurrency=r["running"] - 1)["requests_per_s"] < 3
    assert under_load("llama3.1-8b", **RUN, request_rate=10 ** 6)["saturated"]


@pytest.mark.parametrize("options, message", [
    ({"concurrency": 4, "gen": 0}, r"^gen: serving under load needs"),
    ({}, r"^concurrency: give the concurrency or the request rate"),
    ({"concurrency": 0}, r"^concurrency: expected a positive integer, got 0"),
    ({"request_rate": -1}, r"^request_rate: expected a positive number, got -1"),
    ({"concurrency": 1, "seq": 10 ** 7}, r"^seq: one request of 10,000,200 tokens does not fit the KV cache"),
])
def test_bad_load_is_one_line(options, message):
    with pytest.raises(SymllmError, match=message):
        under_load("llama3.1-8b", **{**RUN, **options})


def test_cli_under_load(cli):
    """count --serve --concurrency prints the load section; --concurrency without --serve is one line."""
    r = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "2000", "--gen", "200", "--serve",
             "--concurrency", "8"])
    assert r.code == 0 and "under load (expected, vllm)" in r.out and "inter-token latency" in r.out
    r = cli(["count", "llama3.1-8b", "--gpu", "h100-sxm", "--concurrency", "8"])
    assert r.code == 2 and r.err.strip().endswith("concurrency: serving under load applies to --serve")
