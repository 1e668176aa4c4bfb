"""The shape of a question: does it ask for one thing, or gather several (aggregate or hop)?

A question that aggregates ("What books has Tim read?", "How many times did Kevin play
basketball?") or hops over several people ("What do Jon and Gina both have in common?") needs
several pieces of evidence, said at different times; a question about one thing needs one. The
memories fitter (:mod:`.fit`) spends the budget accordingly: a wide question gets more items and
shorter ones (each long item shown as its window around the question's words).

:func:`question_shape` reads English cues only, from the words of the question, in one pass over
them (no backtracking pattern, so any text is read in linear time):

- ``several people``: two capitalised names joined by ``and``, ``&`` or ``or`` ("Kate and Elise");
- ``both``: *both*, *either*, *each*, *every*, *all*, *in common*, *together*;
- ``count``: *how many*, *how often*, *times*, *ever*;
- ``comparison``: *same*, *different*, *differ*, *compare*, *more*, *less*, *most*, *least*,
  *than*, *favorite*/*favourite* of several;
- ``plural``: a plural noun right after the question word ("What *books*", "Which *bands*",
  "What kind of *foods*"), or a plural verb after it ("What *are* ...", "What *have* ...", "What
  *has* Tim cooked?": what was done so far).

A question in another language has none of these cues and is read as narrow: it is fitted as
every question was before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SHAPE_CUES", "QuestionShape", "question_shape"]

#: The cues :func:`question_shape` reports, in the order it reports them.
SHAPE_CUES: tuple[str, ...] = ("several people", "both", "count", "comparison", "plural")

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|&")
_QUESTION = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "how", "why"})
_AUX = frozenset(
    {
        "did", "does", "do", "is", "was", "will", "would", "can", "could", "should",
        "had", "has", "have", "are", "were", "am", "be", "been", "might", "may", "must",
    }
)  # fmt: skip
_PLURAL_AUX = frozenset({"are", "were", "have", "has"})
_BOTH = frozenset({"both", "either", "each", "every", "all", "together"})
_COUNT = frozenset({"times", "ever", "often"})
_COMPARE = frozenset(
    {"same", "different", "difference", "differ", "compare", "compared"}
    | {"more", "less", "most", "least", "than"}
)
_KIND = frozenset({"kind", "kinds", "type", "types", "sort", "sorts", "of", "the", "a", "an"})
_JOIN = frozenset({"and", "&", "or"})
_NOT_NAMES = frozenset(
    {
        "i", "what", "which", "who", "when", "where", "why", "how", "did", "does", "do", "is", "are",
        "was", "were", "has", "have", "the", "a", "an", "and", "or", "in", "on", "at",
        "january", "february", "march", "april", "may", "june", "july", "august", "september",
        "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
        "saturday", "sunday",
    }
)  # fmt: skip
_NOT_PLURAL = ("ss", "us", "is", "ous", "ics", "'s", "’s")
_MAX_CHARS = 4000  # a long message is read in its last part, where its question usually is


@dataclass(frozen=True)
class QuestionShape:
    """What :func:`question_shape` read in a question.

    Attributes:
        cues: which of :data:`SHAPE_CUES` the question shows, in that order.
    """

    cues: tuple[str, ...] = ()

    @property
    def wide(self) -> bool:
        """Whether the question aggregates or hops: it shows at least one cue."""
        return bool(self.cues)


def _plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(_NOT_PLURAL)


def question_shape(text: str) -> QuestionShape:
    """The shape of the question ``text`` (any text: a long message is read in its last part).

    >>> question_shape("What books has Tim read?").cues
    ('plural',)
    >>> question_shape("What do Jon and Gina both have in common?").cues
    ('several people', 'both')
    >>> question_shape("When did Melanie paint a sunrise?").wide
    False
    """
    raw = _WORD.findall(text[-_MAX_CHARS:])
    words = [w.lower() for w in raw]
    found: set[str] = set()
    for i, word in enumerate(words):
        if word in _BOTH or (word == "in" and words[i + 1 : i + 2] == ["common"]):
            found.add("both")
        elif word in _COUNT or (word == "how" and words[i + 1 : i + 2] in (["many"], ["often"])):
            found.add("count")
        elif word in _COMPARE:
            found.add("comparison")
        elif word in _JOIN and 0 < i < len(words) - 1 and _name(raw[i - 1]) and _name(raw[i + 1]):
            found.add("several people")
        elif word in _QUESTION and _plural_after(words, i):
            found.add("plural")
    return QuestionShape(tuple(cue for cue in SHAPE_CUES if cue in found))


def _name(word: str) -> bool:
    """A word written as a name: capitalised, not a question word, a month or a day."""
    return word[:1].isupper() and word.lower() not in _NOT_NAMES


def _plural_after(words: list[str], at: int) -> bool:
    """Whether the question word at ``at`` asks for several things: a plural noun among the next
    words before a verb ("what kind of foods did"), or a plural verb right after it."""
    following = words[at + 1 : at + 6]
    if following[:1] and following[0] in _PLURAL_AUX:
        return True
    for word in following:
        if word in _AUX:
            return False
        if _plural(word):
            return True
        if word not in _KIND and not word.isalpha():
            return False
    return False
