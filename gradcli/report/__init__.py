"""Renderers: read result dataclasses, write text (terminal, plain, JSON, JUnit, GitHub annotations).

Nothing here computes a verdict; every number shown comes from the result objects.
"""
