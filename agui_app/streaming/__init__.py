"""Live delivery of logged events: the in-process hub, followers, and SSE framing."""
