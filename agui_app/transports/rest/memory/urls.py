"""URLs of the memory API under ``/api/v1/`` (docs/design.md §20). A namespace has slashes in it
(``users/alice``): the ``path`` converter takes them, up to the last ``/items`` or ``/ttl``."""

from django.urls import path

from agui_app.transports.rest.memory import views

urlpatterns = [
    path("memory", views.MemoryUserView.as_view(), name="memory-user"),
    path("memory/search", views.MemorySearchView.as_view(), name="memory-search"),
    path("memory/<path:namespace>/items", views.MemoryItemListView.as_view(), name="memory-items"),
    path("memory/<path:namespace>/items/<str:key>", views.MemoryItemView.as_view(), name="memory-item"),
    path("memory/<path:namespace>/ttl", views.MemoryTtlView.as_view(), name="memory-ttl"),
]
