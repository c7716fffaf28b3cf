"""The demo's data, kept out of the product: agents, memories, a week of sessions, a
second reviewer, key/value keys, and ``manage.py seed_demo`` that writes them through the
product's own operations (``make run``, the page tour, a few tests)."""
