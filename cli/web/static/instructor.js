/* The instructor page: gradebook columns sort on a click; the page is drawn again when the
   results folder changes (a grading run still going fills it in). */
(function () {
  "use strict";
  var el = document.getElementById("page-data");
  var stamp = el ? JSON.parse(el.textContent).stamp : 0;

  function value(cell) {
    var text = cell.textContent.trim();
    var n = parseFloat(text.replace(/[^0-9.+-]/g, " ").trim().split(" ")[0]);
    return isNaN(n) ? text.toLowerCase() : n;
  }

  document.querySelectorAll("table.students, table.mistakes").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.classList.add("sortable");
      th.addEventListener("click", function () {
        var down = th.dataset.dir !== "down";
        table.querySelectorAll("thead th").forEach(function (o) { delete o.dataset.dir; });
        th.dataset.dir = down ? "down" : "up";
        var body = table.tBodies[0];
        var rows = Array.from(body.rows);
        rows.sort(function (a, b) {
          var x = value(a.cells[col]), y = value(b.cells[col]);
          var c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  async function poll() {
    try {
      var res = await fetch("/api/instructor/stamp", { credentials: "same-origin" });
      var data = await res.json();
      if (data.stamp && data.stamp !== stamp) { window.location.reload(); return; }
    } catch (e) { /* the server stopped: try again later */ }
    setTimeout(poll, 2000);
  }
  setTimeout(poll, 2000);
})();
