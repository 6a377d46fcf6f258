// Finds the websocket server by itself and keeps a socket open.
// The server renders {"websocket_url", "ws_port"} into #live-config: an empty URL means
// "same host as this page, port ws_port" (make run), "/" means same origin (a proxy
// routes /ws/ to the ASGI server), else an absolute ws:// or wss:// base.
"use strict";

window.Live = (() => {
  function config() {
    const el = document.getElementById("live-config");
    return el ? JSON.parse(el.textContent) : {};
  }

  function url(path) {
    const c = config();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    let base = c.websocket_url || "";
    if (!base) base = `${scheme}://${location.hostname}:${c.ws_port}`;
    else if (base.startsWith("/")) base = `${scheme}://${location.host}${base}`;
    return base.replace(/\/+$/, "") + path;
  }

  // A socket that reconnects with backoff (0.5 s doubling to 5 s) until close() is called.
  // onState receives "connecting", "live" or "reconnecting".
  function keep(path, { onMessage, onState = () => {}, onOpen = () => {} }) {
    let socket = null;
    let stopped = false;
    let delay = 500;
    function open() {
      onState(socket ? "reconnecting" : "connecting");
      socket = new WebSocket(url(path));
      socket.onopen = () => { delay = 500; onState("live"); onOpen(socket); };
      socket.onmessage = (event) => onMessage(JSON.parse(event.data));
      socket.onclose = () => {
        if (stopped) return;
        onState("reconnecting");
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 5000);
      };
    }
    open();
    return { close() { stopped = true; if (socket) socket.close(); } };
  }

  return { url, keep };
})();
