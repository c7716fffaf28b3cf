"""``make bench-scale``: what each operation costs as one team grows 1×, 10× and 100×
(docs/performance.md#cost-curves-as-the-data-grows).

For each database (SQLite in a scratch file, then PostgreSQL in a scratch database at
``BENCH_PG_URL`` when it answers), ``bench.scale_run`` grows the team and times each
operation at each size in a process of its own. Then this writes the figures to
``docs/scale/data.json``, one SVG line chart per operation to ``docs/scale/`` (one
line per database), and says of each operation whether it kept to its bound: a paged
page flat, a whole-data operation no worse than linear.

``python -m bench.scale [sqlite|postgresql] [FACTORS]`` runs one database, or other
sizes (``1,10``), without touching the docs; ``python -m bench.scale redraw`` draws the
charts and the table again from ``docs/scale/data.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.http import postgres_answers, scratch_database
from bench.svg_chart import line_chart

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "scale"
FACTORS = (1, 10, 100)
NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
# Growth is the grown team's p50 over the 1× team's, timed in alternating rounds at the
# same moment (bench/scale_run.py). Noise on a shared 2-core machine still moves a p50
# by tens of percent: a paged page is flat when 100× the data costs at most twice the
# time, and a whole-data operation linear when at most 1.2 × the data's growth.
FLAT_AT_MOST = 2.0
LINEAR_SLACK = 1.2

Bound = Literal["flat", "linear"]


@dataclass(frozen=True)
class Operation:
    key: str
    title: str
    bound: Bound
    data: str  # what grows under it


OPERATIONS = (
    Operation(
        "compose_uncached", "Composition, uncached (compose)", "linear", "the agent's memories"
    ),
    Operation(
        "compose_cached",
        "Composition endpoint, second call",
        "flat",
        "nothing, once cached (the agent's memories until then)",
    ),
    Operation("lens", "Lens page", "linear", "the agent's memories (it composes)"),
    Operation("queue", "Approval queue page", "flat", "pending memories (paged)"),
    Operation("search", "Search page (2 words)", "linear", "the matches, each one ranked"),
    Operation("timeline", "Delivery timeline page", "flat", "deliveries (paged)"),
    Operation("audit_page", "Audit log page", "flat", "audit events (paged)"),
    Operation("verify_audit", "verify_audit", "linear", "audit events"),
    Operation("export", "Bundle export", "linear", "memories and deliveries"),
    Operation("what_if", "What-if (section order, last 50)", "linear", "the agent's memories"),
)


def verdict(op: Operation, size: dict[str, Any], data_ratio: float) -> tuple[float, bool]:
    """How much ``op`` grew at ``size`` against the 1× team timed beside it, and whether
    that kept to its bound."""
    figure = size["figures"][op.key]
    ratio = float(figure["ms"]) / float(figure["reference_ms"])
    limit = FLAT_AT_MOST if op.bound == "flat" else data_ratio * LINEAR_SLACK
    return ratio, ratio <= limit


def run_database(kind: str, factors: tuple[int, ...], out: Path) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="lens-bench-scale-") as scratch,
        scratch_database(kind, Path(scratch)) as url,
    ):
        subprocess.run(
            [sys.executable, "-m", "bench.scale_run", str(out), ",".join(map(str, factors))],
            cwd=ROOT,
            check=True,
            env={**_env(), "DATABASE_URL": url},
        )
    return dict(json.loads(out.read_text()))


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "DEBUG": os.environ.get("DEBUG", "1")}


def table(runs: dict[str, dict[str, Any]], factors: tuple[int, ...]) -> list[str]:
    """The figures as a Markdown table: one row per operation and database."""
    head = " | ".join(f"{f}×" for f in factors)
    last = f"{factors[-1]}×"
    lines = [
        f"| operation | database | {head} | 1× team beside {last} | growth | bound | kept |",
        "|---" * (len(factors) + 6) + "|",
    ]
    data_ratio = factors[-1] / factors[0]
    for op in OPERATIONS:
        for kind, run in runs.items():
            sizes = run["sizes"]
            cells = " | ".join(_ms(size["figures"][op.key]["ms"]) for size in sizes)
            cells += " | —" * (len(factors) - len(sizes))
            if len(sizes) == len(factors):
                ratio, kept = verdict(op, sizes[-1], data_ratio)
                beside = _ms(sizes[-1]["figures"][op.key]["reference_ms"])
                tail = f"{beside} | {ratio:.1f}× | {op.bound} | {'yes' if kept else '**no**'}"
            else:
                tail = f"— | — | {op.bound} | —"
            lines.append(f"| {op.title} | {NAMES[kind]} | {cells} | {tail} |")
    return lines


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"


def charts(runs: dict[str, dict[str, Any]], factors: tuple[int, ...]) -> dict[str, str]:
    """Each operation's chart, as SVG text by file name: a line per database, and dashed
    beside it the 1× team timed at the same moments (how the machine's speed drifted)."""
    labels = [f"{f}×" for f in factors]
    drawn = {}
    for op in OPERATIONS:
        series: dict[str, list[float | None]] = {}
        dashed: dict[str, str] = {}
        for kind, run in runs.items():
            padding: list[float | None] = [None] * (len(factors) - len(run["sizes"]))
            figures = [size["figures"][op.key] for size in run["sizes"]]
            series[NAMES[kind]] = [f["ms"] for f in figures] + padding
            beside = f"{NAMES[kind]}, 1× team"
            series[beside] = [f["reference_ms"] for f in figures] + padding
            dashed[beside] = NAMES[kind]
        expected = "should stay flat" if op.bound == "flat" else "at most linear"
        title = f"{op.title}: {expected}"
        drawn[f"{op.key}.svg"] = line_chart(title, factors, series, x_labels=labels, dashed=dashed)
    return drawn


def write_docs(runs: dict[str, dict[str, Any]], factors: tuple[int, ...], minutes: float) -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, svg in charts(runs, factors).items():
        (DOCS / name).write_text(svg)
    data = {
        "factors": list(factors),
        "minutes": minutes,
        "flat_at_most": FLAT_AT_MOST,
        "linear_slack": LINEAR_SLACK,
        "operations": [op.__dict__ for op in OPERATIONS],
        "runs": runs,
    }
    (DOCS / "data.json").write_text(json.dumps(data, indent=1) + "\n")
    (DOCS / "table.md").write_text("\n".join(table(runs, factors)) + "\n")


def main(argv: list[str]) -> int:
    if argv == ["redraw"]:  # the charts and table again, from the committed figures
        data = json.loads((DOCS / "data.json").read_text())
        write_docs(data["runs"], tuple(data["factors"]), data["minutes"])
        return 0
    started = time.perf_counter()
    kinds = [a for a in argv if a in NAMES] or ["sqlite", "postgresql"]
    sized = [a for a in argv if a not in NAMES]
    factors = tuple(int(f) for f in sized[0].split(",")) if sized else FACTORS
    if "postgresql" in kinds and not postgres_answers():
        print("PostgreSQL does not answer at BENCH_PG_URL: SQLite alone")
        kinds.remove("postgresql")
    runs: dict[str, dict[str, Any]] = {}
    out_dir = Path(tempfile.mkdtemp(prefix="lens-bench-scale-out-"))
    for kind in kinds:
        runs[kind] = run_database(kind, factors, out_dir / f"{kind}.json")
    seconds = time.perf_counter() - started
    lines = table(runs, factors)
    print("\n".join(["", *lines, "", f"bench-scale took {seconds / 60:.1f} minutes"]))
    if argv:  # a partial run: the docs keep the whole one
        return 0
    write_docs(runs, factors, round(seconds / 60, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
