"""The AG-UI WebSocket transport: ``ws(s)://host/ws/v1/threads/{thread}``."""
