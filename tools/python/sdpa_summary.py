#!/usr/bin/env python3
"""Judges compare_sdpa.py reports: one line per shape with fa-jit's result beside PyTorch's.

A shape passes when fa-jit ran (no fallback refused under --strict, no error) and its max abs
error against the f64 reference stays within ERROR_UNITS units of roundoff of the element
type. fa-jit rounds the probabilities and the output once each to that type, and with the
harness's randn inputs every output element is a convex combination of values of magnitude
below about 5, so a correct kernel stays within a few units; a wrong mask or tile is off by
far more. Exits 1 when any shape fails.

  sdpa_summary.py REPORT.json [REPORT.json ...]
"""
import json
import sys

UNIT_ROUNDOFF = {"f16": 2.0**-11, "bf16": 2.0**-8, "f32": 2.0**-24}
ERROR_UNITS = 16


def best_torch(backends):
    """The fastest PyTorch backend that ran, as (name, TFLOP/s), or None."""
    ran = [(name[len("torch_"):], b["tflops"]) for name, b in backends.items()
           if name.startswith("torch_") and b["status"] == "ok"]
    return max(ran, key=lambda item: item[1]) if ran else None


def judge(report):
    """Lines for each shape of one report, and how many shapes failed."""
    tolerance = ERROR_UNITS * UNIT_ROUNDOFF[report["dtype"]]
    lines, failed = [], 0
    for result in report["results"]:
        fajit = result["backends"].get("fajit", {"status": "missing", "reason": "fa-jit was not run"})
        shape = f'{report["dtype"]:>4} Lk={result["len_k"]:<6}'
        torch = best_torch(result["backends"])
        beside = f'   best PyTorch: {torch[0]} {torch[1]:.1f} TFLOP/s' if torch else ""
        if fajit["status"] != "ok":
            failed += 1
            lines.append(f'FAILED {shape} fa-jit {fajit["status"]}: {fajit.get("reason", "")}{beside}')
        elif not fajit["max_abs_error"] <= tolerance:
            failed += 1
            lines.append(f'FAILED {shape} fa-jit max abs error {fajit["max_abs_error"]:.3g} > {tolerance:.3g}{beside}')
        else:
            lines.append(f'ok     {shape} fa-jit {fajit["tflops"]:.1f} TFLOP/s, max abs error '
                         f'{fajit["max_abs_error"]:.3g} ({fajit.get("variant", "?")}){beside}')
    return lines, failed


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    shapes = failed = 0
    for path in sys.argv[1:]:
        with open(path) as file:
            report = json.load(file)
        lines, report_failed = judge(report)
        print("\n".join(lines))
        shapes += len(lines)
        failed += report_failed
    print(f"harness: {shapes - failed} passed, {failed} failed of {shapes} shapes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
