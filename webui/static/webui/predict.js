// The prediction page: submit a symbol, follow its stages, then chart the forecasts.
"use strict";

const api = "/api/v1/predictions/";
const $ = (id) => document.getElementById(id);
const fmt = (x, digits = 2) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));

function csrfToken() {
  const input = document.querySelector("[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

function say(text, kind = "") {
  const el = $("message");
  el.textContent = text;
  el.className = "message " + kind;
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function renderStages(stages, status) {
  $("progress").hidden = false;
  $("status").textContent = status;
  $("status").className = "badge " + status;
  const body = $("stages").tBodies[0];
  body.replaceChildren();
  for (const s of stages) {
    const row = body.insertRow();
    cell(row, s.stage);
    cell(row, s.worker || "");
    cell(row, s.queue || "");
    cell(row, fmt(s.duration_ms, 0), "num");
    cell(row, s.outcome, s.outcome === "ok" ? "ok" : "bad");
  }
  if (!stages.length || !window.Plotly) return;
  const t0 = Math.min(...stages.map((s) => s.started_at));
  const ordered = [...stages].sort((a, b) => a.started_at - b.started_at);
  Plotly.react("stages-chart", [{
    type: "bar",
    orientation: "h",
    y: ordered.map((s) => `${s.stage} @ ${s.worker || "?"}`),
    base: ordered.map((s) => (s.started_at - t0) * 1000),
    x: ordered.map((s) => Math.max(s.duration_ms, 1)),
    marker: { color: ordered.map((s) => (s.outcome === "ok" ? "#3b82f6" : "#dc2626")) },
    hovertemplate: "%{y}<br>start %{base:.0f} ms, %{x:.0f} ms<extra></extra>",
  }], {
    margin: { l: 220, r: 10, t: 10, b: 30 },
    height: 60 + 26 * ordered.length,
    xaxis: { title: "ms since the first stage started" },
    yaxis: { autorange: "reversed" },
  }, { displayModeBar: false, responsive: true });
}

function renderResult(p) {
  const r = p.result;
  $("result").hidden = false;
  $("result-title").textContent = `${r.symbol}: next ${r.horizon} trading day(s)`;
  const c = r.combined;
  const last = r.data.last_close;
  const final = c.forecast[c.forecast.length - 1];
  const change = ((final / last) - 1) * 100;
  const parts = [
    `Combined forecast ${fmt(final)} (${change >= 0 ? "+" : ""}${fmt(change)}%) from the last close ${fmt(last)} on ${r.data.last_bar_date}.`,
    `Prices from ${r.data.source}.`,
    p.cache_hit ? "Answered from the cache." : `Pipeline took ${fmt(r.timings.pipeline_ms, 0)} ms.`,
  ];
  if (c.unsure) parts.push(`Unsure: ${c.unsure_reason}`);
  $("result-summary").textContent = parts.join(" ");

  const lastDate = r.history.dates[r.history.dates.length - 1];
  const xs = [lastDate, ...r.forecast_dates];
  const traces = [{ x: r.history.dates, y: r.history.close, name: "history (adj. close)", line: { color: "#111827" } }];
  if (c.interval) {
    traces.push({ x: xs, y: [last, ...c.interval.upper], line: { width: 0 }, showlegend: false, hoverinfo: "skip" });
    traces.push({ x: xs, y: [last, ...c.interval.lower], fill: "tonexty", fillcolor: "rgba(59,130,246,0.15)",
      line: { width: 0 }, name: `${Math.round((c.interval.level || 0.8) * 100)}% interval` });
  }
  for (const m of r.models.filter((m) => m.ok)) {
    traces.push({ x: xs, y: [last, ...m.forecast], name: `${m.model} (w=${fmt(m.weight)})`, line: { dash: "dot" } });
  }
  traces.push({ x: xs, y: [last, ...c.forecast], name: "combined", line: { color: "#2563eb", width: 3 } });
  if (window.Plotly) {
    Plotly.react("chart", traces, {
      margin: { l: 50, r: 10, t: 10, b: 40 }, height: 420, legend: { orientation: "h" },
      yaxis: { title: "price" },
    }, { displayModeBar: false, responsive: true });
  }

  const body = $("models").tBodies[0];
  body.replaceChildren();
  for (const m of r.models) {
    const row = body.insertRow();
    cell(row, m.label || m.model);
    cell(row, fmt(m.weight), "num");
    cell(row, m.metrics ? fmt(m.metrics.mae) : "–", "num");
    cell(row, m.metrics ? fmt(m.metrics.mase) : "–", "num");
    cell(row, [m.worker, m.queue].filter(Boolean).join(" / "));
    cell(row, m.ok ? "ok" : m.error, m.ok ? "ok" : "bad");
  }

  const s = r.sentiment;
  const dl = $("sentiment");
  dl.replaceChildren();
  const entries = s.ok === false
    ? [["status", s.error]]
    : [["source", s.is_sample ? `${s.source} (sample data, not live posts)` : s.source],
       ["posts", s.count], ["mean compound", fmt(s.mean_compound, 3)],
       ["positive / negative", `${fmt(s.positive_share * 100, 0)}% / ${fmt(s.negative_share * 100, 0)}%`],
       ["adjustment applied", `${fmt(c.sentiment.tilt * 100, 3)}% (bound ±${fmt(c.sentiment.max_adjust * 100, 1)}%)`]];
  if (s.fallback_reason) entries.push(["note", s.fallback_reason]);
  for (const [k, v] of entries) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    dl.append(dt, dd);
  }
}

async function follow(url) {
  for (;;) {
    const response = await fetch(url + "?wait=1", { headers: { Accept: "application/json" } });
    const p = await response.json();
    if (!response.ok) throw new Error(p.error || `HTTP ${response.status}`);
    renderStages(p.stages || [], p.status);
    if (p.status === "done") return p;
    if (p.status === "failed") throw new Error(p.error || "The prediction failed.");
  }
}

async function predict(event) {
  event.preventDefault();
  const button = $("submit");
  button.disabled = true;
  $("result").hidden = true;
  say("Submitting…");
  try {
    const response = await fetch(api, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ symbol: $("symbol").value, horizon: Number($("horizon").value) }),
    });
    const body = await response.json();
    if (!response.ok && response.status !== 202) throw new Error(body.error || `HTTP ${response.status}`);
    let p = body;
    if (response.status === 202) {
      say(`Queued as ${body.id}; following its stages…`);
      p = await follow(body.links.self);
    }
    renderStages(p.stages || [], p.status);
    renderResult(p);
    say(p.cache_hit ? "Done (from the cache)." : `Done in ${fmt(p.latency_ms, 0)} ms.`, "ok");
  } catch (err) {
    say(err.message, "bad");
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("predict-form").addEventListener("submit", predict);
});
