/* The interview: one plain editor over each problem's file (saved as you type), the countdown
   (the server's deadline: reopening the page resumes it), Run (public samples), Submit (hidden
   tests), a hint that costs points, and the end of the coding part. Pastes are reported: the
   replay marks them. */
(function () {
  "use strict";
  var A = window.attnkata;
  var sid = A.data.session;
  var problems = A.data.problems;
  var offset = A.data.now * 1000 - Date.now();
  var editor = A.makeEditor(document.getElementById("editor"), { plain: true });
  var EditSession = ace.require("ace/edit_session").EditSession;
  var sessions = problems.map(function (p) {
    var s = new EditSession(p.file.text, "ace/mode/python");
    s.setOptions({ tabSize: 4, useSoftTabs: true });
    return s;
  });
  var bases = problems.map(function (p) { return p.file.sha; });
  var dirty = problems.map(function () { return false; });
  var timers = problems.map(function () { return null; });
  var current = 0;
  var over = false;
  var saveState = document.getElementById("save-state");
  editor.ace.setSession(sessions[0]);

  function url(what) { return "/api/mock/" + sid + "/" + what; }

  sessions.forEach(function (session, i) {
    session.on("change", function () {
      if (over) return;
      dirty[i] = true;
      saveState.textContent = "";
      clearTimeout(timers[i]);
      timers[i] = setTimeout(function () { save(i); }, 500);
    });
  });

  editor.ace.on("paste", function (e) {
    var i = current;
    var chars = (e.text || "").length;
    setTimeout(function () {
      clearTimeout(timers[i]);
      var text = sessions[i].getValue();
      A.api("POST", url("paste"), { kata: problems[i].kata, text: text, base: bases[i], chars: chars }).then(function (res) {
        if (!res.error) { bases[i] = res.sha || bases[i]; dirty[i] = sessions[i].getValue() !== text; }
      });
    }, 0);
  });

  async function save(i, last) {
    clearTimeout(timers[i]);
    if (!dirty[i] || (over && !last)) return;
    var text = sessions[i].getValue();
    saveState.textContent = A.t("web.saving");
    var res = await A.api("PUT", url("file"), { kata: problems[i].kata, text: text, base: bases[i] });
    if (res.error) { saveState.textContent = ""; return A.say(A.errorText(res), "bad"); }
    bases[i] = res.sha || bases[i];
    dirty[i] = sessions[i].getValue() !== text;
    saveState.textContent = A.t("web.saved");
  }

  function body(i) {
    clearTimeout(timers[i]);
    return { kata: problems[i].kata, text: sessions[i].getValue(), base: bases[i] };
  }

  async function act(what, busy) {
    var i = current;
    var sent = body(i);
    A.say(A.t(busy), "busy");
    var res = await A.api("POST", url(what), sent);
    if (res.sha) { bases[i] = res.sha; dirty[i] = sessions[i].getValue() !== sent.text; }
    if (res.cancelled) return A.say(res.message, "warn");
    if (res.error) return A.say(A.errorText(res), "bad");
    A.say("");
    document.getElementById("result").innerHTML = res.html;
  }
  document.getElementById("run").addEventListener("click", function () { act("run", "web.running"); });
  document.getElementById("submit").addEventListener("click", function () { act("submit", "web.submitting"); });

  /* A second click confirms (no browser dialog). */
  function twice(button, key, then) {
    var armed = false;
    var label = button.textContent;
    button.addEventListener("click", function () {
      if (!armed) {
        armed = true;
        button.textContent = A.t(key);
        setTimeout(function () { armed = false; button.textContent = label; }, 4000);
        return;
      }
      armed = false;
      button.textContent = label;
      then();
    });
  }

  twice(document.getElementById("mock-hint"), "web.hint_confirm", async function () {
    var res = await A.api("POST", url("hint"), { kata: problems[current].kata });
    var box = document.getElementById("hint-box");
    box.hidden = false;
    box.innerHTML = "";
    if (res.error) { box.textContent = A.errorText(res); return; }
    var head = document.createElement("b");
    head.textContent = res.label || "";
    var text = document.createElement("div");
    text.innerHTML = res.html;
    box.appendChild(head);
    box.appendChild(text);
  });

  async function finish() {
    if (over) return;
    over = true;
    for (var i = 0; i < problems.length; i++) { await save(i, true); }
    A.say(A.t("web.grading_session"), "busy");
    var res = await A.api("POST", url("finish"), {});
    if (res.error) { over = false; return A.say(A.errorText(res), "bad"); }
    window.location.href = res.url;
  }
  twice(document.getElementById("finish"), "web.finish_confirm", finish);

  document.querySelectorAll(".mock-page .problem-tab").forEach(function (tab) {
    tab.addEventListener("click", function () {
      current = Number(tab.dataset.index);
      document.querySelectorAll(".mock-page .problem-tab").forEach(function (b) { b.classList.toggle("on", b === tab); });
      document.querySelectorAll(".mock-statement").forEach(function (s) { s.hidden = Number(s.dataset.index) !== current; });
      editor.ace.setSession(sessions[current]);
      document.getElementById("result").innerHTML = "";
    });
  });

  var clock = document.getElementById("clock");
  function tick() {
    var left = Math.max(0, Math.floor((A.data.deadline * 1000 - (Date.now() + offset)) / 1000));
    var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    clock.textContent = (h ? h + ":" : "") + String(m).padStart(2, "0") + ":" + String(s).padStart(2, "0");
    clock.classList.toggle("low", left <= 300);
    if (left === 0 && !over) {
      A.say(A.t("web.time_up"), "warn");
      editor.ace.setReadOnly(true);
      finish();
      return;
    }
    setTimeout(tick, 250);
  }
  tick();
})();
