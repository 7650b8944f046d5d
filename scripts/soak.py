"""Run ``tests/reliability`` N times in a row with the CPU loaded by busy-loop processes, and
print one line per pass and a summary: the proof that the reliability tests hold on a busy
machine (a flaky test is a bug).

    python scripts/soak.py --passes 20 --hogs 2 [--out bench/results/soak.json] [-- pytest args]

Stops at the first failing pass (its output is kept in the report), so "20 consecutive passes"
means exactly that. The hogs are plain ``while True: pass`` interpreters, one per core by
default, started before the first pass and killed at the end whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
        for _ in range(count)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--out", help="write the JSON report here")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)

    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/reliability",
        "-q",
        "-p",
        "no:cacheprovider",
        *args.pytest_args,
    ]
    env = {**os.environ, "CI": "true"}
    # Each pass's temporary files (the worker logs of the torture runs) are kept for a failing
    # pass, so that what it found can be read afterwards, and deleted after a passing one.
    kept = Path(args.out).parent / "soak-failed" if args.out else REPO / "soak-failed"
    results: list[dict[str, object]] = []
    hogs = _hogs(args.hogs)
    try:
        for number in range(1, args.passes + 1):
            started = time.monotonic()
            basetemp = Path(tempfile.mkdtemp(prefix=f"soak-{number}-"))
            done = subprocess.run(
                [*command, f"--basetemp={basetemp}"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
            )
            seconds = round(time.monotonic() - started, 1)
            tail = done.stdout.strip().splitlines()[-1:] or [""]
            results.append({"pass": number, "rc": done.returncode, "seconds": seconds})
            print(f"pass {number:>2}: rc={done.returncode} {seconds:>6.1f}s  {tail[0]}", flush=True)
            if done.returncode != 0:
                results[-1]["output"] = done.stdout[-20000:] + done.stderr[-5000:]
                shutil.rmtree(kept, ignore_errors=True)
                shutil.move(str(basetemp), kept)
                results[-1]["kept"] = str(kept)
                print(f"its temporary files (worker logs) are in {kept}", flush=True)
                break
            shutil.rmtree(basetemp, ignore_errors=True)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    passed = sum(1 for result in results if result["rc"] == 0)
    durations = sorted(float(str(result["seconds"])) for result in results)
    summary = {
        "passes_in_a_row": passed,
        "asked": args.passes,
        "hogs": args.hogs,
        "median_seconds": durations[len(durations) // 2] if durations else None,
        "results": results,
    }
    print(f"{passed} consecutive passes of {args.passes} asked, {args.hogs} CPU hogs")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if passed == args.passes else 1


if __name__ == "__main__":
    sys.exit(main())
