/* The code editor: Ace (bundled under /static/vendor/ace, loaded from this server only) with
   Python highlighting, line numbers and bracket matching; vim keys on request. `plain` (mock
   interviews): no auto-closing brackets, nothing that completes code. Tests and tools read and
   write it through window.attnkataEditor. */
(function () {
  "use strict";
  ace.config.set("basePath", "/static/vendor/ace");
  ace.config.set("loadWorkerFromBlob", false);

  window.attnkata.makeEditor = function (element, options) {
    options = options || {};
    var editor = ace.edit(element, {
      mode: "ace/mode/python",
      fontSize: 14,
      fontFamily: "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace",
      tabSize: 4,
      useSoftTabs: true,
      showPrintMargin: false,
      useWorker: false,
      highlightActiveLine: true,
      behavioursEnabled: !options.plain,
      wrapBehavioursEnabled: !options.plain,
      minLines: 24,
      maxLines: 36,
    });
    var input = editor.textInput.getElement();
    // No spell checking, autocorrect or grammar tools on code; completion extensions are asked
    // (by the page's meta tags) to stay off.
    ["spellcheck", "autocorrect", "autocapitalize", "autocomplete"].forEach(function (name) {
      input.setAttribute(name, name === "spellcheck" ? "false" : "off");
    });
    input.setAttribute("data-gramm", "false");
    input.setAttribute("data-enable-grammarly", "false");

    var marks = [];
    var markers = [];
    var remote = false;
    var Range = ace.require("ace/range").Range;

    function mark(list) {
      var session = editor.getSession();
      marks.forEach(function (m) { session.removeGutterDecoration(m.line - 1, "attnkata-mark"); });
      markers.forEach(function (id) { session.removeMarker(id); });
      marks = (list || []).filter(function (m) { return m.line > 0; });
      markers = [];
      session.setAnnotations(marks.map(function (m) {
        return { row: m.line - 1, column: 0, text: m.id + ": " + m.title, type: "error" };
      }));
      marks.forEach(function (m) {
        session.addGutterDecoration(m.line - 1, "attnkata-mark");
        markers.push(session.addMarker(new Range(m.line - 1, 0, m.line - 1, 1), "attnkata-line", "fullLine"));
      });
    }

    var api = {
      ace: editor,
      getValue: function () { return editor.getValue(); },
      setValue: function (text) { editor.setValue(text, 1); },
      /* A new version from elsewhere (another editor's save): no save goes back for it. */
      setRemote: function (text) {
        var cursor = editor.getCursorPosition();
        remote = true;
        try { editor.setValue(text, 1); } finally { remote = false; }
        editor.moveCursorToPosition(cursor);
        editor.clearSelection();
      },
      isRemote: function () { return remote; },
      mark: mark,
      markedLines: function () { return marks.map(function (m) { return m.line; }); },
      setVim: function (on) { editor.setKeyboardHandler(on ? "ace/keyboard/vim" : null); },
    };
    window.attnkataEditor = api;
    return api;
  };
})();
