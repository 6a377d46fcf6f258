// Date axes in days for Plotly charts of daily prices. With a few dates (one scored
// forecast, a 1-day horizon) Plotly's automatic ticks fall on hours, or on milliseconds for
// a single point; a daily series has no time of day to show. A short span gets one tick a
// trading day; the range is padded to at least a week (two charts given the same dates
// share it); weekends are left out.
"use strict";

(function () {
  const DAY_MS = 86400000;
  const SHORT_SPAN_DAYS = 7; // beyond a week Plotly's own ticks are days or longer
  const iso = (ms) => new Date(ms).toISOString().slice(0, 10);

  function dayAxis(dates, options = {}) {
    const days = [...new Set((dates || []).filter(Boolean).map((d) => String(d).slice(0, 10)))].sort();
    const axis = {
      type: "date",
      hoverformat: "%a %Y-%m-%d",
      rangebreaks: [{ bounds: ["sat", "mon"] }],
      ...options,
    };
    if (!days.length) return axis;
    const first = Date.parse(days[0]);
    const last = Date.parse(days[days.length - 1]);
    const span = (last - first) / DAY_MS;
    const pad = Math.max(1, Math.ceil((7 - span) / 2));
    axis.range = [iso(first - pad * DAY_MS), iso(last + pad * DAY_MS)];
    if (span <= SHORT_SPAN_DAYS) {
      axis.dtick = DAY_MS;
      axis.tickformat = "%b %-d";
    }
    return axis;
  }

  window.DayAxis = { dayAxis, DAY_MS };
})();
