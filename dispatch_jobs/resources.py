"""Resource quantities: parsing readable units into canonical ones, and custom keys.

Canonical units follow the seed: cpu in millicores, memory and disk in bytes,
gpu in milli-devices. Every other key is a *custom* key (``fpga``, ``nvme``):
only its presence is matched at claim time, through the delimited string
``encode_custom_keys`` produces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .exceptions import InvalidResources
from .limits import CUSTOM_KEY_MAX, CUSTOM_KEYS_MAX, RESOURCE_QUANTITY_MAX

CPU = "cpu"
MEMORY = "memory"
DISK = "disk"
GPU = "gpu"
STANDARD_KEYS = (CPU, MEMORY, DISK, GPU)
# Keys whose overuse cannot be throttled: their limit defaults to the request.
INCOMPRESSIBLE_KEYS = (MEMORY, DISK, GPU)

CUSTOM_KEY_SEPARATOR = ","
_CUSTOM_KEY_RE = re.compile(r"^[a-z0-9]([a-z0-9._/-]*[a-z0-9])?$")

_BYTE_SUFFIXES = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "p": 10**15,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
    "pi": 2**50,
}
_QUANTITY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")

ResourceSet = dict[str, int]
_UNITS = {CPU: "millicores", MEMORY: "bytes", DISK: "bytes", GPU: "milli-devices"}


def parse_quantity(key: str, value: object) -> int:
    """Parse one quantity into canonical units.

    cpu: ``2`` or ``"2"`` → 2000 millicores, ``"500m"`` → 500.
    gpu: ``1`` → 1000 milli-devices, ``"250m"`` → 250.
    memory / disk: ``"2Gi"``, ``"512Mi"``, ``"1G"``, or a plain integer of bytes.
    custom keys: a non-negative whole number (a count, matched by presence only).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidResources(
            f"Resource {key!r}: expected a number or a string such as '2Gi' or '500m', "
            f"got {type(value).__name__}."
        )
    text = str(value)
    match = _QUANTITY_RE.match(text)
    if not match:
        raise InvalidResources(f"Resource {key!r}: cannot read quantity {_short(repr(text))}.")
    number, suffix = float(match.group(1)), match.group(2)
    if key in (CPU, GPU):
        if suffix == "m":
            result = number
        elif suffix == "":
            result = number * 1000
        else:
            raise InvalidResources(
                f"Resource {key!r}: unknown unit {suffix!r} in {text!r} "
                "(use a number of units, or millis such as '500m')."
            )
    elif key in (MEMORY, DISK):
        factor = _BYTE_SUFFIXES.get(suffix.lower())
        if factor is None or (suffix.lower() == "m" and suffix == "m"):
            # Lower-case "m" would mean milli-bytes in Kubernetes notation: refuse it.
            raise InvalidResources(
                f"Resource {key!r}: unknown unit {suffix!r} in {text!r} "
                "(use bytes, or K/M/G/T, or Ki/Mi/Gi/Ti)."
            )
        result = number * factor
    else:
        validate_custom_key(key)
        if suffix:
            raise InvalidResources(
                f"Custom resource {key!r}: expected a whole count, got {text!r}."
            )
        result = number
    if result > RESOURCE_QUANTITY_MAX:
        raise InvalidResources(
            f"Resource {key!r}: {_short(text)} is over the maximum of "
            f"{RESOURCE_QUANTITY_MAX} (2**53 - 1) {_UNITS.get(key, '(a count)')}."
        )
    if result != int(result):
        raise InvalidResources(f"Resource {key!r}: {text!r} is finer than the canonical unit.")
    return int(result)


def check_quantity(key: str, amount: object) -> None:
    """A canonical quantity (already parsed) is a whole number within bounds."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise InvalidResources(
            f"Resource {key!r} must be a non-negative integer in canonical units, "
            f"got {_short(repr(amount))}."
        )
    if amount > RESOURCE_QUANTITY_MAX:
        raise InvalidResources(
            f"Resource {key!r}: {amount} is over the maximum of {RESOURCE_QUANTITY_MAX} "
            "(2**53 - 1)."
        )


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def validate_custom_key(key: str) -> None:
    if not isinstance(key, str) or len(key) > CUSTOM_KEY_MAX:
        shown = _short(repr(key))
        raise InvalidResources(
            f"Custom resource key {shown} is not valid: it must be a string of at most "
            f"{CUSTOM_KEY_MAX} characters."
        )
    if not _CUSTOM_KEY_RE.match(key):
        raise InvalidResources(
            f"Custom resource key {key!r} is not valid: use lower-case letters, digits, "
            "'.', '_', '/' or '-', starting and ending with a letter or digit "
            f"(the keys are stored joined by {CUSTOM_KEY_SEPARATOR!r})."
        )


def check_custom_key_count(resources: Mapping[str, object]) -> None:
    """At most ``CUSTOM_KEYS_MAX`` custom keys: they share one delimited column."""
    keys = custom_keys_of(resources)
    if len(keys) > CUSTOM_KEYS_MAX:
        raise InvalidResources(
            f"{len(keys)} custom resource keys ({', '.join(keys[:3])}, ...); at most "
            f"{CUSTOM_KEYS_MAX} are stored per job."
        )


def parse_resources(values: Mapping[str, object] | None) -> ResourceSet:
    """Parse a mapping of readable quantities into a canonical resource set."""
    if not values:
        return {}
    if not isinstance(values, Mapping):
        raise InvalidResources(
            f"Resources must be a mapping such as {{'memory': '2Gi'}}, got {type(values).__name__}."
        )
    return {str(key): parse_quantity(str(key), value) for key, value in values.items()}


def parse_budget_text(text: str) -> ResourceSet:
    """Parse ``cpu=4,memory=8Gi,gpu=1,fpga=1`` (the runjobs --budget syntax)."""
    values: dict[str, str] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InvalidResources(f"Budget entry {part!r} is not of the form key=quantity.")
        values[key.strip()] = value.strip()
    return parse_resources(values)


def custom_keys_of(resources: Mapping[str, object]) -> list[str]:
    return sorted(key for key in resources if key not in STANDARD_KEYS)


def encode_custom_keys(keys: Iterable[str]) -> str:
    """Encode custom keys as ``,a,b,``: the leading and trailing separators are what
    stop ``,fpga,`` from matching inside ``,fpga-large,``. No keys encode as ``""``."""
    unique = sorted(set(keys))
    for key in unique:
        validate_custom_key(key)
    if not unique:
        return ""
    return CUSTOM_KEY_SEPARATOR + CUSTOM_KEY_SEPARATOR.join(unique) + CUSTOM_KEY_SEPARATOR


def decode_custom_keys(encoded: str) -> list[str]:
    return [key for key in encoded.split(CUSTOM_KEY_SEPARATOR) if key]


def default_limits(requests: Mapping[str, int], limits: Mapping[str, int]) -> ResourceSet:
    """Limits default to the request for memory and other incompressible keys; CPU
    stays unbounded unless a limit is declared."""
    resolved = dict(limits)
    for key in INCOMPRESSIBLE_KEYS:
        if key in requests and key not in resolved:
            resolved[key] = requests[key]
    return resolved


def fits(requirement: Mapping[str, int], capacity: Mapping[str, int]) -> bool:
    """Whether a requirement fits a capacity, with the claim's semantics: an absent
    standard key in ``capacity`` is unconstrained; custom keys must be present."""
    for key, amount in requirement.items():
        if key in STANDARD_KEYS:
            if key in capacity and amount > capacity[key]:
                return False
        elif key not in capacity:
            return False
    return True
