"""A tool module that cannot import — a dependency it needs is not installed — as happens after a
deploy that forgot one. Listed in ``AGUI_TOOL_MODULES`` by the isolation tests."""

import agui_hub_radar_sdk  # noqa: F401  (no such package: importing this module fails)
