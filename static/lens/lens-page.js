// The lens's "Memory only" filter without a reload. The page rendered every card, so the
// links only hide the ones without memories (marked data-memoryless); the server renders
// the same view for ?only=memory, which is what the links lead to without this script.
(() => {
  const complete = () => document.querySelector("[data-prompt][data-complete]");

  const apply = (memoryOnly, href) => {
    const prompt = complete();
    prompt.toggleAttribute("data-only-memory", memoryOnly);
    const wanted = memoryOnly ? "memory" : "all";
    for (const link of document.querySelectorAll(".lens-filter [data-filter-link]")) {
      if (link.dataset.filterLink === wanted) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    const note = prompt.querySelector("[data-filter-note]");
    if (note) note.hidden = !memoryOnly;
    if (href) history.replaceState(null, "", href);
  };

  document.addEventListener("click", (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const prompt = complete();
    if (!prompt || !(event.target instanceof Element)) return;
    const link = event.target.closest("[data-filter-link]");
    if (link) {
      event.preventDefault();
      apply(link.dataset.filterLink === "memory", link.href);
      return;
    }
    // A jump to a card the filter hides shows every card first.
    const jump = event.target.closest('a[href^="#section-"]');
    if (jump && prompt.hasAttribute("data-only-memory")) {
      const card = document.getElementById(jump.getAttribute("href").slice(1));
      if (card && card.hasAttribute("data-memoryless")) {
        apply(false, `${location.pathname}${jump.getAttribute("href")}`);
      }
    }
  });
})();
