// The dashboard's market clock card: shows the clock and lets staff start, pause, step
// or speed up a replay (POST /api/v1/clock/, which refuses anyone who is not staff).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  function show(clock) {
    $("clock-state").textContent = clock.mode === "replay"
      ? `replay at ${clock.date}, ${clock.running ? "running" : "paused"}, ${clock.seconds_per_day} s a day`
      : "live";
    for (const button of $("clock-form").querySelectorAll("button")) button.disabled = clock.mode !== "replay";
  }

  async function send(action) {
    const body = { action };
    if (action === "step") body.days = Number($("clock-days").value);
    if (action === "speed") body.seconds_per_day = Number($("clock-speed").value);
    const token = document.querySelector("#clock-form [name=csrfmiddlewaretoken]").value;
    const response = await fetch("/api/v1/clock/", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": token },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (!response.ok) {
      $("clock-message").textContent = answer.error || `The clock refused (${response.status}).`;
      $("clock-message").className = "message bad";
      return;
    }
    $("clock-message").textContent = "";
    show(answer);
  }

  async function refresh() {
    const response = await fetch("/api/v1/clock/", { headers: { Accept: "application/json" } });
    if (response.ok) show(await response.json());
    const health = await fetch("/api/v1/model-health/", { headers: { Accept: "application/json" } });
    if (!health.ok) return;
    const body = $("demoted").tBodies[0];
    body.replaceChildren();
    for (const h of (await health.json()).models.filter((m) => m.state === "demoted")) {
      const tr = body.insertRow();
      for (const text of [h.symbol, h.model, h.since || "–", h.reason]) tr.insertCell().textContent = text;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const button of $("clock-form").querySelectorAll("button[data-action]")) {
      button.addEventListener("click", () => send(button.dataset.action).catch((e) => {
        $("clock-message").textContent = String(e);
        $("clock-message").className = "message bad";
      }));
    }
    refresh();
    setInterval(refresh, 5000);
  });
})();
