"use strict";
// agentfloor transcript viewer. Every model-controlled string reaches the page through
// textContent only (el() below); nothing is fetched from anywhere.
(function () {
  var PAGE = 300;
  var idx = JSON.parse(document.getElementById("af-index").textContent);
  var C = {}; idx.columns.forEach(function (name, i) { C[name] = i; });
  var rows = idx.rows, details = null, strings = null;
  var FILTERS = [["source", "f-source"], ["model", "f-model"], ["tier", "f-tier"], ["task", "f-task"],
                 ["outcome", "f-outcome"], ["failure_mode", "f-fm"], ["first_unmet", "f-unmet"]];
  var HASH = {source: "source", model: "model", tier: "tier", task: "task", outcome: "outcome",
              failure_mode: "fm", first_unmet: "unmet"};
  var shown = PAGE, matches = [];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function S(i) { return i === null || i === undefined ? null : strings[i]; }
  function runs() {
    if (details === null) {
      var d = JSON.parse(document.getElementById("af-runs").textContent);
      details = d.runs; strings = d.strings;
    }
    return details;
  }
  function readHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var p = kv.indexOf("="), k = p < 0 ? kv : kv.slice(0, p), v = p < 0 ? "" : kv.slice(p + 1);
      try { out[decodeURIComponent(k)] = decodeURIComponent(v.replace(/\+/g, " ")); } catch (e) { /* bad escape */ }
    });
    return out;
  }
  function writeHash(h) {
    var parts = [];
    Object.keys(h).forEach(function (k) {
      if (h[k] !== "" && h[k] !== null && h[k] !== undefined) parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(h[k]));
    });
    var next = parts.length ? "#" + parts.join("&") : "#";
    if (location.hash !== next) history.replaceState(null, "", next);
  }
  function state() {
    var h = {};
    FILTERS.forEach(function (f) { h[HASH[f[0]]] = document.getElementById(f[1]).value; });
    h.q = document.getElementById("f-q").value;
    return h;
  }
  function fillSelects() {
    FILTERS.forEach(function (f) {
      var col = C[f[0]], seen = {}, sel = document.getElementById(f[1]);
      rows.forEach(function (r) { var v = r[col] === null ? "—" : String(r[col]); seen[v] = (seen[v] || 0) + 1; });
      sel.appendChild(el("option", null, "all")).value = "";
      Object.keys(seen).sort(function (a, b) { return a.localeCompare(b, undefined, {numeric: true}); })
        .forEach(function (v) {
          var label = v;
          if (f[0] === "failure_mode" && idx.failure_names[v]) label = v + " " + idx.failure_names[v];
          if (f[0] === "first_unmet" && idx.obligation_names[v]) label = v + " " + idx.obligation_names[v];
          var o = el("option", null, label + " (" + seen[v] + ")"); o.value = v; sel.appendChild(o);
        });
      sel.addEventListener("change", function () { shown = PAGE; apply(true); });
    });
    if (idx.sources.length < 2) document.getElementById("l-source").style.display = "none";
    document.getElementById("f-q").addEventListener("input", function () { shown = PAGE; apply(true); });
  }
  function setFromHash(h) {
    FILTERS.forEach(function (f) {
      var sel = document.getElementById(f[1]), v = h[HASH[f[0]]] || "";
      sel.value = v;
      if (sel.value !== v) { var o = el("option", null, v + " (0)"); o.value = v; sel.appendChild(o); sel.value = v; }
    });
    document.getElementById("f-q").value = h.q || "";
  }
  function filter(h) {
    var tests = [];
    FILTERS.forEach(function (f) {
      var v = h[HASH[f[0]]];
      if (v) tests.push([C[f[0]], v]);
    });
    var q = (h.q || "").toLowerCase(), out = [], key = h.item ? h.item.split("/") : null;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], ok = true;
      for (var t = 0; t < tests.length; t++) {
        var cell = r[tests[t][0]];
        if ((cell === null ? "—" : String(cell)) !== tests[t][1]) { ok = false; break; }
      }
      if (ok && key && (r[C.task] !== key[0] || r[C.variant] !== key[1] || r[C.instance] !== key[2] ||
                        "r" + r[C.run] !== key[3])) ok = false;
      if (ok && q && String(r[C.headline]).toLowerCase().indexOf(q) < 0 && String(r[C.task]).toLowerCase().indexOf(q) < 0) ok = false;
      if (ok) out.push(i);
    }
    return out;
  }
  function renderList(open) {
    var list = document.getElementById("list");
    list.textContent = "";
    var n = matches.length, pass = 0;
    for (var i = 0; i < n; i++) if (rows[matches[i]][C.outcome] === "pass") pass++;
    document.getElementById("count").textContent = n + " of " + rows.length + " runs" +
      (n ? " · " + pass + " passed (" + (100 * pass / n).toFixed(1) + "%)" : "");
    if (!n) { list.appendChild(el("p", "empty", "No run matches these filters.")); return; }
    var table = el("table"), thead = el("thead"), tr = el("tr");
    var cols = ["model", "tier", "task", "v/i/r", "outcome", "mode", "turns", "tokens", "headline"];
    if (idx.sources.length > 1) cols.unshift("session");
    cols.forEach(function (c) { tr.appendChild(el("th", null, c)); });
    thead.appendChild(tr); table.appendChild(thead);
    var body = el("tbody");
    matches.slice(0, shown).forEach(function (i) {
      var r = rows[i], row = el("tr");
      row.dataset.run = i;
      if (String(i) === open) row.className = "sel";
      if (idx.sources.length > 1) row.appendChild(el("td", null, r[C.source]));
      row.appendChild(el("td", null, r[C.model]));
      row.appendChild(el("td", null, r[C.tier]));
      row.appendChild(el("td", null, r[C.task]));
      row.appendChild(el("td", null, r[C.variant] + "/" + r[C.instance] + "/r" + r[C.run]));
      row.appendChild(el("td", r[C.outcome], r[C.outcome]));
      row.appendChild(el("td", null, r[C.failure_mode] || ""));
      row.appendChild(el("td", null, r[C.turns]));
      row.appendChild(el("td", null, (r[C.tokens_in] || 0) + "/" + (r[C.tokens_out] || 0)));
      row.appendChild(el("td", "h", r[C.headline]));
      body.appendChild(row);
    });
    body.addEventListener("click", function (ev) {
      var t = ev.target.closest("tr");
      if (!t) return;
      var h = readHash(); h.run = t.dataset.run; writeHash(h); route();
      var pane = document.getElementById("detail");
      if (pane.getBoundingClientRect().top > window.innerHeight) pane.scrollIntoView();  // one-column layout
    });
    table.appendChild(body); list.appendChild(table);
    if (n > shown) {
      var more = el("button", "more", "show " + Math.min(PAGE, n - shown) + " more (" + (n - shown) + " not shown)");
      more.addEventListener("click", function () { shown += PAGE; renderList(readHash().run); });
      list.appendChild(more);
    }
  }
  function pre(text) { return el("pre", null, text); }
  function pretty(s) {
    if (s === null) return "";
    try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; }
  }
  function msg(cls, who, text) {
    var d = el("div", "msg " + cls); d.appendChild(el("div", "who", who)); d.appendChild(pre(text)); return d;
  }
  function renderDetail(i) {
    var pane = document.getElementById("detail");
    pane.textContent = "";
    var r = rows[i];
    if (!r) { pane.appendChild(el("p", "empty", "No run " + i + " in this file.")); return; }
    var d = runs()[i];
    pane.appendChild(el("h2", null, r[C.model] + " · " + r[C.task] + " [" + r[C.variant] + "-" + r[C.instance] + "-r" + r[C.run] + "]"));
    var o = el("p"); o.appendChild(el("span", r[C.outcome], r[C.outcome].toUpperCase()));
    if (r[C.headline]) { o.appendChild(document.createTextNode(" ")); o.appendChild(el("span", "head", r[C.headline])); }
    pane.appendChild(o);
    var lim = d.lim || [], limits = [];
    [[0, "turns"], [1, "calls"], [2, "tokens"]].forEach(function (p) {
      if (lim[p[0]] !== null && lim[p[0]] !== undefined) limits.push(lim[p[0]] + " " + p[1]);
    });
    pane.appendChild(el("p", "meta", "tier " + r[C.tier] + " · ended by " + (d.end || "?") + " · " + r[C.turns] +
      " turn(s), " + r[C.calls] + " call(s) · tokens " + r[C.tokens_in] + " in / " + r[C.tokens_out] + " out · model " +
      r[C.latency_s] + " s · cost $" + r[C.cost_usd] + (limits.length ? " · limits: " + limits.join(", ") : "") +
      (d.node ? " · " + d.node : "") + (idx.sources.length > 1 ? " · session " + r[C.source] : "")));
    if (d.err !== null) pane.appendChild(msg("system", "error", S(d.err)));
    pane.appendChild(el("h3", null, "grader's account"));
    var vt = el("table", "verdicts"), hr = el("tr");
    ["obligation", "verdict", "expected", "observed"].forEach(function (c) { hr.appendChild(el("th", null, c)); });
    vt.appendChild(hr);
    d.v.forEach(function (v) {
      var tr = el("tr");
      tr.appendChild(el("td", null, v.c + " " + (idx.obligation_names[v.c] || "")));
      tr.appendChild(el("td", v.ok ? "pass" : "fail", v.ok ? "met" : "unmet"));
      tr.appendChild(el("td", null, S(v.e) || "")); tr.appendChild(el("td", null, S(v.o) || ""));
      vt.appendChild(tr);
    });
    pane.appendChild(vt);
    if (r[C.outcome] === "fail") pane.appendChild(el("p", "meta", (r[C.failure_mode] ? "failure mode " +
      r[C.failure_mode] + " (" + (idx.failure_names[r[C.failure_mode]] || "custom") + ") · " : "") + "first unmet " +
      (r[C.first_unmet] || "—") + " · terminal flag " + (r[C.terminal_flag] || "—")));
    pane.appendChild(el("h3", null, "transcript"));
    var tools = d.tools !== null ? JSON.parse(S(d.tools)) : [];
    if (tools.length) pane.appendChild(el("p", "meta", "tools offered: " + tools.join(", ")));
    if (d.sys !== null) pane.appendChild(msg("system", "system prompt", S(d.sys)));
    if (d.usr !== null) pane.appendChild(msg("user", "user prompt", S(d.usr)));
    d.turns.forEach(function (t, n) {
      var box = el("div", "msg");
      box.appendChild(el("div", "who", "turn " + n + " · " + t.ti + " tokens in / " + t.to + " out · " + t.l + " s" +
        (t.b !== null ? " (server " + t.b + " s)" : "") + " · finish " + t.fr + (t.lk ? " · text looks like a tool call (not counted)" : "")));
      if (t.c !== null && S(t.c) !== "") box.appendChild(pre(S(t.c)));
      t.k.forEach(function (k) {
        var res = S(k.r), status = "";
        try { status = JSON.parse(res).status; } catch (e) { status = ""; }
        var c = el("div", "call" + (status === "ok" ? "" : " err"));
        var title = el("div", null, "call " + S(k.n));
        k.f.forEach(function (f) { title.appendChild(el("span", "flag", f)); });
        c.appendChild(title);
        c.appendChild(el("div", "who", "arguments")); c.appendChild(pre(pretty(S(k.a))));
        c.appendChild(el("div", "who", "result")); c.appendChild(pre(pretty(res)));
        box.appendChild(c);
      });
      pane.appendChild(box);
    });
    if (d.ans !== null) pane.appendChild(msg("user", "final answer", S(d.ans)));
    if (d.sub !== null) pane.appendChild(msg("system", "submissions", pretty(S(d.sub))));
    if (d.x !== null) { pane.appendChild(el("h3", null, "judge, kind and other fields")); pane.appendChild(pre(pretty(S(d.x)))); }
  }
  function apply(fromUi) {
    var h = fromUi ? Object.assign(readHash(), state()) : readHash();
    if (fromUi) writeHash(h);
    matches = filter(h);
    renderList(h.run);
  }
  function route() {
    var h = readHash();
    setFromHash(h);
    apply(false);
    if (h.run !== undefined && h.run !== "") {
      var t = performance.now();
      renderDetail(+h.run);
      document.body.dataset.openMs = String(Math.round(performance.now() - t));
    }
  }
  var t0 = performance.now();
  fillSelects();
  route();
  window.addEventListener("hashchange", route);
  document.body.dataset.ready = String(Math.round(performance.now()));
  document.body.dataset.scriptMs = String(Math.round(performance.now() - t0));
})();
