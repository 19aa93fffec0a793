// The Plans editor. The server swaps in the problem beside each field but
// not the inputs (one may be typed in), so the input's red frame follows
// its message here.
(function () {
  "use strict";
  function markInvalid() {
    document.querySelectorAll("[data-error-for]").forEach(function (message) {
      var input = document.getElementById(message.dataset.errorFor);
      if (!input) return;
      var bad = message.textContent.trim() !== "";
      input.classList.toggle("invalid", bad);
      if (bad) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
    });
  }
  document.body.addEventListener("htmx:oobAfterSwap", markInvalid);
})();
