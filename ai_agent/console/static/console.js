// The console's only script: keyboard navigation in the inbox and live updates.
// It never builds markup from data: updated parts come from the server's own pages, which
// escape everything, and event data is read as JSON and compared, never inserted.
"use strict";

function items() {
  return Array.from(document.querySelectorAll("article.item"));
}

function currentItem() {
  const active = document.activeElement;
  return active ? active.closest("article.item") : null;
}

function typing(target) {
  return target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" ||
    target.tagName === "SELECT" || target.isContentEditable);
}

function move(step) {
  const all = items();
  if (!all.length) return;
  const index = all.indexOf(currentItem());
  const next = index < 0 ? 0 : Math.min(all.length - 1, Math.max(0, index + step));
  all[next].focus();
  all[next].scrollIntoView({block: "nearest"});
}

function press(selector) {
  const item = currentItem();
  const button = item && item.querySelector(selector);
  if (button) button.click();
}

document.addEventListener("keydown", (event) => {
  if (document.body.dataset.page !== "inbox" || event.altKey || event.ctrlKey || event.metaKey) return;
  if (typing(event.target)) {
    if (event.key === "Escape") currentItem()?.focus();
    return;
  }
  const actions = {
    j: () => move(1), ArrowDown: () => move(1),
    k: () => move(-1), ArrowUp: () => move(-1),
    a: () => press("button.approve"),
    x: () => press("section.call button.reject"),
    i: () => currentItem()?.querySelector("textarea")?.focus(),
  };
  const action = actions[event.key];
  if (action) {
    event.preventDefault();
    action();
  }
});

// Live updates: the server says which runs changed; this page reloads if it shows one of
// them (or, on the inbox and the unfiltered runs page, when a run pauses or starts).
function shown() {
  return new Set(Array.from(document.querySelectorAll("[data-thread]"), (e) => e.dataset.thread));
}

function connect() {
  if (!window.EventSource) return;
  const page = document.body.dataset.page;
  // "since": the server's time when it made this page; a change after it is never missed.
  const events = new EventSource("/events?since=" + encodeURIComponent(document.body.dataset.made));
  // A form on its way to the server is not cancelled by a reload: the answer's page comes next.
  document.addEventListener("submit", () => events.close());
  events.addEventListener("runs", (event) => {
    const changed = JSON.parse(event.data);
    const here = shown();
    const relevant = changed.some((run) => here.has(run.thread_id) ||
      (page === "inbox" && run.status === "paused") ||
      (page === "runs" && !location.search));
    if (relevant && !typing(document.activeElement)) location.reload();
  });
}

connect();
