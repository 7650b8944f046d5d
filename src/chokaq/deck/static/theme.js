// Applies the remembered theme before first paint (loaded synchronously in <head>).
(function () {
  "use strict";
  try {
    var theme = window.localStorage.getItem("chokaq-deck-theme");
    if (theme === "carbon" || theme === "blueprint") {
      document.documentElement.setAttribute("data-theme", theme);
    }
  } catch (e) { /* storage disabled: keep the default */ }
})();
