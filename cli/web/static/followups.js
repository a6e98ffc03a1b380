/* The follow-up questions: every answer first; open questions then show their model answer to
   rate yourself against (the model answers appear only once the answers are in). */
(function () {
  "use strict";
  var A = window.attnkata;
  var form = document.getElementById("followup-form");
  var rating = false;
  var url = "/api/mock/" + A.data.session + "/answers";

  form.addEventListener("submit", async function (e) {
    e.preventDefault();
    var answers = {};
    var fields = form.querySelectorAll("fieldset.question");
    if (!rating) {
      fields.forEach(function (f) {
        var id = f.dataset.id;
        var kind = f.dataset.kind;
        if (kind === "choice") {
          var picked = f.querySelector("input[type=radio]:checked");
          if (picked) answers[id] = picked.value;
        } else {
          var input = f.querySelector(kind === "open" ? "textarea" : "input");
          if (input.value.trim()) answers[id] = input.value;
        }
      });
      var res = await A.api("POST", url, { answers: answers, finalize: true });
      if (res.error) return A.say(A.errorText(res), "bad");
      if (!res.rate.length) { window.location.href = res.url; return; }
      res.rate.forEach(function (q) {
        var f = form.querySelector('fieldset.question[data-id="' + CSS.escape(q.id) + '"]');
        f.querySelector("textarea").readOnly = true;
        var box = f.querySelector(".rate");
        box.hidden = false;
        box.querySelector(".model").innerHTML = q.model;  /* server-rendered Markdown, no raw HTML */
      });
      form.querySelectorAll("fieldset.question:not([data-kind=open])").forEach(function (f) { f.disabled = true; });
      rating = true;
      return;
    }
    fields.forEach(function (f) {
      if (f.dataset.kind !== "open") return;
      var picked = f.querySelector(".rate input:checked");
      var text = f.querySelector("textarea").value;
      answers[f.dataset.id] = picked ? { answer: text, rating: Number(picked.value) } : text;
    });
    var done = await A.api("POST", url, { answers: answers, finalize: true });
    if (done.error) return A.say(A.errorText(done), "bad");
    window.location.href = done.url;
  });
})();
