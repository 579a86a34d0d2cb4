// RFC 6902 JSON Patch (and RFC 6901 pointers), applied to a copy: a patch that fails changes nothing.

export class PatchError extends Error {}

export function parsePointer(pointer) {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new PatchError(`bad pointer ${JSON.stringify(pointer)}`);
  return pointer.slice(1).split("/").map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"));
}

export function toPointer(parts) {
  return parts.map((part) => `/${String(part).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

function arrayIndex(array, key, { forAdd = false } = {}) {
  if (forAdd && key === "-") return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) throw new PatchError(`bad array index ${key}`);
  const index = Number(key);
  if (index > array.length || (!forAdd && index === array.length)) throw new PatchError(`index ${key} out of range`);
  return index;
}

function isContainer(value) {
  return value !== null && typeof value === "object";
}

function get(doc, parts) {
  let node = doc;
  for (const key of parts) {
    if (Array.isArray(node)) node = node[arrayIndex(node, key)];
    else if (isContainer(node) && Object.hasOwn(node, key)) node = node[key];
    else throw new PatchError(`path ${toPointer(parts)} does not exist`);
  }
  return node;
}

function parentOf(doc, parts) {
  if (!parts.length) throw new PatchError("the root has no parent");
  const parent = get(doc, parts.slice(0, -1));
  if (!isContainer(parent)) throw new PatchError(`${toPointer(parts.slice(0, -1))} is not a container`);
  return [parent, parts.at(-1)];
}

function add(doc, parts, value) {
  if (!parts.length) return value;
  const [parent, key] = parentOf(doc, parts);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, { forAdd: true }), 0, value);
  else parent[key] = value;
  return doc;
}

function replace(doc, parts, value) {
  if (!parts.length) return value;
  const [parent, key] = parentOf(doc, parts);
  if (Array.isArray(parent)) parent[arrayIndex(parent, key)] = value;
  else if (Object.hasOwn(parent, key)) parent[key] = value; // in place: the key keeps its position
  else throw new PatchError(`path ${toPointer(parts)} does not exist`);
  return doc;
}

function remove(doc, parts) {
  if (!parts.length) throw new PatchError("cannot remove the root");
  const [parent, key] = parentOf(doc, parts);
  if (Array.isArray(parent)) return [doc, parent.splice(arrayIndex(parent, key), 1)[0]];
  if (!Object.hasOwn(parent, key)) throw new PatchError(`path ${toPointer(parts)} does not exist`);
  const value = parent[key];
  delete parent[key];
  return [doc, value];
}

function equal(a, b) {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && equal(a[key], b[key]));
}

/** The document with ``ops`` applied (the input is not modified). Throws PatchError. */
export function applyPatch(document, ops) {
  if (!Array.isArray(ops)) throw new PatchError("a patch is an array of operations");
  let doc = structuredClone(document);
  for (const op of ops) {
    const path = parsePointer(op.path ?? "");
    switch (op.op) {
      case "add": doc = add(doc, path, structuredClone(op.value)); break;
      case "remove": [doc] = remove(doc, path); break;
      case "replace": doc = replace(doc, path, structuredClone(op.value)); break;
      case "move": {
        const from = parsePointer(op.from ?? "");
        if (path.length > from.length && toPointer(path.slice(0, from.length)) === toPointer(from)) {
          throw new PatchError("cannot move a value into itself");
        }
        let value;
        [doc, value] = remove(doc, from);
        doc = add(doc, path, value);
        break;
      }
      case "copy": doc = add(doc, path, structuredClone(get(doc, parsePointer(op.from ?? "")))); break;
      case "test": if (!equal(get(doc, path), op.value)) throw new PatchError(`test failed at ${op.path}`); break;
      default: throw new PatchError(`unknown op ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}
