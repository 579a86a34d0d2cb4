"""The app's huey jobs, where ``manage.py run_huey`` looks for them (djhuey loads each app's ``tasks``)."""

from agui_app.services import webhook_jobs

__all__ = ["webhook_jobs"]
