from django.apps import AppConfig


class AguiAppConfig(AppConfig):
    name = "agui_app"
    verbose_name = "AG-UI threads and runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agui_app import metrics, tracing
        from agui_app.pydantic_ai_private import compute_active_capability_ids_once
        from agui_app.runtime.warm import connect_invalidation
        from agui_app.transports.rest.openapi import schema  # noqa: F401  (registers the API key's OpenAPI scheme)
        from capabilities.model_attempts import observe_model_attempts

        compute_active_capability_ids_once()  # pydantic-ai recomputes it per read: O(capabilities²) a step
        connect_invalidation()  # a saved agent, skill, key or tenant reaches every process's caches
        observe_model_attempts(metrics.count_model_attempt)  # fallback attempts → agui_model_attempts_total
        tracing.configure_from_environment()  # off unless OTEL_TRACES_EXPORTER names an exporter
