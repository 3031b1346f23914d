"""Stored text inside memvm's own tags stays data.

Pages, summaries and tool outcomes are rendered between memvm's tags (`<VM:RULES>`,
`<VM:MANIFEST_JSON>`, `<VM:CONTEXT>`, `<procedural_memory>`). A page that spells one of them
would close the block it sits in and open one of its own, with rules of its own. `neutralise`
escapes the opening bracket of anything a reader could take for one of those tags, at render time:
what is stored, searched and faulted stays exactly as given. What counts as a tag is judged the
way a reader would see it: in any case, with spaces or invisible characters inside, in full-width
or other compatibility forms. Other angle brackets (HTML, generics, comparisons) are left alone.
"""

import re
import unicodedata

# What an escaped opening bracket reads as: the entity every model knows as "a literal <".
ESCAPED_OPENER = "&lt;"

# Characters whose compatibility form is "<": the ASCII bracket, its small and full-width forms.
_OPENER = re.compile("[<\ufe64\uff1c]")
# What a reader skips over between a bracket and a tag name: white space, control characters
# and invisible formatting characters (soft hyphen, zero-width and direction marks, BOM).
_INVISIBLE = r"\s\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff"
_GAP = re.compile(f"[{_INVISIBLE}]*")
_INVISIBLE_RUN = re.compile(f"[{_INVISIBLE}]+")
# How far past the bracket and its gap a tag name is looked for: the longest name with room for
# invisible characters between its letters.
_WINDOW = 96
# A memvm tag, opening or closing, as it reads once folded to plain lower-case ASCII: `vm:`
# starts all of memvm's own tags (and any added later).
_TAG = re.compile(r"[/\u2044\u2215\u29f8]*(?:vm:|procedural[_\-\u2010-\u2015]?memory)")


def neutralise(text: str) -> str:
    """`text` with every memvm tag lookalike's opening bracket escaped; any other text unchanged."""
    if not _OPENER.search(text):
        return text
    return _OPENER.sub(_escape_tag, text)


def _escape_tag(match: re.Match[str]) -> str:
    text = match.string
    gap = _GAP.match(text, match.end())
    assert gap is not None  # a starred pattern always matches
    following = text[gap.end() : gap.end() + _WINDOW]
    folded = _INVISIBLE_RUN.sub("", unicodedata.normalize("NFKC", following).casefold())
    return ESCAPED_OPENER if _TAG.match(folded) else match.group()
