/* A kata's page: the workspace file in the editor (saved as you type, and reloaded when another
   editor saves it), Check, hints, the solution and the history. */
(function () {
  "use strict";
  var A = window.attnkata;
  var kata = A.data.kata;
  var file = A.data.file;
  var base = file.exists ? file.sha : null;
  var saved = file.text;
  var readOnly = !file.utf8;
  var dirty = false;
  var timer = null;
  var saving = null;
  var editor = A.makeEditor(document.getElementById("editor"), {});
  editor.setRemote(file.text);
  if (readOnly) editor.ace.setReadOnly(true);
  var saveState = document.getElementById("save-state");
  var banner = document.getElementById("banner");

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }

  editor.ace.on("change", function () {
    if (editor.isRemote() || readOnly) return;
    dirty = true;
    saveState.textContent = "";
    clearTimeout(timer);
    timer = setTimeout(save, 400);
  });

  async function save() {
    clearTimeout(timer);
    if (!dirty || readOnly) return;
    var text = editor.getValue();
    saveState.textContent = A.t("web.saving");
    saving = A.api("PUT", "/api/kata/" + kata + "/file", { text: text, base: base });
    var res = await saving;
    saving = null;
    if (res.error) {
      saveState.textContent = "";
      showBanner(A.errorText(res));
      return;
    }
    base = res.sha;
    saved = text;
    dirty = editor.getValue() !== text;
    saveState.textContent = A.t("web.saved");
    showBanner(res.message || "");
  }

  async function poll() {
    if (saving === null) {
      var res = await A.api("GET", "/api/kata/" + kata + "/file?sha=" + encodeURIComponent(base || ""));
      if (!res.error && !res.same && res.exists && res.sha !== base) {
        if (!dirty) {
          base = res.sha;
          saved = res.text;
          readOnly = !res.utf8;
          editor.ace.setReadOnly(readOnly);
          editor.setRemote(res.text);
          saveState.textContent = A.t("web.changed_on_disk");
          showBanner(readOnly ? A.t("web.not_utf8_readonly") : "");
        } else {
          showBanner(A.t("web.conflict"));
        }
      }
    }
    setTimeout(poll, 500);
  }
  setTimeout(poll, 500);

  document.getElementById("check").addEventListener("click", async function () {
    clearTimeout(timer);
    var body = {};
    if (!readOnly) body = { text: editor.getValue(), base: base };
    A.say(A.t("web.checking"), "busy");
    var res = await A.api("POST", "/api/kata/" + kata + "/check", body);
    if (res.saved && res.saved.sha) {
      base = res.saved.sha;
      saved = body.text;
      dirty = editor.getValue() !== body.text;
      showBanner(res.saved.message || "");
    }
    if (res.cancelled) return A.say(res.message, "warn");
    if (res.error) return A.say(A.errorText(res), "bad");
    A.say("");
    document.getElementById("result").innerHTML = res.html;
    editor.mark(res.marks);
  });

  document.querySelectorAll(".stmt-lang").forEach(function (button) {
    button.addEventListener("click", function () {
      document.querySelectorAll(".stmt-lang").forEach(function (b) { b.classList.toggle("on", b === button); });
      document.querySelectorAll(".statement").forEach(function (s) { s.hidden = s.dataset.lang !== button.dataset.lang; });
    });
  });

  var vim = document.getElementById("vim");
  vim.checked = localStorage.getItem("attnkata-vim") === "1";
  editor.setVim(vim.checked);
  vim.addEventListener("change", function () {
    localStorage.setItem("attnkata-vim", vim.checked ? "1" : "0");
    editor.setVim(vim.checked);
  });

  document.getElementById("hint").addEventListener("click", async function () {
    var res = await A.api("POST", "/api/kata/" + kata + "/hint", {});
    var box = document.getElementById("hint-box");
    box.hidden = false;
    box.innerHTML = "";
    if (res.error) { box.textContent = A.errorText(res); return; }
    var head = document.createElement("b");
    head.textContent = res.label;
    var body = document.createElement("div");
    body.innerHTML = res.html;  /* Markdown rendered by the server, raw HTML disabled */
    box.appendChild(head);
    box.appendChild(body);
  });

  async function solution(confirm) {
    var res = await A.api("POST", "/api/kata/" + kata + "/solution", { confirm: confirm });
    var box = document.getElementById("solution-box");
    box.hidden = false;
    box.innerHTML = "";
    if (res.error) { box.textContent = A.errorText(res); return; }
    if (res.confirm) {
      var p = document.createElement("p");
      p.textContent = res.confirm;
      var yes = document.createElement("button");
      yes.type = "button";
      yes.textContent = "OK";
      yes.setAttribute("data-testid", "solution-confirm");
      yes.addEventListener("click", function () { solution(true); });
      box.appendChild(p);
      box.appendChild(yes);
      return;
    }
    var pre = document.createElement("pre");
    pre.className = "code";
    pre.setAttribute("data-testid", "solution");
    pre.textContent = res.code;
    box.appendChild(pre);
  }
  document.getElementById("solution").addEventListener("click", function () { solution(false); });

  document.getElementById("history").addEventListener("click", async function () {
    var res = await A.api("GET", "/api/kata/" + kata + "/history");
    var box = document.getElementById("history-box");
    box.hidden = false;
    box.innerHTML = "";
    if (res.error) { box.textContent = A.errorText(res); return; }
    var table = document.createElement("table");
    res.attempts.forEach(function (r) {
      var row = table.insertRow();
      [r.when, r.status + (r.mode !== "practice" ? " (" + r.mode + ")" : ""), r.passed + "/" + r.total, r.diagnoses.join(", ")].forEach(function (v) {
        row.insertCell().textContent = v;
      });
    });
    box.appendChild(table);
  });
})();
