"""The one error type symllm raises for bad input."""

__all__ = ["SymllmError", "ContextWarning", "OptionWarning"]


class SymllmError(ValueError):
    """Bad input: a config field, a preset name, a component, a workload value.

    The message is one line that names the field and the value, so the CLI can print it as is.

    >>> raise SymllmError("n_heads: 7 does not divide dim 4096")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: n_heads: 7 does not divide dim 4096
    """


class ContextWarning(UserWarning):
    """A context past the positions the model was trained for (``max_position_embeddings``): counted as
    given, never refused (RoPE scaling, YaRN and the like, runs a model past its window); the command
    line shows it as one line ``symllm: warning: ...``."""


class OptionWarning(UserWarning):
    """An option given that changes nothing it could be expected to change (a power limit above the board power a
    card's peaks are rated at: it runs at its rated speed, no faster): counted as the card runs, never refused; the
    command line shows it as one line ``symllm: warning: ...``."""
