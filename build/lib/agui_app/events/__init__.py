"""Events below every writer and every transport: the one event shape (``shape``), the thread log
(``log``: gap-free append, publish on commit), the per-process fan-out hub (``hub``) and followers
(``follow``: replay after a cursor, then live)."""
