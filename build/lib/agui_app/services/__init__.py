"""Writes: every change to tenants, threads, state, runs and conversations goes through here."""
