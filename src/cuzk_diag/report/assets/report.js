// cuzk-diag HTML report: draw every chart from its inlined Vega-Lite spec (SVG renderer),
// open a rule's documentation when a link points at it, and open all of them for printing.
(function () {
  "use strict";
  var specs = JSON.parse(document.getElementById("cuzk-diag-specs").textContent);
  var body = document.body;
  var jobs = Object.keys(specs).map(function (id) {
    var el = document.getElementById(id);
    return vegaEmbed(el, specs[id], {
      renderer: "svg",
      actions: { export: true, source: false, compiled: false, editor: false },
      tooltip: { theme: "light" }
    }).catch(function (err) {
      el.textContent = "This chart could not be drawn: " + err;
      el.className += " chart-error";
      console.error("cuzk-diag: chart " + id + ": " + err);
      throw err;
    });
  });
  Promise.allSettled(jobs).then(function (results) {
    var failed = results.filter(function (r) { return r.status === "rejected"; }).length;
    body.setAttribute("data-charts", failed ? "failed" : "drawn");
  });

  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === "DETAILS") { el.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  var closed = [];
  window.addEventListener("beforeprint", function () {
    closed = Array.prototype.filter.call(document.querySelectorAll("details.rule"), function (d) {
      return !d.open;
    });
    closed.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (d) { d.open = false; });
    closed = [];
  });
})();
