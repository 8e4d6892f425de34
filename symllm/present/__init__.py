"""What a reader sees: derivations and reports (assembled in :mod:`~symllm.present.derivation` and
:mod:`~symllm.present.reports`, their closed forms kept between processes by :mod:`~symllm.present.forms`),
laid out by :mod:`~symllm.present.render` (escaping, sandboxed templates and their filters) with the printers of
:mod:`~symllm.present.printers` (LaTeX, text, line breaking) and the user's notation
(:mod:`~symllm.present.notations`); number formats in
:mod:`~symllm.present.format`; reports rendered before, read back, in :mod:`~symllm.present.rendered`;
plots (matplotlib Figures, pgfplots) in :mod:`~symllm.present.plots`.
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in (
    "derivation", "reports", "forms", "render", "printers", "notations", "rendered", "format", "plots")})
