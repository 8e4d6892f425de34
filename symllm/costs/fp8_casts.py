"""FP8 current scaling's quantization passes in a training step: what Transformer Engine's per-tensor recipe
reads and writes to cast each linear's input and its output's gradient to FP8 (``fp8_current_scaling`` in
efficiency.json, each figure with its source), a memory-bound time :func:`symllm.costs.efficiency.expected`
adds to a step under an engine whose ``fp8_recipe`` is ``current``.
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch.layers import OP_RECOMPUTED
from symllm.costs.figures import data, fraction

__all__ = ["fp8_quantize_s"]


def fp8_quantize_s(*, rows, layers, d, d_ff, q, kv, bandwidth, moe_layers=0, k=1, tp: int = 1,
                   card: str | None = None, recompute: bool | str = False) -> Fraction:
    """Seconds a training micro-batch of ``rows`` tokens spends quantizing activations and gradients to FP8
    under Transformer Engine's current scaling (``fp8_current_scaling`` in efficiency.json), over ``layers``
    layers of which ``moe_layers`` route each token to ``k`` experts: each linear's input (``rows`` x its ``K``)
    in forward and its output's gradient (``rows`` x its ``N``) in backward, a routed expert's on ``k·rows``
    rows; per element two bf16 reads (amax, then scale and cast) and one FP8 byte written, one more for the
    transposed copy Hopper's backward needs (none on the Blackwell cards of ``no_transpose``), at
    ``memory_stream``'s fraction of ``bandwidth`` (a bf16 stream: :func:`symllm.costs.efficiency.stream`'s
    default). Widths: attention ``q`` (``n_h·d_h``) and ``kv`` (``n_kv·d_h``),
    a gated MLP's ``d_ff``; each split over ``tp`` ranks; ``recompute`` (a workload's policy): the forward's
    quantizations again (``"full"`` or True), or (``"op"``: op checkpointing, a dense model's) the inputs of the
    linears its policy recomputes (:data:`symllm.arch.layers.OP_RECOMPUTED`: wk's ``d``, wo's ``q``, w3's ``d``).

    >>> # one layer, 1000 rows, d 1024, q 1024, kv 256, d_ff 4096: forward 1000 (1024 + 1024 + 1024 + 4096),
    >>> # backward 1000 (1536 + 1024 + 8192 + 1024) elements, 6 bytes each at 0.88 TB/s
    >>> float(fp8_quantize_s(rows=1000, layers=1, d=1024, d_ff=4096, q=1024, kv=256, bandwidth=10 ** 12))
    0.00012916363636363636
    """
    fp8 = data()["fp8_current_scaling"]
    per = fp8["read_bytes"] + fp8["write_bytes"] + (0 if card in fp8["no_transpose"] else fp8["transpose_bytes"])
    attn_in, attn_out = d + q, (q + 2 * kv) + d  # K of QKV and O; N of QKV and O
    mlp_in, mlp_out = d + d_ff, 2 * d_ff + d  # K of the gate-and-up and of the down projections; their N
    dense = layers - moe_layers
    forward = rows * (layers * attn_in + (dense + k * moe_layers) * mlp_in)
    backward = rows * (layers * attn_out + (dense + k * moe_layers) * mlp_out)
    again = forward if recompute in (True, "full") else 0
    if recompute == "op":  # each recomputed linear casts its input again (its K: the input of wq, wk, wv is d)
        inputs = {"wq": d, "wk": d, "wv": d, "wo": q, "w1": d, "w3": d, "w2": d_ff}
        again = rows * (layers - moe_layers) * sum(inputs[name] for name in OP_RECOMPUTED)
    elements = Fraction(forward + again + backward, tp)
    return elements * per / (fraction(data()["memory_stream"]["value"]) * bandwidth)
