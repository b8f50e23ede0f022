"""A name -> factory registry whose errors list the valid names (one per component)."""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points
from typing import Callable, Generic, TypeVar

from costlab.errors import CostlabError

T = TypeVar("T")


class NameTaken(CostlabError):
    """A name registered again by another factory: ``name``, and the module of the one holding it."""

    def __init__(self, message: str, name: str, holder_module: str):
        super().__init__(message)
        self.name = name
        self.holder_module = holder_module


class Registry(Generic[T]):
    """Maps names to factories. ``entry_point_group`` adds third-party plug-ins; with ``base``,
    a plug-in must be a subclass of it (one that is not fails to load, and is reported so)."""

    def __init__(self, kind: str, entry_point_group: str | None = None, base: type | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self.base = base
        self._factories: dict[str, Callable[..., T]] = {}
        # imports the built-ins where they load lazily (the extractors): before a name is taken by
        # another factory, the built-in of that name must be there to refuse it
        self.load_builtins: Callable[[], None] | None = None
        self._builtins_state = "not loaded"  # "loading", "loaded"
        self._plugins_loaded = False
        self._broken: dict[str, str] = {}  # plug-in name -> why it failed to load

    def register(self, name: str):
        """Decorator: register ``factory`` under ``name``, from costlab or from a user's own script
        (a package uses an entry point instead). With ``base``, the factory must be a subclass of
        it whose ``name`` attribute is ``name``, as a plug-in must; a name already taken by another
        factory is refused (a built-in is never replaced without a word), but the same module's
        factory of the same name may register again (a file or notebook cell run again)."""
        def decorator(factory):
            if self.load_builtins is not None and self._builtins_state == "not loaded":
                self._builtins_state = "loading"  # their own registrations come back here
                try:
                    self.load_builtins()
                finally:
                    self._builtins_state = "loaded"
            where = f"{self.kind} {name!r}"
            refusal = self._refusal(where, name, factory, f"{name!r}")
            if refusal:
                raise CostlabError(f"cannot register {refusal}")
            taken = self._factories.get(name)
            if taken is not None and _qualified(taken) != _qualified(factory):  # the same, loaded again, may
                raise NameTaken(f"cannot register {where} ({_qualified(factory)}): the name is taken by "
                                f"{_qualified(taken)}; choose another name", name, getattr(taken, "__module__", "?"))
            self._factories[name] = factory
            return factory

        return decorator

    def _refusal(self, where: str, name: str, loaded, name_is: str) -> str | None:
        """Why ``loaded`` cannot be this registry's ``name`` (with ``base``: not a subclass of it,
        or its class's ``name`` differs; ``name_is`` says what ``name`` is), starting with
        ``where``; None if it can."""
        if self.base is None:
            return None
        if not (isinstance(loaded, type) and issubclass(loaded, self.base)):
            what = f"class {loaded.__qualname__}" if isinstance(loaded, type) else f"a {type(loaded).__name__}"
            return f"{where}: it names {what}, not a subclass of {self.base.__qualname__}"
        own_name = getattr(loaded, "name", name)
        if own_name != name:  # what it saves names it so: costlab could not load that
            return (f"{where}: its class's name is {own_name!r}, not {name_is}: a model it saves would be unknown "
                    f"to costlab; set name = {name!r} in class {loaded.__qualname__}")
        return None

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
            refusal = self._refusal(f"{where} failed to load", ep.name, loaded, "its entry-point name")
            if refusal:
                self._broken[ep.name] = refusal
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


def _qualified(factory) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}"
