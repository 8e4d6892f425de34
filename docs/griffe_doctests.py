"""A griffe extension for the API pages (mkdocs.yml): symllm's docstrings are reStructuredText-flavoured
(``:func:`x``` roles, ``>>>`` examples outside any section). On the site each run of ``>>>`` lines with
its output becomes a fenced Python block, and each role its name in code, so nothing in an example is read
as Markdown (``m["weights"]`` is not a link)."""
import re

import griffe

ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|exc|obj):`~?([^`]+)`")


def _fenced(text: str) -> str:
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
                i += 1
            out += [indent + "```python", *(indent + b for b in block), indent + "```"]
            continue
        out.append(ROLE.sub(lambda m: "`" + m.group(1) + "`", line))
        i += 1
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fence the doctests and flatten the roles of every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _fenced(obj.docstring.value)
