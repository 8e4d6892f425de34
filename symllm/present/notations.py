"""A user's notation, checked: the mapping symbol -> LaTeX that renames symbols in every output, read from TOML
or JSON (:func:`load_notation`), each LaTeX string checked to be math TeX and MathJax both typeset and that runs
nothing (:func:`tex_refusal`). Presentation only: it computes nothing (:mod:`symllm.present.render` uses it).

>>> notation({"n_heads": "H"})[S.n_h]
'H'
>>> tex_refusal(r"\\input{x}") is not None
True
"""
from __future__ import annotations

import re
from pathlib import Path

import sympy as sp

from symllm.arch import symbols as S
from symllm.errors import SymllmError
from symllm.files import read_json, read_text
from symllm.validate import short, shown_path, with_list

__all__ = ["notation", "load_notation", "tex_refusal"]


# --------------------------------------------------------------------------- notation

def _symbol_for(key) -> sp.Symbol:
    if isinstance(key, sp.Symbol) and key in S.SYMBOLS:
        return key
    if isinstance(key, str):
        for info in S.SYMBOLS.values():
            if key in (info.symbol.name, info.code, info.latex):
                return info.symbol
    raise SymllmError(with_list(f"notation: unknown symbol {short(str(key), 20)} (known: ",
                                [sym.name for sym in S.SYMBOLS], see="symllm.arch.symbols", near=str(key)))


_GREEK = ("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi "
          "varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi "
          "Sigma Upsilon Phi Psi Omega").split()
#: the LaTeX a notation value may use: symbols (no argument), math fonts and accents (one math
#: argument) and text commands (one argument of plain words); everything else (\input, \write,
#: \openin, \catcode, \csname, \def, ...) is refused, so a notation can neither read nor write files
#: nor break the document
TEX_SYMBOLS = frozenset(_GREEK + (
    "ell hbar imath jmath prime infty partial nabla cdot times ast star circ bullet lvert rvert lVert rVert "
    "vert Vert mid langle rangle lfloor rfloor lceil rceil ldots cdots dots emptyset").split())
#: spacing (between symbols only: never a script's argument, never carrying a script)
TEX_SPACES = frozenset("quad qquad".split())
TEX_FONTS = frozenset("mathrm mathit mathbf mathsf mathtt mathcal mathnormal boldsymbol operatorname".split())
TEX_ACCENTS = frozenset(
    "hat bar tilde vec dot ddot check breve acute grave mathring widehat widetilde overline underline".split())
TEX_TEXT = frozenset("text textrm textit textsf texttt textbf".split())
_TEX_CONTROL_SYMBOLS = frozenset(",;:! |{}_#%&")
_TEX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789()[]+-*/=,.;:!?")
_TEX_TEXT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;()/+-")
_TEX_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|.", re.S)
#: the longest notation value, and the deepest nesting of braces
TEX_MAX_LENGTH, TEX_MAX_DEPTH = 100, 8


class _TexRefused(Exception):
    pass


class _TexChecker:
    """A recursive-descent check of a notation value against a small grammar of math-mode LaTeX:

    value := item*;  item := atom [_ arg] [']* [^ arg] (or ^ before _, without primes);
    atom := a letter, digit or plain punctuation | a symbol | {value} | font arg | accent arg | text {words};
    arg := a letter or digit | a symbol | {value} | font arg | text {words}.
    """

    def __init__(self, tex: str):
        self.tokens = _TEX_TOKEN.findall(tex)
        self.i = 0

    def peek(self, math=True):
        """The next token; in math mode spaces are skipped, as TeX skips them."""
        while math and self.i < len(self.tokens) and self.tokens[self.i] == " ":
            self.i += 1
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, math=True):
        tok = self.peek(math)
        self.i += 1
        return tok

    def check(self):
        self.value(0)
        if self.peek() is not None:
            raise _TexRefused(f"unbalanced '{self.peek()}'")

    def value(self, depth):
        if depth > TEX_MAX_DEPTH:
            raise _TexRefused(f"braces nested more than {TEX_MAX_DEPTH} deep")
        while self.peek() not in (None, "}"):
            self.item(depth)

    def group(self, depth):
        if self.take() != "{":
            raise _TexRefused("expected '{'")
        self.value(depth + 1)
        if self.take() != "}":
            raise _TexRefused("unbalanced '{'")

    def text_group(self):
        if self.take() != "{":
            raise _TexRefused("a text command needs {words}")
        while self.peek(math=False) in _TEX_TEXT_CHARS:
            self.take(math=False)
        if self.take(math=False) != "}":
            raise _TexRefused("a text command takes plain words (letters, digits, .,:;()/+-)")

    def command(self, tok, depth, *, as_arg=False):
        name = tok[1:]
        if name in TEX_SYMBOLS or (name in TEX_SPACES and not as_arg):
            return
        if len(name) == 1 and name in _TEX_CONTROL_SYMBOLS and not as_arg:
            return
        if name in TEX_FONTS or (name in TEX_ACCENTS and not as_arg):
            self.arg(depth, simple=True)
        elif name in TEX_TEXT:
            self.text_group()
        elif len(name) == 1:
            raise _TexRefused(f"'{tok}' is not allowed")
        else:
            raise _TexRefused(f"'{tok[:12]}' is not allowed")

    def arg(self, depth, simple=False):
        tok = self.peek()
        if tok is None or tok == "}":
            raise _TexRefused("an argument is missing")
        if tok == "{":
            return self.group(depth)
        self.take()
        if tok.startswith("\\") and len(tok) > 1:
            fragile = simple or tok[1:] in ("boldsymbol", "operatorname")  # x_\boldsymbol{a} fails
            if fragile and tok[1:] not in TEX_SYMBOLS:  # \mathrm\hat x: an argument that needs braces
                raise _TexRefused(f"'{tok}' cannot be an argument unbraced; use braces")
            return self.command(tok, depth, as_arg=True)
        if not tok.isalnum() or not tok.isascii():
            raise _TexRefused(f"{short(tok, 12)} cannot be an argument unbraced")

    def item(self, depth):
        tok = self.peek()
        if tok == "{":
            self.group(depth)
        elif tok in ("_", "^", "'"):
            raise _TexRefused(f"{tok!r} must follow a symbol")
        else:
            self.take()
            if tok.startswith("\\") and len(tok) > 1:
                self.command(tok, depth)
            elif tok not in _TEX_CHARS:
                raise _TexRefused(f"{short(tok, 8)} is not allowed")
        if tok.startswith("\\") and (tok[1:] in TEX_SPACES or tok[1:] in tuple(",;:! ")):  # spacing: no scripts
            if self.peek() in ("_", "^", "'"):
                raise _TexRefused(f"{self.peek()!r} must follow a symbol, not spacing")
            return
        sub = sup = primes = False
        while self.peek() in ("_", "^", "'"):
            tok = self.take()
            if tok == "_":
                if sub or primes:
                    raise _TexRefused("a second subscript, or a subscript after a prime")
                sub = True
                self.arg(depth)
            elif tok == "^":
                if sup:
                    raise _TexRefused("a second superscript")
                sup = True
                self.arg(depth, simple=primes)  # x'^\text{a} fails: after a prime, braces
            else:
                if sup:
                    raise _TexRefused("a prime after a superscript")
                if self.peek(math=False) == " " and self.peek() == "^":
                    raise _TexRefused("a space between a prime and a superscript")
                primes = True


def tex_refusal(tex: str) -> str | None:
    r"""Why the LaTeX ``tex`` is refused as a symbol's notation, or ``None`` when it is accepted.

    Accepted is math-mode LaTeX that compiles on its own and as the base of a power: letters, digits,
    plain punctuation, braces, one subscript and one superscript (or primes) per symbol, Greek
    letters and a few symbols, math fonts, accents and ``\text{words}`` (see :data:`TEX_SYMBOLS`,
    :data:`TEX_FONTS`, :data:`TEX_ACCENTS`, :data:`TEX_TEXT`); nothing that reads or writes files.

    >>> tex_refusal(r"d_\mathrm{model}"), tex_refusal(r"\lvert\mathcal{V}\rvert"), tex_refusal("h'")
    (None, None, None)
    >>> print(tex_refusal(r"\input{/etc/passwd}"))  # doctest: +ELLIPSIS
    '\input' is not allowed
    >>> print(tex_refusal(r"d\\}"))
    '\\' is not allowed
    >>> print(tex_refusal("a_b_c"))
    a second subscript, or a subscript after a prime
    """
    if not isinstance(tex, str) or not tex.strip():
        return "expected a non-empty string"
    if len(tex) > TEX_MAX_LENGTH:
        return f"longer than {TEX_MAX_LENGTH} characters"
    try:
        _TexChecker(tex.strip()).check()
    except _TexRefused as e:
        return str(e)
    return None


def notation(mapping=None) -> dict[sp.Symbol, str]:
    """Symbol -> LaTeX: symllm's table with ``mapping`` on top (or the file ``mapping`` names, see
    :func:`load_notation`).

    Keys may be symbols, their names (``n_h``) or Meta's code names (``n_heads``); values are LaTeX.

    >>> notation({"n_heads": "h"})[S.n_h], notation()[S.n_kv]
    ('h', 'n_{kv}')
    >>> notation({"x": "y"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: notation: unknown symbol 'x' (known: all ...: see symllm.arch.symbols)
    """
    if isinstance(mapping, (str, Path)):
        return load_notation(mapping)
    out = dict(S.LATEX)
    for key, value in (mapping or {}).items():
        symbol = _symbol_for(key)
        why = tex_refusal(value)
        if why is not None:
            raise SymllmError(f"notation: {symbol.name}: {short(value, 16)} is not accepted: {why}")
        out[symbol] = value.strip()
    return out


def load_notation(path) -> dict[sp.Symbol, str]:
    """A notation file (TOML or JSON, one ``symbol = "LaTeX"`` per line) as a notation mapping.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "paper.json"
    >>> _ = p.write_text('{"d": "d_\\\\\\\\mathrm{model}", "n_h": "h"}')
    >>> load_notation(p)[S.d]
    'd_\\\\mathrm{model}'
    """
    path = Path(path)
    if path.suffix.lower() != ".toml":
        raw = read_json(path, "notation")
    else:
        text = read_text(path, "notation")
        try:
            import tomllib
        except ImportError:  # Python 3.10
            try:
                import tomli as tomllib
            except ImportError:
                raise SymllmError("notation: reading TOML needs Python 3.11+ or tomli; use JSON") from None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SymllmError(f"notation: {shown_path(path)} is not valid TOML ({e})") from None
        except (RecursionError, ValueError):  # nested too deep; an integer over 4,300 digits
            raise SymllmError(f"notation: {shown_path(path)} is not valid TOML "
                              "(nested too deeply or a number too long)") from None
    if not isinstance(raw, dict):
        raise SymllmError(f"notation: {shown_path(path)} must map symbols to LaTeX strings")
    return notation(raw)
