"""The notes index keeps each chunk's counted words: the same ranking, never stale.

The oracle is the ranker as it was before the index kept the counts (it tokenised every chunk
on every search), copied here: the ranking must be the same to the last bit, for random notes,
queries, filters and edits.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from ai_agent.config import NotesConfig
from ai_agent.tools.builtin.notes import NotesTools
from ai_agent.tools.builtin.notes_index import RACY_NS, Chunk, NotesIndex
from ai_agent.tools.builtin.notes_rank import rank
from ai_agent.tools.builtin.notes_terms import document_frequency
from ai_agent.tools.builtin.sandbox import Sandbox

# The ranker before the counts were kept --------------------------------------------------------
_WORD = re.compile(r"\w+", re.UNICODE)
_K1, _B = 1.5, 0.75


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _bm25(queries: list[str], docs: list[list[str]], df: Counter[str]) -> list[float]:
    n = len(docs)
    avg = sum(len(d) for d in docs) / n if n else 0.0
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
    terms = [set(_words(query)) for query in queries]
    per_query: list[list[float]] = [[0.0] * n for _ in queries]
    for i, d in enumerate(docs):
        tf = Counter(d)
        norm = _K1 * (1 - _B + _B * len(d) / avg) if avg else _K1
        for scores, wanted in zip(per_query, terms, strict=True):
            scores[i] = sum(
                idf.get(t, 0.0) * tf[t] * (_K1 + 1) / (tf[t] + norm) for t in wanted if tf[t]
            )
    best = [0.0] * n
    for scores in per_query:
        top = max(scores, default=0.0)
        if top > 0:
            best = [max(b, s / top) for b, s in zip(best, scores, strict=True)]
    return best


def _sparse_cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def old_rank(
    queries: list[str], chunks: list[Chunk], k: int, mmr_lambda: float, min_chars: int
) -> list[tuple[str, str, str, float]]:
    if not chunks or k <= 0:
        return []
    tokens = [_words(f"{c.section} {c.text}") for c in chunks]
    df: Counter[str] = Counter()
    for d in tokens:
        df.update(set(d))
    relevance = _bm25(queries, tokens, df)
    penalty = [
        1.0 if min_chars <= 0 or len(c.text) >= min_chars else 0.5 + 0.5 * len(c.text) / min_chars
        for c in chunks
    ]
    scored = [relevance[i] * penalty[i] for i in range(len(chunks))]
    candidates = sorted((i for i in range(len(chunks)) if scored[i] > 0), key=lambda i: -scored[i])[
        : max(k * 4, k)
    ]
    n = len(tokens)
    sparse = {
        i: {t: c * math.log(1 + n / df[t]) for t, c in Counter(tokens[i]).items()}
        for i in candidates
    }
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
            closest[i] = max(closest[i], _sparse_cosine(sparse[i], sparse[best]))
    return [
        (chunks[i].path, chunks[i].section, chunks[i].text, round(scored[i], 4)) for i in picked
    ]


# Random notes ----------------------------------------------------------------------------------
VOCABULARY = [
    *("tide", "Tide", "moon", "MOON", "salt", "bread", "flour", "water", "rate", "learning"),
    *("x1", "snake_case", "naïve", "Straße", "日本", "über", "42", "a", "the", "of"),
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(words))


def _note(rng: random.Random) -> str:
    parts = [f"---\ntags: [t{rng.randrange(3)}]\n---\n"] if rng.random() < 0.5 else []
    for s in range(rng.randint(1, 4)):
        parts.append(f"# {_text(rng, rng.randint(1, 3))} {s}\n\n")
        parts += [_text(rng, rng.randint(1, 90)) + "\n\n" for _ in range(rng.randint(1, 4))]
    return "".join(parts)


def _edit(rng: random.Random, root: Path) -> None:
    notes = sorted(root.rglob("*.md"))
    what = rng.choice(["add", "edit", "delete"]) if notes else "add"
    if what == "add":
        folder = root / rng.choice(["", "a", "b"])
        folder.mkdir(exist_ok=True)
        (folder / f"n{rng.randrange(10_000)}.md").write_text(_note(rng))
    elif what == "edit":
        rng.choice(notes).write_text(_note(rng))
    else:
        rng.choice(notes).unlink()


def _query(rng: random.Random) -> list[str]:
    return [_text(rng, rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]


def _as_tuples(ranked: list) -> list[tuple[str, str, str, float]]:  # type: ignore[type-arg]
    return [(r.chunk.path, r.chunk.section, r.chunk.text, r.score) for r in ranked]


@pytest.mark.parametrize("seed", range(6))
def test_the_ranking_is_the_one_that_tokenised_every_chunk(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "notes"
    root.mkdir()
    for _ in range(rng.randint(1, 12)):
        _edit(rng, root)
    index = NotesIndex(Sandbox(root), chunk_chars=200)
    for _ in range(8):  # note sets, changed between searches
        chunks = index.refresh()
        assert index.vocabulary.df == document_frequency(c.terms for c in chunks if c.terms)
        for _ in range(12):  # queries
            queries, k = _query(rng), rng.choice([1, 3, 20, 100])
            mmr_lambda, min_chars = rng.choice([0.0, 0.5, 0.7, 1.0]), rng.choice([0, 160])
            expected = old_rank(queries, chunks, k, mmr_lambda, min_chars)
            cached = rank(
                queries,
                chunks,
                k=k,
                mmr_lambda=mmr_lambda,
                min_chars=min_chars,
                df=index.vocabulary.df,
            )
            assert _as_tuples(cached) == expected
            part = [c for c in chunks if c.path.startswith("a/") or "t1" in c.tags]
            expected = old_rank(queries, part, k, mmr_lambda, min_chars)
            assert (
                _as_tuples(rank(queries, part, k=k, mmr_lambda=mmr_lambda, min_chars=min_chars))
                == expected
            )
            bare = [Chunk(c.path, c.section, c.text, c.tags) for c in chunks]
            assert _as_tuples(
                rank(queries, bare, k=k, mmr_lambda=mmr_lambda, min_chars=min_chars)
            ) == _as_tuples(cached)
        for _ in range(rng.randint(1, 4)):
            _edit(rng, root)


def test_the_vocabulary_forgets_the_words_of_notes_that_went(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nzebra tide\n")
    index = NotesIndex(Sandbox(root))
    index.refresh()
    assert index.vocabulary.df == {"a": 1, "zebra": 1, "tide": 1}
    for i in range(50):
        (root / "a.md").write_text(f"# A\n\nword{i} tide\n")
        index.refresh()
    assert index.vocabulary.df == {"a": 1, "word49": 1, "tide": 1}
    (root / "a.md").unlink()
    assert index.refresh() == [] and len(index.vocabulary) == 0


# Never stale -----------------------------------------------------------------------------------
def _found(tools: NotesTools, query: str) -> list[tuple[str, str]]:
    result = tools.find_similar([query], 20)
    assert result["status"] == "ok", result
    return [(hit["path"], hit["snippet"]) for hit in result["content"]["data"]]


def test_edits_deletions_and_additions_between_two_searches_are_seen(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nzebra stripes\n")
    (root / "b.md").write_text("# B\n\nzebra herd\n")
    (root / "c.md").write_text("# C\n\nlion pride\n")
    tools = NotesTools(root, NotesConfig(min_chunk_chars=0))
    assert sorted(p for p, _ in _found(tools, "zebra")) == ["a.md", "b.md"]
    (root / "a.md").write_text("# A\n\nokapi stripes\n")  # edited
    (root / "b.md").unlink()  # deleted
    (root / "d.md").write_text("# D\n\nzebra crossing\n")  # added
    assert _found(tools, "zebra") == [("d.md", "zebra crossing")]
    assert _found(tools, "okapi") == [("a.md", "okapi stripes")]
    assert _found(tools, "lion") == [("c.md", "lion pride")]


def test_a_note_replaced_by_one_of_the_same_size_and_time_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    note = root / "a.md"
    note.write_text("# A\n\nzebra\n")
    before = note.stat()
    tools = NotesTools(root, NotesConfig(min_chunk_chars=0))
    assert [p for p, _ in _found(tools, "zebra")] == ["a.md"]
    # In place, then by a rename over it: each time the same size and modification time.
    note.write_text("# A\n\nokapi\n")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _found(tools, "zebra") == [] and [p for p, _ in _found(tools, "okapi")] == ["a.md"]
    other = root / "b.tmp"
    other.write_text("# A\n\ntapir\n")
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    other.replace(note)
    assert (note.stat().st_size, note.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert _found(tools, "okapi") == [] and [p for p, _ in _found(tools, "tapir")] == ["a.md"]


def test_a_note_changed_close_to_its_reading_is_compared_by_content_until_it_settles(
    tmp_path: Path,
) -> None:
    # File times come from a coarse clock: a note rewritten in the clock tick it was read in
    # can keep every time it had. Such a note is read again (and its digest compared) on each
    # refresh until its change time is RACY_NS older than the refresh.
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nzebra\n")
    changed = (root / "a.md").stat().st_ctime_ns
    now = [changed]
    index = NotesIndex(Sandbox(root), clock=lambda: now[0])
    reads: list[str] = []
    plain = index._bytes

    def counted(rel: str) -> bytes | None:
        reads.append(rel)
        return plain(rel)

    index._bytes = counted  # type: ignore[method-assign]
    first = index.refresh()
    assert index.refresh() is first and index.refresh()[0] is first[0]
    assert reads == ["a.md"] * 3 and index.version == 1  # racy: read, same digest, same chunks
    now[0] = changed + RACY_NS + 1
    index.refresh()
    index.refresh()
    assert reads == ["a.md"] * 4  # settled: read once more, then trusted by its times
    assert index.version == 1 and index.chunks[0].terms is first[0].terms


def test_notes_that_cannot_be_read_are_left_out_and_seen_once_readable(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "big.md").write_text("# Big\n\nzebra " + "x" * 100)
    (root / "bad.md").write_bytes(b"# Bad\n\nzebra \xed\xa0\x80 lone surrogate\n")
    box = Sandbox(root, max_read_bytes=64)
    index = NotesIndex(box)
    assert [c.path for c in index.refresh()] == ["bad.md"]  # big.md is over the read limit
    (root / "big.md").write_text("# Big\n\nzebra\n")
    (root / "bad.md").write_bytes(b"# Bad\n\nzebra \xed\xa0\x80\n")
    chunks = index.refresh()
    assert [c.path for c in chunks] == ["bad.md", "big.md"]
    assert [r.chunk.path for r in rank(["zebra"], chunks, k=5, df=index.vocabulary.df)] == [
        "bad.md",
        "big.md",
    ]
