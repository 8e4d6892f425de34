"""A component declares its own rules (symllm.arch.components.Rules): its tensor-parallel split, its LoRA
names, its kind of weight and the stacks that model it; parallel, finetune and stacks read them.

Expected values: transformers' own tensor-parallel plans (``base_model_tp_plan``, ``_tp_plan``) and the
``nn.Linear`` modules of its ``LlamaForCausalLM`` built on the meta device, and hand arithmetic for the
layers built here on the fly.
"""
import inspect
import itertools
from pathlib import Path

import pytest
import sympy as sp

from symllm.arch import components as C
from symllm.arch import symbols as S
from symllm.arch.components import Component, Rules, linear
from symllm.arch.layers import ACTIVATIONS, NORMS
from symllm.arch.part_options import OPTIONS as REGISTRY
from symllm.costs import finetune, parallel, stacks
from symllm.costs.peft_targets import lora_targets
from symllm.costs.workloads import STACKS, Workload
from symllm.errors import SymllmError

from .conftest import requires

def _kinds(models: tuple) -> tuple:
    """The layer kinds to build, from the registry's kind options (symllm.arch.part_options) that go with
    ``models``: each of an option's choices as one layer beside a plain dense one (a dense width d_fd beside
    MoE; a window, a layer without RoPE, a temperature, a linear-attention mixer in a model with attention)."""
    return tuple((C.LayerKind(), C.LayerKind(**{o.field: c})) for o in REGISTRY
                 if o.axis == "kind" and o.models in models for c in o.choices)


def _variants() -> tuple:
    """The variants to build, from the registry's variant options: the i-th sets every option to its i-th
    choice (cycling through shorter lists), so each choice of each option is in one of them."""
    options = [o for o in REGISTRY if o.axis == "variant"]
    return tuple(C.Variant(**{o.field: o.choices[i % len(o.choices)] for o in options})
                 for i in range(max(len(o.choices) for o in options)))


#: every structural option of components.model(), each switched on (its choices where it has several): the
#: registry's (symllm.arch.part_options), with the kinds and the variants derived from it as well
OPTIONS = {
    **{o.field: o.choices for o in REGISTRY if o.axis == "structure" and o.models in ("gqa", "both")},
    "causal": (True,),
    "kinds": _kinds(("gqa", "both")) + (
        # Gemma 4: sliding layers of the model's head shape beside full ones of their own, keys as values
        (C.LayerKind(window="sliding"), C.LayerKind(heads="own", k_eq_v=True)),
        # Gemma 4 E2B/E4B: its last layers reuse earlier ones' keys and values, their MLP doubled
        (C.LayerKind(window="sliding"), C.LayerKind(heads="own"), C.LayerKind(window="sliding", kv_shared=True,
                                                                              wide_ffn=True)),
        # MiMo-V2-Flash: sliding layers of their own shape with sinks beside full ones
        (C.LayerKind(window="sliding", heads="own", sinks=True), C.LayerKind(ffn="moe")),
        # Nemotron-H's one-sublayer blocks: a Mamba-2 mixer, an attention without RoPE, an MLP
        (C.LayerKind(mixer="mamba", ffn="none"), C.LayerKind(rotary=False, ffn="none"), C.LayerKind(mixer="none"))),
    "variant": _variants(),
}
#: the options of a model with latent attention (DeepSeek), which excludes some of OPTIONS' (q/k/v biases,
#: QK-norm, windows, Llama 4's shared expert and layers without RoPE)
LATENT_OPTIONS = {**{o.field: o.choices for o in REGISTRY if o.axis == "structure" and o.models in ("latent", "both")},
                  "causal": (True,), "kinds": _kinds(("latent", "both"))}


def _every_model():
    """model() once for each combination of OPTIONS' (and LATENT_OPTIONS') choices, and once with no option."""
    yield C.model()
    for options in (OPTIONS, LATENT_OPTIONS):
        for values in itertools.product(*options.values()):
            chosen = dict(zip(options, values))
            if chosen.get("indexer") and chosen.get("latent") != "q_lora":  # DSA's indexer reads the query latent
                continue
            if not chosen.get("indexer") and any(k.shared_topk for k in chosen.get("kinds", ())):  # GLM-5's, with DSA
                continue
            yield C.model(**chosen)


def test_options_cover_every_model_switch():
    """A new option of model() fails here until OPTIONS switches it on (so the walk below sees its parts): a
    structural option, a layer kind's value or a variant's is switched on by its test choices in the registry."""
    options = set(C.Structure.__dataclass_fields__) | {"causal"}
    assert options == set(OPTIONS) | set(LATENT_OPTIONS) and options >= set(C.EVERY_PART)
    kinds = {kind for options in (OPTIONS, LATENT_OPTIONS) for choice in options["kinds"] for kind in choice}
    for field in C.LayerKind.__dataclass_fields__:  # a new LayerKind field: OPTIONS draws each of its values
        assert {getattr(k, field) for k in kinds} >= {getattr(C.LayerKind(), field), *(
            {"ffn": C.FFNS, "rotary": (True, False), "window": C.WINDOWS, "temperature": (True, False),
             "mixer": C.MIXERS, "heads": C.HEADS, "k_eq_v": (True, False),
             "sinks": (True, False), "kv_shared": (True, False), "wide_ffn": (True, False),
             "shared_topk": (True, False), "rope_part": C.ROPE_PARTS}[field])}, field
    for field, known in (("norms", NORMS), ("activation", ACTIVATIONS)):  # a new value of a variant's: drawn too
        assert {getattr(C.Variant(), field)} | {getattr(v, field) for v in OPTIONS["variant"]} == set(known), field
    for o in REGISTRY:  # each kind and variant option switches its field away from LLaMA's layer in some model
        plain = {"kind": C.LayerKind(), "variant": C.Variant()}.get(o.axis)
        if plain is not None:
            assert set(o.choices) - {getattr(plain, o.field)}, o.name


def test_every_linear_declares_a_split_a_lora_decision_and_a_stack_rule():
    """With every option switched on, each linear (anything with a shape) declares how tensor parallelism
    splits it, whether and under which names LoRA adapts it, and which stacks model it; anything holding
    parameters declares a split, a kind of weight and its Hugging Face name; every named stack exists."""
    seen = set()
    for mdl in _every_model():
        for c in mdl.walk():
            where = f"{c.name} in {mdl.children[1].name}"
            if c.shape:
                seen.add(c.name)
                assert c.rules.split in C.SPLITS, where
                assert c.rules.lora is not None and len(c.rules.lora) in (0, 2), where
                assert c.rules.stacks is not None, where
            if c.params != 0:
                assert c.rules.split is not None and c.rules.weight != "none", where
                # a checkpoint names it: its own Hugging Face module name, the HF name a linear gives LoRA, or
                # its parameters' names on its parent's module
                assert c.rules.hf or (c.shape and c.rules.lora) or c.rules.hf_params, where
            assert set(c.rules.stacks or ()) <= set(STACKS) - {"ideal"}, where
    assert seen == {"wq", "wk", "wv", "wo", "w1", "w2", "w3", "router", "lm_head", "wqkv", "w13", "shared_expert_gate",
                    "wq_a", "wq_b", "wkv_a", "wkv_b", "in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z",
                    "in_proj_b", "in_proj_a", "out_proj", "in_proj", "index_wq_b", "index_wk", "index_weights", "wg",
                    "per_layer_model_projection", "per_layer_gate", "per_layer_projection", "per_layer_embedding",
                    "fc1_latent_proj", "fc2_latent_proj",
                    # DeepSeek-V4's attention, compressors and indexer
                    "wkv", "wo_a", "wo_b", "compress_kv", "compress_gate", "index_kv", "index_gate",
                    "router_proj"}


def test_a_linear_cannot_be_built_without_its_rules():
    """The factory refuses a linear that leaves its split, its LoRA decision or its stacks undeclared."""
    with pytest.raises(TypeError):
        linear("wz", S.d, S.d)  # noqa: the rules are a required keyword
    for missing in ("split", "lora", "stacks"):
        full = dict(split="column", lora=(), stacks=())
        full[missing] = None
        with pytest.raises(SymllmError, match=f"linear: wz declares no .*Rules.{missing}"):
            linear("wz", S.d, S.d, rules=Rules(**full))
    with pytest.raises(SymllmError, match="split: unknown 'colwise'"):
        Rules("colwise")


def test_declared_splits_are_transformers_tensor_parallel_plans(torch):
    """Each LLaMA linear's split is the one transformers' own plans give its HF name (``colwise`` ->
    column, ``rowwise`` -> row; the lm_head ``colwise_gather_output``); Mixtral's router (``mlp.gate``) is
    in no plan: replicated; Qwen3's q/k norms are replicated."""
    transformers = requires("transformers")
    plan = {k.rsplit(".", 1)[-1]: v for k, v in transformers.LlamaConfig.base_model_tp_plan.items()}
    mdl = C.model(kinds=(C.LayerKind(), C.LayerKind(ffn="moe")), shared_expert=True, qk_norm="rmsnorm")
    checked = 0
    for c in mdl.walk():
        if c.rules.lora:
            style = plan[c.rules.lora[1]]
            assert c.rules.split == {"colwise": "column", "rowwise": "row"}[style], c.name
            checked += 1
    assert checked == 2 * 4 + 3 + 3  # two groups' attentions, the dense feed-forward, the shared expert
    head = transformers.LlamaForCausalLM._tp_plan["lm_head"]
    assert head.startswith("colwise") and mdl.child("lm_head").rules.split == "column"
    mixtral = transformers.MixtralConfig.base_model_tp_plan
    assert not any(k.endswith(".gate") for k in mixtral)
    assert mdl.child("moe_block/moe/router").rules.split == "replicated"
    qwen3 = transformers.Qwen3Config.base_model_tp_plan
    assert qwen3["layers.*.self_attn.q_norm"].startswith("replicated")
    assert mdl.child("block/attention/q_norm").rules.split == "replicated"


def test_lora_names_are_llama_for_causal_lm_linears(torch):
    """The HF names LoRA may target are exactly the nn.Linear leaf names of transformers'
    LlamaForCausalLM, Phi3ForCausalLM (its fused qkv_proj and gate_up_proj), Qwen2MoeForCausalLM (its
    shared_expert_gate), DeepseekV3ForCausalLM (its latent attention), Qwen3NextForCausalLM and
    Qwen3_5ForCausalLM (their Gated DeltaNet's projections), NemotronHForCausalLM (its Mamba-2 in_proj),
    DeepseekV4ForCausalLM (its attention's, compressors' and indexer's projections; its grouped o_a_proj is a
    Linear), DeepseekV32ForCausalLM (its indexer's wq_b, wk, weights_proj) but their lm_head (which PEFT leaves
    alone by default), and each maps to one symllm name."""
    transformers = requires("transformers")
    sizes = dict(vocab_size=64, pad_token_id=0, hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=4,
                 num_key_value_heads=2)
    mla = lambda **kw: transformers.DeepseekV3Config(**{**kw, "num_hidden_layers": 2, "num_key_value_heads": 4},  # noqa: E731
                                                     q_lora_rank=8, kv_lora_rank=8, qk_rope_head_dim=4,
                                                     qk_nope_head_dim=4, v_head_dim=4, n_routed_experts=2,
                                                     num_experts_per_tok=1, n_group=1, topk_group=1,
                                                     first_k_dense_replace=1, moe_intermediate_size=8)
    leaves = set()
    for cls, config in ((transformers.LlamaForCausalLM, transformers.LlamaConfig),
                        (transformers.Phi3ForCausalLM, transformers.Phi3Config),
                        (transformers.Qwen2MoeForCausalLM, lambda **kw: transformers.Qwen2MoeConfig(**kw, num_experts=2)),
                        (transformers.DeepseekV3ForCausalLM, mla),
                        (transformers.DeepseekV32ForCausalLM, lambda **kw: transformers.DeepseekV32Config(
                            **mla(**kw).to_dict() | {"index_n_heads": 2, "index_head_dim": 8, "index_topk": 2})),
                        (transformers.Qwen3NextForCausalLM, lambda **kw: transformers.Qwen3NextConfig(
                            **{**kw, "num_hidden_layers": 2}, full_attention_interval=2, num_experts=2,
                            num_experts_per_tok=1)),
                        (transformers.Qwen3_5ForCausalLM, lambda **kw: transformers.Qwen3_5TextConfig(
                            **{**kw, "num_hidden_layers": 2}, full_attention_interval=2)),
                        (transformers.NemotronHForCausalLM, lambda **kw: transformers.NemotronHConfig(
                            **{k: v for k, v in kw.items() if k != "num_hidden_layers"}, head_dim=8,
                            hybrid_override_pattern="M*-", mamba_num_heads=4, mamba_head_dim=8, n_groups=2,
                            ssm_state_size=4)),
                        (transformers.DeepseekV4ForCausalLM, lambda **kw: transformers.DeepseekV4Config(
                            **{**kw, "num_hidden_layers": 3, "num_key_value_heads": 1}, head_dim=16, q_lora_rank=8,
                            qk_rope_head_dim=4, n_routed_experts=2, num_experts_per_tok=1, moe_intermediate_size=8,
                            o_groups=2, o_lora_rank=6, index_n_heads=2, index_head_dim=8, index_topk=2,
                            sliding_window=8, layer_types=["sliding_attention", "heavily_compressed_attention",
                                                           "compressed_sparse_attention"],
                            compress_rates={"compressed_sparse_attention": 2, "heavily_compressed_attention": 4}))):
        with torch.device("meta"):
            hf = cls(config(**sizes))
        leaves |= {name.rsplit(".", 1)[-1] for name, m in hf.named_modules() if isinstance(m, torch.nn.Linear)}
    declared = {c.rules.lora for every in (C.EVERY_PART, C.EVERY_FUSED, C.EVERY_LATENT_PART)
                for c in C.model(**every).walk() if c.rules.lora}
    assert leaves - {"lm_head"} == {hf for _, hf in declared}
    assert len({ours for ours, _ in declared}) == len(leaves - {"lm_head"})
    # an HF name that is symllm's own name of another linear keeps symllm's meaning: the sparse-attention
    # indexer's wq_b (the latent attention's q_b_proj) and wk (GQA's k_proj), spelled index_wq_b and index_wk
    own = {ours for ours, _ in declared}
    assert {(ours, hf) for ours, hf in declared if hf in own and hf != ours} == {("index_wq_b", "wq_b"),
                                                                                 ("index_wk", "wk")}
    assert all(C.lora_names()[hf] == (hf if hf in own else ours) for ours, hf in declared)


def test_default_lora_targets_are_the_declared_names():
    """The default ``wq,wv`` (returned without building components) is what the declarations make of
    PEFT's Llama default ``q_proj,v_proj``; an unknown name points to the page that lists every declared
    one (docs/finetuning.md, checked here to hold them all)."""
    assert lora_targets("v_proj, q_proj") == Workload().lora_targets == "wq,wv"
    with pytest.raises(SymllmError, match="unknown 'qkv' .*see docs/finetuning.md"):
        lora_targets("qkv")
    page = (Path(__file__).parent.parent / "docs" / "finetuning.md").read_text(encoding="utf-8")
    assert [name for name in C.lora_names() if f"`{name}`" not in page] == []


def _extra_linear(split: str, name: str = "wz", lora: tuple = ()):
    r = sp.Symbol("r", integer=True, positive=True)
    return r, linear(name, S.d, r, rules=Rules(split, lora=lora, weight="linear", stacks=()))


@pytest.mark.parametrize("split, expected", [
    ("column", lambda r: S.d * sp.ceiling(r / S.N_t)),
    ("row", lambda r: sp.ceiling(S.d / S.N_t) * r),
    ("replicated", lambda r: S.d * r),
])
def test_a_new_linear_is_split_as_it_declares(split, expected):
    """A linear parallel.py has never heard of, of a dimension it has no substitution for, is split by
    its declaration alone: column d·⌈r/N_t⌉, row ⌈d/N_t⌉·r, replicated d·r (hand arithmetic)."""
    r, extra = _extra_linear(split)
    assert parallel.shard(extra).params == expected(r)


def test_a_split_is_read_from_the_rules_not_the_name():
    """A linear called ``lm_head`` declared replicated keeps its whole weight; one called ``gate``
    declared column is split; a block with an extra column-split linear all-reduces one more input
    gradient per layer in backward: (N_t-1)/N_t · L · 2·β_a·b·s·d more bytes sent (hand arithmetic)."""
    fake_head = linear("lm_head", S.d, S.V, rules=Rules("replicated", lora=(), stacks=()))
    assert parallel.shard(fake_head).params == S.d * S.V
    r, gate = _extra_linear("column", "gate")
    assert parallel.shard(gate).params == S.d * sp.ceiling(r / S.N_t)

    mdl = C.model()
    blk = mdl.children[1]
    attn = blk.child("attention")
    wider = blk.replace(children=tuple(
        c.replace(children=c.children + (gate,)) if c is attn else c for c in blk.children))
    bigger = mdl.replace(children=(mdl.children[0], wider, *mdl.children[2:]))
    vals = {S.N_t: 4, S.N_p: 1, S.N_d: 1, S.L: 3, S.b: 2, S.s: 8, S.d: 16, S.beta_a: 2, S.V: 100, S.d_ff: 48,
            S.n_h: 4, S.n_kv: 2, S.d_h: 4, r: 12}
    more = (parallel.comm(bigger)["tp"] - parallel.comm(mdl)["tp"]).subs(vals)
    assert more == sp.Rational(3, 4) * 3 * 2 * 2 * 2 * 8 * 16
    extra_params = (parallel.params_per_gpu(bigger) - parallel.params_per_gpu(mdl)).subs(vals)
    assert extra_params == 3 * 16 * 3  # L · d · ⌈12/4⌉


def test_lora_and_qlora_read_the_declarations():
    """LoRA adapts the linear that declares a target, whatever it is called (r·(fan_in + fan_out)
    trainable parameters); QLoRA's NF4 stores the weights declared "linear" only."""
    r, odd = _extra_linear("column", "odd_name", lora=("wq", "q_proj"))
    parent = Component("model", children=(odd,))
    assert finetune.trainable(parent, "q_proj", 8) == 8 * (S.d + r)
    router_like = linear("wq", S.d, S.d, rules=Rules("replicated", lora=(), weight="router", stacks=()))
    assert finetune.quantized(Component("model", children=(router_like, odd))) == S.d * r
    with pytest.raises(SymllmError, match="no linear layer of this model"):
        finetune.adapt(Component("model", children=(router_like,)), "wq")


def test_a_stack_refuses_what_no_rule_gives_it():
    """A component whose rules do not name a stack is refused by it in one line naming the component
    (its label, or its name); the ideal stack is every component's own."""
    mdl = C.model()
    extra = mdl.replace(children=mdl.children + (Component("extra_bias", params=S.d),))
    labelled = mdl.replace(children=mdl.children + (Component("x", params=S.d, rules=Rules(label="a new thing")),))
    for stack in ("hf-eager", "hf-sdpa"):
        stacks.activations(mdl, stack)
        with pytest.raises(SymllmError, match=f"^stack: {stack} does not model extra_bias yet$"):
            stacks.activations(extra, stack)
        with pytest.raises(SymllmError, match="a new thing"):
            stacks.inference_peak(labelled, stack)


def _component_names() -> set[str]:
    """Every component name, path and path prefix of the models with every option switched on."""
    out = {p for p in C.COMPONENTS.values() if p}
    for every in ({}, C.EVERY_PART, C.EVERY_FUSED, C.EVERY_LATENT_PART):
        mdl = C.model(**every)
        out |= {c.name for c in mdl.walk()}
        for path in mdl.breakdown():
            parts = path.split("/")
            out |= {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return out


def _dispatches_on_a_name(node, names: set[str]) -> str | None:
    """The code of ``node`` if it picks a component by its name or path: a comparison of a name, path or
    label (``c.name == "lm_head"``, ``t.component in (...)``) with a literal component name, a prefix or
    suffix test with one (``path.startswith("block/")``), ``.child("...")`` or ``breakdown()["..."]``."""
    import ast

    def literal(n):
        values = [n] if isinstance(n, ast.Constant) else list(getattr(n, "elts", ())) if isinstance(
            n, (ast.Tuple, ast.List, ast.Set)) else []
        return any(isinstance(v, ast.Constant) and isinstance(v.value, str)
                   and v.value.strip("/") in names for v in values)

    def named(n):
        text = ast.unparse(n)
        return any(word in text for word in ("name", "component", "path"))

    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        if any(literal(a) for a in sides) and any(named(a) for a in sides if not literal(a)):
            return ast.unparse(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("startswith", "endswith", "removeprefix", "removesuffix", "child") and \
                any(literal(a) for a in node.args) and (node.func.attr == "child" or named(node.func.value)):
            return ast.unparse(node)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "breakdown" and literal(node.slice):
        return ast.unparse(node)
    return None


def test_no_cost_rule_dispatches_on_a_component_name():
    """No code in symllm/costs picks a component by its name or path (docstrings aside): what a cost rule
    needs of a component is declared by it (Rules: split, LoRA names, weight kind, stacks and what each
    keeps) or read from the tree's structure, its file-format names too (Rules.hf, Rules.gguf)."""
    import ast
    from pathlib import Path

    import symllm.costs

    names = _component_names()
    assert {"lm_head", "block", "block/attention/rope", "embedding", "model"} <= names
    found = []
    for path in sorted(Path(symllm.costs.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            code = _dispatches_on_a_name(node, names)
            if code:
                found.append(f"{path.name}:{node.lineno}: {code}")
    assert not found, "\n".join(found)


def test_the_name_dispatch_check_sees_what_it_looks_for():
    """The check above flags each form of a look-up by name it names (so an empty finding means something)."""
    import ast

    names = _component_names()
    flagged = ['t.component.startswith("block/")', 't.component == "lm_head"', 'mdl.name != "model"',
               'mdl.child("lm_head")', 'm.breakdown()["block/attention/wq"]', 'c.name in ("wq", "wk")',
               'path.endswith("/rope")']
    left = ['c.rules.weight == "embedding"', 'fmt.startswith("gguf:")', 'kind == "training_peak"',
            'c.name == other']
    for code in flagged:
        assert _dispatches_on_a_name(ast.parse(code, mode="eval").body, names), code
    for code in left:
        assert not _dispatches_on_a_name(ast.parse(code, mode="eval").body, names), code
