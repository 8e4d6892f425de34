"""What a model is: its symbols, its components, its config files and families, and the resolved spec.

Modules: :mod:`~symllm.arch.symbols` (every symbol, once), :mod:`~symllm.arch.glossary` (what each symbol means,
in plain text: code name, LaTeX, description, the config fields a sweep varies; no SymPy),
:mod:`~symllm.arch.layers` (what one layer is, layers as groups of kinds, the ``Structure``),
:mod:`~symllm.arch.components` (one factory per component, each with its own rules), :mod:`~symllm.arch.keeps`
(what each named software stack keeps for a component: its rule under that stack),
:mod:`~symllm.arch.components.deltanet` (the Gated DeltaNet token mixer of Qwen3-Next and Qwen3.5),
:mod:`~symllm.arch.config` (``ModelConfig`` and its checks, over :mod:`~symllm.arch.widths`: Meta's rounding,
heads), :mod:`~symllm.arch.readers` (HF, Meta and symllm config files), :mod:`~symllm.arch.catalogue` (the
presets, ``load``), :mod:`~symllm.arch.specs` (``Spec``: a config with every derived field resolved),
:mod:`~symllm.arch.dtypes` (bytes per element, one table), :mod:`~symllm.arch.algebra` (``Max``, ``Min`` and
``subs`` without SymPy's pairwise search on large closed forms), :mod:`~symllm.arch.resolved` (any config, preset
name or path to its spec, model and parameter counts), :mod:`~symllm.arch.families` (how each HF ``model_type``
reads its config.json, one module per family), :mod:`~symllm.arch.hub` (a model folder, or a Hub id in the local
Hugging Face cache: no network), :mod:`~symllm.arch.quantization` (a config.json's ``quantization_config`` read
whole: its weight format), :mod:`~symllm.arch.part_options` (each part option declared once: its config fields,
axis, parts, reference).
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__,
                                  {m: (m, None) for m in ("symbols", "glossary", "layers", "components", "keeps",
                                                                     "config",
                                                                     "specs", "resolved", "dtypes", "families", "hub",
                                                                     "algebra", "quantization", "part_options",
                                                                     "widths", "readers",
                                                                     "catalogue")})
