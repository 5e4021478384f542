"""Ranking note chunks: relevance (BM25, or an embedding function), a short-chunk penalty, MMR.

- Relevance: by default Okapi BM25 over words, each query's scores divided by its best score so
  several queries combine by taking the maximum (a chunk is as relevant as the query it answers
  best). With an embedding function ``embed(texts) -> vectors``, relevance is the cosine
  similarity to the closest query instead.
- Chunks shorter than ``min_chars`` (160) carry little evidence: their relevance is multiplied by
  ``0.5 + 0.5 * length / min_chars``, so a fragment can halve its score but never lose it.
- Maximal marginal relevance picks the ``k`` results: each pick maximises
  ``lambda * relevance - (1 - lambda) * (similarity to the closest chunk already picked)``, with
  lambda 0.5, so five near-identical chunks do not crowd out the second-best source. Similarity
  between chunks is the cosine of their embeddings, or of their TF-IDF vectors without one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ai_agent.tools.builtin.notes_index import Chunk
from ai_agent.tools.builtin.notes_terms import Terms, document_frequency, terms_of, words

__all__ = ["Embed", "Ranked", "rank", "words"]

Embed = Callable[[list[str]], Sequence[Sequence[float]]]
_K1, _B = 1.5, 0.75


@dataclass(frozen=True, slots=True)
class Ranked:
    """A chunk and its (penalised) relevance."""

    chunk: Chunk
    score: float


def _bm25(queries: list[str], docs: list[Terms], df: Mapping[str, int]) -> list[float]:
    n = len(docs)
    avg = sum(d.length for d in docs) / n if n else 0.0
    terms = [set(words(query)) for query in queries]
    asked = set().union(*terms)
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t in asked if (f := df.get(t, 0))}
    per_query: list[list[float]] = [[0.0] * n for _ in queries]
    for i, d in enumerate(docs):
        present = asked.intersection(d.words)
        if not present:
            continue
        norm = _K1 * (1 - _B + _B * d.length / avg) if avg else _K1
        for scores, wanted in zip(per_query, terms, strict=True):
            # Summed in the set's order, as the counts made afresh were: the same floats.
            tf = [(t, d.counts[d.words.index(t)]) for t in wanted if t in present]
            scores[i] = sum(idf.get(t, 0.0) * c * (_K1 + 1) / (c + norm) for t, c in tf)
    best = [0.0] * n
    for scores in per_query:
        top = max(scores, default=0.0)
        if top > 0:
            best = [max(b, s / top) for b, s in zip(best, scores, strict=True)]
    return best


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _sparse_cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def _tfidf(
    docs: list[Terms], df: Mapping[str, int], wanted: list[int]
) -> dict[int, dict[str, float]]:
    """The TF-IDF vectors of the ``wanted`` documents only (the candidates MMR compares)."""
    n = len(docs)
    return {
        i: {
            t: c * math.log(1 + n / df[t])
            for t, c in zip(docs[i].words, docs[i].counts, strict=True)
        }
        for i in wanted
    }


def _terms(chunk: Chunk) -> Terms:
    return chunk.terms if chunk.terms is not None else terms_of(f"{chunk.section} {chunk.text}")


def _penalty(chunk: Chunk, min_chars: int) -> float:
    length = len(chunk.text)
    if min_chars <= 0 or length >= min_chars:
        return 1.0
    return 0.5 + 0.5 * length / min_chars


def rank(
    queries: list[str],
    chunks: list[Chunk],
    *,
    k: int,
    mmr_lambda: float = 0.5,
    min_chars: int = 160,
    embed: Embed | None = None,
    df: Mapping[str, int] | None = None,
) -> list[Ranked]:
    """The ``k`` most relevant, mutually diverse chunks for the queries.

    The lexical ranker reads each chunk's `Terms` where it has them (the index's chunks do),
    and tokenises only the chunks that have none. ``df`` is the chunks' document frequencies
    when known (the index keeps those of all its chunks): given for other chunks, it would
    change the scores.

    Examples:
        >>> cs = [Chunk("a.md", "", "gradient descent learning rate schedule " * 8),
        ...       Chunk("b.md", "", "gradient descent learning rate schedule " * 8),
        ...       Chunk("c.md", "", "learning rate warmup for transformers " * 8),
        ...       Chunk("d.md", "", "cooking pasta")]
        >>> [r.chunk.path for r in rank(["learning rate"], cs, k=2)]
        ['a.md', 'c.md']
    """
    if not chunks or k <= 0:
        return []
    if embed is not None:
        texts = [f"{c.section} {c.text}" for c in chunks]
        vectors = [list(v) for v in embed(texts)]
        query_vectors = [list(v) for v in embed(list(queries))]
        relevance = [max((_cosine(q, v) for q in query_vectors), default=0.0) for v in vectors]
    else:
        tokens = [_terms(c) for c in chunks]
        counted = document_frequency(tokens) if df is None else df
        relevance = _bm25(queries, tokens, counted)

    scored = [relevance[i] * _penalty(c, min_chars) for i, c in enumerate(chunks)]
    candidates = sorted((i for i in range(len(chunks)) if scored[i] > 0), key=lambda i: -scored[i])[
        : max(k * 4, k)
    ]
    if embed is not None:

        def similar(i: int, j: int) -> float:
            return _cosine(vectors[i], vectors[j])
    else:
        sparse = _tfidf(tokens, counted, candidates)

        def similar(i: int, j: int) -> float:
            return _sparse_cosine(sparse[i], sparse[j])

    picked = _mmr(candidates, scored, k, mmr_lambda, similar)
    return [Ranked(chunks[i], round(scored[i], 4)) for i in picked]


def _mmr(
    candidates: list[int],
    scored: list[float],
    k: int,
    mmr_lambda: float,
    similar: Callable[[int, int], float],
) -> list[int]:
    """Up to ``k`` of the candidates, picked by maximal marginal relevance.

    Each candidate's similarity to its closest pick is kept and updated with each new pick:
    recomputed against every pick for every candidate, k=100 compared each candidate with the
    picks a hundred times over (cubic in k: 47 s for 2,000 matching chunks).
    """
    picked: list[int] = []
    closest = dict.fromkeys(candidates, -math.inf)
    while candidates and len(picked) < k:
        best = max(
            candidates,
            key=lambda i: (
                mmr_lambda * scored[i] - (1 - mmr_lambda) * (closest[i] if picked else 0.0)
            ),
        )
        picked.append(best)
        candidates.remove(best)
        for i in candidates:
            closest[i] = max(closest[i], similar(i, best))
    return picked
