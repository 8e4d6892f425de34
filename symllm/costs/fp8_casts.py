"""FP8 training's quantization passes in a training step: what an engine's ``fp8_recipe`` reads and writes to cast
each linear's input and its output's gradient to FP8, and under torchao's recipe its weight too, a memory-bound time
:func:`symllm.costs.efficiency.expected` adds to a step. Each recipe's bytes are a block of efficiency.json named in
:data:`RECIPES` (Transformer Engine's current scaling: ``fp8_current_scaling``; torchao's Float8Linear with dynamic
tensorwise scaling, as torchtitan runs it: ``fp8_torchao_tensorwise``), each figure with its source.
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch.layers import OP_RECOMPUTED
from symllm.costs.figures import data

__all__ = ["RECIPES", "fp8_quantize_s"]

#: an engine's ``fp8_recipe`` (efficiency.json's engines) -> the efficiency.json block holding its passes' bytes
RECIPES = {"current": "fp8_current_scaling", "torchao-tensorwise": "fp8_torchao_tensorwise"}


def fp8_quantize_s(*, rows, layers, d, d_ff, q, kv, rate, moe_layers=0, k=1, tp: int = 1,
                   card: str | None = None, recompute: bool | str = False, recipe: str = "current") -> Fraction:
    """Seconds a training micro-batch of ``rows`` tokens spends quantizing activations and gradients to FP8
    under ``recipe``'s passes (by default Transformer Engine's current scaling, ``fp8_current_scaling`` in
    efficiency.json; its figures below), over ``layers``
    layers of which ``moe_layers`` route each token to ``k`` experts: each linear's input (``rows`` x its ``K``)
    in forward and its output's gradient (``rows`` x its ``N``) in backward, a routed expert's on ``k·rows``
    rows; per element two bf16 reads (amax, then scale and cast) and one FP8 byte written, one more for the
    transposed copy Hopper's backward needs (none on the Blackwell cards of ``no_transpose``), at ``rate`` bytes/s
    (a bf16 stream's share of the card's bandwidth: :func:`symllm.costs.efficiency.stream`). Widths: attention ``q``
    (``n_h·d_h``) and ``kv`` (``n_kv·d_h``), a gated MLP's ``d_ff``; each split over ``tp`` ranks; ``recompute`` (a
    workload's policy): the forward's
    quantizations again (``"full"`` or True), or (``"op"``: op checkpointing, a dense model's) the inputs of the
    linears its policy recomputes (:data:`symllm.arch.layers.OP_RECOMPUTED`: wk's ``d``, wo's ``q``, w3's ``d``).
    ``recipe`` (a key of :data:`RECIPES`): under ``torchao-tensorwise`` each attention and dense MLP weight
    (its K x N over ``tp``) is cast every micro-batch at the block's ``weight_bytes`` an element, again where
    its linear is recomputed; a routed expert's weights are not counted (Transformer Engine's: none, once a step).

    >>> # one layer, 1000 rows, d 1024, q 1024, kv 256, d_ff 4096: forward 1000 (1024 + 1024 + 1024 + 4096),
    >>> # backward 1000 (1536 + 1024 + 8192 + 1024) elements, 6 bytes each at 0.88 TB/s
    >>> float(fp8_quantize_s(rows=1000, layers=1, d=1024, d_ff=4096, q=1024, kv=256, rate=88 * 10 ** 10))
    0.00012916363636363636
    >>> # torchao: the same passes, and the weights' 1024 (1024 + 2 x 256) + 1024 x 1024 + 3 x 1024 x 4096 elements,
    >>> # 6 bytes each: (18,944,000 + 15,204,352) x 6 bytes at 0.88 TB/s
    >>> float(fp8_quantize_s(rows=1000, layers=1, d=1024, d_ff=4096, q=1024, kv=256, rate=88 * 10 ** 10,
    ...                      recipe="torchao-tensorwise"))
    0.00023282967272727272
    """
    fp8 = data()[RECIPES[recipe]]
    per = fp8["read_bytes"] + fp8["write_bytes"] + (0 if card in fp8["no_transpose"] else fp8["transpose_bytes"])
    attn_in, attn_out = d + q, (q + 2 * kv) + d  # K of QKV and O; N of QKV and O
    mlp_in, mlp_out = d + d_ff, 2 * d_ff + d  # K of the gate-and-up and of the down projections; their N
    dense = layers - moe_layers
    forward = rows * (layers * attn_in + (dense + k * moe_layers) * mlp_in)
    backward = rows * (layers * attn_out + (dense + k * moe_layers) * mlp_out)
    # each linear's weight, K x N (torchao casts it every micro-batch; a routed expert's are not counted)
    weights = {"wq": d * q, "wk": d * kv, "wv": d * kv, "wo": q * d, "w1": d * d_ff, "w3": d * d_ff, "w2": d_ff * d}
    weight = (layers * sum(weights[n] for n in ("wq", "wk", "wv", "wo"))
              + dense * sum(weights[n] for n in ("w1", "w3", "w2")))
    again, weight_again = (forward, weight) if recompute in (True, "full") else (0, 0)
    if recompute == "op":  # each recomputed linear casts its input again (its K: the input of wq, wk, wv is d)
        inputs = {"wq": d, "wk": d, "wv": d, "wo": q, "w1": d, "w3": d, "w2": d_ff}
        again = rows * dense * sum(inputs[name] for name in OP_RECOMPUTED)
        weight_again = dense * sum(weights[name] for name in OP_RECOMPUTED)
    elements = Fraction(forward + again + backward, tp)
    cast = elements * per + Fraction(weight + weight_again, tp) * fp8["weight_bytes"]
    return cast / rate
