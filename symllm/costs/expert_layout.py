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

Without expert parallelism an engine may spread each expert over more ranks than ``--tp`` (``experts_without_ep``
in its entry):

* ``"tp_x_dp"`` (vLLM at ``--data-parallel-size`` above 1 without ``--enable-expert-parallel``): the same
  ``FusedMoEParallelConfig.make`` flattens the tensor ranks of every data-parallel rank into the MoE layer's
  ``tp_size`` = ``tp × dp`` and keeps it ("Tensors are sharded across 4 devices" at TP 2, DP 2, EP off), so each
  expert's weights are split over all ``N_t·N_d`` ranks while the attention and the dense layers are split over
  ``--tp`` in each replica; a mixture's replicas are then one engine (``DPEngineCoreProc``, vllm/v1/engine/core.py),
  each MoE layer run on every replica's tokens. The workload's ``expert_tp`` is ``"tp_x_dp"`` there by default
  (``--expert-tp split`` given keeps each replica a server of its own); the closed forms split the experts' weights
  over ``N_t·N_d`` (:func:`symllm.costs.parallel.shard`), their FLOPs and the bytes a step reads staying the
  replica's share (the replicas' tokens gathered into each MoE layer are not modelled). It serves only, as above.
"""
from __future__ import annotations

from symllm.arch.layers import layout_engine
from symllm.errors import SymllmError

__all__ = ["EXPERT_PARALLEL", "WITHOUT_EP", "declared", "without_ep", "check", "stated", "serves_only"]

#: the expert-parallel layouts an engine may declare (efficiency.json ``expert_parallel``)
EXPERT_PARALLEL = ("tp_x_dp_whole",)

#: how an engine may spread the experts without expert parallelism (efficiency.json ``experts_without_ep``)
WITHOUT_EP = ("tp_x_dp",)


def declared(name: str | None) -> str | None:
    """The expert-parallel layout the engine ``name`` declares (:data:`EXPERT_PARALLEL`), None for symllm's own
    (no engine named, a training engine, or an engine that declares none).

    >>> declared("vllm"), declared("megatron"), declared(None)
    ('tp_x_dp_whole', None, None)
    """
    return _declared(name, "expert_parallel", EXPERT_PARALLEL)


def without_ep(name: str | None) -> str | None:
    """How the engine ``name`` spreads each routed expert without expert parallelism where not over ``--tp`` alone
    (:data:`WITHOUT_EP`), None where over ``--tp`` (no engine named, or one that declares none).

    >>> without_ep("vllm"), without_ep("sglang"), without_ep(None)
    ('tp_x_dp', None, None)
    """
    return _declared(name, "experts_without_ep", WITHOUT_EP)


def _declared(name: str | None, key: str, known: tuple) -> str | None:
    """The layout the inference engine ``name`` declares under ``key`` in its efficiency.json entry (one of
    ``known``), None where none (or no engine named)."""
    if name is None:
        return None
    from symllm.costs.figures import engine
    layout = engine(name, "inference").get(key)
    if layout is not None and layout not in known:
        raise SymllmError(f"{key}: {layout!r} in {name}'s efficiency.json entry (known: {', '.join(known)})")
    return layout


def check(work) -> str:
    """``work``'s routed experts under tensor parallelism (``expert_tp``) as its engine's expert parallelism lays
    them out, or a one-line refusal of a layout the engine cannot run (module docstring): under symllm's own, ``ep``
    dividing ``dp``; under vLLM's, ``ep`` 1 or ``tp × dp``, the experts whole, and at ``ep`` 1 and ``dp`` above 1
    over ``tp × dp`` ranks unless ``split`` is given.

    >>> from symllm.costs.workloads import Workload
    >>> Workload(tp=2, dp=4, ep=8, engine="vllm").expert_tp, Workload(tp=2, dp=4, ep=4).expert_tp
    ('whole', 'split')
    >>> Workload(tp=2, dp=4, engine="vllm").expert_tp, Workload(tp=2, dp=4, engine="vllm", expert_tp="split").expert_tp
    ('tp_x_dp', 'split')
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
        spread = without_ep(work.engine) if work.ep == 1 and work.dp > 1 else None
        if work.expert_tp == "tp_x_dp" and spread != "tp_x_dp":
            raise SymllmError("expert_tp: tp_x_dp; only vLLM spreads the experts over --tp x --dp ranks, at --dp "
                              "above 1 without expert parallelism (--engine vllm --dp D --ep 1)")
        return spread if spread and "expert_tp" in work.derived else work.expert_tp
    ranks = work.tp * work.dp
    if work.ep != ranks:
        raise SymllmError(f"ep: {work.ep}; {work.engine}'s expert parallelism (--enable-expert-parallel) spans --tp x "
                          f"--dp = {ranks} ranks: give --engine {work.engine} --ep {ranks} or 1")
    if work.expert_tp != "whole" and "expert_tp" not in work.derived:
        raise SymllmError(f"expert_tp: {work.expert_tp}; {work.engine}'s expert parallelism keeps each routed expert "
                          "whole on its rank (give whole, or --ep 1)")
    return "whole"


def stated(work, config):
    """``work`` with its routed experts as ``config``'s model lays them out where ``expert_tp`` is not given: under
    ``--engine hf`` as transformers' plan for the family holds them (``experts`` in
    :attr:`symllm.arch.families.hf.Family.tp_plan`: gpt-oss's whole on every rank; the workload names what the
    layout holds so on every path, :func:`symllm.arch.specs.hf_plan`, and :mod:`symllm.costs.checks` refuses
    another given), and ``split`` where an engine would spread experts over ``tp × dp`` (:func:`without_ep`) but the
    model has none (:func:`symllm.costs.workloads.with_stated`'s part).

    >>> from symllm.arch.config import ModelConfig
    >>> from symllm.costs.workloads import Workload
    >>> dense = ModelConfig(vocab_size=8, dim=8, n_layers=1, n_heads=1, hidden_dim=8)
    >>> Workload(tp=2, dp=4, engine="vllm").expert_tp, stated(Workload(tp=2, dp=4, engine="vllm"), dense).expert_tp
    ('tp_x_dp', 'split')
    """
    if "expert_tp" not in work.derived:
        return work
    if work.expert_tp == "tp_x_dp" and not getattr(config, "n_experts", None):
        return work.replace(expert_tp="split")  # no experts to spread
    family = getattr(config, "tp_plan", None)
    if family is not None and layout_engine(work.engine) == "hf":
        from symllm.arch.families.hf import plan_of
        experts = (plan_of(family) or {}).get("experts")
        if experts is not None:
            return work.replace(expert_tp=experts)
    return work


def serves_only(work, experts: bool = True) -> str | None:
    """The one-line reason ``work``'s training figures are not answered: its ``--ep`` lies in an inference engine's
    own expert-parallel layout (:func:`declared`), or, for a model with routed ``experts``, its experts are spread
    over ``--tp × --dp`` ranks (:func:`without_ep`): either serves only; None where they are (symllm's own layout).

    >>> from symllm.costs.workloads import Workload
    >>> serves_only(Workload(tp=2, dp=4, ep=8, engine="vllm")), serves_only(Workload(tp=2, engine="vllm"))
    ("training: not in vllm's expert-parallel layout (it serves only)", None)
    >>> serves_only(Workload(tp=2, dp=4, engine="vllm")), serves_only(Workload(tp=2, dp=4, engine="vllm"), False)
    ("training: not in vllm's layout of the experts over --tp x --dp ranks (it serves only)", None)
    """
    if work.ep > 1 and declared(work.engine) is not None:
        return f"training: not in {work.engine}'s expert-parallel layout (it serves only)"
    if experts and work.expert_tp == "tp_x_dp":
        return f"training: not in {work.engine}'s layout of the experts over --tp x --dp ranks (it serves only)"
    return None

