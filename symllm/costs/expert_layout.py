"""How a workload's expert-parallel ranks (``--ep``) lie, by the engine that runs it.

symllm's own layout (:mod:`symllm.costs.parallel`, as DeepSpeed-MoE and Megatron-LM train): the ``N_e`` ranks are
carved out of the ``N_d`` data-parallel ranks (``N_e`` divides ``N_d``), each expert's width split over the tensor
ranks by default (``Workload.expert_tp``). Every training engine, and a workload that names no engine, keeps it.

An inference engine may declare its own (``expert_parallel`` in its efficiency.json entry, read here and nowhere
else):

* ``"tp_x_dp_whole"`` (vLLM's ``--enable-expert-parallel``): ``FusedMoEParallelConfig.make``
  (vllm/model_executor/layers/fused_moe/config.py, vLLM 0.33.0's wheel, read 2026-11-29) flattens the tensor ranks
  of every data-parallel rank into one group and, with expert parallelism on, makes it the expert-parallel group:
  ``ep_size`` = ``tp_size × dp_size`` (× the prefill context-parallel size, 1 here) with the MoE layer's
  ``tp_size`` 1, "each device owns a set of experts fully"; the attention and the dense layers stay split over
  ``--tp`` and replicated over ``--dp``. So ``--ep`` is 1 (no expert parallelism) or ``--tp × --dp``, and each rank
  holds ``n_e / (N_t·N_d)`` experts whole: the closed forms' ``⌈n_e/N_e⌉`` whole experts (``expert_tp`` "whole")
  with ``N_e`` that many ranks. A split of the experts given with it is refused. The engine serves only: in its
  layout no training figure is answered (:func:`serves_only`; :func:`symllm.costs.numbered.unanswered`), as
  symllm's training forms carve ``N_e`` out of ``N_d`` (their expert-data-parallel group ``N_d/N_e`` is below one
  rank here); a training plan under the engine tries no expert parallelism (:mod:`symllm.studies.plans`).
"""
from __future__ import annotations

from symllm.errors import SymllmError

__all__ = ["EXPERT_PARALLEL", "declared", "check", "serves_only"]

#: the expert-parallel layouts an engine may declare (efficiency.json ``expert_parallel``)
EXPERT_PARALLEL = ("tp_x_dp_whole",)


def declared(name: str | None) -> str | None:
    """The expert-parallel layout the engine ``name`` declares (:data:`EXPERT_PARALLEL`), None for symllm's own
    (no engine named, a training engine, or an engine that declares none).

    >>> declared("vllm"), declared("megatron"), declared(None)
    ('tp_x_dp_whole', None, None)
    """
    if name is None:
        return None
    from symllm.costs.figures import engine
    layout = engine(name, "inference").get("expert_parallel")
    if layout is not None and layout not in EXPERT_PARALLEL:
        raise SymllmError(f"expert_parallel: {layout!r} in {name}'s efficiency.json entry (known: "
                          f"{', '.join(EXPERT_PARALLEL)})")
    return layout


def check(work) -> str:
    """``work``'s routed experts under tensor parallelism (``expert_tp``) as its engine's expert parallelism lays
    them out, or a one-line refusal of a layout the engine cannot run (module docstring): under symllm's own, ``ep``
    dividing ``dp``; under vLLM's, ``ep`` 1 or ``tp × dp``, the experts whole.

    >>> from symllm.costs.workloads import Workload
    >>> Workload(tp=2, dp=4, ep=8, engine="vllm").expert_tp, Workload(tp=2, dp=4, ep=4).expert_tp
    ('whole', 'split')
    >>> Workload(tp=2, dp=4, ep=4, engine="vllm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: ep: 4; vllm's expert parallelism (--enable-expert-parallel) spans ... --ep 8 or 1
    """
    layout = declared(work.engine) if work.ep > 1 else None
    if layout is None:
        if work.dp % work.ep:  # symllm.costs.parallel: expert-parallel groups are carved out of the data-parallel ranks
            whole = "; --tp x --dp of them is vLLM's (--engine vllm)" if work.ep == work.tp * work.dp else ""
            raise SymllmError(f"ep: {work.ep} expert-parallel ranks must divide the {work.dp} data-parallel "
                              f"ranks (--dp){whole}")
        return work.expert_tp
    ranks = work.tp * work.dp
    if work.ep != ranks:
        raise SymllmError(f"ep: {work.ep}; {work.engine}'s expert parallelism (--enable-expert-parallel) spans --tp x "
                          f"--dp = {ranks} ranks: give --engine {work.engine} --ep {ranks} or 1")
    if work.expert_tp == "split" and "expert_tp" not in work.derived:
        raise SymllmError(f"expert_tp: split; {work.engine}'s expert parallelism keeps each routed expert whole on "
                          "its rank (give whole, or --ep 1)")
    return "whole"


def serves_only(work) -> str | None:
    """The one-line reason ``work``'s training figures are not answered: its ``--ep`` lies in an inference engine's
    own expert-parallel layout (:func:`declared`), which serves only; None where they are (symllm's own layout).

    >>> from symllm.costs.workloads import Workload
    >>> serves_only(Workload(tp=2, dp=4, ep=8, engine="vllm")), serves_only(Workload(tp=2, dp=4, engine="vllm"))
    ("training: not in vllm's expert-parallel layout (it serves only)", None)
    """
    if work.ep > 1 and declared(work.engine) is not None:
        return f"training: not in {work.engine}'s expert-parallel layout (it serves only)"
    return None

