"""``launch()``: run one command as every task of a local cluster and collect the outcome."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from distribute.launch import _checks, cluster
from distribute.launch.output import OutputCollector, Sink
from distribute.launch.ports import free_ports
from distribute.launch.results import LaunchResult
from distribute.launch.signals import SignalCatcher, redeliver
from distribute.launch.supervisor import Supervisor, TaskCommand

__all__ = ["DEFAULT_GRACE_SECONDS", "LaunchPlan", "launch", "plan_launch", "run_plan"]

DEFAULT_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class LaunchPlan:
    """A checked launch, ready to run (ports are picked when it runs)."""

    argv: List[str]
    tasks: List[cluster.Task]
    extra_env: Dict[str, Optional[str]] = field(repr=False)  # may hold the job secret
    cwd: Optional[str]
    host: str
    timeout: Optional[float]
    grace_period: float


def plan_launch(argv: Sequence[str], workers: Any = 1, chief: Any = False, ps: Any = 0,
                timeout: Any = None, env: Optional[Mapping[str, Optional[str]]] = None,
                cwd: Any = None, host: Any = "127.0.0.1",
                grace_period: Any = DEFAULT_GRACE_SECONDS) -> LaunchPlan:
    """Checks every argument of :func:`launch` (see there) and returns the plan."""
    workers = _checks.check_count("workers", workers, 1, "A cluster needs at least one worker.")
    ps = _checks.check_count("ps", ps, 0)
    chief = _checks.check_bool("chief", chief) or ps > 0  # a ps job's chief is its coordinator
    extra_env = _checks.check_env(env)
    cwd = _checks.check_cwd(cwd)
    path = cluster.base_environment(extra_env).get("PATH")
    host = _checks.check_host(host)
    free_ports(host, 1)  # a host this machine cannot listen on fails here, with the others
    return LaunchPlan(
        argv=_checks.check_argv(argv, cwd, path),
        tasks=cluster.plan_tasks(workers, chief, ps), extra_env=extra_env, cwd=cwd, host=host,
        timeout=_checks.check_seconds("timeout", timeout, allow_none=True, allow_zero=False),
        grace_period=_checks.check_seconds("grace_period", grace_period, allow_none=False,
                                           allow_zero=True) or 0.0)


def run_plan(plan: LaunchPlan, sink: Optional[Sink] = None, catch_signals: bool = True,
             keep_output: bool = True) -> LaunchResult:
    """Runs ``plan`` to the end; a caught signal is forwarded and reported, not re-raised.

    With ``keep_output=False`` the lines only go to ``sink`` (the command line does this, so
    a long job's log does not pile up in memory) and the result's outputs are empty.
    """
    spec = cluster.local_cluster(plan.tasks, plan.host)
    base = cluster.with_job_secret(cluster.base_environment(plan.extra_env), plan.extra_env)
    commands = [TaskCommand(task.name, plan.argv,
                            cluster.task_environment(base, spec, task, len(plan.tasks)),
                            is_ps=task.task_type == "ps", is_chief=task.task_type == "chief")
                for task in plan.tasks]
    collector = OutputCollector([task.name for task in plan.tasks], sink, keep_output)
    with SignalCatcher(catch_signals) as catcher:
        supervisor = Supervisor(commands, collector, catcher, plan.timeout, plan.grace_period,
                                plan.cwd)
        supervisor.run()
    supervisor.record_signals(catcher.take())  # any that came after the last forwarding
    return supervisor.result(spec)


def _echo(stream: str, line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


def launch(argv: Sequence[str], workers: int = 1, chief: bool = False, ps: int = 0,
           timeout: Optional[float] = None, env: Optional[Mapping[str, Optional[str]]] = None,
           cwd: Optional[str] = None, echo: bool = False, host: str = "127.0.0.1", *,
           grace_period: float = DEFAULT_GRACE_SECONDS,
           forward_signals: bool = True) -> LaunchResult:
    """Runs ``argv`` once per task of a local cluster and waits for every task to end.

    Every task gets a free port of ``host``, its own ``TF_CONFIG`` and the launch's job secret
    (``DISTRIBUTE_JOB_SECRET``: a fresh one per launch unless ``env`` or this process sets it;
    never printed). When a task fails, the others get SIGTERM, then SIGKILL after
    ``grace_period``. With ``ps > 0`` (a parameter-server job, which always has a chief: the
    coordinator) a failed worker or ps is only reported; the job ends with the chief, and
    the others get ``grace_period`` to exit on their own, then SIGTERM, then SIGKILL
    (``docs/launch.md``). No task process (nor anything it started in its process group)
    outlives this call, whether it returns or raises.

    Args:
        argv: the command every task runs, e.g. ``[sys.executable, "train.py", "--fast"]``.
        workers: the number of ``worker`` tasks (>= 1).
        chief: True to add a ``chief`` task (it trains and also writes checkpoints).
        ps: the number of parameter-server (``ps``) tasks (>= 0); > 0 implies ``chief``.
        timeout: seconds until every task is stopped (``result.timed_out``), or None.
        env: variables for the tasks, over this process's environment (None removes one).
            ``OMP_NUM_THREADS`` defaults to ``cores // tasks`` (at least 1) and
            ``PYTHONUNBUFFERED`` to ``1`` where they are unset; ``TF_CONFIG`` is not allowed.
        cwd: the tasks' working directory (default: this process's).
        echo: True to also print the prefixed lines to ``sys.stdout`` as they arrive.
        host: the address every task gets a port of (one local address, not a wildcard).
        grace_period: seconds between SIGTERM and SIGKILL when stopping tasks.
        forward_signals: catch SIGINT, SIGTERM and SIGHUP during the launch (main thread
            only), forward them to the tasks, and raise them again here once every task
            has ended (so Ctrl-C still raises ``KeyboardInterrupt``).

    Returns:
        A :class:`LaunchResult`: ``returncode`` is 0, or the first failed task's status
        (``128 + N`` for signal ``N``; in a ps job the chief's), or 124 after the deadline.

    Raises:
        TypeError: an argument has the wrong type.
        InvalidArgumentError: a count, duration, host or ``env`` entry is out of range.
        NotFoundError: ``argv[0]`` or ``cwd`` does not exist.

    Example:
        >>> import sys
        >>> result = launch([sys.executable, "-c", "import os; print(os.environ['TF_CONFIG'])"],
        ...                 workers=2, timeout=60)
        >>> result.returncode, sorted(result.tasks), result.output.count("[worker:1] {")
        (0, ['worker:0', 'worker:1'], 1)
    """
    plan = plan_launch(argv, workers, chief, ps, timeout, env, cwd, host, grace_period)
    sink = _echo if _checks.check_bool("echo", echo) else None
    result = run_plan(plan, sink, catch_signals=_checks.check_bool("forward_signals",
                                                                   forward_signals))
    if result.signal is not None:
        redeliver(result.signal)
    return result
