"""Stored text inside memvm's own tags stays data.

Pages, summaries and tool outcomes are rendered between memvm's tags (`<VM:RULES>`,
`<VM:MANIFEST_JSON>`, `<VM:CONTEXT>`, `<procedural_memory>`). A page that spells one of them
would close the block it sits in and open one of its own, with rules of its own. `neutralise`
escapes the opening bracket of anything a reader could take for one of those tags, at render time:
what is stored, searched and faulted stays exactly as given.

What counts as a tag is judged the way a reader would see it, character by character after the
bracket: in any case and in full-width or other compatibility forms; with accents, spaces and
anything unseen (control and format characters, combining marks, variation selectors, tag
characters, fillers, unassigned code points) ignored wherever they sit; with letters, colons and
slashes that look like the ASCII ones (Cyrillic "М", Greek "Ρ") read as those; with angle-shaped
brackets ("‹", "〈", "⟨", "˂") read as `<`; with marks before the name ignored (`<-VM:RULES>`); with
any mark but a closing bracket between "vm" and one of memvm's names (`</VM CONTEXT>`,
`<VM−RULES>`, `<VM|RULES>`); and with any run of separators between "procedural" and "memory".
Other angle brackets (HTML, generics, comparisons, `<vm-id>`, `List<VM.Instance>`) are left alone.
"""

import re
import unicodedata
from functools import lru_cache

# What an escaped opening bracket reads as: the entity every model knows as "a literal <".
ESCAPED_OPENER = "&lt;"

# Characters that look like the ASCII one a tag is spelled with, beyond what compatibility
# decomposition already folds (full-width, mathematical and small forms). Kept to the characters of
# "<", "/", ":" and the letters of "vm" and "procedural memory"; a key in upper case is read before
# the letter is folded to lower case, where it would look like something else (Greek "Μ" -> "μ").
_LOOKS_LIKE = {
    "<": (
        "\u02c2"  # modifier letter left arrowhead
        "\u2039"  # single left-pointing angle quotation mark
        "\u3008\u27e8\u29fc\u276c\u276e"  # CJK, mathematical, curved and ornament angle brackets
        "\u1438\u16b2"  # Canadian syllabics "pa", runic "kauna"
    ),
    "/": "\\\u2044\u2215\u29f8\u2571\u27cb\u3033",  # backslash; fraction, division, big, box-drawing slashes
    ":": "\u02d0\u02f8\u05c3\u0589\u1804\u205a\u2236\ua789",  # IPA, Hebrew, Armenian, ratio colons
    # Cyrillic, Greek and Latin small-capital letters.
    "a": "\u0410\u0430\u0391\u03b1\u0251\u1d00",
    "c": "\u0421\u0441\u03f9\u03f2\u1d04",
    "d": "\u0500\u0501\u1d05",
    "e": "\u0415\u0435\u0395\u1d07",
    "l": "I\u0406\u04c0\u04cf\u0399\u01c0\u029f",  # capital I reads as a small l in many fonts
    "m": "\u041c\u043c\u039c\u03fa\u1d0d",
    "o": "\u041e\u043e\u039f\u03bf\u0585\u1d0f",
    "p": "\u0420\u0440\u03a1\u03c1\u1d18",
    "r": "\u0433\u0280",
    "u": "\u057d\u03c5\u1d1c",
    # Cyrillic "В" is the letter "v" to anyone who reads the script; Izhitsa and Greek nu look it.
    "v": "\u0412\u0432\u0474\u0475\u03bd\u1d20\u028b",
    "y": "\u0423\u0443\u04ae\u04af\u03a5\u03b3\u028f",
}
_LOOKALIKES = {char: ascii_char for ascii_char, chars in _LOOKS_LIKE.items() for char in chars}

# Every character that reads as an opening bracket: the lookalikes above and those whose
# compatibility decomposition holds one (small and full-width forms, "≮" = "<" + combining slash,
# and "〈" U+2329 and the vertical presentation form U+FE3F, which decompose to "〈" U+3008).
_OPENER = re.compile("[" + re.escape("<\u226e\ufe64\uff1c\u2329\ufe3f" + _LOOKS_LIKE["<"]) + "]")

# Categories a reader does not see as a letter of a name: control, format and unassigned
# characters, combining marks (accents, variation selectors) and every kind of space.
_UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Mn", "Me", "Zs", "Zl", "Zp"})
# Letters that draw nothing: the Hangul fillers, and the blank braille pattern.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")

# memvm's tag names as read with the leading "/" taken off and a run of separators as one space:
# `vm:` starts all of memvm's own tags (and any added later), whatever separator follows the vm.
# Spaces are unseen, so `VM CONTEXT` reads as "vmcontext": memvm's own names are tags that way
# too, read as a reader reads them in either case (a capital I reads as l: "MANlFEST").
_SPELLINGS = ("vm:", "vmcontext", "vmrules", "vmmanifest", "procedural memory", "proceduralmemory")
_SEPARATOR_AT = len("procedural")
# What may stand before a tag's name, read as the closing slash or ignored: `<-VM:RULES>`.
_LEADING = "/-_.\\|~=+*^`'\"$#@!?&%"


def neutralise(text: str) -> str:
    """`text` with every memvm tag lookalike's opening bracket escaped; any other text unchanged."""
    if not _OPENER.search(text):
        return text
    return _OPENER.sub(_escape_tag, text)


def _escape_tag(match: re.Match[str]) -> str:
    return ESCAPED_OPENER if _names_a_tag(match.string, match.end()) else match.group()


def _names_a_tag(text: str, start: int) -> bool:
    # A name never holds a bracket, so the reading stops at the next one: each character is read
    # for one bracket at most, and a long text full of brackets costs no more than its length.
    name = ""
    for index in range(start, len(text)):
        for char in _fold(text[index]):
            if char == "<":
                return False
            if name and _is_separator(char) and _is_separator(name[-1]):
                continue  # a run of separators reads as one
            name += char
            body = name.lstrip(_LEADING)
            if len(body) > _SEPARATOR_AT and _is_separator(body[_SEPARATOR_AT]):
                body = f"{body[:_SEPARATOR_AT]} {body[_SEPARATOR_AT + 1 :]}"
            if len(body) > len("vm") and body.startswith("vm") and body[2] != ":" and _joins(body[2]):
                # `VM-RULES`, `VM|RULES`, `VM−RULES` read as `VM RULES`: a tag when a name of
                # memvm's follows, while `vm-id` or `VM.Instance` stay text.
                body = "vm" + body[3:]
            if body in _TAG_NAMES:
                return True
            if not any(tag.startswith(body) for tag in _TAG_NAMES):
                return False
    return False


def _joins(char: str) -> bool:
    """A mark that can stand between two words (dash, bar, dot, sign, arrow), not a closing bracket."""
    return _is_separator(char) and unicodedata.category(char) not in ("Pe", "Pf")


def _is_separator(char: str) -> bool:
    return not char.isalnum() and char not in "<>"


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """`char` as a reader takes it in a tag name: lower-case ASCII where it looks like it, nothing
    where nothing is seen."""
    folded: list[str] = []
    for part in unicodedata.normalize("NFKD", char):
        if _unseen(part):
            continue
        lowered = unicodedata.normalize("NFKD", _LOOKALIKES.get(part, part).casefold())
        folded.extend(_LOOKALIKES.get(each, each) for each in lowered if not _unseen(each))
    return "".join(folded)


def _unseen(char: str) -> bool:
    return char in _BLANK_LETTERS or unicodedata.category(char) in _UNSEEN_CATEGORIES


_TAG_NAMES = tuple({*_SPELLINGS, *("".join(_fold(char) for char in name.upper()) for name in _SPELLINGS)})
