"""The part options are declared once (symllm.arch.part_options.OPTIONS), and what other places held by hand is
read from them or checked against them: the config's fields and defaults (ModelConfig), the structure a
config builds (spec_of), the parts each option adds to the component tree, the switches of the independent
torch reference (symllm/reference.py, which shares no code with the symbolic side: read as text here), and the
options tests/test_rules.py switches on."""
import dataclasses
import re
from pathlib import Path

import pytest

import symllm
from symllm.arch import components as C
from symllm.arch.config import ModelConfig, load, preset_names
from symllm.arch.layers import LayerKind, Structure, Variant
from symllm.arch.part_options import OPTIONS, option
from symllm.arch.specs import spec_of
from symllm.errors import SymllmError


def test_every_axis_field_is_one_options():
    """Each Structure, Variant and LayerKind field is set by exactly one option (or, for a kind field, by the
    options of its values), and each option's field exists."""
    axes = {"structure": Structure, "variant": Variant, "kind": LayerKind}
    for axis, cls in axes.items():
        declared = [o.field for o in OPTIONS if o.axis == axis]
        own = {f.name for f in dataclasses.fields(cls)} - ({"kinds", "variant"} if axis == "structure" else set())
        assert set(declared) == own, axis
        if axis != "kind":  # a kind field may have one option per value (window: sliding, chunked)
            assert len(declared) == len(set(declared)), axis
    assert len({o.name for o in OPTIONS}) == len(OPTIONS)


def test_config_fields_and_defaults_are_the_options():
    """Each option's config fields are ModelConfig fields with the defaults the option declares."""
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    for o in OPTIONS:
        for field, default in zip(o.config, o.default):
            assert field in defaults, (o.name, field)
            assert defaults[field] == default, (o.name, field)


@pytest.mark.parametrize("name", sorted(preset_names()))
def test_structure_of_each_preset_is_read_from_the_options(name):
    """spec_of builds every preset's structure from the options: each field is its option's value of the
    config, written out here by hand from the ModelConfig fields (the mapping the registry replaced)."""
    config = load(name)
    s = spec_of(config).structure
    assert (s.tied, s.attention_bias, s.mlp_bias, s.qkv_bias, s.qk_norm, s.hidden) == (
        config.tie_embeddings, config.attention_bias, config.mlp_bias, config.qkv_bias, config.qk_norm,
        config.hidden_rule)
    assert (s.shared_expert, s.latent, s.shared_experts, s.partial_rope, s.mtp, s.shared_gate, s.sinks) == (
        config.shared_expert, config.latent, config.n_shared_experts is not None,
        config.partial_rotary_factor is not None, config.n_mtp_layers > 0,
            # Qwen2-MoE's gated shared expert; Nemotron-H's shared expert of its own width has no gate
            config.shared_hidden_dim is not None and config.n_shared_experts is None,
        config.attention_sinks)
    assert (s.moe_bias, s.clamped, s.fused_lora) == (config.moe_bias, config.clamped_swiglu,
                                                     config.peft_fused_experts)
    assert s.value_width == (config.kv_lora_rank is None and config.v_head_dim is not None)
    assert s.variant == Variant(fused=config.fused, norms=config.norms, activation=config.activation,
                                norm_offset=config.norm_offset, embed_scale=config.embed_scale,
                                attn_softcap=config.attn_softcap is not None,
                                final_softcap=config.final_softcap is not None, layernorm=config.layernorm,
                                logit_scale=config.logit_scale is not None, value_norm=config.value_norm,
                                layer_scalar=config.layer_scalar, alibi=config.alibi)


def test_each_option_adds_the_parts_it_declares():
    """The parts an option declares are in the models with every part on and in no plain LLaMA model."""
    plain = {c.name for c in C.model().walk()}
    every = {c.name for every in (C.EVERY_PART, C.EVERY_FUSED, C.EVERY_LATENT_PART) for c in C.model(**every).walk()}
    for o in OPTIONS:
        assert set(o.parts) <= every - plain, o.name


def test_the_reference_reads_what_the_options_say_it_builds():
    """An option that says what the torch reference does with it is read there (``getattr(args, field``, or
    its kind field of ``args.layer_kinds()``); one that says nothing is not read (the reference would build
    something no declaration states)."""
    source = (Path(symllm.__file__).parent / "reference.py").read_text(encoding="utf-8")
    for o in OPTIONS:
        reads = [f for f in o.config if f != "layers" and re.search(rf'getattr\(args, "{f}"', source)]
        if o.axis == "kind" and re.search(rf"kind\.{o.field}\b", source):
            reads.append(o.field)
        assert bool(reads) == bool(o.reference), (o.name, reads)


def test_an_unknown_option_is_named():
    with pytest.raises(SymllmError, match="^option: unknown 'bias' "):
        option("bias")
