"""A filesystem storage that counts its opens and can hold them at a gate: how the
staging tests see how many downloads ran, and make threads meet at one."""

from __future__ import annotations

import threading

from django.core.files.storage import FileSystemStorage


class GatedStorage(FileSystemStorage):
    opens = 0
    gate = threading.Event()
    lock = threading.Lock()

    @classmethod
    def reset(cls) -> None:
        cls.opens = 0
        cls.gate = threading.Event()
        cls.gate.set()

    def _open(self, name, mode="rb"):
        with GatedStorage.lock:
            GatedStorage.opens += 1
        assert GatedStorage.gate.wait(60), "the test never opened the gate"
        return super()._open(name, mode)
