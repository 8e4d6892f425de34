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
one. vLLM runs only where ``tp`` divides ``o_groups`` (``n_local_groups`` above; its forward divides the rank's heads
by them) and, for the shared expert's ``MergedColumnParallelLinear``, its width: the parts declare those as their
``units`` and every door refuses any other ``tp`` under vLLM's layout (the tests at the end).
symllm's parts declare transformers' plan as their ``split`` and vLLM's where it differs as their ``engines``
(:class:`symllm.arch.components.Rules`); a workload's engine lays the model out
(:func:`symllm.costs.parallel.layout`), ``count --serve`` by its engine (vLLM by default). These tests pin both
layouts by hand and check that symllm gives each for its engine.
"""
import json
from fractions import Fraction
from pathlib import Path

import pytest

import symllm

from symllm.arch import symbols as S
from symllm.arch.config import preset_info
from symllm.arch.resolved import spec
from symllm.costs import phases, serving
from symllm.costs.collectives import reduced_sublayers
from symllm.costs.parallel import layout, params_per_gpu

from .conftest import requires

#: vLLM's split of the parts transformers' plan replicates (module docstring), read by hand
_VLLM_ATTENTION = {"wq_b": "column", "wo_a": "column", "wo_b": "row"}
_VLLM_SHARED_EXPERT = {"w1": "column", "w3": "column", "w2": "row"}


#: deepseek-v4-flash-base (symllm/presets/deepseek-v4-flash-base.json, the published config.json)
d, r_q, n_h, d_h, r_o, g_o, V = 4096, 1024, 64, 512, 1024, 8, 129280
n_e, d_ff, n_I, d_I, n_hc = 256, 2048, 64, 128, 4
T = 8  # tensor ranks
#: how the output names symllm's default layout: transformers' plan as DeepseekV4ForCausalLM resolves it (5.23: the
#: embedding split by its rows, which PreTrainedModel.init_parallel_plans adds, the head by its columns)
PLAN = "transformers' plan"


def _hand(attention_split: bool, shared_split: bool) -> int:
    """Parameters tensor rank 0 of ``T`` holds of deepseek-v4-flash-base (43 layers: 2 sliding-window only, 21
    compressed sparse, 20 heavily compressed), written out from the shapes (module docstring; transformers' names
    in symllm/arch/components/compressed.py), the routed experts split over the ranks by their width (both layouts:
    vLLM's FusedMoE and transformers' ``packed_colwise``/``rowwise``), the embedding and head over the vocabulary."""
    split = T if attention_split else 1
    sinks = n_h  # transformers: n_h per layer, whole; vLLM: max(n_h/T, 64) = 64 = n_h slots at T = 8
    attention = (d * r_q + r_q                 # wq_a, q_a_norm (replicated in both)
                 + r_q * n_h * d_h // split    # wq_b
                 + d * d_h + d_h               # wkv, kv_norm (replicated in both)
                 + n_h * d_h * r_o // split    # wo_a: g_o groups of n_h·d_h/g_o inputs to r_o outputs
                 + g_o * r_o * d // split      # wo_b
                 + sinks)
    shared = 3 * d * d_ff // (T if shared_split else 1)
    mix = (2 + n_hc) * n_hc
    hyper = 2 * (mix * n_hc * d + mix + 3)     # attn_hc and ffn_hc: fn, base, scale
    layer = attention + 2 * d + d * n_e + n_e * 3 * d * d_ff // T + shared + hyper  # 2 norms, router, experts
    csa = (2 * d * 2 * d_h + 4 * 2 * d_h + d_h              # compressor: kv and gate, position bias (m_c = 4), norm
           + 2 * d * 2 * d_I + 4 * 2 * d_I + d_I            # the indexer's compressor
           + r_q * n_I * d_I + d * n_I)                     # the indexer's wq_b and weights_proj
    hca = 2 * d * d_h + 128 * d_h + d_h                     # compressor: kv and gate, position bias (m_h = 128), norm
    whole = 2 * V * d // T + d + n_hc * n_hc * d + n_hc + 1  # embedding, head, final norm, hc_head
    return 43 * layer + 21 * csa + 20 * hca + whole


def _values():
    spc = spec("deepseek-v4-flash-base")
    return spc, {**spc.values(), S.N_t: T, S.N_p: 1, S.N_e: 1}


def test_the_preset_is_the_config_the_hand_count_reads():
    """The hand count's numbers are the preset's config (43 layers: 2 window-only, 21 CSA, 20 HCA)."""
    c = preset_info("deepseek-v4-flash-base")["config"]
    assert (c["hidden_size"], c["q_lora_rank"], c["num_attention_heads"], c["head_dim"], c["o_lora_rank"],
            c["o_groups"], c["vocab_size"], c["n_routed_experts"], c["moe_intermediate_size"], c["index_n_heads"],
            c["index_head_dim"], c["hc_mult"], c["n_shared_experts"]) == (d, r_q, n_h, d_h, r_o, g_o, V, n_e, d_ff,
                                                                           n_I, d_I, n_hc, 1)
    ratios = c["compress_ratios"][:c["num_hidden_layers"]]
    assert (ratios.count(0), ratios.count(4), ratios.count(128)) == (2, 21, 20)


def test_per_gpu_weights_at_tp_8_follow_transformers_plan_by_hand_without_an_engine():
    """With no engine (and with an engine that declares no layout of its own: hf, sglang) symllm's per-GPU parameters
    at tp 8 are transformers' plan's (attention and shared expert whole on every rank): 41,008,334,423,
    82,016,668,846 bytes at bf16 = 76.38 GiB, one all-reduce a layer (the mixture's), 43."""
    spc, values = _values()
    for engine in (None, "hf", "sglang"):
        mdl = layout(spc.model(), engine)
        assert mdl is spc.model() or engine == "hf"  # hf: its lm_head gathered (colwise_gather_output), as a column
        assert params_per_gpu(mdl).subs(values) == _hand(attention_split=False, shared_split=False) == 41_008_334_423
        assert reduced_sublayers(mdl).subs(values) == 43
    assert round(2 * 41_008_334_423 / 2**30, 2) == 76.38


def test_engine_vllm_gives_its_per_gpu_weights_and_two_all_reduces_a_layer_by_hand():
    """Under engine vllm symllm lays the model out as vLLM does (module docstring): rank 0 at tp 8 holds
    36,274,013,783 parameters, 72,548,027,566 bytes at bf16 = 67.57 GiB (4,734,320,640 fewer than transformers'
    plan: per layer 7/8 of wq_b, wo_a and wo_b, 3 × 29,360,128, and of the shared expert, 22,020,096; × 43), and a
    forward pass sends two all-reduces a layer, 86."""
    spc, values = _values()
    vllm = layout(spc.model(), "vllm")
    assert params_per_gpu(vllm).subs(values) == _hand(attention_split=True, shared_split=True) == 36_274_013_783
    assert _hand(False, False) - _hand(True, True) == 43 * (3 * (r_q * n_h * d_h * 7 // 8) + 3 * d * d_ff * 7 // 8)
    assert round(2 * 36_274_013_783 / 2**30, 2) == 67.57
    assert reduced_sublayers(vllm).subs(values) == 2 * 43


def test_a_workload_counts_its_engines_layout():
    """``count --tp 8 --engine vllm`` (a workload's engine) gives vLLM's per-GPU parameters and weights; without one,
    transformers' plan's."""
    kw = dict(tp=8, seq=1)
    ours, vllm = phases.workload("deepseek-v4-flash-base", **kw), phases.workload("deepseek-v4-flash-base",
                                                                                  engine="vllm", **kw)
    assert (ours["params"]["per_gpu"], vllm["params"]["per_gpu"]) == (_hand(False, False), _hand(True, True))
    assert vllm["memory_per_gpu"]["weights"] == 2 * 36_274_013_783


def test_serve_at_tp_8_holds_vllms_weights_and_a_kv_cache_larger_by_the_difference():
    """``count --serve`` at tp 8 (vLLM, the serving default) subtracts the 67.57 GiB vLLM holds (docs/serving.md),
    and leaves the KV cache 2 × 4,734,320,640 bytes larger than under transformers' plan, all else the same."""
    spc = spec("deepseek-v4-flash-base")
    kw = dict(gpu="h200", tp=8)
    ours = serving.capacity(spc, **kw)
    plan = serving.capacity(spc, evaluate=lambda w: phases.workload(spc, w.replace(engine=None)), **kw)
    assert ours["weights"] == 72_548_027_566 and round(ours["weights"] / 2**30, 2) == 67.57
    assert plan["weights"] == 82_016_668_846
    assert ours["activation_peak"] == plan["activation_peak"]
    assert Fraction(ours["kv_cache_bytes"]) - Fraction(plan["kv_cache_bytes"]) == 2 * 4_734_320_640
    assert ours["kv_tokens"] > plan["kv_tokens"]


def test_symllm_declares_transformers_plan_and_vllms_split_on_the_parts_vllm_splits():
    """The parts vLLM splits declare transformers' plan (replicated) as their split and the hand reading's split for
    vLLM, and for no other engine; every other part declares no engine's split of its own, so the differences above
    are these six parts' layout, nothing else."""
    spc, _ = _values()
    tables = {"attention": _VLLM_ATTENTION, "shared_experts": _VLLM_SHARED_EXPERT}
    declared, others = {}, set()
    for block in spc.model().children:
        for c in block.walk():
            for x in c.children:
                if x.name in tables.get(c.name, {}):
                    declared[(c.name, x.name)] = (x.rules.split, x.rules.engines)
                elif x.rules.engines:
                    others.add(x.name)
    assert declared == {(p, x): ("replicated", (("vllm", split),)) for p, t in tables.items() for x, split in t.items()}
    assert not others


def test_the_output_names_the_layout_its_per_gpu_figures_are_in():
    """Where a part declares an engine's split, the workload and serving outputs name the layout their per-GPU figures
    are in (``tp_layout``), and that name is the layout whose hand count they hold: no engine (or one that lays out
    nothing: hf, sglang) transformers' plan, ``engine="vllm"`` and serving (vLLM by default) vLLM's. A model no part of
    which declares one (Llama 3.1 8B) has no ``tp_layout`` at all: its output is as before."""
    spc = spec("deepseek-v4-flash-base")
    plan, vllm = _hand(False, False), _hand(True, True)
    for engine, name, params in ((None, "transformers", plan), ("hf", "transformers", plan),
                                 ("sglang", "transformers", plan), ("vllm", "vllm", vllm)):
        w = phases.workload(spc, tp=8, seq=1, engine=engine)
        assert (w["tp_layout"], w["params"]["per_gpu"]) == (name, params)
    served = serving.capacity(spc, gpu="h200", tp=8)
    assert (served["tp_layout"], served["weights"]) == ("vllm", 2 * vllm)
    assert "tp_layout" not in phases.workload("llama3.1-8b", tp=8)
    assert "tp_layout" not in serving.capacity("llama3.1-8b", gpu="h200", tp=8)


def _lines(text: str, start: str) -> list[str]:
    """The lines of ``text`` that start with ``start``, their runs of spaces made one (the tables pad columns)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.startswith(start)]


def test_count_says_which_layout_each_per_gpu_figure_is_in(cli):
    """``count --tp 8 --serve`` without an engine prints transformers' plan's weights (76.38 GiB, by hand above) in its
    per-GPU table and times, and vLLM's (67.57 GiB) in its serving section, each door saying which; ``--engine vllm``
    gives vLLM's layout to every inference figure, said so, its training figures staying in transformers' plan (vLLM
    trains nothing: Megatron's step, tests/test_kind_layouts.py). The JSON holds the same names (``tp_layout``,
    ``training_tp_layout``)."""
    base = ["count", "deepseek-v4-flash-base", "--gpu", "h200", "--tp", "8", "--serve"]
    both = f"vLLM's layout (inference), {PLAN} (training)"
    for extra, table, times, weights in (([], f"{PLAN}; ", PLAN, "76.38 GiB"),
                                         (["--engine", "vllm"], "", both, "67.57 GiB")):
        r = cli(base + extra)
        assert r.code == 0, r.err
        assert _lines(r.out, "per GPU (") == [f"per GPU (tp 8, pp 1, dp 1; {table}routed experts split; a training "
                                              "step)"]
        assert _lines(r.out, "weights ")[1].endswith(weights)  # the per-GPU table's (the whole model's first)
        text = " ".join(r.out.split())
        assert f"efficiencies, vllm (training megatron) conventions, times in {times} (docs/efficiency.md)." in text
        assert (f"training_states, activations, training_peak and the bytes sent in {PLAN} (the training engine's); "
                "the other rows in vLLM's layout (the inference engine's)" in text) == bool(extra)
        assert _lines(r.out, "- weights") == ["- weights 67.57 GiB per GPU (tp 8, vLLM's layout)"]
        j = cli(base + extra + ["--json"])
        out = json.loads(j.out)
        assert (out["tp_layout"], out["training_tp_layout"], out["serving"]["tp_layout"]) == (
            "transformers" if not extra else "vllm", "transformers", "vllm")


def test_count_of_a_model_without_an_engine_split_names_no_layout(cli):
    """Llama 3.1 8B declares no engine's split: its per-GPU header, times and serving weights are as before, with no
    layout named, and its JSON has no ``tp_layout``."""
    base = ["count", "llama3.1-8b", "--gpu", "h200", "--tp", "8", "--serve"]
    r = cli(base)
    assert r.code == 0, r.err
    assert _lines(r.out, "per GPU (") == ["per GPU (tp 8, pp 1, dp 1; a training step)"]
    assert "efficiencies, vllm (training megatron) conventions (docs/efficiency.md)." in " ".join(r.out.split())
    assert _lines(r.out, "- weights") == ["- weights 1.87 GiB per GPU (tp 8)"]
    assert "layout" not in r.out
    out = json.loads(cli(base + ["--json"]).out)
    assert "tp_layout" not in out and "tp_layout" not in out["serving"]


def test_plan_and_report_name_the_layout_too(cli):
    """``plan`` and ``report`` say which layout their per-GPU figures are in, as count does: transformers' plan without
    an engine, vLLM's under ``--engine vllm`` (plan's JSON ``tp_layout``); Llama 3.1 8B's name none. (A report of
    DeepSeek-V4 at tp 8 ran into its per-GPU state cache, which had no title, and failed.)"""
    r = cli(["plan", "deepseek-v4-flash-base", "--gpus", "8xh200"])
    assert r.code == 0, r.err
    assert f"fused stack, bf16; {PLAN}): 3,328 layouts and batches" in " ".join(r.out.split())
    assert json.loads(cli(["plan", "deepseek-v4-flash-base", "--gpus", "8xh200", "--engine", "vllm", "--json"]).out)[
        "tp_layout"] == "vllm"
    assert "tp_layout" not in json.loads(cli(["plan", "llama3.1-8b", "--gpus", "8xh200", "--json"]).out)
    for extra, words in (([], PLAN), (["--engine", "vllm"], f"vLLM's layout (inference), {PLAN} (training)")):
        r = cli(["report", "deepseek-v4-flash-base", "--tp", "8", "--format", "markdown"] + extra)
        assert r.code == 0, r.err
        assert f"(ZeRO stage 0): 8 GPUs. Its per-GPU figures are in {words}. One GPU" in " ".join(r.out.split())
    r = cli(["report", "llama3.1-8b", "--tp", "8", "--format", "markdown"])
    assert "(ZeRO stage 0): 8 GPUs. One GPU" in " ".join(r.out.split())


def test_a_sweep_lays_the_model_out_as_count_does(cli):
    """``sweep --engine vllm --tp 8`` gives vLLM's per-GPU parameters and weights (the hand count), as count does;
    without an engine transformers' plan's, and says which on stderr. (The sweep built transformers' plan under every
    engine: 41,008,334,423 parameters where count said 36,274,013,783.)"""
    for extra, params, words in (([], _hand(False, False), f"per-GPU quantities in {PLAN}\n"),
                                 (["--engine", "vllm"], _hand(True, True), "inference per GPU in vLLM's layout\n"
                                  f"symllm: sweep: deepseek-v4-flash-base: training per GPU in {PLAN}\n")):
        r = cli(["sweep", "--base", "deepseek-v4-flash-base", "--tp", "8", "--quantity",
                 "params_per_gpu,weights_per_gpu", "--format", "jsonl"] + extra)
        assert r.code == 0, r.err
        assert f"symllm: sweep: deepseek-v4-flash-base: {words}" in r.err
        row = json.loads(r.out.splitlines()[0])
        counted = json.loads(cli(["count", "deepseek-v4-flash-base", "--tp", "8", "--json"] + extra).out)
        assert (row["params_per_gpu"], row["weights_per_gpu"]) == (params, 2 * params)
        assert (counted["params"]["per_gpu"], counted["memory_per_gpu"]["weights"]) == (params, 2 * params)


def test_the_memory_plot_names_the_layout():
    """The memory plot's per-GPU panel is titled with the layout its bars are in, as count's table is."""
    requires("matplotlib")
    from symllm.present import plots
    for engine, words in ((None, PLAN), ("vllm", f"vLLM's layout (inference), {PLAN} (training)")):
        fig = plots.memory("deepseek-v4-flash-base", tp=8, seq=1, engine=engine)
        assert fig.axes[0].get_title() == f"deepseek-v4-flash-base: memory per GPU (tp 8, pp 1, dp 1; {words})"
    assert plots.memory("llama3.1-8b", tp=8, seq=1).axes[0].get_title() == (
        "llama3.1-8b: memory per GPU (tp 8, pp 1, dp 1)")


def test_lora_at_tp_8_counts_the_workloads_model_under_either_engine():
    """``lora`` (count's LoRA numbers) builds the workload's model as every door does (phases.model_of: the engine's
    layout in), so it gives symllm.workload's numbers with and without engine vllm. Adapting ``wq_b`` and ``wo_b`` at
    rank 16 trains, by hand, 16·(r_q + n_h·d_h) + 16·(g_o·r_o + d) a layer × 43, plus the indexer's own ``wq_b``
    (r_q -> n_I·d_I) in the 21 compressed sparse layers: 34,799,616 parameters, fp32 adapters 4 bytes each. LoRA's
    memory is one GPU's whole model (symllm.costs.finetune: no layout applied to it), so the engine moves none of it;
    the per-GPU weights it does move (test above)."""
    from symllm.costs.finetune import lora
    trainable = 43 * 16 * (r_q + n_h * d_h + g_o * r_o + d) + 21 * 16 * (r_q + n_I * d_I)
    assert trainable == 34_799_616
    kw = dict(tp=8, seq=1024, lora_rank=16, lora_targets="wq_b,wo_b")
    got = {}
    for engine in (None, "vllm"):
        door, api = lora("deepseek-v4-flash-base", engine=engine, **kw), phases.workload("deepseek-v4-flash-base",
                                                                                          engine=engine, **kw)
        assert door["params"]["trainable"] == api["params"]["trainable"] == trainable
        assert door["memory"] == {k: api["memory"][k] for k in door["memory"]}
        assert door["memory"]["lora_adapter_weights"] == 4 * trainable
        assert api["memory_per_gpu"]["training_peak"] == door["memory"]["lora_total"]
        got[engine] = door
    assert got[None] == got["vllm"]


#: the preset's own config.json fields, read from the file (not through symllm): vLLM's layout needs tensor ranks that
#: divide ``o_groups`` (symllm.arch.components.compressed.VLLM_UNITS: ``n_local_groups = n_groups // tp_size``, no
#: assert, and the forward's ``heads_per_group = n_local_heads // n_local_groups`` fails at none a rank) as well as the
#: ``num_attention_heads`` (``assert self.n_heads % tp_size == 0``)
_PRESET = json.loads((Path(symllm.__file__).parent / "presets" / "deepseek-v4-flash-base.json").read_text())["config"]
_GROUPS, _HEADS = _PRESET["o_groups"], _PRESET["num_attention_heads"]


def _refusal(tp: int) -> str:
    return f"symllm: error: tp: {tp} ranks do not divide o_groups {_GROUPS} (vllm splits wo_a, wo_b by it)\n"


@pytest.mark.parametrize("tp", [t for t in (16, 32, 64) if _HEADS % t == 0 and _GROUPS % t])
def test_count_refuses_a_tp_vllms_layout_cannot_run(cli, tp):
    """``count --engine vllm`` at a tp that divides the 64 heads but not the 8 output groups is one line, exit 2 (it
    counted 16 ranks of half a group each); without an engine, or under sglang (transformers' plan: wo_a and wo_b
    whole on every rank), the same tp is counted."""
    r = cli(["count", "deepseek-v4-flash-base", "--tp", tp, "--engine", "vllm"])
    assert (r.code, r.err) == (2, _refusal(tp))
    for extra in ([], ["--engine", "sglang"]):
        r = cli(["count", "deepseek-v4-flash-base", "--tp", tp, *extra])
        assert r.code == 0, r.err


@pytest.mark.parametrize("door", [
    ["count", "deepseek-v4-flash-base", "--serve", "--gpu", "h200"],
    ["count", "deepseek-v4-flash-base", "--gpu", "h200", "--json"],
    ["report", "deepseek-v4-flash-base", "--format", "markdown"],
    ["derive", "--model", "deepseek-v4-flash-base", "--quantity", "memory"],
    ["sweep", "--base", "deepseek-v4-flash-base", "--seq", "1024,2048", "--quantity", "weights_per_gpu"],
    ["plot", "memory", "deepseek-v4-flash-base", "-o", "memory.png"],
], ids=lambda door: "-".join(door[:2]))
def test_every_door_that_takes_tp_refuses_it_alike(cli, door, tmp_path, monkeypatch):
    """serve, count's JSON, report, derive, sweep and plot refuse tp 16 under engine vllm with count's line, exit 2;
    ``count --serve`` without an engine too (vLLM's layout is the serving default)."""
    if door[0] == "plot":
        requires("matplotlib")
    monkeypatch.chdir(tmp_path)
    r = cli(door + ["--tp", 16, "--engine", "vllm"])
    assert (r.code, r.err) == (2, _refusal(16))
    if "--serve" in door:
        assert (cli(door + ["--tp", 16]).err) == _refusal(16)


def test_the_shared_experts_width_is_checked_where_the_routed_experts_stay_whole(cli, tmp_path):
    """vLLM's shared expert is a ``MergedColumnParallelLinear`` (``assert all(output_size % self.tp_size == 0 ...)``,
    vllm/model_executor/layers/linear.py): with the routed experts whole (``--expert-tp whole``, whose width is then not
    checked) a shared width of 2044 = 4·511 is refused at tp 8 (2044 = 8·255 + 4) and counted at tp 4, and without an
    engine (transformers' plan: the shared expert whole on every rank) counted at tp 8."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_PRESET, "moe_intermediate_size": 2044, "n_shared_experts": 1}))
    r = cli(["count", path, "--tp", 8, "--engine", "vllm", "--expert-tp", "whole"])
    assert (r.code, r.err) == (2, "symllm: error: tp: 8 ranks do not divide shared_hidden_dim 2044 (vllm splits w1, "
                                  "w2, w3 by it)\n")
    for tp, extra in ((4, ["--engine", "vllm"]), (8, [])):
        r = cli(["count", path, "--tp", tp, "--expert-tp", "whole", *extra])
        assert r.code == 0, r.err


def test_a_count_from_kept_kernels_refuses_it_too(cli, monkeypatch):
    """A count of a shape counted before reads the kept kernels (symllm.studies.quick) with no component tree: tp 16
    under engine vllm after tp 8 reads tp 8's kernels and is still refused (it was counted: the kept entry's checks
    knew nothing of the output groups)."""
    from symllm.studies import quick
    read = []
    real = quick.cache_get

    def spy(kind, key):
        got = real(kind, key)
        read.append((kind, got is not None))
        return got
    monkeypatch.setattr(quick, "cache_get", spy)
    assert cli(["count", "deepseek-v4-flash-base", "--tp", 8, "--engine", "vllm", "--seq", 77]).code == 0
    read.clear()
    r = cli(["count", "deepseek-v4-flash-base", "--tp", 16, "--engine", "vllm", "--seq", 77])
    assert ("workload", True) in read
    assert (r.code, r.err) == (2, _refusal(16))


def test_plan_under_vllm_proposes_only_a_tp_dividing_the_output_groups(cli):
    """``plan --engine vllm`` of 16 H200s skips tp 16 (it ranked it: 256 of its 8,960 layouts); every row's tp divides
    the preset's own o_groups and heads, and the layouts at each tp that does are all there (tp 8 among them). Without
    an engine (transformers' plan) tp 16 stays."""
    out = json.loads(cli(["plan", "deepseek-v4-flash-base", "--gpus", "16xh200", "--engine", "vllm", "--json"]).out)
    tps = {row["tp"] for row in out["rows"]}
    assert tps and all(_GROUPS % tp == 0 and _HEADS % tp == 0 for tp in tps) and 8 in tps
    plain = json.loads(cli(["plan", "deepseek-v4-flash-base", "--gpus", "16xh200", "--json"]).out)
    assert 16 in {row["tp"] for row in plain["rows"]}
    # tp 16 of 16 GPUs (pp 1, dp 1, ep 1) skipped, at each batch 1 to 256; vLLM's own expert parallelism (ep = tp x dp,
    # symllm.costs.expert_layout) tried at tp 2 (pp 1, 2, 4, 8), tp 4 (pp 1, 2, 4) and tp 8 (pp 1, 2): 9 layouts more
    assert out["layouts"] - plain["layouts"] == 9 * 256 - 256
