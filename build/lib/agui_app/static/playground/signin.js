// Sign-in: a staff member's Django session gets a short-lived user token for the tenant they pick
// (``POST /playground/session``, renewed before it expires); anyone else pastes a user token.
// Either way the rest of the page holds only that token.

import { Api } from "./api.js";
import { $, fill, h } from "./dom.js";

function problem(message) {
  $("#signin").hidden = false;
  $("#signin-error").hidden = false;
  $("#signin-error").textContent = message;
}

async function mintForSession(tenant) {
  const response = await fetch("/playground/session", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": $('meta[name="csrf-token"]').content },
    body: JSON.stringify({ tenant }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error?.message ?? `HTTP ${response.status}`);
  return body;
}

async function startSession(tenant, onReady) {
  const session = await mintForSession(tenant);
  const api = new Api({ token: session.token, renew: async () => (await mintForSession(tenant)).token });
  setInterval(async () => { api.token = (await mintForSession(tenant)).token; }, session.ttlSeconds * 800);
  $("#credential").textContent = `· ${tenant} · token for ${session.user}`;
  onReady(api, session.agents);
}

async function startWithToken(token, agentSlug, onReady) {
  const api = new Api({ token });
  const agent = { slug: agentSlug, name: agentSlug, description: "" };
  try {
    const doc = await api.agentCapabilities(agentSlug);
    Object.assign(agent, { name: doc.identity?.name ?? agentSlug, description: doc.identity?.description ?? "" });
  } catch (error) {
    problem(`That token cannot reach agent “${agentSlug}”: ${error.message}`);
    return;
  }
  $("#credential").textContent = "· pasted user token";
  onReady(api, [agent]);
}

/** Show the sign-in, or sign in with the session at once; ``onReady(api, agents)`` once signed in. */
export function boot(onReady) {
  const tenants = JSON.parse($("#playground-tenants").textContent);
  $("#token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    startWithToken($("#token-input").value.trim(), $("#token-agent").value.trim(), onReady);
  });
  if (!tenants.length) {
    $("#signin").hidden = false;
    return;
  }
  const select = $("#tenant-select");
  fill(select, tenants.map((slug) => h("option", { value: slug }, slug)));
  select.hidden = tenants.length < 2;
  const remembered = localStorage.getItem("playground.tenant");
  select.value = tenants.includes(remembered) ? remembered : tenants[0];
  select.addEventListener("change", () => {
    localStorage.setItem("playground.tenant", select.value);
    location.reload();
  });
  startSession(select.value, onReady).catch((error) => {
    problem(`Could not sign in to ${select.value}: ${error.message}`);
  });
}
