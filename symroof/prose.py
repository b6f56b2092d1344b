r"""Prose for LaTeX and for the terminal: the text of derivations and lecture notes.

:func:`tex_text` sets a sentence in LaTeX text mode: ``$...$`` is inline maths, passed through
(pandoc's rule, so ``$29 at batch 1, $1.5 at 32`` stays money, and ``\$`` is a dollar sign), a
``literal`` is typewriter code, the rest is escaped with typographic quotes, and ASCII maths
that has one reading in prose (``->``, ``<<``, ``QK^T``, ``N^2``, ``oo``, ``1.97e14``,
``80 us``, ``1.5x``, ``T_math``) is typeset as maths. :func:`plain_text` turns the maths back
into ASCII for a terminal; :func:`tex_escape` escapes without reading anything into the text.

>>> print(tex_text(r"$B \ll D$, so T_math -> 2BDF/C"))
$B \ll D$, so $T_\text{math}$ $\to$ 2BDF/C
>>> plain_text(r"$B \ll D$")
'B << D'
"""

from __future__ import annotations

import re

__all__ = ["tex_escape", "tex_text", "plain_text", "tex_number"]

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\ensuremath{\sim}",
                "^": r"\textasciicircum{}", "<": r"\ensuremath{<}", ">": r"\ensuremath{>}"}


def tex_escape(text: str) -> str:
    r"""Escape plain text for LaTeX text mode.

    >>> tex_escape("50% of d_h & more")
    '50\\% of d\\_h \\& more'
    """
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)


# Inline maths, by pandoc's rule: the opening $ has a non-space on its right, the closing $ a
# non-space on its left and no digit after it, so "$29 at batch 1, $1.5 at 32" stays money.
_MATH = re.compile(r"(?<!\\)\$(?=\S)((?:[^$\\]|\\.)+?)(?<=\S)(?<!\\)\$(?!\d)")
# ASCII maths that has one reading in prose, typeset as maths wherever it appears: (pattern,
# LaTeX), the LaTeX a function of the match or a fixed string.
_ASCII_MATH = [
    (r"\b(\d+(?:\.\d+)?)e([+-]?\d+)\b", lambda m: _sci(*m.groups())),  # 1.97e14
    (r"\b([A-Za-z]{1,3})\^T\b", lambda m: m[1] + r"^\top"),  # QK^T: a transpose
    (r"\b([A-Za-z]{1,2}|\d+)\^(\d+)\b", lambda m: f"{m[1]}^{{{m[2]}}}"),  # N^2, 2^20
    (r"\b(alpha|beta|gamma|delta|kappa|lambda|mu|nu|rho|sigma|tau)\^(\d+)\b",
     lambda m: f"\\{m[1]}^{{{m[2]}}}"),  # alpha^2
    (r"(?<=\))\^(\d+)\b", lambda m: f"^{{{m[1]}}}"),  # (3/4)^2
    (r"(?<![-<>=!])->", r"\to"), (r"=>", r"\Rightarrow"), (r"<<", r"\ll"), (r">>", r"\gg"),
    (r"<=", r"\le"), (r">=", r"\ge"), (r"!=", r"\ne"), (r"==", "="),
    (r"\boo\b", r"\infty"),  # SymPy's infinity
    (r"(?<=\d )u(?=s\b)", r"\mu"),  # 80 us: microseconds
    (r"(?<![\w.])(\d+(?:\.\d+)?)x(?!\w|\.\w)", lambda m: m[1] + r"\times"),  # 1.5x faster
    (r"(?<![\w\\])([A-Z])_([A-Za-z0-9]{1,6})\b", lambda m: _subscript(m[1], m[2])),  # W_ici
]


def _subscript(base: str, sub: str) -> str:
    """``W_ici`` as ``W_\\text{ici}``; ``B_X``, ``W_1``, ``D_XY`` (mesh axes, digits, one
    letter) as plain subscripts."""
    if re.fullmatch(r"[XYZ]{1,3}|[A-Za-z]|\d+", sub):
        return f"{base}_{{{sub}}}"
    return rf"{base}_\text{{{sub}}}"
# A ``literal`` (reStructuredText's inline code, as docstrings write it) or inline maths.
_PROTECTED = re.compile(r"``(?P<code>[^`\n]+?)``|" + _MATH.pattern)
_URL = re.compile(r"https?://[^\s)]*[^\s).,;:]")


def _sci(mantissa: str, exponent: str) -> str:
    e = int(exponent)
    return f"10^{{{e}}}" if float(mantissa) == 1 else rf"{mantissa} \times 10^{{{e}}}"


def _ascii_math(text: str) -> list[tuple[str, str]]:
    """Split plain text into ("text", ...) and ("math", ...) pieces, the unambiguous ASCII
    maths of :data:`_ASCII_MATH` turned into maths."""
    pieces = [("text", text)]
    for pattern, tex in _ASCII_MATH:
        out = []
        render = tex if callable(tex) else (lambda m, tex=tex: tex)
        for kind, chunk in pieces:
            if kind == "math":
                out.append((kind, chunk))
                continue
            last = 0
            for m in re.finditer(pattern, chunk):
                out += [("text", chunk[last:m.start()]), ("math", render(m))]
                last = m.end()
            out.append(("text", chunk[last:]))
        pieces = [p for p in out if p[1]]
    return pieces


_OPEN, _CLOSE, _OPEN1 = "\x01", "\x02", "\x03"  # quote marks, until the text is escaped
_QUOTE_TEX = {_OPEN: "``", _CLOSE: "''", _OPEN1: "`"}


def _mark_quotes(text: str) -> str:
    """Mark the quotes of the prose (not those inside maths): an opening " or ' is one after
    a space, a bracket, a slash, a dash or at the start; any other " closes; any other ' is a
    closing quote or an apostrophe, and stays '."""
    maths = [m.span() for m in _PROTECTED.finditer(text)]
    chars = list(text)
    for i, c in enumerate(text):
        if c in "\"'" and not any(a <= i < b for a, b in maths):
            opening = i == 0 or text[i - 1] in " \t\n([{/-"
            chars[i] = (_OPEN if opening else _CLOSE) if c == '"' else _OPEN1 if opening else c
    return "".join(chars)


def _tex_plain(text: str) -> str:
    """Escape one stretch of prose (no maths in it): URLs may break after a slash."""
    out, last = [], 0
    for m in _URL.finditer(text):
        out.append(tex_escape(text[last:m.start()]))
        out.append(tex_escape(m.group()).replace("/", r"/\allowbreak{}"))
        last = m.end()
    out.append(tex_escape(text[last:]))
    return "".join(out)


def tex_text(text: str) -> str:
    r"""Prose as LaTeX text: ``$...$`` segments pass through as inline maths (``\$`` is a
    dollar sign), a double-backquoted literal is set in typewriter type, the rest is escaped,
    with typographic quotes, and ASCII maths that has one reading (``->``, ``<<``, ``>=``,
    ``QK^T``, ``N^2``, ``oo``, ``1.97e14``, ``80 us``, a multiplier ``1.5x``, and a capital
    with a subscript: ``T_math``, ``W_1``, ``B_X``) typeset as maths.

    >>> print(tex_text(r'"B << D": $T_\text{math} \to 0$ at 8.2e11 B/s, 50% for \$3'))
    ``B $\ll$ D'': $T_\text{math} \to 0$ at $8.2 \times 10^{11}$ B/s, 50\% for \$3
    >>> print(tex_text("T_comms = V / W_ici in 80 us; lm_head, ``T_math`` stay code"))
    $T_\text{comms}$ = V / $W_\text{ici}$ in 80 $\mu$s; lm\_head, \texttt{T\_math} stay code
    >>> print(tex_text("$29 at batch 1, $1.5 at 32; QK^T, S^2, (3/4)^2 and 'naive' -> oo"))
    \$29 at batch 1, \$1.5 at 32; $QK^\top$, $S^{2}$, (3/4)$^{2}$ and `naive' $\to$ $\infty$
    >>> print(tex_text("1.5x the time, 2x. 4x4 and 8x16 are mesh shapes, 0x1f is hex"))
    $1.5\times$ the time, $2\times$. 4x4 and 8x16 are mesh shapes, 0x1f is hex
    """
    text = _mark_quotes(text)
    out, last = [], 0
    for m in _PROTECTED.finditer(text):
        code = m.group("code")
        out += [_tex_prose(text[last:m.start()]),
                m.group() if code is None else rf"\texttt{{{tex_escape(code)}}}"]
        last = m.end()
    out.append(_tex_prose(text[last:]))
    tex = "".join(out)
    for mark, quote in _QUOTE_TEX.items():
        tex = tex.replace(mark, quote)
    return tex


def _tex_prose(text: str) -> str:
    out = []
    for i, chunk in enumerate(text.split(r"\$")):  # \$: a dollar sign the author escaped
        out.append(("" if i == 0 else r"\$") + "".join(
            _tex_plain(piece) if kind == "text" else f"${piece}$"
            for kind, piece in _ascii_math(chunk)))
    return "".join(out)


_PLAIN_TEX = [(r"\\(?:text|mathrm|mathit|operatorname)\{([^{}]*)\}", r"\1"),
              (r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)"),
              (r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)"), (r"\\lim_", "lim_"),
              (r"\\to\b", "->"), (r"\\infty\b", "oo"), (r"\\ll\b", "<<"), (r"\\gg\b", ">>"),
              (r"\\leq?\b", "<="), (r"\\geq?\b", ">="), (r"\\neq?\b", "!="),
              (r"\\approx\b", "~"), (r"\\sim\b", "~"), (r"\\times\b", "x"), (r"\\cdot\b", "*"),
              (r"\\top\b", "T"), (r"\\mu\b", "u"), (r"\\[,;: ]", " "), (r"\\left|\\right|\\!", ""),
              (r"\\([A-Za-z]+)", r"\1"), (r"\{([^{}]*)\}", r"\1")]


def plain_text(text: str) -> str:
    r"""Prose for the terminal: ``$...$`` maths turned back into ASCII.

    >>> plain_text(r"$\lim_{N\to\infty} \text{AI} = \frac{1}{2}$, and $B \ll D$ for \$3")
    'lim_N->oo AI = (1)/(2), and B << D for $3'
    >>> plain_text(r"$X_\text{opt} = \sqrt{2 B N / F}$, $2 \alpha$, $[I, K]\{U_X\}$, $1.5\times$")
    'X_opt = sqrt(2 B N / F), 2 alpha, [I, K]{U_X}, 1.5x'
    """
    def ascii_math(m: re.Match) -> str:
        tex = m.group(1).replace(r"\{", "\x04").replace(r"\}", "\x05")  # braces shown
        for _ in range(3):  # nested braces, innermost first
            for pattern, repl in _PLAIN_TEX:
                tex = re.sub(pattern, repl, tex)
        return tex.replace("\x04", "{").replace("\x05", "}")

    return _MATH.sub(ascii_math, text).replace(r"\$", "$")


def tex_number(text: str) -> str:
    r"""``8.013e-05`` as ``8.013 \times 10^{-5}``, ``53025.6`` with a thin space between
    thousands; other text unchanged.

    >>> tex_number("8.013e-05"), tex_number("240.2"), tex_number("53025.6")
    ('8.013 \\times 10^{-5}', '240.2', '53\\,025.6')
    """
    match = re.fullmatch(r"(-?[\d.]+)e([+-]?\d+)", text)
    if match is not None:
        return _sci(*match.groups())
    whole = re.fullmatch(r"(-?)(\d{5,})(\.\d*)?", text)
    if whole is None:
        return text
    digits = whole[2]
    groups = [digits[max(0, i - 3):i] for i in range(len(digits), 0, -3)][::-1]
    return whole[1] + r"\,".join(groups) + (whole[3] or "")
