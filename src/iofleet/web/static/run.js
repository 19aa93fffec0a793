// The Run page: start a plan through the API, then follow the run's
// server-sent events. Reloading the page (or opening it later) reattaches:
// the stream replays what the run has done so far.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  // Okabe-Ito, then four of Paul Tol's; with a dash and a marker each, no two hosts look alike (report/charts.py)
  var PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
                 "#882255", "#999933", "#332288", "#8C564B"];
  var DASHES = ["solid", "dash", "dot", "dashdot", "longdash"];
  var SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star"];
  var source = null, hostTraces = {}, chartsReady = false, planned = 0, estimate = 0, marked = {}, marks = [];
  var CHARTS = ["live-iops", "live-mbs", "live-latency"];

  function text(id, value) { $(id).textContent = value; }
  function fmt(v, digits) { return v === null || v === undefined ? "n/a" : Number(v).toLocaleString("en-US", {maximumFractionDigits: digits}); }
  function secs(s) { if (s === null || s === undefined) return "—"; s = Math.round(s); return s >= 60 ? Math.floor(s / 60) + " min " + (s % 60) + " s" : s + " s"; }

  function post(url, body) {
    return fetch(url, {method: "POST", headers: {"Content-Type": "application/json", "X-CSRF-Token": window.iofleet.csrf},
                       body: JSON.stringify(body || {})})
      .then(function (r) { return r.json().then(function (j) { return {ok: r.ok, status: r.status, body: j}; }); });
  }

  // A fleet's live figures per host are fio's own, of each host's last status
  // round (decoded as its server sends it): IOPS and p99 latency.
  function initCharts(fleet) {
    if (chartsReady) return;
    var layout = function (title, unit) {
      return {title: {text: title}, xaxis: {title: {text: "seconds since the run started"}},
              yaxis: {title: {text: unit}, rangemode: "tozero"}, margin: {t: 40}, legend: {orientation: "h"}};
    };
    Plotly.newPlot("live-iops", [], layout("Live IOPS per host", "IOPS"), {responsive: true, displaylogo: false});
    Plotly.newPlot("live-mbs", [], layout("Live MB/s per host", "MB/s"), {responsive: true, displaylogo: false});
    Plotly.newPlot("live-latency", [], fleet ? layout("Live p99 latency per host (its last round)", "ms")
                                               : layout("Live mean latency per host", "ms"), {responsive: true, displaylogo: false});
    chartsReady = true;
  }

  function trace(host) {
    if (!(host in hostTraces)) {
      var i = Object.keys(hostTraces).length;
      hostTraces[host] = i;
      var t = {x: [], y: [], name: host, mode: "lines+markers",
               line: {color: PALETTE[i % PALETTE.length], dash: DASHES[i % DASHES.length]},
               marker: {symbol: SYMBOLS[i % SYMBOLS.length]}};
      Plotly.addTraces("live-iops", t);
      Plotly.addTraces("live-mbs", Object.assign({}, t));
      Plotly.addTraces("live-latency", Object.assign({}, t));
    }
    return hostTraces[host];
  }

  // A new run starts from nothing: no figure, row, mark or progress of the run before it.
  var current = null;
  function reset() {
    hostTraces = {}; shown = {}; chartsReady = false; marked = {}; marks = []; planned = 0; estimate = 0;
    CHARTS.forEach(function (id) { Plotly.purge(id); });
    $("run-results").querySelectorAll("tr:not(:first-child)").forEach(function (tr) { tr.remove(); });
    $("run-result").hidden = true; $("run-message").hidden = true;
    ["run-id", "run-test", "run-phase", "run-eta", "run-figures"].forEach(function (id) { text(id, ""); });
    $("run-progress").style.width = "0%"; delete $("run-progress").dataset.share;
    $("live-section").dataset.samples = "0"; $("live-section").dataset.marks = "0";
  }

  function showStatus(s) {
    if (!s || s.state === "idle") return;
    var id = s.run_id === undefined ? null : s.run_id;
    if (current !== null && id !== null && id !== current) reset();  // a run this page did not start
    if (id !== null) current = id;
    $("live-section").hidden = false;
    planned = s.tests_planned || planned; estimate = s.estimate_s || estimate;
    if (s.run_id !== null && s.run_id !== undefined) text("run-id", s.run_id);
    studyLine(s);
    text("run-plan", (s.plan || "") + (s.label ? " · label " + s.label : "") +
         (s.external ? " · started by another iofleet process" + (s.pid ? " (pid " + s.pid + ")" : "") : ""));
    text("run-state", s.state + (s.status ? " (" + s.status + ")" : "") + (s.error ? ": " + s.error : ""));
    if (s.state === "ended") { text("run-test", s.tests_done + " of " + planned + " ran"); text("run-phase", "—"); }
    else if (s.test_index !== null && s.test_index !== undefined) text("run-test", (s.test_index + 1) + " of " + planned + ": " + s.test_id);
    if (s.phase && s.state !== "ended") text("run-phase", s.phase);
    text("run-eta", secs(s.elapsed_s) + " / " + (s.state === "ended" ? "done" : secs(s.eta_s)));
    if (estimate && s.eta_s !== null && s.eta_s !== undefined) $("run-progress").style.width = Math.min(100, 100 * (1 - s.eta_s / estimate)) + "%";
    $("stop").disabled = s.state === "ended" || s.state === "stopping" || !!s.external;  // Ctrl-C where it was started
    (s.results || []).forEach(addResult);
    if (s.state === "ended") ended(s);
  }

  // A study (not a plan): what it runs, and its runs so far (a run event of its next run adds it).
  var study = null;
  function studyLine(s) {
    if (s.study) study = {kind: s.study.kind, about: s.study.about, runs: (s.study.runs || []).slice()};
    if (!study || study.kind === "plan") return;
    if (s.run_id !== null && s.run_id !== undefined && study.runs.indexOf(s.run_id) < 0) study.runs.push(s.run_id);
    $("run-study").hidden = false;
    text("run-study", study.kind + ": " + study.about + (study.runs.length > 1 ? " · its runs: " + study.runs.join(", ") : ""));
  }

  var shown = {};
  function addResult(r) {
    if (shown[r.index]) return;
    shown[r.index] = true;
    var row = $("run-results").insertRow(-1);
    [r.index + 1, r.id, r.status, fmt(r.iops, 0), fmt(r.mb_s, 1), fmt(r.p99_ms, 3), r.error || ""].forEach(function (v, i) {
      var cell = row.insertCell(-1); cell.textContent = v; if (i === 1 || i === 2 || i === 6) cell.className = "text";
    });
  }

  function ended(s) {
    // What ran, not 100 %: a stopped run of 4 tests that ran 2 shows half.
    var share = s.status === "complete" || !planned ? 1 : Math.min(1, (s.tests_done || 0) / planned);
    $("run-progress").style.width = (100 * share) + "%";
    $("run-progress").dataset.share = String(share);
    if ($("start-busy") && !$("start-busy").hidden) {  // the other process's run is over: Start is possible
      $("start-busy").hidden = true;
      if ($("start")) { $("start").disabled = false; $("validated").hidden = false; }
    }
    if (s.run_id !== null && s.run_id !== undefined) {
      var a = $("run-result"); a.href = "/results/" + s.run_id; a.hidden = false;
    }
    var m = $("run-message");
    m.hidden = false;
    m.className = "message " + (s.status === "complete" ? "ok" : "error");
    m.textContent = "Run " + (s.run_id === null ? "" : s.run_id + " ") + (s.status || "ended") + (s.error ? ": " + s.error : "") + ".";
  }

  // A run of a study ended and the study goes on: say so until its next run starts (reset).
  function ranOn(s) {
    var m = $("run-message");
    m.hidden = false; m.className = "message ok";
    m.textContent = "Run " + s.run_id + " " + (s.status || "ended") + "; the study goes on with its next run.";
    $("live-section").dataset.ranOn = String(s.run_id);
  }

  // A break in every line between two tests (fio restarts; nothing was measured in between).
  function gap() {
    var idx = Object.values(hostTraces);
    if (!chartsReady || !idx.length) return;
    var xs = idx.map(function () { return [null]; });
    CHARTS.forEach(function (id) { Plotly.extendTraces(id, {x: xs, y: xs}, idx); });
  }

  // Each test starts at a dashed line with its name on both charts.
  function mark(e) {
    if (marked[e.index]) return;
    marked[e.index] = true;
    marks.push({x: e.run_t, name: e.test_id});
    var shapes = marks.map(function (m) {
      return {type: "line", xref: "x", yref: "paper", x0: m.x, x1: m.x, y0: 0, y1: 1, line: {dash: "dot", width: 1, color: "#777"}};
    });
    // Each name runs up its line inside the plot: never cut, never over the title or another name.
    var notes = marks.map(function (m) {
      return {x: m.x, xref: "x", y: 1, yref: "paper", text: m.name, showarrow: false, xanchor: "left", yanchor: "top",
              textangle: -90, font: {size: 10, color: "#555"}};
    });
    CHARTS.forEach(function (id) { Plotly.relayout(id, {shapes: shapes, annotations: notes}); });
    $("live-section").dataset.marks = String(marks.length);
  }

  function live(e) {
    var f = e.fleet || {}, names = Object.keys(e.hosts || {});
    var fleet = names.length > 1 || (names.length === 1 && names[0] !== "local");
    initCharts(fleet);
    mark(e);
    var hosts = Object.keys(e.hosts || {});
    var xs = [], ysI = [], ysM = [], ysL = [], idx = [];
    hosts.forEach(function (h) {
      var v = e.hosts[h] || {};
      idx.push(trace(h)); xs.push([e.run_t]); ysI.push([v.iops]); ysM.push([v.mb_s]); ysL.push([fleet ? v.p99_ms : v.lat_ms]);
    });
    if (idx.length) {
      Plotly.extendTraces("live-iops", {x: xs, y: ysI}, idx);
      Plotly.extendTraces("live-mbs", {x: xs.map(function (x) { return x.slice(); }), y: ysM}, idx);
      Plotly.extendTraces("live-latency", {x: xs.map(function (x) { return x.slice(); }), y: ysL}, idx);
    }
    text("run-figures", fmt(f.iops, 0) + " IOPS · " + fmt(f.mb_s, 1) + " MB/s · mean latency " + fmt(f.lat_ms, 3) + " ms" +
         (f.source === "node_exporter" ? " (disk IOPS from each host's node_exporter, until the first round)" :
          fleet ? " (the last round every host has)" : ""));
    text("run-phase", e.phase + " (" + secs(e.t) + " into the test)");
    if (e.eta_s !== null) { text("run-eta", secs(e.run_t) + " / " + secs(e.eta_s)); if (estimate) $("run-progress").style.width = Math.min(100, 100 * (1 - e.eta_s / estimate)) + "%"; }
    $("live-section").dataset.samples = String(Number($("live-section").dataset.samples || 0) + 1);
  }

  function attach() {
    if (source) source.close();
    source = new EventSource("/api/runs/current/events");
    var on = function (name, fn) { source.addEventListener(name, function (m) { fn(JSON.parse(m.data)); }); };
    on("status", showStatus);
    on("run", showStatus);
    on("preparing", function (p) { text("run-state", "preparing data"); text("run-phase", "preparing data: " + secs(p.elapsed_s)); });
    on("test", function (t) {
      text("run-state", "running"); text("run-test", (t.index + 1) + " of " + planned + ": " + t.id); text("run-phase", "starting");
      gap();
    });
    on("phase", function (p) { text("run-phase", p.phase); });
    on("live", live);
    on("result", addResult);
    on("stopping", function () { text("run-state", "stopping: fio is finishing on every host"); $("stop").disabled = true; });
    on("ended", function (s) {
      if (s.more) { ranOn(s); return; }  // the study goes on with its next run: keep following
      showStatus(s); source.close();
    });
  }

  // The study picked shows its own fields: a plan's name, a study's text (a scenario's YAML) or its settings.
  function showStudyFields() {
    var picked = $("study").value;
    document.querySelectorAll(".studyset").forEach(function (el) { el.hidden = el.dataset.study !== picked; });
  }

  function startBody() {
    var study = $("study").value;
    var targets = $("targets").value.split("\n").map(function (t) { return t.trim(); }).filter(Boolean);
    var body = {study: study, targets: targets.length ? targets : null, label: $("label").value.trim() || null,
                fleet: $("fleet") ? $("fleet").checked : false};
    var text = document.querySelector('.studyset[data-study="' + study + '"] [data-text]');
    if (study === "plan") body.plan = $("plan") ? $("plan").value : null;
    else if (text) body.yaml = text.value;  // a study given as text (a scenario's YAML)
    else {
      body.settings = {};
      document.querySelectorAll('.studyset[data-study="' + study + '"] [data-setting]').forEach(function (el) {
        if (el.type === "checkbox") body.settings[el.dataset.setting] = el.checked;
        else if (el.value.trim()) body.settings[el.dataset.setting] = el.value.trim();
      });
    }
    return body;
  }

  // Validate: the run's own checks, one line each; a failed check disables
  // Start until the form changes (Start without Validate runs them too, and stops at the first).
  function validate() {
    $("validate").disabled = true;
    post("/api/runs/validate", startBody()).then(function (r) {
      $("validate").disabled = false;
      var list = $("checks"), checks = r.body.checks || [{name: "request", ok: false, detail: r.body.error || ("HTTP " + r.status)}];
      list.textContent = ""; list.hidden = false;
      checks.forEach(function (c) {
        var li = document.createElement("li");
        li.className = c.ok ? "ok" : "bad"; li.dataset.check = c.name;
        li.textContent = (c.ok ? "✓ " : "✗ ") + c.name + ": " + c.detail;
        list.appendChild(li);
      });
      var ok = r.ok && r.body.ok;
      text("validated", ok ? "all checks passed" : "a check failed: mend it, then Validate again");
      $("validated").className = "note " + (ok ? "ok" : "error");
      if (!$("start-busy") || $("start-busy").hidden) $("start").disabled = !ok;
    });
  }

  var form = $("start-form");
  if (form) {
    showStudyFields();
    $("study").addEventListener("change", showStudyFields);
    $("validate").addEventListener("click", validate);
    form.addEventListener("input", function () {
      $("checks").hidden = true; $("validated").className = "note warning";
      text("validated", "not validated yet: Validate checks the targets, their room for the data and fio first");
      if (!$("start-busy") || $("start-busy").hidden) $("start").disabled = false;
    });
  }
  if (form) form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var body = startBody();
    $("start").disabled = true;
    post("/api/runs", body).then(function (r) {
      $("start").disabled = false;
      var err = $("start-error");
      if (!r.ok) { err.hidden = false; err.textContent = r.body.error || ("HTTP " + r.status); return; }
      err.hidden = true;
      reset(); current = null; study = null; $("run-study").hidden = true;
      showStatus(r.body);
      attach();
    });
  });

  $("stop").addEventListener("click", function () {
    $("stop").disabled = true;
    post("/api/runs/current/stop").then(function (r) { if (!r.ok) text("run-state", r.body.error); });
  });

  var status = JSON.parse($("run-status").textContent);
  if (status && status.state !== "idle") { showStatus(status); attach(); }
})();
