"""Which queries one ``find_similar`` call searches: the model's (bounded) or the question.

The notes-assistant flow lets the model write up to three search queries for a question (its
"generated queries", written as the ``queries`` argument of its ``find_similar`` call). A model
may write more, or blank ones: the blank ones are left out, and those past
``NotesConfig.max_queries`` are dropped with a note the model reads in the result, so it can
search them in another call. With ``generated_queries`` off, the person's question (the run's
task) is searched as asked, and the model is told its queries were not used.
"""

from __future__ import annotations

from dataclasses import dataclass

from ai_agent.config import NotesConfig

__all__ = ["MAX_QUERY_CHARS", "SearchQueries", "search_queries"]

# A query is a short phrase; a longer one is a pasted document (or a hostile one), and the
# ranker's cost grows with it. Longer queries are cut here, and the note says so.
MAX_QUERY_CHARS = 500


@dataclass(frozen=True, slots=True)
class SearchQueries:
    """The queries to search, and what the model is told of any change (None: nothing)."""

    queries: list[str]
    note: str | None = None


def _cut(query: str) -> str:
    return query if len(query) <= MAX_QUERY_CHARS else query[:MAX_QUERY_CHARS]


def search_queries(given: list[str], question: str, config: NotesConfig) -> SearchQueries:
    """The queries a ``find_similar`` call searches, and the note that says what was changed.

    Args:
        given: The ``queries`` of the model's call.
        question: The person's question (the run's task; empty when the call has none, as a
            direct call may).
        config: ``generated_queries`` and ``max_queries``.

    Examples:
        >>> chosen = search_queries(["a", " ", "b", "c", "d"], "q", NotesConfig())
        >>> chosen.queries
        ['a', 'b', 'c']
        >>> print(chosen.note)
        1 of 4 queries dropped (at most 3 per search): search them in another call if still needed
        >>> off = NotesConfig(generated_queries=False)
        >>> chosen = search_queries(["tide"], "When is high tide?", off)
        >>> chosen.queries
        ['When is high tide?']
        >>> print(chosen.note)
        generated queries are off: the question was searched as asked, not the query given
    """
    written = [q.strip() for q in given if q.strip()]
    notes: list[str] = []
    if not config.generated_queries and question.strip():
        chosen = [question.strip()]
        unused = f"{len(written)} queries given" if len(written) != 1 else "the query given"
        notes.append(f"generated queries are off: the question was searched as asked, not {unused}")
    else:
        limit = config.max_queries if config.generated_queries else 1
        chosen = written[:limit]
        if len(written) > limit:
            notes.append(
                f"{len(written) - limit} of {len(written)} queries dropped (at most {limit} per "
                "search): search them in another call if still needed"
            )
    if any(len(q) > MAX_QUERY_CHARS for q in chosen):
        notes.append(f"queries are cut to {MAX_QUERY_CHARS} characters")
    return SearchQueries([_cut(q) for q in chosen], "; ".join(notes) or None)
