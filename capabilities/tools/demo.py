"""Demo tools used by the skills in ``skills/``. Deterministic, offline, side-effect free."""

from __future__ import annotations

import hashlib

from ag_ui.core import StateSnapshotEvent
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import BinaryContent

from capabilities.runtime import ToolDeps
from capabilities.tools.registry import tool

CONDITIONS = ["sunny", "partly cloudy", "overcast", "light rain", "windy", "clear"]


def _stable_number(text: str, modulo: int) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % modulo


@tool
def add_todo(ctx: RunContext[ToolDeps], text: str) -> str:
    """Add an item to the shared todo list (state /todos).

    Args:
        text: What needs doing.
    """
    todos = ctx.deps.state.setdefault("todos", [])
    todos.append({"text": text, "done": False})
    return f"Added todo #{len(todos) - 1}: {text}"


@tool
def complete_todo(ctx: RunContext[ToolDeps], index: int) -> str:
    """Mark a todo of the shared list (state /todos) as done.

    Args:
        index: Position of the todo in the list, starting at 0.
    """
    todos = ctx.deps.state.get("todos") or []
    if not 0 <= index < len(todos):
        raise ModelRetry(f"There is no todo #{index}; the list has {len(todos)} item(s).")
    todos[index]["done"] = True
    return f"Completed todo #{index}: {todos[index]['text']}"


@tool
def get_forecast(city: str) -> str:
    """Get tomorrow's weather forecast for a city.

    Args:
        city: The city name, e.g. Paris.
    """
    condition = CONDITIONS[_stable_number(city.lower(), len(CONDITIONS))]
    temperature = 5 + _stable_number(city.lower() + "t", 25)
    return f"Forecast for {city}: {condition}, {temperature}°C."


@tool
def refund_status(order_id: str) -> str:
    """Look up the refund status of an order.

    Args:
        order_id: The order identifier, e.g. A-1001.
    """
    states = ["not requested", "pending review", "refunded"]
    return f"Order {order_id}: refund {states[_stable_number(order_id, len(states))]}."


@tool(requires_approval=True)
def issue_refund(order_id: str, amount: float) -> str:
    """Issue a refund for an order. A human must approve each call.

    Args:
        order_id: The order identifier, e.g. A-1001.
        amount: The amount to refund, in the order's currency.
    """
    return f"Refunded {amount:.2f} on order {order_id}."


@tool
def write_document(ctx: RunContext[ToolDeps], text: str) -> str:
    """Write the shared document (state /document), replacing what it held.

    Args:
        text: The whole document, as plain text or Markdown.
    """
    ctx.deps.state["document"] = text
    return f"Wrote the document ({len(text)} characters)."


@tool
def show_recipe(ctx: RunContext[ToolDeps], title: str, ingredients: list[str]) -> StateSnapshotEvent:
    """Show a recipe to the user (state /recipe).

    Args:
        title: The dish, e.g. Pancakes.
        ingredients: One entry per ingredient, with its amount, e.g. "200 g flour".
    """
    # Pattern B: the tool returns the whole new state; the server stores and syncs it.
    recipe = {"title": title, "ingredients": ingredients}
    return StateSnapshotEvent(snapshot={**ctx.deps.state, "recipe": recipe})


@tool
def render_image(width: int, height: int) -> BinaryContent:
    """Draw a test image (a PNG of the given size) and return it as a file.

    Args:
        width: Pixels across, 1 to 1024.
        height: Pixels down, 1 to 1024.
    """
    import io

    from PIL import Image

    if not (1 <= width <= 1024 and 1 <= height <= 1024):
        raise ModelRetry("width and height must be between 1 and 1024.")
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 144, 255)).save(buffer, format="PNG")
    return BinaryContent(data=buffer.getvalue(), media_type="image/png")
