// What every page needs: the CSRF header on htmx requests, and the charts
// drawn from their JSON blocks (also in content htmx swaps in).
(function () {
  "use strict";
  var csrf = document.querySelector("meta[name='csrf-token']").content;
  window.iofleet = { csrf: csrf };

  document.body.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["X-CSRF-Token"] = csrf;
  });

  function drawCharts(root) {
    root.querySelectorAll("script[type='application/json'][data-chart]").forEach(function (block) {
      var target = document.getElementById(block.dataset.chart);
      if (!target || target.dataset.drawn) return;
      try {
        var fig = JSON.parse(block.textContent);
        Plotly.newPlot(target, fig.data, fig.layout, {responsive: true, displaylogo: false});
        target.dataset.drawn = "1";
      } catch (err) {
        target.textContent = "Chart could not be drawn: " + err;
        console.error(err);
      }
    });
  }
  window.iofleet.drawCharts = drawCharts;
  drawCharts(document);
  document.body.addEventListener("htmx:afterSwap", function (e) { drawCharts(e.detail.target); });
})();
