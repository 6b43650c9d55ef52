"""Fetch the third-party files tests and benchmarks need (placeholder until the vocab work lands)."""

import argparse
import pathlib

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", default=".assets")
    args = ap.parse_args()
    pathlib.Path(args.dest).mkdir(parents=True, exist_ok=True)
