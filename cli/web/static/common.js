/* What every page of `kata web` shares: its data block, JSON calls to the server, the status
   line and the texts of the page's language. No framework: the pages are small. */
(function () {
  "use strict";
  var el = document.getElementById("page-data");
  var data = el ? JSON.parse(el.textContent) : {};
  var texts = data.texts || {};

  async function api(method, url, body) {
    var options = { method: method, credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    var payload;
    try {
      var res = await fetch(url, options);
      try {
        payload = await res.json();
      } catch (e) {
        payload = { error: res.status + " " + res.statusText };
      }
      payload.httpStatus = res.status;
    } catch (e) {
      payload = { error: String(e), httpStatus: 0 };
    }
    return payload;
  }

  function say(text, kind) {
    var line = document.getElementById("status");
    if (!line) return;
    line.textContent = text || "";
    line.className = "status-line " + (kind || "");
  }

  function t(key, params) {
    var text = texts[key] || key;
    Object.keys(params || {}).forEach(function (name) {
      text = text.split("{" + name + "}").join(String(params[name]));
    });
    return text;
  }

  function errorText(res) {
    return res.error + (res.hint ? " — " + res.hint : "");
  }

  window.attnkata = { data: data, api: api, say: say, t: t, errorText: errorText };
})();
