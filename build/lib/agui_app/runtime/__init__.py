"""The async half of a run: pydantic-ai's AG-UI adapter, the event writer, state sync, the
per-process registry of runs and its supervisor."""
