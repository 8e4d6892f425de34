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

from fractions import Fraction
from numbers import Rational

__all__ = ["digits", "grouped", "human", "human_bytes"]

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
        den, places = value.denominator, 0
        for p in (2, 5):
            while den % p == 0:
                den //= p
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
