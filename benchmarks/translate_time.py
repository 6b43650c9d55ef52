"""Schema translation time: each schema of ``schemas/`` translated three times in a fresh process.

The first translation in a process builds the format grammars and their JSON escaping, which
are cached for the process after that; the second and third show the steady cost. Usage::

    PYTHONPATH=. python benchmarks/translate_time.py [NAME ...]
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "schemas"

_CHILD = """
import json, sys, time
import structgen.schema, structgen.grammar.regex  # imports are not translation time
from structgen.schema import json_schema_to_grammar
schema = json.load(open(sys.argv[1]))
times = []
for _ in range(3):
    t0 = time.perf_counter()
    json_schema_to_grammar(schema)
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(times))
"""


def main(names: list[str]) -> None:
    paths = [SCHEMAS / f"{n}.json" for n in names] if names else sorted(SCHEMAS.glob("*.json"))
    print("| schema | first ms | second ms | third ms |")
    print("|---|---|---|---|")
    for path in paths:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True)
        first, second, third = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {path.stem} | {first:.1f} | {second:.1f} | {third:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
