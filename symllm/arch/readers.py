"""Reading a config file: Meta's ``params.json`` (:func:`from_meta`), a Hugging Face ``config.json``
(:func:`from_hf`, each model type by its family in :mod:`symllm.arch.families`), symllm's own
(``count --json``'s ``config``: :func:`from_symllm`), and any of them told apart (:func:`from_dict`); each
gives a :class:`symllm.arch.config.ModelConfig`.

>>> from_hf({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
...          "intermediate_size": 172, "vocab_size": 100}).hidden_dim
172
"""
from __future__ import annotations

import dataclasses

from symllm.arch.config import ModelConfig
from symllm.arch.families.hf import read as _read_hf
from symllm.arch.widths import meta_width
from symllm.errors import SymllmError
from symllm.validate import positive_int
from symllm.validate import short as _short

__all__ = ["META_KEYS", "SYMLLM_KEYS", "from_meta", "from_hf", "from_symllm", "from_dict", "closest"]


def closest(word: str, among, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The known words closest to a misspelt one, best first, at most ``n`` of them scoring ``cutoff`` or
    more (difflib loads only when something is misspelt).

    >>> closest("n_layer", ["n_layers", "n_heads", "dim"])
    ['n_layers']
    >>> closest("xyz", ["n_layers"])
    []
    """
    import difflib
    return difflib.get_close_matches(word, among, n=n, cutoff=cutoff)


def _unknown_key(key, known, where: str, otherwise: str = "") -> None:
    """Refuse ``key`` of a ``where`` file in one line naming it (shortened unless a plain name), with the
    nearest of the ``known`` keys, else ``otherwise``."""
    close = closest(str(key), known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else otherwise
    shown = key if isinstance(key, str) and key.isidentifier() and len(key) <= 60 else _short(key)
    raise SymllmError(f"{shown}: unknown key in {where}{hint}")


def _require(raw: dict, key: str, kind: str):
    if key not in raw:
        raise SymllmError(f"{key}: missing from the {kind} config")
    return raw[key]


#: the keys a Meta ``params.json`` may hold: ``ModelArgs``' fields (``head_dim`` and ``hidden_dim`` used
#: as stated), ``tie_word_embeddings`` (symllm's addition), and those that change no count
#: (``use_scaled_rope``, ``max_seq_len``, …). Any other key is refused, naming the close match.
META_KEYS = ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of", "ffn_dim_multiplier",
             "norm_eps", "rope_theta", "head_dim", "hidden_dim", "tie_word_embeddings", "use_scaled_rope",
             "rope_scaling_factor", "max_batch_size", "max_seq_len")


def from_meta(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from Meta's ``params.json`` fields (``dim``, ``n_layers``, ``multiple_of``, …).

    LLaMA 1 and 2 ``params.json`` say ``"vocab_size": -1`` (the tokenizer sets it): pass the real
    size as ``vocab_size``. ``head_dim`` and ``hidden_dim`` are used as stated; a key outside
    :data:`META_KEYS` is refused, naming the close match.

    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "n_kv_head": 2, "vocab_size": 100})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_kv_head: unknown key in a Meta params.json; did you mean 'n_kv_heads'?

    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": -1})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: vocab_size: -1 in params.json (Meta's tokenizer sets it); give --vocab-size
    >>> from_meta({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": -1}, vocab_size=100).vocab_size
    100
    """
    for key in raw:
        if key not in META_KEYS:
            _unknown_key(key, META_KEYS, "a Meta params.json", " (symllm does not model it)")
    V = vocab_size if vocab_size is not None else _require(raw, "vocab_size", "Meta")
    if V == -1:
        raise SymllmError("vocab_size: -1 in params.json (Meta's tokenizer sets it); give --vocab-size")
    for key in ("head_dim", "hidden_dim"):
        if key in raw and raw[key] is None:
            positive_int(key, None)  # refused: the one message
    return ModelConfig(
        vocab_size=V,
        dim=_require(raw, "dim", "Meta"),
        n_layers=_require(raw, "n_layers", "Meta"),
        n_heads=_require(raw, "n_heads", "Meta"),
        n_kv_heads=raw.get("n_kv_heads"),
        head_dim=raw.get("head_dim"),
        hidden_dim=raw.get("hidden_dim"),
        multiple_of=raw.get("multiple_of", 256),
        ffn_dim_multiplier=raw.get("ffn_dim_multiplier"),
        tie_embeddings=raw.get("tie_word_embeddings", False),
        norm_eps=raw.get("norm_eps", 1e-5),
        rope_theta=raw.get("rope_theta", 10000.0),
        rope_scaling="llama3" if raw.get("use_scaled_rope") else None,  # llama-models' apply_scaling: Llama 3's
        name=name,
    )


def from_hf(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from a HuggingFace ``config.json``, read as transformers' class for its ``model_type`` reads
    it (none: ``llama``). Each model type is read by its family, one module of :mod:`symllm.arch.families`
    (the keys it reads, their defaults, what it refuses); another model type, a key that changes the
    architecture in a way symllm does not model (:data:`HF_UNMODELLED`), or a value transformers would
    refuse (``4.0`` layers, ``"false"`` for a flag) is refused in one line naming it. ``intermediate_size``
    is the SwiGLU width as is: it is never re-rounded.

    >>> from_hf({"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
    ...          "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 172}).sliding_window
    4096
    >>> from_hf({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
    ...          "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 172}).n_moe_layers
    2

    >>> from_hf({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    ...          "num_key_value_heads": 2, "intermediate_size": 172, "vocab_size": 100,
    ...          "tie_word_embeddings": True}).attention_kind
    'GQA'
    """
    if not isinstance(raw, dict):
        raise SymllmError(f"config: expected a JSON object, got {type(raw).__name__}")

    def build(**fields):
        if vocab_size is not None:
            fields["vocab_size"] = vocab_size
        return ModelConfig(**fields, name=name)

    return _read_hf(raw, build)


#: the keys of symllm's own config (``symllm count --json``'s ``config``: :meth:`ModelConfig.to_dict` and what
#: :func:`symllm.arch.resolved.resolved_config` adds) that no Meta or HF file has; one of them tells it apart
SYMLLM_KEYS = ("tie_embeddings", "hidden_dim_rule")
#: what :func:`symllm.arch.resolved.resolved_config` adds to the fields: read back as checks, not as fields
_RESOLVED_EXTRAS = ("hidden_dim_rule", "attention")


def from_symllm(raw: dict, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from symllm's own fields: ``symllm count --json``'s ``config`` read back gives the same
    numbers. Its ``hidden_dim`` is the resolved width; where ``hidden_dim_rule`` says Meta's rounding
    derived it, it is derived again from the same fields, so the config keeps its rule. A ``hidden_dim``
    that is not what Meta's rounding gives (an edited width, or an edited ``dim``, ``multiple_of`` or
    ``ffn_dim_multiplier``) is refused in one line naming it: without ``hidden_dim_rule`` the width is
    used as stated, without ``hidden_dim`` it is derived. ``attention`` must be what the heads make. A
    key that is not a field is refused, naming the close match.

    >>> raw = {"vocab_size": 100, "dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 256,
    ...        "multiple_of": 256, "hidden_dim_rule": "meta_plain", "tie_embeddings": True}
    >>> cfg = from_symllm(raw)
    >>> cfg.hidden_dim, cfg.tie_embeddings
    (None, True)
    >>> from_symllm({**raw, "hidden_dim": 512})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: hidden_dim: 512 is not Meta's rounding (256); drop hidden_dim_rule to use it
    >>> from_symllm({k: v for k, v in {**raw, "hidden_dim": 512}.items() if k != "hidden_dim_rule"}).hidden_dim
    512
    >>> from_symllm({"vocab_size": 100, "dim": 64, "n_layers": 2, "n_heads": 4, "tie_embedding": True})
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tie_embedding: unknown key in a symllm config; did you mean 'tie_embeddings'?
    """
    known = [f.name for f in dataclasses.fields(ModelConfig) if f.init]
    for key in raw:
        if key not in known and key not in _RESOLVED_EXTRAS:
            _unknown_key(key, known, "a symllm config")
    fields = {k: v for k, v in raw.items() if k in known}
    for key in ("vocab_size", "dim", "n_layers", "n_heads"):
        if key not in fields and not (key == "vocab_size" and vocab_size is not None):
            raise SymllmError(f"{key}: missing in a symllm config")
    if isinstance(fields.get("weight_format_kept"), list):
        fields["weight_format_kept"] = tuple(fields["weight_format_kept"])
    kept = fields.get("weight_format_kept")
    if kept is not None and not (isinstance(kept, tuple) and all(isinstance(k, str) for k in kept)):
        raise SymllmError(f"weight_format_kept: expected a list of patterns, got {_short(kept)}")
    for key in ("name", "note", "weight_format", "weight_format_source", "kv_dtype", "kv_dtype_source"):
        if key in fields and not isinstance(fields[key], str) and not (key != "name" and fields[key] is None):
            raise SymllmError(f"{key}: expected a string, got {_short(fields[key])}")
    for key in ("moe_layers", "nope_layers", "window_layers"):
        if isinstance(fields.get(key), list):
            fields[key] = tuple(fields[key])
    fields.setdefault("name", name)
    if vocab_size is not None:
        fields["vocab_size"] = vocab_size
    rule = raw.get("hidden_dim_rule")
    stated = fields.pop("hidden_dim", None) if rule in ("meta", "meta_plain") else None
    cfg = ModelConfig(**fields)  # Meta's rounding made hidden_dim: derived again from the same fields
    if stated is not None and cfg.hidden_rule == rule:
        stated = positive_int("hidden_dim", stated)
        derived = meta_width(cfg.dim, cfg.multiple_of, cfg.ffn_dim_multiplier if rule == "meta" else None)
        if stated != derived:
            raise SymllmError(f"hidden_dim: {stated} is not Meta's rounding ({derived}); drop hidden_dim_rule "
                              "to use it")
    if rule is not None and cfg.hidden_rule != rule:
        raise SymllmError(f"hidden_dim_rule: {rule!r} does not match the fields (they give {cfg.hidden_rule!r})")
    if "attention" in raw and raw["attention"] != cfg.attention_kind:
        raise SymllmError(f"attention: {raw['attention']!r} does not match the heads "
                          f"(they give {cfg.attention_kind!r})")
    return cfg


def from_dict(raw, *, vocab_size: int | None = None, name: str = "custom") -> ModelConfig:
    """A config from any of the three formats, told apart by their keys (``hidden_size``… HF, ``dim``… Meta,
    ``tie_embeddings`` or ``hidden_dim_rule``: symllm's own, :func:`from_symllm`)."""
    if not isinstance(raw, dict):
        raise SymllmError(f"config: expected a JSON object, got {type(raw).__name__}")
    if raw.keys() & set(SYMLLM_KEYS) and not raw.keys() & {"hidden_size", "model_type"}:
        return from_symllm(raw, vocab_size=vocab_size, name=name)
    if raw.keys() & {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "model_type"}:
        return from_hf(raw, vocab_size=vocab_size, name=name)
    if raw.keys() & {"dim", "n_layers", "n_heads"}:
        return from_meta(raw, vocab_size=vocab_size, name=name)
    raise SymllmError("config: neither a HF config.json (hidden_size) nor a Meta params.json (dim)")


#: the shipped presets, one file each, named for the preset (``llama3.1-8b.json``)
