"""The full-text index of memory items, one per database (docs/design.md §20).

Both index ``search_text``, the terms ``agui_app.selectors.memory_terms`` made of an item, so a query
matches the same items on both:

- SQLite: an FTS5 table over the items' ``search_text`` (external content), kept in step by triggers in
  the same transaction as every write — the ORM's, admin's, a cascade's. A later migration that makes
  SQLite rebuild ``agui_app_memoryitem`` (most AlterFields) drops the triggers: run
  ``install_sqlite_search_index`` again after it.
- PostgreSQL: a generated ``tsvector`` column (the ``simple`` configuration: the terms are already
  normalized) with a GIN index (``fastupdate`` off: reads are many more than writes), and a
  ``varchar_pattern_ops`` index for namespace prefixes.
"""

from django.db import migrations

SQLITE = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS agui_app_memoryitem_fts USING fts5("
    "search_text, content='agui_app_memoryitem', content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER IF NOT EXISTS agui_app_memoryitem_fts_insert AFTER INSERT ON agui_app_memoryitem BEGIN "
    "INSERT INTO agui_app_memoryitem_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS agui_app_memoryitem_fts_delete AFTER DELETE ON agui_app_memoryitem BEGIN "
    "INSERT INTO agui_app_memoryitem_fts(agui_app_memoryitem_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS agui_app_memoryitem_fts_update AFTER UPDATE OF search_text "
    "ON agui_app_memoryitem BEGIN "
    "INSERT INTO agui_app_memoryitem_fts(agui_app_memoryitem_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); "
    "INSERT INTO agui_app_memoryitem_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "INSERT INTO agui_app_memoryitem_fts(agui_app_memoryitem_fts) VALUES ('rebuild')",
]
SQLITE_UNDO = [
    "DROP TRIGGER IF EXISTS agui_app_memoryitem_fts_insert",
    "DROP TRIGGER IF EXISTS agui_app_memoryitem_fts_delete",
    "DROP TRIGGER IF EXISTS agui_app_memoryitem_fts_update",
    "DROP TABLE IF EXISTS agui_app_memoryitem_fts",
]
POSTGRES = [
    "ALTER TABLE agui_app_memoryitem ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED",
    # fastupdate off: a search never scans GIN's pending list (up to 4 MB of unsorted entries after a
    # burst of writes), at a small cost to each write.
    "CREATE INDEX IF NOT EXISTS agui_app_memoryitem_search ON agui_app_memoryitem USING gin (search_vector) "
    "WITH (fastupdate = off)",
    # namespace LIKE 'users/alice/%' (a prefix search) by index, whatever the database's collation
    "CREATE INDEX IF NOT EXISTS agui_app_memoryitem_ns_prefix "
    "ON agui_app_memoryitem (tenant_id, namespace varchar_pattern_ops)",
]
POSTGRES_UNDO = [
    "DROP INDEX IF EXISTS agui_app_memoryitem_ns_prefix",
    "DROP INDEX IF EXISTS agui_app_memoryitem_search",
    "ALTER TABLE agui_app_memoryitem DROP COLUMN IF EXISTS search_vector",
]


def run(statements_by_vendor):
    def apply(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return apply


def install_sqlite_search_index(connection):
    """(Re)create the SQLite FTS5 table and its triggers, and rebuild it from the items."""
    with connection.cursor() as cursor:
        for statement in SQLITE:
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("agui_app", "0009_memory_items")]

    operations = [
        migrations.RunPython(
            run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            run({"sqlite": SQLITE_UNDO, "postgresql": POSTGRES_UNDO}),
        )
    ]
