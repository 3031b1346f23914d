"""When a query asks about: the stretch of time its words name, counted back from now.

"What did I buy 10 days ago?", "Who did I meet last Tuesday?", "the event two weeks ago": the
answer was said then, and each page keeps when it was written. Words alone cannot find it (the
page says "I just got a smoker today"), so search lifts the pages written inside the stretch the
query names (SearchTuning.time_boost). Only expressions that fix a stretch are read: "N days,
weeks, months or years ago" (a number or a word: "a", "a couple of", "a few", "two"...),
"yesterday", "last week / month / year / weekend", "last Monday" (any weekday), "this week /
month". Each stretch gets a margin, wider for vaguer units, since people round: "two weeks ago" is
seldom exactly fourteen days. "Before", "since", "first", "how many days ago" and dates spelled out
are not read: they fix no stretch, or a question about them is answered by what happened, not when.

Days are counted in the local time of the process (a user's "yesterday" is local), from `now`.
"""

import re
from datetime import datetime

_DAY = 86_400.0
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a few": 3,
    "few": 3,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
# Half the width of the stretch around "N units ago", in days: people round to the unit.
_MARGIN_DAYS = {"day": 1, "week": 3, "month": 10, "year": 60}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

_NUMBER = (
    r"(?P<number>\d{1,3}|" + "|".join(sorted((re.escape(w) for w in _NUMBERS), key=len, reverse=True)) + ")"
)
_AGO = re.compile(rf"\b{_NUMBER}\s+(?P<unit>day|week|month|year)s?\s+ago\b")
_LAST = re.compile(r"\b(?:last|past)\s+(?P<unit>week|month|year|weekend)\b")
_LAST_WEEKDAY = re.compile(r"\blast\s+(?P<weekday>" + "|".join(_WEEKDAYS) + r")\b")
_THIS = re.compile(r"\bthis\s+(?P<unit>week|month)\b")
_YESTERDAY = re.compile(r"\byesterday\b")


def time_window(query: str, now: float) -> tuple[float, float] | None:
    """The stretch of time (from, to: seconds since the epoch) that `query` names, or None."""
    text = query.lower().replace("\u2019", "'")
    found = _AGO.search(text)
    if found:
        count = _NUMBERS.get(found["number"]) or int(found["number"])
        unit = found["unit"]
        centre = _midnight(now) - count * _UNIT_DAYS[unit] * _DAY
        margin = _MARGIN_DAYS[unit] * _DAY
        return centre - margin, centre + margin + _DAY
    if _YESTERDAY.search(text):
        start = _midnight(now) - _DAY
        return start, start + _DAY
    found = _LAST_WEEKDAY.search(text)
    if found:
        today = datetime.fromtimestamp(now).weekday()
        back = (today - _WEEKDAYS.index(found["weekday"])) % 7 or 7
        start = _midnight(now) - back * _DAY
        return start - _DAY, start + 2 * _DAY
    found = _LAST.search(text)
    if found:
        unit = found["unit"]
        if unit == "weekend":
            back = (datetime.fromtimestamp(now).weekday() - 5) % 7 or 7  # the last Saturday
            start = _midnight(now) - back * _DAY
            return start - _DAY, start + 3 * _DAY
        days = _UNIT_DAYS[unit]
        return _midnight(now) - 2 * days * _DAY, _midnight(now) + _DAY
    found = _THIS.search(text)
    if found:
        days = _UNIT_DAYS[found["unit"]]
        return _midnight(now) - days * _DAY, now + _DAY
    return None


def _midnight(now: float) -> float:
    """The start of `now`'s day, local time."""
    return datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
