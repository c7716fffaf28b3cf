// The admin's inline rows, on every admin page.
// Ordering (web/admin/ordering.py): without this script each arrow submits the form and
// the server swaps the row with its neighbour; with it, the row moves on the page at once
// and the positions are renumbered, saved with the form.
// Names (web/admin/row_names.py): each control of a tabular row is named "<column>, row
// <n>"; rows added, removed or moved here are numbered again.
(() => {
  "use strict";
  const ROW = "tr.form-row, div.inline-related:not(.tabular)";
  const ROW_NAME = /, (?:new row|row \d+)$/;

  const isRow = (el) =>
    el.matches(ROW) && !el.classList.contains("empty-form") && el.querySelector("[data-order]");
  const rowsOf = (group) => [...group.querySelectorAll(ROW)].filter(isRow);

  // A row and what belongs to it above: the tabular inline's line of row errors.
  const unitOf = (row) => {
    const before = row.previousElementSibling;
    return before && before.classList.contains("row-form-errors") ? [before, row] : [row];
  };

  // A new row nobody has filled in keeps a blank position, so it stays an unsent extra
  // row instead of turning into a half-filled one the server refuses.
  const pristine = (row) => {
    if (row.classList.contains("has_original") || row.dataset.moved) return false;
    for (const field of row.querySelectorAll("input, select, textarea")) {
      if (field.classList.contains("lens-order-input")) continue;
      if (field.type === "hidden" || field.type === "submit") continue;
      if (field.type === "checkbox" || field.type === "radio") {
        if (field.checked !== field.defaultChecked) return false;
      } else if (field.tagName === "SELECT") {
        for (const option of field.options) {
          if (option.selected !== option.defaultSelected) return false;
        }
      } else if (field.value !== field.defaultValue) {
        return false;
      }
    }
    return true;
  };

  const relabel = (group) => {
    rowsOf(group).forEach((row, index) => {
      for (const button of row.querySelectorAll("[data-move]")) {
        button.setAttribute("aria-label", `Move row ${index + 1} ${button.dataset.move}`);
      }
    });
  };

  // Every row of the group but the blank one the admin copies, in the page's order.
  const nameRows = (group) => {
    const rows = [...group.querySelectorAll(ROW)].filter(
      (row) => !row.classList.contains("empty-form"),
    );
    rows.forEach((row, index) => {
      for (const control of row.querySelectorAll("[aria-label]")) {
        const name = control.getAttribute("aria-label");
        if (ROW_NAME.test(name)) {
          control.setAttribute("aria-label", name.replace(ROW_NAME, `, row ${index + 1}`));
        }
      }
    });
  };

  // The admin's autocomplete (Select2) hides the named <select> and shows a box whose
  // name is only the chosen value, empty on a blank row: the box is named by the
  // select's name and then the chosen value ("User, row 2 alice").
  const nameAutocompletes = (root) => {
    for (const select of root.querySelectorAll("select.admin-autocomplete[aria-label]")) {
      const box = select.nextElementSibling;
      if (!box || !box.classList.contains("select2")) continue;
      const combo = box.querySelector(".select2-selection[role=combobox]");
      const shown = box.querySelector(".select2-selection__rendered");
      if (!combo || !shown || !shown.id) continue;
      // The chosen value is text inside the box, not a nameless text field of its own.
      shown.removeAttribute("role");
      shown.removeAttribute("aria-readonly");
      // Ids follow the row's number, which the admin changes when a row is removed.
      combo.id = `${select.id}-box`;
      combo.setAttribute("aria-label", select.getAttribute("aria-label"));
      combo.setAttribute("aria-labelledby", `${combo.id} ${shown.id}`);
    }
  };

  const renumber = (group) => {
    let position = 0;
    for (const row of rowsOf(group)) {
      const input = row.querySelector(".lens-order-input");
      if (input && !pristine(row)) input.value = String(position++);
    }
    relabel(group);
  };

  const announce = (group, text) => {
    const status = group.querySelector(".lens-order-status");
    if (status) status.textContent = text;
  };

  const enhance = () => {
    for (const group of document.querySelectorAll(".inline-group")) {
      if (!group.querySelector("[data-order]")) continue;
      group.classList.add("lens-ordering");
      const status = document.createElement("p");
      status.className = "lens-order-status";
      status.setAttribute("role", "status");
      group.append(status);
    }
    // The arrows say where a row goes; the numbers stay in the form, out of sight.
    for (const input of document.querySelectorAll(".lens-order-input")) input.type = "hidden";
  };

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-move]");
    if (!button) return;
    const row = button.closest(ROW);
    const group = button.closest(".inline-group");
    if (!row || !group) return;
    event.preventDefault();
    const rows = rowsOf(group);
    const at = rows.indexOf(row);
    const to = at + (button.dataset.move === "up" ? -1 : 1);
    if (at < 0 || to < 0 || to >= rows.length) {
      announce(group, to < 0 ? "Already the first row." : "Already the last row.");
      return;
    }
    // The neighbour moves, not the row: the focused button never leaves the page.
    const other = unitOf(rows[to]);
    if (to < at) row.after(...other);
    else unitOf(row)[0].before(...other);
    row.dataset.moved = "1";
    renumber(group);
    nameRows(group);
    button.focus();
    announce(group, `Moved to row ${to + 1} of ${rows.length}. Save to keep the order.`);
  });

  // The admin's split date and time boxes have "Date:" and "Time:" before them, but no
  // label; a box of a tabular row is already named (row_names.py).
  const nameSplitDateTimes = () => {
    for (const box of document.querySelectorAll("p.datetime")) {
      const row = box.closest(".fieldBox, .form-row");
      const label = row && row.querySelector("label");
      const field = label ? label.textContent.trim().replace(/:$/, "") : "";
      let before = "";
      for (const node of box.childNodes) {
        if (node.nodeType === Node.TEXT_NODE) {
          before += node.textContent;
        } else if (node instanceof Element && node.matches("input:not([type=hidden])")) {
          const part = before.trim().replace(/:$/, "").toLowerCase();
          if (part && !node.labels.length && !node.hasAttribute("aria-label")) {
            node.setAttribute("aria-label", field ? `${field} (${part})` : part);
          }
          before = "";
        }
      }
    }
  };

  // The admin's two-list selector (filter_horizontal) names each filter box with an icon
  // inside its label, which needs the role of an image for its name to count.
  const nameFilterIcons = () => {
    for (const icon of document.querySelectorAll(".search-label-icon[aria-label]:not([role])")) {
      icon.setAttribute("role", "img");
    }
  };

  // Rows the admin adds or removes ("Add another", the new row's ×) change the count.
  // The admin numbers the rows' ids again after telling of a removal, and starts a new
  // row's autocomplete in its own listener: this waits for both.
  for (const name of ["formset:added", "formset:removed"]) {
    document.addEventListener(name, (event) => {
      const group = document.getElementById(`${event.detail.formsetName}-group`);
      if (!group) return;
      queueMicrotask(() => {
        if (group.classList.contains("lens-ordering")) relabel(group);
        nameRows(group);
        nameAutocompletes(group);
      });
    });
  }

  // The admin starts its autocompletes when jQuery is ready; this comes after them.
  const jQuery = window.django && window.django.jQuery;
  if (jQuery) jQuery(() => nameAutocompletes(document));

  const start = () => {
    enhance();
    nameSplitDateTimes();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  // The two-list selectors are built when the page has loaded, by a script before this.
  if (document.readyState === "complete") nameFilterIcons();
  else window.addEventListener("load", nameFilterIcons);
})();
