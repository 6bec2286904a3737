"""The ``parcv`` command line (the full CLI grows from here)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from parcv import __version__

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parcv", description="Parallel cross-validation.")
    parser.add_argument("--version", action="version", version=f"parcv {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the demo sweeps by nested CV on the local pool")
    demo.add_argument("--out", default="parcv-demo", help="run directory (default: parcv-demo)")
    demo.add_argument("--backend", default="local", choices=["serial", "local"])
    demo.add_argument("--n-jobs", type=int, default=None, help="local workers (default: all cores)")
    demo.add_argument("--quick", action="store_true", help="smaller sweeps")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code.

    Parameters
    ----------
    argv : sequence of str, default=None
        Arguments without the program name (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        0 on success, 1 when the run failed, 2 for a usage error.
    """
    args = _parser().parse_args(argv)
    from parcv.demo import run_demo
    from parcv.errors import ParcvError

    try:
        outcome = run_demo(args.out, backend=args.backend, n_jobs=args.n_jobs, quick=args.quick)
    except (ParcvError, ValueError, TypeError) as err:
        print(f"parcv: error: {err}", file=sys.stderr)
        return 1
    print((outcome.out_dir / "report.md").read_text(encoding="utf-8"))
    print(f"Report: {outcome.out_dir / 'report.md'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
