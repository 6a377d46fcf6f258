// The workers page: Ansible's hosts next to live Celery workers, and runs with a live log.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  let following = null; // {id, offset}

  function csrfToken() {
    const input = document.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function say(text, kind = "") {
    $("run-message").textContent = text;
    $("run-message").className = "message " + kind;
  }

  function cell(row, text, cls) {
    const td = row.insertCell();
    td.textContent = text === null || text === undefined ? "–" : String(text);
    if (cls) td.className = cls;
    return td;
  }

  function ansibleText(host) {
    if (host.provisioned) {
      const args = host.provisioned_args || {};
      return "added" + (args.queues ? ` (${args.queues.join(",")})` : "");
    }
    if (host.in_inventory) return `in inventory (${host.inventory.groups.join(", ")})`;
    return "not provisioned";
  }

  function renderHosts(state) {
    const body = $("hosts").tBodies[0];
    body.replaceChildren();
    const rows = [...state.hosts.map((h) => [h, h.alive]), ...state.other_workers.map((w) => [null, [w]])];
    for (const [host, alive] of rows) {
      const workers = alive.length ? alive : [null];
      for (const w of workers) {
        const row = body.insertRow();
        row.dataset.host = host ? host.host : "";
        cell(row, host ? host.host : "(not from Ansible)");
        cell(row, host ? ansibleText(host) : "–");
        cell(row, w ? w.hostname : "not alive", w ? "ok" : "");
        cell(row, w ? w.queues.join(", ") : host && host.inventory ? host.inventory.queues.join(", ") : "–");
        cell(row, w ? (w.gpu ? "yes" : "no") : "–");
        cell(row, w ? w.tasks_done : "–", "num");
        const last = host && host.last_run;
        cell(row, last ? `#${last.id} ${last.action} ${last.status}` : "–", last && last.status === "failed" ? "bad" : "");
      }
    }
    $("known-hosts").replaceChildren(...state.hosts.map((h) => new Option(h.host)));
    $("inventory-error").textContent = state.inventory_error || "";
  }

  function renderRuns(runs) {
    const body = $("runs").tBodies[0];
    body.replaceChildren();
    for (const run of runs) {
      const row = body.insertRow();
      const link = document.createElement("a");
      link.href = "#";
      link.textContent = `#${run.id}`;
      link.addEventListener("click", (e) => { e.preventDefault(); follow(run.id); });
      row.insertCell().append(link);
      cell(row, run.action);
      cell(row, run.host);
      cell(row, run.status, run.status === "failed" ? "bad" : run.status === "succeeded" ? "ok" : "");
      cell(row, run.changed, "num");
      cell(row, run.failed, "num");
      cell(row, run.unreachable, "num");
      cell(row, run.seconds === null ? null : run.seconds.toFixed(1), "num");
      cell(row, run.requested_by);
    }
  }

  function renderDecisions(autoscale) {
    const body = $("decisions").tBodies[0];
    body.replaceChildren();
    if (!autoscale.decisions.length) {
      cell(body.insertRow(), "No decision yet.").colSpan = 8;
    }
    for (const d of autoscale.decisions) {
      const row = body.insertRow();
      cell(row, new Date(d.at * 1000).toLocaleTimeString());
      cell(row, d.queue);
      cell(row, d.action, d.action === "failed" ? "bad" : d.action === "hold" ? "" : "ok");
      cell(row, d.worker || null);
      cell(row, `${d.wait.toFixed(2)} s`, "num");
      cell(row, d.depth, "num");
      cell(row, d.workers, "num");
      cell(row, d.reason);
    }
  }

  function render(state) {
    renderHosts(state);
    renderRuns(state.runs);
    renderDecisions(state.autoscale);
  }

  async function refresh() {
    try {
      const response = await fetch("state/", { headers: { Accept: "application/json" } });
      if (response.ok) render(await response.json());
    } catch (err) {
      /* the next tick retries */
    }
  }

  function showRun(run) {
    $("run-card").hidden = false;
    $("run-title").textContent = `#${run.id}: ${run.action} ${run.host}`;
    $("run-status").textContent = run.status;
    $("run-status").className = "badge " + (run.status === "succeeded" ? "done" : run.status);
    $("run-error").textContent = run.error || "";
  }

  function follow(id) {
    following = { id, offset: 0 };
    $("run-log").textContent = "";
    pollLog();
  }

  async function pollLog() {
    if (!following) return;
    const current = following;
    try {
      const response = await fetch(`runs/${current.id}/log/?offset=${current.offset}`);
      const body = await response.json();
      if (following !== current) return;
      if (!response.ok) { say(body.error, "bad"); following = null; return; }
      showRun(body.run);
      if (body.log) {
        const log = $("run-log");
        const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.textContent += body.log;
        if (atEnd) log.scrollTop = log.scrollHeight;
      }
      current.offset = body.offset;
      if (body.finished) {
        say(`Run #${body.run.id} ${body.run.status}.`, body.run.status === "succeeded" ? "ok" : "bad");
        $("run-submit").disabled = false;
        following = null;
        refresh();
        return;
      }
    } catch (err) {
      /* retried below */
    }
    setTimeout(pollLog, 1000);
  }

  async function submit(event) {
    event.preventDefault();
    const payload = { action: $("action").value, host: $("host").value.trim() };
    if (payload.action === "add") {
      if ($("queues").value.trim()) payload.queues = $("queues").value.trim();
      if ($("concurrency").value) payload.concurrency = Number($("concurrency").value);
    }
    $("run-submit").disabled = true;
    say("Starting…");
    try {
      const response = await fetch("runs/", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify(payload),
      });
      const body = await response.json();
      if (!response.ok) {
        say(body.error, "bad");
        $("run-submit").disabled = false;
        refresh();
        return;
      }
      say(`Run #${body.run.id} started.`);
      follow(body.run.id);
    } catch (err) {
      say("The server did not answer: " + err, "bad");
      $("run-submit").disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    render(JSON.parse($("workers-state").textContent));
    $("run-form").addEventListener("submit", submit);
    $("action").addEventListener("change", () => {
      const adding = $("action").value === "add";
      $("queues").disabled = !adding;
      $("concurrency").disabled = !adding;
    });
    const active = JSON.parse($("workers-state").textContent).runs.find((r) => r.status === "running");
    if (active) follow(active.id);
    setInterval(refresh, 3000);
  });
})();
