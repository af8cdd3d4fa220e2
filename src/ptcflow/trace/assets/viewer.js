"use strict";
// ptcflow trace viewer: a waterfall of the mission tree. Nodes come folded by ptcflow.trace
// (embedded in the page, or streamed live as server-sent events); rows are virtualised:
// only the rows in view exist in the DOM. No dependencies, no build step.
(() => {
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("ptc-data").textContent);
  const prices = data.prices || {};
  const nodes = new Map();
  const collapsed = new Set();
  let rows = [], roots = [], kids = new Map(), structure = true;
  let t0 = Infinity, t1 = -Infinity, view = null, selected = null, queued = false;
  const ROW = 22, KIND = { run: "agent", turn: "turn", llm: "model", program: "program", tool: "tool" };
  const timings = { firstPaint: null, click: null };

  function upsert(n) {
    const old = nodes.get(n.id);
    if (old === undefined) { nodes.set(n.id, n); structure = true; }
    else {
      if (old.p !== n.p) structure = true;  // moved under another node
      for (const k in old) if (k[0] !== "_" && !(k in n)) delete old[k];
      Object.assign(old, n);
    }
    if (n.s < t0) t0 = n.s;
    const end = n.e === undefined ? n.s : n.e;
    if (end > t1) t1 = end;
  }

  function rebuild() {
    kids = new Map(); roots = [];
    for (const n of nodes.values()) {
      if (n.p !== undefined && nodes.has(n.p)) {
        let list = kids.get(n.p);
        if (list === undefined) kids.set(n.p, list = []);
        list.push(n);
      } else roots.push(n);
    }
    structure = false;
  }

  function failing() {
    // the nodes that failed, and every node that holds one of them
    const keep = new Set();
    for (const n of nodes.values()) {
      if (n.st !== "error" && n.st !== "cancelled") continue;
      for (let m = n; m && !keep.has(m.id); m = nodes.get(m.p)) keep.add(m.id);
    }
    return keep;
  }

  function flatten() {
    if (structure) rebuild();
    rows = [];
    const keep = $("failures").checked ? failing() : null;
    const stack = roots.slice().reverse().map((n) => [n, 0]);
    while (stack.length) {
      const [n, depth] = stack.pop();
      if (keep && !keep.has(n.id)) continue;
      n._d = depth;
      rows.push(n);
      const list = kids.get(n.id);
      if (list && !collapsed.has(n.id))
        for (let i = list.length - 1; i >= 0; i--) stack.push([list[i], depth + 1]);
    }
    $("waterfall").dataset.bars = String(nodes.size);
  }

  const win = () => view || [t0, Math.max(t1, t0 + 1)];
  const endOf = (n) => (n.e === undefined ? t1 : n.e);

  function fmt(ms) {
    if (ms < 1) return ms.toFixed(2) + " ms";
    if (ms < 1000) return ms.toFixed(0) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
    return (ms / 60000).toFixed(1) + " min";
  }

  function axis() {
    const box = $("axis"), [a, b] = win();
    box.textContent = "";
    for (let i = 0; i <= 8; i++) {
      const s = document.createElement("span");
      s.style.left = (i * 12.5) + "%";
      s.textContent = fmt(a - t0 + (b - a) * i / 8);
      if (i > 0 && i < 8) box.appendChild(s);
    }
  }

  const pool = [];
  function rowElement(i) {
    let el = pool[i];
    if (el === undefined) {
      el = pool[i] = document.createElement("div");
      el.className = "row";
      el.innerHTML = '<div class="label"><span class="tw"></span><span class="k"></span><span class="n"></span><span class="x"></span></div><div class="track"><div class="bar"></div></div>';
      $("rows").appendChild(el);
    }
    return el;
  }

  function render() {
    queued = false;
    if (structure || rows.length === 0) flatten();
    const scroller = $("scroller"), [a, b] = win(), span = b - a;
    $("spacer").style.height = rows.length * ROW + "px";
    const first = Math.max(0, Math.floor(scroller.scrollTop / ROW) - 5);
    const count = Math.ceil(scroller.clientHeight / ROW) + 10;
    $("rows").style.top = first * ROW + "px";
    let i = 0;
    for (; i < count && first + i < rows.length; i++) {
      const n = rows[first + i], el = rowElement(i);
      el.hidden = false;
      el.dataset.id = n.id;
      el.className = n.id === selected ? "row sel" : "row";
      const label = el.firstChild.children;
      label[0].textContent = kids.has(n.id) ? (collapsed.has(n.id) ? "▸" : "▾") : "";
      el.firstChild.style.paddingLeft = n._d * 12 + "px";
      label[1].textContent = KIND[n.k] || n.k;
      label[2].textContent = n.n;
      label[3].textContent = [n.a > 1 ? "×" + n.a + " attempts" : "", waits(n)].filter(Boolean).join(" ");
      const bar = el.lastChild.firstChild;
      bar.className = "bar k-" + n.k + " st-" + n.st + (n.a > 1 ? " retried" : "");
      const left = (n.s - a) / span, right = (endOf(n) - a) / span;
      bar.style.left = (left * 100) + "%";
      bar.style.width = Math.max(0, (right - left) * 100) + "%";
      bar.title = n.n + " · " + n.st + " · " + fmt(endOf(n) - n.s) + (n.err ? "\n" + n.err : "");
      bar.style.backgroundImage = n.k === "run" && n.d && n.d.pauses ? gaps(n) : "";
    }
    for (; i < pool.length; i++) pool[i].hidden = true;
    axis();
    stats();
    if (timings.firstPaint === null && nodes.size) timings.firstPaint = performance.now();
  }

  // a call that waits (or waited) for a person's decision, a run paused until then
  const DECIDED = { approve: "approved", deny: "denied", supply: "supplied", expired: "expired" };
  function waits(n) {
    if (n.st === "paused") return "‖ paused";
    const a = n.d && n.d.approval;
    if (n.st === "waiting") return a ? "‖ waits for " + (a.kind === "deferred" ? "its result" : "approval") : "‖ waiting";
    return a && a.decision ? "‖ " + (DECIDED[a.decision] || a.decision) : "";
  }

  // the time a resumed run spent paused, drawn on its bar (amber, as what waits)
  function gaps(n) {
    const width = endOf(n) - n.s, stops = [];
    if (width <= 0) return "";
    for (const p of n.d.pauses) {
      if (p.paused_ms === undefined || p.resumed_ms === undefined) continue;
      const a = ((p.paused_ms - n.s) / width * 100).toFixed(3), b = ((p.resumed_ms - n.s) / width * 100).toFixed(3);
      stops.push("transparent " + a + "%", "var(--waiting) " + a + "%", "var(--waiting) " + b + "%", "transparent " + b + "%");
    }
    return stops.length ? "linear-gradient(90deg, transparent 0%, " + stops.join(", ") + ", transparent 100%)" : "";
  }

  function schedule() { if (!queued) { queued = true; requestAnimationFrame(render); } }

  function stats() {
    let runs = 0, running = 0, failed = 0, paused = 0;
    for (const n of nodes.values()) if (n.k === "run") { runs++; if (n.st === "running") running++; else if (n.st === "paused") paused++; else if (n.st !== "ok") failed++; }
    $("stats").textContent = runs + " runs · " + nodes.size + " bars · " + fmt(Math.max(0, t1 - t0)) + (running ? " · " + running + " running" : "") + (paused ? " · " + paused + " paused" : "") + (failed ? " · " + failed + " failed" : "");
    $("stats").dataset.running = String(running);
    $("stats").dataset.paused = String(paused);
  }

  // -- the per-agent summary -----------------------------------------------------------
  function price(model) {
    return prices[model] || (model.includes(":") ? prices[model.split(":", 2)[1]] : undefined);
  }
  function summary() {
    const by = new Map();
    if (structure) rebuild();
    for (const n of nodes.values()) {
      if (n.k !== "run") continue;
      const r = by.get(n.n) || { runs: 0, ok: 0, failed: 0, paused: 0, turns: 0, ti: 0, to: 0, ms: 0, cost: 0, priced: true };
      by.set(n.n, r);
      r.runs++; if (n.st === "ok") r.ok++; else if (n.st === "paused") r.paused++; else if (n.st !== "running") r.failed++;
      r.ms += endOf(n) - n.s;
      for (const t of kids.get(n.id) || []) {
        if (t.k !== "turn") continue;
        r.turns++;
        for (const c of kids.get(t.id) || []) {
          if (c.k !== "llm") continue;
          r.ti += c.ti || 0; r.to += c.to || 0;
          const p = price(c.m || "");
          if (p) r.cost += ((c.ti || 0) * p.input + (c.to || 0) * p.output) / 1e6; else r.priced = false;
        }
      }
    }
    const paused = [...by.values()].some((r) => r.paused);  // the column only where a run paused
    const head = ["agent", "runs", "ok", "failed", ...(paused ? ["paused"] : []), "turns", "tokens in", "tokens out", "duration", "cost"];
    const table = document.createElement("table");
    const tr = table.insertRow();
    for (const h of head) { const th = document.createElement("th"); th.textContent = h; tr.appendChild(th); }
    for (const [name, r] of by) {
      const row = table.insertRow();
      const cost = Object.keys(prices).length && r.priced ? "$" + r.cost.toFixed(4) : "–";
      for (const v of [name, r.runs, r.ok, r.failed, ...(paused ? [r.paused] : []), r.turns, r.ti, r.to, fmt(r.ms), cost]) row.insertCell().textContent = String(v);
    }
    $("summary").replaceChildren(table);
  }

  // -- the detail panel ----------------------------------------------------------------
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  const json = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
  function section(box, title, value) {
    if (value === undefined) return;
    box.append(el("h3", title), el("pre", json(value)));
  }

  function source(text, error) {
    const box = el("div", undefined, "src");
    const lines = text.split("\n");
    lines.forEach((line, i) => {
      const bad = error && error.line === i + 1;
      const ln = el("span", undefined, bad ? "ln bad" : "ln");
      ln.appendChild(el("i", String(i + 1)));
      const col = bad && error.column ? error.column - 1 : -1;
      if (col >= 0 && col < line.length) {
        ln.append(line.slice(0, col), el("mark", line[col]), line.slice(col + 1));
      } else ln.append(line);
      box.appendChild(ln);
      if (bad) box.appendChild(el("span", "    " + " ".repeat(Math.max(0, col)) + "^ " + error.category + " at line " + error.line + (error.column ? ", column " + error.column : ""), "caret"));
    });
    return box;
  }

  function conversation(n) {
    // What the model had been told: the run's input, then each earlier turn's answer and
    // results. The journal does not hold the system prompt or the exact feedback text.
    const run = nodes.get(n.r), box = el("div");
    if (run && run.d && run.d.input !== undefined) box.appendChild(msg("user", run.d.input));
    for (const t of (run && kids.get(run.id)) || []) {
      if (t.k !== "turn") continue;
      const calls = kids.get(t.id) || [];
      if (calls.some((c) => c.id === n.id)) break;
      for (const c of calls) {
        if (c.k === "llm" && c.d) box.appendChild(msg("assistant", c.d.text || (c.d.tool_calls || []).map((x) => x.name + " " + JSON.stringify(x.arguments)).join("\n")));
        else if (c.k === "tool") box.appendChild(msg("tool " + c.n, c.err || (c.d ? c.d.result : "")));
        else if (c.k === "program" && c.d) box.appendChild(msg("program result", c.err || c.d.value));
      }
    }
    return box;
  }
  function msg(role, value) {
    const m = el("div", undefined, "msg");
    m.append(el("b", role), el("span", typeof value === "string" ? value : JSON.stringify(value)));
    return m;
  }

  function detail(id) {
    const n = nodes.get(id), box = $("detail");
    box.textContent = "";
    if (!n) return;
    const d = n.d || {};
    box.appendChild(el("h2", (KIND[n.k] || n.k) + ": " + n.n));
    const meta = [n.st, fmt(endOf(n) - n.s), "at +" + fmt(n.s - t0)];
    if (n.a > 1) meta.push(n.a + " attempts (retried)");
    if (n.ti || n.to) meta.push(n.ti + " in / " + n.to + " out tokens");
    if (n.m) { meta.push(n.m); const p = price(n.m); if (p) meta.push("$" + (((n.ti || 0) * p.input + (n.to || 0) * p.output) / 1e6).toFixed(5)); }
    box.appendChild(el("div", meta.join(" · "), "meta"));
    box.appendChild(el("div", n.k === "run" ? "run " + n.id : n.r + " · " + (n.id.split("|")[1] || ""), "meta"));
    if (n.err) box.append(el("h3", "error"), el("div", n.err, "err"));
    if (n.k === "run") {
      if (d.pending && d.pending.length) {
        box.appendChild(el("h3", "waiting for a decision"));
        for (const p of d.pending) box.appendChild(msg("‖ " + p.tool, p.call_id + " · " + p.reason + (p.expires_at ? " · expires " + p.expires_at : "") + (p.arguments !== undefined ? "\n" + json(p.arguments) : "")));
      }
      section(box, "input", d.input); section(box, "result", d.result);
      if (d.reason) section(box, "reason", d.reason);
      for (const p of d.pauses || []) {
        const said = p.resumed_ms === undefined ? "not resumed yet" : "resumed after " + fmt(p.resumed_ms - p.paused_ms) + ", decided: " + ((p.decided || []).join(", ") || "none");
        box.appendChild(el("p", "Paused at +" + fmt(p.paused_ms - t0) + " (" + (p.pending || []).length + " waiting), " + said + ".", "meta"));
      }
      if (d.tools && d.tools.length) section(box, "tools", d.tools.join(", "));
    } else if (n.k === "llm") {
      box.append(el("h3", "conversation before this call (from the journal)"), conversation(n));
      section(box, "response", d.text);
      section(box, "tool calls", d.tool_calls);
    } else if (n.k === "program") {
      if (d.source !== undefined) box.append(el("h3", "program"), source(d.source, d.error));
      section(box, "value", d.value); section(box, "printed", d.prints); section(box, "fail", d.fail);
      section(box, "tool calls", (kids.get(n.id) || []).map((c) => c.n).join(", ") || undefined);
    } else if (n.k === "tool") {
      const a = d.approval;
      if (a) {
        box.appendChild(el("h3", a.kind === "deferred" ? "waits for its result (deferred tool)" : "approval"));
        box.appendChild(msg("requested", a.reason + (a.expires_at ? " · expires " + a.expires_at : "")));
        if (a.decision) box.appendChild(msg("decision", (DECIDED[a.decision] || a.decision) + (a.decision_reason ? ": " + a.decision_reason : "") + (a.resolved_ms !== undefined && a.requested_ms !== undefined ? " · after " + fmt(a.resolved_ms - a.requested_ms) : "")));
        else box.appendChild(msg("decision", "none yet"));
      }
      section(box, "arguments", d.arguments); section(box, "result", d.result);
      if (d.timing) box.appendChild(el("p", "Timing " + d.timing + ".", "meta"));
    } else if (n.k === "turn") {
      for (const c of kids.get(n.id) || []) box.appendChild(msg(KIND[c.k] || c.k, c.n + " · " + c.st + " · " + fmt(endOf(c) - c.s)));
    }
    if (d.error && typeof d.error === "object" && n.k !== "program") section(box, "error envelope", d.error);
    else if (d.error && n.k === "program") section(box, "program error", d.error);
  }

  function select(id) {
    const started = performance.now();
    selected = id;
    detail(id);
    render();
    timings.click = performance.now() - started;
  }

  function reveal(id) {
    let n = nodes.get(id);
    while (n && n.p !== undefined) { collapsed.delete(n.p); n = nodes.get(n.p); }
    flatten();
    const i = rows.findIndex((r) => r.id === id);
    if (i >= 0) $("scroller").scrollTop = Math.max(0, i * ROW - $("scroller").clientHeight / 3);
    render();
    return i;
  }

  $("rows").addEventListener("click", (ev) => {
    const row = ev.target.closest(".row");
    if (!row) return;
    const id = row.dataset.id;
    if (ev.target.classList.contains("tw") && kids.has(id)) {
      if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id);
      flatten(); render(); return;
    }
    select(id);
  });
  $("scroller").addEventListener("scroll", schedule, { passive: true });
  window.addEventListener("resize", schedule);
  $("scroller").addEventListener("wheel", (ev) => {
    if (!ev.ctrlKey && !ev.shiftKey) return;
    ev.preventDefault();
    const [a, b] = win(), track = $("scroller").getBoundingClientRect();
    const label = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--label")) || 300;
    const x = Math.min(1, Math.max(0, (ev.clientX - track.left - label) / (track.width - label)));
    const at = a + (b - a) * x, delta = ev.deltaY || ev.deltaX;
    if (ev.ctrlKey) {
      const k = delta > 0 ? 1.25 : 0.8, na = at - (at - a) * k, nb = at + (b - at) * k;
      view = nb - na >= Math.max(t1 - t0, 1) ? null : [Math.max(t0, na), Math.min(Math.max(t1, t0 + 1), nb)];
    } else {
      const shift = (b - a) * (delta > 0 ? 0.1 : -0.1);
      if (view) view = [view[0] + shift, view[1] + shift];
    }
    schedule();
  }, { passive: false });
  $("fit").addEventListener("click", () => { view = null; schedule(); });
  $("failures").addEventListener("change", () => { flatten(); render(); });

  // -- live: a mission's signals streamed as server-sent events --------------------------
  let source_ = null;
  function live(options) {
    const form = $("start");
    form.hidden = false;
    $("question").value = options.question || "";
    const chat = options.agui && options.thread ? options : null;
    if (chat) { $("go").textContent = "Ask"; conversation(chat); }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (source_) source_.close();
      nodes.clear(); collapsed.clear(); structure = true; rows = []; t0 = Infinity; t1 = -Infinity; view = null; selected = null;
      $("stop").disabled = false; $("go").disabled = true;
      document.body.dataset.live = "running";
      if (options.agui) { agui(options.agui, $("question").value, chat); return; }
      source_ = new EventSource(options.stream + "?question=" + encodeURIComponent($("question").value));
      source_.addEventListener("signal", (ev) => {
        const msg = JSON.parse(ev.data);
        for (const n of msg.nodes) upsert(n);
        if (msg.signal && msg.signal.time) { const t = Date.parse(msg.signal.time); if (t > t1) t1 = t; }
        schedule(); summarySoon();
      });
      source_.addEventListener("end", (ev) => { stop(JSON.parse(ev.data).status); });
      source_.onerror = () => stop("disconnected");
    });
    $("stop").addEventListener("click", () => stop("stopped"));
  }

  // POST an AG-UI RunAgentInput, read the SSE body: each event goes to handle(ev), and the
  // promise resolves with the last value handle returned that was not null
  async function postAgui(url, input, handle, signal, each) {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" },
                                        body: JSON.stringify(input), signal });
    if (!response.ok) {
      let why = "";
      try { why = (await response.json()).error || ""; } catch (e) { why = ""; }
      throw new Error("POST " + url + ": HTTP " + response.status + (why ? ": " + why : ""));
    }
    const reader = response.body.getReader(), decoder = new TextDecoder();
    let buffer = "", end = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
        for (const line of block.split("\n")) if (line.startsWith("data: ")) { const r = handle(JSON.parse(line.slice(6))); if (r !== null && r !== undefined) end = r; }
      }
      if (each) each();
    }
    return end;
  }
  const input = (thread, messages) => ({ threadId: thread, runId: "page-" + Date.now(), state: {}, tools: [], context: [], forwardedProps: {}, messages });

  // -- the conversation (a page given an AG-UI thread) -----------------------------------
  // The server keeps it: the page sends each question alone, and asks for the conversation
  // so far with an input that holds no message (its MESSAGES_SNAPSHOT). #pending shows
  // what waits on the person: a run that ends with the AG-UI interrupt outcome lists its
  // calls there (tool, arguments, reason) with Approve / Deny; once each is decided the
  // page resumes the run (an input whose `resume` answers each interrupt).
  function say(role, text, cls) {
    const li = el("li", text, cls ? role + " " + cls : role);
    li.dataset.role = role;
    $("turns").appendChild(li);
    $("chat").scrollTop = $("chat").scrollHeight;
    document.body.dataset.turns = String($("turns").querySelectorAll("li.user, li.assistant").length);
    return li;
  }
  function snapshot(messages) {
    $("turns").textContent = "";
    for (const m of messages) if ((m.role === "user" || m.role === "assistant") && typeof m.content === "string" && m.content) say(m.role, m.content);
    document.body.dataset.turns = String($("turns").querySelectorAll("li.user, li.assistant").length);
  }
  function conversation(chat) {
    $("chat").hidden = false;
    document.body.dataset.conversation = "loading";
    postAgui(chat.agui, input(chat.thread, []), (ev) => {
      if (ev.type === "MESSAGES_SNAPSHOT") snapshot(ev.messages);
      else if (ev.type === "RUN_ERROR") { say("note", "the conversation could not be read: " + ev.message); return "error"; }
      if (ev.type === "RUN_FINISHED" && ev.outcome && ev.outcome.type === "interrupt") {
        document.body.dataset.live = "paused";
        const users = $("turns").querySelectorAll("li.user");
        if (users.length) users[users.length - 1].classList.add("waiting");
        pending(chat, ev.outcome.interrupts);
      }
      return ev.type === "RUN_FINISHED" ? "loaded" : null;
    }).then((end) => { document.body.dataset.conversation = end || "error"; },
            (error) => { say("note", String(error)); document.body.dataset.conversation = "error"; });
  }
  // the calls a paused run waits on, each with Approve / Deny (Deny asks for a reason)
  function pending(chat, interrupts) {
    const box = $("pending");
    box.replaceChildren();
    box.hidden = false;
    const decided = new Map();
    const send = () => {
      if (decided.size < interrupts.length) return;
      box.hidden = true; box.replaceChildren();
      const resume = interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: decided.get(i.id) }));
      $("go").disabled = true; $("stop").disabled = false;
      document.body.dataset.live = "running";
      agui(chat.agui, null, chat, resume);
    };
    box.append(el("h3", interrupts.length === 1 ? "Waiting for your approval" : "Waiting for your approval (" + interrupts.length + " calls)"));
    for (const i of interrupts) {
      const call = (i.metadata && i.metadata.ptcflow) || {};
      const item = el("div", undefined, "call");
      item.dataset.interrupt = i.id;
      item.append(el("strong", call.tool || i.toolCallId || i.id, "tool"), el("pre", json(call.arguments === undefined ? null : call.arguments), "arguments"),
                  el("p", call.reason || i.message || i.reason, "reason"));
      const approve = el("button", "Approve", "approve"), deny = el("button", "Deny", "deny");
      approve.type = deny.type = "button";
      const why = el("input", undefined, "why"); why.type = "text"; why.placeholder = "why it is denied"; why.hidden = true;
      const confirm = el("button", "Send denial", "confirm"); confirm.type = "button"; confirm.hidden = true;
      const done = (text) => { for (const b of [approve, deny, confirm, why]) b.disabled = true; item.append(el("span", text, "decided")); send(); };
      approve.addEventListener("click", () => { decided.set(i.id, { approved: true }); done("approved"); });
      deny.addEventListener("click", () => { why.hidden = false; confirm.hidden = false; why.focus(); });
      confirm.addEventListener("click", () => {
        const reason = why.value.trim() || "denied";
        decided.set(i.id, { approved: false, reason });
        done("denied: " + reason);
      });
      item.append(approve, deny, why, confirm);
      box.append(item);
    }
  }
  const answerOf = (r) => (r && typeof r === "object" && typeof r.answer === "string" ? r.answer : json(r === undefined ? null : r));

  // the same mission read over the AG-UI protocol: POST a RunAgentInput, read the SSE body;
  // the mission tree arrives as AG-UI state (a snapshot, then JSON Patch "add"s of nodes)
  // (resume: the answers to a paused run's interrupts, instead of a question)
  function agui(url, question, chat, resume) {
    const abort = new AbortController();
    const asked = chat ? (resume ? $("turns").querySelector("li.user.waiting") || say("user", "…", "waiting") : say("user", question, "asking")) : null;
    if (asked && resume) { asked.classList.remove("waiting"); asked.classList.add("asking"); }
    else if (chat) {  // a new question abandons what waited
      $("pending").hidden = true;
      for (const li of $("turns").querySelectorAll("li.waiting")) li.classList.remove("waiting");
    }
    let open = asked !== null;  // the question waits for its answer, once
    const settle = (text, role) => { if (open) { open = false; asked.classList.remove("asking"); say(role, text); } };
    source_ = { close: () => { abort.abort(); settle("stopped", "note"); } };
    const node = (n) => { upsert(n); const t = n.e !== undefined ? n.e : n.s; if (t > t1) t1 = t; };
    const handle = (ev) => {
      if (ev.type === "STATE_SNAPSHOT") for (const n of Object.values(ev.snapshot.mission || {})) node(n);
      else if (ev.type === "STATE_DELTA") { for (const op of ev.delta) if (op.path.startsWith("/mission/")) node(op.value); }
      else if (ev.type === "MESSAGES_SNAPSHOT" && chat) snapshot(ev.messages);
      else if (ev.type === "RUN_FINISHED") {
        if (ev.outcome && ev.outcome.type === "cancelled") { settle("cancelled", "note"); return "cancelled"; }
        if (ev.outcome && ev.outcome.type === "interrupt") {
          if (open) { open = false; asked.classList.remove("asking"); asked.classList.add("waiting"); }
          if (chat) pending(chat, ev.outcome.interrupts);
          return "paused";
        }
        settle(answerOf(ev.result), "assistant");
        return "ok";
      } else if (ev.type === "RUN_ERROR") { settle(ev.code === "cancelled" ? "cancelled" : "error: " + ev.message, "note"); return ev.code === "cancelled" ? "cancelled" : "error"; }
      return null;
    };
    const sent = resume ? { ...input(chat.thread, []), resume }
                        : input(chat ? chat.thread : "page", [{ id: "q-" + Date.now(), role: "user", content: question }]);
    postAgui(url, sent, handle, abort.signal, () => { schedule(); summarySoon(); })
      .then((end) => { if (end === null) settle("disconnected", "note"); stop(end || "disconnected"); })
      .catch((error) => { if (source_) { settle(String(error && error.message ? error.message : error), "note"); stop("stopped"); } });
  }
  function stop(status) {
    if (source_) { source_.close(); source_ = null; }
    $("stop").disabled = true; $("go").disabled = false;
    document.body.dataset.live = status;
    schedule(); summary();
  }
  let summaryTimer = null;
  function summarySoon() { if (summaryTimer === null) summaryTimer = setTimeout(() => { summaryTimer = null; summary(); }, 250); }

  for (const n of data.nodes) upsert(n);
  flatten();
  render();
  summary();
  if (data.live) live(data.live);
  window.ptcTrace = { nodes, timings, select, reveal, render, count: (k) => { let c = 0; for (const n of nodes.values()) if (!k || n.k === k) c++; return c; } };
  document.body.dataset.ready = "1";
})();
