// The operator dashboard: one websocket, a snapshot on connect, then one batch per tick.
// Everything the page keeps is bounded (FEED_ROWS requests, HISTORY chart points).
"use strict";

const $ = (id) => document.getElementById(id);
const FEED_ROWS = 100;
const KEEP_REQUESTS = 2 * FEED_ROWS;
const HISTORY = 300;
const PLOT = { displayModeBar: false, responsive: true };
const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777", "#65a30d", "#4b5563"];

// Read by the tests and by `make bench-events` (events delivered, lag behind the source).
const state = { events: 0, batches: 0, lastLagMs: null, maxLagMs: 0, renderMs: 0, connected: false };
window.dashboardStats = state;
const requests = new Map();
let selected = null;
let drawnWaterfall = "";
const workerColors = new Map();

const fmtMs = (x) => (x == null ? "–" : x >= 1000 ? `${(x / 1000).toFixed(x >= 10000 ? 1 : 2)} s` : `${Math.round(x)} ms`);
const pct = (x) => (x == null ? "–" : `${(x * 100).toFixed(1)}%`);
const rate = (x) => (x == null ? "–" : Number(x).toFixed(2));
const clock = (t) => new Date(t * 1000).toLocaleTimeString();

function workerColor(name) {
  if (!workerColors.has(name)) workerColors.set(name, PALETTE[workerColors.size % PALETTE.length]);
  return workerColors.get(name);
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

// --- requests: the feed and the waterfall

function upsert(r) {
  requests.set(r.id, r);
  while (requests.size > KEEP_REQUESTS) requests.delete(requests.keys().next().value);
}

function newest(limit) {
  return [...requests.values()].sort((a, b) => b.created_at - a.created_at).slice(0, limit);
}

function spanOf(r) {
  if (r.latency_ms != null) return r.latency_ms;
  const ends = r.stages.map((s) => (s.finished_at - r.created_at) * 1000);
  return Math.max(1, ...ends);
}

function miniWaterfall(r) {
  const box = document.createElement("div");
  box.className = "mini";
  const total = Math.max(spanOf(r), 1);
  for (const s of r.stages) {
    const bar = document.createElement("span");
    const left = ((s.started_at - r.created_at) * 1000) / total;
    bar.style.left = `${Math.max(0, Math.min(100, left * 100))}%`;
    bar.style.width = `${Math.max(1, Math.min(100, (s.duration_ms / total) * 100))}%`;
    bar.style.background = s.outcome === "ok" ? workerColor(s.worker || "?") : "#dc2626";
    const why = s.route_reason ? `, ${s.route_reason}` : "";
    bar.title = `${s.stage} @ ${s.worker} (${s.queue}${why}): ${fmtMs(s.duration_ms)}`;
    box.append(bar);
  }
  return box;
}

function drawFeed() {
  const body = $("feed").tBodies[0];
  body.replaceChildren();
  for (const r of newest(FEED_ROWS)) {
    const row = body.insertRow();
    row.dataset.id = r.id;
    row.className = `status-${r.status}${selected === r.id ? " selected" : ""}`;
    cell(row, clock(r.created_at));
    cell(row, r.symbol || "?");
    cell(row, r.strategy || "");
    cell(row, r.status, r.status === "failed" ? "bad" : r.status === "done" ? "ok" : "");
    cell(row, fmtMs(r.latency_ms), "num");
    cell(row, r.cache_hit ? "hit" : "miss");
    row.insertCell().append(miniWaterfall(r));
    if (r.error) row.title = r.error;
  }
}

function pickWaterfall() {
  if ($("follow-latest").checked) {
    const run = newest(KEEP_REQUESTS).find((r) => r.stages.length > 0);
    if (run) selected = run.id;
  }
  const r = requests.get(selected);
  if (r) drawWaterfall(r);
}

function drawWaterfall(r) {
  const key = `${r.id}:${r.status}:${r.stages.length}`;
  if (key === drawnWaterfall || !window.Plotly) return;
  drawnWaterfall = key;
  $("waterfall-title").textContent =
    `${r.symbol} · ${r.status} · ${fmtMs(r.latency_ms)}${r.cache_hit ? " · cache hit" : ""} · ${r.id.slice(0, 8)}`;
  const t0 = r.created_at;
  const stages = [...r.stages].sort((a, b) => a.started_at - b.started_at);
  const prices = stages.find((s) => s.stage === "prices");
  const headerEnds = stages.filter((s) => s.stage !== "prices" && s.stage !== "combine").map((s) => s.finished_at);
  const ready = (s) => {
    if (s.stage === "prices" || !prices) return t0;
    if (s.stage === "combine" && headerEnds.length) return Math.max(...headerEnds);
    return prices.finished_at;
  };
  const label = (s) => `${s.stage} @ ${s.worker || "?"}`;
  const traces = [{
    type: "bar", orientation: "h", name: "waiting (queued)",
    y: stages.map(label),
    base: stages.map((s) => (ready(s) - t0) * 1000),
    x: stages.map((s) => Math.max(0, (s.started_at - ready(s)) * 1000)),
    marker: { color: "#e5e7eb" },
    hovertemplate: "%{y}<br>waited %{x:.0f} ms<extra></extra>",
  }];
  const byWorker = new Map();
  for (const s of stages) {
    const w = s.worker || "?";
    if (!byWorker.has(w)) byWorker.set(w, []);
    byWorker.get(w).push(s);
  }
  for (const [worker, list] of byWorker) {
    traces.push({
      type: "bar", orientation: "h", name: worker,
      y: list.map(label),
      base: list.map((s) => (s.started_at - t0) * 1000),
      x: list.map((s) => Math.max(s.duration_ms, 1)),
      marker: {
        color: workerColor(worker),
        line: { color: list.map((s) => (s.outcome === "ok" ? workerColor(worker) : "#dc2626")), width: 2 },
      },
      customdata: list.map((s) => s.queue || ""),
      hovertemplate: "%{y} (queue %{customdata})<br>start %{base:.0f} ms, ran %{x:.0f} ms<extra></extra>",
    });
  }
  const shapes = r.latency_ms == null ? [] : [{
    type: "line", x0: r.latency_ms, x1: r.latency_ms, yref: "paper", y0: 0, y1: 1,
    line: { color: "#111827", dash: "dot", width: 1 },
  }];
  Plotly.react("waterfall", traces, {
    barmode: "overlay", shapes,
    margin: { l: 230, r: 10, t: 10, b: 40 },
    height: 80 + 28 * stages.length,
    xaxis: { title: "ms since the request was submitted", rangemode: "tozero" },
    yaxis: { autorange: "reversed" },
    legend: { orientation: "h", y: -0.25 },
  }, PLOT);
}

// --- rolling charts

function initCharts() {
  if (!window.Plotly) return;
  const layout = (yTitle, extra = {}) => ({
    margin: { l: 50, r: 10, t: 10, b: 30 }, height: 220, legend: { orientation: "h", y: 1.15 },
    xaxis: { type: "date" }, yaxis: { title: yTitle, rangemode: "tozero", ...extra },
  });
  const line = (name, color, dash) => ({ x: [], y: [], name, mode: "lines", line: { color, dash } });
  Plotly.newPlot("chart-throughput", [line("requests/s", "#2563eb"), line("completed/s", "#16a34a")], layout("per second"), PLOT);
  Plotly.newPlot("chart-latency", [line("p50", "#16a34a"), line("p95", "#d97706"), line("p99", "#dc2626")], layout("ms"), PLOT);
  Plotly.newPlot("chart-ratios", [line("cache hit ratio", "#2563eb"), line("error rate", "#dc2626", "dot")],
    layout("%", { range: [0, 100] }), PLOT);
  Plotly.newPlot("chart-queues", [{ type: "bar", x: ["io", "cpu", "gpu"], y: [0, 0, 0], marker: { color: "#6366f1" } }],
    { margin: { l: 50, r: 10, t: 10, b: 30 }, height: 220, yaxis: { title: "messages waiting", rangemode: "tozero" } }, PLOT);
  const scaling = SCALED_QUEUES.map((q, i) => line(`${q} wait`, QUEUE_COLORS[i]));
  for (const [i, q] of SCALED_QUEUES.entries()) {
    scaling.push({ ...line(`${q} workers`, QUEUE_COLORS[i], "dot"), yaxis: "y2", line: { color: QUEUE_COLORS[i], dash: "dot", shape: "hv" } });
  }
  scaling.push({ x: [], y: [], text: [], name: "decisions", mode: "markers", yaxis: "y2",
    marker: { symbol: "diamond", size: 10, color: "#111827" }, hovertemplate: "%{text}<extra></extra>" });
  Plotly.newPlot("chart-scaling", scaling, {
    ...layout("p95 wait, s"),
    yaxis2: { title: "workers", overlaying: "y", side: "right", rangemode: "tozero", dtick: 1 },
    margin: { l: 50, r: 50, t: 10, b: 30 },
  }, PLOT);
}

const SCALED_QUEUES = ["io", "cpu"];
const QUEUE_COLORS = ["#0891b2", "#7c3aed"];

const asPct = (x) => (x == null ? null : x * 100);

function seriesOf(points) {
  const x = points.map((p) => new Date(p.t * 1000));
  return {
    throughput: { x: [x, x], y: [points.map((p) => p.rps), points.map((p) => p.cps)] },
    latency: { x: [x, x, x], y: [points.map((p) => p.p50), points.map((p) => p.p95), points.map((p) => p.p99)] },
    ratios: { x: [x, x], y: [points.map((p) => asPct(p.hit)), points.map((p) => asPct(p.err))] },
    scaling: {
      x: [...SCALED_QUEUES, ...SCALED_QUEUES].map(() => x),
      y: [
        ...SCALED_QUEUES.map((q) => points.map((p) => (p.waits || {})[q] ?? null)),
        ...SCALED_QUEUES.map((q) => points.map((p) => (p.workers || {})[q] ?? null)),
      ],
    },
  };
}

const SCALING_TRACES = [0, 1, 2, 3];

function drawHistory(points) {
  if (!window.Plotly || !points.length) return;
  const s = seriesOf(points.slice(-HISTORY));
  Plotly.restyle("chart-throughput", s.throughput, [0, 1]);
  Plotly.restyle("chart-latency", s.latency, [0, 1, 2]);
  Plotly.restyle("chart-ratios", s.ratios, [0, 1]);
  Plotly.restyle("chart-scaling", s.scaling, SCALING_TRACES);
}

function appendPoint(p) {
  if (!window.Plotly) return;
  const s = seriesOf([p]);
  Plotly.extendTraces("chart-throughput", s.throughput, [0, 1], HISTORY);
  Plotly.extendTraces("chart-latency", s.latency, [0, 1, 2], HISTORY);
  Plotly.extendTraces("chart-ratios", s.ratios, [0, 1], HISTORY);
  Plotly.extendTraces("chart-scaling", s.scaling, SCALING_TRACES, HISTORY);
}

function drawDecisions(decisions) {
  const body = $("decisions").tBodies[0];
  body.replaceChildren();
  if (!decisions.length) cell(body.insertRow(), "No autoscaler decision yet (AUTOSCALE=1 starts it).").colSpan = 5;
  for (const d of decisions) {
    const row = body.insertRow();
    cell(row, new Date(d.at * 1000).toLocaleTimeString());
    cell(row, d.queue);
    cell(row, d.action);
    cell(row, d.worker || "–");
    cell(row, d.reason);
  }
  if (!window.Plotly) return;
  const marks = [...decisions].reverse().filter((d) => d.action !== "hold");
  Plotly.restyle("chart-scaling", {
    x: [marks.map((d) => new Date(d.at * 1000))],
    y: [marks.map((d) => d.workers)],
    text: [marks.map((d) => `${d.queue} ${d.action} ${d.worker || ""}: ${d.reason}`)],
  }, [SCALING_TRACES.length]);
}

function drawQueues(queues) {
  const names = Object.keys(queues);
  for (const q of names) {
    const el = $(`q-${q}`);
    if (el) el.textContent = `${q}: ${queues[q]} waiting`;
  }
  if (window.Plotly) Plotly.restyle("chart-queues", { x: [names], y: [names.map((q) => queues[q])] }, [0]);
}

function drawTiles(stats) {
  const one = stats["1m"] || {};
  const five = stats["5m"] || {};
  const lat = (w) => `${fmtMs(w.p50_ms)} / ${fmtMs(w.p95_ms)} / ${fmtMs(w.p99_ms)}`;
  $("t-rps").textContent = rate(one.requests_per_s);
  $("t-rps5").textContent = `5 min ${rate(five.requests_per_s)}`;
  $("t-cps").textContent = rate(one.completed_per_s);
  $("t-cps5").textContent = `5 min ${rate(five.completed_per_s)}`;
  $("t-lat").textContent = lat(one);
  $("t-lat5").textContent = `5 min ${lat(five)} (${five.samples || 0} runs)`;
  $("t-hit").textContent = pct(one.cache_hit_ratio);
  $("t-hit5").textContent = `5 min ${pct(five.cache_hit_ratio)}`;
  $("t-err").textContent = pct(one.error_rate);
  $("t-err5").textContent = `5 min ${pct(five.error_rate)} (${five.failed || 0} failed)`;
  $("t-ref").textContent = String(one.refused ?? 0);
  $("t-ref5").textContent = `5 min ${five.refused ?? 0} (at capacity or over a client's share)`;
  const sources = (w) =>
    `${w.answered_from_cache ?? 0} / ${w.computed_online ?? 0} / ${w.precomputed ?? 0}`;
  $("t-src").textContent = sources(one);
  $("t-src5").textContent = `5 min ${sources(five)}`;
}

function drawWorkers(workers) {
  $("workers-count").textContent = String(workers.length);
  const body = $("workers").tBodies[0];
  body.replaceChildren();
  for (const w of workers) {
    const row = body.insertRow();
    cell(row, w.hostname);
    cell(row, (w.queues || []).join(", "));
    cell(row, w.concurrency == null ? "–" : String(w.concurrency), "num");
    cell(row, w.gpu ? "yes" : "no");
    cell(row, String(w.tasks_done), "num");
    cell(row, `${w.seen_ago_s} s ago`);
  }
}

// --- messages

function applyCommon(m) {
  if (m.point) appendPoint(m.point);
  if (m.stats) drawTiles(m.stats);
  if (m.workers) drawWorkers(m.workers);
  if (m.queues) drawQueues(m.queues);
  if (m.decisions) drawDecisions(m.decisions);
}

function applySnapshot(m) {
  for (const r of [...(m.requests || [])].reverse()) upsert(r);
  drawFeed();
  pickWaterfall();
  drawHistory(m.history || []);
  applyCommon({ ...m, point: null });
}

// Batches are folded in as they arrive (cheap); drawing is coalesced to at most one pass
// per RENDER_MS, and the followed waterfall to one redraw per WATERFALL_MS, so a busy
// system cannot queue messages behind the renderer.
const RENDER_MS = 200;
const WATERFALL_MS = 1000;
const pending = { feed: false, waterfall: false, common: [] };
let renderTimer = null;
let renderAt = 0;
let lastRender = 0;
let lastWaterfall = 0;

function render() {
  renderTimer = null;
  const started = performance.now();
  if (pending.feed) {
    pending.feed = false;
    pending.waterfall = true;
    drawFeed();
  }
  const following = $("follow-latest").checked;
  if (pending.waterfall && (!following || started - lastWaterfall >= WATERFALL_MS)) {
    pending.waterfall = false;
    lastWaterfall = started;
    pickWaterfall();
  }
  for (const m of pending.common.splice(0)) applyCommon(m);
  $("event-counter").textContent = `${state.events} events in ${state.batches} batches`;
  $("lag").textContent = `lag ${fmtMs(state.lastLagMs)}`;
  lastRender = performance.now();
  state.renderMs = lastRender - started;
  if (pending.waterfall) scheduleRender(WATERFALL_MS - (lastRender - lastWaterfall));
}

function scheduleRender(delay) {
  const at = performance.now() + Math.max(0, delay);
  if (renderTimer !== null && renderAt <= at) return;  // an earlier pass will see it all
  clearTimeout(renderTimer);
  renderAt = at;
  renderTimer = setTimeout(render, Math.max(0, delay));
}

function applyBatch(m) {
  state.batches += 1;
  state.events += m.events || 0;
  if (m.events && m.newest_event_at) {
    state.lastLagMs = Math.max(0, Date.now() - m.newest_event_at * 1000);
    state.maxLagMs = Math.max(state.maxLagMs, state.lastLagMs);
  }
  const changed = m.requests || [];
  for (const r of [...changed].reverse()) upsert(r);
  if (changed.length) pending.feed = true;
  if (m.point || m.stats || m.workers || m.queues) pending.common.push(m);
  scheduleRender(RENDER_MS - (performance.now() - lastRender));
}

function setLiveState(text) {
  state.connected = text === "live";
  const badge = $("live-state");
  badge.textContent = text;
  badge.className = `badge ${text === "live" ? "done" : "running"}`;
}

document.addEventListener("DOMContentLoaded", () => {
  initCharts();
  $("feed").tBodies[0].addEventListener("click", (event) => {
    const row = event.target.closest("tr");
    if (!row) return;
    selected = row.dataset.id;
    $("follow-latest").checked = false;
    drawFeed();
    pickWaterfall();
  });
  window.Live.keep("/ws/dashboard/", {
    onState: setLiveState,
    onMessage: (m) => (m.type === "snapshot" ? applySnapshot(m) : m.type === "batch" ? applyBatch(m) : null),
  });
});
