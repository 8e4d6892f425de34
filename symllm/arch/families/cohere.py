"""The ``cohere`` family: transformers' ``CohereForCausalLM`` (Command-R, Command-R+).

A parallel block (``CohereDecoderLayer``): one norm, ``input_layernorm``, whose output both the attention and
the SwiGLU read, their outputs added to the residual together (``norms="parallel"``); every norm is Cohere's
LayerNorm, the mean subtracted, a weight and no bias (``layernorm``; ``layer_norm_eps``); the logits are
multiplied by ``logit_scale`` (default 0.0625; null is refused: transformers multiplies by it); the lm_head
is tied to the embeddings by default. ``attention_bias`` puts a bias on q, k, v and o; ``use_qk_norm``
(Command-R+) adds a LayerNorm on every query and key head with a weight of its own per head
(``qk_norm="layernorm"``: ``n_h·d_h`` and ``n_kv·d_h`` parameters a layer). ``head_dim`` is
``hidden_size // num_attention_heads`` unless stated; absent ``num_key_value_heads`` is
``num_attention_heads``.

>>> f = _fields({"use_qk_norm": True, "logit_scale": 0.125}, 2)
>>> f["norms"], f["layernorm"], f["qk_norm"], f["logit_scale"]
('parallel', True, 'layernorm', 0.125)
>>> _fields({"logit_scale": None}, 2)
Traceback (most recent call last):
...
symllm.errors.SymllmError: logit_scale: null (transformers multiplies the logits by it; state a number)
"""
from symllm.arch.families.hf import flag, integer, register
from symllm.arch.families.llama import LLAMA
from symllm.errors import SymllmError
from symllm.validate import short

__all__ = ["COHERE"]


def _fields(raw: dict, n_layers: int) -> dict:
    scale = raw.get("logit_scale", 0.0625)
    if scale is None:
        raise SymllmError("logit_scale: null (transformers multiplies the logits by it; state a number)")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise SymllmError(f"logit_scale: expected a number, got {short(scale)}")
    return {"hidden_dim": integer(raw, "intermediate_size", 22528), "norms": "parallel", "layernorm": True,
            "logit_scale": scale, "qk_norm": "layernorm" if flag(raw, "use_qk_norm", False) else None,
            "norm_eps": raw.get("layer_norm_eps", 1e-5)}


#: LLaMA with a parallel block (its fields), only attention_bias read, head_dim never null, use_qk_norm modelled,
#: no sliding_window refusal, and Command-R's sizes and tied embeddings when absent
COHERE = register(LLAMA.extend(
    "cohere", fields=_fields, reads=("attention_bias",), nullable=("num_key_value_heads",), ignored={},
    defaults={"vocab_size": 256000, "hidden_size": 8192, "num_hidden_layers": 40, "num_attention_heads": 64,
              "tie_word_embeddings": True},
    models=("use_qk_norm",),
    names={"hidden_dim": "intermediate_size", "qk_norm": "use_qk_norm"},
    presets="config.json of CohereForAI/c4ai-command-r-v01"))
