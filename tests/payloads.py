"""What a Spark task would receive, checked for pypaimon objects (a TableIO is taken as a whole: its
FileIO is pypaimon's on purpose, so a task opens the same store)."""

from __future__ import annotations

import io
import pickle
from typing import Any

from paimon_index.table.fileio import TableIO


class _Recording(pickle.Pickler):
    """A pickler that records every pypaimon object it meets (a TableIO is taken as a whole)."""

    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self.found: list[str] = []

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, TableIO):
            return TableIO, (None,)  # its FileIO is pypaimon's on purpose (see the module docstring)
        module = getattr(type(obj), "__module__", "") or ""
        if module.startswith("pypaimon"):
            self.found.append(f"{module}.{type(obj).__qualname__}")
        return NotImplemented


def pypaimon_objects(payload: Any) -> list[str]:
    pickler = _Recording(io.BytesIO())
    pickler.dump(payload)
    return sorted(set(pickler.found))


def pypaimon_objects_in_function(function: Any) -> list[str]:
    """The pypaimon objects a function sent to Spark tasks carries (its closure, its defaults),
    pickled by value as PySpark pickles it (cloudpickle)."""
    from pyspark.cloudpickle import cloudpickle

    found: list[str] = []

    class Recording(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, TableIO):
                return TableIO, (None,)
            module = getattr(type(obj), "__module__", "") or ""
            if module.startswith("pypaimon"):
                found.append(f"{module}.{type(obj).__qualname__}")
            return super().reducer_override(obj)

    Recording(io.BytesIO()).dump(function)
    return sorted(set(found))
