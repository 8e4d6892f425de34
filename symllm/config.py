"""Model configurations: :class:`ModelConfig`, HF ``config.json`` and Meta ``params.json`` loading,
validation, and the presets shipped in ``symllm/presets/``.

>>> cfg = load("llama3.1-8b")
>>> cfg.dim, cfg.n_kv_heads, cfg.hidden_dim is None, cfg.ffn_dim_multiplier
(4096, 8, True, 1.3)
>>> from_hf({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
...          "intermediate_size": 172, "vocab_size": 100}).hidden_dim
172
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import SymllmError
from .files import read_text

__all__ = ["ModelConfig", "derive_heads", "from_meta", "from_hf", "from_dict", "load", "preset_names", "preset_info"]


def _positive_int(field: str, value, *, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and value > 0:
            return int(value)
        raise SymllmError(f"{field}: expected a positive integer, got {value!r}")
    if value <= 0:
        raise SymllmError(f"{field}: expected a positive integer, got {value!r}")
    return value


def _positive_float(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise SymllmError(f"{field}: expected a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A LLaMA-family configuration, in Meta's field names, checked on creation.

    ``n_kv_heads`` and ``head_dim`` are resolved (``n_heads``, ``dim // n_heads``) when not given;
    ``hidden_dim`` stays ``None`` unless a config states it, in which case it is used as is and
    never re-rounded; otherwise Meta's ``multiple_of`` / ``ffn_dim_multiplier`` rounding derives it.

    >>> ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4).head_dim
    16
    >>> ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=5)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_heads: 5 does not divide dim 64 (give head_dim explicitly)
    """

    #: vocabulary size V
    vocab_size: int
    #: model width d
    dim: int
    #: number of blocks L
    n_layers: int
    #: query heads n_h
    n_heads: int
    #: key/value heads n_kv (None: n_heads, i.e. MHA)
    n_kv_heads: int | None = None
    #: per-head width d_h (None: dim // n_heads)
    head_dim: int | None = None
    #: SwiGLU width d_ff when the config states it (HF intermediate_size); None: Meta's rounding
    hidden_dim: int | None = None
    #: Meta's rounding granule m
    multiple_of: int = 256
    #: Meta's width multiplier f (None: no multiplier step)
    ffn_dim_multiplier: float | None = None
    #: lm_head shares the embedding matrix
    tie_embeddings: bool = False
    #: q/k/v/o projections have biases (HF attention_bias)
    attention_bias: bool = False
    #: w1/w2/w3 have biases (HF mlp_bias)
    mlp_bias: bool = False
    #: RMSNorm epsilon (no effect on counts)
    norm_eps: float = 1e-5
    #: RoPE base (no effect on counts)
    rope_theta: float = 10000.0
    #: a name for reports
    name: str = "custom"
    #: which of n_kv_heads / head_dim were derived rather than given (replace() derives them again)
    derived: frozenset = dataclasses.field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self):
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen)
        put("derived", frozenset(k for k in ("n_kv_heads", "head_dim") if getattr(self, k) is None))
        for field in ("vocab_size", "dim", "n_layers", "n_heads", "multiple_of"):
            put(field, _positive_int(field, getattr(self, field)))
        for field in ("n_kv_heads", "head_dim", "hidden_dim"):
            put(field, _positive_int(field, getattr(self, field), optional=True))
        heads, failed = derive_heads(self.dim, self.n_heads, self.n_kv_heads, self.head_dim)
        for field, ok, message in failed:
            if not ok:
                raise SymllmError(message())
        put("n_kv_heads", heads["n_kv_heads"])
        put("head_dim", heads["head_dim"])
        f = self.ffn_dim_multiplier
        if f is not None:
            put("ffn_dim_multiplier", _positive_float("ffn_dim_multiplier", f))
            if f * (8 * self.dim // 3) >= 2**53:  # past this Meta's float product is no longer an exact width
                raise SymllmError(f"ffn_dim_multiplier: {f!r} makes hidden_dim larger than 2**53")
        for field in ("norm_eps", "rope_theta"):
            put(field, _positive_float(field, getattr(self, field)))
        for field in ("tie_embeddings", "attention_bias", "mlp_bias"):
            if not isinstance(getattr(self, field), bool):
                raise SymllmError(f"{field}: expected true or false, got {getattr(self, field)!r}")

    @property
    def hidden_rule(self) -> str:
        """Where d_ff comes from: "explicit", "meta" (with f) or "meta_plain" (without)."""
        if self.hidden_dim is not None:
            return "explicit"
        return "meta" if self.ffn_dim_multiplier is not None else "meta_plain"

    @property
    def attention_kind(self) -> str:
        """"MHA", "MQA" or "GQA", from n_kv_heads."""
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def replace(self, **changes) -> ModelConfig:
        """A copy with some fields changed, validated again; what was derived is derived again.

        >>> cfg = ModelConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4)
        >>> cfg.replace(dim=256, n_heads=8).head_dim, cfg.replace(dim=256, n_heads=8).n_kv_heads
        (32, 8)
        """
        again = {k: None for k in self.derived if k not in changes}
        return dataclasses.replace(self, **again, **changes)

    def to_dict(self) -> dict:
        """The fields as a plain dict (JSON-ready)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}


def derive_heads(dim, n_heads, n_kv_heads=None, head_dim=None):
    """``n_kv_heads`` and ``head_dim`` as a config derives them (``None``: not stated), and the checks
    they must pass as ``(field, ok, message)`` (``message()`` is the error line). The one statement of the rule: :class:`ModelConfig`
    raises on the first failed check, a sweep drops the points that fail. Works element-wise on numpy
    integer arrays too.

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


def _require(raw: dict, key: str, kind: str):
    if key not in raw:
        raise SymllmError(f"{key}: missing from the {kind} config")
    return raw[key]


def from_meta(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from Meta's ``params.json`` fields (``dim``, ``n_layers``, ``multiple_of``, …).

    LLaMA 1 and 2 ``params.json`` say ``"vocab_size": -1`` (the tokenizer sets it): pass the real
    size as ``vocab_size``.

    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": -1})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: vocab_size: -1 in params.json (Meta's tokenizer sets it); give the vocabulary size (--vocab-size)
    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": -1}, vocab_size=100).vocab_size
    100
    """
    V = vocab_size if vocab_size is not None else _require(raw, "vocab_size", "Meta")
    if V == -1:
        raise SymllmError("vocab_size: -1 in params.json (Meta's tokenizer sets it); "
                          "give the vocabulary size (--vocab-size)")
    return ModelConfig(
        vocab_size=V,
        dim=_require(raw, "dim", "Meta"),
        n_layers=_require(raw, "n_layers", "Meta"),
        n_heads=_require(raw, "n_heads", "Meta"),
        n_kv_heads=raw.get("n_kv_heads"),
        multiple_of=raw.get("multiple_of", 256),
        ffn_dim_multiplier=raw.get("ffn_dim_multiplier"),
        tie_embeddings=raw.get("tie_word_embeddings", False),
        norm_eps=raw.get("norm_eps", 1e-5),
        rope_theta=raw.get("rope_theta", 10000.0),
        name=name,
    )


def from_hf(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from a HuggingFace ``LlamaConfig`` / ``MistralConfig`` ``config.json``.

    ``intermediate_size`` is the SwiGLU width as is: it is never re-rounded.

    >>> from_hf({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    ...          "num_key_value_heads": 2, "intermediate_size": 172, "vocab_size": 100,
    ...          "tie_word_embeddings": True}).attention_kind
    'GQA'
    """
    try:
        return _from_hf(raw, vocab_size, name)
    except SymllmError as e:  # name the field as the user's file does
        field, _, rest = str(e).partition(":")
        raise SymllmError(f"{_HF_NAMES.get(field, field)}:{rest}") from None


_HF_NAMES = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
             "n_kv_heads": "num_key_value_heads", "hidden_dim": "intermediate_size",
             "tie_embeddings": "tie_word_embeddings", "norm_eps": "rms_norm_eps"}


def _from_hf(raw: dict, vocab_size, name) -> ModelConfig:
    return ModelConfig(
        vocab_size=vocab_size if vocab_size is not None else _require(raw, "vocab_size", "HF"),
        dim=_require(raw, "hidden_size", "HF"),
        n_layers=_require(raw, "num_hidden_layers", "HF"),
        n_heads=_require(raw, "num_attention_heads", "HF"),
        n_kv_heads=raw.get("num_key_value_heads"),
        head_dim=raw.get("head_dim"),
        hidden_dim=_require(raw, "intermediate_size", "HF"),
        tie_embeddings=raw.get("tie_word_embeddings", False),
        attention_bias=raw.get("attention_bias", False),
        mlp_bias=raw.get("mlp_bias", False),
        norm_eps=raw.get("rms_norm_eps", 1e-6),
        rope_theta=raw.get("rope_theta", 10000.0),
        name=name,
    )


def from_dict(raw, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from either format, told apart by its keys (``hidden_size``… HF, ``dim``… Meta)."""
    if not isinstance(raw, dict):
        raise SymllmError(f"config: expected a JSON object, got {type(raw).__name__}")
    if raw.keys() & {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"}:
        return from_hf(raw, vocab_size=vocab_size, name=name)
    if raw.keys() & {"dim", "n_layers", "n_heads"}:
        return from_meta(raw, vocab_size=vocab_size, name=name)
    raise SymllmError("config: neither a HF config.json (hidden_size) nor a Meta params.json (dim)")


def _read_json(path: Path):
    text = read_text(path, "config")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SymllmError(f"config: {str(path)!r} is not valid JSON ({e.msg} at line {e.lineno})") from None


@lru_cache(maxsize=None)
def _presets() -> dict[str, dict]:
    out = {}
    for entry in resources.files("symllm").joinpath("presets").iterdir():
        if entry.name.endswith(".json"):
            data = json.loads(entry.read_text(encoding="utf-8"))
            out[data["name"]] = data
    return dict(sorted(out.items()))


def preset_names() -> list[str]:
    """The names of the shipped presets.

    >>> "llama3.1-405b" in preset_names()
    True
    """
    return list(_presets())


def preset_info(name: str) -> dict:
    """The preset's data file: ``name``, ``description``, ``source``, ``format``, ``config``."""
    presets = _presets()
    if name not in presets:
        close = difflib.get_close_matches(name, presets, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else " (symllm presets lists them)"
        raise SymllmError(f"model: unknown preset {name!r}{hint}")
    return presets[name]


def load(model: str | Path, *, vocab_size: int | None = None) -> ModelConfig:
    """A preset name or the path of a ``config.json`` / ``params.json``.

    >>> load("no-such-model")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: model: unknown preset 'no-such-model' (symllm presets lists them)
    """
    path = Path(model)
    if path.suffix == ".json" or path.exists():
        return from_dict(_read_json(path), vocab_size=vocab_size, name=path.stem)
    info = preset_info(str(model))
    return from_dict(info["config"], vocab_size=vocab_size, name=info["name"])
