"""Reads, always scoped to a tenant: a view never queries an unscoped manager."""
