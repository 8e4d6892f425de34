"""The dtype a hybrid's recurrent (SSM) state is held in, per engine (symllm.arch.recurrent_sizes.SSM_STATE_DTYPES).

Expected numbers are hand arithmetic from vLLM's source, never from symllm:

* ``MambaStateDtypeCalculator._mamba_state_dtype`` (vllm/model_executor/layers/mamba/mamba_utils.py, vllm-project/vllm
  commit 02d710837549a368073552333f66d714477415d2): the conv state in the model's dtype; the temporal (SSM) state
  in the conv state's dtype while ``cache_config.mamba_ssm_cache_dtype`` is ``"auto"``, else in the dtype it names;
* the config hooks (vllm/model_executor/models/config.py as https://docs.vllm.ai/en/latest/api/vllm/model_executor/
  models/config/ shows it, read 2026-11-29): ``NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype`` sets it to
  the config's ``mamba_ssm_cache_dtype``, ``DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"`` where absent;
  ``Qwen3_5ForConditionalGenerationConfig`` (Qwen3.5 and Qwen3.5-MoE) to the text config's ``mamba_ssm_dtype``
  where stated; ``MODELS_CONFIG_MAP`` has no entry for ``Qwen3NextForCausalLM``, whose
  ``get_mamba_state_dtype_from_config`` (vllm/model_executor/models/qwen3_next.py at 002d6073aa034d4f5545d45021b0e56d1f3c3593)
  passes the cache config's ``"auto"``: the model's dtype;
* transformers keeps the fp32 state its torch paths return (memory.state_cache, unchanged: ``--engine hf``).
"""
import pytest

import symllm
from symllm.arch.config import from_hf, preset_info
from symllm.costs import serving
from symllm.errors import SymllmError

BUDGET = 100 * 2**30


def _state(config, engine: str | None = None, tp: int = 1) -> int:
    extra = {"engine": engine} if engine else {}
    return serving.capacity(config, gpu="h200", seq=8192, tp=tp, kv_cache_bytes=BUDGET, **extra)[
        "state_bytes_per_sequence"]


def test_qwen3_next_state_in_the_model_dtype_under_vllm_by_hand():
    """Qwen3-Next-80B-A3B (no mamba_ssm_dtype key, no vLLM hook) at tp 4, bf16: 36 Gated DeltaNet layers, each
    32/4 = 8 value heads of a 128 x 128 state in bf16 (2 bytes) and 4 - 1 = 3 columns of the rank's
    2·(16/4)·128 + (32/4)·128 = 2,048 conv channels in bf16; transformers' cache: the fp32 state, 4 columns, of
    every head (its plan gathers the projections' outputs: the core runs whole on each rank)."""
    assert "mamba_ssm_dtype" not in preset_info("qwen3-next-80b-a3b")["config"]
    vllm = 36 * (8 * 128 * 128 * 2 + 3 * 2048 * 2)
    hf = 36 * (32 * 128 * 128 * 4 + 4 * 8192 * 2)
    assert (vllm, hf) == (9_879_552, 77_856_768)
    assert _state("qwen3-next-80b-a3b", tp=4) == vllm
    assert _state("qwen3-next-80b-a3b", "hf", tp=4) == hf
    # the model's dtype: fp16 activations hold it in fp16 (2 bytes too), fp32 ones in fp32
    assert symllm.workload("qwen3-next-80b-a3b", seq=8, dtype="fp32")["memory"]["state_cache"] == \
        36 * (32 * 128 * 128 * 4 + 4 * 8192 * 4)


def _qwen35(**extra) -> dict:
    """A small Qwen3.5 text config: 4 layers (3 Gated DeltaNet, 1 full attention), 2 key and 4 value heads of 8."""
    return {"model_type": "qwen3_5_text", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 24,
            "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
            "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, **extra}


@pytest.mark.parametrize("stated, state_bytes", [(None, 2), ("float32", 4), ("bfloat16", 2)])
def test_qwen35_state_as_its_config_states(stated, state_bytes):
    """Qwen3.5 under vLLM: the text config's mamba_ssm_dtype where stated (vLLM's Qwen3.5 hook), else the model's
    bf16. 3 DeltaNet layers of 4 value heads of 8 x 8 and 3 columns of 2·2·8 + 4·8 = 64 channels in bf16."""
    raw = _qwen35(**({"mamba_ssm_dtype": stated} if stated else {}))
    assert _state(from_hf(raw)) == 3 * (4 * 8 * 8 * state_bytes + 3 * 64 * 2)
    assert _state(from_hf(raw), "hf") == 3 * (4 * 8 * 8 * 4 + 4 * 64 * 2)  # transformers: fp32, 4 columns


def test_presets_that_state_it_stay_fp32_under_vllm():
    """Qwen3.5-27B states mamba_ssm_dtype float32 and Nemotron-H-8B states nothing, which vLLM's Nemotron-H hook
    reads as float32: both keep the fp32 state under vLLM; only the convolution loses its column. Nemotron-H-8B:
    24 Mamba-2 layers of 128 heads x 64 x 128 states, 128·64 + 2·8·128 = 10,240 conv channels."""
    assert preset_info("qwen3.5-27b")["config"]["text_config"]["mamba_ssm_dtype"] == "float32"
    assert "mamba_ssm_cache_dtype" not in preset_info("nemotron-h-8b")["config"]
    assert _state("nemotron-h-8b") == 24 * (128 * 64 * 128 * 4 + 3 * 10240 * 2) == 102_137_856
    assert _state("nemotron-h-8b", "hf") == 24 * (128 * 64 * 128 * 4 + 4 * 10240 * 2)


def test_a_state_dtype_not_modelled_is_refused_in_one_line(capsys):
    with pytest.raises(SymllmError, match=r"^mamba_ssm_dtype: 'int8' is not modelled \(known: float32, bfloat16, "
                                          r"float16\)$"):
        from_hf(_qwen35(mamba_ssm_dtype="int8"))
