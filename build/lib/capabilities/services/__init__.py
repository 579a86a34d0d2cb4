"""Writes to agents and skills."""
