"use strict";
(function () {
  // The token lives only in this closure: never in storage, never in a URL. Every name
  // shown comes from the server and may be hostile (a model can invent tool names): it
  // is only ever set as textContent, a dataset value or an encoded URL part.
  let token = "";
  let timer = null;      // the scheduled refresh, null when none is
  let paused = false;    // the operator paused the refresh
  let refreshMs = 5000;  // from the state document
  let loads = 0;
  let generation = 0;    // a new token starts a new refresh loop; older ones stop
  const $ = (sel) => document.querySelector(sel);
  const body = document.body;

  function say(text, isError) {
    const s = $("#status");
    s.textContent = text;
    s.className = isError ? "error" : "";
  }

  async function call(method, path, payload) {
    const opts = { method: method, headers: { "Authorization": "Bearer " + token }, cache: "no-store" };
    if (method === "POST") {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(payload || {});
    }
    const res = await fetch(path, opts);
    let doc = null;
    try { doc = await res.json(); } catch (e) { doc = null; }
    if (!res.ok) {
      const err = new Error(res.status + " " + res.statusText + (doc && doc.error ? ": " + doc.error : ""));
      err.status = res.status;
      throw err;
    }
    return doc;
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function cell(row, text, cls) {
    const td = el("td", text, cls);
    row.appendChild(td);
    return td;
  }

  function button(td, label, onClick, action) {
    const b = el("button", label);
    b.type = "button";
    b.dataset.action = action;
    b.addEventListener("click", onClick);
    td.appendChild(b);
  }

  function fill(tableSel, rows, render) {
    const tbody = $(tableSel + " tbody");
    tbody.replaceChildren();
    for (const r of rows) tbody.appendChild(render(r));
  }

  // duration turns seconds into "3h 04m", "12m 05s" or "42s".
  function duration(s) {
    s = Math.max(0, Math.floor(s));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    const two = (n) => (n < 10 ? "0" : "") + n;
    if (h > 0) return h + "h " + two(m) + "m";
    if (m > 0) return m + "m " + two(sec) + "s";
    return sec + "s";
  }

  function clock(iso) {
    const d = new Date(iso);
    return isNaN(d) ? "" : d.toISOString().slice(11, 19);
  }

  const downStates = { open: 0, half_open: 1, forced_open: 2 };

  const scopeTips = {
    fleet: "Fleet-wide: every replica shares this state through Redis. Force open, Force closed and Reset apply to every replica.",
    local: "Local: this replica decides alone (Redis unreachable, or not synced yet). Force open, Force closed and Reset apply here now and reach every replica when Redis answers again, unless the fleet's state moved on meanwhile.",
  };
  // Why a local breaker decides alone (scope_error, from a fixed set).
  const scopeErrorTips = {
    auth: "Redis refused the credentials: check the password and the ACL user.",
    protocol: "The server at the fleet's address does not answer as Redis does: check the address (another service there?).",
    unreachable: "No connection to Redis, or no master for this breaker's keys: check Redis and the network path.",
    timeout: "Redis did not answer within the fleet's OpTimeout: a slow Redis or network path.",
  };

  function renderTransitions(td, b, now) {
    const list = b.transitions || [];
    if (list.length === 0) { td.textContent = "none seen"; td.classList.add("muted"); return; }
    const item = (t) => {
      const li = el("li");
      const when = el("time", clock(t.at));
      when.dateTime = t.at;
      when.title = t.at + " (" + duration((now - new Date(t.at)) / 1000) + " ago)";
      li.appendChild(when);
      const what = el("span");
      what.appendChild(el("span", t.from + " \u2192 " + t.to, "move"));
      what.appendChild(document.createTextNode(" "));
      what.appendChild(el("span", t.cause, "cause"));
      if (t.health_probe) what.appendChild(el("span", " (health probe)", "source"));
      li.appendChild(what);
      if (t.reason) {
        const why = el("span", t.reason, "why");
        why.title = t.reason;
        li.appendChild(why);
      }
      return li;
    };
    const ol = el("ol", null, "transitions");
    for (const t of list.slice(0, 3)) ol.appendChild(item(t));
    td.appendChild(ol);
    if (list.length > 3) {
      const more = el("details");
      more.appendChild(el("summary", (list.length - 3) + " earlier"));
      const rest = el("ol", null, "transitions");
      for (const t of list.slice(3)) rest.appendChild(item(t));
      more.appendChild(rest);
      td.appendChild(more);
    }
  }

  function renderBreaker(b, now, withHistory) {
    const tr = el("tr");
    tr.dataset.dependency = b.name;
    tr.dataset.state = b.state;
    cell(tr, b.name, "name");
    const st = cell(tr, "", "state");
    st.appendChild(el("span", b.state, "badge " + b.state));
    // Fleet mode: whether this state is every replica's or this replica's alone. The
    // class comes from a fixed set; the text is set as text.
    const scopeTip = b.scope ? scopeTips[b.scope === "fleet" ? "fleet" : "local"] : "";
    if (b.scope) {
      tr.dataset.scope = b.scope === "fleet" ? "fleet" : "local";
      const why = tr.dataset.scope === "local" && scopeErrorTips[b.scope_error] ? b.scope_error : "";
      const sc = el("span", why ? b.scope + " \u00b7 " + why : b.scope, "badge scope " + tr.dataset.scope);
      sc.title = why ? scopeTip + " " + scopeErrorTips[why] : scopeTip;
      if (why) tr.dataset.scopeError = why;
      st.appendChild(document.createTextNode(" "));
      st.appendChild(sc);
    }
    if (b.probed) {
      // Half-open belongs to the dependency's health probe: user calls never probe it.
      const pb = el("span", "health probe", "badge probed");
      pb.title = "recovery is decided by the dependency's health probe; user calls are answered locally until it closes";
      st.appendChild(document.createTextNode(" "));
      st.appendChild(pb);
    }
    if (b.shadow) {
      // Shadow mode: the controls decide and record, but every call is sent.
      tr.dataset.shadow = "true";
      const sb = el("span", "shadow", "badge shadow");
      sb.title = "shadow mode: the controls record what they would have done; every call is sent";
      st.appendChild(document.createTextNode(" "));
      st.appendChild(sb);
    }
    // A throttle shedding part of the dependency's calls (a partial outage): its share
    // and, on hover, the calls shed by priority. Text only, from numbers.
    if (b.throttle && b.throttle.shed_share > 0) {
      tr.dataset.shedding = "true";
      const sh = el("span", "shedding " + Math.round(b.throttle.shed_share * 100) + "%", "badge shedding");
      const shed = b.throttle.shed || {};
      sh.title = "partly overloaded: calls held back, by priority: " +
        ["low", "normal", "high", "critical"].map((p) => p + " " + (Number(shed[p]) || 0)).join(", ");
      st.appendChild(document.createTextNode(" "));
      st.appendChild(sh);
    }
    // An adaptive concurrency limit: the limit in force and, on hover, its bounds, the
    // measured no-load latency and the calls refused by priority. Text only, from numbers.
    if (b.adaptive) {
      const a = b.adaptive;
      if (a.at_floor) tr.dataset.limitAtFloor = "true";
      const lb = el("span", "limit " + (Number(a.limit) || 0) + (a.at_floor ? " (floor)" : ""), "badge adaptive" + (a.at_floor ? " at-floor" : ""));
      const refused = a.refused || {};
      lb.title = "adaptive concurrency limit " + (Number(a.min_limit) || 0) + ".." + (Number(a.max_limit) || 0) +
        ", " + (Number(a.in_flight) || 0) + " in flight, no-load latency " + Math.round((Number(a.no_load_seconds) || 0) * 1000) + "ms" +
        (a.measuring ? " (measuring)" : "") + "; refused by priority: " +
        ["low", "normal", "high", "critical"].map((p) => p + " " + (Number(refused[p]) || 0)).join(", ");
      st.appendChild(document.createTextNode(" "));
      st.appendChild(lb);
    }
    const openFor = cell(tr, b.down_since ? duration(b.open_for_seconds) : "", "open-for");
    if (b.down_since) openFor.title = "since " + b.down_since;
    cell(tr, b.window_failed_calls + " / " + b.window_slow_calls + " / " + b.window_calls, "window");
    cell(tr, b.retry_after_seconds > 0 ? "in " + duration(Math.ceil(b.retry_after_seconds)) : "", "retry-after");
    if (withHistory) renderTransitions(cell(tr, "", "transitions-cell"), b, now);
    const tools = cell(tr, "", "tools");
    for (const name of b.tools || []) tools.appendChild(el("div", name));
    const actions = cell(tr, "", "actions");
    for (const [action, label] of [["force-open", "Force open"], ["force-closed", "Force closed"], ["reset", "Reset"]]) {
      button(actions, label, () => act("api/breakers/" + encodeURIComponent(b.name) + "/" + action, label + " " + b.name), action);
    }
    if (scopeTip) for (const btn of actions.querySelectorAll("button")) btn.title = scopeTip;
    return tr;
  }

  function renderIntent(i) {
    const tr = el("tr");
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

  function renderSummary(breakers) {
    const counts = { closed: 0, open: 0, half_open: 0, forced_open: 0, forced_closed: 0 };
    for (const b of breakers) counts[b.state] = (counts[b.state] || 0) + 1;
    const chip = (n, label, cls) => {
      const c = el("span", null, "chip" + (n > 0 && cls ? " " + cls : ""));
      c.dataset.count = label;
      c.appendChild(el("b", n));
      c.appendChild(document.createTextNode(label));
      return c;
    };
    const chips = [
      chip(breakers.length, "breakers"),
      chip(counts.open, "open", "bad"),
      chip(counts.half_open, "half-open", "warn"),
      chip(counts.forced_open, "forced open", "forced"),
      chip(counts.forced_closed, "forced closed", "forced"),
      chip(counts.closed, "closed")];
    // Fleet mode: how many breakers of this replica decide alone (Redis unreachable).
    if (breakers.some((b) => b.scope)) {
      const locals = breakers.filter((b) => b.scope && b.scope !== "fleet");
      const local = chip(locals.length, "deciding locally", "warn");
      local.title = scopeTips.local;
      // The error classes that keep them local, for example "auth 3, timeout 1".
      const why = {};
      for (const b of locals) if (scopeErrorTips[b.scope_error]) why[b.scope_error] = (why[b.scope_error] || 0) + 1;
      const classes = Object.keys(why).sort();
      if (classes.length > 0) {
        local.dataset.errors = classes.join(" ");
        local.appendChild(document.createTextNode(" (" + classes.map((c) => c + " " + why[c]).join(", ") + ")"));
        local.title += " " + classes.map((c) => scopeErrorTips[c]).join(" ");
      }
      chips.push(local);
    }
    $("#summary").replaceChildren(...chips);
  }

  // The policy in force, the fleet's versions and the audited changes. Text only.
  function renderPolicy(p) {
    const replicas = Object.keys(p.replicas || {}).sort();
    $("#policy-section").hidden = !p.version && replicas.length === 0 && p.changes.length === 0;
    const head = $("#policy-version");
    head.textContent = "version " + (p.version || "(none)") +
      (replicas.length ? (p.converged ? " \u00b7 fleet converged" : " \u00b7 fleet not converged: ") : "");
    head.dataset.converged = String(p.converged);
    if (replicas.length && !p.converged) {
      head.appendChild(document.createTextNode(replicas.map((r) => r + " " + p.replicas[r]).join(", ")));
    }
    fill("#policy-changes", p.changes, (c) => {
      const tr = el("tr");
      cell(tr, c.at); cell(tr, c.operator + " (" + c.remote_addr + ")"); cell(tr, c.old_version); cell(tr, c.new_version);
      cell(tr, c.error ? "refused: " + c.error : c.reason);
      return tr;
    });
  }

  async function load() {
    const state = await call("GET", "api/state");
    const now = new Date(state.time);
    if (state.refresh_seconds > 0) refreshMs = state.refresh_seconds * 1000;
    // Breakers that refuse calls first, the longest open first; then by name.
    const breakers = state.breakers.slice().sort((a, b) => {
      const da = a.state in downStates, db = b.state in downStates;
      if (da !== db) return da ? -1 : 1;
      if (da && a.open_for_seconds !== b.open_for_seconds) return b.open_for_seconds - a.open_for_seconds;
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
    $("#summary").hidden = false;
    renderSummary(breakers);
    $("#breakers-section").hidden = false;
    for (const th of document.querySelectorAll("#breakers .history-col")) th.hidden = !state.history_configured;
    fill("#breakers", breakers, (b) => renderBreaker(b, now, state.history_configured));
    $("#no-breakers").hidden = breakers.length > 0;

    $("#bulkheads-section").hidden = !state.bulkheads_configured;
    fill("#bulkheads", state.bulkheads, (b) => {
      const tr = el("tr");
      tr.dataset.dependency = b.dependency;
      cell(tr, b.dependency, "name");
      const inFlight = cell(tr, String(b.in_flight), "num");
      const m = el("meter");
      m.min = 0; m.max = Math.max(1, b.limit); m.value = b.in_flight; m.high = 0.8 * m.max; m.optimum = 0;
      inFlight.appendChild(m);
      cell(tr, String(b.limit), "num");
      cell(tr, String(b.waiting), "num");
      return tr;
    });
    $("#routes-section").hidden = !state.routes_configured;
    fill("#routes", state.routes, (r) => {
      const tr = el("tr");
      cell(tr, r.model, "name"); cell(tr, r.region); cell(tr, r.primary ? "primary" : ""); cell(tr, r.serving ? "serving" : "", "serving");
      return tr;
    });
    renderPolicy(state.policy || { changes: [] });
    $("#journal-section").hidden = !state.journal_configured;
    if (state.journal_configured) {
      const j = await call("GET", "api/journal");
      fill("#journal", j.pending, renderIntent);
      $("#no-intents").hidden = j.pending.length > 0;
    }
    loads++;
    body.dataset.loads = String(loads);
    return state;
  }

  function showRefresh(state) {
    const when = state ? "Updated " + clock(state.time) + " UTC" : "";
    say(paused ? when + " \u00b7 refresh paused" : when + " \u00b7 refreshing every " + duration(refreshMs / 1000), false);
  }

  function schedule(gen) {
    clearTimeout(timer);
    timer = null;
    body.dataset.timer = "none";
    if (paused || gen !== generation) return;
    timer = setTimeout(() => refresh(gen), refreshMs);
    body.dataset.timer = "scheduled";
  }

  async function refresh(gen) {
    timer = null;
    body.dataset.timer = "none";
    if (gen !== generation || paused) return;
    try {
      const state = await load();
      if (gen !== generation) return;
      showRefresh(state);
      schedule(gen);
    } catch (e) {
      if (gen !== generation) return;
      if (e.status === 401) {
        stop("Refresh stopped: " + e.message);
        return;
      }
      say("Refresh failed (retrying): " + e.message, true);
      schedule(gen);
    }
  }

  function stop(message) {
    generation++;
    clearTimeout(timer);
    timer = null;
    body.dataset.timer = "none";
    body.dataset.refresh = "off";
    $("#pause").hidden = true;
    say(message, true);
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

  $("#pause").addEventListener("click", () => {
    paused = !paused;
    $("#pause").textContent = paused ? "Resume" : "Pause";
    body.dataset.refresh = paused ? "paused" : "on";
    if (paused) {
      clearTimeout(timer);
      timer = null;
      body.dataset.timer = "none";
      showRefresh(null);
    } else {
      refresh(generation);
    }
  });

  $("#auth").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    token = $("#token").value.trim();
    const gen = ++generation;
    clearTimeout(timer);
    try {
      const state = await load();
      if (gen !== generation) return;
      paused = false;
      $("#pause").textContent = "Pause";
      $("#pause").hidden = false;
      body.dataset.refresh = "on";
      showRefresh(state);
      schedule(gen);
    } catch (e) {
      if (gen !== generation) return;
      for (const s of ["#summary", "#breakers-section", "#bulkheads-section", "#routes-section", "#journal-section"]) $(s).hidden = true;
      fill("#breakers", [], renderBreaker);
      stop("Loading failed: " + e.message);
    }
  });
})();
