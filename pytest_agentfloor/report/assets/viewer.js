"use strict";
// agentfloor transcript viewer. Every model-controlled string reaches the page through
// textContent only (el() below); nothing is fetched from anywhere.
//
// The URL hash is the whole state: filters (model, tier, task, outcome, fm, unmet, source, item,
// vs, differ, q), the sort (sort=col or sort=-col) and the open run(s): run=REF[,REF...], where
// REF = session/model/case/variant/instance/rN, each part percent-encoded. A run is named by what
// it is, never by its row, so a link survives a regenerated file; two or more REFs are shown side
// by side, aligned turn by turn, the first divergent turn marked.
//
// Only the index (af-index) is parsed before the list is drawn. The transcripts come in three
// gzip+base64 blocks (viewer.py transcript_blocks), inflated once, after the first paint or when
// first needed: af-text (the distinct strings, NUL-separated; search runs over it lowercased as
// one text), af-post (each run's string ids) and af-runs (one JSON line per run, parsed when that
// run is opened).
(function () {
  var PAGE = 60;  // rows drawn at first (a screenful and more); more are drawn as the list is scrolled
  function measure(name, start) {  // a performance measure for benchmarks/bench_viewer.py, where the browser has them
    try { performance.measure(name, {start: start}); } catch (e) { /* an older browser: no figure, same page */ }
  }
  var t0 = performance.now();
  var idx = JSON.parse(document.getElementById("af-index").textContent);
  measure("af-index", t0);
  var C = {}; idx.columns.forEach(function (name, i) { C[name] = i; });
  (function () {  // text columns come as positions in a list of their values (viewer.py pack_index)
    Object.keys(idx.dicts || {}).forEach(function (name) {
      var c = C[name], values = idx.dicts[name], all = idx.rows;
      for (var i = 0; i < all.length; i++) if (all[i][c] !== null) all[i][c] = values[all[i][c]];
    });
  })();
  var rows = idx.rows, strings = null, lowText = null, seps = null, post = null, lines = null, parsed = {};
  var byRef = null, pending = {};
  var multi = idx.sources.length > 1;
  var FILTERS = [["source", "f-source"], ["model", "f-model"], ["tier", "f-tier"], ["task", "f-task"],
                 ["outcome", "f-outcome"], ["failure_mode", "f-fm"], ["first_unmet", "f-unmet"]];
  var HASH = {source: "source", model: "model", tier: "tier", task: "task", outcome: "outcome",
              failure_mode: "fm", first_unmet: "unmet"};
  var LABELS = {source: "session", model: "model", tier: "tier", task: "case", outcome: "outcome", fm: "failure mode",
                unmet: "first unmet", item: "item", vs: "side by side with", differ: "outcome differs from",
                q: "text"};
  var KNOWN = ["source", "model", "tier", "task", "outcome", "fm", "unmet", "item", "vs", "differ", "q", "sort", "run"];
  // list columns: [header, sort key (a function of a row), cell text]
  // natural order ("A2" before "A10"), case folded; plain code, since building an Intl.Collator costs
  // tens of milliseconds at load and localeCompare with options builds one per comparison
  function collate(a, b) {
    var x = a.toLowerCase().match(/\d+|\D+/g) || [], y = b.toLowerCase().match(/\d+|\D+/g) || [];
    for (var i = 0; i < x.length && i < y.length; i++) {
      if (x[i] === y[i]) continue;
      if (/^\d/.test(x[i]) && /^\d/.test(y[i]) && +x[i] !== +y[i]) return +x[i] - +y[i];
      return x[i] < y[i] ? -1 : 1;
    }
    return x.length - y.length || (a < b ? -1 : a > b ? 1 : 0);
  }
  var collator = null;
  function num(v) { return v === null || v === undefined ? null : +v; }
  var COLS = [
    ["session", function (r) { return r[C.source]; }, function (r) { return r[C.source]; }],
    ["model", function (r) { return r[C.model]; }, function (r) { return r[C.model]; }],
    ["tier", function (r) { return r[C.tier]; }, function (r) { return r[C.tier]; }],
    ["case", function (r) { return r[C.task]; }, function (r) { return r[C.task]; }],
    ["v/i/r", function (r) { return r[C.variant] + "/" + r[C.instance] + "/" + r[C.run]; },
      function (r) { return r[C.variant] + "/" + r[C.instance] + "/r" + r[C.run]; }],
    ["outcome", function (r) { return r[C.outcome]; }, function (r) { return r[C.outcome]; }],
    ["mode", function (r) { return r[C.failure_mode]; }, function (r) { return r[C.failure_mode] || ""; }],
    ["turns", function (r) { return num(r[C.turns]); }, function (r) { return r[C.turns]; }],
    ["tokens", function (r) { return (r[C.tokens_in] || 0) + (r[C.tokens_out] || 0); },
      function (r) { return (r[C.tokens_in] || 0) + "/" + (r[C.tokens_out] || 0); }],
    ["cost", function (r) { return num(r[C.cost_usd]); }, function (r) { return money(r[C.cost_usd]); }],
    ["headline", function (r) { return r[C.headline]; }, function (r) { return r[C.headline]; }]
  ];
  if (!multi) COLS.shift();
  var shown = PAGE, matches = [], cur = -1, picked = {}, marks = [], markAt = -1;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function money(v) {
    if (v === null || v === undefined) return "unknown";
    return "$" + (+v).toFixed(+v !== 0 && Math.abs(v) < 0.01 ? 6 : 4);
  }
  function S(i) { return i === null || i === undefined ? null : strings[i]; }
  // --- the packed blocks --------------------------------------------------------------------
  var parsedAll = new Promise(function (resolve) {  // the blocks follow this script in the file
    if (document.readyState !== "loading") resolve(); else document.addEventListener("DOMContentLoaded", resolve);
  });
  function inflate(id) {
    // a block's bytes, un-gzipped by the browser (no script-side inflater, nothing fetched)
    if (pending[id]) return pending[id];
    pending[id] = parsedAll.then(function () {
      if (typeof DecompressionStream === "undefined") throw new Error("this browser cannot inflate the " +
        "transcripts (DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later)");
      var bin = atob(document.getElementById(id).textContent), bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
    });
    return pending[id];
  }
  function loadText() {
    // strings, and the lowercased text with the offsets of its separators, for search
    if (pending.text) return pending.text;
    var t = performance.now();
    pending.text = Promise.all([inflate("af-text"), inflate("af-post")]).then(function (got) {
      var text = new TextDecoder().decode(got[0]);
      strings = idx.nstrings ? text.split("\u0000") : [];
      lowText = text.toLowerCase();
      var at = [], p = -1;
      while ((p = lowText.indexOf("\u0000", p + 1)) >= 0) at.push(p);
      seps = at.length === Math.max(0, strings.length - 1) ? Int32Array.from(at) : null;  // null: search string by string
      var u = new Uint32Array(got[1]);
      if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) {  // a big-endian machine: the block is little-endian
        var dv = new DataView(got[1]); u = new Uint32Array(u.length);
        for (var i = 0; i < u.length; i++) u[i] = dv.getUint32(4 * i, true);
      }
      post = {off: u.subarray(0, rows.length + 1), ids: u.subarray(rows.length + 1)};
      measure("af-text", t);
    });
    return pending.text;
  }
  function loadRuns() {
    if (pending.runs) return pending.runs;
    var t = performance.now();
    pending.runs = loadText().then(function () { return inflate("af-runs"); }).then(function (got) {  // search first
      lines = new TextDecoder().decode(got).split("\n");
      measure("af-runs", t);
    });
    return pending.runs;
  }
  function detail(i) {
    // one run's transcript (loadRuns() must have finished)
    if (!parsed[i]) parsed[i] = JSON.parse(lines[i]);
    return parsed[i];
  }
  function failed(err) {
    var box = document.getElementById("detail");
    box.textContent = "";
    box.appendChild(el("p", "missing", "The transcripts could not be read: " + (err && err.message || err)));
  }
  // --- run references ---------------------------------------------------------------------
  function refOf(i) {
    var r = rows[i];
    return [r[C.source], r[C.model], r[C.task], r[C.variant], r[C.instance], "r" + r[C.run]]
      .map(function (p) { return encodeURIComponent(String(p)); }).join("/");
  }
  function itemOf(i) { var r = rows[i]; return r[C.task] + "/" + r[C.variant] + "/" + r[C.instance] + "/r" + r[C.run]; }
  function refText(ref) {
    var p = ref.split("/").map(function (x) { try { return decodeURIComponent(x); } catch (e) { return x; } });
    if (p.length !== 6) return ref;
    return p[1] + " · " + p[2] + " [" + p[3] + "-" + p[4] + "-" + p[5] + "]" + (multi || p[0] ? " · session " + p[0] : "");
  }
  function lookup(ref) {
    // {i: row} | {i: row, note: "..."} | {missing: "..."}
    if (byRef === null) {
      byRef = {};
      for (var i = 0; i < rows.length; i++) byRef[refOf(i)] = i;  // a run recorded twice: the last wins
    }
    if (/^\d+$/.test(ref)) return {missing: "run=" + ref + " names a row number, which changes when the file is " +
      "regenerated; this viewer names runs by session, model, case, variant, instance and run instead."};
    if (byRef[ref] !== undefined) return {i: byRef[ref]};
    var p = ref.split("/");
    if (p.length === 6) {  // the same run in another session label (e.g. a file written from a copied runs.jsonl)
      var tail = p.slice(1).join("/"), found = [];
      Object.keys(byRef).forEach(function (k) { if (k.slice(k.indexOf("/") + 1) === tail) found.push(byRef[k]); });
      if (found.length === 1 && !multi) return {i: found[0], note: "The link names session " +
        refText(ref).split(" · session ")[1] + "; this file holds one session, " + rows[found[0]][C.source] +
        ", whose run of the same item is shown."};
    }
    return {missing: "The run " + refText(ref) + " is not in this file: it may have been left out of this " +
      "viewer or the file was regenerated without it."};
  }
  // --- the hash ---------------------------------------------------------------------------
  function readHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var p = kv.indexOf("="), k = p < 0 ? kv : kv.slice(0, p), v = p < 0 ? "" : kv.slice(p + 1);
      if (k === "run") { out.run = v; return; }  // REFs keep their own escapes
      try { out[decodeURIComponent(k)] = decodeURIComponent(v.replace(/\+/g, " ")); } catch (e) { /* bad escape */ }
    });
    return out;
  }
  function hashOf(h) {
    var parts = [];
    Object.keys(h).forEach(function (k) {
      if (h[k] === "" || h[k] === null || h[k] === undefined) return;
      parts.push(encodeURIComponent(k) + "=" + (k === "run" ? h[k] : encodeURIComponent(h[k])));
    });
    return parts.length ? "#" + parts.join("&") : "#";
  }
  function writeHash(h) {
    var next = hashOf(h);
    if (location.hash !== next && !(next === "#" && location.hash === "")) history.replaceState(null, "", next);
  }
  function go(h) { writeHash(h); route(); }
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
      Object.keys(seen).sort(collate)
        .forEach(function (v) {
          var label = v;
          if (f[0] === "failure_mode" && idx.failure_names[v]) label = v + " " + idx.failure_names[v];
          if (f[0] === "first_unmet" && idx.obligation_names[v]) label = v + " " + idx.obligation_names[v];
          var o = el("option", null, label + " (" + seen[v] + ")"); o.value = v; sel.appendChild(o);
        });
      sel.addEventListener("change", function () { shown = PAGE; cur = -1; apply(true); });
    });
    if (!multi) document.getElementById("l-source").style.display = "none";
    var timer = null;
    var typed = null;
    document.getElementById("f-q").addEventListener("input", function () {
      clearTimeout(timer);
      if (typed === null) typed = performance.now();
      timer = setTimeout(function () {
        shown = PAGE; cur = -1;
        var h = readHash(), done = [apply(true)];
        if (h.run) done.push(openRuns(readHash()));
        Promise.all(done).then(function () {
          // data-search-ms: first keystroke to the list (and open run) painted, the typing pause included
          afterPaint(function () {
            if (typed !== null) document.body.dataset.searchMs = String(Math.round(performance.now() - typed));
            typed = null;
          });
        });
      }, 120);
    });
  }
  function setFromHash(h) {
    FILTERS.forEach(function (f) {
      var sel = document.getElementById(f[1]), v = h[HASH[f[0]]] || "";
      sel.value = v;
      if (sel.value !== v) { var o = el("option", null, v + " (0)"); o.value = v; sel.appendChild(o); sel.value = v; }
    });
    var q = document.getElementById("f-q");
    if (q.value !== (h.q || "")) q.value = h.q || "";
  }
  // --- full-text search: over the distinct strings as one text, then the runs that hold a hit ----
  function stringAt(p) {
    // the string holding offset p of lowText: how many separators come before it
    var lo = 0, hi = seps.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (seps[mid] < p) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function textMatches(q) {
    var hit = new Uint8Array(strings.length), any = false, p = 0, j;
    if (seps) {
      while ((p = lowText.indexOf(q, p)) >= 0) {
        j = stringAt(p); hit[j] = 1; any = true;
        p = j < seps.length ? seps[j] + 1 : lowText.length;  // on to the next string
      }
    } else {  // a lowercased character changed the separators' count: one string at a time
      for (j = 0; j < strings.length; j++) if (strings[j].toLowerCase().indexOf(q) >= 0) { hit[j] = 1; any = true; }
    }
    var out = new Uint8Array(rows.length);
    if (!any) return out;
    var off = post.off, ids = post.ids;
    for (var i = 0; i < rows.length; i++) {
      for (var k = off[i]; k < off[i + 1]; k++) if (hit[ids[k]]) { out[i] = 1; break; }
    }
    return out;
  }
  function counterpart(i, model) {
    // the run of the same item by `model`, in the same session if it has one there
    var best = -1, key = itemOf(i);
    for (var j = 0; j < rows.length; j++) {
      if (j === i || rows[j][C.model] !== model || itemOf(j) !== key) continue;
      if (rows[j][C.source] === rows[i][C.source]) return j;
      if (best < 0) best = j;
    }
    return best;
  }
  function filter(h) {
    var tests = [];
    FILTERS.forEach(function (f) {
      var v = h[HASH[f[0]]];
      if (v) tests.push([C[f[0]], v]);
    });
    var q = (h.q || "").toLowerCase(), out = [], text = q ? textMatches(q) : null;
    var ref = h.differ || "", other = null;
    if (ref) {
      other = {};
      rows.forEach(function (r, j) { if (r[C.model] === ref) other[r[C.source] + "\u0000" + itemOf(j)] = r[C.outcome]; });
    }
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], ok = true;
      for (var t = 0; t < tests.length; t++) {
        var cell = r[tests[t][0]];
        if ((cell === null ? "—" : String(cell)) !== tests[t][1]) { ok = false; break; }
      }
      if (ok && h.item && itemOf(i) !== h.item) ok = false;
      if (ok && other) {
        var o = other[r[C.source] + "\u0000" + itemOf(i)];
        if (r[C.model] === ref || o === undefined || o === r[C.outcome] || o === "infra" || r[C.outcome] === "infra") ok = false;
      }
      if (ok && q && !text[i] && String(r[C.headline]).toLowerCase().indexOf(q) < 0 &&
          String(r[C.task]).toLowerCase().indexOf(q) < 0 && String(r[C.model]).toLowerCase().indexOf(q) < 0) ok = false;
      if (ok) out.push(i);
    }
    if (h.sort) {
      var desc = h.sort.charAt(0) === "-", name = desc ? h.sort.slice(1) : h.sort, col = null;
      COLS.forEach(function (c) { if (c[0] === name) col = c[1]; });
      if (col) {
        collator = collator || new Intl.Collator(undefined, {numeric: true});  // built once, when first sorting
        var sorter = collator.compare, keyed = out.map(function (i) { return [col(rows[i]), i]; });
        keyed.sort(function (a, b) {
          var x = a[0], y = b[0];
          if (x === null || x === undefined || x === "") return y === null || y === undefined || y === "" ? a[1] - b[1] : 1;
          if (y === null || y === undefined || y === "") return -1;
          var c = typeof x === "number" && typeof y === "number" ? x - y :
            sorter(String(x), String(y));
          return (desc ? -c : c) || a[1] - b[1];
        });
        out = keyed.map(function (p) { return p[1]; });
      }
    }
    return out;
  }
  // --- filters in force: every one shown, every one removable --------------------------------
  function renderChips(h) {
    var box = document.getElementById("chips");
    box.textContent = "";
    Object.keys(h).forEach(function (k) {
      if (k === "run" || k === "sort" || h[k] === "" || h[k] === undefined) return;
      var name = KNOWN.indexOf(k) < 0 ? k + " (not a filter this viewer knows; ignored)" : LABELS[k] || k;
      var chip = el("span", "chip", name + ": " + h[k] + " ");
      var x = el("button", "x", "×");
      x.title = "remove this filter"; x.setAttribute("aria-label", "remove filter " + name);
      x.addEventListener("click", function () { var g = readHash(); delete g[k]; if (k === "vs") delete g.differ; shown = PAGE; go(g); });
      chip.appendChild(x); box.appendChild(chip);
    });
    if (box.childNodes.length > 1) {
      var all = el("button", "clear", "clear all filters");
      all.addEventListener("click", function () { var g = readHash(); go({run: g.run, sort: g.sort}); });
      box.appendChild(all);
    }
    var n = Object.keys(picked).length;
    if (n) {
      var b = el("button", "sbs-go", "side by side (" + n + " picked)");
      b.addEventListener("click", function () { var g = readHash(); g.run = Object.keys(picked).join(","); picked = {}; go(g); });
      box.appendChild(b);
      var c = el("button", "clear", "unpick");
      c.addEventListener("click", function () { picked = {}; route(); });
      box.appendChild(c);
    }
  }
  function renderList(h) {
    var list = document.getElementById("list");
    list.textContent = "";
    var n = matches.length, pass = 0, open = {};
    (h.run || "").split(",").forEach(function (ref) { open[ref] = 1; });
    for (var i = 0; i < n; i++) if (rows[matches[i]][C.outcome] === "pass") pass++;
    document.getElementById("count").textContent = n + " of " + rows.length + " runs" +
      (n ? " · " + pass + " passed (" + (100 * pass / n).toFixed(1) + "%)" : "");
    if (!n) { list.appendChild(el("p", "empty", "No run matches these filters.")); return; }
    var table = el("table"), thead = el("thead"), tr = el("tr");
    var pick = el("th", "pick", "⊕"); pick.title = "pick runs to put side by side (key x)"; tr.appendChild(pick);
    var sort = h.sort || "";
    COLS.forEach(function (c) {
      var th = el("th", c[0] === "headline" ? "h" : null, c[0]), arrow = "";
      if (sort === c[0]) arrow = " ▲"; else if (sort === "-" + c[0]) arrow = " ▼";
      th.textContent = c[0] + arrow;
      th.dataset.col = c[0]; th.title = "sort by " + c[0]; th.className = (th.className + " sort").trim();
      th.setAttribute("aria-sort", arrow ? (arrow === " ▲" ? "ascending" : "descending") : "none");
      tr.appendChild(th);
    });
    thead.appendChild(tr); table.appendChild(thead);
    thead.addEventListener("click", function (ev) {
      var th = ev.target.closest("th"); if (!th || !th.dataset.col) return;
      var g = readHash(), c = th.dataset.col;
      g.sort = g.sort === c ? "-" + c : (g.sort === "-" + c ? "" : c);
      cur = -1; go(g);
    });
    var body = el("tbody");
    body.addEventListener("click", function (ev) {
      var t = ev.target.closest("tr");
      if (!t) return;
      if (ev.target.tagName === "INPUT") { togglePick(t.dataset.ref); return; }
      cur = +t.dataset.n; openRow(matches[cur]);
    });
    table.appendChild(body); list.appendChild(table);
    var upTo = shown;
    shown = 0;
    drawRows(Math.max(upTo, PAGE), open, (h.q || "").toLowerCase());
  }
  var moreSeen = null;
  function drawRows(upTo, open, q) {
    // draw the list's rows from `shown` up to `upTo` (appended: the list keeps its scroll position)
    var list = document.getElementById("list"), body = list.querySelector("tbody");
    if (!body) return;
    var old = list.querySelector("button.more");
    if (old) old.remove();
    if (moreSeen) { moreSeen.disconnect(); moreSeen = null; }
    var frag = document.createDocumentFragment(), heads = [], stop = Math.min(upTo, matches.length);
    for (var n = shown; n < stop; n++) {
      var i = matches[n], r = rows[i], row = el("tr"), ref = refOf(i);
      row.dataset.ref = ref; row.dataset.n = n;
      row.className = (open[ref] ? "sel" : "") + (n === cur ? " cur" : "");
      var box = el("td", "pick"), cb = el("input"); cb.type = "checkbox"; cb.checked = !!picked[ref];
      cb.setAttribute("aria-label", "pick " + refText(ref)); box.appendChild(cb); row.appendChild(box);
      for (var c = 0; c < COLS.length; c++) {
        var name = COLS[c][0];
        var td = el("td", name === "headline" ? "h" : (name === "outcome" ? r[C.outcome] : (name === "session" ? "src" : null)),
                    COLS[c][2](r));
        if (name === "session") td.title = r[C.source];
        if (name === "cost" && r[C.cost_usd] === null) td.className = "na";
        if (name === "headline") heads.push(td);
        row.appendChild(td);
      }
      frag.appendChild(row);
    }
    body.appendChild(frag);
    shown = Math.max(shown, stop);
    if (q) highlight(heads, q);
    var left = matches.length - shown;
    if (left > 0) {
      var more = el("button", "more", "show " + Math.min(PAGE, left) + " more (" + left + " not shown)");
      more.addEventListener("click", function () { drawRows(shown + PAGE, openRefs(), q); });
      list.appendChild(more);
      if (typeof IntersectionObserver !== "undefined") {  // scrolled near the end: draw the next rows
        moreSeen = new IntersectionObserver(function (seen) {
          if (seen.some(function (e) { return e.isIntersecting; })) drawRows(shown + PAGE, openRefs(), q);
        }, {root: list, rootMargin: "400px"});
        moreSeen.observe(more);
      }
    }
  }
  function openRefs() {
    var open = {};
    (readHash().run || "").split(",").forEach(function (ref) { open[ref] = 1; });
    return open;
  }
  function togglePick(ref) {
    if (picked[ref]) delete picked[ref]; else picked[ref] = 1;
    renderChips(readHash());
    var cb = document.querySelector('#list tr[data-ref="' + CSS.escape(ref) + '"] input');
    if (cb) cb.checked = !!picked[ref];
  }
  function openRow(i) {
    var h = readHash(), ref = refOf(i), j = h.vs ? counterpart(i, h.vs) : -1;
    h.run = j >= 0 ? ref + "," + refOf(j) : ref;
    go(h);
    var pane = document.getElementById("detail");
    if (pane.getBoundingClientRect().top > window.innerHeight) pane.scrollIntoView();  // one-column layout
  }
  // --- one run ----------------------------------------------------------------------------
  function pre(text) { return el("pre", null, text); }
  function pretty(s) {
    if (s === null) return "";
    try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; }
  }
  function msg(cls, who, text) {
    var d = el("div", "msg " + cls); d.appendChild(el("div", "who", who)); d.appendChild(pre(text)); return d;
  }
  function limitsOf(d) {
    var lim = d.lim || [], out = [];
    [[0, "turns"], [1, "calls"], [2, "tokens"]].forEach(function (p) {
      if (lim[p[0]] !== null && lim[p[0]] !== undefined) out.push(lim[p[0]] + " " + p[1]);
    });
    return out;
  }
  function verdictTable(d) {
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
    var box = el("div", "scroll"); box.appendChild(vt); return box;
  }
  function turnBox(t, n) {
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
    return box;
  }
  function permalink(refsList) {
    var a = el("a", "permalink", refsList.length > 1 ? "link to these runs" : "link to this run");
    a.href = "#run=" + refsList.join(",");
    a.title = "names the runs themselves, so it still works after the file is regenerated";
    return a;
  }
  function sameItem(i) {
    var key = itemOf(i), out = [];
    for (var j = 0; j < rows.length; j++) if (j !== i && itemOf(j) === key) out.push(j);
    return out;
  }
  function renderDetail(pane, i) {
    var r = rows[i], d = detail(i);
    var h2 = el("h2", null, r[C.model] + " · " + r[C.task] + " [" + r[C.variant] + "-" + r[C.instance] + "-r" + r[C.run] + "]");
    pane.appendChild(h2);
    var o = el("p"); o.appendChild(el("span", r[C.outcome], r[C.outcome].toUpperCase()));
    if (r[C.headline]) { o.appendChild(document.createTextNode(" ")); o.appendChild(el("span", "head", r[C.headline])); }
    pane.appendChild(o);
    var limits = limitsOf(d);
    pane.appendChild(el("p", "meta", "tier " + r[C.tier] + " · ended by " + (d.end || "?") + " · " + r[C.turns] +
      " turn(s), " + r[C.calls] + " call(s) · tokens " + r[C.tokens_in] + " in / " + r[C.tokens_out] + " out · model " +
      r[C.latency_s] + " s · cost " + money(r[C.cost_usd]) + (limits.length ? " · limits: " + limits.join(", ") : "") +
      (r[C.case_hash] ? " · case version " + r[C.case_hash] : "") +
      (d.node ? " · " + d.node : "") + (multi ? " · session " + r[C.source] : "")));
    var tools = el("p", "meta"); tools.appendChild(permalink([refOf(i)]));
    var others = sameItem(i);
    if (others.length) {
      tools.appendChild(document.createTextNode(" · same item elsewhere: "));
      var all = el("a", "sbs-all", "all " + (others.length + 1) + " side by side");
      all.href = "#run=" + [refOf(i)].concat(others.map(refOf)).join(",");
      tools.appendChild(all);
      others.slice(0, 12).forEach(function (j) {
        tools.appendChild(document.createTextNode(" · "));
        var a = el("a", "beside", rows[j][C.model] + (multi ? " @ " + rows[j][C.source] : "") + " (" + rows[j][C.outcome] + ")");
        a.href = "#run=" + refOf(i) + "," + refOf(j); a.title = "put beside this run";
        tools.appendChild(a);
      });
      if (others.length > 12) tools.appendChild(document.createTextNode(" · " + (others.length - 12) + " more"));
    }
    pane.appendChild(tools);
    if (d.err !== null) pane.appendChild(msg("system", "error", S(d.err)));
    pane.appendChild(el("h3", null, "grader's account"));
    pane.appendChild(verdictTable(d));
    if (r[C.outcome] === "fail") pane.appendChild(el("p", "meta", (r[C.failure_mode] ? "failure mode " +
      r[C.failure_mode] + " (" + (idx.failure_names[r[C.failure_mode]] || "custom") + ") · " : "") + "first unmet " +
      (r[C.first_unmet] || "—") + " · terminal flag " + (r[C.terminal_flag] || "—")));
    pane.appendChild(el("h3", null, "transcript"));
    var offered = d.tools !== null ? JSON.parse(S(d.tools)) : [];
    if (offered.length) pane.appendChild(el("p", "meta", "tools offered: " + offered.join(", ")));
    if (d.sys !== null) pane.appendChild(msg("system", "system prompt", S(d.sys)));
    if (d.usr !== null) pane.appendChild(msg("user", "user prompt", S(d.usr)));
    d.turns.forEach(function (t, n) { pane.appendChild(turnBox(t, n)); });
    if (d.ans !== null) pane.appendChild(msg("user", "final answer", S(d.ans)));
    if (d.sub !== null) pane.appendChild(msg("system", "submissions", pretty(S(d.sub))));
    if (d.x !== null) { pane.appendChild(el("h3", null, "judge, kind and other fields")); pane.appendChild(pre(pretty(S(d.x)))); }
  }
  // --- side by side -------------------------------------------------------------------------
  function turnSig(t) {
    if (!t) return null;
    return JSON.stringify([S(t.c), t.k.map(function (k) { return [S(k.n), S(k.a)]; })]);
  }
  function renderSideBySide(pane, list) {
    var ds = list.map(detail);
    var items = {}; list.forEach(function (i) { items[itemOf(i)] = 1; });
    var h2 = el("h2", null, list.length + " runs side by side · " + Object.keys(items).join(", "));
    pane.appendChild(h2);
    var n = 0; ds.forEach(function (d) { n = Math.max(n, d.turns.length); });
    var sameSys = ds.every(function (d) { return d.sys === ds[0].sys; });
    var sameUsr = ds.every(function (d) { return d.usr === ds[0].usr; });
    var first = -1, sigs = [];
    for (var t = 0; t < n; t++) {
      var s = ds.map(function (d) { return turnSig(d.turns[t]); });
      sigs.push(s);
      if (first < 0 && s.some(function (x) { return x !== s[0]; })) first = t;
    }
    var sameAns = ds.every(function (d) { return S(d.ans) === S(ds[0].ans); });
    var note = !sameSys || !sameUsr ? "The prompts differ (another case version or variant?): the runs diverge before the first turn." :
      first >= 0 ? "First divergence: turn " + first + " (marked)." :
      sameAns ? "The transcripts are identical turn by turn." : "Same turns; the final answers differ.";
    var meta = el("p", "meta", note + " ");
    if (first >= 0) {
      var jump = el("a", null, "go to turn " + first); jump.href = "javascript:void 0";
      jump.addEventListener("click", function () { var x = pane.querySelector("tr.diverge"); if (x) x.scrollIntoView({block: "center"}); });
      meta.appendChild(jump); meta.appendChild(document.createTextNode(" · "));
    }
    meta.appendChild(permalink(list.map(refOf)));
    pane.appendChild(meta);
    var box = el("div", "scroll sbs-box"), table = el("table", "sbs"), head = el("tr");
    table.style.width = (110 + 380 * list.length) + "px";
    head.appendChild(el("th", "rowh", ""));
    list.forEach(function (i, k) {
      var r = rows[i], th = el("th", null);
      var a = el("a", null, r[C.model] + (multi ? " @ " + r[C.source] : "")); a.href = "#run=" + refOf(i);
      a.title = "open this run alone";
      th.appendChild(a);
      th.appendChild(el("div", "meta", r[C.task] + " [" + r[C.variant] + "-" + r[C.instance] + "-r" + r[C.run] + "]" +
        (r[C.case_hash] ? " · case " + r[C.case_hash] : "")));
      var o = el("div"); o.appendChild(el("span", r[C.outcome], r[C.outcome].toUpperCase()));
      if (r[C.headline]) { o.appendChild(document.createTextNode(" ")); o.appendChild(el("span", "head", r[C.headline])); }
      th.appendChild(o);
      th.appendChild(el("div", "meta", r[C.turns] + " turn(s), " + r[C.calls] + " call(s) · tokens " + r[C.tokens_in] +
        "/" + r[C.tokens_out] + " · " + r[C.latency_s] + " s · cost " + money(r[C.cost_usd]) + " · ended by " + (ds[k].end || "?")));
      head.appendChild(th);
    });
    var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
    var body = el("tbody");
    function line(label, cls, cell) {
      var tr = el("tr", cls); tr.appendChild(el("th", "rowh", label));
      list.forEach(function (i, k) { var td = el("td"); cell(td, ds[k], k); tr.appendChild(td); });
      body.appendChild(tr); return tr;
    }
    line("system prompt", sameSys ? "same" : "diverge", function (td, d, k) {
      if (d.sys === null) return;
      if (sameSys && k > 0) { td.appendChild(el("span", "meta", "same as the first")); return; }
      td.appendChild(pre(S(d.sys)));
    });
    line("user prompt", sameUsr ? "same" : "diverge", function (td, d, k) {
      if (d.usr === null) return;
      if (sameUsr && k > 0) { td.appendChild(el("span", "meta", "same as the first")); return; }
      td.appendChild(pre(S(d.usr)));
    });
    for (var u = 0; u < n; u++) {
      (function (u) {
        var tr = line("turn " + u + (u === first ? " · first divergence" : ""), u === first ? "diverge" :
          (first >= 0 && u > first ? "after" : ""), function (td, d, k) {
            var t = d.turns[u];
            if (!t) { td.appendChild(el("span", "meta", "no turn " + u)); td.className = "differs"; return; }
            if (sigs[u][k] !== sigs[u][0]) td.className = "differs";
            td.appendChild(turnBox(t, u));
          });
        tr.dataset.turn = u;
      })(u);
    }
    line("final answer", sameAns ? "" : "differs-row", function (td, d) { if (d.ans !== null) td.appendChild(pre(S(d.ans))); });
    line("grader's account", "", function (td, d) { td.appendChild(verdictTable(d)); });
    table.appendChild(body); box.appendChild(table); pane.appendChild(box);
  }
  // --- highlight ----------------------------------------------------------------------------
  function highlight(nodes, q) {
    Array.prototype.forEach.call(nodes, function (root) {
      var walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), texts = [], node;
      while ((node = walk.nextNode())) if (node.nodeValue.toLowerCase().indexOf(q) >= 0) texts.push(node);
      texts.forEach(function (tn) {
        var s = tn.nodeValue, low = s.toLowerCase(), frag = document.createDocumentFragment(), at = 0, p;
        while ((p = low.indexOf(q, at)) >= 0) {
          if (p > at) frag.appendChild(document.createTextNode(s.slice(at, p)));
          frag.appendChild(el("mark", null, s.slice(p, p + q.length)));
          at = p + q.length;
        }
        if (at < s.length) frag.appendChild(document.createTextNode(s.slice(at)));
        tn.parentNode.replaceChild(frag, tn);
      });
    });
  }
  function openRuns(h) {
    var pane = document.getElementById("detail");
    pane.textContent = "";
    if (lines === null) {  // the transcripts are inflated once, the first time a run is opened
      pane.appendChild(el("p", "empty", "Reading the transcripts…"));
      return loadRuns().then(function () { var g = readHash(); if (g.run && g.run === h.run) openRuns(g); }, failed);
    }
    marks = []; markAt = -1;
    var list = [], notes = [];
    h.run.split(",").forEach(function (ref) {
      if (!ref) return;
      var got = lookup(ref);
      if (got.missing) notes.push(got.missing);
      else { if (got.note) notes.push(got.note); if (list.indexOf(got.i) < 0) list.push(got.i); }
    });
    var bar = el("div", "detail-bar");
    var close = el("button", "close", "close (Esc)");
    close.addEventListener("click", closeRun);
    bar.appendChild(close);
    pane.appendChild(bar);
    notes.forEach(function (t) { pane.appendChild(el("p", "missing", t)); });
    var t0 = performance.now();
    if (list.length === 1) renderDetail(pane, list[0]);
    else if (list.length > 1) renderSideBySide(pane, list);
    document.body.dataset.openMs = String(Math.round(performance.now() - t0));
    var q = (h.q || "").toLowerCase();
    if (q && list.length) {
      highlight([pane], q);
      marks = pane.querySelectorAll("mark");
      bar.appendChild(el("span", "meta found", marks.length + " match" + (marks.length === 1 ? "" : "es") + " of “" +
        h.q + "” in " + (list.length > 1 ? "these runs" : "this run") + (marks.length ? " (n / N: next / previous)" : "")));
      if (marks.length) { markAt = 0; marks[0].classList.add("at"); marks[0].scrollIntoView({block: "center"}); }
    }
    return Promise.resolve();
  }
  function closeRun() { var h = readHash(); delete h.run; go(h); }
  function apply(fromUi) {
    var h = fromUi ? Object.assign(readHash(), state()) : readHash();
    if (fromUi) writeHash(h);
    if (h.q && strings === null) {  // the first search waits for the strings (inflated once)
      renderChips(h);
      document.getElementById("count").textContent = "searching the transcripts…";
      return loadText().then(function () { if (readHash().q === h.q) return apply(false); }, failed);
    }
    var t = performance.now();
    matches = filter(h);
    renderChips(h);
    renderList(h);
    document.body.dataset.filterMs = String(Math.round(performance.now() - t));  // benchmarks/bench_viewer.py
    return Promise.resolve();
  }
  function route() {
    // the page the hash asks for; settles when it is drawn (a search or a run may wait for the transcripts)
    var h = readHash(), done = [];
    setFromHash(h);
    done.push(apply(false));
    if (h.run) done.push(openRuns(h));
    else {
      var pane = document.getElementById("detail");
      pane.textContent = "";
      pane.appendChild(el("p", "empty", "Pick a run on the left (j/k or ↑/↓, then Enter), or tick two or more " +
        "(x) and put them side by side."));
    }
    return Promise.all(done);
  }
  // --- keys ---------------------------------------------------------------------------------
  function moveCursor(step) {
    if (!matches.length) return;
    var next = Math.max(0, Math.min(matches.length - 1, cur + step));
    if (next >= shown) drawRows((Math.floor(next / PAGE) + 1) * PAGE, openRefs(), (readHash().q || "").toLowerCase());
    var old = document.querySelector("#list tr.cur");
    if (old) old.classList.remove("cur");
    cur = next;
    var row = document.querySelector('#list tbody tr[data-n="' + cur + '"]');
    if (row) { row.classList.add("cur"); row.scrollIntoView({block: "nearest"}); }
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var tag = (ev.target && ev.target.tagName) || "";
    var typing = tag === "INPUT" && ev.target.type !== "checkbox" || tag === "SELECT" || tag === "TEXTAREA";
    if (ev.key === "Escape") {
      if (typing) { ev.target.blur(); return; }
      var help = document.getElementById("help");
      if (!help.hidden) { help.hidden = true; return; }
      if (readHash().run) { closeRun(); ev.preventDefault(); }
      return;
    }
    if (typing) { if (ev.key === "Enter" && tag === "INPUT") ev.target.blur(); return; }
    if (ev.key === "j" || ev.key === "ArrowDown") { moveCursor(1); ev.preventDefault(); }
    else if (ev.key === "k" || ev.key === "ArrowUp") { moveCursor(-1); ev.preventDefault(); }
    else if (ev.key === "Enter") { if (cur >= 0 && cur < matches.length) { openRow(matches[cur]); ev.preventDefault(); } }
    else if (ev.key === "x") { if (cur >= 0 && cur < matches.length) togglePick(refOf(matches[cur])); }
    else if (ev.key === "/") { document.getElementById("f-q").focus(); ev.preventDefault(); }
    else if (ev.key === "?") { var hp = document.getElementById("help"); hp.hidden = !hp.hidden; }
    else if ((ev.key === "n" || ev.key === "N") && marks.length) {
      if (markAt >= 0 && marks[markAt]) marks[markAt].classList.remove("at");
      markAt = (markAt + (ev.key === "n" ? 1 : -1) + marks.length) % marks.length;
      marks[markAt].classList.add("at"); marks[markAt].scrollIntoView({block: "center"});
    }
  });
  document.getElementById("keys").addEventListener("click", function () {
    var hp = document.getElementById("help"); hp.hidden = !hp.hidden;
  });
  function afterPaint(fn) {
    // once the frame holding what was drawn has been painted (a hidden page never paints: a timer then)
    var done = false, once = function () { if (!done) { done = true; fn(); } };
    requestAnimationFrame(function () { setTimeout(once, 0); });
    setTimeout(once, 1000);
  }
  var t1 = performance.now();
  fillSelects();
  measure("af-selects", t1);
  window.addEventListener("hashchange", function () { cur = -1; route(); });
  var drawn = route();
  measure("af-draw", t1);
  document.body.dataset.scriptMs = String(Math.round(performance.now() - t0));
  drawn.then(function () {
    afterPaint(function () {
      // body[data-ready]: the page as the link asked for it is on screen (benchmarks/bench_viewer.py reads
      // the time; tests wait for it); then the transcripts are inflated while the user reads the list
      document.body.dataset.ready = String(Math.round(performance.now()));
      loadRuns().catch(function () { /* said when a run or a search needs them */ });
    });
  });
})();
