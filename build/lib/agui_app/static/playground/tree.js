// The shared state as a JSON tree. Values are edited in place (a click opens an input; Enter sends a
// `replace`), keys and items are added and removed; every edit becomes RFC 6902 ops sent with the
// version the edit started from, so a change made meanwhile by someone else is a conflict, not lost.

import { fill, h } from "./dom.js";
import { toPointer } from "./jsonpatch.js";

function literal(value) {
  return JSON.stringify(value);
}

/** What the user typed: JSON when it parses (42, true, {"a": 1}, "text"), else the text itself. */
export function parseTyped(text) {
  try { return JSON.parse(text); } catch { return text; }
}

export class StateTree {
  /** ``onPatch(ops, baseVersion)`` sends an edit; ``version()`` is the version shown now. */
  constructor(root, { onPatch, version }) {
    Object.assign(this, { root, onPatch, version });
    this.editing = null; // {baseVersion} while an input is open
    this.pending = null; // a state that arrived while editing
    this.last = {};
  }

  render(state) {
    this.last = state;
    if (this.editing) {
      this.pending = state;
      this.root.classList.add("stale");
      return;
    }
    this.root.classList.remove("stale");
    this.pending = null;
    fill(this.root, h("ul.tree", {}, this.node(null, state, [])));
  }

  begin() {
    this.editing = { baseVersion: this.version() };
    return this.editing.baseVersion;
  }

  end() {
    const base = this.editing?.baseVersion;
    this.editing = null;
    this.render(this.pending ?? this.last);
    return base;
  }

  commit(ops) {
    const base = this.end();
    this.onPatch(ops, base);
  }

  node(key, value, path) {
    const label = key === null ? h("span.key.root", {}, "state") : h("span.key", {}, String(key));
    const remove = path.length
      ? h("button.icon", { type: "button", title: `remove ${toPointer(path)}`, "aria-label": `remove ${toPointer(path)}`,
          onclick: () => this.onPatch([{ op: "remove", path: toPointer(path) }], this.version()) }, "×")
      : null;
    if (value !== null && typeof value === "object") {
      const entries = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
      const size = Array.isArray(value) ? `[${value.length}]` : `{${entries.length}}`;
      return h("li.branch", { dataset: { path: toPointer(path) } },
        h("details", { open: true },
          h("summary", {}, label, h("span.size", {}, size), remove),
          h("ul", {}, entries.map(([k, v]) => this.node(k, v, [...path, k])), h("li", {}, this.adder(value, path)))));
    }
    const shown = h("button.value", {
      type: "button", title: "edit", dataset: { path: toPointer(path), kind: value === null ? "null" : typeof value },
      onclick: (event) => this.editValue(event.currentTarget, value, path),
    }, literal(value));
    return h("li.leaf", {}, label, shown, remove);
  }

  editValue(button, value, path) {
    this.begin();
    const input = h("input.edit", { value: literal(value), "aria-label": `new value of ${toPointer(path)}`, spellcheck: false });
    const finish = (save) => {
      if (!input.isConnected) return;
      if (save) this.commit([{ op: "replace", path: toPointer(path), value: parseTyped(input.value) }]);
      else this.end();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") finish(true);
      if (event.key === "Escape") finish(false);
    });
    input.addEventListener("blur", () => finish(false));
    button.replaceWith(input);
    input.focus();
    input.select();
  }

  adder(container, path) {
    const isArray = Array.isArray(container);
    const open = () => {
      this.begin();
      const key = isArray ? null : h("input.edit.key-input", { placeholder: "key", "aria-label": "new key" });
      const value = h("input.edit", { placeholder: 'value (JSON or text)', "aria-label": "new value" });
      const save = () => {
        const at = isArray ? [...path, "-"] : [...path, key.value.trim()];
        if (!isArray && !key.value.trim()) return;
        this.commit([{ op: "add", path: toPointer(at), value: parseTyped(value.value) }]);
      };
      const form = h("form.adder", { onsubmit: (event) => { event.preventDefault(); save(); } },
        key, value, h("button.small", { type: "submit" }, "Add"),
        h("button.small.ghost", { type: "button", onclick: () => this.end() }, "Cancel"));
      button.replaceWith(form);
      (key ?? value).focus();
    };
    const button = h("button.add", { type: "button", onclick: open }, isArray ? "+ item" : "+ key");
    return button;
  }
}
