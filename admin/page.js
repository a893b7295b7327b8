"use strict";
(function () {
  // The token lives only in this closure: never in storage, never in a URL.
  let token = "";
  const $ = (sel) => document.querySelector(sel);

  function say(text, isError) {
    const s = $("#status");
    s.textContent = text;
    s.className = isError ? "error" : "";
  }

  async function call(method, path, body) {
    const opts = { method: method, headers: { "Authorization": "Bearer " + token }, cache: "no-store" };
    if (method === "POST") {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body || {});
    }
    const res = await fetch(path, opts);
    let doc = null;
    try { doc = await res.json(); } catch (e) { doc = null; }
    if (!res.ok) {
      throw new Error(res.status + " " + res.statusText + (doc && doc.error ? ": " + doc.error : ""));
    }
    return doc;
  }

  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function button(td, label, onClick, action) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.action = action;
    b.addEventListener("click", onClick);
    td.appendChild(b);
  }

  function fill(tableSel, rows, render) {
    const body = $(tableSel + " tbody");
    body.replaceChildren();
    for (const r of rows) body.appendChild(render(r));
  }

  function renderBreaker(b) {
    const tr = document.createElement("tr");
    tr.dataset.dependency = b.name;
    tr.dataset.state = b.state;
    cell(tr, b.name, "name");
    cell(tr, b.state, "state");
    cell(tr, b.window_failed_calls + "/" + b.window_slow_calls + "/" + b.window_calls, "window");
    cell(tr, b.retry_after_seconds > 0 ? Math.ceil(b.retry_after_seconds) + " s" : "", "retry-after");
    cell(tr, (b.tools || []).join(", "), "tools");
    const actions = cell(tr, "", "actions");
    for (const [action, label] of [["force-open", "Force open"], ["force-closed", "Force closed"], ["reset", "Reset"]]) {
      button(actions, label, () => act("api/breakers/" + encodeURIComponent(b.name) + "/" + action, label + " " + b.name), action);
    }
    return tr;
  }

  function renderIntent(i) {
    const tr = document.createElement("tr");
    tr.dataset.intent = i.id;
    cell(tr, i.id, "id");
    cell(tr, i.dependency, "dependency");
    cell(tr, i.tool, "tool");
    cell(tr, i.request_id, "request");
    cell(tr, i.created_at, "created");
    cell(tr, i.summary, "summary");
    const actions = cell(tr, "", "actions");
    for (const [action, label] of [["approve", "Approve"], ["discard", "Discard"]]) {
      button(actions, label, () => act("api/journal/" + encodeURIComponent(i.id) + "/" + action, label + " intent " + i.id), action);
    }
    return tr;
  }

  async function load() {
    const state = await call("GET", "api/state");
    fill("#breakers", state.breakers, renderBreaker);
    fill("#bulkheads", state.bulkheads, (b) => {
      const tr = document.createElement("tr");
      tr.dataset.dependency = b.dependency;
      cell(tr, b.dependency); cell(tr, String(b.in_flight)); cell(tr, String(b.limit)); cell(tr, String(b.waiting));
      return tr;
    });
    fill("#routes", state.routes, (r) => {
      const tr = document.createElement("tr");
      cell(tr, r.model); cell(tr, r.region); cell(tr, r.primary ? "yes" : ""); cell(tr, r.serving ? "serving" : "", "serving");
      return tr;
    });
    $("#journal-section").hidden = !state.journal_configured;
    if (state.journal_configured) {
      const j = await call("GET", "api/journal");
      fill("#journal", j.pending, renderIntent);
    }
    say("Loaded at " + new Date(state.time).toISOString() + ".", false);
  }

  async function act(path, what) {
    try {
      await call("POST", path, { reason: $("#reason").value });
      await load();
      say(what + ": done.", false);
    } catch (e) {
      say(what + " failed: " + e.message, true);
    }
  }

  $("#auth").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    token = $("#token").value.trim();
    try {
      await load();
    } catch (e) {
      fill("#breakers", [], renderBreaker);
      say("Loading failed: " + e.message, true);
    }
  });
})();
