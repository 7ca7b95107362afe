"""CAKE IR in Python: the builder, integer expressions, enum short names, text form, paths, hashing."""
