// What the server wrote into the page for the script: the mount prefix (the Deck may be served
// under one, so every URL is built on it), the CSRF token that every POST carries, and who is
// signed in. Read once, when the modules load (a module runs after the page is parsed).

export var base = document.querySelector('meta[name="deck-base"]').content;
export var csrf = document.querySelector('meta[name="csrf-token"]').content;
export var isAdmin = document.body.dataset.role === "admin";
export var user = document.body.dataset.user;
// The failure reasons a DLQ job may carry, for the jobs table's filter.
export var REASONS = (document.body.dataset.reasons || "").split(" ").filter(Boolean);
