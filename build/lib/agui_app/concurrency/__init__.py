"""Async plumbing: ORM work on a bounded pool of database threads, and tasks detached from requests."""
