// The playground's RFC 6902 applier (agui_app/static/playground/jsonpatch.js) against
// fast-json-patch (a dependency of @ag-ui/client) as the oracle: RFC 6902's own examples, then
// seeded random patches. Prints ONE JSON document: {"cases", "mismatches": [...]}.
import fastJsonPatch from "fast-json-patch";
import { applyPatch, PatchError } from "../../agui_app/static/playground/jsonpatch.js";

const rfcExamples = [
  [{ foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }]],
  [{ foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }]],
  [{ baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }]],
  [{ foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }]],
  [{ baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }]],
  [{ foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } }, [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }]],
  [{ foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }]],
  [{ baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }]],
  [{ baz: "qux" }, [{ op: "test", path: "/baz", value: "bar" }]],
  [{ foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }]],
  [{ foo: "bar" }, [{ op: "add", path: "/baz/bat", value: "qux" }]],
  [{ "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }]],
  [{ foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }]],
  [{ foo: 1 }, [{ op: "replace", path: "", value: [1, 2] }]],
  [{ foo: 1 }, [{ op: "add", path: "/a", value: 1 }, { op: "remove", path: "/missing" }]],
  [{ a: [1, 2] }, [{ op: "add", path: "/a/5", value: 3 }]],
  [{ a: [1, 2] }, [{ op: "copy", from: "/a", path: "/b" }, { op: "add", path: "/b/-", value: 3 }]],
];

let seed = 20261201;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = (items) => items[Math.floor(random() * items.length)];

function paths(doc, prefix = "") {
  const found = [prefix];
  if (doc !== null && typeof doc === "object") {
    for (const key of Array.isArray(doc) ? doc.keys() : Object.keys(doc)) {
      found.push(...paths(doc[key], `${prefix}/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`));
    }
  }
  return found;
}

function randomValue(depth = 0) {
  const kind = pick(depth > 1 ? ["n", "s", "b"] : ["n", "s", "b", "a", "o", "null"]);
  if (kind === "n") return Math.floor(random() * 10);
  if (kind === "s") return pick(["x", "y", "a/b", "t~1"]);
  if (kind === "b") return random() < 0.5;
  if (kind === "null") return null;
  if (kind === "a") return Array.from({ length: Math.floor(random() * 3) }, () => randomValue(depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(random() * 3) }, () => [pick(["k", "m", "a/b"]), randomValue(depth + 1)]));
}

function randomOp(doc) {
  const existing = paths(doc).filter(Boolean);
  const target = existing.length ? pick(existing) : "/k";
  const op = pick(["add", "add", "remove", "replace", "move", "copy", "test"]);
  const path = op === "add" ? pick([`${target}/k`, `${target}/0`, `${target}/-`, "/new", target]) : target;
  const body = { op, path };
  if (["add", "replace", "test"].includes(op)) body.value = op === "test" && random() < 0.5 ? structuredClone(fastJsonPatch.getValueByPointer(doc, target) ?? null) : randomValue();
  if (["move", "copy"].includes(op)) { body.from = pick(existing.length ? existing : ["/k"]); body.path = pick(["/new", `${target}/k`, "/k"]); }
  return body;
}

function outcome(apply) {
  try { return { ok: true, doc: apply() }; } catch (error) { return { ok: false, error: error.message }; }
}

const oracle = (doc, ops) => fastJsonPatch.applyPatch(structuredClone(doc), structuredClone(ops), true, false).newDocument;
const mismatches = [];
let cases = 0;
function check(doc, ops) {
  cases += 1;
  const before = JSON.stringify(doc);
  const ours = outcome(() => applyPatch(doc, ops));
  const theirs = outcome(() => oracle(doc, ops));
  if (JSON.stringify(doc) !== before) mismatches.push({ doc: before, ops, problem: "the input changed" });
  if (!ours.ok && !ours.error) mismatches.push({ doc, ops, problem: "failed without a message" });
  if (ours.ok !== theirs.ok || (ours.ok && JSON.stringify(ours.doc) !== JSON.stringify(theirs.doc))) {
    mismatches.push({ doc, ops, ours, theirs });
  }
}

for (const [doc, ops] of rfcExamples) check(doc, ops);
for (let i = 0; i < 3000; i += 1) {
  const doc = { k: randomValue(), todos: [{ text: "a", done: false }], m: { a: [1, 2] } };
  const ops = Array.from({ length: 1 + Math.floor(random() * 3) }, () => randomOp(doc));
  check(doc, ops);
}
let failedAtomically = true;
try { applyPatch({ a: 1 }, [{ op: "add", path: "/b", value: 2 }, { op: "remove", path: "/zz" }]); failedAtomically = false; } catch (error) { failedAtomically = error instanceof PatchError; }
process.stdout.write(`${JSON.stringify({ cases, failedAtomically, mismatches: mismatches.slice(0, 10), mismatchCount: mismatches.length })}\n`);
