// cairn board: vanilla script, no build step. Every value from the server is put into the page
// as text (never as markup) except the two SVG pictures, which the server escapes.
"use strict";

const STATUSES = ["PENDING", "IN_RESEARCH", "RESEARCHED", "IN_PROGRESS", "VALIDATING", "COMPLETE", "BLOCKED", "CANCELLED"];
const PAGE = 200;

// The token arrives in the URL once; it is kept for this tab so a reload still works.
const token = (() => {
  const given = new URLSearchParams(location.search).get("token");
  if (given) sessionStorage.setItem("cairn-token", given);
  return given || sessionStorage.getItem("cairn-token") || "";
})();

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.kind = e.kind || "http_" + status;
    this.hint = e.hint || null;
  }
}

async function api(path, body) {
  const init = { headers: { "X-Cairn-Token": token } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const type = response.headers.get("content-type") || "";
  const value = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) throw new ApiError(response.status, typeof value === "object" ? value : null);
  return value;
}

function say(text, ok) {
  const box = $("message");
  box.textContent = text;
  box.className = ok ? "ok" : "";
  box.hidden = false;
  clearTimeout(say.timer);
  if (ok) say.timer = setTimeout(() => { box.hidden = true; }, 3000);
}

function sayError(what, error) {
  if (error instanceof ApiError) {
    say(`${what} refused — ${error.kind}: ${error.message}${error.hint ? "\nhint: " + error.hint : ""}`);
  } else {
    say(`${what} failed: ${error}`);
  }
}

// ---- project columns ----

const columns = new Map(); // status -> {total, cards}

function cardNode(card) {
  const deps = card.dependencies || [];
  const node = el("div", {
    class: "card" + (card.status === "BLOCKED" || card.blocked_reason ? " blocked" : ""),
    "data-id": card.id,
    "data-deps": deps.join(" "),
    title: deps.length ? `${card.id} depends on ${deps.join(", ")}` : `${card.id}: no dependencies`,
    style: `margin-left:${Math.min(card.depth, 6) * 8}px`,
  },
    el("div", {}, el("span", { class: "id" }, card.id), el("span", { class: "title" }, card.title)),
    el("div", { class: "meta" },
      el("span", { class: "prio-" + card.priority }, card.priority), " · ", card.level,
      card.parent ? ` · ↑${card.parent}` : "",
      card.children ? ` · ${card.children} subtasks` : "",
      deps.length ? ` · needs ${deps.join(", ")}` : "",
      card.claimed_by ? ` · ${card.claimed_by}` : ""),
    card.blocked_reason ? el("div", { class: "meta reason" }, "⛔ " + card.blocked_reason) : null,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "block", onclick: () => blockTask(card.id) }, "Block"),
      el("button", { type: "button", class: "decompose", onclick: () => decomposeTask(card.id) }, "Decompose")));
  node.addEventListener("mouseenter", () => highlight(card.id, deps, true));
  node.addEventListener("mouseleave", () => highlight(card.id, deps, false));
  node.addEventListener("pointerdown", startDrag);
  return node;
}

function highlight(id, deps, on) {
  for (const dep of deps) {
    document.querySelectorAll(`.card[data-id="${CSS.escape(dep)}"]`).forEach((n) => n.classList.toggle("dep", on));
  }
  document.querySelectorAll(".card[data-deps]").forEach((n) => {
    if (n.dataset.deps.split(" ").includes(id)) n.classList.toggle("dependent", on);
  });
}

function renderColumn(status) {
  const column = columns.get(status) || { total: 0, cards: [] };
  const left = column.total - column.cards.length;
  const node = el("div", { class: "column", "data-status": status },
    el("h2", {}, el("span", {}, status.replace("_", " ")), el("span", { class: "count" }, column.total)),
    el("div", { class: "cards" }, column.cards.map(cardNode),
      left > 0 ? el("button", { type: "button", class: "more", onclick: () => loadMore(status) }, `Show ${Math.min(left, PAGE)} more (${left} left)`) : null));
  const old = document.querySelector(`.column[data-status="${status}"]`);
  if (old) {
    const scroll = old.querySelector(".cards").scrollTop;
    old.replaceWith(node);
    node.querySelector(".cards").scrollTop = scroll;
  } else {
    $("board").append(node);
  }
}

async function loadMore(status) {
  const column = columns.get(status);
  try {
    const page = await api(`/api/column?status=${status}&offset=${column.cards.length}&limit=${PAGE}`);
    column.cards = column.cards.concat(page.cards);
    column.total = page.total;
    renderColumn(status);
  } catch (e) { sayError("Loading", e); }
}

async function loadBoard() {
  const board = await api(`/api/board?limit=${PAGE}`);
  $("project-name").textContent = board.project.name || board.project.id;
  $("project-goal").textContent = board.project.goal || "";
  $("project-status").textContent = board.project.status;
  $("task-total").textContent = `${board.total} tasks`;
  const extra = [];
  for (const column of board.columns) {
    const before = columns.get(column.status);
    const shown = before ? before.cards.length : 0;
    columns.set(column.status, { total: column.total, cards: column.cards });
    // A column scrolled past its first page keeps what it showed.
    if (shown > PAGE && column.total > PAGE) extra.push([column.status, Math.min(shown, 1000)]);
  }
  await Promise.all(extra.map(async ([status, limit]) => {
    const page = await api(`/api/column?status=${status}&offset=0&limit=${limit}`);
    columns.set(status, { total: page.total, cards: page.cards });
  }));
  if (dragging) return; // the drop re-renders
  STATUSES.forEach(renderColumn);
  document.body.dataset.renders = String(Number(document.body.dataset.renders) + 1);
}

// ---- drag and drop (pointer events: they work with mouse, pen, touch and WebDriver) ----

let dragging = null;

function startDrag(event) {
  if (event.button !== 0 || event.target.closest("button")) return;
  const card = event.currentTarget;
  const from = card.closest(".column").dataset.status;
  const start = { x: event.clientX, y: event.clientY };
  const rect = card.getBoundingClientRect();
  let moved = false;
  const move = (e) => {
    if (!moved && Math.hypot(e.clientX - start.x, e.clientY - start.y) < 4) return;
    if (!moved) {
      moved = true;
      dragging = card;
      card.style.width = rect.width + "px";
      card.classList.add("dragging");
    }
    card.style.left = rect.left + e.clientX - start.x + "px";
    card.style.top = rect.top + e.clientY - start.y + "px";
    document.querySelectorAll(".column").forEach((c) => c.classList.remove("drop-target"));
    const over = columnAt(e.clientX, e.clientY);
    if (over) over.classList.add("drop-target");
  };
  const up = async (e) => {
    window.removeEventListener("pointermove", move);
    window.removeEventListener("pointerup", up);
    if (!moved) return;
    const target = columnAt(e.clientX, e.clientY);
    document.querySelectorAll(".column").forEach((c) => c.classList.remove("drop-target"));
    const to = target && target.dataset.status;
    if (to && to !== from) {
      // Shown where it was dropped while the server decides; a refusal puts it back.
      card.classList.remove("dragging");
      card.style.left = card.style.top = card.style.width = "";
      target.querySelector(".cards").prepend(card);
      await moveTask(card.dataset.id, to);
    }
    dragging = null;
    await refresh();
  };
  window.addEventListener("pointermove", move);
  window.addEventListener("pointerup", up);
}

function columnAt(x, y) {
  const hit = document.elementsFromPoint(x, y).find((n) => n.classList && n.classList.contains("column"));
  return hit || null;
}

async function moveTask(id, to) {
  try {
    const moved = await api(`/api/tasks/${encodeURIComponent(id)}/move`, { to });
    say(`${id} → ${moved.status}`, true);
  } catch (e) { sayError(`Moving ${id} to ${to}`, e); }
}

// ---- actions ----

function ask(title, label) {
  return new Promise((resolve) => {
    const dialog = $("dialog");
    $("dialog-title").textContent = title;
    $("dialog-label").textContent = label;
    $("dialog-input").value = "";
    dialog.onclose = () => resolve(dialog.returnValue === "ok" ? $("dialog-input").value : null);
    dialog.showModal();
    $("dialog-input").focus();
  });
}

async function blockTask(id) {
  const reason = await ask(`Block ${id}`, "What does it wait for?");
  if (reason === null) return;
  try {
    await api(`/api/tasks/${encodeURIComponent(id)}/block`, { reason });
    say(`${id} blocked`, true);
  } catch (e) { sayError(`Blocking ${id}`, e); }
  await refresh();
}

async function decomposeTask(id) {
  const text = await ask(`Decompose ${id}`, "One subtask title per line");
  if (text === null) return;
  const into = text.split("\n").map((t) => t.trim()).filter(Boolean);
  try {
    const out = await api(`/api/tasks/${encodeURIComponent(id)}/decompose`, { into });
    say(`${id} decomposed into ${out.children.join(", ")}`, true);
  } catch (e) { sayError(`Decomposing ${id}`, e); }
  await refresh();
}

$("add-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { title: $("add-title").value, parent: $("add-parent").value, priority: $("add-priority").value };
  try {
    const out = await api("/api/tasks", body);
    say(`${out.id} added`, true);
    $("add-title").value = "";
  } catch (e) { sayError("Adding the task", e); }
  await refresh();
});

// ---- panels ----

function table(head, rows) {
  return el("table", {}, el("tr", {}, head.map((h) => el("th", {}, h))),
    rows.map((row) => el("tr", {}, row.map((c) => el("td", {}, c ?? "")))));
}

function secs(s) {
  if (s === null || s === undefined) return "";
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}

function renderSession(s) {
  if (!s) return el("div", { class: "muted" }, "No live execution session.");
  const p = s.progress || {};
  const out = [el("div", {}, el("b", {}, "Status: "), p.status || "?",
    p.wave ? ` · wave ${p.wave.current} of ${p.wave.total}` : "",
    p.max_parallel ? ` · max ${p.max_parallel} in parallel` : "")];
  if (s.lock) out.push(el("div", { class: "muted" }, s.lock));
  if ((p.active || []).length) out.push(el("h4", {}, "Active"), table(["task", "subject", "phase"], p.active.map((a) => [a.id, a.subject, a.phase])));
  if ((p.completed || []).length) out.push(el("h4", {}, "Completed"), table(["task", "result", "took"], p.completed.map((c) => [c.id + " " + (c.subject || ""), c.result, secs(c.duration_secs)])));
  if ((s.task_log || []).length) out.push(el("h4", {}, "Task log"), table(["task", "status", "attempts", "took", "tokens"], s.task_log.map((r) => [r.task + " " + (r.subject || ""), r.status, r.attempts, secs(r.duration_secs), r.tokens])));
  if (s.context) {
    for (const section of s.context.sections) {
      if (!section.lines.length) continue;
      out.push(el("h4", {}, section.heading), el("ul", {}, section.lines.map((l) => el("li", {}, l))));
    }
  }
  return out;
}

function renderPlan(p) {
  if (!p) return el("div", { class: "muted" }, "No current plan.");
  const b = p.budget || {};
  return [
    el("div", {}, el("b", {}, p.state), ` · iteration ${p.iteration}`, p.step ? ` · step ${p.step}` : ""),
    el("div", {}, p.goal),
    el("div", { class: "muted" }, `budget: ${b.files_added} files, ${b.new_abstractions} abstractions, +${b.lines_added}/−${b.lines_removed} lines` +
      (b.scope_estimate ? ` (scope ${b.scope_estimate})` : "") + ((b.over || []).length ? ` · over: ${b.over.join(", ")}` : "")),
    (p.fix_attempts || []).length ? table(["step", "attempt", "note"], p.fix_attempts.map((f) => [f.step, f.attempt, f.note])) : null,
  ];
}

function renderOrchestration(o) {
  if (!o) return el("div", { class: "muted" }, "No active orchestration.");
  const usage = o.token_usage || {};
  const agents = Object.entries(usage.by_agent || {});
  const errors = (o.phases || []).flatMap((ph) => (ph.errors || []).map((e) => [ph.id, e.agent, e.message, e.resolved ? "resolved" : "open"]));
  return [
    el("div", {}, el("b", {}, o.status), ` · phase ${o.current_phase} of ${o.total_phases} · `, o.task),
    table(["phase", "name", "status", "agents"], (o.phases || []).map((ph) => [ph.id, ph.name, ph.status, (ph.agents || []).join(", ")])),
    agents.length ? table(["agent", "in", "out", "cached"], agents.map(([a, t]) => [a, t.input, t.output, t.cached])) : null,
    errors.length ? table(["phase", "agent", "error", ""], errors) : null,
  ];
}

async function renderTaskLists(ids) {
  if (ids === null) return el("div", { class: "muted" }, "No Claude Code configuration directory known.");
  if (!ids.length) return el("div", { class: "muted" }, "No task lists.");
  const lists = await Promise.all(ids.slice(0, 20).map((id) => api(`/api/tasklists/${encodeURIComponent(id)}`).catch((e) => ({ id, error: e }))));
  return lists.map((list) => {
    if (list.error) return el("div", { class: "muted" }, `${list.id}: ${list.error.message}`);
    const by = (status) => list.tasks.filter((t) => t.status === status).map((t) => el("div", { class: "tl-task", title: (t.blocked_by || []).length ? "blocked by " + t.blocked_by.join(", ") : "" }, `#${t.id} ${t.status === "in_progress" && t.active_form ? t.active_form : t.subject}`));
    return el("div", { class: "tasklist", "data-list": list.id }, el("h4", {}, list.id),
      el("div", { class: "tl-cols" },
        el("div", {}, el("h4", {}, "pending"), by("pending")),
        el("div", {}, el("h4", {}, "in progress"), by("in_progress")),
        el("div", {}, el("h4", {}, "completed"), by("completed"))),
      list.problems.length ? el("div", { class: "muted" }, `${list.problems.length} unreadable file(s) skipped`) : null);
  });
}

async function panel(id, load, render) {
  try {
    const value = await load();
    const content = await render(value);
    $(id).replaceChildren(...[content].flat().filter(Boolean));
  } catch (e) {
    $(id).replaceChildren(el("div", { class: "muted" }, e instanceof ApiError ? `${e.kind}: ${e.message}` : String(e)));
  }
}

async function svgPanel(id, path) {
  try {
    $(id).innerHTML = await api(path); // server-rendered, every value escaped there
  } catch (e) { $(id).textContent = String(e.message || e); }
}

// ---- refreshing ----

let refreshing = null;
let again = false;

// One refresh at a time; changes that arrive during one trigger exactly one more.
async function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      await Promise.all([
        loadBoard().catch((e) => sayError("Loading the board", e)),
        panel("session", () => api("/api/session"), renderSession),
        panel("plan", () => api("/api/plan"), renderPlan),
        panel("orchestration", () => api("/api/orchestration"), renderOrchestration),
        panel("tasklists", () => api("/api/tasklists"), renderTaskLists),
        svgPanel("graph", "/api/graph.svg"),
        svgPanel("burndown", "/api/burndown.svg"),
      ]);
    } while (again);
  })();
  try { await refreshing; } finally { refreshing = null; }
}

function listen() {
  const live = $("live");
  const events = new EventSource(`/events?token=${encodeURIComponent(token)}`);
  events.addEventListener("hello", () => { live.textContent = "live"; live.className = "live on"; });
  events.addEventListener("change", (e) => {
    live.dataset.seq = e.data;
    refresh();
  });
  events.onerror = () => { live.textContent = "reconnecting"; live.className = "live off"; };
}

STATUSES.forEach(renderColumn);
refresh();
listen();
