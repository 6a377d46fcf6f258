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

function expectedStages() {
  const el = $("pipeline-models");
  const models = el ? JSON.parse(el.textContent) : [];
  return ["prices", ...models.map((m) => `model:${m}`), "sentiment", "combine"];
}

// The stages light up: grey = not yet runnable, pulsing = queued or running, then ok/error.
function renderPills(stages, status) {
  const seen = new Map(stages.map((s) => [s.stage, s]));
  const names = [...new Set([...expectedStages(), ...seen.keys()])];
  const header = names.filter((n) => n !== "prices" && n !== "combine");
  const pricesDone = seen.has("prices") && seen.get("prices").outcome === "ok";
  const headerDone = header.every((n) => seen.has(n));
  const active = status === "queued" || status === "running";
  const list = $("stage-pills");
  list.replaceChildren();
  for (const name of names) {
    const s = seen.get(name);
    const li = document.createElement("li");
    li.dataset.stage = name;
    if (s) li.className = s.outcome === "ok" ? "ok" : "error";
    else if (active && (name === "prices" || (name === "combine" ? pricesDone && headerDone : pricesDone))) li.className = "active";
    li.textContent = s ? `${name} · ${fmt(s.duration_ms, 0)} ms` : name;
    list.append(li);
  }
}

function renderStages(stages, status) {
  $("progress").hidden = false;
  $("status").textContent = status;
  $("status").className = "badge " + status;
  renderPills(stages, status);
  const body = $("stages").tBodies[0];
  body.replaceChildren();
  for (const s of stages) {
    const row = body.insertRow();
    cell(row, s.stage);
    cell(row, s.worker || "");
    cell(row, s.queue || "").title = s.route_reason || ""; // why it went there
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

// What the answer is, the band first: `combined.reading` when the answer has it, else the
// same read off the interval (answers made before the reading existed).
function bandAtHorizon(r) {
  const c = r.combined;
  if (c.reading && c.reading.band) return c.reading.band;
  const i = c.interval;
  if (!i || !i.lower || !i.lower.length) return null;
  const n = i.lower.length;
  return {
    level: i.level || 0.8, horizon: n, date: r.forecast_dates[n - 1],
    lower: i.lower[n - 1], upper: i.upper[n - 1], sigma: i.sigma ? i.sigma[n - 1] : null,
    coverage: i.coverage || null,
  };
}

function coverageSentence(r, band) {
  const covered = band.coverage;
  if (!covered) return "This band's coverage was not measured on held-out history.";
  const level = Math.round(band.level * 100);
  const where = covered.scope === "symbol" ? `${r.symbol}'s` : `the ${covered.symbols} evaluated symbols'`;
  const horizon = covered.interpolated
    ? `${covered.horizon}-day forecasts (the nearest evaluated horizon; ${r.horizon} days is interpolated)`
    : `${covered.horizon}-day forecasts`;
  return `On ${where} held-out history the ${level}% band held the price ${fmt(covered.coverage * 100, 1)}% of the time over ${covered.n} ${horizon}.`;
}

function pathLabel(reading) {
  const beats = reading && reading.path ? reading.path.beats_no_change : null;
  if (beats === true) return "central path (beat no change out of sample)";
  if (beats === false) return "central path (no better than no change)";
  return "central path";
}

function renderReading(r, band) {
  const c = r.combined;
  const last = r.data.last_close;
  const days = (n) => `${n} trading day${n === 1 ? "" : "s"}`;
  if (band) {
    const level = Math.round(band.level * 100);
    $("band-label").textContent = `${level}% band for ${band.date || `day ${band.horizon}`}, ${days(band.horizon)} after the close of ${r.data.last_bar_date}`;
    $("band-range").textContent = `${fmt(band.lower)} – ${fmt(band.upper)}`;
    const width = `${fmt(((band.upper - band.lower) / last) * 100, 1)}% of the last close ${fmt(last)} wide`;
    $("band-sigma").textContent = band.sigma === null || band.sigma === undefined
      ? `${width}; a residual band (no σ)`
      : `σ of the ${band.horizon}-day log return ${fmt(band.sigma * 100, 2)}% · ${width}`;
    $("band-coverage").textContent = coverageSentence(r, band);
  } else {
    $("band-label").textContent = "No band for this answer";
    $("band-range").textContent = "–";
    $("band-sigma").textContent = "";
    $("band-coverage").textContent = "";
  }
  const final = c.forecast[c.forecast.length - 1];
  const change = ((final / last) - 1) * 100;
  const evaluation = c.reading && c.reading.path && c.reading.path.evaluation;
  $("path-statement").textContent = [
    `The dashed line through the band is its central path, the models' weighted mean: it ends at ${fmt(final)} (${change >= 0 ? "+" : ""}${fmt(change)}%) from the last close ${fmt(last)} on ${r.data.last_bar_date}.`,
    evaluation ? evaluation.sentence : "",
  ].join(" ").trim();
}

// The zoomed panel shows as many recent closes as forecast days (at least 3), so the band
// takes half its width from 3 days on, and a quarter at 1 day.
const recentBars = (r) => Math.min(r.history.dates.length, Math.max(3, r.horizon));

// The band, zoomed: the last closes and the forecast days only, so the band fills the panel.
function drawBand(r, band) {
  const c = r.combined;
  const last = r.data.last_close;
  const lastDate = r.history.dates[r.history.dates.length - 1];
  const recent = recentBars(r);
  const hx = r.history.dates.slice(-recent);
  const xs = [lastDate, ...r.forecast_dates];
  const traces = [{ x: hx, y: r.history.close.slice(-recent), name: "close", mode: "lines+markers",
    line: { color: "#111827" }, marker: { size: 5 }, hovertemplate: "close %{y:.2f}<extra></extra>" }];
  const annotations = [];
  if (c.interval) {
    const edge = { color: "rgba(37,99,235,0.7)", width: 1 };
    traces.push({ x: xs, y: [last, ...c.interval.upper], mode: "lines", line: edge, showlegend: false,
      name: "upper", hovertemplate: "upper %{y:.2f}<extra></extra>" });
    traces.push({ x: xs, y: [last, ...c.interval.lower], mode: "lines", line: edge, fill: "tonexty",
      fillcolor: "rgba(37,99,235,0.18)", name: `${Math.round((c.interval.level || 0.8) * 100)}% band`,
      hovertemplate: "lower %{y:.2f}<extra></extra>" });
  }
  if (band) {
    const end = r.forecast_dates[r.forecast_dates.length - 1];
    for (const [y, word] of [[band.upper, "upper"], [band.lower, "lower"]]) {
      annotations.push({ x: end, y, text: `${word} ${fmt(y)}`, xanchor: "left", xshift: 6, showarrow: false,
        font: { color: "#1e40af", size: 13 } });
    }
  }
  traces.push({ x: xs, y: xs.map(() => last), mode: "lines", name: "no change",
    line: { color: "#6b7280", dash: "dot", width: 1 }, hoverinfo: "skip" });
  traces.push({ x: xs, y: [last, ...c.forecast], mode: "lines", name: pathLabel(c.reading),
    line: { color: "#1e3a8a", dash: "dash", width: 2 }, hovertemplate: "central path %{y:.2f}<extra></extra>" });
  if (c.sentiment && c.sentiment.forecast && c.sentiment.tilt !== 0) {
    traces.push({ x: xs, y: [last, ...c.sentiment.forecast], mode: "lines", name: "sentiment tilt (unevaluated)",
      line: { color: "#9333ea", dash: "dash", width: 1 }, hovertemplate: "with the tilt %{y:.2f}<extra></extra>" });
  }
  const labelWidth = Math.max(0, ...annotations.map((a) => a.text.length)) * 8;
  Plotly.react("band-chart", traces, {
    margin: { l: 50, r: 20 + labelWidth, t: 10, b: 30 }, height: 380, legend: { orientation: "h", x: 0, y: -0.12 },
    xaxis: window.DayAxis.dayAxis([...hx, ...r.forecast_dates]), yaxis: { title: "price" }, annotations,
  }, { displayModeBar: false, responsive: true });
}

// The recent closes around it, the zoomed panel's window shaded.
function drawContext(r) {
  const c = r.combined;
  const last = r.data.last_close;
  const lastDate = r.history.dates[r.history.dates.length - 1];
  const xs = [lastDate, ...r.forecast_dates];
  const traces = [{ x: r.history.dates, y: r.history.close, mode: "lines", name: "close", line: { color: "#111827", width: 1.5 } }];
  if (c.interval) {
    traces.push({ x: xs, y: [last, ...c.interval.upper], mode: "lines", line: { width: 0 }, hoverinfo: "skip" });
    traces.push({ x: xs, y: [last, ...c.interval.lower], mode: "lines", fill: "tonexty", fillcolor: "rgba(37,99,235,0.3)",
      line: { width: 0 }, name: "band" });
  }
  traces.push({ x: xs, y: [last, ...c.forecast], mode: "lines", name: "central path", line: { color: "#1e3a8a", dash: "dash", width: 1.5 } });
  const window0 = r.history.dates[r.history.dates.length - recentBars(r)];
  Plotly.react("chart", traces, {
    margin: { l: 45, r: 10, t: 10, b: 30 }, height: 380, showlegend: false,
    xaxis: window.DayAxis.dayAxis([...r.history.dates, ...r.forecast_dates]), yaxis: { title: "price" },
    shapes: [{ type: "rect", xref: "x", yref: "paper", x0: window0, x1: xs[xs.length - 1], y0: 0, y1: 1,
      fillcolor: "rgba(37,99,235,0.08)", line: { width: 0 } }],
  }, { displayModeBar: false, responsive: true });
}

function renderResult(p) {
  const r = p.result;
  $("result").hidden = false;
  $("result-title").textContent = `${r.symbol}: next ${r.horizon} trading day(s)`;
  $("track-link").href = `/track-record/?symbol=${encodeURIComponent(r.symbol)}&horizon=${r.horizon}`;
  const c = r.combined;
  const band = bandAtHorizon(r);
  renderReading(r, band);
  $("band-caption").textContent = `The band over the next ${r.horizon} trading day(s), with the last closes`;
  $("model-day").textContent = `day ${r.horizon}`;
  const parts = [
    `Prices from ${r.data.source}.`,
    p.cache_hit ? "Answered from the cache." : `Pipeline took ${fmt(r.timings.pipeline_ms, 0)} ms.`,
  ];
  parts.push(c.unsure ? `Unsure: ${c.unsure_reason}. ${c.unsure_meaning || ""}` : `Not unsure. ${c.unsure_meaning || ""}`);
  $("result-summary").textContent = parts.join(" ");
  $("band-method").textContent = c.interval ? `Band: ${c.interval.method}.` : "";
  if (window.Plotly) {
    drawBand(r, band);
    drawContext(r);
  }

  const body = $("models").tBodies[0];
  body.replaceChildren();
  for (const m of r.models) {
    const row = body.insertRow();
    cell(row, m.label || m.model);
    cell(row, fmt(m.weight), "num");
    cell(row, m.ok && m.forecast && m.forecast.length ? fmt(m.forecast[m.forecast.length - 1]) : "–", "num");
    cell(row, m.metrics ? fmt(m.metrics.mae) : "–", "num");
    cell(row, m.metrics ? fmt(m.metrics.mase) : "–", "num");
    const reg = m.registry;
    cell(row, reg ? `gen ${reg.generation}, ${reg.mode} (${fmt((m.fit_seconds || 0) * 1000, 0)} ms)` : "–");
    cell(row, [m.worker, m.queue].filter(Boolean).join(" / "));
    if (!m.ok) cell(row, m.error, "bad");
    else if (m.excluded) cell(row, `no weight: ${m.excluded}`, "muted");
    else cell(row, "ok", "ok");
  }

  const s = r.sentiment;
  const dl = $("sentiment");
  dl.replaceChildren();
  const entries = s.ok === false
    ? [["status", s.error]]
    : [["source", s.is_sample ? `${s.source} (sample data, not live posts)` : s.source],
       ["posts", s.count], ["mean compound", fmt(s.mean_compound, 3)],
       ["positive / negative", `${fmt(s.positive_share * 100, 0)}% / ${fmt(s.negative_share * 100, 0)}%`],
       ["tilt shown beside the forecast", `${fmt(c.sentiment.tilt * 100, 3)}% (bound ±${fmt(c.sentiment.max_adjust * 100, 1)}%); ${c.sentiment.meaning || ""}`]];
  if (s.fallback_reason) entries.push(["note", s.fallback_reason]);
  for (const [k, v] of entries) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    dl.append(dt, dd);
  }
}

// Live stages over the websocket (served next to the API; see live.js). `final` resolves
// when the relay reports the request done or failed.
function watch(id) {
  const live = { open: false, socket: null };
  live.final = new Promise((resolve) => {
    try {
      live.socket = new WebSocket(window.Live.url(`/ws/predictions/${id}/`));
    } catch {
      return;
    }
    live.socket.onopen = () => {
      live.open = true;
      $("progress").dataset.live = "ws";
      $("live-note").textContent = "live";
    };
    live.socket.onmessage = (event) => {
      const m = JSON.parse(event.data);
      if (m.type !== "request") return;
      renderStages(m.request.stages || [], m.request.status);
      if (m.request.status === "done" || m.request.status === "failed") resolve(m.request.status);
    };
    live.socket.onclose = () => { live.open = false; };
  });
  return live;
}

// The page draws a chart, so it asks for the recent closes (`include=history`) too.
async function getPrediction(url, wait, signal) {
  let response = await fetch(`${url}?wait=${wait}&include=history`, { headers: { Accept: "application/json" }, signal });
  if (response.status === 503 && wait > 0) {
    // Too many clients waiting on this server: come back as told, without holding a thread.
    const pause = Number(response.headers.get("Retry-After") || 1) * 1000;
    await new Promise((resolve) => setTimeout(resolve, pause));
    response = await fetch(`${url}?include=history`, { headers: { Accept: "application/json" }, signal });
  }
  const p = await response.json();
  if (!response.ok) throw new Error(p.error || `HTTP ${response.status}`);
  return p;
}

// Polling stays as the fallback: each second without a socket, a long poll with one.
async function follow(url, id) {
  const live = watch(id);
  let liveEnded = false;
  const ended = live.final.then(() => { liveEnded = true; return null; });
  try {
    for (;;) {
      const controller = new AbortController();
      const poll = getPrediction(url, live.open && !liveEnded ? 20 : 1, controller.signal);
      let p = liveEnded ? await poll : await Promise.race([poll, ended]);
      if (p === null) {
        controller.abort();
        poll.catch(() => {});
        p = await getPrediction(url, 2);
      }
      renderStages(p.stages || [], p.status);
      if (p.status === "done") return p;
      if (p.status === "failed") throw new Error(p.error || "The prediction failed.");
    }
  } finally {
    if (live.socket) live.socket.close();
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
      p = await follow(body.links.self, body.id);
    } else {
      p = { ...(await getPrediction(body.links.self, 0)), cache_hit: body.cache_hit };
    }
    renderStages(p.stages || [], p.status);
    renderResult(p);
    say(p.cache_hit ? "Done (from the cache)." : `Done in ${fmt(p.latency_ms, 0)} ms.`, "ok");
    followMarket(p.result.symbol, p.result.horizon, p.id);
  } catch (err) {
    say(err.message, "bad");
  } finally {
    button.disabled = false;
  }
}

// After an answer, the page follows its symbol: a new bar says so, and a new public
// forecast for the same horizon (the watchlist's refresh for that bar) replaces the chart.
let market = null;
function followMarket(symbol, horizon, shownId) {
  if (market) market.close();
  let shown = shownId;
  market = window.Live.keep(`/ws/symbols/${encodeURIComponent(symbol)}/`, {
    onMessage: async (m) => {
      if (m.type !== "market") return;
      const e = m.event;
      if (e.kind === "bar" && $("clock-date")) $("clock-date").textContent = e.date;
      if (e.kind === "bar") say(`New bar for ${e.symbol}: ${e.date} closed at ${fmt(e.close)}; waiting for a refreshed forecast…`);
      if (e.kind !== "forecast" || e.horizon !== horizon || e.prediction_id === shown) return;
      try {
        const p = await getPrediction(`${api}${e.prediction_id}/`, 0);
        shown = e.prediction_id;
        renderStages(p.stages || [], p.status);
        renderResult(p);
        say(`Refreshed for the bar of ${e.as_of}.`, "ok");
      } catch (err) {
        say(`A refreshed forecast could not be read: ${err.message}`, "bad");
      }
    },
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("predict-form").addEventListener("submit", predict);
});
