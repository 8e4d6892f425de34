"""The Mamba-2 mixer (Nemotron-H), as transformers builds it (``NemotronHMamba2Mixer``, after
``Zamba2MambaMixer``).

A Mamba-2 layer holds no keys and values: each sequence carries, per head, an SSM state of ``d_m × d_s`` and
the last inputs of its short causal convolution. With ``d_i = n_m·d_m`` (transformers' ``intermediate_size``,
``mamba_num_heads × mamba_head_dim``; ``expand`` is not read) and the convolution's channels
``W = d_i + 2·n_g·d_s`` (x, B and C side by side), its parts:

* ``in_proj: d -> d_i + W + n_m``, split after into the gate ``z`` (``d_i``), ``xBC`` (``W``) and ``dt`` (``n_m``);
  a bias with ``use_bias``;
* ``conv1d``: a depthwise causal convolution of kernel ``K_c`` over the ``W`` channels, a bias with
  ``use_conv_bias`` (``nn.Conv1d(W, W, K_c, groups=W, bias=use_conv_bias)``), then SiLU;
* ``A_log``, ``D`` and ``dt_bias``: one number each per head;
* the SSD scan itself (no parameters; below);
* ``norm``: a gated RMSNorm of width ``d_i`` in ``n_g`` groups of ``d_i / n_g``, ``rmsnorm(y·silu(z))``
  (``NemotronHRMSNormGated``; its weight is ``d_i``);
* ``out_proj: d_i -> d``, a bias with ``use_bias``.

Conventions (docs/conventions.md, "Mamba-2"):

* **FLOPs** are transformers' torch fallback's, what ``FlopCounterMode`` counts. A pass over more than one
  token runs the chunked SSD scan (``mamba2_chunk_scan``, chunks of ``Q_c`` positions, the sequence padded to a
  whole number ``c = ⌈s/Q_c⌉`` of chunks), five einsums per sequence:
  ``2·n_m·(c·Q_c²·(d_s + d_m) + 2·c·Q_c·d_m·d_s + (c + 1)²·d_m·d_s)`` (the ``Q_c × Q_c`` scores of C with B
  and their product with x, each chunk's state, the chunk-to-chunk recurrence over ``c + 1`` states (the
  first the zero or cached state), and C with each chunk's starting state). A pass over one token (a decode
  step) is the recurrent update (``mamba2_selective_state_update``): one ``bmm`` of the state with C,
  ``2·n_m·d_m·d_s`` a sequence. The convolution counts as ``FlopCounterMode`` counts ``conv1d`` (its bias
  add inside the op not counted): ``2·K_c`` per channel and output position, ``s + K_c − 1`` positions in a
  sequence's first pass, ``2`` in a decode step, ``s + 2·K_c − 1`` in a later pass of ``s > 1`` tokens (as the
  Gated DeltaNet's: :mod:`symllm.arch.components.deltanet`).
* **Element-wise** work counted: the convolution's SiLU, the gated norm (SiLU of the gate, the product, the
  RMSNorm), biases, and the scan's own (softplus of dt, its clamp, the discretisation, the decays and their
  segment sums, the D skip), op by op as the torch fallback does it: the chunked scan's over the padded
  chunks for ``s > 1``, the recurrent step's for ``s = 1`` (:func:`_scan_elementwise`).
* **State** (``state_cache``, bytes per sequence and layer, constant in the context): the SSM state
  ``n_m·d_m·d_s`` in fp32 (the scan works in float32 and transformers' cache keeps its final state as it
  comes; Nemotron-H's ``mamba_ssm_cache_dtype`` is float32), and the convolution state, the last ``K_c``
  inputs of the ``W`` channels, in the activations' dtype.
* **Saved** (training, ``saved``): what transformers' torch fallback holds for backward after a training
  forward, each part on the component that saves it: ``in_proj``'s input (the layer's own), the convolution's
  input (a view of ``in_proj``'s whole output: the gate, x·B·C and dt) and padded output, the scan's tensors
  (:func:`_scan_saved`: the discretisation's, and in fp32 over the padded chunks the decays, scores,
  ``einsum``'s copies of B, C, x and the states, the output), the gated norm's and ``out_proj``'s input. The
  convention is a run in the activations' dtype below fp32, where each ``.float()`` is a copy (in an fp32 run
  the copies of x, dt and the gate are views of tensors already held: ``4·b·s·(2·n_g·d_s − d_i − n_m)`` bytes
  apart, tests/test_mamba.py), and the general case: more than one head, a state of more than one, at least
  two chunks (with one head, one chunk or a state of 1, ``torch.einsum`` reuses some tensors where it
  otherwise copies). mamba_ssm's fused ``mamba_split_conv1d_scan_combined`` (what transformers runs when it is
  installed) saves far less: no ``S``-sized fp32 tensor (docs/conventions.md, "Mamba-2"). No named stack
  models the layer (each refuses it). **Live** (the inference working set): what the torch fallback scan holds at its
  moments, measured on CPU by the live storages' bytes (:func:`_scan_live`).

>>> from symllm.arch.layers import Structure, LayerKind
>>> from symllm.arch.symbols import d
>>> m = mamba2(Structure(kinds=(LayerKind(mixer="mamba", ffn="none"),)))
>>> [c.name for c in m.children]
['in_proj', 'conv1d', 'A_log', 'D', 'dt_bias', 'ssd_scan', 'norm', 'out_proj']
>>> sp.expand(m.total("params") - (d * (2*n_m*d_m + 2*n_g*d_s + n_m) + (n_m*d_m + 2*n_g*d_s)*K_c
...                                 + 3*n_m + n_m*d_m + n_m*d_m*d))
0
"""
from __future__ import annotations

import sympy as sp

from symllm.arch.components.base import ELEMENTWISE, Component, Rules, T, linear
from symllm.arch.components.norms import rmsnorm
from symllm.arch.dtypes import FP32
from symllm.arch.layers import LayerKind, Structure
from symllm.arch.recurrent_sizes import conv_state_bytes, mamba_conv_channels
from symllm.arch.symbols import K_c, Q_c, b, beta_a, d, d_m, d_s, n_g, n_m, s, t

__all__ = ["mamba2", "inner", "conv_channels", "ssm_state", "conv_state", "spanning_norm"]

#: the stacks model none of it: a stack's refusal names this
_LABEL = "a Mamba-2 mixer (Nemotron-H)"


def inner() -> sp.Expr:
    """The mixer's inner width ``d_i = n_m·d_m`` (transformers' ``intermediate_size``).

    >>> inner()
    d_m*n_m
    """
    return n_m * d_m


def conv_channels() -> sp.Expr:
    """The channels of the short convolution: x, B and C side by side.

    >>> conv_channels()
    d_m*n_m + 2*d_s*n_g
    """
    return mamba_conv_channels(n_m, d_m, n_g, d_s)


def ssm_state() -> sp.Expr:
    """Bytes of one sequence's SSM state in one layer: ``n_m`` matrices of ``d_m × d_s``, fp32.

    >>> ssm_state()
    4*d_m*d_s*n_m
    """
    return FP32 * n_m * d_m * d_s


def conv_state() -> sp.Expr:
    """Bytes of one sequence's convolution state in one layer: the last ``K_c`` inputs of every channel, in
    the activations' dtype, as transformers' cache keeps them (:func:`~symllm.arch.recurrent_sizes.conv_state_bytes`).

    >>> conv_state()
    K_c*beta_a*(d_m*n_m + 2*d_s*n_g)
    """
    return conv_state_bytes(conv_channels(), K_c, beta_a)


def spanning_norm() -> sp.Expr:
    """1 where the gated norm's one group spans the tensor ranks (``n_g = 1``), else 0: vLLM's
    ``Mixer2RMSNormGated.forward_native`` (vllm/model_executor/layers/mamba/mamba2/mamba_mixer2.py, vllm-project/vllm
    commit 2e0714afc079f2c76e0666f5089c42f231cfea62, read 2026-11-29), which ``forward_cuda`` runs whenever
    ``n_groups % tp_size != 0 or n_groups != 1``, sums each token's squares on the rank's ``d_i/N_t`` columns and,
    with ``n_groups == 1`` and ``tp_size > 1``, all-reduces those sums (``tensor_model_parallel_all_reduce`` of
    ``(tokens, 1)`` fp32: ``x`` is fp32 once multiplied by ``silu(gate.to(float32))``); with ``n_groups`` a
    multiple of the ranks each rank normalises its own groups, no collective (any other ``n_groups`` the ranks
    refuse: :mod:`symllm.costs.checks`). Written ``1 - min(1, n_g - 1)`` for a whole ``n_g ≥ 1``.

    >>> [spanning_norm().subs(n_g, g) for g in (1, 2, 8)]
    [1, 0, 0]
    """
    return 1 - sp.Min(1, n_g - 1)


def spanning_norms(comp: Component) -> sp.Expr:
    """The all-reduces of a fp32 statistic a token that the parts of ``comp`` declare (``Rules.stat_reduces``:
    the Mamba-2 gated norms whose one group spans the tensor ranks, :func:`spanning_norm`), repeats included; 0
    where none does.

    >>> from symllm import api
    >>> spanning_norms(api.spec("llama3.2-1b").model()), spanning_norms(api.spec("nemotron-h-8b").model())
    (0, (1 - Min(1, n_g - 1))*(L - L_2 - L_3))
    """
    return comp.repeat * (comp.rules.stat_reduces + sum((spanning_norms(c) for c in comp.children), sp.S.Zero))


def _rules(split: str, name: str, gguf: str) -> Rules:
    """A projection of the mixer: its split, its name (PEFT adapts it under the module's name), its GGUF
    name (llama.cpp's ``ssm_in`` / ``ssm_out``), a linear weight, and no stack."""
    return Rules(split, lora=(name, name), weight="linear", stacks=(), label=_LABEL, gguf=gguf)


def _one_token() -> sp.Expr:
    """1 for a pass of one token (``s = 1``: the recurrent update), 0 for more (the chunked scan).

    >>> [_one_token().subs(s, x) for x in (1, 2, 200)]
    [1, 0, 0]
    """
    return 1 - sp.Min(s - 1, 1)


def _scan(positions: sp.Expr) -> sp.Expr:
    """Matmul FLOPs of the chunked SSD scan over ``positions`` of one sequence (module docstring).

    >>> _scan(s).subs({s: 5, Q_c: 4, n_m: 1, d_m: 1, d_s: 1})  # 2·(2·16·2 + 2·2·4 + 3²)
    178
    """
    c = sp.ceiling(positions / Q_c)
    return 2 * n_m * (c * Q_c ** 2 * (d_s + d_m) + 2 * c * Q_c * d_m * d_s + (c + 1) ** 2 * d_m * d_s)


def _scan_elementwise() -> sp.Expr:
    """Element-wise FLOPs of the SSD scan in one pass of ``b`` sequences of ``s`` tokens, transformers' torch
    fallback op by op (the module docstring): ``A = -exp(A_log)`` once a pass (``n_m``), then per sequence

    * the chunked scan (``s > 1``; ``c = ⌈s/Q_c⌉`` chunks, ``S = c·Q_c`` padded positions): per token and head
      ``dt + dt_bias``, softplus (3), the clamp to ``time_step_limit`` (2) and ``A·dt`` (7); per token and
      element of a head ``x·dt`` (1); per padded position and element of a head the ``D`` skip's product and
      add, ``Y_off``'s decay and ``Y_diag + Y_off`` (4); per padded position and head the decays' cumulative
      sum, ``last − cum`` and its exp, ``exp(cum)`` (4); per padded position, head and state element ``B``'s
      decay (1); per chunk and head the segment sum's ``Q_c × Q_c`` cumulative sum, its exp and ``G·L`` (3·Q_c²);
      per head the chunk-to-chunk decays over ``c + 1`` states, cumulative sum and exp (2·(c + 1)²);
    * the recurrent step (``s = 1``, ``mamba2_selective_state_update``, every head's ``dt``, ``A``, ``D``
      broadcast over its ``d_m`` elements): per element of a head ``dt + dt_bias``, softplus and the ``D`` skip's
      product and add (6); per element of the state ``dt·A``, its exp, ``dt·B``, ``·x``, the state's decay and
      update (6).

    >>> _scan_elementwise().subs({b: 1, s: 5, Q_c: 4, n_m: 2, d_m: 3, d_s: 4})  # tests/test_elementwise.py by hand
    650
    >>> _scan_elementwise().subs({b: 1, s: 1, n_m: 2, d_m: 3, d_s: 4})  # 2 + 6·6 + 6·24
    182
    """
    c = sp.ceiling(s / Q_c)
    padded = c * Q_c
    chunked = (7 * s * n_m + s * n_m * d_m + 4 * padded * n_m * d_m + 4 * padded * n_m + padded * n_m * d_s
               + 3 * n_m * c * Q_c ** 2 + 2 * n_m * (c + 1) ** 2)
    one = _one_token()
    return n_m + b * ((1 - one) * chunked + one * 6 * n_m * d_m * (1 + d_s))


def _scan_saved() -> sp.Expr:
    """Bytes a training forward of the SSD scan (transformers' torch fallback, ``mamba2_chunk_scan``, and the
    ``A = -exp(A_log)`` before it) saves for backward, as a run in the activations' dtype ``β_a`` below fp32
    holds them (each ``.float()`` of an activation is then a copy; in an fp32 run it is the same storage:
    docs/conventions.md, "Mamba-2"). Per token and head: dt after ``dt_bias`` (softplus's input) and after
    softplus (the clamp's input) in ``β_a``, and the two fp32 copies of the clamped dt the discretisation
    multiplies by (``2·β_a + 2·4``); ``exp(A_log)`` and its negation, fp32 per head; the fp32 copy of x that
    ``x·dt`` saves (``4·b·s·d_i``). Then in fp32, per head of a sequence (``H = b·n_m``) with ``c = ⌈s/Q_c⌉``
    chunks and ``S = c·Q_c`` padded positions, per padded position: the two decays ``exp(A_cumsum)`` and
    ``exp(A_last − A_cumsum)`` (2), the ``Q_c``-wide decays ``L``, scores ``G`` and ``einsum``'s copy of ``G·L``
    (``3·Q_c``), B padded, ``einsum``'s copies of B and C for the scores, of B decayed for the chunk states and
    of C for its product with them (``5·d_s``), the ``D`` skip's padded x, ``einsum``'s two copies of the
    discretised x, C's product with the states and the padded output the gated norm multiplies (``5·d_m``);
    per head the chunk decays (``(c + 1)²``), ``einsum``'s copies of the ``c + 1`` states and of the ``c``
    starting states (``(2·c + 1)·d_m·d_s``); and the segment sums' four bool masks, ``2·Q_c² + 2·(c + 1)²``
    bytes.

    One sequence of 5 in bf16, chunks of 4 (c = 2, S = 8), one head of 1, state 1: dt ``5·(2·2 + 2·4) = 60``,
    A 8, x 20, then ``4·(8·(2 + 12 + 5 + 5) + 9 + 5) = 824`` and the masks ``32 + 18``:

    >>> _scan_saved().subs({b: 1, s: 5, Q_c: 4, n_m: 1, d_m: 1, d_s: 1, beta_a: 2})
    962
    """
    c = sp.ceiling(s / Q_c)
    S, H = c * Q_c, b * n_m
    per_token = 2 * beta_a * T * n_m + FP32 * (2 * T * n_m + T * inner())
    scan = FP32 * (2 * n_m + H * S * (2 + 3 * Q_c + 5 * d_s + 5 * d_m) + H * (c + 1) ** 2
                   + H * (2 * c + 1) * d_m * d_s)
    return per_token + scan + 2 * Q_c ** 2 + 2 * (c + 1) ** 2


def _scan_live() -> tuple[sp.Expr, ...]:
    """Activation elements live at the working set's four candidate moments of one Mamba-2 prefill through
    transformers' torch fallback (``mamba2_chunk_scan``), measured on CPU by the live storages' bytes
    (tests/test_mamba.py; the peak takes the largest). Held throughout the scan: ``in_proj``'s output (the gate
    and dt are views of it), the convolution's output, dt after its softplus and clamp, and ``A = -exp(A_log)``:
    ``b·s·(d_i + 2·W + 2·n_m) + n_m``. Then in fp32 (``⌈4/β_a⌉`` whole activation elements each), per head of
    a sequence, with ``c = ⌈s/Q_c⌉`` chunks and ``S = c·Q_c`` padded positions, the locals the scan keeps
    (``D``'s residual, x·dt, B and C padded, A padded and its cumulative sum, the ``Q_c × Q_c`` decays, the
    scores G and their decayed M, ``Y_diag``, B decayed, the chunk decays, ``(c + 1)²``) and

    * the chunk decays' segment sum: the ``c + 1`` states and the zero first state (``(c + 2)·d_m·d_s``), three
      ``(c + 1)²`` tensors (the masked copy, its cumulative sum, the masked sum) and two ``(c + 1)²`` bool
      masks; per position ``3·Q_c + 3·d_m + 3·d_s + 3``;
    * the chunk-to-chunk einsum: the ``c + 1`` states, ``einsum``'s contiguous copy of them and its output,
      and the zero first state (``(3·c + 4)·d_m·d_s``); per position ``3·Q_c + 3·d_m + 3·d_s + 3``;
    * C with each chunk's starting state: the ``c + 1`` new states, ``einsum``'s copies of C and of the ``c``
      states and its output, the zero first state; per position ``3·Q_c + 4·d_m + 4·d_s + 4``, per head
      ``(2·c + 2)·d_m·d_s``;
    * the output ``Y_diag + Y_off``: the ``c + 1`` new states and the zero first state, per position
      ``3·Q_c + 7·d_m + 3·d_s + 4`` (C's product with the states, ``Y_off``, the sum and its contiguous copy).

    fused kernels (mamba_ssm's ``mamba_chunk_scan_combined``) hold none of the ``S``-sized fp32 tensors.

    One sequence of 5 in fp32, chunks of 4, one head of 1, state 1: held ``5·(1 + 6 + 2) + 1 = 46``, then
    ``8·21 + 4 + 27 + ⌈18/4⌉``, ``8·21 + 10 + 9``, ``8·24 + 6 + 9`` and ``8·26 + 4 + 9``:

    >>> [x.subs({b: 1, s: 5, Q_c: 4, n_m: 1, d_m: 1, d_s: 1, n_g: 1, beta_a: 4}) for x in _scan_live()]
    [250, 233, 253, 267]
    """
    c = sp.ceiling(s / Q_c)
    S, f = c * Q_c, sp.ceiling(FP32 / beta_a)
    held = T * (inner() + 2 * conv_channels() + 2 * n_m) + n_m
    return (held + f * b * n_m * (S * (3 * Q_c + 3 * d_m + 3 * d_s + 3) + (c + 2) * d_m * d_s + 3 * (c + 1) ** 2)
            + sp.ceiling(2 * (c + 1) ** 2 / beta_a),
            held + f * b * n_m * (S * (3 * Q_c + 3 * d_m + 3 * d_s + 3) + (3 * c + 4) * d_m * d_s + (c + 1) ** 2),
            held + f * b * n_m * (S * (3 * Q_c + 4 * d_m + 4 * d_s + 4) + (2 * c + 2) * d_m * d_s + (c + 1) ** 2),
            held + f * b * n_m * (S * (3 * Q_c + 7 * d_m + 3 * d_s + 4) + (c + 2) * d_m * d_s + (c + 1) ** 2))


def _parameter(name: str, gguf: str, doc: str) -> Component:
    """One of the per-head vectors ``A_log``, ``D``, ``dt_bias``."""
    return Component(name, params=n_m, doc=doc,
                     rules=Rules("heads", lora=(), weight="decay", stacks=(), label=_LABEL, hf=name, gguf=gguf))


def mamba2(structure: Structure | None = None, kind: LayerKind = LayerKind(mixer="mamba", ffn="none"),
           **_) -> Component:
    """A Mamba-2 mixer (module docstring) of a model of ``structure`` (``conv_bias``: the convolution's bias;
    ``mamba_bias``: biases on ``in_proj`` and ``out_proj``).

    >>> m = mamba2()
    >>> m.total("kv_cache"), m.child("ssd_scan").flops.subs({s: 1, t: 3})
    (0, 2*b*d_m*d_s*n_m)
    """
    conv_bias = structure is not None and structure.conv_bias
    bias = structure is not None and structure.mamba_bias
    width, d_i = conv_channels(), inner()
    # tensor parallelism (symllm.costs.parallel): in_proj's gate, x, B, C and dt each split by its heads or groups
    # (vLLM's MergedColumnParallelLinear), the convolution, A_log, D, dt_bias and gated norm with them, out_proj
    # row-wise
    project = linear("in_proj", d, d_i + width + n_m, bias,
                     doc="self.in_proj = nn.Linear(hidden_size, intermediate_size + conv_dim + num_heads)",
                     rules=_rules("merged", "in_proj", "ssm_in"))
    one, first = _one_token(), 1 - sp.Min(t, 1)
    positions = 2 * one + (1 - one) * (first * (s + K_c - 1) + (1 - first) * (s + 2 * K_c - 1))
    conv = Component("conv1d", params=width * K_c + (width if conv_bias else 0),
                     flops=2 * K_c * b * width * positions,
                     elementwise=ELEMENTWISE["silu"] * T * width,
                     # saved: its input, a transposed view of in_proj's whole output (the gate and dt with
                     # it), and its output over the s + K_c - 1 padded positions (SiLU's input)
                     saved=beta_a * (T * (d_i + width + n_m) + b * width * (s + K_c - 1)),
                     doc="self.conv1d = nn.Conv1d(conv_dim, conv_dim, conv_kernel, groups=conv_dim, "
                         "bias=use_conv_bias)",
                     rules=Rules("heads", lora=(), weight="conv", stacks=(), label=_LABEL, hf="conv1d",
                                 gguf="ssm_conv1d"))
    scan = Component("ssd_scan", flops=b * ((1 - one) * _scan(s) + one * 2 * n_m * d_m * d_s),
                     elementwise=_scan_elementwise(), saved=_scan_saved(),
                     doc="mamba2_chunk_scan (chunk_size) / mamba2_selective_state_update",
                     rules=Rules("replicated", lora=(), stacks=(), label=_LABEL))
    norm = rmsnorm("norm", d_i, T, "self.norm = NemotronHRMSNormGated(intermediate_size, group_size=intermediate_size "
                   "// n_groups)  # rmsnorm(y * silu(z)) per group",
                   Rules("heads", lora=(), weight="norm", stacks=(), label=_LABEL, hf="norm", gguf="ssm_norm",
                         stat_reduces=spanning_norm()))
    norm = norm.replace(elementwise=norm.elementwise + (ELEMENTWISE["silu"] + ELEMENTWISE["gate"]) * T * d_i,
                        # saved: the gate's fp32 copy and its SiLU, y·silu(z), its normalised rows and
                        # 1/rms (fp32), out_proj's input (cast back to the activations' dtype)
                        saved=FP32 * T * (4 * d_i + n_g) + beta_a * T * d_i)
    out = linear("out_proj", d_i, d, bias, doc="self.out_proj = nn.Linear(intermediate_size, hidden_size)",
                 rules=_rules("row", "out_proj", "ssm_out"))
    return Component(
        "mamba",
        state_cache=b * (ssm_state() + conv_state()),
        saved=beta_a * T * d,  # the normed input of in_proj
        live=_scan_live(),
        children=(project, conv, _parameter("A_log", "ssm_a", "self.A_log = nn.Parameter(torch.log(A))"),
                  _parameter("D", "ssm_d", "self.D = nn.Parameter(torch.ones(num_heads))"),
                  _parameter("dt_bias", "ssm_dt", "self.dt_bias = nn.Parameter(torch.ones(num_heads))"),
                  scan, norm, out),
        doc="NemotronHMamba2Mixer",
        rules=Rules("replicated", lora=(), stacks=(), label=_LABEL, hf="mixer"),
    )
