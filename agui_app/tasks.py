"""The app's huey jobs, where ``manage.py run_huey`` looks for them (djhuey loads each app's ``tasks``)."""

from agui_app.services import file_jobs, memory_jobs, retention_jobs, schedule_jobs, webhook_jobs

__all__ = ["file_jobs", "memory_jobs", "retention_jobs", "schedule_jobs", "webhook_jobs"]
