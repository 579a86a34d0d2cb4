"""The AG-UI binary transport's encoding (``application/vnd.ag-ui.event+proto``, DESIGN §22): npm's
``@ag-ui/proto`` 1.0.0 schema (``agui_events.proto``), the encoder from an event's stored wire JSON
to its protobuf bytes and the framing ``@ag-ui/client`` reads (``encoding``), and the decoder
(``decoding``). See README.md here for the generator command and what the encoding cannot carry."""
