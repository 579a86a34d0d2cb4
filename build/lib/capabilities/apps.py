from django.apps import AppConfig


class CapabilitiesConfig(AppConfig):
    name = "capabilities"
    verbose_name = "Agents and capabilities"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from capabilities import checks  # noqa: F401  (registers the system checks)
        from capabilities.tools.registry import registry

        registry.autodiscover()
