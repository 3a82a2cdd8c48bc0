"""Unit tests of fsjob for Python: python3 -m unittest discover -s python/tests -t python."""
