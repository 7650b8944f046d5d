// The header's theme picker (Blueprint or Carbon), remembered per browser. The remembered theme
// is applied before the first paint by ../theme.js, a classic script in <head> (a module runs
// only after the page is parsed, too late to avoid a flash of the other theme).

import { $ } from "./dom.js";

export function init() {
  var themeSelect = $("theme");
  themeSelect.value = document.documentElement.getAttribute("data-theme") || "blueprint";
  themeSelect.addEventListener("change", function () {
    document.documentElement.setAttribute("data-theme", themeSelect.value);
    try { window.localStorage.setItem("chokaq-deck-theme", themeSelect.value); } catch (e) { /* ignore */ }
  });
}
