"""What a student must not meet in LaTeX, read with the tests' own patterns (not the ones
the handout filters with): :func:`student_defects`, used on the handout and the problem
sheets (tests/test_handout.py, tests/test_problems.py).
"""

import re

#: the test's own reading of a numeric result's unit, by its left side (not the handout's)
DIMENSIONS = [(r"^[Tt](?:_|\()", "s"), (r"^(?:\\Delta )?\\text\{FLOPs\}", "FLOP"),
              (r"^\\text\{(?:bytes|KV)\}|^M(?:_|$)|^V_b", "B"), (r"^\\text\{AI\}|^C / W$",
                                                                  "FLOP/B"),
              (r"^C(?:_|\^)", "FLOP/s"), (r"^W(?:_|\^)", "B/s")]
#: a unit LaTeX prints after a number: \,\mathrm{ms}, \,\mu\mathrm{s}, \%
UNIT = re.compile(r"\\,(?:\\mu)?\\mathrm\{[A-Za-z/]+\}|\\%")
PLAIN_NUMBER = re.compile(r"-?\d[\d.,]*(?: \\times 10\^\{-?\d+\})?")
#: what a student never meets (the handout filters with other patterns): code names (words
#: joined by underscores, a row key, typewriter type, a model's identifier), files, the
#: seed lectures, commit hashes, errata
CODE = {"snake_case": r"[A-Za-z]+(?:\\_[A-Za-z0-9]+)+",
        "row key": r"\b(?:attn|mlp|moe|fwd|bwd|recompute|saved|optimizer)/[a-z]",
        "typewriter": r"\\texttt", "file": r"\.(?:py|md|json)\b", "seed": r"(?i)\bseed",
        "commit hash": r"\b(?=\w*\d)(?=\w*[a-f])[0-9a-f]{7,40}\b", "erratum": r"(?i)errat",
        "model identifier": r"\b(?:llama|mistral|mixtral|gemma|qwen|deepseek|pythia|phi)"
                            r"-[\w.-]*?\d+[bm]\b", "chip identifier": r"\btpu-v\d|\b[abh][12]00\b"}


def _numeric_results(tex: str) -> list[tuple[str, str, str]]:
    """(statement, left side, value) of every align row and every answer of ``tex``."""
    found = []
    for block in re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", tex, re.S):
        said = ""
        for row in re.split(r" \\\\\*?\n", block):
            said = (re.findall(r"\\intertext\{(.*)\}", row) or [said])[-1]
            row = re.sub(r"\\intertext\{.*\}\n?", "", row).strip()
            if "&=" in row:
                parts = row.split("&=")
                found.append((said, parts[0].strip(), _value(parts[-1])))
    for answer in re.findall(r"\\textbf\{Answer\.\} (.*)\\par", tex):
        for lhs, value in re.findall(r"\$(.*?) = (.*?)\$(?:;|$)", answer):
            found.append(("", lhs, value))
    return found


def student_defects(tex: str) -> list[str]:
    """What a student must not meet in ``tex``: a fraction of more than 6 digits, an
    internal reference, a numeric result of a dimensioned quantity without its unit, or a
    decimal of more than 3 significant figures."""
    body = tex[tex.find(r"\begin{document}"):]
    text = re.sub(r"\\includegraphics(\[[^]]*\])?\{[^}]*\}", "", body)  # figure file paths
    fractions = re.finditer(r"\\frac\{(\d[\d ]*)\}\{(\d[\d ]*)\}|\b(\d+)/(\d+)\b",
                            text.replace(r"\,", ""))
    bad = [f"fraction {m[1] or m[3]}/{m[2] or m[4]}" for m in fractions
           if len(re.sub(r"\D", "", m.group())) > 6]
    bad += [f"{name}: {m.group()!r} in ...{text[max(0, m.start() - 40):m.end() + 20]!r}"
            for name, pattern in CODE.items() for m in re.finditer(pattern, text)]
    bad += ["a heading with no words"] * len(re.findall(r"\\(?:sub)*section\*?\{\}", text))
    for said, lhs, value in _numeric_results(body):
        row = re.fullmatch(r"\\left[\[(]\s*(?:\\begin\{matrix\})?(.*?)(?:\\end\{matrix\})?"
                           r"\s*\\right[\])](.*)", value)  # a row of numbers, its unit after
        cells = re.split(r"\s*[,&]\s+", row[1]) if row else [value]
        if not all(PLAIN_NUMBER.fullmatch(c.split(r"\,")[0].split(r"\%")[0]) for c in cells):
            continue  # an expression: its symbols carry the dimension
        for mantissa in re.findall(r"\d+\.\d+", value):
            if len(mantissa.replace(".", "").lstrip("0")) > 3:
                bad.append(f"more than 3 figures: {lhs} = {value}")
        unit = None if "/" in lhs and lhs != "C / W" else next(  # a ratio: a pure number
            (u for pattern, u in DIMENSIONS if re.search(pattern, lhs)), None)
        if (unit or re.search(r"\(\\?%\)", said)) and UNIT.search(value) is None:
            bad.append(f"no unit: {lhs} = {value} ({said})")
    return bad


def _value(side: str) -> str:
    """A row's value without the note printed beside it (a qquad and a parenthesis)."""
    return side.split(r" \qquad \text{(")[0].split("&&")[0].strip()
