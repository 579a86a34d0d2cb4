"""HTTP API views: thin — authenticate, validate, call one service or selector, serialize."""
