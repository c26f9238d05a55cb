"""Declared artifact inputs: the seed's ``Options.Inputs`` and ``Bindings``.

A task declares what it consumes (``@task(inputs=[InputSpec("video", max_bytes=...)])``)
and each enqueue binds artifacts to those names (``task.using(inputs={"video":
artifact})``). Declaring inputs, rather than burying references in the opaque
payload, is what lets the engine check them at enqueue, size the job (its
``input_bytes``), prefer a worker that already holds the bytes (its
``primary_input_hash``) and stage them before the handler runs.

Checked in three places, each as early as it can be: a declaration when the task
is defined, the names bound in ``using()``, and everything that needs the
artifact rows (existence, size, media type, required inputs) at enqueue, in one
query, before any job row is written. Every error names the task and the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import compat
from .exceptions import (
    ArtifactNotFound,
    InputMediaTypeRefused,
    InputTooLarge,
    InvalidInput,
    MissingInput,
    UnknownInput,
)
from .limits import short_repr

INPUT_NAME_MAX = 100
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-.]*$")
# "type/subtype" or "type/*" (RFC 6838 names, loosely).
_MEDIA_TYPE = re.compile(r"^[\w.+-]+/(?:\*|[\w.+-]+)$")


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One declared input.

    ``name``: what bindings and ``context.inputs`` call it. ``required``: an enqueue
    that binds nothing to it is refused. ``max_bytes``: the largest artifact it
    accepts (``None``: any size). ``media_types``: the media types it accepts,
    exact (``"video/mp4"``) or by type (``"video/*"``); empty accepts any.
    """

    name: str
    required: bool = True
    max_bytes: int | None = None
    media_types: tuple[str, ...] = ()

    def accepts_media_type(self, media_type: str) -> bool:
        if not self.media_types:
            return True
        major = media_type.split("/", 1)[0]
        return any(m == media_type or m == f"{major}/*" for m in self.media_types)


def check_declared(where: str, declared: object) -> tuple[InputSpec, ...]:
    """The declared inputs, checked: ``InputSpec`` values (a bare name is a required
    input of any size and type) with unique names. Raises ``InvalidTask``."""
    if isinstance(declared, str | InputSpec) or not isinstance(declared, Iterable):
        raise compat.InvalidTask(
            f"{where}: inputs must be a list of InputSpec, got {short_repr(declared)}."
        )
    specs: list[InputSpec] = []
    for item in declared:
        spec = InputSpec(item) if isinstance(item, str) else item
        if not isinstance(spec, InputSpec):
            raise compat.InvalidTask(
                f"{where}: inputs must be InputSpec values, got {short_repr(item)}."
            )
        specs.append(_checked_spec(where, spec))
    names = [spec.name for spec in specs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise compat.InvalidTask(f"{where}: input {duplicates[0]!r} is declared more than once.")
    return tuple(specs)


def _checked_spec(where: str, spec: InputSpec) -> InputSpec:
    name = spec.name
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > INPUT_NAME_MAX:
        raise compat.InvalidTask(
            f"{where}: input name {short_repr(name)} must be an identifier of at most "
            f"{INPUT_NAME_MAX} characters (letters, digits, _ - .)."
        )
    size = spec.max_bytes
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise compat.InvalidTask(
            f"{where}: input {name!r}: max_bytes must be a positive integer or None, "
            f"got {short_repr(size)}."
        )
    media = spec.media_types
    types = (media,) if isinstance(media, str) else tuple(media)
    for media_type in types:
        if not isinstance(media_type, str) or not _MEDIA_TYPE.match(media_type):
            raise compat.InvalidTask(
                f"{where}: input {name!r}: media type {short_repr(media_type)} is not "
                "'type/subtype' or 'type/*'."
            )
    if not isinstance(spec.required, bool):
        raise compat.InvalidTask(f"{where}: input {name!r}: required must be True or False.")
    return InputSpec(name, spec.required, size, types)


def check_bindings(where: str, declared: Sequence[InputSpec], bindings: object) -> dict[str, int]:
    """The names bound in ``using(inputs=...)``, as artifact ids: each a declared
    input, each bound to an ``Artifact`` or its id. Whether the artifacts exist is
    asked at enqueue (``resolve``)."""
    if not isinstance(bindings, Mapping):
        raise InvalidInput(
            f"{where}: inputs must be a mapping of input names to artifacts, "
            f"got {short_repr(bindings)}."
        )
    known = {spec.name for spec in declared}
    ids: dict[str, int] = {}
    for name, value in bindings.items():
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise UnknownInput(
                f"{where}: input {short_repr(name)} is not declared (declared: {listed}); "
                "no job was written.",
                str(name),
            )
        ids[name] = _artifact_id(where, name, value)
    return ids


def _artifact_id(where: str, name: str, value: Any) -> int:
    pk = getattr(value, "pk", value)
    if isinstance(pk, bool) or not isinstance(pk, int):
        raise InvalidInput(
            f"{where}: input {name!r} must be bound to an Artifact or its id, "
            f"got {short_repr(value)}; no job was written.",
            name,
        )
    return pk


def resolve(where: str, declared: Sequence[InputSpec], ids: Mapping[str, int]) -> dict[str, Any]:
    """The job columns of the bound inputs, every rule checked (one query): required
    inputs bound, artifacts found, within ``max_bytes``, of an accepted media type.
    Empty when the task declares no inputs (no query)."""
    if not declared:
        return {}
    for spec in declared:
        if spec.required and spec.name not in ids:
            raise MissingInput(
                f"{where}: required input {spec.name!r} is not bound; pass it with "
                f".using(inputs={{{spec.name!r}: artifact}}); no job was written.",
                spec.name,
            )
    from . import store

    found = store.artifacts_by_id(ids.values()) if ids else {}
    bindings: dict[str, dict[str, Any]] = {}
    for spec in declared:
        if spec.name not in ids:
            continue
        artifact = found.get(ids[spec.name])
        if artifact is None:
            raise ArtifactNotFound(
                f"{where}: input {spec.name!r} is bound to artifact {ids[spec.name]}, which "
                "does not exist; no job was written.",
                spec.name,
            )
        if spec.max_bytes is not None and artifact.size > spec.max_bytes:
            raise InputTooLarge(
                f"{where}: input {spec.name!r} is {artifact.size} bytes, over its max_bytes "
                f"of {spec.max_bytes}; no job was written.",
                spec.name,
            )
        if not spec.accepts_media_type(artifact.media_type):
            raise InputMediaTypeRefused(
                f"{where}: input {spec.name!r} is {artifact.media_type!r}, which it does not "
                f"accept (accepted: {', '.join(spec.media_types)}); no job was written.",
                spec.name,
            )
        bindings[spec.name] = ref_of(artifact)
    return columns_of(bindings)


def ref_of(artifact: Any) -> dict[str, Any]:
    """What a job row keeps of a bound artifact: enough to stage it without reading
    the artifact table again (the worker's staging reads only the storage)."""
    return {
        "artifact": artifact.pk,
        "hash": artifact.content_hash,
        "size": artifact.size,
        "media_type": artifact.media_type,
        "storage": artifact.storage,
        "path": artifact.path,
    }


def columns_of(bindings: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``artifact_bindings``, ``input_bytes`` (their total size) and
    ``primary_input_hash``: the seed's rule, the hash of the largest input (a tie
    goes to the first declared), the locality signal a worker's cache offers."""
    if not bindings:
        return {"artifact_bindings": None, "input_bytes": 0, "primary_input_hash": ""}
    largest = max(bindings.values(), key=lambda ref: ref["size"])  # max keeps the first of ties
    return {
        "artifact_bindings": dict(bindings),
        "input_bytes": sum(ref["size"] for ref in bindings.values()),
        "primary_input_hash": largest["hash"],
    }
