"""The words of memory search, made once in Python for both databases (no Django here).

An item's ``search_text`` and a query are both reduced to *terms*: Unicode letters and digits, case-
and accent-folded, English stop words left out, plurals folded by the S-stemmer (Harman 1991:
"cities" → "city", "likes" → "like", "glasses" → "glass"). SQLite's FTS5 table and PostgreSQL's
``tsvector`` (configuration ``simple``) index exactly these terms, so a query matches the same items on
both — and ``text_score`` ranks those items the same on both: it reads only the terms.

``text_score`` (0-1): *coverage* first (the share of the query's terms the item holds), then
*concentration* (the share of the item's terms that are query terms), so among items holding the same
query words, the shorter, more focused one ranks first:
``coverage * (0.8 + 0.2 * concentration)``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

WORD = re.compile(r"[^\W_]+")
MAX_TERM_CHARS = 64
MAX_QUERY_TERMS = 32
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


def fold(text: str) -> str:
    """Lower case without accents ("Café" → "cafe")."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def stem(word: str) -> str:
    """The S-stemmer: plural endings only, which is what matching a remembered fact needs most."""
    if len(word) <= 3 or word[-1] != "s" or word.isdigit():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The terms of ``text``, in order (repeats kept)."""
    found: list[str] = []
    for word in WORD.findall(fold(text)):
        if word in STOPWORDS or len(word) > MAX_TERM_CHARS:
            continue
        found.append(stem(word))
    return found


def search_text(*parts: str) -> str:
    """What an item's full-text index holds: the terms of its key and text, space-separated."""
    return " ".join(term for part in parts for term in terms(part.replace("-", " ").replace("_", " ")))


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, in order, at most ``MAX_QUERY_TERMS``."""
    return list(dict.fromkeys(terms(query)))[:MAX_QUERY_TERMS]


def text_score(query: Iterable[str], item_terms: str) -> float:
    """How well an item's ``search_text`` answers the query's terms (0: not at all; see the module)."""
    wanted = list(query)
    tokens = item_terms.split()
    if not wanted or not tokens:
        return 0.0
    counts = Counter(tokens)
    matched = [term for term in wanted if counts[term]]
    if not matched:
        return 0.0
    coverage = len(matched) / len(wanted)
    concentration = sum(counts[term] for term in matched) / len(tokens)
    return coverage * (0.8 + 0.2 * concentration)


def fts5_query(wanted: list[str], *, every: bool = False) -> str:
    """An FTS5 MATCH expression: any of the terms (``every``: all of them). Each term is quoted (a term
    has no quote character)."""
    return (" AND " if every else " OR ").join(f'"{term}"' for term in wanted)


def tsquery(wanted: list[str], *, every: bool = False) -> str:
    """A ``to_tsquery('simple', …)`` expression: any of the terms (``every``: all of them)."""
    return (" & " if every else " | ").join(f"'{term}'" for term in wanted)
