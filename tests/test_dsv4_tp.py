"""DeepSeek-V4's tensor-parallel layout: transformers' plan (what symllm counts) against vLLM's (read by hand).

symllm lays DeepSeek-V4 out as transformers' plan does (``DeepseekV4Config.base_model_tp_plan``, transformers 5.23:
only the routed experts split; tests/test_tp_reductions.py). vLLM splits more. Its layout, read by hand in
vllm/model_executor/models/deepseek_v4.py at vllm-project/vllm commit 023da1fc828eb07787cf0734a1ba32f0a0f11887
(read 2026-11-29), the lines quoted:

* ``DeepseekV4Attention.__init__``: ``assert self.n_heads % tp_size == 0``, ``self.n_local_heads = self.n_heads //
  tp_size``, ``self.n_local_groups = self.n_groups // tp_size``;
  ``self.fused_wqa_wkv = MergedColumnParallelLinear(self.hidden_size, [self.q_lora_rank, self.head_dim], ...,
  disable_tp=True,  # fused ReplicatedLinear)``: ``wq_a`` and ``wkv`` replicated; ``self.q_norm = RMSNorm(...)``,
  ``self.kv_norm = RMSNorm(...)``: replicated; ``self.wq_b = ColumnParallelLinear(self.q_lora_rank, self.n_heads *
  self.head_dim, ...)``: column-wise (the rank's heads); ``self.wo_a = ColumnParallelLinear(self.n_heads *
  self.head_dim // self.n_groups, self.n_groups * self.o_lora_rank, ...)`` with ``self.wo_a.bmm_batch_size =
  self.n_local_groups``: column-wise over its output groups (the rank's ``o_groups / tp`` groups of ``o_lora_rank``
  rows); ``self.wo_b = RowParallelLinear(self.n_groups * self.o_lora_rank, self.hidden_size, ...)``: row-wise,
  ``reduce_results`` left at its default (True): one all-reduce of the residual stream a layer;
  ``padded_heads = max(self.n_local_heads, 64)``, ``self.attn_sink = nn.Parameter(torch.full((padded_heads,), ...,
  dtype=torch.float32))``: 64 slots a rank while the rank holds at most 64 heads (``load_weights`` copies
  ``loaded_weight[head_rank_start:head_rank_end]`` into the first ``n_local_heads``);
* ``DeepseekV4MoE.__init__``: the shared expert is a ``DeepseekV4MLP`` (``gate_up_proj = MergedColumnParallelLinear``,
  ``down_proj = RowParallelLinear``) built with ``reduce_results=self.use_mega_moe`` (False unless the MegaMoE
  backend) and handed to ``FusedMoE(shared_experts=self.shared_experts, ...)``: split like a dense MLP, summed with the
  routed experts' output in the mixture's one all-reduce; ``self.norm_gate = NormGateLinear(...)``: the router
  replicated;
* ``DeepseekV4DecoderLayer``: ``hc_attn_fn``, ``hc_ffn_fn``, their ``base`` and ``scale`` plain ``nn.Parameter``s
  (replicated, fp32); ``DeepseekV4Model``: ``VocabParallelEmbedding``, ``hc_head_*`` parameters (replicated), and
  ``DeepseekV4ForCausalLM``'s ``ParallelLMHead`` (the vocabulary split);
* the indexer and compressors, in vllm/model_executor/layers/deepseek_v4_attention.py (``DeepseekV4Indexer``: "# no
  tensor parallel, just replicated", ``self.wq_b = ReplicatedLinear(...)``, ``self.weights_proj =
  ReplicatedLinear(...)``; stored version 0a291a2e1074b13971361df76245548a4ea4a77d, the file is not stored at
  023da1fc8) and vllm/model_executor/layers/deepseek_compressor.py (``DeepseekCompressor``: ``self.fused_wkv_wgate =
  MergedColumnParallelLinear(..., disable_tp=True, ...)``, ``self.ape`` a plain fp32 ``nn.Parameter``, ``self.norm =
  RMSNorm(...)``; stored version 0de10a276eced6036e9752a223cba53c996d31cd): replicated.

So under vLLM a rank holds ``1/tp`` of ``wq_b``, ``wo_a``, ``wo_b`` and of the shared expert, where transformers'
plan keeps them whole, and a layer sends two all-reduces (``wo_b``'s and the mixture's), where transformers' sends
one. Which layout applies depends on the engine, and symllm's split is one declaration a part
(:class:`symllm.arch.components.Rules` ``split``) with no engine in it, so symllm keeps transformers' plan for every
workload, ``count --serve`` included (docs/serving.md, "Tensor parallelism under vLLM"; docs/parallel.md). These
tests pin both layouts by hand and show that vLLM's is expressible in symllm's split vocabulary once an engine can
choose it.
"""
import dataclasses

from symllm.arch import symbols as S
from symllm.arch.resolved import spec
from symllm.costs.parallel import reduced_sublayers

#: vLLM's split of the parts transformers' plan replicates (module docstring); every other part as symllm declares it
_VLLM_ATTENTION = {"wq_b": "column", "wo_a": "column", "wo_b": "row"}
_VLLM_SHARED_EXPERT = {"w1": "column", "w3": "column", "w2": "row"}


def _as_vllm(comp, parent: str = ""):
    """``comp`` with vLLM's split declared on the attention's ``wq_b``, ``wo_a``, ``wo_b`` and the shared expert's
    ``w1 w2 w3`` (:data:`_VLLM_ATTENTION`, :data:`_VLLM_SHARED_EXPERT`): a test's restatement of the hand reading,
    not a layout symllm offers."""
    table = {"attention": _VLLM_ATTENTION, "shared_experts": _VLLM_SHARED_EXPERT}.get(parent, {})
    rules = dataclasses.replace(comp.rules, split=table[comp.name]) if comp.name in table else comp.rules
    return comp.replace(rules=rules, children=tuple(_as_vllm(c, comp.name) for c in comp.children))


def test_vllm_split_sends_two_all_reduces_a_layer():
    """vLLM's layout (module docstring), declared on the parts' splits: deepseek-v4-flash-base's 43 layers send
    two all-reduces each in a forward pass, ``wo_b``'s and the mixture's (86); transformers' plan one, the
    mixture's (43)."""
    spc = spec("deepseek-v4-flash-base")
    values = {**spc.values(), S.N_t: 8, S.N_p: 1}
    assert reduced_sublayers(_as_vllm(spc.model())).subs(values) == 2 * 43
    assert reduced_sublayers(spc.model()).subs(values) == 43


def test_symllm_declares_transformers_plan_on_the_parts_vllm_splits():
    """The parts vLLM splits are replicated in symllm's declaration (transformers' plan), so the difference above
    is the layout, nothing else: were a part's split changed without an engine to choose it, this fails."""
    spc = spec("deepseek-v4-flash-base")
    splits = {}
    for block in spc.model().children:
        for c in block.walk():
            for parent, table in (("attention", _VLLM_ATTENTION), ("shared_experts", _VLLM_SHARED_EXPERT)):
                if c.name == parent:
                    splits.update({(parent, x.name): x.rules.split for x in c.children if x.name in table})
    assert set(splits.values()) == {"replicated"} and len(splits) == 6
