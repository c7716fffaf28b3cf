"""The pure key/value core: key rules and payload metadata.

Nothing here imports Django or touches I/O (see tests/test_layers.py).
"""
