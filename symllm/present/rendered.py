"""Reports rendered before, read back: what a warm ``symllm report`` runs.

:func:`report` keeps a report's rendered text by everything it is made from (symllm's source files, its
built-in templates, the jinja2 and markupsafe in use, the resolved config, the workload, the notation
file's bytes, the output options), in :func:`symllm.numbers.cache.cache_dir`, so a report rendered before is
read back without building a formula, printing LaTeX or loading jinja2 (:mod:`symllm.present.reports`
is imported only on a miss). :func:`symllm.studies.quick.answer` does the same for ``symllm count``.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from symllm.arch.config import ModelConfig, load
from symllm.errors import SymllmError
from symllm.files import builtin_templates
from symllm.numbers.cache import bytes_digest, cache_get, cache_put, hasher, key as cache_key

__all__ = ["report"]


@lru_cache(maxsize=1)
def _render_digest() -> str | None:
    """A hash of what renders a report besides symllm's source: the built-in templates and the jinja2 and
    markupsafe packages (their ``__init__.py``, which states the version). ``None`` if one is missing."""
    from importlib.util import find_spec

    folder = builtin_templates()
    if folder is None:
        return None
    h = hasher()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for package in ("jinja2", "markupsafe"):
        spec = find_spec(package)
        if spec is None or not spec.origin:
            return None
        h.update(package.encode() + b"\0" + Path(spec.origin).read_bytes() + b"\0")
    return h.hexdigest()


def _report_key(model, fmt, standalone, template, template_dir, flavor, notation, vocab_size,
                workload, label_prefix=None) -> str | None:
    """The cache key of a report, or ``None`` where it is not cached: user templates (``template_dir``),
    a notation that is not a file, an option or input that is refused (the report itself then raises
    its own error) or an unreadable file."""
    from symllm.costs.workloads import Workload  # loaded already by the command line

    if template_dir is not None or not set(workload) <= set(Workload.names()):
        return None
    if not (isinstance(template, (str, type(None))) and isinstance(fmt, str) and isinstance(flavor, str)
            and isinstance(label_prefix, (str, type(None)))):
        return None
    try:
        if isinstance(model, ModelConfig):
            config = model if vocab_size is None else model.replace(vocab_size=vocab_size)
        elif isinstance(model, (str, Path)):
            config = load(model, vocab_size=vocab_size)  # what symllm.arch.catalogue.resolve does with a name or a path
        else:
            return None
        work = Workload.of(**workload)
        if notation is None:
            names = None
        elif isinstance(notation, (str, Path)):
            path = Path(notation)
            names = [path.suffix.lower() == ".toml", bytes_digest(path.read_bytes())]
        else:
            return None
        rendering = _render_digest()
    except (SymllmError, OSError, ValueError, TypeError):
        return None
    if rendering is None:
        return None
    return cache_key(rendering, config, work, sorted(work.derived), names, fmt, bool(standalone), template, flavor,
                     label_prefix)


def report(model, *, fmt: str = "latex", standalone: bool = False, template: str | None = None,
           template_dir=None, flavor: str = "github", notation=None, vocab_size: int | None = None,
           label_prefix: str | None = None, **workload) -> str:
    """``symllm.report(model, notation=..., vocab_size=..., **workload).render(fmt, ...)``: the text of a
    report, read back from :func:`symllm.numbers.cache.cache_dir` when an earlier process rendered the same
    report (see the module docstring), rendered and stored otherwise. User templates
    (``template_dir``) are always rendered.

    >>> text = report("llama2-7b", fmt="markdown")
    >>> "6,738,415,616" in text, text == report("llama2-7b", fmt="markdown")
    (True, True)
    """
    key = _report_key(model, fmt, standalone, template, template_dir, flavor, notation, vocab_size, workload,
                      label_prefix)
    hit = cache_get("report", key) if key is not None else None
    if hit is not None and len(hit) == 1:
        return hit[0]
    from symllm.present import reports

    text = reports.report(model, notation=notation, vocab_size=vocab_size, **workload).render(
        fmt, standalone=standalone, template_dir=template_dir, template=template, flavor=flavor,
        label_prefix=label_prefix)
    if key is not None:
        cache_put("report", key, (text,))
    return text
