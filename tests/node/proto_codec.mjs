// The published binary codec, driven from Python (tests/agui_app/transports/binary/): reads one JSON
// request on stdin, prints one JSON document on stdout.
//
//   {"encode": [event, …]}     → "encoded": [{"bytes": base64} | {"error": message}, …]  (@ag-ui/proto encode)
//   {"decode": [base64, …]}    → "decoded": [{"event": …} | {"error": …, "unknown": bool}, …]  (@ag-ui/proto decode)
//   {"stream": base64, "chunk": n}
//                              → "stream": {"events": […]} | {"error": message}
//     the body read as @ag-ui/client reads a response: runHttpRequest over a fetch Response with
//     content-type application/vnd.ag-ui.event+proto whose body arrives in n-byte chunks, then
//     transformHttpEventStream (the client's framing and parseProtoStream)
//
// Each answer also lists what the library warned ("warnings"), so a test can tell a dropped part.
import { AGUI_MEDIA_TYPE, AGUIUnknownEventTypeError, decode, encode } from "@ag-ui/proto";
import { runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { lastValueFrom, toArray } from "rxjs";

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
}));

const attempt = (fn) => {
  const before = warnings.length;
  try {
    return { ...fn(), warnings: warnings.slice(before) };
  } catch (error) {
    return {
      error: String(error?.message ?? error),
      unknown: error instanceof AGUIUnknownEventTypeError,
      warnings: warnings.slice(before),
    };
  }
};

const output = { mediaType: AGUI_MEDIA_TYPE };
if (input.encode) {
  output.encoded = input.encode.map((event) =>
    attempt(() => ({ bytes: Buffer.from(encode(event)).toString("base64") })),
  );
}
if (input.decode) {
  output.decoded = input.decode.map((b64) => attempt(() => ({ event: decode(Buffer.from(b64, "base64")) })));
}
if (input.stream !== undefined) {
  const bytes = Buffer.from(input.stream, "base64");
  const chunk = input.chunk ?? 65536;
  const body = new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += chunk) controller.enqueue(new Uint8Array(bytes.subarray(i, i + chunk)));
      controller.close();
    },
  });
  const response = () => Promise.resolve(new Response(body, { headers: { "content-type": AGUI_MEDIA_TYPE } }));
  const before = warnings.length;
  try {
    const events = await lastValueFrom(transformHttpEventStream(runHttpRequest(response)).pipe(toArray()));
    output.stream = { events, warnings: warnings.slice(before) };
  } catch (error) {
    output.stream = { error: String(error?.message ?? error), warnings: warnings.slice(before) };
  }
}
process.stdout.write(JSON.stringify(output));
