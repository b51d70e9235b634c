"""TFConfigClusterResolver: the cluster and this task, from the ``TF_CONFIG`` variable.

``TF_CONFIG`` is a JSON object::

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"],
                 "ps": ["host3:2222"], "evaluator": ["host4:2222"]},
     "task": {"type": "worker", "index": 1},
     "rpc_layer": "grpc"}

It is parsed strictly (JSON only, at most 1 MiB, no duplicate keys) and checked as a whole
when the resolver is built, so a mistake fails in microseconds, before any socket opens,
with a :class:`TFConfigError` naming the field. The forms that launchers write are
accepted: Ray Train's (workers only), Kubeflow's and AI Platform's (extra keys such as
``environment``, ``job`` or ``task.trial`` are ignored; the TF1 job name ``master`` means
``chief``; the evaluator may be left out of the cluster), and sparse jobs with string keys
(``{"worker": {"1": "host:2222"}}``, how JSON writes integer keys).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from distribute.cluster_resolver import _env
from distribute.cluster_resolver._errors import (
    ClusterConfigError,
    ClusterConfigTypeError,
    TFConfigError,
    describe,
)
from distribute.cluster_resolver.base import (
    ClusterResolver,
    check_rpc_layer,
    check_task_id,
    check_task_type,
    format_master_url,
)
from distribute.cluster_resolver.cluster_spec import ClusterSpec, Jobs, normalize_cluster
from distribute.cluster_resolver.roles import TASK_TYPES

__all__ = ["TF_CONFIG", "TFConfigClusterResolver", "make_tf_config", "parse_tf_config"]

TF_CONFIG = "TF_CONFIG"
MAX_TF_CONFIG_CHARS = 1 << 20

_ROOT = "TF_CONFIG"


@dataclass(frozen=True)
class ParsedTFConfig:
    """The checked content of ``TF_CONFIG``."""

    cluster: ClusterSpec
    task_type: Optional[str]
    task_id: Optional[int]
    rpc_layer: Optional[str]
    session_master: Optional[str]


def _error(field: str, expected: str, received: Any, fix: str = "") -> TFConfigError:
    return TFConfigError(describe(field, expected, received, fix), field=field, value=received)


def _reject_constant(name: str) -> None:
    raise _error(_ROOT, "strict JSON", name, f"{name} is not JSON; write a number or a string.")


def _unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    result: Dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _error(_ROOT, "each key once in every JSON object", key,
                         f"Remove the second {key!r}.")
        result[key] = value
    return result


def _load_json(text: str) -> Dict[str, Any]:
    if len(text) > MAX_TF_CONFIG_CHARS:
        raise _error(_ROOT, f"at most {MAX_TF_CONFIG_CHARS} characters", f"{len(text)} characters")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _error(_ROOT, "a JSON object", text,
                     f"It is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                     "write it with json.dumps(...).") from None
    if not isinstance(value, dict):
        raise _error(_ROOT, "a JSON object {\"cluster\": ..., \"task\": ...}", value)
    return value


def _cluster_jobs(config: Mapping[str, Any]) -> Jobs:
    if "cluster" not in config:
        return {}
    jobs = normalize_cluster(config["cluster"], f"{_ROOT}['cluster']", string_indices=True,
                             type_error=TFConfigError, value_error=TFConfigError)
    if "master" in jobs:  # The TF1 name of the chief (AI Platform, SageMaker).
        if "chief" in jobs:
            raise _error(f"{_ROOT}['cluster']", "either a 'chief' or a 'master' job",
                         sorted(jobs), "'master' is the old name of 'chief'; keep one of them.")
        jobs = {("chief" if job == "master" else job): tasks for job, tasks in jobs.items()}
    for job, tasks in jobs.items():
        if job not in TASK_TYPES:
            raise _error(f"{_ROOT}['cluster']", f"job names among {TASK_TYPES}", job,
                         _rename_hint(job, "Rename or remove this job."))
        if job in ("chief", "evaluator") and len(tasks) > 1:
            raise _error(f"{_ROOT}['cluster'][{job!r}]", f"at most one {job} task",
                         list(tasks.values()), f"There must be at most one {job!r} task.")
    return jobs


def _task_type(task: Mapping[str, Any], field: str) -> str:
    if "type" not in task:
        raise _error(field, f"a task type among {TASK_TYPES}", task, "Add \"type\": \"worker\".")
    value = task["type"]
    if value == "master":
        return "chief"
    if not isinstance(value, str) or value not in TASK_TYPES:
        raise _error(f"{field}['type']", f"one of {TASK_TYPES}", value, _rename_hint(value, ""))
    return value


def _rename_hint(name: object, default: str) -> str:
    if isinstance(name, str) and name.lower() in TASK_TYPES:
        return f"Task types are lower case: write {name.lower()!r}."
    return default


def _task_index(task: Mapping[str, Any], field: str) -> int:
    if "index" not in task:
        raise _error(field, "a task index", task, "Add \"index\": 0 (this task's number).")
    value = task["index"]
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _error(f"{field}['index']", "a non-negative integer", value)
    return value


def _task(config: Mapping[str, Any]) -> Tuple[Optional[str], Optional[int]]:
    if "task" not in config:
        return None, None
    field = f"{_ROOT}['task']"
    task = config["task"]
    if not isinstance(task, dict):
        raise _error(field, "an object {\"type\": ..., \"index\": ...}", task)
    return _task_type(task, field), _task_index(task, field)


def _check_task_in_cluster(jobs: Jobs, task_type: Optional[str], task_id: Optional[int],
                          type_field: str, id_field: str) -> None:
    """Checks that the task is one of the cluster's tasks (an evaluator may be outside)."""
    if task_type is None and task_id is None:
        if jobs:
            raise _error(f"{_ROOT}['task']", "this process's task, since the cluster has jobs",
                         None, "Add \"task\": {\"type\": \"worker\", \"index\": i}, a different "
                         "index on every worker.")
        return
    if task_type is None or task_id is None:
        missing = type_field if task_type is None else id_field
        raise _error(missing, "a value, since the other half of the task is set", None)
    if not jobs or (task_type == "evaluator" and task_type not in jobs):
        if task_id != 0:
            raise _error(id_field, f"0, the only {task_type} task", task_id)
        return
    if task_type not in jobs:
        raise _error(type_field, f"one of the cluster's jobs {sorted(jobs)}", task_type,
                     "Add this job to the cluster or fix the task type.")
    if task_id not in jobs[task_type]:
        raise _error(id_field, f"one of the task indices of {task_type!r}: "
                     f"{_describe_indices(list(jobs[task_type]))}", task_id,
                     "Give each task its own index, counted from 0.")


def _describe_indices(indices: List[int]) -> str:
    if indices == list(range(len(indices))) and len(indices) > 2:
        return f"0..{len(indices) - 1}"
    return str(indices)


def _optional_str(config: Mapping[str, Any], key: str) -> Optional[str]:
    value = config.get(key)
    if value is not None and not isinstance(value, str):
        raise _error(f"{_ROOT}[{key!r}]", "a string", value)
    return value


def parse_tf_config(text: Optional[str], task_type: Optional[str] = None,
                    task_id: Optional[int] = None, check_task: bool = True) -> ParsedTFConfig:
    """Parses and checks a ``TF_CONFIG`` string (None or ``''`` mean an empty config).

    ``task_type`` and ``task_id``, when given, replace the task of the string and are
    checked against the cluster in its place. With ``check_task=False`` the task is not
    checked against the cluster (its fields are still checked).

    Raises:
        TFConfigError: (a ``ValueError``) anything is wrong; the message names the field.
    """
    config = _load_json(text) if text and text.strip() else {}
    jobs = _cluster_jobs(config)
    file_type, file_id = _task(config)
    override = task_type is not None or task_id is not None
    final_type = task_type if task_type is not None else file_type
    final_id = task_id if task_id is not None else file_id
    type_field = "task_type argument" if task_type is not None else f"{_ROOT}['task']['type']"
    id_field = "task_id argument" if task_id is not None else f"{_ROOT}['task']['index']"
    if check_task and (override or "task" in config or jobs):
        _check_task_in_cluster(jobs, final_type, final_id, type_field, id_field)
    rpc_layer = check_rpc_layer(_optional_str(config, "rpc_layer"), f"{_ROOT}['rpc_layer']",
                                TFConfigError)
    return ParsedTFConfig(ClusterSpec._from_checked(jobs), file_type, file_id, rpc_layer,
                          _optional_str(config, "session_master"))


def make_tf_config(cluster_spec: ClusterSpec, task_type: str, task_id: int,
                   rpc_layer: Optional[str] = None) -> str:
    """Writes the ``TF_CONFIG`` JSON of one task of ``cluster_spec`` (checked first).

    Example:
        >>> make_tf_config(ClusterSpec({"worker": ["a:1"]}), "worker", 0)
        '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}'
    """
    config: Dict[str, Any] = {"cluster": ClusterSpec(cluster_spec).as_dict(),
                              "task": {"type": task_type, "index": task_id}}
    if rpc_layer:
        config["rpc_layer"] = rpc_layer
    text = json.dumps(config)
    parse_tf_config(text)
    return text


class TFConfigClusterResolver(ClusterResolver):
    """Reads the cluster, this task and the rpc layer from ``TF_CONFIG``.

    The variable is checked when the resolver is built and read again on every call, so a
    change to it is seen (as in TensorFlow). Without ``TF_CONFIG`` the cluster is empty: a
    single-worker job.

    Args:
        task_type: overrides ``TF_CONFIG['task']['type']``.
        task_id: overrides ``TF_CONFIG['task']['index']``.
        rpc_layer: overrides ``TF_CONFIG['rpc_layer']``.
        environment: the environment name (TensorFlow's meaning, e.g. ``'google'``).
        environ: the environment variables to read; ``None`` means ``os.environ``.

    Raises:
        TFConfigError: ``TF_CONFIG`` is malformed; the message names the field.

    Example:
        >>> config = ('{"cluster": {"worker": ["localhost:1", "localhost:2"]}, '
        ...           '"task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}')
        >>> resolver = TFConfigClusterResolver(environ={"TF_CONFIG": config})
        >>> resolver.task_type, resolver.task_id, resolver.master()
        ('worker', 1, 'grpc://localhost:2')
    """

    def __init__(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
                 rpc_layer: Optional[str] = None, environment: Optional[str] = None, *,
                 environ: Optional[Mapping[str, str]] = None) -> None:
        if environment is not None and not isinstance(environment, str):
            raise ClusterConfigTypeError(
                describe("environment", "a str (an environment name such as 'google') or None",
                         environment, "Pass environment variables as environ=..."),
                field="environment", value=environment)
        self._environ = _env.resolve_environ(environ)
        self._environment = environment
        self._task_type = check_task_type(str(task_type) if task_type is not None else None)
        self._task_id = check_task_id(_as_int(task_id))
        self._rpc_layer = check_rpc_layer(rpc_layer)
        parse_tf_config(_env.get(self._environ, TF_CONFIG), self._task_type, self._task_id)

    def _read(self) -> ParsedTFConfig:
        # The task given to the constructor was checked against the cluster there; one set
        # later through a setter is the caller's choice (strategies check it again).
        overridden = self._task_type is not None or self._task_id is not None
        return parse_tf_config(_env.get(self._environ, TF_CONFIG), check_task=not overridden)

    def cluster_spec(self) -> ClusterSpec:
        """``TF_CONFIG['cluster']`` (``master`` renamed ``chief``), or an empty spec."""
        return self._read().cluster

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The URL of a task (by default this one), or ``''`` for a one-task cluster.

        ``TF_CONFIG['session_master']``, when present, is returned as it is.
        """
        check_task_type(task_type)
        check_task_id(task_id)
        layer = check_rpc_layer(rpc_layer) or self.rpc_layer
        config = self._read()
        if config.session_master is not None:
            return config.session_master
        spec = config.cluster
        if not spec or (len(spec.jobs) == 1 and spec.num_tasks(spec.jobs[0]) == 1):
            return ""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            raise ClusterConfigError(
                describe("master()", "a task: pass task_type and task_id, or set them",
                         (task_type, task_id)), field="task", value=(task_type, task_id))
        return format_master_url(spec.task_address(task_type, task_id), layer)

    @property
    def environment(self) -> Optional[str]:
        """The environment name given to the constructor."""
        return self._environment

    @property
    def task_type(self) -> Optional[str]:
        """The ``task_type`` given or set, else ``TF_CONFIG['task']['type']``."""
        return self._task_type if self._task_type is not None else self._read().task_type

    @task_type.setter
    def task_type(self, task_type: Optional[str]) -> None:
        self._task_type = check_task_type(str(task_type) if task_type is not None else None)

    @property
    def task_id(self) -> Optional[int]:
        """The ``task_id`` given or set (0 included), else ``TF_CONFIG['task']['index']``."""
        return self._task_id if self._task_id is not None else self._read().task_id

    @task_id.setter
    def task_id(self, task_id: Optional[int]) -> None:
        self._task_id = check_task_id(_as_int(task_id))

    @property
    def rpc_layer(self) -> Optional[str]:
        """The ``rpc_layer`` given or set, else ``TF_CONFIG['rpc_layer']``."""
        return self._rpc_layer if self._rpc_layer is not None else self._read().rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: Optional[str]) -> None:
        self._rpc_layer = check_rpc_layer(rpc_layer)


def _as_int(task_id: Any) -> Any:
    """Casts a digit string to int, as TensorFlow casts ``task_id``; leaves the rest to checks."""
    if isinstance(task_id, str) and task_id.isascii() and task_id.isdigit():
        return int(task_id)
    return task_id
