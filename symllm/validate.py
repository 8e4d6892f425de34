"""Validators and their messages, once: a config's, a workload's, a sweep's and a formula's options are
checked by these, and each refusal is one line that names the field (``symllm: error: <field>: <what>``).

>>> positive_int("seq", 0)
Traceback (most recent call last):
...
symllm.errors.SymllmError: seq: expected a positive integer, got 0
>>> choice("attention", "flash", ("dense", "causal"))
Traceback (most recent call last):
...
symllm.errors.SymllmError: attention: unknown 'flash' (known: dense, causal)
"""
from __future__ import annotations

import math

from symllm.errors import SymllmError

__all__ = ["WIDTH", "ROOM", "MAX_FLOAT_INT", "ZERO_STAGES", "listed", "with_list", "fitting", "short", "token_count",
           "suffixed_count", "COUNT_KINDS", "SUFFIXES", "shown_path", "positive_int", "integer", "positive_number",
           "boolean", "booleans",
           "choice", "zero_stage", "stated_with", "plural"]

#: the largest float accepted for an integer read from a file (``4096.0``): past 2**53 a double no longer
#: holds every integer, so ``1e30`` is refused rather than read as 1000000000000000019884624838656
MAX_FLOAT_INT = 2**53

#: the ZeRO stages (0: none; 1 shards the optimizer states, 2 the gradients too, 3 the weights too)
ZERO_STAGES = (0, 1, 2, 3)


#: the widest line symllm prints on a terminal (tables, derivations, help), an error line included: "symllm:
#: error: " and a message of at most 85 characters (a list of names or a path is cut to fit: listed, shown_path)
WIDTH = 100


#: the room a message has on its one line: :data:`WIDTH` less the ``symllm: error: `` the command line puts first
ROOM = WIDTH - len("symllm: error: ")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` (grouped by thousands) and ``word``, its plural (``many``, else ``word`` + "s") unless ``n`` is 1: the
    one way every message and line counts things (never "1 shared experts" nor "replica(s)").

    >>> plural(1, "shared expert"), plural(2, "replica"), plural(1024, "token"), plural(1, "component differs",
    ...                                                                                   "components differ")
    ('1 shared expert', '2 replicas', '1,024 tokens', '1 component differs')
    """
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def listed(names, room: int = 40, *, see: str | None = "--help", near=None) -> str:
    """``names`` joined by ", " where the whole list fits in ``room`` characters; else never a list cut
    short (which would leave a reader unable to tell whether a name is in it): how many there are and
    ``see``, where the whole list is (``--help``, ``symllm presets``, a docs page), after the names closest
    to ``near`` (the misspelt value) that fit. ``see`` None (a list that is no list of choices, such as the
    parts a stack does not model): the first whole names that fit and how many more.

    >>> listed(["dense", "causal"])
    'dense, causal'
    >>> listed(["h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-40gb", "a100-80gb"])
    'all 8: see --help'
    >>> listed(["h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-40gb", "a100-80gb"], see=None)
    'h100-sxm, h100-pcie, h100-nvl and 5 more'
    >>> listed(["h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200", "a100-40gb", "a100-80gb"],
    ...        near="h100", room=50)
    'h200, h100-sxm, h100-nvl; all 8: see --help'
    """
    names = [str(n) for n in names]
    text = ", ".join(names)
    if len(text) <= room:
        return text
    if see is None:
        shown = []
        while len(", ".join(names[:len(shown) + 1]) + f" and {len(names) - len(shown) - 1} more") <= room:
            shown = names[:len(shown) + 1]
        return ", ".join(shown) + f" and {len(names) - len(shown)} more" if shown else f"{len(names)} of them"
    close = []
    if isinstance(near, str) and near:
        import difflib  # only for a message
        close = difflib.get_close_matches(near, names, n=3, cutoff=0.5)
    while close and len(", ".join(close) + f"; all {len(names)}: see {see}") > room:
        close.pop()
    return ", ".join(close) + f"; all {len(names)}: see {see}" if close else f"all {len(names)}: see {see}"


def with_list(start: str, names, *, see: str = "--help", near=None, end: str = ")") -> str:
    """``start``, then :func:`listed` names in the room the line has left, then ``end``: a message
    that ends with a list of known names, fitting one error line.

    >>> with_list("dtype: unknown 'x' (known: ", ["bf16", "fp16"])
    "dtype: unknown 'x' (known: bf16, fp16)"
    """
    return f"{start}{listed(names, max(ROOM - len(start) - len(end), 24), see=see, near=near)}{end}"


def fitting(*messages: str, room: int = ROOM) -> str:
    """The first of ``messages`` (the most explicit first) that fits on the one line an error has, else the
    last (the shortest wording).

    >>> fitting("a message far too long for its room", "a shorter one", room=20)
    'a shorter one'
    """
    return next((m for m in messages if len(m) <= room), messages[-1])


def shown_path(path, room: int = 32) -> str:
    """A path as a message quotes it (``repr``), in at most ``room`` characters: past that its start is cut
    to "..." (the file's name and the folders nearest it stay).

    >>> shown_path("/tmp/a.json")
    "'/tmp/a.json'"
    >>> shown_path("/tmp/pytest-of-root/pytest-293/popen-gw1/test_hostile_config_files_are_0/c.json")
    "'.../c.json'"
    >>> shown_path("/home/me/models/llama/config.json")
    "'.../llama/config.json'"
    """
    text = repr(str(path))
    if len(text) <= room:
        return text
    keep = room - 6  # room for the quotes and ".../"
    while keep > 1 and len(repr(str(path)[-keep:])) > room - 4:  # escapes (\x08) take more than a column
        keep -= 1
    tail = str(path)[-keep:]
    cut = tail.find("/")
    return repr(".../" + (tail[cut + 1:] if 0 <= cut < len(tail) - 1 else tail))


def short(value, room: int = 40) -> str:
    """``repr(value)``, cut to one short line of at most ``room`` characters (a 4,000-digit integer is not
    echoed in full).

    >>> short(2**300), short("x" * 100, 10)
    ('an integer of 301 bits', "'xxxxxx...")
    """
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else \
        f"an integer of {value.bit_length()} bits"
    return text if len(text) <= room else text[:room - 3] + "..."


def integer(field: str, value, *, low: int = 1, optional: bool = False, floats: bool = False):
    """``value`` as an int of at least ``low`` (1: "positive", 0: "non-negative"); ``optional``: ``None``
    passes; ``floats``: an integral float up to :data:`MAX_FLOAT_INT` is read as its int (JSON's
    ``4096.0``). A bool is never an integer.

    >>> integer("gen", 0, low=0), integer("dim", 4096.0, floats=True)
    (0, 4096)
    """
    if value is None and optional:
        return None
    if isinstance(value, float) and floats and value.is_integer() and low <= value <= MAX_FLOAT_INT:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        kind = "positive" if low == 1 else "non-negative" if low == 0 else f">= {low}"
        raise SymllmError(f"{field}: expected a {kind} integer, got {short(value)}")
    return value


#: the suffixes a count of tokens may carry on the command line (any case), as powers of the base
SUFFIXES = {"k": 1, "m": 2, "g": 3, "t": 4}


def token_count(field: str, text: str, *, binary: bool, low: int | None = 1, unit: str = "tokens") -> int:
    """A count of tokens as people write it: digits (``_`` between them), a ``k``/``M``/``G``/``T`` suffix
    (any case) and a decimal point or exponent (``1.5k``, ``1e12``), as long as the value is a whole number
    of at least ``low`` (None: any integer; the command line leaves the range to the workload's check). ``binary``: a
    length (a prompt, a context window), where ``128k`` is 128·1024 = 131,072 as a model's window is meant; else a token
    budget in decimal, ``15T`` = 15·10^12. ``unit`` names what is counted in a refusal (``sequences`` for a batch, read
    in decimal: ``--batch 1k`` = 1,000).

    >>> token_count("seq", "128k", binary=True), token_count("tokens", "15T", binary=False)
    (131072, 15000000000000)
    >>> (token_count("tokens", "1e12", binary=False), token_count("seq", "1.5K", binary=True),
    ...  token_count("gen", "0", binary=True, low=0))
    (1000000000000, 1536, 0)
    >>> token_count("seq", "1.3k", binary=True)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: seq: '1.3k' is 1331.2 tokens, not a whole number
    >>> token_count("batch", "2k", binary=False, unit="sequences")
    2000
    """
    text = str(text).strip()
    base = 1024 if binary else 1000
    power = SUFFIXES.get(text[-1:].lower(), 0)
    number = text[:-1] if power else text
    if number.isdigit():  # the plain integer (any length Python reads): exact, no decimal arithmetic
        try:
            value = int(number) * base ** power
        except ValueError:  # past Python's 4,300 digits
            raise SymllmError(f"{field}: {short(text, 24)} has more than 4,300 digits") from None
    else:
        import decimal  # only for a decimal point or an exponent
        try:
            exact = decimal.Decimal(number.replace("_", "")) if number.strip("0123456789_.eE+-") == "" else None
        except decimal.InvalidOperation:
            exact = None
        if exact is None or not exact.is_finite() or abs(exact.adjusted()) > 4000:
            raise SymllmError(f"{field}: expected a whole number of {unit} (e.g. 4096, 128k, 1e12), got {short(text)}")
        with decimal.localcontext() as ctx:
            ctx.prec = 5000
            scaled = exact * base ** power
        if scaled != scaled.to_integral_value():
            raise SymllmError(f"{field}: {short(text)} is {scaled.normalize():f} {unit}, not a whole number")
        value = int(scaled)
    return value if low is None else integer(field, value, low=low)


#: how each kind of count a workload option takes is read (:attr:`symllm.costs.workloads.Option.suffixes`):
#: whether its suffixes are binary, and what it counts
COUNT_KINDS = {"length": (True, "tokens"), "tokens": (False, "tokens"), "sequences": (False, "sequences")}


def suffixed_count(field: str, text: str, kind: str) -> int:
    """:func:`token_count` of an option whose suffixes are read as ``kind`` says (:data:`COUNT_KINDS`): a
    ``length`` in binary (``128k`` = 131,072), a token budget (``tokens``) or a batch (``sequences``) in decimal
    (``15T`` = 15·10^12, ``1k`` = 1,000); any integer (the range is the workload's check).

    >>> suffixed_count("seq", "128k", "length"), suffixed_count("batch", "1k", "sequences")
    (131072, 1000)
    """
    binary, unit = COUNT_KINDS[kind]
    return token_count(field, text, binary=binary, low=None, unit=unit)


def positive_int(field: str, value, *, optional: bool = False, floats: bool = False):
    """:func:`integer` of at least 1."""
    return integer(field, value, optional=optional, floats=floats)


def positive_number(field: str, value) -> float:
    """``value`` (an int or a float, finite, above 0) as a float.

    >>> positive_number("ffn_dim_multiplier", 1.3)
    1.3
    """
    try:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        out = float(value) if ok else None
    except OverflowError:  # an integer beyond a double's range
        ok = False
    if not ok:
        raise SymllmError(f"{field}: expected a positive number, got {short(value)}")
    return out


def boolean(field: str, value) -> bool:
    """``value`` if it is a bool (``"no"`` and ``1`` are not: a truthy string would silently switch on).

    >>> boolean("tied", "no")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'
    """
    if not isinstance(value, bool):
        raise SymllmError(f"{field}: expected True or False, got {short(value)}")
    return value


def booleans(instance) -> None:
    """Each field of the dataclass ``instance`` declared ``bool``, checked by :func:`boolean` in the order the
    fields are declared: a flag added to the class is checked without a list to extend.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Flags:
    ...     name: str = "x"
    ...     tied: bool = False
    >>> booleans(Flags(name=3, tied="no"))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: tied: expected True or False, got 'no'
    """
    from dataclasses import fields
    for f in fields(instance):
        if f.type in ("bool", bool):  # a string under ``from __future__ import annotations``
            boolean(f.name, getattr(instance, f.name))


def stated_with(instance, fields, used: bool, layer: str, unused: str | None = None) -> None:
    """Each of ``fields`` of ``instance`` stated where some layer needs it (``used``: a layer ``layer``) and not
    where none does, checked in order: the refusal names the field, ``missing (a layer …)`` or ``… given but
    no layer …`` (``unused``: what that line says in place of ``layer``).

    >>> from types import SimpleNamespace
    >>> stated_with(SimpleNamespace(ssm_state=None), ("ssm_state",), True, "is a Mamba-2 mixer")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: ssm_state: missing (a layer is a Mamba-2 mixer)
    """
    for field in fields:
        value = getattr(instance, field)
        if used and value is None:
            raise SymllmError(f"{field}: missing (a layer {layer})")
        if not used and value is not None:
            raise SymllmError(f"{field}: {value} given but no layer {unused or layer}")


def choice(field: str, value, known, *, see: str = "--help"):
    """``value`` if it is one of ``known``; else one line naming the field, the value and the known names (a
    list too long for the line: the names closest to the value and ``see``, where the whole list is).

    >>> choice("split", "diagonal", ("column", "row", "vocab", "sequence", "replicated", "expert", "heads"),
    ...        see="components.SPLITS")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: split: unknown 'diagonal' (known: all 7: see components.SPLITS)
    """
    try:
        ok = value in known
    except TypeError:  # an unhashable value asked of a dict
        ok = False
    if not ok:
        raise SymllmError(with_list(f"{field}: unknown {short(value)} (known: ", known, see=see, near=value))
    return value


def zero_stage(value) -> int:
    """``value`` if it is a ZeRO stage (:data:`ZERO_STAGES`).

    >>> zero_stage(4)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: zero_stage: expected 0, 1, 2 or 3, got 4
    """
    if isinstance(value, bool) or not isinstance(value, int) or value not in ZERO_STAGES:
        raise SymllmError(f"zero_stage: expected 0, 1, 2 or 3, got {short(value)}")
    return value
