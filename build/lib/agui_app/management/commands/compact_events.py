from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agui_app.models import Tenant
from agui_app.services.retention import RetentionReport, apply_retention


class Command(BaseCommand):
    help = (
        "Apply event-log retention now: merge the token-level events of runs that ended more than the "
        "retention period ago, and delete the events of runs past the hard expiry (when one is set)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (its slug)")
        parser.add_argument(
            "--batch", type=int, default=1000, help="runs of each kind per tenant and pass (default 1000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant {options['tenant']!r}.")
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        total = RetentionReport()
        while True:  # passes until nothing is left
            report = apply_retention(tenant=tenant, limit=options["batch"])
            total.add(report)
            if not (report.runs_compacted or report.runs_expired):
                break
        self.stdout.write(
            f"Compacted {total.runs_compacted} run(s), {total.events_merged_away} event(s) merged away; "
            f"expired {total.runs_expired} run(s), {total.events_expired} event(s) deleted."
        )
