// Copy the whole composed prompt: the sections' texts joined exactly as the API joins them.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-prompt]");
  if (!button) return;
  const sections = [...document.querySelectorAll("[data-section-text]")];
  const text = sections.map((el) => el.textContent).join("\n\n");
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

// "Select all on this page" for the approval queue's bulk form.
document.addEventListener("change", (event) => {
  const toggle = event.target.closest("[data-select-all]");
  if (!toggle) return;
  for (const box of document.querySelectorAll('input[name="selected"][form="bulk"]')) {
    box.checked = toggle.checked;
  }
});
