"""Django admin for tenants, API keys, memberships and their usage (``tenancy``), and threads
(``threads``), files (``files``), webhook deliveries (``webhooks``), feedback (``feedback``), long-term
memory (``memory``) and schedules (``schedules``), scoped to the user's tenants by
``capabilities.admin_scoping`` (see its docstring for the permission model)."""

from agui_app.admin import feedback, files, memory, schedules, tenancy, threads, webhooks

__all__ = ["feedback", "files", "memory", "schedules", "tenancy", "threads", "webhooks"]
