"""Embedding models and the vector cache: the I/O side of the descriptions' vectors (loading models,
environment, disk). The frontier only reads the resulting tables."""
