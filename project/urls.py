from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

from agui_app.transports.edge import answers
from agui_app.transports.rest.openapi.views import SchemaView
from agui_app.transports.site import docs, ops
from agui_app.transports.site.playground import playground, playground_session

urlpatterns = [
    path("", playground, name="playground"),  # admin's "View site" (site_url "/") lands here
    path("playground/session", playground_session, name="playground-session"),
    path("admin/", admin.site.urls),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics_view, name="metrics"),
    path("api/v1/", include("agui_app.transports.rest.urls")),
    path("api/v1/", include("agui_app.transports.rest.access.urls")),
    path("api/v1/", include("agui_app.transports.rest.registry.urls")),
    path("api/v1/", include("agui_app.transports.rest.memory.urls")),
    path("api/v1/", include("agui_app.transports.rest.schedules.urls")),
    path("api/v1/schema", SchemaView.as_view(), name="schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("docs", RedirectView.as_view(url="/docs/")),
    re_path(r"^docs/(?P<path>.*)$", docs.docs_site, name="docs"),  # the built docs site (mkdocs)
    path("api/redoc", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    re_path(r"^api/", answers.api_not_found),  # last: any other /api/ path is a JSON 404
]
handler400 = answers.handler400
handler404 = answers.handler404
handler500 = answers.handler500
