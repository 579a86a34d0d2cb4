"""The tool registry: Python callables that skills and agents reference by name.

Tools are registered with ``@tool`` in the modules listed in ``AGUI_TOOL_MODULES``; a name is
checked once, at registration. A module that fails to import is recorded (``failed_modules``), not
raised: the server starts, and only the skills naming its tools are left out of runs (see
``capabilities.availability``). Tests use ``registry.override()`` so registrations never leak.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, overload

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pydantic_ai import Tool
from pydantic_ai.tools import ToolDefinition

logger = logging.getLogger(__name__)
TOOL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")
RESERVED_NAMES = frozenset({"load_capability"})
DEFAULT_TOOL_RETRIES = 3

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class RegisteredTool:
    """A registered tool. ``always_on`` tools are given to every agent (like ``update_state``)."""

    name: str
    function: Callable[..., Any] = field(compare=False)
    requires_approval: bool = False
    always_on: bool = False

    def build(self, *, requires_approval: bool | None = None) -> Tool[Any]:
        """A fresh pydantic-ai ``Tool`` for one run (a skill may require approval on top)."""
        return Tool(
            self.function,
            name=self.name,
            requires_approval=self.requires_approval if requires_approval is None else requires_approval,
            max_retries=DEFAULT_TOOL_RETRIES,
        )

    @cached_property
    def definition(self) -> ToolDefinition:
        """Name, description and JSON schema, derived from the signature and docstring."""
        return self.build().tool_def

    @property
    def description(self) -> str:
        return self.definition.description or ""

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return dict(self.definition.parameters_json_schema)


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._discovered = False
        self.failed_modules: dict[str, str] = {}  # module → "ExceptionType: message"
        self.generation = 0  # bumped on every change, so caches keyed on it go stale

    def register(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        requires_approval: bool = False,
        always_on: bool = False,
    ) -> RegisteredTool:
        """Register ``function`` under ``name`` (default: its ``__name__``).

        Raises:
            ImproperlyConfigured: the name is malformed, reserved, or already taken by another function.
        """
        tool_name = name or function.__name__
        if not TOOL_NAME_RE.match(tool_name):
            raise ImproperlyConfigured(f"Tool name {tool_name!r} must match {TOOL_NAME_RE.pattern}.")
        if tool_name in RESERVED_NAMES:
            raise ImproperlyConfigured(f"Tool name {tool_name!r} is reserved by pydantic-ai.")
        existing = self._tools.get(tool_name)
        if existing is not None and existing.function is not function:
            raise ImproperlyConfigured(
                f"Tool {tool_name!r} is already registered by {existing.function.__module__}."
            )
        registered = RegisteredTool(
            name=tool_name, function=function, requires_approval=requires_approval, always_on=always_on
        )
        registered.definition  # noqa: B018  (build the schema now: a bad signature fails at import)
        self._tools[tool_name] = registered
        self.generation += 1
        return registered

    def unregister(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self.generation += 1

    def get(self, name: str) -> RegisteredTool:
        """Raises KeyError for an unknown name."""
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return sorted(self._tools)

    def always_on(self) -> list[RegisteredTool]:
        return [tool for name, tool in sorted(self._tools.items()) if tool.always_on]

    def autodiscover(self) -> None:
        """Import every module of ``AGUI_TOOL_MODULES`` (once); their ``@tool``s register themselves."""
        if self._discovered:
            return
        self.discover(settings.AGUI_TOOL_MODULES)
        self._discovered = True

    def discover(self, modules: list[str]) -> None:
        """Import ``modules``. One that raises (a missing dependency, a name clash) is logged and kept in
        ``failed_modules`` with the reason; the others still register."""
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as exc:
                self.failed_modules[module] = f"{type(exc).__name__}: {exc}"
                logger.exception("tool module %s failed to import; its tools are not registered", module)
            else:
                self.failed_modules.pop(module, None)
        self.generation += 1

    def missing_tool_detail(self) -> str:
        """Why a tool may be missing: the modules that failed to import (for logs and admin, not clients)."""
        if not self.failed_modules:
            return "no module in AGUI_TOOL_MODULES registers it"
        failed = "; ".join(f"{module} ({error})" for module, error in sorted(self.failed_modules.items()))
        return f"these tool modules failed to import: {failed}"

    @contextmanager
    def override(self) -> Iterator[ToolRegistry]:
        """Registrations (and module failures) made inside the block are undone when it exits (for tests)."""
        saved, failed = dict(self._tools), dict(self.failed_modules)
        try:
            yield self
        finally:
            self._tools, self.failed_modules = saved, failed
            self.generation += 1


registry = ToolRegistry()


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(
    *, name: str | None = None, requires_approval: bool = False, always_on: bool = False
) -> Callable[[F], F]: ...
def tool(
    function: F | None = None,
    /,
    *,
    name: str | None = None,
    requires_approval: bool = False,
    always_on: bool = False,
) -> F | Callable[[F], F]:
    """Register a tool: ``@tool`` or ``@tool(name=..., requires_approval=True)``.

    The description comes from the docstring and the JSON schema from the signature. A tool
    that takes a ``RunContext[ToolDeps]`` first reaches the run's shared state as ``ctx.deps.state``.
    """

    def decorate(func: F) -> F:
        registry.register(func, name=name, requires_approval=requires_approval, always_on=always_on)
        return func

    return decorate(function) if function is not None else decorate
