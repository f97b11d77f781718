"""DataLoader workers: background threads that fetch and collate batches.

PyTorch's workers are processes; lightgrad's are threads (NumPy releases the GIL in the heavy
array work, and threads need no pickling). The protocol is PyTorch's: the main thread sends
``(task index, batch indices)`` to each worker's index queue, the worker puts ``(task index,
batch)`` on the shared result queue, ``None`` tells it to exit, ``_ResumeIteration`` to start a
new epoch (persistent workers). A worker never holds a reference to the iterator that owns it,
so the iterator can be garbage-collected, and its ``__del__`` stops the workers.
"""

from __future__ import annotations

import queue
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# how often (seconds) an idle worker wakes to check that the main thread is still running
MP_STATUS_CHECK_INTERVAL = 5.0

_local = threading.local()


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    __initialized = False

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key: str, val: Any) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info() -> WorkerInfo | None:
    """The current DataLoader worker's ``WorkerInfo``, or None outside workers (e.g. the main thread).

    >>> get_worker_info() is None
    True
    """
    return getattr(_local, "info", None)


class KeyErrorMessage(str):
    """A str whose repr is itself, so a KeyError's multi-line message prints readably."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, re-raised in the main thread with the original traceback."""

    def __init__(self, exc_info: Any = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc = exc_info[1]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            # some exceptions take the message only as a keyword
            raise self.exc_type(message=msg) from self.exc
        try:
            exception = self.exc_type(msg)
        except Exception:
            # the type cannot be built from a single message: say so with a RuntimeError
            raise RuntimeError(msg) from self.exc
        raise exception from self.exc


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to (and echoed back by) persistent workers at the start of a new epoch."""


def _worker_loop(make_fetcher: Callable[[], Any], is_iterable: bool, dataset: Any, index_queue: queue.Queue,
                 result_queue: queue.Queue, done_event: threading.Event, base_seed: int, init_fn: Any,
                 worker_id: int, num_workers: int) -> None:
    """A worker thread's life: init, then fetch each task it is sent until ``None`` arrives."""
    _local.info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=base_seed + worker_id, dataset=dataset)
    init_exception = None
    fetcher: Any = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher()
    except Exception:
        init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

    # once an IterableDataset ends, the worker answers nothing more until the next epoch
    iteration_end = False
    main = threading.main_thread()
    while True:
        try:
            task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            if not main.is_alive():
                break
            continue
        if task is None:
            break
        if isinstance(task, _ResumeIteration):
            result_queue.put((task, None))
            iteration_end = False
            if init_exception is None:
                fetcher = make_fetcher()
            continue
        if done_event.is_set() or iteration_end:
            continue  # shutting down: drain the queue until the ``None`` sentinel
        idx, index = task
        data: Any
        if init_exception is not None:
            data, init_exception = init_exception, None
        else:
            try:
                data = fetcher.fetch(index)
            except Exception as e:
                if isinstance(e, StopIteration) and is_iterable:
                    data = _IterableDatasetStopIteration(worker_id)
                    iteration_end = True
                else:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        result_queue.put((idx, data))
        del data, idx, index  # drop references to the batch before blocking again
    _local.info = None
