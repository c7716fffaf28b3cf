"""axe-core in the real Chromium: run it on a page and keep what blocks a release.

axe-core comes from npm, pinned by package-lock.json (``make axe`` installs it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")

# Everything axe checks by default (WCAG 2.x A and AA and its best practices).
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({
      target: n.target.join(" "), impact: n.impact,
      summary: (n.failureSummary || "").split("\\n").slice(0, 3).join(" "),
    })),
  }));
}"""

Problems = dict[str, list[str]]


def axe_context(scheme: str) -> dict[str, Any]:
    """Options of a browser context for axe: a desktop in ``scheme`` (light or dark),
    bypassing the page's own Content-Security-Policy, which would refuse the injected
    script."""
    assert AXE.is_file(), "axe-core is missing: run `make axe`"
    return {"viewport": {"width": 1440, "height": 900}, "color_scheme": scheme, "bypass_csp": True}


def axe_violations(page: Any) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(RUN_AXE)
    return found


def blocking(violations: list[dict[str, Any]], rules: tuple[str, ...] = ()) -> list[str]:
    """One line per serious or critical node, or node breaking one of ``rules`` whatever
    its impact: rule, target, what is wrong."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            if (node["impact"] or violation["impact"]) in BLOCKING or violation["id"] in rules:
                lines.append(
                    f"{violation['id']} ({node['impact'] or violation['impact']}) "
                    f"at {node['target']}: {node['summary']}"
                )
    return lines


def check(page: Any, where: str, problems: Problems, rules: tuple[str, ...] = ()) -> None:
    """Run axe on ``page`` and note its blocking violations (and any of ``rules``) under
    ``where``."""
    found = blocking(axe_violations(page), rules)
    if found:
        problems[where] = found


def report(scheme: str, problems: Problems, pages: str = "pages") -> str:
    lines = "\n".join(
        f"{where}:\n" + "\n".join(f"  {line}" for line in found)
        for where, found in problems.items()
    )
    return f"axe-core ({scheme} mode) found on {len(problems)} {pages}:\n{lines}"
