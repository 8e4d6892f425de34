"""Gated DeltaNet (Qwen3-Next, Qwen3.5): the linear-attention token mixer, as transformers builds it
(``Qwen3NextGatedDeltaNet``, ``Qwen3_5GatedDeltaNet``), and the gated output of their full-attention layers.

A Gated DeltaNet layer holds no keys and values: each sequence carries, per value head, a recurrent state of
``d_gk × d_gv`` and the last ``K_c`` inputs of its short causal convolution. Its parts:

* input projections: Qwen3-Next's ``in_proj_qkvz: d -> 2·n_gk·d_gk + 2·n_gv·d_gv`` and ``in_proj_ba: d -> 2·n_gv``;
  Qwen3.5's ``in_proj_qkv: d -> 2·n_gk·d_gk + n_gv·d_gv``, ``in_proj_z: d -> n_gv·d_gv``, ``in_proj_b`` and
  ``in_proj_a: d -> n_gv`` (the same parameters, split four ways);
* ``conv1d``: a depthwise causal convolution of kernel ``K_c`` over the ``2·n_gk·d_gk + n_gv·d_gv`` channels of
  q, k and v (no bias), then SiLU;
* ``A_log`` and ``dt_bias``: one number each per value head (the decay ``g = -exp(A_log)·softplus(a + dt_bias)``);
* the delta rule itself (no parameters; below);
* ``norm``: a gated RMSNorm of width ``d_gv`` on each value head, ``rmsnorm(o)·silu(z)``;
* ``out_proj: n_gv·d_gv -> d``.

Conventions (docs/conventions.md, "Linear attention"):

* **FLOPs** are transformers' torch fallback's, what ``FlopCounterMode`` counts. A pass of more than one token
  runs the **chunked** form (``torch_chunk_gated_delta_rule``, chunk
  ``C = 64`` positions, the sequence padded up to a whole number of chunks): per value head and chunk
  ``4·C²·d_gk + 2·C²·d_gv + 6·C·d_gk·d_gv`` matmul FLOPs (the two ``C × C`` products of keys with keys and
  queries with keys, the ``C × C`` product with the new values, and three products with the state; the
  triangular solves are not matmuls and ``FlopCounterMode`` does not count them), ``⌈s/C⌉`` chunks a sequence.
  A pass of one token (a decode step) is the **recurrent** form (``torch_recurrent_gated_delta_rule``):
  broadcast multiplies and sums, no matmul, so its matmul FLOPs are 0 and its work is element-wise (below),
  constant in the context. (transformers runs a
  one-token *prompt*, with no state yet, through the chunked form, one padded chunk; symllm counts every
  one-token pass as the step it is in generation.) The convolution is a matmul-like count as ``FlopCounterMode`` counts
  ``conv1d``: ``2·K_c`` per channel and output position: ``s + K_c − 1`` positions in a sequence's first pass (padded on
  the left, the last ``K_c − 1`` dropped after; transformers pads a prompt shorter than ``K_c`` to ``K_c`` when it keeps
  a cache, which this does not count), ``2`` in a decode step (the ``K_c`` cached inputs and the new one, no padding)
  and ``s + 2·K_c − 1`` in a later pass over ``s > 1`` tokens (the cached inputs, then padding again).
* **Element-wise** FLOPs (the ``elementwise`` bucket, docs/conventions.md's weights: ``exp``, a multiply, an add
  1, a sum 1 per input element, ``sigmoid`` and SiLU 4, ``softplus`` 3; tests/test_elementwise.py counts
  transformers' torch paths op by op): per token and value head the decay's add, softplus and multiply and
  beta's sigmoid (``9``), and ``exp(A_log)`` once per head a pass (its weights alone); SiLU on the
  convolution's ``2·n_gk·d_gk + n_gv·d_gv`` outputs; the gated norm ``9`` per element of ``n_gv·d_gv`` (its
  RMSNorm's 4, SiLU of the gate, the product). The chunked rule, per value head of a sequence
  (:func:`_chunked_elementwise`): ``7·s·d_gk`` (the l2 norms of q and k in the rule, 3 an element each, and the queries'
  ``1/√d_gk``) + ``S·(4·C + 4·d_gk + 3·d_gv + 5)`` over the ``S = C·⌈s/C⌉`` padded positions (the pairwise decays and
  their two products with the ``C × C`` matmuls, the β-weighted and decayed keys and values, the scan's
  corrections and outputs) + ``⌈s/C⌉·(1 + 2·d_gk·d_gv)`` per chunk (the state's decay and update). The
  recurrent step, per value head: ``7·d_gk·d_gv + 7·d_gk + 2·d_gv + 1`` (:func:`_recurrent_elementwise`). The
  triangular solves are neither matmuls ``FlopCounterMode`` counts nor element-wise: not counted.
* **State** (``state_cache``, in bytes, per sequence and layer, constant in the context): the recurrent
  state ``n_gv·d_gk·d_gv`` in fp32 (4 bytes: the torch paths compute and return it in float32 and
  transformers' ``LinearAttentionLayer`` keeps that tensor; Qwen3.5's config states ``mamba_ssm_dtype:
  float32`` for vLLM), and the convolution state, the last ``K_c`` inputs of the ``2·n_gk·d_gk + n_gv·d_gv``
  channels in the activations' dtype (``β_a``), as transformers caches it.
* **Saved** (``saved``, a training forward): what transformers' torch path holds for backward, each part on
  the component that saves it (the projections' input on the layer; :func:`_rule_saved`, :func:`_norm_saved`);
  the chunked rule works in fp32 over the padded sequence. **Live** (the inference working set): what the
  torch fallback holds at its moments (the intra-chunk products, the keys' decay, the scan's state update
  and outputs, the output's cast back), measured on CPU by the live storages' bytes (:func:`_rule_live`);
  fla's fused kernels hold less.

>>> from symllm.arch.layers import Structure, LayerKind
>>> from symllm.arch.symbols import d, n_gk, n_gv, d_gk, d_gv, K_c
>>> g = gated_deltanet(Structure(kinds=(LayerKind(mixer="linear_attention"),)))
>>> sp.expand(g.total("params") - (d * (2*n_gk*d_gk + 2*n_gv*d_gv) + 2*d*n_gv + (2*n_gk*d_gk + n_gv*d_gv)*K_c
...                                 + 2*n_gv + d_gv + n_gv*d_gv*d))
0
"""
from __future__ import annotations

import sympy as sp

from symllm.arch.components.base import ELEMENTWISE, Component, Rules, T, linear
from symllm.arch.components.norms import rmsnorm
from symllm.arch.dtypes import FP32
from symllm.arch.layers import LayerKind, Structure
from symllm.arch.recurrent_sizes import conv_state_bytes, deltanet_conv_channels
from symllm.arch.symbols import K_c, b, beta_a, d, d_gk, d_gv, n_gk, n_gv, s, t  # noqa: F401 (t: doctests)

__all__ = ["gated_deltanet", "CHUNK", "conv_channels", "recurrent_state", "conv_state"]

#: the chunk of transformers' torch_chunk_gated_delta_rule (its default, as the Qwen3-Next and Qwen3.5 layers call it)
CHUNK = 64

#: the stacks model none of it: a stack's refusal names this
_LABEL = "a Gated DeltaNet (Qwen3-Next, Qwen3.5)"


def conv_channels() -> sp.Expr:
    """The channels of the short convolution: q, k and v side by side.

    >>> conv_channels()
    2*d_gk*n_gk + d_gv*n_gv
    """
    return deltanet_conv_channels(n_gk, d_gk, n_gv, d_gv)


def recurrent_state() -> sp.Expr:
    """Bytes of one sequence's recurrent state in one layer: ``n_gv`` matrices of ``d_gk × d_gv``, fp32.

    >>> recurrent_state()
    4*d_gk*d_gv*n_gv
    """
    return FP32 * n_gv * d_gk * d_gv


def conv_state() -> sp.Expr:
    """Bytes of one sequence's convolution state in one layer: the last ``K_c`` inputs of every channel, in
    the activations' dtype, as transformers' cache keeps them (:func:`~symllm.arch.recurrent_sizes.conv_state_bytes`).

    >>> conv_state()
    K_c*beta_a*(2*d_gk*n_gk + d_gv*n_gv)
    """
    return conv_state_bytes(conv_channels(), K_c, beta_a)


def _rules(split: str, name: str, gguf: str) -> Rules:
    """A projection of the Gated DeltaNet: its split, its name (PEFT adapts it under the module's name), a
    linear weight, no stack, and its GGUF name (gguf-py's QWEN3NEXT and QWEN35 names)."""
    return Rules(split, lora=(name, name), weight="linear", stacks=(), label=_LABEL, gguf=gguf)


def _one_token() -> sp.Expr:
    """1 for a pass of one token (``s = 1``: the recurrent form), 0 for more (the chunked form), written with
    ``Min`` (what the compiled kernels evaluate over arrays; ``s`` is a positive integer).

    >>> [_one_token().subs(s, x) for x in (1, 2, 64)]
    [1, 0, 0]
    """
    return 1 - sp.Min(s - 1, 1)


def _chunks(positions: sp.Expr) -> sp.Expr:
    """Matmul FLOPs of the chunked delta rule over ``positions`` of one sequence, per value head."""
    C = CHUNK
    per_chunk = 4 * C ** 2 * d_gk + 2 * C ** 2 * d_gv + 6 * C * d_gk * d_gv
    return sp.ceiling(positions / C) * per_chunk


def _chunked_elementwise() -> sp.Expr:
    """Element-wise FLOPs of ``torch_chunk_gated_delta_rule`` over one sequence, per value head (module
    docstring, "Element-wise"): the l2 norms of q and k and the queries' ``1/√d_gk`` over the ``s`` positions
    (``7·s·d_gk``); per padded position ``β·v`` and ``β·k`` (``d_gv + d_gk``), the cumulative decay (1), the
    pairwise decays' subtraction and ``exp`` and their products with the two ``C × C`` products (``4·C``),
    the decayed ``k·β``, queries and keys (``3·d_gk``, their ``exp`` and the keys' subtraction: 4), the
    scan's new values and output (``2·d_gv``); per chunk its decay's ``exp`` and the state's decay and update
    (``1 + 2·d_gk·d_gv``).

    >>> _chunked_elementwise().subs({s: 65, d_gk: 1, d_gv: 1})  # 7·65 + 128·(4·64 + 4 + 3 + 5) + 2·(1 + 2)
    34765
    """
    C, S, N = CHUNK, _padded(), sp.ceiling(s / CHUNK)
    return 7 * s * d_gk + S * (4 * C + 4 * d_gk + 3 * d_gv + 5) + N * (1 + 2 * d_gk * d_gv)


def _recurrent_elementwise() -> sp.Expr:
    """Element-wise FLOPs of ``torch_recurrent_gated_delta_rule`` over one token, per value head: the l2 norms
    of q and k and the queries' ``1/√d_gk`` (``7·d_gk``), the decay's ``exp`` (1), the state's decay, read
    (a multiply and a sum), update (a multiply and an add) and output (a multiply and a sum), ``7·d_gk·d_gv``,
    and the delta ``(v − read)·β`` (``2·d_gv``).

    >>> _recurrent_elementwise()
    7*d_gk*d_gv + 7*d_gk + 2*d_gv + 1
    """
    return 7 * d_gk * d_gv + 7 * d_gk + 2 * d_gv + 1


def _padded() -> sp.Expr:
    """Positions of one sequence after transformers pads it to a whole number of chunks, ``C·⌈s/C⌉``."""
    return CHUNK * sp.ceiling(s / CHUNK)


def _rule_saved() -> sp.Expr:
    """Bytes a training forward of ``torch_chunk_gated_delta_rule`` saves for backward (module docstring,
    "Saved"): everything in fp32 (the rule casts q, k, v, beta and g to float32), but the causal mask.

    >>> _rule_saved().subs({b: 1, n_gv: 1, d_gk: 1, d_gv: 1, s: 1})  # 4·(2·2 + 64·(4 + 4 + 3 + 5·64) + 2) + 64²
    88856
    """
    C, S, N = CHUNK, _padded(), sp.ceiling(s / CHUNK)
    later = sp.Min(N - 1, 1)  # 1 when there is a second chunk: the scan then saves q and k for the state's gradient
    heads = b * n_gv
    return (FP32 * heads * (2 * s * (d_gk + 1)  # the l2 norms' inputs (q and k) and their 1/norms
                            + S * (4 + (4 + 2 * later) * d_gk + 3 * d_gv + 5 * C)  # per padded position
                            + N * (1 + d_gk * d_gv))  # per chunk: its decay, the state it starts from
            + C * C)  # the strictly-upper mask, bool


def _rule_live(split: bool = True) -> tuple[sp.Expr, ...]:
    """Activation elements live at the working set's candidate moments of one Gated DeltaNet prefill through
    transformers' torch fallback (``torch_chunk_gated_delta_rule``), measured on CPU by the live storages'
    bytes (tests/test_linear_attention.py) and read off the code, one candidate per moment (the peak takes the
    largest). Held throughout the rule: the convolution's output, z, b, a, beta and g,
    ``b·s·(W + n_gv·d_gv + 4·n_gv)`` (``W`` the convolution's channels); in Qwen3-Next (``split`` false)
    also the rest of ``in_proj_qkvz``'s output (z is a view of it) and the contiguous copies
    ``fix_query_key_value_ordering`` makes of z, b and a, ``b·s·(W + n_gv·d_gv + 2·n_gv)`` (the general case,
    more than one key head grouping several value heads, as the published checkpoints; with one key head,
    or as many as value heads, those reshapes are views); the causal mask (``C²`` bools). In fp32, ``⌈4/β_a⌉`` whole
    activation elements each, per value head ``H = b·n_gv``, padded length ``S`` and ``N`` chunks:

    * the intra-chunk products: padded q, k, v, beta and g, ``k·β``, ``v·β``, the cumulative decay
      (``3·d_gk + 2·d_gv + 3`` a position) and four ``C``-wide tensors (the pairwise decays, the UT system,
      ``q·kᵀ`` and its decayed product);
    * the scan: three ``C``-wide tensors, q and k decayed, ``k·β`` and decayed, its solve, v, ``v·β``, the new
      values and the output (``5·d_gk + 4·d_gv + 3`` a position), each chunk's decay (``H·N``), and per head
      the larger of the state's update (the state, its decayed copy, ``kᵀ·v_new`` and the new state, with
      ``v_new`` and the inter-chunk read: ``4·d_gk·d_gv + 2·C·d_gv``) and a chunk's output (the state,
      ``v_new``, the read, their products: ``d_gk·d_gv + 4·C·d_gv``);
    * the keys' decay before the scan: the tensors of the scan but each chunk's decay, with the padded keys
      beside their decayed copy and the decay's temporary (``3·C + 6·d_gk + 4·d_gv + 4`` a position),
      and the zero initial state;
    * the output's cast back, ``b·n_gv·s·d_gv`` in the activations' dtype, beside the scan's tensors with
      ``v_new`` and the read (the state dropped).

    With one head of 1 and one padded chunk in bf16 (``f = 2``), held ``3 + 1 + 4`` and the mask's 2048:
    ``2056 + 2·64·264``, ``2056 + 2·(64·204 + 1) + 2·132``, ``… + 2·257``, ``… + 2·128 + 1``,
    ``2056 + 2·(64·206 + 1)``:

    >>> [x.subs({b: 1, s: 1, n_gv: 1, n_gk: 1, d_gk: 1, d_gv: 1, beta_a: 2}) for x in _rule_live()]
    [35848, 28434, 28684, 28427, 28426]
    """
    C, S, N = CHUNK, _padded(), sp.ceiling(s / CHUNK)
    f, H = sp.ceiling(FP32 / beta_a), b * n_gv
    held = (T * (conv_channels() + n_gv * d_gv + 4 * n_gv)
            + (0 if split else T * (conv_channels() + n_gv * d_gv + 2 * n_gv)) + sp.ceiling(C * C / beta_a))
    scan = held + f * (H * S * (3 * C + 5 * d_gk + 4 * d_gv + 3) + H * N)
    return (held + f * H * S * (4 * C + 3 * d_gk + 2 * d_gv + 3),
            scan + f * H * (4 * d_gk * d_gv + 2 * C * d_gv),
            scan + f * H * (d_gk * d_gv + 4 * C * d_gv),
            scan + f * H * 2 * C * d_gv + H * s * d_gv,
            held + f * H * (S * (3 * C + 6 * d_gk + 4 * d_gv + 4) + d_gk * d_gv))


def _norm_saved() -> sp.Expr:
    """Bytes the gated norm and out_proj save, per row (``b·s·n_gv`` rows of ``d_gv``): the norm's fp32
    input and 1/rms, its normalised output and the weighted product (activations' dtype), the gate as fp32 and
    its SiLU, and out_proj's input."""
    rows = T * n_gv
    return FP32 * rows * (3 * d_gv + 1) + beta_a * rows * 3 * d_gv


def gated_deltanet(structure: Structure | None = None, kind: LayerKind = LayerKind(mixer="linear_attention"),
                   **_) -> Component:
    """A Gated DeltaNet layer (module docstring) of a model of ``structure`` (``delta_split``: Qwen3.5's four
    input projections; else Qwen3-Next's two).

    >>> g = gated_deltanet()
    >>> [c.name for c in g.children]
    ['in_proj_qkvz', 'in_proj_ba', 'conv1d', 'decay', 'delta_rule', 'norm', 'out_proj']
    >>> rule = g.child("delta_rule").flops  # a prefill of 100: two chunks of 4·64² + 2·64² + 6·64
    >>> g.total("kv_cache"), rule.subs({s: 1, t: 5}), rule.subs({s: 100, t: 0, d_gk: 1, d_gv: 1, n_gv: 1, b: 1})
    (0, 0, 49920)
    """
    split = structure is not None and structure.delta_split
    width = conv_channels()
    if split:
        projections = (
            linear("in_proj_qkv", d, width, doc="self.in_proj_qkv = nn.Linear(hidden_size, key_dim * 2 + value_dim)",
                   rules=_rules("column", "in_proj_qkv", "attn_qkv")),
            linear("in_proj_z", d, n_gv * d_gv, doc="self.in_proj_z = nn.Linear(hidden_size, value_dim)",
                   rules=_rules("column", "in_proj_z", "attn_gate")),
            linear("in_proj_b", d, n_gv, doc="self.in_proj_b = nn.Linear(hidden_size, num_v_heads)",
                   rules=_rules("column", "in_proj_b", "ssm_beta")),
            linear("in_proj_a", d, n_gv, doc="self.in_proj_a = nn.Linear(hidden_size, num_v_heads)",
                   rules=_rules("column", "in_proj_a", "ssm_alpha")))
    else:
        projections = (
            linear("in_proj_qkvz", d, width + n_gv * d_gv,
                   doc="self.in_proj_qkvz = nn.Linear(hidden_size, key_dim * 2 + value_dim * 2)",
                   rules=_rules("column", "in_proj_qkvz", "ssm_in")),
            linear("in_proj_ba", d, 2 * n_gv, doc="self.in_proj_ba = nn.Linear(hidden_size, num_v_heads * 2)",
                   rules=_rules("column", "in_proj_ba", "ssm_ba")))
    # FlopCounterMode's conv1d: 2·K_c per channel and output position (module docstring)
    one, first = _one_token(), 1 - sp.Min(t, 1)  # 1 for a one-token pass; 1 for a sequence's first pass (t = 0)
    positions = 2 * one + (1 - one) * (first * (s + K_c - 1) + (1 - first) * (s + 2 * K_c - 1))
    conv = Component("conv1d", params=width * K_c, state_cache=b * conv_state(),  # each sequence's last inputs
                     flops=2 * K_c * b * width * positions,
                     elementwise=ELEMENTWISE["silu"] * T * width,
                     # saved: its input (conv1d's backward) and its output over the s + K_c - 1 padded
                     # positions (SiLU's input; the slice to s positions is a view of it)
                     saved=beta_a * b * width * (2 * s + K_c - 1),
                     doc="self.conv1d = nn.Conv1d(conv_dim, conv_dim, kernel_size, groups=conv_dim, bias=False)",
                     rules=Rules("heads", lora=(), weight="conv", stacks=(), label=_LABEL, hf="conv1d",
                                 gguf="ssm_conv1d"))
    decay = Component("decay", params=2 * n_gv,
                      # g = -exp(A_log) * softplus(a + dt_bias): per token and head the add, softplus (exp, add,
                      # log) and the multiply; exp(A_log) once per head (its weights alone; the negation is the
                      # multiply's sign); beta = sigmoid(b)
                      elementwise=(5 + ELEMENTWISE["sigmoid"]) * T * n_gv + n_gv,
                      # saved: beta = sigmoid(b) (its output), softplus's input a.float() + dt_bias and its
                      # output, and exp(A_log) and its negation (fp32: the .float())
                      saved=beta_a * T * n_gv + FP32 * (2 * T * n_gv + 2 * n_gv),
                      doc="self.dt_bias = nn.Parameter(torch.ones(num_v_heads)); "
                          "self.A_log = nn.Parameter(torch.log(A))",
                      # two per-head vectors, parameters of the DeltaNet's own module (GGUF: ssm_a, and ssm_dt.bias,
                      # the converter's name for dt_bias)
                      rules=Rules("heads", lora=(), weight="decay", stacks=(), label=_LABEL,
                                  hf_params=("A_log", "dt_bias"), gguf="ssm_a ssm_dt.bias"))
    # the chunked form for a pass over several tokens; the recurrent form (no matmul) for one token
    rule = Component("delta_rule", flops=b * n_gv * (1 - one) * _chunks(s), state_cache=b * recurrent_state(),
                     elementwise=b * n_gv * ((1 - one) * _chunked_elementwise() + one * _recurrent_elementwise()),
                     saved=_rule_saved(), live=_rule_live(split),
                     doc="torch_chunk_gated_delta_rule (chunk_size=64) / torch_recurrent_gated_delta_rule",
                     rules=Rules("replicated", lora=(), stacks=(), label=_LABEL))
    norm = rmsnorm("norm", d_gv, T * n_gv, "self.norm = Qwen3NextRMSNormGated(head_v_dim)  # norm(o) * silu(z)",
                   Rules("replicated", lora=(), weight="norm", stacks=(), label=_LABEL, hf="norm", gguf="ssm_norm"))
    norm = norm.replace(elementwise=norm.elementwise + (ELEMENTWISE["silu"] + ELEMENTWISE["gate"]) * T * n_gv * d_gv,
                        saved=_norm_saved())
    out = linear("out_proj", n_gv * d_gv, d, doc="self.out_proj = nn.Linear(value_dim, hidden_size)",
                 rules=_rules("row", "out_proj", "ssm_out"))
    return Component(
        "linear_attention",
        # saved: the normed input of the input projections (each of them reads it)
        saved=beta_a * T * d,
        children=(*projections, conv, decay, rule, norm, out),
        doc="Qwen3_5GatedDeltaNet" if split else "Qwen3NextGatedDeltaNet",
        rules=Rules("replicated", lora=(), stacks=(), label=_LABEL, hf="linear_attn"),
    )


