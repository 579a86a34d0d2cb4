"""The memory API (docs/design.md §20): items by namespace and key, search, one end user's export and
erasure, and the TTLs of namespaces."""
