// Copy the whole composed prompt: the sections' texts joined exactly as the API joins them.
// A section's text is its fragments' texts in order (the lens splits the Context into
// cards, whose headings are not prompt text).
function promptText() {
  const sections = [...document.querySelectorAll("[data-section-text]")];
  return sections
    .map((el) => [...el.querySelectorAll("[data-source]")].map((f) => f.textContent).join(""))
    .join("\n\n");
}

// Copy buttons do nothing without this script, so pages render them hidden and it shows
// them; [data-copy-from] names the element whose text the button copies.
for (const button of document.querySelectorAll("[data-copy-prompt][hidden], [data-copy-from][hidden]")) {
  button.hidden = false;
}

document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-prompt], [data-copy-from]");
  if (!button) return;
  const source = button.dataset.copyFrom && document.getElementById(button.dataset.copyFrom);
  const text = source ? source.textContent : promptText();
  const original = button.dataset.label || button.textContent;
  button.dataset.label = original;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => { button.textContent = original; }, 1600);
});

// htmx may keep copies of pages in the browser's storage for its history (it is told not
// to, in base.html's htmx-config): whatever an older page left there is removed on
// logout, and on every page shown to nobody signed in (the login page, logged out).
const HISTORY_CACHE = "htmx-history-cache";
function forgetPageCopies() {
  for (const storage of [window.sessionStorage, window.localStorage]) {
    try {
      storage.removeItem(HISTORY_CACHE);
    } catch {
      // Storage may be disabled; then nothing was kept either.
    }
  }
}
document.addEventListener("submit", (event) => {
  if (event.target.matches("form[data-logout]")) forgetPageCopies();
});
if (!document.querySelector("form[data-logout]")) forgetPageCopies();
