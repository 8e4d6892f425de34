"""HF config families: one module per family says how transformers reads its ``config.json``.

Each module registers a :class:`~symllm.arch.families.hf.Family` per ``model_type`` it reads: the keys it
reads and their defaults, the keys it refuses, and where its presets come from. :mod:`~symllm.arch.families.hf`
holds what they share and the registry (``family_of``); :func:`symllm.arch.config.from_hf` reads any
config.json through it. A new family is a new module here (the registry finds it).

Modules: :mod:`~symllm.arch.families.llama`, :mod:`~symllm.arch.families.mistral` (mistral, mixtral),
:mod:`~symllm.arch.families.qwen` (qwen2, qwen3), :mod:`~symllm.arch.families.qwen3_moe`,
:mod:`~symllm.arch.families.llama4` (llama4_text, and llama4's text_config), and every family added since
(``MODULES`` lists what is there).
"""
import os

from symllm._lazy import attributes

#: every module of this folder (a new family needs no entry here); listed with os, not pkgutil, whose
#: import (typing) a count would pay
MODULES = tuple(sorted(f[:-3] for f in os.listdir(__path__[0]) if f.endswith(".py") and not f.startswith("_")))

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in MODULES})
