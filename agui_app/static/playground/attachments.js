// Files attached to the next message: uploaded through the files API at once, sent as AG-UI 1.0
// input parts naming the stored file (the server hands the model its bytes).

import { $ } from "./dom.js";

/** An AG-UI 1.0 input part naming an uploaded file. */
export function mediaPart(file) {
  const major = file.contentType.split("/")[0];
  const type = ["image", "audio", "video"].includes(major) ? major : "document";
  return { type, source: { type: "url", value: file.url, mimeType: file.contentType } };
}

export class Attachments {
  constructor() {
    this.files = []; // [{id, filename, contentType, url}]
  }

  async add(api, file) {
    this.files.push(await api.uploadFile(file));
    this.show();
  }

  /** The attached files as input parts, emptying the list. */
  take() {
    const parts = this.files.map(mediaPart);
    this.files = [];
    this.show();
    return parts;
  }

  /** A button that opens the file input, whose chosen file is uploaded at once. */
  bind(button, input, { api, onError }) {
    button.addEventListener("click", () => input.click());
    input.addEventListener("change", (event) => {
      const [file] = event.target.files;
      event.target.value = "";
      if (file) this.add(api(), file).catch(onError);
    });
  }

  show() {
    const chip = $("#attached");
    chip.hidden = this.files.length === 0;
    chip.textContent = this.files.map((f) => `📎 ${f.filename || f.id}`).join(" ");
  }
}
