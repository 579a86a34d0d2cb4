"""Django admin for tenants, API keys, memberships and their usage (``tenancy``), and threads
(``threads``) and webhook deliveries (``webhooks``), scoped to the user's tenants by ``capabilities.admin_scoping`` (see its docstring
for the permission model)."""

from agui_app.admin import tenancy, threads, webhooks

__all__ = ["tenancy", "threads", "webhooks"]
