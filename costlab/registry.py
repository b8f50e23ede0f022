"""A name -> factory registry whose errors list the valid names (one per component)."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Callable, Generic, TypeVar

from costlab.errors import CostlabError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories. ``entry_point_group`` adds third-party plug-ins."""

    def __init__(self, kind: str, entry_point_group: str | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._factories: dict[str, Callable[..., T]] = {}
        self._plugins_loaded = False

    def register(self, name: str):
        def decorator(factory):
            self._factories[name] = factory
            return factory

        return decorator

    def _load_plugins(self) -> None:
        if self._plugins_loaded or self.entry_point_group is None:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=self.entry_point_group):
            if ep.name in self._factories:
                continue
            try:
                self._factories[ep.name] = ep.load()
            except Exception as err:  # a broken plug-in must not break costlab
                raise CostlabError(
                    f"plug-in {ep.name!r} of entry-point group {self.entry_point_group!r} "
                    f"({ep.value}) failed to load: {err}"
                ) from err

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._factories)

    def __contains__(self, name: str) -> bool:
        self._load_plugins()
        return name in self._factories

    def factory(self, name: str) -> Callable[..., T]:
        self._load_plugins()
        try:
            return self._factories[name]
        except KeyError:
            raise CostlabError(
                f"unknown {self.kind} {name!r}; valid names: {', '.join(self.names())}"
            ) from None
