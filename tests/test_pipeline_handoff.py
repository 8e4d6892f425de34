"""Pipeline hand-offs per micro-batch (symllm.costs.schedules.handoffs), against Megatron-LM's 1F1B schedule.

Megatron-LM's ``forward_backward_pipelining_without_interleaving`` (NVIDIA/Megatron-LM,
megatron/core/pipeline_parallel/schedules.py, commit d98e8a64ddf34856e74b24714e3bedb2f5a39553, read
2026-11-29) runs on each stage: ``p - stage - 1`` warm-up forwards (``recv_forward``, forward,
``send_forward``), then the steady 1F1B loop (forward, ``send_forward_recv_backward``, backward,
``send_backward_recv_forward``; the last iteration only ``send_backward``), then the cool-down backwards
(``recv_backward``, backward, ``send_backward``). p2p_communication.py waits on each exchange
(``wait_on_reqs``; ``batch_isend_irecv``), the first stage receives no activation and sends no gradient, the
last the reverse. :func:`_megatron_1f1b` below replays that order, event by event, for stage times ``F`` and
``B`` and a send time ``t``: it is the independent source the count is checked against.
"""
from __future__ import annotations

from fractions import Fraction

import pytest

import symllm
from symllm.costs import efficiency, hardware
from symllm.costs.schedules import handoffs


def _program(stage: int, p: int, m: int) -> list:
    """One stage's operations in Megatron's order: ("F"|"B", i) or ("ex", [(send|recv, act|grad, i), ...])."""
    first, last = stage == 0, stage == p - 1
    warm = min(p - stage - 1, m)
    out = []

    def exchange(*items):
        kept = [(kind, what, i) for kind, what, i in items
                if not ((what == "act" and kind == "recv" and first) or (what == "act" and kind == "send" and last)
                        or (what == "grad" and kind == "recv" and last) or (what == "grad" and kind == "send" and first))]
        if kept:
            out.append(("ex", kept))
    f = b = 0
    for _ in range(warm):
        exchange(("recv", "act", f))
        out.append(("F", f))
        exchange(("send", "act", f))
        f += 1
    rest = m - warm
    if rest:
        exchange(("recv", "act", f))
    for i in range(rest):
        out.append(("F", f))
        exchange(("send", "act", f), ("recv", "grad", b))
        f += 1
        out.append(("B", b))
        exchange(("send", "grad", b)) if i == rest - 1 else exchange(("send", "grad", b), ("recv", "act", f))
        b += 1
    for _ in range(warm):
        exchange(("recv", "grad", b))
        out.append(("B", b))
        exchange(("send", "grad", b))
        b += 1
    return out


def _megatron_1f1b(p: int, m: int, F, B, t) -> Fraction:
    """The step's length: a send starts when both ends have posted it and takes ``t``; an exchange ends when
    all its sends and receives have; a stage runs its operations in order."""
    programs = [_program(s, p, m) for s in range(p)]
    at, clock, posted = [0] * p, [Fraction(0)] * p, {}
    while any(at[s] < len(programs[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while at[s] < len(programs[s]):
                op = programs[s][at[s]]
                if op[0] in ("F", "B"):
                    clock[s] += F if op[0] == "F" else B
                else:
                    ends = []
                    for kind, what, i in op[1]:
                        peer = s + 1 if (what == "act") == (kind == "send") else s - 1
                        key = (s, peer, what, i) if kind == "send" else (peer, s, what, i)
                        posts = posted.setdefault(key, {})
                        posts.setdefault(kind, clock[s])
                        ends.append(max(posts.values()) + t if len(posts) == 2 else None)
                    if None in ends:
                        break
                    clock[s] = max([clock[s], *ends])
                at[s] += 1
                moved = True
        assert moved, "the replay deadlocked"
    return max(clock)


def test_two_stages_two_micro_batches_by_hand():
    """p = 2, m = 2, forward F, backward B, a send t (t < F): stage 0 runs F1, sends it (F+t); stage 1 runs
    F1, B1 (2F+B+t) while stage 0 runs F2; they exchange grad 1 and act 2 at once (2F+B+2t); stage 0 runs B1
    (2F+2B+2t), stage 1 F2 and B2 (3F+2B+2t), then sends grad 2 (3F+2B+3t), and stage 0 runs B2: 3F+3B+3t,
    the (m+p-1)(F+B) of the bubble plus 3 sends, where one micro-batch's count was p-1 = 1 boundary."""
    F, B, t = Fraction(1), Fraction(2), Fraction(1, 100)
    assert _megatron_1f1b(2, 2, F, B, t) == 3 * F + 3 * B + 3 * t
    assert handoffs(2, 2) == 3
    # one micro-batch over three stages: its activations down two boundaries, its gradient back up two
    assert _megatron_1f1b(3, 1, F, B, t) == 3 * F + 3 * B + 4 * t
    assert handoffs(3, 1) == 4


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("m", [1, 2, 3, 4, 7, 8, 16, 32])
def test_handoffs_are_the_sends_megatrons_1f1b_waits_on(p, m):
    """The count is the sends on the replayed schedule's critical path: the step less its compute,
    (m+p-1)(F+B), over the send time (sends much shorter than a stage's forward)."""
    F, B, t = Fraction(3), Fraction(5), Fraction(1, 1000)
    assert _megatron_1f1b(p, m, F, B, Fraction(0)) == (m + p - 1) * (F + B)
    assert (_megatron_1f1b(p, m, F, B, t) - (m + p - 1) * (F + B)) / t == handoffs(p, m)


def test_the_bound_pays_each_micro_batchs_handoffs(monkeypatch):
    """count's training bound: the hand-offs are each send's β_a·b·s·d at the pp link's bandwidth, as many
    as schedules.handoffs counts (p = 4, m = 8: 19 sends; by hand 2·8 + 2·4 - 5), not one micro-batch's
    p - 1 boundaries. Llama 3.1 8B, b = 1, s = 4,096, bf16 activations: 2 x 4,096 x 4,096 bytes a send."""
    opts = dict(gpu="h100-sxm", pp=4, micro_batches=8, batch=1, seq=4096)
    with_sends = symllm.workload("llama3.1-8b", **opts)["time"]
    monkeypatch.setattr(hardware, "handoffs", lambda p, m, schedule="1f1b": 0)
    without = symllm.workload("llama3.1-8b", **opts)["time"]
    bandwidth = with_sends["links"]["pp"]["bandwidth"]
    assert with_sends["training_step_s"] - without["training_step_s"] == pytest.approx(
        19 * 2 * 4096 * 4096 / bandwidth, rel=1e-9)


def test_the_expected_step_pays_each_send_at_the_point_to_point_latency(monkeypatch):
    """The expected step's hand-offs by hand: p = 4, m = 8 (19 sends, as above) over NVLink 4 between H100s, each
    send 2 x 4,096 x 4,096 bytes (Llama 3.1 8B, b = 1, s = 4,096, bf16) at NVLink 4's 0.82 x 450 GB/s plus a send's
    3 us (nccl-tests' sendrecv_perf between two H100s: efficiency.json collectives.p2p_latency), not an
    all-reduce's 10 us: 19 x (3 us + 90.93 us) = 1.7847 ms."""
    opts = dict(gpu="h100-sxm", pp=4, micro_batches=8, batch=1, seq=4096)
    with_sends = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    monkeypatch.setattr(efficiency, "handoffs", lambda p, m, schedule="1f1b": 0)
    without = symllm.workload("llama3.1-8b", **opts)["time"]["expected"]["training_step_s"]
    by_hand = 19 * (3e-6 + 2 * 4096 * 4096 / (0.82 * 450e9))
    assert with_sends - without == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(1.7847e-3, abs=1e-7)


@pytest.mark.parametrize("pp, sends", [(2, 1), (4, 2)])
def test_comm_pp_is_one_micro_batchs_sends(pp, sends):
    """``comm.pp`` is what the busiest GPU sends for one micro-batch, whatever ``--micro-batches``: a middle
    stage sends its output activation on and its input gradient back (2 sends), an end stage of two one. Each
    send is β_a·b·s·d: Llama 3.1 8B, b = 1, s = 4,096, bf16, 2 x 4,096 x 4,096 bytes (hand arithmetic). The
    step's time counts the hand-offs by schedules.handoffs instead (the test above), not these bytes."""
    for m in (1, 8):
        comm = symllm.workload("llama3.1-8b", pp=pp, micro_batches=m, batch=1, seq=4096)["comm"]
        assert comm["pp"] == sends * 2 * 4096 * 4096
