// heart annotation pages: keyboard shortcuts and counters. Pages work without this script.
(function () {
  "use strict";
  function typing(el) { return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" && el.type === "text"); }
  var form = document.querySelector("form.answer, #adjudicate-form");
  if (!form) { return; }
  // one submission per page: a second click or key press does not post twice
  form.addEventListener("submit", function () {
    var b = form.querySelector("button[type=submit]");
    if (b) { setTimeout(function () { b.disabled = true; }, 0); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); return; }
    if (typing(document.activeElement) || e.ctrlKey || e.metaKey || e.altKey) { return; }
    var choice = document.getElementById("choice-" + e.key);
    if (choice) { choice.checked = true; choice.focus(); e.preventDefault(); }
  });
  var reply = document.getElementById("reply");
  var count = document.getElementById("word-count");
  if (reply && count) {
    var update = function () {
      var n = reply.value.trim() ? reply.value.trim().split(/\s+/).length : 0;
      count.textContent = n;
      count.parentNode.classList.toggle("error", n > 60);
    };
    reply.addEventListener("input", update); update();
    // the coordinator sees who pasted (the protocol asks for replies written without AI tools)
    reply.addEventListener("paste", function () { document.getElementById("pasted").value = "1"; });
  }
  var none = document.getElementById("strategy-none");
  if (none) {
    var boxes = document.querySelectorAll("input[name=strategy]");
    none.addEventListener("change", function () { if (none.checked) { boxes.forEach(function (b) { b.checked = false; }); } });
    boxes.forEach(function (b) { b.addEventListener("change", function () { if (b.checked) { none.checked = false; } }); });
  }
})();
