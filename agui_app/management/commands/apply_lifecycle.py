from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agui_app.models import Tenant
from agui_app.services.lifecycle import LifecycleReport, apply_lifecycle

LABELS = {
    "threads_deleted": "idle thread(s) deleted, with all they hold",
    "runs_deleted": "finished run(s) deleted",
    "run_events_deleted": "event(s) of those runs deleted",
    "revision_threads_folded": "thread(s) with state revisions folded into a snapshot",
    "revisions_deleted": "state revision(s) deleted",
    "branches_dropped": "left conversation branch(es) dropped",
    "entries_deleted": "conversation entr(y/ies) of left branches deleted",
    "webhook_deliveries_deleted": "finished webhook deliver(y/ies) deleted",
}


class Command(BaseCommand):
    help = (
        "Apply the lifecycle of per-thread data now (what the huey job does every AGUI_LIFECYCLE_MINUTES): "
        "delete idle threads, old runs and their events, fold old state revisions into a snapshot, drop "
        "left conversation branches and finished webhook deliveries, per each tenant's settings. "
        "--dry-run deletes nothing and prints what would go."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant (its slug)")
        parser.add_argument(
            "--dry-run", action="store_true", help="delete nothing; print what would be deleted"
        )
        parser.add_argument(
            "--batch", type=int, default=1000, help="items of each kind per tenant and pass (default 1000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant {options['tenant']!r}.")
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        dry_run = options["dry_run"]
        total = LifecycleReport()
        while True:  # passes until nothing is left (a dry run sees one pass's worth: nothing changes)
            report = apply_lifecycle(tenant=tenant, limit=options["batch"], dry_run=dry_run)
            total.add(report)
            if dry_run or not report.anything:
                break
        verb = "Would delete" if dry_run else "Deleted"
        self.stdout.write(f"{verb}:" if total.anything else f"{verb} nothing.")
        for name, count in total.counts().items():
            if count:
                self.stdout.write(f"  {count} {LABELS[name]}")
        if total.thread_ids:
            self.stdout.write(
                "  threads: "
                + ", ".join(total.thread_ids)
                + (" …" if total.threads_deleted > len(total.thread_ids) else "")
            )
