"""`AsyncSessiondagSaver`: the same checkpointer, its async methods run in a worker thread.

Every store call is a short local write (an fdatasync) or read; running it in this object's own
worker thread (integrations/worker.py, as SessiondagSession's async methods do) keeps the event
loop free meanwhile, at about half the cost per call of `asyncio.to_thread`. The calls run one at a
time in the order they were made (an `aget_tuple` after an `aput` sees it); a call whose caller was
cancelled still runs to its end. The sync methods work too (also from inside a running loop, unlike
some async savers), so one instance serves both APIs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from ...core.settings import Settings
from ...store import SessionStore

from ..worker import Worker
from .saver import SessiondagSaver


class AsyncSessiondagSaver(SessiondagSaver):
    def __init__(self, store: SessionStore | str | os.PathLike[str] | None = None, *,
                 serde: SerializerProtocol | None = None, commit_every: int = 32,
                 settings: Settings | None = None):   # SessiondagSaver's
        super().__init__(store, serde=serde, commit_every=commit_every, settings=settings)
        self._worker = Worker("sessiondag-langgraph")  # the async methods' thread (integrations/worker.py)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._worker.submit(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        it = self.list(config, filter=filter, before=before, limit=limit)  # a generator: runs in next()
        while True:
            item = await self._worker.submit(next, it, None)   # list() yields no None: None is its end
            if item is None:
                return
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await self._worker.submit(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await self._worker.submit(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._worker.submit(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._worker.submit(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._worker.submit(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._worker.submit(functools.partial(self.prune, thread_ids, strategy=strategy))
