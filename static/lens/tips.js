// Tooltips of memory fragments. Each fragment names its tooltip with aria-describedby, so
// screen readers read it as the fragment's description; this script shows it beside the
// fragment on hover and on keyboard focus (Escape hides it) and keeps it open while the
// pointer moves onto it. Without the script, a CSS tooltip from data-tip shows instead.
(() => {
  document.documentElement.classList.add("tips-js");
  let shown = null;
  let owner = null;
  const GAP = 6;
  const MARGIN = 8;

  const tipOf = (fragment) => {
    const id = fragment.getAttribute("aria-describedby");
    const tip = id ? document.getElementById(id) : null;
    return tip && tip.classList.contains("frag-tip") ? tip : null;
  };

  const place = () => {
    if (!shown || !owner) return;
    const lines = owner.getClientRects();
    if (!lines.length) return hide();
    const last = lines[lines.length - 1];
    const box = shown.getBoundingClientRect();
    const left = Math.max(MARGIN, Math.min(last.left, window.innerWidth - box.width - MARGIN));
    let top = last.bottom + GAP;
    if (top + box.height > window.innerHeight - MARGIN) {
      top = Math.max(MARGIN, lines[0].top - box.height - GAP);
    }
    shown.style.left = `${left}px`;
    shown.style.top = `${top}px`;
  };

  const hide = () => {
    if (shown) shown.hidden = true;
    shown = null;
    owner = null;
  };

  const show = (fragment) => {
    const tip = tipOf(fragment);
    if (!tip) return;
    if (tip !== shown) hide();
    shown = tip;
    owner = fragment;
    tip.hidden = false;
    place();
  };

  const fragmentAt = (node) => node instanceof Element ? node.closest(".frag-memory[aria-describedby]") : null;

  document.addEventListener("mouseover", (event) => {
    const fragment = fragmentAt(event.target);
    if (fragment) show(fragment);
  });
  document.addEventListener("mouseout", (event) => {
    if (!shown) return;
    const to = event.relatedTarget;
    // Moving between the fragment and its tooltip keeps it open (WCAG 1.4.13).
    if (to instanceof Node && (owner.contains(to) || shown.contains(to))) return;
    const from = event.target;
    if (from instanceof Node && (owner.contains(from) || shown.contains(from))) {
      if (document.activeElement !== owner) hide();
    }
  });
  document.addEventListener("focusin", (event) => {
    const fragment = fragmentAt(event.target);
    if (fragment) show(fragment);
    else hide();
  });
  document.addEventListener("focusout", (event) => {
    if (shown && event.target === owner) hide();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && shown) hide();
  });
  window.addEventListener("scroll", place, { capture: true, passive: true });
  window.addEventListener("resize", place, { passive: true });
})();
