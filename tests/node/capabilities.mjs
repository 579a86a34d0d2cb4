// node capabilities.mjs <agentUrl>: the docs' getCapabilities() snippet, checked against the schema.
import { HttpAgent } from "@ag-ui/client";
import { AgentCapabilitiesSchema } from "@ag-ui/core/schemas";
import { fail, headers, print } from "./common.mjs";

// --8<-- [start:capabilities]  (docs include the lines between these markers)
class CapableAgent extends HttpAgent {
  async getCapabilities() {
    const response = await this.fetch(`${this.url}/capabilities`, { headers: this.headers });
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    return response.json();
  }
}
// --8<-- [end:capabilities]

try {
  const agent = new CapableAgent({ url: process.argv[2], headers: headers() });
  const document = await agent.getCapabilities();
  const parsed = AgentCapabilitiesSchema.strict().safeParse(document);
  print(parsed.success
    ? { ok: true, document, parsed: parsed.data }
    : { ok: false, document, issues: parsed.error.issues });
} catch (err) {
  fail(err);
}
