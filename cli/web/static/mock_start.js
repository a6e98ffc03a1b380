(function () {
  "use strict";
  var A = window.attnkata;
  document.getElementById("start-form").addEventListener("submit", async function (e) {
    e.preventDefault();
    var katas = Array.from(document.querySelectorAll("input[name=kata]:checked")).map(function (b) { return b.value; });
    var minutes = document.getElementById("minutes").value;
    A.say(A.t("web.starting"), "busy");
    var res = await A.api("POST", "/api/mock/start", {
      katas: katas.length ? katas : null,
      minutes: minutes ? Number(minutes) : null,
    });
    if (res.error) return A.say(A.errorText(res), "bad");
    window.location.href = res.url;
  });
})();
