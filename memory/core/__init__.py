"""The pure memory core: records, routing, the overlay fold, presets and the tokenizer.

Nothing here imports Django or touches I/O (see tests/test_layers.py).
"""
