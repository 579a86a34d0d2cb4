"""``agui_events.proto`` is npm's ``@ag-ui/proto`` 1.0.0 schema: ts-proto, run on it the way that
package runs it, writes the very code the package ships (every message, field number, type, label,
enum value and comment), and the committed Python is what protoc makes of it today."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import ag_ui.core
import google.protobuf
import pytest

from agui_app.transports.binary import schema
from tests.support.node import NODE_DIR

ROOT = Path(__file__).resolve().parents[4]
BINARY = ROOT / "agui_app" / "transports" / "binary"
NPM_PROTO = NODE_DIR / "node_modules" / "@ag-ui" / "proto"
TS_PROTO_OPTIONS = (
    "esModuleInterop=true,outputJsonMethods=false,outputClientImpl=false"  # scripts/generate.mjs
)


def protoc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", *args], capture_output=True, text=True, check=True
    )


def declarations(ts: str) -> dict[str, str]:
    """The top-level declarations of a ts-proto file, each with its doc comment, by kind and name."""
    found = {}
    for block in re.split(r"\n(?=(?:/\*\*[\s\S]*?\*/\n)?(?:export |function |type |interface ))", ts):
        head = re.match(
            r"(?:/\*\*[\s\S]*?\*/\n)?((?:export )?(?:const|enum|interface|function|type)) (\w+)", block
        )
        if head and head.group(2) != "protobufPackage":
            found[f"{head.group(1)} {head.group(2)}"] = block.strip()
    return found


def shipped_sources() -> dict[str, str]:
    """The TypeScript the npm package was built from (its source map carries it)."""
    source_map = json.loads((NPM_PROTO / "dist" / "index.mjs.map").read_text())
    return {
        Path(name).name: text
        for name, text in zip(source_map["sources"], source_map["sourcesContent"], strict=True)
    }


@pytest.mark.node
def test_ts_proto_writes_the_npm_packages_code_from_our_schema(tmp_path: Path) -> None:
    plugin = NODE_DIR / "node_modules" / ".bin" / "protoc-gen-ts_proto"
    protoc(
        f"--plugin=protoc-gen-ts_proto={plugin}",
        f"--ts_proto_out={tmp_path}",
        f"--ts_proto_opt={TS_PROTO_OPTIONS}",
        f"-I{BINARY}",
        str(BINARY / "agui_events.proto"),
    )
    shipped = shipped_sources()
    # The package's three files (one protobuf package, ag_ui) are our one file.
    theirs = {
        k: v for name in ("types.ts", "patch.ts", "events.ts") for k, v in declarations(shipped[name]).items()
    }
    ours = declarations((tmp_path / "agui_events.ts").read_text())

    assert len(theirs) > 150  # interfaces, createBase…, encoders/decoders, enums: not a vacuous match
    assert sorted(ours) == sorted(theirs)
    assert [k for k in theirs if ours[k] != theirs[k]] == []
    # google/protobuf/struct.ts too, below the header naming the source file
    assert (tmp_path / "google" / "protobuf" / "struct.ts").read_text().split("\n", 5)[5] == shipped[
        "struct.ts"
    ].split("\n", 5)[5]


@pytest.mark.node
def test_our_protoc_is_the_one_the_npm_package_was_generated_with() -> None:
    ours = protoc("--version").stdout.split()[-1]
    theirs = json.loads((NPM_PROTO / "package.json").read_text())
    assert theirs["version"] == "1.0.0"
    assert ours == theirs["config"]["protocVersion"] == "35.1"
    assert "protoc               v7.35.1" in shipped_sources()["events.ts"]


def test_the_committed_python_is_what_protoc_makes_of_the_schema(tmp_path: Path) -> None:
    protoc(
        f"-I{BINARY}", f"--python_out={tmp_path}", f"--pyi_out={tmp_path}", str(BINARY / "agui_events.proto")
    )
    for name in ("agui_events_pb2.py", "agui_events_pb2.pyi"):
        assert (tmp_path / name).read_text() == (BINARY / name).read_text(), f"regenerate {name} (README)"


def test_the_pinned_protobuf_runtime_runs_the_generated_code() -> None:
    generated = (BINARY / "agui_events_pb2.py").read_text()
    gencode = tuple(
        int(n) for n in re.search(r"Protobuf Python Version: ([\d.]+)", generated).group(1).split(".")
    )
    runtime = tuple(int(n) for n in google.protobuf.__version__.split("."))
    pinned = re.search(r"^protobuf==([\d.]+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)

    assert google.protobuf.__version__ == pinned
    assert runtime[0] == gencode[0] and runtime >= gencode  # protobuf's rule for generated code
    from agui_app.transports.binary import agui_events_pb2  # its version check runs on import

    assert agui_events_pb2.DESCRIPTOR.package == "ag_ui"


def test_the_envelope_has_an_arm_for_each_of_the_protocols_31_event_types() -> None:
    protocol = {e.value for e in ag_ui.core.EventType}
    assert len(protocol) == 31
    assert set(schema.EVENT_TYPE_NUMBERS) == protocol
    assert {schema.arm_for(t).name for t in protocol} == {f.name for f in schema.ENVELOPE.fields}
    assert len(schema.ENVELOPE.fields) == 31
