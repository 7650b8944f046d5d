"""chokaq: a background job engine for Python whose store is a relational database.

PostgreSQL in production, SQLite as the embedded default. The public API is re-exported here;
everything else is reached through its module.
"""

from __future__ import annotations

from .app import App
from .batches import Batched
from .context import JobContext, current_job
from .errors import (
    ChokaqError,
    ConfigurationError,
    FatalError,
    JobBlockedError,
    JobFailedError,
    NotFoundError,
    ResultUnavailableError,
    SchemaError,
    StorageError,
    StorageUnavailableError,
    ThrottledError,
    ValidationError,
)
from .handles import BatchHandle, ContextJobHandle, EnqueueOptions, JobHandle, JobId, JobOptions
from .limits import Limits
from .models import FailureReason, JobOutcome, JobStatus, JobView, NewJob, Pillar, Workflow
from .outcomes import Fail, Retry
from .policies import CircuitPolicy, RetryPolicy
from .settings import JobDefaults, WorkerSettings

__all__ = [
    "App",
    "BatchHandle",
    "Batched",
    "ChokaqError",
    "CircuitPolicy",
    "ConfigurationError",
    "ContextJobHandle",
    "EnqueueOptions",
    "Fail",
    "FailureReason",
    "FatalError",
    "JobBlockedError",
    "JobContext",
    "JobDefaults",
    "JobFailedError",
    "JobHandle",
    "JobId",
    "JobOptions",
    "JobOutcome",
    "JobStatus",
    "JobView",
    "Limits",
    "NewJob",
    "NotFoundError",
    "Pillar",
    "ResultUnavailableError",
    "Retry",
    "RetryPolicy",
    "SchemaError",
    "StorageError",
    "StorageUnavailableError",
    "ThrottledError",
    "ValidationError",
    "WorkerSettings",
    "Workflow",
    "current_job",
]

# The one place the version is written: pyproject.toml reads it at build time, and
# `chokaq --version` prints the installed distribution's, which is this.
__version__ = "0.1.0"
