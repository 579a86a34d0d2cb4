"""How clients reach the hub: HTTP (DRF REST views and SSE consumers) and WebSocket, side by side.

``inputs`` validates what both accept; ``auth`` turns a bearer key into a tenant.
"""
