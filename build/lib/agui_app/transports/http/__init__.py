"""HTTP: REST views (DRF) served by Django, and the streaming endpoints as Channels consumers."""
