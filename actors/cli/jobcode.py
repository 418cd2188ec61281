"""What only the job's code can tell: that ``fn`` imports, is callable and takes the job's arguments.

``code_problems`` imports each job's ``fn`` (and its ``retry``'s exception classes) and binds
the job's ``args``/``kwargs`` to the function's signature, as a call would, so that
``args = ["a", "b", "c"]`` for a one-argument function is refused before it runs rather than
failing every run. A function without a signature to read (some builtins) is not bound.

Threads: the caller's; it runs the imported modules' top-level code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from actors.core.retry import Retry
from actors.references import resolve

__all__ = ["JobCode", "code_problems"]


class MakesRetry(Protocol):
    """A job's ``retry`` table, checked: what turns it into a ``Retry`` (importing its ``on``)."""

    def to_retry(self) -> Retry:
        """The ``Retry`` it describes (imports its exception classes: may raise)."""
        ...


class JobCode(Protocol):
    """What ``code_problems`` reads of a job (``jobfile.JobSpec`` is one): its code and arguments."""

    @property
    def job_id(self) -> str:
        """The job's name, the task id."""
        ...

    @property
    def fn(self) -> str:
        """The function's reference, ``module:function``."""
        ...

    @property
    def args(self) -> tuple[Any, ...]:
        """The positional arguments the job passes."""
        ...

    @property
    def kwargs(self) -> Mapping[str, Any]:
        """The keyword arguments the job passes."""
        ...

    @property
    def retry(self) -> MakesRetry | None:
        """The job's retry table, if any."""
        ...


def code_problems(specs: Iterable[JobCode], label: str) -> list[str]:
    """Return one line per problem of each job's code, naming the file ``label``, the job and the key.

    The modules must be importable already (``sys.path`` as the caller wants it).
    """
    problems: list[str] = []
    for spec in specs:
        where = f"{label}: job {spec.job_id!r}"
        try:
            fn = resolve(spec.fn)
        except (Exception, SystemExit) as error:  # importing user code can raise anything, even exit
            problems.append(f"{where}: key 'fn': cannot use {spec.fn!r}: {type(error).__name__}: {error}")
        else:
            problems.extend(f"{where}: {problem}" for problem in _argument_problems(fn, spec))
        if spec.retry is not None:
            try:
                spec.retry.to_retry()
            except (Exception, SystemExit) as error:
                problems.append(f"{where}: key 'retry': on: {type(error).__name__}: {error}")
    return problems


def _argument_problems(fn: Callable[..., object], spec: JobCode) -> list[str]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (some builtins): the run will say
        return []
    try:
        signature.bind(*spec.args, **spec.kwargs)
    except TypeError as error:
        # The positional ones fit: then it is the keywords (or a required argument left out).
        positional_fit = _binds_partially(signature, spec.args)
        key = "kwargs" if positional_fit and spec.kwargs else "args"
        return [f"key {key!r}: {spec.fn}{signature} cannot take these arguments: {error}"]
    return []


def _binds_partially(signature: inspect.Signature, args: tuple[object, ...]) -> bool:
    try:
        signature.bind_partial(*args)
    except TypeError:
        return False
    return True
