"""The words of note chunks as the lexical ranker needs them, counted once per chunk.

A chunk's `Terms` are its distinct words in the order first met, how often each occurs, and how
many words it has: all BM25 and TF-IDF read of it. The notes index keeps them with each chunk
(made when the chunk is, dropped with it), and a `Vocabulary` of every word its chunks hold,
with document frequencies, so a search tokenises only its queries. Tokenising every chunk on
every search took 600 MB and about 9 s for 50,000 chunks.

The order is the one ``Counter(words(text))`` has: the ranker's sums run in it, so its floats
are those of the counts made afresh, to the last bit.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Terms", "Vocabulary", "document_frequency", "terms_of", "words"]

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-case word tokens.

    Examples:
        >>> words("High tide, HIGH water")
        ['high', 'tide', 'high', 'water']
    """
    return [w.lower() for w in _WORD.findall(text)]


@dataclass(frozen=True, slots=True)
class Terms:
    """A chunk's distinct words (first met first), the count of each, and its number of words.

    About 9 bytes per distinct word (a pointer to the shared word and a count, one byte in all
    but odd chunks) and 180 bytes per chunk.
    """

    words: tuple[str, ...]
    counts: array[int]
    length: int

    def count(self, word: str) -> int:
        """How often ``word`` occurs (0: not at all)."""
        return self.counts[self.words.index(word)] if word in self.words else 0


def terms_of(text: str, shared: dict[str, str] | None = None) -> Terms:
    """The `Terms` of a text; with ``shared``, each word is the one object kept there.

    Examples:
        >>> t = terms_of("the tide and the moon")
        >>> t.words, list(t.counts), t.length, t.count("the"), t.count("sun")
        (('the', 'tide', 'and', 'moon'), [2, 1, 1, 1], 5, 2, 0)
    """
    tokens = words(text)
    counted = Counter(tokens)
    found = tuple(counted) if shared is None else tuple(shared.setdefault(w, w) for w in counted)
    # One byte a count in all but odd chunks (a word 256 times in 1,200 characters).
    counts = array("B" if max(counted.values(), default=0) < 256 else "I", counted.values())
    return Terms(found, counts, len(tokens))


def document_frequency(terms: Iterable[Terms]) -> Counter[str]:
    """In how many of the chunks each word occurs."""
    df: Counter[str] = Counter()
    for t in terms:
        df.update(t.words)
    return df


class Vocabulary:
    """The words of an index's chunks, each kept once, and in how many chunks each occurs.

    Bounded by the chunks it holds: `release` forgets a word when its last chunk goes, so
    notes edited over and over do not grow it.
    """

    def __init__(self) -> None:
        self.df: Counter[str] = Counter()
        self._shared: dict[str, str] = {}

    def admit(self, text: str) -> Terms:
        """The terms of a new chunk's text, counted in the document frequencies."""
        terms = terms_of(text, self._shared)
        self.df.update(terms.words)
        return terms

    def release(self, terms: Terms) -> None:
        """Uncount a chunk that left the index."""
        for w in terms.words:
            left = self.df[w] - 1
            if left:
                self.df[w] = left
            else:
                del self.df[w], self._shared[w]

    def __len__(self) -> int:
        return len(self.df)
