"""The widths a config derives: Meta's SwiGLU rounding (:func:`meta_width`, ``multiple_of`` and
``ffn_dim_multiplier``), the SwiGLU width of three matrices (:func:`swiglu_width`), and the head width and
key/value heads (:func:`derive_heads`). Plain Python, exact.

>>> meta_width(4096, 1024, 1.3)
14336
"""
from __future__ import annotations

from fractions import Fraction


__all__ = ["SWIGLU_RATIO", "swiglu_width", "meta_width", "meta_product_ok", "derive_heads"]


#: SwiGLU's width before Meta's multiplier and rounding, as a fraction of ``dim``: three matrices with the
#: parameters of a ``4·dim`` two-matrix MLP (llama/model.py: ``hidden_dim = int(2 * (4 * dim) / 3)``)
SWIGLU_RATIO = Fraction(8, 3)


def swiglu_width(dim):
    """``⌊8·dim/3⌋`` (:data:`SWIGLU_RATIO`), the one statement of the rule: on an int, a numpy integer
    array (a sweep) or a SymPy symbol (Meta's ``d_ff`` formula, :func:`symllm.arch.components.meta_hidden_dim`).

    >>> swiglu_width(4096)
    10922
    """
    return SWIGLU_RATIO.numerator * dim // SWIGLU_RATIO.denominator


def meta_width(dim: int, multiple_of: int, multiplier: float | None = None) -> int:
    """Meta's ``d_ff`` of one config in plain Python, as ``FeedForward.__init__`` in llama/model.py computes
    it (``int`` truncates the IEEE double product, as Meta's code does; :func:`meta_product_ok` keeps it
    exact): what :func:`from_symllm` compares an edited ``hidden_dim`` with. The closed form is
    :func:`symllm.arch.components.meta_hidden_dim`; tests/test_config.py checks the two agree.

    >>> meta_width(4096, 1024, 1.3), meta_width(34, 1, 0.7)
    (14336, 62)
    """
    hidden = swiglu_width(dim)
    if multiplier is not None:
        hidden = int(float(multiplier) * hidden)
    return multiple_of * -(-hidden // multiple_of)


def meta_product_ok(dim, multiplier):
    """Whether Meta's IEEE double product ``f·⌊8d/3⌋`` stays below 2**53, past which it is no longer exact:
    :class:`ModelConfig` refuses a config where it does not, a sweep drops such points (element-wise on
    numpy arrays).

    >>> meta_product_ok(4096, 1.3), meta_product_ok(10**17, 1.3)
    (True, False)
    """
    def ok(d, f) -> bool:
        try:
            return float(f) * swiglu_width(int(d)) < 2**53
        except OverflowError:  # dim beyond a double's range
            return False

    if not hasattr(dim, "shape") and not hasattr(multiplier, "shape"):
        return ok(dim, multiplier)
    import numpy as np  # a sweep's arrays (numpy is loaded already)

    dim, mult = np.asarray(dim), np.asarray(multiplier, dtype=np.float64)
    if dim.dtype != object and (not dim.size or dim.max() < 2**59):
        return mult * swiglu_width(dim.astype(np.int64)).astype(np.float64) < 2.0 ** 53
    return np.frompyfunc(ok, 2, 1)(dim, mult).astype(bool)


def derive_heads(dim, n_heads, n_kv_heads=None, head_dim=None):
    """``n_kv_heads`` and ``head_dim`` as a config derives them (``None``: not stated), and the checks
    they must pass as ``(field, ok, message)`` (``message()`` is the error line). The one statement of the rule:
    :class:`ModelConfig` raises on the first failed check, a sweep drops the points that fail. Works element-wise on
    numpy integer arrays too.

    * ``n_kv_heads`` defaults to ``n_heads`` (MHA) and must divide it;
    * ``head_dim`` defaults to ``dim // n_heads``, which must then divide exactly;
    * ``head_dim`` must be even (RoPE rotates pairs of elements).

    >>> heads, checks = derive_heads(4096, 32, 8)
    >>> heads, [ok for _, ok, _ in checks]
    ({'n_kv_heads': 8, 'head_dim': 128}, [True, True, True])
    >>> [m() for _, ok, m in derive_heads(64, 5)[1] if not ok][0]
    'n_heads: 5 does not divide dim 64 (give head_dim explicitly)'
    """
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    hd = dim // n_heads if head_dim is None else head_dim
    checks = [
        ("n_kv_heads", n_heads % n_kv == 0, lambda: f"n_kv_heads: {n_kv} does not divide n_heads {n_heads}"),
        ("n_heads", dim % n_heads == 0 if head_dim is None else True,
         lambda: f"n_heads: {n_heads} does not divide dim {dim} (give head_dim explicitly)"),
        ("head_dim", hd % 2 == 0, lambda: f"head_dim: {hd} is odd; RoPE rotates pairs of elements"),
    ]
    return {"n_kv_heads": n_kv, "head_dim": hd}, checks
