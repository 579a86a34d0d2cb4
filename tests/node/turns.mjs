// node turns.mjs <url> <threadId> <turnsJson> [optionsJson]
// turnsJson: [{"id", "content", "runId"}]; optionsJson: {"initialState", "initialMessages"} for the HttpAgent.
import { fail, newAgent, observed, print, runTurn } from "./common.mjs";

const [url, threadId, turnsJson, optionsJson] = process.argv.slice(2);
const agent = newAgent(url, threadId, JSON.parse(optionsJson ?? "{}"));
const eventTypes = [];
try {
  for (const turn of JSON.parse(turnsJson)) {
    eventTypes.push(await runTurn(agent, { runId: turn.runId }, turn));
  }
} catch (err) {
  fail(err, observed(agent, { eventTypes }));
}
print(observed(agent, { eventTypes }));
