#!/usr/bin/env python3
"""Regenerates evals/corpus/ from the case definitions in this directory.

    python3 evals/gen/gen_corpus.py            # every case
    python3 evals/gen/gen_corpus.py loop-      # only cases whose id starts with loop-

Standard library only. The output is deterministic: running it twice gives the same bytes.
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus import write_case  # noqa: E402
import cases_destructive  # noqa: E402
import cases_guessed  # noqa: E402
import cases_loop  # noqa: E402
import cases_fakedone  # noqa: E402
import cases_testclaim  # noqa: E402
import cases_instruction  # noqa: E402
import cases_secret  # noqa: E402
import cases_control  # noqa: E402

MODULES = [
    cases_destructive,
    cases_guessed,
    cases_loop,
    cases_fakedone,
    cases_testclaim,
    cases_instruction,
    cases_secret,
    cases_control,
]


def all_cases():
    for m in MODULES:
        for build in m.CASES:
            yield build


def main(argv):
    root = os.path.join(os.path.dirname(HERE), "corpus")
    prefix = argv[1] if len(argv) > 1 else ""
    os.makedirs(root, exist_ok=True)
    seen = set()
    for build in all_cases():
        case, session = build()
        if case.id in seen:
            raise SystemExit(f"duplicate case id {case.id}")
        seen.add(case.id)
        if not case.id.startswith(prefix):
            continue
        write_case(root, case, session)
        print(f"{case.id:40} {case.cls:22} {session.turn:3} turns")
    if not prefix:
        for name in sorted(os.listdir(root)):
            if name not in seen and os.path.isdir(os.path.join(root, name)):
                shutil.rmtree(os.path.join(root, name))
                print(f"removed stale {name}")


if __name__ == "__main__":
    main(sys.argv)
