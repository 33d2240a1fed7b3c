"""The pages of the static site, as HTML strings. Every user-written text goes through `esc` (or
`json_data` for the page scripts, which put it on the page with `textContent` only); the Content
Security Policy of every page forbids inline scripts, so even a missed escape could not run one.

Pages and where they live (links are relative, so the site works from `file://` and any host):
`index.html` (overview), `ratchet.html`, `clusters.html`, `contributors.html`,
`contributions/N.html` (the list, a page per `LIST_PAGE` contributions), `lineage/index.html` and
`lineage/SHA.html`, `c/SH/SHA.html` (one per contribution), `assets/` (the style sheet and script).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .html import Markup, esc, join, json_data, lineage_href, link, number, short, when
from .model import ClusterMap, ContributionView, LineageView, ListRow, RatchetData, SiteInfo, VerdictInfo

LIST_PAGE = 1000
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'"
)
NAV = (
    ("index.html", "Overview", "overview"),
    ("ratchet.html", "Ratchet", "ratchet"),
    ("clusters.html", "Cluster map", "clusters"),
    ("lineage/index.html", "Lineage", "lineage"),
    ("contributors.html", "Contributors", "contributors"),
    ("contributions/1.html", "All contributions", "contributions"),
)
STATUS_CLASS = {
    "confirmed": "ok", "partial": "ok", "contested": "warn", "failed": "bad", "unverified": "dim", "unchecked": "warn",
}  # fmt: skip


def page(site: SiteInfo, title: str, body: str, root: str, kind: str, data: Any = None, stamped: bool = False) -> str:
    """A whole HTML document: header with navigation, `body`, footer, and the page data for the script.
    Only a `stamped` page (the overview) says when it was built, so a rebuild leaves the others as they were."""
    nav = "".join(
        f'<a href="{root}{href}"{" class=current" if key == kind else ""}>{label}</a>' for href, label, key in NAV
    )
    script = "" if data is None else f'<script type="application/json" id="page-data">{json_data(data)}</script>'
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)} · {esc(site.name)}</title>"
        f'<link rel="icon" href="data:,"><link rel="stylesheet" href="{root}assets/site.css"></head>'
        f'<body data-page="{kind}" data-root="{root}">'
        f'<header><a class="brand" href="{root}index.html">{esc(site.name)}</a><nav>{nav}</nav></header>'
        f"<main>{body}</main>"
        f"<footer>built by <code>git agora site</code> from the local index"
        f"{' on ' + esc(site.generated) if stamped else ''}; no server, no network: every page is a file.</footer>"
        f'{script}<script src="{root}assets/site.js"></script></body></html>'
    )


# --------------------------------------------------------------------------- pieces


def _shown(row: dict) -> str:
    """A row's status as readers show it: an unverified result without its run record (``checked``
    False) is "unchecked" (`frontier.checked.shown_status`)."""
    status = str(row.get("status"))
    return "unchecked" if status == "unverified" and row.get("checked") is False else status


def _status(status: str | None) -> Markup:
    if status is None:
        return Markup('<span class="badge bad">rejected</span>')
    return Markup(f'<span class="badge {STATUS_CLASS.get(status, "dim")}">{esc(status)}</span>')


def _tags(tags: Iterable[str]) -> Markup:
    return join(Markup(f'<span class="tag">{esc(t)}</span>') for t in tags)


def _warning(message: str | None) -> str:
    return f'<p class="warning" role="alert"><strong>Warning</strong> {esc(message)}</p>' if message else ""


def _empty(text: str) -> str:
    return f'<p class="empty">{esc(text)}</p>'


def _metric_name(site: SiteInfo) -> str:
    return site.metric or "metric"


def _direction(site: SiteInfo) -> str:
    better = "lower" if site.direction == "min" else "higher"
    return f"{better} is better, tolerance {site.tolerance:g}"


# --------------------------------------------------------------------------- overview


def overview(
    site: SiteInfo, analysis: dict[str, Any], stats: dict[str, Any], views: Mapping[str, Sequence[str]]
) -> str:
    """`views`: the views shown below the statistics, each with the columns between its value and title."""
    s = analysis["summary"]
    root = ""
    parts = [_warning(s["warning"]), f"<h1>{esc(site.name)}</h1>"]
    parts.append(
        f'<p class="summary"><b>{s["contributions"]}</b> commits, {s["valid"]} valid, {s["rejected"]} rejected, '
        f"{s['accounts']} accounts; <b>{s['results']}</b> scored results, {s['hypotheses']} hypotheses, "
        f"{s['verifications']} verifications; {s['unverified_results']} results unverified, "
        f"{s['contested']} contested.</p>"
    )
    best = s["best"]
    if best:
        ties = f", {best['ties']} within the tolerance of it" if best["ties"] else ""
        seen = best.get("witness_time")
        witnessed = f" · first witnessed by the project's CI at {esc(when(seen))}" if seen is not None else ""
        parts.append(
            f'<p class="best">Best {esc(_metric_name(site))} = <b>{number(best["metric"])}</b> '
            f"({esc(_direction(site))}) by {esc(best['account'])}: "
            f"{link(root, best['sha'], best['title'])} {_status(_shown(best))}{esc(ties)}{witnessed} · "
            f'<a href="{lineage_href(root, best["sha"])}">its lineage</a></p>'
        )
    if s["notes"]:
        parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in s["notes"]) + "</ul>")
    parts.append(_slots(analysis["slots"], root))
    parts.append(_leaderboard(analysis["views"].get("leaders"), site, root))
    parts.append(_stats(stats, site, root))
    for name, columns in views.items():
        view = analysis["views"].get(name)
        if view is not None:
            parts.append(_view(view, columns, root))
    return page(site, "Overview", "".join(parts), root, "overview", stamped=True)


def _slots(slots: dict[str, Any], root: str) -> str:
    cards = []
    for slot in slots["slots"]:
        items = "".join(
            f"<li>{link(root, x['sha'], x['title'])} <span class='num'>{number(x['metric'])}</span> "
            f"<span class='who'>{esc(x['account'])}</span><br><span class='reason'>{esc(x['reason'])}</span></li>"
            for x in slot["suggestions"][:5]
        )
        body = f"<ol>{items}</ol>" if items else _empty(slot.get("note") or "nothing to suggest yet")
        cards.append(
            f'<section class="slot" data-slot="{esc(slot["name"])}"><h3>{esc(slot["name"])}</h3>'
            f"<p>{esc(slot['purpose'])}</p>{body}</section>"
        )
    head = (
        f"<h2>Where to work next</h2><p class='dim'>UCB slots: C = {slots['exploration_c']:.1f}, "
        f"bunching {slots['bunching']:.2f}, N = {slots['n_total']}.</p>"
    )
    return head + f'<div class="slots">{"".join(cards)}</div>'


def _leaderboard(view: dict[str, Any] | None, site: SiteInfo, root: str) -> str:
    head = f"<h2>Leaderboard</h2><p class='dim'>{esc(_metric_name(site))}, {esc(_direction(site))}."
    if view and view.get("note"):
        head += f" {esc(view['note'])}."
    head += "</p>"
    if not view or not view["rows"]:
        return head + _empty((view or {}).get("note") or "no scored result yet")
    rows = "".join(
        f'<tr data-sha="{esc(r["sha"])}"><td class="num">{r["rank"]}</td><td class="num">{number(r["metric"])}</td>'
        f"<td>{'&#9733;' if r['new_best'] else ''}</td><td>{_status(_shown(r))}</td>"
        f"<td class='num'>{r['confirmations']}</td><td>{esc(r['account'])}</td>"
        f"<td>{link(root, r['sha'], r['title'])}</td></tr>"
        for r in view["rows"]
    )
    more = f"<p class='dim'>Top {len(view['rows'])} of {view['total']} scored results.</p>"
    return (
        head + '<table class="leaders"><thead><tr><th>rank</th><th>value</th><th title="set a new best">new best</th>'
        "<th>verification</th><th>confirmations</th><th>account</th><th>result</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{more}"
    )


STAT_LABELS = (
    ("nodes", "valid contributions"),
    ("accounts", "accounts"),
    ("edges", "parent edges"),
    ("multi_parent_nodes", "contributions with several parents"),
    ("components", "connected components"),
    ("largest_component_share", "share in the largest component"),
    ("scored_results", "scored results"),
    ("new_bests", "new bests (noise-aware)"),
    ("new_bests_strict", "new bests (strict)"),
    ("first_value", "first value"),
    ("best_value", "best value"),
    ("strict_best_value", "best value reached (strict)"),
    ("verifications", "verifications"),
    ("verified_targets", "verified results"),
    ("failed_verifications", "failed verifications"),
    ("equal_score_pairs", "equal-score pairs across accounts"),
    ("equal_score_share_1h", "of them within 1 h"),
    ("equal_score_share_6h", "of them within 6 h"),
    ("best_ancestry_size", "the best's ancestry"),
    ("best_ancestry_accounts", "accounts in it"),
    ("best_ancestry_cross_account_edges", "cross-account edges in it"),
    ("best_scored_ancestors", "scored ancestors of the best"),
    ("best_reproduced_scored_ancestors", "of them reproduced"),
)


def _stat(value: Any, key: str = "") -> str:
    if value is None:
        return "-"
    if "share" in key and isinstance(value, int | float):
        return f"{value:.0%}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _stats(stats: dict[str, Any], site: SiteInfo, root: str) -> str:
    rows = "".join(
        f"<tr><th>{esc(label)}</th><td>{esc(_stat(stats.get(key), key))}</td></tr>" for key, label in STAT_LABELS
    )
    shares = stats.get("improvement_share") or {}
    share = ", ".join(f"first {k}: {_stat(v)}" for k, v in shares.items())
    tags = ", ".join(f"{t} {c}" for t, c in list((stats.get("tag_counts") or {}).items())[:12])
    extra = (
        f"<p class='dim'>Share of the total improvement reached by the first k results: {esc(share or '-')}. "
        f"Tags: {esc(tags or '-')}.</p>"
    )
    return f'<h2>Graph statistics</h2><table class="stats">{rows}</table>{extra}'


def _cell(value: Any) -> Markup:
    if isinstance(value, float):
        return esc(f"{value:.3g}")
    if isinstance(value, list | tuple):
        return esc("; ".join(map(str, value)))
    return esc("-" if value is None else value)


def _view(view: dict[str, Any], columns: Sequence[str], root: str) -> str:
    title = f"<h2>{esc(view['title'])} <span class='dim'>({view['total']})</span></h2>"
    if not view["rows"]:
        return title + _empty(view.get("note") or "none")
    known = view["name"] != "rejected"
    rows = "".join(
        f"<tr><td>{link(root, r['sha'], None, known)}</td><td>{esc(r.get('account'))}</td>"
        f"<td class='num'>{number(r.get('metric'))}</td>"
        + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns)
        + f"<td>{esc(r.get('title'))}</td></tr>"
        for r in view["rows"]
    )
    head = "".join(f"<th>{esc(c)}</th>" for c in ("sha", "account", "value", *columns, "title"))
    note = f"<p class='dim'>{esc(view['note'])}</p>" if view.get("note") else ""
    return f"{title}{note}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


# --------------------------------------------------------------------------- ratchet plot


RATCHET_CODES = {"confirmed": "c", "partial": "p", "contested": "x", "unverified": "u", "failed": "f"}


def ratchet(site: SiteInfo, data: RatchetData) -> str:
    root = ""
    metric = _metric_name(site)
    parts = [f"<h1>Ratchet: {esc(metric)} over time</h1>"]
    if not site.metric:
        parts.append(_empty("This project names no primary metric in agora.toml, so there is nothing to plot."))
        return page(site, "Ratchet", "".join(parts), root, "ratchet")
    if not data.times:
        parts.append(_empty(f"No scored result yet: nothing reports the {metric}."))
        return page(site, "Ratchet", "".join(parts), root, "ratchet")
    plotted = len(data.times) - sum(1 for s in data.status if s == "failed")
    parts.append(
        f"<p>Every scored result ({data.scored_total}) at the time it was published; the step line is the "
        f"best so far, moving only on a new best by more than the tolerance ({site.tolerance:g}). Filled: "
        "verified (confirmed or partial); hollow: unverified; orange: contested verdicts; a new best is the larger "
        "gold mark, filled or hollow by the same rule; red squares: results "
        f"whose verification failed ({data.failed_total}, not scored). Hover for the result, click to open it.</p>"
    )
    if data.note:
        parts.append(f'<p class="note">{esc(data.note)}</p>')
    parts.append(
        f'<figure class="plot"><div id="plot" class="plot-area" data-points="{plotted}"></div>'
        '<div class="legend"><span class="key verified">verified</span><span class="key unverified">unverified'
        '</span><span class="key contested">contested</span><span class="key failed">failed (not scored)</span>'
        '<span class="key newbest">new best</span></div></figure>'
    )
    bests = [i for i, b in enumerate(data.new_best) if b]
    rows = "".join(
        f"<tr><td>{esc(when(data.times[i]))}</td><td class='num'>{number(data.values[i])}</td>"
        f"<td>{esc(data.accounts[i])}</td><td>{link(root, data.shas[i], data.titles[i])}</td></tr>"
        for i in reversed(bests)
    )
    parts.append(
        f"<h2>New bests ({len(bests)})</h2><table><thead><tr><th>when</th><th>{esc(metric)}</th><th>account</th>"
        f"<th>result</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    accounts = sorted(set(data.accounts))
    index = {a: i for i, a in enumerate(accounts)}
    payload = {
        "metric": metric,
        "direction": site.direction,
        "t": data.times,
        "v": data.values,
        "s": "".join(RATCHET_CODES.get(s, "u") for s in data.status),
        "b": [1 if b else 0 for b in data.new_best],
        "sha": data.shas,
        "title": data.titles,
        "acct": [index[a] for a in data.accounts],
        "accounts": accounts,
    }
    return page(site, "Ratchet", "".join(parts), root, "ratchet", payload)


# --------------------------------------------------------------------------- cluster map


def cluster_map(site: SiteInfo, data: ClusterMap) -> str:
    root = ""
    parts = [_warning(data.warning), "<h1>Cluster map</h1>"]
    if not data.available:
        parts.append(
            f'<p class="empty" id="no-map">No map: {esc(data.why or "no embeddings")}.</p>'
            "<p>The site reads the embedding cache in <code>.git/agora/index/</code> and never loads a model; "
            "<code>git agora analyze</code> computes and caches the vectors (the lexical fallback with "
            "<code>--model hashing</code>), then build the site again.</p>"
        )
        return page(site, "Cluster map", "".join(parts), root, "clusters")
    s = data.summary
    evenness = "-" if s.get("evenness") is None else f"{s['evenness']:.2f}"
    parts.append(
        f"<p>The {len(data.x)} most recent contributions with a description vector ({esc(data.model)}, "
        f"coverage {data.coverage:.0%}), projected on their two principal components "
        f"({data.explained[0]:.0%} and {data.explained[1]:.0%} of the variance). Colour: the ten largest "
        f"clusters, grey for the others (single-link at cosine {s.get('threshold', 0.9):g}); size: evidence "
        f"score. {s.get('count', 0)} clusters, "
        f"the largest holds {s.get('top_share', 0):.0%}, effective count {s.get('effective_count', 0):.1f}, "
        f"evenness {evenness}.</p>"
    )
    parts.append('<figure class="plot"><div id="plot" class="plot-area"></div></figure>')
    items = "".join(
        f'<li><span class="swatch c{c["id"] if c["id"] < 10 else "x"}"></span> cluster {c["id"]}: '
        f"{c['size']} ({c['share']:.0%}) {link(root, c['central_sha'], c['label'])}"
        + (f" · best {link(root, c['best_sha'], number(c['best_metric']))}" if c.get("best_sha") else "")
        + "</li>"
        for c in data.clusters
    )
    parts.append(f'<h2>Largest clusters</h2><ul class="clusters">{items}</ul>')
    payload = {
        "x": data.x,
        "y": data.y,
        "c": data.cluster,
        "r": data.score,
        "sha": data.shas,
        "title": data.titles,
        "account": data.accounts,
        "metric": data.metric,
        "explained": list(data.explained),
    }
    return page(site, "Cluster map", "".join(parts), root, "clusters", payload)


# --------------------------------------------------------------------------- lineage


def lineage(site: SiteInfo, view: LineageView) -> str:
    root = "../"
    parts = [
        f"<h1>Lineage of {link(root, view.sha, short(view.sha))}</h1><p class='lead'>{esc(view.title)}</p>",
        f"<p>{view.size} contributions by {len(view.accounts)} accounts; {view.edges_total} parent edges, "
        f"{view.cross_account_edges} across accounts; {view.reproduced_total} independently reproduced; "
        f"{view.scored_ancestors} scored ancestors, {view.reproduced_scored_ancestors} of them reproduced.</p>",
        "<p class='dim'>Each account has a lane; time runs left to right. Gold: milestones (new bests of "
        f"{esc(_metric_name(site))} along this ancestry), joined by the spine; dashed orange: edges across "
        "accounts; green ring: reproduced by another account. Hover for details, click to open.</p>",
    ]
    if view.note:
        parts.append(f'<p class="note">{esc(view.note)}</p>')
    parts.append(
        '<figure class="plot"><div id="plot" class="plot-area lineage-area"></div><div class="legend">'
        '<span class="key milestone">milestone</span><span class="key reproduced">reproduced</span>'
        '<span class="key cross">cross-account edge</span><span class="key target">this result</span></div></figure>'
    )
    rows = "".join(
        f'<tr data-milestone="{esc(ref.sha)}"><td>{esc(when(t))}</td><td class="num">{number(value)}</td>'
        f"<td>{esc(ref.account)}</td><td>{link(root, ref.sha, ref.title)}</td></tr>"
        for ref, value, t in view.milestones
    )
    parts.append(
        f"<h2>Milestones ({len(view.milestones)})</h2>"
        + (
            f'<table class="milestones"><thead><tr><th>when</th><th>{esc(_metric_name(site))}</th><th>account</th>'
            f"<th>result</th></tr></thead><tbody>{rows}</tbody></table>"
            if rows
            else _empty("no scored result in this ancestry")
        )
    )
    accounts = sorted({n["account"] for n in view.nodes})
    payload = {"nodes": view.nodes, "edges": view.edges, "accounts": accounts, "target": view.sha}
    return page(site, f"Lineage of {short(view.sha)}", "".join(parts), root, "lineage", payload)


def lineage_index(site: SiteInfo, entries: Sequence[tuple[str, str, str | None, float | None]]) -> str:
    """The results that have a lineage page: (sha, title, account, value), best first."""
    root = "../"
    rows = "".join(
        f"<tr><td><a href='{esc(sha)}.html'>{esc(short(sha))}</a></td><td class='num'>{number(value)}</td>"
        f"<td>{esc(account)}</td><td>{esc(title)}</td></tr>"
        for sha, title, account, value in entries
    )
    body = f"<h1>Lineage pages</h1><p>{esc(site.lineage_rule)}</p>" + (
        f"<table><thead><tr><th>result</th><th>{esc(_metric_name(site))}</th><th>account</th><th>title</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else _empty("no scored result yet")
    )
    return page(site, "Lineage", body, root, "lineage-index")


# --------------------------------------------------------------------------- contributions


def contribution(site: SiteInfo, c: ContributionView) -> str:
    root = "../../"
    parts = [f"<h1>{esc(c.title)}</h1>"]
    if not c.valid:
        parts.append(
            '<p class="warning"><strong>Rejected</strong> '
            + esc("; ".join(c.reasons) or "invalid")
            + ": indexed, excluded from every score.</p>"
        )
    facts = [
        ("commit", Markup(f"<code>{esc(c.sha)}</code>")),
        ("account", esc(c.account)),
        ("date", esc(when(c.timestamp))),
        ("tags", _tags(c.tags)),
    ]
    for name, value in c.metrics:
        facts.append((f"metric {name}", Markup(f"<b>{number(value, 8)}</b>")))
    if c.evidence is not None:
        e = c.evidence
        facts.append(
            (
                "evidence",
                Markup(
                    f"score {e.score:g}, {e.children} children, {e.follow_ons} follow-ons, "
                    f"{_status(e.status)} ({e.confirmations} confirmed, {e.failures} failed)"
                ),
            )
        )
    if c.scored:
        facts.append(
            ("scored", Markup("a scored result" + (", <b>a new best</b> when published" if c.new_best else "")))
        )
    facts.append(("check out", Markup(f"<code class='cmd'>git agora checkout {esc(c.sha)}</code>")))
    parts.append('<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>")
    if c.scored or c.lineage:
        parts.append(_lineage_line(site, c, root))
    parts.append(f'<h2>Description</h2><pre class="description">{esc(c.description)}</pre>')
    if c.verifies is not None:
        parts.append("<h2>Verifies</h2>" + _verdicts([c.verifies], root, site, show_target=True))
    if c.verdicts:
        parts.append(f"<h2>Verifications ({len(c.verdicts)})</h2>" + _unsettled(c) + _verdicts(c.verdicts, root, site))
    parts.append(_relatives("Parents", c.parents, len(c.parents), root))
    parts.append(_relatives("Children", c.children, c.children_total, root))
    if c.cross_refs:
        parts.append("<h2>Cites</h2><ul>" + "".join(f"<li><code>{esc(r)}</code></li>" for r in c.cross_refs) + "</ul>")
    parts.append(_changes(site, c, root))
    parts.append("<h2>Trailers</h2><pre class='trailers'>" + esc("\n".join(c.trailers)) + "</pre>")
    return page(site, c.title or short(c.sha), "".join(parts), root, "contribution")


def _lineage_line(site: SiteInfo, c: ContributionView, root: str) -> str:
    if c.lineage:
        return f'<p><a class="lineage-link" href="{lineage_href(root, c.sha)}">Lineage of this result</a></p>'
    return (
        f"<p class='dim'>No lineage page for this result: {esc(site.lineage_rule)} "
        f'<a class="ondemand" href="{lineage_href(root, c.sha)}">Draw it now</a></p>'
    )


def _unsettled(c: ContributionView) -> str:
    """The failed reruns on `c` that do not count yet (accounts without standing): a signal to settle."""
    return f"<p class='unsettled warn'>{esc(c.unsettled)}</p>" if c.unsettled else ""


def _verdicts(verdicts: Iterable[VerdictInfo], root: str, site: SiteInfo, show_target: bool = False) -> str:
    rows = []
    for v in verdicts:
        who = link(root, v.target.sha, v.target.title) if show_target else esc(v.verification.account)
        rows.append(
            f"<tr class='verdict {esc(v.verdict)}'><td>{who}</td><td>{_status(v.verdict)}</td>"
            f"<td class='num'>{number(v.claimed, 8)}</td><td class='num'>{number(v.reproduced, 8)}</td>"
            f"<td>{esc(v.weight)}</td><td>{esc(when(v.timestamp))}</td>"
            f"<td>{link(root, v.verification.sha)}</td></tr>"
        )
    first = "target" if show_target else "verifier"
    metric = esc(_metric_name(site))
    return (
        f"<table class='verdicts'><thead><tr><th>{first}</th><th>verdict</th><th>claimed {metric}</th>"
        f"<th>reproduced {metric}</th><th>counts</th><th>when</th><th>verification</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _relatives(title: str, refs: Sequence[Any], total: int, root: str) -> str:
    if not total:
        return f"<h2>{title}</h2>" + _empty("none")
    items = "".join(
        f"<li>{link(root, r.sha, None, r.known)} <span class='who'>{esc(r.account)}</span> {esc(r.title)}</li>"
        for r in refs
    )
    more = f"<li class='dim'>and {total - len(refs)} more</li>" if total > len(refs) else ""
    return f"<h2>{title} ({total})</h2><ul class='refs'>{items}{more}</ul>"


def _changes(site: SiteInfo, c: ContributionView, root: str) -> str:
    head = "<h2>Files changed against the first parent</h2>"
    if not c.code_bearing:
        return head + _empty("none: this contribution keeps its first parent's tree (the light path)")
    against = f"<code>{esc(short(c.first_parent))}</code>" if c.first_parent else "the empty tree (a root commit)"
    out = [head, f"<p class='dim'>Against {against}.</p>"]
    if c.files is not None:
        out.append(
            "<ul class='files'>"
            + "".join(f"<li><span class='fs'>{esc(s)}</span> <code>{esc(p)}</code></li>" for s, p in c.files)
            + "</ul>"
        )
    if c.diff is not None:
        cut = f"<p class='note'>{c.diff_left_out} more bytes of the diff are left out.</p>" if c.diff_left_out else ""
        out.append(f"<pre class='diff'>{_diff_lines(c.diff)}</pre>{cut}")
    else:
        command = f"git diff {c.first_parent or '4b825dc642cb6eb9a060e54bf8d69288fbee4904'} {c.sha}"
        out.append(
            f"<p class='dim'>The site includes diffs of scored results only. "
            f'<a class="ondemand" href="{root}_diff/{esc(c.sha)}.html">Show the diff</a> '
            f"(under <code>git agora site --serve</code>), or run <code>{esc(command)}</code>.</p>"
        )
    return "".join(out)


def _diff_lines(patch: str) -> Markup:
    out = []
    for line in patch.splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else "hunk" if line[:2] == "@@" else ""
        if line.startswith(("+++", "---", "diff --git", "index ")):
            cls = "meta"
        out.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return Markup("\n".join(out))


def diff_page(site: SiteInfo, sha: str, parent: str | None, files: Sequence[tuple[str, str]], patch: str) -> str:
    """A diff rendered on demand by the preview server."""
    root = "../"
    body = (
        f"<h1>Diff of {link(root, sha, short(sha))}</h1><p class='dim'>Against "
        f"{esc(short(parent)) if parent else 'the empty tree'}; {len(files)} files.</p>"
        f"<pre class='diff'>{_diff_lines(patch)}</pre>"
    )
    return page(site, f"Diff of {short(sha)}", body, root, "diff")


def contribution_list(site: SiteInfo, rows: Sequence[ListRow], number_: int, pages: int, total: int) -> str:
    root = "../"
    body_rows = "".join(
        f"<tr><td>{esc(when(r.timestamp))}</td><td>{link(root, r.sha)}</td><td>{esc(r.account)}</td>"
        f"<td>{_tags(r.tags)}</td><td class='num'>{number(r.metric)}</td><td>{_status(r.status)}</td>"
        f"<td>{esc(r.title)}</td></tr>"
        for r in rows
    )
    nav = _pager(number_, pages)
    body = (
        f"<h1>All contributions</h1><p>{total} commits, newest first, {LIST_PAGE} a page "
        f"(page {number_} of {pages}).</p>{nav}<table><thead><tr><th>when</th><th>sha</th><th>account</th>"
        f"<th>tags</th><th>{esc(_metric_name(site))}</th><th>status</th><th>title</th></tr></thead>"
        f"<tbody>{body_rows}</tbody></table>{nav}"
    )
    return page(site, f"Contributions, page {number_}", body, root, "contributions")


def _pager(number_: int, pages: int) -> str:
    if pages <= 1:
        return ""
    shown = sorted({1, pages, *range(max(1, number_ - 3), min(pages, number_ + 3) + 1)})
    links = [f"<b>{n}</b>" if n == number_ else f'<a href="{n}.html">{n}</a>' for n in shown]
    return f'<p class="pager">{" ".join(links)}</p>'


def contributors(site: SiteInfo, rows: Sequence[dict[str, Any]]) -> str:
    root = ""
    body_rows = "".join(
        f"<tr><td>{esc(r['account'])}</td><td class='num'>{r['contributions']}</td><td class='num'>{r['results']}</td>"
        f"<td>{link(root, r['best_sha'], number(r['best_metric'])) if r['best_sha'] else '-'}</td>"
        f"<td class='num'>{r['verifications_given']}</td><td class='num'>{r['verifications_received']}</td>"
        f"<td>{esc(when(r['last_timestamp']))}</td></tr>"
        for r in rows
    )
    body = (
        "<h1>Contributors</h1><p>Per account: valid contributions, scored results, the best of them, "
        "verifications given and received (every valid verification commit on a valid contribution).</p>"
        + (
            f"<table class='contributors'><thead><tr><th>account</th><th>contributions</th><th>results</th>"
            f"<th>best {esc(_metric_name(site))}</th><th>verifications given</th><th>received</th>"
            f"<th>last active</th></tr></thead><tbody>{body_rows}</tbody></table>"
            if rows
            else _empty("no valid contribution yet")
        )
    )
    return page(site, "Contributors", body, root, "contributors")


__all__ = [
    "LIST_PAGE",
    "cluster_map",
    "contribution",
    "contribution_list",
    "contributors",
    "diff_page",
    "lineage",
    "lineage_index",
    "overview",
    "page",
    "ratchet",
]
