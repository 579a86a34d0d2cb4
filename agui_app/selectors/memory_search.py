"""Memory search (docs/design.md §20): ranked full-text on both databases, plus vector similarity when
an embedding model is configured.

1. *Text candidates*. A small search space (at most ``SMALL`` live items under the prefix, after the
   ``filter`` — one user's memory, typically) is read whole. A larger one goes through the database's
   full-text index over the query's terms (``memory_terms``) — SQLite's FTS5 table, PostgreSQL's
   GIN-indexed ``tsvector`` —: first the items holding *every* term (they rank above any other: full
   coverage), then, when those are fewer than asked, the items holding *any* term, each list cut to the
   best ``candidates`` by the database's own rank (``bm25`` / ``ts_rank``). On PostgreSQL that rank is
   computed over at most ``PG_RANKED_ROWS`` matching rows (a query whose words are in tens of thousands
   of items would otherwise rank them all): past that, which of the partial matches are considered is
   the index's order, not the rank.
2. *Vector candidates* (with a query vector): with pgvector installed in the database, the nearest
   items by cosine distance (``embedding::vector <=> query``), over the same filter. Without it, when
   the text found fewer items than asked, the namespace's most recently written items (at most
   ``AGUI_MEMORY_VECTOR_SCAN``).
3. *Ranking*, in Python, the same on both databases: ``memory_terms.text_score``; with a vector, the
   score is ``w * text + (1 - w) * cosine`` (``w``: ``AGUI_MEMORY_TEXT_WEIGHT``), for items embedded
   by the same model (others keep their text score). Ties: the newest write first, then the key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform

from agui_app.models import MemoryItem, Tenant
from agui_app.selectors.memory import live, under
from agui_app.selectors.memory_terms import fts5_query, query_terms, text_score, tsquery

logger = logging.getLogger(__name__)
MIN_CANDIDATES = 50
MAX_CANDIDATES = 500
SMALL = 300  # a search space this small is scored whole, without the full-text index
PG_RANKED_ROWS = 1000
MIN_VECTOR_ONLY_SIMILARITY = 0.2  # an item no query word matched must at least be this near
_PGVECTOR: dict[str, bool] = {}


@dataclass(frozen=True)
class SearchHit:
    item: MemoryItem
    score: float


def filtered(
    tenant: Tenant, prefix: str, filters: dict[str, Any], now: datetime | None
) -> QuerySet[MemoryItem]:
    """The live items of the tenant under ``prefix`` whose value has each ``filters`` key equal to its
    value (keys are read as plain object keys, never as lookups)."""
    items = MemoryItem.objects.filter(live(now), tenant=tenant)
    if prefix:
        items = items.filter(under(prefix))
    for index, (key, value) in enumerate(sorted(filters.items())):
        name = f"filter_{index}"
        items = items.alias(**{name: KeyTransform(key, "value")}).filter(**{name: value})
    return items


def where_of(items: QuerySet[MemoryItem]) -> tuple[str, list[Any]]:
    """The WHERE clause of ``items`` as SQL over the table ``agui_app_memoryitem``, and its params."""
    compiler = items.query.get_compiler(using=items.db)
    sql, params = compiler.compile(items.query.where)
    return sql, list(params)


def pgvector_installed() -> bool:
    """Whether the database has pgvector's ``vector`` type (checked once per process and database)."""
    if connection.vendor != "postgresql":
        return False
    name = str(connection.settings_dict.get("NAME"))
    if name not in _PGVECTOR:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            _PGVECTOR[name] = cursor.fetchone() is not None
    return _PGVECTOR[name]


def text_candidates(
    items: QuerySet[MemoryItem], wanted: list[str], count: int, *, every: bool = False
) -> list[int]:
    """The ids of ``items`` holding any (``every``: all) of the terms, best ``count`` by the database's rank."""
    where, params = where_of(items)
    if connection.vendor == "postgresql":
        sql = (
            "SELECT id FROM (SELECT id, search_vector FROM agui_app_memoryitem "
            f"WHERE search_vector @@ to_tsquery('simple', %s) AND {where} LIMIT %s) AS matched "
            "ORDER BY ts_rank(search_vector, to_tsquery('simple', %s)) DESC, id LIMIT %s"
        )
        query = tsquery(wanted, every=every)
        args = [query, *params, PG_RANKED_ROWS, query, count]
    else:
        sql = (
            "SELECT agui_app_memoryitem.id FROM agui_app_memoryitem_fts "
            "JOIN agui_app_memoryitem ON agui_app_memoryitem.id = agui_app_memoryitem_fts.rowid "
            f"WHERE agui_app_memoryitem_fts MATCH %s AND {where} "
            "ORDER BY bm25(agui_app_memoryitem_fts), agui_app_memoryitem.id LIMIT %s"
        )
        args = [fts5_query(wanted, every=every), *params, count]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        return [row[0] for row in cursor.fetchall()]


def indexed_candidates(items: QuerySet[MemoryItem], wanted: list[str], count: int, limit: int) -> list[int]:
    """Items holding every term first; those holding any term when the first are fewer than ``limit``."""
    ids = text_candidates(items, wanted, count, every=True) if len(wanted) > 1 else []
    if len(ids) < limit:
        ids += text_candidates(items, wanted, count)
    return ids


def vector_candidates(
    items: QuerySet[MemoryItem], vector: list[float], model: str, count: int, *, scan: bool
) -> list[int]:
    """Items embedded by ``model``: the nearest (pgvector), else (``scan``) the most recent ones."""
    items = items.filter(embedding_model=model, embedding__isnull=False)
    if pgvector_installed():
        where, params = where_of(items)
        literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
        sql = (
            f"SELECT id FROM agui_app_memoryitem WHERE {where} "
            "ORDER BY embedding::vector <=> %s::vector, id LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, literal, count])
            return [row[0] for row in cursor.fetchall()]
    if not scan:
        return []
    recent = items.order_by("-updated_at").values_list("id", flat=True)
    return list(recent[: settings.AGUI_MEMORY_VECTOR_SCAN])


def similarity(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two unit vectors (0 for vectors of different lengths)."""
    if len(a) != len(b):
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True))


def memory_search(
    *,
    tenant: Tenant,
    prefix: str,
    query: str,
    limit: int,
    filters: dict[str, Any] | None = None,
    vector: list[float] | None = None,
    model: str = "",
    now: datetime | None = None,
) -> list[SearchHit]:
    """The ``limit`` best items for ``query`` under ``prefix`` (see the module), best first."""
    wanted = query_terms(query)
    items = filtered(tenant, prefix, filters or {}, now)
    count = max(MIN_CANDIDATES, min(MAX_CANDIDATES, limit * 4))
    small = list(items.order_by().values_list("id", flat=True)[: SMALL + 1])
    if len(small) <= SMALL:  # read it whole: every item is a candidate
        ids = small
    else:
        ids = indexed_candidates(items, wanted, count, limit) if wanted else []
        if vector is not None and model:
            ids += vector_candidates(items, vector, model, count, scan=len(ids) < limit)
    if not ids:
        return []
    rows = MemoryItem.objects.filter(pk__in=set(ids))
    if vector is None:
        rows = rows.defer("embedding")
    weight = settings.AGUI_MEMORY_TEXT_WEIGHT
    hits: list[SearchHit] = []
    for item in rows:
        score = text_score(wanted, item.search_text)
        if vector is not None and item.embedding is not None and item.embedding_model == model:
            near = max(0.0, similarity(vector, item.embedding))
            if score == 0.0 and near < MIN_VECTOR_ONLY_SIMILARITY:
                continue
            score = weight * score + (1 - weight) * near
        if score > 0:
            hits.append(SearchHit(item, round(score, 6)))
    hits.sort(
        key=lambda hit: (-hit.score, -hit.item.updated_at.timestamp(), hit.item.namespace, hit.item.key)
    )
    return hits[:limit]
