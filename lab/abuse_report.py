"""`make -C lab abuse`'s figures and verdicts, computed from what each phase measured.

Pure functions over the phases' results (dicts, as results.json keeps them), so the
verdicts can be tested without a stack: rows per hour from two table counts, the
well-behaved clients' figures, and the table of goals with met / not met per phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadtests.report import fmt, table, verdict

MAX_P95_RATIO = 2.0  # the abused phase's p95 against the quiet phase's
MIN_ANSWERS = 60  # per client and phase: fewer, and the p95 is the slowest one or two
WATCHLIST_MIN_SHARE = 0.5  # refreshes in the abused phase against the quiet phase's
MIB = 1024 * 1024
REQUESTS_TABLE = "predictions_predictionrequest"  # PredictionRequest's table


def rows_per_hour(
    before: Mapping[str, int], after: Mapping[str, int], seconds: float
) -> dict[str, float]:
    """Each table's row growth between two counts, scaled to an hour. A table that
    appeared in between grew from 0; one that vanished counts its loss."""
    if seconds <= 0:
        raise ValueError("the counts must be taken some time apart")
    names = sorted(set(before) | set(after))
    return {name: (after.get(name, 0) - before.get(name, 0)) * 3600.0 / seconds for name in names}


def http_5xx(statuses: Mapping[str, int]) -> int:
    """Answers in the 500s among the outcomes' statuses ("http 503", "503", "500"...)."""
    count = 0
    for status, n in statuses.items():
        code = status.removeprefix("http ").strip()
        if code.isdigit() and 500 <= int(code) <= 599:
            count += n
    return count


def ratio(abused: float | None, quiet: float | None) -> float | None:
    return abused / quiet if abused is not None and quiet else None


def within_bound(redis: Mapping[str, Any]) -> bool:
    """Met only with a bound (maxmemory) that the peak stayed under: no bound is a miss."""
    bound, peak = redis.get("maxmemory", 0), redis.get("peak_used", 0)
    return bool(bound) and peak <= bound


def memory_cell(redis: Mapping[str, Any] | None) -> str:
    if not redis:
        return "–"
    bound = redis.get("maxmemory", 0)
    limit = f"{bound / MIB:,.0f} MiB ({redis.get('policy', '?')})" if bound else "no maxmemory"
    guarded = ", the writer held at the benchmark's guard" if redis.get("guard_hit") else ""
    return f"{redis.get('peak_used', 0) / MIB:,.1f} MiB of {limit}{guarded}"


def answered_cell(client: Mapping[str, Any]) -> str:
    return f"{client['answered']} / {client['expected']}"


def latency_cell(client: Mapping[str, Any]) -> str:
    return f"{fmt(client.get('p50_ms'), 0)} / {fmt(client.get('p95_ms'), 0)}"


def all_arrived(client: Mapping[str, Any]) -> bool:
    return bool(client["expected"]) and client["answered"] == client["expected"]


def arrival_verdict(client: Mapping[str, Any]) -> str:
    return "– (none started)" if not client["expected"] else verdict(all_arrived(client))


def p95_ratio_cells(quiet: Mapping[str, Any], abused: Mapping[str, Any]) -> tuple[str, str]:
    """The abused phase's p95 against the quiet one's, and its verdict: a p95 over only
    some of the answers (the others never came) is no pass."""
    value = ratio(abused.get("p95_ms"), quiet.get("p95_ms"))
    cell = f"{fmt(value, 2)}×"
    partial = not all_arrived(abused) or not all_arrived(quiet)
    if partial:
        cell += f" (of {abused['answered']} and {quiet['answered']} answered)"
    return cell, verdict(value is not None and value <= MAX_P95_RATIO and not partial)


def client_rows(
    label: str, quiet: Mapping[str, Any], abused: Mapping[str, Any], *, http: bool
) -> list[list[str]]:
    """A well-behaved client's answers, failures (5xx over HTTP, else answers other than
    done) and latencies in each phase."""
    if http:
        failed_label, fq, fa = (
            "5xx answers",
            http_5xx(quiet["statuses"]),
            http_5xx(abused["statuses"]),
        )
    else:
        failed_label, fq, fa = (
            "answers not done (failed, refused, none)",
            quiet["not_done"],
            abused["not_done"],
        )
    cell, met = p95_ratio_cells(quiet, abused)
    enough = [verdict(c["answered"] >= MIN_ANSWERS) for c in (quiet, abused)]
    rq, ra = quiet.get("admission_refusals", 0), abused.get("admission_refusals", 0)
    how = "POST 429/503" if http else "answered refused"
    refusals = [[f"{label}: refused at admission ({how}, asked again)", str(rq), str(ra), "0",
                 verdict(rq == 0), verdict(ra == 0)]]  # fmt: skip
    if http:
        wq, wa = quiet.get("wait_refusals", 0), abused.get("wait_refusals", 0)
        refusals.append([f"{label}: ?wait= polls refused (429/503, polled again)", str(wq),
                         str(wa), "", "", ""])  # fmt: skip
    return [
        [f"{label}: answers arrived", answered_cell(quiet), answered_cell(abused), "all",
         arrival_verdict(quiet), arrival_verdict(abused)],
        [f"{label}: answers, enough for a p95", str(quiet["answered"]),
         str(abused["answered"]), f"≥ {MIN_ANSWERS}", *enough],
        *refusals,
        [f"{label}: {failed_label}", str(fq), str(fa), "0", verdict(fq == 0), verdict(fa == 0)],
        [f"{label}: p50 / p95 ms (exact, raw latencies)", latency_cell(quiet),
         latency_cell(abused), "", "", ""],
        [f"{label}: p95 abused / quiet", "1", cell, f"≤ {MAX_P95_RATIO:g}×", "", met],
    ]  # fmt: skip


def watchlist_rows(quiet: Mapping[str, Any], abused: Mapping[str, Any]) -> list[list[str]]:
    """Whether the watchlist goes on: its refreshes end, and as many start as when quiet."""
    wq, wa = quiet["watchlist"], abused["watchlist"]
    share = ratio(float(wa["answered"]), float(wq["answered"]))
    share_verdict = (
        "– (none in the quiet phase)"
        if not wq["answered"]
        else verdict(share is not None and share >= WATCHLIST_MIN_SHARE)
    )
    hits_q, hits_a = quiet["rest"].get("watched_hits", ""), abused["rest"].get("watched_hits", "")
    return [
        ["watchlist: refreshes finished / started in the window", answered_cell(wq),
         answered_cell(wa), "all", arrival_verdict(wq), arrival_verdict(wa)],
        ["watchlist: refreshes abused / quiet", "1", fmt(share, 2),
         f"≥ {WATCHLIST_MIN_SHARE:g}", "", share_verdict],
        ["watchlist: p50 / p95 ms, started → finished", latency_cell(wq), latency_cell(wa),
         "", "", ""],
        ["REST client's watched questions answered from the cache", str(hits_q), str(hits_a),
         "", "", ""],
    ]  # fmt: skip


def redis_rows(quiet: Mapping[str, Any], abused: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name in sorted(set(quiet["redis"]) | set(abused["redis"])):
        rq, ra = quiet["redis"].get(name), abused["redis"].get(name)
        rows.append([
            f"{name} Redis: used_memory peak", memory_cell(rq), memory_cell(ra),
            "≤ its maxmemory", verdict(bool(rq) and within_bound(rq)),
            verdict(bool(ra) and within_bound(ra)),
        ])  # fmt: skip
    lq, la = quiet["logs"]["oom_lines"], abused["logs"]["oom_lines"]
    rows.append([
        "service log lines naming Redis's memory limit (OOM, maxmemory)", str(lq), str(la), "0",
        verdict(lq == 0), verdict(la == 0),
    ])  # fmt: skip
    return rows


def database_rows(quiet: Mapping[str, Any], abused: Mapping[str, Any]) -> list[list[str]]:
    gq = quiet["rows"]["per_hour"].get(REQUESTS_TABLE)
    ga = abused["rows"]["per_hour"].get(REQUESTS_TABLE)
    tq = sum(quiet["rows"]["per_hour"].values())
    ta = sum(abused["rows"]["per_hour"].values())
    return [
        ["database: PredictionRequest rows per hour", fmt(gq), fmt(ga), "stated", "", ""],
        ["database: rows per hour, every table", fmt(tq), fmt(ta), "stated", "", ""],
    ]


def verdict_rows(quiet: Mapping[str, Any], abused: Mapping[str, Any]) -> list[list[str]]:
    """One row per figure: figure, quiet, abused, goal, verdict quiet, verdict abused."""
    return [
        *client_rows("REST client (token)", quiet["rest"], abused["rest"], http=True),
        *client_rows("stream client", quiet["queue"], abused["queue"], http=False),
        *watchlist_rows(quiet, abused),
        *redis_rows(quiet, abused),
        *database_rows(quiet, abused),
    ]


def growth_rows(phases: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Each table that grew in some phase: its rows per hour in each."""
    names = sorted(
        {n for phase in phases for n, v in phase["rows"]["per_hour"].items() if v},
        key=lambda n: -max(abs(p["rows"]["per_hour"].get(n, 0.0)) for p in phases),
    )
    return [[name, *(fmt(p["rows"]["per_hour"].get(name, 0.0)) for p in phases)] for name in names]


def abuser_lines(abused: Mapping[str, Any]) -> list[str]:
    """What the abusers did and what the service told them."""
    lines = []
    flood = abused.get("abusers", {}).get("flood")
    if flood:
        errors = ", ".join(f"{k} {v:,}" for k, v in sorted(flood["errors"].items())) or "none"
        cap = f"at most {flood['mib_s_cap']:g} MiB/s" if flood["mib_s_cap"] else "no rate cap"
        lines.append(
            f"* flood ({flood['entry_bytes']:,}-byte entries, {cap}"
            f"): {flood['written']:,} entries written ({flood['written_bytes'] / MIB:,.0f} MiB), "
            f"{flood['junk_written']:,} of them to a key beside its streams; refused: {errors}"
            + ("; held at the benchmark's memory guard" if flood.get("guard_hit") else "")
        )
    hoard = abused.get("abusers", {}).get("hoarder")
    if hoard:
        errors = ", ".join(f"{k} {v:,}" for k, v in sorted(hoard["errors"].items())) or "none"
        lines.append(
            f"* hoarder: {hoard['groups_created']:,} of {hoard['groups_asked']:,} consumer groups "
            f"created on its output stream, {hoard['questions']:,} questions, "
            f"{hoard['read_unacked']:,} answers read and never acknowledged; refused: {errors}"
        )
    for name, statuses in sorted(abused.get("anonymous", {}).items()):
        shown = ", ".join(f"{code}: {n:,}" for code, n in sorted(statuses.items()))
        label = name if name.startswith("anonymous") else f"anonymous {name}"
        lines.append(f"* {label}: {shown}")
    sockets = abused.get("abusers", {}).get("websockets")
    if sockets and "crashed" not in sockets:
        shown = ", ".join(f"{k}: {v:,}" for k, v in sorted(sockets["outcomes"].items()))
        lines.append(
            f"* websockets ({sockets['addresses']} /64s as X-Forwarded-For): "
            f"{sockets['asked']:,} asked, {sockets['accepted']:,} accepted, "
            f"{sockets['held_to_the_end']:,} held to the end, {sockets['messages']:,} "
            f"messages read; {shown or 'no outcome'}"
        )
    for name, what in sorted(abused.get("abusers", {}).items()):
        if isinstance(what, dict) and "crashed" in what:
            lines.append(f"* {name}: crashed ({what['crashed']})")
    return lines


def cpu_rows(phases: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Each CPU-quota group's use over each phase's window: cores on average, and the
    share of periods in which it ran out of its quota."""
    names = sorted({n for phase in phases for n in phase.get("cpu_groups", {})})
    rows = []
    for name in names:
        cells = []
        for phase in phases:
            used = phase.get("cpu_groups", {}).get(name)
            cells.append(
                "–" if not used
                else f"{used['cores']:.2f} cores, throttled in {used['throttled_share']:.0%}"
            )  # fmt: skip
        rows.append([f"{name}", *cells])
    return rows


def report(results: Mapping[str, Any]) -> str:
    quiet, abused = results["phases"]["quiet"], results["phases"]["abused"]
    header = ["figure", "quiet", "abused", "goal", "quiet", "abused"]
    lines = [
        f"# `make -C lab abuse`, {results['date']}",
        "",
        f"Command: `{results['command']}`; the stack: `{results['root']}` "
        f"({results['commit']}). Machine: {results['machine']['cores']} cores, "
        f"{results['machine']['cpu']}; load average before {results['machine']['load_average']}"
        f", after {results['machine_after']['load_average']}. Each phase a fresh `make run` "
        f"stack ({', '.join(f'{k}={v}' for k, v in results['settings'].items())}), "
        f"{quiet['window_s']:.0f} s and {abused['window_s']:.0f} s of load.",
        "",
        table(header, verdict_rows(quiet, abused)),
        "What the abusers did (abused phase):",
        "",
        *abuser_lines(abused),
        "",
        "CPU of the clients' quota groups over each window (the service keeps the rest):",
        "",
        table(["group", "quiet", "abused"], cpu_rows([quiet, abused])),
        "Rows per hour by table (from the counts at the start and the end of each window):",
        "",
        table(["table", "quiet", "abused"], growth_rows([quiet, abused])),
    ]
    notes = results.get("notes") or []
    if notes:
        lines += ["Notes:", "", *(f"* {note}" for note in notes), ""]
    return "\n".join(lines)
