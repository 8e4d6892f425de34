"""Number formatting shared by the CLI and the reports: exact for any size (no float conversion, no
limit on the digits of an int).

>>> grouped(8030261248), human(8030261248)
('8,030,261,248', '8.03B')
>>> human(131072), human(0), human(999)
('131.07K', '0', '999')
>>> human(10**400, flops=True), human_bytes(2**2000)
('1.00e+400', '1.15e+602 B')
"""
from __future__ import annotations

import re
from fractions import Fraction
from numbers import Rational

from symllm.validate import choice

__all__ = ["FORMATS", "REPORT_FORMATS", "COMPARISON_FORMATS", "QUANTITIES", "digits", "grouped", "grouped_bytes",
           "human", "human_bytes", "side_by_side", "escape_latex", "LAYOUT_WORDS", "layout_words",
           "overlap_words", "sig4", "figure"]

#: the formats a formula or derivation renders in (derive; a report: :data:`REPORT_FORMATS`), in
#: :mod:`symllm.present.render` (here, without SymPy or jinja2: the command line checks them)
FORMATS = ("text", "pretty", "latex", "markdown")
#: the formats a whole-model report renders in (:class:`symllm.present.reports.Report`, ``symllm report``)
REPORT_FORMATS = ("latex", "markdown")
#: the formats of a table with a column per model (:func:`side_by_side`, ``symllm count A B --format``)
COMPARISON_FORMATS = ("text", "csv", "markdown", "latex")
#: the quantities a derivation shows (``derive --quantity``; a report's parameters), what each is called and
#: the letter its equations use (here, without SymPy or jinja2: the command line checks them)
QUANTITIES = {"params": ("parameters", "N"), "flops": ("FLOPs", "F"), "memory": ("bytes", "M"),
              "comm": ("bytes one GPU sends per training step of one micro-batch", "C"),
              "ridge": ("ridge point, FLOP per byte", "R"),
              "decode_batch": ("batch at which a decode step turns compute-bound", "b")}

_UNITS = [(10**15, "P"), (10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")]
_FLOP_UNITS = [(10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "K")]
_BYTE_UNITS = [(2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")]
#: ints below this many bits print with str() under Python's default 4,300-digit limit
_STR_BITS = 12_000


def digits(n: int) -> str:
    """The decimal digits of the int ``n``, exactly, however long (``str(n)`` refuses more than 4,300
    digits since Python 3.11).

    >>> digits(-1234), len(digits(10**5000)), digits(10**5000)[:3]
    ('-1234', 5001, '100')
    """
    n = int(n)
    if n < 0:
        return "-" + digits(-n)
    if n.bit_length() <= _STR_BITS:
        return str(n)
    half = int(n.bit_length() * 0.30103) // 2  # about half the digits
    high, low = divmod(n, 10**half)
    return digits(high) + digits(low).zfill(half)


def _group(text: str) -> str:
    head = len(text) % 3 or 3
    return ",".join([text[:head]] + [text[i:i + 3] for i in range(head, len(text), 3)])


def _decimal(value: Fraction, places: int) -> str:
    """``value`` rounded (half away from zero, as people round) to ``places`` decimals, exactly."""
    sign = "-" if value < 0 else ""
    scaled = int(abs(Fraction(value)) * 10**places + Fraction(1, 2))
    whole, frac = divmod(scaled, 10**places)
    return f"{sign}{digits(whole)}.{digits(frac).zfill(places)}" if places else f"{sign}{digits(whole)}"


def grouped(value) -> str:
    """An exact number with thousands separators. A ``Fraction`` keeps its fraction: exact when it
    has a finite decimal expansion (a denominator of 2s and 5s, as int4 byte counts have), else
    rounded to 6 decimals.

    >>> grouped(Fraction(3, 2)), grouped(Fraction(2**70 + 1, 64)), grouped(Fraction(2, 3))
    ('1.5', '18,446,744,073,709,551,616.015625', '0.666667')
    """
    if isinstance(value, Rational) and not isinstance(value, int) and value.denominator != 1:
        value = Fraction(value)
        den, places = value.denominator // _two_five(value.denominator), 0
        if den == 1:  # a finite expansion: enough places to be exact
            while (value * 10**places).denominator != 1:
                places += 1
        text = _decimal(value, places if den == 1 else 6)
        if den != 1:
            text = text.rstrip("0").rstrip(".")
        sign = "-" if text.startswith("-") else ""
        whole, _, frac = text.lstrip("-").partition(".")
        return f"{sign}{_group(whole)}" + (f".{frac}" if frac else "")
    if isinstance(value, float):
        return f"{value:,}"
    value = int(value)
    return ("-" if value < 0 else "") + _group(digits(abs(value)))


def grouped_bytes(value) -> str:
    """A byte count as :func:`grouped` writes it where it is exact in decimals (an int, int4's half bytes), else
    (a float, or a fraction such as a weight format's bytes a weight averaged over the model times one GPU's
    parameters) rounded to whole bytes: never "21,256,268,196.067767" in a column of bytes.

    >>> grouped_bytes(Fraction(3, 2)), grouped_bytes(Fraction(2, 3) + 10**6), grouped_bytes(1234.56)
    ('1.5', '1,000,001', '1,235')
    """
    den = Fraction(value).denominator if isinstance(value, Rational) else 1
    if isinstance(value, float) or den // _two_five(den) != 1:
        return grouped(round(value))
    return grouped(value)


def _two_five(n: int) -> int:
    """The part of ``n`` made of 2s and 5s (the denominators whose decimals end).

    >>> _two_five(40), _two_five(3)
    (40, 1)
    """
    out = 1
    for p in (2, 5):
        while n % p == 0:
            n, out = n // p, out * p
    return out


def _scientific(value: Fraction) -> str:
    """``value`` (at least 1) as ``d.dde+XX``, exact: the mantissa rounded half away from zero."""
    exp = len(digits(int(value))) - 1
    mantissa = int(value / Fraction(10) ** exp * 100 + Fraction(1, 2))
    if mantissa >= 1000:
        exp, mantissa = exp + 1, int(value / Fraction(10) ** (exp + 1) * 100 + Fraction(1, 2))
    return f"{mantissa // 100}.{mantissa % 100:02d}e+{exp:02d}"


def _scaled(value, units, suffix_gap="", plain=None) -> str:
    if isinstance(value, float):  # a float (an estimate, not a count): float formatting as before
        exact = Fraction(value) if value == value and abs(value) != float("inf") else None
        if exact is None:
            return f"{value}"
    else:
        exact = Fraction(value)
    sign, exact = ("-" if exact < 0 else ""), abs(exact)
    if exact >= 1000 * units[0][0]:  # past the largest unit: scientific notation reads better
        return sign + _scientific(exact) + (" B" if plain == "bytes" else "")
    for size, unit in units:
        if exact >= size:
            return f"{sign}{_decimal(exact / size, 2)}{suffix_gap}{unit}"
    if plain == "bytes":
        return f"{sign}{_decimal(exact, 2).rstrip('0').rstrip('.')} B"
    return sign + (_decimal(exact, 6).rstrip("0").rstrip(".") if exact.denominator != 1 else digits(exact))


def human(value, flops: bool = False) -> str:
    """A count in human units (K, M, B, T; FLOPs use G for 1e9): ``8.03B``.

    >>> human(3.6 * 10**25, flops=True), human(7.4 * 10**17, flops=True)
    ('3.60e+25', '740.00P')
    """
    return _scaled(value, _FLOP_UNITS if flops else _UNITS)


def human_bytes(value) -> str:
    """Bytes in binary units: ``15.00 GiB``.

    >>> human_bytes(16 * 2**30), human_bytes(512), human_bytes(Fraction(3, 2))
    ('16.00 GiB', '512 B', '1.5 B')
    """
    return _scaled(value, _BYTE_UNITS, " ", plain="bytes")


def _fitting(names, fits) -> list[list]:
    """``names`` cut into runs, in order, as many to a run as ``fits(run)`` allows (a comparison split
    into several tables that each fit the width; a name alone always makes a run).

    >>> _fitting(["a", "b", "c"], lambda run: len(run) <= 2)
    [['a', 'b'], ['c']]
    """
    chunks, current = [], []
    for n in names:
        if current and not fits(current + [n]):
            chunks.append(current)
            current = []
        current.append(n)
    chunks.append(current)
    return chunks


#: spaces of LaTeX source where a line may end (not that of a control space ``\ ``), and a comment's start
TEX_SPACES = re.compile(r"(?<!\\) +")
_TEX_COMMENT = re.compile(r"(?<!\\)%")


def fold_latex(text: str, width: int = 100) -> str:
    r"""LaTeX source whose lines longer than ``width`` columns go on over further lines, broken at their
    spaces and indented two more columns (TeX reads a line end as a space, and a run of spaces as one, so
    the typeset document is the same). A word longer than the width breaks after an ``{}`` (an
    ``\allowbreak{}``) with a ``%`` ending the line (no space then); a comment line goes on as comment
    lines; a line with a comment after its code stays whole.

    >>> print(fold_latex(r"  \caption{Parameters of a model by component.}", 24))
      \caption{Parameters of
        a model by
        component.}
    >>> print(fold_latex(r"\texttt{moe\_\allowbreak{}block/\allowbreak{}wq}", 30))
    \texttt{moe\_\allowbreak{}%
      block/\allowbreak{}wq}
    >>> print(fold_latex("% a comment of several words", 15))
    % a comment of
    % several words
    >>> fold_latex("50\\% of a long line % a comment", 10) == "50\\% of a long line % a comment"
    True
    """
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        indent = line[:len(line) - len(body)]
        comment = body.startswith("%")
        if _TEX_COMMENT.search(body) and not comment:
            out.append(line)
            continue
        words = TEX_SPACES.split(body[1:].lstrip() if comment else body)
        lead = indent + ("% " if comment else "")
        rest = indent + ("% " if comment else "  ")
        pieces = [lead]
        for word in words:
            for part in ([word] if comment else _word_parts(word, width - len(rest))):
                if pieces[-1] != lead and (pieces[-1].endswith("%") or len(pieces[-1]) + 1 + len(part) > width):
                    pieces.append(rest + part)
                else:
                    pieces[-1] += ("" if pieces[-1] == lead else " ") + part
        out.extend(pieces)
    return "\n".join(out)


def _word_parts(word: str, room: int) -> list[str]:
    """A word of LaTeX longer than ``room`` in pieces that end after an ``{}``, each but the last with a
    ``%`` (the line end it comes before is no space); a word with no such place stays whole."""
    if len(word) <= room:
        return [word]
    cuts = [m.end() for m in re.finditer(r"\{\}", word)]
    parts, start = [], 0
    for i, cut in enumerate(cuts):
        after = cuts[i + 1] if i + 1 < len(cuts) else len(word)
        if after - start > room and cut > start:
            parts.append(word[start:cut] + "%")
            start = cut
    return parts + [word[start:]]


def side_by_side(rows, names, values, fmt: str = "text", width: int = 100) -> str:
    """A table with a column per model: ``rows`` (key, label, unit) as
    :data:`symllm.costs.comparison.ROWS`, ``names`` the models, ``values[name][key]`` the numbers (a row no
    model has is left out). ``text``: human units, split into several tables so that each line fits
    ``width`` columns; ``csv``: exact numbers; ``markdown``: exact, grouped, split like ``text``; ``latex``: a booktabs
    tabular in human units.

    >>> print(side_by_side([("params", "parameters", "count"), ("fits", "fits", "flag")], ["a", "b"],
    ...                    {"a": {"params": 8030261248}, "b": {"params": 12}}))
                    a   b
    parameters  8.03B  12
    >>> print(side_by_side([("params", "parameters", "count")], ["a"], {"a": {"params": 1024}}, "csv"))
    quantity,a
    params,1024
    >>> side_by_side([("params", "parameters", "count")], ["a"], {"a": {"params": 1024}}, "tsv")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: format: unknown 'tsv' (known: text, csv, markdown, latex)
    """
    choice("format", fmt, COMPARISON_FORMATS)
    rows = [r for r in rows if any(r[0] in values[n] for n in names)]

    def shown(name, key, unit, exact):
        if key not in values[name]:
            return ""
        v = values[name][key]
        if unit == "flag":
            return "yes" if v else "no"
        if v is None:  # a time of what does not fit (symllm.costs.hardware.blank_unfit)
            return "" if exact else "does not fit"
        if exact:
            return grouped(v) if fmt == "markdown" else (
                f"{digits(v.numerator)}/{digits(v.denominator)}" if isinstance(v, Fraction) and v.denominator != 1
                else str(v) if isinstance(v, float) else digits(v))
        if unit in ("seconds", "rate", "share"):  # count's formats: 4 digits, tokens/s to 0.1, MFU to 0.1%
            v = float(v) if isinstance(v, Fraction) and abs(v) < 10 ** 300 else v
            return f"{sig4(v)} s" if unit == "seconds" else figure(v, ",.1f" if unit == "rate" else ".1%")
        return human_bytes(v) if unit == "bytes" else human(v, flops=unit == "flops")

    if fmt == "csv":
        import csv
        import io
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["quantity", *names])
        writer.writerows([key, *(shown(n, key, unit, True) for n in names)] for key, _, unit in rows)
        return buf.getvalue().rstrip("\n")
    if fmt == "markdown":  # exact numbers; as many models per table as fit the width ("| a | b |")
        def cell(text):
            return str(text).replace("|", "\\|")
        cells = {n: [cell(n)] + [shown(n, key, unit, True) for key, _, unit in rows] for n in names}
        labels = ["quantity"] + [label for _, label, _ in rows]

        def table(chunk):
            return ["| " + label + " | " + " | ".join(cells[n][i] for n in chunk) + " |"
                    for i, label in enumerate(labels)]
        return "\n\n".join("\n".join([lines[0], "|---|" + "---:|" * len(chunk), *lines[1:]])
                            for chunk in _fitting(names, lambda c: max(map(len, table(c))) <= width)
                            for lines in [table(chunk)])
    if fmt == "latex":
        lines = [r"\begin{tabular}{@{}l" + "r" * len(names) + "@{}}", r"\toprule",
                 " & ".join(["quantity", *(escape_latex(n) for n in names)]) + r" \\", r"\midrule"]
        lines += [" & ".join([escape_latex(label), *(escape_latex(shown(n, key, unit, False)) for n in names)])
                  + r" \\" for key, label, unit in rows]
        return fold_latex("\n".join(lines + [r"\bottomrule", r"\end{tabular}"]), width)
    label_w = max(len(label) for _, label, _ in rows)
    cells = {n: [shown(n, key, unit, False) for key, _, unit in rows] for n in names}
    col_w = {n: max([len(n)] + [len(c) for c in cells[n]]) for n in names}
    out = []
    for chunk in _fitting(names, lambda c: label_w + sum(col_w[m] + 2 for m in c) <= width):
        header = [" " * label_w] + [n.rjust(col_w[n]) for n in chunk] if len(names) > 1 else None
        lines = (["  ".join(header).rstrip()] if header else []) + [
            "  ".join([label.ljust(label_w)] + [cells[n][i].rjust(col_w[n]) for n in chunk]).rstrip()
            for i, (_, label, _) in enumerate(rows)]
        out.append("\n".join(lines))
    return "\n\n".join(out)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIAL))


#: line breaks and the white space around them in user text: one space (a blank line in a model name ended
#: LaTeX's \\title with a paragraph, and a line break left the rest of a ``%`` comment's line uncommented)
LINE_BREAKS = re.compile(r"[ \t]*[\r\n\f\v\x1c-\x1e\x85\u2028\u2029]+[\s]*")


def escape_latex(text) -> str:
    """User text (a model name, a description) made safe for LaTeX text mode, on one line.

    >>> print(escape_latex("my_model 100% & #1 {x}"))
    my\\_model 100\\% \\& \\#1 \\{x\\}
    >>> escape_latex("a\\n\\nb")
    'a b'
    """
    return _LATEX_RE.sub(lambda m_: _LATEX_SPECIAL[m_.group()], LINE_BREAKS.sub(" ", str(text)))


#: how the text names a workload's ``tp_layout`` (symllm.costs.workloads.tp_layout); another engine's: "NAME's layout".
#: "transformers": transformers' tp plan as its model resolves it (5.23: the config class's plan, the lm_head's, and the
#: embedding split over the vocabulary that ``init_parallel_plans`` adds; DeepSeek-V4 without an engine, a family
#: whose own plan differs from the parts' splits under ``--engine hf``: docs/parallel.md)
LAYOUT_WORDS = {"transformers": "transformers' plan", "vllm": "vLLM's layout", "mlc": "MLC's layout",
                "megatron": "Megatron-Core's layout"}


def layout_words(name: str, training: str | None = None) -> str:
    """The words for a ``tp_layout`` the output names; with the ``training_tp_layout`` where it differs, each kind's
    (symllm.costs.layouts.tp_layouts: the inference quantities in one, the training quantities in the other).

    >>> layout_words("transformers"), layout_words("vllm"), layout_words("sglang"), layout_words("vllm", "vllm")
    ("transformers' plan", "vLLM's layout", "sglang's layout", "vLLM's layout")
    >>> layout_words("mlc", "transformers")
    "MLC's layout (inference), transformers' plan (training)"
    """
    words = LAYOUT_WORDS.get(name, f"{name}'s layout")
    return words if training in (None, name) else f"{words} (inference), {layout_words(training)} (training)"


def overlap_words(expected: dict | None) -> str:
    """The words for the TP overlap a workload turns on, as count's layout line and report's training step say it:
    what of a block it covers in the model where the expected times say it (``tp_overlap``:
    symllm.costs.tp_overlap.scope), else the overlap's name.

    >>> overlap_words({"tp_overlap": "attention"}), overlap_words({"tp_overlap": "none"}), overlap_words(None)
    ('TP overlap: attention only', 'TP overlap: none modelled for this model', 'TP overlap')
    """
    said = (expected or {}).get("tp_overlap", "all")
    return {"attention": "TP overlap: attention only", "none": "TP overlap: none modelled for this model"}.get(
        said, "TP overlap")


def sig4(value) -> str:
    """``value`` with 4 significant digits; an exact Fraction past a float's range too (roofline times of
    any size).

    >>> sig4(0.000123456), sig4(Fraction(10 ** 400, 3))
    ('0.0001235', '3.333e+399')
    """
    if isinstance(value, Fraction):
        import decimal
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin = 28, decimal.MAX_EMAX, decimal.MIN_EMIN
            return format(decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator), ".4g")
    return format(value, ".4g")


def figure(value, spec: str) -> str:
    """``value`` formatted by ``spec``; an exact Fraction past a float's range, and a number of 10**15 or more
    (``--tokens 1e300``: its digits in full ran off the table), in :func:`sig4`'s notation.

    >>> figure(15 * 10 ** 12, ","), figure(10 ** 300, ","), figure(1.5e300, ",.0f")
    ('15,000,000,000,000', '1.000e+300', '1.500e+300')
    """
    if isinstance(value, Fraction) or isinstance(value, (int, float)) and abs(value) >= 10 ** 15:
        return sig4(Fraction(value))
    return format(value, spec)
