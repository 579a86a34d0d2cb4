"""The playground applies every ``STATE_DELTA`` itself (agui_app/static/playground/jsonpatch.js): it
agrees with fast-json-patch (the JSON Patch library under ``@ag-ui/client``) on RFC 6902's examples
and on 3,000 seeded random patches, keeps key order, never changes its input, and a patch that
fails changes nothing."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.servers import ROOT

pytestmark = pytest.mark.node


def test_the_pages_json_patch_agrees_with_fast_json_patch() -> None:
    done = subprocess.run(
        ["node", "jsonpatch.mjs"], cwd=ROOT / "tests" / "node", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["cases"] > 3000
    assert seen["mismatches"] == [], f"{seen['mismatchCount']} disagreements"
    assert seen["failedAtomically"]
