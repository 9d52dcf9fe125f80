"""The file ``jaxscope watch FILE --exhibit ID`` follows: read it, watch it, push it to pages.

The path is the CLI user's choice, fixed when the server starts; a page can only ask to follow
it or stop (``FollowRequest``), never name a path, and the server reads no other file. Each
follower gets a ``watched_file_changed`` at once and after every save (watchfiles, the library
uvicorn's reloader uses: inotify here, with its own debouncing of the several events one save
makes). The parent directory is watched, not the file: editors that save by writing a new file
and renaming it over the old one replace the file's inode, which a watch on the file would lose.
A file that is deleted, renamed away, too long or not UTF-8 gives an event with ``code`` None and
the reason in ``problem``; the page keeps its last code (design 0036).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import watchfiles

from jaxscope.cli import read_code
from jaxscope.protocol import MAX_CODE_CHARS, WatchedFileChanged

log = logging.getLogger(__name__)

# Sends one event to one page (its websocket); raises when the page has gone.
Push = Callable[[WatchedFileChanged], Awaitable[None]]


class WatchedFile:
    """``path`` (made absolute) and the exhibit its code runs in; :meth:`follow` adds a page,
    :meth:`watch` pushes the file to every page after each save until ``stop`` is set."""

    def __init__(self, path: Path, exhibit: str) -> None:
        self.path = path.absolute()
        self.exhibit = exhibit
        self._followers: set[Push] = set()
        self.latest = self.read()

    def read(self) -> WatchedFileChanged:
        """The file's text now as an event: ``code`` at most ``MAX_CODE_CHARS`` characters of
        UTF-8 (a byte-order mark dropped, newlines kept), or None with the ``problem``."""
        shown = str(self.path)

        def problem(text: str) -> WatchedFileChanged:
            return WatchedFileChanged(path=shown, exhibit=self.exhibit, code=None, problem=text)

        try:
            with self.path.open("rb") as fh:
                code = read_code(fh)
        except FileNotFoundError:
            return problem(
                f"{shown} was deleted or renamed: the editor keeps the last code, and the page "
                "reruns when a file of that name is saved again"
            )
        except IsADirectoryError:
            return problem(f"{shown} is a directory, not a snippet file")
        except OSError as exc:
            return problem(f"cannot read {shown}: {exc.strerror}")
        except UnicodeDecodeError as exc:
            return problem(
                f"{shown} is not UTF-8 text ({exc.reason}): the editor keeps the last code"
            )
        if len(code) > MAX_CODE_CHARS:
            return problem(
                f"{shown} is longer than {MAX_CODE_CHARS:,} characters, the most jaxscope "
                "accepts: nothing was run, the editor keeps the last code"
            )
        return WatchedFileChanged(path=shown, exhibit=self.exhibit, code=code)

    async def follow(self, push: Push) -> Callable[[], None]:
        """Send the file to ``push`` now and after every save; returns the function that stops."""
        self._followers.add(push)
        await push(self.latest)
        return lambda: self._followers.discard(push)

    async def watch(self, stop: asyncio.Event) -> None:
        """Push the file to the followers after every change of it, until ``stop`` is set."""
        name = self.path.name

        def only_this_file(_: watchfiles.Change, changed: str) -> bool:
            return Path(changed).name == name

        async for _ in watchfiles.awatch(
            self.path.parent,
            watch_filter=only_this_file,
            recursive=False,
            stop_event=stop,
            debounce=400,
        ):
            self.latest = self.read()
            await self._broadcast(self.latest)

    async def _broadcast(self, event: WatchedFileChanged) -> None:
        followers = list(self._followers)
        results = await asyncio.gather(*(push(event) for push in followers), return_exceptions=True)
        for push, result in zip(followers, results, strict=True):
            if isinstance(result, Exception):  # its page went away: the socket's end unfollows
                log.debug("a follower could not be sent the file: %r", result)
                self._followers.discard(push)


@contextlib.asynccontextmanager
async def watching(watched: WatchedFile | None) -> AsyncIterator[None]:
    """Watch ``watched`` (when not None) for the duration of the block (the app's lifespan)."""
    if watched is None:
        yield
        return
    stop = asyncio.Event()
    task = asyncio.create_task(watched.watch(stop))
    try:
        yield
    finally:
        stop.set()  # awatch ends within its step (50 ms); wait_for cancels it otherwise
        try:
            await asyncio.wait_for(task, timeout=5)
        except Exception as exc:  # the watch itself failed (its directory went): say so only
            log.warning("watching %s ended: %r", watched.path, exc)
