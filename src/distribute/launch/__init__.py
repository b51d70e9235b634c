"""Local clusters of processes: ``python -m distribute.launch`` and :func:`launch`.

A multi-worker job is one program run by several processes, each told its role by
``TF_CONFIG``. The launcher starts such a job on one machine:

* it picks a free port of ``127.0.0.1`` for every task (chief, workers, parameter servers)
  and gives each process the same ``cluster`` and its own ``task``;
* it prefixes every line a task prints with the task's name, ``[worker:1] ...``;
* it stops the other tasks (SIGTERM, then SIGKILL) as soon as one fails, and reports the
  failed task's exit status; it forwards SIGINT, SIGTERM and SIGHUP to the tasks;
* a parameter-server job (``ps > 0``, which implies a chief: the coordinator) ends with its
  chief instead: a failed worker or ps is reported and the job goes on, and once the chief
  exits with its status the other tasks get a grace period to exit on their own;
* it never leaves a process behind: each task runs in its own process group, and every
  group is killed before the launcher returns, whatever happened.

From the command line::

    python -m distribute.launch --workers 2 --chief train.py --epochs 3

From Python (tests use this)::

    >>> import sys
    >>> from distribute.launch import launch
    >>> result = launch([sys.executable, "-c", "print('hi')"], workers=2, timeout=60)
    >>> result.returncode, result.tasks["worker:1"].output
    (0, 'hi\\n')

Nothing in the library imports this package; it sits on top of everything else.
"""

from distribute.launch.launcher import launch
from distribute.launch.ports import free_ports
from distribute.launch.results import EXIT_TIMEOUT, LaunchResult, TaskResult

__all__ = ["EXIT_TIMEOUT", "LaunchResult", "TaskResult", "free_ports", "launch"]
