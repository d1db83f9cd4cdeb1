"""Long fuzzing run over the compiled core's binding (issue 16).

Runs the cases of tests/property/test_binding_fuzz.py (one hypothesis strategy per bound name)
with a large example budget, each binding in its own child process under a memory limit and a
wall-clock limit, so a segfault, an abort, a runaway allocation or a hang is recorded as a
failure of that binding instead of taking the run down.

    python bench/fuzz_binding.py --examples 2000            # every binding
    python bench/fuzz_binding.py --only sample_group fit    # some of them
    python bench/fuzz_binding.py --seconds 600 --memory-gb 4

Prints one line per binding (examples, seconds, verdict) and a summary; the exit status is the
number of failing bindings (capped at 100). CI runs the same cases with 25 examples each.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import faulthandler, sys
sys.path.insert(0, {tests!r})
faulthandler.dump_traceback_later({dump}, exit=True)  # where a hang is, before the kill
from hypothesis import HealthCheck, given, settings, strategies as st
from dpcore import _core
import test_binding_fuzz as harness
_core.set_max_table_cells(1 << 16)
name, examples, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
count = [0]

@settings(max_examples=examples, deadline=None, database=None, derandomize=False,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def run(data):
    count[0] += 1
    data.draw(harness.CASES[name], label=name)()

run()
print(count[0])
"""


def _limits(memory_bytes: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def fuzz_one(name: str, examples: int, seconds: float, memory_gb: float, seed: int) -> dict:
    script = CHILD.format(tests=str(ROOT / "tests" / "property"), dump=max(seconds - 5, 1))
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", script, name, str(examples), str(seed)],
                              capture_output=True, text=True, timeout=seconds, cwd=ROOT,
                              preexec_fn=_limits(int(memory_gb * 2**30)),
                              env={**os.environ, "PYTHONHASHSEED": str(seed)})
    except subprocess.TimeoutExpired:
        return {"name": name, "verdict": f"HANG (> {seconds:.0f} s)", "ran": "?",
                "seconds": time.monotonic() - start, "detail": ""}
    elapsed = time.monotonic() - start
    if "Timeout (" in done.stderr:  # faulthandler's dump: the stack of the hanging call
        return {"name": name, "verdict": f"HANG (> {seconds - 5:.0f} s)", "ran": "?",
                "seconds": elapsed, "detail": "\n".join(done.stderr.splitlines()[:25])}
    if done.returncode == 0:
        return {"name": name, "verdict": "ok", "ran": done.stdout.strip().splitlines()[-1],
                "seconds": elapsed, "detail": ""}
    verdict = (f"CRASH (signal {-done.returncode})" if done.returncode < 0
               else f"FAIL (exit {done.returncode})")
    detail = "\n".join(done.stderr.strip().splitlines()[-25:])
    return {"name": name, "verdict": verdict, "ran": "?", "seconds": elapsed, "detail": detail}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="per binding (2000)")
    parser.add_argument("--seconds", type=float, default=900, help="per binding (900)")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="address space (4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", help="binding names (default: all)")
    args = parser.parse_args(argv)

    sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "property")]
    import test_binding_fuzz as harness  # noqa: E402  (the cases live with the CI test)
    names = args.only or sorted(harness.CASES)
    unknown = sorted(set(names) - set(harness.CASES))
    if unknown:
        parser.error(f"unknown binding names: {', '.join(unknown)}")

    start, failures = time.monotonic(), 0
    for name in names:
        r = fuzz_one(name, args.examples, args.seconds, args.memory_gb, args.seed)
        failures += r["verdict"] != "ok"
        print(f"{r['name']:<36} {r['ran']:>6} examples {r['seconds']:7.1f} s  {r['verdict']}",
              flush=True)
        if r["detail"]:
            print("    " + r["detail"].replace("\n", "\n    "), flush=True)
    print(f"{len(names)} bindings, {args.examples} examples each, "
          f"{time.monotonic() - start:.0f} s, {failures} failing")
    return min(failures, 100)


if __name__ == "__main__":
    sys.exit(main())
