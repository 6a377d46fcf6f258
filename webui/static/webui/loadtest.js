// The browser load-test page: fire requests at a server with a fixed concurrency, keep
// every latency (exact percentiles, no rounding), draw them as they come, export CSV.
"use strict";

const $ = (id) => document.getElementById(id);
const PLOT = { displayModeBar: false, responsive: true };
let limits = {};
let run = null;

function say(text, kind = "") {
  $("lt-message").textContent = text;
  $("lt-message").className = `message ${kind}`;
}

function csrfToken() {
  const input = document.querySelector("[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

function parseMix(text) {
  const mix = [];
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const [symbol, weightText] = part.split(":").map((p) => p.trim());
    const weight = weightText === undefined ? 1 : Number(weightText);
    if (!/^\^?[A-Za-z0-9][A-Za-z0-9.=-]{0,11}$/.test(symbol || "")) throw new Error(`"${part}" is not a symbol such as AAPL or AAPL:3.`);
    if (!Number.isFinite(weight) || weight <= 0) throw new Error(`The weight in "${part}" must be a positive number.`);
    mix.push({ symbol: symbol.toUpperCase(), weight });
  }
  if (!mix.length) throw new Error("Give at least one symbol, e.g. AAPL:3, IBM:1.");
  return mix;
}

function pick(mix) {
  const total = mix.reduce((sum, m) => sum + m.weight, 0);
  let r = Math.random() * total;
  for (const m of mix) {
    r -= m.weight;
    if (r < 0) return m.symbol;
  }
  return mix[mix.length - 1].symbol;
}

function bounded(id, name, min, max) {
  const value = Number($(id).value);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be a whole number from ${min} to ${max}.`);
  return value;
}

function readConfig() {
  let url;
  try {
    url = new URL($("lt-url").value);
  } catch {
    throw new Error("The server URL must be absolute, e.g. http://127.0.0.1:8000.");
  }
  if (!["http:", "https:"].includes(url.protocol)) throw new Error("The server URL must start with http:// or https://.");
  const mode = $("lt-mode").value;
  return {
    base: url.origin + url.pathname.replace(/\/+$/, ""),
    sameOrigin: url.origin === location.origin,
    endpoint: $("lt-endpoint").value,
    mix: parseMix($("lt-mix").value),
    horizon: bounded("lt-horizon", "Days ahead", 1, limits.max_horizon),
    useCache: $("lt-cache").checked,
    concurrency: bounded("lt-concurrency", "Concurrency", 1, limits.max_concurrency),
    mode,
    count: mode === "count" ? bounded("lt-count", "Requests", 1, limits.max_requests) : limits.max_requests,
    seconds: mode === "duration" ? bounded("lt-duration", "Seconds", 1, limits.max_seconds) : limits.max_seconds,
  };
}

async function errorText(response) {
  try {
    const body = await response.json();
    return body.error || response.statusText;
  } catch {
    return response.statusText || `HTTP ${response.status}`;
  }
}

async function waitForResult(cfg, url, init) {
  const wait = Math.max(1, Math.min(30, limits.max_wait));
  for (;;) {
    const response = await fetch(`${url}?wait=${wait}`, init);
    if (response.status === 503 && response.headers.get("Retry-After")) {
      // Too many waiting clients on that server: back off as told, then ask again.
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get("Retry-After")) * 1000));
      continue;
    }
    if (!response.ok) return { response, error: await errorText(response) };
    const p = await response.json();
    if (p.status === "done") return { response, error: "" };
    if (p.status === "failed") return { response, error: p.error || "failed", failed: true };
  }
}

// One request (or submit + wait); never throws: failures are results too.
async function one(cfg, index) {
  const symbol = pick(cfg.mix);
  const init = {
    headers: { Accept: "application/json" },
    credentials: cfg.sameOrigin ? "same-origin" : "omit",
    signal: run.abort.signal,
  };
  const started = performance.now();
  let status = 0;
  let error = "";
  try {
    let response;
    if (cfg.endpoint === "symbols") {
      response = await fetch(`${cfg.base}/api/v1/symbols/`, init);
    } else if (cfg.endpoint === "list") {
      response = await fetch(`${cfg.base}/api/v1/predictions/?symbol=${encodeURIComponent(symbol)}`, init);
    } else {
      const headers = { ...init.headers, "Content-Type": "application/json" };
      if (cfg.sameOrigin) headers["X-CSRFToken"] = csrfToken();
      response = await fetch(`${cfg.base}/api/v1/predictions/`, {
        ...init, method: "POST", headers,
        body: JSON.stringify({ symbol, horizon: cfg.horizon, use_cache: cfg.useCache }),
      });
      if (cfg.endpoint === "submit-wait" && response.status === 202) {
        const accepted = await response.json();
        const url = new URL(accepted.links.self, cfg.base || window.location.origin).href;
        const outcome = await waitForResult(cfg, url, init);
        response = outcome.response;
        error = outcome.error;
        status = outcome.failed ? "failed" : response.status;
      }
    }
    status = status || response.status;
    if (!response.ok && !error) error = await errorText(response);
    else if (!response.bodyUsed) await response.arrayBuffer();
  } catch (exc) {
    if (exc.name === "AbortError") return null;
    error = `network error: ${exc.message}`;
  }
  const latency = performance.now() - started;
  return {
    index, symbol, status, ok: !error,
    start_ms: +(started - run.t0).toFixed(2), latency_ms: +latency.toFixed(2), error,
  };
}

function percentile(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1];
}

const ms = (x) => (x == null ? "–" : `${x.toFixed(1)} ms`);

function summarize() {
  const results = run.results;
  const ok = results.filter((r) => r.ok);
  const sorted = ok.map((r) => r.latency_ms).sort((a, b) => a - b);
  const end = run.t1 || performance.now();
  const seconds = Math.max((end - run.t0) / 1000, 1e-3);
  return {
    count: results.length, ok: ok.length, errors: results.length - ok.length,
    p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99),
    mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null,
    max: sorted.length ? sorted[sorted.length - 1] : null,
    seconds, throughput: results.length / seconds,
  };
}

function draw() {
  if (!run) return;
  const s = summarize();
  const summary = $("lt-summary");
  const phase = run.t1 ? "done" : "running";
  summary.dataset.state = phase;
  summary.dataset.count = String(s.count);
  summary.textContent =
    `${s.count} requests · ${s.ok} ok · ${s.errors} errors · p50 ${ms(s.p50)} · p95 ${ms(s.p95)} · ` +
    `p99 ${ms(s.p99)} · mean ${ms(s.mean)} · max ${ms(s.max)} · ` +
    `${s.throughput.toFixed(1)} req/s over ${s.seconds.toFixed(2)} s at concurrency ${run.cfg.concurrency}`;
  $("lt-state").textContent = phase;
  $("lt-state").className = `badge ${phase === "done" ? "done" : "running"}`;

  const codes = new Map();
  for (const r of run.results) codes.set(r.status || "network", (codes.get(r.status || "network") || 0) + 1);
  const body = $("lt-codes").tBodies[0];
  body.replaceChildren();
  for (const [code, count] of [...codes].sort()) {
    const row = body.insertRow();
    row.insertCell().textContent = String(code);
    row.insertCell().textContent = String(count);
  }
  if (!window.Plotly) return;
  const good = run.results.filter((r) => r.ok);
  const bad = run.results.filter((r) => !r.ok);
  const point = (list, name, color) => ({
    type: "scatter", mode: "markers", name, marker: { color, size: 5 },
    x: list.map((r) => r.start_ms / 1000), y: list.map((r) => r.latency_ms),
    text: list.map((r) => `${r.symbol} ${r.status} ${r.error}`),
    hovertemplate: "%{text}<br>%{y:.1f} ms at %{x:.2f} s<extra></extra>",
  });
  Plotly.react("lt-scatter", [point(good, "ok", "#2563eb"), point(bad, "error", "#dc2626")], {
    margin: { l: 55, r: 10, t: 10, b: 40 }, height: 260, legend: { orientation: "h", y: 1.15 },
    xaxis: { title: "s since start" }, yaxis: { title: "ms", rangemode: "tozero" },
  }, PLOT);
  Plotly.react("lt-hist", [{ type: "histogram", x: good.map((r) => r.latency_ms), nbinsx: 40, marker: { color: "#2563eb" } }], {
    margin: { l: 55, r: 10, t: 10, b: 40 }, height: 260, xaxis: { title: "ms" }, yaxis: { title: "requests" },
  }, PLOT);
}

async function start() {
  let cfg;
  try {
    cfg = readConfig();
  } catch (exc) {
    say(exc.message, "bad");
    return;
  }
  say(cfg.sameOrigin ? "" : "Another origin: it must allow this page through CORS, or every request fails.");
  run = { cfg, results: [], issued: 0, t0: performance.now(), t1: null, abort: new AbortController(), stopping: false };
  const deadline = run.t0 + cfg.seconds * 1000;
  const more = () => !run.stopping && run.issued < cfg.count && performance.now() < deadline;
  $("lt-start").disabled = true;
  $("lt-stop").disabled = false;
  $("lt-export").disabled = true;
  const timer = setInterval(draw, 300);
  const lane = async () => {
    while (more()) {
      run.issued += 1;
      const result = await one(cfg, run.issued - 1);
      if (result) run.results.push(result);
    }
  };
  await Promise.all(Array.from({ length: cfg.concurrency }, lane));
  run.t1 = performance.now();
  clearInterval(timer);
  draw();
  $("lt-start").disabled = false;
  $("lt-stop").disabled = true;
  $("lt-export").disabled = run.results.length === 0;
  if (!$("lt-message").textContent) say("Finished.", "ok");
}

function stop() {
  if (!run) return;
  run.stopping = true;
  run.abort.abort();
}

function exportCsv() {
  if (!run) return;
  const quote = (v) => `"${String(v).replaceAll('"', '""')}"`;
  const lines = ["index,symbol,start_ms,latency_ms,status,ok,error"];
  for (const r of run.results) {
    lines.push([r.index, r.symbol, r.start_ms, r.latency_ms, r.status, r.ok, quote(r.error)].join(","));
  }
  const blob = new Blob([lines.join("\n") + "\n"], { type: "text/csv" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = `loadtest-${new Date().toISOString().replaceAll(":", "-")}.csv`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  limits = JSON.parse($("lt-limits").textContent);
  $("lt-url").value = location.origin;
  $("lt-start").addEventListener("click", start);
  $("lt-stop").addEventListener("click", stop);
  $("lt-export").addEventListener("click", exportCsv);
  $("lt-form").addEventListener("submit", (event) => { event.preventDefault(); start(); });
});
