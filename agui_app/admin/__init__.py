"""Django admin for tenants, API keys, memberships and their usage (``tenancy``), and threads
(``threads``), webhook deliveries (``webhooks``) and long-term memory (``memory``), scoped to the user's tenants by ``capabilities.admin_scoping`` (see its docstring
for the permission model)."""

from agui_app.admin import memory, tenancy, threads, webhooks

__all__ = ["memory", "tenancy", "threads", "webhooks"]
