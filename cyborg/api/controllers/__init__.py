"""Pecan controllers; the whole URL tree is in ``root`` and ``v2``."""
