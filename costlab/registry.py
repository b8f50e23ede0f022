"""A name -> factory registry whose errors list the valid names (one per component)."""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points
from typing import Callable, Generic, TypeVar

from costlab.errors import CostlabError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories. ``entry_point_group`` adds third-party plug-ins; with ``base``,
    a plug-in must be a subclass of it (one that is not fails to load, and is reported so)."""

    def __init__(self, kind: str, entry_point_group: str | None = None, base: type | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self.base = base
        self._factories: dict[str, Callable[..., T]] = {}
        self._plugins_loaded = False
        self._broken: dict[str, str] = {}  # plug-in name -> why it failed to load

    def register(self, name: str):
        def decorator(factory):
            self._factories[name] = factory
            return factory

        return decorator

    def factories(self) -> dict[str, Callable[..., T]]:
        """Every registered name and its factory (plug-ins not loaded): to restore with ``restore``."""
        return dict(self._factories)

    def restore(self, factories: dict[str, Callable[..., T]]) -> None:
        """Put back the names and factories that ``factories()`` returned."""
        self._factories = dict(factories)

    def _load_plugins(self) -> None:
        """Load each entry point on its own: a plug-in that fails to import is remembered and
        its error raised only when its name is asked for, so it neither breaks the other names
        nor hides the plug-ins after it. A plug-in that reuses a built-in's name is ignored,
        with a warning."""
        if self._plugins_loaded or self.entry_point_group is None:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=self.entry_point_group):
            if ep.name in self._factories:
                warnings.warn(f"plug-in {ep.name!r} of entry-point group {self.entry_point_group!r} "
                              f"({ep.value}) is ignored: costlab already has a {self.kind} of that name",
                              stacklevel=3)
                continue
            where = f"plug-in {ep.name!r} of entry-point group {self.entry_point_group!r} ({ep.value})"
            try:
                loaded = ep.load()
            except Exception as err:  # a broken plug-in must not break costlab
                self._broken[ep.name] = f"{where} failed to load: {type(err).__name__}: {err}"
                continue
            if self.base is not None and not (isinstance(loaded, type) and issubclass(loaded, self.base)):
                what = f"class {loaded.__qualname__}" if isinstance(loaded, type) else f"a {type(loaded).__name__}"
                self._broken[ep.name] = (f"{where} failed to load: it names {what}, not a subclass of "
                                         f"{self.base.__qualname__}")
                continue
            own_name = getattr(loaded, "name", ep.name) if self.base is not None else ep.name
            if own_name != ep.name:  # what it saves names it so: costlab could not load that
                self._broken[ep.name] = (f"{where} failed to load: its class's name is {own_name!r}, not its "
                                         f"entry-point name: a model it saves would be unknown to costlab; set "
                                         f"name = {ep.name!r} in class {loaded.__qualname__}")
                continue
            self._factories[ep.name] = loaded

    def load_failures(self) -> dict[str, str]:
        """Each plug-in that failed to load, by name: why."""
        self._load_plugins()
        return dict(self._broken)

    def load_failure(self, name: str) -> str | None:
        """Why plug-in ``name`` failed to load; None if it loaded or is not a plug-in."""
        return self.load_failures().get(name)

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._factories)

    def __contains__(self, name: str) -> bool:
        self._load_plugins()
        return name in self._factories

    def factory(self, name: str) -> Callable[..., T]:
        failure = self.load_failure(name)
        if failure:
            raise CostlabError(failure)
        try:
            return self._factories[name]
        except KeyError:
            broken = f"; plug-ins that failed to load: {', '.join(sorted(self._broken))}" if self._broken else ""
            raise CostlabError(
                f"unknown {self.kind} {name!r}; valid names: {', '.join(self.names())}{broken}"
            ) from None
