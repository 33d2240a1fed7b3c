/* git agora site: the ratchet plot, the cluster map and the lineage graph, drawn as SVG from the
   page's JSON data (<script type="application/json" id="page-data">). No library, no network.
   Text from contributions reaches the page through textContent only, never as HTML. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var body = document.body;
  var root = body.getAttribute("data-root") || "";

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, key)) node.setAttribute(key, attrs[key]);
    }
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, content, cls, anchor) {
    var t = el("text", { x: x, y: y, "class": cls || "", "text-anchor": anchor || "start" }, parent);
    t.textContent = content;
    return t;
  }

  function pageData() {
    var node = document.getElementById("page-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  function contributionHref(sha) {
    return root + "c/" + sha.slice(0, 2) + "/" + sha + ".html";
  }

  /* d1 - d0 overflows to Infinity for metrics as far apart as -1.7e308 and 1.7e308: scales and ticks
     then work in halves of the values (d1 / 2 - d0 / 2 never overflows); every end stays finite. */
  var MAX = Number.MAX_VALUE;

  function scale(d0, d1, r0, r1) {
    var k = isFinite(d1 - d0) ? 1 : 0.5;
    var span = d1 * k - d0 * k;
    if (!(span > 0)) {
      return function () { return (r0 + r1) / 2; };
    }
    return function (v) { return r0 + (v * k - d0 * k) / span * (r1 - r0); };
  }

  function extent(values) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (v === null || v === undefined || !isFinite(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (lo === Infinity) return [0, 1];
    if (lo === hi) return [Math.max(lo - 1, -MAX), Math.min(hi + 1, MAX)];
    var pad = (hi / 2 - lo / 2) * 0.08;
    return [Math.max(lo - pad, -MAX), Math.min(hi + pad, MAX)];
  }

  function niceTicks(lo, hi, count) {
    var raw = isFinite(hi - lo) ? (hi - lo) / count : (hi / 2 - lo / 2) / count * 2;
    var step = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var err = raw / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    if (!(step > 0) || !isFinite(step)) step = raw;
    if (!(step > 0) || !isFinite(step)) return [lo, hi]; /* a range too narrow (subnormal) for steps */
    var out = [];
    for (var v = Math.ceil(lo / step) * step; isFinite(v) && v - hi <= step * 1e-9 && out.length <= 2 * count + 2; v += step) out.push(v);
    return out;
  }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  function formatTime(seconds, span) {
    var d = new Date(seconds * 1000);
    var day = d.getUTCFullYear() + "-" + pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate());
    var hm = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes());
    if (span < 3600) return hm + ":" + pad2(d.getUTCSeconds());
    if (span < 10 * 86400) return day.slice(5) + " " + hm;
    return day;
  }

  function formatValue(v) {
    if (v === null || v === undefined) return "-";
    return String(Number(v.toPrecision(6)));
  }

  /* ---------------------------------------------------------------- tooltip */

  var tip = document.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  tip.setAttribute("role", "tooltip");
  body.appendChild(tip);

  function showTip(lines, event) {
    tip.textContent = "";
    for (var i = 0; i < lines.length; i++) {
      var line = document.createElement("div");
      if (i === 0) line.className = "tip-title";
      line.textContent = lines[i];
      tip.appendChild(line);
    }
    tip.hidden = false;
    var x = event.pageX + 14, y = event.pageY + 14;
    var width = tip.offsetWidth, height = tip.offsetHeight;
    if (x + width > window.scrollX + document.documentElement.clientWidth) x = event.pageX - width - 14;
    if (y + height > window.scrollY + window.innerHeight) y = event.pageY - height - 14;
    tip.style.left = Math.max(0, x) + "px";
    tip.style.top = Math.max(0, y) + "px";
  }

  function hideTip() { tip.hidden = true; }

  /* Hover and click on any element with data-i, through one listener per plot. */
  function interact(svg, describe, shaOf) {
    function target(event) {
      var node = event.target;
      return node && node.closest ? node.closest("[data-i]") : null;
    }
    svg.addEventListener("mousemove", function (event) {
      var hit = target(event);
      if (hit) showTip(describe(Number(hit.getAttribute("data-i"))), event); else hideTip();
    });
    svg.addEventListener("mouseleave", hideTip);
    svg.addEventListener("click", function (event) {
      var hit = target(event);
      if (hit) window.location.href = contributionHref(shaOf(Number(hit.getAttribute("data-i"))));
    });
  }

  function canvas(container, width, height) {
    return el("svg", {
      viewBox: "0 0 " + width + " " + height,
      width: width,
      height: height,
      "class": "chart",
      preserveAspectRatio: "xMinYMin meet"
    }, container);
  }

  function frameAxes(svg, box, xTicks, xLabel, yTicks, yLabel) {
    var g = el("g", { "class": "axes" }, svg);
    el("rect", { x: box.left, y: box.top, width: box.right - box.left, height: box.bottom - box.top, "class": "frame" }, g);
    xTicks.forEach(function (t, i) {
      el("line", { x1: t.x, x2: t.x, y1: box.top, y2: box.bottom, "class": "grid" }, g);
      var anchor = i === 0 ? "start" : i === xTicks.length - 1 ? "end" : "middle";
      text(g, t.x, box.bottom + 16, t.label, "tick", anchor);
    });
    yTicks.forEach(function (t) {
      el("line", { x1: box.left, x2: box.right, y1: t.y, y2: t.y, "class": "grid" }, g);
      text(g, box.left - 6, t.y + 4, t.label, "tick", "end");
    });
    if (xLabel) text(g, (box.left + box.right) / 2, box.bottom + 34, xLabel, "axis-label", "middle");
    if (yLabel) {
      var label = text(g, 0, 0, yLabel, "axis-label", "middle");
      label.setAttribute("transform", "translate(14," + (box.top + box.bottom) / 2 + ") rotate(-90)");
    }
  }

  /* ---------------------------------------------------------------- ratchet */

  var STATUS = { c: "confirmed", p: "partial", x: "contested", u: "unverified", f: "failed" };

  function ratchet(d) {
    var container = document.getElementById("plot");
    var width = 960, height = 480;
    var box = { left: 72, right: width - 16, top: 14, bottom: height - 46 };
    var svg = canvas(container, width, height);
    var te = extent(d.t), ve = extent(d.v);
    var x = scale(te[0], te[1], box.left, box.right);
    var y = scale(ve[0], ve[1], box.bottom, box.top);
    var span = te[1] - te[0];
    var xTicks = [];
    for (var k = 0; k <= 6; k++) {
      var tt = te[0] + (span * k) / 6;
      xTicks.push({ x: x(tt), label: formatTime(tt, span) });
    }
    var yTicks = niceTicks(ve[0], ve[1], 6).map(function (v) { return { y: y(v), label: formatValue(v) }; });
    frameAxes(svg, box, xTicks, "published (UTC)", yTicks, d.metric + (d.direction === "min" ? " (lower is better)" : " (higher is better)"));

    var bests = [];
    for (var i = 0; i < d.t.length; i++) if (d.b[i]) bests.push(i);
    if (bests.length) {
      var path = "M" + x(d.t[bests[0]]).toFixed(1) + " " + y(d.v[bests[0]]).toFixed(1);
      for (var j = 1; j < bests.length; j++) {
        path += "H" + x(d.t[bests[j]]).toFixed(1) + "V" + y(d.v[bests[j]]).toFixed(1);
      }
      path += "H" + box.right;
      el("path", { d: path, "class": "step" }, svg);
    }
    var points = el("g", { "class": "points" }, svg);
    var top = el("g", { "class": "points bests" }, svg);
    for (var n = 0; n < d.t.length; n++) {
      var code = d.s.charAt(n);
      var cx = x(d.t[n]).toFixed(1), cy = y(d.v[n]).toFixed(1);
      var attrs = { "data-i": n, "data-sha": d.sha[n] };
      if (code === "f") {
        attrs.x = (cx - 3.5).toFixed(1); attrs.y = (cy - 3.5).toFixed(1); attrs.width = 7; attrs.height = 7;
        attrs["class"] = "pt s-f"; attrs["data-kind"] = "failed";
        el("rect", attrs, points);
        continue;
      }
      attrs.cx = cx; attrs.cy = cy; attrs.r = d.b[n] ? 5.5 : 3.5;
      attrs["class"] = "pt s-" + code + (d.b[n] ? " best" : "");
      attrs["data-kind"] = "scored";
      el("circle", attrs, d.b[n] ? top : points);
    }
    interact(svg, function (i) {
      return [
        d.title[i],
        d.accounts[d.acct[i]] + " \u00b7 " + d.sha[i].slice(0, 12),
        d.metric + " = " + formatValue(d.v[i]) + (d.b[i] ? " (new best)" : ""),
        STATUS[d.s.charAt(i)] + " \u00b7 " + formatTime(d.t[i], 0) + " UTC"
      ];
    }, function (i) { return d.sha[i]; });
  }

  /* ---------------------------------------------------------------- cluster map */

  function clusters(d) {
    var container = document.getElementById("plot");
    var width = 960, height = 540;
    var box = { left: 30, right: width - 16, top: 14, bottom: height - 40 };
    var svg = canvas(container, width, height);
    var xe = extent(d.x), ye = extent(d.y);
    var x = scale(xe[0], xe[1], box.left, box.right);
    var y = scale(ye[0], ye[1], box.bottom, box.top);
    frameAxes(svg, box, [], "first principal component (" + Math.round(d.explained[0] * 100) + "% of the variance)", [],
      "second (" + Math.round(d.explained[1] * 100) + "%)");
    var most = 0;
    for (var i = 0; i < d.r.length; i++) if (d.r[i] > most) most = d.r[i];
    var radius = d.r.map(function (s) { return most > 0 ? 4 + 10 * Math.sqrt(Math.max(s, 0) / most) : 4.5; });
    var order = d.x.map(function (_, i) { return i; }).sort(function (a, b) { return radius[b] - radius[a]; });
    var g = el("g", { "class": "points" }, svg);
    order.forEach(function (n) {
      var c = d.c[n];
      el("circle", {
        cx: x(d.x[n]).toFixed(1), cy: y(d.y[n]).toFixed(1), r: radius[n].toFixed(1),
        "class": "pt k" + (c >= 0 && c < 10 ? c : "x"), "data-i": n, "data-sha": d.sha[n], "data-cluster": c
      }, g);
    });
    interact(svg, function (i) {
      return [
        d.title[i],
        d.account[i] + " \u00b7 " + d.sha[i].slice(0, 12),
        "cluster " + d.c[i] + " \u00b7 evidence score " + formatValue(d.r[i]) +
          (d.metric[i] === null ? "" : " \u00b7 value " + formatValue(d.metric[i]))
      ];
    }, function (i) { return d.sha[i]; });
  }

  /* ---------------------------------------------------------------- lineage */

  function lineage(d) {
    var container = document.getElementById("plot");
    var nodes = d.nodes, lanes = {};
    d.accounts.forEach(function (a, i) { lanes[a] = i; });
    var laneHeight = Math.max(16, Math.min(36, 480 / Math.max(1, d.accounts.length)));
    var labelWidth = 110;
    var width = Math.max(960, Math.min(8000, labelWidth + 24 + nodes.length * 7));
    var height = 30 + laneHeight * d.accounts.length;
    var svg = canvas(container, width, height);
    var x = scale(0, Math.max(1, nodes.length - 1), labelWidth + 12, width - 12);
    function px(i) { return nodes.length === 1 ? (labelWidth + width) / 2 : x(i); }
    function py(i) { return 16 + laneHeight * (lanes[nodes[i].account] + 0.5); }
    var lanesGroup = el("g", { "class": "lanes" }, svg);
    d.accounts.forEach(function (a, i) {
      var yy = 16 + laneHeight * (i + 0.5);
      el("line", { x1: labelWidth, x2: width - 4, y1: yy, y2: yy, "class": "lane" }, lanesGroup);
      text(lanesGroup, labelWidth - 6, yy + 4, a, "lane-label", "end");
    });
    var edges = el("g", { "class": "edges" }, svg);
    d.edges.forEach(function (e) {
      el("line", { x1: px(e[1]), y1: py(e[1]), x2: px(e[0]), y2: py(e[0]), "class": e[2] ? "edge cross" : "edge" }, edges);
    });
    var spine = [];
    nodes.forEach(function (n, i) { if (n.milestone) spine.push(i); });
    var targetIndex = -1;
    nodes.forEach(function (n, i) { if (n.sha === d.target) targetIndex = i; });
    if (targetIndex >= 0 && spine.indexOf(targetIndex) < 0) spine.push(targetIndex);
    if (spine.length > 1) {
      el("polyline", { points: spine.map(function (i) { return px(i) + "," + py(i); }).join(" "), "class": "spine" }, svg);
    }
    var g = el("g", { "class": "points" }, svg);
    nodes.forEach(function (n, i) {
      var cls = "pt " + (n.milestone ? "milestone" : n.scored ? "scored" : "other");
      if (n.reproduced) cls += " reproduced";
      if (n.sha === d.target) cls += " target";
      var attrs = {
        cx: px(i).toFixed(1), cy: py(i).toFixed(1), r: n.sha === d.target ? 7 : n.milestone ? 6 : n.scored ? 3.5 : 2.5,
        "class": cls, "data-i": i, "data-sha": n.sha
      };
      if (n.milestone) attrs["data-milestone"] = "1";
      el("circle", attrs, g);
    });
    interact(svg, function (i) {
      var n = nodes[i];
      var facts = [];
      if (n.milestone) facts.push("milestone");
      if (n.reproduced) facts.push("reproduced");
      return [
        n.title,
        n.account + " \u00b7 " + n.sha.slice(0, 12),
        (n.metric === null ? "no value" : "value " + formatValue(n.metric)) + (facts.length ? " \u00b7 " + facts.join(", ") : ""),
        formatTime(n.t, 0) + " UTC"
      ];
    }, function (i) { return nodes[i].sha; });
  }

  /* ---------------------------------------------------------------- on-demand links */

  /* The "show the diff" links need the preview server; on a static host they are hidden. */
  function ondemand() {
    var served = window.location.protocol === "http:" && /^(127\.0\.0\.1|localhost)$/.test(window.location.hostname);
    var links = document.querySelectorAll("a.ondemand");
    for (var i = 0; i < links.length; i++) if (!served) links[i].hidden = true;
  }

  var kind = body.getAttribute("data-page");
  var d = pageData();
  ondemand();
  if (d && kind === "ratchet") ratchet(d);
  else if (d && kind === "clusters") clusters(d);
  else if (d && kind === "lineage") lineage(d);
})();
