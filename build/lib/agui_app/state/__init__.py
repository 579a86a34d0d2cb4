"""The shared-state document library: JSON values, RFC 6902 patching and copy-on-write documents.

Pure Python (no Django, no database): the state service and a run's state sync build on it.
"""
