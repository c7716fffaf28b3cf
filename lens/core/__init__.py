"""The pure composition core.

Nothing in this package imports Django or touches I/O: schemas, rendering and counts
are plain, synchronous functions over frozen pydantic values, so they can be tested
(and reasoned about) without a database. Models, services, views and the API adapt
them.
"""
