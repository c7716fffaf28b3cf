"""The second process of ``test_composition_cache``: it reads one JSON step per line
(``{"team", "agent", "step"}``), makes the change or checks the composition
(``tests.memory.composition_steps``), and answers one JSON line each."""

from __future__ import annotations

import json
import os
import sys
import traceback

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")


def main() -> None:
    import django

    django.setup()
    from lens.models import Team
    from tests.memory.composition_steps import apply, check

    for line in sys.stdin:
        asked = json.loads(line)
        try:
            team = Team.objects.get(slug=asked["team"])
            step = asked["step"]
            if step == ["check"]:
                answer: dict[str, object] = {"sha": check(team, asked["agent"])}
            else:
                apply(team, asked["agent"], step)
                answer = {"done": True}
        except Exception:  # told to the test, which fails with it
            answer = {"error": traceback.format_exc()}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
