"""Worker arguments: defaults from settings, every value validated clearly."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from dispatch_jobs.exceptions import WorkerConfigError
from dispatch_jobs.worker.config import build_config, parse_duration


def test_defaults_come_from_settings():
    config = build_config({})
    # tests/settings.py: TASKS["default"]["QUEUES"] = ["default", "high", "low", "emails"]
    assert config.queues == ("default", "emails", "high", "low")
    assert config.concurrency == 4
    assert config.lease_ttl == timedelta(seconds=30)
    assert config.heartbeat == timedelta(seconds=10)
    assert config.budget == {}
    assert config.max_jobs is None and not config.burst
    assert config.max_evictions == 5
    assert config.worker_id


@override_settings(
    DISPATCH_JOBS={"WORKER_QUEUES": ["a", "b"], "WORKER_CONCURRENCY": 9, "MAX_EVICTIONS": 2}
)
def test_settings_override_the_defaults_and_arguments_override_settings():
    assert build_config({}).queues == ("a", "b")
    config = build_config({"queues": ["x,y", "x"], "concurrency": "2"})
    assert (config.queues, config.concurrency, config.max_evictions) == (("x", "y"), 2, 2)


DISPATCH = "dispatch_jobs.backend.DispatchBackend"
IMMEDIATE = "django.tasks.backends.immediate.ImmediateBackend"


@pytest.mark.parametrize(
    ("tasks", "queues", "source"),
    [
        # QUEUES absent: Django's backends accept "default" only.
        ({"default": {"BACKEND": DISPATCH}}, ("default",), "TASKS['default']['QUEUES']"),
        (
            {
                "default": {"BACKEND": DISPATCH, "QUEUES": ["b", "a"]},
                "bulk": {"BACKEND": DISPATCH, "QUEUES": ["c", "a"]},
                "inline": {"BACKEND": IMMEDIATE, "QUEUES": ["not-ours"]},
            },
            ("a", "b", "c"),
            "TASKS['default']['QUEUES'], TASKS['bulk']['QUEUES']",
        ),
        # An empty QUEUES lets any queue through Django's validation: serve them all.
        (
            {
                "default": {"BACKEND": DISPATCH, "QUEUES": ["a"]},
                "x": {"BACKEND": DISPATCH, "QUEUES": []},
            },
            (),
            "TASKS['x'], whose QUEUES is empty: any queue",
        ),
        ({"default": {"BACKEND": IMMEDIATE}}, (), "TASKS, which names no DispatchBackend"),
    ],
)
def test_without_queue_a_worker_serves_what_tasks_accepts(tasks, queues, source):
    with override_settings(TASKS=tasks):
        config = build_config({})
    assert config.queues == queues
    assert config.served.every == (queues == ())
    assert config.served.source == source
    expected = "every queue" if not queues else f"queues {', '.join(queues)}"
    assert config.describe().startswith(f"serving {expected} (from {source}); concurrency=")


def test_queue_and_worker_queues_win_over_tasks():
    tasks = {"default": {"BACKEND": DISPATCH, "QUEUES": []}}
    with override_settings(TASKS=tasks, DISPATCH_JOBS={"WORKER_QUEUES": ["w"]}):
        assert build_config({}).served.names == ("w",)
        assert build_config({"queues": ["q"]}).served.names == ("q",)
        assert build_config({"queues": ["q"]}).served.source == "--queue"


def test_budget_is_parsed_into_canonical_units_with_custom_keys():
    config = build_config({"budget": "cpu=4,memory=8Gi,gpu=1,fpga=2"})
    assert config.budget == {"cpu": 4000, "memory": 8 * 2**30, "gpu": 1000, "fpga": 2}
    assert config.custom_keys == ["fpga"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2", 2), ("0.5", 0.5), ("500ms", 0.5), ("2s", 2), ("1m", 60), ("1h", 3600)],
)
def test_durations(text, seconds):
    assert parse_duration("--x", text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": "0"}, "--concurrency must be a whole number >= 1, got '0'"),
        ({"concurrency": "many"}, "--concurrency must be a whole number >= 1"),
        ({"max_jobs": "0"}, "--max-jobs must be a whole number >= 1"),
        ({"lease_ttl": "-1"}, "--lease-ttl: cannot read '-1'"),
        ({"lease_ttl": "0"}, "--lease-ttl must be positive"),
        ({"lease_ttl": "5", "heartbeat": "5"}, "must be shorter than --lease-ttl"),
        ({"poll_interval": "2", "max_poll_interval": "1"}, "--max-poll-interval (1s) must be"),
        ({"budget": "cpu"}, "--budget: Budget entry 'cpu' is not of the form key=quantity"),
        ({"budget": "memory=2m"}, "--budget: Resource 'memory'"),
        ({"budget": "FPGA=1"}, "--budget: Custom resource key 'FPGA' is not valid"),
        ({"queues": [""]}, "--queue: '' is not a queue name"),
        ({"queues": ["q" * 101]}, "is not a queue name (1 to 100 characters)"),
        ({"worker_id": "w" * 101}, "--worker-id must be 1 to 100"),
        ({"shutdown_grace": "later"}, "--shutdown-grace: cannot read 'later'"),
        ({"max_evictions": "-1"}, "--max-evictions must be a whole number >= 0"),
    ],
)
def test_bad_values_are_refused_with_a_clear_message(options, message):
    with pytest.raises(WorkerConfigError) as info:
        build_config(options)
    assert message in str(info.value)


def test_zero_shutdown_grace_is_allowed():
    assert build_config({"shutdown_grace": "0"}).shutdown_grace == timedelta(0)


def test_execution_defaults_to_the_setting_and_the_flag_wins():
    assert build_config({}).execution == "in-process"
    with override_settings(DISPATCH_JOBS={"WORKER_EXECUTION": "subprocess"}):
        config = build_config({})
        assert config.execution == "subprocess"
        assert set(config.executions) == {"in-process", "subprocess", ""}
        assert "execution=subprocess (runs in-process and subprocess jobs)" in config.describe()
        assert build_config({"execution": "in-process"}).execution == "in-process"


def test_an_unknown_execution_rung_is_refused_by_name():
    with pytest.raises(WorkerConfigError, match="--execution must be one of in-process"):
        build_config({"execution": "container"})
