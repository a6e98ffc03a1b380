/* The replay: a slider over every save, run, submit and paste of a problem, each with its time,
   the verdict of a run or submit, and pastes marked. */
(function () {
  "use strict";
  var A = window.attnkata;
  var problems = A.data.problems;
  var slider = document.getElementById("slider");
  var info = document.getElementById("frame-info");
  var code = document.getElementById("frame-code");
  var marks = document.getElementById("marks");
  var current = 0;

  function clock(seconds) {
    seconds = Math.max(0, Math.round(seconds));
    return Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
  }

  function label(f) {
    var text = clock(f.elapsed) + " · " + A.t("web.replay_kind_" + f.kind);
    if (f.status) text += " · " + f.status + " " + f.passed + "/" + f.total;
    if (f.kind === "paste") text += " · " + A.t("web.replay_pasted", { chars: f.chars || 0 });
    return text;
  }

  function show(i) {
    var frames = problems[current].frames;
    if (!frames.length) { info.textContent = "-"; code.textContent = ""; return; }
    var f = frames[i];
    info.textContent = (i + 1) + "/" + frames.length + " · " + label(f);
    info.className = "frame-info kind-" + f.kind + (f.status ? " st-" + f.status : "");
    code.innerHTML = "";
    f.text.split("\n").forEach(function (line, n) {
      var span = document.createElement("span");
      span.textContent = String(n + 1).padStart(4, " ") + "  " + line + "\n";
      code.appendChild(span);
    });
    marks.querySelectorAll("li").forEach(function (li) { li.classList.toggle("on", Number(li.dataset.index) === i); });
  }

  function open(p) {
    current = p;
    var frames = problems[p].frames;
    slider.max = Math.max(0, frames.length - 1);
    slider.value = slider.max;
    marks.innerHTML = "";
    frames.forEach(function (f, i) {
      if (f.kind === "save") return;
      var li = document.createElement("li");
      li.dataset.index = i;
      li.className = "kind-" + f.kind + (f.status ? " st-" + f.status : "");
      li.textContent = label(f);
      li.addEventListener("click", function () { slider.value = i; show(i); });
      marks.appendChild(li);
    });
    show(Number(slider.value));
  }

  slider.addEventListener("input", function () { show(Number(slider.value)); });
  document.querySelectorAll(".replay-page .problem-tab").forEach(function (tab) {
    tab.addEventListener("click", function () {
      document.querySelectorAll(".replay-page .problem-tab").forEach(function (b) { b.classList.toggle("on", b === tab); });
      open(Number(tab.dataset.index));
    });
  });
  open(0);
})();
