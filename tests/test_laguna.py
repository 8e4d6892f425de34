"""Laguna (transformers' ``LagunaForCausalLM``): RoPE per layer type, as its published configs state it.

Laguna's configs give ``rope_parameters`` per layer type: half of each head rotated in the full-attention
layers (YaRN), all of it in the sliding ones (LagunaConfig's defaults say the same: 0.5 and 1.0). Expected
numbers come from transformers' own classes (LagunaConfig, LagunaForCausalLM on the meta device, and on the
CPU under FlopCounterMode through its own cache), tests/elementwise_oracle.py (tests/test_elementwise.py draws
the per-type factors through ``strategies.laguna_configs``) and hand arithmetic written out here."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symllm
from symllm.api import by_kind
from symllm.arch.config import from_hf

from .conftest import assert_refused_in_one_line, requires
from .strategies import laguna_configs
from .test_dense_families import _generation_agrees
from .test_moe import _active_from_hf, _hf_kinds, _hf_model

#: the YaRN parameters of a Laguna full-attention layer's RoPE (a scaling changes no count)
_YARN = {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 32.0, "original_max_position_embeddings": 8192,
         "beta_slow": 1.0, "beta_fast": 64.0, "partial_rotary_factor": 0.5}


def _published_shape(**changes) -> dict:
    """A config.json as transformers writes it (LagunaConfig(...).to_dict(): every key the class holds) with the
    published configs' shape: one full-attention layer in four, the others sliding with more query heads, RoPE
    stated per layer type (YaRN on half of each head in the full layers, all of it in the sliding ones)."""
    transformers = requires("transformers")
    kwargs = {"layer_types": ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"] * 10,
              "num_attention_heads_per_layer": [48, 64, 64, 64] * 10,
              "rope_parameters": {"full_attention": _YARN,
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0,
                                                        "partial_rotary_factor": 1.0}},
              "moe_routed_scaling_factor": 2.5}
    return transformers.LagunaConfig(**{**kwargs, **changes}).to_dict()


def test_published_shape_equals_transformers_on_meta():
    """The published configs' shape is read (it was refused: its factor differs by layer type), and every kind
    of parameter, the total and the active count equal LagunaForCausalLM's on the meta device."""
    raw = _published_shape()
    measured = _hf_kinds(_hf_model(raw))
    measured["active"] = _active_from_hf(raw, measured)
    assert by_kind(symllm.params(from_hf(raw))) == measured


def test_published_shape_rope_and_kv_cache_by_hand():
    """A 1024-token prompt (b = 1, bf16). KV cache: 10 full layers hold 1024 positions, 30 sliding ones their
    last 512, each of 8 key/value heads of 128, keys and values: (10*1024 + 30*512) * 2*8*128 elements of 2
    bytes. RoPE (3 FLOPs a rotated element): rotating all of each head in the sliding layers, not half of it,
    adds 30 layers * 1024 tokens * (64 + 8) heads * (128 - 64) elements * 3."""
    cfg = from_hf(_published_shape())
    work = symllm.workload(cfg, batch=1, seq=1024)
    assert work["memory"]["kv_cache"] == (10 * 1024 + 30 * 512) * 2 * 8 * 128 * 2
    half = dict(_published_shape()["rope_parameters"])
    half["sliding_attention"] = {**half["sliding_attention"], "partial_rotary_factor": 0.5}
    halved = symllm.workload(from_hf(_published_shape(rope_parameters=half)), batch=1, seq=1024)
    assert work["flops"]["elementwise"] - halved["flops"]["elementwise"] == 30 * 1024 * (64 + 8) * (128 - 64) * 3
    assert work["flops"]["prefill"] - halved["flops"]["prefill"] == 0  # RoPE is element-wise work only


def test_count_says_which_layers_rotate_part_of_each_head(cli, tmp_path):
    """``symllm count`` of the published shape says where half of each head is rotated and where all of it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_published_shape()))
    r = cli(["count", str(path)])
    assert r.code == 0 and ("RoPE on 64 of each head's 128 in 10 of 40 layers, on all of it in the others"
                            in " ".join(r.out.split()))  # the description is wrapped


@given(laguna_configs(), st.integers(1, 2), st.integers(1, 10), st.integers(0, 3))
def test_prefill_decode_and_kv_equal_transformers(raw, b, s, n):
    """Random Laguna configs (a partial rotary factor per layer type drawn: one factor, or the whole head):
    prefill, the last decode step and the whole generation equal FlopCounterMode's over transformers' own loop
    (eager attention and experts, CPU), and the KV cache what its cache holds, but for the one position fewer
    each sliding layer keeps between steps once the window is full."""
    _generation_agrees(raw, b, s, n)


def test_two_partial_factors_are_refused_in_one_line(cli, tmp_path):
    """Two different partial factors (not 1.0) are not modelled: one line naming the key and the values."""
    rope = {"full_attention": {**_YARN, "partial_rotary_factor": 0.5},
            "sliding_attention": {"rope_type": "default", "partial_rotary_factor": 0.25}}
    raw = {"model_type": "laguna", "num_hidden_layers": 2, "layer_types": ["full_attention", "sliding_attention"],
           "rope_parameters": rope}
    assert_refused_in_one_line(cli, tmp_path, raw, "rope_parameters: partial_rotary_factor [0.25, 0.5] in two layer types")


@pytest.mark.parametrize("factor, start", [(0, "partial_rotary_factor: expected a number in (0, 1], got 0"),
                                           (True, "partial_rotary_factor: expected a number in (0, 1], got True")])
def test_bad_factor_is_refused(factor, start):
    raw = {"model_type": "laguna", "num_hidden_layers": 1, "layer_types": ["sliding_attention"],
           "rope_parameters": {"sliding_attention": {"partial_rotary_factor": factor}}}
    with pytest.raises(symllm.SymllmError, match=r"^" + start.replace("(", r"\(").replace("]", r"\]")):
        from_hf(raw)


def test_whole_rotation_needs_a_partial_rotary_elsewhere():
    """A layer kind rotating its whole head says something only beside a partial rotary: without one it is refused
    (and a config with one reads back from its dict)."""
    from symllm.arch.layers import LayerKind
    cfg = from_hf(_published_shape())
    assert symllm.ModelConfig(**json.loads(json.dumps(cfg.to_dict()))) == cfg
    layers = ((LayerKind(), 1), (LayerKind(window="sliding", rope_part="whole"), 1))
    with pytest.raises(symllm.SymllmError, match="^layers: a layer rotates its whole head"):
        symllm.ModelConfig(vocab_size=8, dim=8, n_layers=2, n_heads=2, sliding_window=4, layers=layers)
