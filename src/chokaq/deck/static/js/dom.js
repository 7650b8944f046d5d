// Small DOM helpers every panel uses: look-ups, elements built with text as text nodes, and the
// one way user text reaches the page (userText/setText: text nodes in an isolating <bdi>, with
// invisible characters shown as visible markers; never innerHTML). Also the toasts and the
// in-place row updates of the live tables.

export function $(id) { return document.getElementById(id); }

// el("td", {className: "x", title: "y"}, "text", node, ...) with text as textContent.
export function el(tag, props) {
  var node = document.createElement(tag);
  if (props) {
    Object.keys(props).forEach(function (k) {
      if (k === "dataset") { Object.assign(node.dataset, props[k]); }
      else { node[k] = props[k]; }
    });
  }
  for (var i = 2; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined) { continue; }
    node.appendChild(typeof child === "string" || typeof child === "number"
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

export function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

// -- user text: names, tags, partitions, ids, payloads, errors and worker names come from
// users. Written as bare text, a bidi override reorders what the operator reads
// ("\u202eRTL-fdp.exe" shows as "exe.pdf-LTR") and a zero-width or control character hides
// (a queue named "\u202e" is invisible). So every such piece goes through userText(): it sits
// in its own <bdi> (direction from its own first strong character, isolated from its
// neighbours), and each bidi control, zero-width character and C0/C1 control is replaced by a
// visible marker ⟨U+202E⟩. "Such" is what storage refuses in names (chokaq.limits): the
// Unicode categories Cc (C0/C1 controls), Cf (format: bidi controls, zero-width characters,
// soft hyphen, BOM), Zl and Zp (line and paragraph separators), and the Hangul fillers,
// letters that draw nothing. Tab and line ends are marked only in one-line places: payloads
// and tracebacks (a <pre>) need them.
var INVISIBLE_IN_LINE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/gu;
var INVISIBLE = /(?![\t\n\r])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/gu;

function codePoint(ch) {
  return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
}

// A DOM node showing `value` (any type; null shows as nothing) safely: one line unless
// `multiline` (then tabs and newlines are kept as they are).
export function userText(value, multiline) {
  var text = value === null || value === undefined ? "" : String(value);
  var node = el("bdi", { className: "ut" });
  var last = 0, m, re = multiline ? INVISIBLE : INVISIBLE_IN_LINE;
  re.lastIndex = 0;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) { node.appendChild(document.createTextNode(text.slice(last, m.index))); }
    var cp = codePoint(m[0]);
    node.appendChild(el("span", { className: "ctl", title: "invisible character " + cp }, "⟨" + cp + "⟩"));
    last = m.index + m[0].length;
  }
  if (last < text.length) { node.appendChild(document.createTextNode(text.slice(last))); }
  return node;
}

// Replaces a node's content with userText(value), many lines in a <pre>; a table cell also
// gets the whole text as its tooltip, since the CSS cuts long text in cells with an ellipsis.
// The live refresh rewrites every cell each second with mostly the same text: a node that
// still holds only the <bdi> this wrote for the same text is left alone.
export function setText(node, value) {
  var text = value === null || value === undefined ? "" : String(value);
  var only = node.childNodes.length === 1 ? node.firstChild : null;
  if (only && only.nodeName === "BDI" && only.chokaqText === text) { return; }
  clear(node);
  var shown = userText(text, node.tagName === "PRE");
  shown.chokaqText = text;  // a property, not an attribute: a payload may be a megabyte
  node.appendChild(shown);
  if (node.tagName === "TD") { node.title = attrText(text); }
}

// The invisible characters a text holds, as "U+202E, U+200B" (each once), or "": for a
// textarea, where no marker can be drawn.
export function invisibleIn(text) {
  var seen = [];
  (String(text).match(INVISIBLE) || []).forEach(function (ch) {
    var cp = codePoint(ch);
    if (seen.indexOf(cp) < 0) { seen.push(cp); }
  });
  return seen.join(", ");
}

// User text for an attribute (a tooltip, which may hold many lines): no markup there, so the
// markers are plain text.
export function attrText(value) {
  var text = value === null || value === undefined ? "" : String(value);
  return text.replace(INVISIBLE, function (ch) { return "⟨" + codePoint(ch) + "⟩"; });
}

export function toast(message, bad) {
  var t = el("div", { className: "toast" + (bad ? " bad" : "") }, userText(message));
  $("toasts").appendChild(t);
  setTimeout(function () { t.remove(); }, 4000);
}

// Keeps one <tr> per key, updating cells in place so that focus, selection and the progress
// bar's transition survive the once-a-second refresh.
export function syncRows(tbody, items, key, build, update) {
  var existing = new Map();
  Array.prototype.forEach.call(tbody.children, function (tr) { existing.set(tr.dataset.key, tr); });
  items.forEach(function (item) {
    var k = key(item);
    var tr = existing.get(k);
    if (!tr) { tr = build(item); tr.dataset.key = k; }
    existing.delete(k);
    update(tr, item);
    tbody.appendChild(tr);
  });
  existing.forEach(function (tr) { tr.remove(); });
}

// An input's value from the live data, unless the operator is in it (typing a new value).
export function setInput(input, value) {
  if (document.activeElement !== input) { input.value = value === null || value === undefined ? "" : value; }
}
