"""``python -m distribute.launch``: run a script as every task of a local cluster.

::

    python -m distribute.launch --workers 2 --chief train.py --epochs 3
    python -m distribute.launch --workers 2 --ps 1 -m mypackage.train
    distribute-launch --workers 4 --timeout 600 train.py

Each task runs ``python script.py args...`` (or ``python -m module args...``) with its own
``TF_CONFIG``; every line it prints appears prefixed with its task (``[worker:1] ...``) on
the launcher's stdout or stderr, as the task wrote it. The launcher exits with 0 when every
task succeeded, else with the status of the first task that failed (``128 + N`` for a death
by signal ``N``), 124 when ``--timeout`` expired, ``128 + N`` when it was itself stopped by
signal ``N`` (forwarded to the tasks), and 2 for a wrong command line.

With ``--ps M`` (M > 0) the job is a parameter-server job: it has a chief (the coordinator)
even without ``--chief``, a failed worker or ps is only reported while the chief runs, and
the launcher exits with the chief's status once the chief has exited and the other tasks
have ended (on their own within ``--grace`` seconds, else stopped).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import List, Optional, Sequence, Tuple

from distribute.launch.launcher import DEFAULT_GRACE_SECONDS, plan_launch, run_plan
from distribute.launch.results import LaunchResult

__all__ = ["EXIT_USAGE", "main"]

EXIT_USAGE = 2
_VALUE_OPTIONS = ("--workers", "--ps", "--timeout", "--grace", "--host")
_FLAGS = ("--chief", "-h", "--help")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m distribute.launch",
        usage="%(prog)s [options] (script.py | -m module) [args ...]",
        description="Start a local cluster (workers, optional chief and parameter servers) on "
                    "free ports of one address; give every task its TF_CONFIG; prefix each "
                    "line of output with its task; stop every task when one fails.")
    parser.add_argument("--workers", type=int, default=1, help="worker tasks (default 1)")
    parser.add_argument("--chief", action="store_true", help="add a chief task")
    parser.add_argument("--ps", type=int, default=0,
                        help="parameter-server tasks (default 0); more than 0 also adds the chief "
                             "(the coordinator), and the job then ends when the chief exits")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds until every task is stopped (default: no limit)")
    parser.add_argument("--grace", type=float, default=DEFAULT_GRACE_SECONDS,
                        help="seconds between SIGTERM and SIGKILL when stopping tasks "
                             f"(default {DEFAULT_GRACE_SECONDS:g})")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address whose ports the tasks get (default 127.0.0.1)")
    return parser


def _split(argv: Sequence[str]) -> Tuple[List[str], Optional[str], List[str]]:
    """Splits the command line into the launcher's options, a module name and the command.

    The launcher's options end at the first argument that is not one of them: the script
    (everything after it is its arguments), ``-m MODULE`` or ``--``.
    """
    head: List[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return head, None, list(argv[i + 1:])
        if arg == "-m":
            if i + 1 == len(argv):
                return head + [arg], None, []
            return head, argv[i + 1], list(argv[i + 2:])
        if arg in _VALUE_OPTIONS:
            head += argv[i:i + 2]
            i += 2
        elif arg in _FLAGS or arg.split("=", 1)[0] in _VALUE_OPTIONS or arg.startswith("-"):
            head.append(arg)  # an unknown option is left for argparse to report
            i += 1
        else:
            return head, None, list(argv[i:])
    return head, None, []


def _command(module: Optional[str], rest: List[str]) -> List[str]:
    if module is not None:
        if not _MODULE.match(module):
            raise ValueError(f"-m: expected a module name such as 'pkg.train'; received "
                             f"{module!r}.")
        return [sys.executable, "-m", module, *rest]
    if not rest:
        raise ValueError("expected a script to run (or -m module); received none. Example: "
                         "python -m distribute.launch --workers 2 train.py")
    if not os.path.isfile(rest[0]):
        raise FileNotFoundError(f"script: expected an existing Python file; received "
                                f"{rest[0]!r}, which does not exist in {os.getcwd()!r}.")
    return [sys.executable, *rest]


def _write(stream: str, line: str) -> None:
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write(line)
    out.flush()


def _report(result: LaunchResult) -> None:
    if result.returncode != 0 or result.signal is not None:
        print(f"[launch] {result.summary()}", file=sys.stderr, flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    head, module, rest = _split(list(sys.argv[1:] if argv is None else argv))
    parser = _parser()
    try:
        args = parser.parse_args(head)
    except SystemExit as exc:  # --help, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        plan = plan_launch(_command(module, rest), args.workers, args.chief, args.ps,
                           args.timeout, None, None, args.host, args.grace)
    except (TypeError, ValueError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    result = run_plan(plan, sink=_write, keep_output=False)
    _report(result)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
