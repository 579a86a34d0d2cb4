"""URLs of the schedules API under ``/api/v1/`` (docs/design.md §25)."""

from django.urls import path

from agui_app.transports.rest.schedules import views

urlpatterns = [
    path("schedules", views.ScheduleListView.as_view(), name="schedule-list"),
    path("schedules/<str:schedule_id>", views.ScheduleDetailView.as_view(), name="schedule"),
    path("schedules/<str:schedule_id>/runs", views.ScheduleRunsView.as_view(), name="schedule-runs"),
]
