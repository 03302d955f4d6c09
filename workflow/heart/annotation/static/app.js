// heart annotation pages: keyboard shortcuts and counters. Pages work without this script.
(function () {
  "use strict";
  // the coordinator's people: a search box over the rows (person, status, platform id ...), shown only with
  // this script (the page lists everyone without it)
  var filter = document.getElementById("people-filter");
  if (filter) {
    var rows = document.querySelectorAll("#people tbody tr");
    var shown = document.getElementById("people-shown");
    var apply = function () {
      var q = filter.value.trim().toLowerCase(), n = 0;
      rows.forEach(function (r) {
        var hit = !q || r.textContent.toLowerCase().indexOf(q) >= 0 ||
          (r.querySelector("input.link") || {value: ""}).value.toLowerCase().indexOf(q) >= 0;
        r.hidden = !hit; n += hit ? 1 : 0;
      });
      shown.textContent = q ? n + " of " + rows.length + " shown" : rows.length + " people";
    };
    document.getElementById("people-filter-row").hidden = false;
    filter.addEventListener("input", apply); apply();
  }
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
  // the reason's length against its limit (the server refuses a longer one whole, and keeps the text)
  var reason = document.getElementById("rationale");
  var reasonCount = document.getElementById("rationale-count");
  if (reason && reasonCount) {
    var limit = parseInt(reason.getAttribute("data-limit"), 10);
    var recount = function () {
      reasonCount.textContent = reason.value.length;
      reasonCount.parentNode.classList.toggle("over", reason.value.length > limit);
    };
    reason.addEventListener("input", recount); recount();
  }
  // a reload keeps what was typed and chosen (the server keeps the page's clock): a draft per page, in this
  // tab's sessionStorage, put back when the page comes back empty, dropped when the form is sent
  var nonce = form.querySelector("input[name=nonce]");
  var draftKey = nonce ? "heart-draft-" + nonce.value : null;
  var fields = form.querySelectorAll("textarea, input[type=radio], input[type=checkbox]");
  if (draftKey && window.sessionStorage) {
    var saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(draftKey) || "null"); } catch (err) { saved = null; }
    var empty = !Array.prototype.some.call(fields, function (f) { return f.tagName === "TEXTAREA" ? f.value : f.checked; });
    if (saved && empty) {
      fields.forEach(function (f) {
        if (f.tagName === "TEXTAREA" && typeof saved[f.name] === "string") { f.value = saved[f.name]; }
        else if (f.tagName !== "TEXTAREA" && Array.isArray(saved[f.name])) { f.checked = saved[f.name].indexOf(f.value) >= 0; }
        f.dispatchEvent(new Event("input"));
      });
    }
    var keep = function () {
      var draft = {};
      fields.forEach(function (f) {
        if (f.tagName === "TEXTAREA") { draft[f.name] = f.value; }
        else { draft[f.name] = draft[f.name] || []; if (f.checked) { draft[f.name].push(f.value); } }
      });
      try { sessionStorage.setItem(draftKey, JSON.stringify(draft)); } catch (err) { /* storage full or off */ }
    };
    form.addEventListener("input", keep); form.addEventListener("change", keep);
    form.addEventListener("submit", function () { try { sessionStorage.removeItem(draftKey); } catch (err) { /* off */ } });
  }
  var none = document.getElementById("strategy-none");
  if (none) {
    var boxes = document.querySelectorAll("input[name=strategy]");
    none.addEventListener("change", function () { if (none.checked) { boxes.forEach(function (b) { b.checked = false; }); } });
    boxes.forEach(function (b) { b.addEventListener("change", function () { if (b.checked) { none.checked = false; } }); });
  }
})();
