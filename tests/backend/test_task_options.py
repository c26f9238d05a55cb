"""Job definitions: the seed's options on the backend's Task class, both decorators."""

from __future__ import annotations

import pickle
from datetime import timedelta

import django
import pytest
from django.test import override_settings

from dispatch_jobs import task
from dispatch_jobs.backend import DispatchBackend
from dispatch_jobs.compat import BaseTaskBackend, InvalidTask, task_backends
from dispatch_jobs.compat import task as django_task
from dispatch_jobs.names import load_task
from dispatch_jobs.scope import Scope
from dispatch_jobs.task import DispatchTask
from tests.backend.fresh_process import run_python
from tests.backend.typed import dispatch_task
from tests.jobs import tasks

# Typed as our DispatchTask, for what Django's Task type does not know: ``using(scope=...)``.
add_task = dispatch_task(tasks.add)


def plain(x: int) -> int:
    return x


def test_backend_uses_dispatch_task_and_honours_every_flag():
    backend = task_backends["default"]
    assert isinstance(backend, DispatchBackend)
    assert backend.task_class is DispatchTask
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority


def test_defaults_follow_the_seed():
    t = task(plain)
    assert isinstance(t, DispatchTask)
    assert t.max_retries == 3
    assert t.timeout == timedelta(minutes=5)
    assert t.lease_ttl is None
    assert t.resources == {} and t.resource_limits == {}
    assert t.resource_func is None and t.resource_class == ""
    assert t.execution == "in-process"
    assert t.alias == "" and t.job_name == "tests.backend.test_task_options.plain"
    assert t.permanent_exceptions == ()


def test_every_option_is_stored_in_canonical_form():
    t = tasks.sized
    assert t.max_retries == 5
    assert t.timeout == timedelta(seconds=30)
    assert t.lease_ttl == timedelta(seconds=20)
    assert t.resources == {"cpu": 500, "memory": 2 * 2**30, "fpga": 1}
    assert t.resource_limits == {"cpu": 1000}
    assert t.resource_class == "highmem"
    assert t.retry_backoff_base == timedelta(seconds=2)
    assert t.retry_backoff_cap == timedelta(seconds=60)
    assert t.permanent_exceptions == (KeyError,)


def test_using_keeps_canonical_resources_canonical():
    """replace() sends every field back through __init__: 500 millicores must not
    be read again as 500 cpus."""
    copy = tasks.sized.using(priority=5, resources={"memory": "1Gi"})
    assert copy.resources == {"cpu": 500, "memory": 2 * 2**30, "fpga": 1}
    assert copy.resource_overrides == {"memory": 2**30}
    again = copy.using(resources={"cpu": 2})
    assert again.resource_overrides == {"memory": 2**30, "cpu": 2000}
    assert again.priority == 5 and again.max_retries == 5


def test_using_sets_lease_ttl_and_scope():
    copy = add_task.using(lease_ttl=45, scope=("app-1", "org-9"))
    assert copy.lease_ttl == timedelta(seconds=45)
    assert copy.scope == Scope("app-1", "org-9")
    assert add_task.using(scope={"org_id": "o"}).scope == Scope("", "o")


@pytest.mark.skipif(
    django.VERSION[:2] == (6, 0),
    reason="Django 6.0's @task takes no options (6.1 and the backport do)",
)
def test_djangos_own_decorator_forwards_options_on_6_1():
    # django-stubs types Django's @task without the extra options 6.1 forwards to the
    # backend's task_class.
    t = django_task(max_retries=7, resources={"memory": "1Gi"})(plain)  # type: ignore[call-overload]
    assert isinstance(t, DispatchTask)
    assert t.max_retries == 7 and t.resources == {"memory": 2**30}


def test_our_decorator_works_bare_and_with_arguments():
    bare = task(plain)
    called = task(priority=3, queue_name="high", max_retries=1)(plain)
    assert bare.priority == 0
    assert (called.priority, called.queue_name, called.max_retries) == (3, "high", 1)


def test_our_decorator_refuses_run_after_like_djangos():
    with pytest.raises(TypeError, match="run_after cannot be defined statically"):
        task(run_after=None)(plain)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_retry": 5}, "unknown option 'max_retry'"),
        ({"max_retries": -1}, "max_retries must be an integer from 0 to 1000, got -1"),
        ({"max_retries": "3"}, "max_retries must be an integer from 0 to 1000, got '3'"),
        ({"timeout": timedelta(0)}, "timeout must be positive, got datetime.timedelta(0)"),
        ({"lease_ttl": "30s"}, "lease_ttl: cannot read '30s' as a duration"),
        ({"resources": {"memory": "2GB"}}, "resources: Resource 'memory': unknown unit 'GB'"),
        ({"resources": {"cpu": "1.5Gi"}}, "resources: Resource 'cpu': unknown unit 'Gi'"),
        ({"resource_limits": {"Bad Key": 1}}, "resource_limits: Custom resource key 'Bad Key'"),
        ({"resource_func": 3}, "resource_func must be callable"),
        ({"execution": ""}, "execution must be a non-empty string"),
        ({"execution": "container"}, "execution 'container' is not a rung any worker provides"),
        ({"permanent_exceptions": (int,)}, "permanent_exceptions must be exception classes"),
        (
            {"retry_backoff_base": 10, "retry_backoff_cap": 1},
            "retry_backoff_cap (0:00:01) is shorter than retry_backoff_base (0:00:10)",
        ),
        ({"name": "x", "alias": "y"}, "give name= or alias=, not both"),
    ],
)
def test_bad_options_fail_at_definition_naming_the_task(options, message):
    with pytest.raises(InvalidTask) as excinfo:
        task(**options)(plain)
    assert "tests.backend.test_task_options.plain" in str(excinfo.value)
    assert message in str(excinfo.value)


def test_using_refuses_unknown_options():
    with pytest.raises(InvalidTask, match=r"tests\.jobs\.tasks\.add: unknown option 'memory'"):
        add_task.using(memory="1Gi")


def test_name_is_a_stable_alias():
    assert tasks.greet.alias == "greet-v1"
    assert tasks.greet.job_name == "greet-v1"
    assert tasks.greet.name == "greet"  # Django's property is untouched
    assert load_task("greet-v1") is tasks.greet


def test_alias_cannot_name_two_tasks():
    with pytest.raises(InvalidTask, match="plain: Task alias 'greet-v1' is already used"):
        task(name="greet-v1")(plain)


def test_tasks_pickle_round_trip():
    restored = pickle.loads(pickle.dumps(tasks.sized.using(priority=4)))
    assert restored.func is tasks.sized.func
    assert restored.priority == 4 and restored.resources == tasks.sized.resources


def test_tasks_can_be_defined_before_the_app_registry_is_ready():
    """Tasks modules are imported early; the backend must not import models then."""
    code = (
        "from django.apps import apps\n"
        "from dispatch_jobs import task\n"
        "def job(x): return x\n"
        "t = task(max_retries=2, resources={'memory': '1Gi'})(job)\n"
        "assert not apps.ready\n"
        "print(type(t).__name__, t.max_retries, t.resources['memory'])\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["DispatchTask", "2", str(2**30)]


def test_options_for_a_backend_that_does_not_run_dispatch_jobs_tasks_are_refused():
    # Django's own immediate backend (the backport's on Django 5.2), beside ours.
    immediate = BaseTaskBackend.__module__.rsplit(".", 1)[0] + ".immediate.ImmediateBackend"
    setting = {
        "default": {"BACKEND": "dispatch_jobs.backend.DispatchBackend"},
        "inline": {"BACKEND": immediate},
    }
    with override_settings(TASKS=setting):
        with pytest.raises(
            InvalidTask,
            match=r"Task tests\.backend\.test_task_options\.plain: backend 'inline' does not "
            r"run dispatch_jobs tasks, so options max_retries cannot apply\.",
        ):
            task(plain, backend="inline", max_retries=2)
        # Without dispatch_jobs options, the decorator defines the backend's own task.
        assert not isinstance(task(plain, backend="inline"), DispatchTask)
