// The track record page: past forecasts and bands over the realized price, coverage, metrics.
"use strict";

const $ = (id) => document.getElementById(id);
const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const REFRESH_MS = 15000;
let timer = null;

function question() {
  return {
    symbol: $("symbol").value.trim().toUpperCase(),
    horizon: $("horizon").value,
    window: $("window").value,
  };
}

function say(text, kind = "") {
  $("message").textContent = text;
  $("message").className = "message " + kind;
}

async function load() {
  const q = question();
  const url = `/api/v1/symbols/${encodeURIComponent(q.symbol)}/track-record/?horizon=${q.horizon}&window=${q.window}`;
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) {
    say(body.error || `The track record could not be read (${response.status}).`, "bad");
    return;
  }
  render(body);
  await loadGenerations(q.symbol);
}

// Which generation serves each model, the shadow, the trail; staff may roll back.
async function loadGenerations(symbol) {
  const response = await fetch(`/api/v1/generations/?symbol=${encodeURIComponent(symbol)}`, { headers: { Accept: "application/json" } });
  if (!response.ok) return;
  const body = await response.json();
  const staffForm = document.getElementById("generation-form");
  const rows = $("generations").tBodies[0];
  rows.replaceChildren();
  for (const g of body.models || []) {
    const tr = rows.insertRow();
    tr.dataset.model = g.model;
    for (const text of [g.model, g.serving ?? "–", g.shadow ?? "–", g.rollback_to ?? "–"]) tr.insertCell().textContent = text;
    const action = tr.insertCell();
    if (staffForm && g.rollback_to !== null) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = `Roll back to ${g.rollback_to}`;
      button.addEventListener("click", () => rollback(symbol, g.model, staffForm));
      action.append(button);
    }
  }
  const events = $("generation-events").tBodies[0];
  events.replaceChildren();
  for (const e of (body.events || []).slice(0, 12)) {
    const tr = events.insertRow();
    for (const text of [e.at.slice(0, 19).replace("T", " "), e.model, e.generation, e.action, e.reason, e.actor]) tr.insertCell().textContent = text;
  }
}

async function rollback(symbol, model, form) {
  const reason = window.prompt(`Why roll ${symbol}/${model} back? (recorded with your name)`);
  if (!reason) return;
  const token = form.querySelector("[name=csrfmiddlewaretoken]").value;
  const response = await fetch(`/api/v1/generations/${encodeURIComponent(symbol)}/${encodeURIComponent(model)}/`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": token },
    body: JSON.stringify({ action: "rollback", reason }),
  });
  const answer = await response.json();
  if (!response.ok) {
    say(answer.error || `The rollback was refused (${response.status}).`, "bad");
    return;
  }
  say(`${symbol}/${model}: generation ${answer.event.generation} serves again.`, "ok");
  await loadGenerations(symbol);
}

function realizedSeries(forecasts) {
  const prices = new Map();
  for (const f of forecasts) {
    prices.set(f.as_of, f.as_of_close);
    f.realized_dates.forEach((d, i) => prices.set(d, f.realized[i]));
  }
  const dates = [...prices.keys()].sort();
  return { x: dates, y: dates.map((d) => prices.get(d)) };
}

function render(body) {
  const clock = body.clock;
  $("clock").textContent = clock.mode + (clock.date ? `, ${clock.date}${clock.running ? "" : " (paused)"}` : "");
  const forecasts = body.forecasts;
  const scored = forecasts.filter((f) => f.scored_steps > 0).length;
  say(forecasts.length
    ? `${forecasts.length} forecasts of record, ${scored} with at least one step scored.`
    : "No forecast of record yet for this symbol and horizon: ask for one on the Predict page.");
  if (!window.Plotly) return;
  const traces = [{ ...realizedSeries(forecasts), name: "price", mode: "lines", line: { color: "#111827" } }];
  forecasts.forEach((f, i) => {
    const legend = i === forecasts.length - 1;
    const x = [f.as_of, ...f.dates];
    if (f.lower && f.upper) {
      traces.push({ x, y: [f.as_of_close, ...f.upper], mode: "lines", line: { width: 0 }, showlegend: false, hoverinfo: "skip" });
      traces.push({ x, y: [f.as_of_close, ...f.lower], mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: "rgba(37,99,235,0.08)", name: "80% band", showlegend: legend, hoverinfo: "skip" });
    }
    traces.push({ x, y: [f.as_of_close, ...f.path], mode: "lines", line: { color: f.matured ? "#2563eb" : "#f59e0b", width: 1, dash: "dot" }, name: f.matured ? "forecast (matured)" : "forecast (waiting)", showlegend: legend });
  });
  // Daily bars: both date axes are in days, also for one forecast or one scored day, and
  // share one range and plot width (the legend above), so each coverage square sits under
  // its day.
  const allDates = forecasts.flatMap((f) => [f.as_of, ...f.dates]);
  Plotly.react("paths", traces, { margin: { t: 30, r: 10, b: 30, l: 50 }, height: 400, legend: { orientation: "h", x: 0, y: 1.08 }, xaxis: window.DayAxis.dayAxis(allDates) }, { responsive: true });
  const cov = forecasts.flatMap((f) => f.realized_dates.map((d, k) => ({ d, ok: f.covered[k] })).filter((c) => c.ok !== null));
  Plotly.react("coverage", [{
    x: cov.map((c) => c.d), y: cov.map(() => 1), mode: "markers", type: "scatter",
    marker: { symbol: "square", size: 9, color: cov.map((c) => (c.ok ? "#15803d" : "#dc2626")) },
    hovertext: cov.map((c) => (c.ok ? "inside the band" : "outside the band")), hoverinfo: "x+text",
  }], { margin: { t: 0, r: 10, b: 30, l: 50 }, height: 90, yaxis: { visible: false }, xaxis: window.DayAxis.dayAxis(allDates) }, { responsive: true });
  const rows = Object.entries(body.metrics);
  const tbody = $("metrics").tBodies[0];
  tbody.replaceChildren();
  for (const [name, m] of rows) {
    const tr = tbody.insertRow();
    tr.dataset.forecaster = name;
    for (const text of [name, m.n, fmt(m.mean_abs_log_error, 4), fmt(m.naive_mean_abs_log_error, 4), fmt(m.skill),
      m.coverage === null ? "–" : `${fmt(100 * m.coverage, 1)} % (${m.coverage_n})`, fmt(m.interval_score, 2)]) {
      tr.insertCell().textContent = text;
    }
  }
  const health = $("health").tBodies[0];
  health.replaceChildren();
  for (const h of body.health || []) {
    const tr = health.insertRow();
    tr.dataset.model = h.model;
    for (const text of [h.model, h.state, h.steps, fmt(h.statistic, 2), h.reason || "–"]) tr.insertCell().textContent = text;
    if (h.state === "demoted") tr.cells[1].className = "bad";
  }
  Plotly.react("errors", [{
    type: "bar", x: rows.map(([n]) => n), y: rows.map(([, m]) => m.mean_abs_log_error),
    marker: { color: rows.map(([n]) => (n === "ensemble" ? "#2563eb" : "#9ca3af")) },
  }], { margin: { t: 10, r: 10, b: 30, l: 50 }, height: 200, yaxis: { title: "mean |log error|" } }, { responsive: true });
}

// New bars, forecasts and scores arrive on the symbol's websocket; each reloads the record
// (at most once per second). A slow poll stays as the fallback while the socket is down.
let socket = null;
let reloadDue = null;
function reloadSoon() {
  if (reloadDue) return;
  reloadDue = setTimeout(() => { reloadDue = null; load().catch(() => {}); }, 1000);
}

function follow() {
  clearInterval(timer);
  if (socket) socket.close();
  load().catch((e) => say(`The track record could not be read: ${e}`, "bad"));
  socket = window.Live.keep(`/ws/symbols/${encodeURIComponent(question().symbol)}/`, {
    onMessage: (m) => { if (m.type === "market") reloadSoon(); },
    onState: (state) => { $("live").textContent = state; },
  });
  timer = setInterval(() => { if ($("live").textContent !== "live") load().catch(() => {}); }, REFRESH_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  $("track-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const q = question();
    history.replaceState(null, "", `?symbol=${encodeURIComponent(q.symbol)}&horizon=${q.horizon}`);
    follow();
  });
  follow();
});
