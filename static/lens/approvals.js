// The approval queue, for reviewers who work fast: keyboard shortcuts, busy buttons while
// a decision travels, focus that moves on to the next row, decisions read out, and an
// Undo that goes away when its time is up. Rows are memories (data-promotion-id) and
// proposed changes of protected agents (data-proposal-id); the same keys move across
// both, but publishing a proposed change is never one key: "a" and the Publish button
// open a dialog whose own button publishes (without JavaScript, a confirmation page).
// Everything here is an enhancement: without JavaScript the rows are plain forms and the
// page reloads.
(() => {
  const ROW = "li.queue-row[data-promotion-id], li.queue-row[data-proposal-id]";
  const announcer = () => document.getElementById("queue-announcer");
  let current = null; // the row the shortcuts act on
  let bulkSent = false;
  // Rows whose decision changes an agent's prompt: the agent's other rows then refresh.
  const changing = new Map();

  const rows = () => [...document.querySelectorAll(ROW)];
  const isPending = (row) => row && !row.classList.contains("decided");
  const isProposal = (row) => row.dataset.proposalId !== undefined;
  // One key for either kind of row (a memory and a proposal may share a number).
  const keyOf = (row) => (isProposal(row) ? `proposal:${row.dataset.proposalId}` : row.dataset.promotionId);

  function setCurrent(row, { focus = true } = {}) {
    for (const other of document.querySelectorAll(".queue-row.is-current")) {
      if (other !== row) other.classList.remove("is-current");
    }
    current = row || null;
    if (!row) return;
    row.classList.add("is-current");
    if (focus) {
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: "nearest" });
    }
  }

  function currentRow() {
    if (current && document.contains(current)) return current;
    const holder = document.activeElement && document.activeElement.closest(ROW);
    return holder || null;
  }

  function move(step) {
    const all = rows();
    if (!all.length) return;
    const here = all.indexOf(currentRow());
    const next = here === -1 ? (step > 0 ? 0 : all.length - 1) : here + step;
    if (next >= 0 && next < all.length) setCurrent(all[next]);
  }

  function announce(text) {
    const region = announcer();
    if (!region) return;
    region.textContent = "";
    // A fresh text node a moment later: screen readers skip a region set to the same text.
    setTimeout(() => { region.textContent = text; }, 50);
  }

  // --- shortcuts -----------------------------------------------------------------------

  const TYPING = /^(text|search|email|url|tel|password|number|date|datetime-local|month|week|time)$/;

  function isTyping(target) {
    if (!(target instanceof Element)) return false;
    if (target.isContentEditable) return true;
    if (target.matches("textarea, select")) return true;
    return target.matches("input") && TYPING.test(target.type || "text");
  }

  // A modal dialog, and where focus goes back to when it closes (Esc, Cancel, Close):
  // the element that had it, else the current row, never <body>.
  function openDialog(dialog, back) {
    if (!dialog || dialog.open) return;
    const row = currentRow();
    const from = back && back !== document.body ? back : row;
    dialog.addEventListener("close", () => {
      const target = from && document.contains(from) ? from : currentRow();
      if (!target) return;
      // The row is the current one again however it is reached.
      if (target.matches && target.matches(ROW)) setCurrent(target);
      else target.focus();
    }, { once: true });
    dialog.showModal();
  }

  function help() {
    openDialog(document.getElementById("shortcuts"), document.activeElement);
  }

  function confirmPublish(row) {
    const dialog = row && isPending(row) && row.querySelector("[data-publish-dialog]");
    if (!dialog || row.getAttribute("aria-busy") === "true") return;
    setCurrent(row, { focus: false });
    openDialog(dialog, row);
  }

  // --- the selected memories ---------------------------------------------------------

  const selectedBoxes = () => [...document.querySelectorAll('input[name="selected"][form="bulk"]:checked')];

  function countSelected() {
    const output = document.querySelector("[data-selected-count]");
    if (!output) return;
    const count = selectedBoxes().length;
    output.dataset.selectedCount = String(count);
    output.textContent = `${count} selected`;
    output.closest("#bulk")?.toggleAttribute("data-none-selected", count === 0);
  }

  function decideSelected(decision) {
    const bulk = document.getElementById("bulk");
    if (!bulk) return;
    if (!selectedBoxes().length) {
      announce("Nothing is selected: x selects the current memory.");
      return;
    }
    if (decision === "approve") {
      const button = bulk.querySelector('[data-bulk="approve"]');
      if (button && !button.disabled) button.click();
      return;
    }
    const reason = bulk.querySelector("[data-bulk-reason]");
    if (!reason) return;
    reason.focus();
    reason.select();
  }

  function press(row, action) {
    const button = row && isPending(row) && row.querySelector(`[data-action="${action}"]`);
    if (!button || button.disabled || row.getAttribute("aria-busy") === "true") return;
    button.click();
  }

  const keys = {
    j: () => move(1),
    k: () => move(-1),
    // On a proposed change "a" only asks: the dialog's own button publishes.
    a: () => {
      const row = currentRow();
      if (!row) return;
      if (isProposal(row)) confirmPublish(row);
      else press(row, "approve");
    },
    r: () => {
      const row = currentRow();
      const reason = isPending(row) && row.querySelector("[data-reason]");
      if (!reason) return;
      setCurrent(row, { focus: false });
      reason.focus();
      reason.select();
    },
    x: () => {
      const row = currentRow();
      const box = isPending(row) && row.querySelector('input[name="selected"]');
      if (!box) return;
      box.checked = !box.checked;
      box.dispatchEvent(new Event("change", { bubbles: true }));
    },
    // Shift: the selected memories, from the bar at the bottom.
    A: () => decideSelected("approve"),
    R: () => decideSelected("reject"),
    u: () => {
      // The newest decision still offering Undo: its moment is in the form.
      const moment = (form) => form.querySelector('input[name="at"]')?.value || "";
      const offered = [...document.querySelectorAll("form[data-undo-seconds]:not([hidden])")];
      const form = offered.sort((a, b) => moment(a).localeCompare(moment(b))).pop();
      const button = form && form.querySelector("button");
      if (button && !button.disabled) button.click();
    },
  };

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && event.target.matches && event.target.matches("[data-reason]")) {
      // Back from the reason box to its row, without rejecting.
      setCurrent(event.target.closest(ROW));
      event.preventDefault();
      return;
    }
    if (event.target.matches && event.target.matches("[data-bulk-reason]")) {
      if (event.key === "Escape") {
        // Back from the bar to the row that was current, without rejecting.
        event.preventDefault();
        const row = current && document.contains(current) ? current : rows().find(isPending);
        if (row) setCurrent(row);
        return;
      }
      if (event.key === "Enter") {
        // The reason box is for rejecting: Enter there rejects the selected, never approves.
        event.preventDefault();
        const reject = document.querySelector('#bulk [data-bulk="reject"]');
        if (reject && !reject.disabled) reject.click();
        return;
      }
    }
    if (isTyping(event.target) || document.querySelector("dialog[open]")) return;
    if (event.key === "?") {
      event.preventDefault();
      help();
      return;
    }
    // Shifted letters are keys of their own (A, R); other shifted keys mean nothing here.
    const letter = event.key.length === 1 && event.key !== event.key.toLowerCase();
    const action = (letter || !event.shiftKey) && keys[event.key];
    if (!action || !document.querySelector("#queue")) return;
    event.preventDefault();
    action();
  });

  // The row holding focus is the current row, however focus got there (Tab, a click).
  document.addEventListener("focusin", (event) => {
    const row = event.target.closest && event.target.closest(ROW);
    if (row) setCurrent(row, { focus: false });
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-shortcuts-open]")) help();
    const publish = event.target.closest('[data-action="publish"]');
    const row = publish && publish.closest(ROW);
    if (row && row.querySelector("[data-publish-dialog]")) {
      // The row's Publish asks first; without JavaScript its form asks on a page.
      event.preventDefault();
      confirmPublish(row);
    }
    const cancel = event.target.closest("[data-dialog-cancel]");
    if (cancel) cancel.closest("dialog")?.close();
  });

  // "Select all on this page" for the bulk form, and the bar's "N selected".
  document.addEventListener("change", (event) => {
    const toggle = event.target.closest("[data-select-all]");
    if (toggle) {
      for (const box of document.querySelectorAll('input[name="selected"][form="bulk"]')) {
        box.checked = toggle.checked;
      }
    }
    if (toggle || event.target.matches('input[name="selected"]')) countSelected();
  });

  // --- a decision in flight ------------------------------------------------------------

  document.addEventListener("htmx:beforeRequest", (event) => {
    const form = event.detail.elt;
    if (!(form instanceof HTMLFormElement)) return;
    if (form.id === "bulk" || form.id === "bulk-undo") bulkSent = true;
    const row = form.closest(ROW);
    if (!row) return;
    const dialog = form.closest("dialog");
    // The confirmation is given: the dialog closes and the row shows the work under way.
    if (dialog && dialog.open) dialog.close();
    const undoing = form.classList.contains("undo-form")
      && form.querySelector('input[name="decided"]')?.value === "approved";
    // Publishing changes the agent's declarations, and so what approving its memories does.
    if (form.classList.contains("approve-form") || form.classList.contains("publish-form") || undoing) {
      changing.set(keyOf(row), row.dataset.agent);
    }
    row.setAttribute("aria-busy", "true");
    for (const alert of row.querySelectorAll("[data-row-error]")) alert.remove();
    const button = busyButton(form, row);
    if (button) {
      button.dataset.idleLabel = button.textContent;
      button.textContent = button.dataset.busyLabel;
    }
  });

  // The button that says a decision travels: the form's own, or for the dialog's
  // confirmation, the row's Publish.
  function busyButton(form, row) {
    if (form.classList.contains("publish-confirm-form")) {
      return row && row.querySelector('[data-action="publish"][data-busy-label]');
    }
    return form.querySelector("[data-busy-label]");
  }

  function settle(form) {
    const row = form.closest(ROW);
    if (row) row.removeAttribute("aria-busy");
    const button = busyButton(form, row);
    if (button && button.dataset.idleLabel) button.textContent = button.dataset.idleLabel;
  }

  document.addEventListener("htmx:afterRequest", (event) => {
    const form = event.detail.elt;
    // A swapped row is gone; one still here was refused (4xx/5xx) or never answered.
    if (form instanceof HTMLFormElement && document.contains(form)) settle(form);
  });

  function failed(event, text) {
    const form = event.detail.elt;
    const row = form instanceof Element && form.closest(ROW);
    if (!row) return;
    const alert = document.createElement("p");
    alert.className = "alert alert-error row-error";
    alert.dataset.rowError = "";
    alert.setAttribute("role", "alert");
    alert.textContent = text;
    row.append(alert);
  }

  document.addEventListener("htmx:responseError", (event) => {
    const status = event.detail.xhr ? event.detail.xhr.status : "";
    const said = event.detail.xhr ? event.detail.xhr.responseText.trim().slice(0, 200) : "";
    failed(event, `Nothing was changed (${status}${said && !said.startsWith("<") ? `: ${said}` : ""}).`);
  });
  document.addEventListener("htmx:sendError", (event) => {
    failed(event, "Nothing was sent: the server could not be reached. Try again.");
  });

  // --- after a swap ----------------------------------------------------------------------

  function undoTimer(form) {
    // The server wrote the seconds left and the deadline (and refuses an Undo after it);
    // this counts them down and takes the button away when they are gone.
    const seconds = Number(form.dataset.undoSeconds);
    if (!Number.isFinite(seconds) || form.dataset.timed) return;
    form.dataset.timed = "true";
    const end = Date.now() + Math.max(0, seconds) * 1000;
    const count = form.querySelector("[data-undo-count]");
    const tick = setInterval(() => {
      const left = Math.max(0, Math.round((end - Date.now()) / 1000));
      if (count && document.contains(count)) count.textContent = String(left);
      if (left > 0 && document.contains(form)) return;
      clearInterval(tick);
      const row = form.closest(ROW);
      const hadFocus = form.contains(document.activeElement);
      form.hidden = true;
      if (hadFocus) setCurrent(row || null);
    }, 1000);
  }

  function focusAfter(decided) {
    // The next pending row, else the previous one, else the heading: never <body>.
    const all = rows();
    const at = all.indexOf(decided);
    const next = all.slice(at + 1).find(isPending) || all.slice(0, at).reverse().find(isPending);
    if (next) {
      setCurrent(next);
      return;
    }
    setCurrent(null);
    const heading = document.getElementById("queue-heading");
    if (heading) heading.focus();
  }

  function refresh(agent, except) {
    // What approving each other row of this agent would do has changed: ask again, in
    // one request whose answer replaces their budget notes and previews out of band.
    const queue = document.getElementById("queue");
    const url = queue && queue.dataset.impactsUrl;
    const others = rows().filter(
      (r) => isPending(r) && !isProposal(r) && r.dataset.agent === agent && keyOf(r) !== except,
    );
    if (!url || !others.length || !window.htmx) return;
    const opened = others.filter((r) => r.querySelector("details.queue-preview[open]"));
    const query = new URLSearchParams({
      ids: others.map((r) => r.dataset.promotionId).join(","),
      open: opened.map((r) => r.dataset.promotionId).join(","),
    });
    htmx.ajax("GET", `${url}?${query}`, { target: "#queue-announcer", swap: "none" });
  }

  function afterChange(elt) {
    const id = keyOf(elt);
    const agent = changing.get(id);
    changing.delete(id);
    const landed = !elt.classList.contains("decided")
      || (["approved", "published"].includes(elt.dataset.decision) && elt.dataset.undo !== "refused");
    if (agent && landed) refresh(agent, id);
  }

  function arrived(elt) {
    if (!(elt instanceof Element)) return;
    // A row replaced beside the one decided (a proposal left stale by publishing another):
    // it changes nothing for focus or for what is read out.
    if (elt.matches("[data-aside]")) return;
    for (const form of elt.querySelectorAll("[data-undo-seconds]")) undoTimer(form);
    if (elt.matches("[data-undo-seconds]")) undoTimer(elt);
    if (elt.matches(ROW)) afterChange(elt);
    // ROW is a list of selectors: test the class on its own.
    if (elt.matches(ROW) && elt.classList.contains("decided")) {
      const notice = elt.querySelector("[data-notice-text]");
      const undo = elt.querySelector(".undo-form");
      announce(`${notice ? notice.textContent.trim() : ""}${undo ? " Press u to undo." : ""}`);
      if (elt.dataset.undo === "refused") setCurrent(elt);
      else focusAfter(elt);
    } else if (elt.matches(ROW)) {
      // A row put back by Undo.
      announce("Undone: the memory waits for approval again.");
      setCurrent(elt);
    } else if (elt.matches("#queue") && bulkSent) {
      bulkSent = false;
      const notice = elt.querySelector("[data-bulk-notice], .alert-error");
      const undo = elt.querySelector("#bulk-undo");
      if (notice) announce(`${notice.textContent.trim()}${undo ? " Press u to undo." : ""}`);
      // A bulk decision is about memories: the next one is current, never a proposed
      // change above them (where "a" would be one step from publishing).
      const first = rows().find((r) => isPending(r) && !isProposal(r));
      if (first) setCurrent(first);
      else document.getElementById("queue-heading")?.focus();
    }
  }

  document.addEventListener("htmx:beforeSwap", (event) => {
    // The refreshed budget notes arrive out of band, one per row asked about. A row decided
    // while they were on their way has no note any more; htmx would report its missing
    // target as an error, so the notes of rows gone from the page are left out first.
    const queue = document.getElementById("queue");
    const url = queue && queue.dataset.impactsUrl;
    const path = (event.detail.requestConfig && event.detail.requestConfig.path) || "";
    if (!url || !path.startsWith(url)) return;
    const answer = document.createElement("template");
    answer.innerHTML = event.detail.serverResponse;
    for (const note of answer.content.querySelectorAll("[hx-swap-oob][id]")) {
      if (!document.getElementById(note.id)) note.remove();
    }
    event.detail.serverResponse = answer.innerHTML;
  });

  document.addEventListener("htmx:load", (event) => arrived(event.target));

  function start() {
    for (const hint of document.querySelectorAll("[data-shortcuts-hint]")) hint.hidden = false;
    for (const form of document.querySelectorAll("[data-undo-seconds]")) undoTimer(form);
    countSelected();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
