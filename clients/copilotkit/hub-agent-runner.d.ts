import type { AbstractAgent, BaseEvent, RunAgentInput } from "@ag-ui/client";
import type { Observable } from "rxjs";

export interface HubAgentRunnerOptions {
  /** The hub, e.g. "https://hub.example.com". */
  baseUrl: string;
  /** A tenant API key or a user token (or a function giving one per request). */
  apiKey: string | (() => string | Promise<string>);
  /** CopilotKit agent id → the hub's agent slug (default: the same). */
  agentSlug?: (agentId: string) => string;
  fetch?: typeof fetch;
  /** How long `stop` waits for the hub to end the run, in ms (default 10000). */
  stopWaitMs?: number;
  /** Reconnections of one broken stream, from its cursor (default 3). */
  maxResumes?: number;
}

export declare class HubError extends Error {
  readonly status: number;
  readonly code?: string;
  readonly details?: unknown;
}

/** Structurally CopilotKit's `AgentRunner` (`@copilotkit/runtime/v2`): pass it as `runner`. */
export declare class HubAgentRunner {
  constructor(options: HubAgentRunnerOptions);
  run(request: { threadId: string; agent: AbstractAgent; input: RunAgentInput }): Observable<BaseEvent>;
  connect(request: { threadId: string; agentId?: string }): Observable<BaseEvent>;
  isRunning(request: { threadId: string }): Promise<boolean>;
  stop(request: { threadId: string; runId?: string }): Promise<boolean>;
}
