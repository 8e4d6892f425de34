"""The presets shipped in ``symllm/presets/`` (:func:`preset_names`, :func:`preset_info`, their Hub ids) and
:func:`load`: a preset, a config file or folder, or a Hub id in the local cache, as a
:class:`symllm.arch.config.ModelConfig`; :func:`resolve`: any config as one (the one reader of every layer,
SymPy-free: serving figures and context checks read through it without loading a closed form).

>>> cfg = load("llama3.1-8b")
>>> cfg.dim, cfg.n_kv_heads, cfg.hidden_dim is None, cfg.ffn_dim_multiplier
(4096, 8, True, 1.3)
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from symllm.arch.config import ModelConfig
from symllm.arch.readers import closest, from_dict
from symllm.errors import SymllmError
from symllm.files import read_json
from symllm.validate import ROOM, short as _short

__all__ = ["preset_names", "preset_info", "preset_hub", "preset_for_hub", "load", "resolve"]
_PRESETS = Path(__file__).resolve().parent.parent / "presets"


@lru_cache(maxsize=None)
def _presets() -> dict[str, dict]:
    out = {}
    # the presets ship as files inside the package (importlib.resources' reader cost a warm count 6 ms)
    for entry in _PRESETS.iterdir():
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


def _hub_ids(source: str) -> list[str]:
    """The Hub repository ids (``org/name``) a preset's ``source`` names, e.g. ``meta-llama/Llama-3.1-8B
    original/params.json`` -> ``["meta-llama/Llama-3.1-8B"]`` (a file path inside one is not an id)."""
    from symllm.arch import hub
    words = (w.strip(",;:()") for w in source.split())
    return [w for w in words if hub.is_repo_id(w) and not w.endswith(".json") and w.split("/")[0] != "original"
            and w[:1].isalpha()]


def preset_hub(name: str) -> str | None:
    """The Hub repository a preset was read from, as its ``source`` names it first (None: not from the Hub).

    >>> preset_hub("llama3.1-8b"), preset_hub("llama1-7b")
    ('meta-llama/Llama-3.1-8B', None)
    """
    ids = _hub_ids(preset_info(name).get("source", ""))
    return ids[0] if ids else None


def preset_for_hub(repo_id: str) -> str | None:
    """The shipped preset whose ``source`` names the Hub repository ``repo_id`` (in any case), or None.

    >>> preset_for_hub("meta-llama/Llama-3.1-8B"), preset_for_hub("codellama/CodeLlama-7b-hf"), preset_for_hub("a/b")
    ('llama3.1-8b', 'codellama-7b', None)
    """
    wanted = repo_id.casefold()
    return next((name for name, data in _presets().items()
                 if any(i.casefold() == wanted for i in _hub_ids(data.get("source", "")))), None)



def preset_info(name: str) -> dict:
    """The preset's data file: ``name``, ``description``, ``source``, ``format``, ``config``.

    >>> preset_info("llama3.1-8b")["config"]["dim"]
    4096
    """
    # one preset's own file when the name is one (a warm count reads one file, not all 58)
    if name and name.strip(".-_").replace(".", "").replace("-", "").replace("_", "").isalnum():
        try:
            data = json.loads((_PRESETS / f"{name}.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            data = None
        if data is not None and data.get("name") == name:
            return data
    presets = _presets()
    if name not in presets:
        close = closest(name, presets, n=3, cutoff=0.5)
        start = f"model: unknown preset {_short(name, 30)}"
        while close and len(f"{start}; did you mean {' or '.join(close)}?") > ROOM:  # whole names, as many as fit
            close.pop()
        hint = f"; did you mean {' or '.join(close)}?" if close else " (symllm presets lists them)"
        raise SymllmError(start + hint)
    return presets[name]


def load(model: str | Path, *, vocab_size: int | None = None) -> ModelConfig:
    """A preset name, the path of a ``config.json`` / ``params.json``, a folder holding one (a checkpoint,
    a snapshot), or a Hub id ``org/name`` found in the local Hugging Face cache (:mod:`symllm.arch.hub`).

    >>> load("no-such-model")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: model: unknown preset 'no-such-model' (symllm presets lists them)
    """
    path = Path(model)
    from symllm.arch import hub  # a folder, or a Hub id in the local cache (no network, no huggingface_hub)
    if path.suffix != ".json" and hub.is_repo_id(str(model)) and not path.exists() and not hub.in_cache(str(model)):
        raise SymllmError(hub.not_cached(str(model), preset_for_hub(str(model))))
    folder = hub.model_folder(model) if path.suffix != ".json" else None
    if folder is not None:
        name = hub.repo_root(folder).name.split("--")[-1] if hub.repo_root(folder) != folder else folder.name
        config = "config.json" if os.path.lexists(folder / "config.json") or not os.path.lexists(
            folder / "params.json") else "params.json"
        return from_dict(read_json(hub.member(folder, config, "config"), "config"), vocab_size=vocab_size,
                         name=name)
    spelt = str(model)  # a path by its spelling (/models/x, ./x, ~/x), which no preset or Hub id has: its error
    if path.suffix == ".json" or path.exists() or os.path.isabs(spelt) or spelt.startswith(("./", "../", "~")):
        return from_dict(read_json(path, "config"), vocab_size=vocab_size, name=path.stem)
    info = preset_info(str(model))
    config = from_dict(info["config"], vocab_size=vocab_size, name=info["name"])
    if "max_positions" in info and config.max_positions is None:  # a Meta params.json does not say it
        config = config.replace(max_positions=info["max_positions"])
    if "wrapper" in info:  # the text_config of a multimodal config.json, stored alone
        config = config.replace(wrapper=info["wrapper"])
    return config


@lru_cache(maxsize=256)
def _preset(name: str, vocab_size: int | None) -> ModelConfig:
    return load(name, vocab_size=vocab_size)


def resolve(config, *, vocab_size: int | None = None) -> ModelConfig:
    """A :class:`ModelConfig` from a config, a spec (:class:`symllm.arch.specs.Spec`: its ``config``), a preset
    name, a JSON path or a config's dict (a ``config.json`` read whole, its ``quantization_config`` included).
    Loads no SymPy.

    >>> resolve("llama2-13b").dim
    5120
    >>> resolve({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
    ...          "vocab_size": 100, "quantization_config": {"quant_method": "mxfp4"}}).weight_format
    'mxfp4'
    """
    if isinstance(config, dict):
        return from_dict(config, vocab_size=vocab_size)
    if isinstance(getattr(config, "config", None), ModelConfig):  # a Spec (read by its shape: specs load SymPy)
        config = config.config
    if isinstance(config, ModelConfig):
        return config if vocab_size is None else config.replace(vocab_size=vocab_size)
    if isinstance(config, str) and not config.endswith(".json") and not Path(config).exists():
        return _preset(config, vocab_size)  # presets are immutable: load each once
    return load(config, vocab_size=vocab_size)
