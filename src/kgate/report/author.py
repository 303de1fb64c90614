"""The author's report (`kgate report`): the output contract of an experiment, as Markdown
and as one self-contained HTML page with inline SVG plots. It renders records; it decides
nothing (the verdict on the page came from `kgate verdict`)."""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from kgate.record import ladder
from kgate.record.experiment import Experiment, resolved_ledger
from kgate.record.experiment import leads as experiment_leads
from kgate.record.lint import ADVISORY, Facts, Finding
from kgate.record.page import LEDGER_COLUMNS, Ledger, Page

_SPEEDUP_CELL = re.compile(r"^([0-9.]+)x \[([0-9.]+), ([0-9.]+|inf)\]")  # inf: too few sessions to bound it
_PREDICTED = re.compile(r"predict\s+(?:p50\s+)?([0-9]*\.?[0-9]+)x", re.IGNORECASE)


@dataclass(frozen=True)
class SpeedupPoint:
    candidate: str
    estimate: float
    low: float
    high: float
    interpreted: bool
    predicted: float | None


@dataclass(frozen=True)
class AuthorReport:
    tag: str
    status: str
    verdict: str | None
    ledger: Ledger
    final: dict[str, str] | None  # candidate, sha, path, mechanism
    escalations: tuple[str, ...]
    blockers: tuple[str, ...]
    compliance: str
    findings: tuple[Finding, ...]
    points: tuple[SpeedupPoint, ...]
    verdict_section: str | None
    samples: dict[str, list[float]] | None  # the final verify's timing samples per leg, ms
    verify_interpreted: bool | None
    leads: tuple[str, ...] = ()  # ideas noticed and not pursued: the seeds of the next experiment

    def to_json(self) -> dict[str, Any]:
        """What `kgate report --json` prints: the same facts as the Markdown, as data."""
        return {
            "experiment": self.tag, "experiment_status": self.status, "verdict": self.verdict,
            "ledger": {"loaded": list(self.ledger.loaded) if self.ledger.loaded is not None else None,
                       "rows": [r.to_json() for r in self.ledger.rows]},
            "final": self.final, "escalations": list(self.escalations), "blockers": list(self.blockers),
            "compliance": self.compliance, "findings": [f.to_json() for f in self.findings],
            "speedups": [asdict(p) for p in self.points], "verdict_section": self.verdict_section,
            "samples_ms": self.samples, "verify_interpreted": self.verify_interpreted, "leads": list(self.leads),
        }


def _predictions(page: Page) -> dict[str, float]:
    out = {}
    for entry in page.plan:
        if m := _PREDICTED.search(entry.text):
            out[entry.cand] = float(m.group(1))
    return out


def build(ex: Experiment, page: Page, facts: Facts, findings: list[Finding]) -> AuthorReport:
    ledger = resolved_ledger(ex, page.ledger, ex.branch)
    predicted = _predictions(page)
    ran = [r for r in ledger.rows if r.sha != "—"]
    final = None
    if ran:
        last = ran[-1]
        final = {"candidate": last.candidate, "sha": last.sha, "path": ex.family.target.as_posix(),
                 "mechanism": page.section("Mechanism") or "(no Mechanism paragraph)"}
    escalations = []
    if pivot := page.section("Pivot"):
        escalations.append("pivot: " + " ".join(pivot.split()))
    for entry in page.plan:
        if "— extension: " in entry.text:
            escalations.append(f"extension {entry.cand}: {entry.text.split('— extension: ', 1)[1]}")
    for row in ledger.rows:
        if row.why.startswith("abandoned: "):
            escalations.append(f"abandoned {row.candidate}: {row.why.removeprefix('abandoned: ')}")
        if m := ladder.MARK.search(row.why):
            escalations.append(f"escalation {row.candidate}: {m['src']}→{m['dst']}: {m['reason']}")
    points, blockers = [], []
    for entry in page.plan:
        if entry.state == "open":
            blockers.append(f"not reached: {entry.line()}")
        elif entry.state == "closed":
            blockers.append(f"closed by the pivot: {entry.line()}")
    for row in ran:
        m = _SPEEDUP_CELL.match(row.vs_naive)
        interpreted = "(interpreted)" in row.p50_ms
        if row.parity.startswith("FAIL"):
            blockers.append(f"{row.candidate} failed parity ({row.parity}): its prediction was not tested")
        pred = predicted.get(row.candidate)
        if not m and pred is not None and interpreted:
            blockers.append(f"{row.candidate}: predicted {pred:g}x; not timed, because its kernel runs in an "
                            "interpreter here, so the prediction was not tested: time it on the device")
        if m:
            est, low, high = (float(g) for g in m.groups())
            points.append(SpeedupPoint(row.candidate, est, low, high, interpreted, pred))
            if pred is not None and interpreted:  # a device prediction is never weighed against an interpreter
                blockers.append(f"{row.candidate}: predicted {pred:g}x; its timings are interpreter timings "
                                f"({est:.3f}x), so the prediction was not tested: time it on the device")
            elif pred is not None and not (low <= pred <= high):
                where = "below" if high < pred else "above"
                blockers.append(f"{row.candidate}: predicted {pred:g}x, measured {est:.3f}x [{low:.3f}, {high:.3f}]"
                                f": the whole interval is {where} the prediction")
    blocked = page.front.get("blocked")
    if page.front.get("verdict") == "blocked" and isinstance(blocked, dict):
        blockers.insert(0, f"filed blocked ({blocked.get('reason')}): the transcript is {blocked.get('transcript')} "
                           f"(sha256 {str(blocked.get('sha256'))[:12]}...); no result")
    samples, verify_interpreted = None, None
    if facts.verdict_receipt:
        try:
            data = json.loads(facts.verdict_receipt)
            legs = data["gates"]["timing"]["samples_ms"]
            samples = {leg: [float(x) for rnd in legs[leg] for x in rnd] for leg in ("reference", "candidate")}
            verify_interpreted = bool(data.get("interpreted", True))
        except (KeyError, TypeError, ValueError):
            samples = None
    return AuthorReport(
        tag=ex.tag(), status=str(page.front.get("status")), verdict=page.front.get("verdict"), ledger=ledger, final=final,
        escalations=tuple(escalations), blockers=tuple(blockers), compliance=_compliance(page, findings),
        findings=tuple(findings), points=tuple(points), verdict_section=page.section("Verdict"), samples=samples,
        verify_interpreted=verify_interpreted, leads=tuple(experiment_leads(page)),
    )


def _compliance(page: Page, findings: list[Finding]) -> str:
    activity = page.front.get("activity", "?")
    codes = {f.code for f in findings if f.consequence != ADVISORY}
    checks = [
        ("pre-registered before any candidate", "L05"),
        ("reference untouched (sha256 as pinned)", "L08"),
        ("changes confined to the work dir", "L09"),
        ("pre-registration unedited", "L07"),
    ]
    listed = page.front.get("no_peek") or []
    if listed:  # from the check kgate cand and kgate lint ran, never typed
        checks.append((f"no-peek list ({', '.join(map(str, listed))}) not read by any candidate", "L14"))
    parts = [f"{text}: {'NO (' + code + ')' if code in codes else 'yes'}" for text, code in checks]
    return f"activity {activity}: " + "; ".join(parts)


# -- Markdown -----------------------------------------------------------------------------


def to_markdown(r: AuthorReport) -> str:
    lines = [f"# {r.tag}: author's report", "",
             f"status: {r.status}" + (f", verdict: **{r.verdict}** (from `kgate verdict`)" if r.verdict else ""), "",
             "## Candidate ledger", "", *r.ledger.lines(), ""]
    if r.ledger.loaded is None:
        lines[-1:-1] = ["(no `loaded: [...]` attestation)"]
    lines += ["## Final candidate", ""]
    if r.final:
        lines += [f"- {r.final['candidate']} at `{r.final['path']}`, commit `{r.final['sha']}`", "",
                  "Mechanism (from the stub):", "", r.final["mechanism"], ""]
    else:
        lines += ["none: no candidate ran", ""]
    lines += ["## Escalations and pivots", "", *(f"- {e}" for e in r.escalations or ("none",)), ""]
    lines += ["## Honest blockers", "", *(f"- {b}" for b in r.blockers or ("none",)), ""]
    lines += ["## Leads (seeds of the next experiment)", "", *(f"- {lead}" for lead in r.leads or ("none",)), ""]
    lines += ["## Compliance", "", r.compliance, ""]
    if r.findings:
        lines += ["Lint findings:", "", *(f"- {f.code} [{f.consequence}] {f.title}: {f.evidence}" for f in r.findings), ""]
    if r.verdict_section:
        lines += ["## Verdict", "", r.verdict_section, ""]
    return "\n".join(lines)


# -- HTML ---------------------------------------------------------------------------------

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #bbb; padding: 3px 6px; }
th { background: #eee; } code { background: #f4f4f4; padding: 0 3px; } .verdict { font-weight: bold; }
figure { margin: 1em 0; } figcaption { font-size: 13px; color: #555; } pre { white-space: pre-wrap; }
"""


def speedup_svg(points: tuple[SpeedupPoint, ...]) -> str:
    if not points:
        return "<p>no candidate was timed</p>"
    row_h, right = 28, 30
    left = max(90, 7 * max(len(p.candidate) for p in points) + 12)  # room for the longest label
    width = left + 550
    height = 40 + row_h * len(points)
    values = [v for p in points for v in (p.estimate, p.low, p.high, 1.0, *(x for x in (p.predicted,) if x is not None))
              if math.isfinite(v) and v > 0]
    lo, hi = min(values) * 0.9, max(values) * 1.1

    def x(v: float, edge: float | None = None) -> float:  # an open or unknown end (inf, NaN): the plot's edge
        v = (edge if edge is not None else lo) if math.isnan(v) else min(max(v, lo), hi)
        return left + (v - lo) / (hi - lo) * (width - left - right)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" data-plot="speedup" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="speedup per candidate">',
             f'<line x1="{x(1.0):.1f}" y1="10" x2="{x(1.0):.1f}" y2="{height - 20}" stroke="#888" stroke-dasharray="4 3"/>',
             *(f'<text x="{x(t):.1f}" y="{height - 5}" font-size="11" text-anchor="middle">{t:g}x</text>'
               for t in ticks(lo, hi))]
    for i, p in enumerate(points):
        y = 25 + i * row_h
        color = "#b36b00" if p.interpreted else "#1f5fa8"
        parts += [f'<text x="5" y="{y + 4}" font-size="12">{html.escape(p.candidate)}</text>',
                  f'<line data-candidate="{html.escape(p.candidate)}" x1="{x(p.low, lo):.1f}" y1="{y}" '
                  f'x2="{x(p.high, hi):.1f}" y2="{y}" stroke="{color}" stroke-width="2"/>']
        if math.isfinite(p.estimate):
            parts.append(f'<circle cx="{x(p.estimate):.1f}" cy="{y}" r="4" fill="{color}"/>')
        if p.predicted is not None:
            parts.append(f'<path d="M{x(p.predicted):.1f} {y - 7} l4 -6 h-8 z" fill="#444"><title>predicted '
                         f'{p.predicted:g}x</title></path>')
    parts.append("</svg>")
    return "".join(parts)


def ticks(lo: float, hi: float) -> list[float]:
    """A few round values between lo and hi (1, 2 or 5 times a power of ten apart)."""
    import math

    raw = (hi - lo) / 4
    step = min((m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw))
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step) + 1)]


def _distribution_svg(samples: dict[str, list[float]] | None) -> str:
    if not samples or not all(samples.values()):
        return "<p>no verification receipt yet: the timing distributions appear once the experiment is filed</p>"
    width, height, left, bottom, bins = 640, 220, 40, 30, 40
    import math

    # log-spaced bins: timing distributions are skewed, and a few slow calls would squash the rest
    everything = [v for v in samples["reference"] + samples["candidate"] if v > 0]
    lo, hi = math.log(min(everything)), math.log(max(everything))
    span = (hi - lo) or 1.0
    counts = {leg: [0] * bins for leg in samples}
    for leg, values in samples.items():
        for v in values:
            if v > 0:
                counts[leg][min(int((math.log(v) - lo) / span * bins), bins - 1)] += 1
    top = max(max(c) for c in counts.values())
    bw = (width - left - 10) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" data-plot="timings" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="timing distributions">']
    for leg, color in (("reference", "#888888"), ("candidate", "#1f5fa8")):
        for b, count in enumerate(counts[leg]):
            if count:
                h = count / top * (height - bottom - 10)
                parts.append(f'<rect data-leg="{leg}" x="{left + b * bw:.1f}" y="{height - bottom - h:.1f}" '
                             f'width="{bw * 0.9:.1f}" height="{h:.1f}" fill="{color}" fill-opacity="0.6"/>')
    parts += [f'<text x="{left}" y="{height - 8}" font-size="11">{math.exp(lo):.3g} ms</text>',
              f'<text x="{(left + width) / 2:.0f}" y="{height - 8}" font-size="11" text-anchor="middle">per-call time '
              '(log scale)</text>',
              f'<text x="{width - 10}" y="{height - 8}" font-size="11" text-anchor="end">{math.exp(hi):.3g} ms</text>',
              f'<text x="{left + 5}" y="14" font-size="11" fill="#888">reference (n={len(samples["reference"])})</text>',
              f'<text x="{left + 5}" y="28" font-size="11" fill="#1f5fa8">candidate (n={len(samples["candidate"])})</text>',
              "</svg>"]
    return "".join(parts)


def _table(ledger: Ledger) -> str:
    if not ledger.rows:
        return "<p>no candidates</p>"
    out = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in LEDGER_COLUMNS), "</tr>"]
    for row in ledger.rows:
        out += ["<tr>", *(f"<td>{html.escape(c)}</td>" for c in row.cells), "</tr>"]
    out.append("</table>")
    return "".join(out)


def to_html(r: AuthorReport) -> str:
    e = html.escape
    loaded = f"loaded: [{', '.join(r.ledger.loaded)}]" if r.ledger.loaded is not None else "(no loaded: attestation)"
    verdict = f'<p class="verdict">verdict: {e(r.verdict)}</p>' if r.verdict else f"<p>status: {e(r.status)}</p>"
    final = (f"<p>{e(r.final['candidate'])} at <code>{e(r.final['path'])}</code>, commit <code>{e(r.final['sha'])}</code></p>"
             f"<p>{e(r.final['mechanism'])}</p>") if r.final else "<p>none: no candidate ran</p>"
    lis = lambda items: "<ul>" + "".join(f"<li>{e(i)}</li>" for i in items or ("none",)) + "</ul>"  # noqa: E731
    label = "interpreted" if r.verify_interpreted else "device"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(r.tag)}: author's report</title>",
        f"<style>{CSS}</style></head><body>", f"<h1>{e(r.tag)}: author's report</h1>", verdict,
        "<h2>Candidate ledger</h2>", f"<p><code>{e(loaded)}</code></p>", _table(r.ledger),
        "<figure>", speedup_svg(r.points),
        "<figcaption>Speedup vs the reference per candidate: point estimate and 95% interval (orange: interpreted "
        "timings); triangles mark the pre-registered prediction; dashed: 1.0x.</figcaption></figure>",
        "<h2>Final candidate</h2>", final,
        "<h2>Escalations and pivots</h2>", lis(r.escalations),
        "<h2>Honest blockers</h2>", lis(r.blockers),
        "<h2>Leads (seeds of the next experiment)</h2>", lis(r.leads),
        "<h2>Compliance</h2>", f"<p>{e(r.compliance)}</p>", lis([f"{f.code} [{f.consequence}] {f.title}: {f.evidence}"
                                                                   for f in r.findings]) if r.findings else "",
        "<h2>Final verification</h2>", "<figure>", _distribution_svg(r.samples),
        f"<figcaption>Timing distributions of the final verify ({label} timings), reference vs candidate, "
        "shared log-spaced bins.</figcaption></figure>",
        f"<pre>{e(r.verdict_section)}</pre>" if r.verdict_section else "",
        "</body></html>",
    ])
