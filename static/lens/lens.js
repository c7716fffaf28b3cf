// Copy the whole composed prompt: the sections' texts joined exactly as the API joins them.
// A section's text is its fragments' texts in order (the lens splits the Context into
// cards, whose headings are not prompt text).
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-prompt]");
  if (!button) return;
  const sections = [...document.querySelectorAll("[data-section-text]")];
  const text = sections
    .map((el) => [...el.querySelectorAll("[data-source]")].map((f) => f.textContent).join(""))
    .join("\n\n");
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
