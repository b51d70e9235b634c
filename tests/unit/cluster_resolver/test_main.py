"""Tests of ``python -m distribute.cluster_resolver``."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from distribute.cluster_resolver import ClusterSpec, SimpleClusterResolver
from distribute.cluster_resolver.__main__ import describe_setup, main

SRC = str(Path(__file__).resolve().parents[3] / "src")
CLUSTER = {"chief": ["localhost:2000"], "worker": ["localhost:2001", "localhost:2002"],
           "ps": {"1": "[::1]:2003"}}


def tf_config(task_type, index, **extra):
    return json.dumps({"cluster": CLUSTER, "task": {"type": task_type, "index": index}, **extra})


def run_main(argv, environ):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, environ=environ, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def run_cli(args, environ):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1",
           **environ}
    return subprocess.run([sys.executable, "-m", "distribute.cluster_resolver", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_subprocess_prints_the_setup():
    result = run_cli([], {"TF_CONFIG": tf_config("worker", 1, rpc_layer="grpc")})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["resolver:", "TFConfigClusterResolver"]
    text = result.stdout
    assert "worker: localhost:2001, localhost:2002" in text
    assert "ps: [1] [::1]:2003" in text
    assert "worker:1" in text
    assert "2 of 3 (id in cluster / world size)" in text
    assert "localhost:2002" in text and "grpc://localhost:2002" in text
    assert "CPU: " in text and "CUDA: " in text


def test_cli_subprocess_malformed_exits_2_with_one_line():
    bad = json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 7}})
    result = run_cli(["--resolver", "tf_config"], {"TF_CONFIG": bad})
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: TFConfigError: TF_CONFIG['task']['index']")


def test_cli_subprocess_json_torchrun():
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "29500"}
    result = run_cli(["--json", "--resolver", "torchrun"], env)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["resolver"] == "TorchrunClusterResolver"
    assert (info["rank"], info["world_size"], info["is_chief"]) == (1, 2, False)
    assert info["rendezvous"] == "127.0.0.1:29500"
    assert info["devices"]["cpus"] >= 1 and isinstance(info["devices"]["cuda"], list)


def test_main_json_fields():
    status, out, _ = run_main(["--json", "--no-devices"], {"TF_CONFIG": tf_config("chief", 0)})
    assert status == 0
    info = json.loads(out)
    assert info["cluster"]["ps"] == [[1, "[::1]:2003"]]
    assert (info["task_type"], info["task_id"], info["rank"], info["world_size"]) == \
        ("chief", 0, 0, 3)
    assert info["is_chief"] and info["address"] == "localhost:2000"
    assert "devices" not in info


def test_main_ps_task_has_no_rank():
    status, out, _ = run_main(["--no-devices"], {"TF_CONFIG": tf_config("ps", 1)})
    assert status == 0
    assert "none (this task is outside the training group)" in out
    assert "[::1]:2003" in out


def test_main_evaluator_outside_cluster():
    status, out, _ = run_main(["--json", "--no-devices"], {"TF_CONFIG": tf_config("evaluator", 0)})
    info = json.loads(out)
    assert status == 0 and info["address"] is None and info["master"] == ""
    assert (info["rank"], info["world_size"], info["is_chief"]) == (0, 1, True)


def test_main_empty_environment():
    status, out, _ = run_main(["--no-devices"], {})
    assert status == 0
    assert "(empty: a single-worker job)" in out
    assert "0 of 1" in out


def test_main_slurm():
    env = {"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NODELIST": "n[1-2]",
           "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    status, out, _ = run_main(["--no-devices", "--resolver", "slurm"], env)
    assert status == 0
    assert "assigned gpus: [2, 3]" in out and "n2:8889" in out
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"


@pytest.mark.parametrize("argv, environ, text", [
    (["--resolver", "torchrun"], {}, "error: MissingEnvironmentError: RANK not found"),
    (["--resolver", "slurm"], {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "x"},
     "error: ClusterConfigError: SLURM_STEP_NUM_TASKS"),
    ([], {"TF_CONFIG": "{"}, "error: TFConfigError: TF_CONFIG: expected a JSON object"),
])
def test_main_errors_exit_2(argv, environ, text):
    status, out, err = run_main(argv + ["--no-devices"], environ)
    assert status == 2 and out == ""
    assert err.startswith(text) and err.count("\n") == 1


def test_main_bad_arguments_exit_2():
    with pytest.raises(SystemExit) as info:
        run_main(["--resolver", "kubernetes"], {})
    assert info.value.code == 2


def test_describe_setup_checks_the_multi_worker_rules():
    resolver = SimpleClusterResolver(ClusterSpec({"trainer": ["a:1"]}), task_type="trainer",
                                     task_id=0)
    with pytest.raises(ValueError, match="Disallowed task type"):
        describe_setup(resolver, devices=False)
