"""Django admin for tenants, API keys, memberships and their usage (``tenancy``), and threads
(``threads``), webhook deliveries (``webhooks``) and schedules (``schedules``), scoped to the user's tenants by ``capabilities.admin_scoping`` (see its docstring
for the permission model)."""

from agui_app.admin import schedules, tenancy, threads, webhooks

__all__ = ["schedules", "tenancy", "threads", "webhooks"]
