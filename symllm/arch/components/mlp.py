"""The dense feed-forward: LLaMA's SwiGLU (Gemma's GeGLU, Phi-3's fused ``w13``) and Meta's width rule."""
from __future__ import annotations

import sympy as sp

from symllm.arch import keeps
from symllm.arch.components.base import no_weight, linear_rules, T, Component, ELEMENTWISE, linear, LLAMA, named, Rules
from symllm.arch.widths import swiglu_width
from symllm.arch.layers import Variant
from symllm.arch.symbols import beta_a, d, d_fd, d_ff, f, m


def meta_hidden_dim(multiplier: bool = True) -> sp.Expr:
    """Meta's SwiGLU width, ``d_ff = m·⌈⌊f·⌊8d/3⌋⌋ / m⌉`` (the ``f`` step only with a multiplier).

    Models ``FeedForward.__init__`` in llama/model.py: ``hidden_dim = int(2 * (4 * dim) / 3)``, then
    ``int(ffn_dim_multiplier * hidden_dim)``, then rounding up to ``multiple_of``. Evaluate it with ``f``
    as a 53-bit ``Float`` and the product truncates exactly as Meta's IEEE double product does.

    >>> meta_hidden_dim()
    m*ceiling(floor(f*floor(8*d/3))/m)
    >>> meta_hidden_dim().subs({d: 4096, m: 1024, f: sp.Float(1.3)})
    14336
    """
    hidden = swiglu_width(d)
    if multiplier:
        hidden = sp.floor(f * hidden)
    return m * sp.ceiling(hidden / m)


def feed_forward(*, bias: bool = False, width: sp.Expr = d_ff, name: str = "feed_forward",
                 variant: Variant = LLAMA) -> Component:
    """The SwiGLU feed-forward ``w2(silu(w1 x) * w3 x)``: ``3·d·d_ff`` parameters without biases
    (``width`` is ``d_ff``; the dense layers of a model that interleaves MoE layers have ``d_fd``).
    ``variant``: GeGLU (Gemma's ``gelu_pytorch_tanh`` in place of SiLU, :data:`ELEMENTWISE`), or Phi-3's
    ``w13`` (``gate_up_proj``: ``w1`` and ``w3`` in one linear of ``2·d_ff`` outputs, chunked after).

    >>> feed_forward().total("params"), feed_forward(width=d_fd).total("params")
    (3*d*d_ff, 3*d*d_fd)
    >>> [c.name for c in feed_forward(variant=Variant(fused=True)).children]
    ['w13', 'w2']
    >>> feed_forward(variant=Variant(activation="gelu_tanh")).elementwise
    10*b*d_ff*s
    """
    act = variant.activation
    if act in ("relu2", "gelu"):
        return _ungated(act, bias, width, name)
    if variant.fused:  # Phi-3: gate and up in one linear (its TP plan gathers the output for the chunk)
        fused = Rules("column", lora=("w13", "gate_up_proj"), weight="linear", stacks=(),
                      label="fused projections (Phi-3)", holds=("w1", "w3"), gguf="ffn_up")  # gguf-py's PHI3
        projections = (linear("w13", d, 2 * width, bias, "self.gate_up_proj = nn.Linear(hidden_size, 2 * "
                              "intermediate_size)  # gate, up = chunk(2)", rules=fused),
                       linear("w2", width, d, bias, "self.down_proj = nn.Linear(intermediate_size, hidden_size)",
                              rules=linear_rules("row", "w2", "down_proj", "ffn_down")))
    else:
        projections = (
            linear("w1", d, width, bias, "self.w1 = nn.Linear(dim, hidden_dim)",
                   rules=linear_rules("column", "w1", "gate_proj", "ffn_gate")),  # ColumnParallelLinear
            linear("w2", width, d, bias, "self.w2 = nn.Linear(hidden_dim, dim)",
                   rules=linear_rules("row", "w2", "down_proj", "ffn_down")),  # RowParallelLinear
            linear("w3", d, width, bias, "self.w3 = nn.Linear(dim, hidden_dim)",
                   rules=linear_rules("column", "w3", "up_proj", "ffn_up")),  # ColumnParallelLinear
        )
    return named(Component(
        name,
        elementwise=(ELEMENTWISE[act] + ELEMENTWISE["gate"]) * T * width,
        # saved: the normed input of w1/w3, the w1 and w3 outputs (the activation's and gate's backward), the w2 input
        saved=beta_a * (T * d + 3 * T * width),
        live=(3 * T * width,),  # the w1 and w3 outputs and their gated product
        children=projections,
        doc=("FeedForward: return self.w2(F.silu(self.w1(x)) * self.w3(x))" if act == "silu" else
             "GemmaMLP: down_proj(gelu_pytorch_tanh(gate_proj(x)) * up_proj(x))"),
        rules=no_weight(keeps.feed_forward) if act == "silu" else Rules("replicated", lora=(), stacks=(),
                                                                        label="GeGLU (Gemma)"),
    ), "mlp" if name == "feed_forward" else name)  # a shared expert is its own module


def _ungated(act: str, bias: bool, width: sp.Expr, name: str) -> Component:
    """An ungated MLP ``down_proj(act(up_proj(x)))``: Nemotron-H's squared ReLU (``NemotronHMLP``, ``relu2``:
    ``relu(x)²``, 2 element-wise FLOPs per element of ``width``) or MPT's exact GELU (``MptMLP``, ``gelu``:
    ``nn.GELU(approximate="none")``, 5); ``2·d·width`` parameters without biases; its up projection is ``w3``
    (HF ``up_proj``, GGUF ``ffn_up``), its down projection ``w2``.

    >>> _ungated("relu2", False, d_ff, "feed_forward").total("params")
    2*d*d_ff
    >>> _ungated("gelu", False, d_ff, "feed_forward").elementwise
    5*b*d_ff*s
    """
    label = "a squared-ReLU MLP (Nemotron-H)" if act == "relu2" else "an ungated GELU MLP (MPT)"
    projections = (
        linear("w3", d, width, bias, "self.up_proj = nn.Linear(hidden_size, intermediate_size)",
               rules=Rules("column", lora=("w3", "up_proj"), weight="linear", stacks=(), label=label, gguf="ffn_up")),
        linear("w2", width, d, bias, "self.down_proj = nn.Linear(intermediate_size, hidden_size)",
               rules=Rules("row", lora=("w2", "down_proj"), weight="linear", stacks=(), label=label,
                           gguf="ffn_down")))
    return named(Component(
        name,
        elementwise=ELEMENTWISE[act] * T * width,
        # saved: the normed input of up_proj, its output (the activation's backward) and the activation's output
        # (down_proj's input)
        saved=beta_a * (T * d + 2 * T * width),
        live=(2 * T * width,),
        children=projections,
        doc=("NemotronHMLP: down_proj(relu(up_proj(x)) ** 2)" if act == "relu2" else
             "MptMLP: down_proj(GELU(approximate='none')(up_proj(x)))"),
        rules=Rules("replicated", lora=(), stacks=(), label=label),
    ), ("mixer" if act == "relu2" else "ffn") if name == "feed_forward" else name)


swiglu = feed_forward
