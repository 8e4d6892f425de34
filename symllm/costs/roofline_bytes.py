"""The roofline's memory term: the bytes a phase must read from or write to device memory at least once, every
intermediate assumed to stay on chip (which is what makes :mod:`symllm.costs.hardware`'s time a lower bound).

* ``prefill`` (``b`` prompts of ``s`` tokens, nothing cached): the weights read once,
  ``β_w·N_read``; the KV cache written, ``β_kv·K(s)`` (``K``: the model's KV-cache elements); the
  logits written, ``β_a·b·s_o·V`` (the ``s_o`` positions whose logits are computed, as FLOPs count them:
  the last of each sequence by default, every one with ``--logits all``).
* ``decode`` (one step of ``b`` sequences at context ``t``): the weights read once, ``β_w·N_read``; the
  cached keys and values read, ``β_kv·K(t)``; the new token's written, ``β_kv·K(1)``; the logits
  written, ``β_a·b·V``.
* a model with a per-sequence state (``memory.state_cache``, ``S`` bytes: a Gated DeltaNet's recurrent and
  convolution states) writes it in a prefill (``+S``) and reads and writes it in each decode step (``+2·S``).

``N_read`` is the parameters a matmul multiplies by: every parameter (norm weights too), except an
untied embedding table, of which a look-up reads only its tokens' rows (``b·s·d`` elements, left out:
repeated tokens share rows, so no fixed count is a lower bound); tied, the lm_head reads the whole
matrix. Routed experts count the ``k`` a token uses (``active``): a batch usually reads more, so for a
mixture of experts the bound is loose, never wrong. Attention's scores and probabilities never leave
the chip (flash attention), nor do the hidden states between layers.

A pipeline stage's bytes (:func:`stage_bytes`) are the same terms as tensor rank 0 of the stage holds them.
"""
from __future__ import annotations

from symllm._lazy import module
from symllm.errors import SymllmError

TYPE_CHECKING = False  # typing's own constant costs a count the import of typing
if TYPE_CHECKING:
    import sympy as sp

    from symllm.arch import symbols as S
else:  # the closed forms' SymPy, imported on first use (as symllm.costs.hardware does)
    sp, S = module("sympy"), module("symllm.arch.symbols")

__all__ = ["weights_read", "tied", "bytes_moved", "stage_bytes"]


def weights_read(mdl) -> sp.Expr:
    """``N_read``: the parameters a forward pass's matmuls read (see the module docstring): the model's
    ``active`` parameters less an untied embedding table.

    >>> from symllm.arch.components import model
    >>> weights_read(model(tied=True)) - model(tied=True).total("params")
    0
    >>> sp.expand(model().total("params") - weights_read(model()))
    V*d
    """
    active = mdl.total("active")
    if tied(mdl):  # tied: the lm_head multiplies by the whole table
        return active
    return active - sum((c.total("active") for c in mdl.children if c.rules.weight == "embedding"), sp.S.Zero)


def tied(mdl) -> bool:
    """Whether the model's output head (its rules' weight "head") is tied to the embedding: it owns no parameter.

    >>> from symllm.arch.components import model
    >>> tied(model(tied=True)), tied(model())
    (True, False)
    """
    return all(c.total("params") == 0 for c in mdl.children if c.rules.weight == "head")


def bytes_moved(mdl, phase: str) -> sp.Expr:
    """Bytes one ``prefill`` or one ``decode`` step must move to or from device memory (module docstring).

    >>> from symllm.arch.components import model
    >>> sp.expand(bytes_moved(model(tied=True), "decode")).coeff(S.t)
    2*L*b*beta_kv*d_h*n_kv
    >>> sp.expand(bytes_moved(model(), "prefill")).coeff(S.beta_a)
    V*b*s_o
    """
    kv = mdl.total("kv_cache")  # elements held after b sequences of s new tokens at context t
    weights = S.beta_w * weights_read(mdl)
    # a Gated DeltaNet's states (bytes): written by a prefill, read and written by a step
    state = mdl.total("state_cache")
    if phase == "prefill":
        return weights + S.beta_kv * kv.subs(S.t, 0) + S.beta_a * S.b * S.s_o * S.V + state
    if phase == "decode":
        new = kv.subs({S.s: 1, S.t: 0})  # the new token's keys and values, written
        cached = kv.subs(S.s, 1) - new    # those already cached at context t, read
        return weights + S.beta_kv * (cached + new) + S.beta_a * S.b * S.V + 2 * state
    raise SymllmError(f"phase: roofline bytes are for prefill or decode, got {phase!r}")


def stage_bytes(stage, phase: str, head_tied: bool, head) -> sp.Expr:
    """:func:`bytes_moved` for a pipeline stage as tensor rank 0 holds it (:func:`symllm.costs.parallel.stages`):
    its weights (a look-up reads none of an embedding table: untied, or tied on a stage without the head),
    its KV cache, and the logits (rank 0's vocabulary rows: :func:`symllm.costs.parallel.vocabulary`) where
    ``head`` is 1; ``head_tied``: whether the whole model's head is tied (:func:`tied`).

    >>> from symllm.arch.components import model
    >>> sp.expand(stage_bytes(model(), "decode", False, 1) - bytes_moved(model(), "decode")).coeff(S.beta_a)
    -V*b + b*ceiling(V/N_t)
    """
    from symllm.costs.parallel import vocabulary

    lookups = sum((c.total("active") for c in stage.children if c.rules.weight == "embedding"), sp.S.Zero)
    weights = S.beta_w * (stage.total("active") - lookups * (1 if not head_tied else 1 - head))
    kv = stage.total("kv_cache")
    state = stage.total("state_cache")  # a Gated DeltaNet's states: written by a prefill, read and written by a step
    rows = S.b * S.s_o if phase == "prefill" else S.b  # the positions whose logits are computed
    heads = [c for c in stage.walk() if c.rules.weight == "head"]
    logits = head * S.beta_a * rows * (vocabulary(heads[-1]) if heads else sp.ceiling(S.V / S.N_t))
    if phase == "prefill":
        return weights + S.beta_kv * kv.subs(S.t, 0) + logits + state
    # the cache read at context t, the new token's written; the states read and written
    return weights + S.beta_kv * kv.subs(S.s, 1) + logits + 2 * state
